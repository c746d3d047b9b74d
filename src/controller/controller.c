/*
 * controller.c - the controller thread: leadership -> PostgreSQL claim ->
 * per-shard planner -> fenced planning transactions (see controller.h).
 * The key-horizon checks it runs between ticks are in keyhorizon.c; the
 * state both share is in controller_int.h.
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
#include "palisade/clock.h"
#include "palisade/controller.h"
#include "palisade/health.h"
#include "palisade/horizoncheck.h"
#include "palisade/log.h"
#include "palisade/planner.h"
#include "palisade/store.h"
#include "palisade/timefmt.h"
#include "controller_int.h"

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
	pal_metric_declare(m, "palisade_controller_tick_lock_waits_total", PAL_METRIC_COUNTER,
			   "planning transactions rolled back for a lock held past the lock "
			   "timeout or a deadlock (the shard tries again)");
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
	pal_metric_declare(m, "palisade_controller_quarantined_total", PAL_METRIC_COUNTER,
			   "jobs quarantined because their planning failed");
	pal_metric_declare(m, "palisade_controller_tick_seconds_max", PAL_METRIC_GAUGE,
			   "longest planning transaction of a shard since this node acquired it");
	pal_metric_declare(m, "palisade_controller_jobs_key_horizon_exceeded", PAL_METRIC_GAUGE,
			   "jobs of the led shards whose key horizon exceeds sink.key_retention "
			   "(each has an open ticket; docs/protocol.md)");
	pal_metric_declare(m, "palisade_controller_shard_epoch", PAL_METRIC_GAUGE,
			   "election epoch (fencing token) this node plans a shard under; 0 when "
			   "it does not lead the shard");
	pal_controller__declare_after_metrics(m);
	/* Counters start at 0 (increase() and absent() need a sample). */
	pal_metric_inc(m, "palisade_controller_db_errors_total", NULL, 0);
	pal_metric_inc(m, "palisade_controller_fenced_total", NULL, 0);
	pal_metric_inc(m, "palisade_controller_tick_lock_waits_total", NULL, 0);
	pal_metric_inc(m, "palisade_controller_quarantined_total", NULL, 0);
	pal_metric_set(m, "palisade_controller_jobs_key_horizon_exceeded", NULL, 0);
	static const char *const reasons[] = { "missed", "quarantined" };
	for (int p = 0; p < 4; p++)
		for (int r = 0; r < 2; r++) {
			char lab[96];
			snprintf(lab, sizeof lab, "policy=\"%s\",reason=\"%s\"",
				 pal_misfire_policy_names[p], reasons[r]);
			pal_metric_inc(m, "palisade_controller_misfires_total", lab, 0);
		}
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
		json_array_append_new(
		    shards, json_pack("{s:i, s:I, s:s?, s:I, s:I, s:I}", "shard", s, "epoch",
				      (json_int_t)l->epoch, "watermark", *wm ? wm : NULL, "jobs",
				      (json_int_t)pal_planner_jobs(l->planner), "last_tick_ms",
				      (json_int_t)(l->last_tick_us / 1000), "planned",
				      (json_int_t)l->planned));
	}
	mset(c, "palisade_controller_shards_led", NULL, n);
	json_t *st = json_pack("{s:b, s:I, s:o}", "db_up", c->st != NULL, "key_horizon_exceeded",
			       (json_int_t)g_hash_table_size(c->over_horizon), "shards", shards);
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
	g_free(l->horizon_after);
	memset(l, 0, sizeof *l);
	pal_controller__forget_over_horizon(c, s, &(pal_horizon_scope){0});
	char lab[32];
	snprintf(lab, sizeof lab, "shard=\"%d\"", s);
	mset(c, "palisade_controller_shard_epoch", lab, 0);
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
	c->next_db_try_ms = pal_mono_ms() + c->db_backoff_ms;
}

/* A job a load could not put into its planner (its cron or zone does not
 * open): quarantined once the load's statement is over. */
typedef struct bad_load {
	int shard;
	char *id, *error;
} bad_load;

static void bad_load_free(gpointer p)
{
	bad_load *bl = p;
	g_free(bl->id);
	g_free(bl->error);
	g_free(bl);
}

static void quarantined_metric(pal_controller *c, int s, const char *id, const char *error)
{
	pal_log(PAL_LOG_ERROR, "controller.job_quarantined", "{s:s, s:i, s:I, s:s}", "job", id,
		"shard", s, "epoch", (json_int_t)c->led[s].epoch, "error", error);
	minc(c, "palisade_controller_quarantined_total", NULL, 1);
}

/*
 * After a load of SHARDS[0..n): quarantine the jobs it could not put, then
 * make the planners' quarantine flags those of the database (a release by
 * an operator clears one).  A database error drops every shard.
 */
static void quarantine_after_load(pal_controller *c, const int *shards, size_t n)
{
	char err[1024];
	for (guint i = 0; c->st && i < c->load_bad->len; i++) {
		bad_load *bl = g_ptr_array_index(c->load_bad, i);
		if (!c->led[bl->shard].planner)
			continue;
		bool created;
		if (pal_store_quarantine_job(c->st, bl->id, bl->shard, c->led[bl->shard].epoch,
					     PAL_NO_TIME, bl->error, &created, err, sizeof err)) {
			db_failed(c, "quarantine job", err);
			break;
		}
		if (created) /* a reload finds it again every 30 s: counted once */
			quarantined_metric(c, bl->shard, bl->id, bl->error);
	}
	g_ptr_array_set_size(c->load_bad, 0);
	for (size_t i = 0; c->st && i < n; i++) {
		led_shard *l = &c->led[shards[i]];
		if (!l->planner)
			continue;
		char **ids;
		size_t k;
		if (pal_store_quarantined_ids(c->st, shards[i], &ids, &k, err, sizeof err)) {
			db_failed(c, "load quarantine", err);
			return;
		}
		pal_planner_set_quarantined(l->planner, (const char *const *)ids, k);
		g_strfreev(ids);
	}
}

/* Counts of one load_jobs() call: rows read, rows that were not current. */
typedef struct load_stats {
	size_t jobs, changed;
} load_stats;

