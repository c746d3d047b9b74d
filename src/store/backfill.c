/*
 * backfill.c - backfills (pal_ops_backfill): the instants of a job's stored
 * versions in a window, inserted as triggers of kind backfill.
 *
 * The instants come from the job's versions as read in the same
 * transaction, computed on the planning side (pal_backfill_instants_after,
 * the same schedule code the controller plans with; a version with `after`
 * has its first upstream's instants, read through the chain of first
 * upstreams' versions), so a ticket's backfill and its resolution
 * (tickets.c) share one transaction.
 *
 * Refused in that transaction, before any insert: a retired job (its row
 * held FOR SHARE, so a concurrent delete waits or is seen), a range ending
 * after the database clock (the controller plans those instants: they would
 * run twice), and, unless new_effect, an instant whose earlier trigger has
 * an unknown outcome (pal_store_unknown_in, the predicate `trigger --at`
 * uses): a backfill's key is new, so the service could apply it twice.
 * Also unless new_effect: an instant of a version with `after` that the
 * dependency planner has not decided yet (pal__ops_after_undecided, the
 * predicate `trigger --at` uses: it runs the job there itself), a request id whose earlier backfill retention
 * dropped (check_remembered), and an instant before the retention horizon
 * (check_horizon), where neither can be ruled out any more.  The request
 * id is kept in request_ids (sql/046), version 0 marking a backfill's.
 */
#include <glib.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/ops.h"
#include "palisade/backfill.h"
#include "palisade/lifecycle.h"
#include "palisade/timefmt.h"
#include "ops_int.h"

/* ---- backfill ----------------------------------------------------------------- */

int pal__ops_hold_job(pal_store *st, const char *job_id, char refused[24], int64_t *now,
		      char *err, size_t errlen)
{
	const char *p[] = { job_id };
	PGresult *r = pal__store_query(
		st,
		"SELECT retired_at IS NOT NULL, floor(extract(epoch FROM clock_timestamp()))::bigint"
		" FROM jobs WHERE job_id = $1 FOR SHARE",
		1, p, err, errlen);
	if (!r)
		return PAL_EDB;
	if (!PQntuples(r)) {
		PQclear(r);
		snprintf(err, errlen, "no job \"%s\"; hint: `palisade jobs` lists the jobs", job_id);
		return PAL_ENOENT;
	}
	bool retired = !strcmp(PQgetvalue(r, 0, 0), "t");
	*now = pal__ops_val_i64(r, 0, 1);
	PQclear(r);
	if (retired) {
		snprintf(refused, 24, "job-retired");
		snprintf(err, errlen,
			 "job %s is retired (`palisade jobs --retired`); nothing was written; "
			 "hint: apply it again to run it",
			 job_id);
		return PAL_ESTALE;
	}
	return PAL_OK;
}

/* The job's row held (pal__ops_hold_job), and a range ending after the
 * database clock refused. */
static int check_job(pal_store *st, const char *job_id, int64_t to, pal_backfill_result *res,
		     char *err, size_t errlen)
{
	int64_t now;
	int rc = pal__ops_hold_job(st, job_id, res->refused, &now, err, errlen);
	if (rc)
		return rc;
	if (to > now) {
		char t[32], n[32];
		pal_fmt_rfc3339(to, t, sizeof t);
		pal_fmt_rfc3339(now, n, sizeof n);
		snprintf(err, errlen,
			 "backfill of job %s to %s reaches past the database clock (%s): the "
			 "scheduler runs the instants still to come, a backfill would run them a "
			 "second time; nothing was written; hint: end the range at %s or before",
			 job_id, t, n, n);
		return PAL_EINVAL;
	}
	return PAL_OK;
}

/* The instants of PL whose earlier triggers (not REQUEST_ID's) have an
 * unknown outcome: into res->unknown; refused (PAL_ESTALE, ERR naming them)
 * unless NEW_EFFECT. */
