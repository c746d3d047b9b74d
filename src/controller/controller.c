/*
 * controller.c - the controller thread: leadership -> PostgreSQL claim ->
 * per-shard planner -> fenced planning transactions (see controller.h).
 *
 * Threading: one thread owns the PostgreSQL connection and the planners.
 * Other threads only touch the status snapshot (under `mu`) and the atomic
 * flags stop / reload.
 */
#include <glib.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "palisade/controller.h"
#include "palisade/log.h"
#include "palisade/planner.h"
#include "palisade/store.h"
#include "palisade/timefmt.h"

typedef struct led_shard {
	pal_planner *planner; /* NULL when not led */
	int64_t epoch;
	int64_t watermark;
	int64_t last_tick_ms;
	int64_t planned; /* trigger rows inserted since acquired */
} led_shard;

struct pal_controller {
	pal_controller_config cfg;
	char *conninfo, *node_id;
	pal_coord *coord;
	pal_metrics *m;
	pthread_t thread;
	atomic_bool stop, reload;

	/* owned by the thread */
	pal_store *st;
	led_shard *led;
	pal_shard_lead *lead;
	pal_plan_batch batch;
	int db_backoff_ms;
	int64_t next_db_try_ms, next_reload_ms, next_tick_ms;

	/* status snapshot and a pending timing change, under mu */
	pthread_mutex_t mu;
	json_t *status;
	bool timing_changed;
	pal_controller_config new_timing;
};

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void declare_metrics(pal_metrics *m)
{
	if (!m)
		return;
	pal_metric_declare(m, "palisade_controller_db_up", PAL_METRIC_GAUGE,
			   "1 when the controller's PostgreSQL connection is up");
	pal_metric_declare(m, "palisade_controller_db_errors_total", PAL_METRIC_COUNTER,
			   "PostgreSQL errors seen by the controller");
	pal_metric_declare(m, "palisade_controller_shards_led", PAL_METRIC_GAUGE,
			   "shards this node plans (claimed in PostgreSQL)");
	pal_metric_declare(m, "palisade_controller_claims_total", PAL_METRIC_COUNTER,
			   "shard claims in PostgreSQL by outcome");
	pal_metric_declare(m, "palisade_controller_fenced_total", PAL_METRIC_COUNTER,
			   "planning transactions rejected because a newer epoch holds the shard");
	pal_metric_declare(m, "palisade_controller_ticks_total", PAL_METRIC_COUNTER,
			   "planning transactions committed");
	pal_metric_declare(m, "palisade_controller_triggers_planned_total", PAL_METRIC_COUNTER,
			   "trigger rows inserted (plan-key conflicts excluded)");
	pal_metric_declare(m, "palisade_controller_misfires_total", PAL_METRIC_COUNTER,
			   "instants not fired, by policy and reason");
	pal_metric_declare(m, "palisade_controller_activations_total", PAL_METRIC_COUNTER,
			   "job versions activated");
	pal_metric_declare(m, "palisade_controller_watermark_lag_seconds", PAL_METRIC_GAUGE,
			   "database now minus shard watermark (0 when the watermark is ahead)");
	pal_metric_declare(m, "palisade_controller_tick_seconds", PAL_METRIC_GAUGE,
			   "duration of the last planning transaction of a shard");
}

static void minc(pal_controller *c, const char *name, const char *labels, double v)
{
	if (c->m)
		pal_metric_inc(c->m, name, labels, v);
}

static void mset(pal_controller *c, const char *name, const char *labels, double v)
{
	if (c->m)
		pal_metric_set(c->m, name, labels, v);
}

/* ---- status snapshot --------------------------------------------------------- */

