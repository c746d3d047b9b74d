/*
 * cancel.c - cancel one trigger or every live trigger of a job
 * (pal_ops_cancel): moves through the door of the trigger state machine
 * (PAL__TRIGGER_MOVE) per step, a running trigger asked to stop through
 * cancelling.  docs/operations.md.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/ops.h"
#include "palisade/tstate.h"
#include "ops_int.h"

/* Selection of cancel: trigger $1, or job $2 (the other one NULL). */
#define CANCEL_SEL "($1::bigint IS NULL OR id = $1::bigint) AND ($2::text IS NULL OR job_id = $2::text)"

/* The triggers of the selection that each step of cancel moves. */
#define PAUSING_EXPIRED "state = 'pausing' AND lease_until < clock_timestamp()"
#define CANCELLING_EXPIRED "state = 'cancelling' AND lease_until < clock_timestamp()"
#define WAITING "state IN ('paused', 'retry_wait', 'pending')"
#define RUNNING "state = 'running'"

/* The statement that moves the triggers of the selection in state WHERE to
 * TO through the door (MOVE: PAL__TRIGGER_MOVE_WHERE, or
 * PAL__TRIGGER_MOVE_LOCKED for a WHERE on the lease); rows: each state left
 * and how many left it. */
#define CANCEL_MOVE_BY(move, where, to)                                                            \
	"SELECT m.from_state, count(*) FROM " move(CANCEL_SEL " AND " where, to,                   \
						   "NULL") " m GROUP BY m.from_state"
#define CANCEL_MOVE(where, to) CANCEL_MOVE_BY(PAL__TRIGGER_MOVE_WHERE, where, to)
#define CANCEL_MOVE_LOCKED(where, to) CANCEL_MOVE_BY(PAL__TRIGGER_MOVE_LOCKED, where, to)

/* Run SQL (a CANCEL_MOVE) with the selection P; adds to N[s] the triggers
 * that left state s. */
static int cancel_move(pal_store *st, const char *const *p, const char *sql,
		       int64_t n[PAL_TS__COUNT], char *err, size_t errlen)
{
	PGresult *r = pal__store_query(st, sql, 2, p, err, errlen);
	if (!r)
		return PAL_EDB;
	for (int i = 0; i < PQntuples(r); i++) {
		pal_tstate s;
		if (pal_tstate_parse(PQgetvalue(r, i, 0), &s) == PAL_OK)
			n[s] += pal__ops_val_i64(r, i, 1);
	}
	PQclear(r);
	return PAL_OK;
}

/* ---- cancel ------------------------------------------------------------------- */

typedef struct cancel_ctx {
	int64_t trigger_id;
	const char *job_id, *actor, *reason;
	pal_cancel_result *res;
} cancel_ctx;

void pal_cancel_result_clear(pal_cancel_result *r)
{
	json_decref(r->left);
	r->left = NULL;
}

static bool terminal(const char *state)
{
	return !strcmp(state, "succeeded") || !strcmp(state, "failed") ||
	       !strcmp(state, "cancelled") || !strcmp(state, "skipped");
}

