/*
 * controller_int.h - internals of the controller (controller.h), shared by
 * its two files (controller.c calls keyhorizon.c, never the other way):
 *
 *   controller.c  the controller thread: leadership -> PostgreSQL claim ->
 *                 per-shard planner -> fenced planning transactions; status,
 *                 notifications, start and stop
 *   keyhorizon.c  the key-horizon checks of the led shards against
 *                 sink.key_retention, their tickets, over_horizon
 *
 * Everything here belongs to the controller thread but the fields marked
 * "under mu" and the atomics (see struct pal_controller).
 */
#ifndef PALISADE_CONTROLLER_INT_H
#define PALISADE_CONTROLLER_INT_H

#include <glib.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include "palisade/controller.h"
#include "palisade/horizoncheck.h"
#include "palisade/planner.h"
#include "palisade/store.h"

/* What one check found (run_check); summed over the slices of a
 * shard's acquisition check. */
typedef struct horizon_counts {
	size_t jobs;	  /* in the scope (a slice's: PAL_HORIZON_SLICE when not the last) */
	int64_t exceeded; /* jobs over the retention */
	int64_t opened, resolved;
} horizon_counts;

typedef struct led_shard {
	pal_planner *planner; /* NULL when not led */
	int64_t epoch;
	int64_t watermark;
	int64_t last_tick_us; /* last planning transaction (us: an idle one is < 1 ms) */
	int64_t max_tick_us;  /* longest planning transaction since acquired */
	int64_t planned;      /* trigger rows inserted since acquired */
	bool ticked;	      /* a planning transaction committed since acquired */
	/* acquired from a handoff row: only the jobs it named are loaded, ticks
	 * are capped at its horizon until load_handoff_rest() loads the rest */
	bool rest_pending;
	/* many of its jobs changed (a large apply): check their key horizons
	 * with the next periodic reload, once, not at every notified pass */
	bool horizon_due;
	/* acquired: its key horizons are still to be checked (finish_takeover),
	 * in slices: the next after horizon_after (g_free'd; NULL: from the
	 * first), the totals of the slices done so far for the one log line */
	bool acquired_check;
	char *horizon_after;
	horizon_counts hz;
	int hz_slices;
	/* every job of its last batch was refused (not one job's fault): no
	 * tick before refused_until_ms (mono), the wait doubling to 30 s */
	int64_t refused_until_ms;
	int refused_backoff_ms;
	/* dependent jobs (depends.c): none at the last look, so the next
	 * look waits until after_next_ms (mono) */
	int64_t after_next_ms;
} led_shard;

struct pal_controller {
	pal_controller_config cfg;
	char *conninfo, *node_id;
	pal_coord *coord;
	pal_metrics *m;
	pthread_t thread;
	atomic_bool stop, reload;
	atomic_bool horizon_check; /* re-check every led shard's key horizons */

	/* owned by the thread */
	pal_store *st;
	led_shard *led;
	pal_shard_lead *lead;
	pal_plan_batch batch;
	GPtrArray *load_bad;  /* bad_load: jobs a load could not put, to quarantine */
	char *fault_plan_job; /* test only: PALISADE_FAULT_PLAN_JOB, its planning fails */
	int fault_stop_ms;    /* test only: PALISADE_FAULT_SLOW_STOP_MS, per shard freed at stop */
	/* jobs of the led shards whose key horizon exceeds sink.key_retention
	 * at their last check: id (owned) -> shard + 1 */
	GHashTable *over_horizon;
	int db_backoff_ms;
	int64_t next_db_try_ms, next_reload_ms, next_tick_ms;

	/* status snapshot and a pending timing change, under mu */
	pthread_mutex_t mu;
	json_t *status;
	bool timing_changed;
	pal_controller_config new_timing;
	int64_t new_key_retention_ms; /* from pal_controller_set_key_retention */
	/* the thread has stopped planning and written its handoff rows (under mu) */
	bool quiesced;
	pthread_cond_t quiesced_cv;
};

/* keyhorizon.c (called by controller.c only) */

/* Forget what over_horizon knows of shard S's jobs in SC (all of them for
 * the zero scope) and update the gauge. */
void pal_controller__forget_over_horizon(pal_controller *c, int s, const pal_horizon_scope *sc);
/* Check every live job of led shard S (IDS[0..N_IDS) only, when IDS is not
 * NULL) in one statement; WHY names the occasion in the log.  *DONE: a
 * check ran (the status snapshot is due).  A database error returns
 * non-zero with ERR filled. */
int pal_controller__check_key_horizons(pal_controller *c, int s, const char *const *ids,
				       size_t n_ids, const char *why, bool *done, char *err,
				       size_t errlen);
/* The next slice of the check of acquired shard S; the summary is logged
 * after the last one (controller.key_horizon_checked, "shard acquired").
 * *DONE: that was the last slice.  A database error returns non-zero with
 * ERR filled. */
int pal_controller__check_acquired_slice(pal_controller *c, int s, bool *done, char *err,
					 size_t errlen);

/* depends.c (called by controller.c after each committed tick) */

/* Plan the dependent jobs (`after:`) of led shard S in a fenced statement
 * of its own.  Fenced: the shard is dropped as by a tick.  A database
 * error is logged; the next tick tries again. */
void pal_controller__plan_after(pal_controller *c, int s);
/* Metrics of depends.c, declared with the controller's. */
void pal_controller__declare_after_metrics(pal_metrics *m);
/* controller.c: a fenced shard is dropped and its election resigned. */
void pal_controller__fenced(pal_controller *c, int s, const char *err);

#endif
