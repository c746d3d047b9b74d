/*
 * plan.c - the controller's SQL: shard claim, shard job loading, and the
 * fenced planning transaction (docs/controller.md; guarantees G1, G2, G6).
 *
 * Every write of a controller happens inside a transaction whose first
 * statement locks the shard row *and* checks the epoch:
 *   UPDATE shards SET updated_at = clock_timestamp()
 *    WHERE shard_id = $1 AND epoch = $2 RETURNING ...
 * Zero rows means a newer leader claimed the shard: the transaction is
 * rolled back and PAL_ESTALE returned.  Because the row stays locked until
 * COMMIT, a newer leader's claim waits for us and we cannot interleave with
 * it.  Triggers are inserted in one statement from arrays (unnest) with
 * ON CONFLICT DO NOTHING on the plan key (G2), and the watermark moves in the
 * same transaction (G1: it never passes instants whose rows are not
 * committed).
 */
#include <glib.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/horizoncheck.h"
#include "palisade/store.h"
#include "store_int.h"

static int64_t val_i64(PGresult *r, int row, int col)
{
	return PQgetisnull(r, row, col) ? PAL_NO_TIME : strtoll(PQgetvalue(r, row, col), NULL, 10);
}

int pal_store_shard_claim(pal_store *st, int shard, int64_t epoch, const char *node,
			  int64_t *watermark, int64_t *last_write, char *err, size_t errlen)
{
	char s[16], e[24];
	snprintf(s, sizeof s, "%d", shard);
	snprintf(e, sizeof e, "%" PRId64, epoch);
	const char *p[] = { s, e, node };
	PGresult *r = pal__store_query(
		st,
		/* the row as the last write before this claim left it (locked
		 * first: read after a previous leader's tick that holds it) */
		"WITH o AS (SELECT shard_id, updated_at FROM shards WHERE shard_id = $1 FOR UPDATE)"
		" UPDATE shards s SET epoch = $2, leader = $3, updated_at = clock_timestamp() FROM o"
		" WHERE s.shard_id = o.shard_id AND (s.epoch < $2 OR (s.epoch = $2 AND s.leader = $3))"
		" RETURNING floor(extract(epoch FROM s.watermark))::bigint,"
		" floor(extract(epoch FROM o.updated_at))::bigint",
		3, p, err, errlen);
	if (!r)
		return PAL_EDB;
	if (PQntuples(r) == 0) {
		PQclear(r);
		r = pal__store_query(st, "SELECT epoch, coalesce(leader, '') FROM shards WHERE shard_id = $1",
				     1, p, err, errlen);
		if (!r)
			return PAL_EDB;
		if (PQntuples(r) == 0)
			snprintf(err, errlen, "shard %d does not exist in the database", shard);
		else
			snprintf(err, errlen,
				 "shard %d is held at epoch %s by %s, not older than our epoch %s",
				 shard, PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 1), e);
		PQclear(r);
		return PAL_ESTALE;
	}
	*watermark = val_i64(r, 0, 0);
	*last_write = val_i64(r, 0, 1);
	PQclear(r);
	return PAL_OK;
}

/* Columns of the shard load, in order. */
enum {
	SJ_SHARD, SJ_JOB, SJ_VERSION, SJ_EFF, SJ_CRON, SJ_TZ, SJ_DST, SJ_START, SJ_END, SJ_EXCL,
	SJ_MISFIRE, SJ_CATCHUP_MS, SJ_MAX_CATCHUP, SJ_PARTITIONS, SJ_PRIORITY, SJ_TENANT, SJ_GROUP,
	SJ_CALS, SJ_JOBREF, SJ_CREATED, SJ_NCOLS
};

/* The select list of both load statements (src/store/plan.c is the only
 * reader of the plan_* columns of sql/006_planning.sql). */
#define SJ_COLUMNS                                                                                 \
	"j.shard, v.job_id, v.version, floor(extract(epoch FROM v.effective_from))::bigint,"      \
	" CASE WHEN v.cron LIKE '@calendars(%' THEN substr(v.cron, strpos(v.cron, ') ') + 2)"   \
	"  ELSE v.cron END, v.timezone, v.plan_dst,"                                              \
	" floor(extract(epoch FROM v.plan_start::timestamptz))::bigint,"                           \
	" floor(extract(epoch FROM v.plan_end::timestamptz))::bigint,"                             \
	" CASE WHEN v.plan_has_exclude THEN"                                                       \
	"  (SELECT string_agg((split_part(e, '..', 1)::date - date '1970-01-01') || ' ' ||"     \
	"    (coalesce(nullif(split_part(e, '..', 2), ''), e)::date - date '1970-01-01'), ' ')"    \
	"   FROM job_versions x, jsonb_array_elements_text(x.plan_exclude) e"                      \
	"   WHERE x.job_id = v.job_id AND x.version = v.version) END,"                             \
	" v.misfire_policy, v.catchup_window_ms, v.max_catchup, v.partitions, v.priority,"        \
	" v.plan_tenant, v.resource_group,"                                                        \
	" CASE WHEN v.cron LIKE '@calendars(%' THEN"                                               \
	"  (SELECT x.spec #>> '{schedule,calendars}' FROM job_versions x"                          \
	"   WHERE x.job_id = v.job_id AND x.version = v.version) END, j.ref,"                      \
	" CASE WHEN v.effective_from IS NULL THEN"                                                 \
	"  (SELECT floor(extract(epoch FROM x.created_at))::bigint FROM job_versions x"            \
	"   WHERE x.job_id = v.job_id AND x.version = v.version) END"
/* The columns of job_versions the load reads: those of its covering primary
 * key (sql/018_version_writes.sql; the index job_versions_plan of 006
 * before), so that it is an index-only scan. */
#define SJ_VCOLS                                                                                   \
	"v.job_id, v.version, v.effective_from, v.cron, v.timezone, v.misfire_policy,"            \
	" v.catchup_window_ms, v.max_catchup, v.partitions, v.priority, v.resource_group,"        \
	" v.plan_tenant, v.plan_dst, v.plan_start, v.plan_end, v.plan_has_exclude"
/* The version lists alone (a reload's first pass): the same columns, the
 * planning ones NULL but the job's ref (a job loaded before the backfill
 * gave it one takes it at the next reload). */
#define SJ_LIST_COLUMNS                                                                            \
	"j.shard, v.job_id, v.version, floor(extract(epoch FROM v.effective_from))::bigint,"      \
	" NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, j.ref,"  \
	" NULL"

/* One job's rows while they stream in: single-row mode gives each row its
 * own PGresult, and the versions borrow their strings from them. */
typedef struct sj_job {
	PGresult **rows;
	pal_plan_version *v;
	pal_exclusion **excl;
	pal_calendar **cals; /* each version's calendars (schedule.calendars), or NULL */
	size_t *n_cals;
	size_t n, cap;
} sj_job;

static void sj_clear(sj_job *j)
{
	for (size_t i = 0; i < j->n; i++) {
		PQclear(j->rows[i]);
		free(j->excl[i]);
		for (size_t k = 0; k < j->n_cals[i]; k++)
			pal_calendar_clear(&j->cals[i][k]);
		free(j->cals[i]);
	}
	j->n = 0;
}

static bool col_null(const PGresult *r, int c)
{
	return PQgetisnull(r, 0, c);
}

static const char *col(const PGresult *r, int c)
{
	return PQgetisnull(r, 0, c) ? NULL : PQgetvalue(r, 0, c);
}

/* Exclusions as "first last first last ..." day numbers (the SQL below). */
static int parse_excl(const char *s, pal_exclusion **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	if (!s || !*s)
		return PAL_OK;
	size_t words = 1;
	for (const char *q = s; *q; q++)
		words += *q == ' ';
	pal_exclusion *x = calloc(words / 2 + 1, sizeof *x);
	if (!x)
		return PAL_ENOMEM;
	char *end;
	while (*s) {
		x[*n].first_day = strtoll(s, &end, 10);
		x[*n].last_day = strtoll(end, &end, 10);
		(*n)++;
		s = end;
		while (*s == ' ')
			s++;
	}
	*out = x;
	return PAL_OK;
}

/* A version's schedule.calendars (JSON text) into a new array. */
static int parse_cals(const char *s, pal_calendar **out, size_t *n, char *err, size_t errlen)
{
	json_error_t je;
	json_t *a = json_loads(s, 0, &je);
	size_t k = json_array_size(a);
	pal_calendar *c = k ? calloc(k, sizeof *c) : NULL;
	int rc = a && k ? (c ? PAL_OK : PAL_ENOMEM) : PAL_EINVAL;
	for (size_t i = 0; !rc && i < k; i++)
		if (pal_calendar_from_canonical(json_array_get(a, i), &c[i], err, errlen))
			rc = PAL_EINVAL;
		else
			*n = i + 1;
	json_decref(a);
	if (rc) {
		for (size_t i = 0; i < *n; i++)
			pal_calendar_clear(&c[i]);
		free(c);
		*n = 0;
		return rc;
	}
	*out = c;
	return PAL_OK;
}

/* Row R (taken) into the next version of J; PAL_EINVAL on a value this
 * binary cannot read (err filled). */
