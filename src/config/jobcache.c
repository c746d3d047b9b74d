/*
 * jobcache.c - what the loader parses once for all the jobs it loads: time
 * zones by name, crons by normalised expression, and the calendars of
 * `calendars:` loaded so far (by name).
 *
 * A million jobs share a handful of zones and crons, and opening a zone (a
 * file read) and parsing a cron twice per job was a fifth of a load.  The
 * cache is the loader's (jobfile.c); the key checks read it through the
 * job's validation state.
 */
#include <stdlib.h>
#include <string.h>
#include <glib.h>
#include "jobfile_int.h"

static void tz_free(void *p)
{
	pal_tz_close(p);
}

static void cron_free(void *p)
{
	pal_cron_free(p);
}

static void cal_free(void *p)
{
	pal_calendar_clear(p);
	free(p);
}

void pal__job_cache_init(struct job_cache *k)
{
	k->tzs = g_hash_table_new_full(g_str_hash, g_str_equal, free, tz_free);
	k->crons = g_hash_table_new_full(g_str_hash, g_str_equal, free, cron_free);
	k->cals = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, cal_free);
}

void pal__job_cache_clear(struct job_cache *k)
{
	g_hash_table_destroy(k->tzs);
	g_hash_table_destroy(k->crons);
	g_hash_table_destroy(k->cals);
}

const pal_tz *pal__job_cached_tz(struct job_cache *k, const char *name, char *err, size_t errlen)
{
	pal_tz *tz = g_hash_table_lookup(k->tzs, name);
	char *key;

	if (tz)
		return tz;
	if (pal_tz_open_iana(name, &tz, err, errlen) != 0)
		return NULL;
	if ((key = strdup(name)))
		g_hash_table_insert(k->tzs, key, tz);
	else
		pal_tz_close(tz); /* out of memory: fail like a bad zone would */
	return key ? tz : NULL;
}

const pal_cron *pal__job_cached_cron(struct job_cache *k, const char *expr, char *err,
				     size_t errlen, int *field)
{
	pal_cron *cr = g_hash_table_lookup(k->crons, expr);
	char *key;

	if (cr)
		return cr;
	if (pal_cron_parse(expr, &cr, err, errlen, field) != 0)
		return NULL;
	if ((key = strdup(expr)))
		g_hash_table_insert(k->crons, key, cr);
	else
		pal_cron_free(cr);
	return key ? cr : NULL;
}

const pal_calendar *pal__job_loaded_calendar(struct job_cache *k, const char *name)
{
	return g_hash_table_lookup(k->cals, name);
}
