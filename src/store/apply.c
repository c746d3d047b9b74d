/*
 * apply.c - store job specs as immutable plan versions (docs/schema.md, docs/jobs.md).
 *
 * One transaction for the whole set, fed in chunks of up to CHUNK jobs, each
 * chunk in four set-based statements whose arrays are built by the one
 * encoder (pgarray.c):
 *
 *   1. SELECT job_id FROM jobs WHERE job_id = ANY(ids), then a binary
 *      COPY into jobs of the rows it did not find, in a savepoint: the new
 *      jobs get their row (latest_version 1: version 1 follows in
 *      statement 4), held by us until commit.  When another apply created
 *      one of them meanwhile, the COPY fails on the key and the chunk goes
 *      through INSERT ... ON CONFLICT DO NOTHING RETURNING instead.  After
 *      a chunk of new jobs only, the next chunk skips the SELECT and is
 *      copied whole (a job that exists after all fails the COPY the same
 *      way);
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
 *   4. for the changed jobs only: UPDATE jobs (not for new ones) and one
 *      NOTIFY palisade_apply per job (payload: the job id, which the
 *      controller loads; delivered on commit) in one statement, then an
 *      audit_log row each and version n+1 by binary COPY.
 *
 * Statement 4 is sent without waiting for its result: the CLI canonicalises
 * the next chunk (and parses the next file) while the server inserts, and
 * the result is collected before the next statement.  Re-applying the same
 * specs stops after statement 3 and ships no spec; a changed spec creates
 * version n+1; history is never rewritten.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/store.h"
#include "palisade/secrets.h"
#include "store_int.h"
#include "apply_int.h"
#include "palisade/url.h"
#include "palisade/lifecycle.h"
#include "palisade/schedule.h"
#include "palisade/clock.h"
#include "pgcopy.h"

static void calendar_free(gpointer c)
{
	pal_calendar_clear(c);
	free(c);
}

#define rules_free pal_notify_rules_free

/* What apply holds besides the transaction. */
static void apply_free(pal_apply *a)
{
	if (a->cals)
		g_hash_table_destroy(a->cals);
	if (a->rule_scopes)
		g_hash_table_destroy(a->rule_scopes);
	rules_free(a->rules, a->n_rules);
	pal__takeover_free(a->tk);
	if (a->n_stored) {
		g_free(pal__pgarr_end(&a->stored_ids));
		g_free(pal__pgarr_end(&a->stored_vers));
		g_free(pal__pgarr_end(&a->stored_ats));
	}
	if (a->n_told) {
		g_free(pal__pgarr_end(&a->told_ids));
		g_free(pal__pgarr_end(&a->told_vers));
	}
	free(a->actor);
	free(a->reason);
	free(a);
}

/* Read the result of the statement in flight, if any; a failure is
 * reported as WHAT. */
static int drain(pal_apply *a, const char *what, char *err, size_t errlen)
{
	if (!a->pending)
		return PAL_OK;
	a->pending = false;
	int rc = PAL_OK;
	PGresult *r;
	while ((r = PQgetResult(a->st->conn))) {
		ExecStatusType s = PQresultStatus(r);
		if (rc == PAL_OK && s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) {
			pal__store_errmsg(a->st, r, what, err, errlen);
			rc = PAL_EDB;
		}
		PQclear(r);
	}
	return rc;
}

int pal__apply_collect(pal_apply *a, char *err, size_t errlen)
{
	return drain(a, "storing job versions", err, errlen);
}

int pal_store_apply_begin(pal_store *st, const char *actor, const char *reason, int default_shards,
			  pal_apply **out, char *err, size_t errlen)
{
	return pal_store_apply_begin_rules(st, actor, reason, default_shards, false, out, err,
					   errlen);
}

#define APPLY_SESSION_SQL                                                                          \
	"SELECT set_config('idle_in_transaction_session_timeout', '60s', true),"                   \
	" set_config('enable_hashjoin', 'off', true), set_config('enable_mergejoin', 'off', true),"\
	" set_config('enable_seqscan', 'off', true), set_config('work_mem', '64MB', true),"

int pal_store_apply_begin_rules(pal_store *st, const char *actor, const char *reason,
				int default_shards, bool rules, pal_apply **out, char *err,
				size_t errlen)
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
	a->now = PAL_NO_TIME;
	int rc = pal_store_shard_count(st, default_shards, &a->nshards, err, errlen);
	/* The transaction spans the CLI's reading of the files between chunks
	 * (at most one 4 MiB file, well under a second; more under a
	 * sanitizer): the session default of 5 s idle is for transactions
	 * that wait on nothing but the database. */
	/* Every statement of apply looks jobs up by key, a few thousand at a
	 * time: with hash or merge joins the planner reads the whole jobs
	 * table for each chunk (measured: 335 ms per 5000 jobs at 200,000
	 * jobs, growing with the table; 10 ms as index lookups).  The same
	 * holds for a plain scan: until jobs has statistics (a table loaded
	 * faster than autovacuum's minute, as a bulk load is), `job_id =
	 * ANY(1,000 ids)` is estimated to match every row and the probe read
	 * the whole table by a parallel scan, 85 ms at 300,000 jobs and
	 * growing, where the key index takes 1-3 ms.  Statement 4 keeps a
	 * chunk's rows (specs parsed and as text, ~15 MiB) in a tuplestore:
	 * with the default 4 MB of work_mem it went to disk.  All in one
	 * round trip (set_config(..., true) is SET LOCAL), with the rules'
	 * lock (RULES_LOCK): before any other. */
	if (!rc && (pal__store_exec(st, "BEGIN", err, errlen) ||
		    pal__store_exec(
			st,
			rules ? APPLY_SESSION_SQL " pg_advisory_xact_lock(" RULES_LOCK ")"
			      : APPLY_SESSION_SQL " pg_advisory_xact_lock_shared(" RULES_LOCK ")",
			err, errlen))) {
		pal__store_rollback(st);
		rc = PAL_EDB;
	}
	if (rc) {
		free(a->actor);
		free(a->reason);
		free(a);
		return rc;
	}
	a->rules_excl = rules;
	*out = a;
	return PAL_OK;
}

