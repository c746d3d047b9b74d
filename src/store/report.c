/*
 * report.c - what a correct result costs (`palisade report cost`,
 * docs/operations.md "What a correct result costs"): over the triggers
 * scheduled in a range, per job and in total, the attempts, retries,
 * unknown outcomes, tickets, calls and stored row bytes it took, and each
 * of them per succeeded trigger.  One statement; the range prunes the
 * partitions of triggers and attempts, so a report reads the ranges it
 * names and nothing else.  And what a shadow diff compares: the jobs'
 * plan versions and misfire ranges.
 */
#include <stdio.h>
#include "palisade/report.h"
#include "ops_int.h"

/* Per trigger first (its attempts, its tickets), then per job with the
 * total as the empty grouping set.  "calls" are the attempts that sent
 * their request and learnt something of it (a status or an error class);
 * "status_queries" the status queries attempts made; "stored_bytes" the
 * rows' own bytes (pg_column_size: heap tuples without indexes or dead
 * versions, which the bench's bytes per fire include) of the triggers,
 * their attempts and what the attempts kept of the answers
 * (attempt_responses). */
/* Both statements here read $1 and $2 as the scope (IN_SCOPE) and $3, $4
 * as the range [from, to) in epoch seconds (range_params). */
#define FROM_TS "to_timestamp($3::bigint)"
#define TO_TS "to_timestamp($4::bigint)"

// clang-format off
static const char COST_SQL[] =
    "WITH t AS (SELECT t.id, t.job_id, t.state, pg_column_size(t.*) AS b FROM triggers t"
    "  WHERE t.scheduled_at >= " FROM_TS " AND t.scheduled_at < " TO_TS
    /* a shadow instant never called is no work (a handed-back one that
     * was attempted is) */
    "    AND NOT (t.state = 'shadow' AND t.attempt_count = 0)"
    "    AND " IN_SCOPE("t") "),"
    " a AS (SELECT a.trigger_id, count(*) AS n,"
    "    count(*) FILTER (WHERE a.outcome = 'unknown') AS unk,"
    "    count(*) FILTER (WHERE a.http_status IS NOT NULL OR a.error_class IS NOT NULL)"
    "      AS calls,"
    "    coalesce(sum(cardinality(a.status_queries)), 0) AS sq FROM attempt_ledger a"
    "  WHERE a.scheduled_at >= " FROM_TS " AND a.scheduled_at < " TO_TS
    "    AND a.trigger_id IN (SELECT id FROM t)"
    "  GROUP BY a.trigger_id),"
    /* bytes: the attempts rows' own, as stored (a row of the ledger is not
     * one); an attempt its trigger row holds is counted in that row's
     * size (t.b) */
    " ab AS (SELECT a.trigger_id, sum(pg_column_size(a.*)) AS b FROM attempts a"
    "  WHERE a.scheduled_at >= " FROM_TS " AND a.scheduled_at < " TO_TS
    "    AND a.trigger_id IN (SELECT id FROM t)"
    "  GROUP BY a.trigger_id),"
    /* Each row measured where it is scanned (OFFSET 0 keeps the
     * subquery): measured above a semi-join, the whole row of a short
     * bytea or jsonb value came out 3 bytes smaller (PostgreSQL 15). */
    " x AS (SELECT x.trigger_id, sum(x.b) AS b FROM (SELECT r.trigger_id,"
    "    pg_column_size(r.*) AS b FROM attempt_responses r"
    "    WHERE r.scheduled_at >= " FROM_TS " AND r.scheduled_at < " TO_TS " OFFSET 0) x"
    "  WHERE x.trigger_id IN (SELECT id FROM t) GROUP BY x.trigger_id),"
    " k AS (SELECT trigger_id, count(*) AS n FROM tickets"
    "  WHERE trigger_id IN (SELECT id FROM t) GROUP BY trigger_id),"
    " r AS (SELECT t.job_id, grouping(t.job_id) = 1 AS total, count(*) AS triggers,"
    "    count(*) FILTER (WHERE t.state = 'succeeded') AS succeeded,"
    "    count(*) FILTER (WHERE t.state = 'failed') AS failed,"
    "    count(*) FILTER (WHERE t.state = 'manual') AS manual,"
    "    count(*) FILTER (WHERE t.state NOT IN ('succeeded', 'failed', 'cancelled', 'skipped'))"
    "      AS unfinished,"
    "    coalesce(sum(a.n), 0) AS attempts,"
    "    coalesce(sum(a.n - 1) FILTER (WHERE a.n > 1), 0) AS retries,"
    "    coalesce(sum(a.unk), 0) AS unknown, coalesce(sum(k.n), 0) AS tickets,"
    "    coalesce(sum(a.calls), 0) AS calls, coalesce(sum(a.sq), 0) AS status_queries,"
    "    coalesce(sum(t.b), 0) + coalesce(sum(ab.b), 0) + coalesce(sum(x.b), 0) AS stored_bytes"
    "  FROM t LEFT JOIN a ON a.trigger_id = t.id LEFT JOIN ab ON ab.trigger_id = t.id"
    "  LEFT JOIN k ON k.trigger_id = t.id"
    "  LEFT JOIN x ON x.trigger_id = t.id"
    "  GROUP BY GROUPING SETS ((t.job_id), ())),"
    " j AS (SELECT r.*, json_build_object('job_id', job_id, 'triggers', triggers,"
    "    'succeeded', succeeded, 'failed', failed, 'manual', manual,"
    "    'unfinished', unfinished, 'attempts', attempts, 'retries', retries,"
    "    'unknown', unknown, 'tickets', tickets, 'calls', calls,"
    "    'status_queries', status_queries, 'stored_bytes', stored_bytes,"
    "    'per_success', CASE WHEN succeeded > 0 THEN json_build_object("
    "      'attempts', round(attempts::numeric / succeeded, 3),"
    "      'retries', round(retries::numeric / succeeded, 3),"
    "      'unknown', round(unknown::numeric / succeeded, 3),"
    "      'tickets', round(tickets::numeric / succeeded, 3),"
    "      'calls', round(calls::numeric / succeeded, 3),"
    "      'status_queries', round(status_queries::numeric / succeeded, 3),"
    "      'stored_bytes', round(stored_bytes::numeric / succeeded, 1)) END) AS o FROM r)"
    " SELECT json_build_object('from', " TS(FROM_TS) ", 'to', " TS(TO_TS) ","
    "   'total', (SELECT o FROM j WHERE total),"
    "   'jobs', coalesce((SELECT json_agg(o ORDER BY c DESC NULLS FIRST, job_id) FROM"
    "     (SELECT o, job_id, attempts::numeric / nullif(succeeded, 0) AS c FROM j"
    "       WHERE NOT total ORDER BY c DESC NULLS FIRST, job_id LIMIT $5::int) x), '[]'),"
    "   'jobs_truncated', (SELECT count(*) FROM j WHERE NOT total) > $5::int)::text";

