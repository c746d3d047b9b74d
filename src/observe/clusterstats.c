/*
 * clusterstats.c - the collector of clusterstats.h: a periodic thread
 * (util/periodic.c) that every interval reads the backlog, the open
 * tickets and the jobs' last successes on a connection of its own and sets
 * the palisade_cluster_* gauges.  A label set seen before and absent now is
 * set to 0 (the registry never forgets a sample, and a stale value would
 * keep an alert firing).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <glib.h>
#include "palisade/clock.h"
#include "palisade/clusterstats.h"
#include "palisade/log.h"
#include "palisade/periodic.h"
#include "palisade/store.h"

struct pal_clusterstats {
	pal_clusterstats_config cfg;
	char *conninfo;
	pal_metrics *m;
	pal_store *st;	  /* the collector's own connection, opened on demand */
	pal_periodic *th; /* calls collect every cfg.interval_ms */
	bool was_down;
	/* label strings set at the last refresh, per family */
	GHashTable *shown_backlog, *shown_oldest, *shown_success;
};

static const char F_BACKLOG[] = "palisade_cluster_backlog_triggers";
static const char F_OLDEST[] = "palisade_cluster_backlog_oldest_seconds";
static const char F_TICKETS[] = "palisade_cluster_tickets_open";
static const char F_SUCCESS[] = "palisade_cluster_job_last_success_timestamp_seconds";
static const char F_UP[] = "palisade_cluster_stats_up";
static const char F_TOOK[] = "palisade_cluster_stats_refresh_seconds";

static void declare(pal_metrics *m)
{
	pal_metric_declare(m, F_BACKLOG, PAL_METRIC_GAUGE,
			   "triggers due or in progress, by resource group and state (cluster-wide, "
			   "read from PostgreSQL)");
	pal_metric_declare(m, F_OLDEST, PAL_METRIC_GAUGE,
			   "age of the oldest due trigger that waits to run, by resource group");
	pal_metric_declare(m, F_TICKETS, PAL_METRIC_GAUGE, "open tickets (cluster-wide)");
	pal_metric_declare(
	    m, F_SUCCESS, PAL_METRIC_GAUGE,
	    "finish time of the job's latest succeeded trigger (Unix seconds; of the "
	    "first metrics.job_series jobs by id, those with a success in the last "
	    "7 days)");
	pal_metric_declare(m, F_UP, PAL_METRIC_GAUGE,
			   "1 when the last cluster-stats refresh read PostgreSQL");
	pal_metric_declare(m, F_TOOK, PAL_METRIC_GAUGE, "duration of the last cluster-stats refresh");
}

/* Set FAMILY{lab} = v for each label in NOW (owned, moved into the table),
 * and 0 for each label of *SHOWN not in NOW; NOW becomes *SHOWN. */
static void zero_missing(pal_metrics *m, const char *family, GHashTable **shown, GHashTable *now)
{
	if (*shown) {
		GHashTableIter it;
		gpointer key;
		g_hash_table_iter_init(&it, *shown);
		while (g_hash_table_iter_next(&it, &key, NULL))
			if (!g_hash_table_contains(now, key))
				pal_metric_set(m, family, key, 0);
		g_hash_table_destroy(*shown);
	}
	*shown = now;
}

static GHashTable *label_set(void)
{
	return g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
}

static int refresh_backlog(pal_clusterstats *cs, char *err, size_t errlen)
{
	pal_backlog_row *rows;
	int n;
	int rc = pal_store_backlog(cs->st, &rows, &n, err, errlen);
	if (rc)
		return rc;
	GHashTable *now = label_set(), *oldest_now = label_set();
	GHashTable *oldest = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	for (int i = 0; i < n; i++) {
		char *g = pal_metric_label_pair("group", rows[i].group);
		char *s = pal_metric_label_pair("state", rows[i].state);
		char *lab = g_strdup_printf("%s,%s", g, s);
		pal_metric_set(cs->m, F_BACKLOG, lab, (double)rows[i].count);
		g_hash_table_add(now, lab);
		double *o = g_hash_table_lookup(oldest, g);
		if (!o) {
			o = g_new0(double, 1);
			g_hash_table_insert(oldest, g_strdup(g), o);
		}
		if (rows[i].oldest_s > *o)
			*o = rows[i].oldest_s;
		g_free(g);
		g_free(s);
	}
	GHashTableIter it;
	gpointer key, val;
	g_hash_table_iter_init(&it, oldest);
	while (g_hash_table_iter_next(&it, &key, &val)) {
		pal_metric_set(cs->m, F_OLDEST, key, *(double *)val);
		g_hash_table_add(oldest_now, g_strdup(key));
	}
	g_hash_table_destroy(oldest);
	zero_missing(cs->m, F_BACKLOG, &cs->shown_backlog, now);
	zero_missing(cs->m, F_OLDEST, &cs->shown_oldest, oldest_now);
	pal_backlog_rows_free(rows, n);
	return PAL_OK;
}