void pal_store_apply_secret_policy(pal_apply *a, const pal_secret_policy *p)
{
	a->secrets = p;
}

void pal_store_apply_abort(pal_apply *a)
{
	if (!a)
		return;
	char err[256];
	(void)pal__apply_collect(a, err, sizeof err);
	pal__store_rollback(a->st);
	apply_free(a);
}

/* The last statement before the commit, for the existing jobs the apply
 * gave a version listing failed or manual ($1, $2: each job's versions
 * stored here; a job versioned twice is judged by its last against the
 * one before the apply): a job marked failing (notify_state) tells the
 * failure to each url its new version makes a receiver of it, so that the
 * `recovered` that url gets later follows a failure it heard of
 * (docs/protocol.md, "A receiver added while the job is failing").  An
 * entry that lists the mark's event where the version before the apply
 * had no entry of that url listing it gets the event now, unless the
 * outbox holds that event of that trigger for that url already (a
 * receiver removed and added back while the same failure lasts; a
 * delivered row the outbox no longer keeps, after notify.keep_delivered,
 * no longer counts).  The outbox has no index by job: the check reads
 * it, only for the entries of a marked job given such a version.  The mark's
 * event is the state of the trigger of its latest failed instant
 * (notify_parts), `manual` while it waits for a person, else `failed`.
 * The marks are locked (mk, in job order as the result commits lock
 * them), so a commit clearing one meanwhile is waited for and no failure
 * is told after its `recovered`; run last, so that a result committed
 * during the apply, which queued its events for the version before, has
 * marked the job by then.  LOCK skips the marks a commit holds when the
 * apply ended a mark (statement 4a, ms and mp): a commit may be waiting
 * for those rows while it holds another job's mark, and waiting for it
 * here would deadlock. */
#define TELL_SQL(LOCK)                                                                             \
	"WITH u AS (SELECT id, max(v) AS v, min(v) - 1 AS ov"                                      \
	"   FROM unnest($1::text[], $2::int[]) AS u(id, v) GROUP BY id),"                          \
	" mk AS (SELECT s.job_id, s.failed_since FROM notify_state s"                              \
	"   WHERE s.job_id = ANY ($1::text[]) AND s.failed_since IS NOT NULL"                      \
	"   ORDER BY s.job_id FOR UPDATE OF s" LOCK "),"                                           \
	" fe AS (SELECT u.id, u.v, u.ov, nv.spec->'notify' AS ne, k.failed_since, p.partition,"    \
	"   p.failed_at, t.id AS tid, t.version AS tv, t.last_error_class, t.attempt_count,"       \
	"   CASE WHEN t.state = 'manual' THEN 'manual' ELSE 'failed' END AS ev"                    \
	"   FROM mk k JOIN u ON u.id = k.job_id"                                                   \
	"   JOIN job_versions nv ON nv.job_id = u.id AND nv.version = u.v"                         \
	"   LEFT JOIN LATERAL (SELECT q.partition, q.failed_at FROM notify_parts q"                \
	"     WHERE q.job_id = u.id ORDER BY q.failed_at DESC, q.partition LIMIT 1) p ON true"     \
	"   LEFT JOIN LATERAL (SELECT x.* FROM triggers x WHERE x.job_id = u.id"                   \
	"     AND x.scheduled_at = p.failed_at AND x.partition = p.partition"                      \
	"     ORDER BY x.state IN ('failed', 'manual') DESC, x.id DESC LIMIT 1) t ON true"         \
	"   WHERE jsonb_typeof(nv.spec->'notify') = 'array')"                                      \
	" INSERT INTO notifications (webhook_id, job_id, event, url, secret, payload)"             \
	" SELECT 'msg_failing' || md5(f.id || '/' || f.v) || '_' || (e.ord - 1), f.id, f.ev,"      \
	"   e.entry->>'url', e.entry->>'secret',"                                                  \
	"   jsonb_build_object('type', 'palisade.job.' || f.ev, 'timestamp',"                      \
	"     to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),"    \
	"     'data', jsonb_build_object('event', f.ev, 'job', f.id,"                              \
	"       'version', coalesce(f.tv, f.ov), 'console', '/console/job?id=' || f.id,"           \
	"       'trigger', f.tid, 'partition', f.partition, 'scheduled_at',"                       \
	"       to_char(f.failed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),"        \
	"       'state', f.ev, 'error_class', f.last_error_class, 'attempts', f.attempt_count,"    \
	"       'failed_since',"                                                                   \
	"       to_char(f.failed_since AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')))"    \
	" FROM fe f CROSS JOIN LATERAL jsonb_array_elements(f.ne) WITH ORDINALITY e(entry, ord)"   \
	" WHERE e.entry->'on' ? f.ev AND NOT EXISTS (SELECT 1 FROM job_versions o"                 \
	"   CROSS JOIN LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(o.spec->'notify')"      \
	"     = 'array' THEN o.spec->'notify' END) AS oe(entry)"                                   \
	"   WHERE o.job_id = f.id AND o.version = f.ov"                                            \
	"   AND oe.entry->>'url' = e.entry->>'url' AND oe.entry->'on' ? f.ev)"                     \
	" AND NOT EXISTS (SELECT 1 FROM notifications n WHERE n.job_id = f.id"                     \
	"   AND n.url = e.entry->>'url' AND n.event = f.ev"                                        \
	"   AND n.payload->'data'->>'trigger' = f.tid::text)"                                      \
	" ON CONFLICT (webhook_id) DO NOTHING"

static int tell_failing(pal_apply *a, char *err, size_t errlen)
{
	const char *p[2] = {pal__pgarr_end(&a->told_ids), pal__pgarr_end(&a->told_vers)};
	a->n_told = 0;
	PGresult *r = pal__store_query(a->st, a->unmarks ? TELL_SQL(" SKIP LOCKED") : TELL_SQL(""),
				       2, p, err, errlen);
	PQclear(r);
	g_free((char *)p[0]);
	g_free((char *)p[1]);
	return r ? PAL_OK : PAL_EDB;
}

