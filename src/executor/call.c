/*
 * call.c - one side-effect call on the wire: the request rendered from the
 * job version (idempotency key, URL, body, headers with the fencing token),
 * the libcurl easy handle added to the executor's multi handle, and the
 * callbacks that keep a bounded copy of the response.  What the response
 * means is outcome.c's business.
 */
#include <curl/curl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "palisade/log.h"
#include "palisade/template.h"
#include "palisade/timefmt.h"
#include "palisade/trace.h"
#include "palisade/tz.h"
#include "palisade/url.h"
#include "executor_int.h"

/* ---- response buffers ---------------------------------------------------------- */

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
	pal__call *k = ud;
	size_t len = size * n, cap = (size_t)k->ex->cfg.body_cap;
	if (k->resp_len + len > cap) {
		k->resp_truncated = true;
		return 0; /* abort the transfer: bounded memory */
	}
	char *nb = realloc(k->resp, k->resp_len + len + 1);
	if (!nb)
		return 0;
	memcpy(nb + k->resp_len, p, len);
	k->resp = nb;
	k->resp_len += len;
	k->resp[k->resp_len] = '\0';
	return len;
}

static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
	pal__call *k = ud;
	size_t len = size * n;
	pal__excerpt_header(k, p, len);
	if (len > 22 && !strncasecmp(p, "Palisade-Stale-Token:", 21)) {
		k->stale_header = true;
		long long t = strtoll(p + 21, NULL, 10);
		k->stale_token = t > 0 ? (int64_t)t : 0;
	}
	if (len > 20 && !strncasecmp(p, "Idempotent-Replayed:", 20) && strstr(p + 20, "true"))
		k->replayed = true;
	if (len > 12 && !strncasecmp(p, "Retry-After:", 12)) {
		long s = strtol(p + 12, NULL, 10);
		if (s > 0 && s < 86400)
			k->retry_after_ms = s * 1000;
	}
	return len;
}

/* libcurl resends a request by itself when the reused connection it went out
 * on dies before any answer byte ("Connection died, retrying a fresh
 * connect"): it goes back to connect, which opens a new socket (or takes
 * another cached connection), and makes the request again.  The two
 * callbacks below see that: a second request of one transfer, or a socket
 * opened after its first request began. */
static int on_prereq(void *ud, char *ip, char *local_ip, int port, int local_port)
{
	(void)ip, (void)local_ip, (void)port, (void)local_port;
	pal__call *k = ud;
	if (++k->sends > 1)
		k->resent = true;
	return CURL_PREREQFUNC_OK;
}

static int on_sockopt(void *ud, curl_socket_t fd, curlsocktype purpose)
{
	(void)fd, (void)purpose;
	pal__call *k = ud;
	if (k->sends > 0)
		k->resent = true;
	return CURL_SOCKOPT_OK;
}

void pal__call_reset_transfer(pal__call *k)
{
	if (k->easy) {
		curl_easy_cleanup(k->easy);
		k->easy = NULL;
	}
	curl_slist_free_all(k->hdrs);
	k->hdrs = NULL;
	free(k->resp);
	k->resp = NULL;
	k->resp_len = 0;
	k->resp_truncated = k->stale_header = k->replayed = k->resent = false;
	k->sends = 0;
	pal__excerpt_clear_transfer(k);
	k->stale_token = 0;
	k->retry_after_ms = -1;
}

CURL *pal__easy_take(pal_executor *ex)
{
	if (!ex->n_easy_pool)
		return curl_easy_init();
	CURL *e = ex->easy_pool[--ex->n_easy_pool];
	curl_easy_reset(e);
	return e;
}

