/* executor_int.h - what the files of src/executor share. */
#ifndef PALISADE_EXECUTOR_INT_H
#define PALISADE_EXECUTOR_INT_H

#include <glib.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <curl/curl.h>
#include "palisade/callpolicy.h"
#include "palisade/clock.h"
#include "palisade/execstore.h"
#include "palisade/executor.h"
#include "palisade/callspec.h"
#include "palisade/store.h"
#include "palisade/tz.h"


/* ---- spec cache (specs.c): job versions are immutable, so cache forever --- */

typedef struct spec_entry {
	pal_call_spec *call; /* owned */
	const pal_tz *tz; /* the job's zone, for {scheduled_date}; shared (pal_zone_acquire) */
	int holds;        /* calls pointing at it (pal__spec_get .. pal__spec_release) */
	bool used;        /* looked up since the last sweep */
} spec_entry;

/* Versions are immutable, so an entry never goes stale; the cache is
 * bounded by CAP entries (executor.spec_cache) with a second-chance sweep:
 * when it reaches its sweep size, entries not looked up since the last
 * sweep and held by no call go, then (if still above 3/4 of CAP) any entry
 * held by no call.  A held entry is never freed. */
typedef struct spec_cache {
	GHashTable *map;  /* "job#version" -> spec_entry* */
	size_t cap;       /* 0 = no bound */
	size_t sweep_at;  /* the size at which the next insert sweeps */
	uint64_t evicted; /* entries swept out, for the metric */
	int64_t read_us;  /* spent reading and decoding versions, for the metric */
} spec_cache;

void pal__spec_cache_init(spec_cache *c, size_t cap);
void pal__spec_cache_free(spec_cache *c);
/* Put E under JOB#V (the cache owns it; when JOB#V is cached already, E is
 * freed and the cached entry kept) and sweep if the cache reached its sweep
 * size.  Exposed for the unit test; the executor inserts through
 * pal__spec_prefetch and pal__spec_get. */
void pal__spec_cache_insert(spec_cache *c, const char *job, int v, spec_entry *e);
/* A call no longer points at E (returned by pal__spec_get). */
void pal__spec_release(spec_cache *c, const spec_entry *e);
/* The distinct versions of a claimed batch that are not cached yet (JOBS
 * point into the batch's rows). */
typedef struct spec_want {
	const char **jobs;
	int *vers;
	int n;
} spec_want;
/* Fill W with the versions of ROWS[0..n) missing from the cache; returns
 * W->n (0: nothing to read, W holds nothing). */
int pal__spec_missing(spec_cache *c, const pal_claimed *rows, int n, spec_want *w);
/* Cache what was read for W (CALLS[i] for W's i-th version, taken over;
 * NULL entries are skipped: pal__spec_get reads those alone and says why
 * they failed). */
void pal__spec_fill(spec_cache *c, const spec_want *w, pal_call_spec **calls);
void pal__spec_want_free(spec_want *w);
/* The call form of JOB's version V (callspec.h), cached and held for the caller
 * until pal__spec_release (never evicted meanwhile).  NULL on failure, with ERR
 * and *TRANSIENT: true when the version could not be read (no connection,
 * a query that failed, out of memory: another attempt may succeed), false
 * when the version itself is unusable (missing, or a spec that does not
 * decode). */
const spec_entry *pal__spec_get(spec_cache *c, pal_store *st, const char *job, int v, char *err,
				size_t errlen, bool *transient);

/* ---- the executor and its calls ---------------------------------------------
 *
 * Files: executor.c (the loop, connections, start/stop), claim.c (claims
 * and starting calls), call.c (requests and transfers), outcome.c (what a
 * response means for the trigger), results.c (the batched result commits),
 * phase.c (a call's phase, phase.def).  Everything here runs on the
 * executor thread except the lease table.
 */

/* Longest a call waits parked for its host's probe before it is handed
 * back, and how many calls one host may have parked (the rest of a claim
 * batch goes back to pending: parked calls count against max_inflight). */
#define PAL__PARK_MAX_MS 30000
#define PAL__PARK_PER_HOST 8

/* Claim connections of a node, at most (executor.claim_connections: 1 by
 * default, 2 for a node alone on a database with cores to spare).  A second
 * claim in flight once kept the database busy while the first one's answer
 * was read (2026-12-01, claims of 30-60 ms: 1-node execution 2,125-2,862 ->
 * 3,367-4,077 triggers/s).  Since claims became cheap it adds little or
 * nothing to one node, and with several nodes the extra claims, scanning
 * the same head of the queue past each other's locked rows, cost the
 * server CPU per trigger (docs/performance.md, "The executor"). */
