/*
 * horizoncheck.h - the store side of a controller's key-horizon check
 * (docs/protocol.md, "How long to keep keys"; src/controller/controller.c).
 *
 * `apply` and `validate` refuse a job whose key horizon exceeds the node
 * config's sink.key_retention, but that setting can be lowered later (a
 * reload, a restart).  A controller therefore re-checks the jobs of its
 * shards when it acquires them, on SIGHUP, and when a job changes: these
 * functions read what the horizon depends on (the horizon itself is
 * computed by pal_job_key_horizon(), one formula for every check) and keep
 * one open ticket per job that exceeds it.
 */
#ifndef PALISADE_HORIZONCHECK_H
#define PALISADE_HORIZONCHECK_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include "palisade/err.h"
#include "palisade/jobspec.h"
#include "palisade/store.h"

/* The reason text of the tickets (one open ticket per job at most). */
#define PAL_HORIZON_TICKET_REASON "key horizon exceeds sink.key_retention"

/* Called per live job with its latest version (the one it plans with from
 * its next tick on: a pending version is activated by the next tick), in
 * job order.  S has only the fields the key horizon
 * reads (misfire, catchup_window_ms, max_attempts, timeout_ms,
 * backoff_max_ms, max_age_ms, deadline_ms); JOB_ID and S are valid for the
 * call only.  A non-zero return stops the scan and is returned. */
typedef int (*pal_horizon_fn)(void *ctx, const char *job_id, int version, const pal_job_spec *s);

/*
 * Which jobs of a shard a check covers: every live job (the zero scope),
 * the jobs IDS[0..n_ids) (a change), or a slice in job id order (bytes, as
 * strcmp orders them): at most LIMIT live jobs after AFTER (NULL: from the
 * first).  A shard of 12,500 jobs took one statement of ~240 ms, during
 * which its controller could claim no shard it had just won; in slices of
 * PAL_HORIZON_SLICE jobs a claim waits for one slice at most.
 *
 * The tickets of a slice are those of the shard's jobs with an id in
 * (AFTER, UPTO], UPTO being the last job the slice's scan returned, or NULL
 * (no upper end) for the slice that ends the shard: consecutive slices
 * reconcile every ticket of the shard once, those of retired jobs
 * included, as a whole check does.
 */
typedef struct pal_horizon_scope {
	const char *const *ids;
	size_t n_ids;
	const char *after;
	int limit;
	const char *upto; /* tickets only */
} pal_horizon_scope;

/* Jobs per slice of an acquired shard's check (~15 ms on a quiet box). */
#define PAL_HORIZON_SLICE 2000

/* Scan the live (not retired) jobs of SHARD in SCOPE, calling FN for each
 * that has its latest version.  *N: jobs in the scope's slice (equal to
 * SCOPE->limit when there may be more); *LAST (may be NULL): the id of the
 * last of them, g_free'd by the caller, NULL when none.  One statement, no
 * transaction. */
PAL_MUST_CHECK int pal_store_horizon_scan(pal_store *st, int shard, const pal_horizon_scope *scope,
					  pal_horizon_fn fn, void *ctx, size_t *n, char **last,
					  char *err, size_t errlen);

/* A job whose key horizon exceeds the retention. */
typedef struct pal_horizon_violation {
	const char *job_id; /* borrowed */
	int version;
	int64_t horizon_ms;
} pal_horizon_violation;

/*
 * Make the tickets of SHARD's jobs in SCOPE (its ids, or its key range for
 * a slice) those of
 * V[0..n), the violations a scan of the same jobs found: an open ticket
 * (reason PAL_HORIZON_TICKET_REASON, evidence: version, horizon, retention,
 * node; allowed action abandon, which only resolves it) for each violating
 * job that has none, and every open one of a job no longer in V resolved
 * (resolution "fits", actor controller:NODE).  *OPENED, *RESOLVED: how many
 * (either may be NULL).  One statement.
 */
PAL_MUST_CHECK int pal_store_horizon_tickets(pal_store *st, int shard,
					     const pal_horizon_scope *scope,
					     const pal_horizon_violation *v, size_t n,
					     int64_t key_retention_ms, const char *node,
					     int64_t *opened, int64_t *resolved, char *err,
					     size_t errlen);

/* The open key-horizon tickets (JOB_ID's only, when not NULL) as a JSON
 * array of {job, version, horizon_ms, key_retention_ms, node, ticket,
 * since}; *OUT is a new reference. */
PAL_MUST_CHECK int pal_store_horizon_json(pal_store *st, const char *job_id, json_t **out,
					  char *err, size_t errlen);

#endif