static int sj_add(sj_job *j, PGresult *r, bool with_specs, char *err, size_t errlen)
{
	if (j->n == j->cap) {
		size_t nc = j->cap ? j->cap * 2 : 4;
		PGresult **nr = realloc(j->rows, nc * sizeof *nr);
		if (nr)
			j->rows = nr;
		pal_plan_version *nv = nr ? realloc(j->v, nc * sizeof *nv) : NULL;
		if (nv)
			j->v = nv;
		pal_exclusion **ne = nv ? realloc(j->excl, nc * sizeof *ne) : NULL;
		if (ne)
			j->excl = ne;
		pal_calendar **ncal = ne ? realloc(j->cals, nc * sizeof *ncal) : NULL;
		if (ncal)
			j->cals = ncal;
		size_t *nn = ncal ? realloc(j->n_cals, nc * sizeof *nn) : NULL;
		if (!nn) {
			PQclear(r);
			return PAL_ENOMEM;
		}
		j->n_cals = nn;
		j->cap = nc;
	}
	size_t i = j->n++;
	j->rows[i] = r;
	j->excl[i] = NULL;
	j->cals[i] = NULL;
	j->n_cals[i] = 0;
	pal_plan_version *v = &j->v[i];
	memset(v, 0, sizeof *v);
	v->version = atoi(PQgetvalue(r, 0, SJ_VERSION));
	v->effective_from = val_i64(r, 0, SJ_EFF);
	v->job_ref = col_null(r, SJ_JOBREF) ? 0 : atoi(PQgetvalue(r, 0, SJ_JOBREF));
	v->created_at = col_null(r, SJ_CREATED) ? PAL_NO_TIME : val_i64(r, 0, SJ_CREATED);
	if (!with_specs)
		return PAL_OK;
	v->cron = col(r, SJ_CRON);
	v->timezone = col(r, SJ_TZ);
	if (col_null(r, SJ_DST)) {
		v->dst = PAL_DST_AUTO;
	} else {
		char e[128];
		if (pal_dst_policy_parse(col(r, SJ_DST), &v->dst, e, sizeof e)) {
			snprintf(err, errlen, "job %s v%d: dst policy: %s", PQgetvalue(r, 0, SJ_JOB),
				 v->version, e);
			return PAL_EINVAL;
		}
	}
	v->has_start = !col_null(r, SJ_START);
	v->start = v->has_start ? val_i64(r, 0, SJ_START) : 0;
	v->has_end = !col_null(r, SJ_END);
	v->end = v->has_end ? val_i64(r, 0, SJ_END) : 0;
	if (parse_excl(col(r, SJ_EXCL), &j->excl[i], &v->n_exclusions))
		return PAL_ENOMEM;
	v->exclusions = j->excl[i];
	if (!col_null(r, SJ_CALS)) {
		int rc = parse_cals(col(r, SJ_CALS), &j->cals[i], &j->n_cals[i], err, errlen);
		if (rc) {
			if (rc == PAL_EINVAL) /* this job only: quarantined like a bad cron */
				v->cron = NULL;
			else
				return rc;
		}
		v->calendars = j->cals[i];
		v->n_calendars = j->n_cals[i];
	}
	const char *mp = PQgetvalue(r, 0, SJ_MISFIRE);
	int m = 0;
	while (m < 4 && strcmp(mp, pal_misfire_policy_name((pal_misfire_policy)m)))
		m++;
	if (m == 4) {
		snprintf(err, errlen, "job %s v%d: unknown misfire policy \"%s\"",
			 PQgetvalue(r, 0, SJ_JOB), v->version, mp);
		return PAL_EINVAL;
	}
	v->misfire = (pal_misfire_policy)m;
	v->catchup_window_ms = val_i64(r, 0, SJ_CATCHUP_MS);
	v->max_catchup = atoi(PQgetvalue(r, 0, SJ_MAX_CATCHUP));
	v->partitions = atoi(PQgetvalue(r, 0, SJ_PARTITIONS));
	v->priority = atoi(PQgetvalue(r, 0, SJ_PRIORITY));
	v->tenant = col(r, SJ_TENANT);
	v->group = col(r, SJ_GROUP);
	return PAL_OK;
}

/* Run one load statement in single-row mode, handing each job to FN. */
static int stream_jobs(pal_store *st, const char *sql, int np, const char *const *p,
		       bool with_specs, pal_shard_job_fn fn, void *ctx, size_t *jobs, char *err,
		       size_t errlen)
{
	if (!PQsendQueryParams(st->conn, sql, np, NULL, p, NULL, NULL, 0) ||
	    !PQsetSingleRowMode(st->conn)) {
		pal__store_errmsg(st, NULL, "shard load failed", err, errlen);
		return PAL_EDB;
	}
	st->sqlstate[0] = '\0';
	sj_job j = { 0 };
	int rc = PAL_OK;
	PGresult *r;
#define SJ_FLUSH()                                                                                 \
	do {                                                                                       \
		rc = fn(ctx, atoi(PQgetvalue(j.rows[0], 0, SJ_SHARD)),                             \
			PQgetvalue(j.rows[0], 0, SJ_JOB), j.v, j.n);                               \
		(*jobs)++;                                                                         \
		sj_clear(&j);                                                                      \
	} while (0)
	while ((r = PQgetResult(st->conn))) {
		ExecStatusType rs = PQresultStatus(r);
		if (rs == PGRES_SINGLE_TUPLE && rc == PAL_OK) {
			if (PQnfields(r) != SJ_NCOLS) {
				snprintf(err, errlen, "shard load: %d columns, expected %d",
					 PQnfields(r), SJ_NCOLS);
				rc = PAL_EINVAL;
				PQclear(r);
				continue;
			}
			/* The rows of one job are adjacent: a new id completes the previous job. */
			if (j.n && strcmp(PQgetvalue(j.rows[0], 0, SJ_JOB), PQgetvalue(r, 0, SJ_JOB)))
				SJ_FLUSH();
			if (rc == PAL_OK)
				rc = sj_add(&j, r, with_specs, err, errlen);
			else
				PQclear(r);
			continue;
		}
		if (rs == PGRES_TUPLES_OK && rc == PAL_OK && j.n) {
			SJ_FLUSH();
		} else if (rs != PGRES_TUPLES_OK && rs != PGRES_SINGLE_TUPLE && rc == PAL_OK) {
			const char *code = PQresultErrorField(r, PG_DIAG_SQLSTATE);
			snprintf(st->sqlstate, sizeof st->sqlstate, "%s", code ? code : "");
			pal__store_errmsg(st, r, "shard load failed", err, errlen);
			rc = PAL_EDB;
		}
		PQclear(r); /* the rest of a stopped load is read and dropped */
	}
#undef SJ_FLUSH
	sj_clear(&j);
	free(j.rows);
	free(j.v);
	free(j.excl);
	free(j.cals);
	free(j.n_cals);
	return rc;
}

/* pal_store_shard_jobs, or only the jobs IDS[0..n_ids) when IDS is not NULL. */
static int shard_jobs(pal_store *st, const int *shards, const int64_t *cutoffs, size_t n_shards,
		      const char *const *ids, size_t n_ids, bool with_specs, pal_shard_job_fn fn,
		      void *ctx, size_t *jobs, char *err, size_t errlen)
{
	*jobs = 0;
	if (!n_shards || (ids && !n_ids))
		return PAL_OK;
	pal_pgarr as, ac, ai;
	pal__pgarr_init(&as);
	pal__pgarr_init(&ac);
	pal__pgarr_init(&ai);
	for (size_t i = 0; i < n_shards; i++) {
		pal__pgarr_i64(&as, shards[i]);
		pal__pgarr_i64(&ac, cutoffs[i] == PAL_NO_TIME ? 0 : cutoffs[i]);
	}
	for (size_t i = 0; ids && i < n_ids; i++)
		pal__pgarr_text(&ai, ids[i]);
	char *sa = pal__pgarr_end(&as), *ca = pal__pgarr_end(&ac), *ia = pal__pgarr_end(&ai);
	const char *job_id = ids ? ia : NULL;
	const char *p[] = { sa, job_id, ca };
	/*
	 * Two statements.  Jobs with one version (nearly all of them) need no
	 * ordering: the first streams them as the join yields them.  For a
	 * few shards it walks jobs_shard and probes the versions' covering
	 * key (a nested loop: ~10 us a job); for many it reads that index
	 * once for every shard at once (a hash join; an index-only scan of
	 * the covering index where the visibility map allows, instead of the
	 * fat heap rows).  The second takes the jobs with several versions,
	 * ordered so that a job's rows are adjacent, with the versions still
	 * relevant at the shard's re-scan start (the latest one activated at
	 * or before the cutoff, every later activated one, and the latest,
	 * maybe pending), and each version stored after the last activated
	 * one that no controller activated (the planner activates such a
	 * version with the latest where a tick that saw it in time would
	 * have: switch_point in src/controller/planner.c); for a job none of
	 * whose versions was activated, every version (its first sight goes
	 * back to its first one's apply: first_sight there).
	 */
	const char *cols = with_specs ? SJ_COLUMNS : SJ_LIST_COLUMNS;
	char q[4096];
	snprintf(q, sizeof q,
		 n_shards <= 3 || ids
			 ? "SELECT %s FROM jobs j CROSS JOIN LATERAL ("
			   " SELECT " SJ_VCOLS " FROM job_versions v"
			   " WHERE v.job_id = j.job_id AND v.version = 1"
			   " OFFSET 0) v"
			   " WHERE j.shard = ANY($1::int[]) AND j.latest_version = 1"
			   " AND ($2::text[] IS NULL OR j.job_id = ANY($2::text[])) AND $3::bigint[] IS NOT NULL"
			 : "SELECT %s FROM jobs j JOIN job_versions v"
			   " ON v.job_id = j.job_id AND v.version = 1"
			   " WHERE j.shard = ANY($1::int[]) AND j.latest_version = 1"
			   " AND ($2::text[] IS NULL OR j.job_id = ANY($2::text[])) AND $3::bigint[] IS NOT NULL",
		 cols);
	int rc = stream_jobs(st, q, 3, p, with_specs, fn, ctx, jobs, err, errlen);
	if (!rc) {
		snprintf(q, sizeof q,
			 "SELECT %s FROM unnest($1::int[], $3::bigint[]) s(shard, cutoff)"
			 " JOIN jobs j ON j.shard = s.shard JOIN job_versions v ON v.job_id = j.job_id"
			 " WHERE j.latest_version > 1 AND ($2::text[] IS NULL OR j.job_id = ANY($2::text[])) AND ("
			 "  v.version = j.latest_version OR (v.effective_from IS NOT NULL AND"
			 "   v.version >= coalesce((SELECT max(w.version) FROM job_versions w"
			 "    WHERE w.job_id = j.job_id AND w.effective_from <= to_timestamp(s.cutoff)),"
			 "    0))"
			 "  OR (v.effective_from IS NULL AND v.version > coalesce("
			 "   (SELECT max(w.version) FROM job_versions w"
			 "    WHERE w.job_id = j.job_id AND w.effective_from IS NOT NULL), 0)))"
			 " ORDER BY v.job_id, v.version",
			 cols);
		rc = stream_jobs(st, q, 3, p, with_specs, fn, ctx, jobs, err, errlen);
	}
	g_free(sa);
	g_free(ca);
	g_free(ia);
	return rc;
}

int pal_store_shard_jobs(pal_store *st, const int *shards, const int64_t *cutoffs,
			 size_t n_shards, const char *job_id, bool with_specs, pal_shard_job_fn fn,
			 void *ctx, size_t *jobs, char *err, size_t errlen)
{
	return shard_jobs(st, shards, cutoffs, n_shards, job_id ? &job_id : NULL, job_id ? 1 : 0,
			  with_specs, fn, ctx, jobs, err, errlen);
}

int pal_store_shard_jobs_ids(pal_store *st, const int *shards, const int64_t *cutoffs,
			     size_t n_shards, const char *const *ids, size_t n_ids,
			     pal_shard_job_fn fn, void *ctx, size_t *jobs, char *err, size_t errlen)
{
	*jobs = 0;
	if (!n_ids) /* IDS may then be NULL, which shard_jobs reads as "every job" */
		return PAL_OK;
	return shard_jobs(st, shards, cutoffs, n_shards, ids, n_ids, true, fn, ctx, jobs, err,
			  errlen);
}