#define PAL__CLAIM_CONNS_MAX 2

/* Phases of a call (phase.def: the list and its edges).  Every change of
 * a call's phase goes through phase.c. */
typedef enum {
#define PAL_PHASE(e, name) PHASE_##e,
#include "phase.def"
	PHASE__COUNT
} pal__phase;

typedef struct pal__call {
	struct pal_executor *ex;
	pal_claimed c;
	const struct spec_entry *spec;
	pal__phase ph; /* written by phase.c only */
	CURL *easy;
	struct curl_slist *hdrs;
	char *url, *body, *key;
	char *resp;
	size_t resp_len;
	bool resp_truncated, stale_header;
	int64_t stale_token; /* the value of Palisade-Stale-Token, 0 if none */
	int64_t retry_after_ms;
	int64_t started_ms, resume_at_ms;
	pal__phase parked_ph; /* the phase to start when unparked (phase.c) */
	int64_t parked_ms;    /* CLOCK_MONOTONIC when parked */
	char host[256];
	bool called; /* this claim already sent the side-effect request */
	/* The current transfer's requests (libcurl's pre-request callback)
	 * and whether libcurl sent it more than once: it opened a socket, or
	 * began a second request, after the first had begun (call.c). */
	int sends;
	bool resent;
	char last_class[48];
	/* The error class of the queued result, copied: the commit reads it
	 * passes later, when the classifier's buffer is long gone. */
	char result_class[48];
	bool replayed; /* the answer carried Idempotent-Replayed: true */
	/* Honest outcomes: an earlier send's outcome is unknown (seeded from
	 * the claim, updated by pal_unknown_after; committed as the trigger's
	 * outcome_unknown); the answers of this claim's status queries; a
	 * render failure for a missing secret (the node skips the job). */
	bool unknown;
	char queries[96];
	bool render_skip;
	char render_err[512];
	/* The response headers of the current transfer that the job keeps
	 * (name, value, name, value ...; NULL when none) and its Content-Type
	 * (NULL when none), raw; and the last answer of this claim as it is
	 * kept, masked (excerpt.c): headers as a JSON object text, the body's
	 * first ex_body_len bytes, all NULL unless ex_keep. */
	GPtrArray *resp_hdrs;
	char *resp_ctype;
	bool ex_keep, ex_trunc;
	char *ex_body, *ex_hdrs, *ex_ctype;
	size_t ex_body_len;
	struct pal__call *next;
	struct pal__call **pprev; /* the pointer to this call in the list; NULL out of it */
} pal__call;

/* ---- the lease table (lease.c), shared by the executor and lease threads --- */

typedef struct pal_lease_view {
	int64_t fence;
	int64_t sent_ms; /* monotonic time the last successful renewal (or the claim) was sent */
	bool lost;
	pal_tstate state;
} pal_lease_view;

typedef struct pal_leases {
	pthread_mutex_t mu;
	GHashTable *map; /* int64 id -> pal_lease_view* */
	atomic_bool gate_open;
	atomic_int renew_failures; /* threshold that closes the gate (reloadable) */
	int failures;
	atomic_bool renew_ok;	 /* the last renewal (or ping) succeeded */
	atomic_llong renewed_ms; /* CLOCK_MONOTONIC of the last one that succeeded */
	atomic_bool draining;	 /* the node drains: the lease thread no longer marks it seen */
	pal_metrics *m;
} pal_leases;

typedef struct pal_lease_thread pal_lease_thread;

int pal__leases_init(pal_leases *l, const pal_executor_config *cfg, pal_metrics *m);
void pal__leases_free(pal_leases *l);
void pal__leases_add(pal_leases *l, int64_t id, int64_t fence, int64_t sent_ms);
void pal__leases_set_sent(pal_leases *l, int64_t id, int64_t sent_ms);
void pal__leases_remove(pal_leases *l, int64_t id);
bool pal__leases_get(pal_leases *l, int64_t id, pal_lease_view *out);
bool pal__leases_gate_open(pal_leases *l);
int pal__leases_count(pal_leases *l);
/* Safety margin subtracted from the lease for the monotonic self-stop. */
int64_t pal__lease_margin(const pal_executor_config *cfg);

/* ---- the executor ------------------------------------------------------------ */

struct pal_executor {
	pal_executor_config cfg;
	pal_metrics *m;
	pthread_t thread;
	atomic_bool stop, draining;
	int64_t drain_deadline_ms;

