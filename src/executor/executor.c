/*
 * executor.c - the executor thread's loop (see include/palisade/executor.h
 * for the contract; executor_int.h lists the files of the module).
 *
 * Model: one thread drives everything without blocking on the network: the
 * libcurl multi handle (many calls in flight), the claim connection and the
 * commit connection (one asynchronous statement each, their sockets polled
 * beside curl's).  A third connection, used blocking, serves the rare
 * short statements (a job version's call form on a cache miss, a checkpoint,
 * the clock offset) and LISTENs for the controllers' NOTIFY.  The lease
 * thread (lease.c) renews leases on a connection of its own and tells this
 * thread, through the shared lease table, which leases were lost and when
 * each one's monotonic deadline falls.  No transaction spans a call.
 */
#include <curl/curl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include "palisade/callpolicy.h"
#include "palisade/executor.h"
#include "palisade/execstore.h"
#include "palisade/log.h"
#include "palisade/template.h"
#include "palisade/timefmt.h"
#include "palisade/tz.h"
#include "palisade/trace.h"
#include "executor_int.h"
#include "palisade/health.h"

/* Now by the database's clock: this host's monotonic clock plus its
 * measured offset from the database's.  max_age, deadlines and a claimed
 * trigger's instant are compared with times the database wrote
 * (scheduled_at, due_at), so they are judged by its clock: a host clock that
 * is off cannot fail a trigger early (tests/integration/test_clock_skew.sh).
 * Not the wall clock plus an offset: when the wall clock stepped, that sum
 * was off by the step until the next measurement (up to a second), and
 * retries decided meanwhile were parked 10 minutes ahead
 * (tests/integration/test_executor_clock_skew.sh).  Retry instants are not
 * computed here at all: the commit writes clock_timestamp() + the delay. */
int64_t pal__db_ms(const pal_executor *ex)
{
	return pal_mono_ms() + ex->db_offset_ms;
}

/* A pass of the loop later than this is a stuck executor (health.h). */
#define EXECUTOR_STALL_MS 45000

void pal__minc(pal_executor *ex, const char *name, const char *labels, double v)
{
	if (ex->m)
		pal_metric_inc(ex->m, name, labels, v);
}

