/*
 * api.c - the HTTP API (api.h): the route table, authentication, roles,
 * the write rate, idempotency and serving; the handlers live one file per
 * family of routes (routes_jobs.c, routes_runs.c, routes_ops.c,
 * routes_reads.c) and answer with answer.c's helpers (api_int.h).  The work
 * itself is done by the store and operator functions the CLI calls
 * (ops.h, lifecycle.h, tokens.h, apistore.h).
 *
 * Flow of a request: match a route (404 / 405), authenticate (401), check
 * the role (403), refuse a query argument given twice or one the route does
 * not accept (400), parse the JSON body of a write (400 / 415) and refuse a
 * field the route does not accept (422: what each accepts is declared beside
 * its handler, PAL_API_ACCEPTS, and named by the route table), then for a
 * write with an Idempotency-Key look up its earlier answer (replayed as it
 * was, 409 while the first is still served, 422 when the key was used for
 * another request), then run the handler, whose answer is kept for the key
 * (a 5xx is not kept: the key is deleted when nothing committed, and
 * otherwise left for the next retry to take over, pal_apistore_idem_finish).
 * Before any write the connection is stamped with the token's role and the
 * client address, which the audit rows of the request carry (sql/024); the
 * actor of those rows is the token's name.
 *
 * Tenants: a token limited to tenants sees only their jobs.  A read of
 * another tenant's job answers 404, as if it did not exist; a write to it
 * 403.  Routes that are not about one job (group and global pauses, audit,
 * gates, tokens) are refused to such a token with 403; the shadow diff is
 * the exception, for it compares job by job: other tenants' jobs in its
 * body count as unknown jobs.
 *
 * Threading: called from the admin endpoint's thread; one request at a
 * time under MU, on one connection of our own, opened on first use and
 * reopened after it broke.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "palisade/apistore.h"
#include "palisade/clock.h"
#include "palisade/lifecycle.h"
#include "palisade/log.h"
#include "palisade/secret.h"
#include "palisade/trace.h"
#include "palisade/version.h"
#include "api_int.h"

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

static const pal_api_accepts a_openapi = {"", ""};
static void h_openapi(call *c)
{
	json_error_t je;
	json_t *doc = json_loadb(pal_api_openapi, pal_api_openapi_len, 0, &je);
	if (!doc) {
		pal_api__problem(c, 500, "internal", "Internal error",
				 "the compiled-in document: %s", je.text);
		return;
	}
	pal_api__ok(c, 200, doc);
}

/* ---- routes ----------------------------------------------------------------- */

/*
 * What a retry does when it takes a keyed write's key over and the earlier
 * attempt's audit rows show it committed (answer_lost(), docs/api.md,
 * "Idempotency").  A route answers "committed, answer lost" only when all it
 * does commits in the transaction of its audit rows; one that does more
 * after that commit is finished or run again.
 */
typedef enum takeover {
	/* 409 request-committed-answer-lost: nothing is done again */
	TAKEOVER_LOST,
	/* the handler runs again: a second run is harmless and does what the
	 * first may not have done (trigger and backfill: their request id names
	 * the first's runs; delete: "already retired", then the sweep; drain:
	 * the node is asked again; rollback: a second step of the scope already
	 * rolled back, then the hand-back the first may not have reached) */
	TAKEOVER_RERUN,
	/* apply: the 409, after the sweep of the jobs its job.retire rows name
	 * (?prune=true retires them, then sweeps in a second transaction); not
	 * run again, which would store the body over later applies and find no
	 * pruned job left to sweep */
	TAKEOVER_SWEEP,
} takeover;

typedef struct route {
	const char *method;
	const char *pattern; /* segments; "*" captures one */
	pal_role role;	     /* PAL_ROLE_NONE: no token needed */
	void (*fn)(call *c);
	const pal_api_accepts *accepts; /* what FN reads: any other name is refused */
	bool raw_body;			/* the handler reads the body itself (not JSON) */
	takeover on_takeover;		/* a keyed write's retry that takes its key over */
} route;

