/*
 * html.c - escaping for the pages the nodes serve (the console, the admin
 * status page).  Every value a page prints comes from the database,
 * ZooKeeper or another node and goes through one of these functions; none
 * is trusted to be HTML, a URL or a shell word.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/html.h"

void pal_html_text(GString *out, const char *s)
{
	if (!s)
		return;
	const char *end = s + strlen(s);
	while (s < end) {
		gunichar u = g_utf8_get_char_validated(s, end - s);
		if (u == (gunichar)-1 || u == (gunichar)-2) {
			g_string_append(out, "\xef\xbf\xbd"); /* U+FFFD */
			s++;
			continue;
		}
		const char *next = g_utf8_next_char(s);
		switch (u) {
		case '&':
			g_string_append(out, "&amp;");
			break;
		case '<':
			g_string_append(out, "&lt;");
			break;
		case '>':
			g_string_append(out, "&gt;");
			break;
		case '"':
			g_string_append(out, "&quot;");
			break;
		case '\'':
			g_string_append(out, "&#39;");
			break;
		default:
			if ((u < 0x20 && u != '\t' && u != '\n') || u == 0x7f || (u >= 0x80 && u < 0xa0))
				g_string_append(out, "\xef\xbf\xbd");
			else
				g_string_append_len(out, s, next - s);
		}
		s = next;
	}
}

void pal_html_urlarg(GString *out, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
		if (g_ascii_isalnum(*p) || *p == '-' || *p == '.' || *p == '_' || *p == '~') {
			g_string_append_c(out, (char)*p);
		} else {
			g_string_append_c(out, '%');
			g_string_append_c(out, hex[*p >> 4]);
			g_string_append_c(out, hex[*p & 15]);
		}
	}
}

void pal_html_value(GString *out, const json_t *v)
{
	if (v == NULL || json_is_null(v)) {
		g_string_append(out, "-");
	} else if (json_is_string(v)) {
		pal_html_text(out, json_string_value(v));
	} else if (json_is_true(v)) {
		g_string_append(out, "yes");
	} else if (json_is_false(v)) {
		g_string_append(out, "no");
	} else if (json_is_integer(v)) {
		g_string_append_printf(out, "%lld", (long long)json_integer_value(v));
	} else if (json_is_real(v)) {
		g_string_append_printf(out, "%.10g", json_real_value(v));
	} else {
		char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		pal_html_text(out, s);
		free(s);
	}
}

void pal_shell_quote(GString *out, const char *s)
{
	g_string_append_c(out, '\'');
	for (const char *p = s ? s : ""; *p; p++) {
		if (*p == '\'')
			g_string_append(out, "'\\''");
		else
			g_string_append_c(out, *p);
	}
	g_string_append_c(out, '\'');
}