static int check_unknown(pal_store *st, const char *job_id, int64_t from, int64_t to,
			 const pal_backfill_plan *pl, const char *request_id, bool new_effect,
			 pal_backfill_result *res, char *err, size_t errlen)
{
	json_t *unk = NULL;
	int rc = pal_store_unknown_in(st, job_id, from, to, &unk, err, errlen);
	if (rc)
		return rc;
	GString *names = g_string_new(NULL);
	GHashTable *ats = g_hash_table_new(g_int64_hash, g_int64_equal); /* the plan's instants */
	for (size_t k = 0; json_array_size(unk) && k < pl->n; k++)
		g_hash_table_add(ats, &pl->v[k].at);
	int64_t last = 0;
	size_t i;
	json_t *t;
	json_array_foreach(unk, i, t)
	{
		const char *r = json_string_value(json_object_get(t, "request_id"));
		int64_t at = json_integer_value(json_object_get(t, "at"));
		if ((r && !strcmp(r, request_id)) || (res->unknown && at == last) ||
		    !g_hash_table_contains(ats, &at))
			continue;
		last = at;
		if (++res->unknown > 5)
			continue;
		char ts[32];
		pal_fmt_rfc3339(at, ts, sizeof ts);
		g_string_append_printf(
		    names, "%s%s (trigger %lld, %s%s)", res->unknown > 1 ? ", " : "", ts,
		    (long long)json_integer_value(json_object_get(t, "trigger_id")),
		    json_string_value(json_object_get(t, "state")),
		    json_is_true(json_object_get(t, "outcome_unknown")) ? ", outcome unknown" : "");
	}
	g_hash_table_destroy(ats);
	json_decref(unk);
	if (res->unknown > 5)
		g_string_append_printf(names, " and %lld more", (long long)(res->unknown - 5));
	if (res->unknown && !new_effect) {
		snprintf(res->refused, sizeof res->refused, "unknown-outcome");
		snprintf(err, errlen,
			 "backfill of job %s: %lld instant(s) had a trigger whose outcome is unknown, "
			 "so the effect may have happened and a backfill (a new key) could make it "
			 "twice: %s; nothing was written; hint: resolve their tickets (`palisade "
			 "tickets`: retry keeps the key, mark_succeeded if it happened) and leave "
			 "those instants out of the range, or pass --new-effect (API \"new_effect\": "
			 "true) to run them again anyway",
			 job_id, (long long)res->unknown, names->str);
		rc = PAL_ESTALE;
	}
	g_string_free(names, TRUE);
	return rc;
}

/* REQUEST_ID remembered in request_ids as a backfill's (sql/046, version
 * 0) while no trigger holds it any more (retention dropped them): its
 * instants ran then, and the service may have forgotten their keys, so a
 * repeat would run them a second time.  Refused (PAL_ESTALE) unless
 * NEW_EFFECT. */
static int check_remembered(pal_store *st, const char *job_id, const char *request_id,
			    bool new_effect, pal_backfill_result *res, char *err, size_t errlen)
{
	if (new_effect)
		return PAL_OK;
	const char *p[] = { job_id, request_id };
	PGresult *r = pal__store_query(
		st,
		"SELECT floor(extract(epoch FROM u.scheduled_at))::bigint,"
		"  cardinality(u.trigger_ids), floor(extract(epoch FROM u.used_at))::bigint"
		" FROM request_ids u WHERE u.job_id = $1 AND u.request_id = $2 AND u.version = 0"
		"  AND NOT EXISTS (SELECT 1 FROM triggers t WHERE t.job_id = $1"
		"   AND t.request_id = $2)",
		2, p, err, errlen);
	if (!r)
		return PAL_EDB;
	if (!PQntuples(r)) {
		PQclear(r);
		return PAL_OK;
	}
	char f[32], u[32];
	pal_fmt_rfc3339(pal__ops_val_i64(r, 0, 0), f, sizeof f);
	pal_fmt_rfc3339(pal__ops_val_i64(r, 0, 2), u, sizeof u);
	long long n = pal__ops_val_i64(r, 0, 1);
	PQclear(r);
	snprintf(res->refused, sizeof res->refused, "unknown-outcome");
	snprintf(err, errlen,
		 "backfill of job %s: request id \"%s\" was used by a backfill from %s (%lld "
		 "triggers, at %s) whose triggers retention has dropped: its instants ran "
		 "then, and a repeat would run them a second time; nothing was written; hint: "
		 "another range needs another --request-id; --new-effect (API \"new_effect\": "
		 "true) runs it again knowing it is a second effect",
		 job_id, request_id, f, n, u);
	return PAL_ESTALE;
}

