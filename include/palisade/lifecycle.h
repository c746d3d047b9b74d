/*
 * lifecycle.h - a job's life after apply: retiring (`palisade delete`,
 * `apply --prune`), the gates job files close (`suspend: true`), and the
 * read commands of the operator (attempts, gates, misfires, audit, retired
 * jobs).  SQL in src/store/apply_retire.c (retiring, inside an apply
 * transaction), src/store/gates.c (the gates) and src/store/lifecycle.c
 * (the rest); docs/operations.md describes the commands.
 */
#ifndef PALISADE_LIFECYCLE_H
#define PALISADE_LIFECYCLE_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <jansson.h>
#include "palisade/err.h"
#include "palisade/ops.h"
#include "palisade/store.h"

/* ---- retiring ------------------------------------------------------------- */

typedef enum { PAL_RETIRE_RETIRED, PAL_RETIRE_ALREADY, PAL_RETIRE_NOT_FOUND } pal_retire_outcome;

typedef struct pal_retire_result {
	pal_retire_outcome outcome;
	int version;       /* retired: the retiring version; already: the latest */
	int64_t end;       /* retired: where its schedule ends (epoch seconds) */
	int64_t cancelled; /* retired: pending/retry_wait/paused triggers cancelled */
} pal_retire_result;

/*
 * Retire IDS[0..n) inside apply transaction A (pal_store_apply_begin): per
 * live job, version n+1 = its latest spec with schedule.end at the database
 * clock (rounded up to the second; never before its start), so that no
 * controller plans an instant at or after it; jobs.retired_at set; its
 * pending, retry_wait and paused triggers cancelled with one audit row
 * (action cancel, the trigger ids) and the version audited as job.retire.
 * Running triggers finish on their own.  History stays.  RES[i] for
 * IDS[i]; unknown ids and retired ones are reported, not errors.  Re-applying
 * a retired job stores version n+2 and clears retired_at.
 */
PAL_MUST_CHECK int pal_store_apply_retire(pal_apply *a, const char *const *ids, size_t n,
					  pal_retire_result *res, char *err, size_t errlen);

/* Wait for the statement apply left in flight (so that the connection can
 * serve another query inside the apply transaction). */
PAL_MUST_CHECK int pal_store_apply_sync(pal_apply *a, char *err, size_t errlen);

/* After the commit: cancel (and audit) the not-yet-claimed triggers of the
 * retired jobs among IDS that a controller planned from the old version
 * before it took the retiring version in.  *cancelled counts them. */
PAL_MUST_CHECK int pal_store_retire_sweep(pal_store *st, const char *const *ids, size_t n,
					  const char *actor, const char *reason,
					  int64_t *cancelled, char *err, size_t errlen);

/* After pal_store_apply_commit on ST, as `delete` does after its commit:
 * the jobs whose new version took over at the apply (its `end` reached, a
 * one-shot, or a one-shot before it: docs/jobs.md), whose old rows the
 * apply's transaction cancelled, are waited for up to WAIT_MS, polled
 * every 200 ms, until the controllers that plan their shards (shard row
 * touched in the last 10 s) have activated their latest version; then
 * the rows a controller planned from the old version meanwhile are
 * cancelled with the apply's criteria and audited as its own sweep
 * (*cancelled counts them).  *pending is how many had not been taken in
 * when the wait ran out.  Nothing to do (0, 0) after an apply that cut
 * nothing, or when called twice. */
PAL_MUST_CHECK int pal_store_apply_settle(pal_store *st, const char *actor, const char *reason,
					  int64_t wait_ms, int64_t *cancelled, int64_t *pending,
					  char *err, size_t errlen);

/* Whether the last apply committed on ST left jobs for
 * pal_store_apply_settle. */
bool pal_store_apply_took_over(const pal_store *st);

/* The first job of apply A (in the order stored, followers included) whose
 * new version takes over at the apply, as pal_store_apply_settle's jobs
 * (its `end` reached, a one-shot or a one-shot before it, a retired job
 * applied again), or NULL when none.  The apply cancels what the old
 * version planned after the apply, counting on the controller to activate
 * the new version at the apply; a controller of 0.3.0 (schema 41) or
 * older activates it at its shard's watermark, so an instant of the new
 * version between the two would never be planned.  Such an apply is
 * committed only while every live node runs a binary of schema
 * PAL_SCHEMA_TAKEOVER or later (`palisade apply`, POST /api/v1/apply: the
 * older nodes named, exit 4 or 409 older-nodes; docs/upgrades.md), WHAT
 * the words of the refusal, PAL_TAKEOVER_WHAT the format with the job. */
