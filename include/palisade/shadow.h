/*
 * shadow.h - shadow runs, staged cut-over and roll-back of a scope
 * (src/store/shadow.c, docs/migrating.md).  A job in shadow is planned
 * into triggers in the state 'shadow', which no claim takes; a cut-over
 * makes a stable share of a scope's jobs live from an instant on; a
 * roll-back puts the scope back in shadow and hands its unfinished
 * triggers back.  Each call is one transaction holding the shadow tables'
 * lock, which a planning insert waits for, so no tick plans an instant
 * with the rules of before and commits after the change.
 */
#ifndef PALISADE_SHADOW_H
#define PALISADE_SHADOW_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include "palisade/err.h"
#include "palisade/ops.h"
#include "palisade/store.h"

/* Into JOB a job of scope SC, not retired, whose version in force or a
 * later one has spread or jitter ("ID"), or follows (`after:`, first) a job
 * that has ("ID, after UPSTREAM,"); "" when none. */
PAL_MUST_CHECK int pal_store_scope_moving_job(pal_store *st, const pal_scope *sc, char *job,
					      size_t len, char *err, size_t errlen);

/* Put SC in shadow (`palisade shadow`): from now on its instants are
 * planned shadow (those before now keep the rule they had: live, for a
 * live scope), its planned schedule triggers of those instants not yet
 * attempted move to shadow, and the first attempts claimed ahead of their
 * instant are asked to pause (as a roll-back does); it waits for those to
 * reach their instant (at most 12 s) and moves the ones handed back
 * without a call to shadow.  Into *OUT (json_decref) the answer {scope,
 * already (SC was in shadow before: nothing changed), live_percent (its
 * cut-over so far), since (RFC 3339: the first second of the scope's
 * shadow), moved, handed_back, in_flight: every unfinished trigger of the
 * scope that is not shadow - a call in flight, a retry, a paused one, a
 * due instant still waiting, an unknown outcome, a manual one - which
 * palisade finishes, as pal_store_unfinished_json()'s rows}.  Audited
 * (shadow). */
PAL_MUST_CHECK int pal_store_shadow_set_json(pal_store *st, const pal_scope *sc, const char *actor,
					     const char *reason, json_t **out, char *err,
					     size_t errlen);

/* The jobs whose file says `mode: shadow`, inside the caller's open
 * transaction (apply's, before its commit).  IDS (a JSON array of ids): the
 * jobs this apply creates or brings back from retirement; each not in
 * shadow yet gets its shadow row (source spec) and its planned schedule
 * triggers not yet attempted move to shadow.  LIVE: those that were live
 * before the apply; `mode: shadow` never puts them in shadow (palisade may
 * be the only system that runs them: `palisade shadow --job` does it on
 * purpose); those of them not in shadow are appended to *IGNORED.
 * *ADDED: the jobs put in shadow now that no cut-over step makes live;
 * *COVERED: those put in shadow now that a cut-over step already taken
 * (of their group, tenant or the whole cluster) makes live, one object
 * each {job_id, live_from (RFC 3339), now (live_from is not after the
 * transaction's start)}.  The caller makes the three arrays.  Apply never
 * takes a job out of shadow: a cut-over does. */
PAL_MUST_CHECK int pal_store_shadow_spec(pal_store *st, const json_t *ids, const json_t *live,
					 const char *actor, json_t *added, json_t *ignored,
					 json_t *covered, char *err, size_t errlen);

/* Every scope in shadow with its cut-over steps: [{scope, source, actor,
 * reason, since, percent (the latest step's, 0 without), steps: [{at,
 * percent, actor, reason}]}]. */
PAL_MUST_CHECK int pal_store_shadow_list_json(pal_store *st, json_t **out, char *err,
					      size_t errlen);

/* The stop lines of a scope's last step, over [since, now]: open tickets,
 * the oldest pending trigger's age, stale-token rejections against the
 * same length of time before SINCE.  JSON {open_tickets, oldest_pending_s,
 * fenced, fenced_baseline, since}. */
PAL_MUST_CHECK int pal_store_stoplines_json(pal_store *st, const pal_scope *sc, json_t **out,
					    char *err, size_t errlen);

