/*
 * calendars.c - the versions of shared calendars (sql/037_calendars.sql,
 * docs/jobs.md "Calendars").
 *
 * A calendar is versioned like a job: its canonical rules are digested
 * (calendar.h); a digest equal to the latest version's keeps that version,
 * any other makes version n+1, with an audit_log row (calendar.create or
 * calendar.update).  The job versions that name a calendar carry its rules
 * and version in their own spec, so nothing here is read while planning:
 * apply asks for the version before it digests the jobs, and for the
 * stored jobs that carry another version (its followers, which apply gives
 * the new one), `plan diff` asks what the version would be and who would
 * follow, `palisade calendars` and the API list them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "store_int.h"

int pal__store_calendar_version(pal_store *st, pal_calendar *c, bool write, const char *actor,
				const char *reason, bool *created, char *err, size_t errlen)
{
	char hex[65];
	*created = false;
	if (pal_calendar_digest(c, hex))
		return PAL_ENOMEM;
	const char *p1[] = {c->name};
	/* two applies of the same calendar: the second waits, then sees the
	 * first's version (the lock ends with the transaction) */
	if (write) {
		PGresult *l = pal__store_query(
		    st,
		    "SELECT pg_advisory_xact_lock(hashtextextended('palisade.calendar:' || $1, 0))",
		    1, p1, err, errlen);
		if (!l)
			return PAL_EDB;
		PQclear(l);
	}
	PGresult *r =
	    pal__store_query(st,
			     "SELECT version, digest FROM calendar_versions WHERE name = $1"
			     " ORDER BY version DESC LIMIT 1",
			     1, p1, err, errlen);
	if (!r)
		return PAL_EDB;
	int latest = PQntuples(r) ? atoi(PQgetvalue(r, 0, 0)) : 0;
	bool same = latest && !strcmp(PQgetvalue(r, 0, 1), hex);
	PQclear(r);
	c->version = same ? latest : latest + 1;
	if (same || !write)
		return PAL_OK;
	json_t *j = pal_calendar_canonical(c, false);
	char *spec = j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(j);
	if (!spec)
		return PAL_ENOMEM;
	char v[16];
	snprintf(v, sizeof v, "%d", c->version);
	const char *p[] = {c->name, v, hex, spec, actor ? actor : "", reason ? reason : ""};
	r = pal__store_query(
	    st,
	    "WITH ins AS (INSERT INTO calendar_versions (name, version, digest, spec, created_by)"
	    "  VALUES ($1, $2::int, $3, $4::jsonb, $5))"
	    " INSERT INTO audit_log (actor, action, scope, reason, details)"
	    " VALUES ($5, CASE WHEN $2::int = 1 THEN 'calendar.create' ELSE 'calendar.update' END,"
	    "  'calendar:' || $1, nullif($6, ''),"
	    "  jsonb_build_object('version', $2::int, 'digest', $3))",
	    6, p, err, errlen);
	free(spec);
	if (!r)
		return PAL_EDB;
	PQclear(r);
	*created = true;
	return PAL_OK;
}

int pal_store_calendar_versions(pal_store *st, pal_calendar *cals, size_t n, char *err,
				size_t errlen)
{
	for (size_t i = 0; i < n; i++) {
		bool created;
		int rc = pal__store_calendar_version(st, &cals[i], false, NULL, NULL, &created, err,
						     errlen);
		if (rc)
			return rc;
	}
	return PAL_OK;
}

// clang-format off
/* The calendars at their latest version, by name: $1 only this one, $2 a
 * text[] of tenants (NULL: all) whose live jobs must name a calendar for
 * it to be listed (and only theirs are), $3 after this name, $4 at most
 * this many.  The jobs are those whose latest version names the calendar,
 * with the calendar version it carries, by id: after $5, at most $6 of
 * them.  Each row's "_c" is its cursor. */
static const char CALENDARS_SQL[] =
    "SELECT coalesce(json_agg(x ORDER BY x.name), '[]')::text FROM ("
    " SELECT c.name, c.version AS latest_version, c.digest, c.spec AS rules,"
    "  c.created_by, c.created_at, c.name AS _c,"
    "  (SELECT coalesce(json_agg(json_build_object('job', f.job_id, 'version', f.version,"
    "     'calendar_version', f.calendar_version) ORDER BY f.job_id), '[]')"
    "   FROM (SELECT v.job_id, v.version, (e->>'version')::int AS calendar_version"
    "    FROM jobs j JOIN job_versions v ON v.job_id = j.job_id"
    "     AND v.version = j.latest_version,"
    "     jsonb_array_elements(coalesce(v.spec #> '{schedule,calendars}', '[]')) e"
    "    WHERE e->>'name' = c.name AND j.retired_at IS NULL"
    "     AND ($2::text[] IS NULL OR j.tenant = ANY ($2::text[]))"
    "     AND ($5::text IS NULL OR v.job_id > $5)"
    "    ORDER BY v.job_id LIMIT $6::int) f) AS jobs"
    " FROM calendar_versions c"
    " WHERE c.version = (SELECT max(w.version) FROM calendar_versions w WHERE w.name = c.name)"
    "  AND ($1::text IS NULL OR c.name = $1) AND ($3::text IS NULL OR c.name > $3)"
    "  AND ($2::text[] IS NULL OR EXISTS (SELECT 1 FROM jobs j JOIN job_versions v"
    "   ON v.job_id = j.job_id AND v.version = j.latest_version"
    "   WHERE j.retired_at IS NULL AND j.tenant = ANY ($2::text[])"
    "    AND v.cron LIKE '@calendars(%'"
    "    AND v.spec #> '{schedule,calendars}' @> jsonb_build_array(jsonb_build_object('name', c.name))))"
    " ORDER BY c.name LIMIT $4::int) x";