/* What the shard-load callbacks work on. */
typedef struct load_ctx {
	pal_controller *c; /* rows go to c->led[shard] */
	load_stats *st;
	GPtrArray *stale; /* lists-only pass: ids whose lists differ (g_free) */
} load_ctx;

/*
 * Put one job of a shard load.  A job whose (version, effective_from) list
 * the planner already holds is left alone (pal_planner_put_job compares
 * first): the 30 s full reload then costs a comparison per unchanged job.
 */
static int put_loaded(void *arg, int shard, const char *id, const pal_plan_version *v, size_t n)
{
	load_ctx *lc = arg;
	if (shard < 0 || shard >= lc->c->cfg.n_shards || !lc->c->led[shard].planner)
		return PAL_OK;
	led_shard *l = &lc->c->led[shard];
	if (pal_planner_job_current(l->planner, id, v, n))
		return PAL_OK;
	lc->st->changed++;
	char err[512];
	int rc = pal_planner_put_job(l->planner, id, v, n, l->watermark, err, sizeof err);
	if (rc && rc != PAL_ENOMEM) {
		pal_log(PAL_LOG_ERROR, "controller.bad_job", "{s:s, s:s}", "job", id, "error", err);
		bad_load *bl = g_new(bad_load, 1);
		bl->shard = shard;
		bl->id = g_strdup(id);
		bl->error = g_strdup(err);
		g_ptr_array_add(lc->c->load_bad, bl);
	}
	/* A bad job must not stop the shard: it is logged, skipped and
	 * quarantined after the load (quarantine_after_load). */
	return rc == PAL_ENOMEM ? rc : PAL_OK;
}

/* A job whose version list changed, found by a lists-only pass. */
typedef struct stale_job {
	int shard;
	char *id;
} stale_job;

static void stale_free(gpointer p)
{
	stale_job *sj = p;
	g_free(sj->id);
	g_free(sj);
}

/* Lists-only pass: note the jobs whose version lists changed. */
static int note_stale(void *arg, int shard, const char *id, const pal_plan_version *v, size_t n)
{
	load_ctx *lc = arg;
	if (shard < 0 || shard >= lc->c->cfg.n_shards || !lc->c->led[shard].planner)
		return PAL_OK;
	if (!pal_planner_job_current(lc->c->led[shard].planner, id, v, n)) {
		stale_job *sj = g_new(stale_job, 1);
		sj->shard = shard;
		sj->id = g_strdup(id);
		g_ptr_array_add(lc->stale, sj);
	}
	return PAL_OK;
}

/* Above this many changed jobs a full reload fetches every job's planning
 * columns in one statement instead of one statement per changed job. */
#define RELOAD_ONE_BY_ONE_MAX 64

/*
 * (Re)load job JOB_ID of shard SHARDS[0] (N == 1), or every job of the led
 * shards SHARDS[0..n) when JOB_ID is NULL, adding to *ST.  A full reload
 * reads the version lists of all those shards in one statement first and
 * then the planning columns of the jobs whose lists changed.  A database
 * error drops every shard (db_failed).
 */
static int load_jobs(pal_controller *c, const int *shards, size_t n, const char *job_id,
		     load_stats *st)
{
	char err[1024];
	int64_t cutoffs[n];
	for (size_t i = 0; i < n; i++) {
		int64_t wm = c->led[shards[i]].watermark;
		cutoffs[i] = wm == PAL_NO_TIME ? PAL_NO_TIME : wm - c->cfg.overlap_s;
	}
	load_ctx lc = { .c = c, .st = st };
	size_t seen = 0;
	if (job_id) {
		int rc = pal_store_shard_jobs(c->st, shards, cutoffs, 1, job_id, true, put_loaded, &lc,
					      &seen, err, sizeof err);
		st->jobs += seen;
		if (rc == PAL_EDB)
			db_failed(c, "load jobs", err);
		else
			quarantine_after_load(c, shards, 1);
		return rc;
	}
	lc.stale = g_ptr_array_new_with_free_func(stale_free);
	int rc = pal_store_shard_jobs(c->st, shards, cutoffs, n, NULL, false, note_stale, &lc, &seen,
				      err, sizeof err);
	st->jobs += seen;
	if (rc == PAL_EDB) {
		db_failed(c, "load jobs", err);
	} else if (!rc && lc.stale->len > RELOAD_ONE_BY_ONE_MAX) {
		if ((rc = pal_store_shard_jobs(c->st, shards, cutoffs, n, NULL, true, put_loaded, &lc,
					       &seen, err, sizeof err)) == PAL_EDB)
			db_failed(c, "load jobs", err);
	} else {
		for (guint k = 0; !rc && k < lc.stale->len; k++) {
			stale_job *sj = g_ptr_array_index(lc.stale, k);
			int64_t wm = c->led[sj->shard].watermark;
			int64_t cut = wm == PAL_NO_TIME ? PAL_NO_TIME : wm - c->cfg.overlap_s;
			if ((rc = pal_store_shard_jobs(c->st, &sj->shard, &cut, 1, sj->id, true,
						       put_loaded, &lc, &seen, err, sizeof err)) ==
			    PAL_EDB)
				db_failed(c, "load jobs", err);
		}
	}
	g_ptr_array_free(lc.stale, TRUE);
	if (rc != PAL_EDB)
		quarantine_after_load(c, shards, n);
	return rc;
}

/* ---- key horizons (keyhorizon.c) ------------------------------------------------ */

/* Check the key horizons of led shard S's live jobs (IDS[0..N_IDS) only,
 * when IDS is not NULL); a database error drops every shard. */
static void check_key_horizons(pal_controller *c, int s, const char *const *ids, size_t n_ids,
			       const char *why)
{
	char err[1024];
	bool done;

	if (pal_controller__check_key_horizons(c, s, ids, n_ids, why, &done, err, sizeof err))
		db_failed(c, "key horizon check", err);
	else if (done)
		publish_status(c);
}

/* The next slice of acquired shard S's check; a database error drops
 * every shard, this one's state with it. */
static void check_acquired_slice(pal_controller *c, int s)
{
	char err[1024];
	bool done;

	if (pal_controller__check_acquired_slice(c, s, &done, err, sizeof err))
		db_failed(c, "key horizon check", err);
	else if (done)
		publish_status(c);
}

