/*
 * horizoncheck.c - the SQL of a controller's key-horizon check
 * (include/palisade/horizoncheck.h; docs/protocol.md, "How long to keep
 * keys").
 *
 * The scan reads, per latest version of a shard's live jobs, the columns
 * and the few retry/target fields the key horizon depends on (not the
 * whole spec: a shard of 60,000 jobs is one statement of ~60,000 short
 * rows).  Each job's version is one key lookup (the LIMIT keeps the
 * planner from turning it into a join): as a join, a shard's check read all
 * of job_versions with two parallel workers (200,000 jobs: ~95 ms on three
 * processes per shard, 1.6 times the CPU of the lookups, and growing with
 * every shard's jobs, not this one's).  An acquired shard is scanned in
 * slices in job id order (COLLATE "C": the order of strcmp, which the
 * controller's bookkeeping of a slice uses).  The tickets are reconciled
 * in one statement per scan, so that a check after the operator fixed a
 * job (or raised the retention) closes its ticket as surely as a check
 * that finds it opens one.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/horizoncheck.h"
#include "store_int.h"

static int64_t num(const PGresult *r, int row, int col)
{
	return PQgetisnull(r, row, col) ? 0 : strtoll(PQgetvalue(r, row, col), NULL, 10);
}

/* IDS[0..n) as a text[] parameter (g_free), NULL when IDS is NULL: "every job". */
static char *ids_param(const char *const *ids, size_t n)
{
	if (!ids)
		return NULL;
	pal_pgarr a;
	pal__pgarr_init(&a);
	for (size_t i = 0; i < n; i++)
		pal__pgarr_text(&a, ids[i]);
	return pal__pgarr_end(&a);
}

int pal_store_horizon_scan(pal_store *st, int shard, const pal_horizon_scope *scope,
			   pal_horizon_fn fn, void *ctx, size_t *n, char **last, char *err,
			   size_t errlen)
{
	*n = 0;
	if (last)
		*last = NULL;
	if (scope->ids && !scope->n_ids)
		return PAL_OK;
	char s[16], lim[16];
	snprintf(s, sizeof s, "%d", shard);
	snprintf(lim, sizeof lim, "%d", scope->limit);
	char *ia = ids_param(scope->ids, scope->n_ids);
	const char *p[] = { s, ia, scope->after, scope->limit > 0 ? lim : NULL };
	/* The jobs of the scope first, ordered and limited; their versions
	 * joined after (LEFT: a job is counted in its slice even without its
	 * version row, so that a short slice always means the end). */
	PGresult *r = pal__store_query(
		st,
		"SELECT j.job_id, v.version, v.misfire_policy, v.catchup_window_ms, v.deadline_ms,"
		" (v.spec #>> '{retry,max_attempts}')::bigint,"
		" (v.spec #>> '{retry,backoff,max_ms}')::bigint,"
		" (v.spec #>> '{retry,max_age_ms}')::bigint, (v.spec #>> '{target,timeout_ms}')::bigint"
		" FROM (SELECT job_id, latest_version FROM jobs"
		"  WHERE shard = $1::int AND retired_at IS NULL"
		"  AND ($2::text[] IS NULL OR job_id = ANY($2::text[]))"
		"  AND ($3::text IS NULL OR job_id COLLATE \"C\" > $3::text)"
		"  ORDER BY job_id COLLATE \"C\" LIMIT $4::bigint) j"
		" LEFT JOIN LATERAL (SELECT * FROM job_versions v"
		"  WHERE v.job_id = j.job_id AND v.version = j.latest_version LIMIT 1) v ON true"
		" ORDER BY j.job_id COLLATE \"C\", v.version",
		4, p, err, errlen);
	g_free(ia);
	if (!r)
		return PAL_EDB;
	int rc = PAL_OK;
	int nt = PQntuples(r);
	for (int i = 0; !rc && i < nt; i++) {
		(*n)++;
		if (PQgetisnull(r, i, 1))
			continue;
		pal_job_spec sp = { 0 };
		const char *mp = PQgetvalue(r, i, 2);
		int m = 0;
		while (m < 4 && strcmp(mp, pal_misfire_policy_name((pal_misfire_policy)m)))
			m++;
		sp.misfire = m < 4 ? (pal_misfire_policy)m : PAL_MISFIRE_FIRE_ALL; /* the longest */
		sp.catchup_window_ms = num(r, i, 3);
		sp.deadline_ms = num(r, i, 4);
		sp.max_attempts = (int)num(r, i, 5);
		sp.backoff_max_ms = num(r, i, 6);
		sp.max_age_ms = num(r, i, 7);
		sp.timeout_ms = num(r, i, 8);
		rc = fn(ctx, PQgetvalue(r, i, 0), atoi(PQgetvalue(r, i, 1)), &sp);
	}
	if (!rc && last && nt > 0 && !(*last = g_strdup(PQgetvalue(r, nt - 1, 0))))
		rc = PAL_ENOMEM;
	PQclear(r);
	return rc;
}

