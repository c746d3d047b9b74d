/*
 * schedule.c - a job version's fire instants: cron + zone + DST policy,
 * bounded by start/end, with exclusion dates flagged (see schedule.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/schedule.h"
#include "palisade/timefmt.h"
#include "palisade/tz.h"

struct pal_schedule {
	pal_cron *cron;
	pal_tz *tz;
	pal_dst_policy dst;
	bool has_start, has_end;
	int64_t start, end;
	pal_exclusion *excl;
	size_t n_excl;
};

int pal_schedule_open(const pal_job_spec *s, pal_schedule **out, char *err, size_t errlen)
{
	*out = NULL;
	pal_schedule *sc = calloc(1, sizeof *sc);
	if (!sc)
		return PAL_ENOMEM;
	char e[256];
	int rc = pal_cron_parse(s->cron, &sc->cron, e, sizeof e, NULL);
	if (rc) {
		snprintf(err, errlen, "job %s: cron \"%s\": %s", s->id, s->cron, e);
		goto fail;
	}
	rc = pal_tz_open(s->timezone, &sc->tz, e, sizeof e);
	if (rc) {
		snprintf(err, errlen, "job %s: %s", s->id, e);
		goto fail;
	}
	sc->dst = s->dst;
	sc->has_start = s->has_start;
	sc->has_end = s->has_end;
	sc->start = s->start;
	sc->end = s->end;
	if (s->n_exclusions) {
		sc->excl = malloc(s->n_exclusions * sizeof *sc->excl);
		if (!sc->excl) {
			rc = PAL_ENOMEM;
			goto fail;
		}
		memcpy(sc->excl, s->exclusions, s->n_exclusions * sizeof *sc->excl);
		sc->n_excl = s->n_exclusions;
	}
	*out = sc;
	return PAL_OK;
fail:
	pal_schedule_close(sc);
	return rc;
}

void pal_schedule_close(pal_schedule *sc)
{
	if (!sc)
		return;
	pal_cron_free(sc->cron);
	pal_tz_close(sc->tz);
	free(sc->excl);
	free(sc);
}

static int64_t floor_div(int64_t a, int64_t b)
{
	return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

int pal_schedule_next(const pal_schedule *sc, int64_t after, int64_t *next, bool *excluded)
{
	if (sc->has_start && after < sc->start - 1)
		after = sc->start - 1;
	int64_t t;
	int rc = pal_cron_next(sc->cron, sc->tz, sc->dst, after, &t);
	if (rc)
		return rc;
	if (sc->has_end && t >= sc->end)
		return PAL_ENOENT;
	bool ex = false;
	if (sc->n_excl) {
		int64_t day = floor_div(pal_tz_to_local(sc->tz, t), 86400);
		for (size_t i = 0; i < sc->n_excl && !ex; i++)
			ex = day >= sc->excl[i].first_day && day <= sc->excl[i].last_day;
	}
	*next = t;
	if (excluded)
		*excluded = ex;
	return PAL_OK;
}
