/*
 * diags.h - diagnostics of the loaders (job files, node config, YAML):
 * every problem with its file:line:col, collected instead of stopping at
 * the first (src/util/diags.c).
 *
 * Ownership: a pal_diags owns every string it points to; free it with
 * pal_diags_free().
 */
#ifndef PALISADE_DIAGS_H
#define PALISADE_DIAGS_H

#include <stddef.h>
#include <stdio.h>

typedef struct pal_diag {
	char *file;
	int line, col; /* 1-based; 0 when unknown */
	char *msg;     /* lower-case, no trailing period */
} pal_diag;

typedef struct pal_diags {
	pal_diag *v;
	size_t n;
} pal_diags;

/* At most this many diagnostics are kept in one pal_diags; the last one kept
 * says that further diagnostics were suppressed (a garbage file must not
 * produce a million lines). */
#define PAL_DIAGS_MAX 1000

/* Append a diagnostic (FILE may be NULL).  Copies everything it is given.
 * On allocation failure the diagnostic is dropped: callers track failure by
 * their own return codes, never by d->n alone. */
void pal_diags_addf(pal_diags *d, const char *file, int line, int col, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

void pal_diags_free(pal_diags *d);
/* Print each diagnostic as "file:line:col: error: msg\n". */
void pal_diags_print(const pal_diags *d, FILE *fp);

#endif