int pal_store_apply_commit(pal_apply *a, char *err, size_t errlen)
{
	int rc = pal__apply_collect(a, err, errlen);
	if (!rc && a->n_told)
		rc = tell_failing(a, err, errlen);
	if (!rc)
		rc = pal__apply_takeover_stored(a, err, errlen);
	if (!rc && pal__store_exec(a->st, "COMMIT", err, errlen))
		rc = PAL_EDB;
	if (rc)
		pal__store_rollback(a->st);
	pal__takeover_free(a->st->takeover);
	a->st->takeover = NULL;
	if (!rc && a->tk && a->tk->n) {
		a->st->takeover = a->tk;
		a->tk = NULL;
	}
	apply_free(a);
	return rc;
}

static const char *nz(const char *s)
{
	return s ? s : "";
}

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
 * inserted in the same transaction), so statement 4 need not update it.
 *
 * Statement 1 is a probe (probe_jobs: which ids have a row; read, not
 * locked: nothing deletes a jobs row) and a binary COPY of the rows the
 * probe did not find (jobs_copy_send), inside a savepoint.  The COPY's
 * result is read by jobs_copy_finish() after the CLI canonicalised the
 * chunk, so the server inserts meanwhile.  A plain insert costs the server
 * about half of an INSERT ... ON CONFLICT (no speculative insertion, no
 * array literals to parse).  Should a concurrent apply have created one of
 * those jobs since the probe, the COPY fails with a unique violation (after
 * waiting for that apply, as ON CONFLICT would): we roll back to the
 * savepoint and insert the chunk's rows with ON CONFLICT DO NOTHING
 * RETURNING (jobs_upsert), whose rows say which are ours.  Both insert in
 * the order of the chunk, sorted by job id. */
#define JOBS_COPY_SQL                                                                              \
	"COPY jobs (job_id, tenant, resource_group, shard, latest_version, owner, description)"    \
	" FROM STDIN (FORMAT binary)"

static char *ids_array(const struct item *it, size_t n)
{
	pal_pgarr ids;
	pal__pgarr_init(&ids);
	for (size_t i = 0; i < n; i++)
		pal__pgarr_text(&ids, it[i].s->id);
	return pal__pgarr_end(&ids);
}

/* it[i].fresh = no jobs row for it (yet). */
static int probe_jobs(pal_apply *a, struct item *it, size_t n, char *err, size_t errlen)
{
	const char *p[] = {ids_array(it, n)};
	PGresult *r = pal__store_query(
	    a->st, "SELECT job_id FROM jobs WHERE job_id = ANY($1::text[])", 1, p, err, errlen);
	g_free((char *)p[0]);
	if (!r)
		return PAL_EDB;
	GHashTable *found = g_hash_table_new(g_str_hash, g_str_equal);
	for (int row = 0; row < PQntuples(r); row++)
		g_hash_table_add(found, PQgetvalue(r, row, 0));
	for (size_t i = 0; i < n; i++)
		it[i].fresh = !g_hash_table_contains(found, it[i].s->id);
	g_hash_table_destroy(found);
	PQclear(r);
	return PAL_OK;
}

static int jobs_copy_send(pal_apply *a, struct item *it, size_t n, char *err, size_t errlen)
{
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		m += it[i].fresh;
	if (!m)
		return PAL_OK;
	if (pal__store_exec(a->st, "SAVEPOINT apply_jobs", err, errlen))
		return PAL_EDB;
	pal_pgcopy cp;
	int rc = pal__pgcopy_begin(a->st, &cp, JOBS_COPY_SQL, "storing jobs", err, errlen);
	if (rc)
		return rc;
	for (size_t i = 0; i < n; i++) {
		const pal_job_spec *s = it[i].s;
		if (!it[i].fresh)
			continue;
		pal__pgcopy_row(&cp, 7);
		pal__pgcopy_text(&cp, s->id);
		pal__pgcopy_text(&cp, s->tenant);
		pal__pgcopy_text(&cp, s->group);
		pal__pgcopy_i32(&cp, pal_job_shard(s->id, a->nshards));
		pal__pgcopy_i32(&cp, 1);
		pal__pgcopy_text(&cp, nz(s->owner));
		pal__pgcopy_text(&cp, nz(s->description));
	}
	rc = pal__pgcopy_end(&cp, false, err, errlen);
	if (!rc)
		a->pending = a->jobs_copy = true;
	return rc;
}

/* The ON CONFLICT insert of every job of the chunk; it[i].fresh = its row
 * was inserted here. */
static int jobs_upsert(pal_apply *a, struct item *it, size_t n, char *err, size_t errlen)
{
	pal_pgarr te, gr, sh, ow, de;
	pal__pgarr_init(&te);
	pal__pgarr_init(&gr);
	pal__pgarr_init(&sh);
	pal__pgarr_init(&ow);
	pal__pgarr_init(&de);
	for (size_t i = 0; i < n; i++) {
		pal__pgarr_text(&te, it[i].s->tenant);
		pal__pgarr_text(&gr, it[i].s->group);
		pal__pgarr_i64(&sh, pal_job_shard(it[i].s->id, a->nshards));
		pal__pgarr_text(&ow, nz(it[i].s->owner));
		pal__pgarr_text(&de, nz(it[i].s->description));
	}
	char *p[] = {ids_array(it, n),	  pal__pgarr_end(&te), pal__pgarr_end(&gr),
		     pal__pgarr_end(&sh), pal__pgarr_end(&ow), pal__pgarr_end(&de)};
	PGresult *r = NULL;
	int rc =
	    query_rows(a,
		       "INSERT INTO jobs (job_id, tenant, resource_group, shard, latest_version,"
		       "  owner, description)"
		       " SELECT u.id, u.te, u.gr, u.sh, 1, u.ow, u.de"
		       " FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::text[],"
		       "  $6::text[]) WITH ORDINALITY AS u(id, te, gr, sh, ow, de, i)"
		       " ORDER BY u.i ON CONFLICT (job_id) DO NOTHING RETURNING job_id",
		       6, (const char *const *)p, -1, &r, err, errlen);
	for (size_t k = 0; k < 6; k++)
		g_free(p[k]);
	if (rc)
		return rc;
	GHashTable *fresh = g_hash_table_new(g_str_hash, g_str_equal);
	for (int row = 0; row < PQntuples(r); row++)
		g_hash_table_add(fresh, PQgetvalue(r, row, 0));
	for (size_t i = 0; i < n; i++)
		it[i].fresh = g_hash_table_contains(fresh, it[i].s->id);
	g_hash_table_destroy(fresh);
	PQclear(r);
	return PAL_OK;
}