int pal_store_decided_after(pal_store *st, const char *const *ids, size_t n, int64_t after,
			    int64_t *decided, char *err, size_t errlen)
{
	for (size_t i = 0; i < n; i++)
		decided[i] = PAL_NO_TIME;
	if (!n)
		return PAL_OK;
	pal_pgarr ai;
	pal__pgarr_init(&ai);
	for (size_t i = 0; i < n; i++)
		pal__pgarr_text(&ai, ids[i]);
	char *ia = pal__pgarr_end(&ai), a[24];
	snprintf(a, sizeof a, "%" PRId64, after);
	const char *p[] = {ia, a};
	/* Two probes a job: the plan key (job_id, scheduled_at, partition) from
	 * its newest row down, and the job's misfire rows from its newest down
	 * (misfires_job: job_id, range_from), the newest few the planner wrote
	 * (a manual or backfill trigger, a forbid skip or a resume's row says
	 * nothing about what the planner decided; the planner's own ranges of
	 * one job do not overlap but for a quarantine's, which reach further).
	 * Never max() over range_to > $2: no index has (job_id, range_to), and
	 * PostgreSQL then walked misfires_range_to through every job's rows
	 * above $2 for each job without one (12 s for 300 jobs beside one
	 * job's 300,000 excluded rows). */
	PGresult *r = pal__store_query(
	    st,
	    "SELECT d.ord, floor(extract(epoch FROM greatest("
	    "  (SELECT max(t.scheduled_at) FROM triggers t WHERE t.job_id = d.id"
	    "    AND t.scheduled_at > to_timestamp($2::bigint) AND t.request_id IS NULL),"
	    "  (SELECT max(x.range_to) FROM (SELECT m.range_to FROM misfires m"
	    "    WHERE m.job_id = d.id AND m.reason IN"
	    "    ('missed', 'outside_window', 'over_max_catchup', 'excluded', 'quarantined')"
	    "    ORDER BY m.range_from DESC LIMIT 8) x"
	    "   WHERE x.range_to > to_timestamp($2::bigint)))"
	    "))::bigint FROM unnest($1::text[]) WITH ORDINALITY d(id, ord)",
	    2, p, err, errlen);
	g_free(ia);
	if (!r)
		return PAL_EDB;
	for (int i = 0; i < PQntuples(r); i++) {
		int64_t k = val_i64(r, i, 0);
		if (k >= 1 && (size_t)k <= n && !PQgetisnull(r, i, 1))
			decided[k - 1] = val_i64(r, i, 1);
	}
	PQclear(r);
	return PAL_OK;
}

int pal_store_tick_begin(pal_store *st, int shard, int64_t epoch, int64_t *watermark, int64_t *now,
			 char *err, size_t errlen)
{
	if (pal__store_exec(st, "BEGIN", err, errlen))
		return PAL_EDB;
	char s[16], e[24];
	snprintf(s, sizeof s, "%d", shard);
	snprintf(e, sizeof e, "%" PRId64, epoch);
	const char *p[] = { s, e };
	PGresult *r = pal__store_query(
		st,
		"UPDATE shards SET updated_at = clock_timestamp() WHERE shard_id = $1 AND epoch = $2"
		" RETURNING floor(extract(epoch FROM watermark))::bigint,"
		" floor(extract(epoch FROM clock_timestamp()))::bigint",
		2, p, err, errlen);
	if (!r) {
		pal__store_rollback(st);
		return PAL_EDB;
	}
	if (PQntuples(r) == 0) {
		PQclear(r);
		pal__store_rollback(st);
		snprintf(err, errlen,
			 "shard %d: fenced, epoch %s is no longer current (0 rows); a newer leader holds it",
			 shard, e);
		return PAL_ESTALE;
	}
	*watermark = val_i64(r, 0, 0);
	*now = val_i64(r, 0, 1);
	PQclear(r);
	return PAL_OK;
}

void pal_store_tick_abort(pal_store *st)
{
	pal__store_rollback(st);
}

/* N array parameters being built with the one encoder (pgarray.c). */
static void arrs_init(pal_pgarr *a, int n)
{
	for (int i = 0; i < n; i++)
		pal__pgarr_init(&a[i]);
}

static void arrs_end(pal_pgarr *a, char **out, int n)
{
	for (int i = 0; i < n; i++)
		out[i] = pal__pgarr_end(&a[i]);
}

static void arrs_free(char **s, int n)
{
	for (int i = 0; i < n; i++)
		g_free(s[i]);
}

/* The INSERT of write_triggers(), COL and NOM naming the nominal instant
 * (docs/migrating.md, "Spread and jitter at a boundary") when a trigger of
 * the batch has one, or nothing more. */
#define INSERT_TRIGGERS(col, nom_val, nom_arr, nom_name, nom)                                      \
	"INSERT INTO triggers (job_id, version, scheduled_at, partition, source, priority,"        \
	" due_at, shard, epoch, tenant, resource_group, job_ref, state" col ")"                    \
	" SELECT j.id, j.v, t.at, t.p, CASE WHEN t.c = 1 THEN 'catchup' ELSE 'schedule' END,"      \
	"  j.pr, t.at, $10, $11, j.te, j.g, nullif(j.jr, 0),"                                      \
	/* shadow runs (sql/039): asked once per statement while no scope \
	 * is in shadow, per row only when one is */                                               \
	"  CASE WHEN NOT (SELECT EXISTS (SELECT 1 FROM shadow_scopes)) THEN 'pending'"             \
	"   WHEN palisade_trigger_live(j.id, j.te, j.g, " nom ") THEN 'pending' ELSE 'shadow' END" \
	nom_val " FROM (SELECT u.r, to_timestamp(u.a) AS at, u.p, u.c" nom_name                    \
	"   FROM unnest($1::int[], $2::bigint[], $3::int[], $4::int[]" nom_arr                     \
	") AS u(r, a, p, c" nom_name ")) t"                                                        \
	" JOIN unnest($5::text[], $6::int[], $7::int[], $8::text[], $9::text[], $12::int[])"       \
	"   WITH ORDINALITY AS j(id, v, pr, te, g, jr, n) ON j.n = t.r"                            \
	" ON CONFLICT (job_id, scheduled_at, partition) WHERE request_id IS NULL DO NOTHING"

/*
 * The tick's triggers in one INSERT ... ON CONFLICT DO NOTHING (G2).  What
 * the triggers of one job version share (id, version, priority, tenant,
 * group, the job's ref) goes once per version, joined back by ordinality;
 * per trigger only numbers travel (version slot, instant, partition,
 * catch-up flag).  The server then parses four numeric arrays and a few
 * short text arrays instead of eight arrays with a quoted id, tenant and
 * group per row.  A ref of 0 (the load found the job without one: the
 * backfill had not reached it) goes as NULL, and the fill trigger of 041
 * looks it up.  A batch with an instant moved by spread or jitter sends a
 * fifth numeric array, the nominal instants (0 where none moved: NULL in
 * nominal_at), and judges the shadow state on them; any other batch sends
 * what it sent before 045.
 */
static int write_triggers(pal_store *st, int shard, int64_t epoch, const pal_plan_batch *b,
			  int64_t *inserted, char *err, size_t errlen)
{
	*inserted = 0;
	if (!b->n_trig)
		return PAL_OK;
	enum { NA = 11 };
	pal_pgarr a[NA];
	char *v[NA];
	arrs_init(a, NA);
	bool moved = false;
	for (size_t i = 0; i < b->n_trig; i++) {
		const pal_plan_trigger *t = &b->trig[i];
		pal__pgarr_i64(&a[0], (int64_t)t->ref + 1);
		pal__pgarr_i64(&a[1], t->at);
		pal__pgarr_i64(&a[2], t->partition);
		pal__pgarr_i64(&a[3], t->source == PAL_SOURCE_CATCHUP);
		moved = moved || t->nominal != t->at;
	}
	for (size_t i = 0; moved && i < b->n_trig; i++) {
		const pal_plan_trigger *t = &b->trig[i];
		pal__pgarr_i64(&a[10], t->nominal != t->at ? t->nominal : 0);
	}
	for (size_t i = 0; i < b->n_refs; i++) {
		const pal_plan_jobref *r = &b->refs[i];
		pal__pgarr_text(&a[4], r->job_id);
		pal__pgarr_i64(&a[5], r->version);
		pal__pgarr_i64(&a[6], r->priority);
		pal__pgarr_text(&a[7], r->tenant);
		pal__pgarr_text(&a[8], r->group);
		pal__pgarr_i64(&a[9], r->job_ref);
	}
	arrs_end(a, v, NA);
	char s[16], e[24];
	snprintf(s, sizeof s, "%d", shard);
	snprintf(e, sizeof e, "%" PRId64, epoch);
	const char *p[] = { v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], s, e, v[9], v[10] };
	PGresult *r =
		moved ? pal__store_query(st,
					 INSERT_TRIGGERS(", nominal_at",
							 ", to_timestamp(nullif(t.n, 0))",
							 ", $13::bigint[]", ", n",
							 "coalesce(to_timestamp(nullif(t.n, 0)), t.at)"),
					 13, p, err, errlen)
		      : pal__store_query(st, INSERT_TRIGGERS("", "", "", "", "t.at"), 12, p, err,
					 errlen);
	arrs_free(v, NA);
	if (!r)
		return PAL_EDB;
	*inserted = strtoll(PQcmdTuples(r), NULL, 10);
	PQclear(r);
	return PAL_OK;
}

static int write_misfires(pal_store *st, int shard, int64_t epoch, const pal_plan_batch *b,
			  char *err, size_t errlen)
{
	if (!b->n_mis)
		return PAL_OK;
	enum { NA = 9 };
	pal_pgarr a[NA];
	char *v[NA];
	arrs_init(a, NA);
	for (size_t i = 0; i < b->n_mis; i++) {
		const pal_plan_misfire *m = &b->mis[i];
		pal__pgarr_text(&a[0], m->job_id);
		pal__pgarr_i64(&a[1], m->version);
		pal__pgarr_i64(&a[2], m->from);
		pal__pgarr_i64(&a[3], m->to);
		pal__pgarr_i64(&a[4], m->count);
		pal__pgarr_text(&a[5], m->policy);
		pal__pgarr_text(&a[6], m->reason);
		pal__pgarr_text(&a[7], m->calendar);
		pal__pgarr_i64(&a[8], m->calendar ? m->calendar_version : 0);
	}
	arrs_end(a, v, NA);
	char s[16], e[24];
	snprintf(s, sizeof s, "%d", shard);
	snprintf(e, sizeof e, "%" PRId64, epoch);
	const char *p[] = { v[0], v[1], v[2], v[3], v[4], v[5], v[6], s, e, v[7], v[8] };
	PGresult *r = pal__store_query(
		st,
		"INSERT INTO misfires (job_id, version, range_from, range_to, count, policy, reason,"
		" shard, epoch, calendar, calendar_version)"
		" SELECT u.j, u.v, to_timestamp(u.f), to_timestamp(u.t), u.c, u.po, u.re, $8, $9,"
		"  u.ca, nullif(u.cv, 0)"
		" FROM unnest($1::text[], $2::int[], $3::bigint[], $4::bigint[], $5::int[],"
		"   $6::text[], $7::text[], $10::text[], $11::int[]) AS u(j, v, f, t, c, po, re, ca, cv)",
		11, p, err, errlen);
	arrs_free(v, NA);
	if (!r)
		return PAL_EDB;
	PQclear(r);
	return PAL_OK;
}

