/*
 * excerpt.c - masking secrets in a response excerpt and showing its bytes
 * (see include/palisade/excerpt.h).  The executor masks with it before a
 * result is queued for commit; the store shows the stored bytes with it.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "palisade/excerpt.h"

/* The length of the longest non-empty secret at P (LEFT bytes), 0 if none. */
static size_t match_at(const char *p, size_t left, const char *const *secrets, size_t n)
{
	size_t best = 0;
	for (size_t i = 0; i < n; i++) {
		size_t l = secrets[i] ? strlen(secrets[i]) : 0;
		if (l && l <= left && l > best && !memcmp(p, secrets[i], l))
			best = l;
	}
	return best;
}

/* True when P[0..left) is a proper prefix of some non-empty secret. */
static bool prefix_of_secret(const char *p, size_t left, const char *const *secrets, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		size_t l = secrets[i] ? strlen(secrets[i]) : 0;
		if (left < l && !memcmp(p, secrets[i], left))
			return true;
	}
	return false;
}

char *pal_excerpt_mask(const char *buf, size_t len, const char *const *secrets, size_t n, bool cut,
		       size_t *out_len)
{
	GString *g = g_string_sized_new(len + 1);
	size_t i = 0;
	while (i < len) {
		/* first: the rest may be the first bytes of a (longer) secret */
		if (cut && prefix_of_secret(buf + i, len - i, secrets, n))
			break;
		size_t m = match_at(buf + i, len - i, secrets, n);
		if (m) {
			g_string_append(g, PAL_EXCERPT_MASK);
			i += m;
			continue;
		}
		g_string_append_c(g, buf[i++]);
	}
	*out_len = g->len;
	return g_string_free(g, FALSE);
}

size_t pal_excerpt_escape_max(GString *out, const char *buf, size_t len, size_t room)
{
	if (!len)
		return 0; /* BUF may be NULL then (an empty body) */
	const char *p = buf, *end = buf + len;
	char esc[8];
	while (p < end) {
		unsigned char c = (unsigned char)*p;
		const char *shown = esc;
		size_t in = 1, n;
		if (c == '\\') {
			shown = "\\\\";
		} else if (c == '\n' || c == '\r' || c == '\t') {
			shown = c == '\n' ? "\\n" : c == '\r' ? "\\r" : "\\t";
		} else if (c >= 0x20 && c < 0x7f) {
			shown = p;
		} else {
			gunichar u =
			    c >= 0x80 ? g_utf8_get_char_validated(p, end - p) : (gunichar)-1;
			if (u != (gunichar)-1 && u != (gunichar)-2 && !g_unichar_iscntrl(u)) {
				shown = p;
				in = (size_t)(g_utf8_next_char(p) - p);
			} else {
				snprintf(esc, sizeof esc, "\\x%02x", c);
			}
		}
		n = shown == p ? in : strlen(shown);
		if (n > room)
			break; /* the next one whole would go past ROOM */
		g_string_append_len(out, shown, (gssize)n);
		room -= n;
		p += in;
	}
	return (size_t)(p - buf);
}

void pal_excerpt_escape(GString *out, const char *buf, size_t len)
{
	pal_excerpt_escape_max(out, buf, len, SIZE_MAX);
}
