/*
 * lease.c - the lease table and the lease thread.
 *
 * The lease thread owns its own PostgreSQL connection and, every heartbeat,
 * renews every lease this node holds in ONE statement (judged by the
 * database clock).  A lease missing from the answer is lost: the executor
 * thread abandons that call without writing anything.  The time a renewal
 * was *sent* (CLOCK_MONOTONIC) moves the lease's self-stop deadline:
 * sent + lease - margin; if renewals keep failing, the executor gives up
 * the call before the database could hand the trigger to someone else.
 * After `renew_failures` consecutive failures the commit gate closes: no new
 * claims and no new side effects until a renewal succeeds.  Every third
 * heartbeat the thread also ends expired 'cancelling' triggers (whoever held
 * them died or gave up before a safe point): one short statement that skips
 * locked rows, so it never waits behind a claim or a commit.  Every 2 s,
 * from start until the node drains, it marks the node a live executor
 * (executor_nodes.seen_at), and moves the due triggers of job versions no
 * live executor node can render to 'manual' with a ticket.  Asked by the
 * executor thread (pal__lease_thread_renew_now: a NOTIFY palisade_handback
 * said a trigger claimed ahead was asked to pause), it renews at once, in
 * between heartbeats, so that the executor sees the state before the
 * trigger's instant.
 */
#include <inttypes.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include "executor_int.h"
#include "palisade/clock.h"
#include "palisade/execstore.h"
#include "palisade/log.h"

struct pal_lease_thread {
	pthread_t thread;
	atomic_bool stop;
	pal_leases *l;
	pal_executor_config cfg;
	pal_store *st;
	bool registered; /* seen once since start (its skips deleted) */
	pthread_mutex_t wmu; /* guards renew_now; wcv wakes the thread */
	pthread_cond_t wcv;  /* on CLOCK_MONOTONIC */
	bool renew_now;
};

int64_t pal__lease_margin(const pal_executor_config *cfg)
{
	int64_t m = cfg->lease_ms / 10 + 1000;
	return m > cfg->lease_ms / 2 ? cfg->lease_ms / 2 : m;
}

static void free_view(void *p)
{
	free(p);
}

int pal__leases_init(pal_leases *l, const pal_executor_config *cfg, pal_metrics *m)
{
	atomic_store(&l->renew_failures, cfg->renew_failures);
	pthread_mutex_init(&l->mu, NULL);
	l->map = g_hash_table_new_full(g_int64_hash, g_int64_equal, free, free_view);
	atomic_store(&l->gate_open, true);
	atomic_store(&l->renew_ok, true);
	atomic_store(&l->renewed_ms, pal_mono_ms());
	atomic_store(&l->draining, false);
	l->failures = 0;
	l->m = m;
	if (m) {
		pal_metric_declare(m, "palisade_executor_gate_open", PAL_METRIC_GAUGE,
				   "1 while this node may start side effects (lease renewals succeed)");
		pal_metric_declare(m, "palisade_executor_renewals_total", PAL_METRIC_COUNTER,
				   "batched lease renewals, by outcome");
		pal_metric_declare(m, "palisade_executor_held_leases", PAL_METRIC_GAUGE,
				   "leases this node holds");
		pal_metric_declare(m, "palisade_executor_renewals_skipped_total", PAL_METRIC_COUNTER,
				   "leases a renewal left for the next heartbeat because another "
				   "transaction held the trigger's row (still held, not extended)");
		pal_metric_set(m, "palisade_executor_gate_open", NULL, 1);
		pal_metric_inc(m, "palisade_executor_renewals_skipped_total", NULL, 0);
	}
	return l->map ? 0 : PAL_ENOMEM;
}

void pal__leases_free(pal_leases *l)
{
	if (l->map)
		g_hash_table_destroy(l->map);
	l->map = NULL;
	pthread_mutex_destroy(&l->mu);
}