// clang-format on

int pal__store_calendars_query(pal_store *st, const char *name, const char *tenants,
			       const char *after, int limit, const char *jobs_after, int jobs_limit,
			       json_t **out, char *err, size_t errlen)
{
	char l[16], jl[16];
	snprintf(l, sizeof l, "%d", limit);
	snprintf(jl, sizeof jl, "%d", jobs_limit);
	const char *p[] = {
	    name, tenants, after, limit > 0 ? l : NULL, jobs_after, jobs_limit > 0 ? jl : NULL};
	return pal__store_query_json(st, CALENDARS_SQL, 6, p, out, err, errlen);
}

int pal_store_calendars_json(pal_store *st, const char *name, json_t **out, char *err,
			     size_t errlen)
{
	return pal__store_whole_list(
	    pal__store_calendars_query(st, name, NULL, NULL, 0, NULL, 0, out, err, errlen), out);
}

/* The latest versions that name calendars (the cron column's prefix) are
 * read only when there are calendars to compare with. */
#define FOLLOWERS_SQL                                                                              \
	"SELECT j.job_id, v.spec::text, v.notify_own"                                              \
	" FROM jobs j JOIN job_versions v ON v.job_id = j.job_id AND v.version = j.latest_version" \
	" WHERE j.retired_at IS NULL AND v.cron LIKE '@calendars(%'"                               \
	"  AND EXISTS (SELECT 1 FROM jsonb_array_elements(v.spec #> '{schedule,calendars}') e"     \
	"   JOIN unnest($1::text[], $2::int[]) AS c(name, version) ON e->>'name' = c.name"         \
	"   WHERE (e->>'version')::int <> c.version)"                                              \
	" ORDER BY j.job_id COLLATE \"C\""

/* With LOCK, the live jobs of which any version names one of the
 * calendars ($1) are locked first, by their own statement: FOLLOWERS_SQL
 * with FOR UPDATE, waiting for a job another transaction was giving a new
 * version, rechecked only the job row and dropped the job (its version row
 * was the one of before), which then kept the calendar's old rules.  The
 * followers are read after the locks, by a statement that sees that
 * version. */
#define FOLLOWERS_LOCK_SQL                                                                         \
	"SELECT j.job_id FROM jobs j WHERE j.retired_at IS NULL AND EXISTS (SELECT 1"              \
	"  FROM job_versions v, jsonb_array_elements(v.spec #> '{schedule,calendars}') e"          \
	"  WHERE v.job_id = j.job_id AND v.cron LIKE '@calendars(%'"                               \
	"   AND e->>'name' = ANY ($1::text[]))"                                                    \
	" ORDER BY j.job_id COLLATE \"C\" FOR UPDATE OF j"

PGresult *pal__store_calendar_followers(pal_store *st, const pal_calendar *const *cals, size_t n,
					bool lock, char *err, size_t errlen)
{
	pal_pgarr names, vers;
	pal__pgarr_init(&names);
	pal__pgarr_init(&vers);
	for (size_t i = 0; i < n; i++) {
		pal__pgarr_text(&names, cals[i]->name);
		pal__pgarr_i64(&vers, cals[i]->version);
	}
	char *p[] = {pal__pgarr_end(&names), pal__pgarr_end(&vers)};
	PGresult *r =
	    lock ? pal__store_query(st, FOLLOWERS_LOCK_SQL, 1, (const char *const *)p, err, errlen)
		 : NULL;
	if (!lock || r) {
		PQclear(r);
		r = pal__store_query(st, FOLLOWERS_SQL, 2, (const char *const *)p, err, errlen);
	}
	g_free(p[0]);
	g_free(p[1]);
	return r;
}

int pal_store_calendar_followers_json(pal_store *st, const pal_calendar *cals, size_t n,
				      json_t **out, char *err, size_t errlen)
{
	*out = NULL;
	const pal_calendar **v = calloc(n ? n : 1, sizeof *v);
	if (!v) {
		snprintf(err, errlen, "out of memory");
		return PAL_ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		v[i] = &cals[i];
	PGresult *r = n ? pal__store_calendar_followers(st, v, n, false, err, errlen) : NULL;
	free(v);
	if (n && !r)
		return PAL_EDB;
	json_t *a = json_array();
	for (int row = 0; r && row < PQntuples(r); row++) {
		json_t *spec = json_loads(PQgetvalue(r, row, 1), 0, NULL);
		json_array_append_new(
		    a,
		    json_pack("{s:s, s:o?, s:s?}", "job_id", PQgetvalue(r, row, 0), "spec", spec,
			      "notify_own", PQgetisnull(r, row, 2) ? NULL : PQgetvalue(r, row, 2)));
	}
	PQclear(r);
	*out = a;
	return PAL_OK;
}
