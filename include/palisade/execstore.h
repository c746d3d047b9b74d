/*
 * execstore.h - the executor's SQL (src/store/exec.c): batched claims with
 * database-time leases and fresh fencing tokens, one batched lease renewal
 * per heartbeat, batched conditional result commits, checkpoints.
 *
 * Every write after the claim is conditional on (trigger id, fence token,
 * live state): a stale executor's write matches no row (G3, G4).
 */
#ifndef PALISADE_EXECSTORE_H
#define PALISADE_EXECSTORE_H

#include <stdbool.h>
#include <stdint.h>
#include "palisade/callspec.h"
#include "palisade/store.h"
#include "palisade/tstate.h"

/* Per-group limits passed to a claim. */
typedef struct pal_claim_group {
	const char *group;
	int node_remaining; /* calls this node may still start for the group */
	int cluster_limit;  /* 0 = no cluster-wide limit */
} pal_claim_group;

/* Per-tenant quota passed to a claim (the same on every node). */
typedef struct pal_claim_tenant {
	const char *tenant;
	int cap;       /* calls in flight cluster-wide, 0 = unlimited */
	double weight; /* share of the claims beside other tenants, default 1 */
} pal_claim_tenant;

typedef struct pal_claim_req {
	const char *node;
	int64_t lease_ms;
	int limit;
	int64_t ahead_ms;                /* also claim triggers ready this much later */
	const char *const *open_hosts;   /* hosts with an open breaker, NULL-terminated (or NULL) */
	const pal_claim_group *groups;
	int n_groups;
	const pal_claim_tenant *tenants;
	int n_tenants;
} pal_claim_req;

typedef struct pal_claimed {
	int64_t id, fence;
	char job_id[128];
	int version;
	int64_t scheduled_at; /* s */
	int64_t ready_ms;     /* when it is due (next_attempt_at or due_at), ms since the epoch */
	int partition;
	char request_id[129]; /* "" for scheduled; up to 128 characters */
	int attempt;         /* attempt number of this claim (1-based) */
	pal_tstate prev_state; /* pending, retry_wait, unknown, running (expired lease) */
	char prev_error[48];
	char *checkpoint;    /* JSON text or NULL (caller frees) */
	char tenant[64], group[64];
	bool unknown;        /* an earlier attempt's outcome is unknown and no status
				query has answered "not applied" since (outcome_unknown) */
} pal_claimed;

/* What one claim returned. */
typedef struct pal_claim_out {
	pal_claimed *c; /* malloc'd, n entries (free with pal_claimed_free) */
	int n;
	int skipped;           /* forbid-skips this claim recorded */
	int64_t next_ready_ms; /* the earliest trigger ready after the horizon, 0 = none */
} pal_claim_out;

/*
 * Claim up to req->limit triggers due by req->ahead_ms from now: one call of
 * the SQL function palisade_claim() (sql/005_parallel_claim.sql), which
 * applies the overlap policies, group and tenant limits and max_in_flight
 * exactly without a cluster-wide lock.  Blocking.
 */
PAL_MUST_CHECK int pal_store_claim(pal_store *st, const pal_claim_req *req, pal_claim_out *out,
				   char *err, size_t errlen);
void pal_claimed_free(pal_claimed *c, int n);

/*
 * The same without blocking: _send puts the claim on the wire (the store
 * must be idle), the caller polls the socket (pal_store_socket) and calls
 * pal_store_consume until it reports the answer complete, then _recv reads
 * it.  The store holds one statement at a time.
 */
PAL_MUST_CHECK int pal_store_claim_send(pal_store *st, const pal_claim_req *req, char *err,
					size_t errlen);
PAL_MUST_CHECK int pal_store_claim_recv(pal_store *st, pal_claim_out *out, char *err,
					size_t errlen);

/* What the calls of N versions (JOB_IDS[i], VERSIONS[i]) need
 * (callspec.h), in one statement, without blocking, on a connection with
 * no statement in flight (see pal_store_claim_send): _send, then
 * pal_store_consume until the answer is complete, then _recv with the same
 * N.  CALLS[i] is new (free()), or NULL when that version does not exist or
 * does not build (pal_store_call_spec tells which).  On an error every
 * CALLS[i] is NULL. */
PAL_MUST_CHECK int pal_store_call_specs_send(pal_store *st, int n, const char *const *job_ids,
					     const int *versions, char *err, size_t errlen);
PAL_MUST_CHECK int pal_store_call_specs_recv(pal_store *st, int n, pal_call_spec **calls,
					     char *err, size_t errlen);
/* The same for one version, waiting for the answer: PAL_ENOENT when it does
 * not exist, PAL_EINVAL when it does not build (ERR says why), PAL_EDB. */
PAL_MUST_CHECK int pal_store_call_spec(pal_store *st, const char *job_id, int version,
				       pal_call_spec **call, char *err, size_t errlen);

typedef struct pal_lease_ref {
	int64_t id, fence;
} pal_lease_ref;

typedef struct pal_lease_state {
	int64_t id;
	pal_tstate state; /* running, pausing, cancelling */
	bool busy;        /* still ours, but another transaction held the row
			     lock: not renewed this time (its lease_until did
			     not move) */
} pal_lease_state;

/* Renew every lease of NODE in REFS in one statement.  OUT[0..*n_out) are the
 * leases still held (with their state); a ref missing from OUT has lost its
 * lease.  The renewal never waits for a row lock (SKIP LOCKED), so it cannot
 * deadlock with a result commit or an operator's statement over the same
 * triggers: a row locked by another transaction comes back `busy` (held,
 * not renewed; the next heartbeat renews it).  OUT must hold n entries. */
