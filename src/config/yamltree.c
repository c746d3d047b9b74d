/*
 * yamltree.c - YAML file -> pal_ynode tree, with the limits of yamltree.h.
 *
 * Flow: size check -> read -> own UTF-8/NUL scan (so the first bad byte is
 * reported with its line:col) -> libyaml event parser -> tree built on an
 * explicit stack (no recursion, depth capped at PAL_YAML_MAX_DEPTH).  The
 * event API never expands aliases; we refuse them anyway, together with
 * anchors and tags, so the tree is always the plain text of the file.
 *
 * Fatal problems (syntax, alias, anchor, tag, depth, multiple documents)
 * stop the parse; duplicate keys are reported and parsing goes on so that
 * every duplicate is named.  Either way the load fails and doc->root stays
 * NULL.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <glib.h>
#include <yaml.h>
#include "palisade/yamltree.h"
#include "palisade/timefmt.h"

/* ---- memory ---- */

/*
 * A tree lives in one arena, freed in one go by pal_ydoc_free(): a job file
 * of 10,000 jobs has some 300,000 nodes and strings, and allocating and
 * freeing them one by one was a fifth of `palisade apply`'s CPU time.  The
 * arena's header holds the file name, so doc->file leads back to it (the
 * public pal_ydoc has no other field to keep it in).  Nodes dropped while
 * building (duplicate keys, errors) stay until the arena goes.
 */
#define ARENA_CHUNK (64 * 1024)

struct chunk {
	struct chunk *next;
	size_t used, cap;
	max_align_t data[]; /* cap bytes */
};

struct arena {
	struct chunk *head;
	char file[]; /* doc->file points here */
};

static struct arena *arena_new(const char *file)
{
	size_t n = strlen(file) + 1;
	struct arena *a = malloc(sizeof *a + n);

	if (!a)
		return NULL;
	a->head = NULL;
	memcpy(a->file, file, n);
	return a;
}

static struct arena *arena_of(const pal_ydoc *doc)
{
	return doc->file ? (struct arena *)(doc->file - offsetof(struct arena, file)) : NULL;
}

/* LEN zeroed bytes, aligned for any type; NULL on ENOMEM. */
static void *arena_alloc(struct arena *a, size_t len)
{
	struct chunk *c = a->head;

	len = (len + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
	if (!c || c->cap - c->used < len) {
		size_t cap = len > ARENA_CHUNK / 4 ? len : ARENA_CHUNK;

		c = malloc(sizeof *c + cap);
		if (!c)
			return NULL;
		c->cap = cap;
		c->used = 0;
		if (len > ARENA_CHUNK / 4 && a->head) {
			/* a big block gets a chunk of its own, behind the current one */
			c->next = a->head->next;
			a->head->next = c;
		} else {
			c->next = a->head;
			a->head = c;
		}
	}
	void *p = (char *)c->data + c->used;

	c->used += len;
	memset(p, 0, len);
	return p;
}

static void arena_free(struct arena *a)
{
	if (!a)
		return;
	for (struct chunk *c = a->head, *next; c; c = next) {
		next = c->next;
		free(c);
	}
	free(a);
}

void pal_ydoc_free(pal_ydoc *doc)
{
	if (!doc)
		return;
	arena_free(arena_of(doc));
	doc->root = NULL;
	doc->file = NULL;
}

/* ---- diagnostics ---- */

void pal_ydiag(pal_diags *diags, const pal_ydoc *doc, const pal_ynode *n, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	pal_diags_addf(diags, doc ? doc->file : NULL, n ? n->line : 0, n ? n->col : 0, "%s", msg);
}

/* Line and column (1-based, columns in characters) of byte OFF of BUF. */
static void position_of(const unsigned char *buf, size_t off, int *line, int *col)
{
	int l = 1, c = 1;

	for (size_t i = 0; i < off; i++) {
		if (buf[i] == '\n' || (buf[i] == '\r' && (i + 1 >= off || buf[i + 1] != '\n'))) {
			l++;
			c = 1;
		} else if (buf[i] == '\r') {
			/* \r of \r\n: the \n ends the line */
		} else if ((buf[i] & 0xC0) != 0x80) {
			c++;
		}
	}
	*line = l;
	*col = c;
}

/*
 * Strict UTF-8 (no overlongs, no surrogates, <= U+10FFFF) and no NUL byte.
 * Returns the offset of the first bad byte, or LEN when all is well.
 */
static size_t utf8_scan(const unsigned char *s, size_t len)
{
	size_t i = 0;

	while (i < len) {
		unsigned char c = s[i];
		size_t need;
		uint32_t cp, min;

		if (c == 0)
			return i;
		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xC2 && c <= 0xDF) {
			need = 1;
			cp = c & 0x1F;
			min = 0x80;
		} else if (c >= 0xE0 && c <= 0xEF) {
			need = 2;
			cp = c & 0x0F;
			min = 0x800;
		} else if (c >= 0xF0 && c <= 0xF4) {
			need = 3;
			cp = c & 0x07;
			min = 0x10000;
		} else {
			return i;
		}
		if (len - i <= need)
			return i;
		for (size_t k = 1; k <= need; k++) {
			if ((s[i + k] & 0xC0) != 0x80)
				return i;
			cp = (cp << 6) | (s[i + k] & 0x3F);
		}
		if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
			return i;
		i += need + 1;
	}
	return len;
}

