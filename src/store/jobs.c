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
	const char *p[] = { d };
	PGresult *r = pal__store_query(st,
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
	r = pal__store_query(st,
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
	const char *p[] = { job_id };
	PGresult *r = pal__store_query(st,
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

int pal_store_jobs_json(pal_store *st, const char *job_id, json_t **out, char *err, size_t errlen)
{
	*out = NULL;
	const char *p[] = { job_id };
	PGresult *r = pal__store_query(
		st,
		"SELECT coalesce(json_agg(x ORDER BY x.job_id), '[]')::text FROM ("
		" SELECT j.job_id, j.tenant, j.resource_group AS \"group\", j.shard,"
		"  j.latest_version, j.active_version, j.created_at, j.updated_at,"
		"  (SELECT json_agg(json_build_object('version', v.version, 'digest', v.digest,"
		"     'cron', v.cron, 'timezone', v.timezone, 'partitions', v.partitions,"
		"     'created_by', v.created_by, 'created_at', v.created_at,"
		"     'activated_at', v.activated_at) ORDER BY v.version)"
		"   FROM job_versions v WHERE v.job_id = j.job_id) AS versions"
		" FROM jobs j WHERE $1::text IS NULL OR j.job_id = $1) x",
		1, p, err, errlen);
	if (!r)
		return PAL_EDB;
	json_error_t je;
	*out = json_loads(PQgetvalue(r, 0, 0), 0, &je);
	PQclear(r);
	if (!*out) {
		snprintf(err, errlen, "cannot parse job list: %s", je.text);
		return PAL_EINVAL;
	}
	return PAL_OK;
}
