/*
 * apply.c - store job specs as immutable plan versions (DESIGN.md §4).
 *
 * One transaction for the whole set, fed in chunks of up to CHUNK jobs, each
 * chunk in four set-based statements whose arrays are built by the one
 * encoder (pgarray.c):
 *
 *   1. INSERT INTO jobs ... FROM unnest(...) ON CONFLICT DO NOTHING
 *      RETURNING: the new jobs get their row (latest_version 1: version 1
 *      follows in statement 4), held by us until commit;
 *   2. SELECT ... FROM jobs JOIN unnest(ids) ... ORDER BY ord FOR UPDATE OF
 *      jobs: lock the other rows and read their latest_version.  Locks are
 *      taken in the order of the chunk, which is sorted by job id (bytes),
 *      and statement 1 inserts in that order too, so two applies of the same
 *      files wait for each other instead of deadlocking;
 *   3. the digests of the latest versions, compared with ours in one
 *      statement.  It is a statement of its own on purpose: in one
 *      statement (a join FOR UPDATE) a concurrent apply that commits while
 *      we wait for a lock makes PostgreSQL re-check only the locked row, the
 *      version it just added is not in our snapshot, and a second version
 *      with the same digest would be created.  A fresh statement takes a
 *      fresh snapshot (READ COMMITTED) that sees every version committed
 *      before our locks;
 *   4. for the changed jobs only: INSERT version n+1, UPDATE jobs (not
 *      for new ones), an
 *      audit_log row each and one NOTIFY palisade_apply per job (payload:
 *      the job id, which the controller loads; delivered on commit), all in
 *      one statement.
 *
 * Statement 4 is sent without waiting for its result: the CLI canonicalises
 * the next chunk (and parses the next file) while the server inserts, and
 * the result is collected before the next statement.  Re-applying the same
 * specs stops after statement 3 and ships no spec; a changed spec creates
 * version n+1; history is never rewritten.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/store.h"
#include "store_int.h"
#include "palisade/url.h"

/* Jobs per set of statements: large enough that the round trips vanish
 * (~4 per chunk), small enough that a chunk's arrays stay a few MiB. */
#define CHUNK 5000

struct pal_apply {
	pal_store *st;
	char *actor, *reason;
	int nshards;
	bool pending; /* statement 4 sent, result not read yet */
};

/* Read the result of the statement in flight, if any. */
static int collect(pal_apply *a, char *err, size_t errlen)
{
	if (!a->pending)
		return PAL_OK;
	a->pending = false;
	int rc = PAL_OK;
	PGresult *r;
	while ((r = PQgetResult(a->st->conn))) {
		ExecStatusType s = PQresultStatus(r);
		if (rc == PAL_OK && s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) {
			pal__store_errmsg(a->st, r, "storing job versions", err, errlen);
			rc = PAL_EDB;
		}
		PQclear(r);
	}
	return rc;
}

int pal_store_apply_begin(pal_store *st, const char *actor, const char *reason,
			  int default_shards, pal_apply **out, char *err, size_t errlen)
{
	*out = NULL;
	pal_apply *a = calloc(1, sizeof *a);
	if (!a || !(a->actor = strdup(actor ? actor : "")) ||
	    !(a->reason = strdup(reason ? reason : ""))) {
		if (a) {
			free(a->actor);
			free(a);
		}
		snprintf(err, errlen, "out of memory");
		return PAL_ENOMEM;
	}
	a->st = st;
	int rc = pal_store_shard_count(st, default_shards, &a->nshards, err, errlen);
	/* The transaction spans the CLI's reading of the files between chunks
	 * (at most one 4 MiB file, well under a second; more under a
	 * sanitizer): the session default of 5 s idle is for transactions
	 * that wait on nothing but the database. */
	/* Every statement of apply looks jobs up by key, a few thousand at a
	 * time: with hash or merge joins the planner reads the whole jobs
	 * table for each chunk (measured: 335 ms per 5000 jobs at 200,000
	 * jobs, growing with the table; 10 ms as index lookups).  Statement 4
	 * keeps a chunk's rows (specs parsed and as text, ~15 MiB) in a
	 * tuplestore: with the default 4 MB of work_mem it went to disk. */
	if (!rc && (pal__store_exec(st, "BEGIN", err, errlen) ||
		    pal__store_exec(st, "SET LOCAL idle_in_transaction_session_timeout = '60s'", err,
				    errlen) ||
		    pal__store_exec(st, "SET LOCAL enable_hashjoin = off", err, errlen) ||
		    pal__store_exec(st, "SET LOCAL enable_mergejoin = off", err, errlen) ||
		    pal__store_exec(st, "SET LOCAL work_mem = '64MB'", err, errlen))) {
		pal__store_rollback(st);
		rc = PAL_EDB;
	}
	if (rc) {
		free(a->actor);
		free(a->reason);
		free(a);
		return rc;
	}
	*out = a;
	return PAL_OK;
}

