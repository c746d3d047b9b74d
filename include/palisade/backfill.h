/*
 * backfill.h - the instants of a backfill: every fire instant of a job in a
 * past window, each with the version that owns it, assigned as the planner
 * assigns them (src/plan/backfill.c); a version with `after` has its first
 * upstream's instants, as the dependency planner decides them.  Pure computation on the job's stored
 * versions: no database, no clock.  The store inserts what it returns
 * (pal_ops_backfill, and a ticket's backfill in the ticket's transaction).
 */
#ifndef PALISADE_BACKFILL_H
#define PALISADE_BACKFILL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "palisade/err.h"

/* One instant: its time (epoch seconds), the owning version and that
 * version's partition count (one trigger row per partition); AFTER: the
 * version has `after` (the instant is its first upstream's). */
typedef struct pal_backfill_inst {
	int64_t at;
	int version;
	int partitions;
	bool after;
} pal_backfill_inst;

/* The instants in ascending order of version segment, then time (V, N; CAP
 * is the allocation), and how many instants a calendar excluded. */
typedef struct pal_backfill_plan {
	pal_backfill_inst *v;
	size_t n, cap;
	int64_t excluded;
} pal_backfill_plan;

/*
 * Every instant of a job in [FROM, TO] from VERSIONS (a non-empty JSON array
 * [{version, spec, effective_from|null}] in ascending version order, spec in
 * canonical form): an activated version owns the instants after its
 * effective_from up to the next activated one's (inclusive), as the planner
 * assigns them; before the first effective_from, and when none is
 * activated, the latest version.  Fills *PL, which must start zeroed; the
 * caller frees it with pal_backfill_plan_clear on success and failure alike.
 * PAL_ETOOBIG beyond MAX instants; a spec that does not load fails with its
 * error in ERR.
 */
PAL_MUST_CHECK int pal_backfill_instants(json_t *versions, int64_t from, int64_t to, int64_t max,
					 pal_backfill_plan *pl, char *err, size_t errlen);

/*
 * The same, and for a version with `after` (whose stored schedule never
 * fires) the instants of its first upstream in the part of the window the
 * version owns, before its `end`: the candidates the dependency planner
 * decides (sql/functions/palisade_plan_after.sql; the other upstreams and
 * `on` decide whether an instant runs or misfires, not which instants
 * there are).  UPSTREAMS: a JSON object, job id -> its versions (as
 * VERSIONS), holding each first upstream of VERSIONS and, recursively, of
 * theirs (pal_backfill_first_upstream); a version whose upstream is not
 * there has no instant.  PAL_EINVAL for a chain longer than 32 jobs.
 */
PAL_MUST_CHECK int pal_backfill_instants_after(json_t *versions, json_t *upstreams, int64_t from,
					       int64_t to, int64_t max, pal_backfill_plan *pl,
					       char *err, size_t errlen);

/* The first upstream of VERSION ({version, spec, ...}; spec canonical), or
 * NULL when it has no `after`.  Owned by VERSION. */
const char *pal_backfill_first_upstream(json_t *version);

/* Free what pal_backfill_instants filled and zero *PL. */
void pal_backfill_plan_clear(pal_backfill_plan *pl);

#endif
