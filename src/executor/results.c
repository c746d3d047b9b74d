/*
 * results.c - results of calls, committed in batches.
 *
 * A finished call's result joins the queue; whenever the commit connection
 * is idle the head of the queue (up to COMMIT_MAX) becomes one batch and is
 * sent as one conditional statement (pal_store_commit_send), without blocking the loop: calls keep
 * moving while the batch commits, and results that finish meanwhile wait
 * for the next batch.  A call stays allocated until its batch is answered
 * (the batch points at its idempotency key).  If the commit fails the
 * batch goes back to the head of the queue and is sent again with the same
 * tokens; if a lease expired meanwhile those rows are fenced and another
 * executor resolves the outcome by querying.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/log.h"
#include "executor_int.h"

void pal__unlink_call(pal_executor *ex, pal__call *k)
{
	pal__phase_unpark(ex, k);
	/* O(1): a list walk here cost O(calls in flight) per finished call */
	if (k->pprev) {
		*k->pprev = k->next;
		if (k->next)
			k->next->pprev = k->pprev;
		k->pprev = NULL;
		k->next = NULL;
	}
	ex->inflight--;
	pal__leases_remove(&ex->leases, k->c.id);
}

static bool grow(pal_result **r, pal__call ***calls, int *cap, int need)
{
	if (need <= *cap)
		return true;
	int nc = *cap ? *cap : 64;
	while (nc < need)
		nc *= 2;
	pal_result *nr = realloc(*r, (size_t)nc * sizeof **r);
	if (!nr)
		return false;
	*r = nr;
	pal__call **ncl = realloc(*calls, (size_t)nc * sizeof **calls);
	if (!ncl)
		return false;
	*calls = ncl;
	*cap = nc;
	return true;
}

void pal__queue_result(pal_executor *ex, pal__call *k, pal_tstate state, const char *error_class,
		       int http, int64_t next_delay_ms, const char *ticket_reason)
{
	if (!grow(&ex->results, &ex->result_calls, &ex->cap_results, ex->n_results + 1)) {
		/* Out of memory: nothing is written; the lease expires and
		 * another claim resolves the outcome by querying. */
		pal__abandon(ex, k, "out of memory for its result");
		return;
	}
	int64_t dur = k->started_ms ? pal_mono_ms() - k->started_ms : 0;
	/* ERROR_CLASS often lives on the caller's stack (the classification
	 * of the transfer that just ended); the batched commit reads it later,
	 * so the result points at K's own copy.  A dangling pointer here wrote
	 * the class of some later transfer (a status query's http_404) onto a
	 * trigger that failed for TLS. */
	snprintf(k->result_class, sizeof k->result_class, "%s", error_class ? error_class : "");
	ex->results[ex->n_results] = (pal_result){ .id = k->c.id,
						   .fence = k->c.fence,
						   .state = state,
						   .error_class = k->result_class,
						   .http_status = http,
						   .next_delay_ms = next_delay_ms,
						   .duration_ms = (int)dur,
						   .idempotency_key = k->key,
						   .ticket_reason = k->render_skip ? k->render_err
										   : ticket_reason,
						   .unknown = k->unknown,
						   .stale_token = k->stale_token,
						   .at = k->c.scheduled_at,
						   .notify = k->spec && k->spec->call->notify,
						   .status_queries = k->queries[0] ? k->queries : NULL,
						   .render_node = k->render_skip ? ex->cfg.node_id
										 : NULL,
						   .resp_keep = k->ex_keep && !k->render_skip,
						   .resp_truncated = k->ex_trunc,
						   .resp_headers = k->ex_hdrs,
						   .resp_ctype = k->ex_ctype,
						   .resp_body = k->ex_body,
						   .resp_body_len = k->ex_body_len };
	ex->result_calls[ex->n_results++] = k;
	pal__unlink_call(ex, k);
}

/* Results per commit statement: enough to amortise the commit, few enough
 * that one statement stays short whatever the backlog. */
#define COMMIT_MAX 1024

void pal__commit_send(pal_executor *ex)
{
	if (!ex->n_results || !ex->rst || pal_store_busy(ex->rst) || ex->n_batch)
		return;
	int n = ex->n_results < COMMIT_MAX ? ex->n_results : COMMIT_MAX;
	if (!grow(&ex->batch, &ex->batch_calls, &ex->cap_batch, n))
		return; /* try again next pass */
	memcpy(ex->batch, ex->results, (size_t)n * sizeof *ex->batch);
	memcpy(ex->batch_calls, ex->result_calls, (size_t)n * sizeof *ex->batch_calls);
	ex->n_batch = n;
	ex->n_results -= n;
	memmove(ex->results, ex->results + n, (size_t)ex->n_results * sizeof *ex->results);
	memmove(ex->result_calls, ex->result_calls + n,
		(size_t)ex->n_results * sizeof *ex->result_calls);
	char err[1024];
	if (pal_store_commit_send(ex->rst, ex->batch, ex->n_batch, err, sizeof err)) {
		pal_log(PAL_LOG_ERROR, "executor.commit_failed", "{s:i, s:s}", "results",
			ex->n_batch, "error", err);
		pal__drop_conn(ex, &ex->rst);
	}
}