/*
 * The `excluded` records an older version of a job wrote for an instant
 * that the tick's version, which took over below the watermark, fires
 * (pal_plan_trigger.fresh): a one-shot whose calendar or `exclude:` no
 * longer excludes its planned instant.  The trigger is the instant's one
 * decision (verify: not decided twice); each dropped row leaves an
 * audit_log row (action `misfire.supersede`).  Only where the tick's
 * trigger holds the instant: one whose insert met an older row of the
 * instant's plan key (ON CONFLICT DO NOTHING) replaces nothing, and the
 * record stays.  A record of more than that one instant (a run of a cron
 * version) is left.
 */
static int write_superseded(pal_store *st, int64_t epoch, const char *node,
			    const pal_plan_batch *b, char *err, size_t errlen)
{
	enum { NA = 3 };
	pal_pgarr a[NA];
	char *v[NA];
	size_t n = 0;
	arrs_init(a, NA);
	for (size_t i = 0; i < b->n_trig; i++) {
		const pal_plan_trigger *t = &b->trig[i];
		if (!t->fresh || t->partition)
			continue;
		pal__pgarr_text(&a[0], t->job_id);
		pal__pgarr_i64(&a[1], t->version);
		pal__pgarr_i64(&a[2], t->at);
		n++;
	}
	arrs_end(a, v, NA);
	char e[24];
	snprintf(e, sizeof e, "%" PRId64, epoch);
	const char *p[] = { v[0], v[1], v[2], e, node };
	PGresult *r = !n ? NULL : pal__store_query(
		st,
		"WITH u AS (SELECT * FROM unnest($1::text[], $2::int[], $3::bigint[]) AS u(j, v, a)),"
		" d AS (DELETE FROM misfires m USING u WHERE m.job_id = u.j AND m.version < u.v"
		"   AND m.reason = 'excluded' AND m.range_from = to_timestamp(u.a)"
		"   AND m.range_to = m.range_from"
		"   AND EXISTS (SELECT 1 FROM triggers t WHERE t.job_id = u.j"
		"    AND t.scheduled_at = to_timestamp(u.a) AND t.partition = 0"
		"    AND t.request_id IS NULL AND t.version = u.v)"
		"   RETURNING m.job_id, m.version, m.range_from, m.calendar, m.calendar_version,"
		"   u.v AS by)"
		" INSERT INTO audit_log (actor, action, scope, details)"
		" SELECT 'controller:' || $5, 'misfire.supersede', 'job:' || d.job_id,"
		"  jsonb_build_object('version', d.by, 'instant', d.range_from, 'excluded_by_version',"
		"   d.version, 'calendar', d.calendar, 'calendar_version', d.calendar_version,"
		"   'epoch', $4::bigint) FROM d",
		5, p, err, errlen);
	arrs_free(v, NA);
	if (n && !r)
		return PAL_EDB;
	PQclear(r);
	return PAL_OK;
}

/* Every activation of the tick in one statement (a first start activates
 * a whole shard: one statement per job took most of the start).  Both
 * updates probe the primary keys in a nested loop over the unnested
 * arrays.  (An extra `job_id = ANY($1)` term made each probe of jobs
 * scan the whole array: 1000 activations at 1M jobs took 3.2 s with it,
 * 0.2 s without; EXPLAIN ANALYZE.)  The audit insert reads `j` first (its
 * InitPlan runs that update to the end): the server runs the later CTE
 * first otherwise, and the tick took the audit chain's lock (7076/4,
 * palisade_audit_seal) before waiting for a jobs row that an apply had
 * locked, the apply waiting for that lock to write its own audit row
 * (`deadlock detected`).  Both now lock the jobs rows first. */
static int write_activations(pal_store *st, int64_t epoch, const char *node,
			     const pal_plan_batch *b, char *err, size_t errlen)
{
	if (!b->n_act)
		return PAL_OK;
	enum { NA = 3 };
	pal_pgarr a[NA];
	char *v[NA];
	arrs_init(a, NA);
	for (size_t i = 0; i < b->n_act; i++) {
		pal__pgarr_text(&a[0], b->act[i].job_id);
		pal__pgarr_i64(&a[1], b->act[i].version);
		pal__pgarr_i64(&a[2], b->act[i].effective_from);
	}
	arrs_end(a, v, NA);
	char e[24];
	snprintf(e, sizeof e, "%" PRId64, epoch);
	const char *p[] = { v[0], v[1], v[2], e, node };
	PGresult *r = pal__store_query(
		st,
		"WITH a AS (SELECT * FROM unnest($1::text[], $2::int[], $3::bigint[]) AS a(j, v, f)),"
		" act AS (UPDATE job_versions jv SET activated_at = clock_timestamp(),"
		"   activated_epoch = $4, effective_from = to_timestamp(a.f)"
		"   FROM a WHERE jv.job_id = a.j AND jv.version = a.v AND jv.effective_from IS NULL"
		"   RETURNING jv.job_id, jv.version, jv.effective_from),"
		" j AS (UPDATE jobs SET active_version = m.version, updated_at = now()"
		"   FROM (SELECT job_id, max(version) AS version FROM act GROUP BY job_id) m"
		"   WHERE jobs.job_id = m.job_id AND coalesce(jobs.active_version, 0) < m.version"
		"   RETURNING jobs.job_id),"
		" au AS (INSERT INTO audit_log (actor, action, scope, details)"
		"   SELECT 'controller:' || $5, 'job.activate', 'job:' || act.job_id,"
		"   jsonb_build_object('version', act.version, 'epoch', $4::bigint,"
		"     'effective_from', act.effective_from) FROM act"
		"   WHERE (SELECT count(*) FROM j) >= 0)"
		" SELECT count(*) FROM act",
		5, p, err, errlen);
	arrs_free(v, NA);
	if (!r)
		return PAL_EDB;
	long done = atol(PQgetvalue(r, 0, 0));
	PQclear(r);
	if (done != (long)b->n_act) {
		snprintf(err, errlen,
			 "%zu of %zu job versions (first: %s v%d) were activated by someone else; reloading",
			 b->n_act - (size_t)done, b->n_act, b->act[0].job_id, b->act[0].version);
		return PAL_ESTALE;
	}
	return PAL_OK;
}

/* The dependent jobs (`after:`, transitively: a chain) of the jobs
 * activated in $1 ($2: effective_from, epoch seconds), with the earliest
 * activation they follow (f); low: those whose dependency watermark is
 * above it.  Each version with `after:` (the partial index
 * job_versions_after) is joined to the activated jobs by the upstreams it
 * names, a hash join, not one containment test per pair. */
#define PAL__LOWERED_AFTER_SQL                                                                     \
	"WITH RECURSIVE a AS (SELECT * FROM unnest($1::text[], $2::bigint[]) AS a(j, f)),"         \
	" up AS (SELECT dv.job_id, u ->> 'job' AS upstream FROM job_versions dv,"                  \
	"   jsonb_array_elements(dv.spec -> 'after') u WHERE dv.spec ? 'after'),"                  \
	" dep(job_id, f) AS (SELECT up.job_id, to_timestamp(a.f) FROM a JOIN up ON up.upstream = a.j" \
	"  UNION SELECT up.job_id, dep.f FROM dep JOIN up ON up.upstream = dep.job_id),"          \
	" low AS (SELECT w.job_id, min(dep.f) AS f FROM dep JOIN after_watermarks w"               \
	"   ON w.job_id = dep.job_id GROUP BY w.job_id, w.watermark HAVING w.watermark > min(dep.f))"

/*
 * A version activated below the shard's watermark (a one-shot moved, a
 * job changed to or from one, a brand-new job, a version after one that
 * ended: switch_point in src/controller/planner.c) has its instants after
 * its effective_from planned in this tick, below where the dependency
 * planner may already have moved its dependents' watermarks (an upstream
 * with no instant, a one-shot that ran, lets it pass up to the shard's
 * watermark): those instants would never be looked at for them.  Their
 * after_watermarks go back down to that effective_from
 * (palisade_plan_after decides each instant once: what they decided
 * there stays).  Each dependent's shard row is held first (FOR KEY
 * SHARE: against palisade_plan_after, which locks it FOR UPDATE, not
 * against that shard's ticks), so a dependency planner working from a
 * snapshot before this tick cannot move the watermark back up over the
 * lowered one after it: it commits before this statement reads, or
 * starts after this tick commits.
 *
 * after_query() runs PAL__LOWERED_AFTER_SQL followed by TAIL over B's
 * activations; *ROWS (when not NULL): whether it returned a row.
 */
static int after_query(pal_store *st, const pal_plan_batch *b, const char *tail, bool *rows,
		       char *err, size_t errlen)
{
	enum { NA = 2 };
	pal_pgarr a[NA];
	char *v[NA];
	arrs_init(a, NA);
	for (size_t i = 0; i < b->n_act; i++) {
		pal__pgarr_text(&a[0], b->act[i].job_id);
		pal__pgarr_i64(&a[1], b->act[i].effective_from);
	}
	arrs_end(a, v, NA);
	const char *p[] = { v[0], v[1] };
	char sql[2048];
	snprintf(sql, sizeof sql, "%s%s", PAL__LOWERED_AFTER_SQL, tail);
	PGresult *r = pal__store_query(st, sql, NA, p, err, errlen);
	arrs_free(v, NA);
	if (!r)
		return PAL_EDB;
	if (rows)
		*rows = PQntuples(r) > 0;
	PQclear(r);
	return PAL_OK;
}

/* The shard rows of every dependent of the jobs B activates, whatever
 * its dependency watermark now (one at or below the activation may be
 * moved above it by a dependency planner working from an older snapshot:
 * it must commit before lower_after_watermarks() reads, or start after
 * this tick), FOR KEY SHARE, in shard order; taken before the tick's
 * audit rows (the audit chain's lock), so that an apply or another
 * tick does not wait behind this one's wait.  *ANY: whether B has a
 * dependent at all. */
