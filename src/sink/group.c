/*
 * group.c - group commit: apply requests that arrive close together in one
 * durable transaction, so that many effects share one COMMIT (one WAL
 * flush) instead of paying one each.
 *
 * A request thread (http.c) queues its validated request and waits.  A
 * committer thread becomes the collector of the next group when none is
 * collecting: it waits until the group holds --group-max requests or the
 * oldest of them has waited --group-wait-ms, takes them in arrival order,
 * hands the collector's role on and applies them on one pooled connection
 * (pal__sink_effect_group(): a savepoint per request, one COMMIT).  While it
 * commits, another committer collects the next group; --group-committers
 * bounds the group transactions open at once.  Every request's answer is
 * handed back only after the group's COMMIT returned, as 503
 * db_unavailable when the transaction or its COMMIT failed, or as no
 * answer at all (SINK_UNKNOWN: the connection is closed) when the
 * connection to PostgreSQL was lost after the call was sent: never a 2xx
 * for an effect that is not durable, never "not applied" for one that may
 * be.
 *
 * Two requests for one key in one group: the group's transaction already
 * holds the key's advisory lock and key row when the second runs, so the
 * second sees the first (a replay, 422, stale or the next chunk), as if the
 * two had been sent one after the other; a group open on another
 * connection holds the key against it (409 in_progress), as a transaction
 * of its own would.
 *
 * Threading: G->mu guards the queue and the flags; each waiting request has
 * its own semaphore (on its stack), posted once its answer is in place,
 * after the committer let go of G->mu: the woken request threads do not
 * queue up on the mutex the committer holds (a condition variable would
 * wake each of them into it, one at a time).  sem_post() is safe against
 * the waiter destroying the semaphore as soon as its sem_wait() returns.
 * Ownership: pal__sink_group_start() allocates the group and its threads;
 * pal__sink_group_stop() joins and frees them.  Requests and replies are
 * borrowed from the waiting request threads.
 */
#include <errno.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "palisade/log.h"
#include "sink_int.h"

#define SINK_M_GROUPS "palisade_sink_groups_total"
#define SINK_M_GROUPED "palisade_sink_group_requests_total"

typedef struct item {
	const sink_apply_req *rq;
	sink_reply *out;
	int64_t queued_ms; /* CLOCK_MONOTONIC */
	sem_t done;	   /* posted when *OUT holds the answer */
	struct item *next;
} item;

/* One committer thread and its scratch arrays of --group-max entries. */
typedef struct sink_committer {
	sink_group *g;
	pthread_t thread;
	item **batch;
	const sink_apply_req **rqs;
	sink_reply *outs;
} sink_committer;

struct sink_group {
	sink_ctx *ctx;
	int max, wait_ms, n;
	pthread_mutex_t mu;
	pthread_cond_t work_cv; /* idle committers: work queued and nobody collecting */
	pthread_cond_t fill_cv; /* the collector: the group is full, or stop */
	item *head, **tail;
	int queued;
	bool collecting;
	bool stopping;
	bool locks; /* mu and the condition variables are initialised */
	int started; /* cm[0..started) run */
	sink_committer *cm;
};

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void mono_ts(int64_t ms, struct timespec *ts)
{
	ts->tv_sec = ms / 1000;
	ts->tv_nsec = (ms % 1000) * 1000000L;
}

/* Apply the K requests of BATCH in one transaction and fill their replies
 * (called without G->mu). */
static void run_group(sink_group *g, item **batch, const sink_apply_req **rqs, sink_reply *outs,
		      int k)
{
	for (int i = 0; i < k; i++)
		rqs[i] = batch[i]->rq;
	sink_conn *c;
	char err[256];
	if (pal__sink_pool_acquire(g->ctx->pool, &c, err, sizeof err) != PAL_OK) {
		pal_log(PAL_LOG_WARN, "sink.db_unavailable", "{s:s, s:i}", "message", err, "group",
			k);
		for (int i = 0; i < k; i++) {
			memset(&outs[i], 0, sizeof outs[i]);
			outs[i].outcome = SINK_DB_ERROR;
			outs[i].status = 503;
			outs[i].body = pal__sink_body_error("db_unavailable", NULL);
		}
	} else {
		pal__sink_effect_group(c, rqs, outs, k);
		pal__sink_pool_release(g->ctx->pool, c);
	}
	pal_metric_inc(g->ctx->metrics, SINK_M_GROUPS, NULL, 1);
	pal_metric_inc(g->ctx->metrics, SINK_M_GROUPED, NULL, k);
	for (int i = 0; i < k; i++)
		*batch[i]->out = outs[i];
}

