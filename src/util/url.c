/* url.c - URL parsing for palisade's own needs (include/palisade/url.h). */
#include <string.h>
#include <stdio.h>
#include "palisade/url.h"

void pal_url_host(const char *url, char *buf, size_t len)
{
	buf[0] = '\0';
	const char *p = strstr(url, "://");
	if (!p)
		return;
	p += 3;
	const char *at = NULL;
	for (const char *q = p; *q && *q != '/' && *q != '?' && *q != '#'; q++)
		if (*q == '@')
			at = q;
	if (at)
		p = at + 1;
	/* host[:port] - the port is part of the identity: two services on one
	 * host fail independently. */
	const char *e = p;
	if (*p == '[') {
		e = strchr(p, ']');
		if (!e)
			return;
		e++;
	}
	while (*e && *e != '/' && *e != '?' && *e != '#')
		e++;
	size_t n = (size_t)(e - p);
	if (n >= len)
		n = len - 1;
	memcpy(buf, p, n);
	buf[n] = '\0';
}

void pal_url_redact(const char *url, char *buf, size_t len)
{
	if (!len)
		return;
	buf[0] = '\0';
	if (!url)
		return;
	/* The authority starts after "scheme://" (or at the start when there is
	 * no scheme: "user:pw@host/x" is masked too) and ends at / ? #. */
	const char *p = strstr(url, "://");
	p = p ? p + 3 : url;
	const char *at = NULL, *colon = NULL;
	for (const char *q = p; *q && *q != '/' && *q != '?' && *q != '#'; q++)
		if (*q == '@')
			at = q;
	if (at)
		for (const char *q = p; q < at; q++)
			if (*q == ':') {
				colon = q;
				break;
			}
	if (!colon) {
		snprintf(buf, len, "%s", url);
		return;
	}
	snprintf(buf, len, "%.*s:***%s", (int)(colon - url), url, at);
}

void pal_url_redact_text(const char *text, char *buf, size_t len)
{
	if (!len)
		return;
	size_t o = 0;
	for (const char *p = text ? text : ""; *p && o + 1 < len;) {
		if (strncmp(p, "://", 3)) {
			buf[o++] = *p++;
			continue;
		}
		/* An authority: up to the path, query, fragment, a blank or a
		 * quote (the URL's end inside a message). */
		const char *a = p + 3, *e = a, *at = NULL, *colon = NULL;
		while (*e && !strchr("/?#\"' \t\r\n", *e))
			e++;
		for (const char *q = a; q < e; q++)
			if (*q == '@')
				at = q;
		for (const char *q = a; at && q < at; q++)
			if (*q == ':') {
				colon = q;
				break;
			}
		const char *stop = colon ? colon + 1 : e;
		while (p < stop && o + 1 < len)
			buf[o++] = *p++;
		if (colon) {
			for (const char *m = "***"; *m && o + 1 < len; m++)
				buf[o++] = *m;
			p = at;
		}
	}
	buf[o] = '\0';
}