static int lock_after_shards(pal_store *st, const pal_plan_batch *b, bool *any, char *err,
			     size_t errlen)
{
	*any = false;
	if (!b->n_act)
		return PAL_OK;
	return after_query(st, b,
			   " SELECT 1 FROM shards s WHERE s.shard_id IN (SELECT j.shard FROM dep"
			   "  JOIN jobs j ON j.job_id = dep.job_id) ORDER BY s.shard_id FOR KEY SHARE",
			   any, err, errlen);
}

static int lower_after_watermarks(pal_store *st, const pal_plan_batch *b, char *err, size_t errlen)
{
	return after_query(st, b,
			   " UPDATE after_watermarks w SET watermark = low.f,"
			   " updated_at = clock_timestamp() FROM low"
			   " WHERE w.job_id = low.job_id AND w.watermark > low.f",
			   NULL, err, errlen);
}

/*
 * The rows an older version planned after the switch point of a version
 * this tick activates below the shard's watermark (switch_point in
 * src/controller/planner.c: a one-shot moved, a job changed to or from one,
 * a version with no instant after its apply), at an instant that version
 * does not decide (pending, paused, and shadow, which a cut-over would
 * make live): cancelled through the door, one `cancel` audit row per
 * job; a shadow row (only after the apply: one before it is an instant
 * the old system has run) that no attempt reached is deleted instead, one
 * `trigger.drop` audit row per job, so that a live `after:` dependent
 * reads it as absent rather than finished or failed.  This release's apply cancels them in its own transaction
 * (TAKEOVER_* in src/store/apply_takeover.c), an apply of 0.3.0 does not: without
 * this a one-shot moved by a 0.3.0 CLI or API node beside this release's
 * controller kept its old row pending beside the new one (two effects).
 * Only up to where the tick decided the job's instants (its new
 * watermark; in a tick cut short, the last instant it decided for the
 * job); a row at an instant the tick plans (its insert met the old row:
 * the old row keeps the plan key and runs it once: a shadow one whose
 * instant is live now, one a cut-over left shadow while the job was
 * retired, goes shadow -> pending through the door, one `trigger.live`
 * audit row per job, as TAKEOVER_LIVE_SQL in apply_takeover.c) or records as a misfire
 * (missed, excluded: left to the apply's sweep, which drops an excluded
 * one) stays.  A claimed row is left to finish, and so is a retired job
 * (its retiring version: `delete` sweeps its rows, and the cause of that
 * sweep's audit row is what a later apply of the job reads).  The same
 * cause as the apply's sweep.
 */
#define TICK_TAKEOVER_SQL                                                                          \
	"WITH a AS (SELECT * FROM unnest($1::text[], $2::int[], $3::bigint[], $4::bigint[])"       \
	"   AS a(j, v, f, u)"                                                                      \
	"   WHERE to_timestamp(a.f) < (SELECT s.watermark FROM shards s WHERE s.shard_id = $5)"    \
	"   AND NOT EXISTS (SELECT 1 FROM jobs r WHERE r.job_id = a.j"                             \
	"    AND r.retired_at IS NOT NULL)),"                                                      \
	" k AS (SELECT * FROM unnest($6::text[], $7::bigint[]) AS k(j, at)),"                      \
	" x AS (SELECT * FROM unnest($8::text[], $9::bigint[], $10::bigint[]) AS x(j, f, t)),"     \
	" c AS (SELECT t.id, t.scheduled_at, t.state, t.job_id, t.state = 'shadow'"                \
	"   AND t.request_id IS NULL AND t.attempt_count = 0"                                      \
	"   AND NOT EXISTS (SELECT 1 FROM attempts y WHERE y.trigger_id = t.id"                     \
	"    AND y.scheduled_at = t.scheduled_at)"                                                  \
	"   AND NOT EXISTS (SELECT 1 FROM tickets z WHERE z.trigger_id = t.id) AS dr"              \
	"   FROM a JOIN triggers t ON t.job_id = a.j"                                              \
	"   AND t.version < a.v AND t.scheduled_at > to_timestamp(a.f)"                            \
	"   AND t.scheduled_at <= to_timestamp(a.u)"                                               \
	"   AND t.state IN ('pending', 'paused', 'shadow')"                                        \
	"   AND t.source IN ('schedule', 'catchup')"                                               \
	"   AND (t.state <> 'shadow' OR t.scheduled_at > (SELECT w.created_at"                     \
	"    FROM job_versions w WHERE w.job_id = a.j AND w.version = a.v))"                       \
	"   WHERE NOT EXISTS (SELECT 1 FROM k WHERE k.j = t.job_id"                                \
	"    AND to_timestamp(k.at) = t.scheduled_at)"                                             \
	"   AND NOT EXISTS (SELECT 1 FROM x WHERE x.j = t.job_id"                                  \
	"    AND t.scheduled_at BETWEEN to_timestamp(x.f) AND to_timestamp(x.t))),"                \
	" d AS (DELETE FROM triggers t USING c WHERE c.dr AND t.id = c.id"                       \
	"   AND t.scheduled_at = c.scheduled_at AND t.state = 'shadow'"                            \
	"   RETURNING t.id, t.job_id, t.scheduled_at),"                                            \
	" m AS (SELECT m.job_id, m.id FROM " PAL__TRIGGER_MOVE(                                    \
	    "SELECT c.id, c.scheduled_at, c.state FROM c WHERE NOT c.dr",                          \
	    "'cancelled'", "NULL") " m),"                                                          \
	" l AS (SELECT l.job_id, l.id FROM " PAL__TRIGGER_MOVE(                                    \
	    "SELECT t.id, t.scheduled_at, t.state FROM a JOIN triggers t ON t.job_id = a.j"        \
	    " AND t.version < a.v AND t.scheduled_at > to_timestamp(a.f)"                          \
	    " AND t.scheduled_at <= to_timestamp(a.u) AND t.state = 'shadow'"                      \
	    " AND t.source IN ('schedule', 'catchup')"                                             \
	    " AND t.scheduled_at > (SELECT w.created_at FROM job_versions w"                       \
	    "  WHERE w.job_id = a.j AND w.version = a.v)"                                          \
	    " JOIN k ON k.j = t.job_id AND to_timestamp(k.at) = t.scheduled_at"                    \
	    " WHERE " PAL__SHADOW_LIVE("t"),                                                       \
	    "'pending'", "NULL") " l)"                                                             \
	" INSERT INTO audit_log (actor, action, scope, details)"                                   \
	" SELECT 'controller:' || $11, 'cancel', 'job:' || m.job_id, jsonb_build_object('cause',"  \
	"   'a version that takes over at its apply (no instant after it, a one-shot, or a"        \
	" retired job applied again) replaced the version that planned them; cancelled by the"     \
	" controller that activated it', 'cancelled', count(*),"                                   \
	"   'trigger_ids', jsonb_agg(m.id ORDER BY m.id), 'epoch', $12::bigint)"                   \
	" FROM m GROUP BY m.job_id"                                                                \
	" UNION ALL"                                                                               \
	" SELECT 'controller:' || $11, 'trigger.live', 'job:' || l.job_id,"                        \
	"   jsonb_build_object('cause', 'a shadow instant of the version that a version taking"    \
	" over at its apply replaced, at an instant that version fires and that a cut-over has"    \
	" made live since it was planned; made live by the controller that activated it',"        \
	"   'moved', count(*), 'trigger_ids', jsonb_agg(l.id ORDER BY l.id),"                      \
	"   'epoch', $12::bigint)"                                                                 \
	" FROM l GROUP BY l.job_id"                                                                \
	" UNION ALL"                                                                               \
	" SELECT 'controller:' || $11, 'trigger.drop', 'job:' || d.job_id,"                        \
	"   jsonb_build_object('cause', 'a shadow instant of the version that a version taking"    \
	" over at its apply replaced (the old system''s to run), never claimed; dropped by the"    \
	" controller that activated it', 'dropped', count(*),"                                     \
	"   'trigger_ids', jsonb_agg(d.id ORDER BY d.id),"                                         \
	"   'scheduled_at', jsonb_agg(d.scheduled_at ORDER BY d.id), 'epoch', $12::bigint)"        \
	" FROM d GROUP BY d.job_id"

static int write_takeovers(pal_store *st, int shard, int64_t epoch, const char *node,
			   const pal_plan_batch *b, char *err, size_t errlen)
{
	/* each job activated at a version after its first (one with a version
	 * to replace): where the tick decided its instants up to, the new
	 * watermark, or in a tick cut short the last instant it decided */
	GHashTable *act = g_hash_table_new(g_str_hash, g_str_equal);
	int64_t *upto = malloc((b->n_act + 1) * sizeof *upto);
	if (!upto) {
		g_hash_table_destroy(act);
		snprintf(err, errlen, "out of memory");
		return PAL_ENOMEM;
	}
	for (size_t i = 0; i < b->n_act; i++) {
		upto[i] = b->complete ? b->watermark : PAL_NO_TIME;
		if (b->act[i].version > 1)
			g_hash_table_insert(act, (gpointer)b->act[i].job_id, &upto[i]);
	}
	for (size_t i = 0; !b->complete && i < b->n_trig; i++) {
		int64_t *u = g_hash_table_lookup(act, b->trig[i].job_id);
		if (u && (*u == PAL_NO_TIME || b->trig[i].at > *u))
			*u = b->trig[i].at;
	}
	for (size_t i = 0; !b->complete && i < b->n_mis; i++) {
		int64_t *u = g_hash_table_lookup(act, b->mis[i].job_id);
		if (u && (*u == PAL_NO_TIME || b->mis[i].to > *u))
			*u = b->mis[i].to;
	}
	enum { AJ, AV, AF, AU, KJ, KA, XJ, XF, XT, NA };
	pal_pgarr a[NA];
	char *v[NA];
	arrs_init(a, NA);
	size_t n = 0;
	for (size_t i = 0; i < b->n_act; i++) {
		if (b->act[i].version <= 1 || upto[i] == PAL_NO_TIME)
			continue;
		pal__pgarr_text(&a[AJ], b->act[i].job_id);
		pal__pgarr_i64(&a[AV], b->act[i].version);
		pal__pgarr_i64(&a[AF], b->act[i].effective_from);
		pal__pgarr_i64(&a[AU], upto[i]);
		n++;
	}
	for (size_t i = 0; n && i < b->n_trig; i++)
		if (g_hash_table_contains(act, b->trig[i].job_id)) {
			pal__pgarr_text(&a[KJ], b->trig[i].job_id);
			pal__pgarr_i64(&a[KA], b->trig[i].at);
		}
	for (size_t i = 0; n && i < b->n_mis; i++)
		if (g_hash_table_contains(act, b->mis[i].job_id)) {
			pal__pgarr_text(&a[XJ], b->mis[i].job_id);
			pal__pgarr_i64(&a[XF], b->mis[i].from);
			pal__pgarr_i64(&a[XT], b->mis[i].to);
		}
	g_hash_table_destroy(act);
	free(upto);
	arrs_end(a, v, NA);
	char s[16], e[24];
	snprintf(s, sizeof s, "%d", shard);
	snprintf(e, sizeof e, "%" PRId64, epoch);
	const char *p[] = { v[AJ], v[AV], v[AF], v[AU], s,     v[KJ],
			    v[KA], v[XJ], v[XF], v[XT], node, e };
	PGresult *r = !n ? NULL : pal__store_query(st, TICK_TAKEOVER_SQL, 12, p, err, errlen);
	arrs_free(v, NA);
	if (n && !r)
		return PAL_EDB;
	PQclear(r);
	return PAL_OK;
}

