/*
 * outcome.c - what a finished transfer means for its trigger.
 *
 * The response is classified (pal_classify) and the action chosen by the
 * pure pal_outcome_decide() (both in classify.c, unit-tested); this file
 * carries the action out: queue a result for the next batched commit,
 * store a chunk's checkpoint (a safe point), start the status query or the
 * request, or abandon the call without writing anything (a newer token
 * exists, the lease is lost).
 */
#include <curl/curl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/log.h"
#include "executor_int.h"

/* Drop K without writing anything (lease lost, fenced by the sink, self-stop). */
void pal__abandon(pal_executor *ex, pal__call *k, const char *why)
{
	if (k->easy)
		curl_multi_remove_handle(ex->multi, k->easy);
	pal_log(PAL_LOG_WARN, "executor.call_abandoned", "{s:I, s:I, s:s, s:s}", "trigger",
		(json_int_t)k->c.id, "fence", (json_int_t)k->c.fence, "job", k->c.job_id, "reason",
		why);
	pal__unlink_call(ex, k);
	pal__call_free(k);
}

/* The ticket's reason when budget WHY ran out with the outcome unknown
 * (static strings: the batched commit reads them later). */
static const char *unknown_reason(const char *why)
{
	if (why && !strcmp(why, "max_attempts"))
		return "outcome unknown and the retry budget is spent (max_attempts): the effect "
		       "may have been applied; check the service for the idempotency key, then "
		       "mark_succeeded, or retry (same trigger, same key)";
	if (why && !strcmp(why, "max_age"))
		return "outcome unknown and the retry budget is spent (max_age): the effect may "
		       "have been applied; check the service for the idempotency key, then "
		       "mark_succeeded, or retry (same trigger, same key)";
	if (why && !strcmp(why, "deadline"))
		return "outcome unknown and the deadline has passed: the effect may have been "
		       "applied; check the service for the idempotency key, then mark_succeeded, "
		       "or retry (same trigger, same key)";
	return "outcome unknown and no further attempt can be made: the effect may have been "
	       "applied; check the service for the idempotency key";
}

void pal__spent(pal_executor *ex, pal__call *k, const char *cls, int http, const char *why)
{
	if (pal_spent_action(k->unknown) == PAL_ACT_TICKET) {
		pal_log(PAL_LOG_WARN, "executor.unknown_outcome_ticket", "{s:I, s:s, s:s, s:s, s:s}",
			"trigger", (json_int_t)k->c.id, "job", k->c.job_id, "key",
			k->key ? k->key : "", "budget", why ? why : "", "status_queries", k->queries);
		pal__minc(ex, "palisade_executor_unknown_tickets_total", NULL, 1);
		pal__queue_result(ex, k, PAL_TS_MANUAL, cls, http, PAL_NEXT_NONE, unknown_reason(why));
	} else {
		pal__queue_result(ex, k, PAL_TS_FAILED, cls, http, PAL_NEXT_NONE, NULL);
	}
}

static void retry_or_fail(pal_executor *ex, pal__call *k, const char *cls, int http,
			  int64_t retry_after)
{
	pal_retry_decision d = pal_retry_decide(&k->spec->call->retry, k->c.attempt, pal__db_ms(ex),
						k->c.scheduled_at * 1000, retry_after, &ex->rng);
	if (d.retry)
		pal__queue_result(ex, k, PAL_TS_RETRY_WAIT, cls, http, d.delay_ms, NULL);
	else
		pal__spent(ex, k, cls, http, d.reason);
}

/* Keep the answer of a status query for the attempt's record: the HTTP
 * status, or the transport class when there was none. */
static void note_query(pal__call *k, long status, const char *cls)
{
	size_t n = strlen(k->queries);
	char one[56];
	if (status > 0)
		snprintf(one, sizeof one, "%ld", status);
	else
		snprintf(one, sizeof one, "%s", cls[0] ? cls : "no_answer");
	if (n + strlen(one) + 2 > sizeof k->queries)
		return; /* the first answers are kept */
	snprintf(k->queries + n, sizeof k->queries - n, "%s%s", n ? "," : "", one);
}

