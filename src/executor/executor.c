/*
 * executor.c - the executor thread: claim -> call -> classify -> commit
 * (see include/palisade/executor.h for the contract).
 *
 * Model: one thread drives everything non-blocking through one libcurl multi
 * handle; its PostgreSQL statements (claim, checkpoint, batched commit) are
 * short and never span a call.  The lease thread (lease.c) renews leases on
 * its own connection and tells this thread, through the shared lease table,
 * which leases were lost and when each one's monotonic deadline falls.
 *
 * A call goes through phases:
 *   QUERY  the previous outcome is unknown: GET the status URL with the same
 *          key first (found -> succeeded; 404 -> CALL; else stay unknown)
 *   CALL   the side-effect request with token and key
 *   WAIT   has_more: checkpoint stored, next chunk after next_delay_s
 */
#include <curl/curl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include "palisade/callpolicy.h"
#include "palisade/executor.h"
#include "palisade/execstore.h"
#include "palisade/log.h"
#include "palisade/template.h"
#include "palisade/timefmt.h"
#include "palisade/tz.h"
#include "executor_int.h"

/* Longest a call waits parked for its host's probe before it is handed
 * back, and how many calls one host may have parked (the rest of a claim
 * batch goes back to pending: parked calls count against max_inflight). */
#define PARK_MAX_MS 30000
#define PARK_PER_HOST 8

/* PHASE_PARKED: claimed while its host's breaker was half-open with the
 * probe in flight; waits (lease held) for the probe's verdict. */
typedef enum { PHASE_QUERY, PHASE_CALL, PHASE_WAIT, PHASE_PARKED } phase;

typedef struct call {
	pal_executor *ex;
	pal_claimed c;
	const spec_entry *spec;
	phase ph;
	CURL *easy;
	struct curl_slist *hdrs;
	char *url, *body, *key;
	char *resp;
	size_t resp_len;
	bool resp_truncated, stale_header;
	int64_t retry_after_ms;
	int64_t started_ms, resume_at_ms;
	phase parked_ph;   /* the phase to start when unparked */
	int64_t parked_ms; /* CLOCK_MONOTONIC when parked */
	char host[256];
	bool called;      /* this claim already sent the side-effect request */
	char last_class[48];
	struct call *next;
} call;

struct pal_executor {
	pal_executor_config cfg;
	pal_metrics *m;
	pthread_t thread;
	atomic_bool stop, draining;
	int64_t drain_deadline_ms;

	pal_store *st;
	CURLM *multi;
	call *calls; /* in flight or waiting */
	int inflight;
	pal_breakers *breakers;
	spec_cache specs;
	uint64_t rng;
	int64_t next_claim_ms, db_backoff_ms, next_db_ms;

	pal_result *results;
	call **result_calls;
	int n_results, cap_results;

	pal_leases leases; /* shared with the lease thread */
	pal_lease_thread *lt;

	/* a pending limits change (reload), under mu */
	bool limits_changed;
	bool ignore_lease_loss; /* drill only: PALISADE_FAULT_IGNORE_LEASE_LOSS=1 */
	int64_t db_offset_ms;    /* database clock - CLOCK_REALTIME */
	int64_t db_offset_at_ms; /* CLOCK_MONOTONIC of that measurement, 0 = never */
	int new_batch, new_max_inflight, new_renew_failures;
	pal_group_conf *new_groups;
	size_t new_n_groups;

	/* counters for status */
	atomic_llong claimed, succeeded, failed, stale_db, stale_sink, lost, self_stops;
	pthread_mutex_t mu;
	json_t *status;
};

int64_t pal__mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Now by the database's clock.  Retry instants, max_age and deadlines are
 * compared with times the database wrote (scheduled_at, due_at) and are
 * written back for the database to compare (next_attempt_at), so they are
 * judged by its clock: a host clock that is off cannot fail a trigger early
 * or park its retry for an hour (tests/integration/test_clock_skew.sh). */
static int64_t db_ms(const pal_executor *ex)
{
	return wall_ms() + ex->db_offset_ms;
}

static void minc(pal_executor *ex, const char *name, const char *labels, double v)
{
	if (ex->m)
		pal_metric_inc(ex->m, name, labels, v);
}

static void declare_metrics(pal_metrics *m)
{
	if (!m)
		return;
	pal_metric_declare(m, "palisade_executor_claimed_total", PAL_METRIC_COUNTER,
			   "triggers claimed (each with a new fencing token)");
	pal_metric_declare(m, "palisade_executor_calls_total", PAL_METRIC_COUNTER,
			   "side-effect calls finished, by outcome");
	pal_metric_declare(m, "palisade_executor_results_total", PAL_METRIC_COUNTER,
			   "results committed, by final state");
	pal_metric_declare(m, "palisade_executor_stale_rejections_total", PAL_METRIC_COUNTER,
			   "writes or calls refused because a newer token exists (at=db|sink)");
	pal_metric_declare(m, "palisade_executor_claim_lock_timeouts_total", PAL_METRIC_COUNTER,
			   "claims that gave up waiting 5 s for the cluster claim lock (retried)");
	pal_metric_declare(m, "palisade_executor_clock_offset_seconds", PAL_METRIC_GAUGE,
			   "database clock minus this host's clock, as last measured");
	pal_metric_declare(m, "palisade_executor_leases_lost_total", PAL_METRIC_COUNTER,
			   "leases found lost at renewal");
	pal_metric_declare(m, "palisade_executor_self_stops_total", PAL_METRIC_COUNTER,
			   "calls abandoned at their CLOCK_MONOTONIC lease deadline");
	pal_metric_declare(m, "palisade_executor_status_queries_total", PAL_METRIC_COUNTER,
			   "status URL queries after unknown outcomes, by answer");
	pal_metric_declare(m, "palisade_executor_skipped_total", PAL_METRIC_COUNTER,
			   "triggers skipped by the forbid overlap policy");
	pal_metric_declare(m, "palisade_executor_inflight", PAL_METRIC_GAUGE,
			   "calls in flight on this node");
	pal_metric_declare(m, "palisade_executor_db_up", PAL_METRIC_GAUGE,
			   "1 when the executor's PostgreSQL connection is up");
	pal_metric_declare(m, "palisade_executor_breaker_open", PAL_METRIC_GAUGE,
			   "1 while the circuit breaker of a target host is open");
}

