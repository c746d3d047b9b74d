/*
 * sink_int.h - what the files of src/sink share and nobody else needs.
 *
 * bin/palisade-sink is the reference side-effect service of docs/protocol.md:
 * it applies "effects" into PostgreSQL, honouring idempotency keys and
 * fencing tokens atomically with the effect (guarantees G4 and G5).
 *
 *   main.c    options, ordered start-up, sigwait() loop, ordered shutdown
 *   proto.c   pure helpers: header values, percent-decoding, payload digest,
 *             response bodies (unit-tested by tests/unit/test_sink_proto.c)
 *   faults.c  run-time fault settings (delay, error rate, drop, pause)
 *   inflight.c the apply requests in flight in this process, and their keys
 *   pool.c    a fixed pool of PostgreSQL connections, one per busy request
 *             or group
 *   schema.c  the sink's own schema (sql/sink/NNN_name.sql), applied at start-up
 *   effect.c  the apply transaction (one request, or a group under
 *             savepoints), and the status query
 *   group.c   group commit: requests that arrive close together share one
 *             transaction, applied by a committer thread
 *   http.c    both HTTP listeners (effects, admin): request life cycle
 *   admin.c   the admin routes (/admin/stats, /admin/faults, /metrics)
 *   retention.c forget keys past --key-retention, and move the keys of the
 *               tables of before sink schema 6 (header: retention.h)
 *
 * Process state lives in one sink_ctx, made by main() and passed everywhere;
 * there are no mutable globals.  Helpers shared between these files are
 * named pal__sink_*.
 */
#ifndef PALISADE_SINK_INT_H
#define PALISADE_SINK_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <glib.h>
#include <libpq-fe.h>
#include "palisade/err.h"
#include "palisade/metrics.h"
#include "palisade/store.h"

/* Bytes of Idempotency-Key: the protocol's limit (docs/protocol.md), the
 * same as the longest key a valid job can expand to (IDEM_KEY_MAX in
 * src/config/jobtemplate.c; tests/unit/test_sink_proto.c ties the two). */
#define SINK_KEY_MAX 1000
#define SINK_BODY_MAX (1u << 20)  /* bytes of request body (1 MiB) */
#define SINK_CHUNKS_MAX 100000	  /* Palisade-Test-Chunks upper bound */
#define SINK_DELAY_MAX_MS 3600000 /* delay_ms upper bound (one hour) */
#define SINK_THREADS_MAX 256	  /* --threads upper bound */

/* ---- proto.c: pure helpers --------------------------------------------- */

/* A fencing token: 1 to 20 ASCII digits, nothing else (no sign, no blanks),
 * value <= INT64_MAX (tokens come from a PostgreSQL bigint sequence).
 * Returns 0, or PAL_EINVAL (syntax) / PAL_ETOOBIG (above INT64_MAX). */
PAL_MUST_CHECK int pal__sink_parse_token(const char *s, int64_t *out);

/* A decimal integer in [MIN, MAX] (digits only, optional leading '-' when
 * MIN < 0).  Returns 0 or PAL_EINVAL. */
PAL_MUST_CHECK int pal__sink_parse_int(const char *s, int64_t min, int64_t max, int64_t *out);

/* A Palisade-Checkpoint of this sink: an integer in [0, MAX], bare ("2") or
 * as the JSON string the executor sends for a string checkpoint ("\"2\"").
 * Returns 0 or PAL_EINVAL. */
PAL_MUST_CHECK int pal__sink_parse_checkpoint(const char *s, int64_t max, int64_t *out);

/* SINK_KEY_MAX as text, for messages. */
#define SINK_STR_(x) #x
#define SINK_STR(x) SINK_STR_(x)

/* An Idempotency-Key header value: 1 to SINK_KEY_MAX bytes of UTF-8.
 * Returns NULL when KEY is acceptable, else the reason (a static string)
 * for the 400 answer. */
const char *pal__sink_check_key(const char *key);

