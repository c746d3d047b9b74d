/*
 * routes_reads.c - the HTTP API's reads of the whole cluster (api_int.h):
 * the audit log, the gates, verify, the status, report cost.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/apistore.h"
#include "palisade/lifecycle.h"
#include "palisade/report.h"
#include "palisade/retention.h"
#include "palisade/timefmt.h"
#include "palisade/verify.h"
#include "palisade/coord.h"
#include "api_int.h"

#define STATUS_ZK_MS 2000 /* the most a status waits for ZooKeeper's node list */

#define COST_LIMIT 50	      /* job rows of report cost (its --limit default) */
#define COST_LIMIT_MAX 100000 /* report cost's --limit bound */

PAL_API_ACCEPTS(audit, "", "actor action scope since until limit cursor");
void pal_api__h_audit(call *c)
{
	int limit;
	int64_t since = PAL_OPS_NOW, until = PAL_OPS_NOW;
	if (!pal_api__unscoped(c) || !pal_api__page_limit(c, &limit) ||
	    (pal_api__query(c, "since") && !pal_api__query_time(c, "since", &since)) ||
	    (pal_api__query(c, "until") && !pal_api__query_time(c, "until", &until)))
		return;
	json_t *rows;
	char *next, err[1024];
	int rc = pal_apistore_audit_page(c->api->st, pal_api__query(c, "actor"),
					 pal_api__query(c, "action"), pal_api__query(c, "scope"),
					 since, until, pal_api__query(c, "cursor"), limit, &rows, &next,
					 err, sizeof err);
	pal_api__page_answer(c, rc, rows, next, err);
}

PAL_API_ACCEPTS(gates, "", "limit cursor");
void pal_api__h_gates(call *c)
{
	int limit;
	json_t *rows;
	char *next, err[1024];
	if (!pal_api__unscoped(c) || !pal_api__page_limit(c, &limit))
		return;
	int rc = pal_apistore_gates_page(c->api->st, pal_api__query(c, "cursor"), limit, &rows,
					 &next, err, sizeof err);
	pal_api__page_answer(c, rc, rows, next, err);
}

/* `palisade verify`: the plan set of [from, to] against the triggers, up to
 * the database clock (a later `to` is taken as it, and the answer says so:
 * to_clamped), at most PAL_VERIFY_MAX_INSTANTS recomputed (422
 * too-many-instants past it, found before they are held). */
PAL_API_ACCEPTS(verify, "", "job from to");
void pal_api__h_verify(call *c)
{
	int64_t from, to;
	const char *job = pal_api__query(c, "job");
	if (!pal_api__query_time(c, "from", &from) || !pal_api__query_time(c, "to", &to))
		return;
	if (to < from) {
		pal_api__problem(c, 400, "bad-parameter", "Bad parameter", "to is before from");
		return;
	}
	if (job) {
		snprintf(c->argbuf[0], sizeof c->argbuf[0], "%s", job);
		c->arg[0] = c->argbuf[0];
		if (!pal_api__job_visible(c, false))
			return;
	} else if (!pal_api__unscoped(c)) {
		return;
	}
	char err[1024];
	bool have_h;
	int64_t h_ms;
	int rc = pal_store_retention_horizon(c->api->st, &have_h, &h_ms, err, sizeof err);
	if (rc) {
		pal_api__problem_rc(c, rc, err);
		return;
	}
	if (have_h && from * 1000 < h_ms) {
		char b[40];
		pal_fmt_rfc3339((h_ms + 999) / 1000, b, sizeof b);
		pal_api__problem(
		    c, 409, "before-retention-horizon", "Before the retention horizon",
		    "from is before the retention horizon %s: earlier triggers may have been "
		    "dropped; verify from %s on",
		    b, b);
		return;
	}
	pal_verify_report r;
	rc = pal_verify(c->api->st, from, to, job, NULL, &r, err, sizeof err);
	if (rc == PAL_ETOOBIG)
		pal_api__too_many(c, PAL_VERIFY_MAX_INSTANTS, err);
	else if (rc)
		pal_api__problem_rc(c, rc, err);
	else
		pal_api__ok(c, 200, pal_verify_report_json(&r));
	pal_verify_report_free(&r);
}

PAL_API_ACCEPTS(status, "", "");
void pal_api__h_status(call *c)
{
	json_t *st;
	char err[1024];
	if (!pal_api__unscoped(c)) /* cluster-wide figures */
		return;
	int rc = pal_store_status_json(c->api->st, &st, err, sizeof err);
	if (rc) {
		pal_api__problem_rc(c, rc, err);
		return;
	}
	/* the live nodes, as `palisade status` reads them from ZooKeeper: an
	 * operator through the API has no ZooKeeper address or credentials */
	json_t *nodes;
	if (!c->api->zk_connect)
		json_object_set_new(st, "nodes_error", json_string("the node has no ZooKeeper"));
	else if (pal_coord_list_nodes(c->api->zk_connect, c->api->zk_root, c->api->cluster,
				      STATUS_ZK_MS, &nodes, err, sizeof err))
		json_object_set_new(st, "nodes_error", json_string(err));
	else
		pal_coord_status_nodes(st, nodes);
	pal_api__ok(c, 200, st);
}

/* `palisade report cost`: what each correct result cost over [from, to),
 * for ?job=, ?group= or ?tenant= (at most one; every job when none), the
 * costliest ?limit= jobs (1..COST_LIMIT_MAX, default COST_LIMIT).  A token
 * limited to tenants names a job or one of its tenants: another tenant's
 * job or tenant is not found (404), a group or every job refused (403). */
PAL_API_ACCEPTS(report_cost, "", "from to limit job group tenant");
void pal_api__h_report_cost(call *c)
{
	pal_cost_scope s = {.limit = COST_LIMIT};
	if (!pal_api__query_time(c, "from", &s.from) || !pal_api__query_time(c, "to", &s.to))
		return;
	if (s.to <= s.from) {
		pal_api__problem(c, 400, "bad-parameter", "Bad parameter", "to is not after from");
		return;
	}
	const char *lim = pal_api__query(c, "limit");
	if (lim) {
		char *end;
		long v = strtol(lim, &end, 10);
		if (*end || v < 1 || v > COST_LIMIT_MAX) {
			pal_api__problem(c, 400, "bad-parameter", "Bad parameter",
					 "limit \"%.20s\": expected an integer in 1..%d", lim,
					 COST_LIMIT_MAX);
			return;
		}
		s.limit = (int)v;
	}
	if (!pal_api__query_scope(c, &s.scope) ||
	    ((s.scope.kind == PAL_SCOPE_GROUP || s.scope.kind == PAL_SCOPE_GLOBAL) &&
	     !pal_api__unscoped(c)))
		return;
	json_t *rep;
	char err[1024];
	int rc = pal_store_cost_json(c->api->st, &s, &rep, err, sizeof err);
	if (rc)
		pal_api__problem_rc(c, rc, err);
	else
		pal_api__ok(c, 200, rep);
}