/*
 * A job moved to another tenant or group by an apply: the apply moved the
 * job's unfinished rows to the new scope and their side with it
 * (move_triggers in src/store/apply.c), but a tick in flight that planned
 * from the old version, and committed after the apply's move, wrote its
 * rows with the old scope and judged their side by it (pending in a scope
 * the job left for a shadow one: palisade called instants that are the
 * old system's; shadow where it is now live: no one called them).  So,
 * after its insert, in a statement of its own (a snapshot taken after the
 * insert, which a large batch makes long), a tick moves the rows of
 * - the jobs it planned rows of ($3..$5: the scope it planned them with)
 *   whose stored scope is another now: the apply committed while it ran;
 * - the jobs whose version it activates ($1, $2) and whose last version
 *   activated before it had another scope: this tick runs after the apply
 *   committed and after every tick of the shard that planned from the old
 *   version, so it moves what one committed after its own check (or what
 *   an apply of 0.3.0 left: it moves no row).  The last one activated, not
 *   the one before: the moving version may have been passed over (applied
 *   again at once, the next tick activates the latest alone), and the rows
 *   were planned with the scope of the version in force.
 * Their unfinished rows in another scope than the job's
 * (PAL__MOVE_KEEPS_SCOPE) take the job's, and then their side from the
 * apply that moved the job to its present scope on (the first version
 * after the last one in another scope: its created_at; PAL__MOVE_SIDE_SQL,
 * PAL__MOVE_AHEAD_SQL), audited as the controller's.  Instants between the
 * apply and this tick change sides too: one made live is called late,
 * one made shadow is the old system's (palisade_trigger_live says so
 * since the apply); a row claimed meanwhile finishes.
 */
#define TICK_RETAG_SQL                                                                             \
	"WITH a AS (SELECT a.j, min(a.v) AS v FROM unnest($1::text[], $2::int[]) AS a(j, v)"       \
	"   WHERE a.v > 1 GROUP BY a.j),"                                                          \
	" c AS (SELECT r.job_id, r.tenant, r.resource_group FROM a JOIN jobs r ON r.job_id = a.j"  \
	"   WHERE EXISTS (SELECT 1 FROM (SELECT coalesce(w.plan_tenant, 'default') AS te,"         \
	"    w.resource_group AS g FROM job_versions w WHERE w.job_id = a.j AND w.version < a.v"   \
	"    AND w.effective_from IS NOT NULL ORDER BY w.version DESC LIMIT 1) p"                  \
	"    WHERE (p.te, p.g) IS DISTINCT FROM (r.tenant, r.resource_group))"                     \
	"  UNION SELECT r.job_id, r.tenant, r.resource_group"                                      \
	"   FROM unnest($3::text[], $4::text[], $5::text[]) AS f(j, te, g)"                        \
	"   JOIN jobs r ON r.job_id = f.j"                                                         \
	"   WHERE (f.te, f.g) IS DISTINCT FROM (r.tenant, r.resource_group)),"                     \
	" m AS (UPDATE triggers t SET tenant = c.tenant, resource_group = c.resource_group"        \
	"   FROM c WHERE t.job_id = c.job_id AND t.state NOT IN " PAL__MOVE_KEEPS_SCOPE            \
	"   AND (t.tenant, t.resource_group) IS DISTINCT FROM (c.tenant, c.resource_group)"        \
	"   RETURNING t.job_id)"                                                                   \
	" SELECT count(*), coalesce(array_agg(x.job_id ORDER BY x.job_id), '{}')::text,"           \
	"  coalesce(array_agg(x.at ORDER BY x.job_id), '{}')::text FROM ("                         \
	"  SELECT c.job_id, (SELECT min(w.created_at) FROM job_versions w"                         \
	"   WHERE w.job_id = c.job_id AND w.version > coalesce((SELECT max(o.version)"             \
	"    FROM job_versions o WHERE o.job_id = c.job_id"                                        \
	"    AND (coalesce(o.plan_tenant, 'default'), o.resource_group)"                           \
	"    IS DISTINCT FROM (c.tenant, c.resource_group)), 0)) AS at"                            \
	"  FROM c WHERE c.job_id IN (SELECT m.job_id FROM m)) x"
/* Where the apply that moved the job of row t to its present scope was
 * ($1 the jobs, $4 those instants). */
#define TICK_MOVE_FROM                                                                             \
	"(SELECT f.at FROM unnest($1::text[], $4::timestamptz[]) AS f(j, at) WHERE f.j = t.job_id)"
#define TICK_MOVE_BY "; moved by the controller of its shard"
#define TICK_MOVE_ACTOR "'controller:' || $2"
#define TICK_MOVE_MORE ", 'epoch', $3::bigint"

static int write_moves(pal_store *st, int64_t epoch, const char *node, const pal_plan_batch *b,
		       char *err, size_t errlen)
{
	enum { AJ, AV, RJ, RT, RG, NA };
	pal_pgarr a[NA];
	char *v[NA];
	arrs_init(a, NA);
	size_t n = b->n_refs;
	for (size_t i = 0; i < b->n_act; i++) {
		if (b->act[i].version <= 1)
			continue;
		pal__pgarr_text(&a[AJ], b->act[i].job_id);
		pal__pgarr_i64(&a[AV], b->act[i].version);
		n++;
	}
	for (size_t i = 0; i < b->n_refs; i++) {
		pal__pgarr_text(&a[RJ], b->refs[i].job_id);
		pal__pgarr_text(&a[RT], b->refs[i].tenant);
		pal__pgarr_text(&a[RG], b->refs[i].group);
	}
	arrs_end(a, v, NA);
	PGresult *r =
	    !n ? NULL : pal__store_query(st, TICK_RETAG_SQL, NA, (const char **)v, err, errlen);
	arrs_free(v, NA);
	if (!n)
		return PAL_OK;
	if (!r)
		return PAL_EDB;
	bool moved = strcmp(PQgetvalue(r, 0, 0), "0") != 0;
	char *ids = moved ? g_strdup(PQgetvalue(r, 0, 1)) : NULL;
	char *ats = moved ? g_strdup(PQgetvalue(r, 0, 2)) : NULL;
	PQclear(r);
	if (!moved)
		return PAL_OK;
	char e[24];
	snprintf(e, sizeof e, "%" PRId64, epoch);
	const char *p[] = {ids, node, e, ats};
	/* in this order, a statement each (PAL__MOVE_AHEAD_SQL) */
	static const char *const moves[] = {
	    PAL__MOVE_SIDE_SQL(TICK_MOVE_FROM, TICK_MOVE_ACTOR, "NULL", TICK_MOVE_BY,
			       TICK_MOVE_MORE),
	    PAL__MOVE_AHEAD_SQL(TICK_MOVE_FROM, TICK_MOVE_ACTOR, "NULL", TICK_MOVE_BY,
				TICK_MOVE_MORE)};
	int rc = PAL_OK;
	bool asked = false;
	for (size_t k = 0; !rc && k < 2; k++) {
		r = pal__store_query(st, moves[k], 4, p, err, errlen);
		if (!r)
			rc = PAL_EDB;
		else if (k == 1)
			asked = strcmp(PQcmdTuples(r), "0") != 0;
		PQclear(r);
	}
	if (!rc && asked)
		rc = pal__store_exec(st, PAL__HANDBACK_NOTIFY, err, errlen);
	g_free(ids);
	g_free(ats);
	return rc;
}

static int write_tickets(pal_store *st, int64_t epoch, const pal_plan_batch *b, char *err,
			 size_t errlen)
{
	char e[24];
	snprintf(e, sizeof e, "%" PRId64, epoch);
	for (size_t i = 0; i < b->n_tick; i++) {
		const pal_plan_ticket *t = &b->tick[i];
		char v[16], f[24], to[24], c[16];
		snprintf(v, sizeof v, "%d", t->version);
		snprintf(f, sizeof f, "%" PRId64, t->from);
		snprintf(to, sizeof to, "%" PRId64, t->to);
		snprintf(c, sizeof c, "%d", t->count);
		const char *p[] = { t->job_id, v, f, to, c, e };
		PGresult *r = pal__store_query(
			st,
			"INSERT INTO tickets (job_id, reason, evidence, allowed_actions)"
			" VALUES ($1, 'misfire: ' || $5 || ' instants missed (policy manual)',"
			"  jsonb_build_object('version', $2::int, 'range_from', to_timestamp($3::bigint),"
			"   'range_to', to_timestamp($4::bigint), 'count', $5::int, 'epoch', $6::bigint),"
			"  ARRAY['backfill', 'abandon'])",
			6, p, err, errlen);
		if (!r)
			return PAL_EDB;
		PQclear(r);
	}
	return PAL_OK;
}

/* The jobs whose planning failed in the planner (batch->failed): each is
 * quarantined in the tick's transaction, with the planner's error. */
static int write_failed(pal_store *st, int shard, int64_t epoch, const pal_plan_batch *b,
			char *err, size_t errlen)
{
	int rc = PAL_OK;
	for (size_t i = 0; !rc && i < b->n_failed; i++)
		rc = pal_store_quarantine_job(st, b->failed[i].job_id, shard, epoch,
					      b->failed[i].since, b->failed[i].error, NULL, err,
					      errlen);
	return rc;
}

/* The rows of batch B (no watermark, no commit). */
static int write_batch(pal_store *st, int shard, int64_t epoch, const char *node,
		       const pal_plan_batch *b, int64_t *inserted, char *err, size_t errlen)
{
	*inserted = 0;
	bool deps = false;
	int rc = lock_after_shards(st, b, &deps, err, errlen);
	if (!rc)
		rc = write_activations(st, epoch, node, b, err, errlen);
	if (!rc && deps)
		rc = lower_after_watermarks(st, b, err, errlen);
	if (!rc)
		rc = write_triggers(st, shard, epoch, b, inserted, err, errlen);
	if (!rc)
		rc = write_misfires(st, shard, epoch, b, err, errlen);
	if (!rc)
		rc = write_superseded(st, epoch, node, b, err, errlen);
	if (!rc)
		rc = write_takeovers(st, shard, epoch, node, b, err, errlen);
	if (!rc)
		rc = write_moves(st, epoch, node, b, err, errlen);
	if (!rc)
		rc = write_tickets(st, epoch, b, err, errlen);
	if (!rc)
		rc = write_failed(st, shard, epoch, b, err, errlen);
	return rc;
}

