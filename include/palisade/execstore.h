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
#include "palisade/store.h"

/* Per-group limits passed to a claim. */
typedef struct pal_claim_group {
	const char *group;
	int node_remaining; /* calls this node may still start for the group */
	int cluster_limit;  /* 0 = no cluster-wide limit */
} pal_claim_group;

typedef struct pal_claim_req {
	const char *node;
	int64_t lease_ms;
	int limit;
	const char *open_hosts; /* text[] literal of hosts with an open breaker */
	const pal_claim_group *groups;
	int n_groups;
} pal_claim_req;

typedef struct pal_claimed {
	int64_t id, fence;
	char job_id[128];
	int version;
	int64_t scheduled_at; /* s */
	int partition;
	char request_id[129]; /* "" for scheduled; up to 128 characters */
	int attempt;         /* attempt number of this claim (1-based) */
	char prev_state[16]; /* pending, retry_wait, unknown, running (expired lease) */
	char prev_error[48];
	char *checkpoint;    /* JSON text or NULL (caller frees) */
	char tenant[64], group[64];
} pal_claimed;

/* Claim up to req->limit due triggers (one transaction, cluster-wide claim
 * lock, overlap policies applied).  *out is malloc'd (free with
 * pal_claimed_free).  Also reports forbid-skips in *skipped. */
PAL_MUST_CHECK int pal_store_claim(pal_store *st, const pal_claim_req *req, pal_claimed **out,
				   int *n, int *skipped, char *err, size_t errlen);
void pal_claimed_free(pal_claimed *c, int n);

/* Spec JSON (canonical) of JOB_ID version V; new reference. */
PAL_MUST_CHECK int pal_store_version_spec(pal_store *st, const char *job_id, int version,
					  json_t **spec, char *err, size_t errlen);

typedef struct pal_lease_ref {
	int64_t id, fence;
} pal_lease_ref;

typedef struct pal_lease_state {
	int64_t id;
	char state[16]; /* running, pausing, cancelling */
} pal_lease_state;

/* Renew every lease of NODE in REFS in one statement.  OUT[0..*n_out) are the
 * leases still held (with their state); a ref missing from OUT has lost its
 * lease.  OUT must hold n entries. */
PAL_MUST_CHECK int pal_store_renew(pal_store *st, const char *node, int64_t lease_ms,
				   const pal_lease_ref *refs, int n, pal_lease_state *out,
				   int *n_out, char *err, size_t errlen);

/* One result to commit. */
typedef struct pal_result {
	int64_t id, fence;
	const char *state;       /* succeeded, failed, retry_wait, unknown, manual, or
				    pending: deferred before calling, the attempt is given back */
	const char *error_class; /* "" when none */
	int http_status;         /* 0 when none */
	int64_t next_attempt_ms; /* retry_wait / unknown: when; 0 otherwise */
	int duration_ms;
	const char *idempotency_key;
	const char *ticket_reason; /* state manual: the ticket's reason */
	/* out: */
	bool committed;          /* false: fenced (the lease was lost) */
	char final_state[16];
} pal_result;

/* Commit results in one transaction with conditional updates; sets
 * committed/final_state per result.  A 'cancelling' trigger ends 'cancelled'
 * unless the result is a success (first commit wins); a 'pausing' one ends
 * 'paused' unless it succeeded or failed for good. */
PAL_MUST_CHECK int pal_store_commit_results(pal_store *st, pal_result *r, int n, char *err,
					    size_t errlen);

/* Store CHECKPOINT (JSON text) for a running trigger with its token: a safe
 * point.  *state receives the state after the write: "running" (continue),
 * "paused" or "cancelled" (stop).  PAL_ESTALE when the lease was lost. */
PAL_MUST_CHECK int pal_store_checkpoint(pal_store *st, int64_t id, int64_t fence,
					const char *checkpoint, char state[16], char *err,
					size_t errlen);

#endif