static void declare_metrics(pal_metrics *m)
{
	if (!m)
		return;
	pal_metric_declare(m, "palisade_executor_claimed_total", PAL_METRIC_COUNTER,
			   "triggers claimed (each with a new fencing token)");
	pal_metric_declare(m, "palisade_executor_calls_total", PAL_METRIC_COUNTER,
			   "side-effect calls finished, by outcome");
	pal_metric_declare(m, "palisade_executor_unknown_tickets_total", PAL_METRIC_COUNTER,
			   "triggers sent to manual because their budget ran out with the outcome unknown");
	pal_metric_declare(m, "palisade_executor_render_skips_total", PAL_METRIC_COUNTER,
			   "triggers handed back because a secret of the request is missing on this "
			   "node, or this node's policy does not give a secret or the url's host "
			   "to the trigger's tenant");
	pal_metric_declare(m, "palisade_executor_secret_refusals_total", PAL_METRIC_COUNTER,
			   "attempts ended without a call because the request names a secret the "
			   "node's policy refuses to the trigger's tenant");
	pal_metric_declare(m, "palisade_executor_spec_unavailable_total", PAL_METRIC_COUNTER,
			   "triggers handed back because their job version could not be read "
			   "(database error), not failed");
	pal_metric_declare(m, "palisade_executor_spec_read_seconds_total", PAL_METRIC_COUNTER,
			   "time the executor loop spent reading and decoding job versions it had "
			   "not cached (no HTTP progress meanwhile)");
	pal_metric_declare(m, "palisade_executor_results_total", PAL_METRIC_COUNTER,
			   "results committed, by final state");
	pal_metric_declare(m, "palisade_executor_stale_rejections_total", PAL_METRIC_COUNTER,
			   "writes or calls refused because a newer token exists (at=db|sink)");
	pal_metric_declare(m, "palisade_executor_clock_offset_seconds", PAL_METRIC_GAUGE,
			   "database clock minus this host's clock, as last measured");
	pal_metric_declare(m, "palisade_executor_leases_lost_total", PAL_METRIC_COUNTER,
			   "leases found lost at renewal");
	pal_metric_declare(m, "palisade_executor_self_stops_total", PAL_METRIC_COUNTER,
			   "calls abandoned at their CLOCK_MONOTONIC lease deadline");
	pal_metric_declare(m, "palisade_executor_status_queries_total", PAL_METRIC_COUNTER,
			   "status URL queries after unknown outcomes, by answer");
	pal_metric_declare(m, "palisade_executor_skipped_total", PAL_METRIC_COUNTER,
			   "triggers skipped by the forbid overlap policy");
	pal_metric_declare(m, "palisade_executor_inflight", PAL_METRIC_GAUGE,
			   "calls in flight on this node");
	pal_metric_declare(m, "palisade_executor_spec_cache_entries", PAL_METRIC_GAUGE,
			   "job versions kept compiled (executor.spec_cache bounds it)");
	pal_metric_declare(m, "palisade_executor_spec_cache_evictions_total", PAL_METRIC_COUNTER,
			   "compiled job versions dropped from the cache to keep it in its bound");
	pal_metric_declare(m, "palisade_executor_db_up", PAL_METRIC_GAUGE,
			   "1 when the executor's PostgreSQL connections are up (listening, "
			   "claims, results) and its last lease renewal succeeded");
	pal_metric_declare(m, "palisade_executor_renewal_age_seconds", PAL_METRIC_GAUGE,
			   "time since the last lease renewal that succeeded");
	pal_metric_declare(m, "palisade_executor_breaker_open", PAL_METRIC_GAUGE,
			   "1 while the circuit breaker of a target host is open");
	pal_metric_declare(m, "palisade_executor_idempotent_replays_total", PAL_METRIC_COUNTER,
			   "calls the service answered as a replay of an earlier apply of the same "
			   "key (Idempotent-Replayed: true): an attempt repeated, no effect doubled");
	const double *lb = pal_metric_latency_bounds;
	int nb = pal_metric_latency_nbounds;
	pal_metric_declare_histogram(m, "palisade_executor_call_duration_seconds",
				     "duration of one HTTP transfer (call, status query or chunk), "
				     "by phase",
				     lb, nb);
	pal_metric_declare_histogram(m, "palisade_executor_fire_lateness_seconds",
				     "first call of a trigger's first attempt: start minus the "
				     "scheduled instant (database clock)",
				     lb, nb);
	pal_metric_declare_histogram(m, "palisade_executor_claim_seconds",
				     "claim statement round trip (sent to answered)", lb, nb);
	pal_metric_declare_histogram(m, "palisade_executor_commit_seconds",
				     "result commit statement round trip (sent to answered)", lb, nb);
	/* Every fixed label set starts at 0, so that rate() and absent()
	 * work before the first event. */
	static const char *const zero[][2] = {
		{ "palisade_executor_calls_total", "outcome=\"success\"" },
		{ "palisade_executor_calls_total", "outcome=\"more\"" },
		{ "palisade_executor_calls_total", "outcome=\"stale\"" },
		{ "palisade_executor_calls_total", "outcome=\"permanent\"" },
		{ "palisade_executor_calls_total", "outcome=\"retryable\"" },
		{ "palisade_executor_calls_total", "outcome=\"unknown\"" },
		{ "palisade_executor_stale_rejections_total", "at=\"db\"" },
		{ "palisade_executor_stale_rejections_total", "at=\"sink\"" },
		{ "palisade_executor_status_queries_total", "answer=\"found\"" },
		{ "palisade_executor_status_queries_total", "answer=\"not_found\"" },
		{ "palisade_executor_status_queries_total", "answer=\"unknown\"" },
		{ "palisade_executor_claimed_total", NULL },
		{ "palisade_executor_leases_lost_total", NULL },
		{ "palisade_executor_self_stops_total", NULL },
		{ "palisade_executor_skipped_total", NULL },
		{ "palisade_executor_idempotent_replays_total", NULL },
		{ "palisade_executor_unknown_tickets_total", NULL },
		{ "palisade_executor_render_skips_total", NULL },
		{ "palisade_executor_secret_refusals_total", NULL },
		{ "palisade_executor_spec_unavailable_total", NULL },
		{ "palisade_executor_spec_cache_evictions_total", NULL },
		{ "palisade_executor_spec_read_seconds_total", NULL },
	};
	for (size_t i = 0; i < sizeof zero / sizeof zero[0]; i++)
		pal_metric_inc(m, zero[i][0], zero[i][1], 0);
}

static void observe_ms(pal_executor *ex, const char *name, int64_t ms)
{
	if (ex->m && ms >= 0)
		pal_metric_observe(ex->m, name, NULL, (double)ms / 1000.0);
}

/* A transfer of K just ended: its duration by phase, and for the first
 * call of a first attempt how late it started against its instant. */
static void observe_transfer(pal_executor *ex, const pal__call *k)
{
	if (!ex->m || !k->started_ms)
		return;
	int64_t now = pal_mono_ms(), took = now - k->started_ms;
	const char *phase = k->ph == PHASE_QUERY ? "phase=\"query\""
			    : k->c.checkpoint	     ? "phase=\"chunk\""
						     : "phase=\"call\"";
	pal_metric_observe(ex->m, "palisade_executor_call_duration_seconds", phase,
			   (double)took / 1000.0);
	if (k->replayed && k->ph != PHASE_QUERY)
		pal_metric_inc(ex->m, "palisade_executor_idempotent_replays_total", NULL, 1);
	if (k->ph == PHASE_CALL && k->c.attempt == 1 && !k->called && !k->c.checkpoint) {
		int64_t late = pal__db_ms(ex) - took - k->c.scheduled_at * 1000;
		pal_metric_observe(ex->m, "palisade_executor_fire_lateness_seconds", NULL,
				   late > 0 ? (double)late / 1000.0 : 0);
	}
}

static void transfer_done(pal_executor *ex, CURL *easy, CURLcode code)
{
	pal__call *k = NULL;
	curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&k);
	if (k) {
		observe_transfer(ex, k);
		pal__call_finished(ex, k, code);
	}
}