void pal_store_apply_abort(pal_apply *a)
{
	if (!a)
		return;
	char err[256];
	(void)collect(a, err, sizeof err);
	pal__store_rollback(a->st);
	free(a->actor);
	free(a->reason);
	free(a);
}

int pal_store_apply_commit(pal_apply *a, char *err, size_t errlen)
{
	int rc = collect(a, err, errlen);
	if (!rc && pal__store_exec(a->st, "COMMIT", err, errlen))
		rc = PAL_EDB;
	if (rc)
		pal__store_rollback(a->st);
	free(a->actor);
	free(a->reason);
	free(a);
	return rc;
}

/* One job of a chunk: its spec, canonical form and what happens to it. */
struct item {
	const pal_job_spec *s;
	pal_apply_result *res;
	char *canon;
	char hex[65];
	pal_canon_spans sp; /* of retry and target in canon */
	int latest; /* latest_version before this apply, 0 for a new job */
	bool fresh; /* its jobs row was inserted by this apply */
};

static int cmp_item(const void *x, const void *y)
{
	return strcmp(((const struct item *)x)->s->id, ((const struct item *)y)->s->id);
}

static int query_rows(pal_apply *a, const char *sql, int np, const char *const *p, int want,
		      PGresult **out, char *err, size_t errlen)
{
	PGresult *r = pal__store_query(a->st, sql, np, p, err, errlen);
	if (!r)
		return PAL_EDB;
	if (want >= 0 && PQntuples(r) != want) {
		snprintf(err, errlen, "storing job versions: %d rows where %d were expected",
			 PQntuples(r), want);
		PQclear(r);
		return PAL_EDB;
	}
	*out = r;
	return PAL_OK;
}

/* Statements 1 and 2: a row for every job, locked, and its latest_version.
 * A new job's row is inserted with latest_version 1 at once (version 1 is
 * inserted in the same transaction), so statement 4 need not update it. */