/* ---- the builder ---- */

struct frame {
	pal_ynode *node;
	GHashTable *keys;	/* maps only: key text -> first key node */
	pal_ynode *pending_key; /* maps only: key whose value is still to come */
	size_t cap;
};

struct builder {
	pal_ydoc *doc;
	struct arena *arena; /* of doc */
	pal_diags *diags;
	struct frame stack[PAL_YAML_MAX_DEPTH];
	int depth;
	pal_ynode *root;
	int n_docs;
	int errors;
	pal_ydoc_item_fn item_fn; /* pal_ydoc_load_file_items; NULL otherwise */
	void *item_arg;
};

static pal_ynode *node_new(struct builder *b, pal_ynode_kind kind, const yaml_mark_t *m)
{
	pal_ynode *n = arena_alloc(b->arena, sizeof *n);

	if (!n)
		return NULL;
	n->kind = kind;
	n->line = (int)m->line + 1;
	n->col = (int)m->column + 1;
	n->end_line = n->line;
	n->end_col = n->col;
	return n;
}

static void set_end(pal_ynode *n, const yaml_mark_t *m)
{
	n->end_line = (int)m->line + 1;
	n->end_col = (int)m->column + 1;
}

static void bdiag(struct builder *b, const yaml_mark_t *m, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void bdiag(struct builder *b, const yaml_mark_t *m, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	pal_diags_addf(b->diags, b->doc->file, (int)m->line + 1, (int)m->column + 1, "%s", msg);
	b->errors++;
}

static int grow(struct builder *b, struct frame *f)
{
	pal_ynode *p = f->node;
	size_t cap = f->cap ? f->cap * 2 : 4;
	pal_ynode **v, **k;

	v = arena_alloc(b->arena, cap * sizeof *v);
	if (!v)
		return PAL_ENOMEM;
	if (p->n)
		memcpy(v, p->vals, p->n * sizeof *v);
	p->vals = v;
	if (p->kind == PAL_YNODE_MAP) {
		k = arena_alloc(b->arena, cap * sizeof *k);
		if (!k)
			return PAL_ENOMEM;
		if (p->n)
			memcpy(k, p->keys, p->n * sizeof *k);
		p->keys = k;
	}
	f->cap = cap;
	return 0;
}

/* The first key node of F's mapping spelled K, or NULL.  Small mappings
 * (every job's) are scanned; a hash table is built once one has 8 keys. */
static const pal_ynode *find_key(struct frame *f, const char *k)
{
	const pal_ynode *p = f->node;

	if (!f->keys && p->n >= 8) {
		f->keys = g_hash_table_new(g_str_hash, g_str_equal);
		for (size_t i = 0; i < p->n; i++)
			if (!g_hash_table_contains(f->keys, p->keys[i]->str))
				g_hash_table_insert(f->keys, p->keys[i]->str, p->keys[i]);
	}
	if (f->keys)
		return g_hash_table_lookup(f->keys, k);
	for (size_t i = 0; i < p->n; i++)
		if (!strcmp(p->keys[i]->str, k))
			return p->keys[i];
	return NULL;
}

/*
 * Attach N to the innermost open collection (or make it the root).
 * N belongs to the arena in every case; on a non-zero return it is dropped.
 * Returns 0, PAL_ENOMEM, or PAL_EINVAL for a fatal structural problem
 * (non-scalar key).  A duplicate key is reported and its pair kept (the
 * value may be a collection still being filled); the whole tree is dropped
 * at the end because the load failed, and 0 is returned so the parse goes
 * on and every duplicate is named.
 */
static int attach(struct builder *b, pal_ynode *n)
{
	struct frame *f;
	pal_ynode *p;

	if (b->depth == 0) {
		b->root = n;
		return 0;
	}
	f = &b->stack[b->depth - 1];
	p = f->node;
	if (p->kind == PAL_YNODE_MAP && !f->pending_key) {
		const pal_ynode *first;

		if (n->kind != PAL_YNODE_SCALAR) {
			pal_diags_addf(b->diags, b->doc->file, n->line, n->col,
				       "a mapping key must be a plain value, got %s",
				       pal_ynode_describe(n));
			b->errors++;
			return PAL_EINVAL;
		}
		first = find_key(f, n->str);
		f->pending_key = n;
		if (first) {
			pal_diags_addf(
			    b->diags, b->doc->file, n->line, n->col,
			    "duplicate key \"%.64s\" (first at line %d, column %d); hint: "
			    "each key may appear once per mapping",
			    n->str, first->line, first->col);
			b->errors++;
		} else if (f->keys) {
			g_hash_table_insert(f->keys, n->str, n);
		}
		return 0;
	}
	if (p->n == f->cap && grow(b, f) != 0) {
		return PAL_ENOMEM;
	}
	if (p->kind == PAL_YNODE_MAP) {
		p->keys[p->n] = f->pending_key;
		f->pending_key = NULL;
	}
	p->vals[p->n++] = n;
	return 0;
}

/* Close frame F; a key left pending (only on a broken stream) is dropped. */
static void close_frame(struct frame *f)
{
	if (f->keys)
		g_hash_table_destroy(f->keys);
	f->keys = NULL;
	f->pending_key = NULL;
}

static int push(struct builder *b, pal_ynode *n, const yaml_mark_t *m)
{
	struct frame *f;
	int rc;

	if (b->depth >= PAL_YAML_MAX_DEPTH) {
		bdiag(b, m, "nesting is deeper than %d levels; hint: flatten the structure",
		      PAL_YAML_MAX_DEPTH);
		return PAL_EINVAL;
	}
	/* A collection can only become a key if it is attached as one; that is
	 * refused in attach(), so the node is never pushed in that case. */
	rc = attach(b, n);
	if (rc)
		return rc;
	f = &b->stack[b->depth++];
	memset(f, 0, sizeof *f);
	f->node = n;
	if (n->kind == PAL_YNODE_MAP)
		f->keys = g_hash_table_new(g_str_hash, g_str_equal);
	return 0;
}

static void pop(struct builder *b, const yaml_mark_t *end)
{
	struct frame *f = &b->stack[--b->depth];

	set_end(f->node, end);
	close_frame(f);
}

/* N, just completed, is an item of a sequence that is the value of a key
 * of the root mapping (depth 2): hand it to the item function, unless a
 * problem was found already (the load fails anyway). */
static void item_done(struct builder *b, const pal_ynode *n)
{
	if (!b->item_fn || b->errors || b->depth != 2)
		return;
	const pal_ynode *root = b->stack[0].node, *seq = b->stack[1].node;
	if (root->kind == PAL_YNODE_MAP && seq->kind == PAL_YNODE_SEQ && root->n &&
	    root->vals[root->n - 1] == seq)
		b->item_fn(b->item_arg, b->doc, root->keys[root->n - 1], n);
}

static void unwind(struct builder *b)
{
	while (b->depth > 0)
		close_frame(&b->stack[--b->depth]);
}

/* Refuse anchors and tags (aliases are refused at their own event). */
static int check_props(struct builder *b, const yaml_event_t *ev, const yaml_char_t *anchor,
		       const yaml_char_t *tag)
{
	if (anchor) {
		bdiag(b, &ev->start_mark,
		      "yaml anchors are not allowed (found \"&%.64s\"); hint: write the value out "
		      "in full where it is needed",
		      (const char *)anchor);
		return PAL_EINVAL;
	}
	if (tag) {
		bdiag(b, &ev->start_mark,
		      "yaml tags are not allowed (found \"%.64s\"); hint: quote the value to make "
		      "it a string",
		      (const char *)tag);
		return PAL_EINVAL;
	}
	return 0;
}

static pal_yscalar_style map_style(yaml_scalar_style_t s)
{
	switch (s) {
	case YAML_SINGLE_QUOTED_SCALAR_STYLE:
		return PAL_YSTYLE_SINGLE;
	case YAML_DOUBLE_QUOTED_SCALAR_STYLE:
		return PAL_YSTYLE_DOUBLE;
	case YAML_LITERAL_SCALAR_STYLE:
		return PAL_YSTYLE_LITERAL;
	case YAML_FOLDED_SCALAR_STYLE:
		return PAL_YSTYLE_FOLDED;
	default:
		return PAL_YSTYLE_PLAIN;
	}
}

/* Handle one event.  Returns 0 to go on, 1 at the end of the stream, or a
 * negative code to stop. */
static int on_event(struct builder *b, const yaml_event_t *ev)
{
	pal_ynode *n;
	int rc;

	switch (ev->type) {
	case YAML_STREAM_START_EVENT:
	case YAML_DOCUMENT_END_EVENT:
	case YAML_NO_EVENT:
		return 0;
	case YAML_STREAM_END_EVENT:
		return 1;
	case YAML_DOCUMENT_START_EVENT:
		if (++b->n_docs > 1) {
			bdiag(b, &ev->start_mark,
			      "a second yaml document starts here; hint: a file holds exactly "
			      "one document, remove the \"---\" separator or split the file");
			return PAL_EINVAL;
		}
		return 0;
	case YAML_ALIAS_EVENT:
		bdiag(b, &ev->start_mark,
		      "yaml aliases are not allowed (found \"*%.64s\"); hint: write the value out "
		      "in full where it is needed",
		      (const char *)ev->data.alias.anchor);
		return PAL_EINVAL;
	case YAML_SCALAR_EVENT:
		if (check_props(b, ev, ev->data.scalar.anchor, ev->data.scalar.tag))
			return PAL_EINVAL;
		if (memchr(ev->data.scalar.value, '\0', ev->data.scalar.length)) {
			bdiag(b, &ev->start_mark,
			      "a value contains a nul character (written as an escape); hint: "
			      "remove the \\0 escape");
			return PAL_EINVAL;
		}
		n = node_new(b, PAL_YNODE_SCALAR, &ev->start_mark);
		if (!n)
			return PAL_ENOMEM;
		n->str = arena_alloc(b->arena, ev->data.scalar.length + 1);
		if (!n->str)
			return PAL_ENOMEM;
		memcpy(n->str, ev->data.scalar.value, ev->data.scalar.length);
		n->str[ev->data.scalar.length] = '\0';
		n->len = ev->data.scalar.length;
		n->style = map_style(ev->data.scalar.style);
		set_end(n, &ev->end_mark);
		rc = attach(b, n);
		if (!rc)
			item_done(b, n);
		return rc;
	case YAML_SEQUENCE_START_EVENT:
	case YAML_MAPPING_START_EVENT: {
		bool seq = ev->type == YAML_SEQUENCE_START_EVENT;

		rc = seq ? check_props(b, ev, ev->data.sequence_start.anchor,
				       ev->data.sequence_start.tag)
			 : check_props(b, ev, ev->data.mapping_start.anchor,
				       ev->data.mapping_start.tag);
		if (rc)
			return rc;
		n = node_new(b, seq ? PAL_YNODE_SEQ : PAL_YNODE_MAP, &ev->start_mark);
		if (!n)
			return PAL_ENOMEM;
		return push(b, n, &ev->start_mark);
	}
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		if (b->depth > 0) {
			n = b->stack[b->depth - 1].node;
			pop(b, &ev->end_mark);
			item_done(b, n);
		}
		return 0;
	}
	return 0;
}

static void syntax_diag(struct builder *b, const yaml_parser_t *p, const unsigned char *buf,
			size_t len)
{
	int line, col;
	const char *problem = p->problem ? p->problem : "unknown problem";

	if (p->error == YAML_MEMORY_ERROR) {
		pal_diags_addf(b->diags, b->doc->file, 0, 0, "out of memory while parsing yaml");
	} else if (p->error == YAML_READER_ERROR) {
		position_of(buf, p->problem_offset < len ? p->problem_offset : len, &line, &col);
		pal_diags_addf(b->diags, b->doc->file, line, col,
			       "invalid character in yaml: %s (byte 0x%02x)", problem,
			       (unsigned)(p->problem_value & 0xFF));
	} else if (p->context) {
		pal_diags_addf(b->diags, b->doc->file, (int)p->problem_mark.line + 1,
			       (int)p->problem_mark.column + 1,
			       "yaml syntax error: %s (%s started at line %d, column %d)", problem,
			       p->context, (int)p->context_mark.line + 1,
			       (int)p->context_mark.column + 1);
	} else {
		pal_diags_addf(b->diags, b->doc->file, (int)p->problem_mark.line + 1,
			       (int)p->problem_mark.column + 1, "yaml syntax error: %s", problem);
	}
	b->errors++;
}

static int load_buffer(const char *name, const void *buf, size_t len, pal_ydoc *doc,
		       pal_diags *diags, pal_ydoc_item_fn fn, void *arg)
{
	const unsigned char *s = buf;
	struct builder b;
	yaml_parser_t parser;
	size_t bad;
	int rc = 0;

	struct arena *arena = arena_new(name ? name : "<input>");

	doc->root = NULL;
	doc->file = arena ? arena->file : NULL;
	if (!arena)
		return PAL_ENOMEM;
	if (len > PAL_YAML_MAX_BYTES) {
		pal_diags_addf(diags, doc->file, 0, 0,
			       "file is too large: %zu bytes, the limit is %zu (4 MiB); hint: "
			       "split the jobs over several files",
			       len, PAL_YAML_MAX_BYTES);
		return PAL_ETOOBIG;
	}
	bad = utf8_scan(s, len);
	if (bad < len) {
		int line, col;

		position_of(s, bad, &line, &col);
		if (s[bad] == 0)
			pal_diags_addf(diags, doc->file, line, col,
				       "nul byte in file; hint: is this a binary file?");
		else
			pal_diags_addf(diags, doc->file, line, col,
				       "invalid utf-8 byte 0x%02x; hint: save the file as utf-8",
				       s[bad]);
		return PAL_EINVAL;
	}

	memset(&b, 0, sizeof b);
	b.doc = doc;
	b.arena = arena;
	b.diags = diags;
	b.item_fn = fn;
	b.item_arg = arg;
	if (!yaml_parser_initialize(&parser))
		return PAL_ENOMEM;
	yaml_parser_set_input_string(&parser, s, len);
	yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING);
	for (;;) {
		yaml_event_t ev;

		if (!yaml_parser_parse(&parser, &ev)) {
			syntax_diag(&b, &parser, s, len);
			rc = parser.error == YAML_MEMORY_ERROR ? PAL_ENOMEM : PAL_EINVAL;
			break;
		}
		rc = on_event(&b, &ev);
		yaml_event_delete(&ev);
		if (rc) {
			if (rc == 1)
				rc = 0;
			break;
		}
	}
	yaml_parser_delete(&parser);
	unwind(&b);

	if (rc == 0 && b.n_docs == 0) {
		pal_diags_addf(diags, doc->file, 1, 1,
			       "file is empty: expected a yaml document; hint: see docs/jobs.md "
			       "for the format");
		rc = PAL_EINVAL;
	}
	if (rc == 0 && b.errors > 0)
		rc = PAL_EINVAL;
	if (rc == PAL_ENOMEM && b.errors == 0)
		pal_diags_addf(diags, doc->file, 0, 0, "out of memory while loading");
	if (rc == 0)
		doc->root = b.root; /* else the nodes go with the arena */
	return rc;
}

