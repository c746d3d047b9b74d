/*
 * shadowdiff.h - one job's fire instants as the old system recorded them
 * against the instants palisade's plan has for it, each difference with the
 * reason palisade can tell (src/plan/shadowdiff.c; `palisade shadow diff`,
 * docs/migrating.md).
 */
#ifndef PALISADE_SHADOWDIFF_H
#define PALISADE_SHADOWDIFF_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "palisade/err.h"
#include "palisade/tz.h"

/* What palisade's plan says of one job over the range.  Every array is
 * ascending, without repeats, in Unix seconds. */
typedef struct pal_shadow_plan {
	const int64_t *fire; /* instants palisade fires */
	size_t n_fire;
	const int64_t *excluded; /* instants its exclusions (dates, calendars) take out */
	size_t n_excluded;
	const int64_t *misfired; /* instants covered by a recorded misfire */
	size_t n_misfired;
	const pal_tz *zone; /* the job's zone (NULL: UTC) */
} pal_shadow_plan;

typedef struct pal_shadow_counts {
	int64_t old, palisade, both, only_old, only_palisade;
} pal_shadow_counts;

/*
 * Compare OLD (the old system's instants of job JOB, ascending, repeats
 * allowed: a repeat is reported as "repeated") with PLAN; append each
 * difference to DIFFS as {"job", "at", "only": "old"|"palisade", "reason",
 * "detail"} (at most LIMIT entries in DIFFS over every call; counts are
 * kept past it) and add to *C.  Reasons, the first that applies:
 *   only in the old record: "repeated" (the old system fired it twice),
 *     "excluded" (palisade's exclusions take it out), "misfire" (palisade
 *     recorded a misfire for it), "dst" (within 3 h of an offset change of
 *     the job's zone: the old system resolves the skipped or repeated hour
 *     another way), "zone" (palisade fires the same wall-clock pattern a
 *     whole number of quarter hours away, detail the offset: the old system
 *     computes in another zone), else "schedule" (palisade's schedule has no
 *     such instant);
 *   only in palisade's plan: "dst", "zone" as above, else "not_fired" (the
 *     old system did not fire it: its own misfire or downtime, or a
 *     schedule it reads another way).
 */
PAL_MUST_CHECK int pal_shadow_diff_job(const char *job, const int64_t *old, size_t n_old,
				       const pal_shadow_plan *plan, size_t limit, json_t *diffs,
				       pal_shadow_counts *c);

/*
 * Palisade's plan of one job over [FROM, TO) from JOB as
 * pal_store_shadow_jobs_json() gives it ({"job_id", "versions": [{"spec",
 * "effective_from"}], "retired_at", "misfires": [[from, to]...]}): each
 * version's instants after its effective_from (null: the whole range) up
 * to the next version's, none at or after retired_at, sorted into FIRE,
 * EXCLUDED and MISFIRED (GArrays of int64_t the caller made), and the zone
 * of the last version into *ZONE (pal_zone_release).  PAL_ETOOBIG when the
 * range holds more than MAX instants; PAL_EINVAL with ERR for a spec
 * palisade cannot read.
 */
#include <glib.h>
PAL_MUST_CHECK int pal_shadow_plan_job(json_t *job, int64_t from, int64_t to, size_t max,
				       GArray *fire, GArray *excluded, GArray *misfired,
				       const pal_tz **zone, char *err, size_t errlen);

/* ---- a whole record against the store (src/plan/shadowreport.c) ---------- */

#include "palisade/ops.h"
#include "palisade/store.h"

/* Instants planned by one shadow diff through the API over every job it
 * compares (fired, excluded and misfired; the CLI's default bound): over
 * five times the lines of a record the API's 4 MiB body holds (182,000 at
 * the shortest). */
#define PAL_SHADOW_MAX_INSTANTS 1000000

/* The old system's record of what it fired over [from, to): one
 * "job_id,RFC3339" line per fired instant. */
typedef struct pal_shadow_record pal_shadow_record;
/* An empty record of [FROM, TO) (pal_shadow_record_free). */
pal_shadow_record *pal_shadow_record_new(int64_t from, int64_t to);
void pal_shadow_record_free(pal_shadow_record *r);
/* Add one line to R (LINE is changed: stripped and cut at its comma).  A
 * blank line or one starting with # is skipped, an instant out of the
 * range counted as a skipped line; false for a line that is not
 * "job_id,RFC3339" (R unchanged: the caller names the line). */
bool pal_shadow_record_line(pal_shadow_record *r, char *line);
/*
 * R against palisade's plan of the jobs of scope SC (PAL_SCOPE_GLOBAL:
 * every job), as the `shadow diff --output json` object into *OUT
 * (json_decref): {from to equal jobs counts{old palisade both only_old
 * only_palisade} skipped_lines differences[] truncated}, at most LIMIT
 * differences (the counts cover all).  Only the jobs of TENANTS[0..N_TENANTS)
 * count when N_TENANTS is above 0: another tenant's job is as one palisade
 * does not know.  Lines of jobs palisade does not know are differences
 * (unknown_job) without a scope, skipped lines with one.  Takes R's
 * instants (free R after).  PAL_ENOENT for a job scope naming no job,
 * PAL_ETOOBIG when the jobs have more than MAX_INSTANTS instants in the
 * range together (0: no bound; found before more are held, ERR says the
 * bound and how to narrow), PAL_EINVAL for a spec palisade cannot read,
 * PAL_EDB; ERR says.
 * Blocks on ST.
 */
PAL_MUST_CHECK int pal_shadow_report(pal_store *st, const pal_scope *sc, const char *const *tenants,
				     size_t n_tenants, pal_shadow_record *r, size_t limit,
				     size_t max_instants, json_t **out, char *err, size_t errlen);

#endif