static int lock_jobs(pal_apply *a, struct item *it, size_t n, char *err, size_t errlen)
{
	pal_pgarr ids, te, gr, sh;
	pal__pgarr_init(&ids);
	pal__pgarr_init(&te);
	pal__pgarr_init(&gr);
	pal__pgarr_init(&sh);
	for (size_t i = 0; i < n; i++) {
		pal__pgarr_text(&ids, it[i].s->id);
		pal__pgarr_text(&te, it[i].s->tenant);
		pal__pgarr_text(&gr, it[i].s->group);
		pal__pgarr_i64(&sh, pal_job_shard(it[i].s->id, a->nshards));
	}
	char *p[] = { pal__pgarr_end(&ids), pal__pgarr_end(&te), pal__pgarr_end(&gr),
		      pal__pgarr_end(&sh), NULL };
	PGresult *r = NULL;
	int rc = query_rows(a,
			    "INSERT INTO jobs (job_id, tenant, resource_group, shard, latest_version)"
			    " SELECT u.id, u.te, u.gr, u.sh, 1"
			    " FROM unnest($1::text[], $2::text[], $3::text[], $4::int[])"
			    "  WITH ORDINALITY AS u(id, te, gr, sh, i)"
			    " ORDER BY u.i ON CONFLICT (job_id) DO NOTHING RETURNING job_id",
			    4, (const char *const *)p, -1, &r, err, errlen);
	size_t old = n;
	if (!rc && PQntuples(r) > 0) {
		GHashTable *fresh = g_hash_table_new(g_str_hash, g_str_equal);
		for (int row = 0; row < PQntuples(r); row++)
			g_hash_table_add(fresh, PQgetvalue(r, row, 0));
		pal_pgarr rest;
		pal__pgarr_init(&rest);
		old = 0;
		for (size_t i = 0; i < n; i++) {
			it[i].fresh = g_hash_table_contains(fresh, it[i].s->id);
			if (!it[i].fresh) {
				pal__pgarr_text(&rest, it[i].s->id);
				old++;
			}
		}
		g_hash_table_destroy(fresh);
		p[4] = pal__pgarr_end(&rest);
	}
	PQclear(r);
	r = NULL;
	/* The jobs that existed: lock them (in chunk order) and read. */
	if (!rc && old)
		rc = query_rows(a,
				"SELECT j.latest_version FROM unnest($1::text[]) WITH ORDINALITY AS u(id, i)"
				" JOIN jobs j ON j.job_id = u.id ORDER BY u.i FOR UPDATE OF j",
				1, (const char *const *)(p[4] ? &p[4] : &p[0]), (int)old, &r, err,
				errlen);
	for (size_t i = 0, row = 0; !rc && old && i < n; i++)
		if (!it[i].fresh)
			it[i].latest = atoi(PQgetvalue(r, (int)row++, 0));
	PQclear(r);
	for (size_t k = 0; k < 5; k++)
		g_free(p[k]);
	return rc;
}

/* Statement 3: mark the jobs whose latest version has our digest unchanged. */
static int compare_digests(pal_apply *a, struct item *it, size_t n, char *err, size_t errlen)
{
	pal_pgarr ids, lv, dg;
	size_t m = 0;
	pal__pgarr_init(&ids);
	pal__pgarr_init(&lv);
	pal__pgarr_init(&dg);
	for (size_t i = 0; i < n; i++) {
		if (it[i].fresh)
			continue; /* a new job: no version to compare with */
		pal__pgarr_text(&ids, it[i].s->id);
		pal__pgarr_i64(&lv, it[i].latest);
		pal__pgarr_text(&dg, it[i].hex);
		m++;
	}
	char *p[] = { pal__pgarr_end(&ids), pal__pgarr_end(&lv), pal__pgarr_end(&dg) };
	int rc = PAL_OK;
	if (m) {
		PGresult *r = NULL;
		rc = query_rows(a,
				"SELECT u.i FROM unnest($1::text[], $2::int[], $3::text[])"
				"  WITH ORDINALITY AS u(id, lv, dg, i)"
				" JOIN job_versions v ON v.job_id = u.id AND v.version = u.lv"
				" WHERE v.digest = u.dg",
				3, (const char *const *)p, -1, &r, err, errlen);
		/* u.i counts the compared jobs only: map it back. */
		size_t *map = rc ? NULL : malloc(m * sizeof *map);
		if (!rc && !map) {
			snprintf(err, errlen, "out of memory");
			rc = PAL_ENOMEM;
		}
		for (size_t i = 0, k = 0; map && i < n; i++)
			if (!it[i].fresh)
				map[k++] = i;
		for (int row = 0; map && row < PQntuples(r); row++) {
			long i = atol(PQgetvalue(r, row, 0));
			if (i >= 1 && (size_t)i <= m)
				it[map[i - 1]].res->outcome = PAL_APPLY_UNCHANGED;
		}
		free(map);
		PQclear(r);
	}
	for (size_t k = 0; k < 3; k++)
		g_free(p[k]);
	return rc;
}

/* Statement 4, sent without waiting: version n+1 of every changed job, the
 * jobs rows, audit_log, NOTIFY. */