void pal__easy_give(pal_executor *ex, CURL *e)
{
	size_t keep = ex->cfg.max_inflight > 0 ? (size_t)ex->cfg.max_inflight : 64;
	if (ex->n_easy_pool == ex->cap_easy_pool && ex->cap_easy_pool < keep) {
		size_t cap = ex->cap_easy_pool ? ex->cap_easy_pool * 2 : 64;
		CURL **p = realloc(ex->easy_pool, (cap < keep ? cap : keep) * sizeof *p);
		if (p) {
			ex->easy_pool = p;
			ex->cap_easy_pool = cap < keep ? cap : keep;
		}
	}
	if (ex->n_easy_pool < ex->cap_easy_pool)
		ex->easy_pool[ex->n_easy_pool++] = e;
	else
		curl_easy_cleanup(e);
}

void pal__call_free(pal__call *k)
{
	if (k->spec)
		pal__spec_release(&k->ex->specs, k->spec);
	pal__call_reset_transfer(k);
	pal__excerpt_free(k);
	free(k->url);
	free(k->body);
	free(k->key);
	free(k->c.checkpoint);
	free(k);
}

/* ---- building requests --------------------------------------------------------- */

/* Append header line H (g_free'd here) to LIST. */
static struct curl_slist *append_hdr(struct curl_slist *list, char *h)
{
	struct curl_slist *l = h ? curl_slist_append(list, h) : NULL;
	g_free(h);
	return l ? l : list;
}

uint64_t pal__call_span(const pal__call *k)
{
	return pal_span_id(k->ph == PHASE_QUERY ? PAL_SPAN_QUERY : PAL_SPAN_REQUEST, k->c.attempt,
			   k->c.fence);
}

void pal__call_trace_ids(const pal_executor *ex, const pal__call *k, char trace[33], char span[17])
{
	pal_trace_id(ex->trace_prefix, k->c.id, trace);
	snprintf(span, 17, "%016" PRIx64, pal__call_span(k));
}

