/*
 * cutover.h - one cut-over step of a scope with its stop lines
 * (`palisade cutover`, POST /api/v1/cutover; docs/migrating.md).
 */
#ifndef PALISADE_CUTOVER_H
#define PALISADE_CUTOVER_H

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>
#include "palisade/err.h"
#include "palisade/ops.h"
#include "palisade/store.h"
#include "palisade/tokens.h"

typedef struct pal_cutover_req {
	pal_scope scope;
	int percent;	       /* 1..100: the jobs whose bucket is below are live */
	int64_t at;	       /* from this instant on (epoch seconds) */
	int64_t max_pending_s; /* the oldest_pending_s stop line */
	const char *sink_pg;   /* the sink's conninfo for doubled_effects, or NULL */
	bool dry_run;	       /* stop lines and the step's answer, then roll it back */
	/* who asks: split_chains leaves out the chains with a job of a tenant
	 * it does not see (counted in hidden_split_chains); NULL: every tenant */
	const pal_token_identity *who;
} pal_cutover_req;

/*
 * The step RQ, after the stop lines of the scope's latest step when that
 * step made jobs live: missing or doubled instants since it (verify; doubled
 * effects with a sink), stale-token rejections above the baseline, a
 * pending trigger older than max_pending_s, an open ticket.  Blocks (one
 * verify per job of the scope).  *OUT (json_decref) is the `cutover --output
 * json` object: {scope, percent, at, previous_percent, jobs, live_jobs,
 * made_live, moved, split_chains, hidden_split_chains, dry_run} when taken (with DRY_RUN, as it
 * would be: nothing is kept, no audit row), {scope, refused: true, previous_percent, crossed:
 * [{line, value, bound}]} with *REFUSED set when a stop line is crossed
 * (nothing changed).  Errors as pal_store_cutover() (PAL_EINVAL a narrowing
 * step or one before the latest, PAL_ENOENT nothing in shadow), PAL_EDB for
 * an unreachable sink.  Audited (cutover) when taken, as ACTOR.
 */
PAL_MUST_CHECK int pal_cutover_step(pal_store *st, const pal_cutover_req *rq, const char *actor,
				    const char *reason, json_t **out, bool *refused, char *err,
				    size_t errlen);

/* The schema that writes nominal_at (sql/045_nominal_at.sql). */
#define PAL_BOUNDARY_MIN_SCHEMA 45

/*
 * Whether CMD ("shadow", "cutover", "rollback") may judge the boundary of
 * scope SC now: 0 when no job of SC has spread or jitter, or every live
 * node (ZooKeeper ZK, ROOT, CLUSTER) runs schema PAL_BOUNDARY_MIN_SCHEMA or
 * later.  A 0.3.0 node plans such a job's instants moved and judges them
 * on the moved instant, so a boundary set while it lives would leave an
 * instant to both systems or to neither (docs/migrating.md).  Only nodes
 * that advertise the controller role (or no roles) count: an executor
 * plans nothing.  PAL_EBUSY with MSG naming the older nodes, PAL_EZK when
 * the live nodes cannot be read (ZK NULL included), PAL_EDB.  LENIENT (a
 * rollback, the emergency brake, and a dry run): live nodes that cannot be
 * read are no refusal: 0 with MSG saying so, for a warning (MSG is empty
 * on any other 0).  Blocks up to 5 s.
 */
PAL_MUST_CHECK int pal_boundary_check_nodes(pal_store *st, const pal_scope *sc, const char *cmd,
					    const char *zk, const char *root, const char *cluster,
					    bool lenient, char *msg, size_t len);

#endif