/* palisade_executor_breaker_open{host}: 1 for each host whose breaker is
 * open now, 0 for a host that was open at the last publication. */
static void publish_breakers(pal_executor *ex)
{
	if (!ex->m)
		return;
	char **open = pal_breakers_open_hosts(ex->breakers, pal_mono_ms());
	GHashTable *now = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	for (char **h = open; h && *h; h++) {
		char *lab = pal_metric_label_pair("host", *h);
		if (!lab)
			continue;
		pal_metric_set(ex->m, "palisade_executor_breaker_open", lab, 1);
		g_hash_table_add(now, lab);
	}
	if (ex->breakers_shown) {
		GHashTableIter it;
		gpointer key;
		g_hash_table_iter_init(&it, ex->breakers_shown);
		while (g_hash_table_iter_next(&it, &key, NULL))
			if (!g_hash_table_contains(now, key))
				pal_metric_set(ex->m, "palisade_executor_breaker_open", key, 0);
		g_hash_table_destroy(ex->breakers_shown);
	}
	ex->breakers_shown = now;
	g_strfreev(open);
}

/* ---- loop ----------------------------------------------------------------------------- */

void pal__drop_conn(pal_executor *ex, pal_store **which)
{
	pal_store_close(*which);
	*which = NULL;
	if (ex->m)
		pal_metric_set(ex->m, "palisade_executor_db_up", NULL, 0);
}

/* The claim connections may go through a transaction pooler; the one that
 * LISTENs (SESSION) and the result connection (enable_nestloop off for
 * the commit's plan) need a session of their own: the direct conninfo. */
static int open_conn(pal_executor *ex, pal_store **out, bool session, bool listen, char *err,
		     size_t errlen)
{
	if ((session ? pal_store_open_session(ex->cfg.direct_conninfo, out, err, errlen)
		     : pal_store_open(ex->cfg.conninfo, out, err, errlen)) != PAL_OK)
		return PAL_EDB;
	if (pal_store_set_statement_timeout(*out, 30000, err, errlen) ||
	    (listen && (pal_store_listen(*out, "palisade_triggers", err, errlen) ||
			pal_store_listen(*out, "palisade_handback", err, errlen)))) {
		pal_store_close(*out);
		*out = NULL;
		return PAL_EDB;
	}
	/* a hand-back asked while no connection listened was not heard: the
	 * leases' states now */
	if (listen)
		pal__lease_thread_renew_now(ex->lt);
	return PAL_OK;
}

/* All three connections up (reconnecting with backoff); true when they are. */
static bool ensure_db(pal_executor *ex)
{
	bool all = ex->st && ex->rst;
	for (int i = 0; i < ex->n_cst; i++)
		all = all && ex->cst[i];
	if (all)
		return true;
	if (pal_mono_ms() < ex->next_db_ms)
		return false;
	char err[1024] = "";
	int rc = PAL_OK;
	if (!ex->st)
		rc = open_conn(ex, &ex->st, true, true, err, sizeof err);
	for (int i = 0; !rc && i < ex->n_cst; i++)
		if (!ex->cst[i])
			rc = open_conn(ex, &ex->cst[i], false, false, err, sizeof err);
	if (!rc && !ex->rst) {
		rc = open_conn(ex, &ex->rst, true, false, err, sizeof err);
		if (!rc && pal_store_prepare_commits(ex->rst, err, sizeof err)) {
			pal__drop_conn(ex, &ex->rst);
			rc = PAL_EDB;
		}
	}
	if (!rc) {
		ex->db_backoff_ms = 500;
		/* palisade_executor_db_up goes to 1 with the next status, once
		 * the lease renewals succeed as well */
		pal_log(PAL_LOG_INFO, "executor.db_connected", NULL);
		return true;
	}
	if (ex->m)
		pal_metric_set(ex->m, "palisade_executor_db_up", NULL, 0);
	pal_log(PAL_LOG_WARN, "executor.db_unavailable", "{s:s, s:I}", "error", err, "retry_ms",
		(json_int_t)ex->db_backoff_ms);
	ex->next_db_ms = pal_mono_ms() + ex->db_backoff_ms;
	ex->db_backoff_ms = ex->db_backoff_ms * 2 > 10000 ? 10000 : ex->db_backoff_ms * 2;
	return false;
}

/* A controller planned triggers (palisade_triggers): claim now.  A
 * trigger claimed ahead was asked to pause (palisade_handback: a job moved
 * into a scope in shadow, `palisade shadow`, a roll-back): renew the leases
 * now, whose answer brings the states, so that the call is handed back at
 * its instant (run_waiting) rather than made because the next heartbeat
 * comes after it.  A move committed within a few milliseconds of the
 * instant may still be called. */
static void on_notify(void *ctx, const char *channel, const char *payload)
{
	pal_executor *ex = ctx;
	(void)payload;
	if (!strcmp(channel, "palisade_handback"))
		pal__lease_thread_renew_now(ex->lt);
	else
		ex->next_claim_ms = 0;
}

static void drain_notifies(pal_executor *ex)
{
	if (!ex->st)
		return;
	char err[512];
	int n;
	if (pal_store_notifications(ex->st, on_notify, ex, &n, err, sizeof err)) {
		pal_log(PAL_LOG_ERROR, "executor.db_lost", "{s:s}", "error", err);
		pal__drop_conn(ex, &ex->st);
	}
}