static void publish_status(pal_controller *c)
{
	json_t *shards = json_array();
	int n = 0;
	for (int s = 0; s < c->cfg.n_shards; s++) {
		led_shard *l = &c->led[s];
		if (!l->planner)
			continue;
		n++;
		char wm[32] = "";
		if (l->watermark != PAL_NO_TIME)
			pal_fmt_rfc3339(l->watermark, wm, sizeof wm);
		json_array_append_new(shards,
				      json_pack("{s:i, s:I, s:s?, s:I, s:I, s:I}", "shard", s, "epoch",
						(json_int_t)l->epoch, "watermark", *wm ? wm : NULL,
						"jobs", (json_int_t)pal_planner_jobs(l->planner),
						"last_tick_ms", (json_int_t)l->last_tick_ms, "planned",
						(json_int_t)l->planned));
	}
	mset(c, "palisade_controller_shards_led", NULL, n);
	json_t *st = json_pack("{s:b, s:o}", "db_up", c->st != NULL, "shards", shards);
	pthread_mutex_lock(&c->mu);
	json_decref(c->status);
	c->status = st;
	pthread_mutex_unlock(&c->mu);
}

json_t *pal_controller_status(pal_controller *c)
{
	pthread_mutex_lock(&c->mu);
	json_t *s = c->status ? json_deep_copy(c->status) : json_object();
	pthread_mutex_unlock(&c->mu);
	return s;
}

/* ---- shards -------------------------------------------------------------------- */

static void drop_shard(pal_controller *c, int s, const char *why)
{
	led_shard *l = &c->led[s];
	if (!l->planner)
		return;
	pal_log(PAL_LOG_INFO, "controller.shard_dropped", "{s:i, s:I, s:s}", "shard", s, "epoch",
		(json_int_t)l->epoch, "reason", why);
	pal_planner_free(l->planner);
	memset(l, 0, sizeof *l);
}

static void db_failed(pal_controller *c, const char *what, const char *err)
{
	pal_log(PAL_LOG_ERROR, "controller.db_error", "{s:s, s:s}", "during", what, "error", err);
	minc(c, "palisade_controller_db_errors_total", NULL, 1);
	for (int s = 0; s < c->cfg.n_shards; s++)
		drop_shard(c, s, "database unavailable");
	pal_store_close(c->st);
	c->st = NULL;
	mset(c, "palisade_controller_db_up", NULL, 0);
	c->next_db_try_ms = mono_ms() + c->db_backoff_ms;
}

/*
 * Convert one shard_jobs JSON entry into planner versions and put it.  A job
 * whose (version, effective_from) list the planner already holds is left
 * alone before its specs are parsed: the 30 s full reload then costs a
 * comparison per unchanged job, not a spec parse, a cron compile and a TZif
 * read per version.
 */
static int put_job_json(pal_controller *c, pal_planner *p, json_t *job, int64_t watermark,
			size_t *changed)
{
	const char *id = json_string_value(json_object_get(job, "job_id"));
	json_t *vs = json_object_get(job, "versions");
	size_t n = json_array_size(vs);
	if (!id || !n)
		return PAL_OK;
	pal_plan_version *pv = calloc(n, sizeof *pv);
	if (!pv)
		return PAL_ENOMEM;
	for (size_t k = 0; k < n; k++) {
		json_t *v = json_array_get(vs, k);
		pv[k].version = (int)json_integer_value(json_object_get(v, "version"));
		json_t *ef = json_object_get(v, "effective_from");
		pv[k].effective_from = json_is_integer(ef) ? json_integer_value(ef) : PAL_NO_TIME;
	}
	if (pal_planner_job_current(p, id, pv, n)) {
		free(pv);
		return PAL_OK;
	}
	(*changed)++;
	char err[512];
	int rc = PAL_OK;
	for (size_t k = 0; k < n && !rc; k++) {
		rc = pal_job_spec_from_canonical(json_object_get(json_array_get(vs, k), "spec"),
						 &pv[k].spec, err, sizeof err);
		if (rc)
			pal_log(PAL_LOG_ERROR, "controller.bad_spec", "{s:s, s:i, s:s}", "job", id,
				"version", pv[k].version, "error", err);
	}
	if (!rc) {
		rc = pal_planner_put_job(p, id, pv, n, watermark, err, sizeof err);
		if (rc)
			pal_log(PAL_LOG_ERROR, "controller.bad_job", "{s:s, s:s}", "job", id, "error",
				err);
	}
	for (size_t i = 0; i < n; i++)
		pal_job_spec_clear(&pv[i].spec);
	free(pv);
	/* A bad job must not stop the shard: it is logged and skipped. */
	return rc == PAL_ENOMEM ? rc : PAL_OK;
}