/* Claim shard S for EPOCH in PostgreSQL and give it an empty planner; its
 * jobs are loaded by load_claimed().  False when not claimed. */
static bool claim_shard(pal_controller *c, int s, int64_t epoch)
{
	led_shard *l = &c->led[s];
	if (l->planner)
		drop_shard(c, s, "new epoch");
	char err[1024];
	int64_t wm, last_write;
	int rc = pal_store_shard_claim(c->st, s, epoch, c->node_id, &wm, &last_write, err, sizeof err);
	if (rc == PAL_ESTALE) {
		pal_log(PAL_LOG_ERROR, "controller.claim_rejected", "{s:i, s:I, s:s}", "shard", s,
			"epoch", (json_int_t)epoch, "error", err);
		minc(c, "palisade_controller_claims_total", "outcome=\"rejected\"", 1);
		pal_coord_resign(c->coord, s);
		return false;
	}
	if (rc && pal_store_lock_timeout(c->st)) {
		/* The shard row is locked by a (paused?) previous leader; its
		 * transaction dies at idle_in_transaction_session_timeout. */
		pal_log(PAL_LOG_WARN, "controller.claim_waiting", "{s:i, s:s}", "shard", s, "error", err);
		return false;
	}
	if (rc) {
		db_failed(c, "claim shard", err);
		return false;
	}
	pal_planner_config pc = { .overlap_s = c->cfg.overlap_s,
				  .lookahead_s = c->cfg.lookahead_s,
				  .misfire_threshold_s = c->cfg.misfire_threshold_s,
				  .max_rows_per_tick = 50000,
				  .fault_job = c->fault_plan_job };
	l->planner = pal_planner_new(s, &pc);
	l->epoch = epoch;
	l->watermark = wm;
	if (!l->planner) {
		pal_log(PAL_LOG_ERROR, "controller.tick_failed", "{s:i, s:s}", "shard", s, "error",
			pal_strerror(PAL_ENOMEM));
		return false;
	}
	pal_planner_inherit(l->planner, last_write);
	return true;
}

/* How far past its watermark a draining leader names the due jobs of a
 * shard (beyond the lookahead): the time its successor has to load the rest
 * before planning waits for it.  The most ids it writes per shard (more:
 * no handoff row, the successor loads the whole shard first). */
#define HANDOFF_HORIZON_S 30
#define HANDOFF_MAX_IDS 20000

/*
 * Load the jobs of the shards just claimed, SHARDS[0..n).  A shard whose
 * previous leader drained and left a handoff row that still holds (the
 * shard's watermark is the row's: nobody planned since) gets only the jobs
 * the row names, with its ticks capped at the row's horizon: every other
 * job has no instant up to there, so the shard plans at once and
 * load_handoff_rest() loads the rest after this pass's first ticks.  The
 * other shards are loaded in one streamed statement: a first start wins
 * every shard at once, and one pass over job_versions for all of them
 * costs less than one index probe per job (pal_store_shard_jobs).  A failed
 * load drops them (a database error drops every shard).
 */
static void load_claimed(pal_controller *c, const int *shards, size_t n)
{
	int64_t cutoffs[n], horizons[n];
	char **hids[n];
	int full[n], part[n];
	int64_t cut_full[n], cut_part[n];
	size_t n_full = 0, n_part = 0;
	char err[1024];
	int64_t t0 = pal_mono_ms();
	for (size_t i = 0; i < n; i++) {
		int64_t wm = c->led[shards[i]].watermark;
		cutoffs[i] = wm == PAL_NO_TIME ? PAL_NO_TIME : wm - c->cfg.overlap_s;
	}
	if (pal_store_handoff_read(c->st, shards, n, horizons, hids, err, sizeof err)) {
		db_failed(c, "read handoff", err);
		return;
	}
	GPtrArray *ids = g_ptr_array_new();
	for (size_t i = 0; i < n; i++) {
		if (horizons[i] != PAL_NO_TIME && c->led[shards[i]].watermark != PAL_NO_TIME) {
			for (char **p = hids[i]; p && *p; p++)
				g_ptr_array_add(ids, *p);
			cut_part[n_part] = cutoffs[i];
			part[n_part++] = shards[i];
			led_shard *l = &c->led[shards[i]];
			l->rest_pending = true;
			pal_planner_cap_horizon(l->planner, horizons[i]);
		} else {
			cut_full[n_full] = cutoffs[i];
			full[n_full++] = shards[i];
		}
	}
	/* A row serves one successor: consumed at once, so that a successor
	 * that fails before its own first tick moves the watermark (having
	 * activated a version the row does not know of, at that watermark)
	 * leaves no row behind that would still look current. */
	if (n_part && pal_store_handoff_clear(c->st, part, n_part, err, sizeof err)) {
		g_ptr_array_free(ids, TRUE);
		for (size_t i = 0; i < n; i++)
			g_strfreev(hids[i]);
		db_failed(c, "clear handoff", err);
		return;
	}
	load_stats ls = { 0 };
	load_ctx lc = { .c = c, .st = &ls };
	size_t seen = 0;
	int rc = PAL_OK, rc_part = PAL_OK;
	if (n_part)
		rc_part = pal_store_shard_jobs_ids(c->st, part, cut_part, n_part,
						   (const char *const *)ids->pdata, ids->len, put_loaded,
						   &lc, &seen, err, sizeof err);
	int64_t t_part = pal_mono_ms();
	g_ptr_array_free(ids, TRUE);
	for (size_t i = 0; i < n; i++)
		g_strfreev(hids[i]);
	if (rc_part != PAL_EDB && n_full)
		rc = pal_store_shard_jobs(c->st, full, cut_full, n_full, NULL, true, put_loaded, &lc,
					  &seen, err, sizeof err);
	if (rc == PAL_EDB || rc_part == PAL_EDB) {
		db_failed(c, "load jobs", err);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		int s = shards[i];
		led_shard *l = &c->led[s];
		bool handoff = l->rest_pending;
		if (handoff ? rc_part : rc) {
			drop_shard(c, s, "job load failed");
			continue;
		}
		minc(c, "palisade_controller_claims_total", "outcome=\"claimed\"", 1);
		char w[32] = "";
		if (l->watermark != PAL_NO_TIME)
			pal_fmt_rfc3339(l->watermark, w, sizeof w);
		pal_log(PAL_LOG_INFO, "controller.shard_acquired",
			"{s:i, s:I, s:s?, s:I, s:I, s:i, s:b}", "shard", s, "epoch",
			(json_int_t)l->epoch, "watermark", *w ? w : NULL, "jobs",
			(json_int_t)pal_planner_jobs(l->planner), "load_ms",
			(json_int_t)((handoff ? t_part : pal_mono_ms()) - t0), "loaded_with", (int)n,
			"handoff", handoff);
	}
	if (!rc || !rc_part)
		quarantine_after_load(c, shards, n);
}

