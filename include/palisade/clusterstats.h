/*
 * clusterstats.h - the cluster's state as metrics: what every node reads
 * from PostgreSQL and exports as gauges, so that alerts see the backlog,
 * open tickets and the age of each job's last success whichever node they
 * scrape.
 *
 * Two layers: typed queries (src/store/stats.c, one statement each) and a
 * collector thread (src/observe/clusterstats.c) with a connection of its
 * own that runs them every interval and sets the gauges.  Every node
 * exports the same cluster-wide values; aggregate them with max() (the
 * alert rules in ops/prometheus/ do).
 */
#ifndef PALISADE_CLUSTERSTATS_H
#define PALISADE_CLUSTERSTATS_H

#include <stdint.h>
#include "palisade/err.h"
#include "palisade/metrics.h"

typedef struct pal_store pal_store;

/* Triggers waiting or in progress, per resource group and state: pending,
 * retry_wait and unknown only once due (their ready time has passed);
 * running, pausing, cancelling and paused always.  OLDEST_S is the age in
 * seconds of the oldest ready time among the due ones (0 for the others). */
typedef struct pal_backlog_row {
	char *group;
	char *state;
	int64_t count;
	double oldest_s;
} pal_backlog_row;

PAL_MUST_CHECK int pal_store_backlog(pal_store *st, pal_backlog_row **rows, int *n, char *err,
				     size_t errlen);
void pal_backlog_rows_free(pal_backlog_row *rows, int n);

/* Open tickets. */
PAL_MUST_CHECK int pal_store_open_tickets(pal_store *st, int64_t *n, char *err, size_t errlen);

/* The finish time (Unix seconds) of the latest succeeded trigger of each of
 * the first LIMIT jobs (by id), for those of them with a success scheduled
 * within the last 7 days.  Reads LIMIT jobs, whatever the cluster holds. */
typedef struct pal_last_success {
	char *job;
	double at;
} pal_last_success;

PAL_MUST_CHECK int pal_store_last_successes(pal_store *st, int limit, pal_last_success **rows,
					    int *n, char *err, size_t errlen);
void pal_last_successes_free(pal_last_success *rows, int n);

/* The collector. */
typedef struct pal_clusterstats pal_clusterstats;

typedef struct pal_clusterstats_config {
	const char *conninfo;
	int interval_ms;  /* between refreshes; default 10000 */
	int job_series;   /* jobs with a last-success gauge; default 1000, 0: none */
} pal_clusterstats_config;

/* Declare the families in M and start the thread.  The first refresh runs
 * at once.  While PostgreSQL is unreachable the values stay as last read
 * and palisade_cluster_stats_up is 0. */
PAL_MUST_CHECK int pal_clusterstats_start(const pal_clusterstats_config *cfg, pal_metrics *m,
					  pal_clusterstats **out, char *err, size_t errlen);
/* Run one refresh now on the calling thread (tests); 0 or PAL_EDB. */
int pal_clusterstats_refresh(pal_clusterstats *cs, char *err, size_t errlen);
void pal_clusterstats_stop(pal_clusterstats *cs);

#endif
