/*
 * depends.c - the SQL of dependencies between jobs (`after:`): apply's
 * view of the stored graph, the controller's planning call, the console's
 * links and verify's check (docs/controller.md, "Dependencies").  The
 * planning itself is one SQL function, palisade_plan_after
 * (sql/functions/), so that a tick's decisions, rows and watermark are one
 * statement's work.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/aftergraph.h"
#include "palisade/store.h"
#include "store_int.h"

int pal_store_after_stored(pal_store *st, const char *const *names, size_t n, const char *tenants,
			   json_t **out, char *err, size_t errlen)
{
	pal_pgarr a;

	pal__pgarr_init(&a);
	for (size_t i = 0; i < n; i++)
		pal__pgarr_text(&a, names[i]);
	char *arr = pal__pgarr_end(&a);
	const char *p[] = {arr, tenants};
	/* two halves so that each uses its index: the named jobs by key, the
	 * dependent ones by the partial index job_versions_after */
	int rc = pal__store_query_json(
	    st,
	    "SELECT coalesce(json_agg(json_build_array(x.job_id, x.ups)), '[]')::text FROM ("
	    " SELECT j.job_id, coalesce((SELECT json_agg(e ->> 'job')"
	    "   FROM jsonb_array_elements(v.spec -> 'after') e), '[]') AS ups"
	    "  FROM jobs j JOIN job_versions v ON v.job_id = j.job_id"
	    "   AND v.version = j.latest_version"
	    "  WHERE j.retired_at IS NULL AND j.job_id = ANY($1::text[])"
	    "   AND ($2::text[] IS NULL OR j.tenant = ANY($2::text[]))"
	    " UNION ALL"
	    " SELECT j.job_id, coalesce((SELECT json_agg(e ->> 'job')"
	    "   FROM jsonb_array_elements(v.spec -> 'after') e), '[]')"
	    "  FROM job_versions v JOIN jobs j ON j.job_id = v.job_id"
	    "   AND j.latest_version = v.version"
	    "  WHERE v.spec ? 'after' AND j.retired_at IS NULL"
	    "   AND ($2::text[] IS NULL OR j.tenant = ANY($2::text[]))) x",
	    2, p, out, err, errlen);
	g_free(arr);
	return rc;
}

static void add_name(void *arg, const char *name)
{
	g_ptr_array_add(arg, (gpointer)name);
}

int pal_store_after_graph_stored(pal_store *st, pal_after_graph *g, const char *tenants, char *err,
				 size_t errlen)
{
	GPtrArray *names = g_ptr_array_new();
	json_t *stored = NULL, *row;
	size_t i;

	pal_after_graph_foreach_upstream(g, add_name, names);
	int rc = pal_store_after_stored(st, (const char *const *)names->pdata, names->len, tenants,
					&stored, err, errlen);
	g_ptr_array_free(names, TRUE);
	json_array_foreach(stored, i, row)
	{
		json_t *ups = json_array_get(row, 1), *u;
		const char **v = calloc(json_array_size(ups) + 1, sizeof *v);
		size_t k;

		if (!v) {
			rc = PAL_ENOMEM;
			break;
		}
		json_array_foreach(ups, k, u) v[k] = json_string_value(u);
		rc = pal_after_graph_add_stored(g, json_string_value(json_array_get(row, 0)), v,
						json_array_size(ups));
		free(v);
		if (rc)
			break;
	}
	json_decref(stored);
	if (rc == PAL_ENOMEM)
		snprintf(err, errlen, "out of memory");
	return rc;
}

int pal_store_plan_after(pal_store *st, int shard, int64_t epoch, int *jobs, int64_t *planned,
			 int64_t *misfired, char *err, size_t errlen)
{
	char s[16], e[24];
	snprintf(s, sizeof s, "%d", shard);
	snprintf(e, sizeof e, "%" PRId64, epoch);
	const char *p[] = {s, e};
	PGresult *r = pal__store_query(
	    st, "SELECT fenced, jobs, planned, misfired FROM palisade_plan_after($1, $2)", 2, p,
	    err, errlen);
	if (!r)
		return PAL_EDB;
	if (PQntuples(r) != 1) {
		PQclear(r);
		snprintf(err, errlen, "palisade_plan_after: no row");
		return PAL_EDB;
	}
	bool fenced = PQgetvalue(r, 0, 0)[0] == 't';
	*jobs = atoi(PQgetvalue(r, 0, 1));
	*planned = strtoll(PQgetvalue(r, 0, 2), NULL, 10);
	*misfired = strtoll(PQgetvalue(r, 0, 3), NULL, 10);
	PQclear(r);
	if (fenced) {
		snprintf(err, errlen,
			 "shard %d: fenced, epoch %s is no longer current (0 rows); a newer leader "
			 "holds it",
			 shard, e);
		return PAL_ESTALE;
	}
	return PAL_OK;
}

