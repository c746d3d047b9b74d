/*
 * excerpt.h - what an attempt keeps of a service's response, as bytes that
 * are safe to store and to show (docs/jobs.md, target.keep_body and
 * keep_headers): the values of the job's ${ENV} secrets masked before
 * anything is written, and bytes shown escaped.  Pure functions, no I/O.
 */
#ifndef PALISADE_EXCERPT_H
#define PALISADE_EXCERPT_H

#include <stdbool.h>
#include <stddef.h>
#include <glib.h>

/* What replaces each secret value. */
#define PAL_EXCERPT_MASK "***"

/*
 * BUF[0..len) with every occurrence of each non-empty SECRETS[i] replaced by
 * PAL_EXCERPT_MASK (at each position the longest secret that matches), as
 * a new string of *out_len bytes plus a NUL (g_free).  CUT: the bytes went
 * on past LEN (a transfer cut short), so a tail that could be the start of
 * a secret is dropped too: no byte of a secret's prefix is kept either.
 * Never fails (glib aborts on out of memory).
 */
char *pal_excerpt_mask(const char *buf, size_t len, const char *const *secrets, size_t n, bool cut,
		       size_t *out_len);

/*
 * Append BUF[0..len) to OUT as readable text: valid UTF-8 that is not a
 * control character as it is; '\\' as "\\\\"; newline, carriage return and
 * tab as "\n", "\r", "\t"; any other byte as "\xNN".  The result is valid
 * UTF-8 (it can go into JSON) and names every byte.  BUF may be NULL when
 * LEN is 0.
 */
void pal_excerpt_escape(GString *out, const char *buf, size_t len);

/*
 * As pal_excerpt_escape, appending at most ROOM bytes: it stops before the
 * first byte or character whose shown form would go past ROOM, so what it
 * appends ends on a whole escape and a whole UTF-8 character.  Returns how
 * many bytes of BUF it showed (LEN when all fit).
 */
size_t pal_excerpt_escape_max(GString *out, const char *buf, size_t len, size_t room);

#endif
