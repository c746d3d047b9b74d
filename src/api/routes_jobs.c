/*
 * routes_jobs.c - the HTTP API's routes of jobs (api_int.h): the lists and
 * one job, the shared calendars, POST /apply (the job files of the body,
 * validated and stored as `palisade apply` does, or its dry run), POST
 * /plan/diff, DELETE /jobs/{id}.  The work is the store's and the loader's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include "palisade/aftergraph.h"
#include "palisade/apistore.h"
#include "palisade/coord.h"
#include "palisade/jobfile.h"
#include "palisade/keyhorizon.h"
#include "palisade/lifecycle.h"
#include "palisade/plandiff.h"
#include "palisade/shadow.h"
#include "palisade/timefmt.h"
#include "api_int.h"

#define DIFF_COUNT 5	     /* instants per job of a dry run (plan diff's default) */
#define DIFF_COUNT_MAX 10000 /* plan diff's --count bound */

/* How long POST /api/v1/apply waits for the controllers to take in a
 * version that took over at the apply (pal_store_apply_settle): not at
 * all.  The API serves one request at a time on one connection, so a wait
 * would stall every other request of the node; the apply sweeps once
 * after its commit and answers how many jobs are still settling. */
#define API_SETTLE_MS 0

/* ?next=N (1..PAL_JOB_NEXT_MAX, `jobs --next N`): into *N, 0 without it;
 * false with a 400 answered. */
static bool next_count(call *c, int *n)
{
	return pal_api__query_int(c, "next", 1, PAL_JOB_NEXT_MAX, 0, n);
}

/* "next": the next N instants of each job of JOBS (its latest version);
 * PAL_OK, or the store's code with ERR. */
static int add_next(call *c, json_t *jobs, int n, char *err, size_t errlen)
{
	int64_t now = (int64_t)time(NULL);
	size_t i;
	json_t *j;
	json_array_foreach(jobs, i, j)
	{
		json_t *next;
		int rc =
		    pal_plan_job_next(c->api->st, json_string_value(json_object_get(j, "job_id")),
				      now, n, &next, err, errlen);
		if (rc)
			return rc;
		json_object_set_new(j, "next", next);
	}
	return PAL_OK;
}

PAL_API_ACCEPTS(jobs, "", "limit cursor next retired label tenant group");
void pal_api__h_jobs(call *c)
{
	int limit, n;
	if (!pal_api__page_limit(c, &limit) || !next_count(c, &n))
		return;
	const char *retired = pal_api__query(c, "retired");
	if (retired && strcmp(retired, "true") && strcmp(retired, "false")) {
		pal_api__problem(c, 400, "bad-parameter", "Bad parameter",
				 "retired: expected true or false");
		return;
	}
	/* ?label=KEY=VALUE: the jobs whose latest version has that label */
	const char *label = pal_api__query(c, "label"), *eq = label ? strchr(label, '=') : NULL;
	char *lkey = eq ? g_strndup(label, (gsize)(eq - label)) : NULL;
	if (label && (!eq || pal_label_key_problem(lkey) || pal_label_value_problem(eq + 1))) {
		pal_api__problem(c, 400, "bad-parameter", "Bad parameter",
				 "label: expected KEY=VALUE, a label key and value (docs/jobs.md)");
		g_free(lkey);
		return;
	}
	char *tl = pal_api__tenants_literal(&c->who), *next = NULL, err[1024];
	if ((long long)n * limit > PAL_JOB_NEXT_MAX_INSTANTS) {
		snprintf(err, sizeof err,
			 "a page of %d jobs times %d instants is more than %d: a smaller limit "
			 "or next",
			 limit, n, PAL_JOB_NEXT_MAX_INSTANTS);
		g_free(tl);
		g_free(lkey);
		pal_api__too_many(c, PAL_JOB_NEXT_MAX_INSTANTS, err);
		return;
	}
	json_t *rows;
	int rc = pal_apistore_jobs_page(
	    c->api->st, tl, pal_api__query(c, "tenant"), pal_api__query(c, "group"), lkey,
	    eq ? eq + 1 : NULL, retired && !strcmp(retired, "true"), pal_api__query(c, "cursor"),
	    limit, &rows, &next, err, sizeof err);
	g_free(tl);
	g_free(lkey);
	if (!rc && n && (rc = add_next(c, rows, n, err, sizeof err))) {
		json_decref(rows);
		g_free(next);
		next = NULL;
	}
	pal_api__page_answer(c, rc, rows, next, err);
}

