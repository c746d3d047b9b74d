/*
 * ops.h - operator actions: pause, resume, cancel, manual runs, backfills,
 * ticket resolution, and the trigger listing (docs/operations.md; G7).
 *
 * Every action is one PostgreSQL transaction that makes its change with
 * conditional UPDATEs (WHERE state IN (...)), so that a concurrent executor
 * commit is never overwritten: whichever commits first wins, the loser's
 * statement matches zero rows.  The same transaction writes one audit_log row
 * (actor, action, scope, reason, details).  All SQL text is in
 * src/store/: ops.c (the shared transaction) and one file per action
 * (gates.c, cancel.c, manual.c, backfill.c, tickets.c, listings.c);
 * docs/operations.md describes the commands.
 *
 * Gates (persistent pauses) are changed under an ACCESS EXCLUSIVE lock on
 * the gates table, so a claim that reads gates in its own statement either
 * commits before a pause (and its trigger is then asked to pause) or starts
 * after it (and sees the gate).
 */
#ifndef PALISADE_OPS_H
#define PALISADE_OPS_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <jansson.h>
#include "palisade/err.h"
#include "palisade/store.h"

/* ---- scopes ---------------------------------------------------------------- */

typedef enum {
	PAL_SCOPE_GLOBAL,
	PAL_SCOPE_JOB,
	PAL_SCOPE_GROUP,
	PAL_SCOPE_TENANT,
} pal_scope_kind;

typedef struct pal_scope {
	pal_scope_kind kind;
	const char *name; /* job id, group or tenant; ignored for global */
} pal_scope;

/* "global", "job", "group" or "tenant" (static). */
const char *pal_scope_kind_name(pal_scope_kind k);
/* "global", "job:NAME", "group:NAME" or "tenant:NAME" into BUF. */
void pal_scope_format(const pal_scope *sc, char *buf, size_t len);

/* ---- pause / resume -------------------------------------------------------- */

typedef struct pal_pause_result {
	bool was_paused;        /* the gate existed: reason and actor were updated */
	char prev_reason[256];  /* its previous reason when was_paused */
	char since[32];         /* when the gate was set (RFC 3339) */
	int64_t asked;          /* running -> pausing */
	int64_t held;           /* pending/retry_wait triggers of the scope (not claimed) */
	int64_t jobs;           /* jobs the scope matches now */
} pal_pause_result;

/*
 * Upsert the gate of SC (paused, REASON, ACTOR), move the scope's running
 * triggers to 'pausing' and write the audit row, in one transaction.
 * Pending and retry_wait triggers are left as they are (claims skip gated
 * scopes).  PAL_ENOENT for a job scope naming no job; PAL_EBUSY when the
 * gates lock could not be had within the lock timeout.
 */
PAL_MUST_CHECK int pal_ops_pause(pal_store *st, const pal_scope *sc, const char *actor,
				 const char *reason, pal_pause_result *res, char *err,
				 size_t errlen);

typedef struct pal_resume_result {
	bool had_gate;       /* a gate of exactly this scope was deleted */
	int64_t resumed;     /* paused -> pending */
	int64_t expired;     /* pausing with an expired lease -> paused (then resumed) */
	int64_t still_gated; /* paused triggers of the scope held by another gate, or by a
			      * roll-back (their instant shadow) */
	int64_t continued;   /* live pausing -> running (the executor carries on) */
	int64_t pausing;     /* pausing triggers another gate or a roll-back still holds */
	/* By misfire policy (pal_misfire_policy, the version of each trigger or
	 * of a job's newest held instant): */
	int64_t released[4]; /* triggers of the scope ready to run now that no gate holds */
	int64_t misfired[4]; /* held instants past the threshold recorded as misfires */
	int64_t tickets;     /* manual: tickets opened for misfired instants */
	char ramp_until[32]; /* RFC 3339: when the last released trigger becomes ready
				(ramped), else empty */
	int64_t misfire_threshold_ms, ramp_ms; /* the pal_resume_opts applied */
} pal_resume_result;

/* R of a resume of SCOPE as the JSON object that `palisade resume --output
 * json` and the API answer (released and misfired as {policy: count});
 * json_decref. */
json_t *pal_resume_result_json(const char *scope, const pal_resume_result *r);

/* How a resume releases what its gate held (docs/operations.md). */
typedef struct pal_resume_opts {
	/* held scheduled instants older than this go through their job's
	 * misfire policy (controller.misfire_threshold) */
	int64_t misfire_threshold_ms;
	/* > 0: the released triggers become ready along a ramp of this length
	 * (a rate rising from a small start); 0: all at once */
	int64_t ramp_ms;
} pal_resume_opts;