/* ---- response buffers ---------------------------------------------------------- */

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
	call *k = ud;
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
	call *k = ud;
	size_t len = size * n;
	if (len > 22 && !strncasecmp(p, "Palisade-Stale-Token:", 21))
		k->stale_header = true;
	if (len > 12 && !strncasecmp(p, "Retry-After:", 12)) {
		long s = strtol(p + 12, NULL, 10);
		if (s > 0 && s < 86400)
			k->retry_after_ms = s * 1000;
	}
	return len;
}

static void call_reset_transfer(call *k)
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
	k->resp_truncated = k->stale_header = false;
	k->retry_after_ms = -1;
}

static void call_free(call *k)
{
	call_reset_transfer(k);
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

static int render_all(pal_executor *ex, call *k, char *err, size_t errlen)
{
	const pal_job_spec *s = &k->spec->spec;
	char date[16] = "";
	int64_t local = k->spec->tz ? pal_tz_to_local(k->spec->tz, k->c.scheduled_at)
				    : k->c.scheduled_at;
	int64_t y;
	unsigned mo, d;
	int64_t days = local / 86400 - (local % 86400 < 0);
	pal_civil_from_days(days, &y, &mo, &d);
	snprintf(date, sizeof date, "%04lld-%02u-%02u", (long long)y, mo, d);
	pal_tpl_vars v = { .job = k->c.job_id,
			   .scheduled_at = k->c.scheduled_at,
			   .scheduled_date = date,
			   .partition = k->c.partition,
			   .trigger = k->c.id,
			   .request_id = k->c.request_id,
			   .idempotency_key = NULL };
	(void)ex;
	int rc = pal_tpl_render(s->idempotency_key, &v, 0, &k->key, err, errlen);
	if (rc)
		return rc;
	v.idempotency_key = k->key;
	const char *url_tpl = k->ph == PHASE_QUERY ? s->status_url : s->url;
	free(k->url);
	k->url = NULL;
	rc = pal_tpl_render(url_tpl, &v, PAL_TPL_URL | PAL_TPL_SECRETS, &k->url, err, errlen);
	if (rc)
		return rc;
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
			char *val = NULL;
			rc = pal_tpl_render(s->headers[i].value, &v, PAL_TPL_SECRETS, &val, err, errlen);
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
	k->hdrs = curl_slist_append(k->hdrs, "Expect:");
	return PAL_OK;
}

static int start_transfer(pal_executor *ex, call *k)
{
	char err[512];
	call_reset_transfer(k);
	int rc = render_all(ex, k, err, sizeof err);
	if (rc) {
		pal_log(PAL_LOG_ERROR, "executor.render_failed", "{s:I, s:s, s:s}", "trigger",
			(json_int_t)k->c.id, "job", k->c.job_id, "error", err);
		return rc;
	}
	const pal_job_spec *s = &k->spec->spec;
	CURL *e = curl_easy_init();
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
	k->started_ms = pal__mono_ms();
	if (curl_multi_add_handle(ex->multi, e) != CURLM_OK)
		return PAL_EIO;
	return PAL_OK;
}

/* ---- results ---------------------------------------------------------------------- */

/* K leaves PHASE_PARKED (to start as PH, or to be handed back: PH unused). */
static void leave_park(pal_executor *ex, call *k, phase ph)
{
	if (k->ph != PHASE_PARKED)
		return;
	pal_breaker_parked(ex->breakers, k->host, -1);
	k->ph = ph;
}

static void unlink_call(pal_executor *ex, call *k)
{
	leave_park(ex, k, k->parked_ph);
	for (call **pp = &ex->calls; *pp; pp = &(*pp)->next)
		if (*pp == k) {
			*pp = k->next;
			break;
		}
	ex->inflight--;
	pal__leases_remove(&ex->leases, k->c.id);
}

/* Queue the result of K (committed in the next batch); K stays owned by the
 * results array until the commit. */
static void queue_result(pal_executor *ex, call *k, const char *state, const char *error_class,
			 int http, int64_t next_attempt_ms, const char *ticket_reason)
{
	if (ex->n_results == ex->cap_results) {
		int nc = ex->cap_results ? ex->cap_results * 2 : 64;
		ex->results = realloc(ex->results, (size_t)nc * sizeof *ex->results);
		ex->result_calls = realloc(ex->result_calls, (size_t)nc * sizeof *ex->result_calls);
		ex->cap_results = nc;
	}
	int64_t dur = k->started_ms ? pal__mono_ms() - k->started_ms : 0;
	ex->results[ex->n_results] = (pal_result){ .id = k->c.id,
						   .fence = k->c.fence,
						   .state = state,
						   .error_class = error_class,
						   .http_status = http,
						   .next_attempt_ms = next_attempt_ms,
						   .duration_ms = (int)dur,
						   .idempotency_key = k->key,
						   .ticket_reason = ticket_reason };
	ex->result_calls[ex->n_results++] = k;
	unlink_call(ex, k);
}

/* Drop K without writing anything (lease lost, fenced by the sink, self-stop). */
static void abandon(pal_executor *ex, call *k, const char *why)
{
	if (k->easy)
		curl_multi_remove_handle(ex->multi, k->easy);
	pal_log(PAL_LOG_WARN, "executor.call_abandoned", "{s:I, s:I, s:s, s:s}", "trigger",
		(json_int_t)k->c.id, "fence", (json_int_t)k->c.fence, "job", k->c.job_id, "reason",
		why);
	unlink_call(ex, k);
	call_free(k);
}

static void retry_or_fail(pal_executor *ex, call *k, const char *cls, int http, int64_t retry_after)
{
	pal_retry_decision d = pal_retry_decide(&k->spec->spec, k->c.attempt, db_ms(ex),
						k->c.scheduled_at * 1000, retry_after, &ex->rng);
	if (d.retry)
		queue_result(ex, k, "retry_wait", cls, http, d.at_ms, NULL);
	else
		queue_result(ex, k, "failed", cls, http, 0, NULL);
}

static void commit_results(pal_executor *ex)
{
	if (!ex->n_results || !ex->st)
		return;
	char err[1024];
	int rc = pal_store_commit_results(ex->st, ex->results, ex->n_results, err, sizeof err);
	if (rc) {
		/* Keep them: the next pass retries with the same tokens; if the
		 * lease expires meanwhile the rows are fenced and another
		 * executor resolves the outcome by querying. */
		pal_log(PAL_LOG_ERROR, "executor.commit_failed", "{s:i, s:s}", "results",
			ex->n_results, "error", err);
		pal_store_close(ex->st);
		ex->st = NULL;
		return;
	}
	for (int i = 0; i < ex->n_results; i++) {
		pal_result *r = &ex->results[i];
		char lab[64];
		if (r->committed) {
			snprintf(lab, sizeof lab, "state=\"%s\"", r->final_state);
			minc(ex, "palisade_executor_results_total", lab, 1);
			if (!strcmp(r->final_state, "succeeded"))
				atomic_fetch_add(&ex->succeeded, 1);
			else if (!strcmp(r->final_state, "failed"))
				atomic_fetch_add(&ex->failed, 1);
		} else {
			atomic_fetch_add(&ex->stale_db, 1);
			minc(ex, "palisade_executor_stale_rejections_total", "at=\"db\"", 1);
			pal_log(PAL_LOG_WARN, "executor.result_fenced", "{s:I, s:I, s:s}", "trigger",
				(json_int_t)r->id, "fence", (json_int_t)r->fence, "state", r->state);
		}
		call_free(ex->result_calls[i]);
	}
	ex->n_results = 0;
}

static void on_chunk(pal_executor *ex, call *k, pal_class *cl)
{
	char err[512], state[16];
	if (!ex->st) {
		/* The connection was dropped earlier in this pass: the lease
		 * expires and the next claim resumes from the stored checkpoint
		 * (the service replays the chunk it already applied). */
		abandon(ex, k, "no database connection at checkpoint");
		return;
	}
	int rc = pal_store_checkpoint(ex->st, k->c.id, k->c.fence, cl->checkpoint, state, err,
				      sizeof err);
	if (rc == PAL_ESTALE) {
		atomic_fetch_add(&ex->stale_db, 1);
		minc(ex, "palisade_executor_stale_rejections_total", "at=\"db\"", 1);
		abandon(ex, k, "checkpoint fenced");
		return;
	}
	if (rc) {
		pal_log(PAL_LOG_ERROR, "executor.checkpoint_failed", "{s:I, s:s}", "trigger",
			(json_int_t)k->c.id, "error", err);
		pal_store_close(ex->st);
		ex->st = NULL;
		abandon(ex, k, "database error at checkpoint");
		return;
	}
	if (strcmp(state, "running")) {
		/* A safe point: paused (resume continues from the checkpoint with
		 * a new token) or cancelled. */
		pal_log(PAL_LOG_INFO, "executor.safe_point", "{s:I, s:s}", "trigger",
			(json_int_t)k->c.id, "state", state);
		unlink_call(ex, k);
		call_free(k);
		return;
	}
	free(k->c.checkpoint);
	k->c.checkpoint = cl->checkpoint;
	cl->checkpoint = NULL;
	k->ph = PHASE_WAIT;
	k->resume_at_ms = pal__mono_ms() + cl->next_delay_ms;
	call_reset_transfer(k);
}

static void finish_transfer(pal_executor *ex, call *k, CURLcode code)
{
	long status = 0;
	curl_easy_getinfo(k->easy, CURLINFO_RESPONSE_CODE, &status);
	long req_size = 0;
	curl_easy_getinfo(k->easy, CURLINFO_REQUEST_SIZE, &req_size);
	curl_multi_remove_handle(ex->multi, k->easy);
	pal_http_result r = { .curl_code = code,
			      .status = status,
			      .request_sent = req_size > 0,
			      .stale_header = k->stale_header,
			      .retry_after_ms = k->retry_after_ms,
			      .body = k->resp,
			      .body_len = k->resp_len,
			      .body_truncated = k->resp_truncated };
	pal_class cl;
	pal_classify(&r, &cl);
	bool failed_for_breaker = cl.outcome == PAL_OUT_RETRYABLE || cl.outcome == PAL_OUT_UNKNOWN;
	pal_breaker_record(ex->breakers, k->host, failed_for_breaker, pal__mono_ms());

	if (k->ph == PHASE_QUERY) {
		/* The answer of the status URL about our key. */
		const char *answer = status >= 200 && status < 300 ? "found"
				     : status == 404		 ? "not_found"
								 : "unknown";
		char lab[48];
		snprintf(lab, sizeof lab, "answer=\"%s\"", answer);
		minc(ex, "palisade_executor_status_queries_total", lab, 1);
		if (!strcmp(answer, "found")) {
			queue_result(ex, k, "succeeded", "resolved_by_query", (int)status, 0, NULL);
		} else if (!strcmp(answer, "not_found") && !k->called) {
			/* Not applied (the unknown outcome was an earlier claim's):
			 * send it now, with the same key. */
			k->ph = PHASE_CALL;
			if (start_transfer(ex, k))
				queue_result(ex, k, "failed", "render", 0, 0, NULL);
		} else if (!strcmp(answer, "not_found")) {
			/* Our own call of this claim was not applied: an ordinary
			 * retry, with the same key, under the retry budget. */
			retry_or_fail(ex, k, k->last_class, 0, -1);
		} else {
			pal_retry_decision d = pal_retry_decide(&k->spec->spec, k->c.attempt, db_ms(ex),
								k->c.scheduled_at * 1000, -1, &ex->rng);
			if (d.retry)
				queue_result(ex, k, "unknown", "status_query_failed", (int)status,
					     d.at_ms, NULL);
			else
				queue_result(ex, k, "manual", "unknown_outcome", (int)status, 0,
					     "outcome unknown and the status URL gave no answer within "
					     "the retry budget");
		}
		free(cl.checkpoint);
		return;
	}
	k->called = true;
	snprintf(k->last_class, sizeof k->last_class, "%s", cl.error_class);
	char lab[64];
	static const char *const names[] = { "success", "more", "stale", "permanent", "retryable",
					     "unknown" };
	snprintf(lab, sizeof lab, "outcome=\"%s\"", names[cl.outcome]);
	minc(ex, "palisade_executor_calls_total", lab, 1);
	switch (cl.outcome) {
	case PAL_OUT_SUCCESS:
		queue_result(ex, k, "succeeded", "", (int)status, 0, NULL);
		break;
	case PAL_OUT_MORE:
		on_chunk(ex, k, &cl);
		break;
	case PAL_OUT_STALE:
		atomic_fetch_add(&ex->stale_sink, 1);
		minc(ex, "palisade_executor_stale_rejections_total", "at=\"sink\"", 1);
		abandon(ex, k, "the service holds a newer token");
		break;
	case PAL_OUT_PERMANENT:
		if (!strcmp(cl.error_class, "payload_mismatch"))
			queue_result(ex, k, "manual", cl.error_class, (int)status, 0,
				     "the service has this idempotency key with a different payload (422)");
		else
			queue_result(ex, k, "failed", cl.error_class, (int)status, 0, NULL);
		break;
	case PAL_OUT_RETRYABLE:
		retry_or_fail(ex, k, cl.error_class, (int)status, k->retry_after_ms);
		break;
	case PAL_OUT_UNKNOWN:
		if (k->spec->spec.status_url) {
			pal_log(PAL_LOG_INFO, "executor.outcome_unknown", "{s:I, s:s, s:s}", "trigger",
				(json_int_t)k->c.id, "class", cl.error_class, "next", "query status URL");
			k->ph = PHASE_QUERY;
			if (start_transfer(ex, k))
				queue_result(ex, k, "unknown", cl.error_class, 0,
					     db_ms(ex) + pal_backoff_ms(&k->spec->spec, k->c.attempt),
					     NULL);
		} else {
			/* No status URL: the same key again; a service that honours
			 * the protocol replays instead of applying twice. */
			retry_or_fail(ex, k, cl.error_class, 0, -1);
		}
		break;
	}
	free(cl.checkpoint);
}

/* ---- claiming --------------------------------------------------------------------- */

static int group_inflight(pal_executor *ex, const char *group)
{
	int n = 0;
	for (call *k = ex->calls; k; k = k->next)
		n += !strcmp(k->c.group, group);
	return n;
}

static void begin_call(pal_executor *ex, pal_claimed *c)
{
	call *k = calloc(1, sizeof *k);
	if (!k)
		return;
	k->ex = ex;
	k->c = *c;
	c->checkpoint = NULL; /* moved */
	k->retry_after_ms = -1;
	char err[512];
	k->spec = pal__spec_get(&ex->specs, ex->st, k->c.job_id, k->c.version, err, sizeof err);
	k->next = ex->calls;
	ex->calls = k;
	ex->inflight++;
	pal__leases_add(&ex->leases, k->c.id, k->c.fence, pal__mono_ms());
	atomic_fetch_add(&ex->claimed, 1);
	if (!k->spec) {
		pal_log(PAL_LOG_ERROR, "executor.spec_missing", "{s:s, s:i, s:s}", "job", k->c.job_id,
			"version", k->c.version, "error", err);
		queue_result(ex, k, "failed", "bad_spec", 0, 0, NULL);
		return;
	}
	pal_url_host(k->spec->spec.url, k->host, sizeof k->host);
	const pal_job_spec *s = &k->spec->spec;
	int64_t age = db_ms(ex) - k->c.scheduled_at * 1000;
	if (s->deadline_ms > 0 && age > s->deadline_ms) {
		queue_result(ex, k, "failed", "deadline", 0, 0, NULL);
		return;
	}
	bool unknown_before = !strcmp(k->c.prev_state, "unknown") ||
			      !strcmp(k->c.prev_state, "running") ||
			      !strncmp(k->c.prev_error, "timeout_after", 13) ||
			      !strcmp(k->c.prev_error, "reset_after_send");
	k->ph = unknown_before && s->status_url ? PHASE_QUERY : PHASE_CALL;
	int64_t now = pal__mono_ms();
	if (!pal_breaker_allow(ex->breakers, k->host, now)) {
		if (pal_breaker_state_of(ex->breakers, k->host, now) == PAL_BREAKER_HALF_OPEN &&
		    pal_breaker_parked_count(ex->breakers, k->host) < PARK_PER_HOST) {
			/* The probe is in flight: wait for its verdict here rather
			 * than hand the trigger back and claim it again.  While
			 * calls are parked, claims leave the host alone. */
			k->parked_ph = k->ph;
			k->ph = PHASE_PARKED;
			k->parked_ms = now;
			k->resume_at_ms = now + 100;
			pal_breaker_parked(ex->breakers, k->host, +1);
			return;
		}
		/* Back to pending without spending an attempt: the call never
		 * started (the commit gives the attempt back). */
		queue_result(ex, k, "pending", "breaker_open", 0, db_ms(ex) + 1000, NULL);
		return;
	}
	if (start_transfer(ex, k))
		queue_result(ex, k, "failed", "render", 0, 0, NULL);
}

/* A parked call after the probe: start it if the breaker lets it (closed,
 * or it is the next probe), keep waiting while a probe is in flight, hand
 * it back (pending, attempt not spent) when the breaker opened again, the
 * node drains, or it waited PARK_MAX_MS. */
static void unpark(pal_executor *ex, call *k, int64_t now, bool draining)
{
	if (!draining && now - k->parked_ms < PARK_MAX_MS) {
		if (!pal__leases_gate_open(&ex->leases)) {
			k->resume_at_ms = now + 100; /* no new side effects while closed */
			return;
		}
		if (pal_breaker_allow(ex->breakers, k->host, now)) {
			leave_park(ex, k, k->parked_ph);
			if (start_transfer(ex, k))
				queue_result(ex, k, "failed", "render", 0, 0, NULL);
			return;
		}
		if (pal_breaker_state_of(ex->breakers, k->host, now) == PAL_BREAKER_HALF_OPEN) {
			k->resume_at_ms = now + 100;
			return;
		}
	}
	queue_result(ex, k, "pending", "breaker_open", 0, db_ms(ex) + 1000, NULL);
}

static void claim(pal_executor *ex)
{
	int room = ex->cfg.max_inflight - ex->inflight;
	if (room <= 0)
		return;
	int limit = room < ex->cfg.batch ? room : ex->cfg.batch;
	pal_claim_group *g = calloc(ex->cfg.n_groups ? ex->cfg.n_groups : 1, sizeof *g);
	int ng = 0;
	for (size_t i = 0; g && i < ex->cfg.n_groups; i++) {
		const pal_group_conf *gc = &ex->cfg.groups[i];
		int nr = gc->concurrency > 0 ? gc->concurrency - group_inflight(ex, gc->name) : limit;
		g[ng++] = (pal_claim_group){ .group = gc->name,
					     .node_remaining = nr < 0 ? 0 : nr,
					     .cluster_limit = gc->cluster_concurrency };
	}
	char *open = pal_breakers_open_hosts(ex->breakers, pal__mono_ms());
	pal_claim_req q = { .node = ex->cfg.node_id,
			    .lease_ms = ex->cfg.lease_ms,
			    .limit = limit,
			    .open_hosts = open,
			    .groups = g,
			    .n_groups = ng };
	pal_claimed *c = NULL;
	int n = 0, skipped = 0;
	char err[1024];
	int64_t sent = pal__mono_ms();
	int rc = pal_store_claim(ex->st, &q, &c, &n, &skipped, err, sizeof err);
	free(open);
	free(g);
	if (rc && pal_store_lock_timeout(ex->st)) {
		/* The claim lock is held elsewhere (a slow or cut-off executor):
		 * the connection is fine, try again shortly. */
		pal_log(PAL_LOG_WARN, "executor.claim_waiting", "{s:s}", "error", err);
		minc(ex, "palisade_executor_claim_lock_timeouts_total", NULL, 1);
		ex->next_claim_ms = pal__mono_ms() + ex->cfg.poll_ms;
		return;
	}
	if (rc) {
		pal_log(PAL_LOG_ERROR, "executor.claim_failed", "{s:s}", "error", err);
		pal_store_close(ex->st);
		ex->st = NULL;
		return;
	}
	if (skipped)
		minc(ex, "palisade_executor_skipped_total", NULL, skipped);
	if (n)
		minc(ex, "palisade_executor_claimed_total", NULL, n);
	for (int i = 0; i < n; i++) {
		begin_call(ex, &c[i]);
		pal__leases_set_sent(&ex->leases, c[i].id, sent);
	}
	pal_claimed_free(c, n);
	/* A full batch means more is waiting: claim again at once. */
	ex->next_claim_ms = pal__mono_ms() + (n == limit ? 0 : ex->cfg.poll_ms);
}

/* ---- loop ----------------------------------------------------------------------------- */

static bool ensure_db(pal_executor *ex)
{
	if (ex->st)
		return true;
	if (pal__mono_ms() < ex->next_db_ms)
		return false;
	char err[1024];
	if (pal_store_open(ex->cfg.conninfo, &ex->st, err, sizeof err) == PAL_OK) {
		/* lock_timeout: a claim waiting for the cluster claim lock gives
		 * up after 5 s and tries again (the holder may be cut off; the
		 * server ends its transaction at idle_in_transaction_session_timeout). */
		PGresult *r = PQexec(pal_store_conn(ex->st), "SET statement_timeout = '30s';"
							    " SET lock_timeout = '5s';"
							    " LISTEN palisade_triggers");
		bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
		PQclear(r);
		if (ok) {
			ex->db_backoff_ms = 500;
			if (ex->m)
				pal_metric_set(ex->m, "palisade_executor_db_up", NULL, 1);
			pal_log(PAL_LOG_INFO, "executor.db_connected", NULL);
			return true;
		}
		pal_store_close(ex->st);
		ex->st = NULL;
	}
	if (ex->m)
		pal_metric_set(ex->m, "palisade_executor_db_up", NULL, 0);
	pal_log(PAL_LOG_WARN, "executor.db_unavailable", "{s:s, s:I}", "error", err, "retry_ms",
		(json_int_t)ex->db_backoff_ms);
	ex->next_db_ms = pal__mono_ms() + ex->db_backoff_ms;
	ex->db_backoff_ms = ex->db_backoff_ms * 2 > 10000 ? 10000 : ex->db_backoff_ms * 2;
	return false;
}

static void drain_notifies(pal_executor *ex)
{
	if (!ex->st)
		return;
	PGconn *c = pal_store_conn(ex->st);
	if (!PQconsumeInput(c)) {
		pal_store_close(ex->st);
		ex->st = NULL;
		return;
	}
	PGnotify *n;
	bool any = false;
	while ((n = PQnotifies(c))) {
		any = true;
		PQfreemem(n);
	}
	if (any)
		ex->next_claim_ms = 0;
}

/* Measure the database clock's offset at most once a second (one short
 * query on the executor's connection); keep the last value on failure. */
static void refresh_db_clock(pal_executor *ex, int64_t now)
{
	/* drain_notifies() may just have dropped a broken connection. */
	if (!ex->st || (ex->db_offset_at_ms && now - ex->db_offset_at_ms < 1000))
		return;
	char err[256];
	int64_t off;
	if (pal_store_db_clock_offset(ex->st, &off, err, sizeof err))
		return;
	int64_t prev = ex->db_offset_ms;
	bool first = !ex->db_offset_at_ms;
	ex->db_offset_ms = off;
	ex->db_offset_at_ms = now;
	if (ex->m)
		pal_metric_set(ex->m, "palisade_executor_clock_offset_seconds", NULL, (double)off / 1000);
	if ((first && llabs(off) >= 1000) || (!first && llabs(off - prev) >= 1000))
		pal_log(PAL_LOG_WARN, "executor.clock_offset", "{s:I}", "db_minus_local_ms",
			(json_int_t)off);
}

/* Lost leases and monotonic deadlines, from the lease table. */
static void enforce_leases(pal_executor *ex)
{
	if (ex->ignore_lease_loss)
		return;
	int64_t now = pal__mono_ms();
	for (call *k = ex->calls, *next; k; k = next) {
		next = k->next;
		pal_lease_view v;
		if (!pal__leases_get(&ex->leases, k->c.id, &v))
			continue;
		if (v.lost) {
			atomic_fetch_add(&ex->lost, 1);
			minc(ex, "palisade_executor_leases_lost_total", NULL, 1);
			abandon(ex, k, "lease lost");
		} else if (now >= v.sent_ms + ex->cfg.lease_ms - pal__lease_margin(&ex->cfg)) {
			atomic_fetch_add(&ex->self_stops, 1);
			minc(ex, "palisade_executor_self_stops_total", NULL, 1);
			abandon(ex, k, "monotonic lease deadline passed");
		}
	}
}

static void publish_status(pal_executor *ex)
{
	json_t *s = json_pack("{s:b, s:b, s:i, s:i, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "db_up",
			      ex->st != NULL, "gate_open", pal__leases_gate_open(&ex->leases),
			      "inflight", ex->inflight, "held_leases",
			      pal__leases_count(&ex->leases), "claimed",
			      (json_int_t)atomic_load(&ex->claimed), "succeeded",
			      (json_int_t)atomic_load(&ex->succeeded), "failed",
			      (json_int_t)atomic_load(&ex->failed), "stale_rejections_db",
			      (json_int_t)atomic_load(&ex->stale_db), "stale_rejections_sink",
			      (json_int_t)atomic_load(&ex->stale_sink), "leases_lost",
			      (json_int_t)atomic_load(&ex->lost), "self_stops",
			      (json_int_t)atomic_load(&ex->self_stops));
	pthread_mutex_lock(&ex->mu);
	json_decref(ex->status);
	ex->status = s;
	pthread_mutex_unlock(&ex->mu);
	if (ex->m)
		pal_metric_set(ex->m, "palisade_executor_inflight", NULL, ex->inflight);
}

json_t *pal_executor_status(pal_executor *ex)
{
	pthread_mutex_lock(&ex->mu);
	json_t *s = ex->status ? json_deep_copy(ex->status) : json_object();
	pthread_mutex_unlock(&ex->mu);
	return s;
}

static void free_groups(pal_group_conf *g, size_t n)
{
	for (size_t i = 0; g && i < n; i++)
		free(g[i].name);
	free(g);
}

static pal_group_conf *copy_groups(const pal_group_conf *src, size_t n)
{
	if (!n)
		return NULL;
	pal_group_conf *g = calloc(n, sizeof *g);
	for (size_t i = 0; g && i < n; i++) {
		g[i] = src[i];
		g[i].name = strdup(src[i].name);
	}
	return g;
}

void pal_executor_set_limits(pal_executor *ex, int batch, int max_inflight, int renew_failures,
			     const pal_group_conf *groups, size_t n_groups)
{
	pal_group_conf *g = copy_groups(groups, n_groups);
	pthread_mutex_lock(&ex->mu);
	free_groups(ex->new_groups, ex->new_n_groups);
	ex->new_groups = g;
	ex->new_n_groups = g ? n_groups : 0;
	ex->new_batch = batch;
	ex->new_max_inflight = max_inflight;
	ex->new_renew_failures = renew_failures;
	ex->limits_changed = true;
	pthread_mutex_unlock(&ex->mu);
}

static void apply_limits(pal_executor *ex)
{
	pthread_mutex_lock(&ex->mu);
	if (!ex->limits_changed) {
		pthread_mutex_unlock(&ex->mu);
		return;
	}
	free_groups((pal_group_conf *)ex->cfg.groups, ex->cfg.n_groups);
	ex->cfg.groups = ex->new_groups;
	ex->cfg.n_groups = ex->new_n_groups;
	ex->new_groups = NULL;
	ex->new_n_groups = 0;
	if (ex->new_batch > 0)
		ex->cfg.batch = ex->new_batch;
	if (ex->new_max_inflight > 0)
		ex->cfg.max_inflight = ex->new_max_inflight;
	if (ex->new_renew_failures > 0)
		atomic_store(&ex->leases.renew_failures, ex->new_renew_failures);
	ex->limits_changed = false;
	pthread_mutex_unlock(&ex->mu);
	pal_log(PAL_LOG_INFO, "executor.limits_reloaded", "{s:i, s:i, s:i}", "batch", ex->cfg.batch,
		"max_inflight", ex->cfg.max_inflight, "groups", (int)ex->cfg.n_groups);
}

static void *run(void *arg)
{
	pal_executor *ex = arg;
	int64_t next_status = 0;
	for (;;) {
		apply_limits(ex);
		int64_t now = pal__mono_ms();
		bool draining = atomic_load(&ex->draining);
		if (draining && (!ex->calls || now >= ex->drain_deadline_ms) && !ex->n_results)
			break;
		if (ensure_db(ex)) {
			drain_notifies(ex);
			refresh_db_clock(ex, now);
			if (!draining && pal__leases_gate_open(&ex->leases) && ex->st &&
			    now >= ex->next_claim_ms)
				claim(ex);
		}
		/* Calls waiting for their next chunk, or parked for a probe. */
		for (call *k = ex->calls, *next; k; k = next) {
			next = k->next;
			if (k->ph == PHASE_PARKED && now >= k->resume_at_ms) {
				unpark(ex, k, now, draining);
				continue;
			}
			if (k->ph == PHASE_WAIT && now >= k->resume_at_ms) {
				if (!pal__leases_gate_open(&ex->leases) || draining)
					continue; /* no new side effects while the gate is closed */
				k->ph = PHASE_CALL;
				if (start_transfer(ex, k))
					queue_result(ex, k, "failed", "render", 0, 0, NULL);
			}
		}
		/* Lease checks come before any I/O of the pass: after a pause
		 * (SIGSTOP, a long GC-like stall) nothing more is sent for a call
		 * whose lease is lost or whose monotonic deadline has passed. */
		enforce_leases(ex);
		int running = 0;
		curl_multi_perform(ex->multi, &running);
		CURLMsg *msg;
		int left;
		while ((msg = curl_multi_info_read(ex->multi, &left))) {
			if (msg->msg != CURLMSG_DONE)
				continue;
			call *k = NULL;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&k);
			if (k)
				finish_transfer(ex, k, msg->data.result);
		}
		commit_results(ex);
		if (now >= next_status) {
			publish_status(ex);
			next_status = now + 500;
		}
		if (draining && ex->calls && now >= ex->drain_deadline_ms) {
			while (ex->calls)
				abandon(ex, ex->calls, "drain grace period over");
		}
		/* Sleep until a transfer, a notification, or the next claim. */
		int64_t wait = ex->next_claim_ms - pal__mono_ms();
		if (wait > 50 || ex->calls)
			wait = ex->calls ? 10 : 50;
		if (wait < 0)
			wait = 0;
		struct curl_waitfd wfd;
		int nfd = 0;
		if (ex->st) {
			wfd.fd = PQsocket(pal_store_conn(ex->st));
			wfd.events = CURL_WAIT_POLLIN;
			wfd.revents = 0;
			nfd = wfd.fd >= 0;
		}
		curl_multi_poll(ex->multi, nfd ? &wfd : NULL, (unsigned)nfd, (int)wait, NULL);
	}
	commit_results(ex);
	publish_status(ex);
	return NULL;
}

