/*
 * shadowreport.c - `palisade shadow diff` and POST /api/v1/shadow/diff:
 * the old system's whole record (shadowdiff.h: "job_id,RFC3339" lines, read
 * by the caller a line at a time) against palisade's plan of the jobs of a
 * scope, read from the store (pal_store_shadow_jobs_json), one job at a
 * time through pal_shadow_diff_job().  Blocks on the store; owns nothing
 * past a call but the record and the report it hands back.
 */
#include <stdlib.h>
#include <string.h>
#include <glib.h>
#include "palisade/name.h"
#include "palisade/report.h"
#include "palisade/schedule.h"
#include "palisade/shadowdiff.h"
#include "palisade/timefmt.h"

#define JOB_MAX 128 /* a job id's length, as the job files' */

struct pal_shadow_record {
	int64_t from, to;
	GHashTable *jobs; /* job id -> GArray of int64_t instants in [from, to) */
	int64_t outside;  /* well-formed lines out of the range */
};

static void free_array(gpointer a)
{
	g_array_free(a, TRUE);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

pal_shadow_record *pal_shadow_record_new(int64_t from, int64_t to)
{
	pal_shadow_record *r = g_new0(pal_shadow_record, 1);
	r->from = from;
	r->to = to;
	r->jobs = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, free_array);
	return r;
}

void pal_shadow_record_free(pal_shadow_record *r)
{
	if (!r)
		return;
	g_hash_table_destroy(r->jobs);
	g_free(r);
}

bool pal_shadow_record_line(pal_shadow_record *r, char *line)
{
	g_strstrip(line);
	if (!*line || *line == '#')
		return true;
	char *comma = strchr(line, ',');
	int64_t at;
	if (comma)
		*comma = '\0';
	if (!comma || !pal_name_ok(line, JOB_MAX) || pal_parse_rfc3339(g_strstrip(comma + 1), &at))
		return false;
	if (at < r->from || at >= r->to) {
		r->outside++;
		return true;
	}
	GArray *a = g_hash_table_lookup(r->jobs, line);
	if (!a) {
		a = g_array_new(FALSE, FALSE, sizeof(int64_t));
		g_hash_table_insert(r->jobs, g_strdup(line), a);
	}
	g_array_append_val(a, at);
	return true;
}

/* Diff every job of JOBS against its record in OLD (taken out of OLD),
 * planning at most MAX instants over them all (0: no bound; PAL_ETOOBIG
 * past it, before they are held). */
static int diff_jobs(json_t *jobs, GHashTable *old, int64_t from, int64_t to, size_t limit,
		     size_t max, json_t *diffs, pal_shadow_counts *c, char *err, size_t errlen)
{
	size_t i, used = 0;
	json_t *job;
	json_array_foreach(jobs, i, job)
	{
		const char *id = json_string_value(json_object_get(job, "job_id"));
		GArray *fire = g_array_new(FALSE, FALSE, sizeof(int64_t));
		GArray *excl = g_array_new(FALSE, FALSE, sizeof(int64_t));
		GArray *mis = g_array_new(FALSE, FALSE, sizeof(int64_t));
		const pal_tz *zone = NULL;
		int rc = pal_shadow_plan_job(job, from, to, max ? max - used : SIZE_MAX, fire, excl,
					     mis, &zone, err, errlen);
		used += fire->len + excl->len + mis->len;
		GArray *o = g_hash_table_lookup(old, id);
		if (!rc) {
			if (o)
				g_array_sort(o, cmp_i64);
			pal_shadow_plan p = {(int64_t *)fire->data,
					     fire->len,
					     (int64_t *)excl->data,
					     excl->len,
					     (int64_t *)mis->data,
					     mis->len,
					     zone};
			rc = pal_shadow_diff_job(id, o ? (int64_t *)o->data : NULL, o ? o->len : 0,
						 &p, limit, diffs, c);
			if (rc)
				snprintf(err, errlen, "out of memory");
		}
		if (zone)
			pal_zone_release(zone);
		g_array_free(fire, TRUE);
		g_array_free(excl, TRUE);
		g_array_free(mis, TRUE);
		g_hash_table_remove(old, id);
		if (rc)
			return rc;
	}
	return PAL_OK;
}

