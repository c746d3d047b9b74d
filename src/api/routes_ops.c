/*
 * routes_ops.c - the HTTP API's operations (api_int.h): pause and resume of
 * every scope, release from quarantine, drain of this node, the API's
 * tokens, and the migration's steps: shadow (and its list and diff),
 * cutover, rollback.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include "palisade/cutover.h"
#include "palisade/lifecycle.h"
#include "palisade/log.h"
#include "palisade/apistore.h"
#include "palisade/name.h"
#include "palisade/shadow.h"
#include "palisade/shadowdiff.h"
#include "palisade/timefmt.h"
#include "api_int.h"

#define ROLLBACK_WAIT_MS 30000	     /* rollback's wait for running calls (its --wait default) */
#define ROLLBACK_WAIT_MAX_MS 60000   /* and at most, through the API */
#define CUTOVER_MAX_PENDING_MS 60000 /* cutover's --max-pending-age default */
#define SHADOW_DIFF_LIMIT 1000	     /* differences of shadow diff (its --limit default) */
#define SHADOW_DIFF_LIMIT_MAX 100000 /* and at most, through the API */

/* Pause or resume scope SC. */
static void gate(call *c, const pal_scope *sc, bool pause)
{
	const char *why;
	if (!pal_api__reason(c, !pause, &why))
		return;
	char scope[300], err[1024];
	pal_scope_format(sc, scope, sizeof scope);
	int rc;
	if (pause) {
		pal_pause_result r;
		rc = pal_ops_pause(c->api->st, sc, c->who.name, why, &r, err, sizeof err);
		if (!rc)
			pal_api__ok(c, 200,
				    json_pack("{s:s, s:b, s:s, s:I, s:I, s:I}", "scope", scope,
					      "was_paused", r.was_paused, "since", r.since,
					      "running_to_pausing", (json_int_t)r.asked,
					      "pending_held", (json_int_t)r.held, "jobs",
					      (json_int_t)r.jobs));
	} else {
		pal_resume_result r;
		pal_resume_opts ro = pal_api__resume_opts(c->api, sc->kind);
		rc = pal_ops_resume(c->api->st, sc, c->who.name, why, &ro, &r, err, sizeof err);
		if (!rc)
			pal_api__ok(c, 200, pal_resume_result_json(scope, &r));
	}
	if (rc)
		pal_api__problem_rc(c, rc, err);
}

PAL_API_ACCEPTS(job_pause, "reason", "");
void pal_api__h_job_pause(call *c)
{
	if (pal_api__job_visible(c, true))
		gate(c, &(pal_scope){PAL_SCOPE_JOB, c->arg[0]}, true);
}

PAL_API_ACCEPTS(job_resume, "reason", "");
void pal_api__h_job_resume(call *c)
{
	if (pal_api__job_visible(c, true))
		gate(c, &(pal_scope){PAL_SCOPE_JOB, c->arg[0]}, false);
}

/* Group, tenant and global scopes. */
static bool scope_arg(call *c, pal_scope_kind kind, pal_scope *sc)
{
	*sc = (pal_scope){kind, c->arg[0]};
	if (kind == PAL_SCOPE_GLOBAL)
		return pal_api__unscoped(c);
	if (!pal_name_ok(c->arg[0], 64)) {
		pal_api__problem(c, 422, "invalid", "Invalid request",
				 "\"%.64s\" is not a group or tenant name", c->arg[0]);
		return false;
	}
	if (kind == PAL_SCOPE_TENANT && !pal_token_sees_tenant(&c->who, c->arg[0])) {
		pal_api__problem(c, 403, "forbidden-tenant", "Not your tenant",
				 "token %s may not act on tenant %s", c->who.name, c->arg[0]);
		return false;
	}
	return kind == PAL_SCOPE_TENANT || pal_api__unscoped(c);
}