static void on_chunk(pal_executor *ex, pal__call *k, pal_class *cl)
{
	char err[512];
	pal_tstate state;
	if (!ex->st) {
		/* The connection was dropped earlier in this pass: the lease
		 * expires and the next claim resumes from the stored checkpoint
		 * (the service replays the chunk it already applied). */
		pal__abandon(ex, k, "no database connection at checkpoint");
		return;
	}
	int rc = pal_store_checkpoint(ex->st, k->c.id, k->c.fence, cl->checkpoint, &state, err,
				      sizeof err);
	if (rc == PAL_ESTALE) {
		atomic_fetch_add(&ex->stale_db, 1);
		pal__minc(ex, "palisade_executor_stale_rejections_total", "at=\"db\"", 1);
		pal__abandon(ex, k, "checkpoint fenced");
		return;
	}
	if (rc) {
		pal_log(PAL_LOG_ERROR, "executor.checkpoint_failed", "{s:I, s:s}", "trigger",
			(json_int_t)k->c.id, "error", err);
		pal__drop_conn(ex, &ex->st);
		pal__abandon(ex, k, "database error at checkpoint");
		return;
	}
	if (state != PAL_TS_RUNNING) {
		/* A safe point: paused (resume continues from the checkpoint with
		 * a new token) or cancelled. */
		pal_log(PAL_LOG_INFO, "executor.safe_point", "{s:I, s:s}", "trigger",
			(json_int_t)k->c.id, "state", pal_tstate_name(state));
		pal__unlink_call(ex, k);
		pal__call_free(k);
		return;
	}
	free(k->c.checkpoint);
	k->c.checkpoint = cl->checkpoint;
	cl->checkpoint = NULL;
	pal__phase_set(ex, k, PHASE_WAIT);
	k->resume_at_ms = pal_mono_ms() + cl->next_delay_ms;
	pal__call_reset_transfer(k);
}