static int render_all(pal_executor *ex, pal__call *k, char *err, size_t errlen)
{
	const pal_call_spec *s = k->spec->call;
	char date[16] = "";
	int64_t local =
	    k->spec->tz ? pal_tz_to_local(k->spec->tz, k->c.scheduled_at) : k->c.scheduled_at;
	pal_fmt_date(pal_floor_div(local, 86400), date, sizeof date);
	pal_tpl_vars v = {.job = k->c.job_id,
			  .scheduled_at = k->c.scheduled_at,
			  .scheduled_date = date,
			  .partition = k->c.partition,
			  .trigger = k->c.id,
			  .request_id = k->c.request_id,
			  .idempotency_key = NULL,
			  .secrets = ex->cfg.secrets,
			  .tenant = k->c.tenant};
	/* Rendered again for every transfer of the call (a status query, the
	 * request, each chunk): the same key each time, since it depends on the
	 * trigger's stored fields only (a manual run's or backfill's request id
	 * among them: pal_tpl_render_key), the previous copy freed
	 * (it leaked one string per extra transfer, LeakSanitizer in
	 * test_executor_bad_responses). */
	free(k->key);
	k->key = NULL;
	int rc = pal_tpl_render_key(s->idempotency_key, &v, &k->key, err, errlen);
	if (rc)
		return rc;
	v.idempotency_key = k->key;
	const char *url_tpl = k->ph == PHASE_QUERY ? s->status_url : s->url;
	free(k->url);
	k->url = NULL;
	rc = pal_tpl_render(url_tpl, &v, PAL_TPL_URL | PAL_TPL_SECRETS, &k->url, err, errlen);
	if (rc)
		return rc;
	/* executor.target_hosts, before anything is sent (a job stored without
	 * the apply check, or under another node's setting during a roll) */
	if (!pal_target_granted(ex->cfg.targets, k->c.tenant, k->url)) {
		char shown[300], why[512];
		pal_url_redact(k->url, shown, sizeof shown);
		snprintf(err, errlen, "%s %s: %s",
			 k->ph == PHASE_QUERY ? "target.status_url" : "target.url", shown,
			 pal_target_refusal(k->c.tenant, k->url, why, sizeof why));
		return PAL_ENOHOST;
	}
	free(k->body);
	k->body = NULL;
	if (k->ph == PHASE_CALL && s->body)
		rc = pal_tpl_render(s->body, &v, PAL_TPL_SECRETS, &k->body, err, errlen);
	if (rc)
		return rc;
	k->hdrs = NULL;
	/* Header lines are built to size: a key (up to 1000 bytes) or a
	 * checkpoint is never cut short. */
	char *h;
	h = g_strdup_printf("Idempotency-Key: %s", k->key);
	k->hdrs = append_hdr(k->hdrs, h);
	h = g_strdup_printf("Palisade-Fencing-Token: %" PRId64, k->c.fence);
	k->hdrs = append_hdr(k->hdrs, h);
	h = g_strdup_printf("Palisade-Trigger: %" PRId64, k->c.id);
	k->hdrs = append_hdr(k->hdrs, h);
	h = g_strdup_printf("Palisade-Attempt: %d", k->c.attempt);
	k->hdrs = append_hdr(k->hdrs, h);
	char at[32];
	pal_fmt_rfc3339(k->c.scheduled_at, at, sizeof at);
	h = g_strdup_printf("Palisade-Scheduled-At: %s", at);
	k->hdrs = append_hdr(k->hdrs, h);
	if (k->c.checkpoint && k->ph == PHASE_CALL) {
		h = g_strdup_printf("Palisade-Checkpoint: %s", k->c.checkpoint);
		k->hdrs = append_hdr(k->hdrs, h);
	}
	bool has_ct = false;
	if (k->ph == PHASE_CALL) {
		for (size_t i = 0; i < s->n_headers; i++) {
			/* palisade's trace headers win: one traceparent per
			 * request, naming this attempt (docs/protocol.md) */
			if (!strcasecmp(s->headers[i].name, "traceparent") ||
			    !strcasecmp(s->headers[i].name, "tracestate"))
				continue;
			char *val = NULL;
			rc = pal_tpl_render(s->headers[i].value, &v, PAL_TPL_SECRETS, &val, err,
					    errlen);
			if (rc)
				return rc;
			h = g_strdup_printf("%s: %s", s->headers[i].name, val);
			free(val);
			if (!strcasecmp(s->headers[i].name, "Content-Type"))
				has_ct = true;
			k->hdrs = append_hdr(k->hdrs, h);
		}
		if (k->body && !has_ct)
			k->hdrs = curl_slist_append(k->hdrs, "Content-Type: application/json");
	}
	/* W3C Trace Context from ids already held (trace.h), after the
	 * job's headers, whose own trace headers are left out above. */
	char tp[PAL_TRACEPARENT_LEN + 1], line[PAL_TRACEPARENT_LEN + 16];
	pal_traceparent(ex->trace_prefix, k->c.id, pal__call_span(k), ex->cfg.trace_sampled, tp);
	snprintf(line, sizeof line, "traceparent: %s", tp);
	k->hdrs = curl_slist_append(k->hdrs, line);
	if (s->tracestate) {
		h = g_strdup_printf("tracestate: %s", s->tracestate);
		k->hdrs = append_hdr(k->hdrs, h);
	}
	k->hdrs = curl_slist_append(k->hdrs, "Expect:");
	return PAL_OK;
}

