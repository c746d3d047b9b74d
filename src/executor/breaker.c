/*
 * breaker.c - a circuit breaker per target host.  Closed: calls flow and
 * outcomes fill a ring of the last `window` results; at `min_samples` or
 * more (default: the whole window) with a failure share >= `failure_rate`
 * it opens.  Open: no calls for `open_ms`; the executor also keeps claims
 * for that host back (the open hosts go into the claim statement).  Then
 * half-open: one probe at a time; a success closes it, `probe_failures`
 * failed probes in a row open it again.
 *
 * Why not one probe and a judgement on 10 samples: a target that fails
 * half of its calls is degraded, not down.  With those settings such a
 * target's breaker spent most of its time open or half-open (a burst of 64
 * results from one claim batch crosses 80% on 10 samples often enough, and
 * each failed probe meant another 5 s open), and its triggers piled up
 * (tests/integration/test_executor_retry.sh).  A down target fails every
 * probe and is re-opened after `probe_failures` fast failures.
 *
 * Owned by one executor thread; not thread-safe.
 */
#include <glib.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/callpolicy.h"

typedef struct host {
	pal_breaker_state state;
	bool *ring;
	int n, pos, fails;
	int probe_fails; /* failed probes in a row while half-open */
	int parked;      /* calls the executor holds for the next probes */
	int64_t opened_at;
	bool probing;
	int64_t probe_started; /* a probe that never reports (abandoned call) expires */
} host;

struct pal_breakers {
	pal_breaker_config cfg;
	GHashTable *hosts; /* char* -> host* */
};

static void host_free(void *p)
{
	host *h = p;
	free(h->ring);
	free(h);
}

pal_breakers *pal_breakers_new(const pal_breaker_config *cfg)
{
	pal_breakers *b = calloc(1, sizeof *b);
	if (!b)
		return NULL;
	b->cfg = cfg ? *cfg : (pal_breaker_config){ 0 };
	if (b->cfg.window <= 0)
		b->cfg.window = 20;
	if (b->cfg.min_samples <= 0)
		b->cfg.min_samples = b->cfg.window;
	if (b->cfg.min_samples > b->cfg.window)
		b->cfg.min_samples = b->cfg.window;
	if (b->cfg.failure_rate <= 0)
		b->cfg.failure_rate = 0.8;
	if (b->cfg.open_ms <= 0)
		b->cfg.open_ms = 5000;
	if (b->cfg.probe_failures <= 0)
		b->cfg.probe_failures = 3;
	b->hosts = g_hash_table_new_full(g_str_hash, g_str_equal, free, host_free);
	return b;
}

void pal_breakers_free(pal_breakers *b)
{
	if (!b)
		return;
	g_hash_table_destroy(b->hosts);
	free(b);
}

static host *get(pal_breakers *b, const char *name)
{
	host *h = g_hash_table_lookup(b->hosts, name);
	if (h)
		return h;
	h = calloc(1, sizeof *h);
	h->ring = calloc((size_t)b->cfg.window, sizeof *h->ring);
	g_hash_table_insert(b->hosts, strdup(name), h);
	return h;
}

static void advance(pal_breakers *b, host *h, int64_t now)
{
	if (h->state == PAL_BREAKER_OPEN && now - h->opened_at >= b->cfg.open_ms) {
		h->state = PAL_BREAKER_HALF_OPEN;
		h->probing = false;
		h->probe_fails = 0;
	}
}

/* A half-open host's probe is in flight (and not older than open_ms: a
 * probe whose call was abandoned without an outcome must not block the
 * host forever). */
static bool probe_pending(const pal_breakers *b, const host *h, int64_t now)
{
	return h->probing && now - h->probe_started < b->cfg.open_ms;
}

static void reset(host *h, int window)
{
	memset(h->ring, 0, (size_t)window * sizeof *h->ring);
	h->n = h->pos = h->fails = 0;
}

bool pal_breaker_allow(pal_breakers *b, const char *name, int64_t now)
{
	host *h = get(b, name);
	advance(b, h, now);
	switch (h->state) {
	case PAL_BREAKER_CLOSED:
		return true;
	case PAL_BREAKER_OPEN:
		return false;
	case PAL_BREAKER_HALF_OPEN:
	default:
		if (probe_pending(b, h, now))
			return false;
		h->probing = true;
		h->probe_started = now;
		return true;
	}
}

void pal_breaker_record(pal_breakers *b, const char *name, bool failed, int64_t now)
{
	host *h = get(b, name);
	advance(b, h, now);
	if (h->state == PAL_BREAKER_HALF_OPEN) {
		h->probing = false;
		if (failed) {
			if (++h->probe_fails >= b->cfg.probe_failures) {
				h->state = PAL_BREAKER_OPEN;
				h->opened_at = now;
			}
		} else {
			h->state = PAL_BREAKER_CLOSED;
			reset(h, b->cfg.window);
		}
		return;
	}
	if (h->state == PAL_BREAKER_OPEN)
		return; /* a call that started before it opened */
	if (h->n == b->cfg.window)
		h->fails -= h->ring[h->pos];
	else
		h->n++;
	h->ring[h->pos] = failed;
	h->fails += failed;
	h->pos = (h->pos + 1) % b->cfg.window;
	if (h->n >= b->cfg.min_samples && (double)h->fails / h->n >= b->cfg.failure_rate) {
		h->state = PAL_BREAKER_OPEN;
		h->opened_at = now;
		reset(h, b->cfg.window);
	}
}

void pal_breaker_parked(pal_breakers *b, const char *name, int delta)
{
	host *h = get(b, name);
	h->parked += delta;
	if (h->parked < 0)
		h->parked = 0;
}

int pal_breaker_parked_count(pal_breakers *b, const char *name)
{
	return get(b, name)->parked;
}

pal_breaker_state pal_breaker_state_of(pal_breakers *b, const char *name, int64_t now)
{
	host *h = get(b, name);
	advance(b, h, now);
	return h->state;
}

char **pal_breakers_open_hosts(pal_breakers *b, int64_t now)
{
	GPtrArray *a = g_ptr_array_new();
	GHashTableIter it;
	void *k, *v;
	g_hash_table_iter_init(&it, b->hosts);
	while (g_hash_table_iter_next(&it, &k, &v)) {
		host *h = v;
		advance(b, h, now);
		/* Open, or half-open with its one probe in flight or calls
		 * parked for the next ones: claim nothing for it now. */
		if (h->state == PAL_BREAKER_CLOSED ||
		    (h->state == PAL_BREAKER_HALF_OPEN && !probe_pending(b, h, now) && !h->parked))
			continue;
		g_ptr_array_add(a, g_strdup(k));
	}
	g_ptr_array_add(a, NULL);
	return (char **)g_ptr_array_free(a, FALSE);
}
