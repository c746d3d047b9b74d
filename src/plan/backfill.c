/*
 * backfill.c - the instants of a backfill (include/palisade/backfill.h):
 * the schedule of each stored version (pal_schedule_*, the code the
 * controller plans with) walked over the part of the window that version
 * owns.
 */
#include <stdbool.h>
#include <stdlib.h>
#include "palisade/backfill.h"
#include "palisade/jobspec.h"
#include "palisade/schedule.h"

/* Instants of VER's schedule in (lo, hi] intersected with [from, to]. */
static int segment(json_t *ver, int64_t lo, int64_t hi, int64_t from, int64_t to, int64_t max,
		   pal_backfill_plan *pl, char *err, size_t errlen)
{
	pal_job_spec spec;
	int rc = pal_job_spec_from_canonical(json_object_get(ver, "spec"), &spec, err, errlen);
	if (rc)
		return rc;
	pal_schedule *sc;
	if ((rc = pal_schedule_open(&spec, &sc, err, errlen))) {
		pal_job_spec_clear(&spec);
		return rc;
	}
	int version = (int)json_integer_value(json_object_get(ver, "version"));
	int64_t t = lo > from - 1 ? lo : from - 1, x;
	bool excl;
	while (pal_schedule_next_from(sc, lo, t, &x, &excl) == PAL_OK && x <= to && x <= hi) {
		t = x;
		if (excl) {
			pl->excluded++;
			continue;
		}
		if ((int64_t)pl->n >= max) {
			rc = PAL_ETOOBIG;
			break;
		}
		if (pl->n == pl->cap) {
			size_t cap = pl->cap ? pl->cap * 2 : 256;
			pal_backfill_inst *nv = realloc(pl->v, cap * sizeof *nv);
			if (!nv) {
				rc = PAL_ENOMEM;
				break;
			}
			pl->v = nv;
			pl->cap = cap;
		}
		pl->v[pl->n++] = (pal_backfill_inst){ x, version, spec.partitions };
	}
	pal_schedule_close(sc);
	pal_job_spec_clear(&spec);
	return rc;
}

int pal_backfill_instants(json_t *versions, int64_t from, int64_t to, int64_t max,
			  pal_backfill_plan *pl, char *err, size_t errlen)
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
	rc = segment(latest, INT64_MIN, first, from, to, max, pl, err, errlen);
	for (size_t k = 0; k < na && !rc; k++) {
		json_t *a = json_array_get(act, k);
		int64_t lo = json_integer_value(json_object_get(a, "effective_from"));
		int64_t hi = k + 1 < na ? json_integer_value(json_object_get(json_array_get(act, k + 1),
									     "effective_from"))
					: INT64_MAX;
		if (hi > lo)
			rc = segment(a, lo, hi, from, to, max, pl, err, errlen);
	}
	json_decref(act);
	return rc;
}

void pal_backfill_plan_clear(pal_backfill_plan *pl)
{
	free(pl->v);
	*pl = (pal_backfill_plan){ 0 };
}
