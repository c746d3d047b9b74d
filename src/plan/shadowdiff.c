/*
 * shadowdiff.c - see include/palisade/shadowdiff.h.  Both lists are walked
 * once, merged; a reason is looked up by binary search in the sorted
 * arrays, so a job costs O((n_old + n_fire) log n).
 */
#include <stdio.h>
#include <stdlib.h>
#include "palisade/shadowdiff.h"
#include "palisade/schedule.h"
#include "palisade/timefmt.h"

#define QUARTER 900
#define MAX_SHIFT (14 * 3600) /* the widest gap between two zones' offsets, either way */
#define DST_NEAR (3 * 3600)

static bool has(const int64_t *a, size_t n, int64_t x)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (a[mid] == x)
			return true;
		if (a[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

static bool near_dst(const pal_tz *zone, int64_t at)
{
	return zone &&
	       pal_tz_offset_at(zone, at - DST_NEAR) != pal_tz_offset_at(zone, at + DST_NEAR);
}

/* The smallest shift d (quarter hours, the nearer first) such that at + d is
 * in MINE and not in THEIRS: the same pattern in another zone.  0: none. */
static int64_t zone_shift(int64_t at, const int64_t *mine, size_t n_mine, const int64_t *theirs,
			  size_t n_theirs)
{
	for (int64_t d = QUARTER; d <= MAX_SHIFT; d += QUARTER)
		for (int sign = -1; sign <= 1; sign += 2) {
			int64_t x = at + sign * d;
			if (has(mine, n_mine, x) && !has(theirs, n_theirs, x))
				return sign * d;
		}
	return 0;
}

static void add(json_t *diffs, size_t limit, const char *job, int64_t at, const char *only,
		const char *reason, int64_t shift)
{
	if (json_array_size(diffs) >= limit)
		return;
	char ts[32], detail[48] = "";
	pal_fmt_rfc3339(at, ts, sizeof ts);
	if (shift)
		snprintf(detail, sizeof detail, "%+.2f h", (double)shift / 3600.0);
	json_array_append_new(diffs, json_pack("{s:s, s:s, s:s, s:s, s:s}", "job", job, "at", ts,
					       "only", only, "reason", reason, "detail", detail));
}

int pal_shadow_diff_job(const char *job, const int64_t *old, size_t n_old, const pal_shadow_plan *p,
			size_t limit, json_t *diffs, pal_shadow_counts *c)
{
	/* the old instants without repeats, for the lookups the other way */
	int64_t *u = malloc((n_old ? n_old : 1) * sizeof *u);
	if (!u)
		return PAL_ENOMEM;
	size_t nu = 0;
	for (size_t i = 0; i < n_old; i++) {
		if (!nu || u[nu - 1] != old[i]) {
			u[nu++] = old[i];
			continue;
		}
		c->only_old++;
		add(diffs, limit, job, old[i], "old", "repeated", 0);
	}
	c->old += (int64_t)n_old;
	c->palisade += (int64_t)p->n_fire;
	size_t i = 0, j = 0;
	while (i < nu || j < p->n_fire) {
		if (j >= p->n_fire || (i < nu && u[i] < p->fire[j])) {
			int64_t at = u[i++], shift = 0;
			const char *why = has(p->excluded, p->n_excluded, at)	? "excluded"
					  : has(p->misfired, p->n_misfired, at) ? "misfire"
					  : near_dst(p->zone, at)		? "dst"
					  : (shift = zone_shift(at, p->fire, p->n_fire, u, nu))
					      ? "zone"
					      : "schedule";
			c->only_old++;
			add(diffs, limit, job, at, "old", why, shift);
		} else if (i >= nu || p->fire[j] < u[i]) {
			int64_t at = p->fire[j++], shift = 0;
			const char *why = near_dst(p->zone, at) ? "dst"
					  : (shift = zone_shift(at, u, nu, p->fire, p->n_fire))
					      ? "zone"
					      : "not_fired";
			c->only_palisade++;
			add(diffs, limit, job, at, "palisade", why, shift);
		} else {
			c->both++;
			i++, j++;
		}
	}
	free(u);
	return PAL_OK;
}

static bool in_ranges(json_t *ranges, int64_t at)
{
	size_t i;
	json_t *r;
	json_array_foreach(ranges, i, r)
	{
		if (at >= json_integer_value(json_array_get(r, 0)) &&
		    at <= json_integer_value(json_array_get(r, 1)))
			return true;
	}
	return false;
}

int pal_shadow_plan_job(json_t *job, int64_t from, int64_t to, size_t max, GArray *fire,
			GArray *excluded, GArray *misfired, const pal_tz **zone, char *err,
			size_t errlen)
{
	json_t *versions = json_object_get(job, "versions"),
	       *mis = json_object_get(job, "misfires");
	json_t *ret = json_object_get(job, "retired_at");
	if (json_is_integer(ret) && json_integer_value(ret) < to)
		to = json_integer_value(ret);
	size_t nv = json_array_size(versions), n = 0;
	int rc = PAL_OK;
	*zone = NULL;
	for (size_t i = 0; i < nv && !rc; i++) {
		json_t *ver = json_array_get(versions, i);
		json_t *ef = json_object_get(ver, "effective_from");
		int64_t lo = json_is_integer(ef) ? json_integer_value(ef) : INT64_MIN;
		int64_t hi = i + 1 < nv ? json_integer_value(json_object_get(
					      json_array_get(versions, i + 1), "effective_from"))
					: INT64_MAX;
		if (hi <= lo || hi < from || lo >= to)
			continue;
		pal_job_spec spec;
		if ((rc = pal_job_spec_from_canonical(json_object_get(ver, "spec"), &spec, err,
						      errlen)))
			break;
		pal_schedule *sc;
		if ((rc = pal_schedule_open(&spec, &sc, err, errlen)) == PAL_OK) {
			if (*zone)
				pal_zone_release(*zone);
			*zone = NULL;
			rc = pal_zone_acquire(spec.timezone, zone, err, errlen);
		}
		pal_job_spec_clear(&spec);
		if (rc)
			break;
		int64_t t = lo > from - 1 ? lo : from - 1, x;
		bool excl;
		while (!rc && pal_schedule_next_from(sc, lo, t, &x, &excl) == PAL_OK && x < to &&
		       x <= hi) {
			t = x;
			if (++n > max) {
				snprintf(err, errlen,
					 "more than %zu instants of job %s in the range: "
					 "compare a shorter one",
					 max, json_string_value(json_object_get(job, "job_id")));
				rc = PAL_ETOOBIG;
				break;
			}
			g_array_append_val(excl		       ? excluded
					   : in_ranges(mis, x) ? misfired
							       : fire,
					   x);
		}
		pal_schedule_close(sc);
	}
	if (rc && *zone) {
		pal_zone_release(*zone);
		*zone = NULL;
	}
	return rc;
}
