/*
 * specs.c - cache of job version specs for the executor.  Versions are
 * immutable (docs/schema.md), so an entry never goes stale; the cache lives
 * as long as the executor.  Owned by the executor thread.
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
	pal_job_spec_clear(&e->spec);
	pal_zone_release(e->tz);
	free(e);
}

void pal__spec_cache_init(spec_cache *c)
{
	c->map = g_hash_table_new_full(g_str_hash, g_str_equal, free, entry_free);
}

void pal__spec_cache_free(spec_cache *c)
{
	if (c->map)
		g_hash_table_destroy(c->map);
	c->map = NULL;
}

static void cache_key(char *key, size_t len, const char *job, int v)
{
	snprintf(key, len, "%s#%d", job, v);
}

/* A cache entry compiled from the canonical spec J (not consumed); NULL
 * with ERR when it does not decode. */
static spec_entry *entry_new(json_t *j, char *err, size_t errlen)
{
	spec_entry *e = calloc(1, sizeof *e);
	if (!e) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (pal_job_spec_from_canonical(j, &e->spec, err, errlen)) {
		free(e);
		return NULL;
	}
	char terr[256];
	if (pal_zone_acquire(e->spec.timezone, &e->tz, terr, sizeof terr))
		e->tz = NULL; /* {scheduled_date} falls back to UTC */
	return e;
}

void pal__spec_prefetch(spec_cache *c, pal_store *st, const pal_claimed *rows, int n)
{
	if (!st || n <= 1)
		return;
	const char **jobs = calloc((size_t)n, sizeof *jobs);
	int *vers = calloc((size_t)n, sizeof *vers);
	json_t **specs = calloc((size_t)n, sizeof *specs);
	GHashTable *asked = g_hash_table_new_full(g_str_hash, g_str_equal, free, NULL);
	int m = 0;
	char key[192], err[256];
	for (int i = 0; jobs && vers && specs && i < n; i++) {
		cache_key(key, sizeof key, rows[i].job_id, rows[i].version);
		if (g_hash_table_contains(c->map, key) || g_hash_table_contains(asked, key))
			continue;
		g_hash_table_add(asked, strdup(key));
		jobs[m] = rows[i].job_id;
		vers[m++] = rows[i].version;
	}
	if (m > 0 && !pal_store_version_specs(st, m, jobs, vers, specs, err, sizeof err)) {
		for (int i = 0; i < m; i++) {
			spec_entry *e = specs[i] ? entry_new(specs[i], err, sizeof err) : NULL;
			if (e) {
				cache_key(key, sizeof key, jobs[i], vers[i]);
				g_hash_table_insert(c->map, strdup(key), e);
			}
			json_decref(specs[i]);
		}
	}
	g_hash_table_destroy(asked);
	free(jobs);
	free(vers);
	free(specs);
}

const spec_entry *pal__spec_get(spec_cache *c, pal_store *st, const char *job, int v, char *err,
				size_t errlen, bool *transient)
{
	*transient = true;
	char key[192];
	cache_key(key, sizeof key, job, v);
	spec_entry *e = g_hash_table_lookup(c->map, key);
	if (e)
		return e;
	if (!st) {
		snprintf(err, errlen, "no database connection");
		return NULL;
	}
	json_t *j;
	int rc = pal_store_version_spec(st, job, v, &j, err, errlen);
	if (rc) {
		*transient = rc != PAL_ENOENT && rc != PAL_EINVAL;
		return NULL;
	}
	*transient = false;
	e = entry_new(j, err, errlen);
	json_decref(j);
	if (!e)
		return NULL;
	g_hash_table_insert(c->map, strdup(key), e);
	return e;
}