/* Counts of one load_jobs() call: rows read, rows that were not current. */
typedef struct load_stats {
	size_t jobs, changed;
} load_stats;

/* Versions of one shard_jobs JSON entry without their specs, as the
 * planner compares them; true when the planner already holds exactly those. */
static bool job_json_current(const pal_planner *p, json_t *job)
{
	const char *id = json_string_value(json_object_get(job, "job_id"));
	json_t *vs = json_object_get(job, "versions");
	size_t n = json_array_size(vs);
	if (!id || !n)
		return true; /* nothing to put (put_job_json skips it too) */
	pal_plan_version *pv = calloc(n, sizeof *pv);
	if (!pv)
		return false; /* then put_job_json decides (and reports ENOMEM) */
	for (size_t k = 0; k < n; k++) {
		json_t *v = json_array_get(vs, k);
		pv[k].version = (int)json_integer_value(json_object_get(v, "version"));
		json_t *ef = json_object_get(v, "effective_from");
		pv[k].effective_from = json_is_integer(ef) ? json_integer_value(ef) : PAL_NO_TIME;
	}
	bool current = pal_planner_job_current(p, id, pv, n);
	free(pv);
	return current;
}

/* Above this many changed jobs a full reload fetches every spec in one
 * statement instead of one statement per changed job. */
#define RELOAD_ONE_BY_ONE_MAX 64

/* (Re)load job JOB_ID of shard S, or all of its jobs when NULL, adding to
 * *ST.  A full reload of a shard already loaded reads the version lists
 * first (no specs: 50 000 jobs' specs are ~40 MB of JSON) and then the
 * specs of the jobs whose lists changed.  A database error drops every
 * shard (db_failed). */
static int load_jobs(pal_controller *c, int s, const char *job_id, load_stats *st)
{
	led_shard *l = &c->led[s];
	char err[1024];
	json_t *jobs;
	int64_t cutoff = l->watermark == PAL_NO_TIME ? PAL_NO_TIME : l->watermark - c->cfg.overlap_s;
	bool lists_first = !job_id && pal_planner_jobs(l->planner) > 0;
	int rc = pal_store_shard_jobs(c->st, s, job_id, cutoff, !lists_first, &jobs, err,
				      sizeof err);
	if (rc) {
		db_failed(c, "load jobs", err);
		return rc;
	}
	size_t i;
	json_t *j;
	GPtrArray *stale = lists_first ? g_ptr_array_new_with_free_func(g_free) : NULL;
	json_array_foreach(jobs, i, j)
	{
		st->jobs++;
		if (lists_first) {
			if (!job_json_current(l->planner, j))
				g_ptr_array_add(stale, g_strdup(json_string_value(
							       json_object_get(j, "job_id"))));
			continue;
		}
		if ((rc = put_job_json(c, l->planner, j, l->watermark, &st->changed)))
			break;
	}
	json_decref(jobs);
	if (!lists_first || !stale->len) {
		if (stale)
			g_ptr_array_free(stale, TRUE);
		return rc;
	}
	if (stale->len > RELOAD_ONE_BY_ONE_MAX) {
		g_ptr_array_free(stale, TRUE);
		if ((rc = pal_store_shard_jobs(c->st, s, NULL, cutoff, true, &jobs, err,
					       sizeof err))) {
			db_failed(c, "load jobs", err);
			return rc;
		}
		json_array_foreach(jobs, i, j)
		{
			if ((rc = put_job_json(c, l->planner, j, l->watermark, &st->changed)))
				break;
		}
		json_decref(jobs);
		return rc;
	}
	for (guint k = 0; k < stale->len && !rc; k++) {
		if ((rc = pal_store_shard_jobs(c->st, s, g_ptr_array_index(stale, k), cutoff, true,
					       &jobs, err, sizeof err))) {
			db_failed(c, "load jobs", err);
			break;
		}
		json_array_foreach(jobs, i, j)
		{
			if ((rc = put_job_json(c, l->planner, j, l->watermark, &st->changed)))
				break;
		}
		json_decref(jobs);
	}
	g_ptr_array_free(stale, TRUE);
	return rc;
}

