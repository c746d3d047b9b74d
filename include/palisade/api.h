/*
 * api.h - the HTTP API, /api/v1 on the node's admin listener (docs/api.md;
 * the routes are described by docs/api/openapi.json, served at
 * /api/v1/openapi.json).
 *
 * The admin endpoint (admin.c) hands every /api/v1 request here once its
 * Host and Origin checks passed and its body is read; this module knows
 * nothing of HTTP servers.  Each request is authenticated with
 * "Authorization: Bearer TOKEN": an API token (tokens.h), checked against
 * the database on every request, or the node's admin token (role admin,
 * name "admin-token").  The route's role and the token's tenants decide
 * the rest; the work is done by the same store and operator functions the
 * CLI calls.
 *
 * A pal_api owns one PostgreSQL connection, opened by the first request in
 * the thread that serves it; requests are served one at a time (a mutex).
 */
#ifndef PALISADE_API_H
#define PALISADE_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "palisade/err.h"
#include "palisade/secrets.h"
#include "palisade/targethosts.h"
#include "palisade/tokens.h"

typedef struct pal_api_config {
	const char *conninfo;	  /* the node's PostgreSQL conninfo */
	const char *admin_token;  /* the node's admin bearer token; NULL: none */
	int64_t key_retention_ms; /* sink.key_retention: apply's key horizon check */
	int default_shards;	  /* shards of a new cluster (apply) */
	int timeout_ms;		  /* per statement; 0: 5000 */
	/* what a resume applies (controller.misfire_threshold, and
	 * resume.ramp_* by pal_scope_kind: global, job, group, tenant) */
	int64_t misfire_threshold_ms;
	int64_t resume_ramp_ms[4];
	const char *node_id; /* this node (the scope of a drain's audit row) */
	/* POST /api/v1/drain: ask this node to drain (must not block); NULL:
	 * the route answers 501 */
	void (*drain)(void *arg);
	void *drain_arg;
	const char *cluster; /* cluster.name: the prefix of its trace ids (trace.h) */
	/* zookeeper.connect and zookeeper.root: apply reads the live nodes'
	 * schemas there (pal_coord_require_schema) */
	const char *zk_connect, *zk_root;
	/* the node's secret policy: apply and plan diff refuse a job naming a
	 * secret it may not (borrowed: outlives the API; NULL: the default) */
	const pal_secret_policy *secrets;
	/* the node's target host policy: apply and plan diff refuse a job
	 * calling or notifying a host its tenant is not given (borrowed;
	 * NULL: any host) */
	const pal_target_policy *targets;
} pal_api_config;

typedef struct pal_api pal_api;

/* Copies CFG; connects nothing yet.  Free with pal_api_close(). */
PAL_MUST_CHECK int pal_api_open(const pal_api_config *cfg, pal_api **out, char *err, size_t errlen);
void pal_api_close(pal_api *api);

/* A request as the listener saw it.  LOOKUP(CTX, HEADER, NAME) returns a
 * request header (HEADER true) or a decoded query argument, NULL when
 * absent. */
typedef struct pal_api_request {
	const char *method;
	const char *path;   /* "/api/v1/..." without the query */
	const char *client; /* "addr:port" */
	const char *body;   /* BODY_LEN bytes, not NUL-terminated; may be NULL */
	size_t body_len;
	const char *(*lookup)(void *ctx, bool header, const char *name);
	void *ctx;
	/* The decoded query arguments in one canonical text (sorted, each
	 * length-prefixed), NULL or "" when none: part of what an
	 * Idempotency-Key is compared with. */
	const char *query;
} pal_api_request;

/* An answer: STATUS, CONTENT_TYPE (static), BODY (LEN bytes, malloc()ed,
 * freed by the caller with free()) and up to four extra headers (static
 * names, values in the struct): Palisade-Version, the node's release, on
 * every answer (a client finds out what the node reads; 0.3.0 sets none). */
typedef struct pal_api_reply {
	unsigned status;
	const char *content_type;
	char *body;
	size_t len;
	int n_headers;
	const char *header_name[4];
	char header_value[4][128];
} pal_api_reply;

/* Serve REQ into OUT.  Blocks for at most a few statement timeouts. */
void pal_api_serve(pal_api *api, const pal_api_request *req, pal_api_reply *out);

/* Who TOKEN is (an API token, checked in the database, or the node's admin
 * token) into OUT: how the console's login learns the role and tenants of a
 * token.  PAL_ENOENT (ERR filled) when it is unknown or revoked, PAL_EDB
 * when the database cannot say.  Blocks for at most a statement timeout. */
PAL_MUST_CHECK int pal_api_identify(pal_api *api, const char *token, pal_token_identity *out,
				    char *err, size_t errlen);

/* The OpenAPI document compiled into the binary (docs/api/openapi.json). */
extern const char pal_api_openapi[];
extern const size_t pal_api_openapi_len;

#endif