/*
 * The rest of the shards acquired from a handoff row (load_claimed): every
 * job of them in one streamed statement (the ones already loaded are
 * compared and kept), then their ticks are no longer capped.  Runs right
 * after the first ticks of the pass that claimed them, on the controller
 * thread (the other shards' ticks wait for it, as for a full reload).
 */
static void load_handoff_rest(pal_controller *c)
{
	int shards[c->cfg.n_shards];
	int64_t cutoffs[c->cfg.n_shards];
	size_t n = 0;
	for (int s = 0; s < c->cfg.n_shards; s++) {
		led_shard *l = &c->led[s];
		if (!l->planner || !l->rest_pending)
			continue;
		cutoffs[n] = l->watermark == PAL_NO_TIME ? PAL_NO_TIME : l->watermark - c->cfg.overlap_s;
		shards[n++] = s;
	}
	if (!n)
		return;
	char err[1024];
	load_stats ls = { 0 };
	load_ctx lc = { .c = c, .st = &ls };
	size_t seen = 0;
	int64_t t0 = pal_mono_ms();
	int rc = pal_store_shard_jobs(c->st, shards, cutoffs, n, NULL, true, put_loaded, &lc, &seen,
				      err, sizeof err);
	if (rc == PAL_EDB) {
		db_failed(c, "load jobs", err);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		led_shard *l = &c->led[shards[i]];
		if (rc) {
			drop_shard(c, shards[i], "job load failed");
			continue;
		}
		l->rest_pending = false;
		pal_planner_cap_horizon(l->planner, PAL_NO_TIME);
		pal_log(PAL_LOG_INFO, "controller.shard_loaded", "{s:i, s:I, s:I, s:I, s:i}", "shard",
			shards[i], "epoch", (json_int_t)l->epoch, "jobs",
			(json_int_t)pal_planner_jobs(l->planner), "load_ms",
			(json_int_t)(pal_mono_ms() - t0), "loaded_with", (int)n);
	}
	if (!rc)
		quarantine_after_load(c, shards, n);
}

/* A shard won in ZooKeeper since the pass that took snapshot GEN began,
 * not yet claimed in PostgreSQL (a drain hands its shards over one by one:
 * the first is often won alone, the rest some ms later). */
static bool claims_arrived(pal_controller *c, uint64_t gen)
{
	pal_shard_lead now[c->cfg.n_shards];
	bool connected = false;
	if (pal_coord_snapshot(c->coord, now, &connected) == gen || !connected)
		return false;
	for (int s = 0; s < c->cfg.n_shards; s++)
		if (now[s].leading && !c->lead[s].leading &&
		    (!c->led[s].planner || c->led[s].epoch != now[s].epoch))
			return true;
	return false;
}

/*
 * What follows an acquisition once its shards plan: loading the rest of the
 * shards acquired from handoff rows (every one of them in one statement),
 * then the key-horizon check of the acquired shards, one slice of
 * PAL_HORIZON_SLICE jobs per pass (a shard of 12,500 jobs in one statement,
 * ~240 ms, held back a claim won meanwhile: graceful handoffs of 200,000
 * jobs waited 400-500 ms for it where 1,000 jobs took ~100).  None
 * of it runs while shards won since this pass began wait for their claim:
 * a draining node resigns its shards one by one, and the rest load of the
 * first one (100-300 ms) held back the claim of the seven after it.  The
 * rest must be loaded before the capped horizon is reached (30 s past the
 * lookahead); waiting for claims costs passes, not that.
 */
static void finish_takeover(pal_controller *c, uint64_t gen)
{
	int check = -1;
	bool rest = false;
	for (int s = 0; s < c->cfg.n_shards; s++) {
		if (!c->led[s].planner)
			continue;
		rest = rest || c->led[s].rest_pending;
		if (check < 0 && c->led[s].acquired_check)
			check = s;
	}
	if ((!rest && check < 0) || claims_arrived(c, gen))
		return;
	if (rest) {
		load_handoff_rest(c);
		return;
	}
	check_acquired_slice(c, check);
}

/*
 * Stopping (a drain): for each shard led with all its jobs loaded and a
 * committed tick, write the handoff row its successor starts from (fenced
 * by our epoch and the watermark our planner's state belongs to).  A shard
 * with too many jobs due gets none; a failure is logged and changes
 * nothing else (the successor loads the whole shard).
 */
static void write_handoffs(pal_controller *c)
{
	int n_shards = c->cfg.n_shards;
	pal_handoff rows[n_shards];
	GPtrArray *ids[n_shards];
	int rcs[n_shards];
	size_t n = 0;
	for (int s = 0; c->st && s < n_shards; s++) {
		led_shard *l = &c->led[s];
		if (!l->planner || !l->ticked || l->rest_pending || l->watermark == PAL_NO_TIME)
			continue;
		int64_t horizon = l->watermark + c->cfg.lookahead_s + HANDOFF_HORIZON_S;
		ids[n] = g_ptr_array_new();
		if (pal_planner_due_ids(l->planner, horizon, HANDOFF_MAX_IDS, ids[n])) {
			pal_log(PAL_LOG_INFO, "controller.handoff_skipped", "{s:i, s:s}", "shard", s,
				"reason", "too many jobs due");
			g_ptr_array_free(ids[n], TRUE);
			continue;
		}
		rows[n] = (pal_handoff){ .shard = s,
					 .epoch = l->epoch,
					 .watermark = l->watermark,
					 .horizon = horizon,
					 .ids = (const char *const *)ids[n]->pdata,
					 .n_ids = ids[n]->len };
		n++;
	}
	char err[512] = "";
	int rc = n ? pal_store_handoff_write(c->st, c->node_id, rows, n, rcs, err, sizeof err) : 0;
	for (size_t i = 0; i < n; i++) {
		if (rc || rcs[i])
			pal_log(PAL_LOG_WARN, "controller.handoff_failed", "{s:i, s:s}", "shard",
				rows[i].shard, "error",
				rc ? err : "no longer at the epoch and watermark of the planner");
		else
			pal_log(PAL_LOG_DEBUG, "controller.handoff_written", "{s:i, s:I, s:i}",
				"shard", rows[i].shard, "epoch", (json_int_t)rows[i].epoch, "jobs",
				(int)rows[i].n_ids);
		g_ptr_array_free(ids[i], TRUE);
	}
}