/* The instants of PL before the retention horizon (palisade_retention_
 * horizon(): their triggers may have gone with a dropped range, and with
 * them an unknown outcome or an earlier run of this request id):
 * refused (PAL_ESTALE), as `trigger --at` refuses one. */
static int check_horizon(pal_store *st, const char *job_id, const pal_backfill_plan *pl,
			 pal_backfill_result *res, char *err, size_t errlen)
{
	int64_t h, first = INT64_MAX, n = 0;
	int rc = pal__ops_horizon(st, &h, err, errlen);
	if (rc)
		return rc;
	for (size_t i = 0; i < pl->n; i++) {
		if (pl->v[i].at >= h)
			continue;
		n++;
		if (pl->v[i].at < first)
			first = pl->v[i].at;
	}
	if (!n)
		return PAL_OK;
	char fs[32], hs[32];
	pal_fmt_rfc3339(first, fs, sizeof fs);
	pal_fmt_rfc3339(h, hs, sizeof hs);
	snprintf(res->refused, sizeof res->refused, "unknown-outcome");
	snprintf(err, errlen,
		 "backfill of job %s: %lld instant(s), the first at %s, are before the retention "
		 "horizon %s (the triggers before it may have been dropped), so an earlier "
		 "trigger's unknown outcome, or an earlier run of this request id, cannot be "
		 "ruled out; nothing was written; hint: start the range at %s or later, or "
		 "--new-effect (API \"new_effect\": true) to run them knowing each may be a "
		 "second effect",
		 job_id, (long long)n, fs, hs, hs);
	return PAL_ESTALE;
}

/* The (instant, partition) of job $1 at to_timestamp(A), partition P has a
 * trigger that ran or is to run: attempted, or neither skipped nor
 * cancelled (any source: a scheduled one, a manual run, another backfill). */
#define RAN(a, p)                                                                                  \
	"EXISTS (SELECT 1 FROM triggers o WHERE o.job_id = $1 AND o.scheduled_at = to_timestamp(" a \
	") AND o.partition = " p " AND (o.attempt_count > 0"                                       \
	" OR o.state NOT IN ('skipped', 'cancelled')))"

int pal__ops_job_versions(pal_store *st, const char *job_id, json_t **out, char *err,
			  size_t errlen)
{
	*out = NULL;
	const char *p[] = { job_id };
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
	*out = versions;
	return PAL_OK;
}

/* Where job UP's version VERSION, stored and not activated yet, takes
 * over once a controller activates it, in epoch seconds (*AT): the
 * takeover the listings show (PAL__TAKEOVER_SQL: the shard's watermark,
 * where it was stored for a one-shot or a version after one), but, for
 * the FIRST such version after the active one, no later than where it was
 * stored (not before the active version's activation) when the active
 * version has an `end`: a retired job applied again, a job whose `end`
 * passed, which the controller may switch from below the watermark
 * (planner.c, switch_between), so that no instant it runs is taken for
 * nobody's. */