/* Measure the database clock's offsets at most once a second (one short
 * query on the executor's connection); keep the last values on failure
 * (the monotonic one stays right while the database is away). */
static void refresh_db_clock(pal_executor *ex, int64_t now)
{
	/* drain_notifies() may just have dropped a broken connection. */
	if (!ex->st || (ex->db_offset_at_ms && now - ex->db_offset_at_ms < 1000))
		return;
	char err[256];
	int64_t mono, off;
	if (pal_store_db_clock_offsets(ex->st, &mono, &off, err, sizeof err))
		return;
	int64_t prev = ex->db_wall_offset_ms;
	bool first = !ex->db_offset_at_ms;
	ex->db_offset_ms = mono;
	ex->db_wall_offset_ms = off;
	ex->db_offset_at_ms = now;
	if (ex->m)
		pal_metric_set(ex->m, "palisade_executor_clock_offset_seconds", NULL, (double)off / 1000);
	if ((first && llabs(off) >= 1000) || (!first && llabs(off - prev) >= 1000))
		pal_log(PAL_LOG_WARN, "executor.clock_offset", "{s:I}", "db_minus_local_ms",
			(json_int_t)off);
}

/* Lost leases and monotonic deadlines, from the lease table. */
static void enforce_leases(pal_executor *ex)
{
	if (ex->ignore_lease_loss)
		return;
	int64_t now = pal_mono_ms();
	for (pal__call *k = ex->calls, *next; k; k = next) {
		next = k->next;
		pal_lease_view v;
		if (!pal__leases_get(&ex->leases, k->c.id, &v))
			continue;
		if (v.lost) {
			atomic_fetch_add(&ex->lost, 1);
			pal__minc(ex, "palisade_executor_leases_lost_total", NULL, 1);
			pal__abandon(ex, k, "lease lost");
		} else if (now >= v.sent_ms + ex->cfg.lease_ms - pal__lease_margin(&ex->cfg)) {
			atomic_fetch_add(&ex->self_stops, 1);
			pal__minc(ex, "palisade_executor_self_stops_total", NULL, 1);
			pal__abandon(ex, k, "monotonic lease deadline passed");
		}
	}
}

/* The first of the executor's database paths that is down, NULL when all
 * are up: each connection, and the lease thread's (its last renewal). */
static const char *db_down(pal_executor *ex)
{
	if (!ex->st)
		return "listening";
	for (int i = 0; i < ex->n_cst; i++)
		if (!ex->cst[i])
			return "claims";
	if (!ex->rst)
		return "results";
	if (!atomic_load(&ex->leases.renew_ok))
		return "lease renewals";
	return NULL;
}

/* How long a renewal may be missing, or a claim in flight, before it is
 * reported stalled (a pooler whose server connections are all busy queues
 * them without an error): two heartbeats, at most half the lease. */
static int64_t stall_ms(const pal_executor *ex)
{
	int64_t t = 2 * ex->cfg.heartbeat_ms;
	return t > ex->cfg.lease_ms / 2 ? ex->cfg.lease_ms / 2 : t;
}

/* Logs a change of the database's state once: a path down or up again,
 * renewals or a claim stalled or going again. */
static void log_db_state(pal_executor *ex, const char *down)
{
	if (down != ex->db_down_shown) {
		if (down)
			pal_log(PAL_LOG_WARN, "executor.db_down", "{s:s}", "connection", down);
		else
			pal_log(PAL_LOG_INFO, "executor.db_up", NULL);
		ex->db_down_shown = down;
	}
	int64_t now = pal_mono_ms(), renew_age = now - atomic_load(&ex->leases.renewed_ms);
	int64_t claim_age = 0;
	for (int i = 0; i < ex->n_cst; i++)
		if (ex->cst[i] && pal_store_busy(ex->cst[i]) && !ex->spec_want[i].n &&
		    now - ex->claim_sent_ms[i] > claim_age)
			claim_age = now - ex->claim_sent_ms[i];
	if (ex->m)
		pal_metric_set(ex->m, "palisade_executor_renewal_age_seconds", NULL,
			       (double)renew_age / 1000);
	bool stalled = renew_age > stall_ms(ex) || claim_age > stall_ms(ex);
	if (stalled && !ex->stall_shown && !down)
		pal_log(PAL_LOG_WARN, "executor.db_stalled", "{s:I, s:I, s:I}",
			"last_renewal_ms_ago", (json_int_t)renew_age, "claim_in_flight_ms",
			(json_int_t)claim_age, "threshold_ms", (json_int_t)stall_ms(ex));
	else if (!stalled && ex->stall_shown)
		pal_log(PAL_LOG_INFO, "executor.db_stall_over", "{s:I}", "last_renewal_ms_ago",
			(json_int_t)renew_age);
	ex->stall_shown = stalled && (ex->stall_shown || !down);
}