	pal_store *st;  /* specs, checkpoints, LISTEN, the clock (blocking) */
	int n_cst;                            /* claim connections used (executor.claim_connections) */
	pal_store *cst[PAL__CLAIM_CONNS_MAX]; /* claims (asynchronous), one in flight on each */
	int claim_limit[PAL__CLAIM_CONNS_MAX];      /* triggers the claim in flight may return */
	int64_t claim_sent_ms[PAL__CLAIM_CONNS_MAX];/* CLOCK_MONOTONIC when it was sent */
	/* A claimed batch waiting for the versions it needs, read on the same
	 * connection without blocking (claim.c); n == 0: none */
	pal_claim_out spec_wait[PAL__CLAIM_CONNS_MAX];
	spec_want spec_want[PAL__CLAIM_CONNS_MAX];
	bool claim_full;                          /* the last claim returned a full batch */
	pal_store *rst; /* result commits (asynchronous) */
	CURLM *multi;
	/* Easy handles of finished transfers, kept for the next ones
	 * (curl_easy_reset: no new allocation per call). */
	CURL **easy_pool;
	size_t n_easy_pool, cap_easy_pool;
	/* The transfers one pass found finished (see the run loop). */
	struct pal__done { CURL *easy; CURLcode code; } *done;
	size_t cap_done;
	pal__call *calls; /* in flight or waiting */
	int inflight;
	pal_breakers *breakers;
	GHashTable *breakers_shown; /* host label strings published as open */
	spec_cache specs;
	uint64_t evictions_shown; /* specs.evicted already added to the metric */
	int64_t spec_read_shown;  /* specs.read_us already added to the metric */
	uint64_t rng;
	uint64_t trace_prefix; /* pal_trace_cluster(cluster.name) */
	int64_t next_claim_ms, db_backoff_ms, next_db_ms;

	/* results waiting for the next commit, and the batch being committed */
	pal_result *results;
	pal__call **result_calls;
	int n_results, cap_results;
	pal_result *batch;
	pal__call **batch_calls;
	int n_batch, cap_batch;

	pal_leases leases; /* shared with the lease thread */
	struct pal_lease_thread *lt;

	/* a pending limits change (reload), under mu */
	bool limits_changed;
	bool ignore_lease_loss; /* drill only: PALISADE_FAULT_IGNORE_LEASE_LOSS=1 */
	int spec_read_faults;   /* test only: PALISADE_FAULT_SPEC_READ=N fails the first N
				   job-version reads as the database would (transient) */
	int spec_batch_faults;  /* test only: PALISADE_FAULT_SPEC_BATCH=N fails the first N
				   batch reads of versions (the calls read theirs alone) */
	int64_t db_offset_ms;      /* database clock - CLOCK_MONOTONIC (pal__db_ms) */
	int64_t db_wall_offset_ms; /* database clock - CLOCK_REALTIME (the metric) */
	int64_t db_offset_at_ms;   /* CLOCK_MONOTONIC of that measurement, 0 = never */
	int new_batch, new_max_inflight, new_renew_failures;
	pal_group_conf *new_groups;
	size_t new_n_groups;
	pal_tenant_conf *new_tenants;
	size_t new_n_tenants;

	/* what publish_status last logged: the connection down (NULL: all up),
	 * and whether renewals or a claim were reported stalled */
	const char *db_down_shown;
	bool stall_shown;

	/* counters for status */
	atomic_llong claimed, succeeded, failed, stale_db, stale_sink, lost, self_stops;
	pthread_mutex_t mu;
	json_t *status;
};

/* executor.c */
int64_t pal__db_ms(const pal_executor *ex); /* now by the database's clock */
void pal__minc(pal_executor *ex, const char *name, const char *labels, double v);
/* Drop a connection after an error (logged by the caller). */
void pal__drop_conn(pal_executor *ex, pal_store **which);

/* claim.c */
void pal__claim_send(pal_executor *ex);
void pal__claim_recv(pal_executor *ex);
bool pal__claim_busy(const pal_executor *ex); /* a claim is in flight */
void pal__call_due(pal_executor *ex, pal__call *k); /* an AHEAD call's instant came */
void pal__unpark(pal_executor *ex, pal__call *k, int64_t now, bool draining);

/* phase.c: the one door for a call's phase.  Each moves K along an edge of
 * phase.def and does what the edge implies: entering PARKED remembers the
 * phase to start when unparked and counts K against its host's parked
 * calls (pal_breaker_parked), leaving it gives that back.  A move that is
 * not an edge of phase.def is a bug: it is logged as an error
 * (executor.phase_illegal, with the trigger and both phases) and made all
 * the same, since the caller goes on as if it were; returns false then. */