/*
 * Delete the gate of SC, move the scope's 'paused' triggers that no other
 * paused gate covers to 'pending' (their checkpoint stays; the next claim
 * gives them a new token), write the audit row, in one transaction.
 * Pausing triggers whose lease expired (their executor is gone) are moved
 * to paused first, so they resume too; live pausing triggers no other gate
 * holds go back to running under the same lease and token, so one resume
 * is always enough.  When the gate existed, the scheduled instants it held
 * (pending, never attempted, no checkpoint) older than
 * OPTS->misfire_threshold_ms go through their job's misfire policy
 * (pal_misfire_decide): those not fired become 'skipped' with one misfire
 * row per job (reason 'paused', gate SC), and a manual policy opens a
 * ticket.  With OPTS->ramp_ms the released triggers get ready times along
 * the ramp (next_attempt_at: data, so any executor honours it).  Run on a
 * scope without a gate it only sweeps paused triggers (no error).
 */
PAL_MUST_CHECK int pal_ops_resume(pal_store *st, const pal_scope *sc, const char *actor,
				  const char *reason, const pal_resume_opts *opts,
				  pal_resume_result *res, char *err, size_t errlen);

/* ---- cancel ---------------------------------------------------------------- */

typedef struct pal_cancel_result {
	int64_t from_pending, from_retry_wait, from_paused; /* -> cancelled */
	int64_t to_cancelling;                              /* running -> cancelling */
	int64_t expired; /* cancelling whose lease expired -> cancelled (pausing ones
			    with an expired lease go paused -> cancelled, counted
			    in from_paused) */
	json_t *left;   /* {state: count} of the selection's non-terminal triggers
			   that were not moved (unknown, pausing, cancelling, manual);
			   owned by the result, free with pal_cancel_result_clear() */
	char state[16]; /* single trigger: its state after the action */
	char job_id[128]; /* single trigger: its job */
} pal_cancel_result;

void pal_cancel_result_clear(pal_cancel_result *r);

/*
 * Cancel trigger TRIGGER_ID (> 0) or every non-terminal trigger of JOB_ID
 * (TRIGGER_ID 0): pending, retry_wait and paused go to 'cancelled'
 * (finished_at set), running goes to 'cancelling' (the executor finishes it
 * at its next safe point, or its success commits first).  A pausing or
 * cancelling trigger whose lease has expired (its executor is gone) is
 * finished here: pausing -> paused -> cancelled, cancelling -> cancelled.  For one trigger
 * that moved nowhere nothing is written and PAL_ESTALE is returned with
 * res->state naming its state ("cancelling" is reported as PAL_OK: already
 * under way).  PAL_ENOENT when the trigger or job does not exist.
 */
PAL_MUST_CHECK int pal_ops_cancel(pal_store *st, int64_t trigger_id, const char *job_id,
				  const char *actor, const char *reason, pal_cancel_result *res,
				  char *err, size_t errlen);

/* ---- manual runs and backfills --------------------------------------------- */

/* A request id as callers may give one: 1-128 characters of
 * A-Z a-z 0-9 . _ : - (it ends up in idempotency keys and headers). */
bool pal_ops_request_id_ok(const char *s);

/* A random UUID version 4 from /dev/urandom into OUT (37 bytes). */
PAL_MUST_CHECK int pal_ops_uuid4(char out[37]);

typedef struct pal_run_result {
	bool existed;     /* the request id was used before: nothing inserted */
	int version;      /* version the rows were planned from */
	int64_t at;       /* their scheduled instant (epoch seconds) */
	json_t *ids;      /* trigger ids (new, or the existing ones); json_decref */
	char refused[24]; /* PAL_ESTALE: "job-retired", "unknown-outcome", "scheduled-instant" */
	bool waits_upstream; /* "scheduled-instant": a past instant of a job with `after` that
				the dependency planner has not decided yet */
} pal_run_result;

void pal_run_result_clear(pal_run_result *r);

/*
 * Manual run of JOB_ID: one trigger per partition of the job's active
 * version (else its latest), source 'manual', REQUEST_ID, scheduled and due
 * at AT (epoch seconds), or at the database clock when AT is PAL_OPS_NOW.
 * A request id already used for the job inserts nothing (res->existed;
 * PAL_OK), unless it was used by a backfill or for another instant
 * (PAL_EINVAL).  PAL_ENOENT when the job does not exist.  Refused in the
 * insert's transaction (PAL_ESTALE, res->refused naming why, nothing
 * written), the job's row held FOR SHARE: a retired job ("job-retired");
 * unless NEW_EFFECT, an AT whose earlier triggers (not REQUEST_ID's) have an
 * unknown outcome ("unknown-outcome"), and an AT still to come that is an
 * instant of the job's schedule ("scheduled-instant": the scheduler runs
 * it under its own key, a manual run would be a second effect).
 */
#define PAL_OPS_NOW INT64_MIN
PAL_MUST_CHECK int pal_ops_trigger(pal_store *st, const char *job_id, int64_t at,
				   const char *request_id, bool new_effect, const char *actor,
				   const char *reason, pal_run_result *res, char *err,
				   size_t errlen);