/* Read the jobs COPY's result: release the savepoint, or after a unique
 * violation roll back to it and upsert the chunk instead. */
static int jobs_copy_finish(pal_apply *a, struct item *it, size_t n, char *err, size_t errlen)
{
	if (!a->jobs_copy)
		return PAL_OK;
	a->jobs_copy = a->pending = false;
	int rc = PAL_OK;
	bool conflict = false;
	PGresult *r;
	while ((r = PQgetResult(a->st->conn))) {
		if (rc == PAL_OK && PQresultStatus(r) != PGRES_COMMAND_OK) {
			const char *code = PQresultErrorField(r, PG_DIAG_SQLSTATE);
			conflict = code && !strcmp(code, "23505");
			if (!conflict)
				pal__store_errmsg(a->st, r, "storing jobs", err, errlen);
			rc = PAL_EDB;
		}
		PQclear(r);
	}
	if (!rc)
		return pal__store_exec(a->st, "RELEASE SAVEPOINT apply_jobs", err, errlen) ? PAL_EDB
											   : PAL_OK;
	if (!conflict)
		return rc;
	if (pal__store_exec(a->st, "ROLLBACK TO SAVEPOINT apply_jobs", err, errlen) ||
	    pal__store_exec(a->st, "RELEASE SAVEPOINT apply_jobs", err, errlen))
		return PAL_EDB;
	return jobs_upsert(a, it, n, err, errlen);
}

/* Statement 2: lock the jobs that existed (in chunk order) and read their
 * latest version, metadata, tenant and group (compared here: no statement
 * of its own for what rarely changes). */
static int lock_jobs(pal_apply *a, struct item *it, size_t n, char *err, size_t errlen)
{
	pal_pgarr rest;
	size_t old = 0;
	pal__pgarr_init(&rest);
	for (size_t i = 0; i < n; i++)
		if (!it[i].fresh) {
			pal__pgarr_text(&rest, it[i].s->id);
			old++;
		}
	char *p = pal__pgarr_end(&rest);
	PGresult *r = NULL;
	int rc = PAL_OK;
	if (old)
		rc = query_rows(a,
				"SELECT j.latest_version, j.owner, j.description, j.tenant,"
				" j.resource_group, j.retired_at IS NOT NULL"
				" FROM unnest($1::text[]) WITH ORDINALITY AS u(id, i)"
				" JOIN jobs j ON j.job_id = u.id ORDER BY u.i FOR UPDATE OF j",
				1, (const char *const *)&p, (int)old, &r, err, errlen);
	for (size_t i = 0, row = 0; !rc && old && i < n; i++)
		if (!it[i].fresh) {
			it[i].latest = atoi(PQgetvalue(r, (int)row, 0));
			it[i].meta = !a->stored_specs &&
				     (strcmp(PQgetvalue(r, (int)row, 1), nz(it[i].s->owner)) ||
				      strcmp(PQgetvalue(r, (int)row, 2), nz(it[i].s->description)));
			it[i].moved = strcmp(PQgetvalue(r, (int)row, 3), it[i].s->tenant) ||
				      strcmp(PQgetvalue(r, (int)row, 4), it[i].s->group);
			it[i].retired = !strcmp(PQgetvalue(r, (int)row, 5), "t");
			it[i].res->was_live = !it[i].retired;
			row++;
		}
	PQclear(r);
	g_free(p);
	return rc;
}