PAL_API_ACCEPTS(group_pause, "reason", "");
PAL_API_ACCEPTS(group_resume, "reason", "");
PAL_API_ACCEPTS(tenant_pause, "reason", "");
PAL_API_ACCEPTS(tenant_resume, "reason", "");
PAL_API_ACCEPTS(all_pause, "reason", "");
PAL_API_ACCEPTS(all_resume, "reason", "");
#define SCOPE_HANDLERS(NAME, KIND)                                                                 \
	void pal_api__h_##NAME##_pause(call *c)                                                    \
	{                                                                                          \
		pal_scope sc;                                                                      \
		if (scope_arg(c, KIND, &sc))                                                       \
			gate(c, &sc, true);                                                        \
	}                                                                                          \
	void pal_api__h_##NAME##_resume(call *c)                                                   \
	{                                                                                          \
		pal_scope sc;                                                                      \
		if (scope_arg(c, KIND, &sc))                                                       \
			gate(c, &sc, false);                                                       \
	}
SCOPE_HANDLERS(group, PAL_SCOPE_GROUP)
SCOPE_HANDLERS(tenant, PAL_SCOPE_TENANT)
SCOPE_HANDLERS(all, PAL_SCOPE_GLOBAL)

PAL_API_ACCEPTS(job_release, "reason", "");
void pal_api__h_job_release(call *c)
{
	const char *why;
	char err[1024];
	if (!pal_api__job_visible(c, true) || !pal_api__reason(c, false, &why))
		return;
	int rc =
	    pal_store_release_quarantine(c->api->st, c->arg[0], c->who.name, why, err, sizeof err);
	if (rc)
		pal_api__problem_rc(c, rc, err);
	else
		pal_api__ok(c, 200, json_pack("{s:s, s:b}", "job_id", c->arg[0], "released", 1));
}

/* Drain this node (as `palisade drain`): audited, then asked; the node
 * hands its shards off and exits. */
PAL_API_ACCEPTS(drain, "reason", "");
void pal_api__h_drain(call *c)
{
	const char *why;
	char scope[300], err[1024];
	if (!pal_api__unscoped(c) || !pal_api__reason(c, true, &why))
		return;
	if (!c->api->drain) {
		pal_api__problem(c, 501, "not-implemented", "Not implemented",
				 "this node cannot drain");
		return;
	}
	snprintf(scope, sizeof scope, "node:%s", c->api->node_id);
	int rc = pal_store_audit(c->api->st, c->who.name, "drain", scope, why ? why : "",
				 "{\"via\": \"api\"}", err, sizeof err);
	if (rc) {
		pal_api__problem_rc(c, rc, err);
		return;
	}
	c->api->drain(c->api->drain_arg);
	pal_api__ok(c, 202, json_pack("{s:s, s:b}", "node", c->api->node_id, "draining", 1));
}

PAL_API_ACCEPTS(tokens, "", "limit cursor");
void pal_api__h_tokens(call *c)
{
	int limit;
	json_t *rows;
	char *next, err[1024];
	if (!pal_api__unscoped(c) || !pal_api__page_limit(c, &limit))
		return;
	int rc = pal_apistore_tokens_page(c->api->st, pal_api__query(c, "cursor"), limit, &rows,
					  &next, err, sizeof err);
	pal_api__page_answer(c, rc, rows, next, err);
}

PAL_API_ACCEPTS(token_create, "name role tenants", "");
void pal_api__h_token_create(call *c)
{
	const char *name, *role_s;
	pal_role role;
	if (!pal_api__unscoped(c) || !pal_api__body_str(c, "name", &name) ||
	    !pal_api__body_str(c, "role", &role_s))
		return;
	if (!name || !role_s || pal_role_parse(role_s, &role)) {
		pal_api__problem(c, 422, "invalid", "Invalid request",
				 "\"name\" and \"role\" (viewer, operator or admin) are required");
		return;
	}
	json_t *ta = json_object_get(c->body, "tenants");
	const char *tenants[PAL_TOKEN_TENANTS_MAX];
	size_t n = 0, i;
	json_t *v;
	if (ta && (!json_is_array(ta) || json_array_size(ta) > PAL_TOKEN_TENANTS_MAX)) {
		pal_api__problem(c, 422, "invalid", "Invalid request",
				 "\"tenants\" must be an array of at most %d names",
				 PAL_TOKEN_TENANTS_MAX);
		return;
	}
	json_array_foreach(ta, i, v)
	{
		if (!json_is_string(v)) {
			pal_api__problem(c, 422, "invalid", "Invalid request",
					 "tenants must be strings");
			return;
		}
		tenants[n++] = json_string_value(v);
	}
	char secret[PAL_TOKEN_LEN + 1], err[1024];
	int rc = pal_token_create(c->api->st, name, role, tenants, n, c->who.name, secret, err,
				  sizeof err);
	if (rc)
		pal_api__problem_rc(c, rc, err);
	else
		pal_api__ok(c, 201,
			    json_pack("{s:s, s:s, s:o, s:s}", "name", name, "role", role_s,
				      "tenants", ta ? json_incref(ta) : json_array(), "token",
				      secret));
}

