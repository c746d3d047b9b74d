/*
 * yamltree.h - a small, safe YAML document tree for configuration files.
 *
 * Job files (jobspec.h) and the node config (nodeconf.h) are read through
 * this module: libyaml's event parser builds a tree of mappings, sequences
 * and scalars, each node carrying its 1-based line and column (columns count
 * characters, as libyaml does).  Typed accessors (pal_yget_*) turn scalars
 * into values and report every mismatch as a diagnostic with file:line:col.
 *
 * Rejected, each with a diagnostic naming the position:
 *   - files over PAL_YAML_MAX_BYTES (checked before reading);
 *   - bytes that are not valid UTF-8 (position of the first bad byte) and
 *     NUL bytes, in the file or produced by an escape in a quoted scalar;
 *   - YAML syntax errors (libyaml's problem mark);
 *   - any anchor or alias (alias expansion is how "billion laughs" bombs
 *     work, and configuration never needs them), and any explicit tag;
 *   - an empty stream (no document) and more than one document;
 *   - duplicate keys in one mapping, and keys that are not scalars;
 *   - nesting deeper than PAL_YAML_MAX_DEPTH collections.
 *
 * Scalars are not resolved to types here: the tree keeps the text and its
 * style, so a consumer can tell plain 5 from quoted "5".
 *
 * Ownership: a pal_ydoc owns its file name and every node; free it with
 * pal_ydoc_free().  Nodes are never shared between documents.  Nothing here
 * keeps global state; a pal_ydoc may be read from several threads.
 */
#ifndef PALISADE_YAMLTREE_H
#define PALISADE_YAMLTREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "palisade/err.h"
#include "palisade/diags.h"

#define PAL_YAML_MAX_BYTES ((size_t)4 << 20) /* 4 MiB */
#define PAL_YAML_MAX_DEPTH 64

typedef enum { PAL_YNODE_SCALAR, PAL_YNODE_MAP, PAL_YNODE_SEQ } pal_ynode_kind;

typedef enum {
	PAL_YSTYLE_PLAIN,
	PAL_YSTYLE_SINGLE,  /* 'x' */
	PAL_YSTYLE_DOUBLE,  /* "x" */
	PAL_YSTYLE_LITERAL, /* | */
	PAL_YSTYLE_FOLDED,  /* > */
} pal_yscalar_style;

typedef struct pal_ynode pal_ynode;

struct pal_ynode {
	pal_ynode_kind kind;
	int line, col;	       /* start, 1-based */
	int end_line, end_col; /* just past the end, 1-based */

	/* PAL_YNODE_SCALAR: NUL-terminated text (never contains a NUL byte) */
	char *str;
	size_t len;
	pal_yscalar_style style;

	/* PAL_YNODE_MAP: n pairs keys[i] -> vals[i], keys are scalars and
	 * unique; PAL_YNODE_SEQ: n items in vals[i] (keys is NULL). */
	size_t n;
	pal_ynode **keys;
	pal_ynode **vals;
};

typedef struct pal_ydoc {
	char *file;	 /* as given to the loader; used in diagnostics */
	pal_ynode *root; /* NULL when loading failed */
} pal_ydoc;

/*
 * Read and parse the YAML file PATH into DOC.  Returns 0, or PAL_EIO when
 * the file cannot be read, PAL_ETOOBIG over the size limit, PAL_EINVAL for
 * anything else rejected above, PAL_ENOMEM; every failure also appends one
 * or more diagnostics to DIAGS.  DOC must be freed with pal_ydoc_free()
 * whatever the result.
 */
PAL_MUST_CHECK int pal_ydoc_load_file(const char *path, pal_ydoc *doc, pal_diags *diags);

/*
 * The same, and FN(ARG, DOC, KEY, ITEM) is called while the file is still
 * being parsed, for each complete item of a sequence that is the value of
 * KEY in the root mapping (`jobs:`'s jobs), in file order, as long as no
 * problem was found in the file so far.  DOC->root is not set yet then; the
 * nodes stay valid until pal_ydoc_free().  The result may still be a
 * failure after items were handed over (a later syntax error, say).
 */
