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
