/*
 * backfill.c - the instants of a backfill (include/palisade/backfill.h):
 * the schedule of each stored version (pal_schedule_*, the code the
 * controller plans with) walked over the part of the window that version
 * owns; for a version with `after`, its first upstream's instants there
 * (the candidates the dependency planner decides, sql/functions/
 * palisade_plan_after.sql), walked the same way, recursively.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include "palisade/backfill.h"
#include "palisade/jobspec.h"
#include "palisade/schedule.h"

/* A chain of first upstreams longer than this is refused (apply refuses a
 * cycle; this bounds a walk over a graph stored otherwise). */
#define MAX_DEPTH 32

static int instants(json_t *versions, json_t *upstreams, int depth, int64_t from, int64_t to,
		    int64_t max, pal_backfill_plan *pl, char *err, size_t errlen);

/* Append instant AT of VERSION to *PL (PAL_ETOOBIG beyond MAX). */
static int add(pal_backfill_plan *pl, int64_t max, pal_backfill_inst in)
{
	if ((int64_t)pl->n >= max)
		return PAL_ETOOBIG;
	if (pl->n == pl->cap) {
		size_t cap = pl->cap ? pl->cap * 2 : 256;
		pal_backfill_inst *nv = realloc(pl->v, cap * sizeof *nv);
		if (!nv)
			return PAL_ENOMEM;
		pl->v = nv;
		pl->cap = cap;
	}
	pl->v[pl->n++] = in;
	return PAL_OK;
}

/* The instants of SPEC (a version with `after`) in (lo, hi] intersected
 * with [from, to] and before its `end`: its first upstream's, from that
 * job's versions in UPSTREAMS (none when it is not there). */
static int upstream_segment(const pal_job_spec *spec, int version, json_t *upstreams,
			    int depth, int64_t lo, int64_t hi, int64_t from, int64_t to,
			    int64_t max, pal_backfill_plan *pl, char *err, size_t errlen)
{
	const char *up = spec->after[0].job;
	json_t *uv = json_object_get(upstreams, up);
	if (!json_array_size(uv))
		return PAL_OK;
	if (depth >= MAX_DEPTH) {
		snprintf(err, errlen, "the chain of upstreams (after:) above %s is longer than %d",
			 up, MAX_DEPTH);
		return PAL_EINVAL;
	}
	int64_t f = lo != INT64_MIN && lo + 1 > from ? lo + 1 : from;
	int64_t t = hi < to ? hi : to;
	if (spec->has_end && spec->end - 1 < t)
		t = spec->end - 1;
	if (f > t)
		return PAL_OK;
	pal_backfill_plan sub = { 0 };
	int rc = instants(uv, upstreams, depth + 1, f, t, max, &sub, err, errlen);
	pl->excluded += sub.excluded;
	for (size_t i = 0; !rc && i < sub.n; i++)
		rc = add(pl, max,
			 (pal_backfill_inst){ sub.v[i].at, version, spec->partitions, true });
	pal_backfill_plan_clear(&sub);
	return rc;
}

/* Instants of VER in (lo, hi] intersected with [from, to]: its schedule's,
 * or with `after` its first upstream's. */
static int segment(json_t *ver, json_t *upstreams, int depth, int64_t lo, int64_t hi,
		   int64_t from, int64_t to, int64_t max, pal_backfill_plan *pl, char *err,
		   size_t errlen)
{
	pal_job_spec spec;
	int rc = pal_job_spec_from_canonical(json_object_get(ver, "spec"), &spec, err, errlen);
	if (rc)
		return rc;
	int version = (int)json_integer_value(json_object_get(ver, "version"));
	if (spec.n_after) {
		rc = upstream_segment(&spec, version, upstreams, depth, lo, hi, from, to, max, pl,
				      err, errlen);
		pal_job_spec_clear(&spec);
		return rc;
	}
	pal_schedule *sc;
	if ((rc = pal_schedule_open(&spec, &sc, err, errlen))) {
		pal_job_spec_clear(&spec);
		return rc;
	}
	int64_t t = lo > from - 1 ? lo : from - 1, x;
	bool excl;
	while (pal_schedule_next_from(sc, lo, t, &x, &excl) == PAL_OK && x <= to && x <= hi) {
		t = x;
		if (excl) {
			pl->excluded++;
			continue;
		}
		if ((rc = add(pl, max, (pal_backfill_inst){ x, version, spec.partitions, false })))
			break;
	}
	pal_schedule_close(sc);
	pal_job_spec_clear(&spec);
	return rc;
}

static int instants(json_t *versions, json_t *upstreams, int depth, int64_t from, int64_t to,
		    int64_t max, pal_backfill_plan *pl, char *err, size_t errlen)
{
	size_t nv = json_array_size(versions), i;
	json_t *latest = json_array_get(versions, nv - 1), *v;
	json_t *act = json_array();
	json_array_foreach(versions, i, v)
	{
		if (json_is_integer(json_object_get(v, "effective_from")))
			json_array_append(act, v);
	}
	size_t na = json_array_size(act);
	int rc;
	int64_t first = na ? json_integer_value(json_object_get(json_array_get(act, 0),
								"effective_from"))
			   : INT64_MAX;
	rc = segment(latest, upstreams, depth, INT64_MIN, first, from, to, max, pl, err, errlen);
	for (size_t k = 0; k < na && !rc; k++) {
		json_t *a = json_array_get(act, k);
		int64_t lo = json_integer_value(json_object_get(a, "effective_from"));
		int64_t hi = k + 1 < na ? json_integer_value(json_object_get(json_array_get(act, k + 1),
									     "effective_from"))
					: INT64_MAX;
		if (hi > lo)
			rc = segment(a, upstreams, depth, lo, hi, from, to, max, pl, err, errlen);
	}
	json_decref(act);
	return rc;
}

int pal_backfill_instants(json_t *versions, int64_t from, int64_t to, int64_t max,
			  pal_backfill_plan *pl, char *err, size_t errlen)
{
	return instants(versions, NULL, 0, from, to, max, pl, err, errlen);
}

int pal_backfill_instants_after(json_t *versions, json_t *upstreams, int64_t from, int64_t to,
				int64_t max, pal_backfill_plan *pl, char *err, size_t errlen)
{
	return instants(versions, upstreams, 0, from, to, max, pl, err, errlen);
}

const char *pal_backfill_first_upstream(json_t *version)
{
	json_t *after = json_object_get(json_object_get(version, "spec"), "after");
	return json_string_value(json_object_get(json_array_get(after, 0), "job"));
}

void pal_backfill_plan_clear(pal_backfill_plan *pl)
{
	free(pl->v);
	*pl = (pal_backfill_plan){ 0 };
}