/* "reason" (optional) goes in the revocation's audit row. */
PAL_API_ACCEPTS(token_revoke, "reason", "");
void pal_api__h_token_revoke(call *c)
{
	char err[1024];
	const char *why;
	if (!pal_api__unscoped(c) || !pal_api__reason(c, true, &why))
		return;
	int rc = pal_token_revoke(c->api->st, c->arg[0], c->who.name, why, err, sizeof err);
	if (rc)
		pal_api__problem_rc(c, rc, err);
	else
		pal_api__ok(c, 200, json_pack("{s:s, s:b}", "token", c->arg[0], "revoked", 1));
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
		if (!pal_api__body_str(c, pal_scope_kind_name(kinds[i]), &v))
			return false;
		if (v)
			*sc = (pal_scope){kinds[i], v}, n++;
	}
	if (n != 1) {
		pal_api__problem(c, 422, "invalid", "Invalid request",
				 "name exactly one scope: \"job\", \"group\" or \"tenant\"");
		return false;
	}
	snprintf(c->argbuf[0], sizeof c->argbuf[0], "%s", sc->name);
	c->arg[0] = c->argbuf[0];
	if (sc->kind == PAL_SCOPE_JOB)
		return pal_api__job_visible(c, true);
	return scope_arg(c, sc->kind, sc);
}

/* pal_boundary_check_nodes() for CMD over SC: true, else false with the
 * problem set: 409 older-nodes (the nodes named, as the CLI's exit 4), 503
 * unavailable (ZooKeeper not read, exit 69), unless LENIENT (rollback, a
 * dry run): then logged as a warning. */
static bool boundary_nodes_ok(call *c, const pal_scope *sc, const char *cmd, bool lenient)
{
	char msg[2048];
	int rc = pal_boundary_check_nodes(c->api->st, sc, cmd, c->api->zk_connect,
					  c->api->zk_root, c->api->cluster, lenient, msg, sizeof msg);
	if (!rc && msg[0])
		pal_log(PAL_LOG_WARN, "api.boundary_nodes_unread", "{s:s, s:s}", "command", cmd,
			"warning", msg);
	if (rc == PAL_EBUSY)
		pal_api__problem(c, 409, "older-nodes", "Live nodes would judge it otherwise", "%s",
				 msg);
	else if (rc == PAL_EZK)
		pal_api__problem(c, 503, "unavailable", "ZooKeeper unavailable", "%s", msg);
	else if (rc)
		pal_api__problem_rc(c, rc, msg);
	return rc == PAL_OK;
}

/* `palisade rollback`: the scope back in shadow from now on; waits up to
 * "wait_ms" (0..ROLLBACK_WAIT_MAX_MS, default 30 s as the CLI's --wait)
 * for its running calls, then answers what the old system takes over. */