/* JOBS without those of a tenant not in TENANTS[0..n) (n 0: none go). */
static void keep_tenants(json_t *jobs, const char *const *tenants, size_t n)
{
	for (size_t i = json_array_size(jobs); n && i-- > 0;) {
		const char *t =
		    json_string_value(json_object_get(json_array_get(jobs, i), "tenant"));
		bool seen = false;
		for (size_t k = 0; t && k < n && !seen; k++)
			seen = !strcmp(tenants[k], t);
		if (!seen)
			json_array_remove(jobs, i);
	}
}

int pal_shadow_report(pal_store *st, const pal_scope *sc, const char *const *tenants,
		      size_t n_tenants, pal_shadow_record *r, size_t limit, size_t max_instants,
		      json_t **out, char *err, size_t errlen)
{
	*out = NULL;
	json_t *jobs;
	int rc = pal_store_shadow_jobs_json(st, sc, r->from, r->to, &jobs, err, errlen);
	if (rc)
		return rc;
	keep_tenants(jobs, tenants, n_tenants);
	json_t *diffs = json_array();
	pal_shadow_counts n = {0};
	/* lines of jobs palisade has not in the scope first: skipped with a
	 * scope, listed first without one (a job the import left out) */
	GHashTable *known = g_hash_table_new(g_str_hash, g_str_equal);
	size_t i;
	json_t *jb;
	json_array_foreach(jobs, i, jb)
	    g_hash_table_add(known, (char *)json_string_value(json_object_get(jb, "job_id")));
	int64_t skipped = r->outside;
	GHashTableIter it;
	gpointer k, v;
	g_hash_table_iter_init(&it, r->jobs);
	while (g_hash_table_iter_next(&it, &k, &v)) {
		GArray *a = v;
		if (g_hash_table_contains(known, k))
			continue;
		if (sc->kind != PAL_SCOPE_GLOBAL) {
			skipped += a->len;
			g_hash_table_iter_remove(&it);
			continue;
		}
		g_array_sort(a, cmp_i64);
		n.old += a->len;
		n.only_old += a->len;
		for (guint x = 0; x < a->len && json_array_size(diffs) < limit; x++) {
			char ts[32];
			pal_fmt_rfc3339(g_array_index(a, int64_t, x), ts, sizeof ts);
			json_array_append_new(diffs,
					      json_pack("{s:s, s:s, s:s, s:s, s:s}", "job",
							(char *)k, "at", ts, "only", "old",
							"reason", "unknown_job", "detail", ""));
		}
		g_hash_table_iter_remove(&it);
	}
	g_hash_table_destroy(known);
	rc = diff_jobs(jobs, r->jobs, r->from, r->to, limit, max_instants, diffs, &n, err, errlen);
	if (rc == PAL_ETOOBIG) {
		char f[32], t[32];
		pal_fmt_rfc3339(r->from, f, sizeof f);
		pal_fmt_rfc3339(r->to, t, sizeof t);
		snprintf(err, errlen,
			 "%s to %s holds more than %zu instants of the jobs compared, the bound of "
			 "one shadow diff: compare a shorter range%s",
			 f, t, max_instants,
			 sc->kind == PAL_SCOPE_JOB ? "" : ", or fewer jobs (a job, group or tenant)");
	}
	if (rc) {
		json_decref(jobs);
		json_decref(diffs);
		return rc;
	}
	char f[32], t[32];
	pal_fmt_rfc3339(r->from, f, sizeof f);
	pal_fmt_rfc3339(r->to, t, sizeof t);
	*out = json_pack("{s:s, s:s, s:b, s:I, s:{s:I, s:I, s:I, s:I, s:I}, s:I, s:o, s:b}", "from",
			 f, "to", t, "equal", !n.only_old && !n.only_palisade, "jobs",
			 (json_int_t)json_array_size(jobs), "counts", "old", (json_int_t)n.old,
			 "palisade", (json_int_t)n.palisade, "both", (json_int_t)n.both, "only_old",
			 (json_int_t)n.only_old, "only_palisade", (json_int_t)n.only_palisade,
			 "skipped_lines", (json_int_t)skipped, "differences", diffs, "truncated",
			 (json_int_t)json_array_size(diffs) < n.only_old + n.only_palisade);
	json_decref(jobs);
	return *out ? PAL_OK : PAL_ENOMEM;
}