typedef void (*pal_ydoc_item_fn)(void *arg, const pal_ydoc *doc, const pal_ynode *key,
				 const pal_ynode *item);
PAL_MUST_CHECK int pal_ydoc_load_file_items(const char *path, pal_ydoc *doc, pal_diags *diags,
					    pal_ydoc_item_fn fn, void *arg);

/* The same for LEN bytes at BUF (need not be NUL-terminated); NAME is used
 * in diagnostics. */
PAL_MUST_CHECK int pal_ydoc_load_buffer(const char *name, const void *buf, size_t len,
					pal_ydoc *doc, pal_diags *diags);

void pal_ydoc_free(pal_ydoc *doc);

/* Value of KEY in mapping MAP, or NULL (also when MAP is not a mapping). */
const pal_ynode *pal_ynode_get(const pal_ynode *map, const char *key);

/* True for a plain scalar "", "~", "null", "Null" or "NULL". */
bool pal_ynode_is_null(const pal_ynode *n);

/* "a mapping", "a sequence", "null", "a boolean", "an integer", "a number"
 * or "a string": what a human would call N's YAML type. */
const char *pal_ynode_describe(const pal_ynode *n);

/* Append "file:line:col" diagnostic at node N (N may be NULL: position 0:0). */
void pal_ydiag(pal_diags *diags, const pal_ydoc *doc, const pal_ynode *n, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/*
 * Typed accessors.  Each checks N, stores the value in *out and returns 0,
 * or appends a diagnostic "WHAT: expected ..., got ..." at N and returns
 * PAL_EINVAL leaving *out untouched.
 *
 * pal_yget_string: any non-null scalar; *out is a new string (free()).
 * pal_yget_int:    a plain decimal integer in [min, max].
 * pal_yget_number: a plain decimal number (integer or fraction) in [min, max].
 * pal_yget_duration: a scalar accepted by pal_parse_duration_ms() (or the
 *                  plain integer 0 when allow_zero) in [min_ms, max_ms].
 * pal_yget_enum:   a scalar equal to one of NAMES[0..n); *out is its index.
 *                  The diagnostic reads `unknown WHAT "x" (expected a, b, c)`.
 */
PAL_MUST_CHECK int pal_yget_string(const pal_ydoc *doc, const pal_ynode *n, const char *what,
				   char **out, pal_diags *diags);
PAL_MUST_CHECK int pal_yget_int(const pal_ydoc *doc, const pal_ynode *n, const char *what,
				int64_t min, int64_t max, int64_t *out, pal_diags *diags);
PAL_MUST_CHECK int pal_yget_number(const pal_ydoc *doc, const pal_ynode *n, const char *what,
				   double min, double max, double *out, pal_diags *diags);
PAL_MUST_CHECK int pal_yget_duration(const pal_ydoc *doc, const pal_ynode *n, const char *what,
				     int64_t min_ms, int64_t max_ms, bool allow_zero, int64_t *out,
				     pal_diags *diags);
PAL_MUST_CHECK int pal_yget_enum(const pal_ydoc *doc, const pal_ynode *n, const char *what,
				 const char *const *names, size_t n_names, int *out,
				 pal_diags *diags);

/* Checks N is a mapping (resp. sequence); diagnostic "WHAT: expected a
 * mapping, got ..." otherwise. */
PAL_MUST_CHECK int pal_yexpect_map(const pal_ydoc *doc, const pal_ynode *n, const char *what,
				   pal_diags *diags);
PAL_MUST_CHECK int pal_yexpect_seq(const pal_ydoc *doc, const pal_ynode *n, const char *what,
				   pal_diags *diags);

/*
 * The candidate closest to WORD by edit distance (optimal string alignment:
 * insertions, deletions, substitutions, adjacent transpositions), or NULL
 * when none is close enough to be a plausible typo (distance <= 2, and less
 * than half of WORD's length).
 */
const char *pal_suggest(const char *word, const char *const *cands, size_t n);

#endif
