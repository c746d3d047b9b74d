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
} pal_plan_diff;

/* The next COUNT instants after FROM of the stored latest version of S's job
 * and of S, into OUT (free with pal_plan_diff_clear).  PAL_EDB, PAL_EINVAL
 * (a schedule that does not open), PAL_ENOMEM, with ERR filled. */
PAL_MUST_CHECK int pal_plan_diff_job(pal_store *st, const pal_job_spec *s, int64_t from, int count,
				     pal_plan_diff *out, char *err, size_t errlen);
void pal_plan_diff_clear(pal_plan_diff *d);
/* {job_id status new [stored_version stored]}, each list [{at excluded}]
 * (the `plan diff --output json` object); a new reference. */
json_t *pal_plan_diff_json(const pal_plan_diff *d, const char *job_id);

#endif