static void publish_status(pal_executor *ex)
{
	const char *down = db_down(ex);
	log_db_state(ex, down);
	if (ex->m)
		pal_metric_set(ex->m, "palisade_executor_db_up", NULL, down ? 0 : 1);
	json_t *s = json_pack(
	    "{s:b, s:s?, s:b, s:i, s:i, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "db_up", down == NULL,
	    "db_down", down, "gate_open", pal__leases_gate_open(&ex->leases), "inflight",
	    ex->inflight, "held_leases", pal__leases_count(&ex->leases), "claimed",
	    (json_int_t)atomic_load(&ex->claimed), "succeeded",
	    (json_int_t)atomic_load(&ex->succeeded), "failed", (json_int_t)atomic_load(&ex->failed),
	    "stale_rejections_db", (json_int_t)atomic_load(&ex->stale_db), "stale_rejections_sink",
	    (json_int_t)atomic_load(&ex->stale_sink), "leases_lost",
	    (json_int_t)atomic_load(&ex->lost), "self_stops",
	    (json_int_t)atomic_load(&ex->self_stops));
	pthread_mutex_lock(&ex->mu);
	json_decref(ex->status);
	ex->status = s;
	pthread_mutex_unlock(&ex->mu);
	if (ex->m) {
		pal_metric_set(ex->m, "palisade_executor_inflight", NULL, ex->inflight);
		pal_metric_set(ex->m, "palisade_executor_spec_cache_entries", NULL,
			       (double)g_hash_table_size(ex->specs.map));
		if (ex->specs.evicted > ex->evictions_shown) {
			pal__minc(ex, "palisade_executor_spec_cache_evictions_total", NULL,
				  (double)(ex->specs.evicted - ex->evictions_shown));
			ex->evictions_shown = ex->specs.evicted;
		}
		if (ex->specs.read_us > ex->spec_read_shown) {
			pal__minc(ex, "palisade_executor_spec_read_seconds_total", NULL,
				  (double)(ex->specs.read_us - ex->spec_read_shown) / 1e6);
			ex->spec_read_shown = ex->specs.read_us;
		}
	}
	publish_breakers(ex);
}

json_t *pal_executor_status(pal_executor *ex)
{
	pthread_mutex_lock(&ex->mu);
	json_t *s = ex->status ? json_deep_copy(ex->status) : json_object();
	pthread_mutex_unlock(&ex->mu);
	return s;
}

/* The group and tenant tables: entries whose first member is their name,
 * copied with their names and freed with them. */
_Static_assert(offsetof(pal_group_conf, name) == 0, "name first");
_Static_assert(offsetof(pal_tenant_conf, name) == 0, "name first");

static void free_named(void *a, size_t n, size_t size)
{
	for (size_t i = 0; a && i < n; i++)
		free(*(char **)((char *)a + i * size));
	free(a);
}

static void *copy_named(const void *src, size_t n, size_t size)
{
	if (!n)
		return NULL;
	char *a = malloc(n * size);
	if (!a)
		return NULL;
	memcpy(a, src, n * size);
	for (size_t i = 0; i < n; i++) {
		char **name = (char **)(a + i * size);
		*name = strdup(*name);
	}
	return a;
}

#define free_groups(g, n) free_named((g), (n), sizeof(pal_group_conf))
#define copy_groups(g, n) ((pal_group_conf *)copy_named((g), (n), sizeof(pal_group_conf)))
#define free_tenants(t, n) free_named((t), (n), sizeof(pal_tenant_conf))
#define copy_tenants(t, n) ((pal_tenant_conf *)copy_named((t), (n), sizeof(pal_tenant_conf)))

void pal_executor_set_limits(pal_executor *ex, int batch, int max_inflight, int renew_failures,
			     const pal_group_conf *groups, size_t n_groups,
			     const pal_tenant_conf *tenants, size_t n_tenants)
{
	pal_group_conf *g = copy_groups(groups, n_groups);
	pal_tenant_conf *t = copy_tenants(tenants, n_tenants);
	pthread_mutex_lock(&ex->mu);
	free_groups(ex->new_groups, ex->new_n_groups);
	ex->new_groups = g;
	ex->new_n_groups = g ? n_groups : 0;
	free_tenants(ex->new_tenants, ex->new_n_tenants);
	ex->new_tenants = t;
	ex->new_n_tenants = t ? n_tenants : 0;
	ex->new_batch = batch;
	ex->new_max_inflight = max_inflight;
	ex->new_renew_failures = renew_failures;
	ex->limits_changed = true;
	pthread_mutex_unlock(&ex->mu);
}

static void apply_limits(pal_executor *ex)
{
	pthread_mutex_lock(&ex->mu);
	if (!ex->limits_changed) {
		pthread_mutex_unlock(&ex->mu);
		return;
	}
	free_groups((pal_group_conf *)ex->cfg.groups, ex->cfg.n_groups);
	ex->cfg.groups = ex->new_groups;
	ex->cfg.n_groups = ex->new_n_groups;
	ex->new_groups = NULL;
	ex->new_n_groups = 0;
	free_tenants((pal_tenant_conf *)ex->cfg.tenants, ex->cfg.n_tenants);
	ex->cfg.tenants = ex->new_tenants;
	ex->cfg.n_tenants = ex->new_n_tenants;
	ex->new_tenants = NULL;
	ex->new_n_tenants = 0;
	if (ex->new_batch > 0)
		ex->cfg.batch = ex->new_batch;
	if (ex->new_max_inflight > 0)
		ex->cfg.max_inflight = ex->new_max_inflight;
	if (ex->new_renew_failures > 0)
		atomic_store(&ex->leases.renew_failures, ex->new_renew_failures);
	ex->limits_changed = false;
	pthread_mutex_unlock(&ex->mu);
	pal_log(PAL_LOG_INFO, "executor.limits_reloaded", "{s:i, s:i, s:i}", "batch", ex->cfg.batch,
		"max_inflight", ex->cfg.max_inflight, "groups", (int)ex->cfg.n_groups);
}