const char *pal_store_apply_takeover_job(const pal_apply *a);
#define PAL_SCHEMA_TAKEOVER 42
#define PAL_TAKEOVER_WHAT                                                                          \
	"job %s takes over at its apply (a one-shot moved or changed, no instant after the "       \
	"apply, or a retired job applied again: its old rows after the apply are cancelled)"

/* How many of the retired jobs among IDS have a latest (retiring) version
 * not activated yet on a shard that a controller plans now (its shard row
 * touched in the last 10 s): those a controller may still plan from the
 * old version until it takes the new one in. */
PAL_MUST_CHECK int pal_store_retire_pending(pal_store *st, const char *const *ids, size_t n,
					    int64_t *pending, char *err, size_t errlen);

/* Ids of every live (not retired) job, as a JSON array of strings. */
PAL_MUST_CHECK int pal_store_live_job_ids(pal_store *st, json_t **out, char *err,
					  size_t errlen);

/* What `apply --prune` / `--prune-prefix PREFIX` retires: the live jobs
 * DEFINED (called with CTX and the id) says no file defines, appended to
 * GONE (a JSON array of ids).  With PREFIX only the ids of its whole
 * dot-separated segments: the id PREFIX itself and those beginning with
 * PREFIX and a '.' (a '.' ending PREFIX is that one), so `host-a.` takes
 * neither `host-ab.x` nor, from a crontab import, `host-a-root.x`; and the
 * jobs a cut-over made or makes palisade's (in a shadow scope whose steps,
 * planned ones included, make them live: their entries are gone from the
 * old system) go to KEPT instead, not to GONE. */
PAL_MUST_CHECK int pal_store_prune_ids(pal_store *st, const char *prefix,
				       bool (*defined)(void *ctx, const char *id), void *ctx,
				       json_t *gone, json_t *kept, char *err, size_t errlen);

/* ---- gates of job files ---------------------------------------------------- */

/* Job-scope gates as {job_id: source} ("operator" or "spec"). */
PAL_MUST_CHECK int pal_store_job_gates(pal_store *st, json_t **out, char *err, size_t errlen);

/*
 * The gate of job JOB_ID closed or lifted because its job file says
 * `suspend: true` (or no longer does): the same gate, the same effect on
 * triggers and the same audit rows as pal_ops_pause / pal_ops_resume, with
 * source 'spec'.  Suspend leaves an existing gate as it is (res->was_paused;
 * an operator's pause stays the operator's); unsuspend deletes the gate
 * only while its source is 'spec' (res->had_gate false otherwise).  Both
 * run inside the transaction open on ST (apply's, after its last chunk:
 * the gates lock is then held only until its commit), so a job created
 * with `suspend: true` is never claimable, not even for an instant.
 * Unsuspend releases what the gate held as pal_ops_resume does, with OPTS.
 */
PAL_MUST_CHECK int pal_ops_suspend(pal_store *st, const char *job_id, const char *actor,
				   const char *reason, pal_pause_result *res, char *err,
				   size_t errlen);
PAL_MUST_CHECK int pal_ops_unsuspend(pal_store *st, const char *job_id, const char *actor,
				     const char *reason, const pal_resume_opts *opts,
				     pal_resume_result *res, char *err, size_t errlen);

/*
 * The gates of `suspend` for the apply AP in flight on ST (the connection it
 * runs on), just before its commit: close the gate (pal_ops_suspend) of each
 * job of SUSPENDED (a JSON array of ids: the jobs whose file says suspend:
 * true) that has none, and lift the 'spec' gate (pal_ops_unsuspend) of each
 * job that DEFINED(CTX, ID) says the files define and that is not in
 * SUSPENDED, releasing what its gate held with RESUME.  The ids go to CLOSED
 * and LIFTED (JSON arrays, appended).  On an error AP is aborted (nothing
 * stored) and the code returned.
 */
PAL_MUST_CHECK int pal_store_apply_spec_gates(pal_apply *ap, pal_store *st, const json_t *suspended,
					      bool (*defined)(void *ctx, const char *id), void *ctx,
					      const char *actor, const pal_resume_opts *resume,
					      json_t *closed, json_t *lifted, char *err,
					      size_t errlen);

/* ---- reading --------------------------------------------------------------- */

/* Attempts of trigger ID, oldest first: [{id fence node claimed_at ended_at
 * idempotency_key outcome error_class http_status duration_ms}].
 * PAL_ENOENT when the trigger does not exist. */