/* Nothing in B but the new watermark. */
static bool idle_batch(const pal_plan_batch *b, int64_t inserted)
{
	return !inserted && !b->n_trig && !b->n_mis && !b->n_act && !b->n_tick && !b->n_failed;
}

/* Move the watermark, notify, commit (or roll back when RC failed). */
static int finish_tick(pal_store *st, int shard, int64_t epoch, const pal_plan_batch *b,
		       int64_t inserted, int rc, char *err, size_t errlen)
{
	if (!rc) {
		char s[16], e[24], w[24];
		snprintf(s, sizeof s, "%d", shard);
		snprintf(e, sizeof e, "%" PRId64, epoch);
		snprintf(w, sizeof w, "%" PRId64, b->watermark);
		const char *p[] = { s, e, w };
		PGresult *r = pal__store_query(
			st,
			"UPDATE shards SET watermark = to_timestamp($3::bigint)"
			" WHERE shard_id = $1 AND epoch = $2"
			" AND (watermark IS NULL OR watermark <= to_timestamp($3::bigint))",
			3, p, err, errlen);
		if (!r) {
			rc = PAL_EDB;
		} else {
			if (strcmp(PQcmdTuples(r), "1")) {
				snprintf(err, errlen,
					 "shard %d: watermark write rejected (0 rows) at epoch %s", shard, e);
				rc = PAL_ESTALE;
			}
			PQclear(r);
		}
	}
	if (!rc && inserted > 0) {
		PGresult *r = pal__store_query(st, "NOTIFY palisade_triggers", 0, NULL, err, errlen);
		if (!r)
			rc = PAL_EDB;
		PQclear(r);
	}
	/* A tick that wrote nothing but the watermark (every job idle: most
	 * ticks of most shards) does not wait for its WAL to reach the disk.
	 * Lost in a crash, it leaves the shard at its previous watermark: the
	 * next leader scans a window that has no instant (this tick found
	 * none), and a later synchronous commit flushes the WAL in order, so
	 * nothing that read the new watermark outlives it. */
	if (!rc && idle_batch(b, inserted))
		rc = pal__store_exec(st, "SET LOCAL synchronous_commit TO off", err, errlen);
	if (rc) {
		pal__store_rollback(st);
		return rc;
	}
	if (pal__store_exec(st, "COMMIT", err, errlen)) {
		pal__store_rollback(st);
		return PAL_EDB;
	}
	return PAL_OK;
}

int pal_store_tick_commit(pal_store *st, int shard, int64_t epoch, const char *node,
			  const pal_plan_batch *b, int64_t *inserted, char *err, size_t errlen)
{
	int rc = write_batch(st, shard, epoch, node, b, inserted, err, errlen);
	return finish_tick(st, shard, epoch, b, *inserted, rc, err, errlen);
}

bool pal_store_statement_failed(const pal_store *st)
{
	/* The server refused a statement (a constraint, bad data, a bug in
	 * it) and the session is still there: not a lost connection. */
	return st->conn && PQstatus(st->conn) == CONNECTION_OK && st->sqlstate[0] &&
	       strcmp(st->sqlstate, "55P03") && strncmp(st->sqlstate, "57", 2) &&
	       strncmp(st->sqlstate, "08", 2) && strncmp(st->sqlstate, "40", 2) &&
	       strncmp(st->sqlstate, "53", 2);
}

/* ---- quarantine: the jobs of a failed batch, one by one ---------------------------- */

/* The rows of B that belong to the jobs in SET, into O (arrays owned). */
static int subset(const pal_plan_batch *b, GHashTable *set, pal_plan_batch *o)
{
	memset(o, 0, sizeof *o);
	o->watermark = b->watermark;
	o->refs = malloc((b->n_refs + 1) * sizeof *o->refs);
	o->trig = malloc((b->n_trig + 1) * sizeof *o->trig);
	o->mis = malloc((b->n_mis + 1) * sizeof *o->mis);
	o->act = malloc((b->n_act + 1) * sizeof *o->act);
	o->tick = malloc((b->n_tick + 1) * sizeof *o->tick);
	o->failed = malloc((b->n_failed + 1) * sizeof *o->failed);
	uint32_t *map = malloc((b->n_refs + 1) * sizeof *map);
	if (!o->refs || !o->trig || !o->mis || !o->act || !o->tick || !o->failed || !map) {
		free(map);
		pal_plan_batch_free(o);
		return PAL_ENOMEM;
	}
	for (size_t i = 0; i < b->n_refs; i++)
		if (g_hash_table_contains(set, b->refs[i].job_id)) {
			map[i] = (uint32_t)o->n_refs;
			o->refs[o->n_refs++] = b->refs[i];
		}
	for (size_t i = 0; i < b->n_trig; i++)
		if (g_hash_table_contains(set, b->trig[i].job_id)) {
			o->trig[o->n_trig] = b->trig[i];
			o->trig[o->n_trig++].ref = map[b->trig[i].ref];
		}
	for (size_t i = 0; i < b->n_mis; i++)
		if (g_hash_table_contains(set, b->mis[i].job_id))
			o->mis[o->n_mis++] = b->mis[i];
	for (size_t i = 0; i < b->n_act; i++)
		if (g_hash_table_contains(set, b->act[i].job_id))
			o->act[o->n_act++] = b->act[i];
	for (size_t i = 0; i < b->n_tick; i++)
		if (g_hash_table_contains(set, b->tick[i].job_id))
			o->tick[o->n_tick++] = b->tick[i];
	for (size_t i = 0; i < b->n_failed; i++)
		if (g_hash_table_contains(set, b->failed[i].job_id))
			o->failed[o->n_failed++] = b->failed[i];
	free(map);
	return PAL_OK;
}

typedef struct iso_ctx {
	pal_store *st;
	int shard;
	int64_t epoch;
	const char *node;
	const pal_plan_batch *b;
	int64_t inserted;
	pal_quarantined *bad;
	size_t n_bad;
} iso_ctx;

/* Write the rows of IDS[0..n) inside a savepoint; on a refused statement
 * roll back to it and split, down to the one job that fails. */
static int isolate(iso_ctx *x, const char **ids, size_t n, char *err, size_t errlen)
{
	if (!n)
		return PAL_OK;
	GHashTable *set = g_hash_table_new(g_str_hash, g_str_equal);
	for (size_t i = 0; i < n; i++)
		g_hash_table_add(set, (gpointer)ids[i]);
	pal_plan_batch o;
	int rc = subset(x->b, set, &o);
	g_hash_table_destroy(set);
	if (rc)
		return rc;
	if ((rc = pal__store_exec(x->st, "SAVEPOINT pal_isolate", err, errlen))) {
		pal_plan_batch_free(&o);
		return rc;
	}
	int64_t ins = 0;
	char e[512];
	rc = write_batch(x->st, x->shard, x->epoch, x->node, &o, &ins, e, sizeof e);
	pal_plan_batch_free(&o);
	if (!rc) {
		x->inserted += ins;
		return pal__store_exec(x->st, "RELEASE SAVEPOINT pal_isolate", err, errlen);
	}
	if (rc != PAL_EDB || !pal_store_statement_failed(x->st)) {
		snprintf(err, errlen, "%s", e);
		return rc;
	}
	if ((rc = pal__store_exec(x->st, "ROLLBACK TO SAVEPOINT pal_isolate", err, errlen)) ||
	    (rc = pal__store_exec(x->st, "RELEASE SAVEPOINT pal_isolate", err, errlen)))
		return rc;
	if (n == 1) {
		pal_quarantined *q = &x->bad[x->n_bad++];
		q->job_id = ids[0];
		snprintf(q->error, sizeof q->error, "%s", e);
		return PAL_OK;
	}
	rc = isolate(x, ids, n / 2, err, errlen);
	return rc ? rc : isolate(x, ids + n / 2, n - n / 2, err, errlen);
}

int pal_store_quarantine_job(pal_store *st, const char *job_id, int shard, int64_t epoch,
			     int64_t since, const char *error, bool *created, char *err,
			     size_t errlen)
{
	if (created)
		*created = false;
	char s[16], e[24], f[24];
	snprintf(s, sizeof s, "%d", shard);
	snprintf(e, sizeof e, "%" PRId64, epoch);
	snprintf(f, sizeof f, "%" PRId64, since);
	const char *p[] = { job_id, s, e, error, since == PAL_NO_TIME ? NULL : f };
	/* The ticket first (the quarantine row names it); nothing when the
	 * job is quarantined already. */
	PGresult *r = pal__store_query(
		st,
		"WITH j AS (SELECT job_id, coalesce(active_version, latest_version) AS v,"
		"   coalesce(to_timestamp($5::bigint), now()) AS since FROM jobs"
		"   WHERE job_id = $1 AND NOT EXISTS (SELECT 1 FROM quarantine q WHERE q.job_id = $1)),"
		" t AS (INSERT INTO tickets (job_id, reason, evidence, allowed_actions)"
		"   SELECT j.job_id, 'quarantined: planning failed', jsonb_build_object('version', j.v,"
		"   'since', j.since, 'error', $4::text, 'shard', $2::int, 'epoch', $3::bigint),"
		"   ARRAY['release'] FROM j RETURNING id, job_id),"
		" q AS (INSERT INTO quarantine (job_id, version, shard, epoch, since, error, ticket_id)"
		"   SELECT j.job_id, j.v, $2::int, $3::bigint, j.since, $4, t.id FROM j JOIN t USING (job_id)"
		"   ON CONFLICT (job_id) DO NOTHING RETURNING job_id)"
		" SELECT count(*) FROM q",
		5, p, err, errlen);
	if (!r)
		return PAL_EDB;
	if (created)
		*created = atoi(PQgetvalue(r, 0, 0)) > 0;
	PQclear(r);
	return PAL_OK;
}

/*
 * Besides what store.h says: both commits (this one and
 * pal_store_tick_commit) also quarantine, in the same transaction, the jobs
 * the planner left out of B (B->failed; write_failed).  When the rows of
 * every job with triggers in B (two or more) are refused, each on its own,
 * the cause is not a job's: nothing is quarantined, the transaction is
 * rolled back and PAL_EBUSY returned (err says why).
 */