/* Calls waiting in the loop: AHEAD until their instant, PARKED for a
 * probe, WAIT for their next chunk.  Returns the earliest resume time of
 * those still waiting (INT64_MAX when none). */
static int64_t run_waiting(pal_executor *ex, int64_t now, bool draining)
{
	int64_t wake = INT64_MAX;
	bool gate = pal__leases_gate_open(&ex->leases);
	for (pal__call *k = ex->calls, *next; k; k = next) {
		next = k->next;
		if (k->easy || k->resume_at_ms > now) {
			if (!k->easy && k->resume_at_ms < wake)
				wake = k->resume_at_ms;
			continue;
		}
		switch (k->ph) {
		case PHASE_AHEAD: {
			/* Its instant: call it, unless the node drains (hand it
			 * back, attempt not spent) or it was asked to pause or
			 * cancel meanwhile (the commit turns the hand-back into
			 * paused or cancelled). */
			pal_lease_view v;
			bool live = !pal__leases_get(&ex->leases, k->c.id, &v) ||
				    v.state == PAL_TS_RUNNING;
			if (draining || !live) {
				pal__queue_result(ex, k, PAL_TS_PENDING, "handed_back", 0, PAL_NEXT_NONE, NULL);
			} else if (!gate) {
				k->resume_at_ms = now + 100; /* no new side effects while closed */
			} else {
				pal__call_due(ex, k);
			}
			break;
		}
		case PHASE_PARKED:
			pal__unpark(ex, k, now, draining);
			break;
		case PHASE_WAIT:
			if (!gate || draining) {
				k->resume_at_ms = now + 100; /* no new side effects */
				break;
			}
			pal__phase_set(ex, k, PHASE_CALL);
			pal__start_or_defer(ex, k);
			break;
		default:
			break;
		}
	}
	return wake;
}

static void add_wait_fd(struct curl_waitfd *w, int *n, pal_store *st, bool only_busy)
{
	if (!st || (only_busy && !pal_store_busy(st)))
		return;
	int fd = pal_store_socket(st);
	if (fd < 0)
		return;
	w[*n] = (struct curl_waitfd){ .fd = fd, .events = CURL_WAIT_POLLIN };
	(*n)++;
}

