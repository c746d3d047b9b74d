/*
 * pgarray.c - the one encoder of array parameters handed to PostgreSQL.
 *
 * Every array palisade sends (ids, tokens, job ids, groups, hosts, keys) is
 * built here as an array literal in PostgreSQL's text input syntax and sent
 * as one parameter ($n::text[], $n::bigint[], ...).  Text elements are
 * always double-quoted with '"' and '\' escaped, so every legal value
 * round-trips: the empty string, the words NULL, null, true or default,
 * values with commas, braces, quotes, backslashes or blanks.  A NULL
 * pointer becomes an SQL NULL element.  (A job called "null" once stopped
 * the planning of a whole shard because an unquoted element read as NULL.)
 */
#include <inttypes.h>
#include <string.h>
#include "store_int.h"

void pal__pgarr_init(pal_pgarr *a)
{
	a->s = g_string_new("{");
	a->n = 0;
}

static void sep(pal_pgarr *a)
{
	if (a->n++)
		g_string_append_c(a->s, ',');
}

void pal__pgarr_text(pal_pgarr *a, const char *v)
{
	sep(a);
	if (!v) {
		g_string_append(a->s, "NULL");
		return;
	}
	g_string_append_c(a->s, '"');
	/* Copy runs between the characters that need a backslash at once. */
	for (const char *p = v;;) {
		size_t run = strcspn(p, "\"\\");
		g_string_append_len(a->s, p, (gssize)run);
		p += run;
		if (!*p)
			break;
		g_string_append_c(a->s, '\\');
		g_string_append_c(a->s, *p++);
	}
	g_string_append_c(a->s, '"');
}

void pal__pgarr_i64(pal_pgarr *a, int64_t v)
{
	sep(a);
	/* Digits by hand: printf was a tenth of apply's CLI time. */
	char buf[24], *e = buf + sizeof buf, *p = e;
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
	do {
		*--p = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		*--p = '-';
	g_string_append_len(a->s, p, e - p);
}

char *pal__pgarr_end(pal_pgarr *a)
{
	g_string_append_c(a->s, '}');
	char *s = g_string_free(a->s, FALSE);
	a->s = NULL;
	return s;
}

char *pal__pgarr_scope(const char *const *v, size_t n)
{
	if (!n)
		return NULL;
	pal_pgarr a;
	pal__pgarr_init(&a);
	for (size_t i = 0; i < n; i++)
		pal__pgarr_text(&a, v[i]);
	return pal__pgarr_end(&a);
}

char *pal__pgarr_ints(const int *v, size_t n)
{
	pal_pgarr a;
	pal__pgarr_init(&a);
	for (size_t i = 0; i < n; i++)
		pal__pgarr_i64(&a, v[i]);
	return pal__pgarr_end(&a);
}
