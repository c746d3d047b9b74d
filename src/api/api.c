/*
 * api.c - the HTTP API (api.h): routing, authentication, roles and tenants,
 * idempotency, problem answers; the work itself is done by the store and
 * operator functions the CLI calls (ops.h, lifecycle.h, tokens.h,
 * apistore.h).
 *
 * Flow of a request: match a route (404 / 405), authenticate (401), check
 * the role (403), parse the JSON body of a write (400 / 415), then for a
 * write with an Idempotency-Key look up its earlier answer (replayed as it
 * was, 409 while the first is still served, 422 when the key was used for
 * another request), then run the handler, whose answer is kept for the key.
 * Before any write the connection is stamped with the token's role and the
 * client address, which the audit rows of the request carry (sql/024); the
 * actor of those rows is the token's name.
 *
 * Tenants: a token limited to tenants sees only their jobs.  A read of
 * another tenant's job answers 404, as if it did not exist; a write to it
 * 403.  Routes that are not about one job (group and global pauses, audit,
 * gates, tokens) are refused to such a token with 403.
 *
 * Threading: called from the admin endpoint's thread; one request at a
 * time under MU, on one connection of our own, opened on first use and
 * reopened after it broke.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <glib.h>
#include <jansson.h>
#include "palisade/coord.h"
#include "palisade/cutover.h"
#include "palisade/api.h"
#include "palisade/apistore.h"
#include "palisade/clock.h"
#include "palisade/name.h"
#include "palisade/jobfile.h"
#include "palisade/aftergraph.h"
#include "palisade/keyhorizon.h"
#include "palisade/lifecycle.h"
#include "palisade/log.h"
#include "palisade/ops.h"
#include "palisade/shadow.h"
#include "palisade/shadowdiff.h"
#include "palisade/plandiff.h"
#include "palisade/report.h"
#include "palisade/store.h"
#include "palisade/timefmt.h"
#include "palisade/tokens.h"
#include "palisade/retention.h"
#include "palisade/verify.h"
#include "palisade/trace.h"

#define PAGE_DEFAULT 100
#define PAGE_MAX 1000
#define BACKFILL_MAX 1000
#define DIFF_COUNT 5		     /* instants per job of a dry run (plan diff's default) */
#define DIFF_COUNT_MAX 10000	     /* plan diff's --count bound */
#define COST_LIMIT 50		     /* job rows of report cost (its --limit default) */
#define COST_LIMIT_MAX 100000	     /* report cost's --limit bound */
#define ROLLBACK_WAIT_MS 30000	     /* rollback's wait for running calls (its --wait default) */
#define ROLLBACK_WAIT_MAX_MS 60000   /* and at most, through the API */
#define CUTOVER_MAX_PENDING_MS 60000 /* cutover's --max-pending-age default */
#define SHADOW_DIFF_LIMIT 1000	     /* differences of shadow diff (its --limit default) */
#define SHADOW_DIFF_LIMIT_MAX 100000 /* and at most, through the API */
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
};

/*
 * The write rate limit: a token bucket per API token and node, WRITE_BURST
 * writes at once and WRITE_RATE a second after that; a write over it
 * answers 429 with Retry-After.  Per node, in memory: a client spread over
 * several nodes gets the limit of each (the limit protects a node and its
 * database connection from one runaway pipeline, not a quota).
 */
