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
#include "palisade/url.h"
#include "palisade/lifecycle.h"
#include "palisade/schedule.h"
#include "palisade/clock.h"
#include "pgcopy.h"

/* Jobs per set of statements: large enough that the round trips vanish
 * (~4 per chunk), small enough that a chunk's arrays stay a few MiB. */
#define CHUNK 5000

/* The rules' lock: taken shared by an apply that reads the rules (until
 * its commit), exclusive by one that changes them, so that the jobs an
 * apply creates with the rules it read are seen by the followers' scan of
 * a change of them, whichever commits first.  Every apply takes it in its
 * first statement (pal_store_apply_begin_rules), before any other lock:
 * an apply that took it later, after a calendar's or a job's audit row
 * (which holds the audit seal's lock until commit, palisade_audit_seal)
 * or a job's row lock, deadlocked with an apply of a rule that held it
 * and waited for those. */
#define RULES_LOCK "hashtextextended('palisade.notify_rules', 0)"

struct pal_apply {
	pal_store *st;
	char *actor, *reason;
	int nshards;
	bool pending;	/* statement 4 (or the jobs COPY) sent, result not read yet */
	bool jobs_copy; /* the pending result is the jobs COPY's (a savepoint open) */
	/* the last chunk's jobs were all new: the next chunk skips the probe
	 * and is assumed new too (see apply_chunk) */
	bool all_new;
	/* retiring (pal_store_apply_retire): statement 4 audits job.retire,
	 * and the jobs' owner and description are left as they are */
	bool retiring;
	/* the specs being added were read back from the store (retiring, a
	 * calendar's followers): their calendar copies keep the versions they
	 * carry, but for the calendars this apply stored (see stamp_calendars) */
	bool stored_specs;
	size_t meta_changed; /* jobs whose owner or description apply changed */
	/* calendar name -> pal_calendar (a copy, with its version): the
	 * calendars this apply stored */
	GHashTable *cals;
	bool cals_changed; /* one of them got a new version here */
	bool followed;	   /* apply_followers ran */
	/* the stored notify rules (load_rules), merged into every job added
	 * but a retiring one; reloaded after pal_store_apply_notify_rules
	 * changed one, whose scopes ("g NAME", "t NAME") rule_scopes holds */
	pal_notify_rule *rules;
	size_t n_rules;
	bool rules_loaded;
	bool rules_excl; /* the rules' lock is held exclusive (else shared) */
	/* the policy the inherited entries are checked under
	 * (pal_store_apply_secret_policy; NULL: not checked), borrowed */
	const pal_secret_policy *secrets;
	GHashTable *rule_scopes;
	int64_t now; /* the apply's time (apply_time), PAL_NO_TIME until read */
	/* the jobs its takeover sweeps cut (takeover_sweep), handed to the
	 * store at the commit for pal_store_apply_settle */
	struct pal__takeover *tk;
	/* the existing jobs it gave a version with an entry listing failed
	 * or manual, and those versions: told of a failure at the commit
	 * (TELL_SQL) */
	pal_pgarr told_ids, told_vers;
	size_t n_told;
	bool unmarks; /* it gave an existing job a version listing neither */
};

void pal__takeover_free(struct pal__takeover *t)
{
	if (!t)
		return;
	g_free(t->first);
	if (t->n) {
		g_free(pal__pgarr_end(&t->ids));
		g_free(pal__pgarr_end(&t->cuts));
		g_free(pal__pgarr_end(&t->versions));
		g_free(pal__pgarr_end(&t->retired));
	}
	free(t);
}

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

static int collect(pal_apply *a, char *err, size_t errlen)
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
	(void)collect(a, err, sizeof err);
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
	int rc = collect(a, err, errlen);
	if (!rc && a->n_told)
		rc = tell_failing(a, err, errlen);
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

/* One job of a chunk: its spec, canonical form and what happens to it. */
struct item {
	const pal_job_spec *s;
	pal_apply_result *res;
	char *canon;
	char hex[65];
	pal_canon_spans sp; /* of retry and target in canon */
	int latest;	    /* latest_version before this apply, 0 for a new job */
	bool fresh;	    /* its jobs row was inserted by this apply */
	bool meta;	    /* an existing job whose owner or description differ */
	bool moved;	    /* an existing job whose tenant or group differ */
	bool retired;	    /* an existing job retired before this apply */
};

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
 * job that moves pays. */
