/*
 * schedule.h - the fire instants of one job version: its cron expression in
 * its time zone under its DST policy, or a fixed interval (`every`), or one
 * instant (`at`); each moved by the job's spread offset and per-instant
 * jitter, clipped to [start, end), with calendar exclusions flagged.  Used by the controller to
 * plan and by `palisade plan diff` / `palisade verify` to recompute the plan set.
 *
 * A pal_schedule is immutable after pal_schedule_open() and safe to share.
 */
#ifndef PALISADE_SCHEDULE_H
#define PALISADE_SCHEDULE_H

#include <stdbool.h>
#include <stdint.h>
#include "palisade/err.h"
#include "palisade/jobspec.h"
#include "palisade/planbatch.h"

typedef struct pal_schedule pal_schedule;

/*
 * The schedule text of spec S, the one line job_versions.cron holds and
 * pal_schedule_acquire() reads (pal_plan_version.cron): a cron job's
 * expression with `H` resolved for its id; for `every`, `at`, `spread` or
 * `jitter` a line starting "@palisade;" that no cron parser accepts (an
 * older release quarantines such a job rather than plan it wrongly).
 * *out is malloc'd (free); PAL_EINVAL with a message for a bad `H`.
 */
PAL_MUST_CHECK int pal_schedule_text(const pal_job_spec *s, char **out, char *err, size_t errlen);
/*
 * Jenkins' `H` in cron EXPR (single-blank separated) resolved for JOB_ID:
 * `H` a value of the field's range, `H/n` a start below n then every n,
 * `H(a-b)` and `H(a-b)/n` the same inside a-b; the day of month's range is
 * 1-28.  The value is pal_schedule_hash("H", JOB_ID, field index) modulo
 * the range: stable across nodes and re-applies.  An EXPR without H comes
 * back unchanged.  *out is malloc'd; PAL_EINVAL with a message.
 */
PAL_MUST_CHECK int pal_cron_resolve_hash(const char *expr, const char *job_id, char **out,
					 char *err, size_t errlen);
/* The first 8 bytes (big-endian) of SHA-256 of "TAG:JOB_ID:N": the one hash
 * of spread ("spread", N = 0), jitter ("jitter", N = the nominal instant)
 * and H ("H", N = the field index). */
uint64_t pal_schedule_hash(const char *tag, const char *job_id, int64_t n);

/* Build the schedule of spec S (copies what it needs; S may be freed after).
 * Fails with PAL_EINVAL / PAL_ENOENT and a message for a bad cron or zone.
 * Free with pal_schedule_close(). */
PAL_MUST_CHECK int pal_schedule_open(const pal_job_spec *s, pal_schedule **out, char *err,
				     size_t errlen);
void pal_schedule_close(pal_schedule *sc);
/*
 * The same on CRON (S's expression with `H` resolved; NULL unless S is a
 * cron job) and TZ (S's zone) that the caller compiled already and keeps
 * alive while the schedule lives: for the job loader, which asks when a job
 * fires (the instants pal_schedule_next() gives the planner, moved by spread
 * and jitter, inside [start, end)) for many jobs on a few crons and zones.
 * The shared calendars are left out: *excluded flags only the job's own
 * `exclude:` dates.  Close with pal_schedule_close().
 */
PAL_MUST_CHECK int pal_schedule_open_borrowed(const pal_job_spec *s, const pal_cron *cron,
					      const pal_tz *tz, pal_schedule **out, char *err,
					      size_t errlen);

/*
 * The schedule of planning version V, shared across the process: one
 * pal_schedule per distinct (cron, zone, DST policy, start, end, exclusions),
 * built on one compiled cron per distinct expression and one pal_tz per zone
 * name, so a million jobs in a few zones hold a few zones' tables, not a
 * million.  Reference-counted; release with pal_schedule_release() (never
 * pal_schedule_close()).  Thread-safe (one mutex around the tables).  Fails
 * like pal_schedule_open(); JOB_ID names the job in the message.
 */