typedef struct pal_backfill_result {
	int64_t instants;  /* instants in [from, to] */
	int64_t excluded;  /* of which on excluded calendar dates (not planned) */
	int64_t rows;      /* trigger rows wanted (instants x partitions) */
	int64_t inserted;  /* rows inserted now (conflicts with an earlier run excluded) */
	int64_t unknown;   /* instants with an unknown outcome run again (NEW_EFFECT) */
	char refused[24];  /* PAL_ESTALE: "unknown-outcome", "scheduled-instant" or
			      "job-retired" */
	int64_t ran;       /* a ticket's backfill: rows left out, their (instant, partition)
			      ran or is to run (pal__ops_backfill_in_tx UNRUN_ONLY) */
} pal_backfill_result;

/*
 * Backfill JOB_ID: every instant in [FROM, TO] (epoch seconds, inclusive)
 * computed from the stored versions (each version for its effective_from
 * range; before any effective_from the latest version), times partitions,
 * inserted as source 'backfill' with REQUEST_ID, ON CONFLICT DO NOTHING,
 * with an audit row counting them.  PAL_ETOOBIG (nothing written) when more
 * than MAX instants; PAL_ENOENT when the job does not exist; PAL_EINVAL
 * when TO is after the database clock (the scheduler runs those instants).
 * PAL_ESTALE (res->refused says why, ERR names the instants) when the job
 * is retired, or when an instant of the backfill had a trigger whose
 * outcome is unknown (pal_store_unknown_in; those of REQUEST_ID do not
 * count), or lies before the retention horizon, or for a job with
 * `after` is one the dependency planner has not decided yet (refused
 * "scheduled-instant", as `trigger --at`), or when REQUEST_ID is
 * remembered in request_ids as a backfill's whose triggers retention
 * dropped, unless NEW_EFFECT.  PAL_EINVAL when REQUEST_ID is a manual
 * run's.  The request id is kept in request_ids (version 0).  The checks
 * and the inserts share one transaction.
 */
PAL_MUST_CHECK int pal_ops_backfill(pal_store *st, const char *job_id, int64_t from, int64_t to,
				    int64_t max, const char *request_id, bool new_effect,
				    const char *actor, const char *reason,
				    pal_backfill_result *res, char *err, size_t errlen);

/* ---- tickets --------------------------------------------------------------- */

/* Tickets as a JSON array (json_decref), newest first: open ones, or all
 * with ALL.  Fields: id state job_id trigger_id trigger_state reason
 * evidence allowed_actions resolution actor created_at resolved_at. */
PAL_MUST_CHECK int pal_ops_tickets_json(pal_store *st, bool all, json_t **out, char *err,
					size_t errlen);
/* One ticket (same fields) into *out; PAL_ENOENT when there is none. */
PAL_MUST_CHECK int pal_ops_ticket_json(pal_store *st, int64_t id, json_t **out, char *err,
				       size_t errlen);

typedef struct pal_resolve_result {
	char trigger_state[16]; /* the ticket's trigger after the action ("" if none) */
	pal_backfill_result backfill; /* action backfill */
	char allowed[256];      /* PAL_EINVAL for a disallowed action: the allowed ones */
	char state[16];         /* PAL_ESTALE: what was found ("resolved", trigger state) */
} pal_resolve_result;

/*
 * Resolve ticket ID with ACTION (retry, mark_succeeded, abandon, backfill),
 * in one transaction with conditional updates:
 *   retry           trigger manual -> pending (same trigger, same key)
 *   mark_succeeded  trigger manual -> succeeded
 *   abandon         trigger manual -> failed; a job-level ticket is only resolved
 *   backfill        misfire ticket: backfill its evidence range (request id
 *                   "ticket-ID", so a repeat inserts nothing; at most MAX instants)
 * EVIDENCE (JSON text or NULL), REASON and ACTOR are stored in the ticket's
 * evidence under "resolution"; the ticket becomes resolved.
 * PAL_ENOENT no such ticket; PAL_EINVAL action not allowed (res->allowed);
 * PAL_ESTALE ticket already resolved or its trigger not in 'manual'
 * (res->state); PAL_ETOOBIG backfill over MAX.  Nothing is written on error.
 */
PAL_MUST_CHECK int pal_ops_ticket_resolve(pal_store *st, int64_t id, const char *action,
					  const char *evidence, int64_t max, const char *actor,
					  const char *reason, pal_resolve_result *res, char *err,
					  size_t errlen);

/* ---- trigger listing ------------------------------------------------------- */

/* Triggers of JOB_ID (NULL: all jobs, or those of TENANT's jobs when
 * TENANT is set), optionally in STATE and scheduled at or after SINCE and
 * before UNTIL (PAL_OPS_NOW: no bound), only the one of id TRIGGER_ID when
 * it is above 0 (with JOB_ID NULL), newest first, at most LIMIT, as a
 * JSON array (json_decref).  Fields: id job_id version scheduled_at
 * partition source request_id state fence lease_owner lease_until
 * attempt_count last_error_class.  PAL_ENOENT when JOB_ID names no job. */
PAL_MUST_CHECK int pal_ops_triggers_json(pal_store *st, const char *job_id, const char *tenant,
					 const char *state, int64_t since, int64_t until,
					 int64_t trigger_id, int limit, json_t **out, char *err,
					 size_t errlen);


#endif