PAL_MUST_CHECK int pal_store_renew(pal_store *st, const char *node, int64_t lease_ms,
				   const pal_lease_ref *refs, int n, pal_lease_state *out,
				   int *n_out, char *err, size_t errlen);

/* End 'cancelling' triggers whose lease expired (their executor never reached
 * a safe point) as 'cancelled'; *n: how many.  Skips rows locked by others. */
PAL_MUST_CHECK int pal_store_reap_cancelling(pal_store *st, int64_t *n, char *err,
					     size_t errlen);

/* The due 'pending' triggers of a job version that every live executor
 * node skips (render_skips) go 'manual', each with a ticket (and its job's
 * `manual` notification), as the result commit's hand-back does; *n: how
 * many. */
PAL_MUST_CHECK int pal_store_nowhere_manual(pal_store *st, int64_t *n, char *err, size_t errlen);

/* Executor NODE is seen now (executor_nodes.seen_at; written when older
 * than 2 s).  START: it has just started: its own render skips are
 * deleted too, and the row is written whatever its age. */
PAL_MUST_CHECK int pal_store_executor_seen(pal_store *st, const char *node, bool start, char *err,
					   size_t errlen);

/* A result without a next attempt (next_attempt_at NULL). */
#define PAL_NEXT_NONE (-1)

/* One result to commit. */
typedef struct pal_result {
	int64_t id, fence;
	pal_tstate state;        /* succeeded, failed, retry_wait, unknown, manual, or
				    pending: deferred before calling, the attempt is given back */
	const char *error_class; /* "" when none */
	int http_status;         /* 0 when none */
	int64_t next_delay_ms;   /* retry_wait / unknown / pending: the next attempt is
				    due this long after the commit, by the database's
				    clock (clock_timestamp() + delay; a node's clock
				    never decides it); PAL_NEXT_NONE: none */
	int duration_ms;
	const char *idempotency_key;
	const char *ticket_reason; /* state manual: the ticket's reason; with
				      render_node: the render error */
	bool unknown;              /* stored as the trigger's outcome_unknown */
	const char *status_queries; /* this attempt's status query answers,
				       comma-separated ("404,409"), or NULL */
	const char *render_node;   /* state pending after a render failure (a
				      missing secret): the node that could not
				      render; it skips the job for a while, and
				      when no live executor node can render it the
				      trigger goes manual with a ticket.  NULL else */
	int64_t stale_token;       /* state pending after the service refused the
				      call as stale: the highest token it holds
				      for the key (Palisade-Stale-Token); the
				      commit moves palisade_fence past it, so
				      that tokens reissued after a failover
				      that lost sequence values catch up.
				      0 else */
	int64_t at;                /* the trigger's instant, epoch seconds
				      (floor, as claimed): the commit reads only
				      the partitions of its batch's instants.
				      0: unknown (every partition is read) */
	bool notify;		   /* the job's version has `notify:`: the
				      commit queues the notifications of this
				      result (palisade_notify_result) */
	/* What the attempt keeps of the service's answer (attempt_responses),
	 * secrets already masked; only when resp_keep (else all empty): the
	 * kept headers as a JSON object text, the content type (NULL: none),
	 * the body's first resp_body_len bytes, and whether the body went on
	 * past them.  Written only with a result the commit accepts. */
	bool resp_keep, resp_truncated;
	const char *resp_headers, *resp_ctype, *resp_body;
	size_t resp_body_len;
	/* A result refused once is sent once more (pal_store_commit_results
	 * does; the executor requeues it): the refusal of a late result that
	 * waited for a takeover's claim is decided on the row the claim
	 * wrote, but its statement's snapshot, taken before that claim
	 * committed, does not see the attempts row the claim moved the
	 * attempt into.  The second statement's does, and ends it as fenced.
	 * Set on the second sending. */
	bool resent;
	/* out: */
	bool committed;          /* false: fenced (the lease was lost) */
	pal_tstate final_state;
} pal_result;

/* Commit results in one transaction with conditional updates; sets
 * committed/final_state per result; a `manual` result opens a ticket
 * (with every attempt and its status queries when `unknown`).  A 'cancelling' trigger ends 'cancelled'
 * unless the result is a success (first commit wins); a 'pausing' one ends
 * 'paused' unless it succeeded or failed for good.  Blocking. */
PAL_MUST_CHECK int pal_store_commit_results(pal_store *st, pal_result *r, int n, char *err,
					    size_t errlen);
/* Make ST a connection for result commits only: the commit statement
 * prepared, and planner settings that suit it (not other statements). */
PAL_MUST_CHECK int pal_store_prepare_commits(pal_store *st, char *err, size_t errlen);
/* The same without blocking (see pal_store_claim_send): R must stay in
 * place, unchanged, until _recv has filled in committed/final_state. */
PAL_MUST_CHECK int pal_store_commit_send(pal_store *st, const pal_result *r, int n, char *err,
					 size_t errlen);
PAL_MUST_CHECK int pal_store_commit_recv(pal_store *st, pal_result *r, int n, char *err,
					 size_t errlen);

/* Store CHECKPOINT (JSON text) for a running trigger with its token: a safe
 * point.  *state receives the state after the write: "running" (continue),
 * "paused" or "cancelled" (stop).  PAL_ESTALE when the lease was lost. */
PAL_MUST_CHECK int pal_store_checkpoint(pal_store *st, int64_t id, int64_t fence,
					const char *checkpoint, pal_tstate *state, char *err,
					size_t errlen);

#endif
