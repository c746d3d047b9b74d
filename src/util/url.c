/* url.c - URL parsing for palisade's own needs (include/palisade/url.h). */
#include <string.h>
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