int pal_ydoc_load_buffer(const char *name, const void *buf, size_t len, pal_ydoc *doc,
			 pal_diags *diags)
{
	return load_buffer(name, buf, len, doc, diags, NULL, NULL);
}

int pal_ydoc_load_file_items(const char *path, pal_ydoc *doc, pal_diags *diags,
			     pal_ydoc_item_fn fn, void *arg)
{
	struct stat st;
	FILE *fp;
	char *buf;
	size_t got;
	int rc;

	doc->root = NULL;
	doc->file = NULL;
	fp = fopen(path, "rb");
	if (!fp) {
		pal_diags_addf(diags, path, 0, 0, "cannot open file: %s", strerror(errno));
		return PAL_EIO;
	}
	if (fstat(fileno(fp), &st) != 0) {
		pal_diags_addf(diags, path, 0, 0, "cannot stat file: %s", strerror(errno));
		fclose(fp);
		return PAL_EIO;
	}
	if (S_ISDIR(st.st_mode)) {
		pal_diags_addf(diags, path, 0, 0,
			       "is a directory; hint: pass the job files, e.g. %s/*.yaml", path);
		fclose(fp);
		return PAL_EIO;
	}
	if (S_ISREG(st.st_mode) && (uintmax_t)st.st_size > PAL_YAML_MAX_BYTES) {
		pal_diags_addf(diags, path, 0, 0,
			       "file is too large: %jd bytes, the limit is %zu (4 MiB); hint: "
			       "split the jobs over several files",
			       (intmax_t)st.st_size, PAL_YAML_MAX_BYTES);
		fclose(fp);
		return PAL_ETOOBIG;
	}
	/* Read one byte past the limit so a file that grew since fstat (or a
	 * pipe) is still caught by the size check in load_buffer. */
	buf = malloc(PAL_YAML_MAX_BYTES + 1);
	if (!buf) {
		fclose(fp);
		return PAL_ENOMEM;
	}
	got = fread(buf, 1, PAL_YAML_MAX_BYTES + 1, fp);
	if (ferror(fp)) {
		pal_diags_addf(diags, path, 0, 0, "cannot read file: %s", strerror(errno));
		free(buf);
		fclose(fp);
		return PAL_EIO;
	}
	fclose(fp);
	rc = load_buffer(path, buf, got, doc, diags, fn, arg);
	free(buf);
	return rc;
}

