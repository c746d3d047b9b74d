/*
 * health.c - per-thread heartbeats (health.h).
 *
 * Global state: one static table (the process has one set of threads);
 * nothing allocated.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include "palisade/clock.h"
#include "palisade/health.h"

static struct {
	pthread_mutex_t mu;
	size_t n;
	struct {
		char name[32];
		int64_t last_ms, stall_ms;
		bool active;
	} t[PAL_HEALTH_MAX];
} H = { .mu = PTHREAD_MUTEX_INITIALIZER };

void pal_health_beat(const char *name, int64_t stall_ms)
{
	int64_t now = pal_mono_ms();
	pthread_mutex_lock(&H.mu);
	size_t i;
	for (i = 0; i < H.n; i++)
		if (!strcmp(H.t[i].name, name))
			break;
	if (i == H.n && H.n < PAL_HEALTH_MAX)
		snprintf(H.t[H.n++].name, sizeof H.t[0].name, "%s", name);
	if (i < H.n) {
		H.t[i].last_ms = now;
		H.t[i].stall_ms = stall_ms;
		H.t[i].active = true;
	}
	pthread_mutex_unlock(&H.mu);
}

void pal_health_forget(const char *name)
{
	pthread_mutex_lock(&H.mu);
	for (size_t i = 0; i < H.n; i++)
		if (!strcmp(H.t[i].name, name))
			H.t[i].active = false;
	pthread_mutex_unlock(&H.mu);
}

bool pal_health_check(char *why, size_t whylen)
{
	int64_t now = pal_mono_ms();
	bool ok = true;
	size_t used = 0;
	if (whylen)
		why[0] = '\0';
	pthread_mutex_lock(&H.mu);
	for (size_t i = 0; i < H.n; i++) {
		int64_t age = now - H.t[i].last_ms;
		if (!H.t[i].active || age <= H.t[i].stall_ms)
			continue;
		ok = false;
		if (used < whylen) {
			int k = snprintf(why + used, whylen - used, "%s%s silent for %lld ms (limit %lld)",
					 used ? "; " : "", H.t[i].name, (long long)age,
					 (long long)H.t[i].stall_ms);
			used += k > 0 ? (size_t)k : 0;
		}
	}
	pthread_mutex_unlock(&H.mu);
	return ok;
}

size_t pal_health_list(char names[][32], int64_t *age_ms, int64_t *limit_ms, size_t max)
{
	int64_t now = pal_mono_ms();
	size_t k = 0;
	pthread_mutex_lock(&H.mu);
	for (size_t i = 0; i < H.n && k < max; i++) {
		if (!H.t[i].active)
			continue;
		snprintf(names[k], 32, "%s", H.t[i].name);
		age_ms[k] = now - H.t[i].last_ms;
		limit_ms[k] = H.t[i].stall_ms;
		k++;
	}
	pthread_mutex_unlock(&H.mu);
	return k;
}