static int pending_takeover(pal_store *st, const char *up, int version, bool first, int64_t *at,
			    char *err, size_t errlen)
{
	char vs[16];
	snprintf(vs, sizeof vs, "%d", version);
	const char *p[] = { up, vs };
	PGresult *r = pal__store_query(
	    st,
	    "SELECT " PAL__TAKEOVER_SQL("j", "v", "s") ", (SELECT floor(extract(epoch FROM"
	    "  greatest(a.effective_from, v.created_at)))::bigint FROM job_versions a"
	    "  WHERE a.job_id = j.job_id AND a.effective_from IS NOT NULL"
	    "  AND (a.spec -> 'schedule' ->> 'end') IS NOT NULL AND a.version = (SELECT"
	    "  max(b.version) FROM job_versions b WHERE b.job_id = j.job_id"
	    "  AND b.effective_from IS NOT NULL))"
	    " FROM jobs j JOIN job_versions v ON v.job_id = j.job_id AND v.version = $2::int"
	    " LEFT JOIN shards s ON s.shard_id = j.shard WHERE j.job_id = $1",
	    2, p, err, errlen);
	if (!r)
		return PAL_EDB;
	if (!PQntuples(r)) {
		PQclear(r);
		*at = INT64_MAX; /* gone meanwhile: it owns no instant */
		return PAL_OK;
	}
	*at = pal__ops_val_i64(r, 0, 0);
	if (first && !PQgetisnull(r, 0, 1) && pal__ops_val_i64(r, 0, 1) < *at)
		*at = pal__ops_val_i64(r, 0, 1);
	PQclear(r);
	return PAL_OK;
}

/* Job UP's versions UV as they will be once a controller activates those
 * stored after its last activated one: each from where it takes over
 * (pending_takeover), not before the one before it, as switch_point
 * activates them one after the other (a job none of whose versions was
 * activated: its latest alone).  A version between the active one and
 * the latest owns instants too: one after a one-shot takes over where
 * it was stored, below the watermark, and runs them. */
static int pending_takeovers(pal_store *st, const char *up, json_t *uv, char *err, size_t errlen)
{
	size_t nv = json_array_size(uv), m = nv;
	int64_t prev = INT64_MIN;
	while (m > 0 && !json_is_integer(json_object_get(json_array_get(uv, m - 1), "effective_from")))
		m--;
	if (m > 0)
		prev = json_integer_value(json_object_get(json_array_get(uv, m - 1), "effective_from"));
	else
		m = nv - 1; /* none activated: the latest is, alone */
	for (size_t i = m; i < nv; i++) {
		json_t *v = json_array_get(uv, i);
		int64_t at;
		int rc = pending_takeover(st, up, (int)json_integer_value(json_object_get(v, "version")),
					  i == m, &at, err, errlen);
		if (rc)
			return rc;
		if (at < prev)
			at = prev;
		json_object_set_new(v, "effective_from", json_integer(at));
		prev = at;
	}
	return PAL_OK;
}

int pal__ops_upstream_versions(pal_store *st, json_t *versions, bool pending, json_t **out,
			       bool *alone, char *err, size_t errlen)
{
	if (alone)
		*alone = false;
	json_t *ups = json_object();
	json_t *todo = json_array(); /* versions arrays still to walk */
	json_array_append(todo, versions);
	int rc = PAL_OK;
	for (size_t k = 0; !rc && k < json_array_size(todo); k++) {
		size_t i;
		json_t *v;
		json_array_foreach(json_array_get(todo, k), i, v)
		{
			const char *up = pal_backfill_first_upstream(v);
			if (!up || json_object_get(ups, up))
				continue;
			json_t *uv;
			rc = pal__ops_job_versions(st, up, &uv, err, errlen);
			if (rc == PAL_ENOENT) /* no such job: no instant */
				uv = json_array(), rc = PAL_OK;
			if (rc)
				break;
			size_t nv = json_array_size(uv);
			json_t *latest = json_array_get(uv, nv - 1);
			if (pending && nv > 1 &&
			    !json_is_integer(json_object_get(latest, "effective_from"))) {
				/* the versions as they will be once it is activated:
				 * the activated ones up to the takeovers, the
				 * pending ones after */
				if ((rc = pending_takeovers(st, up, uv, err, errlen))) {
					json_decref(uv);
					break;
				}
				if (alone)
					*alone = true;
			}
			json_object_set_new(ups, up, uv);
			json_array_append(todo, uv);
		}
	}
	json_decref(todo);
	if (rc) {
		json_decref(ups);
		ups = NULL;
	}
	*out = ups;
	return rc;
}

