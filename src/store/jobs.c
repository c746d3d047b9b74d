/*
 * jobs.c - reading jobs and plan versions; the cluster's shard count.
 * (Writing versions is apply.c.)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/store.h"
#include "store_int.h"

int pal_store_shard_count(pal_store *st, int default_shards, int *n, char *err, size_t errlen)
{
	char d[16];
	snprintf(d, sizeof d, "%d", default_shards);
	const char *p[] = {d};
	PGresult *r =
	    pal__store_query(st,
			     "INSERT INTO cluster_settings (name, value) VALUES ('shards', $1)"
			     " ON CONFLICT (name) DO NOTHING",
			     1, p, err, errlen);
	if (!r)
		return PAL_EDB;
	PQclear(r);
	r = pal__store_query(st, "SELECT value::int FROM cluster_settings WHERE name = 'shards'", 0,
			     NULL, err, errlen);
	if (!r)
		return PAL_EDB;
	*n = atoi(PQgetvalue(r, 0, 0));
	PQclear(r);
	snprintf(d, sizeof d, "%d", *n);
	r = pal__store_query(
	    st,
	    "INSERT INTO shards (shard_id) SELECT g FROM generate_series(0, $1::int - 1) g"
	    " ON CONFLICT (shard_id) DO NOTHING",
	    1, p, err, errlen);
	if (!r)
		return PAL_EDB;
	PQclear(r);
	return PAL_OK;
}

int pal_store_latest_spec(pal_store *st, const char *job_id, json_t **spec_json, int *version,
			  char *err, size_t errlen)
{
	*spec_json = NULL;
	const char *p[] = {job_id};
	PGresult *r =
	    pal__store_query(st,
			     "SELECT v.version, v.spec::text FROM jobs j JOIN job_versions v"
			     " ON v.job_id = j.job_id AND v.version = j.latest_version"
			     " WHERE j.job_id = $1",
			     1, p, err, errlen);
	if (!r)
		return PAL_EDB;
	if (PQntuples(r) == 0) {
		PQclear(r);
		return PAL_ENOENT;
	}
	*version = atoi(PQgetvalue(r, 0, 0));
	json_error_t je;
	*spec_json = json_loads(PQgetvalue(r, 0, 1), 0, &je);
	PQclear(r);
	if (!*spec_json) {
		snprintf(err, errlen, "job %s: stored spec is not JSON: %s", job_id, je.text);
		return PAL_EINVAL;
	}
	return PAL_OK;
}

int pal_store_job_anchors(pal_store *st, const char *job_id, int64_t *stored, int64_t *next,
			  char *err, size_t errlen)
{
	const char *p[] = {job_id};
	/* the takeover as the controller computes it (PAL__TAKEOVER_SQL) */
	PGresult *r = pal__store_query(
	    st,
	    "SELECT floor(extract(epoch FROM clock_timestamp()))::bigint,"
	    " floor(extract(epoch FROM v.effective_from))::bigint, " PAL__TAKEOVER_SQL("j", "v", "s")
	    ", " PAL__ACTIVATED_SQL("j")
	    " FROM (SELECT 1) one LEFT JOIN jobs j ON j.job_id = $1"
	    " LEFT JOIN job_versions v ON v.job_id = j.job_id AND v.version = j.latest_version"
	    " LEFT JOIN shards s ON s.shard_id = j.shard",
	    1, p, err, errlen);
	if (!r)
		return PAL_EDB;
	int64_t now = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
	bool active = !strcmp(PQgetvalue(r, 0, 3), "t");
	*next = active ? strtoll(PQgetvalue(r, 0, 2), NULL, 10) : now;
	*stored = PQgetisnull(r, 0, 1) ? *next : strtoll(PQgetvalue(r, 0, 1), NULL, 10);
	PQclear(r);
	return PAL_OK;
}

int pal_store_jobs_json(pal_store *st, const char *job_id, json_t **out, char *err, size_t errlen)
{
	return pal__store_jobs_query(st, job_id, 0, 0, out, err, errlen);
}