int pal_executor_start(const pal_executor_config *cfg, pal_metrics *m, pal_executor **out,
		       char *err, size_t errlen)
{
	*out = NULL;
	pal_executor *ex = calloc(1, sizeof *ex);
	if (!ex)
		return PAL_ENOMEM;
	ex->cfg = *cfg;
	ex->cfg.conninfo = strdup(cfg->conninfo);
	ex->cfg.node_id = strdup(cfg->node_id);
	ex->cfg.proxy = strdup(cfg->proxy ? cfg->proxy : "");
	/* Drill-only fault injection: keep a call going after its lease is
	 * lost or its monotonic deadline passed, so that the result reaches
	 * the database with a stale token and the fence there must refuse it
	 * (docs/executor.md).  Never set in production. */
	const char *fault = getenv("PALISADE_FAULT_IGNORE_LEASE_LOSS");
	ex->ignore_lease_loss = fault && !strcmp(fault, "1");
	if (ex->ignore_lease_loss)
		pal_log(PAL_LOG_WARN, "executor.fault_injection", "{s:s}", "fault",
			"ignore lost leases and monotonic lease deadlines");
	if (ex->cfg.lease_ms <= 0)
		ex->cfg.lease_ms = 30000;
	if (ex->cfg.heartbeat_ms <= 0)
		ex->cfg.heartbeat_ms = 10000;
	if (ex->cfg.batch <= 0)
		ex->cfg.batch = 64;
	if (ex->cfg.max_inflight <= 0)
		ex->cfg.max_inflight = 256;
	if (ex->cfg.renew_failures <= 0)
		ex->cfg.renew_failures = 3;
	if (ex->cfg.poll_ms <= 0)
		ex->cfg.poll_ms = 200;
	if (ex->cfg.body_cap <= 0)
		ex->cfg.body_cap = 65536;
	ex->cfg.groups = copy_groups(cfg->groups, cfg->n_groups);
	ex->cfg.n_groups = ex->cfg.groups ? cfg->n_groups : 0;
	ex->m = m;
	ex->multi = curl_multi_init();
	curl_multi_setopt(ex->multi, CURLMOPT_MAX_HOST_CONNECTIONS, 64L);
	ex->breakers = pal_breakers_new(NULL);
	ex->rng = (uint64_t)wall_ms() ^ ((uint64_t)getpid() << 32);
	ex->db_backoff_ms = 500;
	pal__spec_cache_init(&ex->specs);
	pthread_mutex_init(&ex->mu, NULL);
	declare_metrics(m);
	if (pal__leases_init(&ex->leases, &ex->cfg, m) ||
	    pal__lease_thread_start(&ex->leases, &ex->cfg, &ex->lt, err, errlen)) {
		snprintf(err, errlen, "cannot start the lease thread");
		return PAL_ENOMEM;
	}
	if (pthread_create(&ex->thread, NULL, run, ex)) {
		snprintf(err, errlen, "cannot start the executor thread");
		return PAL_ENOMEM;
	}
	*out = ex;
	return PAL_OK;
}

void pal_executor_stop(pal_executor *ex, int64_t grace_ms)
{
	if (!ex)
		return;
	ex->drain_deadline_ms = pal__mono_ms() + grace_ms;
	atomic_store(&ex->draining, true);
	pthread_join(ex->thread, NULL);
	pal__lease_thread_stop(ex->lt);
	while (ex->calls)
		abandon(ex, ex->calls, "executor stopped");
	curl_multi_cleanup(ex->multi);
	pal_breakers_free(ex->breakers);
	pal__spec_cache_free(&ex->specs);
	pal__leases_free(&ex->leases);
	pal_store_close(ex->st);
	free(ex->results);
	free(ex->result_calls);
	json_decref(ex->status);
	pthread_mutex_destroy(&ex->mu);
	free_groups((pal_group_conf *)ex->cfg.groups, ex->cfg.n_groups);
	free_groups(ex->new_groups, ex->new_n_groups);
	free((void *)ex->cfg.conninfo);
	free((void *)ex->cfg.node_id);
	free((void *)ex->cfg.proxy);
	free(ex);
}