PAL_API_ACCEPTS(rollback, "job group tenant reason wait_ms", "");
void pal_api__h_rollback(call *c)
{
	pal_scope sc;
	const char *why;
	if (!body_scope(c, &sc) || !pal_api__reason(c, false, &why))
		return;
	json_t *w = json_object_get(c->body, "wait_ms");
	int64_t wait_ms = ROLLBACK_WAIT_MS;
	if (w) {
		if (!json_is_integer(w) || json_integer_value(w) < 0 ||
		    json_integer_value(w) > ROLLBACK_WAIT_MAX_MS) {
			pal_api__problem(c, 422, "invalid", "Invalid request",
					 "\"wait_ms\": expected an integer in 0..%d",
					 ROLLBACK_WAIT_MAX_MS);
			return;
		}
		wait_ms = json_integer_value(w);
	}
	if (!boundary_nodes_ok(c, &sc, "rollback", true))
		return;
	json_t *out;
	char err[1024];
	int rc = pal_store_rollback_json(c->api->st, &sc, c->who.name, why, wait_ms, &out, err,
					 sizeof err);
	if (rc)
		pal_api__problem_rc(c, rc, err);
	else
		pal_api__ok(c, 200, out);
}

/* `palisade cutover`: one step of the scope of the body, "percent" (1..100,
 * default 100) live from "at" (RFC 3339, now or later; ?dry_run=true: what
 * it would do, nothing changed), refused (409
 * stop-line-crossed, the lines in "crossed") while a stop line of the
 * latest live step is crossed ("max_pending_age_ms", default 60000).  The
 * doubled-effects line needs the sink's database: the CLI's --sink-pg on
 * the database only; the API does not connect where a body says. */