static int cancel_body(pal_store *st, void *vctx, char *err, size_t errlen)
{
	cancel_ctx *c = vctx;
	pal_cancel_result *res = c->res;
	pal_cancel_result_clear(res);
	memset(res, 0, sizeof *res);
	char tid[24] = "";
	if (c->trigger_id)
		pal__ops_i64s(tid, sizeof tid, c->trigger_id);
	const char *p[] = { c->trigger_id ? tid : NULL, c->trigger_id ? NULL : c->job_id };
	int rc;
	char from[16] = "";
	if (c->trigger_id) {
		PGresult *r = pal__store_query(st, "SELECT job_id, state FROM triggers WHERE id = $1",
					       1, p, err, errlen);
		if (!r)
			return PAL_EDB;
		if (!PQntuples(r)) {
			PQclear(r);
			snprintf(err, errlen, "no trigger %s; hint: `palisade triggers --job JOB` lists them",
				 tid);
			return PAL_ENOENT;
		}
		snprintf(res->job_id, sizeof res->job_id, "%s", PQgetvalue(r, 0, 0));
		snprintf(from, sizeof from, "%s", PQgetvalue(r, 0, 1));
		PQclear(r);
	} else if ((rc = pal__ops_job_exists(st, c->job_id, err, errlen))) {
		return rc;
	}

	/* Forward order along the state machine: a trigger moved by an executor
	 * between two statements is caught by a later one.  A few passes catch
	 * one moved backwards (running -> retry_wait) meanwhile. */
	for (int pass = 0; pass < 5; pass++) {
		/* Lease expired before the executor reached its safe point: finish
		 * the step for it (legal edges; its holder is fenced by state).
		 * Locked as read, the lease rechecked on the row's newest version:
		 * a holder that renewed meanwhile is alive and keeps its trigger.
		 * A row another transaction holds is left out (reported among
		 * those left): to its holder, and an expired cancelling one also
		 * to the executors' reaper, which takes it on a later round. */
		int64_t n[PAL_TS__COUNT] = {0};
		if ((rc = cancel_move(st, p, CANCEL_MOVE_LOCKED(PAUSING_EXPIRED, "'paused'"), n,
				      err, errlen)))
			return rc;
		if ((rc = cancel_move(st, p, CANCEL_MOVE_LOCKED(CANCELLING_EXPIRED, "'cancelled'"),
				      n, err, errlen)))
			return rc;
		/* The waiting ones (with those just paused): no lease to recheck;
		 * a row being claimed meanwhile is waited for, and the door's
		 * recheck of the state leaves it to the next step. */
		if ((rc = cancel_move(st, p, CANCEL_MOVE(WAITING, "'cancelled'"), n, err, errlen)))
			return rc;
		res->expired += n[PAL_TS_CANCELLING];
		res->from_paused += n[PAL_TS_PAUSED];
		res->from_retry_wait += n[PAL_TS_RETRY_WAIT];
		res->from_pending += n[PAL_TS_PENDING];
		/* A running one is asked to stop: it keeps its lease (the door's
		 * rule for running -> cancelling) and stops at its safe point. */
		if ((rc = cancel_move(st, p, CANCEL_MOVE(RUNNING, "'cancelling'"), n, err, errlen)))
			return rc;
		res->to_cancelling += n[PAL_TS_RUNNING];
		int64_t left;
		if ((rc = pal__ops_query_i64(
			 st,
			 "SELECT count(*) FROM triggers WHERE " CANCEL_SEL
			 " AND state IN ('paused', 'retry_wait', 'pending', 'running')",
			 2, p, &left, err, errlen)))
			return rc;
		if (!left)
			break;
	}
	if ((rc = pal__store_query_json(
		 st,
		 "SELECT coalesce(json_object_agg(state, n), '{}')::text FROM ("
		 " SELECT state, count(*) AS n FROM triggers WHERE " CANCEL_SEL
		 " AND state NOT IN ('succeeded', 'failed', 'cancelled', 'skipped')"
		 " GROUP BY state) x",
		 2, p, &res->left, err, errlen)))
		return rc;
	int64_t moved = res->from_pending + res->from_retry_wait + res->from_paused +
			res->to_cancelling + res->expired;
	if (c->trigger_id) {
		PGresult *r = pal__store_query(st, "SELECT state FROM triggers WHERE id = $1", 1, p, err,
					       errlen);
		if (!r)
			return PAL_EDB;
		snprintf(res->state, sizeof res->state, "%s", PQgetvalue(r, 0, 0));
		PQclear(r);
		if (!moved) {
			if (!strcmp(res->state, "cancelling"))
				return PAL_OK; /* already under way; nothing to write */
			if (terminal(res->state))
				snprintf(err, errlen,
					 "trigger %s already finished (%s); a finished trigger is never "
					 "re-opened",
					 tid, res->state);
			else if (!strcmp(res->state, "unknown"))
				snprintf(err, errlen,
					 "trigger %s is unknown (outcome being resolved by query); it "
					 "cannot be cancelled until it is resolved; hint: retry later, "
					 "or resolve its ticket",
					 tid);
			else if (!strcmp(res->state, "pausing"))
				snprintf(err, errlen,
					 "trigger %s is pausing; cancel it once it is paused (at the "
					 "executor's next safe point)",
					 tid);
			else if (!strcmp(res->state, "manual"))
				snprintf(err, errlen,
					 "trigger %s waits for an operator (state manual); hint: "
					 "`palisade tickets list` and resolve its ticket with abandon",
					 tid);
			else
				snprintf(err, errlen, "trigger %s is %s and cannot be cancelled", tid,
					 res->state);
			return PAL_ESTALE;
		}
	}
	char *left = json_dumps(res->left, JSON_COMPACT);
	char np[24], nr[24], nw[24], nc[24], ne[24];
	pal__ops_i64s(ne, sizeof ne, res->expired);
	pal__ops_i64s(np, sizeof np, res->from_pending);
	pal__ops_i64s(nr, sizeof nr, res->from_retry_wait);
	pal__ops_i64s(nw, sizeof nw, res->from_paused);
	pal__ops_i64s(nc, sizeof nc, res->to_cancelling);
	const char *pa[] = { c->actor, c->trigger_id ? res->job_id : c->job_id,
			     c->reason, p[0],
			     from[0] ? from : NULL, np,
			     nr,	   nw,
			     nc,	   left ? left : "{}",
			     ne };
	rc = pal__ops_exec(
	    st,
	    "INSERT INTO audit_log (actor, action, scope, reason, details)"
	    " VALUES ($1, 'cancel', 'job:' || $2, $3, jsonb_strip_nulls(jsonb_build_object("
	    "  'trigger', $4::bigint, 'from_state', $5::text,"
	    "  'pending_to_cancelled', $6::bigint, 'retry_wait_to_cancelled', $7::bigint,"
	    "  'paused_to_cancelled', $8::bigint, 'running_to_cancelling', $9::bigint,"
	    "  'not_cancellable', $10::jsonb, 'expired_cancelling_to_cancelled', $11::bigint)))",
	    11, pa, NULL, err, errlen);
	free(left);
	if (rc)
		return rc;
	/* A trigger claimed ahead of its instant learns of it now, not at its
	 * executor's next renewal (after the instant?): no call is made. */
	if (res->to_cancelling)
		rc = pal__ops_notify(st, PAL__HANDBACK_NOTIFY, 0, NULL, err, errlen);
	if (!rc && res->to_cancelling) {
		const char *pj[] = { pa[1] };
		rc = pal__ops_notify(
		    st,
		    "SELECT pg_notify('palisade_ops',"
		    " json_build_object('action', 'cancel', 'scope', 'job:' || $1)::text)",
		    1, pj, err, errlen);
	}
	return rc;
}

int pal_ops_cancel(pal_store *st, int64_t trigger_id, const char *job_id, const char *actor,
		   const char *reason, pal_cancel_result *res, char *err, size_t errlen)
{
	memset(res, 0, sizeof *res);
	if (!trigger_id && !job_id) {
		snprintf(err, errlen, "cancel needs a trigger id or a job");
		return PAL_EINVAL;
	}
	cancel_ctx c = { trigger_id, job_id, actor, reason, res };
	return pal__ops_in_tx(st, cancel_body, &c, err, errlen);
}