static int send_versions(pal_apply *a, struct item *it, size_t n, char *err, size_t errlen)
{
	enum { ID, VER, SPEC, DIG, CRON, TZ, MIS, CW, MC, OV, PR, DL, MIF, IDEM, GRP, PARTS, HOST,
	       TEN, FRESH, RETRY, TARGET, NA };
	pal_pgarr arr[NA];
	size_t m = 0;
	for (int k = 0; k < NA; k++)
		pal__pgarr_init(&arr[k]);
	for (size_t i = 0; i < n; i++) {
		const pal_job_spec *s = it[i].s;
		if (it[i].res->outcome == PAL_APPLY_UNCHANGED)
			continue;
		char host[256];
		pal_url_host(s->url, host, sizeof host);
		pal__pgarr_text(&arr[ID], s->id);
		pal__pgarr_i64(&arr[VER], it[i].latest + 1);
		pal__pgarr_text(&arr[SPEC], it[i].canon);
		pal__pgarr_text(&arr[DIG], it[i].hex);
		pal__pgarr_text(&arr[CRON], s->cron);
		pal__pgarr_text(&arr[TZ], s->timezone);
		pal__pgarr_text(&arr[MIS], pal_misfire_policy_name(s->misfire));
		pal__pgarr_i64(&arr[CW], s->catchup_window_ms);
		pal__pgarr_i64(&arr[MC], s->max_catchup);
		pal__pgarr_text(&arr[OV], pal_overlap_policy_name(s->overlap));
		pal__pgarr_i64(&arr[PR], s->priority);
		pal__pgarr_i64(&arr[DL], s->deadline_ms);
		pal__pgarr_i64(&arr[MIF], s->max_in_flight);
		pal__pgarr_text(&arr[IDEM], s->idempotency_key);
		pal__pgarr_text(&arr[GRP], s->group);
		pal__pgarr_i64(&arr[PARTS], s->partitions);
		pal__pgarr_text(&arr[HOST], host);
		pal__pgarr_text(&arr[TEN], s->tenant);
		pal__pgarr_i64(&arr[FRESH], it[i].fresh);
		/* slices of the canonical text: parsing them is cheaper than
		 * sj -> 'retry' (measured: 290 -> 190 ms per 5000 versions) */
		char *c = it[i].canon, save;
		save = c[it[i].sp.retry_off + it[i].sp.retry_len];
		c[it[i].sp.retry_off + it[i].sp.retry_len] = '\0';
		pal__pgarr_text(&arr[RETRY], c + it[i].sp.retry_off);
		c[it[i].sp.retry_off + it[i].sp.retry_len] = save;
		save = c[it[i].sp.target_off + it[i].sp.target_len];
		c[it[i].sp.target_off + it[i].sp.target_len] = '\0';
		pal__pgarr_text(&arr[TARGET], c + it[i].sp.target_off);
		c[it[i].sp.target_off + it[i].sp.target_len] = save;
		it[i].res->outcome = it[i].latest ? PAL_APPLY_UPDATED : PAL_APPLY_CREATED;
		it[i].res->version = it[i].latest + 1;
		m++;
	}
	const char *p[NA + 2];
	for (int k = 0; k < NA; k++)
		p[k] = pal__pgarr_end(&arr[k]);
	p[NA] = a->actor;
	p[NA + 1] = a->reason;
	/* $1..$21 arrays, $22 actor, $23 reason */
	int rc = PAL_OK;
	/* u is referenced four times, so it is computed (and each spec parsed
	 * as jsonb) once. */
	if (m && !PQsendQueryParams(
			 a->st->conn,
			 "WITH u AS (SELECT u.*, u.spec::jsonb AS sj FROM unnest($1::text[], $2::int[],"
			 "   $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::bigint[],"
			 "   $9::int[], $10::text[], $11::int[], $12::bigint[], $13::int[], $14::text[],"
			 "   $15::text[], $16::int[], $17::text[], $18::text[], $19::int[], $20::text[],"
			 "   $21::text[])"
			 "   AS u(id, v, spec, dg, cron, tz, mis, cw, mc, ov, pr, dl, mif, idem, grp,"
			 "        parts, host, te, fresh, retry, target)),"
			 " ins AS (INSERT INTO job_versions (job_id, version, spec, digest, cron, timezone,"
			 "   misfire_policy, catchup_window_ms, max_catchup, overlap_policy, priority,"
			 "   deadline_ms, max_in_flight, idempotency_key, retry, resource_group, target,"
			 "   partitions, created_by, target_host)"
			 "  SELECT id, v, sj, dg, cron, tz, mis, cw, mc, ov, pr, dl, mif, idem,"
			 "   retry::jsonb, grp, target::jsonb, parts, $22, host FROM u),"
			 " upd AS (UPDATE jobs j SET latest_version = u.v, tenant = u.te,"
			 "   resource_group = u.grp, updated_at = now() FROM u"
			 "   WHERE j.job_id = u.id AND u.fresh = 0),"
			 " aud AS (INSERT INTO audit_log (actor, action, scope, reason, details)"
			 "  SELECT $22, CASE WHEN u.v = 1 THEN 'job.create' ELSE 'job.update' END,"
			 "   'job:' || u.id, $23, jsonb_build_object('version', u.v, 'digest', u.dg)"
			 "  FROM u)"
			 " SELECT count(pg_notify('palisade_apply', u.id)) FROM u",
			 NA + 2, NULL, p, NULL, NULL, 0)) {
		pal__store_errmsg(a->st, NULL, "storing job versions", err, errlen);
		rc = PAL_EDB;
	} else if (m) {
		a->pending = true;
	}
	for (int k = 0; k < NA; k++)
		g_free((char *)p[k]);
	return rc;
}

