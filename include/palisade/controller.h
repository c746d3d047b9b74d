/*
 * controller.h - the trigger controller role of a node (docs/controller.md).
 *
 * One thread with its own PostgreSQL connection.  It follows the shard
 * leadership published by pal_coord, claims each won shard in PostgreSQL
 * with the epoch, keeps a pal_planner per led shard, and every scan interval
 * runs one fenced planning transaction per shard.  It LISTENs on
 * palisade_apply so new job versions are picked up within a fraction of a
 * second (a full reload every reload interval is the fallback).
 *
 * Safety does not depend on this thread being prompt: every write is fenced
 * by the epoch in PostgreSQL (G6), so a paused or partitioned controller that
 * resumes late gets 0 rows, steps down and tells pal_coord to resign.
 */
#ifndef PALISADE_CONTROLLER_H
#define PALISADE_CONTROLLER_H

#include <jansson.h>
#include "palisade/coord.h"
#include "palisade/err.h"
#include "palisade/metrics.h"

typedef struct pal_controller_config {
	const char *conninfo;
	const char *node_id;
	int n_shards;
	int scan_interval_ms;     /* default 1000 */
	int64_t overlap_s;        /* default 10 */
	int64_t lookahead_s;      /* default 5 */
	int64_t misfire_threshold_s; /* default 60 */
	int reload_interval_ms;   /* full job reload fallback, default 30000 */
	int64_t statement_timeout_ms; /* postgres.statement_timeout; default 30000 */
	/* sink.key_retention: the jobs of a shard are checked against it when
	 * the shard is acquired, when a job changes and on
	 * pal_controller_set_key_retention(); <= 0: no check */
	int64_t key_retention_ms;
} pal_controller_config;

typedef struct pal_controller pal_controller;

/* Start the controller thread (copies CFG).  COORD and M must outlive it.
 * The database need not be up: the thread retries and plans nothing
 * meanwhile (metric palisade_controller_db_up = 0).  Free with
 * pal_controller_stop(). */
PAL_MUST_CHECK int pal_controller_start(const pal_controller_config *cfg, pal_coord *coord,
					pal_metrics *m, pal_controller **out, char *err,
					size_t errlen);

/* Finish the current tick, stop planning and write the handoff rows; return
 * once nothing more will be planned or written, while the thread goes on
 * to free the shards' planners.  A drain resigns in ZooKeeper after this
 * and before pal_controller_stop(). */
void pal_controller_quiesce(pal_controller *c);

/* Finish the current tick, stop planning, close the connection, join the
 * thread and free C. */
void pal_controller_stop(pal_controller *c);

/* New timing (scan interval, overlap, lookahead, misfire threshold; the
 * reloadable controller keys), applied by the thread at its next pass. */
void pal_controller_set_timing(pal_controller *c, int scan_interval_ms, int64_t overlap_s,
			       int64_t lookahead_s, int64_t misfire_threshold_s);

/* Ask for a full reload of the jobs of every led shard (SIGHUP). */
void pal_controller_reload(pal_controller *c);

/* The node config's sink.key_retention (a reload): the thread re-checks
 * every job of its led shards against it at its next pass, even when it
 * did not change (docs/protocol.md, "How long to keep keys"). */
void pal_controller_set_key_retention(pal_controller *c, int64_t key_retention_ms);

/* {"db_up": bool, "key_horizon_exceeded": n, "shards": [{"shard", "epoch",
 * "watermark", "jobs", "last_tick_ms"}...]}; new reference.  Thread-safe. */
json_t *pal_controller_status(pal_controller *c);

#endif