static void fenced(pal_controller *c, int s, const char *err)
{
	pal_log(PAL_LOG_WARN, "controller.fenced", "{s:i, s:I, s:s}", "shard", s, "epoch",
		(json_int_t)c->led[s].epoch, "error", err);
	minc(c, "palisade_controller_fenced_total", NULL, 1);
	drop_shard(c, s, "fenced by a newer epoch");
	pal_coord_resign(c->coord, s);
}

void pal_controller__fenced(pal_controller *c, int s, const char *err)
{
	fenced(c, s, err);
}

/* Job ID is one of the N_BAD jobs whose rows this tick's isolation refused. */
static bool refused(const pal_quarantined *bad, size_t n_bad, const char *id)
{
	for (size_t i = 0; i < n_bad; i++)
		if (!strcmp(bad[i].job_id, id))
			return true;
	return false;
}

/* One line per version the tick activated (each also has its audit_log
 * row).  A tick that activated more than ACT_LOG_EACH (the first start
 * after a large apply: up to 1000 a shard, a million lines in all) logs
 * them at debug and one summary at info. */
#define ACT_LOG_EACH 16

static void log_activations(pal_controller *c, int s, const pal_quarantined *bad, size_t n_bad)
{
	const led_shard *l = &c->led[s];
	const char *first = NULL;
	size_t n = 0;
	for (size_t i = 0; i < c->batch.n_act; i++) {
		if (refused(bad, n_bad, c->batch.act[i].job_id))
			continue; /* not written: the job was quarantined */
		if (n++ == 0)
			first = c->batch.act[i].job_id;
	}
	pal_log_level lvl = n > ACT_LOG_EACH ? PAL_LOG_DEBUG : PAL_LOG_INFO;
	for (size_t i = 0; i < c->batch.n_act && pal_log_enabled(lvl); i++) {
		const pal_plan_activation *a = &c->batch.act[i];
		if (refused(bad, n_bad, a->job_id))
			continue;
		char ef[32];
		pal_fmt_rfc3339(a->effective_from, ef, sizeof ef);
		pal_log(lvl, "controller.version_activated", "{s:s, s:i, s:s, s:i, s:I}", "job",
			a->job_id, "version", a->version, "effective_from", ef, "shard", s, "epoch",
			(json_int_t)l->epoch);
	}
	if (n)
		minc(c, "palisade_controller_activations_total", NULL, (double)n);
	if (n > ACT_LOG_EACH)
		pal_log(PAL_LOG_INFO, "controller.versions_activated", "{s:i, s:I, s:I, s:s}", "shard",
			s, "epoch", (json_int_t)l->epoch, "count", (json_int_t)n, "first_job", first);
}

/*
 * Jobs of shard S put anew since its last tick resume after the latest
 * instant a leader before decided for them (pal_planner_loaded_due()):
 * inside the tick's transaction, so it reads what the watermark WM stands
 * for.  Only the jobs the tick would plan are read: none in a shard of
 * idle jobs.
 */
static int resume_loaded(pal_controller *c, int s, int64_t wm, int64_t now, char *err,
			 size_t errlen)
{
	pal_planner *pl = c->led[s].planner;
	GPtrArray *ids = g_ptr_array_new();
	int rc = PAL_OK;
	if (wm != PAL_NO_TIME && pal_planner_loaded_due(pl, now, ids) && ids->len) {
		int64_t *decided = g_new(int64_t, ids->len);
		rc = pal_store_decided_after(c->st, (const char *const *)ids->pdata, ids->len,
					     wm - c->cfg.overlap_s, decided, err, errlen);
		for (guint i = 0; !rc && i < ids->len; i++)
			(void)pal_planner_resume_after(pl, ids->pdata[i], decided[i]);
		g_free(decided);
	}
	if (!rc)
		pal_planner_loaded_checked(pl);
	g_ptr_array_free(ids, TRUE);
	return rc;
}

/* Shard S's tick gave way to a lock (or a deadlock) and will try again:
 * counted, and its lag (NOW, the database's clock in seconds, minus its
 * committed watermark) kept current, so that a shard whose ticks wait for
 * ever shows in palisade_controller_watermark_lag_seconds (and its alert)
 * rather than holding the value of its last commit. */
static void tick_waited(pal_controller *c, int s, int64_t now)
{
	char lab[96];
	minc(c, "palisade_controller_tick_lock_waits_total", NULL, 1);
	snprintf(lab, sizeof lab, "shard=\"%d\"", s);
	mset(c, "palisade_controller_watermark_lag_seconds", lab,
	     now > c->led[s].watermark ? (double)(now - c->led[s].watermark) : 0);
}