#define WRITE_RATE 20.0
#define WRITE_BURST 60.0
struct bucket {
	double tokens;
	int64_t at_ms; /* CLOCK_MONOTONIC of the last refill */
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

/* ---- answers ------------------------------------------------------------- */

/* An RFC 9457 problem: TYPE is the stable slug of the error. */
static void problem(call *c, unsigned status, const char *type, const char *title, const char *fmt,
		    ...) __attribute__((format(printf, 5, 6)));
static void problem(call *c, unsigned status, const char *type, const char *title, const char *fmt,
		    ...)
{
	char detail[1200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(detail, sizeof detail, fmt, ap);
	va_end(ap);
	char t[96];
	snprintf(t, sizeof t, PROBLEM_BASE "%s", type);
	json_decref(c->out);
	c->out = json_pack("{s:s, s:s, s:i, s:s, s:s}", "type", t, "title", title, "status",
			   (int)status, "detail", detail, "instance", c->req->path);
	c->status = status;
	c->problem = true;
}

/* A PAL_E* code of a store or operator function as a problem. */
static void problem_rc(call *c, int rc, const char *err)
{
	switch (rc) {
	case PAL_ENOENT:
		problem(c, 404, "not-found", "Not found", "%s", err);
		break;
	case PAL_ESTALE:
		problem(c, 409, "conflict", "Refused in the current state", "%s", err);
		break;
	case PAL_EINVAL:
		problem(c, 422, "invalid", "Invalid request", "%s", err);
		break;
	case PAL_ETOOBIG:
		problem(c, 422, "too-big", "Over a limit", "%s", err);
		break;
	case PAL_EBUSY:
	case PAL_EDB:
		problem(c, 503, "unavailable", "Database unavailable", "%s", err);
		break;
	default:
		problem(c, 500, "internal", "Internal error", "%s", err);
		break;
	}
}

static void ok(call *c, unsigned status, json_t *out)
{
	json_decref(c->out);
	c->out = out;
	c->status = status;
	c->problem = false;
}

/* ---- request helpers ------------------------------------------------------ */

static const char *header(call *c, const char *name)
{
	return c->req->lookup(c->req->ctx, true, name);
}

static const char *query(call *c, const char *name)
{
	const char *v = c->req->lookup(c->req->ctx, false, name);
	return v && *v ? v : NULL;
}

/* A string field of the JSON body, NULL when absent; false (problem set)
 * when present and not a string. */
static bool body_str(call *c, const char *name, const char **out)
{
	json_t *v = json_object_get(c->body, name);
	*out = NULL;
	if (!v || json_is_null(v))
		return true;
	if (!json_is_string(v)) {
		problem(c, 422, "invalid", "Invalid request", "field \"%s\" must be a string",
			name);
		return false;
	}
	*out = json_string_value(v);
	return true;
}

/* The reason of an action: required unless OPTIONAL. */
static bool reason(call *c, bool optional, const char **out)
{
	if (!body_str(c, "reason", out))
		return false;
	if (!optional && (!*out || !**out)) {
		problem(c, 422, "reason-required", "A reason is required",
			"say why in \"reason\": it is kept in the audit log");
		return false;
	}
	return true;
}

/* ?limit= in 1..PAGE_MAX (default PAGE_DEFAULT); false (problem) otherwise. */
static bool page_limit(call *c, int *limit)
{
	const char *s = query(c, "limit");
	*limit = PAGE_DEFAULT;
	if (!s)
		return true;
	char *end;
	long v = strtol(s, &end, 10);
	if (*end || v < 1 || v > PAGE_MAX) {
		problem(c, 400, "bad-parameter", "Bad parameter",
			"limit \"%.20s\": expected an integer in 1..%d", s, PAGE_MAX);
		return false;
	}
	*limit = (int)v;
	return true;
}

/* {"items": ITEMS, "next_cursor": NEXT or null}; takes both. */
static json_t *page_json(json_t *items, char *next)
{
	json_t *o = json_pack("{s:o, s:o}", "items", items, "next_cursor",
			      next ? json_string(next) : json_null());
	g_free(next);
	return o;
}

/* RC of a page read into ROWS and NEXT (taken): the page, or the problem
 * (PAL_EINVAL is a ?cursor= the API did not give: 400). */
static void page_answer(call *c, int rc, json_t *rows, char *next, const char *err)
{
	if (rc == PAL_EINVAL)
		problem(c, 400, "bad-parameter", "Bad parameter", "%s", err);
	else if (rc)
		problem_rc(c, rc, err);
	else
		ok(c, 200, page_json(rows, next));
}

/* The tenant array of the token for the list queries: NULL (every tenant)
 * or a text[] literal (g_free). */
static char *tenants_literal(const pal_token_identity *w)
{
	if (w->n_tenants == 0)
		return NULL;
	GString *s = g_string_new("{");
	for (size_t i = 0; i < w->n_tenants; i++)
		g_string_append_printf(s, "%s\"%s\"", i ? "," : "", w->tenants[i]);
	g_string_append_c(s, '}');
	return g_string_free(s, FALSE);
}

/* The token sees TENANT; otherwise a problem: 403 for a write, 404 ("no
 * WHAT NAME", as if it did not exist) for a read. */
static bool tenant_allowed(call *c, const char *tenant, bool write, const char *what,
			   const char *name)
{
	if (pal_token_sees_tenant(&c->who, tenant))
		return true;
	if (write)
		problem(c, 403, "forbidden-tenant", "Not your tenant",
			"token %s may not act on tenant %s", c->who.name, tenant);
	else
		problem(c, 404, "not-found", "Not found", "no %s \"%.64s\"", what, name);
	return false;
}

/*
 * The job of path argument 0 is visible to the token: true when it
 * exists and the token sees its tenant.  Otherwise a problem: 404 for a
 * job that does not exist or (reads) of another tenant, 403 (writes) of
 * another tenant.
 */
static bool job_visible(call *c, bool write)
{
	const char *id = c->arg[0];
	if (!pal_name_ok(id, 128)) {
		problem(c, 404, "not-found", "Not found", "no job \"%.64s\"", id);
		return false;
	}
	char tenant[65], err[512];
	int rc = pal_apistore_job_tenant(c->api->st, id, tenant, err, sizeof err);
	if (rc) {
		problem_rc(c, rc, err);
		return false;
	}
	return tenant_allowed(c, tenant, write, "job", id);
}

/* A token limited to tenants may not use this route. */
static bool unscoped(call *c)
{
	if (c->who.n_tenants == 0)
		return true;
	problem(c, 403, "forbidden-tenant", "Not for a tenant-scoped token",
		"token %s is limited to tenants; this route concerns all of them", c->who.name);
	return false;
}

/* ---- handlers --------------------------------------------------------------- */

static void h_openapi(call *c)
{
	json_error_t je;
	json_t *doc = json_loadb(pal_api_openapi, pal_api_openapi_len, 0, &je);
	if (!doc) {
		problem(c, 500, "internal", "Internal error", "the compiled-in document: %s",
			je.text);
		return;
	}
	ok(c, 200, doc);
}

static void h_jobs(call *c)
{
	int limit;
	if (!page_limit(c, &limit))
		return;
	const char *retired = query(c, "retired");
	if (retired && strcmp(retired, "true") && strcmp(retired, "false")) {
		problem(c, 400, "bad-parameter", "Bad parameter",
			"retired: expected true or false");
		return;
	}
	char *tl = tenants_literal(&c->who), *next = NULL, err[1024];
	json_t *rows;
	int rc = pal_apistore_jobs_page(c->api->st, tl, query(c, "tenant"), query(c, "group"),
					retired && !strcmp(retired, "true"), query(c, "cursor"),
					limit, &rows, &next, err, sizeof err);
	g_free(tl);
	page_answer(c, rc, rows, next, err);
}

static void h_job(call *c)
{
	if (!job_visible(c, false))
		return;
	json_t *jobs = NULL, *meta = NULL;
	char err[1024];
	int rc = pal_store_jobs_json(c->api->st, c->arg[0], &jobs, err, sizeof err);
	if (!rc)
		rc = pal_store_job_meta_json(c->api->st, c->arg[0], &meta, err, sizeof err);
	json_t *j = json_array_get(jobs, 0);
	if (!rc && !j)
		rc = PAL_ENOENT, snprintf(err, sizeof err, "no job \"%s\"", c->arg[0]);
	if (rc) {
		problem_rc(c, rc, err);
	} else {
		json_t *m = json_object_get(meta, c->arg[0]);
		if (m)
			json_object_update(j, m);
		ok(c, 200, json_incref(j));
	}
	json_decref(jobs);
	json_decref(meta);
}

/* GET /api/v1/calendars and /api/v1/calendars/{name}: a tenant-scoped
 * token sees the calendars its tenants' live jobs name, with those jobs;
 * another is 404 to it, as another tenant's job is. */
static void h_calendars(call *c)
{
	int limit;
	if (!c->arg[0] && !page_limit(c, &limit))
		return;
	char *tl = tenants_literal(&c->who), *next = NULL, err[1024];
	json_t *rows;
	int rc = pal_apistore_calendars_page(c->api->st, tl, c->arg[0], query(c, "cursor"),
					     c->arg[0] ? 1 : limit, &rows, &next, err, sizeof err);
	g_free(tl);
	if (rc) {
		problem_rc(c, rc, err);
	} else if (!c->arg[0]) {
		ok(c, 200, page_json(rows, next));
	} else if (json_array_size(rows)) {
		ok(c, 200, json_incref(json_array_get(rows, 0)));
		json_decref(rows);
	} else {
		problem(c, 404, "not-found", "Not found", "no calendar \"%.64s\"", c->arg[0]);
		json_decref(rows);
	}
}

/* What a resume of a scope of KIND applies: the node's config. */
static pal_resume_opts resume_opts(const pal_api *api, pal_scope_kind kind)
{
	return (pal_resume_opts){.misfire_threshold_ms = api->misfire_threshold_ms,
				 .ramp_ms = api->resume_ramp_ms[kind]};
}

/* Pause or resume scope SC. */
static void gate(call *c, const pal_scope *sc, bool pause)
{
	const char *why;
	if (!reason(c, !pause, &why))
		return;
	char scope[300], err[1024];
	pal_scope_format(sc, scope, sizeof scope);
	int rc;
	if (pause) {
		pal_pause_result r;
		rc = pal_ops_pause(c->api->st, sc, c->who.name, why, &r, err, sizeof err);
		if (!rc)
			ok(c, 200,
			   json_pack("{s:s, s:b, s:s, s:I, s:I, s:I}", "scope", scope, "was_paused",
				     r.was_paused, "since", r.since, "running_to_pausing",
				     (json_int_t)r.asked, "pending_held", (json_int_t)r.held,
				     "jobs", (json_int_t)r.jobs));
	} else {
		pal_resume_result r;
		pal_resume_opts ro = resume_opts(c->api, sc->kind);
		rc = pal_ops_resume(c->api->st, sc, c->who.name, why, &ro, &r, err, sizeof err);
		if (!rc)
			ok(c, 200, pal_resume_result_json(scope, &r));
	}
	if (rc)
		problem_rc(c, rc, err);
}

static void h_job_pause(call *c)
{
	if (job_visible(c, true))
		gate(c, &(pal_scope){PAL_SCOPE_JOB, c->arg[0]}, true);
}

static void h_job_resume(call *c)
{
	if (job_visible(c, true))
		gate(c, &(pal_scope){PAL_SCOPE_JOB, c->arg[0]}, false);
}

/* Group, tenant and global scopes. */
static bool scope_arg(call *c, pal_scope_kind kind, pal_scope *sc)
{
	*sc = (pal_scope){kind, c->arg[0]};
	if (kind == PAL_SCOPE_GLOBAL)
		return unscoped(c);
	if (!pal_name_ok(c->arg[0], 64)) {
		problem(c, 422, "invalid", "Invalid request",
			"\"%.64s\" is not a group or tenant name", c->arg[0]);
		return false;
	}
	if (kind == PAL_SCOPE_TENANT && !pal_token_sees_tenant(&c->who, c->arg[0])) {
		problem(c, 403, "forbidden-tenant", "Not your tenant",
			"token %s may not act on tenant %s", c->who.name, c->arg[0]);
		return false;
	}
	return kind == PAL_SCOPE_TENANT || unscoped(c);
}

#define SCOPE_HANDLERS(NAME, KIND)                                                                 \
	static void h_##NAME##_pause(call *c)                                                      \
	{                                                                                          \
		pal_scope sc;                                                                      \
		if (scope_arg(c, KIND, &sc))                                                       \
			gate(c, &sc, true);                                                        \
	}                                                                                          \
	static void h_##NAME##_resume(call *c)                                                     \
	{                                                                                          \
		pal_scope sc;                                                                      \
		if (scope_arg(c, KIND, &sc))                                                       \
			gate(c, &sc, false);                                                       \
	}
SCOPE_HANDLERS(group, PAL_SCOPE_GROUP)
SCOPE_HANDLERS(tenant, PAL_SCOPE_TENANT)
SCOPE_HANDLERS(all, PAL_SCOPE_GLOBAL)

static void h_job_trigger(call *c)
{
	if (!job_visible(c, true))
		return;
	const char *why, *at_s, *rid;
	if (!reason(c, false, &why) || !body_str(c, "at", &at_s) ||
	    !body_str(c, "request_id", &rid))
		return;
	json_t *ne = json_object_get(c->body, "new_effect");
	if (ne && !json_is_boolean(ne)) {
		problem(c, 422, "invalid", "Invalid request",
			"field \"new_effect\" must be a boolean");
		return;
	}
	int64_t at = PAL_OPS_NOW;
	if (at_s && pal_parse_rfc3339(at_s, &at)) {
		problem(c, 422, "invalid", "Invalid request",
			"at \"%.40s\": expected RFC 3339 (2026-01-01T00:00:00Z)", at_s);
		return;
	}
	if (!rid)
		rid = header(c, "Idempotency-Key");
	char uuid[37];
	if (!rid) {
		if (pal_ops_uuid4(uuid)) {
			problem(c, 500, "internal", "Internal error", "no random request id");
			return;
		}
		rid = uuid;
	}
	if (!pal_ops_request_id_ok(rid)) {
		problem(c, 422, "invalid", "Invalid request",
			"request_id \"%.40s\": expected 1-128 characters of A-Z a-z 0-9 . _ : -",
			rid);
		return;
	}
	char err[1024];
	const char *job = c->arg[0];
	bool retired;
	int rc = pal_store_job_retired(c->api->st, job, &retired, err, sizeof err);
	if (rc) {
		problem_rc(c, rc, err);
		return;
	}
	if (retired) {
		problem(c, 409, "job-retired", "The job is retired",
			"job %s is retired; apply it again to run it", job);
		return;
	}
	/* An earlier attempt at that instant whose outcome is unknown: a run
	 * with a new key could make its effect twice (as `palisade trigger`). */
	if (at != PAL_OPS_NOW && !json_is_true(ne)) {
		json_t *unk = NULL;
		if ((rc = pal_store_unknown_at(c->api->st, job, at, &unk, err, sizeof err))) {
			problem_rc(c, rc, err);
			return;
		}
		size_t i, n = 0;
		json_t *t;
		json_array_foreach(unk, i, t)
		{
			const char *r = json_string_value(json_object_get(t, "request_id"));
			n += !(r && !strcmp(r, rid));
		}
		json_decref(unk);
		if (n) {
			problem(c, 409, "unknown-outcome",
				"An earlier attempt at that instant has an unknown outcome",
				"job %s at %s already had %zu trigger(s) whose effect may have "
				"happened; resolve its ticket, or send \"new_effect\": true",
				job, at_s, n);
			return;
		}
	}
	pal_run_result r = {0};
	rc = pal_ops_trigger(c->api->st, job, at, rid, c->who.name, why, &r, err, sizeof err);
	if (rc) {
		problem_rc(c, rc, err);
		return;
	}
	char ts[32];
	pal_fmt_rfc3339(r.at, ts, sizeof ts);
	ok(c, r.existed ? 200 : 201,
	   json_pack("{s:s, s:s, s:b, s:i, s:s, s:O}", "job_id", job, "request_id", rid, "existed",
		     r.existed, "version", r.version, "scheduled_at", ts, "trigger_ids", r.ids));
	pal_run_result_clear(&r);
}

static json_t *cancel_json(const pal_cancel_result *r)
{
	return json_pack(
	    "{s:I, s:I, s:I, s:I, s:I, s:o, s:s?}", "pending_to_cancelled",
	    (json_int_t)r->from_pending, "retry_wait_to_cancelled", (json_int_t)r->from_retry_wait,
	    "paused_to_cancelled", (json_int_t)r->from_paused, "running_to_cancelling",
	    (json_int_t)r->to_cancelling, "expired", (json_int_t)r->expired, "left",
	    r->left ? json_incref(r->left) : json_object(), "state", r->state[0] ? r->state : NULL);
}

static void cancel(call *c, int64_t trigger, const char *job)
{
	const char *why;
	if (!reason(c, false, &why))
		return;
	pal_cancel_result r = {0};
	char err[1024];
	int rc = pal_ops_cancel(c->api->st, trigger, job, c->who.name, why, &r, err, sizeof err);
	if (rc)
		problem_rc(c, rc, err);
	else
		ok(c, 200, cancel_json(&r));
	pal_cancel_result_clear(&r);
}

static void h_job_cancel(call *c)
{
	if (job_visible(c, true))
		cancel(c, 0, c->arg[0]);
}

/* Trigger {id} of the path: its id, visible to the token (as job_visible). */
static bool trigger_visible(call *c, bool write, int64_t *id)
{
	char *end, job[129], tenant[65], err[512];
	long long v = strtoll(c->arg[0], &end, 10);
	if (*end || v <= 0) {
		problem(c, 404, "not-found", "Not found", "no trigger \"%.40s\"", c->arg[0]);
		return false;
	}
	*id = v;
	int rc = pal_apistore_trigger_job(c->api->st, v, job, tenant, err, sizeof err);
	if (rc) {
		problem_rc(c, rc, err);
		return false;
	}
	return tenant_allowed(c, tenant, write, "trigger", c->arg[0]);
}

static void h_trigger_cancel(call *c)
{
	int64_t id;
	if (trigger_visible(c, true, &id))
		cancel(c, id, NULL);
}

static void h_trigger_attempts(call *c)
{
	int64_t id;
	int limit;
	json_t *rows;
	char *next, err[1024];
	if (!trigger_visible(c, false, &id) || !page_limit(c, &limit))
		return;
	int rc = pal_apistore_attempts_page(c->api->st, id, query(c, "cursor"), limit, &rows, &next,
					    err, sizeof err);
	page_answer(c, rc, rows, next, err);
}

/* An RFC 3339 instant of the body (FIELD) into *out; absent: PAL_OPS_NOW. */
static bool body_time(call *c, const char *field, bool required, int64_t *out)
{
	const char *s;
	*out = PAL_OPS_NOW;
	if (!body_str(c, field, &s))
		return false;
	if (!s && !required)
		return true;
	if (!s || pal_parse_rfc3339(s, out)) {
		problem(c, 422, "invalid", "Invalid request",
			"\"%s\": expected an RFC 3339 instant (2026-01-01T00:00:00Z)", field);
		return false;
	}
	return true;
}

static void h_job_backfill(call *c)
{
	const char *why, *rid;
	int64_t from, to;
	if (!job_visible(c, true) || !reason(c, false, &why) ||
	    !body_time(c, "from", true, &from) || !body_time(c, "to", true, &to) ||
	    !body_str(c, "request_id", &rid))
		return;
	json_t *mx = json_object_get(c->body, "max");
	if (mx && (!json_is_integer(mx) || json_integer_value(mx) < 1)) {
		problem(c, 422, "invalid", "Invalid request", "\"max\" must be a positive integer");
		return;
	}
	if (!rid)
		rid = header(c, "Idempotency-Key");
	char uuid[37], err[1024];
	if (!rid && pal_ops_uuid4(uuid) == 0)
		rid = uuid;
	if (!rid || !pal_ops_request_id_ok(rid)) {
		problem(c, 422, "invalid", "Invalid request",
			"request_id: expected 1-128 characters of A-Z a-z 0-9 . _ : -");
		return;
	}
	pal_backfill_result r;
	int rc = pal_ops_backfill(c->api->st, c->arg[0], from, to,
				  mx ? json_integer_value(mx) : BACKFILL_MAX, rid, c->who.name, why,
				  &r, err, sizeof err);
	if (rc)
		problem_rc(c, rc, err);
	else
		ok(c, 200,
		   json_pack("{s:s, s:s, s:I, s:I, s:I, s:I}", "job_id", c->arg[0], "request_id",
			     rid, "instants", (json_int_t)r.instants, "excluded",
			     (json_int_t)r.excluded, "rows", (json_int_t)r.rows, "inserted",
			     (json_int_t)r.inserted));
}

static void h_job_release(call *c)
{
	const char *why;
	char err[1024];
	if (!job_visible(c, true) || !reason(c, false, &why))
		return;
	int rc =
	    pal_store_release_quarantine(c->api->st, c->arg[0], c->who.name, why, err, sizeof err);
	if (rc)
		problem_rc(c, rc, err);
	else
		ok(c, 200, json_pack("{s:s, s:b}", "job_id", c->arg[0], "released", 1));
}

/*
 * DELETE /api/v1/jobs/{id}: retire the job as `palisade delete` does (its
 * last version ends its schedule now, its waiting triggers are cancelled,
 * its history stays), then cancel once what a controller planned from the
 * old version meanwhile.  The request does not wait for the controller to
 * take the retiring version in (the CLI waits up to 10 s; this connection
 * serves every API request): "settling" says one had not yet, and a
 * DELETE repeated later sweeps again.  The reason comes from the JSON
 * body or ?reason=.
 */
static void h_job_delete(call *c)
{
	const char *why;
	if (!job_visible(c, true) || !body_str(c, "reason", &why))
		return;
	if (!why || !*why)
		why = query(c, "reason");
	if (!why && !reason(c, false, &why))
		return;
	const char *ids[1] = {c->arg[0]};
	pal_retire_result res = {0};
	pal_apply *a;
	char err[1024];
	int64_t pending = 0, late = 0;
	int rc = pal_store_apply_begin(c->api->st, c->who.name, why, c->api->default_shards, &a,
				       err, sizeof err);
	if (!rc) {
		rc = pal_store_apply_retire(a, ids, 1, &res, err, sizeof err);
		if (rc || res.outcome == PAL_RETIRE_NOT_FOUND)
			pal_store_apply_abort(a);
		else
			rc = pal_store_apply_commit(a, err, sizeof err);
	}
	if (!rc && res.outcome == PAL_RETIRE_NOT_FOUND) {
		problem(c, 404, "not-found", "Not found", "no job \"%.64s\"", ids[0]);
		return;
	}
	if (!rc)
		rc = pal_store_retire_pending(c->api->st, ids, 1, &pending, err, sizeof err);
	if (!rc)
		rc = pal_store_retire_sweep(c->api->st, ids, 1, c->who.name, why, &late, err,
					    sizeof err);
	if (rc) {
		problem_rc(c, rc, err);
		return;
	}
	json_t *o =
	    json_pack("{s:s, s:s, s:i, s:I, s:b}", "job_id", ids[0], "outcome",
		      res.outcome == PAL_RETIRE_RETIRED ? "retired" : "already retired", "version",
		      res.version, "late_cancelled", (json_int_t)late, "settling", pending > 0);
	if (res.outcome == PAL_RETIRE_RETIRED) {
		char end[32];
		pal_fmt_rfc3339(res.end, end, sizeof end);
		json_object_set_new(o, "end", json_string(end));
		json_object_set_new(o, "cancelled", json_integer(res.cancelled));
	}
	ok(c, 200, o);
}

/* A per-job list's ?job= (required, visible to the token: into arg 0) and
 * ?limit=; false (problem set) otherwise. */
static bool job_query(call *c, const char *what, int *limit)
{
	const char *job = query(c, "job");
	if (!job) {
		problem(c, 400, "bad-parameter", "Bad parameter",
			"job is required: %s are listed per job (?job=ID)", what);
		return false;
	}
	if (!page_limit(c, limit))
		return false;
	snprintf(c->argbuf[0], sizeof c->argbuf[0], "%s", job);
	c->arg[0] = c->argbuf[0];
	return job_visible(c, false);
}

static bool query_time(call *c, const char *name, int64_t *out);

/* `palisade misfires --job`: ?from and ?to keep the decisions whose range
 * meets [from, to], as --from and --to do. */
static void h_misfires(call *c)
{
	int limit;
	int64_t from = PAL_OPS_NOW, to = PAL_OPS_NOW;
	if (!job_query(c, "misfires", &limit) ||
	    (query(c, "from") && !query_time(c, "from", &from)) ||
	    (query(c, "to") && !query_time(c, "to", &to)))
		return;
	if (from != PAL_OPS_NOW && to != PAL_OPS_NOW && to < from) {
		problem(c, 400, "bad-parameter", "Bad parameter", "to is before from");
		return;
	}
	const char *job = c->arg[0];
	json_t *rows;
	char err[1024];
	int rc = pal_store_misfires_json(c->api->st, job, from, to, limit, &rows, err, sizeof err);
	if (rc)
		problem_rc(c, rc, err);
	else
		ok(c, 200, json_pack("{s:o}", "items", rows));
}

static void h_triggers(call *c)
{
	int limit;
	int64_t since = PAL_OPS_NOW;
	if (!job_query(c, "triggers", &limit) ||
	    (query(c, "since") && !query_time(c, "since", &since)))
		return;
	const char *job = c->arg[0], *trace = query(c, "trace_id");
	int64_t trigger = 0;
	uint64_t prefix;
	char *next, err[1024];
	/* a trace id names its trigger (docs/protocol.md, "Trace context") */
	if (trace && pal_trace_id_parse(trace, &prefix, &trigger, err, sizeof err)) {
		problem(c, 400, "bad-parameter", "Bad parameter", "trace_id: %s", err);
		return;
	}
	if (trace && prefix != c->api->trace_prefix) {
		problem(c, 400, "bad-parameter", "Bad parameter",
			"trace_id: not a trace id of this cluster (its ids begin with %016llx)",
			(unsigned long long)c->api->trace_prefix);
		return;
	}
	json_t *rows;
	int rc =
	    pal_apistore_triggers_page(c->api->st, job, query(c, "state"), since, trigger,
				       query(c, "cursor"), limit, &rows, &next, err, sizeof err);
	if (!rc)
		pal_trace_ids_json(rows, c->api->trace_prefix);
	page_answer(c, rc, rows, next, err);
}

static void h_audit(call *c)
{
	int limit;
	int64_t since = PAL_OPS_NOW;
	if (!unscoped(c) || !page_limit(c, &limit) ||
	    (query(c, "since") && !query_time(c, "since", &since)))
		return;
	json_t *rows;
	char *next, err[1024];
	int rc = pal_apistore_audit_page(c->api->st, query(c, "actor"), query(c, "action"),
					 query(c, "scope"), since, query(c, "cursor"), limit, &rows,
					 &next, err, sizeof err);
	page_answer(c, rc, rows, next, err);
}

static void h_gates(call *c)
{
	int limit;
	json_t *rows;
	char *next, err[1024];
	if (!unscoped(c) || !page_limit(c, &limit))
		return;
	int rc = pal_apistore_gates_page(c->api->st, query(c, "cursor"), limit, &rows, &next, err,
					 sizeof err);
	page_answer(c, rc, rows, next, err);
}

/* A ticket's job is visible (tickets without a job: unscoped tokens only). */
static bool ticket_visible(call *c, const json_t *t, bool write)
{
	const char *job = json_string_value(json_object_get(t, "job_id"));
	if (c->who.n_tenants == 0)
		return true;
	if (!job)
		return write ? unscoped(c)
			     : (problem(c, 404, "not-found", "Not found", "no ticket"), false);
	char tenant[65], err[512];
	if (pal_apistore_job_tenant(c->api->st, job, tenant, err, sizeof err) ||
	    !pal_token_sees_tenant(&c->who, tenant)) {
		if (write)
			problem(c, 403, "forbidden-tenant", "Not your tenant",
				"token %s may not act on this ticket's tenant", c->who.name);
		else
			problem(c, 404, "not-found", "Not found", "no ticket");
		return false;
	}
	return true;
}

/* Tickets newest first, a page at a time: a tenant-scoped token's only
 * those of its tenants' jobs (as ticket_visible). */
static void h_tickets(call *c)
{
	const char *all = query(c, "all");
	int limit;
	json_t *rows;
	char *next, err[1024];
	if (!page_limit(c, &limit))
		return;
	char *tl = tenants_literal(&c->who);
	int rc =
	    pal_apistore_tickets_page(c->api->st, all && !strcmp(all, "true"), tl,
				      query(c, "cursor"), limit, &rows, &next, err, sizeof err);
	g_free(tl);
	page_answer(c, rc, rows, next, err);
}

static bool ticket_id(call *c, int64_t *id)
{
	char *end;
	long long v = strtoll(c->arg[0], &end, 10);
	if (*end || v <= 0) {
		problem(c, 404, "not-found", "Not found", "no ticket \"%.40s\"", c->arg[0]);
		return false;
	}
	*id = v;
	return true;
}

static void h_ticket(call *c)
{
	int64_t id;
	json_t *t;
	char err[1024];
	if (!ticket_id(c, &id))
		return;
	int rc = pal_ops_ticket_json(c->api->st, id, &t, err, sizeof err);
	if (rc) {
		problem_rc(c, rc, err);
		return;
	}
	if (ticket_visible(c, t, false))
		ok(c, 200, t);
	else
		json_decref(t);
}

static void h_ticket_resolve(call *c)
{
	int64_t id;
	json_t *t;
	const char *why, *action;
	char err[1024];
	if (!ticket_id(c, &id) || !reason(c, false, &why) || !body_str(c, "action", &action))
		return;
	if (!action) {
		problem(c, 422, "invalid", "Invalid request",
			"\"action\" is required (retry, mark_succeeded, abandon, backfill)");
		return;
	}
	int rc = pal_ops_ticket_json(c->api->st, id, &t, err, sizeof err);
	if (rc) {
		problem_rc(c, rc, err);
		return;
	}
	bool visible = ticket_visible(c, t, true);
	json_decref(t);
	if (!visible)
		return;
	pal_resolve_result r = {0};
	json_t *ev = json_object_get(c->body, "evidence"), *mx = json_object_get(c->body, "max");
	if (mx && (!json_is_integer(mx) || json_integer_value(mx) < 1)) {
		problem(c, 422, "invalid", "Invalid request", "\"max\" must be a positive integer");
		return;
	}
	char *evt = ev ? json_dumps(ev, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	rc = pal_ops_ticket_resolve(c->api->st, id, action, evt,
				    mx ? json_integer_value(mx) : BACKFILL_MAX, c->who.name, why,
				    &r, err, sizeof err);
	free(evt);
	if (rc == PAL_EINVAL && r.allowed[0])
		problem(c, 422, "action-not-allowed", "Action not allowed",
			"ticket %lld allows: %s", (long long)id, r.allowed);
	else if (rc)
		problem_rc(c, rc, err);
	else
		ok(c, 200,
		   json_pack("{s:I, s:s, s:s}", "ticket_id", (json_int_t)id, "action", action,
			     "trigger_state", r.trigger_state));
}

/* ?NAME as an RFC 3339 instant (required); false (problem) otherwise. */
static bool query_time(call *c, const char *name, int64_t *out)
{
	const char *s = query(c, name);
	if (!s || pal_parse_rfc3339(s, out)) {
		problem(c, 400, "bad-parameter", "Bad parameter",
			"%s: expected an RFC 3339 instant (2026-01-01T00:00:00Z)", name);
		return false;
	}
	return true;
}

/* `palisade verify`: the plan set of [from, to] against the triggers. */
static void h_verify(call *c)
{
	int64_t from, to;
	const char *job = query(c, "job");
	if (!query_time(c, "from", &from) || !query_time(c, "to", &to))
		return;
	if (to < from) {
		problem(c, 400, "bad-parameter", "Bad parameter", "to is before from");
		return;
	}
	if (job) {
		snprintf(c->argbuf[0], sizeof c->argbuf[0], "%s", job);
		c->arg[0] = c->argbuf[0];
		if (!job_visible(c, false))
			return;
	} else if (!unscoped(c)) {
		return;
	}
	char err[1024];
	bool have_h;
	int64_t h_ms;
	int rc = pal_store_retention_horizon(c->api->st, &have_h, &h_ms, err, sizeof err);
	if (rc) {
		problem_rc(c, rc, err);
		return;
	}
	if (have_h && from * 1000 < h_ms) {
		char b[40];
		pal_fmt_rfc3339((h_ms + 999) / 1000, b, sizeof b);
		problem(c, 409, "before-retention-horizon", "Before the retention horizon",
			"from is before the retention horizon %s: earlier triggers may have been "
			"dropped; verify from %s on",
			b, b);
		return;
	}
	pal_verify_report r;
	rc = pal_verify(c->api->st, from, to, job, NULL, &r, err, sizeof err);
	if (rc)
		problem_rc(c, rc, err);
	else
		ok(c, 200, pal_verify_report_json(&r));
	pal_verify_report_free(&r);
}

/* Drain this node (as `palisade drain`): audited, then asked; the node
 * hands its shards off and exits. */
static void h_drain(call *c)
{
	const char *why;
	char scope[300], err[1024];
	if (!unscoped(c) || !reason(c, true, &why))
		return;
	if (!c->api->drain) {
		problem(c, 501, "not-implemented", "Not implemented", "this node cannot drain");
		return;
	}
	snprintf(scope, sizeof scope, "node:%s", c->api->node_id);
	int rc = pal_store_audit(c->api->st, c->who.name, "drain", scope, why ? why : "",
				 "{\"via\": \"api\"}", err, sizeof err);
	if (rc) {
		problem_rc(c, rc, err);
		return;
	}
	c->api->drain(c->api->drain_arg);
	ok(c, 202, json_pack("{s:s, s:b}", "node", c->api->node_id, "draining", 1));
}

static void h_status(call *c)
{
	json_t *st;
	char err[1024];
	if (!unscoped(c)) /* cluster-wide figures */
		return;
	int rc = pal_store_status_json(c->api->st, &st, err, sizeof err);
	if (rc)
		problem_rc(c, rc, err);
	else
		ok(c, 200, st);
}

static void h_tokens(call *c)
{
	int limit;
	json_t *rows;
	char *next, err[1024];
	if (!unscoped(c) || !page_limit(c, &limit))
		return;
	int rc = pal_apistore_tokens_page(c->api->st, query(c, "cursor"), limit, &rows, &next, err,
					  sizeof err);
	page_answer(c, rc, rows, next, err);
}

static void h_token_create(call *c)
{
	const char *name, *role_s;
	pal_role role;
	if (!unscoped(c) || !body_str(c, "name", &name) || !body_str(c, "role", &role_s))
		return;
	if (!name || !role_s || pal_role_parse(role_s, &role)) {
		problem(c, 422, "invalid", "Invalid request",
			"\"name\" and \"role\" (viewer, operator or admin) are required");
		return;
	}
	json_t *ta = json_object_get(c->body, "tenants");
	const char *tenants[PAL_TOKEN_TENANTS_MAX];
	size_t n = 0, i;
	json_t *v;
	if (ta && (!json_is_array(ta) || json_array_size(ta) > PAL_TOKEN_TENANTS_MAX)) {
		problem(c, 422, "invalid", "Invalid request",
			"\"tenants\" must be an array of at most %d names", PAL_TOKEN_TENANTS_MAX);
		return;
	}
	json_array_foreach(ta, i, v)
	{
		if (!json_is_string(v)) {
			problem(c, 422, "invalid", "Invalid request", "tenants must be strings");
			return;
		}
		tenants[n++] = json_string_value(v);
	}
	char secret[PAL_TOKEN_LEN + 1], err[1024];
	int rc = pal_token_create(c->api->st, name, role, tenants, n, c->who.name, secret, err,
				  sizeof err);
	if (rc)
		problem_rc(c, rc, err);
	else
		ok(c, 201,
		   json_pack("{s:s, s:s, s:o, s:s}", "name", name, "role", role_s, "tenants",
			     ta ? json_incref(ta) : json_array(), "token", secret));
}

static void h_token_revoke(call *c)
{
	char err[1024];
	if (!unscoped(c))
		return;
	int rc = pal_token_revoke(c->api->st, c->arg[0], c->who.name, err, sizeof err);
	if (rc)
		problem_rc(c, rc, err);
	else
		ok(c, 200, json_pack("{s:s, s:b}", "token", c->arg[0], "revoked", 1));
}

/* The problem of an invalid job file: every diagnostic as {file line
 * column message}, as `palisade validate` prints them. */
static void problem_diags(call *c, const pal_diags *d)
{
	problem(c, 422, "invalid-job-file", "Invalid job file", "%zu error%s; nothing applied",
		d->n, d->n == 1 ? "" : "s");
	json_t *errs = json_array();
	for (size_t i = 0; i < d->n; i++)
		json_array_append_new(errs, json_pack("{s:s, s:i, s:i, s:s}", "file",
						      d->v[i].file ? d->v[i].file : "", "line",
						      d->v[i].line, "column", d->v[i].col,
						      "message", d->v[i].msg));
	json_object_set_new(c->out, "errors", errs);
}

/* pal_store_apply_spec_gates()'s question: does the body define job ID? */
static bool set_defines(void *ctx, const char *id)
{
	const pal_jobset *set = ctx;
	for (size_t i = 0; i < set->n; i++)
		if (!strcmp(set->jobs[i].id, id))
			return true;
	return false;
}

static const char *const outcome_word[] = {"created", "updated", "unchanged"};

/* Store SET as `palisade apply` does, its suspend gates included. */
/* ?prune=true: the live stored jobs SET does not define go (as `apply
 * --prune`), which only an unlimited token may ask (they may be any
 * tenant's).  *PRUNE says whether it was asked; false with a problem. */
static bool prune_arg(call *c, bool *prune)
{
	const char *p = query(c, "prune");
	*prune = p && !strcmp(p, "true");
	if (p && strcmp(p, "true") && strcmp(p, "false")) {
		problem(c, 400, "bad-parameter", "Bad parameter", "prune: expected true or false");
		return false;
	}
	return !*prune || unscoped(c);
}

/* The ids of the live stored jobs SET does not define (g_ptr_array_unref),
 * NULL with ERR on a database error. */
static GPtrArray *prune_ids(call *c, const pal_jobset *set, char *err, size_t errlen)
{
	json_t *live = NULL;
	if (pal_store_live_job_ids(c->api->st, &live, err, errlen))
		return NULL;
	GPtrArray *gone = g_ptr_array_new_with_free_func(g_free);
	size_t i;
	json_t *id;
	json_array_foreach(live, i, id)
	{
		if (!set_defines((void *)set, json_string_value(id)))
			g_ptr_array_add(gone, g_strdup(json_string_value(id)));
	}
	json_decref(live);
	return gone;
}

/* pal_apply_follow_fn: a stored job that follows a calendar, as an element
 * of the answer's jobs (CTX the array). */
static void follower_json(void *ctx, const char *job_id, int version)
{
	json_array_append_new(ctx, json_pack("{s:s, s:s, s:i}", "job_id", job_id, "outcome",
					     "updated", "version", version));
}

/* Keys that nodes older than their schema ignore (`after`, `notify`,
 * `target.keep_*`), set by a job SET creates or updates (RES), are applied
 * only while every live node understands them (docs/upgrades.md), as
 * `palisade apply` checks, its dry run too: true, else false with the
 * problem set, 409 older-nodes (the nodes named, as the CLI's exit 4) or
 * 503 unavailable (ZooKeeper not read, exit 69). */
static bool require_node_schemas(call *c, const pal_jobset *set, const pal_apply_result *res)
{
	const char *key, *job;
	int need = pal_apply_min_schema(set->jobs, res, set->n, &job, &key);
	if (!need)
		return true;
	char what[256], err[1024];
	snprintf(what, sizeof what, "job %s sets %s", job, key);
	int rc = pal_coord_require_schema(c->api->zk_connect, c->api->zk_root, c->api->cluster,
					  5000, need, what, err, sizeof err);
	if (rc == PAL_EBUSY)
		problem(c, 409, "older-nodes", "Live nodes would ignore it", "%s; nothing applied",
			err);
	else if (rc)
		problem(c, 503, "unavailable", "ZooKeeper unavailable", "%s; nothing applied", err);
	return rc == PAL_OK;
}

static void apply_set(call *c, const pal_jobset *set, const char *why, bool prune)
{
	char err[1024];
	pal_apply *ap;
	pal_apply_result *res = calloc(set->n ? set->n : 1, sizeof *res);
	json_t *closed = json_array(), *lifted = json_array(), *susp = json_array();
	pal_resume_opts ro = resume_opts(c->api, PAL_SCOPE_JOB);
	for (size_t i = 0; i < set->n; i++)
		if (set->jobs[i].suspend)
			json_array_append_new(susp, json_string(set->jobs[i].id));
	int rc = res ? pal_store_apply_begin(c->api->st, c->who.name, why, c->api->default_shards,
					     &ap, err, sizeof err)
		     : PAL_ENOMEM;
	/* the calendars first: the jobs carry the versions they get */
	if (!rc && (rc = pal_store_apply_calendars(ap, set->calendars, set->n_calendars, NULL, err,
						   sizeof err)))
		pal_store_apply_abort(ap);
	else if (!rc && (rc = pal_store_apply_add(ap, set->jobs, set->n, res, err, sizeof err)))
		pal_store_apply_abort(ap);
	bool answered = false; /* the problem is set */
	if (!rc && !require_node_schemas(c, set, res)) {
		pal_store_apply_abort(ap);
		rc = -1, answered = true;
	}
	/* ?prune=true: the live jobs the body does not define, retired in this
	 * transaction (then swept once after it, as DELETE does) */
	GPtrArray *gone = NULL;
	pal_retire_result *gres = NULL;
	if (!rc && prune) {
		if ((rc = pal_store_apply_sync(ap, err, sizeof err)) == 0 &&
		    !(gone = prune_ids(c, set, err, sizeof err)))
			rc = PAL_EDB;
		if (!rc && !(gres = calloc(gone->len ? gone->len : 1, sizeof *gres)))
			rc = PAL_ENOMEM;
		if (!rc && gone->len)
			rc = pal_store_apply_retire(ap, (const char *const *)gone->pdata, gone->len,
						    gres, err, sizeof err);
		if (rc)
			pal_store_apply_abort(ap);
	}
	/* the stored jobs that follow a calendar this body changed */
	json_t *followers = json_array();
	if (!rc && (rc = pal_store_apply_followers(ap, follower_json, followers, err, sizeof err)))
		pal_store_apply_abort(ap);
	const char *foreign = NULL;
	for (size_t i = 0; !rc && c->who.n_tenants && i < json_array_size(followers); i++) {
		const char *id =
		    json_string_value(json_object_get(json_array_get(followers, i), "job_id"));
		char tenant[65];
		if ((rc = pal_apistore_job_tenant(c->api->st, id, tenant, err, sizeof err)) == 0 &&
		    !pal_token_sees_tenant(&c->who, tenant))
			foreign = id;
		if (rc || foreign)
			pal_store_apply_abort(ap);
		if (foreign) {
			problem(
			    c, 403, "forbidden-tenant", "Not your tenant",
			    "job %s, of tenant %s, names a calendar this body changes; token %s "
			    "may not act on it; nothing stored",
			    foreign, tenant, c->who.name);
			rc = -1;
		}
	}
	if (!rc)
		rc = pal_store_apply_spec_gates(ap, c->api->st, susp, set_defines, (void *)set,
						c->who.name, &ro, closed, lifted, err, sizeof err);
	json_t *shadow = json_array(), *shadowed = json_array();
	for (size_t i = 0; i < set->n; i++)
		if (set->jobs[i].shadow)
			json_array_append_new(shadow, json_string(set->jobs[i].id));
	/* the gates step ends the transaction itself when it fails; this one
	 * does not: roll it back here, or the connection stays in an aborted
	 * transaction holding the apply's locks (and AP is lost) */
	if (!rc && (rc = pal_store_shadow_spec(c->api->st, shadow, c->who.name, shadowed, err,
					       sizeof err)))
		pal_store_apply_abort(ap);
	json_decref(shadow);
	if (!rc)
		rc = pal_store_apply_commit(ap, err, sizeof err);
	int64_t pending = 0, late = 0;
	if (!rc && gone && gone->len &&
	    !(rc = pal_store_retire_pending(c->api->st, (const char *const *)gone->pdata, gone->len,
					    &pending, err, sizeof err)))
		rc = pal_store_retire_sweep(c->api->st, (const char *const *)gone->pdata, gone->len,
					    c->who.name, why, &late, err, sizeof err);
	if (foreign || answered) {
		/* answered above */
	} else if (rc) {
		problem_rc(c, rc, rc == PAL_ENOMEM ? "out of memory" : err);
	} else {
		json_t *jobs = json_array();
		for (size_t i = 0; i < set->n; i++)
			json_array_append_new(jobs, json_pack("{s:s, s:s, s:i}", "job_id",
							      set->jobs[i].id, "outcome",
							      outcome_word[res[i].outcome],
							      "version", res[i].version));
		json_array_extend(jobs, followers);
		ok(c, 200,
		   json_pack("{s:b, s:o, s:O, s:O, s:O}", "dry_run", 0, "jobs", jobs, "suspended",
			     closed, "resumed", lifted, "shadowed", shadowed));
		if (gone) {
			json_t *ret = json_array();
			for (guint i = 0; i < gone->len; i++)
				json_array_append_new(
				    ret, json_pack("{s:s, s:s, s:i}", "job_id",
						   (const char *)gone->pdata[i], "outcome",
						   gres[i].outcome == PAL_RETIRE_RETIRED
						       ? "retired"
						       : "already retired",
						   "version", gres[i].version));
			json_object_set_new(c->out, "retired", ret);
			json_object_set_new(c->out, "late_cancelled", json_integer(late));
			json_object_set_new(c->out, "settling", json_boolean(pending > 0));
		}
	}
	json_decref(shadowed);
	json_decref(followers);
	if (gone)
		g_ptr_array_unref(gone);
	free(gres);
	json_decref(closed);
	json_decref(lifted);
	json_decref(susp);
	free(res);
}

/*
 * Load the YAML documents of BODY (LEN bytes; split at each line that is
 * "---", alone or followed by a blank) as job files, all into SET: the
 * loader takes one document at a time.  Each part keeps its "---" line, and
 * its diagnostics' lines are shifted back to lines of BODY.  Returns as
 * pal_jobfile_load_buffer().
 */
static int load_documents(const char *name, const char *body, size_t len, pal_jobset *set,
			  pal_diags *diags)
{
	int rc = PAL_OK;
	size_t start = 0, pos = 0;
	int line = 1, start_line = 1;
	while (pos <= len) {
		bool at_eof = pos == len;
		bool sep = !at_eof && pos > start && len - pos >= 3 &&
			   memcmp(body + pos, "---", 3) == 0 &&
			   (len - pos == 3 || strchr(" \t\r\n", body[pos + 3]));
		if (sep || at_eof) {
			size_t before = diags->n;
			if (pal_jobfile_load_buffer(name, body + start, pos - start, set, diags))
				rc = PAL_EINVAL;
			for (size_t k = before; k < diags->n; k++)
				if (diags->v[k].line > 0)
					diags->v[k].line += start_line - 1;
			if (at_eof)
				break;
			start = pos;
			start_line = line;
		}
		const char *nl = memchr(body + pos, '\n', len - pos);
		pos = nl ? (size_t)(nl - body) + 1 : len;
		line++;
	}
	return rc;
}

/* Dependencies (`after:`) of SET against each other and the stored jobs,
 * as `palisade apply` checks them: PAL_EINVAL with DIAGS, PAL_EDB with the
 * problem set. */
static int check_after(call *c, const pal_jobset *set, pal_diags *diags)
{
	pal_after_graph *g = pal_after_graph_new();
	char err[1024];
	int rc = PAL_OK;

	if (!g) {
		problem_rc(c, PAL_ENOMEM, "out of memory");
		return PAL_EDB;
	}
	for (size_t i = 0; !rc && i < set->n; i++)
		if (set->jobs[i].n_after)
			rc = pal_after_graph_add_loaded(g, set->jobs[i].id, set->jobs[i].after,
							set->jobs[i].n_after, set->jobs[i].file);
	if (!rc && !pal_after_graph_empty(g) &&
	    (rc = pal_store_after_graph_stored(c->api->st, g, err, sizeof err)))
		problem_rc(c, rc, err);
	else if (!rc && pal_after_graph_check(g, set_defines, (void *)set, true, diags))
		rc = PAL_EINVAL;
	pal_after_graph_free(g);
	return rc == PAL_OK || rc == PAL_EINVAL ? rc : PAL_EDB;
}

/*
 * The job files of the body (Content-Type application/yaml), validated as
 * `palisade apply` validates them, into SET; every job's tenant, in the file
 * and as stored for a job that exists, must be the token's.  False with the problem set (415, 422
 * invalid-job-file, 403).
 */
static bool load_body(call *c, pal_jobset *set)
{
	const pal_api_request *req = c->req;
	const char *ct = header(c, "Content-Type");
	if (!ct || (strncasecmp(ct, "application/yaml", 16) &&
		    strncasecmp(ct, "application/x-yaml", 18) && strncasecmp(ct, "text/yaml", 9))) {
		problem(c, 415, "unsupported-media-type", "Unsupported media type",
			"the body is the job file itself: Content-Type: application/yaml");
		return false;
	}
	const char *file = query(c, "file");
	pal_diags diags = {0};
	int rc = load_documents(file ? file : "request.yaml", req->body ? req->body : "",
				req->body_len, set, &diags);
	for (size_t i = 0; i < set->n; i++)
		if (pal_job_key_horizon_check(&set->jobs[i], c->api->key_retention_ms, &diags))
			rc = PAL_EINVAL;
	if (!rc && (rc = check_after(c, set, &diags)) == PAL_EDB) {
		pal_diags_free(&diags);
		return false; /* the problem is set */
	}
	if (rc || diags.n)
		problem_diags(c, &diags);
	pal_diags_free(&diags);
	if (rc)
		return false;
	for (size_t i = 0; i < set->n; i++) {
		const pal_job_spec *j = &set->jobs[i];
		/* The stored tenant counts too: apply rewrites it, so a file
		 * naming the token's tenant must not take over another's job. */
		char stored[65], err[512];
		int trc = pal_apistore_job_tenant(c->api->st, j->id, stored, err, sizeof err);
		if (trc && trc != PAL_ENOENT) {
			problem_rc(c, trc, err);
			return false;
		}
		const char *bad = !pal_token_sees_tenant(&c->who, j->tenant)	    ? j->tenant
				  : !trc && !pal_token_sees_tenant(&c->who, stored) ? stored
										    : NULL;
		if (bad) {
			problem(c, 403, "forbidden-tenant", "Not your tenant",
				"job %s is of tenant %s; token %s may not act on it; nothing "
				"applied",
				j->id, bad, c->who.name);
			return false;
		}
	}
	return true;
}

/* pal_plan_follow_fn: a stored job that follows a calendar of the body,
 * into the array CTX */
static int follower_diff(void *ctx, const char *job_id, const char *follows, const pal_plan_diff *d)
{
	json_array_append_new(ctx, pal_plan_diff_json(d, job_id, follows));
	return 0;
}

/* What `plan diff` shows for SET: the next instants, stored and new, and
 * those of the stored jobs that would follow a calendar of SET.  As apply's
 * dry run (CHECK_NODES), refused as apply would be while live nodes would
 * ignore a key a job it creates or changes sets (require_node_schemas). */
static void diff_set(call *c, pal_jobset *set, int64_t from, int count, bool prune,
		     bool check_nodes)
{
	json_t *jobs = json_array();
	pal_apply_result *res = calloc(set->n ? set->n : 1, sizeof *res);
	char err[1024] = "out of memory";
	int rc = res ? pal_store_calendar_versions(c->api->st, set->calendars, set->n_calendars,
						   err, sizeof err)
		     : PAL_ENOMEM;
	if (!rc)
		pal_jobset_calendar_versions(set);
	for (size_t i = 0; !rc && i < set->n; i++) {
		pal_plan_diff d;
		rc = pal_plan_diff_job(c->api->st, &set->jobs[i], from, count, &d, err, sizeof err);
		if (rc)
			break;
		/* what apply would do with the job, for the nodes' check */
		res[i].outcome = !strcmp(d.status, "new")	? PAL_APPLY_CREATED
				 : !strcmp(d.status, "changed") ? PAL_APPLY_UPDATED
								: PAL_APPLY_UNCHANGED;
		json_array_append_new(jobs, pal_plan_diff_json(&d, set->jobs[i].id, NULL));
		pal_plan_diff_clear(&d);
	}
	bool refused = !rc && check_nodes && !require_node_schemas(c, set, res);
	free(res);
	if (!rc && !refused)
		rc = pal_plan_diff_followers(c->api->st, set, from, count, follower_diff, jobs, err,
					     sizeof err);
	GPtrArray *gone = NULL; /* what ?prune=true would retire */
	if (!rc && !refused && prune && !(gone = prune_ids(c, set, err, sizeof err)))
		rc = PAL_EDB;
	if (rc || refused) {
		json_decref(jobs);
		if (!refused)
			problem_rc(c, rc, err);
		return;
	}
	json_t *out = json_pack("{s:b, s:o}", "dry_run", 1, "jobs", jobs);
	if (gone) {
		json_t *ids = json_array();
		for (guint i = 0; i < gone->len; i++)
			json_array_append_new(ids, json_string(gone->pdata[i]));
		json_object_set_new(out, "would_retire", ids);
		g_ptr_array_unref(gone);
	}
	ok(c, 200, out);
}

static void h_apply(call *c)
{
	const char *dry = query(c, "dry_run");
	if (dry && strcmp(dry, "true") && strcmp(dry, "false")) {
		problem(c, 400, "bad-parameter", "Bad parameter",
			"dry_run: expected true or false");
		return;
	}
	bool prune;
	if (!prune_arg(c, &prune))
		return;
	pal_jobset set = {0};
	if (load_body(c, &set)) {
		if (dry && !strcmp(dry, "true")) /* nothing is written */
			diff_set(c, &set, (int64_t)time(NULL), DIFF_COUNT, prune, true);
		else
			apply_set(c, &set, query(c, "reason") ? query(c, "reason") : "", prune);
	}
	pal_jobset_free(&set);
}

/* `palisade plan diff` of the body's job files: writes nothing.  ?count=
 * instants per job (1..DIFF_COUNT_MAX, default DIFF_COUNT) after ?from= (an
 * RFC 3339 instant, default now), as the CLI's --count and --from. */
static void h_plan_diff(call *c)
{
	int64_t from = (int64_t)time(NULL);
	if (query(c, "from") && !query_time(c, "from", &from))
		return;
	const char *n = query(c, "count");
	long count = DIFF_COUNT;
	if (n) {
		char *end;
		count = strtol(n, &end, 10);
		if (*end || count < 1 || count > DIFF_COUNT_MAX) {
			problem(c, 400, "bad-parameter", "Bad parameter",
				"count \"%.20s\": expected an integer in 1..%d", n, DIFF_COUNT_MAX);
			return;
		}
	}
	pal_jobset set = {0};
	if (load_body(c, &set))
		diff_set(c, &set, from, (int)count, false, false);
	pal_jobset_free(&set);
}

/* The scope of a read's query: at most one of ?job=, ?group=, ?tenant=
 * (none: PAL_SCOPE_GLOBAL) into *SC (its name points into the query).  A
 * job must be visible to the token, a tenant one of its own (404 as if it
 * did not exist otherwise); a group or every job is the caller's to allow.
 * False (problem set) otherwise. */
static bool query_scope(call *c, pal_scope *sc)
{
	static const pal_scope_kind kinds[] = {PAL_SCOPE_JOB, PAL_SCOPE_GROUP, PAL_SCOPE_TENANT};
	*sc = (pal_scope){PAL_SCOPE_GLOBAL, NULL};
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
		const char *v = query(c, pal_scope_kind_name(kinds[i]));
		if (!v)
			continue;
		if (sc->name) {
			problem(c, 400, "bad-parameter", "Bad parameter",
				"at most one of job, group and tenant");
			return false;
		}
		*sc = (pal_scope){kinds[i], v};
	}
	if (sc->kind == PAL_SCOPE_JOB) {
		snprintf(c->argbuf[0], sizeof c->argbuf[0], "%s", sc->name);
		c->arg[0] = c->argbuf[0];
		return job_visible(c, false);
	}
	if (sc->kind == PAL_SCOPE_TENANT)
		return tenant_allowed(c, sc->name, false, "tenant", sc->name);
	return true;
}

/* `palisade report cost`: what each correct result cost over [from, to),
 * for ?job=, ?group= or ?tenant= (at most one; every job when none), the
 * costliest ?limit= jobs (1..COST_LIMIT_MAX, default COST_LIMIT).  A token
 * limited to tenants names a job or one of its tenants: another tenant's
 * job or tenant is not found (404), a group or every job refused (403). */
static void h_report_cost(call *c)
{
	pal_cost_scope s = {.limit = COST_LIMIT};
	if (!query_time(c, "from", &s.from) || !query_time(c, "to", &s.to))
		return;
	if (s.to <= s.from) {
		problem(c, 400, "bad-parameter", "Bad parameter", "to is not after from");
		return;
	}
	const char *lim = query(c, "limit");
	if (lim) {
		char *end;
		long v = strtol(lim, &end, 10);
		if (*end || v < 1 || v > COST_LIMIT_MAX) {
			problem(c, 400, "bad-parameter", "Bad parameter",
				"limit \"%.20s\": expected an integer in 1..%d", lim,
				COST_LIMIT_MAX);
			return;
		}
		s.limit = (int)v;
	}
	if (!query_scope(c, &s.scope) ||
	    ((s.scope.kind == PAL_SCOPE_GROUP || s.scope.kind == PAL_SCOPE_GLOBAL) && !unscoped(c)))
		return;
	json_t *rep;
	char err[1024];
	int rc = pal_store_cost_json(c->api->st, &s, &rep, err, sizeof err);
	if (rc)
		problem_rc(c, rc, err);
	else
		ok(c, 200, rep);
}

/* The one scope of the body: exactly one of "job", "group", "tenant",
 * into *SC (its name points into the body).  The token must see it: a job
 * of another tenant, or another tenant, is refused (403; a job that does
 * not exist 404), a group by a tenant-scoped token too.  False (problem
 * set) otherwise. */
static bool body_scope(call *c, pal_scope *sc)
{
	static const pal_scope_kind kinds[] = {PAL_SCOPE_JOB, PAL_SCOPE_GROUP, PAL_SCOPE_TENANT};
	int n = 0;
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
		const char *v;
		if (!body_str(c, pal_scope_kind_name(kinds[i]), &v))
			return false;
		if (v)
			*sc = (pal_scope){kinds[i], v}, n++;
	}
	if (n != 1) {
		problem(c, 422, "invalid", "Invalid request",
			"name exactly one scope: \"job\", \"group\" or \"tenant\"");
		return false;
	}
	snprintf(c->argbuf[0], sizeof c->argbuf[0], "%s", sc->name);
	c->arg[0] = c->argbuf[0];
	if (sc->kind == PAL_SCOPE_JOB)
		return job_visible(c, true);
	return scope_arg(c, sc->kind, sc);
}

/* `palisade rollback`: the scope back in shadow from now on; waits up to
 * "wait_ms" (0..ROLLBACK_WAIT_MAX_MS, default 30 s as the CLI's --wait)
 * for its running calls, then answers what the old system takes over. */
static void h_rollback(call *c)
{
	pal_scope sc;
	const char *why;
	if (!body_scope(c, &sc) || !reason(c, false, &why))
		return;
	json_t *w = json_object_get(c->body, "wait_ms");
	int64_t wait_ms = ROLLBACK_WAIT_MS;
	if (w) {
		if (!json_is_integer(w) || json_integer_value(w) < 0 ||
		    json_integer_value(w) > ROLLBACK_WAIT_MAX_MS) {
			problem(c, 422, "invalid", "Invalid request",
				"\"wait_ms\": expected an integer in 0..%d", ROLLBACK_WAIT_MAX_MS);
			return;
		}
		wait_ms = json_integer_value(w);
	}
	json_t *out;
	char err[1024];
	int rc = pal_store_rollback_json(c->api->st, &sc, c->who.name, why, wait_ms, &out, err,
					 sizeof err);
	if (rc)
		problem_rc(c, rc, err);
	else
		ok(c, 200, out);
}

/* `palisade cutover`: one step of the scope of the body, "percent" (1..100,
 * default 100) live from "at" (RFC 3339, now or later), refused (409
 * stop-line-crossed, the lines in "crossed") while a stop line of the
 * latest live step is crossed ("max_pending_age_ms", default 60000).  The
 * doubled-effects line needs the sink's database: the CLI's --sink-pg on
 * the database only; the API does not connect where a body says. */
static void h_cutover(call *c)
{
	pal_cutover_req rq = {.percent = 100, .max_pending_s = CUTOVER_MAX_PENDING_MS / 1000};
	const char *why;
	if (!body_scope(c, &rq.scope) || !reason(c, false, &why) ||
	    !body_time(c, "at", true, &rq.at))
		return;
	json_t *pc = json_object_get(c->body, "percent");
	if (pc &&
	    (!json_is_integer(pc) || json_integer_value(pc) < 1 || json_integer_value(pc) > 100)) {
		problem(c, 422, "invalid", "Invalid request",
			"\"percent\": expected an integer in 1..100");
		return;
	}
	if (pc)
		rq.percent = (int)json_integer_value(pc);
	json_t *mp = json_object_get(c->body, "max_pending_age_ms");
	if (mp && (!json_is_integer(mp) || json_integer_value(mp) < 0)) {
		problem(c, 422, "invalid", "Invalid request",
			"\"max_pending_age_ms\": expected an integer, 0 or more");
		return;
	}
	if (mp)
		rq.max_pending_s = json_integer_value(mp) / 1000;
	if (rq.at < (int64_t)time(NULL) - 1) {
		problem(c, 400, "bad-step", "Not a step",
			"\"at\" is in the past: instants the old system has run would run again; "
			"give now or later");
		return;
	}
	json_t *out;
	bool refused;
	char err[1024];
	int rc =
	    pal_cutover_step(c->api->st, &rq, c->who.name, why, &out, &refused, err, sizeof err);
	if (rc == PAL_EINVAL) {
		problem(c, 400, "bad-step", "Not a step", "%s", err);
	} else if (rc) {
		problem_rc(c, rc, err);
	} else if (refused) {
		problem(c, 409, "stop-line-crossed", "A stop line is crossed",
			"stop lines crossed since the %d %% step; nothing changed",
			(int)json_integer_value(json_object_get(out, "previous_percent")));
		json_t *x;
		size_t i;
		json_array_foreach(json_object_get(out, "crossed"), i, x)
		{
			char line[160];
			snprintf(line, sizeof line, "; %s = %lld (bound %lld)",
				 json_string_value(json_object_get(x, "line")),
				 (long long)json_integer_value(json_object_get(x, "value")),
				 (long long)json_integer_value(json_object_get(x, "bound")));
			json_t *d = json_object_get(c->out, "detail");
			char *nd = g_strconcat(json_string_value(d), line, NULL);
			json_object_set_new(c->out, "detail", json_string(nd));
			g_free(nd);
		}
		json_object_set(c->out, "crossed", json_object_get(out, "crossed"));
		json_decref(out);
	} else {
		ok(c, 200, out);
	}
}

/* `palisade shadow --job|--group|--tenant`: the scope of the body in
 * shadow from now on; {scope, already, live_percent, moved} as the CLI's
 * --output json. */
static void h_shadow_set(call *c)
{
	pal_scope sc;
	const char *why;
	if (!body_scope(c, &sc) || !reason(c, false, &why))
		return;
	bool already;
	int percent;
	int64_t moved;
	char err[1024], scope[200];
	int rc = pal_store_shadow_set(c->api->st, &sc, c->who.name, why, &already, &percent, &moved,
				      err, sizeof err);
	if (rc) {
		problem_rc(c, rc, err);
		return;
	}
	pal_scope_format(&sc, scope, sizeof scope);
	ok(c, 200,
	   json_pack("{s:s, s:b, s:i, s:I}", "scope", scope, "already", already, "live_percent",
		     percent, "moved", (json_int_t)moved));
}

/* `palisade shadow list`: the scopes in shadow with their steps, by
 * scope, a page at a time (a job file's `mode: shadow` puts each of its
 * jobs in shadow: one row each).  Cluster-wide: not for a tenant-scoped
 * token. */
static void h_shadow_list(call *c)
{
	int limit;
	json_t *rows;
	char *next, err[1024];
	if (!unscoped(c) || !page_limit(c, &limit))
		return;
	int rc = pal_apistore_shadow_page(c->api->st, query(c, "cursor"), limit, &rows, &next, err,
					  sizeof err);
	page_answer(c, rc, rows, next, err);
}

/*
 * `palisade shadow diff`: the body, the old system's record of what it
 * fired ("job_id,RFC3339" lines, text/csv or text/plain, up to the
 * listener's body limit), against palisade's plan of the jobs of ?job=,
 * ?group= or ?tenant= (none: every job) over [?from, ?to), at most ?limit=
 * differences (1..SHADOW_DIFF_LIMIT_MAX, default SHADOW_DIFF_LIMIT).  A
 * line that is not one answers 422 invalid-record naming it.  A token
 * limited to tenants sees its tenants' jobs only: a job or tenant of
 * another is 404, another tenant's jobs in a group or in the record are as
 * jobs palisade does not know (unknown_job without a scope).
 */
static void h_shadow_diff(call *c)
{
	int64_t from, to;
	pal_scope sc;
	if (!query_time(c, "from", &from) || !query_time(c, "to", &to))
		return;
	if (to <= from) {
		problem(c, 400, "bad-parameter", "Bad parameter", "to is not after from");
		return;
	}
	long limit = SHADOW_DIFF_LIMIT;
	const char *lim = query(c, "limit");
	if (lim) {
		char *end;
		limit = strtol(lim, &end, 10);
		if (*end || limit < 1 || limit > SHADOW_DIFF_LIMIT_MAX) {
			problem(c, 400, "bad-parameter", "Bad parameter",
				"limit \"%.20s\": expected an integer in 1..%d", lim,
				SHADOW_DIFF_LIMIT_MAX);
			return;
		}
	}
	if (!query_scope(c, &sc))
		return;
	const char *ct = header(c, "Content-Type");
	if (!ct || (strncasecmp(ct, "text/csv", 8) && strncasecmp(ct, "text/plain", 10))) {
		problem(c, 415, "unsupported-media-type", "Unsupported media type",
			"the body is the old system's record: \"job_id,RFC3339\" lines, "
			"Content-Type: text/csv");
		return;
	}
	pal_shadow_record *rec = pal_shadow_record_new(from, to);
	const char *p = c->req->body ? c->req->body : "", *end = p + c->req->body_len;
	for (long no = 1; p < end; no++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		char *line = g_strndup(p, n);
		bool good = strlen(line) == n && pal_shadow_record_line(rec, line);
		g_free(line);
		if (!good) {
			pal_shadow_record_free(rec);
			problem(c, 422, "invalid-record", "Not a record of fired instants",
				"line %ld: expected \"job_id,RFC3339\"", no);
			json_object_set_new(c->out, "line", json_integer(no));
			return;
		}
		p += n + (nl != NULL);
	}
	const char *tenants[PAL_TOKEN_TENANTS_MAX];
	for (size_t i = 0; i < c->who.n_tenants; i++)
		tenants[i] = c->who.tenants[i];
	json_t *rep;
	char err[1024];
	int rc = pal_shadow_report(c->api->st, &sc, tenants, c->who.n_tenants, rec, (size_t)limit,
				   &rep, err, sizeof err);
	pal_shadow_record_free(rec);
	if (rc == PAL_ETOOBIG)
		problem(c, 400, "bad-parameter", "Bad parameter", "%s", err);
	else if (rc)
		problem_rc(c, rc, err);
	else
		ok(c, 200, rep);
}

/* ---- routes ----------------------------------------------------------------- */

typedef struct route {
	const char *method;
	const char *pattern; /* segments; "*" captures one */
	pal_role role;	     /* PAL_ROLE_NONE: no token needed */
	void (*fn)(call *c);
	bool raw_body; /* the handler reads the body itself (not JSON) */
} route;

static const route routes[] = {
    {"GET", "/api/v1/openapi.json", PAL_ROLE_NONE, h_openapi, false},
    {"GET", "/api/v1/status", PAL_ROLE_VIEWER, h_status, false},
    {"GET", "/api/v1/verify", PAL_ROLE_VIEWER, h_verify, false},
    {"GET", "/api/v1/report/cost", PAL_ROLE_VIEWER, h_report_cost, false},
    {"POST", "/api/v1/rollback", PAL_ROLE_ADMIN, h_rollback, false},
    {"POST", "/api/v1/cutover", PAL_ROLE_ADMIN, h_cutover, false},
    {"POST", "/api/v1/shadow", PAL_ROLE_ADMIN, h_shadow_set, false},
    {"GET", "/api/v1/shadow", PAL_ROLE_VIEWER, h_shadow_list, false},
    {"POST", "/api/v1/shadow/diff", PAL_ROLE_VIEWER, h_shadow_diff, true},
    {"POST", "/api/v1/drain", PAL_ROLE_ADMIN, h_drain, false},
    {"POST", "/api/v1/plan/diff", PAL_ROLE_VIEWER, h_plan_diff, true},
    {"POST", "/api/v1/apply", PAL_ROLE_ADMIN, h_apply, true},
    {"GET", "/api/v1/jobs", PAL_ROLE_VIEWER, h_jobs, false},
    {"GET", "/api/v1/jobs/*", PAL_ROLE_VIEWER, h_job, false},
    {"GET", "/api/v1/calendars", PAL_ROLE_VIEWER, h_calendars, false},
    {"GET", "/api/v1/calendars/*", PAL_ROLE_VIEWER, h_calendars, false},
    {"DELETE", "/api/v1/jobs/*", PAL_ROLE_ADMIN, h_job_delete, false},
    {"POST", "/api/v1/jobs/*/pause", PAL_ROLE_OPERATOR, h_job_pause, false},
    {"POST", "/api/v1/jobs/*/resume", PAL_ROLE_OPERATOR, h_job_resume, false},
    {"POST", "/api/v1/jobs/*/trigger", PAL_ROLE_OPERATOR, h_job_trigger, false},
    {"POST", "/api/v1/jobs/*/cancel", PAL_ROLE_OPERATOR, h_job_cancel, false},
    {"POST", "/api/v1/groups/*/pause", PAL_ROLE_OPERATOR, h_group_pause, false},
    {"POST", "/api/v1/groups/*/resume", PAL_ROLE_OPERATOR, h_group_resume, false},
    {"POST", "/api/v1/tenants/*/pause", PAL_ROLE_OPERATOR, h_tenant_pause, false},
    {"POST", "/api/v1/tenants/*/resume", PAL_ROLE_OPERATOR, h_tenant_resume, false},
    {"POST", "/api/v1/pause", PAL_ROLE_OPERATOR, h_all_pause, false},
    {"POST", "/api/v1/resume", PAL_ROLE_OPERATOR, h_all_resume, false},
    {"POST", "/api/v1/jobs/*/backfill", PAL_ROLE_OPERATOR, h_job_backfill, false},
    {"POST", "/api/v1/jobs/*/release", PAL_ROLE_OPERATOR, h_job_release, false},
    {"GET", "/api/v1/triggers", PAL_ROLE_VIEWER, h_triggers, false},
    {"POST", "/api/v1/triggers/*/cancel", PAL_ROLE_OPERATOR, h_trigger_cancel, false},
    {"GET", "/api/v1/triggers/*/attempts", PAL_ROLE_VIEWER, h_trigger_attempts, false},
    {"GET", "/api/v1/misfires", PAL_ROLE_VIEWER, h_misfires, false},
    {"GET", "/api/v1/tickets", PAL_ROLE_VIEWER, h_tickets, false},
    {"GET", "/api/v1/tickets/*", PAL_ROLE_VIEWER, h_ticket, false},
    {"POST", "/api/v1/tickets/*/resolve", PAL_ROLE_OPERATOR, h_ticket_resolve, false},
    {"GET", "/api/v1/gates", PAL_ROLE_VIEWER, h_gates, false},
    {"GET", "/api/v1/audit", PAL_ROLE_VIEWER, h_audit, false},
    {"GET", "/api/v1/tokens", PAL_ROLE_ADMIN, h_tokens, false},
    {"POST", "/api/v1/tokens", PAL_ROLE_ADMIN, h_token_create, false},
    {"POST", "/api/v1/tokens/*/revoke", PAL_ROLE_ADMIN, h_token_revoke, false},
};

/* PATH matches PATTERN; the captured segments go to C's args. */
static bool match(const char *pattern, const char *path, call *c)
{
	int n = 0;
	c->arg[0] = c->arg[1] = NULL; /* nothing of a pattern tried before */
	while (*pattern && *path) {
		if (*pattern == '*') {
			size_t len = strcspn(path, "/");
			if (len == 0 || len >= sizeof c->argbuf[0] || n >= 2)
				return false;
			memcpy(c->argbuf[n], path, len);
			c->argbuf[n][len] = '\0';
			c->arg[n] = c->argbuf[n];
			n++;
			pattern++;
			path += len;
			continue;
		}
		if (*pattern++ != *path++)
			return false;
	}
	return *pattern == '\0' && *path == '\0';
}

/* ---- authentication --------------------------------------------------------- */

static bool connect_store(pal_api *api, call *c)
{
	if (api->st)
		return true;
	char err[1024];
	int v;
	if (pal_store_open_session(api->conninfo, &api->st, err, sizeof err) ||
	    pal_store_schema_check(api->st, &v, err, sizeof err) ||
	    pal_store_set_statement_timeout(api->st, api->timeout_ms, err, sizeof err)) {
		pal_store_close(api->st);
		api->st = NULL;
		problem(c, 503, "unavailable", "Database unavailable", "%s", err);
		return false;
	}
	return true;
}

/* Who TOK is (into c->who); false with a problem (401, 503) otherwise. */
static bool identify(call *c, const char *tok)
{
	if (c->api->admin_token && pal_secret_equal(tok, c->api->admin_token)) {
		snprintf(c->who.id, sizeof c->who.id, "admin-token");
		snprintf(c->who.name, sizeof c->who.name, "admin-token");
		c->who.role = PAL_ROLE_ADMIN;
		return connect_store(c->api, c);
	}
	/* an API token is checked in the database, request by request */
	if (!connect_store(c->api, c))
		return false;
	char err[512];
	int rc = pal_token_verify(c->api->st, tok, &c->who, err, sizeof err);
	if (rc == PAL_ENOENT) {
		problem(c, 401, "unauthorized", "Authentication required",
			"the token is unknown or revoked");
		return false;
	}
	if (rc) {
		problem_rc(c, rc, err);
		return false;
	}
	return true;
}

static bool authenticate(call *c)
{
	const char *auth = header(c, "Authorization");
	if (!auth || strncasecmp(auth, "Bearer ", 7) != 0) {
		problem(c, 401, "unauthorized", "Authentication required",
			"send Authorization: Bearer TOKEN (`palisade token create`)");
		return false;
	}
	const char *tok = auth + 7;
	while (*tok == ' ')
		tok++;
	return identify(c, tok);
}

int pal_api_identify(pal_api *api, const char *token, pal_token_identity *out, char *err,
		     size_t errlen)
{
	pal_api_request req = {.method = "POST", .path = "/console/login"};
	call c = {.api = api, .req = &req};
	pthread_mutex_lock(&api->mu);
	bool known = identify(&c, token ? token : "");
	pthread_mutex_unlock(&api->mu);
	int rc = known ? PAL_OK : c.status == 401 ? PAL_ENOENT : PAL_EDB;
	if (known)
		*out = c.who;
	else
		snprintf(err, errlen, "%s",
			 json_string_value(json_object_get(c.out, "detail")) ?: "unknown token");
	json_decref(c.out);
	return rc;
}

/* ---- serving ------------------------------------------------------------------ */

/* One write of the token from its bucket; false (429) when it is empty. */
static bool take_write(call *c)
{
	int64_t now = pal_mono_ms();
	struct bucket *b = g_hash_table_lookup(c->api->buckets, c->who.id);
	if (!b) {
		b = g_new(struct bucket, 1);
		*b = (struct bucket){WRITE_BURST, now};
		g_hash_table_insert(c->api->buckets, g_strdup(c->who.id), b);
	}
	b->tokens += (double)(now - b->at_ms) / 1000.0 * WRITE_RATE;
	if (b->tokens > WRITE_BURST)
		b->tokens = WRITE_BURST;
	b->at_ms = now;
	if (b->tokens >= 1.0) {
		b->tokens -= 1.0;
		return true;
	}
	c->retry_after = (int)((1.0 - b->tokens) / WRITE_RATE) + 1;
	problem(c, 429, "rate-limited", "Too many writes",
		"token %s is over %.0f writes a second on this node; retry after %d s", c->who.name,
		WRITE_RATE, c->retry_after);
	return false;
}

/* The JSON body of a write: an object, or nothing (an empty object). */
static bool parse_body(call *c)
{
	const pal_api_request *req = c->req;
	if (req->body_len == 0) {
		c->body = json_object();
		return true;
	}
	const char *ct = header(c, "Content-Type");
	if (!ct || strncasecmp(ct, "application/json", 16) != 0) {
		problem(c, 415, "unsupported-media-type", "Unsupported media type",
			"a body must be application/json");
		return false;
	}
	json_error_t je;
	c->body = json_loadb(req->body, req->body_len, 0, &je);
	if (!json_is_object(c->body)) {
		problem(c, 400, "bad-json", "Malformed JSON", "the body must be a JSON object: %s",
			c->body ? "not an object" : je.text);
		return false;
	}
	return true;
}

static void run(call *c)
{
	const pal_api_request *req = c->req;
	const route *r = NULL;
	bool path_known = false;
	for (size_t i = 0; i < G_N_ELEMENTS(routes); i++) {
		if (!match(routes[i].pattern, req->path, c))
			continue;
		path_known = true;
		bool head = !strcmp(req->method, "HEAD") && !strcmp(routes[i].method, "GET");
		if (!strcmp(req->method, routes[i].method) || head) {
			r = &routes[i];
			break;
		}
	}
	if (!r) {
		if (path_known)
			problem(c, 405, "method-not-allowed", "Method not allowed",
				"%s is not allowed on %s", req->method, req->path);
		else
			problem(
			    c, 404, "no-route", "No such route",
			    "%s is not a route of this API (GET /api/v1/openapi.json lists them)",
			    req->path);
		return;
	}
	if (r->role == PAL_ROLE_NONE) {
		r->fn(c);
		return;
	}
	if (!authenticate(c))
		return;
	if (!pal_role_allows(c->who.role, r->role)) {
		problem(c, 403, "forbidden-role", "Role not allowed",
			"token %s has role %s; %s %s needs %s", c->who.name,
			pal_role_name(c->who.role), r->method, r->pattern, pal_role_name(r->role));
		return;
	}
	bool write = strcmp(r->method, "GET") != 0; /* POST, DELETE */
	if (!write) {
		r->fn(c);
		return;
	}
	if (!take_write(c))
		return;
	char err[1024];
	if (r->raw_body)
		c->body = json_object();
	else if (!parse_body(c))
		return;
	if (pal_apistore_identity(c->api->st, pal_role_name(c->who.role), req->client, err,
				  sizeof err)) {
		problem_rc(c, PAL_EDB, err);
		return;
	}
	const char *key = header(c, "Idempotency-Key");
	if (key && (strlen(key) < 1 || strlen(key) > 128)) {
		problem(c, 400, "bad-idempotency-key", "Bad Idempotency-Key",
			"an Idempotency-Key is 1-128 characters");
		return;
	}
	if (key) {
		/* The query counts (apply reads dry_run and reason from it); without
		 * one the digest is the body's alone, as keys stored before it
		 * counted were made. */
		GChecksum *sum = g_checksum_new(G_CHECKSUM_SHA256);
		if (req->query && *req->query) {
			g_checksum_update(sum, (const guchar *)req->query, -1);
			g_checksum_update(sum, (const guchar *)"\n\n", 2);
		}
		g_checksum_update(sum, (const guchar *)(req->body ? req->body : ""),
				  (gssize)req->body_len);
		char *digest = g_strdup(g_checksum_get_string(sum));
		g_checksum_free(sum);
		pal_idem_outcome o;
		int status;
		char *resp;
		int rc = pal_apistore_idem_begin(c->api->st, c->who.id, key, req->method, req->path,
						 digest, &o, &status, &resp, err, sizeof err);
		g_free(digest);
		if (rc) {
			problem_rc(c, rc, err);
			return;
		}
		if (o == PAL_IDEM_MISMATCH) {
			problem(c, 422, "idempotency-key-reused", "Idempotency-Key reused",
				"this Idempotency-Key was used for another request");
			return;
		}
		if (o == PAL_IDEM_IN_PROGRESS) {
			problem(c, 409, "request-in-progress", "Request in progress",
				"a request with this Idempotency-Key is still being served");
			return;
		}
		if (o == PAL_IDEM_REPLAY) {
			json_t *j = json_loads(resp, 0, NULL);
			free(resp);
			ok(c, (unsigned)status, j ? j : json_object());
			c->problem = status >= 400;
			c->replayed = "true";
			return;
		}
	}
	r->fn(c);
	if (key) {
		/* A created token's secret is never stored: its key keeps a problem
		 * that a replay answers instead. */
		json_t *keep = c->out;
		int keep_status = (int)c->status;
		if (r->fn == h_token_create && c->status == 201) {
			keep = json_pack(
			    "{s:s, s:s, s:i, s:s, s:s}", "type", PROBLEM_BASE "secret-shown-once",
			    "title", "Secret shown once", "status", 409, "detail",
			    "this Idempotency-Key created a token; its secret was shown in "
			    "that answer only and is not kept",
			    "instance", req->path);
			keep_status = 409;
		}
		char *text = json_dumps(keep, JSON_COMPACT);
		if (keep != c->out)
			json_decref(keep);
		if (pal_apistore_idem_finish(c->api->st, c->who.id, key, keep_status,
					     text ? text : "{}", err, sizeof err))
			pal_log(PAL_LOG_WARN, "api.idempotency_lost", "{s:s, s:s}", "key", key,
				"error", err);
		free(text);
	}
}

void pal_api_serve(pal_api *api, const pal_api_request *req, pal_api_reply *out)
{
	memset(out, 0, sizeof *out);
	call c = {.api = api, .req = req};
	pthread_mutex_lock(&api->mu);
	run(&c);
	/* a broken connection is reopened by the next request */
	if (api->st && c.status == 503 && pal_store_ping(api->st, (char[64]){0}, 64)) {
		pal_store_close(api->st);
		api->st = NULL;
	}
	if (api->st && c.who.role != PAL_ROLE_NONE &&
	    pal_apistore_identity(api->st, NULL, NULL, (char[64]){0}, 64)) {
		pal_store_close(api->st);
		api->st = NULL;
	}
	pthread_mutex_unlock(&api->mu);
	if (!c.out)
		problem(&c, 500, "internal", "Internal error", "out of memory");
	char *text = json_dumps(c.out, JSON_INDENT(2));
	size_t n = text ? strlen(text) : 0;
	out->body = text ? realloc(text, n + 2) : NULL;
	if (text && !out->body)
		free(text); /* realloc failed: text is still ours */
	if (out->body) {
		out->body[n] = '\n';
		out->body[n + 1] = '\0';
		out->len = n + 1;
	}
	out->status = c.status ? c.status : 500;
	out->content_type = c.problem ? "application/problem+json" : "application/json";
	if (c.status == 401) {
		out->header_name[out->n_headers] = "WWW-Authenticate";
		snprintf(out->header_value[out->n_headers++], sizeof out->header_value[0],
			 "Bearer realm=\"palisade\"");
	}
	if (c.retry_after) {
		out->header_name[out->n_headers] = "Retry-After";
		snprintf(out->header_value[out->n_headers++], sizeof out->header_value[0], "%d",
			 c.retry_after);
	}
	if (c.replayed) {
		out->header_name[out->n_headers] = "Idempotent-Replayed";
		snprintf(out->header_value[out->n_headers++], sizeof out->header_value[0], "true");
	}
	pal_log(c.status >= 500 ? PAL_LOG_WARN : PAL_LOG_DEBUG, "api.request",
		"{s:s, s:s, s:s, s:s, s:i}", "method", req->method, "path", req->path, "client",
		req->client, "token", c.who.name[0] ? c.who.name : "-", "status", (int)out->status);
	json_decref(c.out);
	json_decref(c.body);
}

int pal_api_open(const pal_api_config *cfg, pal_api **out, char *err, size_t errlen)
{
	pal_api *api = calloc(1, sizeof *api);
	if (!api || !(api->conninfo = strdup(cfg->conninfo ? cfg->conninfo : ""))) {
		free(api);
		snprintf(err, errlen, "api: out of memory");
		return PAL_ENOMEM;
	}
	pthread_mutex_init(&api->mu, NULL);
	api->buckets = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	api->admin_token = cfg->admin_token && *cfg->admin_token ? strdup(cfg->admin_token) : NULL;
	api->key_retention_ms = cfg->key_retention_ms;
	api->default_shards = cfg->default_shards > 0 ? cfg->default_shards : 16;
	api->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : 5000;
	api->node_id = strdup(cfg->node_id ? cfg->node_id : "");
	api->drain = cfg->drain;
	api->drain_arg = cfg->drain_arg;
	api->trace_prefix = pal_trace_cluster(cfg->cluster ? cfg->cluster : "default");
	api->cluster = g_strdup(cfg->cluster ? cfg->cluster : "default");
	api->zk_connect = g_strdup(cfg->zk_connect);
	api->zk_root = g_strdup(cfg->zk_root ? cfg->zk_root : "/palisade");
	api->misfire_threshold_ms = cfg->misfire_threshold_ms;
	memcpy(api->resume_ramp_ms, cfg->resume_ramp_ms, sizeof api->resume_ramp_ms);
	*out = api;
	return PAL_OK;
}

void pal_api_close(pal_api *api)
{
	if (!api)
		return;
	pal_store_close(api->st);
	pthread_mutex_destroy(&api->mu);
	g_hash_table_destroy(api->buckets);
	free(api->conninfo);
	free(api->admin_token);
	free(api->node_id);
	g_free(api->cluster);
	g_free(api->zk_connect);
	g_free(api->zk_root);
	free(api);
}