void pal__call_finished(pal_executor *ex, pal__call *k, CURLcode code)
{
	long status = 0;
	curl_easy_getinfo(k->easy, CURLINFO_RESPONSE_CODE, &status);
	long req_size = 0;
	curl_easy_getinfo(k->easy, CURLINFO_REQUEST_SIZE, &req_size);
	curl_multi_remove_handle(ex->multi, k->easy);
	pal__easy_give(ex, k->easy);
	k->easy = NULL;
	pal_http_result r = { .curl_code = code,
			      .status = status,
			      .request_sent = req_size > 0,
			      /* a status query is a GET: its resend is harmless */
			      .resent = k->resent && k->ph != PHASE_QUERY,
			      .stale_header = k->stale_header,
			      .retry_after_ms = k->retry_after_ms,
			      .body = k->resp,
			      .body_len = k->resp_len,
			      .body_truncated = k->resp_truncated };
	pal_class cl;
	pal_classify(&r, &cl);
	if (status > 0)
		pal__excerpt_keep(ex, k);
	bool failed_for_breaker = cl.outcome == PAL_OUT_RETRYABLE || cl.outcome == PAL_OUT_UNKNOWN;
	pal_breaker_record(ex->breakers, k->host, failed_for_breaker, pal_mono_ms());

	bool query = k->ph == PHASE_QUERY;
	/* Each transfer with its trace ids (docs/protocol.md, "Trace
	 * context"): info when it did not succeed, so that a retry or a
	 * status query can be followed into the service's traces. */
	pal_log_level lvl = cl.outcome == PAL_OUT_SUCCESS || cl.outcome == PAL_OUT_MORE
				    ? PAL_LOG_DEBUG
				    : PAL_LOG_INFO;
	if (pal_log_enabled(lvl)) {
		char trace[33], span[17];
		pal__call_trace_ids(ex, k, trace, span);
		pal_log(lvl, "executor.call", "{s:I, s:s, s:i, s:I, s:s, s:i, s:s, s:s, s:s}",
			"trigger", (json_int_t)k->c.id, "job", k->c.job_id, "attempt", k->c.attempt,
			"fence", (json_int_t)k->c.fence, "phase", query ? "status_query" : "request",
			"http", (int)status, "class", cl.error_class, "trace_id", trace, "span_id",
			span);
	}
	pal_action act = pal_outcome_decide(query, &cl, status, k->called,
					    k->spec->call->status_url != NULL);
	k->unknown = pal_unknown_after(k->unknown, query, &cl, status);
	char lab[64];
	if (query) {
		const char *answer = act == PAL_ACT_SUCCEED		       ? "found"
				     : act == PAL_ACT_SEND || act == PAL_ACT_RETRY ? "not_found"
										   : "unknown";
		snprintf(lab, sizeof lab, "answer=\"%s\"", answer);
		pal__minc(ex, "palisade_executor_status_queries_total", lab, 1);
		note_query(k, status, cl.error_class);
		pal_log(PAL_LOG_INFO, "executor.status_query", "{s:I, s:s, s:i, s:s, s:s}", "trigger",
			(json_int_t)k->c.id, "key", k->key ? k->key : "", "http", (int)status, "class",
			cl.error_class, "answer", answer);
	} else {
		k->called = true;
		snprintf(k->last_class, sizeof k->last_class, "%s", cl.error_class);
		static const char *const names[] = { "success",	  "more",      "stale",
						     "permanent", "retryable", "unknown" };
		snprintf(lab, sizeof lab, "outcome=\"%s\"", names[cl.outcome]);
		pal__minc(ex, "palisade_executor_calls_total", lab, 1);
	}
	switch (act) {
	case PAL_ACT_SUCCEED:
		pal__queue_result(ex, k, PAL_TS_SUCCEEDED, query ? "resolved_by_query" : "", (int)status,
				  PAL_NEXT_NONE, NULL);
		break;
	case PAL_ACT_CHECKPOINT:
		on_chunk(ex, k, &cl);
		break;
	case PAL_ACT_STALE:
		atomic_fetch_add(&ex->stale_sink, 1);
		pal__minc(ex, "palisade_executor_stale_rejections_total", "at=\"sink\"", 1);
		/* Nothing was applied.  Usually a newer attempt holds the
		 * trigger, and the hand-back below is refused by the database's
		 * fence like any stale write.  But after a failover that lost the
		 * tail of the WAL, the sequence of tokens can restart below what
		 * the service has seen: this attempt IS the trigger's current
		 * one, and every token reissued for it would be refused until
		 * other claims pushed the sequence past.  The hand-back carries
		 * the service's token; its commit moves the sequence past it and
		 * gives the trigger back at once, and the next claim's token is
		 * accepted (the same key: the effect is replayed, not redone). */
		if (k->stale_token > k->c.fence) {
			pal__queue_result(ex, k, PAL_TS_PENDING, "stale_token", (int)status, 0, NULL);
		} else {
			pal__abandon(ex, k, "the service holds a newer token");
		}
		break;
	case PAL_ACT_FAIL:
		pal__queue_result(ex, k, PAL_TS_FAILED, cl.error_class, (int)status, PAL_NEXT_NONE, NULL);
		break;
	case PAL_ACT_TICKET:
		pal__queue_result(ex, k, PAL_TS_MANUAL, cl.error_class, (int)status, PAL_NEXT_NONE,
				  "the service has this idempotency key with a different payload (422)");
		break;
	case PAL_ACT_RETRY:
		if (query)
			retry_or_fail(ex, k, k->last_class, 0, -1);
		else
			retry_or_fail(ex, k, cl.error_class, cl.outcome == PAL_OUT_UNKNOWN ? 0 : (int)status,
				      cl.outcome == PAL_OUT_UNKNOWN ? -1 : k->retry_after_ms);
		break;
	case PAL_ACT_SEND:
		pal__phase_set(ex, k, PHASE_CALL);
		pal__start_or_defer(ex, k);
		break;
	case PAL_ACT_QUERY:
		pal_log(PAL_LOG_INFO, "executor.outcome_unknown", "{s:I, s:s, s:s}", "trigger",
			(json_int_t)k->c.id, "class", cl.error_class, "next", "query status URL");
		pal__phase_set(ex, k, PHASE_QUERY);
		int rc = pal__call_start(ex, k);
		if (rc && !pal__render_skip(ex, k, rc))
			pal__queue_result(ex, k, PAL_TS_UNKNOWN, cl.error_class, 0,
					  pal_backoff_ms(&k->spec->call->retry, k->c.attempt), NULL);
		break;
	case PAL_ACT_UNKNOWN: {
		pal_retry_decision d = pal_retry_decide(&k->spec->call->retry, k->c.attempt, pal__db_ms(ex),
							k->c.scheduled_at * 1000, -1, &ex->rng);
		if (d.retry)
			pal__queue_result(ex, k, PAL_TS_UNKNOWN, "status_query_failed", (int)status,
					  d.delay_ms, NULL);
		else
			pal__spent(ex, k, "unknown_outcome", (int)status, d.reason);
		break;
	}
	}
	free(cl.checkpoint);
}
