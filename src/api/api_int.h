/*
 * api_int.h - what the files of the HTTP API share (src/api): the API's
 * handle, the request being served, the helpers every handler answers with
 * (answer.c) and the handlers the route table of api.c names, one file per
 * family of routes.  Not installed; nothing outside src/api includes it.
 */
#ifndef PALISADE_API_INT_H
#define PALISADE_API_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <glib.h>
#include <jansson.h>
#include "palisade/api.h"
#include "palisade/ops.h"
#include "palisade/store.h"
#include "palisade/tokens.h"

#define PAGE_DEFAULT 100
#define PAGE_MAX 1000
#define PROBLEM_BASE "urn:palisade:problem:"

struct pal_api {
	pthread_mutex_t mu;
	char *conninfo;
	char *admin_token;
	int64_t key_retention_ms;
	int default_shards;
	int timeout_ms;
	int64_t misfire_threshold_ms, resume_ramp_ms[4]; /* pal_api_config */
	pal_store *st;	     /* NULL until the first request, or after it broke */
	GHashTable *buckets; /* token id -> struct bucket: the write rate limit */
	char *node_id;
	void (*drain)(void *arg);
	void *drain_arg;
	uint64_t trace_prefix;		      /* pal_trace_cluster(cluster.name) */
	char *cluster, *zk_connect, *zk_root; /* apply's check of the nodes' schemas */
	const pal_secret_policy *secrets;     /* borrowed (pal_api_config) */
	const pal_target_policy *targets;     /* borrowed (pal_api_config) */
};

/* One request being served. */
typedef struct call {
	pal_api *api;
	const pal_api_request *req;
	pal_token_identity who;
	const char *arg[2]; /* the path's {..} segments */
	char argbuf[2][160];
	json_t *body; /* a write's JSON object (an empty one when no body) */
	unsigned status;
	json_t *out;	      /* the answer's JSON */
	bool problem;	      /* OUT is a problem document */
	const char *replayed; /* "true" when the answer is an earlier one */
	int retry_after;      /* seconds, with a 429 */
} call;

/* ---- answer.c: answers, the request, pages, tenants and scopes ---------- */

/* An RFC 9457 problem as C's answer: TYPE is the stable slug of the error
 * (PROBLEM_BASE TYPE), the detail FMT. */
void pal_api__problem(call *c, unsigned status, const char *type, const char *title,
		      const char *fmt, ...) __attribute__((format(printf, 5, 6)));
void pal_api__problem_rc(call *c, int rc, const char *err);
/* 422 too-many-instants: the request would compute more than LIMIT
 * instants (its "limit"); ERR says which and how to narrow it. */
void pal_api__too_many(call *c, long long limit, const char *err);
void pal_api__ok(call *c, unsigned status, json_t *out);
const char *pal_api__header(call *c, const char *name);
const char *pal_api__query(call *c, const char *name);
bool pal_api__body_str(call *c, const char *name, const char **out);
bool pal_api__reason(call *c, bool optional, const char **out);
/* ?NAME=N, an integer in LO..HI, into *OUT (DFLT without it); false with
 * a 400 bad-parameter answered. */
bool pal_api__query_int(call *c, const char *name, int lo, int hi, int dflt, int *out);
bool pal_api__page_limit(call *c, int *limit);
json_t *pal_api__page_json(json_t *items, char *next);
void pal_api__page_answer(call *c, int rc, json_t *rows, char *next, const char *err);
char *pal_api__tenants_literal(const pal_token_identity *w);
bool pal_api__tenant_allowed(call *c, const char *tenant, bool write, const char *what,
			     const char *name);
bool pal_api__job_visible(call *c, bool write);
bool pal_api__unscoped(call *c);
pal_resume_opts pal_api__resume_opts(const pal_api *api, pal_scope_kind kind);
bool pal_api__body_time(call *c, const char *field, bool required, int64_t *out);
bool pal_api__query_time(call *c, const char *name, int64_t *out);
bool pal_api__query_scope(call *c, pal_scope *sc);

/* ---- what a route accepts ----------------------------------------------- */

/*
 * The names a route reads of its request besides its path: the fields of
 * its JSON body and its query arguments, each a space-separated list ("":
 * none).  Each handler declares its own beside its code (PAL_API_ACCEPTS,
 * one per handler, naming every field and argument the handler or a helper
 * it calls reads); the route table of api.c names it with the handler, and
 * run() refuses a request with any other name before the handler runs: 422
 * invalid for a body field, 400 bad-parameter for a query argument
 * (docs/api.md, "Unknown fields and arguments").  A body that is not JSON
 * (apply, plan diff, shadow diff) has no fields to check.
 */
typedef struct pal_api_accepts {
	const char *body;
	const char *query;
} pal_api_accepts;

#define PAL_API_ACCEPTS(NAME, BODY, QUERY) const pal_api_accepts pal_api__a_##NAME = {BODY, QUERY}

/* A handler of the route table and what it accepts. */
#define PAL_API_ROUTE(NAME)                                                                        \
	void pal_api__h_##NAME(call *c);                                                           \
	extern const pal_api_accepts pal_api__a_##NAME

/* ---- the handlers of the route table (api.c), by family ----------------- */

/* routes_jobs.c: jobs, calendars, notify rules, apply, plan diff, delete */
PAL_API_ROUTE(jobs);
PAL_API_ROUTE(job);
PAL_API_ROUTE(calendars);
PAL_API_ROUTE(notify_rules);
PAL_API_ROUTE(job_delete);
PAL_API_ROUTE(apply);
PAL_API_ROUTE(plan_diff);

/* routes_runs.c: triggers and runs of jobs, attempts, misfires, tickets */
PAL_API_ROUTE(job_trigger);
PAL_API_ROUTE(job_cancel);
PAL_API_ROUTE(trigger_cancel);
PAL_API_ROUTE(trigger_attempts);
PAL_API_ROUTE(job_backfill);
PAL_API_ROUTE(misfires);
PAL_API_ROUTE(triggers);
PAL_API_ROUTE(tickets);
PAL_API_ROUTE(ticket);
PAL_API_ROUTE(ticket_resolve);

/* routes_ops.c: pauses and resumes, release, drain, tokens, rollback,
 * cutover, shadow */
PAL_API_ROUTE(job_pause);
PAL_API_ROUTE(job_resume);
PAL_API_ROUTE(job_release);
PAL_API_ROUTE(drain);
PAL_API_ROUTE(tokens);
PAL_API_ROUTE(token_create);
PAL_API_ROUTE(token_revoke);
PAL_API_ROUTE(rollback);
PAL_API_ROUTE(cutover);
PAL_API_ROUTE(shadow_set);
PAL_API_ROUTE(shadow_list);
PAL_API_ROUTE(shadow_diff);
PAL_API_ROUTE(group_pause);
PAL_API_ROUTE(group_resume);
PAL_API_ROUTE(tenant_pause);
PAL_API_ROUTE(tenant_resume);
PAL_API_ROUTE(all_pause);
PAL_API_ROUTE(all_resume);

/* routes_reads.c: audit, gates, verify, status, report cost */
PAL_API_ROUTE(audit);
PAL_API_ROUTE(gates);
PAL_API_ROUTE(verify);
PAL_API_ROUTE(status);
PAL_API_ROUTE(report_cost);

#endif