/* Put the batch back at the head of the queue (its commit failed). */
static void requeue_batch(pal_executor *ex)
{
	if (!ex->n_batch)
		return;
	if (!grow(&ex->results, &ex->result_calls, &ex->cap_results, ex->n_results + ex->n_batch)) {
		/* cannot keep them: their leases expire and another claim
		 * resolves each outcome by querying */
		for (int i = 0; i < ex->n_batch; i++)
			pal__call_free(ex->batch_calls[i]);
		ex->n_batch = 0;
		return;
	}
	memmove(ex->results + ex->n_batch, ex->results, (size_t)ex->n_results * sizeof *ex->results);
	memmove(ex->result_calls + ex->n_batch, ex->result_calls,
		(size_t)ex->n_results * sizeof *ex->result_calls);
	memcpy(ex->results, ex->batch, (size_t)ex->n_batch * sizeof *ex->batch);
	memcpy(ex->result_calls, ex->batch_calls, (size_t)ex->n_batch * sizeof *ex->batch_calls);
	ex->n_results += ex->n_batch;
	ex->n_batch = 0;
}

void pal__commit_recv(pal_executor *ex)
{
	if (!ex->rst) {
		requeue_batch(ex); /* the connection was dropped with the batch in flight */
		return;
	}
	if (!pal_store_busy(ex->rst))
		return;
	char err[1024];
	bool done;
	if (pal_store_consume(ex->rst, &done, err, sizeof err)) {
		pal_log(PAL_LOG_ERROR, "executor.commit_failed", "{s:i, s:s}", "results",
			ex->n_batch, "error", err);
		pal__drop_conn(ex, &ex->rst);
		requeue_batch(ex);
		return;
	}
	if (!done)
		return;
	if (pal_store_commit_recv(ex->rst, ex->batch, ex->n_batch, err, sizeof err)) {
		pal_log(PAL_LOG_ERROR, "executor.commit_failed", "{s:i, s:s}", "results",
			ex->n_batch, "error", err);
		pal__drop_conn(ex, &ex->rst);
		requeue_batch(ex);
		return;
	}
	int kept = 0; /* refused once: sent again with the next batch */
	for (int i = 0; i < ex->n_batch; i++) {
		pal_result *r = &ex->batch[i];
		char lab[64];
		if (!r->committed && !r->resent) {
			/* the next statement's snapshot sees an attempts row a
			 * takeover that this one waited for wrote, and ends it as
			 * fenced (pal_result.resent) */
			r->resent = true;
			ex->batch[kept] = *r;
			ex->batch_calls[kept++] = ex->batch_calls[i];
			continue;
		}
		if (r->committed) {
			snprintf(lab, sizeof lab, "state=\"%s\"", pal_tstate_name(r->final_state));
			pal__minc(ex, "palisade_executor_results_total", lab, 1);
			if (r->final_state == PAL_TS_SUCCEEDED)
				atomic_fetch_add(&ex->succeeded, 1);
			else if (r->final_state == PAL_TS_FAILED)
				atomic_fetch_add(&ex->failed, 1);
			if (r->final_state == PAL_TS_FAILED || r->final_state == PAL_TS_MANUAL) {
				/* One line per trigger that needs a person: what failed,
				 * under which token, and why. */
				const pal__call *k = ex->batch_calls[i];
				pal_log(r->final_state == PAL_TS_FAILED ? PAL_LOG_WARN : PAL_LOG_ERROR,
					r->final_state == PAL_TS_FAILED ? "executor.trigger_failed"
									: "executor.trigger_manual",
					"{s:s, s:I, s:I, s:i, s:s, s:i, s:s?}", "job", k->c.job_id,
					"trigger", (json_int_t)r->id, "fence", (json_int_t)r->fence,
					"attempt", k->c.attempt, "error_class",
					r->error_class ? r->error_class : "", "http_status",
					r->http_status, "ticket", r->ticket_reason);
			}
		} else {
			atomic_fetch_add(&ex->stale_db, 1);
			pal__minc(ex, "palisade_executor_stale_rejections_total", "at=\"db\"", 1);
			pal_log(PAL_LOG_WARN, "executor.result_fenced", "{s:I, s:I, s:s}", "trigger",
				(json_int_t)r->id, "fence", (json_int_t)r->fence, "state",
				pal_tstate_name(r->state));
		}
		pal__call_free(ex->batch_calls[i]);
	}
	ex->n_batch = kept;
	requeue_batch(ex);
}

void pal__results_free(pal_executor *ex)
{
	for (int i = 0; i < ex->n_results; i++)
		pal__call_free(ex->result_calls[i]);
	for (int i = 0; i < ex->n_batch; i++)
		pal__call_free(ex->batch_calls[i]);
	free(ex->results);
	free(ex->result_calls);
	free(ex->batch);
	free(ex->batch_calls);
}