/* Strict percent-decoding of a URL path segment into OUT (OUTLEN bytes,
 * NUL-terminated).  '+' stays '+'.  Refuses a malformed escape, a decoded
 * NUL byte and invalid UTF-8 (PAL_EINVAL), and a result of more than
 * OUTLEN - 1 bytes (PAL_ETOOBIG). */
PAL_MUST_CHECK int pal__sink_pct_decode(const char *in, char *out, size_t outlen);

/* Percent-encode S for use as one path segment (unreserved characters kept).
 * Returns a malloc()ed string the caller frees, NULL on ENOMEM. */
char *pal__sink_pct_encode(const char *s);

/* The payload digest: lower-case hex SHA-256 over METHOD "\n" TARGET "\n"
 * BODY, where TARGET is the request-target as sent (path and query).  HEX
 * receives 64 characters and a NUL. */
void pal__sink_digest(const char *method, const char *target, const void *body, size_t len,
		      char hex[65]);

/* Response bodies; each returns a malloc()ed JSON text (caller frees), NULL
 * on ENOMEM or when KEY is not valid UTF-8. */
char *pal__sink_body_applied(const char *key, int64_t fence);
/* A chunked effect after chunk DONE of TOTAL: {"has_more", "checkpoint",
 * "progress", "next_delay_s", "key"} (+ "applied": true on the last chunk).
 * Depends on (KEY, DONE, TOTAL) only, so a replay can regenerate it. */
char *pal__sink_body_chunk(const char *key, int done, int total);
/* {"error": CODE} plus DETAIL as "detail" when not NULL. */
char *pal__sink_body_error(const char *code, const char *detail);

/* ---- faults.c: run-time fault settings ---------------------------------- */

typedef struct sink_faults {
	int64_t delay_ms;  /* held inside the transaction before COMMIT */
	double error_rate; /* share answered 503 before touching the database */
	int error_status;  /* the status of those answers, 500-599 (0: 503) */
	double drop_rate;  /* share whose connection is dropped after COMMIT */
	bool paused;	   /* apply requests wait until unpaused */
} sink_faults;

/* ---- pool.c: PostgreSQL connections ------------------------------------- */

typedef struct sink_pool sink_pool;

/* One pooled connection.  PREPARED is owned by effect.c: it is cleared by
 * the pool whenever the connection is (re)opened. */
typedef struct sink_conn {
	PGconn *pg;
	bool busy;
	bool prepared;
} sink_conn;

/* A pool of N lazily opened connections to CONNINFO (copied).  Free with
 * pal__sink_pool_free().  Returns 0 or PAL_ENOMEM. */
PAL_MUST_CHECK int pal__sink_pool_new(const char *conninfo, int n, sink_pool **out);
/* Open a single connection outside the pool (start-up schema work); the
 * caller PQfinish()es it.  PAL_EDB with ERR filled on failure. */
PAL_MUST_CHECK int pal__sink_connect(const char *conninfo, PGconn **out, char *err, size_t errlen);
/* Take a free connection, waiting while all are busy; (re)connects a slot
 * whose connection is absent or broken.  Returns 0, PAL_EDB (cannot
 * connect; ERR filled) or PAL_EBUSY (the pool is shutting down).  Give it
 * back with pal__sink_pool_release() on every path. */
PAL_MUST_CHECK int pal__sink_pool_acquire(sink_pool *p, sink_conn **out, char *err, size_t errlen);
/* Return C; a connection left inside a transaction or broken is closed. */
void pal__sink_pool_release(sink_pool *p, sink_conn *c);
/* Wake every waiter of acquire() with PAL_EBUSY; later acquires fail too. */
void pal__sink_pool_interrupt(sink_pool *p);
/* Close all connections and free P.  No connection may be in use. */
void pal__sink_pool_free(sink_pool *p);

/* ---- schema.c: the sink's own schema ------------------------------------ */

/* sql/sink/, compiled in by ops/embed-sql.sh (the types: palisade/store.h). */
extern const pal_migration pal_sink_migrations[];
extern const int pal_sink_n_migrations;
extern const pal_sql_object pal_sink_objects[];
extern const int pal_sink_n_objects;
extern const char pal_sink_objects_digest[];

