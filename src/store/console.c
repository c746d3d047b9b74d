/*
 * console.c - the queries of the cluster console (consolestore.h).  Each
 * page is one statement that builds its JSON in the database, so a page
 * costs one round trip and sees one snapshot.  Reads only.
 *
 * Everything that could grow with history is bounded: rates, stale
 * rejections and breakers are read from the latest attempts (by id, an
 * index scan of the primary key), a job's last success and failure and its
 * page's triggers from its latest past instants (LOOKBACK_FROM, one
 * bounded backward scan of the plan key), backlogs from the ready-work
 * index (triggers_tenant_ready) and the live-lease index (triggers_live).
 */
#include <stdio.h>
#include <string.h>
#include "palisade/consolestore.h"
#include "store_int.h"

#define TS(col) "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"
#define AGE(col) "extract(epoch FROM clock_timestamp() - " col ")::float8"

const pal_console_limits pal_console_default_limits = {
	.jobs = 200, .tickets = 100, .attempt_sample = 20000, .job_lookback = 500, .triggers = 30
};

int pal_store_console_open(const char *conninfo, int timeout_ms, pal_store **out, char *err,
			   size_t errlen)
{
	*out = NULL;
	if (!conninfo || !*conninfo) {
		snprintf(err, errlen, "no PostgreSQL connection string");
		return PAL_EINVAL;
	}
	if (timeout_ms < 100)
		timeout_ms = 100;
	char connect_s[16], tcp_s[16];
	snprintf(connect_s, sizeof connect_s, "%d", timeout_ms < 1000 ? 1 : (timeout_ms + 999) / 1000);
	snprintf(tcp_s, sizeof tcp_s, "%d", timeout_ms + 1000);
	/* The node's conninfo overrides these, as in pal_store_open(). */
	const pal__store_net net = {.connect_timeout = connect_s,
				    .tcp_user_timeout = tcp_s,
				    .keepalives_idle = "2",
				    .keepalives_interval = "1",
				    .keepalives_count = "2",
				    .application = "palisade-console"};
	pal_store *st;
	int rc = pal__store_connect(conninfo, &net, &st, err, errlen);
	if (rc)
		return rc;
	char sql[96];
	snprintf(sql, sizeof sql, "SET statement_timeout = %d", timeout_ms);
	if (pal__store_exec(st, sql, err, errlen) ||
	    pal__store_exec(st, "SET jit = off", err, errlen) ||
	    pal__store_exec(st, "SET default_transaction_read_only = on", err, errlen)) {
		pal_store_close(st);
		return PAL_EDB;
	}
	*out = st;
	return PAL_OK;
}

/* Row X's tenant is one of $7 (or $7 is NULL: every tenant). */
#define SEES(x) "($7::text[] IS NULL OR " x " = ANY ($7::text[]))"

/* Covering pause gates of a job row J as 'scope, scope' or NULL. */
#define PAUSED_BY(j)                                                                               \
	"(SELECT string_agg(g.scope, ', ' ORDER BY g.scope) FROM gates g WHERE g.paused AND"       \
	" g.scope IN ('global', 'job:' || " j ".job_id, 'group:' || " j ".resource_group,"          \
	" 'tenant:' || " j ".tenant))"

/* The oldest instant of job J the console looks back to: the instant of
 * its N-th latest past scheduled trigger, found by one backward scan of the
 * plan key (triggers_plan_key, WHERE request_id IS NULL) that stops at that
 * row (for a job of a few hundred past triggers the planner may read them
 * all in one bitmap scan and sort them instead), or its oldest past
 * instant when it has fewer (one more descent); planned future instants
 * are left out.  The range [it, now] is read whole, so the newest past
 * instant is taken whole, whatever its partitions, and its failed partition
 * is seen; the range holds at most N - 1 scheduled triggers plus one
 * instant's partitions.  No plan node runs once per instant.  now(), not
 * clock_timestamp(): a volatile bound would not bound the index scans.
 * NULL: no past scheduled trigger. */