int pal_store_horizon_tickets(pal_store *st, int shard, const pal_horizon_scope *scope,
			      const pal_horizon_violation *v, size_t n, int64_t key_retention_ms,
			      const char *node, int64_t *opened, int64_t *resolved, char *err,
			      size_t errlen)
{
	if (opened)
		*opened = 0;
	if (resolved)
		*resolved = 0;
	if (scope->ids && !scope->n_ids)
		return PAL_OK;
	pal_pgarr aj, av, ah;
	pal__pgarr_init(&aj);
	pal__pgarr_init(&av);
	pal__pgarr_init(&ah);
	for (size_t i = 0; i < n; i++) {
		pal__pgarr_text(&aj, v[i].job_id);
		pal__pgarr_i64(&av, v[i].version);
		pal__pgarr_i64(&ah, v[i].horizon_ms);
	}
	char *sj = pal__pgarr_end(&aj), *sv = pal__pgarr_end(&av), *sh = pal__pgarr_end(&ah),
	     *ia = ids_param(scope->ids, scope->n_ids);
	char s[16], k[24];
	snprintf(s, sizeof s, "%d", shard);
	snprintf(k, sizeof k, "%" PRId64, key_retention_ms);
	const char *p[] = { sj, sv, sh, s, ia, k, node, PAL_HORIZON_TICKET_REASON, scope->after,
			    scope->upto };
	/* Both halves read the open tickets through tickets_open (a partial
	 * index: open tickets are few), never the whole table. */
	PGresult *r = pal__store_query(
		st,
		"WITH v AS (SELECT * FROM unnest($1::text[], $2::int[], $3::bigint[]) v(job_id, version,"
		"   horizon_ms)),"
		" o AS (SELECT t.id, t.job_id FROM tickets t JOIN jobs j ON j.job_id = t.job_id"
		"   WHERE t.state = 'open' AND t.reason = $8 AND j.shard = $4::int"
		"   AND ($5::text[] IS NULL OR t.job_id = ANY($5::text[]))"
		"   AND ($9::text IS NULL OR t.job_id COLLATE \"C\" > $9::text)"
		"   AND ($10::text IS NULL OR t.job_id COLLATE \"C\" <= $10::text)),"
		" res AS (UPDATE tickets t SET state = 'resolved', resolution = 'fits',"
		"   actor = 'controller:' || $7, resolved_at = clock_timestamp()"
		"   FROM o WHERE t.id = o.id AND NOT EXISTS (SELECT 1 FROM v WHERE v.job_id = o.job_id)"
		"   RETURNING t.id),"
		" ins AS (INSERT INTO tickets (job_id, reason, evidence, allowed_actions)"
		"   SELECT v.job_id, $8, jsonb_build_object('version', v.version, 'horizon_ms',"
		"   v.horizon_ms, 'key_retention_ms', $6::bigint, 'node', $7::text), ARRAY['abandon']"
		"   FROM v WHERE NOT EXISTS (SELECT 1 FROM o WHERE o.job_id = v.job_id) RETURNING id)"
		" SELECT (SELECT count(*) FROM ins), (SELECT count(*) FROM res)",
		10, p, err, errlen);
	g_free(sj);
	g_free(sv);
	g_free(sh);
	g_free(ia);
	if (!r)
		return PAL_EDB;
	if (opened)
		*opened = num(r, 0, 0);
	if (resolved)
		*resolved = num(r, 0, 1);
	PQclear(r);
	return PAL_OK;
}