static void acquire_shard(pal_controller *c, int s, int64_t epoch)
{
	led_shard *l = &c->led[s];
	if (l->planner)
		drop_shard(c, s, "new epoch");
	char err[1024];
	int64_t wm;
	int rc = pal_store_shard_claim(c->st, s, epoch, c->node_id, &wm, err, sizeof err);
	if (rc == PAL_ESTALE) {
		pal_log(PAL_LOG_ERROR, "controller.claim_rejected", "{s:i, s:I, s:s}", "shard", s,
			"epoch", (json_int_t)epoch, "error", err);
		minc(c, "palisade_controller_claims_total", "outcome=\"rejected\"", 1);
		pal_coord_resign(c->coord, s);
		return;
	}
	if (rc && pal_store_lock_timeout(c->st)) {
		/* The shard row is locked by a (paused?) previous leader; its
		 * transaction dies at idle_in_transaction_session_timeout. */
		pal_log(PAL_LOG_WARN, "controller.claim_waiting", "{s:i, s:s}", "shard", s, "error", err);
		return;
	}
	if (rc) {
		db_failed(c, "claim shard", err);
		return;
	}
	pal_planner_config pc = { .overlap_s = c->cfg.overlap_s,
				  .lookahead_s = c->cfg.lookahead_s,
				  .misfire_threshold_s = c->cfg.misfire_threshold_s,
				  .max_rows_per_tick = 50000 };
	l->planner = pal_planner_new(s, &pc);
	l->epoch = epoch;
	l->watermark = wm;
	load_stats ls = { 0 };
	if (!l->planner || load_jobs(c, s, NULL, &ls)) {
		if (c->st)
			drop_shard(c, s, "job load failed");
		return;
	}
	minc(c, "palisade_controller_claims_total", "outcome=\"claimed\"", 1);
	char w[32] = "";
	if (wm != PAL_NO_TIME)
		pal_fmt_rfc3339(wm, w, sizeof w);
	pal_log(PAL_LOG_INFO, "controller.shard_acquired", "{s:i, s:I, s:s?, s:I}", "shard", s,
		"epoch", (json_int_t)epoch, "watermark", *w ? w : NULL, "jobs",
		(json_int_t)pal_planner_jobs(l->planner));
}

static void fenced(pal_controller *c, int s, const char *err)
{
	pal_log(PAL_LOG_WARN, "controller.fenced", "{s:i, s:I, s:s}", "shard", s, "epoch",
		(json_int_t)c->led[s].epoch, "error", err);
	minc(c, "palisade_controller_fenced_total", NULL, 1);
	drop_shard(c, s, "fenced by a newer epoch");
	pal_coord_resign(c->coord, s);
}