/* Statement 3: mark the jobs whose latest version has our digest unchanged. */
static int compare_digests(pal_apply *a, struct item *it, size_t n, char *err, size_t errlen)
{
	pal_pgarr ids, lv, dg, own;
	size_t m = 0;
	pal__pgarr_init(&ids);
	pal__pgarr_init(&lv);
	pal__pgarr_init(&dg);
	pal__pgarr_init(&own);
	for (size_t i = 0; i < n; i++) {
		if (it[i].fresh)
			continue; /* a new job: no version to compare with */
		const pal_job_spec *s = it[i].s;
		pal__pgarr_text(&ids, s->id);
		pal__pgarr_i64(&lv, it[i].latest);
		pal__pgarr_text(&dg, it[i].hex);
		pal__pgarr_i64(&own, s->notify_none	? -1
				     : s->notify_merged ? (int64_t)s->n_notify_own
							: (int64_t)s->n_notify);
		m++;
	}
	char *p[] = {pal__pgarr_end(&ids), pal__pgarr_end(&lv), pal__pgarr_end(&dg),
		     pal__pgarr_end(&own)};
	int rc = PAL_OK;
	if (m) {
		PGresult *r = NULL;
		rc = query_rows(
		    a,
		    "SELECT u.i FROM unnest($1::text[], $2::int[], $3::text[], $4::int[])"
		    "  WITH ORDINALITY AS u(id, lv, dg, own, i)"
		    " JOIN job_versions v ON v.job_id = u.id AND v.version = u.lv"
		    " WHERE v.digest = u.dg"
		    /* the same entries, and as many of them the job's own
		     * (NULL: all, written before notify rules) */
		    "  AND coalesce(v.notify_own,"
		    "   jsonb_array_length(coalesce(v.spec -> 'notify', '[]'))) = u.own",
		    4, (const char *const *)p, -1, &r, err, errlen);
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
	for (size_t k = 0; k < 4; k++)
		g_free(p[k]);
	return rc;
}

/* Into P[0..2], for the jobs of the chunk whose owner or description
 * changed (MOVED false) or whose tenant or group did (MOVED true): their
 * ids and the two new values, as text arrays (g_free each).  Returns how
 * many jobs. */
static size_t changed_arrays(const struct item *it, size_t n, bool moved, const char *p[3])
{
	pal_pgarr ids, x, y;
	size_t m = 0;
	pal__pgarr_init(&ids);
	pal__pgarr_init(&x);
	pal__pgarr_init(&y);
	for (size_t i = 0; i < n; i++)
		if (moved ? it[i].moved : it[i].meta) {
			const pal_job_spec *s = it[i].s;
			pal__pgarr_text(&ids, s->id);
			pal__pgarr_text(&x, moved ? s->tenant : nz(s->owner));
			pal__pgarr_text(&y, moved ? s->group : nz(s->description));
			m++;
		}
	p[0] = pal__pgarr_end(&ids);
	p[1] = pal__pgarr_end(&x);
	p[2] = pal__pgarr_end(&y);
	return m;
}

/* Statement 5, only for a chunk where some existing job's owner or
 * description changed: update them in place and audit old and new (they
 * are not part of the spec, so no version is made for them). */
static int update_meta(pal_apply *a, struct item *it, size_t n, char *err, size_t errlen)
{
	const char *p[5] = {[3] = a->actor, [4] = a->reason};
	size_t m = changed_arrays(it, n, false, p);
	int rc = PAL_OK;
	PGresult *r = NULL;
	if (m)
		rc = query_rows(
		    a,
		    "WITH u AS (SELECT * FROM unnest($1::text[], $2::text[], $3::text[])"
		    "   AS u(id, ow, de)),"
		    " old AS (SELECT j.job_id, j.owner, j.description FROM jobs j"
		    "   JOIN u ON u.id = j.job_id),"
		    " upd AS (UPDATE jobs j SET owner = u.ow, description = u.de,"
		    "   updated_at = now() FROM u WHERE j.job_id = u.id)"
		    " INSERT INTO audit_log (actor, action, scope, reason, details)"
		    " SELECT $4, 'job.meta', 'job:' || u.id, $5, jsonb_build_object("
		    "   'owner', u.ow, 'description', u.de,"
		    "   'previous_owner', old.owner, 'previous_description', old.description)"
		    " FROM u JOIN old ON old.job_id = u.id",
		    5, p, -1, &r, err, errlen);
	PQclear(r);
	if (!rc)
		a->meta_changed += m;
	for (size_t k = 0; k < 3; k++)
		g_free((char *)p[k]);
	return rc;
}

/* Statement 5b, only for a chunk where some existing job moves to another
 * tenant or group: its unfinished triggers (planned, waiting, running)
 * go with it, so the claim's and the pause's match on triggers.tenant /
 * resource_group sees the job where it is now.  A trigger a gate holds
 * (paused, pausing) stays under the scope that gate names, or the resume
 * that lifts the gate would no longer find it: it keeps its tenant and
 * group until it ends.  Not a
 * change of state (no door): the rows keep state, fence and lease; a
 * running call goes on.  Plain row locks: a claim holding one of the rows
 * (FOR UPDATE, for a moment) is waited for, never passed over; until the
 * apply commits, claims pass the moved rows over (SKIP LOCKED) and a
 * running one's result waits for the commit.  The finished triggers keep
 * the tenant and group they ran under.  The job's rows are found through
 * triggers_plan_key (job_id first), its history included: a cost only a
 * job that moves pays.  Then (PAL__MOVE_SIDE_SQL, PAL__MOVE_AHEAD_SQL in
 * store_int.h) the moved rows whose scope changes between live and
 * shadow from the apply on go through the door, those claimed ahead into
 * a shadow scope included.  A tick in flight that planned from the old
 * version writes its rows after this: the controller moves them
 * (write_moves in src/store/plan.c). */
static int move_triggers(pal_apply *a, struct item *it, size_t n, char *err, size_t errlen)
{
	const char *p[3];
	size_t m = changed_arrays(it, n, true, p);
	int rc = PAL_OK;
	PGresult *r = NULL;
	if (m)
		rc = query_rows(a,
				"UPDATE triggers t SET tenant = u.te, resource_group = u.grp"
				" FROM unnest($1::text[], $2::text[], $3::text[]) AS u(id, te, grp)"
				" WHERE t.job_id = u.id AND t.state NOT IN " PAL__MOVE_KEEPS_SCOPE,
				3, p, -1, &r, err, errlen);
	PQclear(r);
	r = NULL;
	if (m && !rc) {
		const char *pl[] = {p[0], a->actor, a->reason};
		rc = query_rows(a, PAL__MOVE_SIDE_SQL("now()", "$2", "nullif($3, '')", "", ""), 3,
				pl, -1, &r, err, errlen);
		PQclear(r);
		r = NULL;
		if (!rc)
			rc = query_rows(
			    a, PAL__MOVE_AHEAD_SQL("now()", "$2", "nullif($3, '')", "", ""), 3, pl,
			    -1, &r, err, errlen);
		bool asked = !rc && strcmp(PQcmdTuples(r), "0");
		PQclear(r);
		r = NULL;
		if (asked)
			rc = query_rows(a, PAL__HANDBACK_NOTIFY, 0, NULL, -1, &r, err, errlen);
		PQclear(r);
	}
	for (size_t k = 0; k < 3; k++)
		g_free((char *)p[k]);
	return rc;
}

/* Statement 4a: the jobs rows of the changed existing jobs and a NOTIFY
 * palisade_apply per changed job (no spec travels in it).  The outbox
 * follows the new version (docs/jobs.md, "Notify rules"): an undelivered
 * event of a url the version has no entry for ($6: {url: secret} of its
 * entries) is deleted, one `notification.drop` audit row per job and url
 * naming the webhook ids, and one of a url it keeps takes the entry's
 * secret reference; a version without an entry that lists failed or
 * manual ($7 false) ends the job's failure mark (notify_state, then
 * notify_parts, the order palisade_notify_result locks them in), so that
 * a receiver added later gets no `recovered` for a failure it never
 * heard of (a version that keeps it: TELL_SQL, at the commit).
 * New jobs (fresh) have none of those rows: skipped. */
#define VERSIONS_META_SQL                                                                          \
	"WITH u AS (SELECT * FROM unnest($1::text[], $2::int[], $3::text[], $4::text[],"           \
	"   $5::int[], $6::jsonb[], $7::boolean[]) AS u(id, v, te, grp, fresh, ns, mark)),"        \
	" upd AS (UPDATE jobs j SET latest_version = u.v, tenant = u.te,"                          \
	"   resource_group = u.grp, updated_at = now(), retired_at = NULL FROM u"                  \
	"   WHERE j.job_id = u.id AND u.fresh = 0),"                                               \
	" dn AS (DELETE FROM notifications n WHERE n.delivered_at IS NULL"                         \
	"   AND n.job_id = ANY ($1::text[]) AND EXISTS (SELECT 1 FROM u WHERE u.id = n.job_id"     \
	"     AND u.fresh = 0 AND NOT u.ns ? n.url)"                                               \
	"   RETURNING n.job_id, n.url, n.webhook_id),"                                             \
	" da AS (INSERT INTO audit_log (actor, action, scope, reason, details)"                    \
	"   SELECT $8, 'notification.drop', 'job:' || d.job_id, nullif($9, ''),"                   \
	"     jsonb_build_object('cause', 'its url is not in the job''s new version', 'url', d.url,"\
	"       'webhook_ids', jsonb_agg(d.webhook_id ORDER BY d.webhook_id))"                     \
	"   FROM dn d GROUP BY d.job_id, d.url),"                                                  \
	" sn AS (UPDATE notifications n SET secret = u.ns ->> n.url FROM u"                        \
	"   WHERE n.delivered_at IS NULL AND n.job_id = ANY ($1::text[]) AND u.id = n.job_id"      \
	"   AND u.fresh = 0 AND u.ns ? n.url AND n.secret <> u.ns ->> n.url),"                     \
	" ms AS (DELETE FROM notify_state s WHERE s.job_id = ANY ($1::text[])"                     \
	"   AND EXISTS (SELECT 1 FROM u WHERE u.id = s.job_id AND u.fresh = 0 AND NOT u.mark)"     \
	"   RETURNING s.job_id),"                                                                  \
	" mp AS (DELETE FROM notify_parts p WHERE p.job_id IN (SELECT job_id FROM ms))"            \
	" SELECT count(pg_notify('palisade_apply', u.id)) FROM u"

/* Statement 4c: an audit_log row per changed job (job.create, job.update
 * or job.retire, with the version and digest), by binary COPY. */
#define AUDIT_COPY_SQL                                                                             \
	"COPY audit_log (actor, action, scope, reason, details) FROM STDIN (FORMAT binary)"

/* Statement 4b: the version rows themselves, by binary COPY (the spec,
 * retry and target as jsonb; the plan_* columns are generated from the
 * spec by the server). */
#define VERSIONS_COPY_SQL                                                                          \
	"COPY job_versions (job_id, version, spec, digest, cron, timezone, misfire_policy,"        \
	" catchup_window_ms, max_catchup, overlap_policy, priority, deadline_ms, max_in_flight,"   \
	" idempotency_key, retry, resource_group, target, partitions, created_by, target_host,"    \
	" notify_own) FROM STDIN (FORMAT binary)"
enum { VERSIONS_COPY_FIELDS = 21 };

/*
 * The cron column of S's version: its schedule text (pal_schedule_text).
 * A job that names shared calendars gets "@calendars(NAME,...) " before
 * it: binaries before calendars (0.2.0) plan from this column and would
 * fire the instants the calendars exclude; their cron parser refuses the
 * prefix, so such a node quarantines the job instead (docs/upgrades.md).
 * The shard load strips it (src/store/plan.c); the spec keeps the schedule
 * as written.  NULL on ENOMEM or a bad `H` (which validation refuses), and
 * then the COPY fails on the column's NOT NULL; g_free.
 */
static char *cron_column(const pal_job_spec *s)
{
	char *text = NULL, e[256];
	if (pal_schedule_text(s, &text, e, sizeof e))
		return NULL;
	GString *g = g_string_new(NULL);
	for (size_t i = 0; i < s->n_calendars; i++)
		g_string_append_printf(g, "%s%s", i ? "," : "@calendars(", s->calendars[i].name);
	g_string_append_printf(g, "%s%s", s->n_calendars ? ") " : "", text);
	free(text);
	return g_string_free(g, FALSE);
}

/* One version row of item IT (version V) into CP. */
static void version_row(pal_apply *a, pal_pgcopy *cp, const struct item *it, int v)
{
	const pal_job_spec *s = it->s;
	char host[256], *cron = cron_column(s);
	pal_url_host(s->url, host, sizeof host);
	const char *c = it->canon;
	pal__pgcopy_row(cp, VERSIONS_COPY_FIELDS);
	pal__pgcopy_text(cp, s->id);
	pal__pgcopy_i32(cp, v);
	pal__pgcopy_jsonb_len(cp, c, strlen(c));
	pal__pgcopy_text(cp, it->hex);
	pal__pgcopy_text(cp, cron);
	g_free(cron);
	pal__pgcopy_text(cp, s->timezone);
	pal__pgcopy_text(cp, pal_misfire_policy_name(s->misfire));
	pal__pgcopy_i64(cp, s->catchup_window_ms);
	pal__pgcopy_i32(cp, s->max_catchup);
	pal__pgcopy_text(cp, pal_overlap_policy_name(s->overlap));
	pal__pgcopy_i32(cp, s->priority);
	pal__pgcopy_i64(cp, s->deadline_ms);
	pal__pgcopy_i32(cp, s->max_in_flight);
	pal__pgcopy_text(cp, s->idempotency_key);
	/* slices of the canonical text: parsing them is cheaper than
	 * spec -> 'retry' (measured: 290 -> 190 ms per 5000 versions) */
	pal__pgcopy_jsonb_len(cp, c + it->sp.retry_off, it->sp.retry_len);
	pal__pgcopy_text(cp, s->group);
	pal__pgcopy_jsonb_len(cp, c + it->sp.target_off, it->sp.target_len);
	pal__pgcopy_i32(cp, s->partitions);
	pal__pgcopy_text(cp, a->actor);
	pal__pgcopy_text(cp, host);
	if (!s->notify_merged)
		pal__pgcopy_text(cp, NULL);
	else
		pal__pgcopy_i32(cp, s->notify_none ? -1 : (int32_t)s->n_notify_own);
}

/* Statement 4 for the changed jobs of a chunk: 4a (waited for), the COPY
 * of 4c (waited for: the connection carries one statement at a time), then
 * the COPY of 4b, streamed: the server parses and inserts the first version
 * rows while the CLI builds the others (the larger part of its work here),
 * and its result is left pending: the CLI goes on (the next chunk, the next
 * file) while the server inserts the last rows. */
/* S's notify entries as a JSON object {url: secret reference} (free()),
 * NULL when out of memory; "{}" without any. */
static char *notify_urls_json(const pal_job_spec *s)
{
	json_t *o = json_object();
	for (size_t i = 0; o && i < s->n_notify; i++)
		json_object_set_new(o, s->notify[i].url, json_string(s->notify[i].secret));
	char *t = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	return t;
}

/* Whether one of S's notify entries lists an event that marks the job
 * failed (palisade_notify_result: failed, manual). */
static bool notify_marks(const pal_job_spec *s)
{
	for (size_t i = 0; i < s->n_notify; i++)
		if (s->notify[i].events &
		    ((1u << PAL_NOTIFY_FAILED) | (1u << PAL_NOTIFY_MANUAL)))
			return true;
	return false;
}

static int send_versions(pal_apply *a, struct item *it, size_t n, char *err, size_t errlen)
{
	enum { ID, VER, TEN, GRP, FRESH, NS, MARK, NA };
	pal_pgarr arr[NA];
	size_t m = 0;
	for (int k = 0; k < NA; k++)
		pal__pgarr_init(&arr[k]);
	for (size_t i = 0; i < n; i++) {
		const pal_job_spec *s = it[i].s;
		if (it[i].res->outcome == PAL_APPLY_UNCHANGED)
			continue;
		int v = it[i].latest + 1;
		pal__pgarr_text(&arr[ID], s->id);
		pal__pgarr_i64(&arr[VER], v);
		pal__pgarr_text(&arr[TEN], s->tenant);
		pal__pgarr_text(&arr[GRP], s->group);
		pal__pgarr_i64(&arr[FRESH], it[i].fresh);
		char *ns = notify_urls_json(s);
		pal__pgarr_text(&arr[NS], ns ? ns : "{}");
		free(ns);
		bool marks = notify_marks(s);
		pal__pgarr_text(&arr[MARK], marks ? "t" : "f");
		a->unmarks |= !marks && !it[i].fresh;
		if (marks && !it[i].fresh) {
			if (!a->n_told) {
				pal__pgarr_init(&a->told_ids);
				pal__pgarr_init(&a->told_vers);
			}
			pal__pgarr_text(&a->told_ids, s->id);
			pal__pgarr_i64(&a->told_vers, v);
			a->n_told++;
		}
		it[i].res->outcome = it[i].latest ? PAL_APPLY_UPDATED : PAL_APPLY_CREATED;
		it[i].res->version = v;
		m++;
	}
	const char *p[NA + 2];
	for (int k = 0; k < NA; k++)
		p[k] = pal__pgarr_end(&arr[k]);
	p[NA] = a->actor;
	p[NA + 1] = a->reason;
	int rc = m ? pal__apply_reapply_retired(a, it, n, err, errlen) : PAL_OK;
	if (m && !rc)
		rc = pal__apply_takeover_sweep(a, it, n, err, errlen);
	if (m && !rc) {
		PGresult *r = pal__store_query(a->st, VERSIONS_META_SQL, NA + 2, p, err, errlen);
		if (!r)
			rc = PAL_EDB;
		PQclear(r);
	}
	for (int k = 0; k < NA; k++)
		g_free((char *)p[k]);
	pal_pgcopy cp;
	if (m && !rc)
		rc = pal__pgcopy_begin(a->st, &cp, AUDIT_COPY_SQL, "auditing job versions", err,
				       errlen);
	if (m && !rc) {
		/* the digest is hex and the id [a-z0-9._-], so neither needs
		 * JSON escaping */
		GString *scope = g_string_new(NULL);
		char details[128];
		for (size_t i = 0; i < n; i++) {
			if (it[i].res->outcome == PAL_APPLY_UNCHANGED)
				continue;
			const pal_job_spec *s = it[i].s;
			int v = it[i].res->version;
			g_string_printf(scope, "job:%s", s->id);
			int dl = snprintf(details, sizeof details,
					  "{\"digest\": \"%s\", \"version\": %d}", it[i].hex, v);
			pal__pgcopy_row(&cp, 5);
			pal__pgcopy_text(&cp, a->actor);
			pal__pgcopy_text(&cp, a->retiring ? "job.retire"
					      : v == 1	  ? "job.create"
							  : "job.update");
			pal__pgcopy_text_len(&cp, scope->str, scope->len);
			pal__pgcopy_text(&cp, a->reason);
			pal__pgcopy_jsonb_len(&cp, details, (size_t)dl);
		}
		g_string_free(scope, TRUE);
		rc = pal__pgcopy_end(&cp, true, err, errlen);
	}
	if (m && !rc)
		rc = pal__pgcopy_begin(a->st, &cp, VERSIONS_COPY_SQL, "storing job versions", err,
				       errlen);
	if (m && !rc) {
		for (size_t i = 0; i < n; i++)
			if (it[i].res->outcome != PAL_APPLY_UNCHANGED)
				version_row(a, &cp, &it[i], it[i].res->version);
		rc = pal__pgcopy_end(&cp, false, err, errlen);
		if (!rc)
			a->pending = true;
	}
	return rc;
}

int pal_store_apply_calendars(pal_apply *a, pal_calendar *cals, size_t n, pal_apply_result *results,
			      char *err, size_t errlen)
{
	int rc = pal__apply_collect(a, err, errlen);
	if (!rc && !a->cals)
		a->cals = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, calendar_free);
	for (size_t i = 0; !rc && i < n; i++) {
		bool made;
		rc = pal__store_calendar_version(a->st, &cals[i], true, a->actor, a->reason, &made,
						 err, errlen);
		a->cals_changed |= !rc && made;
		if (!rc && results)
			results[i] = (pal_apply_result){.outcome = !made ? PAL_APPLY_UNCHANGED
								   : cals[i].version == 1
								       ? PAL_APPLY_CREATED
								       : PAL_APPLY_UPDATED,
							.version = cals[i].version};
		pal_calendar *c = rc ? NULL : malloc(sizeof *c);
		if (!rc && (!c || pal_calendar_copy(c, &cals[i]))) {
			free(c);
			snprintf(err, errlen, "out of memory");
			rc = PAL_ENOMEM;
		}
		if (!rc)
			g_hash_table_replace(a->cals, c->name, c);
	}
	return rc;
}