#define EPOCH(x) "floor(extract(epoch FROM " x "))::bigint"
/* The jobs of the scope alive in the range: their activated versions (or
 * the latest one of a job never activated) and misfire ranges. */
static const char SHADOW_JOBS_SQL[] =
    "SELECT coalesce(json_agg(x ORDER BY x.job_id), '[]')::text FROM ("
    " SELECT j.job_id, j.tenant, " EPOCH("j.retired_at") " AS retired_at,"
    "  coalesce((SELECT json_agg(json_build_object('spec', v.spec,"
    "      'effective_from', " EPOCH("v.effective_from") ") ORDER BY v.version)"
    "    FROM job_versions v WHERE v.job_id = j.job_id AND v.effective_from IS NOT NULL),"
    "   (SELECT json_build_array(json_build_object('spec', v.spec, 'effective_from', NULL))"
    "    FROM job_versions v WHERE v.job_id = j.job_id AND v.version = j.latest_version))"
    "   AS versions,"
    "  (SELECT coalesce(json_agg(json_build_array(" EPOCH("m.range_from") ","
    "      " EPOCH("m.range_to") ")), '[]') FROM misfires m WHERE m.job_id = j.job_id"
    "    AND m.range_to >= " FROM_TS " AND m.range_from < " TO_TS ") AS misfires"
    " FROM jobs j WHERE " IN_SCOPE("j")
    "  AND (j.retired_at IS NULL OR j.retired_at > " FROM_TS ")) x";
#undef EPOCH
// clang-format on

/* The parameters of both statements: the scope SC and [FROM, TO), into P
 * (pointing into RT); PAL_ENOENT with a hint for a job scope naming no job. */
typedef struct range_text {
	char from[24], to[24];
} range_text;
static int range_params(pal_store *st, const pal_scope *sc, int64_t from, int64_t to,
			range_text *rt, const char *p[4], char *err, size_t errlen)
{
	int rc;
	if (sc->kind == PAL_SCOPE_JOB && (rc = pal__ops_job_exists(st, sc->name, err, errlen)))
		return rc;
	pal__ops_i64s(rt->from, sizeof rt->from, from);
	pal__ops_i64s(rt->to, sizeof rt->to, to);
	p[0] = pal__ops_scope_kind(sc->kind);
	p[1] = sc->name ? sc->name : "";
	p[2] = rt->from;
	p[3] = rt->to;
	return PAL_OK;
}

int pal_store_cost_json(pal_store *st, const pal_cost_scope *s, json_t **out, char *err,
			size_t errlen)
{
	*out = NULL;
	range_text rt;
	char l[16];
	const char *p[5];
	int rc = range_params(st, &s->scope, s->from, s->to, &rt, p, err, errlen);
	if (rc)
		return rc;
	snprintf(l, sizeof l, "%d", s->limit);
	p[4] = l;
	return pal__store_query_json(st, COST_SQL, 5, p, out, err, errlen);
}

int pal_store_shadow_jobs_json(pal_store *st, const pal_scope *sc, int64_t from, int64_t to,
			       json_t **out, char *err, size_t errlen)
{
	*out = NULL;
	range_text rt;
	const char *p[4];
	int rc = range_params(st, sc, from, to, &rt, p, err, errlen);
	if (rc)
		return rc;
	return pal__store_query_json(st, SHADOW_JOBS_SQL, 4, p, out, err, errlen);
}