static void tick_shard(pal_controller *c, int s)
{
	led_shard *l = &c->led[s];
	char err[1024];
	int64_t wm, now, t0 = mono_ms();
	int rc = pal_store_tick_begin(c->st, s, l->epoch, &wm, &now, err, sizeof err);
	if (rc == PAL_ESTALE) {
		fenced(c, s, err);
		return;
	}
	if (rc && pal_store_lock_timeout(c->st)) {
		pal_log(PAL_LOG_WARN, "controller.tick_waiting", "{s:i, s:s}", "shard", s, "error", err);
		return;
	}
	if (rc) {
		db_failed(c, "tick begin", err);
		return;
	}
	rc = pal_planner_tick(l->planner, wm, now, &c->batch);
	if (rc) {
		pal_store_tick_abort(c->st);
		pal_log(PAL_LOG_ERROR, "controller.tick_failed", "{s:i, s:s}", "shard", s, "error",
			pal_strerror(rc));
		return;
	}
	int64_t inserted = 0;
	rc = pal_store_tick_commit(c->st, s, l->epoch, c->node_id, &c->batch, &inserted, err,
				   sizeof err);
	if (rc == PAL_ESTALE) {
		if (strstr(err, "activated by someone else")) {
			drop_shard(c, s, err); /* re-acquired and reloaded on the next pass */
			return;
		}
		fenced(c, s, err);
		return;
	}
	if (rc) {
		db_failed(c, "tick commit", err);
		return;
	}
	pal_planner_commit(l->planner, &c->batch);
	l->watermark = c->batch.watermark;
	l->last_tick_ms = mono_ms() - t0;
	l->planned += inserted;
	minc(c, "palisade_controller_ticks_total", NULL, 1);
	if (inserted)
		minc(c, "palisade_controller_triggers_planned_total", NULL, (double)inserted);
	char lab[96];
	snprintf(lab, sizeof lab, "shard=\"%d\"", s);
	mset(c, "palisade_controller_watermark_lag_seconds", lab,
	     now > c->batch.watermark ? (double)(now - c->batch.watermark) : 0);
	mset(c, "palisade_controller_tick_seconds", lab, l->last_tick_ms / 1000.0);
	for (size_t i = 0; i < c->batch.n_act; i++) {
		const pal_plan_activation *a = &c->batch.act[i];
		char ef[32];
		pal_fmt_rfc3339(a->effective_from, ef, sizeof ef);
		minc(c, "palisade_controller_activations_total", NULL, 1);
		pal_log(PAL_LOG_INFO, "controller.version_activated", "{s:s, s:i, s:s, s:i, s:I}",
			"job", a->job_id, "version", a->version, "effective_from", ef, "shard", s,
			"epoch", (json_int_t)l->epoch);
	}
	for (size_t i = 0; i < c->batch.n_mis; i++) {
		const pal_plan_misfire *m = &c->batch.mis[i];
		char f[32], t[32];
		pal_fmt_rfc3339(m->from, f, sizeof f);
		pal_fmt_rfc3339(m->to, t, sizeof t);
		snprintf(lab, sizeof lab, "policy=\"%s\",reason=\"%s\"", m->policy, m->reason);
		minc(c, "palisade_controller_misfires_total", lab, m->count);
		pal_log(PAL_LOG_INFO, "controller.misfire", "{s:s, s:s, s:s, s:s, s:s, s:i, s:I}",
			"job", m->job_id, "policy", m->policy, "reason", m->reason, "from", f, "to", t,
			"count", m->count, "epoch", (json_int_t)l->epoch);
	}
	if (c->batch.n_tick)
		pal_log(PAL_LOG_WARN, "controller.tickets_opened", "{s:i, s:i}", "shard", s, "count",
			(int)c->batch.n_tick);
}

/* ---- notifications -------------------------------------------------------------- */

static void handle_notifies(pal_controller *c)
{
	if (!PQconsumeInput(pal_store_conn(c->st))) {
		db_failed(c, "consume input", PQerrorMessage(pal_store_conn(c->st)));
		return;
	}
	PGnotify *n;
	while (c->st && (n = PQnotifies(pal_store_conn(c->st)))) {
		int s = pal_job_shard(n->extra, c->cfg.n_shards);
		if (s >= 0 && s < c->cfg.n_shards && c->led[s].planner) {
			pal_log(PAL_LOG_DEBUG, "controller.job_changed", "{s:s, s:i}", "job", n->extra,
				"shard", s);
			load_stats ls = { 0 };
			load_jobs(c, s, n->extra, &ls);
		}
		PQfreemem(n);
	}
}

static bool ensure_db(pal_controller *c)
{
	if (c->st)
		return true;
	if (mono_ms() < c->next_db_try_ms)
		return false;
	char err[1024];
	if (pal_store_open(c->conninfo, &c->st, err, sizeof err) == PAL_OK) {
		/* A transaction left open by a paused controller must not keep the
		 * shard row locked from its successor for long, and a successor
		 * must not queue forever behind it. */
		PGresult *r = PQexec(pal_store_conn(c->st),
				     "SET idle_in_transaction_session_timeout = '5s';"
				     " SET lock_timeout = '2s'; SET statement_timeout = '30s';"
				     " LISTEN palisade_apply");
		bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
		PQclear(r);
		if (ok) {
			c->db_backoff_ms = 500;
			mset(c, "palisade_controller_db_up", NULL, 1);
			pal_log(PAL_LOG_INFO, "controller.db_connected", NULL);
			return true;
		}
		snprintf(err, sizeof err, "LISTEN failed: %s", PQerrorMessage(pal_store_conn(c->st)));
		pal_store_close(c->st);
		c->st = NULL;
	}
	pal_log(PAL_LOG_WARN, "controller.db_unavailable", "{s:s, s:i}", "error", err, "retry_ms",
		c->db_backoff_ms);
	mset(c, "palisade_controller_db_up", NULL, 0);
	c->next_db_try_ms = mono_ms() + c->db_backoff_ms;
	c->db_backoff_ms = c->db_backoff_ms * 2 > 10000 ? 10000 : c->db_backoff_ms * 2;
	return false;
}