/* One job with a page of its versions (?limit=, ?cursor=: a job applied
 * many times has many), the cursor of the next in "versions_next_cursor". */
PAL_API_ACCEPTS(job, "", "limit cursor next");
void pal_api__h_job(call *c)
{
	int limit, n;
	if (!pal_api__job_visible(c, false) || !pal_api__page_limit(c, &limit) ||
	    !next_count(c, &n))
		return;
	json_t *j = NULL, *meta = NULL;
	char *next = NULL, err[1024];
	int rc = pal_apistore_job_page(c->api->st, c->arg[0], pal_api__query(c, "cursor"), limit,
				       &j, &next, err, sizeof err);
	if (!rc)
		rc = pal_store_job_meta_json(c->api->st, c->arg[0], &meta, err, sizeof err);
	if (!rc && n) {
		json_t *one = json_pack("[O]", j);
		rc = add_next(c, one, n, err, sizeof err);
		json_decref(one);
	}
	if (rc == PAL_EINVAL) {
		pal_api__problem(c, 400, "bad-parameter", "Bad parameter", "%s", err);
	} else if (rc) {
		pal_api__problem_rc(c, rc, err);
	} else {
		json_t *m = json_object_get(meta, c->arg[0]);
		if (m)
			json_object_update(j, m);
		json_object_set_new(j, "versions_next_cursor",
				    next ? json_string(next) : json_null());
		pal_api__ok(c, 200, json_incref(j));
	}
	g_free(next);
	json_decref(j);
	json_decref(meta);
}

/* GET /api/v1/calendars and /api/v1/calendars/{name}: a tenant-scoped
 * token sees the calendars its tenants' live jobs name, with those jobs;
 * another is 404 to it, as another tenant's job is.  The list is a page of
 * calendars (?limit=, ?cursor=), each with its first PAGE_DEFAULT jobs; one
 * calendar a page of its jobs (?limit=, ?cursor=: a calendar many jobs
 * name has them all).  jobs_next_cursor is the ?cursor= of the next jobs of
 * /calendars/{name}. */
PAL_API_ACCEPTS(calendars, "", "limit cursor");
void pal_api__h_calendars(call *c)
{
	int limit;
	if (!pal_api__page_limit(c, &limit))
		return;
	const char *cursor = pal_api__query(c, "cursor");
	char *tl = pal_api__tenants_literal(&c->who), *next = NULL, err[1024];
	json_t *rows;
	int rc = pal_apistore_calendars_page(c->api->st, tl, c->arg[0], c->arg[0] ? NULL : cursor,
					     c->arg[0] ? 1 : limit, c->arg[0] ? cursor : NULL,
					     c->arg[0] ? limit : PAGE_DEFAULT, &rows, &next, err,
					     sizeof err);
	g_free(tl);
	if (rc) {
		pal_api__problem_rc(c, rc, err);
	} else if (!c->arg[0]) {
		pal_api__ok(c, 200, pal_api__page_json(rows, next));
	} else if (json_array_size(rows)) {
		pal_api__ok(c, 200, json_incref(json_array_get(rows, 0)));
		json_decref(rows);
	} else {
		pal_api__problem(c, 404, "not-found", "Not found", "no calendar \"%.64s\"",
				 c->arg[0]);
		json_decref(rows);
	}
}

/* GET /api/v1/notify_rules: a page of the notify rules (?limit=, ?cursor=),
 * each secret the stored ${NAME} reference.  A token limited to tenants
 * sees its tenants' rules, and a group's only when the group has jobs and
 * every one of them is of its tenants (pal_apistore_notify_rules_page). */
