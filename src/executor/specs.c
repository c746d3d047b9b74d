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

static void entry_free(void *p)
{
	spec_entry *e = p;
	pal_job_spec_clear(&e->spec);
	pal_tz_close(e->tz);
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

const spec_entry *pal__spec_get(spec_cache *c, pal_store *st, const char *job, int v, char *err,
				size_t errlen, bool *transient)
{
	*transient = true;
	char key[192];
	snprintf(key, sizeof key, "%s#%d", job, v);
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
	e = calloc(1, sizeof *e);
	if (!e) {
		json_decref(j);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	*transient = false;
	rc = pal_job_spec_from_canonical(j, &e->spec, err, errlen);
	json_decref(j);
	if (rc) {
		free(e);
		return NULL;
	}
	char terr[256];
	if (pal_tz_open(e->spec.timezone, &e->tz, terr, sizeof terr))
		e->tz = NULL; /* {scheduled_date} falls back to UTC */
	g_hash_table_insert(c->map, strdup(key), e);
	return e;
}