/* Apply a timing change from pal_controller_set_timing (a reload). */
static void apply_timing(pal_controller *c)
{
	pthread_mutex_lock(&c->mu);
	bool changed = c->timing_changed;
	pal_controller_config t = c->new_timing;
	c->timing_changed = false;
	pthread_mutex_unlock(&c->mu);
	if (!changed)
		return;
	c->cfg.scan_interval_ms = t.scan_interval_ms;
	c->cfg.overlap_s = t.overlap_s;
	c->cfg.lookahead_s = t.lookahead_s;
	c->cfg.misfire_threshold_s = t.misfire_threshold_s;
	pal_planner_config pc = { .overlap_s = t.overlap_s,
				  .lookahead_s = t.lookahead_s,
				  .misfire_threshold_s = t.misfire_threshold_s };
	for (int s = 0; s < c->cfg.n_shards; s++)
		if (c->led[s].planner)
			pal_planner_set_config(c->led[s].planner, &pc);
	pal_log(PAL_LOG_INFO, "controller.timing_reloaded", "{s:i, s:I, s:I, s:I}", "scan_interval_ms",
		t.scan_interval_ms, "overlap_s", (json_int_t)t.overlap_s, "lookahead_s",
		(json_int_t)t.lookahead_s, "misfire_threshold_s", (json_int_t)t.misfire_threshold_s);
}

void pal_controller_set_timing(pal_controller *c, int scan_interval_ms, int64_t overlap_s,
			       int64_t lookahead_s, int64_t misfire_threshold_s)
{
	pthread_mutex_lock(&c->mu);
	c->new_timing.scan_interval_ms = scan_interval_ms > 0 ? scan_interval_ms : 1000;
	c->new_timing.overlap_s = overlap_s;
	c->new_timing.lookahead_s = lookahead_s;
	c->new_timing.misfire_threshold_s = misfire_threshold_s;
	c->timing_changed = true;
	pthread_mutex_unlock(&c->mu);
}