PAL_API_ACCEPTS(notify_rules, "", "limit cursor");
void pal_api__h_notify_rules(call *c)
{
	int limit;
	if (!pal_api__page_limit(c, &limit))
		return;
	char *tl = pal_api__tenants_literal(&c->who), *next = NULL, err[1024];
	json_t *rows;
	int rc = pal_apistore_notify_rules_page(c->api->st, tl, pal_api__query(c, "cursor"), limit,
						&rows, &next, err, sizeof err);
	g_free(tl);
	pal_api__page_answer(c, rc, rows, next, err);
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
PAL_API_ACCEPTS(job_delete, "reason", "reason");
void pal_api__h_job_delete(call *c)
{
	const char *why;
	if (!pal_api__job_visible(c, true) || !pal_api__body_str(c, "reason", &why))
		return;
	if (!why || !*why)
		why = pal_api__query(c, "reason");
	if (!why && !pal_api__reason(c, false, &why))
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
		pal_api__problem(c, 404, "not-found", "Not found", "no job \"%.64s\"", ids[0]);
		return;
	}
	if (!rc)
		rc = pal_store_retire_pending(c->api->st, ids, 1, &pending, err, sizeof err);
	if (!rc)
		rc = pal_store_retire_sweep(c->api->st, ids, 1, c->who.name, why, &late, err,
					    sizeof err);
	if (rc) {
		pal_api__problem_rc(c, rc, err);
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
	pal_api__ok(c, 200, o);
}

/* The problem of an invalid job file: every diagnostic as {file line
 * column message}, as `palisade validate` prints them. */
/* 422 TYPE: the diagnostics D as "errors", as `palisade apply` prints them. */
static void problem_diags_as(call *c, const char *type, const char *title, const pal_diags *d)
{
	pal_api__problem(c, 422, type, title, "%zu error%s; nothing applied", d->n,
			 d->n == 1 ? "" : "s");
	json_t *errs = json_array();
	for (size_t i = 0; i < d->n; i++)
		json_array_append_new(errs, json_pack("{s:s, s:i, s:i, s:s}", "file",
						      d->v[i].file ? d->v[i].file : "", "line",
						      d->v[i].line, "column", d->v[i].col,
						      "message", d->v[i].msg));
	json_object_set_new(c->out, "errors", errs);
}

static void problem_diags(call *c, const pal_diags *d)
{
	problem_diags_as(c, "invalid-job-file", "Invalid job file", d);
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

/* ?prune_prefix=P echoed in the answer OUT ("prune_prefix": P): a node that
 * drops the argument (0.3.0) answers without it, and the CLI, which may have
 * asked another node behind a balancer for the release, tells them apart. */
static void echo_prefix(call *c, json_t *out)
{
	const char *x = pal_api__query(c, "prune_prefix");
	if (x)
		json_object_set_new(out, "prune_prefix", json_string(x));
}

/* ?prune=true: the live stored jobs SET does not define go (as `apply
 * --prune`), which only an unlimited token may ask (they may be any
 * tenant's).  *PRUNE says whether it was asked; false with a problem. */
static bool prune_arg(call *c, bool *prune)
{
	const char *p = pal_api__query(c, "prune"), *x = pal_api__query(c, "prune_prefix");
	*prune = (p && !strcmp(p, "true")) || x;
	if (p && strcmp(p, "true") && strcmp(p, "false")) {
		pal_api__problem(c, 400, "bad-parameter", "Bad parameter",
				 "prune: expected true or false");
		return false;
	}
	if (x && (!*x || (p && !strcmp(p, "true")))) {
		pal_api__problem(c, 400, "bad-parameter", "Bad parameter", "prune_prefix: %s",
				 *x ? "give prune=true or prune_prefix, not both"
				    : "an empty prefix is prune=true");
		return false;
	}
	return !*prune || pal_api__unscoped(c);
}

/* The ids of the live stored jobs SET does not define (g_ptr_array_unref),
 * with ?prune_prefix=P those of P's segments only, but for those a cut-over
 * made palisade's, appended to KEPT instead (pal_store_prune_ids); NULL
 * with ERR on a database error. */
static GPtrArray *prune_ids(call *c, const pal_jobset *set, json_t *kept, char *err, size_t errlen)
{
	json_t *ids = json_array();
	if (pal_store_prune_ids(c->api->st, pal_api__query(c, "prune_prefix"), set_defines,
				(void *)set, ids, kept, err, errlen)) {
		json_decref(ids);
		return NULL;
	}
	GPtrArray *gone = g_ptr_array_new_with_free_func(g_free);
	size_t i;
	json_t *id;
	json_array_foreach(ids, i, id) g_ptr_array_add(gone, g_strdup(json_string_value(id)));
	json_decref(ids);
	return gone;
}

/* pal_apply_follow_fn: a stored job that follows a calendar, as an element
 * of the answer's jobs (CTX the array). */
static void follower_json(void *ctx, const char *job_id, int version, const char *follows)
{
	(void)follows;
	json_array_append_new(ctx, json_pack("{s:s, s:s, s:i}", "job_id", job_id, "outcome",
					     "updated", "version", version));
}

/* Whether every live node runs a binary of schema NEED or later, as WHAT
 * needs: true, else false with the problem set, 409 older-nodes (the nodes
 * named, as the CLI's exit 4) or 503 unavailable (ZooKeeper not read,
 * exit 69). */
static bool require_schema(call *c, int need, const char *role, const char *what)
{
	char err[1024];
	int rc = pal_coord_require_schema(c->api->zk_connect, c->api->zk_root, c->api->cluster,
					  5000, need, role, what, err, sizeof err);
	if (rc == PAL_EBUSY)
		pal_api__problem(c, 409, "older-nodes", "Live nodes would ignore it",
				 "%s; nothing applied", err);
	else if (rc)
		pal_api__problem(c, 503, "unavailable", "ZooKeeper unavailable",
				 "%s; nothing applied", err);
	return rc == PAL_OK;
}

/* Keys that nodes older than their schema ignore (`after`, `notify`,
 * `target.keep_*`), set by a job SET creates or updates (RES), are applied
 * only while every live node understands them (docs/upgrades.md), as
 * `palisade apply` checks, its dry run too. */
static bool require_node_schemas(call *c, const pal_jobset *set, const pal_apply_result *res)
{
	const char *key, *job;
	int need = pal_apply_min_schema(set->jobs, res, set->n, &job, &key);
	if (!need)
		return true;
	char what[256];
	snprintf(what, sizeof what, "job %s sets %s", job, key);
	return require_schema(c, need, NULL, what);
}

/* A version that takes over at its apply (pal_store_apply_takeover_job)
 * is stored only while every live node's controller activates it there,
 * as `palisade apply` checks: true, else false with the problem set. */
static bool require_takeover_schema(call *c, const pal_apply *ap)
{
	const char *job = pal_store_apply_takeover_job(ap);
	if (!job)
		return true;
	char what[512];
	snprintf(what, sizeof what, PAL_TAKEOVER_WHAT, job);
	/* the controllers: they activate the version (an executor plans nothing) */
	return require_schema(c, PAL_SCHEMA_TAKEOVER, "controller", what);
}

/* Store SET as `palisade apply` does, its suspend gates included. */
static void apply_set(call *c, const pal_jobset *set, const char *why, bool prune)
{
	char err[1024];
	pal_apply *ap;
	pal_apply_result *res = calloc(set->n ? set->n : 1, sizeof *res);
	json_t *closed = json_array(), *lifted = json_array(), *susp = json_array();
	pal_resume_opts ro = pal_api__resume_opts(c->api, PAL_SCOPE_JOB);
	for (size_t i = 0; i < set->n; i++)
		if (set->jobs[i].suspend)
			json_array_append_new(susp, json_string(set->jobs[i].id));
	int rc = res ? pal_store_apply_begin_rules(c->api->st, c->who.name, why,
						   c->api->default_shards, set->n_notify_rules > 0,
						   &ap, err, sizeof err)
		     : PAL_ENOMEM;
	if (!rc)
		pal_store_apply_secret_policy(ap, c->api->secrets);
	/* the calendars first: the jobs carry the versions they get */
	if (!rc && (rc = pal_store_apply_calendars(ap, set->calendars, set->n_calendars, NULL, err,
						   sizeof err)))
		pal_store_apply_abort(ap);
	/* then the notify rules: the jobs inherit them */
	pal_rule_outcome *rout = calloc(set->n_notify_rules + 1, sizeof *rout);
	if (!rc && !rout) {
		pal_store_apply_abort(ap);
		rc = PAL_ENOMEM;
	} else if (!rc && (rc = pal_store_apply_notify_rules(
			       ap, set->notify_rules, set->n_notify_rules, rout, err, sizeof err)))
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
	json_t *kept = json_array(); /* cut over: not retired by prune_prefix */
	if (!rc && prune) {
		if ((rc = pal_store_apply_sync(ap, err, sizeof err)) == 0 &&
		    !(gone = prune_ids(c, set, kept, err, sizeof err)))
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
		if (foreign) { /* neither that job nor its tenant named */
			GString *cals = g_string_new(NULL);
			for (size_t k = 0; k < set->n_calendars; k++)
				g_string_append_printf(cals, "%s%s", k ? ", " : "",
						       set->calendars[k].name);
			if (set->n_calendars)
				pal_api__problem(
				    c, 403, "forbidden-tenant", "Not your tenant",
				    "a job of another tenant names %s %s, or inherits a notify "
				    "rule "
				    "this body changes; token %s may not act on it; nothing stored",
				    set->n_calendars == 1 ? "calendar" : "one of calendars",
				    cals->str, c->who.name);
			else
				pal_api__problem(c, 403, "forbidden-tenant", "Not your tenant",
						 "a job of another tenant inherits a notify rule "
						 "this body changes; token %s may not act on it; "
						 "nothing stored",
						 c->who.name);
			g_string_free(cals, TRUE);
			rc = -1;
		}
	}
	if (!rc)
		rc = pal_store_apply_spec_gates(ap, c->api->st, susp, set_defines, (void *)set,
						c->who.name, &ro, closed, lifted, err, sizeof err);
	json_t *shadow = json_array(), *shadow_live = json_array(), *shadowed = json_array(),
	       *ignored = json_array(), *covered = json_array();
	for (size_t i = 0; i < set->n; i++)
		if (set->jobs[i].shadow)
			json_array_append_new(res[i].was_live ? shadow_live : shadow,
					      json_string(set->jobs[i].id));
	/* the gates step ends the transaction itself when it fails; this one
	 * does not: roll it back here, or the connection stays in an aborted
	 * transaction holding the apply's locks (and AP is lost) */
	if (!rc && (rc = pal_store_shadow_spec(c->api->st, shadow, shadow_live, c->who.name,
					       shadowed, ignored, covered, err, sizeof err)))
		pal_store_apply_abort(ap);
	json_decref(shadow);
	json_decref(shadow_live);
	if (!rc && !require_takeover_schema(c, ap)) {
		pal_store_apply_abort(ap);
		rc = -1, answered = true;
	}
	if (!rc)
		rc = pal_store_apply_commit(ap, err, sizeof err);
	/* what a controller planned from the old version of a job whose new
	 * version took over at the apply: swept once more after the commit,
	 * without the CLI's wait (API_SETTLE_MS) */
	int64_t tk_pending = 0, tk_late = 0;
	bool tk = !rc && pal_store_apply_took_over(c->api->st);
	if (tk)
		rc = pal_store_apply_settle(c->api->st, c->who.name, why, API_SETTLE_MS, &tk_late,
					    &tk_pending, err, sizeof err);
	int64_t pending = 0, late = 0;
	if (!rc && gone && gone->len &&
	    !(rc = pal_store_retire_pending(c->api->st, (const char *const *)gone->pdata, gone->len,
					    &pending, err, sizeof err)))
		rc = pal_store_retire_sweep(c->api->st, (const char *const *)gone->pdata, gone->len,
					    c->who.name, why, &late, err, sizeof err);
	if (foreign || answered) {
		/* answered above */
	} else if (rc) {
		pal_api__problem_rc(c, rc, rc == PAL_ENOMEM ? "out of memory" : err);
	} else {
		json_t *jobs = json_array();
		for (size_t i = 0; i < set->n; i++)
			json_array_append_new(jobs, json_pack("{s:s, s:s, s:i}", "job_id",
							      set->jobs[i].id, "outcome",
							      outcome_word[res[i].outcome],
							      "version", res[i].version));
		json_array_extend(jobs, followers);
		static const char *const rw[] = {"unchanged", "created", "updated", "removed"};
		json_t *rules = json_array();
		for (size_t i = 0; i < set->n_notify_rules; i++) {
			const pal_notify_rule *x = &set->notify_rules[i];
			json_array_append_new(rules, json_pack("{s:s, s:s, s:s, s:s}", "scope",
							       x->tenant ? "tenant" : "group",
							       "name", x->name, "url", x->n.url,
							       "outcome", rw[rout[i]]));
		}
		pal_api__ok(c, 200,
			    json_pack("{s:b, s:o, s:O, s:O, s:O}", "dry_run", 0, "jobs", jobs,
				      "suspended", closed, "resumed", lifted, "shadowed",
				      shadowed));
		json_object_set(c->out, "shadow_ignored", ignored);
		json_object_set(c->out, "live_by_cutover", covered);
		if (set->n_notify_rules)
			json_object_set_new(c->out, "notify_rules", rules);
		else
			json_decref(rules);
		if (tk)
			json_object_set_new(c->out, "takeover",
					    json_pack("{s:I, s:I}", "late_cancelled",
						      (json_int_t)tk_late, "settling",
						      (json_int_t)tk_pending));
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
			json_object_set(c->out, "kept", kept);
			echo_prefix(c, c->out);
			json_object_set_new(c->out, "late_cancelled", json_integer(late));
			json_object_set_new(c->out, "settling", json_boolean(pending > 0));
		}
	}
	json_decref(shadowed);
	json_decref(ignored);
	json_decref(covered);
	json_decref(kept);
	json_decref(followers);
	free(rout);
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
 * problem set.  A token limited to tenants knows only its tenants' stored
 * jobs: an upstream of another tenant is an unknown job, the same
 * diagnostic as one that does not exist. */
static int check_after(call *c, const pal_jobset *set, pal_diags *diags)
{
	pal_after_graph *g = pal_after_graph_new();
	char err[1024];
	int rc = PAL_OK;

	if (!g) {
		pal_api__problem_rc(c, PAL_ENOMEM, "out of memory");
		return PAL_EDB;
	}
	for (size_t i = 0; !rc && i < set->n; i++)
		if (set->jobs[i].n_after)
			rc = pal_after_graph_add_loaded(g, set->jobs[i].id, set->jobs[i].after,
							set->jobs[i].n_after, set->jobs[i].file);
	char *tl = pal_api__tenants_literal(&c->who);
	if (!rc && !pal_after_graph_empty(g) &&
	    (rc = pal_store_after_graph_stored(c->api->st, g, tl, err, sizeof err)))
		pal_api__problem_rc(c, rc, err);
	else if (!rc && pal_after_graph_check(g, set_defines, (void *)set, true, diags))
		rc = PAL_EINVAL;
	g_free(tl);
	pal_after_graph_free(g);
	return rc == PAL_OK || rc == PAL_EINVAL ? rc : PAL_EDB;
}

/*
 * The job files of the body (Content-Type application/yaml), validated as
 * `palisade apply` validates them, into SET; every job's tenant, in the file
 * and as stored for a job that exists, must be the token's, and every secret
 * a job names and every host it calls or notifies one the node's policies
 * give its tenant.  False with the problem set (415, 422 invalid-job-file,
 * 403; 404 for a READ (plan diff, a dry run) of a job id another tenant
 * holds, as GET /jobs/{id} answers: neither answer names that tenant; 422
 * forbidden-secret, then 422 forbidden-target).
 */
static bool load_body(call *c, pal_jobset *set, bool read)
{
	const pal_api_request *req = c->req;
	const char *ct = pal_api__header(c, "Content-Type");
	if (!ct || (strncasecmp(ct, "application/yaml", 16) &&
		    strncasecmp(ct, "application/x-yaml", 18) && strncasecmp(ct, "text/yaml", 9))) {
		pal_api__problem(c, 415, "unsupported-media-type", "Unsupported media type",
				 "the body is the job file itself: Content-Type: application/yaml");
		return false;
	}
	const char *file = pal_api__query(c, "file");
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
	/* A token limited to tenants sets the notify rules of those tenants
	 * only: a group's rule reaches every tenant's jobs of the group. */
	for (size_t i = 0; c->who.n_tenants && i < set->n_notify_rules; i++) {
		const pal_notify_rule *x = &set->notify_rules[i];
		if (!x->tenant || !pal_token_sees_tenant(&c->who, x->name)) {
			pal_api__problem(c, 403, "forbidden-tenant", "Not your tenant",
					 "notify rule of %s %s: token %s may set the rules of its "
					 "own tenants only; nothing applied",
					 x->tenant ? "tenant" : "group", x->name, c->who.name);
			return false;
		}
	}
	for (size_t i = 0; i < set->n; i++) {
		const pal_job_spec *j = &set->jobs[i];
		/* The stored tenant counts too: apply rewrites it, so a file
		 * naming the token's tenant must not take over another's job. */
		char stored[65], err[512];
		int trc = pal_apistore_job_tenant(c->api->st, j->id, stored, err, sizeof err);
		if (trc && trc != PAL_ENOENT) {
			pal_api__problem_rc(c, trc, err);
			return false;
		}
		if (!pal_token_sees_tenant(&c->who, j->tenant)) { /* the body's own tenant */
			pal_api__problem(c, 403, "forbidden-tenant", "Not your tenant",
					 "job %s is of tenant %s; token %s may not act on it; "
					 "nothing applied",
					 j->id, j->tenant, c->who.name);
			return false;
		}
		if (trc || pal_token_sees_tenant(&c->who, stored))
			continue;
		if (read)
			pal_api__problem(c, 404, "not-found", "Not found", "no job \"%.64s\"",
					 j->id);
		else
			pal_api__problem(c, 403, "forbidden-tenant", "Not your tenant",
					 "job %s is another tenant's; token %s may not act on it; "
					 "nothing applied",
					 j->id, c->who.name);
		return false;
	}
	/* After the tenants: a token hears only of its own tenants' jobs. */
	size_t refused = 0;
	for (size_t i = 0; i < set->n; i++)
		refused += pal_job_secrets_check(&set->jobs[i], c->api->secrets, &diags);
	for (size_t i = 0; i < set->n_notify_rules; i++)
		refused +=
		    pal_notify_rule_secrets_check(&set->notify_rules[i], c->api->secrets, &diags);
	if (refused) {
		problem_diags_as(c, "forbidden-secret", "Secret not allowed", &diags);
		pal_diags_free(&diags);
		return false;
	}
	for (size_t i = 0; i < set->n; i++)
		refused += pal_job_targets_check(&set->jobs[i], c->api->targets, &diags);
	for (size_t i = 0; i < set->n_notify_rules; i++)
		refused +=
		    pal_notify_rule_targets_check(&set->notify_rules[i], c->api->targets, &diags);
	if (refused)
		problem_diags_as(c, "forbidden-target", "Target host not allowed", &diags);
	pal_diags_free(&diags);
	return refused == 0;
}

/* The followers plan diff shows: those the token sees into JOBS, the
 * others only counted. */
typedef struct {
	const pal_token_identity *who;
	json_t *jobs;
	int hidden;
	size_t n;    /* jobs diffed so far, the body's and these */
	int count;   /* instants of each */
	int64_t max; /* at most n x count (0: no bound) */
	char *err;   /* past it: why (PAL_ETOOBIG) */
	size_t errlen;
} follow_out;

/* pal_plan_follow_fn: a stored job that follows a calendar of the body,
 * into CTX (a follow_out): another tenant's job is left out, its id and
 * instants unsaid, and counted in hidden_followers. */
static int follower_diff(void *ctx, const char *job_id, const char *tenant, const char *follows,
			 const pal_plan_diff *d)
{
	follow_out *o = ctx;
	if (!pal_plan_diff_within(++o->n, o->count, o->max, o->err, o->errlen))
		return PAL_ETOOBIG;
	if (pal_token_sees_tenant(o->who, tenant))
		json_array_append_new(o->jobs, pal_plan_diff_json(d, job_id, follows));
	else
		o->hidden++;
	return 0;
}

/* What `plan diff` shows for SET: the next instants, stored and new, and
 * those of the stored jobs that would follow a calendar of SET, at most MAX
 * in all (0: no bound; 422 too-many-instants past it, before they are
 * held).  As apply's dry run (CHECK_NODES), refused as apply would be while
 * live nodes would ignore a key a job it creates or changes sets
 * (require_node_schemas). */
static void diff_set(call *c, pal_jobset *set, int64_t from, int count, int64_t max, bool prune,
		     bool check_nodes)
{
	char err[1024] = "out of memory";
	if (!pal_plan_diff_within(set->n, count, max, err, sizeof err)) {
		pal_api__too_many(c, max, err);
		return;
	}
	json_t *jobs = json_array();
	pal_apply_result *res = calloc(set->n ? set->n : 1, sizeof *res);
	int rc = res ? pal_store_calendar_versions(c->api->st, set->calendars, set->n_calendars,
						   err, sizeof err)
		     : PAL_ENOMEM;
	if (!rc)
		pal_jobset_calendar_versions(set);
	if (!rc)
		rc = pal_store_merge_notify_rules(c->api->st, set, err, sizeof err);
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
	follow_out fo = {&c->who, jobs, 0, set->n, count, max, err, sizeof err};
	if (!rc && !refused)
		rc = pal_plan_diff_followers(c->api->st, set, from, count, follower_diff, &fo, err,
					     sizeof err);
	GPtrArray *gone = NULL; /* what ?prune=true would retire */
	json_t *kept = json_array();
	if (!rc && !refused && prune && !(gone = prune_ids(c, set, kept, err, sizeof err)))
		rc = PAL_EDB;
	if (rc || refused) {
		json_decref(jobs);
		json_decref(kept);
		if (rc == PAL_ETOOBIG)
			pal_api__too_many(c, max, err);
		else if (!refused)
			pal_api__problem_rc(c, rc, err);
		return;
	}
	json_t *out =
	    json_pack("{s:b, s:o, s:i}", "dry_run", 1, "jobs", jobs, "hidden_followers", fo.hidden);
	if (gone) {
		json_t *ids = json_array();
		for (guint i = 0; i < gone->len; i++)
			json_array_append_new(ids, json_string(gone->pdata[i]));
		json_object_set_new(out, "would_retire", ids);
		json_object_set(out, "kept", kept);
		echo_prefix(c, out);
		g_ptr_array_unref(gone);
	}
	json_decref(kept);
	pal_api__ok(c, 200, out);
}

PAL_API_ACCEPTS(apply, "", "dry_run reason file prune prune_prefix");
void pal_api__h_apply(call *c)
{
	const char *dry = pal_api__query(c, "dry_run");
	if (dry && strcmp(dry, "true") && strcmp(dry, "false")) {
		pal_api__problem(c, 400, "bad-parameter", "Bad parameter",
				 "dry_run: expected true or false");
		return;
	}
	bool prune;
	if (!prune_arg(c, &prune))
		return;
	pal_jobset set = {0};
	bool dry_run = dry && !strcmp(dry, "true");
	if (load_body(c, &set, dry_run)) {
		if (dry_run) /* nothing is written */
			diff_set(c, &set, (int64_t)time(NULL), DIFF_COUNT, 0, prune, true);
		else
			apply_set(c, &set,
				  pal_api__query(c, "reason") ? pal_api__query(c, "reason") : "",
				  prune);
	}
	pal_jobset_free(&set);
}

/* `palisade plan diff` of the body's job files: writes nothing.  ?count=
 * instants per job (1..DIFF_COUNT_MAX, default DIFF_COUNT) after ?from= (an
 * RFC 3339 instant, default now), as the CLI's --count and --from; at most
 * PAL_PLAN_DIFF_MAX_INSTANTS over the jobs (apply's dry run has no such
 * bound: 5 instants of each job of the body, admin only). */
PAL_API_ACCEPTS(plan_diff, "", "from count file");
void pal_api__h_plan_diff(call *c)
{
	int64_t from = (int64_t)time(NULL);
	if (pal_api__query(c, "from") && !pal_api__query_time(c, "from", &from))
		return;
	const char *n = pal_api__query(c, "count");
	long count = DIFF_COUNT;
	if (n) {
		char *end;
		count = strtol(n, &end, 10);
		if (*end || count < 1 || count > DIFF_COUNT_MAX) {
			pal_api__problem(c, 400, "bad-parameter", "Bad parameter",
					 "count \"%.20s\": expected an integer in 1..%d", n,
					 DIFF_COUNT_MAX);
			return;
		}
	}
	pal_jobset set = {0};
	if (load_body(c, &set, true))
		diff_set(c, &set, from, (int)count, PAL_PLAN_DIFF_MAX_INSTANTS, false, false);
	pal_jobset_free(&set);
}