static void *run(void *arg)
{
	pal_executor *ex = arg;
	int64_t next_status = 0, commit_sent = 0;
	for (;;) {
		/* /healthz and the watchdog: a pass waits at most 500 ms, a
		 * synchronous statement at most its 30 s timeout. */
		pal_health_beat("executor", EXECUTOR_STALL_MS);
		apply_limits(ex);
		int64_t now = pal_mono_ms();
		bool draining = atomic_load(&ex->draining);
		bool claiming = pal__claim_busy(ex);
		if (draining && (!ex->calls || now >= ex->drain_deadline_ms) && !ex->n_results &&
		    !ex->n_batch && !claiming)
			break;
		bool db = ensure_db(ex);
		if (db) {
			drain_notifies(ex);
			refresh_db_clock(ex, now);
		}
		bool claim_busy[PAL__CLAIM_CONNS_MAX] = {false};
		/* A claim in flight (not the version read that may follow it). */
		for (int i = 0; i < ex->n_cst; i++)
			claim_busy[i] = ex->cst[i] && pal_store_busy(ex->cst[i]) &&
					!ex->spec_want[i].n;
		pal__claim_recv(ex);
		for (int i = 0; i < ex->n_cst; i++)
			if (claim_busy[i] && (!ex->cst[i] || !pal_store_busy(ex->cst[i]) ||
					      ex->spec_want[i].n))
				observe_ms(ex, "palisade_executor_claim_seconds",
					   pal_mono_ms() - ex->claim_sent_ms[i]);
		/* No claim before the database's clock is known: every
		 * decision on a claimed trigger is judged by it. */
		if (!draining && pal__leases_gate_open(&ex->leases) && ex->st &&
		    ex->db_offset_at_ms && now >= ex->next_claim_ms)
			pal__claim_send(ex);
		int64_t wake = run_waiting(ex, now, draining);
		/* Lease checks come before any I/O of the pass: after a pause
		 * (SIGSTOP, a long GC-like stall) nothing more is sent for a call
		 * whose lease is lost or whose monotonic deadline has passed. */
		enforce_leases(ex);
		int running = 0;
		curl_multi_perform(ex->multi, &running);
		/* Every finished transfer is read first, then handled: removing
		 * a handle from the multi walks its queue of unread messages
		 * (libcurl 7.88), so handling each as it was read cost a burst of
		 * n completions n^2/2 steps (8 % of the node's CPU with 1,024
		 * calls in flight, perf). */
		size_t n_done = 0;
		CURLMsg *msg;
		int left;
		while ((msg = curl_multi_info_read(ex->multi, &left))) {
			if (msg->msg != CURLMSG_DONE)
				continue;
			if (n_done == ex->cap_done) {
				size_t cap = ex->cap_done ? ex->cap_done * 2 : 256;
				struct pal__done *d = realloc(ex->done, cap * sizeof *d);
				if (!d) { /* no room: this one at once */
					transfer_done(ex, msg->easy_handle, msg->data.result);
					continue;
				}
				ex->done = d;
				ex->cap_done = cap;
			}
			ex->done[n_done++] = (struct pal__done){ msg->easy_handle, msg->data.result };
		}
		for (size_t i = 0; i < n_done; i++)
			transfer_done(ex, ex->done[i].easy, ex->done[i].code);
		bool committing = ex->n_batch > 0;
		pal__commit_recv(ex);
		if (committing && !ex->n_batch)
			observe_ms(ex, "palisade_executor_commit_seconds", pal_mono_ms() - commit_sent);
		pal__commit_send(ex);
		if (!committing && ex->n_batch)
			commit_sent = pal_mono_ms();
		if (now >= next_status) {
			publish_status(ex);
			next_status = now + 500;
		}
		if (draining && ex->calls && now >= ex->drain_deadline_ms) {
			while (ex->calls)
				pal__abandon(ex, ex->calls, "drain grace period over");
		}
		/* Sleep until a transfer, an answer from the database, a
		 * notification, a waiting call's time or the next claim. */
		now = pal_mono_ms();
		int64_t until = now + (ex->calls ? 100 : 500);
		if (!draining && !pal__claim_busy(ex) && ex->next_claim_ms < until)
			until = ex->next_claim_ms;
		if (wake < until)
			until = wake;
		if (!db && ex->next_db_ms < until)
			until = ex->next_db_ms;
		int64_t wait = until - now;
		if (wait < 0)
			wait = 0;
		struct curl_waitfd wfd[2 + PAL__CLAIM_CONNS_MAX];
		int nfd = 0;
		add_wait_fd(wfd, &nfd, ex->st, false);
		for (int i = 0; i < ex->n_cst; i++)
			add_wait_fd(wfd, &nfd, ex->cst[i], true);
		add_wait_fd(wfd, &nfd, ex->rst, true);
		curl_multi_poll(ex->multi, nfd ? wfd : NULL, (unsigned)nfd, (int)wait, NULL);
	}
	publish_status(ex);
	pal_health_forget("executor");
	return NULL;
}