void pal__leases_add(pal_leases *l, int64_t id, int64_t fence, int64_t sent_ms)
{
	int64_t *k = malloc(sizeof *k);
	pal_lease_view *v = calloc(1, sizeof *v);
	if (!k || !v) {
		free(k);
		free(v);
		return;
	}
	*k = id;
	v->fence = fence;
	v->sent_ms = sent_ms;
	v->state = PAL_TS_RUNNING;
	pthread_mutex_lock(&l->mu);
	g_hash_table_replace(l->map, k, v);
	pthread_mutex_unlock(&l->mu);
}

void pal__leases_set_sent(pal_leases *l, int64_t id, int64_t sent_ms)
{
	pthread_mutex_lock(&l->mu);
	pal_lease_view *v = g_hash_table_lookup(l->map, &id);
	if (v)
		v->sent_ms = sent_ms;
	pthread_mutex_unlock(&l->mu);
}

void pal__leases_remove(pal_leases *l, int64_t id)
{
	pthread_mutex_lock(&l->mu);
	g_hash_table_remove(l->map, &id);
	pthread_mutex_unlock(&l->mu);
}

bool pal__leases_get(pal_leases *l, int64_t id, pal_lease_view *out)
{
	pthread_mutex_lock(&l->mu);
	pal_lease_view *v = g_hash_table_lookup(l->map, &id);
	if (v)
		*out = *v;
	pthread_mutex_unlock(&l->mu);
	return v != NULL;
}

bool pal__leases_gate_open(pal_leases *l)
{
	return atomic_load(&l->gate_open);
}

int pal__leases_count(pal_leases *l)
{
	pthread_mutex_lock(&l->mu);
	int n = (int)g_hash_table_size(l->map);
	pthread_mutex_unlock(&l->mu);
	return n;
}


static void renewal_failed(pal_lease_thread *t, const char *err)
{
	pal_leases *l = t->l;
	l->failures++;
	atomic_store(&l->renew_ok, false);
	if (l->m)
		pal_metric_inc(l->m, "palisade_executor_renewals_total", "outcome=\"failed\"", 1);
	pal_log(PAL_LOG_WARN, "executor.renew_failed", "{s:i, s:s}", "consecutive", l->failures,
		"error", err);
	if (l->failures >= atomic_load(&l->renew_failures) && atomic_exchange(&l->gate_open, false)) {
		pal_log(PAL_LOG_ERROR, "executor.gate_closed", "{s:i}", "failures", l->failures);
		if (l->m)
			pal_metric_set(l->m, "palisade_executor_gate_open", NULL, 0);
	}
	pal_store_close(t->st);
	t->st = NULL;
}

static int by_id(const void *a, const void *b)
{
	int64_t x = ((const pal_lease_state *)a)->id, y = ((const pal_lease_state *)b)->id;
	return (x > y) - (x < y);
}