#define LOOKBACK_FROM(j, n)                                                                        \
	"coalesce((SELECT t.scheduled_at FROM triggers t WHERE t.job_id = " j                      \
	"   AND t.request_id IS NULL AND t.scheduled_at <= now()"                                   \
	"   ORDER BY t.scheduled_at DESC OFFSET greatest(" n " - 1, 0) LIMIT 1),"                   \
	" (SELECT min(t.scheduled_at) FROM triggers t WHERE t.job_id = " j                          \
	"   AND t.request_id IS NULL AND t.scheduled_at <= now()))"

/* Job J's triggers scheduled in [LO, now]: the scheduled ones through the
 * plan key, the manual ones (a job has few) through the request key. */
#define SINCE(j, lo)                                                                               \
	"(SELECT * FROM triggers t WHERE t.job_id = " j " AND t.request_id IS NULL"                 \
	"   AND t.scheduled_at >= " lo " AND t.scheduled_at <= now()"                               \
	" UNION ALL SELECT * FROM triggers t WHERE t.job_id = " j " AND t.request_id IS NOT NULL"   \
	"   AND t.scheduled_at >= coalesce(" lo ", '-infinity') AND t.scheduled_at <= now())"

/* $1 attempt sample, $2 tickets, $3 jobs, $4 job lookback, $5 the jobs'
 * search text (NULL: every job), $6 the job id the page starts after
 * (NULL: the first page), $7 the tenants shown (NULL: every tenant).
 * Scoped to tenants, every row and count concerns their triggers, jobs and
 * tickets only: a gate its jobs fall under (global, their tenant, a job of
 * theirs, a group one of their jobs is in), a breaker their calls met. */
