/*
 * excerpt.c - what an attempt keeps of the service's answer (docs/jobs.md,
 * target.keep_body and keep_headers): the headers the job names, as they
 * arrive (on_header in call.c hands every line here), and, when a transfer
 * ends with an HTTP status, the first keep_body bytes of the body (read
 * whole by call.c up to executor's body cap), with every value of the
 * job's ${ENV} secrets masked before anything leaves this file.  The last
 * such answer of a claim goes with its result into the commit
 * (results.c), which writes it to attempt_responses in the same statement.
 * Runs on the executor thread.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "palisade/excerpt.h"
#include "palisade/template.h"
#include "executor_int.h"

static bool kept_name(const pal_call_spec *s, const char *name, size_t n)
{
	for (size_t i = 0; i < s->n_keep_headers; i++)
		if (strlen(s->keep_headers[i]) == n && !strncasecmp(s->keep_headers[i], name, n))
			return true;
	return false;
}

void pal__excerpt_header(pal__call *k, const char *line, size_t len)
{
	const pal_call_spec *s = k->spec->call;
	if (!s->n_keep_headers && (s->keep_body == 0 || k->ex->cfg.keep_body_max <= 0))
		return; /* nothing of this answer is kept: not even its content type */
	if (len >= 5 && !memcmp(line, "HTTP/", 5)) {
		/* a new response (after a 1xx): its own headers only */
		pal__excerpt_clear_transfer(k);
		return;
	}
	const char *colon = memchr(line, ':', len);
	if (!colon || colon == line)
		return;
	size_t nlen = (size_t)(colon - line);
	bool ctype = nlen == 12 && !strncasecmp(line, "Content-Type", 12);
	if (!ctype && !kept_name(s, line, nlen))
		return;
	const char *v = colon + 1, *end = line + len;
	while (v < end && (*v == ' ' || *v == '\t'))
		v++;
	while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\t'))
		end--;
	if (ctype) {
		g_free(k->resp_ctype);
		k->resp_ctype = g_strndup(v, (size_t)(end - v));
	}
	if (kept_name(s, line, nlen)) {
		if (!k->resp_hdrs)
			k->resp_hdrs = g_ptr_array_new_with_free_func(g_free);
		g_ptr_array_add(k->resp_hdrs, g_ascii_strdown(line, (gssize)nlen));
		g_ptr_array_add(k->resp_hdrs, g_strndup(v, (size_t)(end - v)));
	}
}

void pal__excerpt_clear_transfer(pal__call *k)
{
	if (k->resp_hdrs)
		g_ptr_array_free(k->resp_hdrs, TRUE);
	k->resp_hdrs = NULL;
	g_free(k->resp_ctype);
	k->resp_ctype = NULL;
}

/* Drop the kept answer of K (not the current transfer's headers). */
static void drop_kept(pal__call *k)
{
	g_free(k->ex_body);
	g_free(k->ex_hdrs);
	g_free(k->ex_ctype);
	k->ex_body = k->ex_hdrs = k->ex_ctype = NULL;
	k->ex_body_len = 0;
	k->ex_keep = k->ex_trunc = false;
}

void pal__excerpt_free(pal__call *k)
{
	pal__excerpt_clear_transfer(k);
	drop_kept(k);
}

static void add_secret(const char *value, void *ud)
{
	g_ptr_array_add(ud, (gpointer)value);
}

/* S[0..n) masked and shown escaped, cut so that what is shown (what is
 * stored) takes at most ROOM bytes, at a whole character and a whole
 * escape, as a new string (g_free); *TOOK: its length, *CUT: some of S was
 * not shown. */
static char *shown(const char *s, size_t n, GPtrArray *secrets, size_t room, size_t *took,
		   bool *cut)
{
	size_t mlen;
	char *m =
	    pal_excerpt_mask(s, n, (const char *const *)secrets->pdata, secrets->len, false, &mlen);
	GString *g = g_string_sized_new(mlen < room ? mlen + 8 : room + 8);
	*cut = pal_excerpt_escape_max(g, m, mlen, room) < mlen;
	*took = g->len;
	g_free(m);
	return g_string_free(g, FALSE);
}

void pal__excerpt_keep(pal_executor *ex, pal__call *k)
{
	const pal_call_spec *s = k->spec->call;
	int64_t keep = s->keep_body < 0 ? PAL_KEEP_BODY_DEFAULT : s->keep_body;
	if (keep > ex->cfg.keep_body_max)
		keep = ex->cfg.keep_body_max;
	bool hdrs = k->resp_hdrs && k->resp_hdrs->len;
	drop_kept(k); /* the previous answer of this claim, if any */
	if (!hdrs && (keep <= 0 || !k->resp_len)) {
		pal__excerpt_clear_transfer(k);
		return; /* nothing to keep: the status is the attempt's http_status */
	}
	/* Every secret the request used, as this node resolves them. */
	GPtrArray *secrets = g_ptr_array_new();
	pal_tpl_each_secret(s->url, add_secret, secrets);
	pal_tpl_each_secret(s->status_url, add_secret, secrets);
	pal_tpl_each_secret(s->body, add_secret, secrets);
	for (size_t i = 0; i < s->n_headers; i++)
		pal_tpl_each_secret(s->headers[i].value, add_secret, secrets);
	if (keep > 0 && k->resp_len) {
		size_t mlen;
		char *m =
		    pal_excerpt_mask(k->resp, k->resp_len, (const char *const *)secrets->pdata,
				     secrets->len, k->resp_truncated, &mlen);
		k->ex_trunc = k->resp_truncated || mlen > (size_t)keep;
		k->ex_body_len = mlen < (size_t)keep ? mlen : (size_t)keep;
		k->ex_body = m;
	}
	size_t took;
	bool cut;
	if (k->resp_ctype)
		k->ex_ctype = shown(k->resp_ctype, strlen(k->resp_ctype), secrets,
				    PAL_KEEP_HEADERS_BYTES, &took, &cut);
	/* The named headers, names and masked values as stored (escaped),
	 * within PAL_KEEP_HEADERS_BYTES: a service repeating one header
	 * thousands of times (libcurl takes up to 300 KB of them) keeps 8 KiB
	 * of it. */
	json_t *o = hdrs ? json_object() : NULL;
	size_t room = PAL_KEEP_HEADERS_BYTES;
	bool hcut = false;
	for (guint i = 0; hdrs && !hcut && i + 1 < k->resp_hdrs->len; i += 2) {
		const char *name = k->resp_hdrs->pdata[i], *raw = k->resp_hdrs->pdata[i + 1];
		json_t *had = json_object_get(o, name);
		size_t cost = had ? 2 : strlen(name); /* ", " or the name */
		if (cost >= room) {
			hcut = true;
			break;
		}
		room -= cost;
		char *v = shown(raw, strlen(raw), secrets, room, &took, &hcut);
		room -= took;
		if (had) { /* a repeated header: one value, joined as HTTP allows */
			char *j = g_strdup_printf("%s, %s", json_string_value(had), v);
			json_object_set_new(o, name, json_string(j));
			g_free(j);
		} else {
			json_object_set_new(o, name, json_string(v));
		}
		g_free(v);
	}
	if (hcut)
		json_object_set_new(o, PAL_KEEP_HEADERS_CUT_KEY, json_string("true"));
	if (o) { /* else none: the commit writes {} */
		char *text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
		json_decref(o);
		k->ex_hdrs = g_strdup(text ? text : "{}");
		free(text);
	}
	g_ptr_array_free(secrets, TRUE);
	k->ex_keep = true;
	pal__excerpt_clear_transfer(k);
}