/* Apply the compiled-in sql/sink/NNN_name.sql files the database lacks, each
 * in one transaction with its sink_schema_migrations row, then the files
 * of sql/sink/functions/, under a session-level advisory lock.  *APPLIED
 * receives how many numbered steps were applied.
 * PAL_ESCHEMA when the database records a version this binary lacks. */
PAL_MUST_CHECK int pal__sink_schema_apply(PGconn *pg, int *applied, char *err, size_t errlen);
/* Write the compiled-in schema text to stdout, files in order (the
 * numbered steps, then the functions). */
void pal__sink_schema_print(void);

/* ---- the process context ------------------------------------------------ */

typedef struct sink_listener sink_listener;
typedef struct sink_group sink_group;

typedef struct sink_opts {
	const char *listen;	/* effects listener, host:port */
	const char *admin;	/* admin listener or NULL */
	const char *pg;		/* conninfo (PALISADE_PG or --pg) */
	int threads;		/* PostgreSQL connections = concurrent transactions */
	int max_conns;		/* concurrent HTTP connections of the effects listener */
	int max_conns_per_addr; /* of them from one client address */
	int head_timeout_ms;	/* a complete request head within this (both listeners) */
	int body_timeout_ms;	/* its body within this of the head (both listeners) */
	bool noop;		/* answer applies without PostgreSQL */
	int group_max;		/* requests per group transaction; 1 = one each */
	int group_wait_ms;	/* longest wait for a group to fill */
	int group_committers;	/* committer threads (transactions at once) */
} sink_opts;

typedef struct sink_ctx {
	sink_opts opts;
	pal_metrics *metrics; /* owned; counters are the stats of /admin/stats */
	sink_pool *pool;      /* owned; NULL in --noop mode */
	sink_group *group;    /* owned; NULL with --group-max 1 or --noop */
	sink_listener *http;  /* owned */
	sink_listener *admin; /* owned, NULL without --admin */

	pthread_mutex_t mu; /* guards faults, stopping, inflight, inflight_keys, lost_keys */
	pthread_cond_t cv;  /* broadcast on fault change and on stop */
	sink_faults faults;
	bool stopping;
	int inflight;		   /* apply requests past validation, not yet answered */
	GHashTable *inflight_keys; /* their keys (owned copies) -> requests for each */
	GHashTable *lost_keys;	   /* keys whose COMMIT's fate was lost (owned copies) */
	atomic_int n_lost;	   /* their number, read without ctx->mu */
} sink_ctx;

/* inflight.c: the apply requests in flight in this process (under ctx->mu).
 * init makes the empty set (glib aborts when out of memory), free drops it.
 * enter counts a request for KEY in flight, from header validation on;
 * leave, once it is answered, takes one back: both return the requests now
 * in flight.  has: whether a request for KEY is in flight. */
void pal__sink_inflight_init(sink_ctx *ctx);
void pal__sink_inflight_free(sink_ctx *ctx);
int pal__sink_inflight_enter(sink_ctx *ctx, const char *key);
int pal__sink_inflight_leave(sink_ctx *ctx, const char *key);
bool pal__sink_inflight_has(sink_ctx *ctx, const char *key);

/* inflight.c too: the keys whose last COMMIT's fate the sink lost (answered
 * without an answer, "A COMMIT whose fate is unknown" in docs/sink.md), kept
 * until PostgreSQL answers a request or a status query for the key again:
 * until then a request for such a key that cannot reach the database is
 * answered 409 in_progress, not 503 "not applied".  lost: KEY's fate was
 * lost; lost_has: whether it is kept; found: PostgreSQL answered for KEY.
 * At most SINK_LOST_MAX keys are kept; past that the set starts again
 * empty.  found and lost_has cost an atomic read while the set is empty. */
#define SINK_LOST_MAX 4096
void pal__sink_lost(sink_ctx *ctx, const char *key);
bool pal__sink_lost_has(sink_ctx *ctx, const char *key);
void pal__sink_found(sink_ctx *ctx, const char *key);