int pal_store_after_links(pal_store *st, const char *job_id, const char *const *tenants,
			  size_t n_tenants, json_t **out, char *err, size_t errlen)
{
	char *scope = pal__pgarr_scope(tenants, n_tenants);
	const char *p[] = {job_id, scope};
	int rc = pal__store_query_json(
	    st,
	    "SELECT json_build_object("
	    " 'upstreams', coalesce((SELECT v.spec -> 'after' FROM jobs j"
	    "   JOIN job_versions v ON v.job_id = j.job_id"
	    "    AND v.version = coalesce(j.active_version, j.latest_version)"
	    "  WHERE j.job_id = $1)::json, '[]'),"
	    " 'downstreams', coalesce((SELECT json_agg(json_build_object('job', v.job_id,"
	    "   'on', e ->> 'on', 'within_ms', (e ->> 'within_ms')::bigint) ORDER BY v.job_id)"
	    "  FROM job_versions v JOIN jobs j ON j.job_id = v.job_id"
	    "   AND v.version = coalesce(j.active_version, j.latest_version)"
	    "  CROSS JOIN jsonb_array_elements(v.spec -> 'after') e"
	    "  WHERE v.spec ? 'after' AND j.retired_at IS NULL AND e ->> 'job' = $1"
	    "   AND ($2::text[] IS NULL OR j.tenant = ANY ($2::text[]))), '[]'),"
	    " 'watermark', (SELECT to_char(w.watermark AT TIME ZONE 'UTC',"
	    "   'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') FROM after_watermarks w WHERE w.job_id = $1)"
	    ")::text",
	    2, p, out, err, errlen);
	g_free(scope);
	return rc;
}

/* The windows of the dependent jobs' versions with `after` (all of them, or
 * JOB_ID's; "$1"): version V owns the instants t with V.effective_from < t
 * <= wto (the next activated version's effective_from) and t < wend (the
 * `end` of V or of a newer version: a retirement), as palisade_plan_after
 * decides them. */
#define AFTER_WINDOWS_SQL                                                                          \
	"SELECT x.job_id, x.version, x.partitions, x.spec -> 'after' AS deps,"                     \
	"  x.spec -> 'after' -> 0 ->> 'job' AS up, x.effective_from AS wfrom, x.wto,"              \
	"  coalesce((SELECT min((y.spec -> 'schedule' ->> 'end')::timestamptz) FROM job_versions y" \
	"    WHERE y.job_id = x.job_id AND y.version >= x.version), 'infinity') AS wend"           \
	" FROM (SELECT v.*, coalesce(lead(v.effective_from) OVER (PARTITION BY v.job_id"           \
	"   ORDER BY v.version), 'infinity') AS wto FROM job_versions v"                           \
	"  WHERE v.effective_from IS NOT NULL AND ($1::text IS NULL OR v.job_id = $1)"             \
	"   AND v.job_id IN (SELECT a.job_id FROM job_versions a WHERE a.spec ? 'after')) x"        \
	" WHERE x.spec ? 'after'"

int pal_store_after_upstream_ranges(pal_store *st, const char *job_id, int64_t from, int64_t to,
				    json_t **out, char *err, size_t errlen)
{
	char f[24], t[24];
	snprintf(f, sizeof f, "%" PRId64, from);
	snprintf(t, sizeof t, "%" PRId64, to);
	const char *p[] = {job_id, f, t};
	/* Per window of a dependent job's version, the window's first
	 * upstream's misfire ranges (not excluded) cut to [FROM, TO], to the
	 * window and to what the dependent job has decided (up to its
	 * watermark). */
	return pal__store_query_json(
	    st,
	    "SELECT coalesce(json_agg(json_build_object('job', b.job_id, 'up', b.up, 'ranges', "
	    "r.ranges)"
	    "  ORDER BY b.job_id, b.version), '[]')::text FROM ("
	    " SELECT v.job_id, v.version, v.up,"
	    "  least(w.watermark, to_timestamp($3::bigint), v.wto,"
	    "   v.wend - interval '1 microsecond') AS hi,"
	    "  greatest(v.wfrom, to_timestamp($2::bigint) - interval '1 microsecond') AS lo"
	    "  FROM (" AFTER_WINDOWS_SQL ") v"
	    "  JOIN after_watermarks w ON w.job_id = v.job_id) b"
	    " CROSS JOIN LATERAL (SELECT json_agg(json_build_array("
	    "   ceil(extract(epoch FROM greatest(m.range_from, b.lo + interval '1 "
	    "microsecond')))::bigint,"
	    "   floor(extract(epoch FROM least(m.range_to, b.hi)))::bigint) ORDER BY m.range_from)"
	    "   AS ranges FROM misfires m WHERE m.job_id = b.up AND m.reason <> 'excluded'"
	    "   AND m.count > 0 AND m.range_to > b.lo AND m.range_from <= b.hi) r"
	    " WHERE b.lo < b.hi AND r.ranges IS NOT NULL",
	    3, p, out, err, errlen);
}