// clang-format off
static const char SQL_CLUSTER[] =
	/* The latest attempts: the latest $1 attempts rows and the
	 * first attempts the latest $1 triggers hold (attempt_ledger's two
	 * halves, each read backwards along its primary key, a bounded
	 * read: the view has no index in claim order, and a filtered
	 * walk of triggers would read every trigger without one), the
	 * latest $1 of both.  A success is stored as a NULL outcome. */
	"WITH s AS (SELECT * FROM ((SELECT a.trigger_id, a.node, a.claimed_at,"
	"     a.ended_at, a.outcome, a.error_class FROM attempts a"
	"     ORDER BY a.id DESC LIMIT $1::int)"
	"   UNION ALL (SELECT t.id, t.first_node, t.first_claimed_at, t.first_ended_at,"
	"     coalesce(t.first_outcome, CASE WHEN t.first_ended_at IS NOT NULL"
	"       THEN 'succeeded' END), t.first_error"
	"     FROM (SELECT * FROM triggers x ORDER BY x.id DESC LIMIT $1::int) t"
	"     WHERE t.first_claimed_at IS NOT NULL)) s"
	"   ORDER BY s.claimed_at DESC LIMIT $1::int),"
	/* the rate window: five minutes, or less when the sample is shorter */
	" cut AS (SELECT greatest(clock_timestamp() - interval '5 minutes',"
	"   CASE WHEN (SELECT count(*) FROM s) >= $1::int THEN (SELECT min(claimed_at) FROM s)"
	" END) AS t),"
	" win AS (SELECT greatest(1, extract(epoch FROM clock_timestamp() - (SELECT t FROM"
	" cut)))::float8 AS s),"
	" d AS (SELECT tr.resource_group AS grp, tr.tenant FROM s JOIN triggers tr ON tr.id ="
	" s.trigger_id"
	"   WHERE s.ended_at >= (SELECT t FROM cut) AND " SEES("tr.tenant")
	"   AND s.outcome IN ('succeeded', 'failed', 'manual', 'cancelled')),"
	" b AS (SELECT job_id, resource_group AS grp, tenant, coalesce(next_attempt_at, due_at)"
	" AS ready_at"
	"   FROM triggers WHERE state IN ('pending', 'retry_wait', 'unknown') AND " SEES("tenant") "),"
	" ev AS (SELECT grp, tenant, CASE WHEN ready_at <= clock_timestamp() THEN 'due' ELSE"
	" 'planned' END AS k,"
	"     ready_at FROM b"
	"   UNION ALL SELECT resource_group, tenant, 'running', NULL FROM triggers"
	"     WHERE state IN ('running', 'pausing', 'cancelling') AND " SEES("tenant")
	"   UNION ALL SELECT resource_group, tenant, 'paused', NULL FROM triggers WHERE state ="
	" 'paused'"
	"     AND " SEES("tenant") "   UNION ALL SELECT grp, tenant, 'done', NULL FROM d),"
	" bl AS (SELECT GROUPING(grp) = 0 AS is_group, coalesce(grp, tenant) AS name,"
	"     count(*) FILTER (WHERE k = 'due') AS due, count(*) FILTER (WHERE k = 'planned') AS"
	" planned,"
	"     count(*) FILTER (WHERE k = 'running') AS running, count(*) FILTER (WHERE k ="
	" 'paused') AS paused,"
	"     count(*) FILTER (WHERE k = 'done') / (SELECT s FROM win) AS done_per_s,     " AGE("min(ready_at) FILTER (WHERE k = 'due')")
	" AS oldest"
	"   FROM ev GROUP BY GROUPING SETS ((grp), (tenant))),"
	" blj AS (SELECT is_group, json_agg(json_build_object('name', name, 'due', due,"
	" 'planned', planned,"
	"     'running', running, 'paused', paused, 'done_per_s', round(done_per_s::numeric, 3),"
	"     'oldest_pending_s', round(oldest::numeric, 1),"
	"     'recovery_s', CASE WHEN due = 0 THEN 0 WHEN done_per_s = 0 THEN NULL"
	"       ELSE round((due / done_per_s)::numeric, 1) END,"
	"     'gate_paused', EXISTS (SELECT 1 FROM gates g WHERE g.paused AND"
	"       g.scope = CASE WHEN is_group THEN 'group:' ELSE 'tenant:' END || name))"
	"     ORDER BY name) AS rows FROM bl GROUP BY is_group),"
	" ls AS (SELECT lease_owner AS node, count(*) FILTER (WHERE lease_until >"
	" clock_timestamp()) AS held,"
	"     count(*) FILTER (WHERE lease_until <= clock_timestamp()) AS expired"
	"   FROM triggers WHERE state IN ('running', 'pausing', 'cancelling') AND lease_owner IS"
	" NOT NULL"
	"   AND " SEES("tenant") "   GROUP BY lease_owner),"
	" an AS (SELECT node, count(*) AS attempts, count(*) FILTER (WHERE outcome ="
	" 'succeeded') AS ok,"
	"     count(*) FILTER (WHERE outcome IN ('failed', 'retry_wait', 'manual')) AS failed,"
	"     count(*) FILTER (WHERE outcome = 'fenced') AS fenced,"
	"     count(*) FILTER (WHERE outcome = 'deferred') AS deferred, max(claimed_at) AS"
	" last_claim"
	"   FROM s WHERE $7::text[] IS NULL OR EXISTS (SELECT 1 FROM triggers tr"
	"     WHERE tr.id = s.trigger_id AND tr.tenant = ANY ($7::text[])) GROUP BY node),"
	/* the jobs that match the search: a substring of the id, tenant or
	 * group, in any case (strpos, so % and _ are no wildcards) */
	" jt AS NOT MATERIALIZED (SELECT j.* FROM jobs j WHERE " SEES("j.tenant") "),"
	" jm AS (SELECT j.* FROM jt j WHERE $5::text IS NULL"
	"   OR strpos(lower(j.job_id), lower($5)) > 0 OR strpos(lower(j.tenant), lower($5)) > 0"
	"   OR strpos(lower(j.resource_group), lower($5)) > 0),"
	/* one page of them by id (keyset: after $6), one row more to tell
	 * whether a next page exists */
	" jp AS (SELECT * FROM jm WHERE $6::text IS NULL OR jm.job_id > $6"
	"   ORDER BY jm.job_id LIMIT $3::int + 1),"
	/* next instants: the latest version's, counted as `jobs --next` does */
	" jl AS (SELECT j.*, " PAL__SCHEDULE_TEXT("v.spec", "v.cron") " AS cron, v.timezone, lv.spec, " PAL__ANCHOR_SQL("j", "lv", "sh")
	"   AS anchor, " LOOKBACK_FROM("j.job_id", "$4::int") " AS lo FROM jp j"
	"   LEFT JOIN job_versions v ON v.job_id = j.job_id"
	"     AND v.version = coalesce(j.active_version, j.latest_version)"
	"   LEFT JOIN job_versions lv ON lv.job_id = j.job_id AND lv.version = j.latest_version"
	"   LEFT JOIN shards sh ON sh.shard_id = j.shard"
	"   ORDER BY j.job_id LIMIT $3::int),"
	/* a job's last success and last failure: one read of its triggers
	 * in [lo, now] (the order of each: newest instant, lowest partition) */
	" jf AS (SELECT jl.job_id, f.* FROM jl, LATERAL (SELECT"
	"     (array_agg(coalesce(t.finished_at, t.updated_at) ORDER BY t.scheduled_at DESC,"
	"       t.partition) FILTER (WHERE t.state = 'succeeded'))[1] AS ok_at,"
	"     max(t.scheduled_at) FILTER (WHERE t.state = 'succeeded') AS ok_instant,"
	"     (array_agg(json_build_object('trigger_id', t.id,"
	"        'scheduled_at', " TS("t.scheduled_at") ", 'at', " TS("coalesce(t.finished_at, t.updated_at)") ","
	"        'state', t.state, 'error_class', t.last_error_class)"
	"       ORDER BY t.scheduled_at DESC, t.partition)"
	"       FILTER (WHERE t.state IN ('failed', 'manual', 'retry_wait', 'unknown')))[1] AS failure"
	"   FROM " SINCE("jl.job_id", "jl.lo") " t) f),"
	" bj AS (SELECT job_id, count(*) AS due, min(ready_at) AS oldest FROM b"
	"   WHERE ready_at <= clock_timestamp() AND job_id IN (SELECT job_id FROM jl) GROUP BY"
	" job_id) SELECT json_build_object("
	"  'schema_version', (SELECT coalesce(max(version), 0) FROM schema_migrations),"
	"  'shard_count', (SELECT value::int FROM cluster_settings WHERE name = 'shards'),"
	"  'rate_window_s', (SELECT round(s::numeric, 1) FROM win),"
	/* held: the scheduled instants a gate keeps waiting, which its
	 * resume puts through their misfire policy once past the threshold */
	"  'gates', (SELECT coalesce(json_agg(json_build_object('scope', g.scope, 'reason',"
	" g.reason,"
	"     'actor', g.actor, 'since', " TS("g.since") ", 'held', h.n,"
	/* a job's gate: its job's tenant, whose operators may resume it */
	"     'tenant', CASE WHEN g.scope LIKE 'job:%' THEN (SELECT jb.tenant FROM jobs jb"
	"       WHERE jb.job_id = substr(g.scope, 5)) END,"
	"     'oldest_held', " TS("h.oldest") ") ORDER BY g.scope), '[]') FROM gates g"
	"     LEFT JOIN LATERAL (SELECT count(*) AS n, min(t.scheduled_at) AS oldest FROM"
	" triggers t"
	"       WHERE t.state = 'pending' AND t.source IN ('schedule', 'catchup') AND CASE"
	"       WHEN g.scope = 'global' THEN true"
	"       WHEN g.scope LIKE 'job:%' THEN t.job_id = substr(g.scope, 5)"
	"       WHEN g.scope LIKE 'group:%' THEN t.resource_group = substr(g.scope, 7)"
	"       ELSE t.tenant = substr(g.scope, 8) END AND " SEES("t.tenant") ") h ON true"
	"     WHERE g.paused AND ($7::text[] IS NULL OR g.scope = 'global'"
	"       OR (g.scope LIKE 'tenant:%' AND substr(g.scope, 8) = ANY ($7::text[]))"
	"       OR (g.scope LIKE 'job:%' AND EXISTS (SELECT 1 FROM jt WHERE jt.job_id ="
	" substr(g.scope, 5)))"
	"       OR (g.scope LIKE 'group:%'"
	"         AND EXISTS (SELECT 1 FROM jt WHERE jt.resource_group = substr(g.scope, 7))))),"
	"  'backlog', json_build_object("
	"     'groups', coalesce((SELECT rows FROM blj WHERE is_group), '[]'),"
	"     'tenants', coalesce((SELECT rows FROM blj WHERE NOT is_group), '[]')),"
	"  'nodes', (SELECT coalesce(json_agg(json_build_object('node', coalesce(ls.node,"
	" an.node),"
	"     'held_leases', coalesce(ls.held, 0), 'expired_leases', coalesce(ls.expired, 0),"
	"     'attempts', coalesce(an.attempts, 0), 'succeeded', coalesce(an.ok, 0),"
	"     'failed', coalesce(an.failed, 0), 'fenced', coalesce(an.fenced, 0),"
	"     'deferred', coalesce(an.deferred, 0), 'last_claim', " TS("an.last_claim") ")"
	"     ORDER BY coalesce(ls.node, an.node)), '[]') FROM ls FULL JOIN an ON an.node ="
	" ls.node),"
	"  'misfires', (SELECT coalesce(json_agg(json_build_object('reason', reason,"
	" 'decisions', n,"
	"     'instants', c, 'last', " TS("l") ") ORDER BY reason), '[]') FROM"
	"     (SELECT reason, count(*) AS n, sum(count) AS c, max(decided_at) AS l FROM misfires"
	"      WHERE $7::text[] IS NULL OR job_id IN (SELECT job_id FROM jt) GROUP BY reason) m),"
	"  'tickets', json_build_object("
	"     'open', CASE WHEN $7::text[] IS NULL THEN (SELECT count(*) FROM tickets WHERE"
	" state = 'open')"
	"       ELSE (SELECT count(*) FROM tickets t LEFT JOIN triggers tr ON tr.id ="
	" t.trigger_id"
	"         WHERE t.state = 'open' AND coalesce(t.job_id, tr.job_id) IN (SELECT job_id"
	" FROM jt)) END,"
	"     'rows', (SELECT coalesce(json_agg(x ORDER BY (x->>'id')::bigint DESC), '[]') FROM"
	"      (SELECT json_build_object('id', t.id, 'job_id', coalesce(t.job_id, tr.job_id),"
	"        'trigger_id', t.trigger_id, 'trigger_state', tr.state, 'reason', t.reason,"
	"        'tenant', coalesce(tr.tenant, (SELECT jb.tenant FROM jobs jb"
	"          WHERE jb.job_id = t.job_id)),"
	"        'error_class', t.evidence->>'error_class', 'allowed_actions', t.allowed_actions,"
	"        'created_at', " TS("t.created_at") ", 'age_s', round(" AGE("t.created_at") "::numeric, 1)) AS x"
	"       FROM tickets t LEFT JOIN triggers tr ON tr.id = t.trigger_id WHERE t.state ="
	" 'open'"
	"       AND ($7::text[] IS NULL OR coalesce(t.job_id, tr.job_id) IN (SELECT job_id FROM"
	" jt))"
	"       ORDER BY t.id DESC LIMIT $2::int) tk)),"
	"  'breakers', (SELECT coalesce(json_agg(json_build_object('host', host, 'node', node,"
	" 'held', n,"
	"     'last', " TS("l") ") ORDER BY host, node), '[]') FROM"
	"     (SELECT v.target_host AS host, s.node, count(*) AS n, max(s.ended_at) AS l FROM s"
	"      JOIN triggers tr ON tr.id = s.trigger_id"
	"      JOIN job_versions v ON v.job_id = tr.job_id AND v.version = tr.version"
	"      WHERE s.error_class = 'breaker_open' AND s.ended_at > clock_timestamp() -"
	" interval '2 minutes'"
	"      AND " SEES("tr.tenant") "      GROUP BY 1, 2) br),"
	"  'jobs', json_build_object('total', (SELECT count(*) FROM jt),"
	"   'matching', (SELECT count(*) FROM jm), 'q', $5::text, 'after', $6::text,"
	"   'next_after', CASE WHEN (SELECT count(*) FROM jp) > $3::int"
	"     THEN (SELECT max(job_id) FROM jl) END,"
	"   'rows', (SELECT coalesce(json_agg(json_build_object('job_id', jl.job_id, 'tenant',"
	" jl.tenant,"
	"     'group', jl.resource_group, 'shard', jl.shard, 'latest_version', jl.latest_version,"
	"     'active_version', jl.active_version, 'cron', jl.cron, 'timezone', jl.timezone,"
	"     'spec', jl.spec, 'anchor', jl.anchor,"
	"     'paused_by', " PAUSED_BY("jl") ","
	"     'due', coalesce(bj.due, 0), 'oldest_due_s', round(" AGE("bj.oldest") "::numeric, 1),"
	"     'last_success', " TS("jf.ok_at") ", 'last_success_instant', " TS("jf.ok_instant") ","
	"     'last_failure', jf.failure,"
	"     'planned_next', (SELECT " TS("min(t.scheduled_at)") " FROM triggers t"
	"       WHERE t.job_id = jl.job_id AND t.state = 'pending' AND t.scheduled_at >"
	" clock_timestamp()))"
	"     ORDER BY jl.job_id), '[]') FROM jl JOIN jf ON jf.job_id = jl.job_id"
	"     LEFT JOIN bj ON bj.job_id = jl.job_id)) )::text";