/* faults.c */
void pal__sink_faults_get(sink_ctx *ctx, sink_faults *out);
/* Validate a JSON object {"delay_ms", "error_rate", "error_status", "drop_after_commit_rate",
 * "paused"} (any subset, nothing else) and apply it all or nothing.  Returns
 * 0 or PAL_EINVAL with ERR filled; OUT receives the settings now in force. */
PAL_MUST_CHECK int pal__sink_faults_update(sink_ctx *ctx, const char *json, size_t len,
					   sink_faults *out, char *err, size_t errlen);
/* Block while paused; returns false when the sink is stopping. */
bool pal__sink_wait_unpaused(sink_ctx *ctx);
/* Sleep MS milliseconds, cut short when the sink starts stopping. */
void pal__sink_sleep_ms(sink_ctx *ctx, int64_t ms);
/* Export the settings as gauges (called after every change). */
void pal__sink_faults_publish(sink_ctx *ctx, const sink_faults *f);

/* ---- effect.c: the transaction ------------------------------------------ */

typedef enum sink_outcome {
	SINK_APPLIED,	     /* the effect (or one chunk) committed */
	SINK_REPLAYED,	     /* same key, same payload: stored answer */
	SINK_STALE,	     /* a higher token was seen for the key */
	SINK_IN_PROGRESS,    /* another request for the key is in flight */
	SINK_MISMATCH,	     /* same key, another payload */
	SINK_BAD_CHECKPOINT, /* checkpoint ahead of the stored progress */
	SINK_DB_ERROR,	     /* PostgreSQL failed before anything committed: 503 */
	SINK_UNKNOWN,	     /* the COMMIT was sent and its answer lost: it may
				have committed; no answer (the connection is
				closed), the protocol's "unknown" */
} sink_outcome;

/* One validated apply request; strings are borrowed. */
typedef struct sink_apply_req {
	const char *key;
	int64_t token;
	const char *method;
	const char *target;	  /* request-target as sent */
	const char *digest;	  /* pal__sink_digest() */
	const char *trigger;	  /* decimal or NULL */
	const char *attempt;	  /* decimal or NULL */
	const char *scheduled_at; /* RFC 3339 or NULL */
	int chunks;		  /* 1 = a plain effect */
	int chunk;		  /* the chunk asked for, 1..chunks */
	int64_t delay_ms;	  /* held before COMMIT */
	/* traceparent's trace and span ids ("" when absent or not valid: a
	 * receiver ignores a malformed one, W3C Trace Context) */
	char trace_id[33];
	char span_id[17];
	char trace_flags[3];
	const char *tracestate; /* as received, NULL when absent */
} sink_apply_req;

typedef struct sink_reply {
	sink_outcome outcome;
	unsigned status; /* 0 with SINK_UNKNOWN */
	char *body;	 /* malloc()ed JSON (NULL with SINK_UNKNOWN); the caller frees */
	int64_t highest; /* SINK_STALE: the highest token seen */
	bool committed;	 /* COMMIT succeeded */
} sink_reply;

/* Run the apply transaction of docs/sink.md on C.  Always fills OUT (body
 * may be NULL on ENOMEM); a failed COMMIT is SINK_DB_ERROR when PostgreSQL
 * refused it and the session goes on, SINK_UNKNOWN when the connection was
 * lost with it.  The connection is idle again on return. */
void pal__sink_effect_apply(sink_ctx *ctx, sink_conn *c, const sink_apply_req *rq, sink_reply *out);
/* GET /effects/<key>: 200 with the record when the effect is complete;
 * 409 in_progress (SINK_IN_PROGRESS) while an apply transaction holds the
 * key, or when INFLIGHT (an apply request for the key is in flight in this
 * process, pal__sink_inflight_has() before the call); 404 otherwise; 503
 * when PostgreSQL fails.  Fills OUT like apply. */
