/*
 * periodic.c - a thread that calls a function every interval
 * (include/palisade/periodic.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>
#include "palisade/periodic.h"

struct pal_periodic {
	void (*fn)(void *);
	void *arg;
	int64_t interval_ms;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop;
};

static void *run(void *arg)
{
	pal_periodic *p = arg;
	pthread_mutex_lock(&p->mu);
	while (!p->stop) {
		pthread_mutex_unlock(&p->mu);
		p->fn(p->arg);
		pthread_mutex_lock(&p->mu);
		struct timespec until;
		clock_gettime(CLOCK_MONOTONIC, &until);
		int64_t ns = until.tv_nsec + p->interval_ms * 1000000;
		until.tv_sec += ns / 1000000000;
		until.tv_nsec = ns % 1000000000;
		while (!p->stop && pthread_cond_timedwait(&p->cv, &p->mu, &until) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

int pal_periodic_start(void (*fn)(void *), void *arg, int64_t interval_ms, pal_periodic **out)
{
	*out = NULL;
	pal_periodic *p = calloc(1, sizeof *p);
	if (!p)
		return PAL_ENOMEM;
	p->fn = fn;
	p->arg = arg;
	p->interval_ms = interval_ms > 0 ? interval_ms : 1000;
	pthread_mutex_init(&p->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->cv, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&p->th, NULL, run, p) != 0) {
		pthread_cond_destroy(&p->cv);
		pthread_mutex_destroy(&p->mu);
		free(p);
		return PAL_EIO;
	}
	*out = p;
	return PAL_OK;
}

void pal_periodic_stop(pal_periodic *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = true;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	pthread_join(p->th, NULL);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p);
}