// clang-format on

int pal_store_console_cluster(pal_store *st, const pal_console_limits *lim,
			      const char *const *tenants, size_t n_tenants, const char *jobs_q,
			      const char *jobs_after, json_t **out, char *err, size_t errlen)
{
	*out = NULL;
	if (!lim)
		lim = &pal_console_default_limits;
	char a[16], b[16], c[16], d[16];
	snprintf(a, sizeof a, "%d", lim->attempt_sample);
	snprintf(b, sizeof b, "%d", lim->tickets);
	snprintf(c, sizeof c, "%d", lim->jobs);
	snprintf(d, sizeof d, "%d", lim->job_lookback);
	char *scope = pal__pgarr_scope(tenants, n_tenants);
	const char *p[] = {a,
			   b,
			   c,
			   d,
			   jobs_q && *jobs_q ? jobs_q : NULL,
			   jobs_after && *jobs_after ? jobs_after : NULL,
			   scope};
	json_t *status = NULL, *view;
	/* the status's figures are the whole cluster's: not for a scope */
	int rc = scope ? PAL_OK : pal_store_status_live_json(st, &status, err, errlen);
	if (!rc)
		rc = pal__store_query_json(st, SQL_CLUSTER, 7, p, &view, err, errlen);
	g_free(scope);
	if (rc) {
		json_decref(status);
		return rc;
	}
	if (status) {
		/* status.misfires is the total of misfired instants: keep it
		 * apart from the per-reason table */
		json_object_set(view, "misfired_instants", json_object_get(status, "misfires"));
		json_object_del(status, "misfires");
		json_object_update_missing(view, status);
		json_decref(status);
	}
	*out = view;
	return PAL_OK;
}

