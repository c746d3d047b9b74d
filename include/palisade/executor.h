/*
 * executor.h - the executor role of a node (docs/executor.md, docs/protocol.md).
 *
 * Threads: the executor thread owns one PostgreSQL connection (claims,
 * checkpoints, result commits) and a libcurl multi handle (many calls in
 * flight, never a transaction open across a call); the lease thread owns a
 * second connection and renews every held lease in one statement per
 * heartbeat, so renewals never wait behind HTTP or a long query.
 *
 * Safety: a claim takes a new token from one sequence and a lease judged by
 * the database clock (G3); every later write is conditional on (id, token,
 * state) (G4); each call carries the token and a stable idempotency key, and
 * an unknown outcome is resolved by querying the status URL with the same
 * key before any retry (G5).  After `renew_failures` failed renewals in a
 * row the commit gate closes (no new claims, no new calls), and a call whose
 * CLOCK_MONOTONIC lease deadline (last renewal sent + lease - margin) passes
 * is abandoned before anyone else can take the trigger over.
 */
#ifndef PALISADE_EXECUTOR_H
#define PALISADE_EXECUTOR_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include "palisade/err.h"
#include "palisade/metrics.h"
#include "palisade/limits.h"
#include "palisade/secrets.h"
#include "palisade/targethosts.h"

typedef struct pal_executor_config {
	const char *conninfo;	     /* claims, lease renewals: may reach a transaction pooler */
	const char *direct_conninfo; /* LISTEN, results: a session's (NULL or "": conninfo) */
	const char *node_id;
	int64_t lease_ms;       /* default 30 s */
	int64_t heartbeat_ms;   /* default 10 s */
	int batch;              /* claims per statement */
	int max_inflight;       /* calls in flight on this node */
	int host_connections;   /* connections per target host:port, 0 = no cap of its own */
	int spec_cache;         /* job versions kept compiled, 0 = no bound */
	int renew_failures;     /* consecutive failed renewals that close the gate */
	const pal_group_conf *groups; /* resource groups with limits */
	size_t n_groups;
	const pal_tenant_conf *tenants; /* tenant quotas */
	size_t n_tenants;
	int64_t claim_ahead_ms; /* claim triggers ready this much later, call them at their instant */
	int claim_connections;  /* claims in flight at once on this node, 1 (default) or 2 */
	int64_t poll_ms;        /* claim poll interval when idle (NOTIFY wakes earlier); default 200 */
	int64_t body_cap;       /* bytes of a response kept, default 64 KiB */
	const char *proxy;      /* NULL/"" direct (environment ignored), "env", or a URL */
	const char *cluster;    /* cluster.name: the prefix of every trace id (trace.h);
				   read at start only, not kept */
	bool trace_sampled;     /* traceparent's sampled flag */
	int64_t keep_body_max;  /* body bytes an attempt keeps at most (cut to body_cap) */
	/* the ${NAME} secrets a trigger's tenant may have resolved (borrowed:
	 * must outlive the executor; NULL: the default policy) */
	const pal_secret_policy *secrets;
	/* the hosts a trigger's tenant may call (borrowed: must outlive the
	 * executor; NULL: any host) */
	const pal_target_policy *targets;
} pal_executor_config;

typedef struct pal_executor pal_executor;

/* Start both threads (copies CFG and the groups).  The database need not be
 * up.  Free with pal_executor_stop(). */
PAL_MUST_CHECK int pal_executor_start(const pal_executor_config *cfg, pal_metrics *m,
				      pal_executor **out, char *err, size_t errlen);

/* Drain: stop claiming, let calls in flight finish (or reach a safe point)
 * for up to GRACE_MS, then abandon the rest (their leases expire and
 * another executor resolves them by querying), join the threads, free. */
void pal_executor_stop(pal_executor *ex, int64_t grace_ms);

/* New limits (the reloadable executor keys: batch, max_inflight,
 * renew_failures, groups, tenants; copied), applied at the executor's next
 * pass. */
void pal_executor_set_limits(pal_executor *ex, int batch, int max_inflight, int renew_failures,
			     const pal_group_conf *groups, size_t n_groups,
			     const pal_tenant_conf *tenants, size_t n_tenants);

/* {"gate_open", "inflight", "held_leases", "claimed", "stale_rejections"...} */
json_t *pal_executor_status(pal_executor *ex);

#endif