int pal__ops_after_undecided(pal_store *st, const char *job_id, const char *ats,
			     const char *parts, int64_t *n, int64_t *first, char *err,
			     size_t errlen)
{
	*n = *first = 0;
	const char *p[] = { job_id, ats, parts };
	/* per (instant, partition), as palisade_plan_after's `taken`: one
	 * partition decided leaves the others waiting (an upstream with as
	 * many partitions maps p to p) */
	PGresult *r = pal__store_query(
	    st,
	    "SELECT count(DISTINCT u.a), coalesce(min(u.a), 0)"
	    " FROM unnest($2::bigint[], $3::int[]) AS u(a, np)"
	    " CROSS JOIN LATERAL generate_series(0, u.np - 1) g(p)"
	    " WHERE to_timestamp(u.a) > coalesce((SELECT watermark FROM after_watermarks"
	    "  WHERE job_id = $1), '-infinity')"
	    " AND to_timestamp(u.a) > (SELECT min(effective_from) FROM job_versions"
	    "  WHERE job_id = $1 AND spec ? 'after')"
	    " AND NOT EXISTS (SELECT 1 FROM triggers WHERE job_id = $1 AND request_id IS NULL"
	    "  AND scheduled_at = to_timestamp(u.a) AND partition = g.p)"
	    " AND NOT EXISTS (SELECT 1 FROM misfires WHERE job_id = $1"
	    "  AND reason IN ('upstream_failed', 'upstream_late')"
	    "  AND (partition IS NULL OR partition = g.p)"
	    "  AND range_from <= to_timestamp(u.a) AND range_to >= to_timestamp(u.a))",
	    3, p, err, errlen);
	if (!r)
		return PAL_EDB;
	*n = pal__ops_val_i64(r, 0, 0);
	*first = pal__ops_val_i64(r, 0, 1);
	PQclear(r);
	return PAL_OK;
}

/* The instants of PL owned by a version with `after` that the dependency
 * planner has not decided yet (pal__ops_after_undecided): it runs the job
 * there under its own key once the upstreams end, so a backfill would be a
 * second effect.  Refused (PAL_ESTALE, "scheduled-instant", as `trigger
 * --at` refuses one) unless NEW_EFFECT. */
static int check_undecided(pal_store *st, const char *job_id, const pal_backfill_plan *pl,
			   bool new_effect, pal_backfill_result *res, char *err, size_t errlen)
{
	if (new_effect)
		return PAL_OK;
	pal_pgarr as, ps;
	pal__pgarr_init(&as);
	pal__pgarr_init(&ps);
	size_t k = 0;
	for (size_t i = 0; i < pl->n; i++)
		if (pl->v[i].after) {
			pal__pgarr_i64(&as, pl->v[i].at);
			pal__pgarr_i64(&ps, pl->v[i].partitions);
			k++;
		}
	char *aa = pal__pgarr_end(&as), *pa = pal__pgarr_end(&ps);
	int64_t n = 0, first = 0;
	int rc = k ? pal__ops_after_undecided(st, job_id, aa, pa, &n, &first, err, errlen)
		   : PAL_OK;
	g_free(aa);
	g_free(pa);
	if (rc || !n)
		return rc;
	char fs[32];
	pal_fmt_rfc3339(first, fs, sizeof fs);
	snprintf(res->refused, sizeof res->refused, "scheduled-instant");
	snprintf(err, errlen,
		 "backfill of job %s: %lld instant(s), the first at %s, are instants of its "
		 "upstream (after:) that the dependency planner has not decided yet: it runs the "
		 "job there under its own key once the upstream ends, and a backfill would make a "
		 "second effect; nothing was written; hint: end the range before %s, or "
		 "--new-effect (API \"new_effect\": true) to run them twice on purpose",
		 job_id, (long long)n, fs, fs);
	return PAL_ESTALE;
}