static int refresh_successes(pal_clusterstats *cs, char *err, size_t errlen)
{
	if (cs->cfg.job_series <= 0)
		return PAL_OK;
	pal_last_success *rows;
	int n;
	int rc = pal_store_last_successes(cs->st, cs->cfg.job_series, &rows, &n, err, errlen);
	if (rc)
		return rc;
	GHashTable *now = label_set();
	for (int i = 0; i < n; i++) {
		char *lab = pal_metric_label_pair("job", rows[i].job);
		pal_metric_set(cs->m, F_SUCCESS, lab, rows[i].at);
		g_hash_table_add(now, lab);
	}
	zero_missing(cs->m, F_SUCCESS, &cs->shown_success, now);
	pal_last_successes_free(rows, n);
	return PAL_OK;
}

int pal_clusterstats_refresh(pal_clusterstats *cs, char *err, size_t errlen)
{
	int64_t t0 = pal_mono_ms();
	if (!cs->st) {
		if (pal_store_open(cs->conninfo, &cs->st, err, errlen))
			goto down;
		if (pal_store_set_statement_timeout(cs->st, 5000, err, errlen))
			goto down;
	}
	int64_t tickets = 0;
	if (refresh_backlog(cs, err, errlen) || pal_store_open_tickets(cs->st, &tickets, err, errlen) ||
	    refresh_successes(cs, err, errlen))
		goto down;
	pal_metric_set(cs->m, F_TICKETS, NULL, (double)tickets);
	pal_metric_set(cs->m, F_UP, NULL, 1);
	pal_metric_set(cs->m, F_TOOK, NULL, (double)(pal_mono_ms() - t0) / 1000.0);
	if (cs->was_down)
		pal_log(PAL_LOG_INFO, "clusterstats.recovered", "{s:I}", "took_ms",
			(json_int_t)(pal_mono_ms() - t0));
	cs->was_down = false;
	return PAL_OK;
down:
	pal_store_close(cs->st);
	cs->st = NULL;
	pal_metric_set(cs->m, F_UP, NULL, 0);
	if (!cs->was_down)
		pal_log(PAL_LOG_WARN, "clusterstats.refresh_failed", "{s:s}", "error", err);
	cs->was_down = true;
	return PAL_EDB;
}

static void collect(void *arg)
{
	char err[512] = "";
	(void)pal_clusterstats_refresh(arg, err, sizeof err);
}

int pal_clusterstats_start(const pal_clusterstats_config *cfg, pal_metrics *m,
			   pal_clusterstats **out, char *err, size_t errlen)
{
	*out = NULL;
	pal_clusterstats *cs = calloc(1, sizeof *cs);
	if (!cs)
		return PAL_ENOMEM;
	cs->cfg = *cfg;
	if (cs->cfg.interval_ms <= 0)
		cs->cfg.interval_ms = 10000;
	cs->conninfo = strdup(cfg->conninfo ? cfg->conninfo : "");
	cs->m = m;
	declare(m);
	int rc = pal_periodic_start(collect, cs, cs->cfg.interval_ms, &cs->th);
	if (rc) {
		snprintf(err, errlen, "cannot start the cluster-stats thread");
		pal_clusterstats_stop(cs);
		return rc;
	}
	*out = cs;
	return PAL_OK;
}

void pal_clusterstats_stop(pal_clusterstats *cs)
{
	if (!cs)
		return;
	pal_periodic_stop(cs->th);
	pal_store_close(cs->st);
	if (cs->shown_backlog)
		g_hash_table_destroy(cs->shown_backlog);
	if (cs->shown_oldest)
		g_hash_table_destroy(cs->shown_oldest);
	if (cs->shown_success)
		g_hash_table_destroy(cs->shown_success);
	free(cs->conninfo);
	free(cs);
}
