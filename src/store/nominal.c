/*
 * nominal.c - the nominal instant of triggers written without it
 * (nominal_at, sql/045_nominal_at.sql; docs/migrating.md, "Spread and
 * jitter at a boundary").
 *
 * A 0.3.0 node plans a job with `spread` or `jitter` as this release does
 * (the same offsets: scheduled_at moved) but writes no nominal_at, and a
 * dependent job's trigger planned after such a row copies its missing
 * nominal_at.  A boundary judged on coalesce(nominal_at, scheduled_at)
 * would read the moved instant for those rows.  So before `shadow`,
 * `cutover` and `rollback` judge a scope (src/store/shadow.c), its open
 * schedule triggers of moving versions (the version's schedule text names
 * spread= or jitter=) with nominal_at NULL are given the instant this
 * release's planner writes: pal_schedule_nominal() of their version's
 * schedule, anchored at its activation as the planner anchors it; then its
 * open dependent triggers get their first upstream's.  Only nominal_at is
 * written, and only where it differs from scheduled_at (NULL already means
 * "not moved"); the state stays the door's.  While a 0.3.0 node is live it
 * keeps planning such rows and judging them on the moved instant, so the
 * commands refuse a scope with such a job then (pal_boundary_check_nodes).
 */
#include <glib.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/cron.h"
#include "palisade/planbatch.h"
#include "palisade/schedule.h"
#include "palisade/shadow.h"
#include "ops_int.h"

/* A job version with spread or jitter (V: job_versions) */
#define MOVES(v) v ".cron ~ '@palisade;[^ ]*(spread|jitter)='"

/* The states of a trigger not finished: the ones a boundary judges. */
#define OPEN_STATES                                                                                \
	"('pending', 'retry_wait', 'paused', 'running', 'pausing', 'cancelling', 'unknown',"       \
	" 'manual', 'shadow')"

/* Rows without nominal_at of a version whose schedule moves its instants,
 * grouped by version; WHERE: more conditions on t. */
#define MISSING_SQL(where)                                                                         \
	"SELECT t.job_id, t.version, floor(extract(epoch FROM v.effective_from))::bigint,"         \
	" CASE WHEN v.cron LIKE '@calendars(%' THEN substr(v.cron, strpos(v.cron, ') ') + 2)"      \
	"  ELSE v.cron END, v.timezone, v.plan_dst,"                                               \
	" floor(extract(epoch FROM v.plan_start::timestamptz))::bigint,"                           \
	" floor(extract(epoch FROM v.plan_end::timestamptz))::bigint,"                             \
	" array_agg(t.id)::text, array_agg(floor(extract(epoch FROM "                              \
	"t.scheduled_at))::bigint)::text"                                                          \
	" FROM triggers t JOIN job_versions v ON v.job_id = t.job_id AND v.version = t.version"    \
	" WHERE t.nominal_at IS NULL AND t.request_id IS NULL"                                     \
	"  AND t.source IN ('schedule', 'catchup')"                                                \
	"  AND " MOVES("v") " AND " where " GROUP BY 1, 2, 3, 4, 5, 6, 7, 8"

/* The next number of the array literal at *S ("{1,2}"), advancing *S. */
static bool next_i64(const char **s, int64_t *v)
{
	while (**s == '{' || **s == ',')
		(*s)++;
	if (**s == '}' || !**s)
		return false;
	char *end;
	*v = strtoll(*s, &end, 10);
	*s = end;
	return true;
}

/* The nominal instants of row I of R into IDS, ATS and NOMS (comma lists
 * the UPDATE reads as arrays); *N counts them. */
static int version_rows(const PGresult *r, int i, GString *ids, GString *ats, GString *noms,
			int64_t *n)
{
	pal_plan_version v = {.version = atoi(PQgetvalue(r, i, 1)),
			      .effective_from =
				  PQgetisnull(r, i, 2) ? PAL_NO_TIME : pal__ops_val_i64(r, i, 2),
			      .cron = PQgetvalue(r, i, 3),
			      .timezone = PQgetisnull(r, i, 4) ? NULL : PQgetvalue(r, i, 4),
			      .dst = PAL_DST_AUTO,
			      .has_start = !PQgetisnull(r, i, 6),
			      .has_end = !PQgetisnull(r, i, 7),
			      .created_at = PAL_NO_TIME};
	v.start = v.has_start ? pal__ops_val_i64(r, i, 6) : 0;
	v.end = v.has_end ? pal__ops_val_i64(r, i, 7) : 0;
	char e[256];
	if (!PQgetisnull(r, i, 5) && pal_dst_policy_parse(PQgetvalue(r, i, 5), &v.dst, e, sizeof e))
		return PAL_OK; /* a version this binary cannot plan: its rows stay as they are */
	pal_schedule *sc;
	int rc = pal_schedule_acquire(&v, PQgetvalue(r, i, 0), &sc, e, sizeof e);
	if (rc)
		return rc == PAL_ENOMEM ? rc : PAL_OK;
	const char *pi = PQgetvalue(r, i, 8), *pa = PQgetvalue(r, i, 9);
	int64_t id, at;
	while (next_i64(&pi, &id) && next_i64(&pa, &at)) {
		int64_t nom = pal_schedule_nominal(sc, v.effective_from, at);
		if (nom == at)
			continue;
		g_string_append_printf(ids, "%s%" PRId64, ids->len > 1 ? "," : "", id);
		g_string_append_printf(ats, "%s%" PRId64, ats->len > 1 ? "," : "", at);
		g_string_append_printf(noms, "%s%" PRId64, noms->len > 1 ? "," : "", nom);
		(*n)++;
	}
	pal_schedule_release(sc);
	return PAL_OK;
}