static void tick_shard(pal_controller *c, int s)
{
	led_shard *l = &c->led[s];
	char err[1024];
	int64_t wm, now, t0 = pal_mono_us();
	int rc = pal_store_tick_begin(c->st, s, l->epoch, &wm, &now, err, sizeof err);
	if (rc == PAL_ESTALE) {
		fenced(c, s, err);
		return;
	}
	if (rc && pal_store_lock_timeout(c->st)) {
		pal_log(PAL_LOG_WARN, "controller.tick_waiting", "{s:i, s:s}", "shard", s, "error", err);
		tick_waited(c, s, (int64_t)time(NULL)); /* no database clock read: this host's */
		return;
	}
	if (rc) {
		db_failed(c, "tick begin", err);
		return;
	}
	if ((rc = resume_loaded(c, s, wm, now, err, sizeof err))) {
		pal_store_tick_abort(c->st);
		db_failed(c, "takeover check", err);
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
	pal_quarantined *bad = NULL;
	size_t n_bad = 0;
	if (rc == PAL_EDB && pal_store_statement_failed(c->st)) {
		/* The server refused a row of the batch: find the job (or jobs)
		 * whose rows it refuses, quarantine them, commit the rest. */
		pal_log(PAL_LOG_WARN, "controller.tick_refused", "{s:i, s:s}", "shard", s, "error",
			err);
		int64_t wm2, now2;
		rc = pal_store_tick_begin(c->st, s, l->epoch, &wm2, &now2, err, sizeof err);
		if (!rc)
			rc = pal_store_tick_commit_isolated(c->st, s, l->epoch, c->node_id, wm,
							    &c->batch, &inserted, &bad, &n_bad, err,
							    sizeof err);
		for (size_t i = 0; !rc && i < n_bad; i++) {
			if (pal_planner_quarantine(l->planner, bad[i].job_id) != PAL_OK)
				continue;
			if (bad[i].created)
				quarantined_metric(c, s, bad[i].job_id, bad[i].error);
		}
	}
	if (rc == PAL_EBUSY) {
		/* Every job of the batch refused: not one job's fault (a table
		 * trigger, a missing partition).  Nothing quarantined; this shard
		 * tries again after a wait (each try bisects the whole batch),
		 * the others go on. */
		l->refused_backoff_ms = l->refused_backoff_ms ? l->refused_backoff_ms * 2 : 1000;
		if (l->refused_backoff_ms > 30000)
			l->refused_backoff_ms = 30000;
		l->refused_until_ms = pal_mono_ms() + l->refused_backoff_ms;
		pal_log(PAL_LOG_ERROR, "controller.tick_failed", "{s:i, s:s, s:i}", "shard", s,
			"error", err, "retry_ms", l->refused_backoff_ms);
		free(bad);
		return;
	}
	if (rc && (pal_store_lock_timeout(c->st) || pal_store_deadlock(c->st))) {
		/* A row the tick locks (a dependent's shard row, a job's row) was
		 * held past the lock timeout, or the server chose this tick in a
		 * deadlock: the tick was rolled back and is tentative (nothing of
		 * the planner moved), so this shard tries again on the next pass;
		 * the connection is fine and the other shards go on. */
		pal_log(PAL_LOG_WARN, "controller.tick_waiting", "{s:i, s:s, s:s}", "shard", s,
			"during", "commit", "error", err);
		tick_waited(c, s, now);
		free(bad);
		return;
	}
	if (rc == PAL_ESTALE) {
		if (strstr(err, "activated by someone else")) {
			drop_shard(c, s, err); /* re-acquired and reloaded on the next pass */
			free(bad);
			return;
		}
		fenced(c, s, err);
		free(bad);
		return;
	}
	if (rc) {
		db_failed(c, "tick commit", err);
		free(bad);
		return;
	}
	/* Jobs the planner left out of the tick (their planning failed): the
	 * commit quarantined them; the rest of the shard was planned. */
	for (size_t i = 0; i < c->batch.n_failed; i++) {
		const pal_plan_failed *f = &c->batch.failed[i];
		if (pal_planner_quarantine(l->planner, f->job_id) == PAL_OK)
			quarantined_metric(c, s, f->job_id, f->error);
	}
	pal_planner_commit(l->planner, &c->batch);
	l->refused_backoff_ms = 0;
	l->watermark = c->batch.watermark;
	l->last_tick_us = pal_mono_us() - t0;
	if (l->last_tick_us > l->max_tick_us)
		l->max_tick_us = l->last_tick_us;
	l->planned += inserted;
	if (!l->ticked) {
		/* The shard is useful from here on: log what its first tick cost. */
		l->ticked = true;
		pal_log(PAL_LOG_INFO, "controller.shard_planned", "{s:i, s:I, s:I, s:I, s:I}",
			"shard", s, "epoch", (json_int_t)l->epoch, "triggers", (json_int_t)inserted,
			"activations", (json_int_t)c->batch.n_act, "ms",
			(json_int_t)(l->last_tick_us / 1000));
	}
	minc(c, "palisade_controller_ticks_total", NULL, 1);
	if (inserted)
		minc(c, "palisade_controller_triggers_planned_total", NULL, (double)inserted);
	char lab[96];
	snprintf(lab, sizeof lab, "shard=\"%d\"", s);
	mset(c, "palisade_controller_watermark_lag_seconds", lab,
	     now > c->batch.watermark ? (double)(now - c->batch.watermark) : 0);
	mset(c, "palisade_controller_tick_seconds", lab, l->last_tick_us / 1e6);
	mset(c, "palisade_controller_tick_seconds_max", lab, l->max_tick_us / 1e6);
	mset(c, "palisade_controller_shard_epoch", lab, (double)l->epoch);
	log_activations(c, s, bad, n_bad);
	for (size_t i = 0; i < c->batch.n_mis; i++) {
		const pal_plan_misfire *m = &c->batch.mis[i];
		if (refused(bad, n_bad, m->job_id))
			continue;
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
	free(bad);
	pal_controller__plan_after(c, s);
}

/* ---- notifications -------------------------------------------------------------- */

/* Above this many notified jobs in one shard and one pass, the shard is
 * reloaded once (version lists, then the changed jobs) instead of job by
 * job: an apply of a million jobs notifies each of them. */
#define NOTIFY_RELOAD_AT 64

typedef struct notified {
	pal_controller *c;
	GPtrArray **by_shard; /* job ids (owned) per led shard, lazily made */
} notified;

static void on_notify(void *ctx, const char *channel, const char *payload)
{
	notified *nt = ctx;
	pal_controller *c = nt->c;
	int s = pal_job_shard(payload, c->cfg.n_shards);
	if (s < 0 || s >= c->cfg.n_shards || !c->led[s].planner)
		return;
	c->led[s].after_next_ms = 0; /* a dependent job may have arrived */
	if (!nt->by_shard[s])
		nt->by_shard[s] = g_ptr_array_new_with_free_func(g_free);
	if (nt->by_shard[s]->len <= NOTIFY_RELOAD_AT)
		g_ptr_array_add(nt->by_shard[s], g_strdup(payload));
}

static void handle_notifies(pal_controller *c)
{
	char err[512];
	int n;
	notified nt = { c, g_new0(GPtrArray *, c->cfg.n_shards) };
	if (pal_store_notifications(c->st, on_notify, &nt, &n, err, sizeof err))
		db_failed(c, "consume input", err);
	for (int s = 0; s < c->cfg.n_shards; s++) {
		GPtrArray *ids = nt.by_shard[s];
		if (!ids)
			continue;
		load_stats ls = { 0 };
		if (c->st && c->led[s].planner && ids->len > NOTIFY_RELOAD_AT) {
			pal_log(PAL_LOG_DEBUG, "controller.jobs_changed", "{s:i, s:s}", "shard", s,
				"load", "shard");
			load_jobs(c, &s, 1, NULL, &ls);
			if (c->led[s].planner)
				c->led[s].horizon_due = true;
		} else {
			for (unsigned i = 0; c->st && c->led[s].planner && i < ids->len; i++) {
				pal_log(PAL_LOG_DEBUG, "controller.job_changed", "{s:s, s:i}", "job",
					(const char *)ids->pdata[i], "shard", s);
				load_jobs(c, &s, 1, ids->pdata[i], &ls);
			}
			/* One check for the pass's changed jobs of the shard. */
			check_key_horizons(c, s, (const char *const *)ids->pdata, ids->len,
					   "job changed");
		}
		g_ptr_array_free(ids, TRUE);
	}
	g_free(nt.by_shard);
}

static bool ensure_db(pal_controller *c)
{
	if (c->st)
		return true;
	if (pal_mono_ms() < c->next_db_try_ms)
		return false;
	char err[1024];
	if (pal_store_open_session(c->conninfo, &c->st, err, sizeof err) == PAL_OK) {
		/* A transaction left open by a paused controller must not keep the
		 * shard row locked from its successor for long, and a successor
		 * must not queue forever behind it.  Idle transactions are
		 * bounded by the session timeout the node set
		 * (postgres.idle_in_transaction_timeout). */
		int64_t stmt = c->cfg.statement_timeout_ms > 0 ? c->cfg.statement_timeout_ms : 30000;
		if (!pal_store_set_lock_timeout(c->st, 2000, err, sizeof err) &&
		    !pal_store_set_statement_timeout(c->st, stmt, err, sizeof err) &&
		    !pal_store_listen(c->st, "palisade_apply", err, sizeof err)) {
			c->db_backoff_ms = 500;
			mset(c, "palisade_controller_db_up", NULL, 1);
			pal_log(PAL_LOG_INFO, "controller.db_connected", NULL);
			return true;
		}
		pal_store_close(c->st);
		c->st = NULL;
	}
	pal_log(PAL_LOG_WARN, "controller.db_unavailable", "{s:s, s:i}", "error", err, "retry_ms",
		c->db_backoff_ms);
	mset(c, "palisade_controller_db_up", NULL, 0);
	c->next_db_try_ms = pal_mono_ms() + c->db_backoff_ms;
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

/* A pass of the planning loop later than this is a stuck controller. */
#define CONTROLLER_STALL_MS 60000

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
	if (c->fault_plan_job)
		pal_log(PAL_LOG_WARN, "controller.fault_injection", "{s:s, s:s}", "fault",
			"planning of one job fails", "job", c->fault_plan_job);
	if (c->fault_stop_ms > 0)
		pal_log(PAL_LOG_WARN, "controller.fault_injection", "{s:s, s:i}", "fault",
			"freeing each led shard at stop takes longer", "ms", c->fault_stop_ms);
	c->next_tick_ms = pal_mono_ms();
	c->next_reload_ms = pal_mono_ms() + c->cfg.reload_interval_ms;
	while (!atomic_load(&c->stop)) {
		/* /healthz and the watchdog (health.h): a pass waits at most
		 * 100 ms; its statements are bounded by the statement timeout,
		 * and a catch-up is done in slices. */
		pal_health_beat("controller", CONTROLLER_STALL_MS);
		bool connected = false;
		apply_timing(c);
		gen = pal_coord_snapshot(c->coord, c->lead, &connected);
		if (!ensure_db(c)) {
			publish_status(c);
			pal_coord_wait(c->coord, gen, 200);
			continue;
		}
		int claimed[c->cfg.n_shards];
		size_t n_claimed = 0;
		for (int s = 0; s < c->cfg.n_shards && c->st; s++) {
			bool leading = connected && c->lead[s].leading;
			if (leading && (!c->led[s].planner || c->led[s].epoch != c->lead[s].epoch)) {
				if (claim_shard(c, s, c->lead[s].epoch))
					claimed[n_claimed++] = s;
			} else if (!leading && c->led[s].planner && !ignore_zk) {
				drop_shard(c, s, connected ? "lost leadership" : "zookeeper disconnected");
			}
		}
		if (c->st && n_claimed) {
			load_claimed(c, claimed, n_claimed);
			/* Plan them at once: a shard is useful when its first tick
			 * commits, not at the next scan interval.  Shards claimed
			 * together plan first and activate later: after a large
			 * apply each first tick would otherwise also write its
			 * max_activations_per_tick deferred activations (about
			 * 120 ms a shard, 1.9 s before the 16th shard planned at
			 * 1,000,000 jobs); the next ticks write them. */
			for (size_t i = 0; i < n_claimed && c->st; i++)
				if (c->led[claimed[i]].planner) {
					pal_planner *pl = c->led[claimed[i]].planner;
					pal_planner_hold_deferred(pl, n_claimed > 1);
					tick_shard(c, claimed[i]);
					/* (a failed tick may have dropped it: NULL) */
					if (c->led[claimed[i]].planner)
						pal_planner_hold_deferred(pl, false);
					c->led[claimed[i]].acquired_check = true;
				}
		}
		if (c->st)
			finish_takeover(c, gen);
		if (c->st && atomic_exchange(&c->horizon_check, false)) {
			pthread_mutex_lock(&c->mu);
			c->cfg.key_retention_ms = c->new_key_retention_ms;
			pthread_mutex_unlock(&c->mu);
			for (int s = 0; s < c->cfg.n_shards && c->st; s++)
				check_key_horizons(c, s, NULL, 0, "configuration reloaded");
		}
		if (c->st)
			handle_notifies(c);
		int64_t now = pal_mono_ms();
		if (c->st && (atomic_exchange(&c->reload, false) || now >= c->next_reload_ms)) {
			/* The fallback for missed notifications: the version lists of
			 * every led shard in one statement; unchanged jobs cost a
			 * comparison each. */
			load_stats ls = { 0 };
			int led[c->cfg.n_shards];
			size_t shards = 0;
			for (int s = 0; s < c->cfg.n_shards; s++)
				if (c->led[s].planner)
					led[shards++] = s;
			if (shards)
				load_jobs(c, led, shards, NULL, &ls);
			for (size_t i = 0; i < shards && c->st; i++)
				if (c->led[led[i]].horizon_due)
					check_key_horizons(c, led[i], NULL, 0, "jobs changed");
			pal_log(PAL_LOG_DEBUG, "controller.jobs_reloaded", "{s:i, s:I, s:I, s:I}",
				"shards", (int)shards, "jobs", (json_int_t)ls.jobs, "changed",
				(json_int_t)ls.changed, "ms", (json_int_t)(pal_mono_ms() - now));
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
				if (c->led[s].refused_backoff_ms && now < c->led[s].refused_until_ms)
					continue; /* its whole batch was refused: waiting */
				tick_shard(c, s);
			}
			c->next_tick_ms += c->cfg.scan_interval_ms;
			if (c->next_tick_ms < now)
				c->next_tick_ms = now + c->cfg.scan_interval_ms;
			publish_status(c);
		}
		int64_t wait = c->next_tick_ms - pal_mono_ms();
		if (wait > 100)
			wait = 100; /* notifications are polled at this granularity */
		if (wait > 0)
			pal_coord_wait(c->coord, gen, (int)wait);
	}
	write_handoffs(c);
	/* Nothing more is planned or written: the node may resign its shards
	 * now (pal_controller_quiesce) while the planners are freed - 12,500
	 * jobs a shard took the draining node 60-600 ms each, and the
	 * survivor could not win the shards until it resigned. */
	pthread_mutex_lock(&c->mu);
	c->quiesced = true;
	pthread_cond_broadcast(&c->quiesced_cv);
	pthread_mutex_unlock(&c->mu);
	for (int s = 0; s < c->cfg.n_shards; s++) {
		if (c->fault_stop_ms > 0 && c->led[s].planner)
			g_usleep((gulong)c->fault_stop_ms * 1000);
		drop_shard(c, s, "controller stopping");
	}
	pal_health_forget("controller");
	publish_status(c);
	pal_store_close(c->st);
	c->st = NULL;
	return NULL;
}

/* Frees C and what pal_controller_start() allocated for it (NULL members
 * allowed), once its thread, lock and batch are gone or were never made:
 * the start's failure path and pal_controller_stop(). */
static void controller_free(pal_controller *c)
{
	if (c->load_bad)
		g_ptr_array_free(c->load_bad, TRUE);
	if (c->over_horizon)
		g_hash_table_destroy(c->over_horizon);
	json_decref(c->status);
	free(c->fault_plan_job);
	free(c->conninfo);
	free(c->node_id);
	free(c->led);
	free(c->lead);
	free(c);
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
	c->load_bad = g_ptr_array_new_with_free_func(bad_load_free);
	c->over_horizon = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	c->lead = calloc((size_t)cfg->n_shards, sizeof *c->lead);
	/* Test only (tests/integration/test_controller_quarantine.sh): the
	 * planning of this job fails in every tick, as a bug in it would. */
	const char *fpj = getenv("PALISADE_FAULT_PLAN_JOB");
	if (fpj && *fpj)
		c->fault_plan_job = strdup(fpj);
	/* Test only (tests/integration/test_controller_drain_resign.sh): each
	 * led shard takes this long to free at stop, as 12,500 jobs do on a
	 * loaded box. */
	const char *fss = getenv("PALISADE_FAULT_SLOW_STOP_MS");
	if (fss && *fss)
		c->fault_stop_ms = atoi(fss);
	if (!c->conninfo || !c->node_id || !c->led || !c->lead) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	c->coord = coord;
	c->m = m;
	c->db_backoff_ms = 500;
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->quiesced_cv, NULL);
	declare_metrics(m);
	if (pthread_create(&c->thread, NULL, run, c)) {
		snprintf(err, errlen, "cannot start the controller thread");
		pthread_mutex_destroy(&c->mu);
		pthread_cond_destroy(&c->quiesced_cv);
		goto fail;
	}
	*out = c;
	return PAL_OK;
fail:
	controller_free(c);
	return PAL_ENOMEM;
}

void pal_controller_reload(pal_controller *c)
{
	atomic_store(&c->reload, true);
}

void pal_controller_set_key_retention(pal_controller *c, int64_t key_retention_ms)
{
	pthread_mutex_lock(&c->mu);
	c->new_key_retention_ms = key_retention_ms;
	pthread_mutex_unlock(&c->mu);
	atomic_store(&c->horizon_check, true);
}

void pal_controller_quiesce(pal_controller *c)
{
	if (!c)
		return;
	atomic_store(&c->stop, true);
	/* A pass waits up to 100 ms for ZooKeeper: the drain starts now. */
	pal_coord_wake(c->coord);
	pthread_mutex_lock(&c->mu);
	while (!c->quiesced)
		pthread_cond_wait(&c->quiesced_cv, &c->mu);
	pthread_mutex_unlock(&c->mu);
}

void pal_controller_stop(pal_controller *c)
{
	if (!c)
		return;
	atomic_store(&c->stop, true);
	pal_coord_wake(c->coord);
	pthread_join(c->thread, NULL);
	pthread_cond_destroy(&c->quiesced_cv);
	pthread_mutex_destroy(&c->mu);
	pal_plan_batch_free(&c->batch);
	controller_free(c);
}
