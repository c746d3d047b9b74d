/*
 * backfill.c - backfills (pal_ops_backfill): the instants of a job's stored
 * versions in a window, inserted as triggers of kind backfill.
 *
 * The instants come from the job's versions as read in the same
 * transaction, computed on the planning side (pal_backfill_instants, the
 * same schedule code the controller plans with), so a ticket's backfill and
 * its resolution (tickets.c) share one transaction.
 */
#include <glib.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/ops.h"
#include "palisade/backfill.h"
#include "palisade/timefmt.h"
#include "ops_int.h"

/* ---- backfill ----------------------------------------------------------------- */

/* Insert a backfill of JOB_ID in the open transaction (no audit). */
int pal__ops_backfill_in_tx(pal_store *st, const char *job_id, int64_t from, int64_t to,
			    int64_t max, const char *request_id, pal_backfill_result *res,
			    char *err, size_t errlen)
{
	memset(res, 0, sizeof *res);
	const char *p[] = { job_id, request_id };
	PGresult *r = pal__store_query(
		st,
		"SELECT coalesce(json_agg(json_build_object('version', v.version, 'spec', v.spec,"
		"  'effective_from', floor(extract(epoch FROM v.effective_from))::bigint)"
		"  ORDER BY v.version), '[]')::text"
		" FROM jobs j JOIN job_versions v ON v.job_id = j.job_id WHERE j.job_id = $1",
		1, p, err, errlen);
	if (!r)
		return PAL_EDB;
	json_error_t je;
	json_t *versions = json_loads(PQgetvalue(r, 0, 0), 0, &je);
	PQclear(r);
	if (!versions) {
		snprintf(err, errlen, "cannot parse the stored versions of job %s: %s", job_id,
			 je.text);
		return PAL_EINVAL;
	}
	if (!json_array_size(versions)) {
		json_decref(versions);
		snprintf(err, errlen, "no job \"%s\"; hint: `palisade jobs` lists the jobs", job_id);
		return PAL_ENOENT;
	}
	pal_backfill_plan pl = { 0 };
	int rc = pal_backfill_instants(versions, from, to, max, &pl, err, errlen);
	json_decref(versions);
	if (rc == PAL_ETOOBIG) {
		char f[32], t[32];
		pal_fmt_rfc3339(from, f, sizeof f);
		pal_fmt_rfc3339(to, t, sizeof t);
		snprintf(err, errlen,
			 "backfill of job %s from %s to %s has more than %" PRId64
			 " instants; nothing was written; hint: narrow the range or raise --max",
			 job_id, f, t, max);
	}
	if (rc) {
		pal_backfill_plan_clear(&pl);
		return rc;
	}
	res->instants = (int64_t)pl.n;
	res->excluded = pl.excluded;

	/* Another request kind under the same id would mix two requests. */
	int64_t manual;
	if ((rc = pal__ops_query_i64(
		 st,
		 "SELECT count(*) FROM triggers WHERE job_id = $1 AND request_id = $2"
		 " AND source <> 'backfill'",
		 2, p, &manual, err, errlen))) {
		pal_backfill_plan_clear(&pl);
		return rc;
	}
	if (manual) {
		pal_backfill_plan_clear(&pl);
		snprintf(err, errlen,
			 "request id \"%s\" of job %s was already used by a manual run; hint: "
			 "choose another --request-id",
			 request_id, job_id);
		return PAL_EINVAL;
	}
	pal_pgarr vs, as, ps;
	pal__pgarr_init(&vs);
	pal__pgarr_init(&as);
	pal__pgarr_init(&ps);
	for (size_t i = 0; i < pl.n; i++) {
		for (int k = 0; k < pl.v[i].partitions; k++) {
			pal__pgarr_i64(&vs, pl.v[i].version);
			pal__pgarr_i64(&as, pl.v[i].at);
			pal__pgarr_i64(&ps, k);
			res->rows++;
		}
	}
	pal_backfill_plan_clear(&pl);
	char *va = pal__pgarr_end(&vs), *aa = pal__pgarr_end(&as), *pa = pal__pgarr_end(&ps);
	const char *pi[] = { job_id, request_id, va, aa, pa };
	rc = pal__ops_exec(
	    st,
	    "INSERT INTO triggers (job_id, version, scheduled_at, partition, source, request_id,"
	    " tenant, resource_group, priority, due_at, shard, job_ref)"
	    " SELECT j.job_id, v.version, to_timestamp(u.a), u.p, 'backfill', $2,"
	    "  coalesce(v.spec->>'tenant', j.tenant), v.resource_group, v.priority,"
	    "  to_timestamp(u.a), j.shard, j.ref"
	    " FROM unnest($3::int[], $4::bigint[], $5::int[]) AS u(v, a, p)"
	    " JOIN jobs j ON j.job_id = $1"
	    " JOIN job_versions v ON v.job_id = j.job_id AND v.version = u.v"
	    " ON CONFLICT (job_id, request_id, scheduled_at, partition)"
	    " WHERE request_id IS NOT NULL DO NOTHING",
	    5, pi, &res->inserted, err, errlen);
	g_free(va);
	g_free(aa);
	g_free(pa);
	if (!rc && res->inserted)
		rc = pal__ops_notify(st, "NOTIFY palisade_triggers", 0, NULL, err, errlen);
	return rc;
}

typedef struct backfill_ctx {
	const char *job_id, *request_id, *actor, *reason;
	int64_t from, to, max;
	pal_backfill_result *res;
} backfill_ctx;

static int backfill_body(pal_store *st, void *vctx, char *err, size_t errlen)
{
	backfill_ctx *c = vctx;
	int rc = pal__ops_lock_request(st, c->job_id, c->request_id, err, errlen);
	if (!rc)
		rc = pal__ops_backfill_in_tx(st, c->job_id, c->from, c->to, c->max, c->request_id,
					     c->res, err, errlen);
	if (rc)
		return rc;
	char f[24], t[24], n[24], ex[24], rows[24], ins[24];
	pal__ops_i64s(f, sizeof f, c->from);
	pal__ops_i64s(t, sizeof t, c->to);
	pal__ops_i64s(n, sizeof n, c->res->instants);
	pal__ops_i64s(ex, sizeof ex, c->res->excluded);
	pal__ops_i64s(rows, sizeof rows, c->res->rows);
	pal__ops_i64s(ins, sizeof ins, c->res->inserted);
	const char *pa[] = { c->actor, c->job_id, c->reason, c->request_id, f, t, n, ex, rows, ins };
	return pal__ops_exec(
	    st,
	    "INSERT INTO audit_log (actor, action, scope, reason, details)"
	    " VALUES ($1, 'backfill', 'job:' || $2, $3, jsonb_build_object("
	    "  'request_id', $4::text, 'from', to_timestamp($5::bigint),"
	    "  'to', to_timestamp($6::bigint), 'instants', $7::bigint,"
	    "  'excluded', $8::bigint, 'rows', $9::bigint, 'inserted', $10::bigint))",
	    10, pa, NULL, err, errlen);
}

int pal_ops_backfill(pal_store *st, const char *job_id, int64_t from, int64_t to, int64_t max,
		     const char *request_id, const char *actor, const char *reason,
		     pal_backfill_result *res, char *err, size_t errlen)
{
	memset(res, 0, sizeof *res);
	if (to < from) {
		snprintf(err, errlen, "backfill range is empty: --to is before --from");
		return PAL_EINVAL;
	}
	backfill_ctx c = { job_id, request_id, actor, reason, from, to, max, res };
	return pal__ops_in_tx(st, backfill_body, &c, err, errlen);
}
