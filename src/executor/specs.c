/*
 * specs.c - cache of job versions for the executor, in their compact call
 * form (callspec.h).  Versions are
 * immutable (docs/schema.md), so an entry never goes stale; what bounds the
 * cache is memory (executor.spec_cache entries, a second-chance sweep; an
 * entry a call points at is never freed).  Owned by the executor thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "executor_int.h"
#include "palisade/execstore.h"
#include "palisade/schedule.h"

static void entry_free(void *p)
{
	spec_entry *e = p;
	free(e->call);
	pal_zone_release(e->tz);
	free(e);
}

static void cache_key(char *key, size_t len, const char *job, int v)
{
	snprintf(key, len, "%s#%d", job, v);
}

void pal__spec_cache_init(spec_cache *c, size_t cap)
{
	c->map = g_hash_table_new_full(g_str_hash, g_str_equal, free, entry_free);
	c->cap = cap;
	c->sweep_at = cap;
	c->evicted = 0;
	c->read_us = 0;
}

static gboolean unused_unheld(gpointer key, gpointer value, gpointer ud)
{
	(void)key;
	(void)ud;
	spec_entry *e = value;
	if (e->holds > 0 || e->used) {
		e->used = false;
		return FALSE;
	}
	return TRUE;
}

static gboolean unheld_over(gpointer key, gpointer value, gpointer ud)
{
	(void)key;
	size_t *over = ud;
	spec_entry *e = value;
	if (*over == 0 || e->holds > 0)
		return FALSE;
	(*over)--;
	return TRUE;
}

/* Second chance: what was not looked up since the last sweep goes; if that
 * leaves more than 3/4 of the cap (a working set as large as the cache),
 * unheld entries go in table order down to 3/4.  Each sweep frees a
 * quarter of the cap or more unless calls hold it, and the next one waits
 * until the cache has grown by a quarter of the cap again, so the sweeps
 * cost O(1) per insert. */
static void sweep(spec_cache *c)
{
	size_t before = g_hash_table_size(c->map);
	g_hash_table_foreach_remove(c->map, unused_unheld, NULL);
	size_t keep = c->cap - c->cap / 4, n = g_hash_table_size(c->map);
	if (n > keep) {
		size_t over = n - keep;
		g_hash_table_foreach_remove(c->map, unheld_over, &over);
	}
	n = g_hash_table_size(c->map);
	c->evicted += before - n;
	size_t quarter = c->cap / 4 > 0 ? c->cap / 4 : 1;
	c->sweep_at = n + quarter > c->cap ? n + quarter : c->cap;
}

void pal__spec_cache_insert(spec_cache *c, const char *job, int v, spec_entry *e)
{
	char key[192];
	cache_key(key, sizeof key, job, v);
	if (g_hash_table_contains(c->map, key)) {
		entry_free(e);
		return;
	}
	if (c->cap && g_hash_table_size(c->map) >= c->sweep_at)
		sweep(c);
	e->used = true; /* a new entry survives the next sweep's first pass */
	g_hash_table_insert(c->map, strdup(key), e);
}

void pal__spec_release(spec_cache *c, const spec_entry *e)
{
	(void)c;
	if (e && e->holds > 0)
		((spec_entry *)e)->holds--;
}

void pal__spec_cache_free(spec_cache *c)
{
	if (c->map)
		g_hash_table_destroy(c->map);
	c->map = NULL;
}

/* A cache entry for CALL (taken over); NULL when out of memory. */
static spec_entry *entry_new(pal_call_spec *call)
{
	spec_entry *e = calloc(1, sizeof *e);
	if (!e) {
		free(call);
		return NULL;
	}
	e->call = call;
	char terr[256];
	if (pal_zone_acquire(call->timezone, &e->tz, terr, sizeof terr))
		e->tz = NULL; /* {scheduled_date} falls back to UTC */
	return e;
}

void pal__spec_want_free(spec_want *w)
{
	free(w->jobs);
	free(w->vers);
	*w = (spec_want){ 0 };
}

int pal__spec_missing(spec_cache *c, const pal_claimed *rows, int n, spec_want *w)
{
	*w = (spec_want){ 0 };
	char key[192];
	/* Most batches find every version cached: allocate nothing for them. */
	int first = 0;
	for (; first < n; first++) {
		cache_key(key, sizeof key, rows[first].job_id, rows[first].version);
		if (!g_hash_table_contains(c->map, key))
			break;
	}
	if (first >= n)
		return 0;
	w->jobs = calloc((size_t)(n - first), sizeof *w->jobs);
	w->vers = calloc((size_t)(n - first), sizeof *w->vers);
	if (!w->jobs || !w->vers) {
		pal__spec_want_free(w);
		return 0; /* pal__spec_get reads them one by one */
	}
	GHashTable *asked = g_hash_table_new_full(g_str_hash, g_str_equal, free, NULL);
	for (int i = first; i < n; i++) {
		cache_key(key, sizeof key, rows[i].job_id, rows[i].version);
		if (g_hash_table_contains(c->map, key) || g_hash_table_contains(asked, key))
			continue;
		g_hash_table_add(asked, strdup(key));
		w->jobs[w->n] = rows[i].job_id;
		w->vers[w->n++] = rows[i].version;
	}
	g_hash_table_destroy(asked);
	return w->n;
}

void pal__spec_fill(spec_cache *c, const spec_want *w, pal_call_spec **calls)
{
	for (int i = 0; i < w->n; i++) {
		spec_entry *e = calls[i] ? entry_new(calls[i]) : NULL;
		if (e)
			pal__spec_cache_insert(c, w->jobs[i], w->vers[i], e);
		calls[i] = NULL;
	}
}

const spec_entry *pal__spec_get(spec_cache *c, pal_store *st, const char *job, int v, char *err,
				size_t errlen, bool *transient)
{
	*transient = true;
	char key[192];
	cache_key(key, sizeof key, job, v);
	spec_entry *e = g_hash_table_lookup(c->map, key);
	if (e) {
		e->used = true;
		e->holds++;
		return e;
	}
	if (!st) {
		snprintf(err, errlen, "no database connection");
		return NULL;
	}
	pal_call_spec *call;
	int64_t t0 = pal_mono_us();
	int rc = pal_store_call_spec(st, job, v, &call, err, errlen);
	if (rc) {
		c->read_us += pal_mono_us() - t0;
		*transient = rc != PAL_ENOENT && rc != PAL_EINVAL;
		return NULL;
	}
	*transient = false;
	e = entry_new(call);
	c->read_us += pal_mono_us() - t0;
	if (!e) {
		*transient = true;
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	pal__spec_cache_insert(c, job, v, e);
	e = g_hash_table_lookup(c->map, key);
	e->used = true;
	e->holds++;
	return e;
}