int pal__store_jobs_query(pal_store *st, const char *job_id, int after_version, int limit,
			  json_t **out, char *err, size_t errlen)
{
	char a[16], l[16];
	snprintf(a, sizeof a, "%d", after_version);
	snprintf(l, sizeof l, "%d", limit);
	const char *p[] = {job_id, after_version > 0 ? a : NULL, limit > 0 ? l : NULL};
	return pal__store_query_json(
	    st,
	    "SELECT coalesce(json_agg(x ORDER BY x.job_id), '[]')::text FROM ("
	    " SELECT j.job_id, j.tenant, j.resource_group AS \"group\", j.shard,"
	    "  j.latest_version, j.active_version, j.created_at, j.updated_at,"
	    "  " PAL__LABELS_JSON("SELECT l.spec FROM job_versions l WHERE l.job_id = j.job_id"
				  " AND l.version = j.latest_version") " AS labels,"
	    "  (SELECT json_agg(json_build_object('version', v.version, 'digest', v.digest,"
	    "     'cron', v.cron, 'timezone', v.timezone, 'after', " PAL__AFTER_JSON("v.spec") ","
	    "     'partitions', v.partitions,"
	    "     'created_by', v.created_by, 'created_at', v.created_at,"
	    "     'activated_at', v.activated_at,"
	    "     'effective_from', floor(extract(epoch FROM v.effective_from))::bigint)"
	    "    ORDER BY v.version)"
	    "   FROM (SELECT * FROM job_versions w WHERE w.job_id = j.job_id"
	    "    AND ($2::int IS NULL OR w.version > $2::int) ORDER BY w.version LIMIT $3::int) v)"
	    "   AS versions"
	    " FROM jobs j WHERE $1::text IS NULL OR j.job_id = $1) x",
	    3, p, out, err, errlen);
}

/* ---- graceful handoff (sql/014_shard_handoff.sql) ------------------------- */

/* One row of pal_store_handoff_write: 0 rows when the shard moved on. */
static int handoff_row(pal_store *st, const char *node, const pal_handoff *h, char *err,
		       size_t errlen)
{
	char s[16], e[24], w[24], hz[24];
	snprintf(s, sizeof s, "%d", h->shard);
	snprintf(e, sizeof e, "%lld", (long long)h->epoch);
	snprintf(w, sizeof w, "%lld", (long long)h->watermark);
	snprintf(hz, sizeof hz, "%lld", (long long)h->horizon);
	pal_pgarr a;
	pal__pgarr_init(&a);
	for (size_t i = 0; i < h->n_ids; i++)
		pal__pgarr_text(&a, h->ids[i]);
	char *arr = pal__pgarr_end(&a);
	const char *p[] = {s, e, node, w, hz, arr};
	/* Fenced: only while the shard still has our epoch and the watermark
	 * our planner's state belongs to. */
	PGresult *r = pal__store_query(
	    st,
	    "INSERT INTO shard_handoffs (shard_id, epoch, leader, watermark, horizon, job_ids)"
	    " SELECT shard_id, $2, $3, watermark, to_timestamp($5::bigint), $6::text[] FROM shards"
	    " WHERE shard_id = $1 AND epoch = $2 AND leader = $3"
	    " AND watermark = to_timestamp($4::bigint)"
	    " ON CONFLICT (shard_id) DO UPDATE SET epoch = excluded.epoch,"
	    " leader = excluded.leader, watermark = excluded.watermark,"
	    " horizon = excluded.horizon, job_ids = excluded.job_ids,"
	    " written_at = clock_timestamp()"
	    " RETURNING 1",
	    6, p, err, errlen);
	g_free(arr);
	if (!r)
		return PAL_EDB;
	int rows = PQntuples(r);
	PQclear(r);
	if (!rows) {
		snprintf(err, errlen, "shard %d: no longer at epoch %s and watermark %s", h->shard,
			 e, w);
		return PAL_ESTALE;
	}
	return PAL_OK;
}

int pal_store_handoff_write(pal_store *st, const char *node, const pal_handoff *rows, size_t n,
			    int *rcs, char *err, size_t errlen)
{
	for (size_t i = 0; i < n; i++)
		rcs[i] = PAL_EDB;
	if (!n)
		return PAL_OK;
	/* A row is a hint: lost in a crash, its successor loads the whole
	 * shard.  So the rows of all shards go in one transaction that does
	 * not wait for its WAL flush (the draining node resigns right after,
	 * and each synchronous commit here cost it a disk flush first). */
	int rc = pal__store_exec(st, "BEGIN", err, errlen);
	if (!rc)
		rc = pal__store_exec(st, "SET LOCAL synchronous_commit TO off", err, errlen);
	for (size_t i = 0; !rc && i < n; i++) {
		char e[512];
		rcs[i] = handoff_row(st, node, &rows[i], e, sizeof e);
		if (rcs[i] == PAL_EDB) {
			snprintf(err, errlen, "%s", e);
			rc = PAL_EDB;
		}
	}
	if (!rc)
		rc = pal__store_exec(st, "COMMIT", err, errlen);
	if (rc) {
		pal__store_rollback(st);
		for (size_t i = 0; i < n; i++)
			rcs[i] = PAL_EDB;
	}
	return rc;
}

