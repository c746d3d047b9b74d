/*
 * planbatch.h - the values that pass between the store and the controller's
 * planner: a job version as the planner needs it (typed columns of
 * job_versions, no spec JSON), and the batch one planning tick writes.
 *
 * This header sits below both src/store and src/controller: the store fills
 * pal_plan_version rows from a shard load and writes pal_plan_batch in the
 * fenced tick transaction; the planner (planner.h) consumes the one and
 * produces the other.  Nothing here does I/O.
 *
 * Times are int64 seconds since the epoch (UTC).  PAL_NO_TIME marks "none".
 */
#ifndef PALISADE_PLANBATCH_H
#define PALISADE_PLANBATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "palisade/cron.h"
#include "palisade/jobspec.h"

#define PAL_NO_TIME INT64_MIN

/*
 * One stored version of a job: what planning needs of it and nothing more.
 * Strings and the exclusion array are borrowed (from a result row, or from
 * a pal_job_spec): valid only for the call they are handed to; the planner
 * copies (or shares) what it keeps.  In a version-list-only load (a reload's
 * first pass) only version and effective_from are set, the rest is zero.
 */
typedef struct pal_plan_version {
	int version;
	int64_t effective_from; /* PAL_NO_TIME when not activated yet */
	const char *cron, *timezone;
	pal_dst_policy dst;
	bool has_start, has_end;
	int64_t start, end; /* UTC; start inclusive, end exclusive */
	const pal_exclusion *exclusions;
	size_t n_exclusions;
	const pal_calendar *calendars; /* the shared calendars it names */
	size_t n_calendars;
	pal_misfire_policy misfire;
	int64_t catchup_window_ms;
	int32_t max_catchup;
	int32_t partitions;
	int32_t priority;
	const char *tenant, *group;
	int32_t job_ref; /* its job's jobs.ref; 0: none yet (the database fills it) */
	/* when the version was stored (the apply's transaction time), read for
	 * a version awaiting activation only; PAL_NO_TIME otherwise */
	int64_t created_at;
} pal_plan_version;

/* VERSION's planning fields borrowed from spec S (tests, benches, verify). */
pal_plan_version pal_plan_version_of_spec(const pal_job_spec *s, int version,
					  int64_t effective_from);

typedef enum { PAL_SOURCE_SCHEDULE, PAL_SOURCE_CATCHUP } pal_plan_source;

/* What the triggers of one job version in a batch share (written once per
 * version, not once per trigger row). */
typedef struct pal_plan_jobref {
	const char *job_id; /* points into the planner; valid until the next put/remove */
	int version;
	int priority;
	const char *tenant, *group; /* point into the planner, like job_id */
	int32_t job_ref;	    /* jobs.ref; 0: none yet */
} pal_plan_jobref;

typedef struct pal_plan_trigger {
	const char *job_id; /* points into the planner; valid until the next put/remove */
	int version;
	int64_t at;
	int64_t nominal; /* the nominal instant spread or jitter moved to AT; AT when none */
	int partition;
	pal_plan_source source;
	int priority;
	const char *tenant, *group; /* point into the planner, like job_id */
	uint32_t ref;		    /* its job version in pal_plan_batch.refs */
	/* planned by a version that took over below the watermark (a one-shot,
	 * or after a version that ended): an older version's `excluded` record
	 * of AT, written when that version passed it, is dropped in the tick */
	bool fresh;
} pal_plan_trigger;

typedef struct pal_plan_misfire {
	const char *job_id;
	int version;
	int64_t from, to; /* first and last instant of the range, inclusive */
	int count;        /* instants in the range (per partition) */
	const char *policy;
	const char *reason; /* missed, outside_window, over_max_catchup, excluded */
	/* excluded by a shared calendar: its name (borrowed from the job's
	 * schedule, valid for the tick) and version; NULL otherwise */
	const char *calendar;
	int calendar_version;
} pal_plan_misfire;

typedef struct pal_plan_activation {
	const char *job_id;
	int version;
	int64_t effective_from;
} pal_plan_activation;

typedef struct pal_plan_ticket {
	const char *job_id;
	int version;
	int64_t from, to;
	int count;
} pal_plan_ticket;

/* A job whose planning failed in the tick (anything but running out of
 * memory: a bug, a value its schedule cannot handle, an injected fault).  It
 * has no other row in the batch; the tick's transaction quarantines it
 * (its first instant not planned: SINCE, the tick's committed watermark). */
typedef struct pal_plan_failed {
	const char *job_id; /* points into the planner, like the others */
	int64_t since;      /* PAL_NO_TIME: the shard had no watermark yet */
	char error[256];
} pal_plan_failed;

typedef struct pal_plan_batch {
	pal_plan_trigger *trig;
	size_t n_trig, cap_trig;
	pal_plan_jobref *refs; /* the job versions trig[].ref points at */
	size_t n_refs, cap_refs;
	pal_plan_misfire *mis;
	size_t n_mis, cap_mis;
	pal_plan_activation *act;
	size_t n_act, cap_act;
	pal_plan_ticket *tick;
	size_t n_tick, cap_tick;
	pal_plan_failed *failed; /* jobs left out of the tick, to quarantine */
	size_t n_failed, cap_failed;
	int64_t watermark; /* the new watermark to store */
	bool complete;     /* false when max_rows_per_tick cut the tick short */
} pal_plan_batch;

/* Free the arrays of B (not B itself) and zero it. */
void pal_plan_batch_free(pal_plan_batch *b);

#endif
