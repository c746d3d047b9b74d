/* report.h - reports over the ledger (src/store/report.c): what results
 * cost (`palisade report cost`, docs/operations.md "What a correct result
 * costs") and the jobs a shadow diff compares (`palisade shadow diff`,
 * docs/migrating.md). */
#ifndef PALISADE_REPORT_H
#define PALISADE_REPORT_H

#include <jansson.h>
#include <stdint.h>
#include "palisade/err.h"
#include "palisade/ops.h"
#include "palisade/store.h"

/* Which triggers a cost report counts: scheduled in [from, to) (Unix
 * seconds), of the scope (a job, group or tenant, or all). */
typedef struct pal_cost_scope {
	int64_t from, to;
	pal_scope scope;
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

/* The jobs of scope SC with what a shadow
 * diff over [FROM, TO) needs, as JSON [{"job_id", "tenant", "versions": [{"spec",
 * "effective_from"}], "retired_at", "misfires": [[from, to]...]}], by
 * job id: the activated versions, or the latest one (effective_from null)
 * of a job no controller activated yet; retired_at null unless retired;
 * the misfire ranges overlapping the range.  PAL_ENOTFOUND for a job
 * scope naming no job. */
PAL_MUST_CHECK int pal_store_shadow_jobs_json(pal_store *st, const pal_scope *sc, int64_t from,
					      int64_t to, json_t **out, char *err, size_t errlen);

#endif