PAL_MUST_CHECK int pal_schedule_acquire(const pal_plan_version *v, const char *job_id,
					pal_schedule **out, char *err, size_t errlen);
void pal_schedule_release(pal_schedule *sc);
/* The zone NAME from the same shared table (a TZif file read once per
 * process, not once per job): fails like pal_tz_open().  Release with
 * pal_zone_release(), never pal_tz_close(). */
PAL_MUST_CHECK int pal_zone_acquire(const char *name, const pal_tz **out, char *err, size_t errlen);
void pal_zone_release(const pal_tz *tz);
/* Distinct shared schedules, crons and zones alive (for tests and benches). */
void pal_schedule_shared_counts(size_t *schedules, size_t *crons, size_t *zones);

/*
 * Next instant strictly after AFTER that lies in [start, end).  *excluded is
 * set when the instant falls on an excluded local date or a shared calendar
 * excludes it (the caller records it
 * as a misfire with reason "excluded" instead of planning it).  PAL_ENOENT
 * when the schedule has no further instant.
 */
PAL_MUST_CHECK int pal_schedule_next(const pal_schedule *sc, int64_t after, int64_t *next,
				     bool *excluded);
/*
 * The same for a version activated at ANCHOR (its effective_from): an
 * `every` schedule without `start` counts its intervals from there.
 * PAL_NO_TIME (and pal_schedule_next) takes AFTER as the activation, which
 * is what a version not yet activated would do if activated now; callers
 * that walk such a schedule must pass one fixed anchor.
 */
PAL_MUST_CHECK int pal_schedule_next_from(const pal_schedule *sc, int64_t anchor, int64_t after,
					  int64_t *next, bool *excluded);
/* False for an `every` schedule without `start`: its instants depend on
 * the anchor. */
bool pal_schedule_fixed_anchor(const pal_schedule *sc);
/* True for a one-shot (`at`) schedule. */
bool pal_schedule_one_shot(const pal_schedule *sc);
/* The job's spread offset: every nominal instant moves by it (0: no spread). */
int64_t pal_schedule_offset(const pal_schedule *sc);

/*
 * The nominal instant of SC that fires at T (an instant pal_schedule_next_from()
 * gave for ANCHOR): T less the spread offset and T's jitter.  T itself for a
 * schedule without spread or jitter, and for a T no nominal instant fires at.
 */
int64_t pal_schedule_nominal(const pal_schedule *sc, int64_t anchor, int64_t t);
/* False when every instant of SC is its nominal instant (no spread offset,
 * no jitter): pal_schedule_nominal() is then the identity. */
bool pal_schedule_moves(const pal_schedule *sc);

/* The shared calendar that excludes instant T of SC (the first the job
 * names), or NULL when none does or the job's own `exclude:` dates do. */
const pal_calendar *pal_schedule_excluding(const pal_schedule *sc, int64_t t);

/*
 * Count the instants of SC in (AFTER, UNTIL] without visiting each one:
 * *count, and the first and last of them in *first / *last (PAL_NO_TIME
 * when none).  Exact for every cron, zone and DST policy; costs a few
 * hundred cron probes for a range of any length, plus a walk of a couple of
 * hours around each offset change of the zone inside the range.  Only for
 * a schedule without exclusions or jitter (pal_schedule_countable); PAL_EINVAL
 * otherwise.  Excluded or not, instants count the same as
 * pal_schedule_next() would return them.
 */
bool pal_schedule_countable(const pal_schedule *sc);
PAL_MUST_CHECK int pal_schedule_count(const pal_schedule *sc, int64_t after, int64_t until,
				      int64_t *count, int64_t *first, int64_t *last);
/* The same with the anchor of pal_schedule_next_from(). */
PAL_MUST_CHECK int pal_schedule_count_from(const pal_schedule *sc, int64_t anchor, int64_t after,
					   int64_t until, int64_t *count, int64_t *first,
					   int64_t *last);
#endif