PAL_MUST_CHECK int pal_store_attempts_json(pal_store *st, int64_t trigger_id, json_t **out,
					   char *err, size_t errlen);
/* Gates: [{scope paused reason actor since source}] by scope. */
PAL_MUST_CHECK int pal_store_gates_json(pal_store *st, json_t **out, char *err, size_t errlen);
/* Notify rules (docs/jobs.md, "Notify rules"): [{scope name url events
 * secret updated_by updated_at}] by scope (group first), name and url; the
 * secret is the stored ${NAME} reference. */
PAL_MUST_CHECK int pal_store_notify_rules_json(pal_store *st, json_t **out, char *err,
					       size_t errlen);
/* Misfire rows of JOB_ID (NULL: all) whose range overlaps [FROM, TO]
 * (PAL_OPS_NOW: open), newest first, at most LIMIT: [{id job_id version
 * partition range_from range_to count policy reason decided_at}].
 * PAL_ENOENT when JOB_ID names no job. */
PAL_MUST_CHECK int pal_store_misfires_json(pal_store *st, const char *job_id, int64_t from,
					   int64_t to, int limit, json_t **out, char *err,
					   size_t errlen);
/* Audit rows at or after SINCE and before UNTIL (PAL_OPS_NOW: no bound)
 * of ACTOR, ACTION and SCOPE (NULL: any), newest first, at most LIMIT:
 * [{id at actor role client action scope reason details}]. */
PAL_MUST_CHECK int pal_store_audit_json(pal_store *st, int64_t since, int64_t until,
					const char *actor, const char *action, const char *scope,
					int limit, json_t **out, char *err, size_t errlen);
/* The audit log's hash chain recomputed (palisade_audit_verify):
 * {checked first_seq last_seq problem seq id missing_from missing_to};
 * problem null: the chain is whole. */
PAL_MUST_CHECK int pal_store_audit_verify_json(pal_store *st, json_t **out, char *err,
					       size_t errlen);
/* Retired jobs: [{job_id tenant group latest_version retired_at owner
 * description}], by job id. */
PAL_MUST_CHECK int pal_store_retired_json(pal_store *st, json_t **out, char *err, size_t errlen);
/* Owner and description of every job (JOB_ID NULL) or one: {job_id:
 * {owner, description, retired_at}}. */
PAL_MUST_CHECK int pal_store_job_meta_json(pal_store *st, const char *job_id, json_t **out,
					   char *err, size_t errlen);

/*
 * Whether a manual re-run of JOB_ID at AT (epoch seconds) could duplicate
 * an effect: triggers of the job scheduled at AT (any source) whose state
 * is unknown or manual, whose call is in flight (running, pausing,
 * cancelling), whose outcome_unknown is set, or with an attempt whose
 * outcome was unknown (its outcome unknown or manual, an error class of a
 * request that was sent and not answered: timeout_after_send,
 * reset_after_send, empty_reply, garbage_reply, in_progress) or that a
 * holder which lost its lease left open.  *out: [{trigger_id at partition
 * state source request_id outcome_unknown attempts [{fence outcome
 * error_class}]}] (empty when none), AT in epoch seconds.
 */
PAL_MUST_CHECK int pal_store_unknown_at(pal_store *st, const char *job_id, int64_t at,
					json_t **out, char *err, size_t errlen);
/* The same for the triggers of JOB_ID scheduled in [FROM, TO] (a backfill's
 * range), ordered by instant. */
PAL_MUST_CHECK int pal_store_unknown_in(pal_store *st, const char *job_id, int64_t from,
					int64_t to, json_t **out, char *err, size_t errlen);
/* The pause gates holding the triggers TRIGGER_IDS (a JSON array of ids)
 * still to be claimed (pending, retry_wait, unknown, paused): global, their
 * job's, and the group's and tenant's each row was written with, the test
 * the claim makes; as [{scope since reason}] by scope, [] when none (also
 * when every run ended or is running).  The triggers wait for their resume
 * (a manual run too). */
PAL_MUST_CHECK int pal_store_job_held_json(pal_store *st, const json_t *trigger_ids,
					   json_t **out, char *err, size_t errlen);
/* Whether JOB_ID is retired (*retired); PAL_ENOENT when it does not exist. */
PAL_MUST_CHECK int pal_store_job_retired(pal_store *st, const char *job_id, bool *retired,
					 char *err, size_t errlen);

#endif
