/*
 * jobtarget.c - a job's `target:`: the side-effect call and the protocol
 * options around it.
 *
 * The method, the url (http or https, a literal host, no credentials), the
 * headers (none that palisade sets itself), the body, the trace state, the
 * status url, and what of each response an attempt keeps.  Placeholders and
 * secrets in them are checked by jobtemplate.c.
 */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <glib.h>
#include "jobfile_int.h"
#include "palisade/trace.h"
#include "palisade/url.h"

#define BODY_MAX_LEN (64 * 1024)
#define MAX_HEADERS 64

static void k_method(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
static void k_url(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
static void k_headers(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
static void k_body(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
static void k_tracestate(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
static void k_status_url(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
static void k_keep_body(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
static void k_keep_headers(struct jctx *c, const pal_ynode *v, pal_job_spec *s);

static const struct keydef target_keys[] = {
    {"method", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_method, false},
    {"url", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_url, true},
    {"headers", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_headers, false},
    {"body", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_body, false},
    {"timeout", K_DURATION, OFF(timeout_ms), 100, 1 * MS_H, NULL, 0, NULL, NULL, NULL, false},
    {"tracestate", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_tracestate, false},
    {"status_url", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_status_url, false},
    {"keep_body", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_keep_body, false},
    {"keep_headers", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_keep_headers, false},
};
const struct section pal__job_target_section = {"target", target_keys, N(target_keys)};

static bool host_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       ch == '.' || ch == '-';
}

/*
 * http:// or https://, a literal host (name, IPv4 or [IPv6]) with an
 * optional port, then any path and query.  No spaces, controls, non-ASCII
 * or credentials.  Placeholders and secrets are checked by pal__job_template().
 */
bool pal__job_url(struct jctx *c, const pal_ynode *v, const char *what, const char *u)
{
	const char *p, *host, *end;
	size_t hl;

	for (size_t i = 0; u[i]; i++) {
		unsigned char ch = (unsigned char)u[i];

		if (ch <= 0x20 || ch >= 0x7F) {
			pal__job_diag_at(
			    c, v, i,
			    "%s: invalid character in url (spaces, control characters and "
			    "non-ascii are not allowed); hint: percent-encode it",
			    what);
			return false;
		}
	}
	if (!strncmp(u, "http://", 7)) {
		host = u + 7;
	} else if (!strncmp(u, "https://", 8)) {
		host = u + 8;
	} else {
		char shown[80];

		pal_url_redact(u, shown, sizeof shown);
		pal__job_diag(c, v,
			      "%s: \"%.64s\" is not an http or https url; hint: write it as "
			      "http://host:port/path",
			      what, shown);
		return false;
	}
	end = host + strcspn(host, "/?#");
	if (memchr(host, '@', (size_t)(end - host))) {
		pal__job_diag_at(
		    c, v, (size_t)(host - u),
		    "%s: credentials in the url are not allowed; hint: send them in a header "
		    "with a ${SECRET} reference",
		    what);
		return false;
	}
	const char *frag = strchr(end, '#');
	if (frag) {
		pal__job_diag_at(c, v, (size_t)(frag - u),
				 "%s: a url fragment (#...) is never sent; remove it", what);
		return false;
	}
	for (const char *q = strchr(end, '%'); q; q = strchr(q + 1, '%'))
		if (!isxdigit((unsigned char)q[1]) || !isxdigit((unsigned char)q[2])) {
			pal__job_diag_at(c, v, (size_t)(q - u),
					 "%s: '%%' in a url starts an escape of two hex digits; "
					 "hint: write a '%%' itself as %%25",
					 what);
			return false;
		}
	p = host;
	if (*p == '[') {
		while (p < end && *p != ']')
			p++;
		if (p == end || p == host + 1) {
			pal__job_diag_at(c, v, (size_t)(host - u),
					 "%s: malformed ipv6 address in url", what);
			return false;
		}
		for (const char *q = host + 1; q < p; q++) {
			if (!isxdigit((unsigned char)*q) && *q != ':' && *q != '.') {
				pal__job_diag_at(c, v, (size_t)(q - u),
						 "%s: malformed ipv6 address in url", what);
				return false;
			}
		}
		p++;
		hl = (size_t)(p - host);
	} else {
		while (p < end && host_char(*p))
			p++;
		hl = (size_t)(p - host);
		if (hl == 0) {
			pal__job_diag_at(c, v, (size_t)(host - u), "%s: the url has no host", what);
			return false;
		}
		if (p < end && *p != ':') {
			pal__job_diag_at(
			    c, v, (size_t)(p - u),
			    "%s: invalid character '%c' in the host of the url; hint: "
			    "placeholders and secrets may only appear in the path and query",
			    what, *p);
			return false;
		}
	}
	if (p < end && *p == ':') {
		const char *ps = ++p;
		long port = 0;

		while (p < end && *p >= '0' && *p <= '9' && port <= 65535)
			port = port * 10 + (*p++ - '0');
		if (p == ps || p != end || port < 1 || port > 65535) {
			pal__job_diag_at(c, v, (size_t)(ps - u),
					 "%s: invalid port in url (expected 1 to 65535)", what);
			return false;
		}
	} else if (p != end) {
		pal__job_diag_at(c, v, (size_t)(p - u), "%s: malformed host in url", what);
		return false;
	}
	(void)hl;
	return true;
}

static void k_method(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	int e;
	char *m;

	if (pal_yget_enum(c->doc, v, "http method", method_names, N(method_names), &e, c->diags) !=
	    0) {
		c->errors++;
		return;
	}
	m = strdup(method_names[e]);
	if (!m) {
		c->errors++;
		return;
	}
	free(s->method);
	s->method = m;
}

static void k_url(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	char *u = pal__job_str(c, v, "url", URL_MAX_LEN);
	int before = c->errors;

	if (!u)
		return;
	if (pal__job_url(c, v, "url", u))
		pal__job_template(c, v, "url", 0, true);
	if (c->errors != before) {
		free(u);
		return;
	}
	free(s->url);
	s->url = u;
}

static void k_status_url(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	char *u = pal__job_str(c, v, "status_url", URL_MAX_LEN);
	int before = c->errors;

	c->n_status_url = v;
	if (!u)
		return;
	if (pal__job_url(c, v, "status_url", u))
		pal__job_template(c, v, "status_url", PH_COMMON | PH_IDEMPOTENCY_KEY, true);
	if (c->errors != before) {
		free(u);
		return;
	}
	free(s->status_url);
	s->status_url = u;
}

/* Sent as the tracestate header beside palisade's traceparent
 * (docs/protocol.md, "Trace context"): fixed text, no placeholders. */
static void k_tracestate(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	char why[256];
	char *t = pal__job_str(c, v, "tracestate", PAL_TRACESTATE_MAX);

	if (!t)
		return;
	if (!pal_tracestate_valid(t, why, sizeof why)) {
		pal__job_diag(c, v, "%s (W3C Trace Context)", why);
		free(t);
		return;
	}
	free(s->tracestate);
	s->tracestate = t;
}

/* The first bytes of the response body each attempt keeps: a count of
 * bytes, plain or with a unit (B, KiB, MiB), 0 keeping none. */
static void k_keep_body(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	static const struct {
		const char *unit;
		int64_t mult;
	} units[] = {{"", 1}, {"B", 1}, {"KiB", 1024}, {"MiB", 1024 * 1024}};
	char *t = pal__job_str(c, v, "keep_body", 32), *end;
	long long n;

	if (!t)
		return;
	errno = 0;
	n = isdigit((unsigned char)t[0]) ? strtoll(t, &end, 10) : -1;
	for (size_t i = 0; n >= 0 && !errno && i < N(units); i++) {
		if (strcmp(end, units[i].unit) != 0)
			continue;
		if (n <= PAL_KEEP_BODY_MAX / units[i].mult) {
			s->has_keep_body = true;
			s->keep_body = n * units[i].mult;
			free(t);
			return;
		}
		break;
	}
	pal__job_diag(
	    c, v,
	    "keep_body: \"%s\" is not a size from 0 to 1MiB (bytes, or a number with B, KiB or "
	    "MiB)",
	    t);
	free(t);
}

static bool tchar(char ch);

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The response headers each attempt keeps, by name: stored in lower case,
 * sorted, each once (header names are case-insensitive). */
static void k_keep_headers(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	char **names;
	size_t n = 0;

	if (pal_yexpect_seq(c->doc, v, "keep_headers", c->diags) != 0) {
		c->errors++;
		return;
	}
	if (v->n > PAL_KEEP_HEADERS_MAX) {
		pal__job_diag(c, v, "keep_headers: too many names (%zu, at most %d)", v->n,
			      PAL_KEEP_HEADERS_MAX);
		return;
	}
	names = calloc(v->n ? v->n : 1, sizeof *names);
	if (!names) {
		pal__job_diag(c, v, "keep_headers: out of memory");
		return;
	}
	for (size_t i = 0; i < v->n; i++) {
		char *name = pal__job_str(c, v->vals[i], "keep_headers name", 128);
		bool ok = name && name[0];

		for (size_t k = 0; ok && name[k]; k++)
			ok = tchar(name[k]);
		if (name && !ok)
			pal__job_diag(
			    c, v->vals[i],
			    "keep_headers: invalid header name \"%.64s\" (letters, digits and "
			    "!#$%%&'*+-.^_`|~ only)",
			    name);
		if (!ok) {
			free(name);
			continue;
		}
		for (size_t k = 0; name[k]; k++)
			name[k] = g_ascii_tolower(name[k]);
		names[n++] = name;
	}
	qsort(names, n, sizeof *names, cmp_str);
	size_t u = 0;
	for (size_t i = 0; i < n; i++) {
		if (u && !strcmp(names[u - 1], names[i]))
			free(names[i]);
		else
			names[u++] = names[i];
	}
	for (size_t i = 0; i < s->n_keep_headers; i++)
		free(s->keep_headers[i]);
	free(s->keep_headers);
	s->keep_headers = names;
	s->n_keep_headers = u;
}

static void k_body(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	char *b = pal__job_str(c, v, "body", BODY_MAX_LEN);
	int before = c->errors;

	c->n_body = v;
	if (!b)
		return;
	pal__job_template(c, v, "body", PH_COMMON, true);
	if (c->errors != before) {
		free(b);
		return;
	}
	free(s->body);
	s->body = b;
}

static bool tchar(char ch)
{
	return isalnum((unsigned char)ch) || strchr("!#$%&'*+-.^_`|~", ch);
}

/* Headers the executor sets itself (docs/jobs.md, docs/protocol.md). */
static bool reserved_header(const char *name)
{
	static const char *const reserved[] = {"idempotency-key", "host", "content-length",
					       "transfer-encoding", "connection"};

	if (!g_ascii_strncasecmp(name, "palisade-", 9))
		return true;
	for (size_t i = 0; i < N(reserved); i++)
		if (!g_ascii_strcasecmp(name, reserved[i]))
			return true;
	return false;
}

static void k_headers(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	pal_header *h;
	size_t n = 0;

	if (pal_yexpect_map(c->doc, v, "headers", c->diags) != 0) {
		c->errors++;
		return;
	}
	if (v->n > MAX_HEADERS) {
		pal__job_diag(c, v, "headers: too many headers (%zu, at most %d)", v->n,
			      MAX_HEADERS);
		return;
	}
	h = calloc(v->n ? v->n : 1, sizeof *h);
	if (!h) {
		pal__job_diag(c, v, "headers: out of memory");
		return;
	}
	for (size_t i = 0; i < v->n; i++) {
		const pal_ynode *kn = v->keys[i], *vn = v->vals[i];
		const char *name = kn->str;
		bool ok = name[0] != '\0' && strlen(name) <= 128;
		char *val;
		int before = c->errors;

		for (size_t k = 0; ok && name[k]; k++)
			ok = tchar(name[k]);
		if (!ok) {
			pal__job_diag(c, kn,
				      "headers: invalid header name \"%.64s\" (letters, digits and "
				      "!#$%%&'*+-.^_`|~ only)",
				      name);
			continue;
		}
		if (reserved_header(name)) {
			pal__job_diag(
			    c, kn,
			    "headers: \"%s\" is set by palisade itself and cannot be "
			    "configured; hint: see the side-effect protocol in docs/jobs.md",
			    name);
			continue;
		}
		for (size_t k = 0; k < n; k++) {
			if (!g_ascii_strcasecmp(h[k].name, name)) {
				pal__job_diag(c, kn,
					      "headers: \"%s\" repeats \"%s\" (header names are "
					      "case-insensitive)",
					      name, h[k].name);
				break;
			}
		}
		if (c->errors != before)
			continue;
		val = pal__job_str(c, vn, "header value", 8192);
		if (!val)
			continue;
		if (strpbrk(val, "\r\n")) {
			pal__job_diag(
			    c, vn,
			    "headers: the value of \"%s\" contains a line break; hint: use "
			    "a quoted single-line string",
			    name);
			free(val);
			continue;
		}
		pal__job_template(c, vn, "header value", 0, true);
		if (c->errors != before) {
			free(val);
			continue;
		}
		h[n].name = strdup(name);
		h[n].value = val;
		if (!h[n].name) {
			free(val);
			c->errors++;
			continue;
		}
		n++;
	}
	for (size_t i = 0; i < s->n_headers; i++) {
		free(s->headers[i].name);
		free(s->headers[i].value);
	}
	free(s->headers);
	s->headers = h;
	s->n_headers = n;
}

/* A body with GET, for the checks that span keys. */
void pal__job_check_body(struct jctx *c, pal_job_spec *s)
{
	if (c->n_body && s->method && !strcmp(s->method, "GET"))
		pal__job_diag(c, c->n_body,
			      "body: a GET request carries no body; hint: use POST or "
			      "remove body");
}