typedef struct pal_cutover_result {
	int previous_percent;	 /* the scope's latest step before this one (0: none) */
	int64_t previous_at;	 /* its instant, PAL_OPS_NOW when none */
	int64_t jobs, live_jobs; /* the scope's jobs, and those live from AT on */
	int64_t moved;		 /* planned shadow triggers at or after AT made pending */
	/* the chains (`after:`) touching SC that the step leaves split at AT,
	 * one side live and the other shadow: [{job, upstream, job_live}],
	 * owned by the caller (json_decref) */
	json_t *split;
	/* the ids of the scope's jobs, not retired, that are shadow at AT
	 * without the step and live with it, sorted: the jobs to take out of
	 * the old system at AT; owned by the caller (json_decref) */
	json_t *made_live;
} pal_cutover_result;

/* Make the jobs of SC whose bucket is below PERCENT live from AT on (at
 * least now): a cut-over step, and the shadow triggers already planned at
 * or after AT for them made pending (not those of a retired job).  PAL_EINVAL when PERCENT does not
 * widen the scope's latest step (narrowing is a roll-back) or AT is before
 * that step's instant (the last step taken governs), PAL_ENOENT
 * when no job of SC is in shadow.  Audited (cutover).  The caller checks
 * the stop lines first.  With DRY_RUN the same transaction is rolled back:
 * RES says what the step would do, and nothing changes.  RES is zeroed
 * first, so after an error too its SPLIT and MADE_LIVE are the caller's to
 * json_decref (NULL unless filled before the error). */
PAL_MUST_CHECK int pal_store_cutover(pal_store *st, const pal_scope *sc, int percent, int64_t at,
				     const char *actor, const char *reason, bool dry_run,
				     pal_cutover_result *res, char *err, size_t errlen);

/* Put SC back in shadow from now on (`palisade rollback`): a step of 0 %,
 * a shadow row for SC when it had none, its schedule triggers that wait
 * (pending, retry_wait, paused) moved to shadow and those claimed ahead of
 * their instant asked to pause, but for jobs another scope keeps live;
 * *AT the later of the database's now and the last instant of SC's calls
 * in flight, *handed_back the waiting ones up to *AT, *later the ones
 * after.  Audited (rollback).  pal_store_rollback_json() is the whole
 * command. */
PAL_MUST_CHECK int pal_store_rollback(pal_store *st, const pal_scope *sc, const char *actor,
				      const char *reason, int64_t *handed_back, int64_t *later,
				      int64_t *at, char *err, size_t errlen);

/* `palisade rollback` whole: pal_store_rollback(), then up to WAIT_MS for
 * the scope's calls in flight to finish, reach a safe point or be handed
 * back (blocks, polling every 200 ms), what they left waiting up to AT
 * moved to shadow as well, the dependent instants (`after`) of the calls
 * still in flight planned shadow, handed back (the old system's chain runs
 * them; not one palisade decided already: planned, or an upstream_late or
 * upstream_failed misfire), then the unfinished triggers up to AT with the
 * key each one's calls send, into *OUT (json_decref) as the `rollback
 * --output json` object {scope, at, handed_back, later, in_flight,
 * unfinished: pal_store_unfinished_json()'s rows}: every instant of the
 * scope up to AT was called by palisade or is listed, and none after AT is
 * called by palisade. */
PAL_MUST_CHECK int pal_store_rollback_json(pal_store *st, const pal_scope *sc, const char *actor,
					   const char *reason, int64_t wait_ms, json_t **out,
					   char *err, size_t errlen);

/* The ids of the jobs of SC, as a JSON array of strings. */
PAL_MUST_CHECK int pal_store_scope_jobs_json(pal_store *st, const pal_scope *sc, json_t **out,
					     char *err, size_t errlen);

/* Triggers of SC still running (running, pausing, cancelling). */
PAL_MUST_CHECK int pal_store_scope_in_flight(pal_store *st, const pal_scope *sc, int64_t *n,
					     char *err, size_t errlen);

/* What a roll-back hands back: the scope's triggers due by BEFORE and
 * unfinished - shadow ones a roll-back moved (never called, or waiting for
 * a retry; the move marks them, last_error_class 'rolled_back'), and
 * running, unknown and manual ones - as [{id, job_id,
 * scheduled_at, partition, state, idempotency_key, last_outcome: {outcome,
 * error_class, http_status} | null, unknown_outcome, in_flight, attempts}],
 * the instant ascending; the key as the trigger's calls send it (the last
 * attempt's, else rendered from the version's template). */
PAL_MUST_CHECK int pal_store_unfinished_json(pal_store *st, const pal_scope *sc, int64_t before,
					     json_t **out, char *err, size_t errlen);

#endif