int pal_store_tick_commit_isolated(pal_store *st, int shard, int64_t epoch, const char *node,
				   int64_t since, const pal_plan_batch *b, int64_t *inserted,
				   pal_quarantined **bad, size_t *n_bad, char *err, size_t errlen)
{
	*inserted = 0;
	*bad = NULL;
	*n_bad = 0;
	/* The jobs of the batch, each once (their id strings are the planner's). */
	GHashTable *seen = g_hash_table_new(g_str_hash, g_str_equal);
	GPtrArray *ids = g_ptr_array_new();
#define NOTE(id)                                                                                   \
	do {                                                                                       \
		if (g_hash_table_add(seen, (gpointer)(id)))                                        \
			g_ptr_array_add(ids, (gpointer)(id));                                      \
	} while (0)
	for (size_t i = 0; i < b->n_refs; i++)
		NOTE(b->refs[i].job_id);
	for (size_t i = 0; i < b->n_mis; i++)
		NOTE(b->mis[i].job_id);
	for (size_t i = 0; i < b->n_act; i++)
		NOTE(b->act[i].job_id);
	for (size_t i = 0; i < b->n_tick; i++)
		NOTE(b->tick[i].job_id);
	for (size_t i = 0; i < b->n_failed; i++)
		NOTE(b->failed[i].job_id);
#undef NOTE
	g_hash_table_destroy(seen);
	iso_ctx x = { .st = st, .shard = shard, .epoch = epoch, .node = node, .b = b };
	x.bad = calloc(ids->len + 1, sizeof *x.bad);
	int rc = x.bad ? isolate(&x, (const char **)ids->pdata, ids->len, err, errlen) : PAL_ENOMEM;
	/* The jobs with triggers in the batch, and how many of them were refused:
	 * when that is all of them (two or more), the cause is the shard's or
	 * the database's (a trigger on the table, a missing partition), not
	 * one job's.  Quarantining them all would bury the shard under a
	 * ticket per job; the tick fails instead and the next one tries again
	 * (once a healthy job is due in the same tick, bad ones are found). */
	size_t with_trig = 0, bad_trig = 0;
	if (!rc && x.n_bad > 1) {
		GHashTable *trig = g_hash_table_new(g_str_hash, g_str_equal);
		for (size_t i = 0; i < b->n_refs; i++)
			g_hash_table_add(trig, (gpointer)b->refs[i].job_id);
		with_trig = g_hash_table_size(trig);
		for (size_t i = 0; i < x.n_bad; i++)
			bad_trig += g_hash_table_contains(trig, x.bad[i].job_id);
		g_hash_table_destroy(trig);
	}
	if (!rc && with_trig > 1 && bad_trig == with_trig) {
		snprintf(err, errlen,
			 "the rows of every one of the %zu jobs with triggers in the batch were "
			 "refused, each on its own: the cause is not one job, nothing is "
			 "quarantined; first: %s",
			 with_trig, x.bad[0].error);
		rc = PAL_EBUSY;
	}
	g_ptr_array_free(ids, TRUE);
	for (size_t i = 0; !rc && i < x.n_bad; i++)
		rc = pal_store_quarantine_job(st, x.bad[i].job_id, shard, epoch, since,
					      x.bad[i].error, &x.bad[i].created, err, errlen);
	rc = finish_tick(st, shard, epoch, b, x.inserted, rc, err, errlen);
	if (rc) {
		free(x.bad);
		return rc;
	}
	*inserted = x.inserted;
	*bad = x.bad;
	*n_bad = x.n_bad;
	return PAL_OK;
}

int pal_store_quarantined_ids(pal_store *st, int shard, char ***out, size_t *n, char *err,
			      size_t errlen)
{
	*out = NULL;
	*n = 0;
	char s[16];
	snprintf(s, sizeof s, "%d", shard);
	const char *p[] = { s };
	PGresult *r = pal__store_query(st, "SELECT job_id FROM quarantine WHERE shard = $1::int", 1,
				       p, err, errlen);
	if (!r)
		return PAL_EDB;
	int k = PQntuples(r);
	char **a = g_new0(char *, k + 1);
	for (int i = 0; i < k; i++)
		a[i] = g_strdup(PQgetvalue(r, i, 0));
	PQclear(r);
	*out = a;
	*n = (size_t)k;
	return PAL_OK;
}

int pal_store_quarantine_json(pal_store *st, const char *job_id, json_t **out, char *err,
			      size_t errlen)
{
	const char *p[] = { job_id };
	return pal__store_query_json(
	    st,
	    "SELECT coalesce(json_agg(json_build_object('job', job_id, 'version', version, 'since',"
	    " since, 'error', error, 'ticket', ticket_id) ORDER BY job_id), '[]')::text"
	    " FROM quarantine WHERE $1::text IS NULL OR job_id = $1",
	    1, p, out, err, errlen);
}

int pal_store_release_quarantine(pal_store *st, const char *job_id, const char *actor,
				 const char *reason, char *err, size_t errlen)
{
	if (pal__store_exec(st, "BEGIN", err, errlen))
		return PAL_EDB;
	const char *p[] = { job_id, actor, reason };
	PGresult *r = pal__store_query(
		st,
		"WITH q AS (DELETE FROM quarantine WHERE job_id = $1 RETURNING *),"
		" t AS (UPDATE tickets SET state = 'resolved', resolution = 'released', actor = $2,"
		"   resolved_at = now() FROM q WHERE tickets.id = q.ticket_id AND tickets.state = 'open'"
		"   RETURNING tickets.id),"
		" a AS (INSERT INTO audit_log (actor, action, scope, reason, details)"
		"   SELECT $2, 'job.release', 'job:' || q.job_id, $3, jsonb_build_object('version',"
		"   q.version, 'since', q.since, 'error', q.error, 'ticket', q.ticket_id) FROM q)"
		" SELECT count(*), count(pg_notify('palisade_apply', q.job_id)) FROM q",
		3, p, err, errlen);
	if (!r) {
		pal__store_rollback(st);
		return PAL_EDB;
	}
	bool found = atoi(PQgetvalue(r, 0, 0)) > 0;
	PQclear(r);
	if (!found) {
		pal__store_rollback(st);
		snprintf(err, errlen, "job %s is not quarantined", job_id);
		return PAL_ENOENT;
	}
	if (pal__store_exec(st, "COMMIT", err, errlen)) {
		pal__store_rollback(st);
		return PAL_EDB;
	}
	return PAL_OK;
}

/* ---- verify's reads beside the plan set --------------------------------------------- */

int pal_store_never_activated_json(pal_store *st, const char *job_id, int64_t created_before,
				   json_t **out, char *err, size_t errlen)
{
	char c[24];
	snprintf(c, sizeof c, "%" PRId64, created_before);
	const char *p[] = { job_id, c };
	return pal__store_query_json(
	    st,
	    "SELECT coalesce(json_agg(json_build_object('job_id', v.job_id, 'version', v.version,"
	    " 'spec', v.spec, 'created_at', floor(extract(epoch FROM v.created_at))::bigint)"
	    " ORDER BY v.job_id), '[]')::text"
	    " FROM jobs j JOIN job_versions v ON v.job_id = j.job_id AND v.version = "
	    "j.latest_version"
	    " WHERE j.active_version IS NULL AND v.effective_from IS NULL"
	    " AND v.created_at <= to_timestamp($2::bigint)"
	    " AND ($1::text IS NULL OR j.job_id = $1)",
	    2, p, out, err, errlen);
}

int pal_store_horizon_json(pal_store *st, const char *job_id, json_t **out, char *err,
			   size_t errlen)
{
	const char *p[] = { job_id, PAL_HORIZON_TICKET_REASON };
	return pal__store_query_json(
	    st,
	    "SELECT coalesce(json_agg(json_build_object('job', job_id, 'version',"
	    " (evidence ->> 'version')::int, 'horizon_ms', (evidence ->> 'horizon_ms')::bigint,"
	    " 'key_retention_ms', (evidence ->> 'key_retention_ms')::bigint, 'node',"
	    " evidence ->> 'node', 'ticket', id, 'since', to_char(created_at AT TIME ZONE 'UTC',"
	    " 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')) ORDER BY job_id), '[]')::text"
	    " FROM tickets WHERE state = 'open' AND reason = $2"
	    " AND ($1::text IS NULL OR job_id = $1)",
	    2, p, out, err, errlen);
}

int pal_store_stuck_json(pal_store *st, const char *job_id, int64_t from, int64_t to,
			 int64_t older_than_s, json_t **out, char *err, size_t errlen)
{
	char f[24], t[24], o[24];
	snprintf(f, sizeof f, "%" PRId64, from);
	snprintf(t, sizeof t, "%" PRId64, to);
	snprintf(o, sizeof o, "%" PRId64, older_than_s);
	const char *p[] = { job_id, f, t, o };
	return pal__store_query_json(
	    st,
	    "SELECT coalesce(json_agg(json_build_object('trigger', id, 'job', job_id, 'at',"
	    " to_char(scheduled_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), 'state',"
	    " state, 'since', to_char(updated_at AT TIME ZONE 'UTC',"
	    " 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')) ORDER BY id), '[]')::text FROM triggers"
	    " WHERE state IN ('pending', 'retry_wait', 'running', 'unknown', 'pausing', "
	    "'cancelling')"
	    " AND scheduled_at BETWEEN to_timestamp($2::bigint) AND to_timestamp($3::bigint)"
	    " AND updated_at < now() - make_interval(secs => $4::bigint)"
	    " AND coalesce(next_attempt_at, due_at) < now() - make_interval(secs => $4::bigint)"
	    " AND ($1::text IS NULL OR job_id = $1)",
	    4, p, out, err, errlen);
}

int pal_store_sink_duplicates_json(pal_store *sink, int64_t from, int64_t to, json_t **out,
				   char *err, size_t errlen)
{
	char f[24], t[24];
	snprintf(f, sizeof f, "%" PRId64, from);
	snprintf(t, sizeof t, "%" PRId64, to);
	const char *p[] = { f, t };
	/* One ledger row per applied chunk of a key: a second row for the same
	 * key and chunk is the effect done twice.  An instant's effect may be
	 * applied well after it (retries), so TO does not bound the rows. */
	return pal__store_query_json(
	    sink,
	    "SELECT coalesce(json_agg(json_build_object('key', idempotency_key, 'chunk', chunk,"
	    " 'rows', n) ORDER BY idempotency_key), '[]')::text FROM ("
	    " SELECT idempotency_key, chunk, count(*) AS n FROM sink_ledger"
	    " GROUP BY 1, 2 HAVING count(*) > 1"
	    " AND max(applied_at) >= to_timestamp($1::bigint) AND $2::bigint IS NOT NULL) d",
	    2, p, out, err, errlen);
}