int pal__call_start(pal_executor *ex, pal__call *k)
{
	char err[512];
	pal__call_reset_transfer(k);
	int rc = render_all(ex, k, err, sizeof err);
	if (rc) {
		snprintf(k->render_err, sizeof k->render_err, "%s", err);
		pal_log(PAL_LOG_ERROR, "executor.render_failed", "{s:I, s:s, s:s}", "trigger",
			(json_int_t)k->c.id, "job", k->c.job_id, "error", err);
		return rc;
	}
	const pal_call_spec *s = k->spec->call;
	CURL *e = pal__easy_take(ex);
	if (!e)
		return PAL_ENOMEM;
	k->easy = e;
	curl_easy_setopt(e, CURLOPT_URL, k->url);
	curl_easy_setopt(e, CURLOPT_PRIVATE, k);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, k->hdrs);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, k);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, k);
	curl_easy_setopt(e, CURLOPT_PREREQFUNCTION, on_prereq);
	curl_easy_setopt(e, CURLOPT_PREREQDATA, k);
	curl_easy_setopt(e, CURLOPT_SOCKOPTFUNCTION, on_sockopt);
	curl_easy_setopt(e, CURLOPT_SOCKOPTDATA, k);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
	/* A side effect goes where the job says, not wherever a proxy variable
	 * inherited from the environment would send it: "" (the default) sets
	 * an empty proxy, which makes libcurl ignore http_proxy and friends. */
	if (strcmp(ex->cfg.proxy, "env") != 0)
		curl_easy_setopt(e, CURLOPT_PROXY, ex->cfg.proxy);
	long timeout = s->timeout_ms > 0 ? (long)s->timeout_ms : 30000;
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, timeout < 5000 ? timeout : 5000L);
	if (k->ph == PHASE_QUERY) {
		curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
	} else {
		curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, s->method ? s->method : "POST");
		if (k->body) {
			curl_easy_setopt(e, CURLOPT_POSTFIELDS, k->body);
			curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)strlen(k->body));
		} else if (s->method && strcmp(s->method, "GET") && strcmp(s->method, "DELETE")) {
			curl_easy_setopt(e, CURLOPT_POSTFIELDS, "");
		}
	}
	k->started_ms = pal_mono_ms();
	if (curl_multi_add_handle(ex->multi, e) != CURLM_OK)
		return PAL_EIO;
	return PAL_OK;
}

bool pal__render_skip(pal_executor *ex, pal__call *k, int rc)
{
	if (rc == PAL_EPERM) {
		/* One of the node's own variables (a job stored without the
		 * apply check): the same names on every node, so no node would
		 * send it; nothing was sent, and the attempt ends here (`failed`,
		 * `manual` with a ticket while an earlier outcome is unknown). */
		pal_log(PAL_LOG_ERROR, "executor.secret_refused", "{s:I, s:s, s:s, s:s}", "trigger",
			(json_int_t)k->c.id, "job", k->c.job_id, "tenant", k->c.tenant, "error",
			k->render_err);
		pal__minc(ex, "palisade_executor_secret_refusals_total", NULL, 1);
		pal__spent(ex, k, "secret_refused", 0, NULL);
		return true;
	}
	if (rc != PAL_ENOENT && rc != PAL_ENOGRANT && rc != PAL_ENOHOST)
		return false;
	/* A secret this node lacks may be set on another, and a secret or a
	 * host this node's executor.secrets or executor.target_hosts does not
	 * give the tenant may be given by another node's (the settings are
	 * restart-only: nodes differ during a roll).
	 * Nothing was sent, so the trigger goes back (the attempt is given
	 * back) and this node passes the job over for a while (render_skips,
	 * sql/007); when no live node can render it, the result's commit makes
	 * it `manual` with a ticket. */
	pal_log(PAL_LOG_WARN, "executor.render_skip", "{s:I, s:s, s:s, s:s, s:s, s:s}", "trigger",
		(json_int_t)k->c.id, "job", k->c.job_id, "tenant", k->c.tenant, "node",
		ex->cfg.node_id, "error", k->render_err, "skip", "5m");
	pal__minc(ex, "palisade_executor_render_skips_total", NULL, 1);
	k->render_skip = true;
	pal__queue_result(ex, k, PAL_TS_PENDING,
			  rc == PAL_ENOHOST    ? "target_not_granted"
			  : rc == PAL_ENOGRANT ? "secret_not_granted"
					       : "render_secret",
			  0, 1000, NULL);
	return true;
}

void pal__start_or_defer(pal_executor *ex, pal__call *k)
{
	int rc = pal__call_start(ex, k);
	if (rc && !pal__render_skip(ex, k, rc))
		pal__spent(ex, k, "render", 0, NULL);
}