void pal__sink_effect_query(sink_conn *c, const char *key, bool inflight, sink_reply *out);
/* Apply the N requests RQS in one transaction on C: BEGIN, one call of
 * sink_apply_group() (sql/sink/functions/sink_apply_group.sql: the steps
 * of pal__sink_effect_apply for every request, set-based when the keys
 * are distinct and every request is for chunk 1, else for each request in
 * a subtransaction of its own; what a request alone would roll back rolled
 * back for it only; then the group's applied_at), COMMIT.  OUTS[i]
 * answers RQS[i] (bodies malloc()ed, the caller frees).  When the call
 * fails, every OUTS[i] is 503 db_unavailable if nothing was sent or
 * PostgreSQL refused it and the session goes on (rolled back), and
 * SINK_UNKNOWN if the connection was lost once the call was sent (its
 * implicit COMMIT may have happened); SINK_UNKNOWN too when the call
 * committed but returned other rows than requests.  No delay is held
 * (requests with one are applied alone).  C is idle again on return. */
void pal__sink_effect_group(sink_conn *c, const sink_apply_req *const *rqs, sink_reply *outs,
			    int n);

/* ---- group.c: group commit ---------------------------------------------- */

#define SINK_GROUP_MAX 1000	 /* --group-max upper bound */
#define SINK_GROUP_WAIT_MAX 1000 /* --group-wait-ms upper bound */

/* Start COMMITTERS committer threads applying groups of at most MAX
 * requests, each waiting at most WAIT_MS for a group to fill, over CTX's
 * pool.  Free with pal__sink_group_stop().  Returns 0 or PAL_ENOMEM. */
PAL_MUST_CHECK int pal__sink_group_start(sink_ctx *ctx, int max, int wait_ms, int committers,
					 sink_group **out);
/* Apply RQ (borrowed until return) in the next group; blocks until that
 * group's COMMIT returned (or failed), then fills OUT like
 * pal__sink_effect_apply. */
void pal__sink_group_apply(sink_group *g, const sink_apply_req *rq, sink_reply *out);
/* Answer what is queued, join the committers, free G (NULL is a no-op).
 * No request may be waiting in pal__sink_group_apply() after it returns. */
void pal__sink_group_stop(sink_group *g);

/* ---- http.c / admin.c ---------------------------------------------------- */

/* Start a listener on ADDR (host:port, [v6]:port; port 0 = any).  ADMIN
 * selects the admin routes and a single serving thread; otherwise every
 * connection gets its own thread (requests block inside PostgreSQL).
 * Free with pal__sink_listener_stop(). */
PAL_MUST_CHECK int pal__sink_listener_start(sink_ctx *ctx, const char *addr, bool admin,
					    sink_listener **out, char *err, size_t errlen);
int pal__sink_listener_port(const sink_listener *l);
/* Stop accepting new connections and wait up to TIMEOUT_MS for the requests
 * under way to be answered (NULL is a no-op). */
void pal__sink_listener_drain(sink_listener *l, int timeout_ms);
/* Close connections, join threads, free L (NULL is a no-op). */
void pal__sink_listener_stop(sink_listener *l);

struct MHD_Connection;
/* Queue a JSON response: BODY is malloc()ed and taken (NULL answers 500
 * "out of memory"); HNAME/HVALUE one extra header, HNAME NULL for none. */
int pal__sink_respond(struct MHD_Connection *conn, unsigned status, char *body, const char *hname,
		      const char *hvalue);

/* Admin routes; BODY/LEN is the request body.  Returns an MHD_Result. */
int pal__sink_admin_route(sink_ctx *ctx, struct MHD_Connection *conn, const char *url,
			  const char *method, const char *body, size_t len);

/* Metric names (families declared in main.c; group.c declares its own). */
#define SINK_M_REQUESTS "palisade_sink_requests_total"
#define SINK_M_OUTCOMES "palisade_sink_outcomes_total"
#define SINK_M_INFLIGHT "palisade_sink_inflight"
#define SINK_M_FAULT "palisade_sink_fault"

/* The outcome counters (label values of SINK_M_OUTCOMES), in the order
 * /admin/stats lists them; defined in admin.c. */
extern const char *const pal__sink_outcomes[];
extern const size_t pal__sink_n_outcomes;

/* Count one outcome: pal_metric_inc of SINK_M_OUTCOMES{outcome=NAME}. */
void pal__sink_count(sink_ctx *ctx, const char *name);

#endif
