/* report.h - what results cost: `palisade report cost` (src/store/report.c,
 * docs/operations.md "What a correct result costs"). */
#ifndef PALISADE_REPORT_H
#define PALISADE_REPORT_H

#include <jansson.h>
#include <stdint.h>
#include "palisade/err.h"
#include "palisade/store.h"

/* Which triggers a cost report counts: scheduled in [from, to) (Unix
 * seconds), of one job, group or tenant (NULL: any). */
typedef struct pal_cost_scope {
	int64_t from, to;
	const char *job, *group, *tenant;
	int limit; /* job rows at most, the costliest first */
} pal_cost_scope;

/* The report as one JSON object: {"from", "to", "total": ROW, "jobs":
 * [ROW...], "jobs_truncated": bool}, a ROW holding the counts (triggers,
 * succeeded, failed, manual, unfinished, attempts, retries, unknown,
 * tickets, calls, status_queries, stored_bytes) and "per_success" (each
 * count over succeeded; null without a success).  PAL_ENOTFOUND when a
 * named job does not exist. */
PAL_MUST_CHECK int pal_store_cost_json(pal_store *st, const pal_cost_scope *s, json_t **out,
				       char *err, size_t errlen);

#endif