/* The calendar copies of S get the versions this apply stored.  A spec
 * from the files names only calendars of this apply (the same loader made
 * the copies: only the version is missing); one read back from the store
 * takes the stored calendar whole (rules and version) where this apply
 * stored that calendar and keeps its other copies as they are. */
static int stamp_calendars(pal_apply *a, const pal_job_spec *s, char *err, size_t errlen)
{
	for (size_t i = 0; i < s->n_calendars; i++) {
		pal_calendar *cur = &s->calendars[i];
		const pal_calendar *c = a->cals ? g_hash_table_lookup(a->cals, cur->name) : NULL;
		if (!c && a->stored_specs)
			continue;
		if (!c) {
			snprintf(
			    err, errlen,
			    "job %s: calendar \"%s\" is not part of this apply; hint: apply the "
			    "file that defines it together with the job",
			    s->id, cur->name);
			return PAL_EINVAL;
		}
		if (a->stored_specs && pal_job_spec_follow_calendar((pal_job_spec *)s, c, NULL)) {
			snprintf(err, errlen, "out of memory");
			return PAL_ENOMEM;
		}
		cur->version = c->version;
	}
	return PAL_OK;
}

static int apply_chunk(pal_apply *a, struct item *it, size_t n, char *err, size_t errlen)
{
	for (size_t i = 0; i < n; i++)
		*it[i].res = (pal_apply_result){.outcome = PAL_APPLY_CREATED}; /* until compared */
	qsort(it, n, sizeof *it, cmp_item);
	int rc = pal__apply_collect(a, err, errlen);
	/* the rules' entries go into every job's notify, but a retiring
	 * one's (that keeps its stored version's): read before the jobs COPY,
	 * which may fail in its savepoint (statement 1) */
	if (!rc && !a->retiring)
		rc = pal__apply_load_rules(a, err, errlen);
	/* After a chunk of new jobs only (a file of new jobs: the bench, a
	 * first apply) the next chunk is taken to be new as well and its
	 * rows go straight to the COPY, without the probe (~5 ms of server
	 * time and a round trip per 1,000 jobs).  Should one exist after
	 * all, the COPY fails on the key like in a race with another apply
	 * (one key violation in the server's log) and the chunk goes through
	 * jobs_upsert; the next chunks probe again. */
	bool assumed = a->all_new && !a->stored_specs;
	for (size_t i = 0; assumed && i < n; i++)
		it[i].fresh = true;
	if (!rc && !assumed)
		rc = probe_jobs(a, it, n, err, errlen);
	if (!rc)
		rc = jobs_copy_send(a, it, n, err, errlen);
	for (size_t i = 0; !rc && i < n; i++) {
		if ((rc = stamp_calendars(a, it[i].s, err, errlen)))
			break;
		/* without rules, a job that was never merged keeps its list as
		 * it is (notify_own NULL: all its own), at no cost */
		const pal_job_spec *js = it[i].s;
		bool merge = !a->retiring && (a->n_rules || js->notify_merged || js->notify_none);
		if (merge &&
		    (rc = pal_job_spec_merge_notify((pal_job_spec *)js, a->rules, a->n_rules))) {
			snprintf(err, errlen, "out of memory");
			break;
		}
		pal_secret_verdict sv = merge && a->secrets
					    ? pal_job_inherited_secrets_check(js, a->rules, a->n_rules,
									      a->secrets, err, errlen)
					    : PAL_SECRET_OK;
		if (sv != PAL_SECRET_OK) {
			rc = sv == PAL_SECRET_NODE ? PAL_EPERM : PAL_ENOGRANT;
			break;
		}
		rc = pal_job_spec_digest_spans(it[i].s, &it[i].canon, it[i].hex, &it[i].sp);
		if (rc)
			snprintf(err, errlen, "job %s: cannot canonicalise spec: %s", it[i].s->id,
				 pal_strerror(rc));
	}
	if (!rc)
		rc = jobs_copy_finish(a, it, n, err, errlen);
	a->all_new = !rc && n;
	for (size_t i = 0; a->all_new && i < n; i++)
		a->all_new = it[i].fresh;
	if (!rc)
		rc = lock_jobs(a, it, n, err, errlen);
	if (!rc)
		rc = compare_digests(a, it, n, err, errlen);
	if (!rc)
		rc = update_meta(a, it, n, err, errlen);
	if (!rc)
		rc = move_triggers(a, it, n, err, errlen);
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
			it[i] = (struct item){.s = &specs[off + i], .res = &results[off + i]};
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
	rc = pal_store_apply_calendars(a, set->calendars, set->n_calendars, NULL, err, errlen);
	if (!rc)
		rc = pal_store_apply_notify_rules(a, set->notify_rules, set->n_notify_rules, NULL,
						  err, errlen);
	if (!rc)
		rc = pal_store_apply_add(a, set->jobs, set->n, results, err, errlen);
	if (rc) {
		pal_store_apply_abort(a);
		return rc;
	}
	return pal_store_apply_commit(a, err, errlen);
}

int pal_store_apply_sync(pal_apply *a, char *err, size_t errlen)
{
	return pal__apply_collect(a, err, errlen);
}

int pal_apply_min_schema(const pal_job_spec *jobs, const pal_apply_result *res, size_t n,
			 const char **job, const char **key)
{
	int need = 0;
	*job = *key = NULL;
	for (size_t i = 0; i < n; i++) {
		const char *k;
		int s = pal_job_spec_min_schema(&jobs[i], &k);
		if (res[i].outcome != PAL_APPLY_UNCHANGED && s > need) {
			need = s;
			*key = k;
			*job = jobs[i].id;
		}
	}
	return need;
}