static void *committer(void *arg)
{
	sink_committer *cm = arg;
	sink_group *g = cm->g;
	pthread_mutex_lock(&g->mu);
	for (;;) {
		while ((g->queued == 0 || g->collecting) && !(g->stopping && g->queued == 0))
			pthread_cond_wait(&g->work_cv, &g->mu);
		if (g->queued == 0)
			break; /* stopping, nothing left */
		/* collect: the window runs from the oldest request's arrival, so
		 * one that waited while every committer was busy goes at once */
		g->collecting = true;
		struct timespec until;
		mono_ts(g->head->queued_ms + g->wait_ms, &until);
		while (g->queued < g->max && !g->stopping &&
		       pthread_cond_timedwait(&g->fill_cv, &g->mu, &until) != ETIMEDOUT)
			;
		int k = 0;
		while (k < g->max && g->head != NULL) {
			cm->batch[k++] = g->head;
			g->head = g->head->next;
		}
		if (g->head == NULL)
			g->tail = &g->head;
		g->queued -= k;
		g->collecting = false;
		if (g->queued > 0 || g->stopping)
			pthread_cond_signal(&g->work_cv); /* the next collector */
		pthread_mutex_unlock(&g->mu);

		run_group(g, cm->batch, cm->rqs, cm->outs, k);
		for (int i = 0; i < k; i++)
			sem_post(&cm->batch[i]->done); /* the item may be gone after this */

		pthread_mutex_lock(&g->mu);
	}
	pthread_cond_signal(&g->work_cv); /* the next one stops too */
	pthread_mutex_unlock(&g->mu);
	return NULL;
}

/* Free G and its committers' arrays (threads joined or never started). */
static void group_free(sink_group *g)
{
	for (int i = 0; i < g->n; i++) {
		free(g->cm[i].batch);
		free(g->cm[i].rqs);
		free(g->cm[i].outs);
	}
	if (g->locks) {
		pthread_cond_destroy(&g->fill_cv);
		pthread_cond_destroy(&g->work_cv);
		pthread_mutex_destroy(&g->mu);
	}
	free(g->cm);
	free(g);
}

void pal__sink_group_apply(sink_group *g, const sink_apply_req *rq, sink_reply *out)
{
	item it = {.rq = rq, .out = out, .queued_ms = mono_ms()};
	sem_init(&it.done, 0, 0);
	pthread_mutex_lock(&g->mu);
	*g->tail = &it;
	/* The wait list is intrusive, on the waiters' stacks (no allocation
	 * per request): the committer takes IT off the queue under G->mu, and
	 * G->tail off IT.next (back to &G->head, or a later item's next),
	 * before it posts IT.done, which this frame waits for below. */
	/* cppcheck-suppress autoVariables */
	g->tail = &it.next;
	g->queued++;
	if (!g->collecting)
		pthread_cond_signal(&g->work_cv);
	else if (g->queued >= g->max)
		pthread_cond_signal(&g->fill_cv);
	pthread_mutex_unlock(&g->mu);
	while (sem_wait(&it.done) != 0 && errno == EINTR)
		;
	sem_destroy(&it.done);
}

int pal__sink_group_start(sink_ctx *ctx, int max, int wait_ms, int committers, sink_group **out)
{
	*out = NULL;
	sink_group *g = calloc(1, sizeof *g);
	if (g == NULL)
		return PAL_ENOMEM;
	g->cm = calloc((size_t)committers, sizeof *g->cm);
	for (int i = 0; g->cm != NULL && i < committers; i++) {
		sink_committer *cm = &g->cm[i];
		cm->g = g;
		cm->batch = calloc((size_t)max, sizeof *cm->batch);
		cm->rqs = calloc((size_t)max, sizeof *cm->rqs);
		cm->outs = calloc((size_t)max, sizeof *cm->outs);
		if (cm->batch == NULL || cm->rqs == NULL || cm->outs == NULL) {
			g->n = i + 1;
			group_free(g);
			return PAL_ENOMEM;
		}
	}
	if (g->cm == NULL) {
		free(g);
		return PAL_ENOMEM;
	}
	g->ctx = ctx;
	g->max = max;
	g->wait_ms = wait_ms;
	g->n = committers;
	g->tail = &g->head;
	pthread_mutex_init(&g->mu, NULL);
	pthread_cond_init(&g->work_cv, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* the window ignores clock steps */
	pthread_cond_init(&g->fill_cv, &ca);
	pthread_condattr_destroy(&ca);
	g->locks = true;
	pal_metric_declare(ctx->metrics, SINK_M_GROUPS, PAL_METRIC_COUNTER,
			   "Group transactions run (--group-max above 1).");
	pal_metric_declare(ctx->metrics, SINK_M_GROUPED, PAL_METRIC_COUNTER,
			   "Apply requests applied in group transactions (divided by "
			   "palisade_sink_groups_total: the mean group size).");
	pal_metric_inc(ctx->metrics, SINK_M_GROUPS, NULL, 0);
	pal_metric_inc(ctx->metrics, SINK_M_GROUPED, NULL, 0);
	for (; g->started < committers; g->started++) {
		if (pthread_create(&g->cm[g->started].thread, NULL, committer, &g->cm[g->started]) != 0)
			break;
	}
	if (g->started == 0) {
		group_free(g);
		return PAL_ENOMEM;
	}
	*out = g;
	return PAL_OK;
}

void pal__sink_group_stop(sink_group *g)
{
	if (g == NULL)
		return;
	pthread_mutex_lock(&g->mu);
	g->stopping = true;
	pthread_cond_broadcast(&g->work_cv);
	pthread_cond_broadcast(&g->fill_cv);
	pthread_mutex_unlock(&g->mu);
	for (int i = 0; i < g->started; i++)
		pthread_join(g->cm[i].thread, NULL);
	group_free(g);
}