bool pal__phase_set(pal_executor *ex, pal__call *k, pal__phase to); /* not PARKED */
/* K waits for its host's probe, then starts RESUME (QUERY or CALL). */
bool pal__phase_park(pal_executor *ex, pal__call *k, pal__phase resume);
/* K leaves PARKED for the phase it was parked for; nothing when K is not
 * parked (a call that ends from any phase calls it). */
void pal__phase_unpark(pal_executor *ex, pal__call *k);
/* Whether FROM -> TO is an edge of phase.def, and a phase's name. */
bool pal__phase_edge_ok(pal__phase from, pal__phase to);
const char *pal__phase_name(pal__phase p);

/* call.c */
/* Render and add the transfer; on a render failure K->render_err holds the
 * message and the return code says why (PAL_ENOENT: a ${ENV} secret is not
 * set on this node; PAL_ENOGRANT: this node's executor.secrets does not
 * give it to the trigger's tenant; PAL_ENOHOST: this node's
 * executor.target_hosts does not give the url's host to the trigger's
 * tenant, nothing sent; PAL_EPERM: one of the node's own). */
int pal__call_start(pal_executor *ex, pal__call *k);
/* RC is pal__call_start's failure: for a secret missing on this node or
 * not given to the trigger's tenant by this node's executor.secrets, or a
 * host its executor.target_hosts does not give the tenant, hand K
 * back (pending, attempt not spent, a skip of the job for this node, a
 * ticket when no live node can render it) and return true; for one of the
 * node's own variables (PAL_EPERM), end K (`secret_refused`: `failed`,
 * `manual` while its outcome is unknown) and return true; else false. */
bool pal__render_skip(pal_executor *ex, pal__call *k, int rc);
/* Start K; when it cannot be rendered, defer it (a secret another node may
 * send) or end it (`failed`, `manual` while its outcome is unknown). */
void pal__start_or_defer(pal_executor *ex, pal__call *k);
void pal__call_reset_transfer(pal__call *k);
/* The span id of K's current transfer (trace.h: its phase, attempt and
 * fence), and K's trace and span ids as hex for logs. */
uint64_t pal__call_span(const pal__call *k);
void pal__call_trace_ids(const pal_executor *ex, const pal__call *k, char trace[33],
			 char span[17]);
/* An easy handle for a new transfer (from the pool, reset, or new); a
 * finished one, already removed from the multi, back to the pool. */
CURL *pal__easy_take(pal_executor *ex);
void pal__easy_give(pal_executor *ex, CURL *e);
void pal__call_free(pal__call *k);

/* excerpt.c: what an attempt keeps of the service's answer.  _header:
 * one header line of the current transfer (a status line starts over);
 * _keep: the transfer ended with an HTTP status, so its excerpt (masked)
 * replaces K's kept one, or K keeps none when the job keeps nothing of it;
 * _clear_transfer: forget the current transfer's headers; _free: all. */
void pal__excerpt_header(pal__call *k, const char *line, size_t len);
void pal__excerpt_keep(pal_executor *ex, pal__call *k);
void pal__excerpt_clear_transfer(pal__call *k);
void pal__excerpt_free(pal__call *k);

/* outcome.c */
void pal__call_finished(pal_executor *ex, pal__call *k, CURLcode code);
/* No retry is left (budget WHY: max_attempts, max_age, deadline): `failed`
 * with CLS, or `manual` with a ticket while K's outcome is unknown. */
void pal__spent(pal_executor *ex, pal__call *k, const char *cls, int http, const char *why);
void pal__abandon(pal_executor *ex, pal__call *k, const char *why);

/* results.c: queue K's result (K moves to the results queue).  NEXT_DELAY_MS:
 * the next attempt is due that long after the commit, by the database's
 * clock; PAL_NEXT_NONE for none. */
void pal__queue_result(pal_executor *ex, pal__call *k, pal_tstate state, const char *error_class,
		       int http, int64_t next_delay_ms, const char *ticket_reason);
void pal__unlink_call(pal_executor *ex, pal__call *k);
void pal__commit_send(pal_executor *ex);
void pal__commit_recv(pal_executor *ex);
void pal__results_free(pal_executor *ex);

int pal__lease_thread_start(pal_leases *l, const pal_executor_config *cfg, pal_lease_thread **out,
			    char *err, size_t errlen);
void pal__lease_thread_stop(pal_lease_thread *t);
/* Renew every lease now, between heartbeats (the thread wakes at once). */
void pal__lease_thread_renew_now(pal_lease_thread *t);

#endif