/* Fill the rows MISSING_SQL(WHERE) finds over parameters P. */
static int fill(pal_store *st, const char *sql, int np, const char *const *p, int64_t *filled,
		char *err, size_t errlen)
{
	*filled = 0;
	PGresult *r = pal__store_query(st, sql, np, p, err, errlen);
	if (!r)
		return PAL_EDB;
	GString *ids = g_string_new("{"), *ats = g_string_new("{"), *noms = g_string_new("{");
	int64_t n = 0;
	int rc = PAL_OK;
	for (int i = 0; !rc && i < PQntuples(r); i++)
		rc = version_rows(r, i, ids, ats, noms, &n);
	PQclear(r);
	if (rc)
		snprintf(err, errlen, "out of memory");
	if (!rc && n) {
		g_string_append_c(ids, '}');
		g_string_append_c(ats, '}');
		g_string_append_c(noms, '}');
		const char *pu[] = {ids->str, ats->str, noms->str};
		rc = pal__ops_exec(
		    st,
		    "UPDATE triggers t SET nominal_at = to_timestamp(u.n)"
		    " FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) u(id, a, n)"
		    " WHERE t.id = u.id AND t.scheduled_at = to_timestamp(u.a)"
		    "  AND t.nominal_at IS NULL",
		    3, pu, filled, err, errlen);
	}
	g_string_free(ids, TRUE);
	g_string_free(ats, TRUE);
	g_string_free(noms, TRUE);
	return rc;
}

/* The open dependent triggers (`after:`) of the scope ($1, $2) without
 * nominal_at: palisade_plan_after gives one its first upstream's
 * nominal_at at its instant, NULL for an upstream row a 0.3.0 node wrote.
 * D: the trigger, DV: its version; JOIN: more joins. */
#define DEPENDENT_FROM(join)                                                                       \
	" FROM triggers d JOIN job_versions dv ON dv.job_id = d.job_id AND dv.version = "          \
	"d.version" join                                                                           \
	" WHERE d.nominal_at IS NULL AND d.request_id IS NULL AND d.source = 'schedule'"           \
	"  AND d.state IN " OPEN_STATES " AND dv.spec ? 'after' AND " IN_SCOPE("d")

int pal__store_fill_nominal_scope(pal_store *st, const char *kind, const char *name,
				  int64_t *filled, char *err, size_t errlen)
{
	const char *p[] = {kind, name ? name : ""};
	int64_t up = 0, dep = 0;
	/* the scope's own rows, then the first upstreams' rows (in any
	 * state: one that finished planned the dependent) at the instants
	 * of the scope's dependent rows without it, then those from them */
	int rc = fill(st, MISSING_SQL("t.state IN " OPEN_STATES " AND " IN_SCOPE("t")), 2, p,
		      filled, err, errlen);
	if (!rc)
		rc =
		    fill(st,
			 MISSING_SQL("t.id IN (SELECT u.id" DEPENDENT_FROM(
			     " JOIN triggers u ON u.job_id = dv.spec -> 'after' -> 0 ->> 'job'"
			     "  AND u.scheduled_at = d.scheduled_at AND u.request_id IS NULL") ")"),
			 2, p, &up, err, errlen);
	if (!rc)
		rc = pal__ops_exec(
		    st,
		    "UPDATE triggers t SET nominal_at = x.nom FROM (SELECT d.id,"
		    "  d.scheduled_at, (SELECT max(u.nominal_at) FROM triggers u"
		    "   WHERE u.job_id = dv.spec -> 'after' -> 0 ->> 'job'"
		    "    AND u.scheduled_at = d.scheduled_at AND u.request_id IS NULL) AS "
		    "nom" DEPENDENT_FROM(
			"") ") x"
			    " WHERE x.nom IS NOT NULL AND t.id = x.id"
			    "  AND t.scheduled_at = x.scheduled_at AND t.nominal_at IS NULL",
		    2, p, &dep, err, errlen);
	*filled += dep;
	return rc;
}

int pal_store_scope_moving_job(pal_store *st, const pal_scope *sc, char *job, size_t len, char *err,
			       size_t errlen)
{
	const char *p[] = {pal__ops_scope_kind(sc->kind), sc->name ? sc->name : ""};
	PGresult *r = pal__store_query(
	    st,
	    "SELECT t.job_id, CASE WHEN " MOVES(
		"v") " THEN NULL"
		     "  ELSE v.spec -> 'after' -> 0 ->> 'job' END FROM jobs t JOIN job_versions v "
		     "ON v.job_id = t.job_id"
		     "  AND v.version >= coalesce(t.active_version, t.latest_version)"
		     " WHERE t.retired_at IS NULL AND " IN_SCOPE("t") " AND (" MOVES(
			 "v") "  OR EXISTS (SELECT 1 FROM jobs uj JOIN job_versions uv ON "
			      "uv.job_id = uj.job_id"
			      "   AND uv.version >= coalesce(uj.active_version, uj.latest_version)"
			      "   WHERE uj.job_id = v.spec -> 'after' -> 0 ->> 'job' AND " MOVES(
				  "uv") "))"
					" LIMIT 1",
	    2, p, err, errlen);
	if (!r)
		return PAL_EDB;
	if (!PQntuples(r))
		snprintf(job, len, "%s", "");
	else if (PQgetisnull(r, 0, 1))
		snprintf(job, len, "%s", PQgetvalue(r, 0, 0));
	else
		snprintf(job, len, "%s, after %s,", PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 1));
	PQclear(r);
	return PAL_OK;
}
