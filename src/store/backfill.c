/*
 * backfill.c - backfills (pal_ops_backfill): the instants of a job's stored
 * versions in a window, inserted as triggers of kind backfill.
 *
 * Backfill instants are computed here from the stored versions with
 * pal_schedule_* (the same code the controller plans with) so that a
 * ticket's backfill and its resolution (tickets.c) share one transaction.
 */
#include <glib.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/ops.h"
#include "palisade/schedule.h"
#include "palisade/timefmt.h"
#include "ops_int.h"

/* ---- backfill ----------------------------------------------------------------- */

typedef struct bf_inst {
	int64_t at;
	int version;
	int partitions;
} bf_inst;

typedef struct bf_plan {
	bf_inst *v;
	size_t n, cap;
	int64_t excluded;
} bf_plan;

/* Instants of VER's schedule in (lo, hi] intersected with [from, to]. */
static int bf_segment(json_t *ver, int64_t lo, int64_t hi, int64_t from, int64_t to, int64_t max,
		      bf_plan *pl, char *err, size_t errlen)
{
	pal_job_spec spec;
	int rc = pal_job_spec_from_canonical(json_object_get(ver, "spec"), &spec, err, errlen);
	if (rc)
		return rc;
	pal_schedule *sc;
	if ((rc = pal_schedule_open(&spec, &sc, err, errlen))) {
		pal_job_spec_clear(&spec);
		return rc;
	}
	int version = (int)json_integer_value(json_object_get(ver, "version"));
	int64_t t = lo > from - 1 ? lo : from - 1, x;
	bool excl;
	while (pal_schedule_next(sc, t, &x, &excl) == PAL_OK && x <= to && x <= hi) {
		t = x;
		if (excl) {
			pl->excluded++;
			continue;
		}
		if ((int64_t)pl->n >= max) {
			rc = PAL_ETOOBIG;
			break;
		}
		if (pl->n == pl->cap) {
			size_t cap = pl->cap ? pl->cap * 2 : 256;
			bf_inst *nv = realloc(pl->v, cap * sizeof *nv);
			if (!nv) {
				rc = PAL_ENOMEM;
				break;
			}
			pl->v = nv;
			pl->cap = cap;
		}
		pl->v[pl->n++] = (bf_inst){ x, version, spec.partitions };
	}
	pal_schedule_close(sc);
	pal_job_spec_clear(&spec);
	return rc;
}

/*
 * Every instant of a job in [FROM, TO] from VERSIONS ([{version, spec,
 * effective_from|null}] ascending): an activated version owns the instants
 * after its effective_from up to the next activated one's (inclusive), as
 * the planner assigns them; before the first effective_from, and when none
 * is activated, the latest version.  PAL_ETOOBIG beyond MAX instants.
 */
static int bf_compute(json_t *versions, int64_t from, int64_t to, int64_t max, bf_plan *pl,
		      char *err, size_t errlen)
{
	size_t nv = json_array_size(versions), i;
	json_t *latest = json_array_get(versions, nv - 1), *v;
	json_t *act = json_array();
	json_array_foreach(versions, i, v)
	{
		if (json_is_integer(json_object_get(v, "effective_from")))
			json_array_append(act, v);
	}
	size_t na = json_array_size(act);
	int rc;
	int64_t first = na ? json_integer_value(json_object_get(json_array_get(act, 0),
								"effective_from"))
			   : INT64_MAX;
	rc = bf_segment(latest, INT64_MIN, first, from, to, max, pl, err, errlen);
	for (size_t k = 0; k < na && !rc; k++) {
		json_t *a = json_array_get(act, k);
		int64_t lo = json_integer_value(json_object_get(a, "effective_from"));
		int64_t hi = k + 1 < na ? json_integer_value(json_object_get(json_array_get(act, k + 1),
									     "effective_from"))
					: INT64_MAX;
		if (hi > lo)
			rc = bf_segment(a, lo, hi, from, to, max, pl, err, errlen);
	}
	json_decref(act);
	return rc;
}

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
	bf_plan pl = { 0 };
	int rc = bf_compute(versions, from, to, max, &pl, err, errlen);
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
		free(pl.v);
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
		free(pl.v);
		return rc;
	}
	if (manual) {
		free(pl.v);
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
	free(pl.v);
	char *va = pal__pgarr_end(&vs), *aa = pal__pgarr_end(&as), *pa = pal__pgarr_end(&ps);
	const char *pi[] = { job_id, request_id, va, aa, pa };
	rc = pal__ops_exec(
	    st,
	    "INSERT INTO triggers (job_id, version, scheduled_at, partition, source, request_id,"
	    " tenant, resource_group, priority, due_at, shard)"
	    " SELECT j.job_id, v.version, to_timestamp(u.a), u.p, 'backfill', $2,"
	    "  coalesce(v.spec->>'tenant', j.tenant), v.resource_group, v.priority,"
	    "  to_timestamp(u.a), j.shard"
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