/* $1 job id, $2 triggers. */
static const char SQL_JOB[] =
	"SELECT coalesce((SELECT json_build_object('now', " TS("clock_timestamp()") ","
	" 'job', json_build_object('job_id', j.job_id, 'tenant', j.tenant, 'group', j.resource_group,"
	"   'shard', j.shard, 'latest_version', j.latest_version, 'active_version', j.active_version,"
	"   'created_at', " TS("j.created_at") ", 'updated_at', " TS("j.updated_at") ","
	"   'paused_by', " PAUSED_BY("j") ","
	"   'labels', " PAL__LABELS_JSON("SELECT v.spec FROM job_versions v"
				 " WHERE v.job_id = j.job_id AND v.version = j.latest_version") "),"
	/* next instants: the latest version's, counted as `jobs --next` does */
	" 'spec', (SELECT v.spec FROM job_versions v WHERE v.job_id = j.job_id"
	"   AND v.version = j.latest_version),"
	" 'anchor', (SELECT " PAL__ANCHOR_SQL("j", "v", "s") " FROM job_versions v"
	"   LEFT JOIN shards s ON s.shard_id = j.shard"
	"   WHERE v.job_id = j.job_id AND v.version = j.latest_version),"
	" 'versions', (SELECT coalesce(json_agg(json_build_object('version', v.version,"
	"   'digest', v.digest, 'cron', " PAL__SCHEDULE_TEXT("v.spec", "v.cron") ","
	"   'timezone', v.timezone,"
	"   'misfire_policy', v.misfire_policy, 'overlap_policy', v.overlap_policy,"
	"   'partitions', v.partitions, 'target_host', v.target_host, 'created_by', v.created_by,"
	"   'created_at', " TS("v.created_at") ", 'activated_at', " TS("v.activated_at") ","
	"   'effective_from', " TS("v.effective_from") ") ORDER BY v.version DESC), '[]')"
	"   FROM job_versions v WHERE v.job_id = j.job_id),"
	" 'triggers', (SELECT coalesce(json_agg(json_build_object('id', t.id, 'version', t.version,"
	"   'scheduled_at', " TS("t.scheduled_at") ", 'partition', t.partition, 'source', t.source,"
	"   'state', t.state, 'due_at', " TS("t.due_at") ", 'fence', t.fence,"
	"   'lease_owner', t.lease_owner, 'lease_until', " TS("t.lease_until") ","
	"   'attempt_count', t.attempt_count, 'next_attempt_at', " TS("t.next_attempt_at") ","
	"   'last_error_class', t.last_error_class, 'finished_at', " TS("t.finished_at") ","
	"   'attempts', (SELECT coalesce(json_agg(json_build_object('fence', a.fence, 'node', a.node,"
	"     'claimed_at', " TS("a.claimed_at") ", 'ended_at', " TS("a.ended_at") ","
	"     'outcome', a.outcome, 'error_class', a.error_class, 'http_status', a.http_status,"
	"     'duration_ms', a.duration_ms, 'response', " PAL__RESPONSE_JSON("a") ")"
	"     ORDER BY a.fence), '[]') FROM attempt_ledger a"
	"     WHERE a.trigger_id = t.id))"
	"   ORDER BY t.scheduled_at DESC, t.state = 'succeeded', t.partition, t.id), '[]')"
	/* the latest $2 past triggers, an instant's unsuccessful partitions
	 * first (planned future instants are the next instants' business) */
	"   FROM (SELECT * FROM " SINCE("j.job_id", LOOKBACK_FROM("j.job_id", "$2::int")) " t"
	"     ORDER BY t.scheduled_at DESC, t.state = 'succeeded', t.partition, t.id"
	"     LIMIT $2::int) t),"
	" 'misfires', (SELECT coalesce(json_agg(json_build_object('range_from', " TS("m.range_from") ","
	"   'range_to', " TS("m.range_to") ", 'count', m.count, 'policy', m.policy, 'reason', m.reason,"
	"   'partition', m.partition, 'decided_at', " TS("m.decided_at") ","
	"   'upstream_job', m.upstream_job, 'upstream_trigger', m.upstream_trigger)"
	"   ORDER BY m.range_from DESC), '[]')"
	"   FROM (SELECT * FROM misfires WHERE job_id = j.job_id ORDER BY range_from DESC LIMIT 20) m),"
	" 'tickets', (SELECT coalesce(json_agg(json_build_object('id', k.id, 'trigger_id', k.trigger_id,"
	"   'state', k.state, 'reason', k.reason, 'error_class', k.evidence->>'error_class',"
	"   'allowed_actions', k.allowed_actions, 'resolution', k.resolution,"
	"   'created_at', " TS("k.created_at") ") ORDER BY k.state = 'open' DESC, k.id DESC), '[]')"
	"   FROM (SELECT * FROM tickets WHERE job_id = j.job_id"
	"     ORDER BY state = 'open' DESC, id DESC LIMIT 20) k))"
	" FROM jobs j WHERE j.job_id = $1), 'null')::text";

int pal_store_console_job(pal_store *st, const char *job_id, const pal_console_limits *lim,
			  json_t **out, char *err, size_t errlen)
{
	*out = NULL;
	if (!lim)
		lim = &pal_console_default_limits;
	char n[16];
	snprintf(n, sizeof n, "%d", lim->triggers);
	const char *p[] = { job_id, n };
	int rc = pal__store_query_json(st, SQL_JOB, 2, p, out, err, errlen);
	if (rc)
		return rc;
	size_t i;
	json_t *t;
	json_array_foreach(json_object_get(*out, "triggers"), i, t)
		pal__store_show_bodies(json_object_get(t, "attempts"));
	if (json_is_null(*out)) {
		json_decref(*out);
		*out = NULL;
		snprintf(err, errlen, "no job with this id");
		return PAL_ENOENT;
	}
	return PAL_OK;
}