int pal_store_handoff_read(pal_store *st, const int *shards, size_t n, int64_t *horizons,
			   char ***ids, char *err, size_t errlen)
{
	for (size_t i = 0; i < n; i++) {
		horizons[i] = PAL_NO_TIME;
		ids[i] = NULL;
	}
	if (!n)
		return PAL_OK;
	char *arr = pal__pgarr_ints(shards, n);
	const char *p[] = {arr};
	/* Usable only while nobody planned the shard since it was written: the
	 * row speaks about the instants after that watermark. */
	PGresult *r =
	    pal__store_query(st,
			     "SELECT h.shard_id, floor(extract(epoch FROM h.horizon))::bigint, u.id"
			     " FROM shard_handoffs h JOIN shards s ON s.shard_id = h.shard_id"
			     " LEFT JOIN LATERAL unnest(h.job_ids) u(id) ON true"
			     " WHERE h.shard_id = ANY($1::int[]) AND s.watermark = h.watermark"
			     " ORDER BY h.shard_id",
			     1, p, err, errlen);
	g_free(arr);
	if (!r)
		return PAL_EDB;
	GPtrArray *cur = NULL;
	size_t ci = n;
	for (int row = 0; row <= PQntuples(r); row++) {
		int s = row < PQntuples(r) ? atoi(PQgetvalue(r, row, 0)) : -1;
		if (cur && (row == PQntuples(r) || shards[ci] != s)) {
			g_ptr_array_add(cur, NULL);
			ids[ci] = (char **)g_ptr_array_free(cur, FALSE);
			cur = NULL;
		}
		if (row == PQntuples(r))
			break;
		if (!cur) {
			for (ci = 0; ci < n && shards[ci] != s; ci++)
				;
			if (ci == n)
				continue;
			cur = g_ptr_array_new();
			horizons[ci] = strtoll(PQgetvalue(r, row, 1), NULL, 10);
		}
		if (!PQgetisnull(r, row, 2))
			g_ptr_array_add(cur, g_strdup(PQgetvalue(r, row, 2)));
	}
	PQclear(r);
	return PAL_OK;
}

int pal_store_handoff_clear(pal_store *st, const int *shards, size_t n, char *err, size_t errlen)
{
	if (!n)
		return PAL_OK;
	char *arr = pal__pgarr_ints(shards, n);
	const char *p[] = {arr};
	PGresult *r = pal__store_query(
	    st, "DELETE FROM shard_handoffs WHERE shard_id = ANY($1::int[])", 1, p, err, errlen);
	g_free(arr);
	if (!r)
		return PAL_EDB;
	PQclear(r);
	return PAL_OK;
}

/* A path's row in cluster_settings: name 'zk_nodes_path <path>', value the
 * path, created_at when a node of this release registered under it last
 * said so (refreshed at most every PAL_ZK_PATH_REFRESH_S). */
int pal_store_zk_nodes_path_seen(pal_store *st, const char *path, char *others, size_t otherslen,
				 char *err, size_t errlen)
{
	char fresh[16], live[16];
	snprintf(fresh, sizeof fresh, "%d", PAL_ZK_PATH_REFRESH_S);
	snprintf(live, sizeof live, "%d", PAL_ZK_PATH_LIVE_S);
	const char *p[] = {path, fresh, live};
	PGresult *r = pal__store_query(
	    st,
	    "WITH ins AS (INSERT INTO cluster_settings (name, value)"
	    "  VALUES ('zk_nodes_path ' || $1, $1) ON CONFLICT (name) DO NOTHING RETURNING 1),"
	    " upd AS (UPDATE cluster_settings SET created_at = now()"
	    "  WHERE name = 'zk_nodes_path ' || $1"
	    "   AND created_at < now() - $2::int * interval '1 second' RETURNING 1)"
	    " SELECT string_agg(value, ', ' ORDER BY value) FROM cluster_settings"
	    " WHERE name LIKE 'zk\\_nodes\\_path %' AND value <> $1"
	    "  AND created_at > now() - $3::int * interval '1 second'",
	    3, p, err, errlen);
	if (!r)
		return PAL_EDB;
	snprintf(others, otherslen, "%s", PQgetisnull(r, 0, 0) ? "" : PQgetvalue(r, 0, 0));
	PQclear(r);
	return PAL_OK;
}

int pal_store_zk_nodes_paths(pal_store *st, json_t **out, char *err, size_t errlen)
{
	char live[16];
	snprintf(live, sizeof live, "%d", PAL_ZK_PATH_LIVE_S);
	const char *p[] = {live};
	return pal__store_query_json(
	    st,
	    "SELECT coalesce(json_agg(json_build_object('path', value, 'seen_s_ago',"
	    "  extract(epoch from now() - created_at)::bigint, 'live',"
	    "  created_at > now() - $1::int * interval '1 second') ORDER BY created_at DESC), '[]')"
	    " FROM cluster_settings WHERE name LIKE 'zk\\_nodes\\_path %'",
	    1, p, out, err, errlen);
}