static void *run(void *arg)
{
	pal_controller *c = arg;
	uint64_t gen = 0;
	/* Drill-only fault injection: keep planning shards after ZooKeeper says
	 * they are lost, to prove that PostgreSQL fencing alone stops a stale
	 * controller (docs/election.md). */
	const char *fault = getenv("PALISADE_FAULT_IGNORE_ZK_LOSS");
	bool ignore_zk = fault && !strcmp(fault, "1");
	if (ignore_zk)
		pal_log(PAL_LOG_WARN, "controller.fault_injection", "{s:s}", "fault",
			"ignore zookeeper leadership loss");
	c->next_tick_ms = mono_ms();
	c->next_reload_ms = mono_ms() + c->cfg.reload_interval_ms;
	while (!atomic_load(&c->stop)) {
		bool connected = false;
		apply_timing(c);
		gen = pal_coord_snapshot(c->coord, c->lead, &connected);
		if (!ensure_db(c)) {
			publish_status(c);
			pal_coord_wait(c->coord, gen, 200);
			continue;
		}
		for (int s = 0; s < c->cfg.n_shards && c->st; s++) {
			bool leading = connected && c->lead[s].leading;
			if (leading && (!c->led[s].planner || c->led[s].epoch != c->lead[s].epoch))
				acquire_shard(c, s, c->lead[s].epoch);
			else if (!leading && c->led[s].planner && !ignore_zk)
				drop_shard(c, s, connected ? "lost leadership" : "zookeeper disconnected");
		}
		if (c->st)
			handle_notifies(c);
		int64_t now = mono_ms();
		if (c->st && (atomic_exchange(&c->reload, false) || now >= c->next_reload_ms)) {
			/* The fallback for missed notifications: unchanged jobs cost a
			 * comparison each (put_job_json). */
			load_stats ls = { 0 };
			int shards = 0;
			for (int s = 0; s < c->cfg.n_shards && c->st; s++)
				if (c->led[s].planner) {
					shards++;
					load_jobs(c, s, NULL, &ls);
				}
			pal_log(PAL_LOG_DEBUG, "controller.jobs_reloaded", "{s:i, s:I, s:I, s:I}",
				"shards", shards, "jobs", (json_int_t)ls.jobs, "changed",
				(json_int_t)ls.changed, "ms", (json_int_t)(mono_ms() - now));
			c->next_reload_ms = now + c->cfg.reload_interval_ms;
		}
		if (c->st && now >= c->next_tick_ms) {
			/* Re-check leadership right before writing: a suspension that
			 * arrived meanwhile stops the writes now, not one tick later. */
			gen = pal_coord_snapshot(c->coord, c->lead, &connected);
			for (int s = 0; s < c->cfg.n_shards && c->st; s++) {
				if (!c->led[s].planner || atomic_load(&c->stop))
					continue;
				if (!ignore_zk && (!connected || !c->lead[s].leading ||
						   c->lead[s].epoch != c->led[s].epoch))
					continue; /* handled at the top of the next pass */
				tick_shard(c, s);
			}
			c->next_tick_ms += c->cfg.scan_interval_ms;
			if (c->next_tick_ms < now)
				c->next_tick_ms = now + c->cfg.scan_interval_ms;
			publish_status(c);
		}
		int64_t wait = c->next_tick_ms - mono_ms();
		if (wait > 100)
			wait = 100; /* notifications are polled at this granularity */
		if (wait > 0)
			pal_coord_wait(c->coord, gen, (int)wait);
	}
	for (int s = 0; s < c->cfg.n_shards; s++)
		drop_shard(c, s, "controller stopping");
	publish_status(c);
	pal_store_close(c->st);
	c->st = NULL;
	return NULL;
}

int pal_controller_start(const pal_controller_config *cfg, pal_coord *coord, pal_metrics *m,
			 pal_controller **out, char *err, size_t errlen)
{
	*out = NULL;
	pal_controller *c = calloc(1, sizeof *c);
	if (!c)
		return PAL_ENOMEM;
	c->cfg = *cfg;
	if (c->cfg.scan_interval_ms <= 0)
		c->cfg.scan_interval_ms = 1000;
	if (c->cfg.reload_interval_ms <= 0)
		c->cfg.reload_interval_ms = 30000;
	c->conninfo = strdup(cfg->conninfo ? cfg->conninfo : "");
	c->node_id = strdup(cfg->node_id);
	c->led = calloc((size_t)cfg->n_shards, sizeof *c->led);
	c->lead = calloc((size_t)cfg->n_shards, sizeof *c->lead);
	if (!c->conninfo || !c->node_id || !c->led || !c->lead) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	c->coord = coord;
	c->m = m;
	c->db_backoff_ms = 500;
	pthread_mutex_init(&c->mu, NULL);
	declare_metrics(m);
	if (pthread_create(&c->thread, NULL, run, c)) {
		snprintf(err, errlen, "cannot start the controller thread");
		pthread_mutex_destroy(&c->mu);
		goto fail;
	}
	*out = c;
	return PAL_OK;
fail:
	free(c->conninfo);
	free(c->node_id);
	free(c->led);
	free(c->lead);
	free(c);
	return PAL_ENOMEM;
}

void pal_controller_reload(pal_controller *c)
{
	atomic_store(&c->reload, true);
}

void pal_controller_stop(pal_controller *c)
{
	if (!c)
		return;
	atomic_store(&c->stop, true);
	pthread_join(c->thread, NULL);
	pal_plan_batch_free(&c->batch);
	json_decref(c->status);
	pthread_mutex_destroy(&c->mu);
	free(c->conninfo);
	free(c->node_id);
	free(c->led);
	free(c->lead);
	free(c);
}