static int move_triggers(pal_apply *a, struct item *it, size_t n, char *err, size_t errlen)
{
	const char *p[3];
	size_t m = changed_arrays(it, n, true, p);
	int rc = PAL_OK;
	PGresult *r = NULL;
	if (m)
		rc = query_rows(
		    a,
		    "UPDATE triggers t SET tenant = u.te, resource_group = u.grp"
		    " FROM unnest($1::text[], $2::text[], $3::text[]) AS u(id, te, grp)"
		    " WHERE t.job_id = u.id"
		    "   AND t.state NOT IN ('succeeded', 'failed', 'cancelled', 'skipped',"
		    "    'paused', 'pausing')",
		    3, p, -1, &r, err, errlen);
	PQclear(r);
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

/* The cause of what `delete` cancels after its wait (pal_store_retire_sweep)
 * and a re-apply before it (REAPPLY_SQL). */
#define SWEEP_CAUSE "job retired (planned before its retiring version took over)"

/* Statement 4r, for a chunk that applies retired jobs again, or jobs whose
 * latest version has an `end` or is a one-shot, before 4a takes the
 * retired ones' retired_at away.  A job stopped by a version that took
 * over at its apply (4e, below) and applied again: the rows of
 * instants after now that 4e cancelled before any attempt are deleted as
 * below (the version applied now takes over at its apply after such a
 * stop, and plans them).  A retired job lives again from this apply's
 * time (now(), its versions' created_at), so
 *   - what the retirement left cancellable (pending, retry_wait, paused:
 *     planned by the old version before its retiring version took over,
 *     which `delete` sweeps after its wait) at or before now is cancelled,
 *     as that sweep would (the retired period is not run);
 *   - a row of an instant after now that a retirement cancelled before any
 *     attempt (a plan-key row, named in a `cancel` audit row whose cause is
 *     the retirement, with no attempt or ticket) is deleted: it never
 *     reached the service, and it would hold the plan key, so that no
 *     controller could plan the instant.  The version applied now takes
 *     over at the apply (the retiring version took over when it was stored:
 *     switch_point in src/controller/planner.c) and plans those instants by
 *     its own schedule, target and keys.
 * One audit row per job for each: `cancel` with the ids, and
 * `job.reapply` with {cause, deleted, trigger_ids, scheduled_at}.  Rows:
 * job_id, the cancelled count, the deleted count. */
#define REAPPLY_CANCELLABLE                                                                        \
	"t.job_id IN (SELECT job_id FROM j) AND t.state IN ('pending', 'retry_wait', 'paused')"    \
	" AND t.scheduled_at <= now()"
#define REAPPLY_MOVE PAL__TRIGGER_MOVE_WHERE(REAPPLY_CANCELLABLE, "'cancelled'", "NULL")
#define REAPPLY_SQL                                                                                \
	"WITH j AS (SELECT x.job_id FROM unnest($1::text[]) AS u(id)"                              \
	"   JOIN jobs x ON x.job_id = u.id WHERE x.retired_at IS NOT NULL),"                       \
	" c AS (SELECT m.job_id, m.id FROM " REAPPLY_MOVE " m),"                                   \
	" ca AS (INSERT INTO audit_log (actor, action, scope, reason, details)"                    \
	"   SELECT $2, 'cancel', 'job:' || c.job_id, $3, jsonb_build_object('cause', "             \
	"'" SWEEP_CAUSE "',"                                                                       \
	"     'cancelled', count(*), 'trigger_ids', jsonb_agg(c.id ORDER BY c.id))"                \
	"   FROM c GROUP BY c.job_id),"                                                            \
	" jo AS (SELECT x.job_id FROM unnest($4::text[]) AS u(id)"                                 \
	"   JOIN jobs x ON x.job_id = u.id),"                                                      \
	" old AS (SELECT t.id, t.job_id, t.scheduled_at FROM triggers t JOIN jo"                   \
	"   ON t.job_id = jo.job_id"                                                               \
	"   WHERE t.request_id IS NULL AND t.state = 'cancelled' AND t.attempt_count = 0"          \
	"   AND t.scheduled_at > now()"                                                            \
	"   AND NOT EXISTS (SELECT 1 FROM attempts x WHERE x.trigger_id = t.id"                     \
	"    AND x.scheduled_at = t.scheduled_at)"                                                  \
	"   AND NOT EXISTS (SELECT 1 FROM tickets k WHERE k.trigger_id = t.id)"                    \
	"   AND EXISTS (SELECT 1 FROM audit_log a"                                                 \
	"    WHERE a.at BETWEEN t.finished_at AND t.finished_at + interval '1 minute'"             \
	"    AND a.action = 'cancel' AND a.scope = 'job:' || t.job_id"                             \
	"    AND (a.details ->> 'cause' LIKE 'job retired%'"                                       \
	"     OR a.details ->> 'cause' LIKE 'a version that takes over at its apply%')"            \
	"    AND a.details -> 'trigger_ids' @> to_jsonb(t.id))),"                                  \
	" d AS (DELETE FROM triggers t USING old WHERE t.id = old.id"                              \
	"   AND t.scheduled_at = old.scheduled_at RETURNING t.id, t.job_id, t.scheduled_at),"      \
	" da AS (INSERT INTO audit_log (actor, action, scope, reason, details)"                    \
	"   SELECT $2, 'job.reapply', 'job:' || d.job_id, $3, jsonb_build_object('cause',"         \
	"     'job applied again: rows after it that its retirement, or a version that took over"  \
	" at its apply, cancelled before any attempt',"                                            \
	"     'deleted', count(*), 'trigger_ids', jsonb_agg(d.id ORDER BY d.id),"                  \
	"     'scheduled_at', jsonb_agg(d.scheduled_at ORDER BY d.id))"                            \
	"   FROM d GROUP BY d.job_id)"                                                             \
	" SELECT j.job_id, (SELECT count(*) FROM c WHERE c.job_id = j.job_id),"                    \
	"  (SELECT count(*) FROM d WHERE d.job_id = j.job_id) FROM j"

/* The jobs among IT whose latest version before this apply has an `end`
 * or is a one-shot (a version that may have taken over at its apply, 4e):
 * added to *ALL, their count to *M. */
static int after_takeover(pal_apply *a, struct item *it, size_t n, pal_pgarr *all, size_t *m,
			  char *err, size_t errlen)
{
	pal_pgarr ids, vers;
	size_t k = 0;
	pal__pgarr_init(&ids);
	pal__pgarr_init(&vers);
	for (size_t i = 0; i < n; i++) {
		if (it[i].fresh || it[i].retired || !it[i].latest ||
		    it[i].res->outcome == PAL_APPLY_UNCHANGED)
			continue;
		pal__pgarr_text(&ids, it[i].s->id);
		pal__pgarr_i64(&vers, it[i].latest);
		k++;
	}
	char *a1 = pal__pgarr_end(&ids), *a2 = pal__pgarr_end(&vers);
	const char *p[] = {a1, a2};
	int rc = PAL_OK;
	PGresult *r = NULL;
	if (k && !(r = pal__store_query(
			a->st,
			"SELECT u.id FROM unnest($1::text[], $2::int[]) AS u(id, ver)"
			" JOIN job_versions pv ON pv.job_id = u.id AND pv.version = u.ver"
			" WHERE pv.spec -> 'schedule' ->> 'end' IS NOT NULL"
			" OR pv.spec -> 'schedule' ? 'at'",
			2, p, err, errlen)))
		rc = PAL_EDB;
	for (int row = 0; r && row < PQntuples(r); row++) {
		pal__pgarr_text(all, PQgetvalue(r, row, 0));
		(*m)++;
	}
	PQclear(r);
	g_free(a1);
	g_free(a2);
	return rc;
}

static int reapply_retired(pal_apply *a, struct item *it, size_t n, char *err, size_t errlen)
{
	pal_pgarr ids, all;
	size_t m = 0;
	pal__pgarr_init(&ids);
	pal__pgarr_init(&all);
	for (size_t i = 0; i < n; i++)
		if (it[i].retired && it[i].res->outcome != PAL_APPLY_UNCHANGED) {
			pal__pgarr_text(&ids, it[i].s->id);
			pal__pgarr_text(&all, it[i].s->id);
			m++;
		}
	int rc = after_takeover(a, it, n, &all, &m, err, errlen);
	char *a1 = pal__pgarr_end(&ids), *a4 = pal__pgarr_end(&all);
	const char *p[] = {a1, a->actor, a->reason, a4};
	if (m && !rc) {
		PGresult *r = pal__store_query(a->st, REAPPLY_SQL, 4, p, err, errlen);
		if (!r)
			rc = PAL_EDB;
		PQclear(r);
	}
	g_free(a1);
	g_free(a4);
	return rc;
}

/* Statements 4e: where a new version takes over at its apply instead of
 * at the shard's watermark (switch_point in src/controller/planner.c):
 * one with no instant after the apply (its `end` reached or before its
 * next instant, a one-shot `at` past), and one whose schedule or whose
 * predecessor's is a one-shot `at` (docs/jobs.md, "Where a new version
 * takes over").  What the old version planned after that point, up to
 * the watermark, is not its to run: its unclaimed scheduled rows
 * (pending, paused, and shadow: a cut-over makes every shadow row at or
 * after its instant live, whatever version planned it) at or after the
 * cut are cancelled through the door, as `delete`'s sweep does, but for a
 * row at an instant the new version fires itself (it keeps the instant's
 * plan key and runs it once; a shadow one whose instant is live now goes
 * pending: TAKEOVER_LIVE_SQL).  A shadow row is dropped instead
 * (TAKEOVER_DROP_SQL), and only from the apply's next second: one before
 * it is an instant the old system has run.  The
 * cut is the new `end` where it is at or before the apply, else the
 * apply's next second.  A claimed row (running, retry_wait, ...) is left
 * to finish.  4e reads the candidates ($1 ids, $2 cuts or NULL: only when
 * the latest stored version is a one-shot, $3 the apply's next second);
 * 4f cancels the chosen ones ($1 ids, $2 instants, $3 actor, $4 reason)
 * with one `cancel` audit row per job. */
/* How the cron column of a one-shot's version reads (pal_schedule_text,
 * after a calendars prefix if any). */
#define ONE_SHOT_TEXT "@palisade;at="
#define NO_TIME_SQL "(-9223372036854775807 - 1)"
/* The jobs 4e looks at, each with its cut ($3: the apply's next second
 * where only an old one-shot makes the new version take over). */
#define TAKEOVER_JOBS_SQL                                                                          \
	"SELECT c.id, coalesce(c.cut, $3::bigint)"                                                 \
	" FROM (SELECT u.id, nullif(u.cut, " NO_TIME_SQL ") AS cut"                                \
	"  FROM unnest($1::text[], $2::bigint[]) AS u(id, cut)) c"                                 \
	" JOIN jobs j ON j.job_id = c.id"                                                          \
	" JOIN job_versions v ON v.job_id = c.id AND v.version = j.latest_version"                 \
	" WHERE c.cut IS NOT NULL OR strpos(v.cron, '" ONE_SHOT_TEXT "') > 0"
/* Their rows at or after the cut ($1 ids, $2 cuts; $3 the versions the
 * apply stored or NULL: with them, only the rows planned from an older
 * version, so that the sweep after the commit leaves a later version's;
 * $4 with them: 1 for a retired job applied again, whose rows are also
 * after the switch point its controller stored, none before it stored
 * one; $5 the apply's next second: a shadow row before it, even after a
 * past `end`, is an instant the old system has run), and whether each is
 * a shadow row. */
#define TAKEOVER_ROWS_SQL                                                                          \
	"SELECT t.job_id, t.id, floor(extract(epoch FROM t.scheduled_at))::bigint,"                \
	" t.state = 'shadow'"                                                                      \
	" FROM unnest($1::text[], $2::bigint[]) WITH ORDINALITY AS c(id, cut, k)"                  \
	" JOIN triggers t ON t.job_id = c.id AND t.state IN ('pending', 'paused', 'shadow')"       \
	"  AND t.source IN ('schedule', 'catchup') AND t.scheduled_at >= to_timestamp(c.cut)"      \
	"  AND (t.state <> 'shadow' OR t.scheduled_at >= to_timestamp($5::bigint))"                \
	"  AND ($3::int[] IS NULL OR t.version < ($3::int[])[c.k])"                                \
	"  AND ($4::int[] IS NULL OR ($4::int[])[c.k] = 0 OR t.scheduled_at > (SELECT"             \
	"   v.effective_from FROM job_versions v WHERE v.job_id = c.id"                            \
	"   AND v.version = ($3::int[])[c.k]))"                                                    \
	" ORDER BY t.job_id COLLATE \"C\", t.scheduled_at"
#define TAKEOVER_CANCEL_SQL                                                                        \
	"WITH m AS (SELECT m.job_id, m.id FROM " PAL__TRIGGER_MOVE(                                \
	    "SELECT t.id, t.scheduled_at, t.state FROM triggers t JOIN unnest($1::bigint[],"       \
	    " $2::bigint[]) AS c(id, at) ON t.id = c.id AND t.scheduled_at = to_timestamp(c.at)"   \
	    " WHERE t.state IN ('pending', 'paused', 'shadow')",                                   \
	    "'cancelled'", "NULL") " m)"                                                           \
	" INSERT INTO audit_log (actor, action, scope, reason, details)"                           \
	" SELECT $3, 'cancel', 'job:' || m.job_id, $4, jsonb_build_object('cause',"                \
	"   'a version that takes over at its apply (no instant after it, a one-shot, or a"        \
	" retired job applied again) replaced the version that planned them', 'cancelled',"        \
	"   count(*),"                                                                             \
	"   'trigger_ids', jsonb_agg(m.id ORDER BY m.id))"                                         \
	" FROM m GROUP BY m.job_id"
/* A row of an instant the new version excludes, never claimed nor tried
 * ($1 ids, $2 instants, $3 actor, $4 reason), is deleted rather than
 * cancelled: a cancelled row would keep the instant's plan key, so that
 * a later version that fires the instant again (the exclusion removed)
 * could not plan it, while its tick drops the `excluded` record.  One
 * `trigger.drop` audit row per job.  A row that does not qualify (claimed
 * meanwhile, or with an attempt or ticket) is left to TAKEOVER_CANCEL_SQL.
 * A `shadow` row (the old system's instant) is dropped the same way,
 * whatever the new version does at its instant: a cancelled upstream row
 * reads as finished or failed to a live `after:` dependent
 * (palisade_plan_after), an absent one plans it nothing there.  $5 the
 * audit row's cause. */
#define TAKEOVER_DROP_EXCLUDED                                                                     \
	"an instant the version that took over at its apply excludes, planned by the version it"   \
	" replaced and never claimed"
#define TAKEOVER_DROP_SHADOW                                                                       \
	"a shadow instant of the version that a version taking over at its apply replaced (the"    \
	" old system's to run), never claimed"
#define TAKEOVER_DROP_SQL                                                                          \
	"WITH d AS (DELETE FROM triggers t USING unnest($1::bigint[], $2::bigint[]) AS c(id, at)"  \
	"   WHERE t.id = c.id AND t.scheduled_at = to_timestamp(c.at)"                             \
	"   AND t.state IN ('pending', 'paused', 'shadow') AND t.request_id IS NULL"               \
	"   AND t.attempt_count = 0"                                                               \
	"   AND NOT EXISTS (SELECT 1 FROM attempts x WHERE x.trigger_id = t.id"                     \
	"    AND x.scheduled_at = t.scheduled_at)"                                                  \
	"   AND NOT EXISTS (SELECT 1 FROM tickets k WHERE k.trigger_id = t.id)"                    \
	"   RETURNING t.id, t.job_id, t.scheduled_at)"                                             \
	" INSERT INTO audit_log (actor, action, scope, reason, details)"                           \
	" SELECT $3, 'trigger.drop', 'job:' || d.job_id, $4, jsonb_build_object('cause',"          \
	"   $5::text, 'dropped', count(*),"                                                        \
	"   'trigger_ids', jsonb_agg(d.id ORDER BY d.id),"                                         \
	"   'scheduled_at', jsonb_agg(d.scheduled_at ORDER BY d.id))"                              \
	" FROM d GROUP BY d.job_id"
/* A shadow row kept at an instant the new version fires ($1 ids, $2
 * instants, $3 actor, $4 reason) whose instant is live now
 * (PAL__SHADOW_LIVE: on its nominal instant, as a cut-over judges it):
 * shadow -> pending through the door, as the cut-over's move (CUT_MOVE in
 * src/store/shadow.c) would have made it, one `trigger.live` audit row per
 * job.  Such a row is one a cut-over left shadow because its job was
 * retired then: kept shadow in a live scope, it would hold the instant's
 * plan key with no one to run it.  It keeps its version and the plan key,
 * as a kept pending row does, and runs the instant once. */
#define TAKEOVER_LIVE_CAUSE                                                                        \
	"a shadow instant of the version that a version taking over at its apply replaced, at an"  \
	" instant that version fires and that a cut-over has made live since it was planned"
#define TAKEOVER_LIVE_SQL                                                                          \
	"WITH m AS (SELECT m.job_id, m.id FROM " PAL__TRIGGER_MOVE(                                \
	    "SELECT t.id, t.scheduled_at, t.state FROM triggers t JOIN unnest($1::bigint[],"       \
	    " $2::bigint[]) AS c(id, at) ON t.id = c.id AND t.scheduled_at = to_timestamp(c.at)"   \
	    " WHERE t.state = 'shadow' AND " PAL__SHADOW_LIVE("t"),                                \
	    "'pending'", "NULL") " m)"                                                             \
	" INSERT INTO audit_log (actor, action, scope, reason, details)"                           \
	" SELECT $3, 'trigger.live', 'job:' || m.job_id, $4, jsonb_build_object('cause', $5::text," \
	"   'moved', count(*), 'trigger_ids', jsonb_agg(m.id ORDER BY m.id))"                      \
	" FROM m GROUP BY m.job_id"

/* The apply's time (the transaction's, the versions' created_at), in
 * whole seconds as the planner reads it. */
static int apply_time(pal_apply *a, char *err, size_t errlen)
{
	if (a->now != PAL_NO_TIME)
		return PAL_OK;
	return pal__store_query_i64(a->st, "SELECT floor(extract(epoch FROM now()))::bigint", 0,
				    NULL, PAL_NO_TIME, &a->now, err, errlen);
}

/* Where 4e cuts the old version's rows of S (stored at NOW) when S itself
 * takes over at its apply, or PAL_NO_TIME (then only an old one-shot makes
 * it take over there). */
static int64_t takeover_cut(const pal_job_spec *s, int64_t now)
{
	pal_schedule *sc;
	char e[256];
	int64_t x;
	bool ex;
	if (!s->has_end && !s->has_at)
		return PAL_NO_TIME; /* cron and `every` go on for ever */
	if (pal_schedule_open(s, &sc, e, sizeof e))
		return PAL_NO_TIME; /* validation refuses such a spec */
	bool none = pal_schedule_next_from(sc, now, now, &x, &ex) != PAL_OK;
	pal_schedule_close(sc);
	if (none)
		return s->has_end && s->end <= now ? s->end : now + 1;
	return s->has_at ? now + 1 : PAL_NO_TIME;
}

/* What S, taking over at NOW, does with instant AT: fires it itself,
 * excludes it (S records it `excluded`, so the old row must go, and must
 * not keep its plan key), or has no such instant. */
enum at_fate { AT_NONE, AT_FIRES, AT_EXCLUDED };

static enum at_fate fires_at(const pal_job_spec *s, int64_t now, int64_t at)
{
	pal_schedule *sc;
	char e[256];
	int64_t x;
	bool ex;
	enum at_fate f = AT_NONE;
	if (at <= now || pal_schedule_open(s, &sc, e, sizeof e))
		return AT_NONE;
	if (pal_schedule_next_from(sc, now, at - 1, &x, &ex) == PAL_OK && x == at)
		f = ex ? AT_EXCLUDED : AT_FIRES;
	pal_schedule_close(sc);
	return f;
}

/* 4e's rows of the jobs IDS (cuts CUTS, literals) but those at an instant
 * their version (SPEC: id -> pal_job_spec) taking over at NOW fires itself:
 * those at an instant it excludes dropped where never claimed nor tried
 * (TAKEOVER_DROP_SQL), the others cancelled, all audited (4f); their count
 * added to *CANCELLED.  A shadow row kept at an instant the version fires
 * goes pending where its instant is live now (TAKEOVER_LIVE_SQL). */
static int takeover_cancel(pal_store *st, const char *ids, const char *cuts, const char *vers,
			   const char *retired, GHashTable *spec, int64_t now, const char *actor,
			   const char *reason, int64_t *cancelled, char *err, size_t errlen)
{
	char nx[24];
	snprintf(nx, sizeof nx, "%" PRId64, now + 1);
	const char *p[] = {ids, cuts, vers, retired, nx};
	PGresult *r = pal__store_query(st, TAKEOVER_ROWS_SQL, 5, p, err, errlen);
	if (!r)
		return PAL_EDB;
	pal_pgarr tid, tat, xid, xat, sid, sat, lid, lat;
	pal__pgarr_init(&lid);
	pal__pgarr_init(&lat);
	pal__pgarr_init(&tid);
	pal__pgarr_init(&tat);
	pal__pgarr_init(&xid);
	pal__pgarr_init(&xat);
	pal__pgarr_init(&sid);
	pal__pgarr_init(&sat);
	size_t k = 0, kx = 0, ks = 0, kl = 0;
	for (int row = 0; row < PQntuples(r); row++) {
		const pal_job_spec *s = g_hash_table_lookup(spec, PQgetvalue(r, row, 0));
		int64_t at = strtoll(PQgetvalue(r, row, 2), NULL, 10);
		int64_t id = strtoll(PQgetvalue(r, row, 1), NULL, 10);
		enum at_fate f = s ? fires_at(s, now, at) : AT_FIRES;
		if (f == AT_FIRES) {
			if (PQgetvalue(r, row, 3)[0] == 't') {
				pal__pgarr_i64(&lid, id);
				pal__pgarr_i64(&lat, at);
				kl++;
			}
			continue;
		}
		if (PQgetvalue(r, row, 3)[0] == 't') {
			pal__pgarr_i64(&sid, id);
			pal__pgarr_i64(&sat, at);
			ks++;
		} else if (f == AT_EXCLUDED) {
			pal__pgarr_i64(&xid, id);
			pal__pgarr_i64(&xat, at);
			kx++;
		}
		pal__pgarr_i64(&tid, id);
		pal__pgarr_i64(&tat, at);
		k++;
	}
	PQclear(r);
	char *p1 = pal__pgarr_end(&tid), *p2 = pal__pgarr_end(&tat);
	char *x1 = pal__pgarr_end(&xid), *x2 = pal__pgarr_end(&xat);
	char *s1 = pal__pgarr_end(&sid), *s2 = pal__pgarr_end(&sat);
	char *l1 = pal__pgarr_end(&lid), *l2 = pal__pgarr_end(&lat);
	const char *q[] = {p1, p2, actor, reason};
	const char *ql[] = {l1, l2, actor, reason, TAKEOVER_LIVE_CAUSE};
	const char *qx[] = {x1, x2, actor, reason, TAKEOVER_DROP_EXCLUDED};
	const char *qs[] = {s1, s2, actor, reason, TAKEOVER_DROP_SHADOW};
	int rc = PAL_OK;
	/* the drops first: what they leave (claimed meanwhile, tried) the
	 * cancel takes as any other row (every row a drop is given is in
	 * tid too) */
	if (kx) {
		r = pal__store_query(st, TAKEOVER_DROP_SQL, 5, qx, err, errlen);
		if (!r)
			rc = PAL_EDB;
		PQclear(r);
	}
	if (!rc && ks) {
		r = pal__store_query(st, TAKEOVER_DROP_SQL, 5, qs, err, errlen);
		if (!r)
			rc = PAL_EDB;
		PQclear(r);
	}
	if (!rc && k) {
		r = pal__store_query(st, TAKEOVER_CANCEL_SQL, 4, q, err, errlen);
		if (!r)
			rc = PAL_EDB;
		PQclear(r);
	}
	if (!rc && kl) {
		r = pal__store_query(st, TAKEOVER_LIVE_SQL, 5, ql, err, errlen);
		if (!r)
			rc = PAL_EDB;
		PQclear(r);
	}
	if (!rc)
		*cancelled += (int64_t)k;
	g_free(l1);
	g_free(l2);
	g_free(p1);
	g_free(p2);
	g_free(x1);
	g_free(x2);
	g_free(s1);
	g_free(s2);
	return rc;
}

/* Job ID (its cut, the version stored) into the jobs the sweep after the
 * commit looks at (pal_store_apply_settle). */
static int takeover_add(pal_apply *a, const char *id, int64_t cut, int version, bool retired,
			char *err, size_t errlen)
{
	if (!a->tk)
		a->tk = calloc(1, sizeof *a->tk);
	if (!a->tk) {
		snprintf(err, errlen, "out of memory");
		return PAL_ENOMEM;
	}
	if (!a->tk->first)
		a->tk->first = g_strdup(id);
	if (!a->tk->n) {
		pal__pgarr_init(&a->tk->ids);
		pal__pgarr_init(&a->tk->cuts);
		pal__pgarr_init(&a->tk->versions);
		pal__pgarr_init(&a->tk->retired);
	}
	pal__pgarr_text(&a->tk->ids, id);
	pal__pgarr_i64(&a->tk->cuts, cut);
	pal__pgarr_i64(&a->tk->versions, version);
	pal__pgarr_i64(&a->tk->retired, retired);
	a->tk->n++;
	a->tk->now = a->now;
	return PAL_OK;
}

static int takeover_sweep(pal_apply *a, struct item *it, size_t n, char *err, size_t errlen)
{
	if (a->retiring)
		return PAL_OK; /* retire_chunk cancels them all */
	pal_pgarr ids, cuts;
	size_t m = 0;
	int rc = PAL_OK;
	GHashTable *spec = g_hash_table_new(g_str_hash, g_str_equal);
	GHashTable *ver = g_hash_table_new(g_str_hash, g_str_equal);
	pal__pgarr_init(&ids);
	pal__pgarr_init(&cuts);
	for (size_t i = 0; !rc && i < n; i++) {
		if (it[i].fresh || it[i].res->outcome == PAL_APPLY_UNCHANGED)
			continue;
		if ((rc = apply_time(a, err, errlen)))
			break;
		/* A retired job applied again lives from the apply on: what an
		 * older version planned after the apply that the retirement's
		 * sweep did not reach (a tick in flight, `delete` that did not
		 * wait) is not its to run (REAPPLY_SQL cancelled the rows up to
		 * the apply).  Swept after the commit only, past the switch
		 * point its controller stores: at the apply when the controller
		 * had taken the retiring version in, at its watermark when it
		 * went from the old version straight to this one (the old
		 * version keeps its instants up to it, as for any new version). */
		if (it[i].retired) {
			if ((rc = takeover_add(a, it[i].s->id, a->now + 1, it[i].res->version,
					       true, err, errlen)))
				break;
			continue;
		}
		int64_t cut = takeover_cut(it[i].s, a->now);
		pal__pgarr_text(&ids, it[i].s->id);
		pal__pgarr_i64(&cuts, cut); /* PAL_NO_TIME: NULL (nullif below) */
		g_hash_table_insert(spec, (gpointer)it[i].s->id, (gpointer)it[i].s);
		g_hash_table_insert(ver, (gpointer)it[i].s->id,
				    GINT_TO_POINTER(it[i].res->version));
		m++;
	}
	char *p1 = pal__pgarr_end(&ids), *p2 = pal__pgarr_end(&cuts), nx[24];
	snprintf(nx, sizeof nx, "%" PRId64, a->now + 1);
	const char *p[] = {p1, p2, nx};
	PGresult *r = NULL;
	if (!rc && m && !(r = pal__store_query(a->st, TAKEOVER_JOBS_SQL, 3, p, err, errlen)))
		rc = PAL_EDB;
	g_free(p1);
	g_free(p2);
	/* the jobs and their cuts, for this sweep and, kept in the apply, for
	 * the one after its commit (pal_store_apply_settle) */
	pal__pgarr_init(&ids);
	pal__pgarr_init(&cuts);
	for (int row = 0; r && row < PQntuples(r); row++) {
		const char *id = PQgetvalue(r, row, 0), *cut = PQgetvalue(r, row, 1);
		pal__pgarr_text(&ids, id);
		pal__pgarr_i64(&cuts, strtoll(cut, NULL, 10));
		if ((rc = takeover_add(a, id, strtoll(cut, NULL, 10),
				       GPOINTER_TO_INT(g_hash_table_lookup(ver, id)), false, err,
				       errlen)))
			break;
	}
	int64_t k = 0;
	bool any = r && PQntuples(r) > 0;
	PQclear(r);
	p1 = pal__pgarr_end(&ids);
	p2 = pal__pgarr_end(&cuts);
	if (!rc && any)
		rc = takeover_cancel(a->st, p1, p2, NULL, NULL, spec, a->now, a->actor, a->reason,
				     &k, err, errlen);
	g_free(p1);
	g_free(p2);
	g_hash_table_destroy(spec);
	g_hash_table_destroy(ver);
	return rc;
}

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
	int rc = m ? reapply_retired(a, it, n, err, errlen) : PAL_OK;
	if (m && !rc)
		rc = takeover_sweep(a, it, n, err, errlen);
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
	int rc = collect(a, err, errlen);
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

/* ---- notify rules (docs/jobs.md, "Notify rules") ----------------------------- */

/* The stored rules, by scope (group first), name and url: the order
 * pal_job_spec_merge_notify inherits them in. */
#define RULES_SQL                                                                                  \
	"SELECT scope = 'tenant', name, url, array_to_string(events, ' '), secret"                 \
	" FROM notify_rules ORDER BY scope, name COLLATE \"C\", url COLLATE \"C\""

static int cmp_rule(const void *x, const void *y)
{
	const pal_notify_rule *a = x, *b = y;
	if (a->tenant != b->tenant)
		return a->tenant ? 1 : -1;
	int c = strcmp(a->name, b->name);
	return c ? c : strcmp(a->n.url, b->n.url);
}

/* The stored rules into *OUT, *N (rules_free). */
static int read_rules(pal_store *st, pal_notify_rule **out, size_t *n, char *err, size_t errlen)
{
	*out = NULL;
	*n = 0;
	PGresult *r = pal__store_query(st, RULES_SQL, 0, NULL, err, errlen);
	if (!r)
		return PAL_EDB;
	size_t m = (size_t)PQntuples(r);
	pal_notify_rule *v = calloc(m ? m : 1, sizeof *v);
	int rc = v ? PAL_OK : PAL_ENOMEM;
	for (size_t i = 0; !rc && i < m; i++) {
		pal_notify_rule *x = &v[i];
		x->tenant = !strcmp(PQgetvalue(r, (int)i, 0), "t");
		x->name = strdup(PQgetvalue(r, (int)i, 1));
		x->n.url = strdup(PQgetvalue(r, (int)i, 2));
		x->n.secret = strdup(PQgetvalue(r, (int)i, 4));
		gchar **ev = g_strsplit(PQgetvalue(r, (int)i, 3), " ", -1);
		for (size_t k = 0; ev[k]; k++)
			for (int e = 0; e < PAL_NOTIFY_N_EVENTS; e++)
				if (!strcmp(ev[k], pal_notify_event_names[e]))
					x->n.events |= 1u << e;
		g_strfreev(ev);
		if (!x->name || !x->n.url || !x->n.secret)
			rc = PAL_ENOMEM;
	}
	PQclear(r);
	if (rc) {
		rules_free(v, m);
		snprintf(err, errlen, "out of memory");
		return rc;
	}
	*out = v;
	*n = m;
	return PAL_OK;
}

static int load_rules(pal_apply *a, char *err, size_t errlen)
{
	if (a->rules_loaded)
		return PAL_OK;
	rules_free(a->rules, a->n_rules);
	a->rules = NULL;
	a->n_rules = 0;
	int rc = read_rules(a->st, &a->rules, &a->n_rules, err, errlen);
	a->rules_loaded = !rc;
	return rc;
}

/* RULE's events as a text[] literal ("{failed,manual}"; g_free). */
static char *rule_events(const pal_notify *n)
{
	GString *g = g_string_new("{");
	for (int e = 0; e < PAL_NOTIFY_N_EVENTS; e++)
		if (n->events & (1u << e))
			g_string_append_printf(g, "%s%s", g->len > 1 ? "," : "",
					       pal_notify_event_names[e]);
	g_string_append_c(g, '}');
	return g_string_free(g, FALSE);
}

/* Insert or update one rule, audited; the row's "existed" when it changed. */
#define RULE_UPSERT_SQL                                                                            \
	"WITH old AS (SELECT 1 FROM notify_rules WHERE scope = $1 AND name = $2 AND url = $3),"    \
	" up AS (INSERT INTO notify_rules (scope, name, url, events, secret, updated_by)"          \
	"  VALUES ($1, $2, $3, $4::text[], $5, $6)"                                                \
	"  ON CONFLICT (scope, name, url) DO UPDATE SET events = EXCLUDED.events,"                 \
	"   secret = EXCLUDED.secret, updated_by = EXCLUDED.updated_by, updated_at = now()"        \
	"  WHERE (notify_rules.events, notify_rules.secret)"                                       \
	"   IS DISTINCT FROM (EXCLUDED.events, EXCLUDED.secret)"                                   \
	"  RETURNING EXISTS (SELECT 1 FROM old) AS existed),"                                      \
	" aud AS (INSERT INTO audit_log (actor, action, scope, reason, details)"                   \
	"  SELECT $6, CASE WHEN existed THEN 'notify_rule.update' ELSE 'notify_rule.create' END,"  \
	"   'notify_rule:' || $1 || ':' || $2, nullif($7, ''),"                                    \
	"   jsonb_build_object('url', $3, 'events', to_jsonb($4::text[]), 'secret', $5) FROM up)"  \
	" SELECT existed FROM up"

#define RULE_DELETE_SQL                                                                            \
	"WITH d AS (DELETE FROM notify_rules WHERE scope = $1 AND name = $2 AND url = $3"          \
	"  RETURNING 1),"                                                                          \
	" aud AS (INSERT INTO audit_log (actor, action, scope, reason, details)"                   \
	"  SELECT $4, 'notify_rule.delete', 'notify_rule:' || $1 || ':' || $2, nullif($5, ''),"    \
	"   jsonb_build_object('url', $3) FROM d)"                                                 \
	" SELECT count(*) FROM d"

int pal_store_apply_notify_rules(pal_apply *a, const pal_notify_rule *rules, size_t n,
				 pal_rule_outcome *out, char *err, size_t errlen)
{
	int rc = collect(a, err, errlen);
	if (!rc && n && !a->rules_excl) {
		/* two applies of rules: the second waits for the first, then
		 * sees its rules (and its followers' versions); see RULES_LOCK.
		 * Taken here only by an apply begun without it (its caller
		 * could not tell that rules would come): it holds the lock
		 * shared already, and two such applies at once deadlock on it
		 * (PostgreSQL aborts one; nothing of it is stored). */
		PGresult *l = pal__store_query(
		    a->st, "SELECT pg_advisory_xact_lock(" RULES_LOCK ")", 0, NULL, err, errlen);
		rc = l ? PAL_OK : PAL_EDB;
		PQclear(l);
		a->rules_excl = !rc;
	}
	for (size_t i = 0; !rc && i < n; i++) {
		const pal_notify_rule *x = &rules[i];
		const char *scope = x->tenant ? "tenant" : "group";
		pal_rule_outcome o = PAL_RULE_UNCHANGED;
		PGresult *r;
		if (x->remove) {
			const char *p[] = {scope, x->name, x->n.url, a->actor, a->reason};
			r = pal__store_query(a->st, RULE_DELETE_SQL, 5, p, err, errlen);
			if (r && atoi(PQgetvalue(r, 0, 0)) > 0)
				o = PAL_RULE_REMOVED;
		} else {
			char *ev = rule_events(&x->n);
			const char *p[] = {scope,	x->name,  x->n.url, ev,
					   x->n.secret, a->actor, a->reason};
			r = pal__store_query(a->st, RULE_UPSERT_SQL, 7, p, err, errlen);
			g_free(ev);
			if (r && PQntuples(r))
				o = !strcmp(PQgetvalue(r, 0, 0), "t") ? PAL_RULE_UPDATED
								      : PAL_RULE_CREATED;
		}
		if (!r) {
			rc = PAL_EDB;
			break;
		}
		PQclear(r);
		if (out)
			out[i] = o;
		if (o == PAL_RULE_UNCHANGED)
			continue;
		if (!a->rule_scopes)
			a->rule_scopes =
			    g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
		g_hash_table_add(a->rule_scopes,
				 g_strdup_printf("%c %s", x->tenant ? 't' : 'g', x->name));
		a->rules_loaded = false;
	}
	return rc;
}

int pal_store_notify_rules_overlay(pal_store *st, const pal_notify_rule *rules, size_t n,
				   pal_notify_rule **out, size_t *nout, char *err, size_t errlen)
{
	pal_notify_rule *v;
	size_t ns;
	int rc = read_rules(st, &v, &ns, err, errlen);
	if (rc)
		return rc;
	pal_notify_rule *all = calloc(ns + n + 1, sizeof *all);
	size_t m = ns;
	if (!all) {
		rules_free(v, ns);
		snprintf(err, errlen, "out of memory");
		return PAL_ENOMEM;
	}
	if (ns)
		memcpy(all, v, ns * sizeof *v);
	free(v);
	for (size_t i = 0; !rc && i < n; i++) {
		const pal_notify_rule *x = &rules[i];
		size_t k = 0;
		while (k < ns && !(all[k].tenant == x->tenant && !strcmp(all[k].name, x->name) &&
				   !strcmp(all[k].n.url, x->n.url)))
			k++;
		if (k == ns)
			k = m++;
		else
			pal_notify_rule_clear(&all[k]);
		all[k].tenant = x->tenant;
		all[k].remove = x->remove;
		all[k].n.events = x->n.events;
		if (!(all[k].name = strdup(x->name)) || !(all[k].n.url = strdup(x->n.url)) ||
		    (x->n.secret && !(all[k].n.secret = strdup(x->n.secret))))
			rc = PAL_ENOMEM;
	}
	if (rc) {
		rules_free(all, m);
		snprintf(err, errlen, "out of memory");
		return rc;
	}
	/* by scope, name and url, as read_rules orders them (apply merges
	 * in that order) */
	qsort(all, m, sizeof *all, cmp_rule);
	*out = all;
	*nout = m;
	return PAL_OK;
}

int pal_store_merge_notify_rules(pal_store *st, pal_jobset *set, char *err, size_t errlen)
{
	pal_notify_rule *all;
	size_t m;
	int rc = pal_store_notify_rules_overlay(st, set->notify_rules, set->n_notify_rules, &all,
						&m, err, errlen);
	for (size_t i = 0; !rc && i < set->n; i++)
		if ((rc = pal_job_spec_merge_notify(&set->jobs[i], all, m)))
			snprintf(err, errlen, "out of memory");
	if (!rc)
		rules_free(all, m);
	return rc;
}

/* The live jobs of the groups and tenants of RULES[0..n) that inherit
 * (not notify: []), as [{job_id, spec, notify_own}] (plan diff). */
#define RULE_SCOPE_JOBS_SQL                                                                        \
	"SELECT coalesce(json_agg(json_build_object('job_id', j.job_id, 'spec', v.spec,"           \
	"  'notify_own', v.notify_own::text) ORDER BY j.job_id COLLATE \"C\"), '[]')::text"        \
	" FROM jobs j JOIN job_versions v ON v.job_id = j.job_id AND v.version = j.latest_version" \
	" WHERE j.retired_at IS NULL AND v.notify_own IS DISTINCT FROM -1"                         \
	"  AND (j.resource_group = ANY ($1::text[]) OR j.tenant = ANY ($2::text[]))"

int pal_store_rule_scope_jobs_json(pal_store *st, const pal_notify_rule *rules, size_t n,
				   json_t **out, char *err, size_t errlen)
{
	pal_pgarr g, t;
	pal__pgarr_init(&g);
	pal__pgarr_init(&t);
	for (size_t i = 0; i < n; i++)
		pal__pgarr_text(rules[i].tenant ? &t : &g, rules[i].name);
	char *p[] = {pal__pgarr_end(&g), pal__pgarr_end(&t)};
	int rc = pal__store_query_json(st, RULE_SCOPE_JOBS_SQL, 2, (const char *const *)p, out, err,
				       errlen);
	g_free(p[0]);
	g_free(p[1]);
	return rc;
}

static int apply_chunk(pal_apply *a, struct item *it, size_t n, char *err, size_t errlen)
{
	for (size_t i = 0; i < n; i++)
		*it[i].res = (pal_apply_result){.outcome = PAL_APPLY_CREATED}; /* until compared */
	qsort(it, n, sizeof *it, cmp_item);
	int rc = collect(a, err, errlen);
	/* the rules' entries go into every job's notify, but a retiring
	 * one's (that keeps its stored version's): read before the jobs COPY,
	 * which may fail in its savepoint (statement 1) */
	if (!rc && !a->retiring)
		rc = load_rules(a, err, errlen);
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

/* ---- a calendar's followers --------------------------------------------------- */

/* Add the stored specs of R's rows (job_id, spec, notify_own) again, as
 * followers: FN gets those that got a new version. */
static int add_followers(pal_apply *a, PGresult *r, pal_apply_follow_fn fn, void *ctx,
			 const char *follows, char *err, size_t errlen)
{
	int rc = PAL_OK;
	size_t n = (size_t)PQntuples(r);
	pal_job_spec *specs = calloc(n ? n : 1, sizeof *specs);
	pal_apply_result *res = calloc(n ? n : 1, sizeof *res);
	size_t m = 0;
	if (!specs || !res) {
		snprintf(err, errlen, "out of memory");
		rc = PAL_ENOMEM;
	}
	for (; !rc && m < n; m++) {
		json_error_t je;
		json_t *j = json_loads(PQgetvalue(r, (int)m, 1), 0, &je);
		char e[512];
		if (!j || pal_job_spec_from_canonical(j, &specs[m], e, sizeof e)) {
			snprintf(err, errlen, "job %s: stored spec unreadable: %s",
				 PQgetvalue(r, (int)m, 0), j ? e : je.text);
			rc = PAL_EINVAL;
		}
		json_decref(j);
		if (!rc)
			pal_job_spec_stored_notify_own(&specs[m], PQgetvalue(r, (int)m, 2));
	}
	if (!rc && n) {
		a->stored_specs = true;
		rc = pal_store_apply_add(a, specs, n, res, err, errlen);
		a->stored_specs = false;
	}
	for (size_t i = 0; !rc && fn && i < n; i++)
		if (res[i].outcome != PAL_APPLY_UNCHANGED)
			fn(ctx, specs[i].id, res[i].version, follows);
	for (size_t i = 0; i < m; i++)
		pal_job_spec_clear(&specs[i]);
	free(specs);
	free(res);
	return rc;
}

/* The live jobs of the groups ($1) and tenants ($2) whose rules changed,
 * but those that opted out (notify: []): locked first, then read by a
 * statement of its own (as the calendars' followers, FOLLOWERS_LOCK_SQL). */
#define RULE_FOLLOWERS_LOCK_SQL                                                                    \
	"SELECT j.job_id FROM jobs j WHERE j.retired_at IS NULL"                                   \
	" AND (j.resource_group = ANY ($1::text[]) OR j.tenant = ANY ($2::text[]))"                \
	" ORDER BY j.job_id COLLATE \"C\" FOR UPDATE OF j"
#define RULE_FOLLOWERS_SQL                                                                         \
	"SELECT j.job_id, v.spec::text, v.notify_own"                                              \
	" FROM jobs j JOIN job_versions v ON v.job_id = j.job_id AND v.version = j.latest_version" \
	" WHERE j.retired_at IS NULL AND v.notify_own IS DISTINCT FROM -1"                         \
	"  AND (j.resource_group = ANY ($1::text[]) OR j.tenant = ANY ($2::text[]))"               \
	" ORDER BY j.job_id COLLATE \"C\""

static int rule_followers(pal_apply *a, pal_apply_follow_fn fn, void *ctx, char *err, size_t errlen)
{
	pal_pgarr g, t;
	pal__pgarr_init(&g);
	pal__pgarr_init(&t);
	GHashTableIter hi;
	gpointer k;
	g_hash_table_iter_init(&hi, a->rule_scopes);
	while (g_hash_table_iter_next(&hi, &k, NULL)) {
		const char *key = k;
		pal__pgarr_text(key[0] == 't' ? &t : &g, key + 2);
	}
	char *p[] = {pal__pgarr_end(&g), pal__pgarr_end(&t)};
	PGresult *r = pal__store_query(a->st, RULE_FOLLOWERS_LOCK_SQL, 2, (const char *const *)p,
				       err, errlen);
	if (r) {
		PQclear(r);
		r = pal__store_query(a->st, RULE_FOLLOWERS_SQL, 2, (const char *const *)p, err,
				     errlen);
	}
	g_free(p[0]);
	g_free(p[1]);
	if (!r)
		return PAL_EDB;
	int rc = add_followers(a, r, fn, ctx, "its group's or tenant's notify rules", err, errlen);
	PQclear(r);
	return rc;
}

int pal_store_apply_followers(pal_apply *a, pal_apply_follow_fn fn, void *ctx, char *err,
			      size_t errlen)
{
	a->followed = true;
	int rc = collect(a, err, errlen);
	if (!rc && a->rule_scopes)
		rc = rule_followers(a, fn, ctx, err, errlen);
	/* only after a change: the scan reads the latest version of every job
	 * that names a calendar (measured: 0.5 s beside 100,000 jobs) */
	if (rc || !a->cals_changed)
		return rc;
	GPtrArray *cals = g_ptr_array_new();
	GHashTableIter hi;
	gpointer v;
	g_hash_table_iter_init(&hi, a->cals);
	while (g_hash_table_iter_next(&hi, NULL, &v))
		g_ptr_array_add(cals, v);
	PGresult *r = pal__store_calendar_followers(a->st, (const pal_calendar *const *)cals->pdata,
						    cals->len, true, err, errlen);
	g_ptr_array_free(cals, TRUE);
	if (!r)
		return PAL_EDB;
	rc = add_followers(a, r, fn, ctx, "a calendar it names", err, errlen);
	PQclear(r);
	return rc;
}

/* ---- retiring (include/palisade/lifecycle.h) --------------------------------- */

/* The not-yet-claimed triggers (pending, retry_wait, paused) of the
 * retired jobs among $1 (or of all of them with $5 set). */
#define RETIRE_CANCELLABLE_SQL                                                                     \
	"SELECT t.id, t.scheduled_at, t.state FROM triggers t WHERE t.job_id = ANY($1::text[])"    \
	" AND t.state IN ('pending', 'retry_wait', 'paused')"                                      \
	" AND ($5::bigint IS NOT NULL OR t.job_id IN (SELECT job_id FROM jobs"                     \
	"  WHERE job_id = ANY($1::text[]) AND retired_at IS NOT NULL))"

#define RETIRE_MOVE PAL__TRIGGER_MOVE(RETIRE_CANCELLABLE_SQL, "'cancelled'", "NULL")

/* Cancel those (RETIRE_MOVE), one trigger.cancel audit row per
 * job with the ids; with $5 set, first mark the jobs retired at $5 (epoch
 * seconds).  Rows: job_id, count. */
#define RETIRE_CANCEL_SQL                                                                          \
	"WITH r AS (UPDATE jobs SET retired_at = to_timestamp($5::bigint), updated_at = now()"     \
	"   WHERE $5::bigint IS NOT NULL AND job_id = ANY($1::text[]) RETURNING job_id),"          \
	" c AS (SELECT m.job_id, m.id FROM " RETIRE_MOVE " m),"                                    \
	" aud AS (INSERT INTO audit_log (actor, action, scope, reason, details)"                   \
	"   SELECT $2, 'cancel', 'job:' || c.job_id, $3, jsonb_build_object('cause', $4::text,"    \
	"     'cancelled', count(*), 'trigger_ids', jsonb_agg(c.id ORDER BY c.id))"                \
	"   FROM c GROUP BY c.job_id)"                                                             \
	" SELECT c.job_id, count(*) FROM c GROUP BY c.job_id"

static int cancel_retired(pal_store *st, const char *ids, const char *actor, const char *reason,
			  const char *cause, const char *at, GHashTable *counts, int64_t *total,
			  char *err, size_t errlen)
{
	const char *p[] = {ids, actor, reason, cause, at};
	PGresult *r = pal__store_query(st, RETIRE_CANCEL_SQL, 5, p, err, errlen);
	if (!r)
		return PAL_EDB;
	for (int row = 0; row < PQntuples(r); row++) {
		int64_t k = strtoll(PQgetvalue(r, row, 1), NULL, 10);
		*total += k;
		if (counts)
			g_hash_table_insert(counts, g_strdup(PQgetvalue(r, row, 0)),
					    GINT_TO_POINTER((int)k));
	}
	PQclear(r);
	return PAL_OK;
}

/* The spec of job ID from the canonical TEXT of its stored version. */
static int stored_spec(const char *text, const char *id, pal_job_spec *out, char *err,
		       size_t errlen)
{
	json_error_t je;
	json_t *j = json_loads(text, 0, &je);
	int rc = PAL_OK;
	if (!j) {
		snprintf(err, errlen, "job %s: stored spec is not JSON", id);
		rc = PAL_EINVAL;
	} else if (pal_job_spec_from_canonical(j, out, err, errlen)) {
		rc = PAL_EINVAL;
	}
	json_decref(j);
	return rc;
}

/* pal_store_apply_retire for at most CHUNK ids (their specs are read at
 * once). */
static int retire_chunk(pal_apply *a, const char *const *ids, size_t n, pal_retire_result *res,
			char *err, size_t errlen)
{
	for (size_t i = 0; i < n; i++)
		res[i] = (pal_retire_result){.outcome = PAL_RETIRE_NOT_FOUND};
	int rc = collect(a, err, errlen);
	if (rc || !n)
		return rc;
	pal_pgarr arr;
	pal__pgarr_init(&arr);
	for (size_t i = 0; i < n; i++)
		pal__pgarr_text(&arr, ids[i]);
	char *all = pal__pgarr_end(&arr);
	/* Lock in job-id order, as apply does. */
	const char *p[] = {all};
	PGresult *r = pal__store_query(
	    a->st,
	    "SELECT j.job_id, j.retired_at IS NOT NULL, j.latest_version, v.spec::text,"
	    " ceil(extract(epoch FROM clock_timestamp()))::bigint, v.notify_own"
	    " FROM jobs j JOIN job_versions v ON v.job_id = j.job_id AND v.version = "
	    "j.latest_version"
	    " WHERE j.job_id = ANY($1::text[]) ORDER BY j.job_id COLLATE \"C\" FOR UPDATE OF j",
	    1, p, err, errlen);
	if (!r) {
		g_free(all);
		return PAL_EDB;
	}
	GHashTable *index = g_hash_table_new(g_str_hash, g_str_equal);
	for (size_t i = 0; i < n; i++)
		g_hash_table_insert(index, (gpointer)ids[i], GSIZE_TO_POINTER(i + 1));
	int nr = PQntuples(r);
	pal_job_spec *specs = calloc(nr ? (size_t)nr : 1, sizeof *specs);
	pal_apply_result *ar = calloc(nr ? (size_t)nr : 1, sizeof *ar);
	size_t *of = calloc(nr ? (size_t)nr : 1, sizeof *of);
	size_t m = 0;
	int64_t at = nr ? strtoll(PQgetvalue(r, 0, 4), NULL, 10) : 0;
	if (!specs || !ar || !of) {
		snprintf(err, errlen, "out of memory");
		rc = PAL_ENOMEM;
	}
	for (int row = 0; !rc && row < nr; row++) {
		size_t i = GPOINTER_TO_SIZE(g_hash_table_lookup(index, PQgetvalue(r, row, 0)));
		if (!i)
			continue;
		i--;
		res[i].version = atoi(PQgetvalue(r, row, 2));
		if (!strcmp(PQgetvalue(r, row, 1), "t")) {
			res[i].outcome = PAL_RETIRE_ALREADY;
			continue;
		}
		if ((rc = stored_spec(PQgetvalue(r, row, 3), ids[i], &specs[m], err, errlen)))
			break;
		/* The retiring version: the latest spec, its schedule ending now
		 * (end is exclusive; never before its start); its notify as it
		 * was, inherited entries included. */
		pal_job_spec *s = &specs[m];
		pal_job_spec_stored_notify_own(s, PQgetvalue(r, row, 5));
		int64_t end = s->has_end && s->end < at ? s->end : at;
		if (s->has_start && end < s->start)
			end = s->start;
		s->has_end = true;
		s->end = end;
		res[i].outcome = PAL_RETIRE_RETIRED;
		res[i].end = end;
		of[m++] = i;
	}
	PQclear(r);
	g_hash_table_destroy(index);
	if (!rc && m) {
		a->retiring = a->stored_specs = true;
		rc = pal_store_apply_add(a, specs, m, ar, err, errlen);
		a->retiring = a->stored_specs = false;
		if (!rc)
			rc = collect(a, err, errlen);
	}
	for (size_t k = 0; !rc && k < m; k++)
		res[of[k]].version = ar[k].version;
	if (!rc && m) {
		pal_pgarr ret;
		pal__pgarr_init(&ret);
		for (size_t k = 0; k < m; k++)
			pal__pgarr_text(&ret, ids[of[k]]);
		char *rids = pal__pgarr_end(&ret);
		char ats[24];
		snprintf(ats, sizeof ats, "%lld", (long long)at);
		GHashTable *counts = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
		int64_t total = 0;
		rc = cancel_retired(a->st, rids, a->actor, a->reason, "job retired", ats, counts,
				    &total, err, errlen);
		for (size_t k = 0; !rc && k < m; k++)
			res[of[k]].cancelled =
			    GPOINTER_TO_INT(g_hash_table_lookup(counts, ids[of[k]]));
		g_hash_table_destroy(counts);
		g_free(rids);
	}
	for (size_t k = 0; k < m; k++)
		pal_job_spec_clear(&specs[k]);
	free(specs);
	free(ar);
	free(of);
	g_free(all);
	return rc;
}

int pal_store_retire_sweep(pal_store *st, const char *const *ids, size_t n, const char *actor,
			   const char *reason, int64_t *cancelled, char *err, size_t errlen)
{
	*cancelled = 0;
	if (!n)
		return PAL_OK;
	pal_pgarr arr;
	pal__pgarr_init(&arr);
	for (size_t i = 0; i < n; i++)
		pal__pgarr_text(&arr, ids[i]);
	char *all = pal__pgarr_end(&arr);
	int rc = cancel_retired(st, all, actor, reason ? reason : "", SWEEP_CAUSE, NULL, NULL,
				cancelled, err, errlen);
	g_free(all);
	return rc;
}

/* How many of the jobs of T have a latest version no controller planning
 * their shard took in yet: TAKEOVER_WAIT_SQL counts those of a shard whose
 * controller is alive (the signal pal_store_retire_pending reads, what the
 * wait is for), TAKEOVER_PENDING_SQL those of a shard with a leader at all,
 * stale or not (what is reported as not taken in). */
#define TAKEOVER_COUNT_SQL(alive)                                                                  \
	"SELECT count(*) FROM jobs j JOIN job_versions v ON v.job_id = j.job_id"                   \
	" AND v.version = j.latest_version WHERE j.job_id = ANY($1::text[])"                       \
	" AND v.activated_at IS NULL AND EXISTS (SELECT 1 FROM shards s"                           \
	"  WHERE s.shard_id = j.shard AND s.leader IS NOT NULL" alive ")"
#define TAKEOVER_WAIT_SQL                                                                          \
	TAKEOVER_COUNT_SQL(" AND s.updated_at > clock_timestamp() - interval '10 seconds'")
#define TAKEOVER_PENDING_SQL TAKEOVER_COUNT_SQL("")
/* The versions the apply stored that are still the latest, to tell the
 * instants they fire (a job a later apply stored a version of meanwhile is
 * left to that apply, which swept with its own). */
#define TAKEOVER_SPECS_SQL                                                                         \
	"SELECT v.job_id, v.spec::text FROM unnest($1::text[], $2::int[]) AS u(id, ver)"           \
	" JOIN jobs j ON j.job_id = u.id AND j.latest_version = u.ver"                             \
	" JOIN job_versions v ON v.job_id = u.id AND v.version = u.ver"

bool pal_store_apply_took_over(const pal_store *st)
{
	return st->takeover != NULL;
}

const char *pal_store_apply_takeover_job(const pal_apply *a)
{
	return a && a->tk && a->tk->n ? a->tk->first : NULL;
}

int pal_store_apply_settle(pal_store *st, const char *actor, const char *reason, int64_t wait_ms,
			   int64_t *cancelled, int64_t *pending, char *err, size_t errlen)
{
	*cancelled = *pending = 0;
	struct pal__takeover *t = st->takeover;
	st->takeover = NULL;
	if (!t)
		return PAL_OK;
	char *ids = pal__pgarr_end(&t->ids), *cuts = pal__pgarr_end(&t->cuts),
	     *vers = pal__pgarr_end(&t->versions), *ret = pal__pgarr_end(&t->retired);
	t->n = 0; /* the literals are ours now */
	const char *p[] = {ids, vers};
	int rc = PAL_OK;
	for (int64_t waited = 0;; waited += 200) {
		if ((rc = pal__store_query_i64(st, TAKEOVER_WAIT_SQL, 1, p, -1, pending, err,
					       errlen)))
			break;
		if (!*pending || waited >= wait_ms)
			break;
		pal_sleep_ms(200);
	}
	/* a shard whose controller went stale during the wait did not take
	 * its jobs in either */
	if (!rc)
		rc = pal__store_query_i64(st, TAKEOVER_PENDING_SQL, 1, p, -1, pending, err, errlen);
	PGresult *r = NULL;
	if (!rc && !(r = pal__store_query(st, TAKEOVER_SPECS_SQL, 2, p, err, errlen)))
		rc = PAL_EDB;
	int nr = r ? PQntuples(r) : 0;
	pal_job_spec *specs = calloc(nr ? (size_t)nr : 1, sizeof *specs);
	GHashTable *spec = g_hash_table_new(g_str_hash, g_str_equal);
	int m = 0;
	if (!rc && !specs) {
		snprintf(err, errlen, "out of memory");
		rc = PAL_ENOMEM;
	}
	for (int row = 0; !rc && row < nr; row++) {
		if ((rc = stored_spec(PQgetvalue(r, row, 1), PQgetvalue(r, row, 0), &specs[m], err,
				      errlen)))
			break;
		g_hash_table_insert(spec, (gpointer)specs[m].id, &specs[m]);
		m++;
	}
	PQclear(r);
	if (!rc)
		rc = takeover_cancel(st, ids, cuts, vers, ret, spec, t->now, actor ? actor : "",
				     reason ? reason : "", cancelled, err, errlen);
	g_hash_table_destroy(spec);
	for (int k = 0; k < m; k++)
		pal_job_spec_clear(&specs[k]);
	free(specs);
	g_free(ids);
	g_free(cuts);
	g_free(vers);
	g_free(ret);
	pal__takeover_free(t); /* its literals taken above */
	return rc;
}

int pal_store_apply_sync(pal_apply *a, char *err, size_t errlen)
{
	return collect(a, err, errlen);
}

int pal_store_apply_retire(pal_apply *a, const char *const *ids, size_t n, pal_retire_result *res,
			   char *err, size_t errlen)
{
	int rc = PAL_OK;
	for (size_t off = 0; !rc && (off < n || !n); off += CHUNK) {
		rc = retire_chunk(a, ids + off, n - off < CHUNK ? n - off : CHUNK, res + off, err,
				  errlen);
		if (!n)
			break;
	}
	return rc;
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
