/*
 * plandiff.h - `plan diff`: how the next fire instants of a job would move
 * if a spec replaced the version stored now (src/plan/diff.c).  Used by
 * `palisade plan diff` and by the API's apply with dry_run.
 */
#ifndef PALISADE_PLANDIFF_H
#define PALISADE_PLANDIFF_H

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>
#include "palisade/err.h"
#include "palisade/jobspec.h"
#include "palisade/store.h"

typedef struct pal_plan_diff {
	const char *status;	   /* "new", "changed" or "unchanged" (static) */
	int stored_version;	   /* 0 when new */
	int n_stored, n_new;	   /* instants in each list */
	int64_t *stored, *next;	   /* ascending epoch seconds */
	bool *stored_ex, *next_ex; /* the instant falls on an excluded date */
	const char *after;	   /* a dependent job's first upstream, whose instants
				    * are its own (none of its schedule); borrowed */
} pal_plan_diff;

/* Instants of one plan diff through the API (the CLI's default bound): the
 * jobs, the body's and the stored ones that follow its calendars, times
 * COUNT (each also has as many stored ones): a 1,500-job file at count 5
 * takes 7,500, ten jobs at the largest count (10,000) all of it. */
#define PAL_PLAN_DIFF_MAX_INSTANTS 100000

/* Whether N_JOBS jobs of COUNT instants each stay within MAX (<= 0: no
 * bound); else false with ERR saying the bound and how to narrow it. */
bool pal_plan_diff_within(size_t n_jobs, int count, int64_t max, char *err, size_t errlen);

/* The next COUNT instants after FROM of the stored latest version of S's job
 * and of S, into OUT (free with pal_plan_diff_clear).  PAL_EDB, PAL_EINVAL
 * (a schedule that does not open), PAL_ENOMEM, with ERR filled. */
PAL_MUST_CHECK int pal_plan_diff_job(pal_store *st, const pal_job_spec *s, int64_t from, int count,
				     pal_plan_diff *out, char *err, size_t errlen);
void pal_plan_diff_clear(pal_plan_diff *d);

/* Most next instants one read lists (`jobs --next`, GET /api/v1/jobs?next=):
 * per job, and a page of jobs times its count. */
#define PAL_JOB_NEXT_MAX 1000
#define PAL_JOB_NEXT_MAX_INSTANTS 100000
/* Most excluded instants one job's list walks past (a job excluded for a
 * long time lists fewer instants instead of walking on). */
#define PAL_JOB_NEXT_SKIP_MAX 2048

/* The next N fire instants after NOW of the canonical spec SPEC_JSON, an
 * `every` without `start` counted from ANCHOR: a new array of RFC 3339
 * strings, empty when the spec does not load or its schedule does not open.
 * Instants on excluded dates (`exclude:`, shared calendars) are left out, as
 * the controller never plans them; past PAL_JOB_NEXT_SKIP_MAX of them the
 * list ends short. */
json_t *pal_plan_spec_next(const json_t *spec_json, int64_t anchor, int64_t now, int n);

/* The next N fire instants after NOW of the stored latest version of job
 * JOB_ID, an `every` without `start` counted from that version's activation
 * (or, while it awaits one, where the controller will take it over), as
 * plan diff counts: a new array of RFC 3339 strings into *OUT (empty when
 * the schedule does not open).  PAL_EDB, PAL_ENOENT with ERR filled. */
PAL_MUST_CHECK int pal_plan_job_next(pal_store *st, const char *job_id, int64_t now, int n,
				     json_t **out, char *err, size_t errlen);
/* {job_id status new [stored_version stored] [follows]}, each list [{at
 * excluded}] (the `plan diff --output json` object); FOLLOWS NULL for a job
 * of the files (pal_plan_follow_fn's otherwise); a new reference. */
json_t *pal_plan_diff_json(const pal_plan_diff *d, const char *job_id, const char *follows);

/* A stored job outside the files that follows a calendar or a notify rule
 * of them: its id, its TENANT (the API leaves out another tenant's),
 * FOLLOWS "calendar NAME vN[, ...][, notify rules of group G or tenant T]"
 * and its plan diff (borrowed).  0 to go on, else the code to stop with. */
typedef int (*pal_plan_follow_fn)(void *ctx, const char *job_id, const char *tenant,
				  const char *follows, const pal_plan_diff *d);
/* The stored live jobs outside SET whose latest version carries one of
 * SET's calendars at another version than SET's (set by
 * pal_store_calendar_versions), and those of the groups and tenants of
 * SET's notify rules whose notify the rules change: apply gives each a
 * version with the new rules (docs/jobs.md "Calendars", "Notify rules"),
 * so FN gets the plan diff of its stored spec with them, by job id.
 * PAL_EDB, PAL_EINVAL, PAL_ENOMEM with ERR, or FN's code. */
PAL_MUST_CHECK int pal_plan_diff_followers(pal_store *st, const pal_jobset *set, int64_t from,
					   int count, pal_plan_follow_fn fn, void *ctx, char *err,
					   size_t errlen);

#endif