static void renew_once(pal_lease_thread *t)
{
	pal_leases *l = t->l;
	char err[1024];
	if (!t->st && pal_store_open(t->cfg.conninfo, &t->st, err, sizeof err)) {
		renewal_failed(t, err);
		return;
	}
	pthread_mutex_lock(&l->mu);
	int n = (int)g_hash_table_size(l->map);
	pal_lease_ref *refs = calloc(n ? (size_t)n : 1, sizeof *refs);
	pal_lease_state *got = calloc(n ? (size_t)n : 1, sizeof *got);
	GHashTableIter it;
	void *k, *v;
	int i = 0;
	g_hash_table_iter_init(&it, l->map);
	while (refs && g_hash_table_iter_next(&it, &k, &v) && i < n) {
		refs[i].id = *(int64_t *)k;
		refs[i].fence = ((pal_lease_view *)v)->fence;
		i++;
	}
	pthread_mutex_unlock(&l->mu);
	if (!refs || !got) {
		free(refs);
		free(got);
		return;
	}
	int64_t sent = pal_mono_ms();
	int n_out = 0;
	int rc = n ? pal_store_renew(t->st, t->cfg.node_id, t->cfg.lease_ms, refs, n, got, &n_out,
				     err, sizeof err)
		   : pal_store_ping(t->st, err, sizeof err);
	if (rc) {
		renewal_failed(t, err);
		free(refs);
		free(got);
		return;
	}
	/* Matched by binary search: a node holds hundreds of leases. */
	if (n_out > 1)
		qsort(got, (size_t)n_out, sizeof *got, by_id);
	pthread_mutex_lock(&l->mu);
	int lost = 0, busy = 0;
	for (int j = 0; j < n; j++) {
		pal_lease_view *lv = g_hash_table_lookup(l->map, &refs[j].id);
		if (!lv || lv->fence != refs[j].fence)
			continue; /* finished meanwhile */
		pal_lease_state key = {.id = refs[j].id};
		const pal_lease_state *g =
		    n_out ? bsearch(&key, got, (size_t)n_out, sizeof *got, by_id) : NULL;
		bool held = g != NULL, was_busy = g != NULL && g->busy;
		if (g)
			lv->state = g->state;
		if (held && was_busy) {
			/* Still ours, not renewed: the deadline stays where the
			 * last renewal put it; the next heartbeat tries again. */
			busy++;
		} else if (held) {
			lv->sent_ms = sent;
		} else {
			lv->lost = true;
			lost++;
		}
	}
	pthread_mutex_unlock(&l->mu);
	if (l->m) {
		pal_metric_inc(l->m, "palisade_executor_renewals_total", "outcome=\"ok\"", 1);
		pal_metric_set(l->m, "palisade_executor_held_leases", NULL, n_out);
	}
	if (lost)
		pal_log(PAL_LOG_WARN, "executor.leases_lost", "{s:i, s:i}", "lost", lost, "held", n_out);
	if (busy) {
		pal_log(PAL_LOG_DEBUG, "executor.leases_busy", "{s:i}", "busy", busy);
		if (l->m)
			pal_metric_inc(l->m, "palisade_executor_renewals_skipped_total", NULL, busy);
	}
	l->failures = 0;
	atomic_store(&l->renew_ok, true);
	atomic_store(&l->renewed_ms, pal_mono_ms());
	if (!atomic_exchange(&l->gate_open, true)) {
		pal_log(PAL_LOG_INFO, "executor.gate_open", NULL);
		if (l->m)
			pal_metric_set(l->m, "palisade_executor_gate_open", NULL, 1);
	}
	free(refs);
	free(got);
}

/* One sweep of the lease thread: FN's count logged as EVENT {KEY: n} when
 * not 0, its failure as FAILED. */
static void sweep(pal_lease_thread *t, int (*fn)(pal_store *, int64_t *, char *, size_t),
		  const char *failed, const char *event, const char *key)
{
	char err[1024];
	int64_t n = 0;
	if (!t->st)
		return;
	if (fn(t->st, &n, err, sizeof err))
		pal_log(PAL_LOG_WARN, failed, "{s:s}", "error", err);
	else if (n)
		pal_log(PAL_LOG_INFO, event, "{s:I}", key, (json_int_t)n);
}

/* Every few heartbeats, after a renewal: expired 'cancelling' triggers end
 * 'cancelled' (pal_store_reap_cancelling).  A failure only waits for the
 * next round; it is not a failed renewal. */
static void reap_once(pal_lease_thread *t)
{
	sweep(t, pal_store_reap_cancelling, "executor.reap_failed", "executor.cancelling_expired",
	      "cancelled");
}

/* How often a node marks itself seen and looks for due triggers of job
 * versions that every live executor node skips (docs/executor.md, "A
 * secret missing on one node"): their tickets come within this of their
 * due time, whatever the heartbeat. */
#define NOWHERE_EVERY_MS 2000

/* The node is a live executor (executor_nodes.seen_at), whatever its claims
 * do: a node at its in-flight limit sends none, yet is alive and will send
 * the jobs it can.  The first time, at start, its own render skips go too:
 * they were judged by the settings it had before a restart.  Not
 * while draining: it takes nothing more.  A failure only waits for the next
 * round (the first one is tried again). */
