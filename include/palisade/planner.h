/*
 * planner.h - the in-memory schedule of one led shard and the decisions of a
 * planning tick (docs/controller.md), without any I/O.
 *
 * The controller owns one pal_planner per shard it leads.  Jobs sit in a
 * min-heap keyed by their next unplanned instant, so a tick touches only the
 * jobs due before the horizon: O(due instants · log n), idle jobs cost
 * nothing.  A tick is *tentative*: pal_planner_tick() fills a batch without
 * changing the planner; the controller writes the batch in one fenced
 * transaction and then calls pal_planner_commit() (or nothing, on failure,
 * and the same instants come out of the next tick again).
 *
 * Times are int64 seconds since the epoch (UTC).  PAL_NO_TIME marks "none".
 *
 * Memory: a job holds its id, its cursors and per version a compact record
 * (schedule, policy numbers, interned tenant and group); schedules are
 * shared process-wide (pal_schedule_acquire), tenants and groups per
 * planner.  No spec is kept.
 *
 * The batch and version types live in planbatch.h, below the store.
 *
 * Versions: instant t of a job belongs to the version v with
 * effective_from(v) < t <= effective_from(v+1).  A version whose
 * effective_from is not yet known is activated by the next tick: at the
 * shard watermark when the job had an active version (it applies only to
 * instants not yet planned), at "now" for a brand-new job.
 *
 * Misfires: an instant later than the committed watermark W and at or
 * before now - misfire_threshold was never planned in time; the job's policy
 * decides (fire_all / fire_once / skip / manual) and every instant not
 * planned is reported as a misfire range.  Instants on excluded dates are
 * reported with reason "excluded".
 */
#ifndef PALISADE_PLANNER_H
#define PALISADE_PLANNER_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <glib.h>
#include "palisade/err.h"
#include "palisade/planbatch.h"

typedef struct pal_planner pal_planner;

typedef struct pal_planner_config {
	int64_t overlap_s;           /* re-scan below the watermark when (re)loading */
	int64_t lookahead_s;         /* plan up to now + lookahead */
	int64_t misfire_threshold_s; /* older unplanned instants are misfires */
	int max_rows_per_tick;       /* cap on trigger rows per tick (rest next tick) */
	/* cap on activations of brand-new jobs with no instant by the horizon
	 * (the rest wait for later ticks); <= 0: PAL_PLANNER_ACTIVATIONS_PER_TICK */
	int max_activations_per_tick;
	/* test only: planning this job fails in every tick, as a bug in its
	 * planning would (the controller's PALISADE_FAULT_PLAN_JOB); borrowed,
	 * must outlive the planner; NULL: none.  A new config without one
	 * keeps the old one. */
	const char *fault_job;
} pal_planner_config;

#define PAL_PLANNER_ACTIVATIONS_PER_TICK 1000

/* New planner for SHARD; free with pal_planner_free(). NULL on ENOMEM. */
pal_planner *pal_planner_new(int shard, const pal_planner_config *cfg);
void pal_planner_free(pal_planner *p);
int pal_planner_shard(const pal_planner *p);
/* Replace the configuration (a reload); takes effect at the next tick. */
void pal_planner_set_config(pal_planner *p, const pal_planner_config *cfg);
size_t pal_planner_jobs(const pal_planner *p);
/* The shard's last fenced write before this leader claimed it was at
 * LAST_WRITE (PAL_NO_TIME: unknown): a previous leader's ticks saw no job
 * stored after it.  Before the first put. */
void pal_planner_inherit(pal_planner *p, int64_t last_write);

/*
 * Add or replace job JOB_ID with VERSIONS[0..n) (ascending by version; they
 * are borrowed: the planner copies what it keeps).
 * WATERMARK is the shard's committed watermark (PAL_NO_TIME if none): the
 * job resumes planning at watermark - overlap (re-inserting what is already
 * planned is harmless: the plan key is unique).  Returns PAL_EINVAL with a
 * message when a version's cron or zone cannot be opened; the job loaded
 * before, if any, is then kept unchanged.  A brand-new job stored (its
 * first version's created_at) at or before the time given to
 * pal_planner_inherit() is activated as of when it was stored (a previous
 * leader may have seen it: docs/controller.md); any other one as of the
 * first tick that sees it, which a brand-new job replacing a waiting one
 * (applied again) keeps.
 *
 * A (job_id, version) pair names one immutable spec, as job_versions rows
 * do: when the job is loaded with the same versions and activations
 * (pal_planner_job_current()) the put keeps it as it is, but for a job
 * reference it was loaded without (0: the job had no jobs.ref yet) and
 * VERSIONS now carry, which it takes in place; versions it already had keep
 * their schedules.
 * O(versions) besides opening new schedules.
 */
PAL_MUST_CHECK int pal_planner_put_job(pal_planner *p, const char *job_id,
				       const pal_plan_version *versions, size_t n, int64_t watermark,
				       char *err, size_t errlen);

