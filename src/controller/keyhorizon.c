/*
 * keyhorizon.c - the controller's key-horizon checks (docs/protocol.md, "How
 * long to keep keys"): the live jobs of a led shard are read, each one's key
 * horizon (src/config/keyhorizon.c) is held against sink.key_retention, the
 * jobs over it are logged and keep an open ticket, the tickets of jobs that
 * fit again are resolved, and over_horizon and its gauge follow.  A warning,
 * never a refusal: the jobs keep being planned.
 *
 * Runs on the controller thread (controller.c), on its connection: when a
 * shard is acquired (in slices, between claims), when jobs change, and when
 * sink.key_retention is reloaded.  A database error is returned to the
 * loop, which drops every shard; this file calls nothing of controller.c.
 */
#include <glib.h>
#include <string.h>
#include "palisade/horizoncheck.h"
#include "palisade/keyhorizon.h"
#include "palisade/log.h"
#include "palisade/store.h"
#include "palisade/timefmt.h"
#include "controller_int.h"

/* The gauge of the jobs over sink.key_retention: over_horizon's size. */
static void exceeded_gauge(pal_controller *c)
{
	if (c->m)
		pal_metric_set(c->m, "palisade_controller_jobs_key_horizon_exceeded", NULL,
			       g_hash_table_size(c->over_horizon));
}

/* Forget what over_horizon knows of shard S's jobs in SCOPE (all of them
 * for the zero scope). */
void pal_controller__forget_over_horizon(pal_controller *c, int s, const pal_horizon_scope *sc)
{
	if (sc->ids) {
		for (size_t i = 0; i < sc->n_ids; i++)
			g_hash_table_remove(c->over_horizon, sc->ids[i]);
	} else {
		GHashTableIter it;
		gpointer k, v;
		g_hash_table_iter_init(&it, c->over_horizon);
		while (g_hash_table_iter_next(&it, &k, &v))
			if (GPOINTER_TO_INT(v) == s + 1 &&
			    (!sc->after || strcmp(k, sc->after) > 0) &&
			    (!sc->upto || strcmp(k, sc->upto) <= 0))
				g_hash_table_iter_remove(&it);
	}
	exceeded_gauge(c);
}

/* A scan's violations so far (one row per job; should a scan ever yield
 * several versions of a job, adjacent, the job keeps its largest horizon). */
typedef struct horizon_scan {
	int64_t retention_ms;
	GArray *over; /* pal_horizon_violation; job_id g_strdup */
	int64_t jobs; /* versions read */
} horizon_scan;

static int horizon_row(void *arg, const char *job_id, int version, const pal_job_spec *spec)
{
	horizon_scan *hs = arg;
	pal_key_horizon h;
	pal_job_key_horizon(spec, &h);
	if (h.total_ms <= hs->retention_ms)
		return PAL_OK;
	pal_horizon_violation *last =
	    hs->over->len ? &g_array_index(hs->over, pal_horizon_violation, hs->over->len - 1)
			  : NULL;
	if (last && !strcmp(last->job_id, job_id)) {
		if (h.total_ms > last->horizon_ms) {
			last->horizon_ms = h.total_ms;
			last->version = version;
		}
		return PAL_OK;
	}
	pal_horizon_violation v = {
	    .job_id = g_strdup(job_id), .version = version, .horizon_ms = h.total_ms};
	g_array_append_val(hs->over, v);
	return PAL_OK;
}

/* Log at most this many jobs per check by name (the rest in the summary). */
#define HORIZON_LOG_MAX 100

/*
 * Check the live jobs of led shard S in SC (a slice: SC->upto is set here)
 * against sink.key_retention: log each job whose key horizon exceeds it
 * (controller.key_horizon_exceeded), keep its ticket open (and close the
 * tickets of jobs that fit again) and update the gauge.  The jobs keep being
 * planned: a warning, not a refusal (docs/protocol.md).  WHY names the
 * occasion in the log.  *LAST (a slice only): the id of its last job.  A
 * database error returns non-zero with ERR filled.
 */