/* Insert a backfill of JOB_ID in the open transaction (no audit). */
int pal__ops_backfill_in_tx(pal_store *st, const char *job_id, int64_t from, int64_t to,
			    int64_t max, const char *request_id, bool new_effect, bool unrun_only,
			    pal_backfill_result *res, char *err, size_t errlen)
{
	memset(res, 0, sizeof *res);
	int rc = check_job(st, job_id, to, res, err, errlen);
	if (rc)
		return rc;
	const char *p[] = { job_id, request_id };
	json_t *versions;
	if ((rc = pal__ops_job_versions(st, job_id, &versions, err, errlen)))
		return rc;
	json_t *ups;
	if ((rc = pal__ops_upstream_versions(st, versions, false, &ups, NULL, err, errlen))) {
		json_decref(versions);
		return rc;
	}
	pal_backfill_plan pl = { 0 };
	rc = pal_backfill_instants_after(versions, ups, from, to, max, &pl, err, errlen);
	json_decref(versions);
	json_decref(ups);
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

	/* Another request kind under the same id would mix two requests: a
	 * manual run's triggers, or once retention dropped them, its row in
	 * request_ids (version 0 marks a backfill's). */
	int64_t manual;
	if ((rc = pal__ops_query_i64(
		 st,
		 "SELECT (SELECT count(*) FROM triggers WHERE job_id = $1 AND request_id = $2"
		 " AND source <> 'backfill') + (SELECT count(*) FROM request_ids WHERE job_id = $1"
		 " AND request_id = $2 AND version <> 0)",
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
	/* the unknown outcomes still kept before the horizon: a refusal for
	 * those names them, with their tickets */
	if ((rc = check_remembered(st, job_id, request_id, new_effect, res, err, errlen)) ||
	    (rc = check_undecided(st, job_id, &pl, new_effect, res, err, errlen)) ||
	    (rc = check_unknown(st, job_id, from, to, &pl, request_id, new_effect, res, err,
				errlen)) ||
	    (!unrun_only && !new_effect &&
	     (rc = check_horizon(st, job_id, &pl, res, err, errlen)))) {
		pal_backfill_plan_clear(&pl);
		return rc;
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
	char fr[24];
	pal__ops_i64s(fr, sizeof fr, from);
	const char *pi[] = { job_id, request_id, va, aa, pa, unrun_only ? "true" : "false", fr };
	const char *pr[] = { job_id, aa, pa };
	if (unrun_only &&
	    (rc = pal__ops_query_i64(st,
				     "SELECT count(*) FROM unnest($2::bigint[], $3::int[]) AS u(a, p)"
				     " WHERE " RAN("u.a", "u.p"),
				     3, pr, &res->ran, err, errlen))) {
		g_free(va);
		g_free(aa);
		g_free(pa);
		return rc;
	}
	/* the id outlives the triggers (their range dropped by retention):
	 * request_ids keeps it as a backfill's (version 0, scheduled_at its
	 * earliest from), used again by each repeat that adds triggers */
	rc = pal__ops_query_i64(
	    st,
	    "WITH ins AS (INSERT INTO triggers (job_id, version, scheduled_at, partition, source,"
	    "  request_id, tenant, resource_group, priority, due_at, shard, job_ref)"
	    " SELECT j.job_id, v.version, to_timestamp(u.a), u.p, 'backfill', $2,"
	    "  coalesce(v.spec->>'tenant', j.tenant), v.resource_group, v.priority,"
	    "  to_timestamp(u.a), j.shard, j.ref"
	    " FROM unnest($3::int[], $4::bigint[], $5::int[]) AS u(v, a, p)"
	    " JOIN jobs j ON j.job_id = $1"
	    " JOIN job_versions v ON v.job_id = j.job_id AND v.version = u.v"
	    " WHERE NOT ($6::boolean AND " RAN("u.a", "u.p") ")"
	    " ON CONFLICT (job_id, request_id, scheduled_at, partition)"
	    " WHERE request_id IS NOT NULL DO NOTHING RETURNING id),"
	    " rem AS (INSERT INTO request_ids (job_id, request_id, scheduled_at, version,"
	    "  trigger_ids) SELECT $1, $2, to_timestamp($7::bigint), 0, array_agg(id ORDER BY id)"
	    "  FROM ins HAVING count(*) > 0"
	    "  ON CONFLICT (job_id, request_id) DO UPDATE SET trigger_ids ="
	    "   request_ids.trigger_ids || EXCLUDED.trigger_ids, scheduled_at ="
	    "   least(request_ids.scheduled_at, EXCLUDED.scheduled_at), used_at = EXCLUDED.used_at"
	    "  WHERE request_ids.version = 0)"
	    " SELECT count(*) FROM ins",
	    7, pi, &res->inserted, err, errlen);
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
	bool new_effect;
	pal_backfill_result *res;
} backfill_ctx;

static int backfill_body(pal_store *st, void *vctx, char *err, size_t errlen)
{
	backfill_ctx *c = vctx;
	int rc = pal__ops_lock_request(st, c->job_id, c->request_id, err, errlen);
	if (!rc)
		rc = pal__ops_backfill_in_tx(st, c->job_id, c->from, c->to, c->max, c->request_id,
					     c->new_effect, false, c->res, err, errlen);
	if (rc)
		return rc;
	char f[24], t[24], n[24], ex[24], rows[24], ins[24], unk[24];
	pal__ops_i64s(f, sizeof f, c->from);
	pal__ops_i64s(t, sizeof t, c->to);
	pal__ops_i64s(n, sizeof n, c->res->instants);
	pal__ops_i64s(ex, sizeof ex, c->res->excluded);
	pal__ops_i64s(rows, sizeof rows, c->res->rows);
	pal__ops_i64s(ins, sizeof ins, c->res->inserted);
	pal__ops_i64s(unk, sizeof unk, c->res->unknown);
	const char *pa[] = { c->actor, c->job_id, c->reason, c->request_id, f, t, n, ex, rows, ins,
			     c->res->unknown ? unk : NULL };
	/* new_effect_instants: the instants with an unknown outcome that
	 * --new-effect ran again (absent when none) */
	return pal__ops_exec(
	    st,
	    "INSERT INTO audit_log (actor, action, scope, reason, details)"
	    " VALUES ($1, 'backfill', 'job:' || $2, $3, jsonb_strip_nulls(jsonb_build_object("
	    "  'request_id', $4::text, 'from', to_timestamp($5::bigint),"
	    "  'to', to_timestamp($6::bigint), 'instants', $7::bigint,"
	    "  'excluded', $8::bigint, 'rows', $9::bigint, 'inserted', $10::bigint,"
	    "  'new_effect_instants', $11::bigint)))",
	    11, pa, NULL, err, errlen);
}

int pal_ops_backfill(pal_store *st, const char *job_id, int64_t from, int64_t to, int64_t max,
		     const char *request_id, bool new_effect, const char *actor,
		     const char *reason, pal_backfill_result *res, char *err, size_t errlen)
{
	memset(res, 0, sizeof *res);
	if (to < from) {
		snprintf(err, errlen, "backfill range is empty: --to is before --from");
		return PAL_EINVAL;
	}
	backfill_ctx c = { job_id, request_id, actor, reason, from, to, max, new_effect, res };
	return pal__ops_in_tx(st, backfill_body, &c, err, errlen);
}