int pal_store_after_missing(pal_store *st, const char *job_id, int64_t from, int64_t to,
			    const char *const *jobs, const int64_t *ats, size_t n, json_t **out,
			    char *err, size_t errlen)
{
	char f[24], t[24];
	pal_pgarr aj, aa;

	snprintf(f, sizeof f, "%" PRId64, from);
	snprintf(t, sizeof t, "%" PRId64, to);
	pal__pgarr_init(&aj);
	pal__pgarr_init(&aa);
	for (size_t i = 0; i < n; i++) {
		pal__pgarr_text(&aj, jobs[i]);
		pal__pgarr_i64(&aa, ats[i]);
	}
	char *sj = pal__pgarr_end(&aj), *sa = pal__pgarr_end(&aa);
	const char *p[] = {job_id, f, t, sj, sa};
	/* Per window of a dependent job's version (the version that owns the
	 * instant decides it, with its own `after` list and partitions):
	 * instants of the window's first upstream whose scheduled triggers all
	 * ended (succeeded, failed, cancelled or skipped: the job has its
	 * trigger or an upstream_* row there, as its `on` says; a row that
	 * ended before its instant is decided once the instant came, the
	 * watermark staying below it until then), and the given instants of
	 * it (JOBS[i]'s upstream at ATS[i], which has no trigger there:
	 * misfired), in the window and up to the job's watermark (decided),
	 * each partition of the version: a trigger or a misfire row.  Not an
	 * instant of it: one at which an
	 * upstream of the version had not been activated yet and has no
	 * trigger (palisade_plan_after passes it), nor one outside every
	 * window with `after` (a retirement, a version with a schedule). */
	int rc = pal__store_query_json(
	    st,
	    "SELECT coalesce(json_agg(json_build_object('job', m.job_id, 'at',"
	    "  floor(extract(epoch FROM m.at))::bigint, 'partition', m.p)"
	    "  ORDER BY m.job_id, m.at, m.p), '[]')::text FROM ("
	    " SELECT b.job_id, u.at, g.p FROM ("
	    "  SELECT v.*, w.watermark FROM (" AFTER_WINDOWS_SQL ") v"
	    "   JOIN after_watermarks w ON w.job_id = v.job_id) b"
	    " CROSS JOIN LATERAL (SELECT t.scheduled_at AS at FROM triggers t"
	    "   WHERE t.job_id = b.up AND t.request_id IS NULL"
	    "    AND t.scheduled_at BETWEEN to_timestamp($2::bigint) AND to_timestamp($3::bigint)"
	    "    AND t.scheduled_at <= b.watermark AND t.scheduled_at > b.wfrom"
	    "    AND t.scheduled_at <= b.wto AND t.scheduled_at < b.wend"
	    "   GROUP BY t.scheduled_at"
	    "   HAVING bool_and(t.state IN ('succeeded', 'failed', 'cancelled', 'skipped'))"
	    "  UNION SELECT to_timestamp(x.s) FROM unnest($4::text[], $5::bigint[]) x(job, s)"
	    "   WHERE x.job = b.job_id AND to_timestamp(x.s) <= b.watermark"
	    "    AND to_timestamp(x.s) > b.wfrom AND to_timestamp(x.s) <= b.wto"
	    "    AND to_timestamp(x.s) < b.wend AND NOT EXISTS (SELECT 1 FROM triggers t"
	    "     WHERE t.job_id = b.up AND t.request_id IS NULL"
	    "      AND t.scheduled_at = to_timestamp(x.s))) u"
	    " CROSS JOIN generate_series(0, b.partitions - 1) g(p)"
	    " WHERE NOT EXISTS (SELECT 1 FROM jsonb_array_elements(b.deps) d(x)"
	    "   WHERE u.at <= (SELECT min(fv.effective_from) FROM job_versions fv"
	    "     WHERE fv.job_id = d.x ->> 'job')"
	    "    AND NOT EXISTS (SELECT 1 FROM triggers t WHERE t.job_id = d.x ->> 'job'"
	    "     AND t.request_id IS NULL AND t.scheduled_at = u.at))"
	    "  AND NOT EXISTS (SELECT 1 FROM triggers t WHERE t.job_id = b.job_id"
	    "   AND t.request_id IS NULL AND t.scheduled_at = u.at AND t.partition = g.p)"
	    "  AND NOT EXISTS (SELECT 1 FROM misfires m WHERE m.job_id = b.job_id"
	    "   AND m.range_from <= u.at AND m.range_to >= u.at"
	    "   AND (m.partition IS NULL OR m.partition = g.p))) m",
	    5, p, out, err, errlen);
	g_free(sj);
	g_free(sa);
	return rc;
}