static const route routes[] = {
    {"GET", "/api/v1/openapi.json", PAL_ROLE_NONE, h_openapi, &a_openapi, false, TAKEOVER_LOST},
    {"GET", "/api/v1/status", PAL_ROLE_VIEWER, pal_api__h_status, &pal_api__a_status, false,
     TAKEOVER_LOST},
    {"GET", "/api/v1/verify", PAL_ROLE_VIEWER, pal_api__h_verify, &pal_api__a_verify, false,
     TAKEOVER_LOST},
    {"GET", "/api/v1/report/cost", PAL_ROLE_VIEWER, pal_api__h_report_cost, &pal_api__a_report_cost,
     false, TAKEOVER_LOST},
    {"POST", "/api/v1/rollback", PAL_ROLE_ADMIN, pal_api__h_rollback, &pal_api__a_rollback, false,
     TAKEOVER_RERUN},
    {"POST", "/api/v1/cutover", PAL_ROLE_ADMIN, pal_api__h_cutover, &pal_api__a_cutover, false,
     TAKEOVER_LOST},
    {"POST", "/api/v1/shadow", PAL_ROLE_ADMIN, pal_api__h_shadow_set, &pal_api__a_shadow_set, false,
     TAKEOVER_LOST},
    {"GET", "/api/v1/shadow", PAL_ROLE_VIEWER, pal_api__h_shadow_list, &pal_api__a_shadow_list,
     false, TAKEOVER_LOST},
    {"POST", "/api/v1/shadow/diff", PAL_ROLE_VIEWER, pal_api__h_shadow_diff,
     &pal_api__a_shadow_diff, true, TAKEOVER_LOST},
    {"POST", "/api/v1/drain", PAL_ROLE_ADMIN, pal_api__h_drain, &pal_api__a_drain, false,
     TAKEOVER_RERUN},
    {"POST", "/api/v1/plan/diff", PAL_ROLE_VIEWER, pal_api__h_plan_diff, &pal_api__a_plan_diff,
     true, TAKEOVER_LOST},
    {"POST", "/api/v1/apply", PAL_ROLE_ADMIN, pal_api__h_apply, &pal_api__a_apply, true,
     TAKEOVER_SWEEP},
    {"GET", "/api/v1/jobs", PAL_ROLE_VIEWER, pal_api__h_jobs, &pal_api__a_jobs, false,
     TAKEOVER_LOST},
    {"GET", "/api/v1/jobs/*", PAL_ROLE_VIEWER, pal_api__h_job, &pal_api__a_job, false,
     TAKEOVER_LOST},
    {"GET", "/api/v1/calendars", PAL_ROLE_VIEWER, pal_api__h_calendars, &pal_api__a_calendars,
     false, TAKEOVER_LOST},
    {"GET", "/api/v1/calendars/*", PAL_ROLE_VIEWER, pal_api__h_calendars, &pal_api__a_calendars,
     false, TAKEOVER_LOST},
    {"GET", "/api/v1/notify_rules", PAL_ROLE_VIEWER, pal_api__h_notify_rules,
     &pal_api__a_notify_rules, false, TAKEOVER_LOST},
    {"DELETE", "/api/v1/jobs/*", PAL_ROLE_ADMIN, pal_api__h_job_delete, &pal_api__a_job_delete,
     false, TAKEOVER_RERUN},
    {"POST", "/api/v1/jobs/*/pause", PAL_ROLE_OPERATOR, pal_api__h_job_pause, &pal_api__a_job_pause,
     false, TAKEOVER_LOST},
    {"POST", "/api/v1/jobs/*/resume", PAL_ROLE_OPERATOR, pal_api__h_job_resume,
     &pal_api__a_job_resume, false, TAKEOVER_LOST},
    {"POST", "/api/v1/jobs/*/trigger", PAL_ROLE_OPERATOR, pal_api__h_job_trigger,
     &pal_api__a_job_trigger, false, TAKEOVER_RERUN},
    {"POST", "/api/v1/jobs/*/cancel", PAL_ROLE_OPERATOR, pal_api__h_job_cancel,
     &pal_api__a_job_cancel, false, TAKEOVER_LOST},
    {"POST", "/api/v1/groups/*/pause", PAL_ROLE_OPERATOR, pal_api__h_group_pause,
     &pal_api__a_group_pause, false, TAKEOVER_LOST},
    {"POST", "/api/v1/groups/*/resume", PAL_ROLE_OPERATOR, pal_api__h_group_resume,
     &pal_api__a_group_resume, false, TAKEOVER_LOST},
    {"POST", "/api/v1/tenants/*/pause", PAL_ROLE_OPERATOR, pal_api__h_tenant_pause,
     &pal_api__a_tenant_pause, false, TAKEOVER_LOST},
    {"POST", "/api/v1/tenants/*/resume", PAL_ROLE_OPERATOR, pal_api__h_tenant_resume,
     &pal_api__a_tenant_resume, false, TAKEOVER_LOST},
    {"POST", "/api/v1/pause", PAL_ROLE_OPERATOR, pal_api__h_all_pause, &pal_api__a_all_pause, false,
     TAKEOVER_LOST},
    {"POST", "/api/v1/resume", PAL_ROLE_OPERATOR, pal_api__h_all_resume, &pal_api__a_all_resume,
     false, TAKEOVER_LOST},
    {"POST", "/api/v1/jobs/*/backfill", PAL_ROLE_OPERATOR, pal_api__h_job_backfill,
     &pal_api__a_job_backfill, false, TAKEOVER_RERUN},
    {"POST", "/api/v1/jobs/*/release", PAL_ROLE_OPERATOR, pal_api__h_job_release,
     &pal_api__a_job_release, false, TAKEOVER_LOST},
    {"GET", "/api/v1/triggers", PAL_ROLE_VIEWER, pal_api__h_triggers, &pal_api__a_triggers, false,
     TAKEOVER_LOST},
    {"POST", "/api/v1/triggers/*/cancel", PAL_ROLE_OPERATOR, pal_api__h_trigger_cancel,
     &pal_api__a_trigger_cancel, false, TAKEOVER_LOST},
    {"GET", "/api/v1/triggers/*/attempts", PAL_ROLE_VIEWER, pal_api__h_trigger_attempts,
     &pal_api__a_trigger_attempts, false, TAKEOVER_LOST},
    {"GET", "/api/v1/misfires", PAL_ROLE_VIEWER, pal_api__h_misfires, &pal_api__a_misfires, false,
     TAKEOVER_LOST},
    {"GET", "/api/v1/tickets", PAL_ROLE_VIEWER, pal_api__h_tickets, &pal_api__a_tickets, false,
     TAKEOVER_LOST},
    {"GET", "/api/v1/tickets/*", PAL_ROLE_VIEWER, pal_api__h_ticket, &pal_api__a_ticket, false,
     TAKEOVER_LOST},
    {"POST", "/api/v1/tickets/*/resolve", PAL_ROLE_OPERATOR, pal_api__h_ticket_resolve,
     &pal_api__a_ticket_resolve, false, TAKEOVER_LOST},
    {"GET", "/api/v1/gates", PAL_ROLE_VIEWER, pal_api__h_gates, &pal_api__a_gates, false,
     TAKEOVER_LOST},
    {"GET", "/api/v1/audit", PAL_ROLE_VIEWER, pal_api__h_audit, &pal_api__a_audit, false,
     TAKEOVER_LOST},
    {"GET", "/api/v1/tokens", PAL_ROLE_ADMIN, pal_api__h_tokens, &pal_api__a_tokens, false,
     TAKEOVER_LOST},
    {"POST", "/api/v1/tokens", PAL_ROLE_ADMIN, pal_api__h_token_create, &pal_api__a_token_create,
     false, TAKEOVER_LOST},
    {"POST", "/api/v1/tokens/*/revoke", PAL_ROLE_ADMIN, pal_api__h_token_revoke,
     &pal_api__a_token_revoke, false, TAKEOVER_LOST},
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
		pal_api__problem(c, 503, "unavailable", "Database unavailable", "%s", err);
		return false;
	}
	return true;
}

