/*
 * consolestore.h - the queries behind the cluster console (src/store/console.c,
 * docs/observability.md "Console"): what the browser page and its JSON
 * endpoints show, read from PostgreSQL in one statement per page.
 *
 * Every call blocks for one round trip (bounded by the statement timeout
 * the connection was opened with).  The JSON objects returned are the
 * contract of /api/cluster and /api/job: the field lists below are what the
 * console renders and what scripts may rely on.  Times are RFC 3339 UTC
 * strings, ages and durations seconds (numbers), judged by the database
 * clock.
 */
#ifndef PALISADE_CONSOLESTORE_H
#define PALISADE_CONSOLESTORE_H

#include <jansson.h>
#include "palisade/err.h"
#include "palisade/store.h"

/* How much one cluster page reads. */
typedef struct pal_console_limits {
	int jobs;	     /* job rows (ordered by job id) */
	int tickets;	     /* open ticket rows (newest first) */
	int attempt_sample;  /* latest attempts read for rates, stale rejections, breakers */
	int job_lookback;    /* triggers of a job's latest past instants searched for its last success/failure */
	int triggers;	     /* job page: latest triggers (by scheduled instant) */
} pal_console_limits;

/* Defaults: 200 jobs, 100 tickets, 20 000 attempts, 500 triggers, 30 triggers. */
extern const pal_console_limits pal_console_default_limits;

/*
 * A connection for the console alone: connect timeout of about
 * TIMEOUT_MS (at least 1 s), statement_timeout TIMEOUT_MS, and a TCP user
 * timeout, so a page never waits long on an unreachable database.
 * CONNINFO is the node's (its own keys win, except the statement timeout,
 * set after connecting).  Free with pal_store_close().
 */
PAL_MUST_CHECK int pal_store_console_open(const char *conninfo, int timeout_ms, pal_store **out,
					  char *err, size_t errlen);

/*
 * The cluster view (*out, json_decref), one object:
 *   now, schema_version, shard_count
 *   rate_window_s                 seconds the completion rates are measured over
 *   gates: [{scope reason actor since}]             paused scopes
 *   backlog: {groups: [...], tenants: [...]}, each
 *     {name due planned running paused done_per_s oldest_pending_s recovery_s
 *      gate_paused}: due = ready now (pending, retry_wait, unknown), planned =
 *      ready later, done_per_s = triggers that left the backlog per second over
 *      the window, recovery_s = due / done_per_s (0 without backlog, null when
 *      nothing completed in the window)
 *   nodes: [{node held_leases expired_leases attempts succeeded failed fenced
 *      deferred last_claim}]: leases from triggers, the rest over the attempt
 *      sample; fenced = results refused for a stale token (G3)
 *   misfires: [{reason decisions instants last}]
 *   tickets: {open, rows: [{id job_id trigger_id trigger_state reason
 *      error_class allowed_actions created_at age_s}]}
 *   breakers: [{host node held last}]: hosts whose calls an open breaker held
 *      back within the last two minutes (error class breaker_open)
 *   jobs: {total matching q after next_after, rows: [{job_id tenant group shard latest_version
 *      active_version cron timezone spec paused_by due oldest_due_s
 *      last_success last_failure{trigger_id scheduled_at at state error_class}
 *      planned_next}]}: spec is the planned version's canonical spec (the
 *      console computes the next instants from it and then drops it); rows
 *      are one page of LIM->jobs jobs by id, those whose id, tenant or group
 *      contains JOBS_Q (any case; NULL or "": every job; matching counts
 *      them), after job id JOBS_AFTER (NULL or "": the first page);
 *      next_after is the id to ask the next page after, null on the last
 * plus what pal_store_status_json() returns (shards, triggers, open_tickets,
 * misfires as the total count: renamed misfired_instants).
 *
 * TENANTS[0..N_TENANTS) (none: every tenant) scope the view to those
 * tenants, as a token limited to them sees the API: the jobs, backlogs,
 * leases, attempts, misfires, tickets, breakers and gates of their jobs
 * only, and none of the status's whole-cluster figures.
 */
PAL_MUST_CHECK int pal_store_console_cluster(pal_store *st, const pal_console_limits *lim,
					     const char *const *tenants, size_t n_tenants,
					     const char *jobs_q, const char *jobs_after,
					     json_t **out, char *err, size_t errlen);

/*
 * One job (*out, json_decref): {now, job{job_id tenant group shard
 * latest_version active_version created_at updated_at paused_by},
 * spec (of the planned version), versions: [{version digest cron timezone
 * misfire_policy overlap_policy partitions target_host created_by created_at
 * activated_at effective_from}] newest first, triggers: [{id version
 * scheduled_at partition source state due_at fence lease_owner lease_until
 * attempt_count next_attempt_at last_error_class finished_at attempts: [{fence
 * node claimed_at ended_at outcome error_class http_status duration_ms}]}]
 * (the LIM->triggers latest by instant), misfires: [{range_from range_to
 * count policy reason partition decided_at}] (latest 20), tickets: [...]
 * (open first, then the latest resolved, 20 in all)}.
 * PAL_ENOENT when there is no such job.
 */
PAL_MUST_CHECK int pal_store_console_job(pal_store *st, const char *job_id,
					 const pal_console_limits *lim, json_t **out, char *err,
					 size_t errlen);

#endif