static int apply_chunk(pal_apply *a, struct item *it, size_t n, char *err, size_t errlen)
{
	for (size_t i = 0; i < n; i++) {
		int rc = pal_job_spec_digest_spans(it[i].s, &it[i].canon, it[i].hex, &it[i].sp);
		if (rc) {
			snprintf(err, errlen, "job %s: cannot canonicalise spec: %s", it[i].s->id,
				 pal_strerror(rc));
			return rc;
		}
		it[i].res->outcome = PAL_APPLY_CREATED; /* until compared */
	}
	qsort(it, n, sizeof *it, cmp_item);
	int rc = collect(a, err, errlen);
	if (!rc)
		rc = lock_jobs(a, it, n, err, errlen);
	if (!rc)
		rc = compare_digests(a, it, n, err, errlen);
	for (size_t i = 0; !rc && i < n; i++)
		if (it[i].res->outcome == PAL_APPLY_UNCHANGED)
			it[i].res->version = it[i].latest;
	if (!rc)
		rc = send_versions(a, it, n, err, errlen);
	return rc;
}

int pal_store_apply_add(pal_apply *a, const pal_job_spec *specs, size_t n,
			pal_apply_result *results, char *err, size_t errlen)
{
	struct item *it = calloc(n < CHUNK ? (n ? n : 1) : CHUNK, sizeof *it);
	if (!it) {
		snprintf(err, errlen, "out of memory");
		return PAL_ENOMEM;
	}
	int rc = PAL_OK;
	for (size_t off = 0; !rc && off < n; off += CHUNK) {
		size_t m = n - off < CHUNK ? n - off : CHUNK;
		for (size_t i = 0; i < m; i++)
			it[i] = (struct item){ .s = &specs[off + i], .res = &results[off + i] };
		rc = apply_chunk(a, it, m, err, errlen);
		for (size_t i = 0; i < m; i++)
			free(it[i].canon);
	}
	free(it);
	return rc;
}

int pal_store_apply(pal_store *st, const pal_jobset *set, const char *actor, const char *reason,
		    int default_shards, pal_apply_result *results, char *err, size_t errlen)
{
	pal_apply *a;
	int rc = pal_store_apply_begin(st, actor, reason, default_shards, &a, err, errlen);
	if (rc)
		return rc;
	rc = pal_store_apply_add(a, set->jobs, set->n, results, err, errlen);
	if (rc) {
		pal_store_apply_abort(a);
		return rc;
	}
	return pal_store_apply_commit(a, err, errlen);
}
