/*
 * targethosts.c - which hosts a job may call and notify (targethosts.h).
 *
 * The loader's check (pal_job_targets_check, at validate and apply) and the
 * senders' (pal_target_granted, in the executor before each call and the
 * notification delivery before each POST) share one host parser and one
 * matcher, so a url refused at apply is refused at send time too, whoever
 * stored it.  The parser accepts only what the job loader lets a url be
 * (http(s)://, a literal host of letters, digits, '.' and '-' or an
 * [IPv6] address, an optional port, then '/', '?' or the end): nothing
 * libcurl could read as another host (credentials, escapes, backslashes)
 * ever passes as a granted one.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "palisade/jobspec.h"
#include "palisade/targethosts.h"
#include "palisade/url.h"

static bool host_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       ch == '.' || ch == '-';
}

/* The end of a host at P: a name of host_char()s or an [IPv6] address;
 * P itself when there is none. */
static const char *host_end(const char *p)
{
	const char *q = p;
	if (*q == '[') {
		for (q++; isxdigit((unsigned char)*q) || *q == ':' || *q == '.'; q++)
			;
		return *q == ']' && q > p + 1 ? q + 1 : p;
	}
	while (host_char(*q))
		q++;
	return q;
}

/* ":PORT" at P (1 to 65535) into *PORT, the end past it into *END; false
 * when P does not start one. */
static bool port_at(const char *p, long *port, const char **end)
{
	long v = 0;
	const char *q = p + 1;
	if (*p != ':')
		return false;
	while (*q >= '0' && *q <= '9' && v <= 65535)
		v = v * 10 + (*q++ - '0');
	if (q == p + 1 || v < 1 || v > 65535)
		return false;
	*port = v;
	*end = q;
	return true;
}

/* The host (HOST, HL bytes) and port of URL, as libcurl connects to them
 * (the scheme's default port when none is written); false when URL is not
 * http(s)://host[:port] followed by '/', '?', '#' or its end. */
static bool url_authority(const char *url, const char **host, size_t *hl, long *port)
{
	const char *p;
	if (!strncmp(url, "http://", 7)) {
		p = url + 7;
		*port = 80;
	} else if (!strncmp(url, "https://", 8)) {
		p = url + 8;
		*port = 443;
	} else {
		return false;
	}
	const char *e = host_end(p);
	if (e == p)
		return false;
	*host = p;
	*hl = (size_t)(e - p);
	if (*e == ':' && !port_at(e, port, &e))
		return false;
	return !*e || *e == '/' || *e == '?' || *e == '#';
}

bool pal_target_pattern_ok(const char *s)
{
	const char *e;
	if (!strncmp(s, "*.", 2))
		e = host_end(s + 2) == s + 2 || s[2] == '[' ? s : host_end(s + 2);
	else if (s[0] == '*')
		e = s + 1;
	else
		e = host_end(s);
	if (e == s || strlen(s) > 262)
		return false;
	long port;
	return !*e || (port_at(e, &port, &e) && !*e);
}

/* Whether pattern PAT (valid) matches HOST (HL bytes) on PORT. */
static bool pattern_matches(const char *pat, const char *host, size_t hl, long port)
{
	const char *pe = pat[0] == '[' ? strchr(pat, ']') + 1 : pat + strcspn(pat, ":");
	size_t pl = (size_t)(pe - pat);
	if (*pe == ':' && strtol(pe + 1, NULL, 10) != port)
		return false;
	if (pl == 1 && pat[0] == '*')
		return true;
	if (pat[0] == '*') /* "*.DOMAIN": a longer name ending in ".DOMAIN" */
		return hl > pl - 1 && !strncasecmp(host + hl - (pl - 1), pat + 1, pl - 1);
	return hl == pl && !strncasecmp(host, pat, pl);
}

static int grant_cmp(const void *key, const void *g)
{
	return strcmp(key, ((const pal_tenant_grant *)g)->tenant);
}

bool pal_target_granted(const pal_target_policy *p, const char *tenant, const char *url)
{
	if (!p || !p->n_grants)
		return true;
	const char *host;
	size_t hl;
	long port;
	if (!tenant || !url || !url_authority(url, &host, &hl, &port))
		return false;
	const pal_tenant_grant *g =
	    bsearch(tenant, p->grants, p->n_grants, sizeof *p->grants, grant_cmp);
	for (size_t i = 0; g && i < g->n_names; i++)
		if (pattern_matches(g->names[i], host, hl, port))
			return true;
	return false;
}

const char *pal_target_refusal(const char *tenant, const char *url, char *buf, size_t len)
{
	char host[272];
	pal_url_host(url ? url : "", host, sizeof host);
	snprintf(buf, len,
		 "executor.target_hosts does not give host %s to tenant %s; hint: list it (or a "
		 "*.DOMAIN pattern covering it) under the tenant in executor.target_hosts",
		 *host ? host : "(none)", tenant && *tenant ? tenant : "(none)");
	return buf;
}

/* One diagnostic when URL (WHAT of job S) is refused; 1 then, else 0. */
static size_t check_url(const pal_job_spec *s, const pal_target_policy *p, const char *what,
			const char *url, pal_diags *d)
{
	if (!url || pal_target_granted(p, s->tenant, url))
		return 0;
	char shown[300], msg[512];
	pal_url_redact(url, shown, sizeof shown);
	pal_diags_addf(d, s->file, s->line, s->col, "job \"%s\": %s %s: %s", s->id, what, shown,
		       pal_target_refusal(s->tenant, url, msg, sizeof msg));
	return 1;
}

size_t pal_job_targets_check(const struct pal_job_spec *s, const pal_target_policy *p, pal_diags *d)
{
	if (!p || !p->n_grants)
		return 0;
	size_t refused = check_url(s, p, "target.url", s->url, d) +
			 check_url(s, p, "target.status_url", s->status_url, d);
	char where[48];
	for (size_t i = 0; i < s->n_notify; i++) {
		snprintf(where, sizeof where, "notify[%zu].url", i);
		refused += check_url(s, p, where, s->notify[i].url, d);
	}
	return refused;
}

size_t pal_notify_rule_targets_check(const struct pal_notify_rule *r, const pal_target_policy *p,
				     pal_diags *d)
{
	if (!r->tenant || r->remove || pal_target_granted(p, r->name, r->n.url))
		return 0;
	char shown[300], msg[512];
	pal_url_redact(r->n.url, shown, sizeof shown);
	pal_diags_addf(d, NULL, 0, 0, "notify rule of tenant %s (%s): %s", r->name, shown,
		       pal_target_refusal(r->name, r->n.url, msg, sizeof msg));
	return 1;
}