/*
 * True when job JOB_ID is loaded with exactly VERSIONS[0..n), compared by
 * version number and effective_from (specs are not looked at and may be
 * empty), and no version was loaded without the job reference VERSIONS
 * carry: a put of them would change nothing, so a reload can skip reading
 * their specs.  O(n).
 */
bool pal_planner_job_current(const pal_planner *p, const char *job_id,
			     const pal_plan_version *versions, size_t n);

/* Remove job JOB_ID if loaded (O(log n)); drops a tick not yet committed. */
void pal_planner_remove_job(pal_planner *p, const char *job_id);

/*
 * Compute the tick at database time NOW given committed WATERMARK: every
 * instant up to now + lookahead not planned yet.  Fills BATCH (emptied
 * first; reuse it across ticks) without changing P.
 *
 * One job's failure is that job's alone: when planning a job fails for any
 * reason but PAL_ENOMEM, the job's rows are taken back out of the batch,
 * its cursor stays where it was, and it is listed in batch->failed (with
 * the error) for the controller to quarantine in the tick's transaction;
 * every other job is planned as usual and the tick returns PAL_OK.  Only
 * PAL_ENOMEM fails the whole tick.
 */
PAL_MUST_CHECK int pal_planner_tick(pal_planner *p, int64_t watermark, int64_t now,
				    pal_plan_batch *batch);

/* BATCH (from the last tick) is committed: advance the schedule. */
void pal_planner_commit(pal_planner *p, const pal_plan_batch *batch);

/*
 * While HOLD, ticks activate no brand-new job without an instant by the
 * horizon (the ones max_activations_per_tick spreads over ticks): they
 * only plan.  The controller holds them for the first ticks of shards
 * claimed together, so that every shard plans before any spends its tick
 * on bookkeeping.  What is planned does not change (a deferred job is
 * activated as of the tick that first saw it).
 */
void pal_planner_hold_deferred(pal_planner *p, bool hold);

/* Versions waiting for activation (O(1)): a tick with none skips looking. */
size_t pal_planner_pending(const pal_planner *p);

/*
 * Quarantine (a job whose planning failed): pal_planner_quarantine() flags
 * JOB_ID and, when called between a tick and its commit, takes the job out
 * of that tick (its cursor stays where it was; its rows were not written).
 * From then on every tick records the job's instants as misfires with
 * reason "quarantined" instead of planning them, until the flag is cleared.
 * pal_planner_set_quarantined() makes IDS[0..n) exactly the flagged jobs of
 * P (a reload after an operator's release).  PAL_ENOENT: not loaded.
 */
int pal_planner_quarantine(pal_planner *p, const char *job_id);
void pal_planner_set_quarantined(pal_planner *p, const char *const *ids, size_t n);
bool pal_planner_is_quarantined(const pal_planner *p, const char *job_id);

/*
 * Handoff (docs/controller.md, "Graceful handoff").  pal_planner_due_ids()
 * fills OUT with the ids (borrowed from P; valid until the next put or
 * removal) of every job whose first unplanned instant is at or before T,
 * and of every job with a version awaiting activation: after the last
 * committed tick, every other job has no instant in (watermark, T].
 * PAL_ETOOBIG when more than MAX qualify (OUT is then incomplete).
 * pal_planner_cap_horizon() makes ticks plan no later than T (PAL_NO_TIME:
 * no cap, the default): a successor that loaded only those jobs plans with
 * the cap until it has loaded the rest.
 */
PAL_MUST_CHECK int pal_planner_due_ids(const pal_planner *p, int64_t t, size_t max, GPtrArray *out);
void pal_planner_cap_horizon(pal_planner *p, int64_t t);

/*
 * Takeover.  A job put anew at a committed watermark W resumes at
 * W - overlap, but the leader before may have decided some of its instants
 * past that point: a tick that defers one job's catch-up (the row cap)
 * commits a watermark below the missed runs it decided for the jobs before
 * it.  Planting those instants again would run instants recorded as not
 * fired and record missed runs twice.  Before the first tick after such
 * puts, pal_planner_loaded_due() fills OUT with the ids (borrowed from P;
 * valid until the next put or removal) of the jobs put anew since the last
 * pal_planner_loaded_checked() that the tick at database time NOW would
 * plan (their next instant is by its horizon; quarantined ones are left
 * out), and returns false when no job was put anew (nothing to check).
 * The caller reads, for each, the latest instant above W - overlap that
 * has a trigger or a misfire row, passes it to pal_planner_resume_after()
 * (the job resumes after it; nothing when it is not past the job's
 * cursor), and then calls pal_planner_loaded_checked().  A job put anew
 * whose next instant lies past the horizon needs no check: an instant the
 * leader before decided past W is at most its horizon, which the
 * successor's horizon passes.  Jobs loaded without a watermark are never
 * listed.  pal_planner_resume_after() returns PAL_ENOENT when JOB_ID is
 * not loaded; call it only between ticks (not between a tick and its
 * commit).
 */
bool pal_planner_loaded_due(const pal_planner *p, int64_t now, GPtrArray *out);
int pal_planner_resume_after(pal_planner *p, const char *job_id, int64_t decided);
void pal_planner_loaded_checked(pal_planner *p);
#endif