int pal_ydoc_load_file(const char *path, pal_ydoc *doc, pal_diags *diags)
{
	return pal_ydoc_load_file_items(path, doc, diags, NULL, NULL);
}

/* ---- lookups and typed accessors ---- */

const pal_ynode *pal_ynode_get(const pal_ynode *map, const char *key)
{
	if (!map || map->kind != PAL_YNODE_MAP)
		return NULL;
	for (size_t i = 0; i < map->n; i++)
		if (!strcmp(map->keys[i]->str, key))
			return map->vals[i];
	return NULL;
}

bool pal_ynode_is_null(const pal_ynode *n)
{
	if (!n || n->kind != PAL_YNODE_SCALAR || n->style != PAL_YSTYLE_PLAIN)
		return false;
	return !strcmp(n->str, "") || !strcmp(n->str, "~") || !strcmp(n->str, "null") ||
	       !strcmp(n->str, "Null") || !strcmp(n->str, "NULL");
}

/* [+-]?digits, no leading zero (YAML 1.1 reads 010 as octal: refuse it). */
static bool is_decimal_int(const char *s)
{
	if (*s == '-' || *s == '+')
		s++;
	if (!*s)
		return false;
	if (s[0] == '0' && s[1])
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

static bool is_decimal_number(const char *s)
{
	bool digits = false;

	if (*s == '-' || *s == '+')
		s++;
	for (; *s >= '0' && *s <= '9'; s++)
		digits = true;
	if (*s == '.') {
		s++;
		for (; *s >= '0' && *s <= '9'; s++)
			digits = true;
	}
	return digits && !*s;
}

static bool is_bool(const char *s)
{
	static const char *const words[] = {"true", "false", "yes", "no", "on", "off", "y", "n"};

	for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
		if (!g_ascii_strcasecmp(s, words[i]))
			return true;
	return false;
}

const char *pal_ynode_describe(const pal_ynode *n)
{
	if (!n)
		return "nothing";
	if (n->kind == PAL_YNODE_MAP)
		return "a mapping";
	if (n->kind == PAL_YNODE_SEQ)
		return "a sequence";
	if (n->style != PAL_YSTYLE_PLAIN)
		return "a string";
	if (pal_ynode_is_null(n))
		return "null";
	if (is_bool(n->str))
		return "a boolean";
	if (is_decimal_int(n->str))
		return "an integer";
	if (is_decimal_number(n->str))
		return "a number";
	return "a string";
}

int pal_yexpect_map(const pal_ydoc *doc, const pal_ynode *n, const char *what, pal_diags *diags)
{
	if (n && n->kind == PAL_YNODE_MAP)
		return 0;
	pal_ydiag(diags, doc, n, "%s: expected a mapping, got %s", what, pal_ynode_describe(n));
	return PAL_EINVAL;
}

int pal_yexpect_seq(const pal_ydoc *doc, const pal_ynode *n, const char *what, pal_diags *diags)
{
	if (n && n->kind == PAL_YNODE_SEQ)
		return 0;
	pal_ydiag(diags, doc, n, "%s: expected a sequence, got %s", what, pal_ynode_describe(n));
	return PAL_EINVAL;
}

static int expect_scalar(const pal_ydoc *doc, const pal_ynode *n, const char *what,
			 const char *expected, pal_diags *diags)
{
	if (n && n->kind == PAL_YNODE_SCALAR && !pal_ynode_is_null(n))
		return 0;
	if (pal_ynode_is_null(n))
		pal_ydiag(diags, doc, n,
			  "%s: expected %s, got null; hint: remove the key to use the default",
			  what, expected);
	else
		pal_ydiag(diags, doc, n, "%s: expected %s, got %s", what, expected,
			  pal_ynode_describe(n));
	return PAL_EINVAL;
}

int pal_yget_string(const pal_ydoc *doc, const pal_ynode *n, const char *what, char **out,
		    pal_diags *diags)
{
	char *s;

	if (expect_scalar(doc, n, what, "a string", diags))
		return PAL_EINVAL;
	s = strdup(n->str);
	if (!s) {
		pal_ydiag(diags, doc, n, "%s: out of memory", what);
		return PAL_ENOMEM;
	}
	*out = s;
	return 0;
}

int pal_yget_int(const pal_ydoc *doc, const pal_ynode *n, const char *what, int64_t min,
		 int64_t max, int64_t *out, pal_diags *diags)
{
	char *end;
	long long v;

	if (expect_scalar(doc, n, what, "an integer", diags))
		return PAL_EINVAL;
	if (!is_decimal_int(n->str) || n->style != PAL_YSTYLE_PLAIN) {
		if (n->style != PAL_YSTYLE_PLAIN && is_decimal_int(n->str))
			pal_ydiag(diags, doc, n,
				  "%s: expected an integer, got a string (\"%s\"); hint: remove "
				  "the quotes",
				  what, n->str);
		else
			pal_ydiag(diags, doc, n, "%s: expected an integer, got %s (\"%.64s\")",
				  what, pal_ynode_describe(n), n->str);
		return PAL_EINVAL;
	}
	errno = 0;
	v = strtoll(n->str, &end, 10);
	if (errno == ERANGE || v < min || v > max) {
		pal_ydiag(diags, doc, n,
			  "%s: %.32s is out of range (expected an integer from %" PRId64
			  " to %" PRId64 ")",
			  what, n->str, min, max);
		return PAL_EINVAL;
	}
	*out = v;
	return 0;
}

int pal_yget_number(const pal_ydoc *doc, const pal_ynode *n, const char *what, double min,
		    double max, double *out, pal_diags *diags)
{
	double v;

	if (expect_scalar(doc, n, what, "a number", diags))
		return PAL_EINVAL;
	if (n->style != PAL_YSTYLE_PLAIN || !is_decimal_number(n->str) || n->len > 32) {
		pal_ydiag(diags, doc, n,
			  "%s: expected a number such as 2 or 1.5, got %s (\"%.64s\")", what,
			  pal_ynode_describe(n), n->str);
		return PAL_EINVAL;
	}
	v = g_ascii_strtod(n->str, NULL); /* locale-independent */
	if (!(v >= min && v <= max)) {
		pal_ydiag(diags, doc, n, "%s: %s is out of range (expected %g to %g)", what, n->str,
			  min, max);
		return PAL_EINVAL;
	}
	*out = v;
	return 0;
}

int pal_yget_duration(const pal_ydoc *doc, const pal_ynode *n, const char *what, int64_t min_ms,
		      int64_t max_ms, bool allow_zero, int64_t *out, pal_diags *diags)
{
	int64_t ms;
	char a[32], b[32];

	if (expect_scalar(doc, n, what, "a duration", diags))
		return PAL_EINVAL;
	if (allow_zero && n->style == PAL_YSTYLE_PLAIN && !strcmp(n->str, "0")) {
		*out = 0;
		return 0;
	}
	if (n->style == PAL_YSTYLE_PLAIN && is_decimal_int(n->str)) {
		pal_ydiag(diags, doc, n,
			  "%s: expected a duration, got an integer (%.32s); hint: add a unit, "
			  "such as %.32ss",
			  what, n->str, n->str);
		return PAL_EINVAL;
	}
	if (pal_parse_duration_ms(n->str, &ms) != 0) {
		pal_ydiag(diags, doc, n,
			  "%s: invalid duration \"%.64s\" (expected numbers with units ms, s, m, h "
			  "or d, such as 30s or 1h30m)",
			  what, n->str);
		return PAL_EINVAL;
	}
	if (ms == 0 && allow_zero) {
		*out = 0;
		return 0;
	}
	if (ms < min_ms || ms > max_ms) {
		pal_ydiag(diags, doc, n, "%s: %.64s is out of range (expected %s to %s%s)", what,
			  n->str, pal_fmt_duration(min_ms, a, sizeof a),
			  pal_fmt_duration(max_ms, b, sizeof b),
			  allow_zero ? ", or 0 for none" : "");
		return PAL_EINVAL;
	}
	*out = ms;
	return 0;
}

int pal_yget_enum(const pal_ydoc *doc, const pal_ynode *n, const char *what,
		  const char *const *names, size_t n_names, int *out, pal_diags *diags)
{
	GString *list;

	if (expect_scalar(doc, n, what, "a string", diags))
		return PAL_EINVAL;
	for (size_t i = 0; i < n_names; i++) {
		if (!strcmp(n->str, names[i])) {
			*out = (int)i;
			return 0;
		}
	}
	list = g_string_new(NULL);
	for (size_t i = 0; i < n_names; i++)
		g_string_append_printf(list, "%s%s", i ? ", " : "", names[i]);
	pal_ydiag(diags, doc, n, "unknown %s \"%.64s\" (expected %s)", what, n->str, list->str);
	g_string_free(list, TRUE);
	return PAL_EINVAL;
}

/* ---- did you mean ---- */

/* Optimal string alignment distance of A and B (insertions, deletions,
 * substitutions, adjacent transpositions).  Anything over CAP (including
 * words too long to bother with) returns CAP + 1. */
static size_t osa_distance(const char *a, const char *b, size_t cap)
{
	size_t la = strlen(a), lb = strlen(b);
	size_t rows[3][65];
	size_t *r2 = rows[0], *r1 = rows[1], *r0 = rows[2];

	if (la > 64 || lb > 64 || (la > lb ? la - lb : lb - la) > cap)
		return cap + 1;
	for (size_t j = 0; j <= lb; j++)
		r1[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t *t;

		r0[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
			size_t v = r1[j] + 1;

			if (r0[j - 1] + 1 < v)
				v = r0[j - 1] + 1;
			if (r1[j - 1] + cost < v)
				v = r1[j - 1] + cost;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    r2[j - 2] + 1 < v)
				v = r2[j - 2] + 1;
			r0[j] = v;
		}
		/* rotate: the current row becomes the previous one */
		t = r2;
		r2 = r1;
		r1 = r0;
		r0 = t;
	}
	return r1[lb] > cap ? cap + 1 : r1[lb];
}

const char *pal_suggest(const char *word, const char *const *cands, size_t n)
{
	const char *best = NULL;
	size_t best_d = 3, wl = strlen(word);

	for (size_t i = 0; i < n; i++) {
		size_t d = osa_distance(word, cands[i], 2);

		if (d < best_d && d * 2 < (wl > 1 ? wl : 2)) {
			best = cands[i];
			best_d = d;
		}
	}
	return best;
}