int pal_executor_start(const pal_executor_config *cfg, pal_metrics *m, pal_executor **out,
		       char *err, size_t errlen)
{
	*out = NULL;
	pal_executor *ex = calloc(1, sizeof *ex);
	if (!ex)
		return PAL_ENOMEM;
	ex->cfg = *cfg;
	ex->cfg.conninfo = strdup(cfg->conninfo);
	ex->cfg.direct_conninfo = strdup(
	    cfg->direct_conninfo && *cfg->direct_conninfo ? cfg->direct_conninfo : cfg->conninfo);
	ex->cfg.node_id = strdup(cfg->node_id);
	ex->cfg.proxy = strdup(cfg->proxy ? cfg->proxy : "");
	ex->trace_prefix = pal_trace_cluster(cfg->cluster ? cfg->cluster : "default");
	ex->cfg.cluster = NULL;
	/* Drill-only fault injection: keep a call going after its lease is
	 * lost or its monotonic deadline passed, so that the result reaches
	 * the database with a stale token and the fence there must refuse it
	 * (docs/executor.md).  Never set in production. */
	const char *fault = getenv("PALISADE_FAULT_IGNORE_LEASE_LOSS");
	ex->ignore_lease_loss = fault && !strcmp(fault, "1");
	if (ex->ignore_lease_loss)
		pal_log(PAL_LOG_WARN, "executor.fault_injection", "{s:s}", "fault",
			"ignore lost leases and monotonic lease deadlines");
	/* Test-only: the first N job-version reads fail as a lost connection
	 * would (tests/integration/test_executor_spec_transient.sh). */
	const char *sf = getenv("PALISADE_FAULT_SPEC_READ");
	ex->spec_read_faults = sf ? atoi(sf) : 0;
	if (ex->spec_read_faults > 0)
		pal_log(PAL_LOG_WARN, "executor.fault_injection", "{s:s, s:i}", "fault",
			"fail job-version reads", "count", ex->spec_read_faults);
	/* Test-only: the first N batch reads of a claimed batch's versions
	 * fail as a connection lost mid-answer would (test_call_spec.sh). */
	const char *bf = getenv("PALISADE_FAULT_SPEC_BATCH");
	ex->spec_batch_faults = bf ? atoi(bf) : 0;
	if (ex->spec_batch_faults > 0)
		pal_log(PAL_LOG_WARN, "executor.fault_injection", "{s:s, s:i}", "fault",
			"fail batch reads of job versions", "count", ex->spec_batch_faults);
	if (ex->cfg.lease_ms <= 0)
		ex->cfg.lease_ms = 30000;
	if (ex->cfg.heartbeat_ms <= 0)
		ex->cfg.heartbeat_ms = 10000;
	if (ex->cfg.batch <= 0)
		ex->cfg.batch = 256;
	if (ex->cfg.max_inflight <= 0)
		ex->cfg.max_inflight = 1024;
	if (ex->cfg.renew_failures <= 0)
		ex->cfg.renew_failures = 3;
	if (ex->cfg.poll_ms <= 0)
		ex->cfg.poll_ms = 200;
	if (ex->cfg.body_cap <= 0)
		ex->cfg.body_cap = 65536;
	if (ex->cfg.keep_body_max > ex->cfg.body_cap)
		ex->cfg.keep_body_max = ex->cfg.body_cap;
	ex->n_cst = ex->cfg.claim_connections < 1		       ? 1
		    : ex->cfg.claim_connections > PAL__CLAIM_CONNS_MAX ? PAL__CLAIM_CONNS_MAX
								       : ex->cfg.claim_connections;
	ex->cfg.groups = copy_groups(cfg->groups, cfg->n_groups);
	ex->cfg.n_groups = ex->cfg.groups ? cfg->n_groups : 0;
	ex->cfg.tenants = copy_tenants(cfg->tenants, cfg->n_tenants);
	ex->cfg.n_tenants = ex->cfg.tenants ? cfg->n_tenants : 0;
	if (ex->cfg.claim_ahead_ms < 0)
		ex->cfg.claim_ahead_ms = 0;
	if (ex->cfg.claim_ahead_ms > ex->cfg.lease_ms / 4)
		ex->cfg.claim_ahead_ms = ex->cfg.lease_ms / 4; /* never most of the lease */
	ex->m = m;
	ex->multi = curl_multi_init();
	/* Connections per target host (executor.host_connections, default 256;
	 * 0 here = no cap of its own).  A fixed 64 made calls due together
	 * queue behind each other: 1,000 calls due on one second reached the
	 * sink 64 at a time.  No cap at all was slower under a sustained burst
	 * (1,024 connections to one sink): docs/performance.md. */
	if (ex->cfg.host_connections > 0)
		curl_multi_setopt(ex->multi, CURLMOPT_MAX_HOST_CONNECTIONS,
				  (long)ex->cfg.host_connections);
	ex->breakers = pal_breakers_new(NULL);
	ex->rng = (uint64_t)pal_wall_ms() ^ ((uint64_t)getpid() << 32);
	ex->db_backoff_ms = 500;
	pal__spec_cache_init(&ex->specs, ex->cfg.spec_cache > 0 ? (size_t)ex->cfg.spec_cache : 0);
	pthread_mutex_init(&ex->mu, NULL);
	declare_metrics(m);
	if (pal__leases_init(&ex->leases, &ex->cfg, m) ||
	    pal__lease_thread_start(&ex->leases, &ex->cfg, &ex->lt, err, errlen)) {
		snprintf(err, errlen, "cannot start the lease thread");
		return PAL_ENOMEM;
	}
	if (pthread_create(&ex->thread, NULL, run, ex)) {
		snprintf(err, errlen, "cannot start the executor thread");
		return PAL_ENOMEM;
	}
	*out = ex;
	return PAL_OK;
}

void pal_executor_stop(pal_executor *ex, int64_t grace_ms)
{
	if (!ex)
		return;
	ex->drain_deadline_ms = pal_mono_ms() + grace_ms;
	atomic_store(&ex->leases.draining, true);
	atomic_store(&ex->draining, true);
	pthread_join(ex->thread, NULL);
	pal__lease_thread_stop(ex->lt);
	while (ex->calls)
		pal__abandon(ex, ex->calls, "executor stopped");
	pal__results_free(ex);
	while (ex->n_easy_pool)
		curl_easy_cleanup(ex->easy_pool[--ex->n_easy_pool]);
	free(ex->easy_pool);
	free(ex->done);
	curl_multi_cleanup(ex->multi);
	pal_breakers_free(ex->breakers);
	if (ex->breakers_shown)
		g_hash_table_destroy(ex->breakers_shown);
	for (int i = 0; i < ex->n_cst; i++) {
		/* a batch still waiting for its versions: its leases expire */
		pal__spec_want_free(&ex->spec_want[i]);
		pal_claimed_free(ex->spec_wait[i].c, ex->spec_wait[i].n);
	}
	pal__spec_cache_free(&ex->specs);
	pal__leases_free(&ex->leases);
	pal_store_close(ex->st);
	for (int i = 0; i < ex->n_cst; i++)
		pal_store_close(ex->cst[i]);
	pal_store_close(ex->rst);
	json_decref(ex->status);
	pthread_mutex_destroy(&ex->mu);
	free_groups((pal_group_conf *)ex->cfg.groups, ex->cfg.n_groups);
	free_groups(ex->new_groups, ex->new_n_groups);
	free_tenants((pal_tenant_conf *)ex->cfg.tenants, ex->cfg.n_tenants);
	free_tenants(ex->new_tenants, ex->new_n_tenants);
	free((void *)ex->cfg.conninfo);
	free((void *)ex->cfg.direct_conninfo);
	free((void *)ex->cfg.node_id);
	free((void *)ex->cfg.proxy);
	free(ex);
}