static int run_check(pal_controller *c, int s, pal_horizon_scope *sc, const char *why,
		     horizon_counts *out, char **last, char *err, size_t errlen)
{
	*out = (horizon_counts){0};
	horizon_scan hs = {.retention_ms = c->cfg.key_retention_ms,
			   .over = g_array_new(FALSE, FALSE, sizeof(pal_horizon_violation))};
	char *end = NULL;
	int rc = pal_store_horizon_scan(c->st, s, sc, horizon_row, &hs, &out->jobs,
					sc->limit > 0 ? &end : NULL, err, errlen);
	/* A full slice may have more after it; a short one ends the shard,
	 * and its tickets range to the end of the key space. */
	sc->upto = sc->limit > 0 && out->jobs >= (size_t)sc->limit ? end : NULL;
	if (!rc)
		rc = pal_store_horizon_tickets(c->st, s, sc, (pal_horizon_violation *)hs.over->data,
					       hs.over->len, c->cfg.key_retention_ms, c->node_id,
					       &out->opened, &out->resolved, err, errlen);
	if (rc) {
		for (guint i = 0; i < hs.over->len; i++)
			g_free((char *)g_array_index(hs.over, pal_horizon_violation, i).job_id);
		g_array_free(hs.over, TRUE);
		g_free(end);
		sc->upto = NULL;
		return rc;
	}
	pal_controller__forget_over_horizon(c, s, sc);
	char keep[32];
	pal_fmt_duration(c->cfg.key_retention_ms, keep, sizeof keep);
	for (guint i = 0; i < hs.over->len; i++) {
		pal_horizon_violation *v = &g_array_index(hs.over, pal_horizon_violation, i);
		if (i < HORIZON_LOG_MAX) {
			char hz[32];
			pal_fmt_duration(v->horizon_ms, hz, sizeof hz);
			pal_log(
			    PAL_LOG_WARN, "controller.key_horizon_exceeded",
			    "{s:s, s:i, s:i, s:s, s:s, s:s, s:s}", "job", v->job_id, "version",
			    v->version, "shard", s, "key_horizon", hz, "key_retention", keep,
			    "checked", why, "hint",
			    "a retry or catch-up of this job may reach a service after it forgot "
			    "the key and apply the effect twice: raise sink.key_retention (and "
			    "the services' own retention) or shorten the job's retries, "
			    "catch-up window, retry.max_age or deadline, then reload");
		}
		g_hash_table_insert(c->over_horizon, (gpointer)v->job_id, GINT_TO_POINTER(s + 1));
	}
	exceeded_gauge(c);
	out->exceeded = hs.over->len;
	g_array_free(hs.over, TRUE); /* the ids now belong to over_horizon */
	sc->upto = NULL;
	if (last)
		*last = end;
	else
		g_free(end);
	return PAL_OK;
}

static void log_checked(int s, const char *job, int64_t retention_ms, const horizon_counts *n,
			int slices, const char *why)
{
	char keep[32];
	pal_fmt_duration(retention_ms, keep, sizeof keep);
	pal_log(n->exceeded ? PAL_LOG_WARN : PAL_LOG_INFO, "controller.key_horizon_checked",
		"{s:i, s:s?, s:s, s:I, s:I, s:I, s:I, s:i, s:s}", "shard", s, "job", job,
		"key_retention", keep, "versions", (json_int_t)n->jobs, "exceeded",
		(json_int_t)n->exceeded, "tickets_opened", (json_int_t)n->opened,
		"tickets_resolved", (json_int_t)n->resolved, "slices", slices, "checked", why);
}

int pal_controller__check_key_horizons(pal_controller *c, int s, const char *const *ids,
				       size_t n_ids, const char *why, bool *done, char *err,
				       size_t errlen)
{
	*done = false;
	if (c->cfg.key_retention_ms <= 0 || !c->st || !c->led[s].planner)
		return PAL_OK;
	if (!ids)
		c->led[s].horizon_due = false;
	pal_horizon_scope sc = {.ids = ids, .n_ids = n_ids};
	horizon_counts n;
	int rc = run_check(c, s, &sc, why, &n, NULL, err, errlen);
	if (rc)
		return rc;
	if (!ids || n.exceeded || n.resolved)
		log_checked(s, ids && n_ids == 1 ? ids[0] : NULL, c->cfg.key_retention_ms, &n, 1,
			    why);
	*done = true;
	return PAL_OK;
}

int pal_controller__check_acquired_slice(pal_controller *c, int s, bool *done, char *err,
					 size_t errlen)
{
	led_shard *l = &c->led[s];
	*done = false;
	if (c->cfg.key_retention_ms <= 0 || !c->st || !l->planner) {
		l->acquired_check = false;
		return PAL_OK;
	}
	pal_horizon_scope sc = {.after = l->horizon_after, .limit = PAL_HORIZON_SLICE};
	horizon_counts n;
	char *last = NULL;
	int rc = run_check(c, s, &sc, "shard acquired", &n, &last, err, errlen);
	if (rc)
		return rc;
	l->hz.jobs += n.jobs;
	l->hz.exceeded += n.exceeded;
	l->hz.opened += n.opened;
	l->hz.resolved += n.resolved;
	l->hz_slices++;
	if (n.jobs >= PAL_HORIZON_SLICE && last) {
		g_free(l->horizon_after);
		l->horizon_after = last;
		return PAL_OK;
	}
	g_free(last);
	log_checked(s, NULL, c->cfg.key_retention_ms, &l->hz, l->hz_slices, "shard acquired");
	g_free(l->horizon_after);
	l->horizon_after = NULL;
	l->hz = (horizon_counts){0};
	l->hz_slices = 0;
	l->acquired_check = false;
	l->horizon_due = false;
	*done = true;
	return PAL_OK;
}