/* Who TOK is (into c->who); false with a problem (401, 503) otherwise. */
static bool identify(call *c, const char *tok)
{
	if (c->api->admin_token && pal_secret_equal(tok, c->api->admin_token)) {
		snprintf(c->who.id, sizeof c->who.id, "%s", PAL_ADMIN_TOKEN_NAME);
		snprintf(c->who.name, sizeof c->who.name, "%s", PAL_ADMIN_TOKEN_NAME);
		c->who.role = PAL_ROLE_ADMIN;
		return connect_store(c->api, c);
	}
	/* an API token is checked in the database, request by request */
	if (!connect_store(c->api, c))
		return false;
	char err[512];
	int rc = pal_token_verify(c->api->st, tok, &c->who, err, sizeof err);
	if (rc == PAL_ENOENT) {
		pal_api__problem(c, 401, "unauthorized", "Authentication required",
				 "the token is unknown or revoked");
		return false;
	}
	if (rc) {
		pal_api__problem_rc(c, rc, err);
		return false;
	}
	return true;
}

static bool authenticate(call *c)
{
	const char *auth = pal_api__header(c, "Authorization");
	if (!auth || strncasecmp(auth, "Bearer ", 7) != 0) {
		pal_api__problem(c, 401, "unauthorized", "Authentication required",
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
	pal_api__problem(c, 429, "rate-limited", "Too many writes",
			 "token %s is over %.0f writes a second on this node; retry after %d s",
			 c->who.name, WRITE_RATE, c->retry_after);
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
	const char *ct = pal_api__header(c, "Content-Type");
	if (!ct || strncasecmp(ct, "application/json", 16) != 0) {
		pal_api__problem(c, 415, "unsupported-media-type", "Unsupported media type",
				 "a body must be application/json");
		return false;
	}
	json_error_t je;
	c->body = json_loadb(req->body, req->body_len, 0, &je);
	if (!json_is_object(c->body)) {
		pal_api__problem(c, 400, "bad-json", "Malformed JSON",
				 "the body must be a JSON object: %s",
				 c->body ? "not an object" : je.text);
		return false;
	}
	return true;
}

/*
 * The next argument of QUERY (pal_api_request's canonical text:
 * "KLEN:KEY=VLEN:VALUE\n" per argument, sorted) at *P: its key into *KEY
 * and *KL (not NUL-terminated), *P moved past it; false at the end, or
 * when the text is not the canonical one (nothing more to read).
 */
static bool next_arg(const char **p, const char **key, size_t *kl)
{
	if (!*p || !**p)
		return false;
	char *end;
	unsigned long n = strtoul(*p, &end, 10);
	if (*end != ':' || strnlen(end + 1, n + 1) < n + 1 || end[1 + n] != '=')
		return false;
	*key = end + 1;
	*kl = n;
	unsigned long vl = strtoul(*key + n + 1, &end, 10);
	if (*end != ':' || strnlen(end + 1, vl + 1) < vl + 1 || end[1 + vl] != '\n')
		return false;
	*p = end + 1 + vl + 1;
	return true;
}

/* KEY (KL bytes) into NAME (cut to N - 1 bytes), as JSON text may hold it:
 * a byte outside printable ASCII, or a quote, becomes '?'. */
static void arg_name(const char *key, size_t kl, char *name, size_t n)
{
	snprintf(name, n, "%.*s", (int)(kl < 64 ? kl : 64), key);
	for (char *q = name; *q; q++)
		if (*q < 0x20 || *q > 0x7e || *q == '"' || *q == '\\')
			*q = '?';
}

/*
 * The first query argument that QUERY gives more than once, into NAME (cut
 * to N - 1 bytes); false when none.  Sorted, the entries of one key are
 * next to each other.  A repeated argument is refused: the handlers read
 * one occurrence, the Idempotency-Key digest covers all.
 */
static bool repeated_arg(const char *query, char *name, size_t n)
{
	const char *prev = NULL, *p = query, *key;
	size_t prev_len = 0, kl;
	while (next_arg(&p, &key, &kl)) {
		if (prev && prev_len == kl && !memcmp(prev, key, kl)) {
			arg_name(key, kl, name, n);
			return true;
		}
		prev = key;
		prev_len = kl;
	}
	return false;
}

/* NAME (LEN bytes) is a word of LIST, a space-separated list. */
static bool accepted(const char *list, const char *name, size_t len)
{
	for (const char *w = list; *w;) {
		size_t wl = strcspn(w, " ");
		if (wl == len && !memcmp(w, name, len))
			return true;
		w += wl;
		w += strspn(w, " ");
	}
	return false;
}

static gint cmp_names(gconstpointer a, gconstpointer b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * The problem for the names of UNKNOWN (taken) that route R does not
 * accept: 422 invalid for fields of the body (BODY), 400 bad-parameter for
 * query arguments.  The detail names them (sorted) and the accepted ones,
 * as do the problem's members "unknown" and "accepted" (arrays of names).
 */
static void refuse_unknown(call *c, const route *r, bool body, GPtrArray *unknown)
{
	const char *list = body ? r->accepts->body : r->accepts->query;
	g_ptr_array_sort(unknown, cmp_names);
	GString *names = g_string_new(NULL), *acc = g_string_new(NULL);
	json_t *ju = json_array(), *ja = json_array();
	for (guint i = 0; i < unknown->len; i++) {
		const char *u = g_ptr_array_index(unknown, i);
		g_string_append_printf(names, "%s\"%s\"", i ? ", " : "", u);
		json_array_append_new(ju, json_string(u));
	}
	for (const char *w = list; *w;) {
		size_t wl = strcspn(w, " ");
		g_string_append_printf(acc, "%s%.*s", acc->len ? ", " : "", (int)wl, w);
		json_array_append_new(ja, json_stringn(w, wl));
		w += wl;
		w += strspn(w, " ");
	}
	const char *what = body ? "field" : "query argument";
	if (!acc->len)
		g_string_printf(acc, "%s %s takes no %s", r->method, r->pattern,
				body ? "body fields" : "query arguments");
	else
		g_string_prepend(acc, "expected ");
	pal_api__problem(c, body ? 422 : 400, body ? "invalid" : "bad-parameter",
			 body ? "Invalid request" : "Bad parameter",
			 "unknown %s%s %s (%s); nothing was done", what,
			 unknown->len > 1 ? "s" : "", names->str, acc->str);
	json_object_set_new(c->out, "unknown", ju);
	json_object_set_new(c->out, "accepted", ja);
	g_string_free(names, TRUE);
	g_string_free(acc, TRUE);
	g_ptr_array_free(unknown, TRUE);
}

/* Every query argument of the request is one route R accepts; false with
 * a 400 bad-parameter answered otherwise. */
static bool query_accepted(call *c, const route *r)
{
	GPtrArray *unknown = g_ptr_array_new_with_free_func(g_free);
	const char *p = c->req->query, *key;
	size_t kl;
	char name[72];
	while (next_arg(&p, &key, &kl)) {
		if (accepted(r->accepts->query, key, kl))
			continue;
		arg_name(key, kl, name, sizeof name);
		g_ptr_array_add(unknown, g_strdup(name));
	}
	if (!unknown->len) {
		g_ptr_array_free(unknown, TRUE);
		return true;
	}
	refuse_unknown(c, r, false, unknown);
	return false;
}

/* Every field of the JSON body is one route R accepts; false with a 422
 * invalid answered otherwise. */
static bool body_accepted(call *c, const route *r)
{
	GPtrArray *unknown = g_ptr_array_new_with_free_func(g_free);
	const char *k;
	json_t *v;
	json_object_foreach(c->body, k, v)
	{
		(void)v;
		char name[72];
		if (accepted(r->accepts->body, k, strlen(k)))
			continue;
		arg_name(k, strlen(k), name, sizeof name);
		g_ptr_array_add(unknown, g_strdup(name));
	}
	if (!unknown->len) {
		g_ptr_array_free(unknown, TRUE);
		return true;
	}
	refuse_unknown(c, r, true, unknown);
	return false;
}

/* answer_lost()'s database error RC (ERR): 503, the connection closed */
static int lost_check_failed(call *c, int rc, const char *err)
{
	pal_api__problem_rc(c, rc, err);
	if (c->status < 500)
		pal_api__problem(c, 503, "unavailable", "Database unavailable", "%s", err);
	pal_store_close(c->api->st);
	c->api->st = NULL;
	return -1;
}

/*
 * A key taken over (its earlier attempt's node died, or its connection
 * broke, before the answer was kept): did that attempt commit?  Its audit
 * rows name the key (pal_apistore_identity), and with the key's lock held
 * its session is over, so what it committed is all it ever will.  When it
 * did, the action is not done again: the answer is a 409
 * request-committed-answer-lost naming those rows, kept as the key's
 * answer.  With SWEEP (TAKEOVER_SWEEP), the jobs the rows retired are
 * swept first, as the first attempt did after its commit if it got that
 * far (the sweep is idempotent; the answer's late_cancelled).  Routes that
 * are run again instead do not come here (takeover, docs/api.md,
 * "Idempotency").
 * 1: answered; 0: act; -1: the check or the sweep failed and the
 * connection is closed (the key stays in progress, its lock released, for
 * the next retry to take over and check again).
 */
static int answer_lost(call *c, const char *key, bool sweep)
{
	char err[1024];
	json_t *rows = NULL;
	int rc = pal_apistore_idem_committed(c->api->st, c->who.id, key, &rows, err, sizeof err);
	if (rc)
		return lost_check_failed(c, rc, err);
	if (!json_array_size(rows)) {
		json_decref(rows);
		return 0;
	}
	GPtrArray *retired = g_ptr_array_new();
	size_t i;
	json_t *row;
	json_array_foreach(rows, i, row)
	{
		const char *scope = json_string_value(json_object_get(row, "scope"));
		if (sweep && scope && !strncmp(scope, "job:", 4) &&
		    !g_strcmp0(json_string_value(json_object_get(row, "action")), "job.retire"))
			g_ptr_array_add(retired, (gpointer)(scope + 4));
	}
	int64_t late = 0;
	const char *why = pal_api__query(c, "reason");
	rc = pal_store_retire_sweep(c->api->st, (const char *const *)retired->pdata, retired->len,
				    c->who.name, why ? why : "", &late, err, sizeof err);
	guint n_retired = retired->len;
	g_ptr_array_free(retired, TRUE);
	if (rc) {
		json_decref(rows);
		return lost_check_failed(c, rc, err);
	}
	GString *ids = g_string_new(NULL);
	json_array_foreach(rows, i, row)
	{
		g_string_append_printf(ids, "%s%" JSON_INTEGER_FORMAT, i ? ", " : "",
				       json_integer_value(json_object_get(row, "id")));
	}
	pal_api__problem(c, 409, "request-committed-answer-lost", "Request committed, answer lost",
			 "an earlier attempt of this request committed its action (audit row%s "
			 "%s) and its node stopped before its answer was kept; it is not done "
			 "again",
			 json_array_size(rows) > 1 ? "s" : "", ids->str);
	g_string_free(ids, TRUE);
	json_object_set_new(c->out, "audit", rows);
	if (n_retired) /* what the sweep cancelled now */
		json_object_set_new(c->out, "late_cancelled", json_integer(late));
	return 1;
}

/* The SHA-256 (hex, g_free) that a keyed request's record keeps of it.
 * The query counts (apply reads dry_run and reason from it); without one
 * the digest is the body's alone, as keys stored before it counted were
 * made. */
static char *request_digest(const pal_api_request *req)
{
	GChecksum *sum = g_checksum_new(G_CHECKSUM_SHA256);
	if (req->query && *req->query) {
		g_checksum_update(sum, (const guchar *)req->query, -1);
		g_checksum_update(sum, (const guchar *)"\n\n", 2);
	}
	g_checksum_update(sum, (const guchar *)(req->body ? req->body : ""), (gssize)req->body_len);
	char *digest = g_strdup(g_checksum_get_string(sum));
	g_checksum_free(sum);
	return digest;
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
			pal_api__problem(c, 405, "method-not-allowed", "Method not allowed",
					 "%s is not allowed on %s", req->method, req->path);
		else
			pal_api__problem(
			    c, 404, "no-route", "No such route",
			    "%s is not a route of this API (GET /api/v1/openapi.json lists them)",
			    req->path);
		return;
	}
	if (r->role == PAL_ROLE_NONE) {
		if (query_accepted(c, r))
			r->fn(c);
		return;
	}
	if (!authenticate(c))
		return;
	if (!pal_role_allows(c->who.role, r->role)) {
		pal_api__problem(c, 403, "forbidden-role", "Role not allowed",
				 "token %s has role %s; %s %s needs %s", c->who.name,
				 pal_role_name(c->who.role), r->method, r->pattern,
				 pal_role_name(r->role));
		return;
	}
	char arg[72];
	if (req->query && repeated_arg(req->query, arg, sizeof arg)) {
		pal_api__problem(c, 400, "bad-parameter", "Bad parameter",
				 "argument %s given twice (give each argument once)", arg);
		return;
	}
	bool write = strcmp(r->method, "GET") != 0; /* POST, DELETE */
	const char *key = write ? pal_api__header(c, "Idempotency-Key") : NULL;
	bool key_ok = key && strlen(key) >= 1 && strlen(key) <= 128 &&
		      g_utf8_validate(key, -1, NULL);
	/* a name the route does not read would be dropped silently: a misspelt
	 * "dry_run" would act, a misspelt "request_id" run twice */
	bool refused = !query_accepted(c, r);
	if (refused && !key_ok)
		return;
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
	else if (!refused)
		refused = !body_accepted(c, r);
	char *digest = key_ok ? request_digest(req) : NULL;
	/* Refused, but the key may be the retry of this very request that a
	 * node not checking names (0.3.0, during a roll) carried out: its
	 * record, looked up without making one, is answered as any retry's
	 * (replayed, in progress, taken over); the handler never runs. */
	if (refused) {
		bool known = false;
		int rc = key_ok ? pal_apistore_idem_known(c->api->st, c->who.id, key, req->method,
							  req->path, digest, &known, err,
							  sizeof err)
				: PAL_OK;
		if (rc || !known) {
			if (rc)
				pal_api__problem_rc(c, rc, err);
			g_free(digest);
			return;
		}
	}
	bool idem_locked = false;
	pal_idem_outcome o = PAL_IDEM_NEW;
	if (key && !key_ok) {
		pal_api__problem(c, 400, "bad-idempotency-key", "Bad Idempotency-Key",
				 "an Idempotency-Key is 1-128 bytes of UTF-8");
		return;
	}
	/* a keyed write's audit rows name its (token, key): see answer_lost() */
	json_t *rq = key ? json_pack("{s:s, s:s}", "token_id", c->who.id, "key", key) : NULL;
	char *rq_text = rq ? json_dumps(rq, JSON_COMPACT) : NULL;
	json_decref(rq);
	if (key && !rq_text) {
		pal_api__problem(c, 500, "internal", "Internal error", "out of memory");
		g_free(digest);
		return;
	}
	int irc = pal_apistore_identity(c->api->st, pal_role_name(c->who.role), req->client,
					rq_text, err, sizeof err);
	free(rq_text);
	if (irc) {
		pal_api__problem_rc(c, PAL_EDB, err);
		g_free(digest);
		return;
	}
	if (key) {
		int status;
		char *resp;
		int rc = pal_apistore_idem_begin(c->api->st, c->who.id, key, req->method, req->path,
						 digest, &o, &idem_locked, &status, &resp, err,
						 sizeof err);
		g_free(digest);
		if (rc) {
			pal_api__problem_rc(c, rc, err);
			return;
		}
		if (o == PAL_IDEM_MISMATCH) {
			pal_api__problem(c, 422, "idempotency-key-reused", "Idempotency-Key reused",
					 "this Idempotency-Key was used for another request");
			return;
		}
		if (o == PAL_IDEM_IN_PROGRESS) {
			pal_api__problem(
			    c, 409, "request-in-progress", "Request in progress",
			    "a request with this Idempotency-Key is still being served");
			return;
		}
		if (o == PAL_IDEM_REPLAY) {
			json_t *j = json_loads(resp, 0, NULL);
			free(resp);
			pal_api__ok(c, (unsigned)status, j ? j : json_object());
			c->problem = status >= 400;
			c->replayed = "true";
			return;
		}
	}
	/* refused: the handler cannot run again (it would drop the names) */
	bool check_lost = o == PAL_IDEM_TAKEN_OVER && (refused || r->on_takeover != TAKEOVER_RERUN);
	int lost = check_lost ? answer_lost(c, key, r->on_takeover == TAKEOVER_SWEEP) : 0;
	if (lost < 0)
		return;
	if (lost)
		refused = false; /* its answer is kept */
	else if (refused)
		(void)(query_accepted(c, r) && body_accepted(c, r)); /* the refusal again */
	else
		r->fn(c);
	if (key && getenv("PALISADE_FAULT_API_KILL_BEFORE_ANSWER")) /* tests only */
		raise(SIGKILL);
	if (key && c->status < 300 &&
	    getenv("PALISADE_FAULT_API_500_AFTER_ACTION")) /* tests only */
		pal_api__problem(
		    c, 500, "internal", "Internal error",
		    "PALISADE_FAULT_API_500_AFTER_ACTION: answer lost after the action");
	if (key) {
		/* A created token's secret is never stored: its key keeps a problem
		 * that a replay answers instead. */
		json_t *keep = c->out;
		int keep_status = (int)c->status;
		if (r->fn == pal_api__h_token_create && c->status == 201) {
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
		/* a refusal is not kept: its record goes as a 5xx's (nothing
		 * committed), so the corrected request may use the key */
		if (refused)
			keep_status = 500;
		if (pal_apistore_idem_finish(c->api->st, c->who.id, key, keep_status,
					     text ? text : "{}", idem_locked, err, sizeof err)) {
			pal_log(PAL_LOG_WARN, "api.idempotency_lost", "{s:s, s:s}", "key", key,
				"error", err);
			/* its session ends: the key's lock with it */
			pal_store_close(c->api->st);
			c->api->st = NULL;
		}
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
	    pal_apistore_identity(api->st, NULL, NULL, NULL, (char[64]){0}, 64)) {
		pal_store_close(api->st);
		api->st = NULL;
	}
	pthread_mutex_unlock(&api->mu);
	if (!c.out)
		pal_api__problem(&c, 500, "internal", "Internal error", "out of memory");
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
	out->header_name[out->n_headers] = "Palisade-Version";
	snprintf(out->header_value[out->n_headers++], sizeof out->header_value[0], "%s",
		 PALISADE_VERSION);
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
	api->secrets = cfg->secrets;
	api->targets = cfg->targets;
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
