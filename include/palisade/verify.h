/*
 * verify.h - recompute the plan set from the stored job versions and check
 * it against what the controllers wrote (G1, G2).
 *
 * For every job, the plan set in [from, to] is the union over its activated
 * versions v of the instants of v in (effective_from(v),
 * effective_from(v+1)], times its partitions.  Then
 *   missing    = plan set - triggers - instants covered by a misfire range
 *   duplicates = plan keys with more than one scheduled trigger row
 *   unexpected = scheduled trigger rows at instants outside the plan set
 * A correct cluster has all three at zero.
 */
#ifndef PALISADE_VERIFY_H
#define PALISADE_VERIFY_H

#include <jansson.h>
#include <stdint.h>
#include "palisade/err.h"
#include "palisade/store.h"

typedef struct pal_verify_report {
	int64_t jobs;
	int64_t expected;   /* (instant, partition) pairs in the plan set */
	int64_t triggered;  /* of those, with a trigger row */
	int64_t misfired;   /* of those, covered by a misfire decision */
	int64_t missing;
	int64_t duplicates;
	int64_t unexpected;
	json_t *samples; /* up to 20 examples per kind: {"missing": [...], ...} */
} pal_verify_report;

/* Check [FROM, TO] for JOB_ID (NULL: every job).  Fills R (free with
 * pal_verify_report_free).  PAL_EDB / PAL_EINVAL with a message on failure. */
PAL_MUST_CHECK int pal_verify(pal_store *st, int64_t from, int64_t to, const char *job_id,
			      pal_verify_report *r, char *err, size_t errlen);
void pal_verify_report_free(pal_verify_report *r);

#endif
