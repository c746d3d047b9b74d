/*
 * apply.c - store job specs as immutable plan versions (DESIGN.md §4).
 *
 * One transaction for the whole set.  Each job row is locked
 * (INSERT ... ON CONFLICT DO NOTHING, then SELECT ... FOR UPDATE) so that
 * concurrent appliers serialise per job; a version is added only when the
 * canonical digest differs from the latest version's, so re-applying is a
 * no-op and history is never rewritten.  Every created or updated job gets an
 * audit_log row and a NOTIFY on channel palisade_apply (delivered on commit).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/store.h"
#include "store_int.h"
#include "palisade/callpolicy.h"

static const char *misfire_name(pal_misfire_policy p)
{
	static const char *const names[] = { "fire_all", "fire_once", "skip", "manual" };
	return names[p];
}

static const char *overlap_name(pal_overlap_policy p)
{
	static const char *const names[] = { "allow", "forbid", "queue", "replace" };
	return names[p];
}

/* Insert version V of spec S (canonical JSON CANON, digest HEX). */
static int insert_version(pal_store *st, const pal_job_spec *s, int v, const char *canon,
			  const char *hex, const char *actor, char *err, size_t errlen)
{
	char ver[16], cw[24], mc[16], pr[16], dl[24], mif[16], parts[16];
	snprintf(ver, sizeof ver, "%d", v);
	snprintf(cw, sizeof cw, "%lld", (long long)s->catchup_window_ms);
	snprintf(mc, sizeof mc, "%d", s->max_catchup);
	snprintf(pr, sizeof pr, "%d", s->priority);
	snprintf(dl, sizeof dl, "%lld", (long long)s->deadline_ms);
	snprintf(mif, sizeof mif, "%d", s->max_in_flight);
	snprintf(parts, sizeof parts, "%d", s->partitions);
	char host[256];
	pal_url_host(s->url, host, sizeof host);
	const char *p[] = { s->id,	       ver, canon, hex, s->cron, s->timezone,
			    misfire_name(s->misfire), cw,  mc,	  overlap_name(s->overlap),
			    pr,	       dl,  mif,   s->idempotency_key,
			    s->group,  parts, actor, host };
	PGresult *r = pal__store_query(
		st,
		"INSERT INTO job_versions (job_id, version, spec, digest, cron, timezone,"
		" misfire_policy, catchup_window_ms, max_catchup, overlap_policy, priority,"
		" deadline_ms, max_in_flight, idempotency_key, retry, resource_group, target,"
		" partitions, created_by, target_host)"
		" VALUES ($1, $2, $3::jsonb, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14,"
		" $3::jsonb -> 'retry', $15, $3::jsonb -> 'target', $16, $17, $18)",
		18, p, err, errlen);
	if (!r)
		return PAL_EDB;
	PQclear(r);
	return PAL_OK;
}

/* Apply one job inside the open transaction. */
static int apply_job(pal_store *st, const pal_job_spec *s, int nshards, const char *actor,
		     const char *reason, pal_apply_result *res, char *err, size_t errlen)
{
	char *canon = NULL, hex[65], shard[16];
	int rc = pal_job_spec_digest(s, &canon, hex);
	if (rc) {
		snprintf(err, errlen, "job %s: cannot canonicalise spec: %s", s->id, pal_strerror(rc));
		return rc;
	}
	snprintf(shard, sizeof shard, "%d", pal_job_shard(s->id, nshards));
	snprintf(res->job_id, sizeof res->job_id, "%s", s->id);

	const char *p1[] = { s->id, s->tenant, s->group, shard };
	PGresult *r = pal__store_query(st,
				       "INSERT INTO jobs (job_id, tenant, resource_group, shard, latest_version)"
				       " VALUES ($1, $2, $3, $4, 0) ON CONFLICT (job_id) DO NOTHING",
				       4, p1, err, errlen);
	if (!r)
		goto fail;
	PQclear(r);
	const char *p2[] = { s->id };
	/* Lock first, read the latest digest in a second statement.  In one
	 * statement (a join FOR UPDATE OF jobs) a concurrent apply that commits
	 * while we wait for the lock makes PostgreSQL re-check only the locked
	 * row: the new latest version's digest is not in our snapshot, the
	 * join comes back empty, and a second version with the same digest
	 * would be created.  The second statement takes a fresh snapshot
	 * (READ COMMITTED) that sees the version committed before the lock. */
	r = pal__store_query(st, "SELECT latest_version FROM jobs WHERE job_id = $1 FOR UPDATE", 1,
			     p2, err, errlen);
	if (!r)
		goto fail;
	int latest = atoi(PQgetvalue(r, 0, 0));
	PQclear(r);
	char latest_s[16];
	snprintf(latest_s, sizeof latest_s, "%d", latest);
	const char *pd[] = { s->id, latest_s };
	r = pal__store_query(st, "SELECT digest FROM job_versions WHERE job_id = $1 AND version = $2",
			     2, pd, err, errlen);
	if (!r)
		goto fail;
	bool same = PQntuples(r) == 1 && !strcmp(PQgetvalue(r, 0, 0), hex);
	PQclear(r);
	if (same) {
		res->outcome = PAL_APPLY_UNCHANGED;
		res->version = latest;
		free(canon);
		return PAL_OK;
	}
	int v = latest + 1;
	if (insert_version(st, s, v, canon, hex, actor, err, errlen))
		goto fail;
	char ver[16];
	snprintf(ver, sizeof ver, "%d", v);
	const char *p3[] = { s->id, ver, s->tenant, s->group };
	r = pal__store_query(st,
			     "UPDATE jobs SET latest_version = $2, tenant = $3, resource_group = $4,"
			     " updated_at = now() WHERE job_id = $1",
			     4, p3, err, errlen);
	if (!r)
		goto fail;
	PQclear(r);
	const char *p4[] = { actor, v == 1 ? "job.create" : "job.update", s->id, reason, ver, hex };
	r = pal__store_query(st,
			     "INSERT INTO audit_log (actor, action, scope, reason, details)"
			     " VALUES ($1, $2, 'job:' || $3, $4,"
			     " jsonb_build_object('version', $5::int, 'digest', $6::text))",
			     6, p4, err, errlen);
	if (!r)
		goto fail;
	PQclear(r);
	r = pal__store_query(st, "SELECT pg_notify('palisade_apply', $1)", 1, p2, err, errlen);
	if (!r)
		goto fail;
	PQclear(r);
	res->outcome = v == 1 ? PAL_APPLY_CREATED : PAL_APPLY_UPDATED;
	res->version = v;
	free(canon);
	return PAL_OK;
fail:
	free(canon);
	return PAL_EDB;
}

int pal_store_apply(pal_store *st, const pal_jobset *set, const char *actor, const char *reason,
		    int default_shards, pal_apply_result *results, char *err, size_t errlen)
{
	int nshards;
	int rc = pal_store_shard_count(st, default_shards, &nshards, err, errlen);
	if (rc)
		return rc;
	if (pal__store_exec(st, "BEGIN", err, errlen))
		return PAL_EDB;
	for (size_t i = 0; i < set->n; i++) {
		rc = apply_job(st, &set->jobs[i], nshards, actor, reason ? reason : "", &results[i],
			       err, errlen);
		if (rc) {
			pal__store_rollback(st);
			return rc;
		}
	}
	if (pal__store_exec(st, "COMMIT", err, errlen)) {
		pal__store_rollback(st);
		return PAL_EDB;
	}
	return PAL_OK;
}