PAL_API_ACCEPTS(cutover, "job group tenant reason at percent max_pending_age_ms", "dry_run");
void pal_api__h_cutover(call *c)
{
	pal_cutover_req rq = {.percent = 100, .max_pending_s = CUTOVER_MAX_PENDING_MS / 1000};
	const char *why;
	if (!body_scope(c, &rq.scope) || !pal_api__reason(c, false, &why) ||
	    !pal_api__body_time(c, "at", true, &rq.at))
		return;
	json_t *pc = json_object_get(c->body, "percent");
	if (pc &&
	    (!json_is_integer(pc) || json_integer_value(pc) < 1 || json_integer_value(pc) > 100)) {
		pal_api__problem(c, 422, "invalid", "Invalid request",
				 "\"percent\": expected an integer in 1..100");
		return;
	}
	if (pc)
		rq.percent = (int)json_integer_value(pc);
	json_t *mp = json_object_get(c->body, "max_pending_age_ms");
	if (mp && (!json_is_integer(mp) || json_integer_value(mp) < 0)) {
		pal_api__problem(c, 422, "invalid", "Invalid request",
				 "\"max_pending_age_ms\": expected an integer, 0 or more");
		return;
	}
	if (mp)
		rq.max_pending_s = json_integer_value(mp) / 1000;
	const char *dry = pal_api__query(c, "dry_run");
	if (dry && strcmp(dry, "true") && strcmp(dry, "false")) {
		pal_api__problem(c, 400, "bad-parameter", "Bad parameter",
				 "dry_run: expected true or false");
		return;
	}
	rq.dry_run = dry && !strcmp(dry, "true");
	rq.who = &c->who;
	if (rq.at < (int64_t)time(NULL) - 1) {
		pal_api__problem(
		    c, 400, "bad-step", "Not a step",
		    "\"at\" is in the past: instants the old system has run would run again; "
		    "give now or later");
		return;
	}
	if (!boundary_nodes_ok(c, &rq.scope, "cutover", rq.dry_run))
		return;
	json_t *out;
	bool refused;
	char err[1024];
	int rc =
	    pal_cutover_step(c->api->st, &rq, c->who.name, why, &out, &refused, err, sizeof err);
	if (rc == PAL_EINVAL) {
		pal_api__problem(c, 400, "bad-step", "Not a step", "%s", err);
	} else if (rc) {
		pal_api__problem_rc(c, rc, err);
	} else if (refused) {
		pal_api__problem(c, 409, "stop-line-crossed", "A stop line is crossed",
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
		pal_api__ok(c, 200, out);
	}
}

/* `palisade shadow --job|--group|--tenant`: the scope of the body in
 * shadow from now on; pal_store_shadow_set_json()'s answer, as the CLI's
 * --output json. */
PAL_API_ACCEPTS(shadow_set, "job group tenant reason", "");
void pal_api__h_shadow_set(call *c)
{
	pal_scope sc;
	const char *why;
	if (!body_scope(c, &sc) || !pal_api__reason(c, false, &why))
		return;
	if (!boundary_nodes_ok(c, &sc, "shadow", false))
		return;
	json_t *out;
	char err[1024];
	int rc =
	    pal_store_shadow_set_json(c->api->st, &sc, c->who.name, why, &out, err, sizeof err);
	if (rc)
		pal_api__problem_rc(c, rc, err);
	else
		pal_api__ok(c, 200, out);
}

/* `palisade shadow list`: the scopes in shadow with their steps, by
 * scope, a page at a time (a job file's `mode: shadow` puts each of its
 * jobs in shadow: one row each).  Cluster-wide: not for a tenant-scoped
 * token. */
PAL_API_ACCEPTS(shadow_list, "", "limit cursor");
void pal_api__h_shadow_list(call *c)
{
	int limit;
	json_t *rows;
	char *next, err[1024];
	if (!pal_api__unscoped(c) || !pal_api__page_limit(c, &limit))
		return;
	int rc = pal_apistore_shadow_page(c->api->st, pal_api__query(c, "cursor"), limit, &rows,
					  &next, err, sizeof err);
	pal_api__page_answer(c, rc, rows, next, err);
}

/*
 * `palisade shadow diff`: the body, the old system's record of what it
 * fired ("job_id,RFC3339" lines, text/csv or text/plain, up to the
 * listener's body limit), against palisade's plan of the jobs of ?job=,
 * ?group= or ?tenant= (none: every job) over [?from, ?to), at most ?limit=
 * differences (1..SHADOW_DIFF_LIMIT_MAX, default SHADOW_DIFF_LIMIT), at
 * most PAL_SHADOW_MAX_INSTANTS planned over every job (422
 * too-many-instants past it, found before they are held).  A
 * line that is not one answers 422 invalid-record naming it.  A token
 * limited to tenants sees its tenants' jobs only: a job or tenant of
 * another is 404, another tenant's jobs in a group or in the record are as
 * jobs palisade does not know (unknown_job without a scope).
 */
PAL_API_ACCEPTS(shadow_diff, "", "from to limit job group tenant");
void pal_api__h_shadow_diff(call *c)
{
	int64_t from, to;
	pal_scope sc;
	if (!pal_api__query_time(c, "from", &from) || !pal_api__query_time(c, "to", &to))
		return;
	if (to <= from) {
		pal_api__problem(c, 400, "bad-parameter", "Bad parameter", "to is not after from");
		return;
	}
	long limit = SHADOW_DIFF_LIMIT;
	const char *lim = pal_api__query(c, "limit");
	if (lim) {
		char *end;
		limit = strtol(lim, &end, 10);
		if (*end || limit < 1 || limit > SHADOW_DIFF_LIMIT_MAX) {
			pal_api__problem(c, 400, "bad-parameter", "Bad parameter",
					 "limit \"%.20s\": expected an integer in 1..%d", lim,
					 SHADOW_DIFF_LIMIT_MAX);
			return;
		}
	}
	if (!pal_api__query_scope(c, &sc))
		return;
	const char *ct = pal_api__header(c, "Content-Type");
	if (!ct || (strncasecmp(ct, "text/csv", 8) && strncasecmp(ct, "text/plain", 10))) {
		pal_api__problem(c, 415, "unsupported-media-type", "Unsupported media type",
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
			pal_api__problem(c, 422, "invalid-record", "Not a record of fired instants",
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
				   PAL_SHADOW_MAX_INSTANTS, &rep, err, sizeof err);
	pal_shadow_record_free(rec);
	if (rc == PAL_ETOOBIG)
		pal_api__too_many(c, PAL_SHADOW_MAX_INSTANTS, err);
	else if (rc)
		pal_api__problem_rc(c, rc, err);
	else
		pal_api__ok(c, 200, rep);
}