static void seen_once(pal_lease_thread *t)
{
	char err[1024];
	if (atomic_load(&t->l->draining))
		return;
	if (!t->st && pal_store_open(t->cfg.conninfo, &t->st, err, sizeof err)) {
		pal_log(PAL_LOG_WARN, "executor.seen_failed", "{s:s}", "error", err);
		return;
	}
	if (pal_store_executor_seen(t->st, t->cfg.node_id, !t->registered, err, sizeof err)) {
		pal_log(PAL_LOG_WARN, "executor.seen_failed", "{s:s}", "error", err);
		pal_store_close(t->st);
		t->st = NULL;
		return;
	}
	t->registered = true;
}

/* Due 'pending' triggers of a job version no live executor node can
 * render go 'manual' with a ticket (pal_store_nowhere_manual).  A failure
 * only waits for the next round. */
static void nowhere_once(pal_lease_thread *t)
{
	seen_once(t);
	sweep(t, pal_store_nowhere_manual, "executor.render_manual_failed",
	      "executor.render_manual", "manual");
}

/* Wait up to MS or until asked to renew or stop; true when asked to renew
 * (the request taken). */
static bool nap(pal_lease_thread *t, int64_t ms)
{
	pthread_mutex_lock(&t->wmu);
	if (!t->renew_now && !atomic_load(&t->stop) && ms > 0) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += ms / 1000;
		ts.tv_nsec += (ms % 1000) * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&t->wcv, &t->wmu, &ts);
	}
	bool asked = t->renew_now;
	t->renew_now = false;
	pthread_mutex_unlock(&t->wmu);
	return asked;
}

static void *run(void *arg)
{
	pal_lease_thread *t = arg;
	int64_t next = pal_mono_ms() + t->cfg.heartbeat_ms;
	int64_t nowhere = pal_mono_ms() + NOWHERE_EVERY_MS;
	seen_once(t); /* registered at start, whether or not it claims */
	int beats = 0;
	bool asked = false;
	while (!atomic_load(&t->stop)) {
		int64_t now = pal_mono_ms();
		if (now >= next) {
			renew_once(t);
			if (++beats % 3 == 0)
				reap_once(t);
			next = now + t->cfg.heartbeat_ms;
		} else if (asked) {
			renew_once(t); /* the heartbeat keeps its time */
		}
		if (now >= nowhere) {
			nowhere_once(t);
			nowhere = pal_mono_ms() + NOWHERE_EVERY_MS;
		}
		int64_t left = (next < nowhere ? next : nowhere) - pal_mono_ms();
		asked = nap(t, left > 0 ? left : 1);
	}
	pal_store_close(t->st);
	return NULL;
}

int pal__lease_thread_start(pal_leases *l, const pal_executor_config *cfg, pal_lease_thread **out,
			    char *err, size_t errlen)
{
	pal_lease_thread *t = calloc(1, sizeof *t);
	if (!t)
		return PAL_ENOMEM;
	t->l = l;
	t->cfg = *cfg;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&t->wcv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&t->wmu, NULL);
	if (pthread_create(&t->thread, NULL, run, t)) {
		snprintf(err, errlen, "cannot start the lease thread");
		pthread_cond_destroy(&t->wcv);
		pthread_mutex_destroy(&t->wmu);
		free(t);
		return PAL_ENOMEM;
	}
	*out = t;
	return PAL_OK;
}

void pal__lease_thread_stop(pal_lease_thread *t)
{
	if (!t)
		return;
	pthread_mutex_lock(&t->wmu);
	atomic_store(&t->stop, true);
	pthread_cond_signal(&t->wcv);
	pthread_mutex_unlock(&t->wmu);
	pthread_join(t->thread, NULL);
	pthread_cond_destroy(&t->wcv);
	pthread_mutex_destroy(&t->wmu);
	free(t);
}

void pal__lease_thread_renew_now(pal_lease_thread *t)
{
	if (!t)
		return;
	pthread_mutex_lock(&t->wmu);
	t->renew_now = true;
	pthread_cond_signal(&t->wcv);
	pthread_mutex_unlock(&t->wmu);
}
