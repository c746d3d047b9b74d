/*
 * schedule.c - a job version's fire instants: cron + zone + DST policy,
 * bounded by start/end, with exclusion dates flagged (see schedule.h).
 *
 * Shared schedules (pal_schedule_acquire): three process-wide tables under
 * one mutex - compiled crons by expression, zones by name, schedules by the
 * key of everything they hold - each entry reference-counted and freed with
 * its last reference.  A controller of 1M jobs in six zones then holds six
 * zone tables (a TZif table is ~3 KiB) and one pal_schedule per distinct
 * (cron, zone, policy, bounds) instead of one of each per job version.
 * pal_schedule_open() still builds a private one (verify, plan diff, ops).
 */
#include <glib.h>
#include <inttypes.h>
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
	pal_cal_set *cals; /* NULL: no shared calendar (calendar.h) */
	/* shared ones only (pal_schedule_acquire) */
	unsigned refs;
	char *key;		 /* in `schedules`; owned */
	struct shared *cron_ref, *tz_ref; /* entries holding cron and tz */
};

/* One compiled cron or zone in the shared tables. */
struct shared {
	char *name; /* the table key, owned */
	void *obj;  /* pal_cron * or pal_tz * */
	unsigned refs;
};

static GMutex shared_mu;
static GHashTable *crons, *zones, *schedules; /* created on first use */

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
	if ((rc = pal_cal_set_open(s->calendars, s->n_calendars, &sc->cals, e, sizeof e))) {
		snprintf(err, errlen, "job %s: %s", s->id, e);
		goto fail;
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
	pal_cal_set_close(sc->cals);
	free(sc);
}

static void tables_init(void)
{
	if (!crons) {
		crons = g_hash_table_new(g_str_hash, g_str_equal);
		zones = g_hash_table_new(g_str_hash, g_str_equal);
		schedules = g_hash_table_new(g_str_hash, g_str_equal);
	}
}

/* Entry for NAME in TABLE, opened by OPEN when absent; refs + 1.  Under the mutex. */
static int shared_get(GHashTable *table, const char *name, bool is_cron, struct shared **out,
		      char *e, size_t elen)
{
	struct shared *sh = g_hash_table_lookup(table, name);
	if (!sh) {
		void *obj = NULL;
		int rc = is_cron ? pal_cron_parse(name, (pal_cron **)&obj, e, elen, NULL)
				 : pal_tz_open(name, (pal_tz **)&obj, e, elen);
		if (rc)
			return rc;
		sh = calloc(1, sizeof *sh);
		if (!sh || !(sh->name = strdup(name))) {
			free(sh);
			if (is_cron)
				pal_cron_free(obj);
			else
				pal_tz_close(obj);
			return PAL_ENOMEM;
		}
		sh->obj = obj;
		g_hash_table_insert(table, sh->name, sh);
	}
	sh->refs++;
	*out = sh;
	return PAL_OK;
}

static void shared_put(GHashTable *table, struct shared *sh, bool is_cron)
{
	if (!sh || --sh->refs)
		return;
	g_hash_table_remove(table, sh->name);
	if (is_cron)
		pal_cron_free(sh->obj);
	else
		pal_tz_close(sh->obj);
	free(sh->name);
	free(sh);
}

static void schedule_free(pal_schedule *sc)
{
	free(sc->excl);
	pal_cal_set_close(sc->cals);
	free(sc->key);
	free(sc);
}

int pal_zone_acquire(const char *name, const pal_tz **out, char *err, size_t errlen)
{
	*out = NULL;
	if (!name) {
		snprintf(err, errlen, "time zone missing");
		return PAL_EINVAL;
	}
	struct shared *sh = NULL;
	g_mutex_lock(&shared_mu);
	tables_init();
	int rc = shared_get(zones, name, false, &sh, err, errlen);
	g_mutex_unlock(&shared_mu);
	if (!rc)
		*out = sh->obj;
	return rc;
}

void pal_zone_release(const pal_tz *tz)
{
	if (!tz)
		return;
	g_mutex_lock(&shared_mu);
	struct shared *sh = zones ? g_hash_table_lookup(zones, pal_tz_name(tz)) : NULL;
	if (sh && sh->obj == tz)
		shared_put(zones, sh, false);
	g_mutex_unlock(&shared_mu);
}

int pal_schedule_acquire(const pal_plan_version *v, const char *job_id, pal_schedule **out,
			 char *err, size_t errlen)
{
	*out = NULL;
	if (!v->cron || !v->timezone) {
		snprintf(err, errlen, "job %s: version %d has no cron or time zone", job_id,
			 v->version);
		return PAL_EINVAL;
	}
	/* Everything the schedule holds, as its table key. */
	GString *k = g_string_sized_new(64);
	g_string_append_printf(k, "%s\x1f%s\x1f%d.%d.%d", v->cron, v->timezone, v->dst.is_auto,
			       (int)v->dst.gap, (int)v->dst.overlap);
	if (v->has_start)
		g_string_append_printf(k, "\x1f" "s%" PRId64, v->start);
	if (v->has_end)
		g_string_append_printf(k, "\x1f" "e%" PRId64, v->end);
	for (size_t i = 0; i < v->n_exclusions; i++)
		g_string_append_printf(k, "\x1f" "x%" PRId64 ".%" PRId64, v->exclusions[i].first_day,
				       v->exclusions[i].last_day);
	for (size_t i = 0; i < v->n_calendars; i++) {
		char hex[65];
		if (pal_calendar_digest(&v->calendars[i], hex)) {
			g_string_free(k, TRUE);
			return PAL_ENOMEM;
		}
		g_string_append_printf(k, "\x1f" "c%s@%d.%s", v->calendars[i].name,
				       v->calendars[i].version, hex);
	}
	int rc = PAL_OK;
	g_mutex_lock(&shared_mu);
	tables_init();
	pal_schedule *sc = g_hash_table_lookup(schedules, k->str);
	if (sc) {
		sc->refs++;
		goto done;
	}
	struct shared *cr = NULL, *tz = NULL;
	char e[256];
	if ((rc = shared_get(crons, v->cron, true, &cr, e, sizeof e))) {
		snprintf(err, errlen, "job %s: cron \"%s\": %s", job_id, v->cron, e);
		goto done;
	}
	if ((rc = shared_get(zones, v->timezone, false, &tz, e, sizeof e))) {
		snprintf(err, errlen, "job %s: %s", job_id, e);
		shared_put(crons, cr, true);
		goto done;
	}
	sc = calloc(1, sizeof *sc);
	if (!sc || (v->n_exclusions && !(sc->excl = malloc(v->n_exclusions * sizeof *sc->excl)))) {
		free(sc);
		sc = NULL;
		shared_put(crons, cr, true);
		shared_put(zones, tz, false);
		rc = PAL_ENOMEM;
		goto done;
	}
	sc->cron = cr->obj;
	sc->tz = tz->obj;
	sc->cron_ref = cr;
	sc->tz_ref = tz;
	sc->dst = v->dst;
	sc->has_start = v->has_start;
	sc->has_end = v->has_end;
	sc->start = v->start;
	sc->end = v->end;
	if (v->n_exclusions)
		memcpy(sc->excl, v->exclusions, v->n_exclusions * sizeof *sc->excl);
	sc->n_excl = v->n_exclusions;
	if ((rc = pal_cal_set_open(v->calendars, v->n_calendars, &sc->cals, e, sizeof e))) {
		snprintf(err, errlen, "job %s: %s", job_id, e);
		shared_put(crons, cr, true);
		shared_put(zones, tz, false);
		schedule_free(sc);
		sc = NULL;
		goto done;
	}
	sc->refs = 1;
	sc->key = g_string_free(k, FALSE);
	k = NULL;
	g_hash_table_insert(schedules, sc->key, sc);
done:
	g_mutex_unlock(&shared_mu);
	if (k)
		g_string_free(k, TRUE);
	*out = sc;
	return rc;
}

void pal_schedule_release(pal_schedule *sc)
{
	if (!sc)
		return;
	g_mutex_lock(&shared_mu);
	if (--sc->refs == 0) {
		g_hash_table_remove(schedules, sc->key);
		shared_put(crons, sc->cron_ref, true);
		shared_put(zones, sc->tz_ref, false);
		schedule_free(sc);
	}
	g_mutex_unlock(&shared_mu);
}

void pal_schedule_shared_counts(size_t *n_sched, size_t *n_cron, size_t *n_zone)
{
	g_mutex_lock(&shared_mu);
	tables_init();
	*n_sched = g_hash_table_size(schedules);
	*n_cron = g_hash_table_size(crons);
	*n_zone = g_hash_table_size(zones);
	g_mutex_unlock(&shared_mu);
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
		int64_t day = pal_floor_div(pal_tz_to_local(sc->tz, t), 86400);
		for (size_t i = 0; i < sc->n_excl && !ex; i++)
			ex = day >= sc->excl[i].first_day && day <= sc->excl[i].last_day;
	}
	if (!ex && sc->cals)
		ex = pal_cal_set_excluding(sc->cals, t) != NULL;
	*next = t;
	if (excluded)
		*excluded = ex;
	return PAL_OK;
}

/* ---- counting ---------------------------------------------------------------- */

/*
 * Counting the instants of a long range without visiting each one.  A cron
 * expression is a product: a set of local days (day of month, month, day of
 * week, year) times one set of hours, one of minutes and one of seconds.
 * Where the zone's offset does not change, the instants of a matching local
 * day are therefore always as many (|H|*|M|*|S|), those of a matching hour
 * |M|*|S|, those of a matching minute |S|: the range is cut into aligned
 * local days, hours and minutes, each full block is found with one
 * pal_cron_next() probe (which skips non-matching blocks itself) and counted
 * as its level's constant, and only partial minutes at the ends are walked.
 * Around an offset change (a DST transition) the product breaks (skipped and
 * repeated wall times): there the instants are walked one by one, from an
 * hour plus the size of the change before it to as much after it.
 */
typedef struct cnt_ctx {
	const pal_schedule *sc;
	int64_t n, first, last;
	int64_t k[4]; /* instants in a full matching block per level; -1 unknown */
} cnt_ctx;

static const int64_t UNIT[4] = { 1, 60, 3600, 86400 };

/* First instant >= T, INT64_MAX when none. */
static int64_t at_or_after(const pal_schedule *sc, int64_t t)
{
	int64_t x;
	if (pal_cron_next(sc->cron, sc->tz, sc->dst, t - 1, &x) != PAL_OK)
		return INT64_MAX;
	return x;
}

static void note(cnt_ctx *c, int64_t first, int64_t last)
{
	if (!c->n)
		c->first = first;
	c->last = last;
	c->n++;
}

/* Walk [lo, hi) instant by instant. */
static void walk(cnt_ctx *c, int64_t lo, int64_t hi)
{
	for (int64_t x = at_or_after(c->sc, lo); x < hi; x = at_or_after(c->sc, x + 1))
		note(c, x, x);
}

/* [lo, hi) at constant offset OFF, in blocks of UNIT[level] local seconds. */
static void blocks(cnt_ctx *c, int64_t lo, int64_t hi, int32_t off, int level)
{
	if (lo >= hi)
		return;
	if (level == 0) {
		walk(c, lo, hi);
		return;
	}
	int64_t u = UNIT[level];
	int64_t b0 = -pal_floor_div(-(lo + off), u) * u - off; /* first block start >= lo */
	int64_t b1 = pal_floor_div(hi + off, u) * u - off;      /* last block end <= hi */
	if (b0 >= b1) {
		blocks(c, lo, hi, off, level - 1);
		return;
	}
	blocks(c, lo, b0, off, level - 1);
	int64_t lastblk = INT64_MIN, nfull = 0;
	for (int64_t cur = b0; cur < b1;) {
		int64_t x = at_or_after(c->sc, cur);
		if (x >= b1)
			break;
		int64_t blk = pal_floor_div(x + off, u) * u - off;
		if (c->k[level] < 0) {
			/* The first matching block: count it one level down. */
			cnt_ctx sub = { .sc = c->sc, .k = { -1, -1, -1, -1 } };
			memcpy(sub.k, c->k, sizeof sub.k);
			blocks(&sub, blk, blk + u, off, level - 1);
			memcpy(c->k, sub.k, sizeof c->k);
			c->k[level] = sub.n;
		}
		if (!c->n)
			c->first = x;
		c->n += c->k[level];
		nfull++;
		lastblk = blk;
		cur = blk + u;
	}
	if (nfull) {
		/* The last instant lies in the last matching block. */
		cnt_ctx sub = { .sc = c->sc };
		memcpy(sub.k, c->k, sizeof sub.k);
		blocks(&sub, lastblk, lastblk + u, off, level - 1);
		c->last = sub.last;
	}
	blocks(c, b1, hi, off, level - 1);
}

/* [lo, hi), offsets possibly changing inside. */
static void span(cnt_ctx *c, int64_t lo, int64_t hi)
{
	while (lo < hi) {
		int32_t mn = pal_tz_min_offset(c->sc->tz, lo, hi - 1);
		int32_t mx = pal_tz_max_offset(c->sc->tz, lo, hi - 1);
		if (mn == mx) {
			for (int l = 0; l < 4; l++)
				c->k[l] = -1;
			blocks(c, lo, hi, mn, 3);
			return;
		}
		/* Bisect to the first change: [a, b] holds it, b - a = 1. */
		int64_t a = lo, b = hi - 1;
		while (b - a > 1) {
			int64_t m = a + (b - a) / 2;
			if (pal_tz_min_offset(c->sc->tz, a, m) != pal_tz_max_offset(c->sc->tz, a, m))
				b = m;
			else
				a = m;
		}
		int64_t margin = 3600 + (int64_t)(mx - mn);
		int64_t wlo = b - margin < lo ? lo : b - margin;
		int64_t whi = b + margin > hi ? hi : b + margin;
		if (wlo > lo) {
			for (int l = 0; l < 4; l++)
				c->k[l] = -1;
			blocks(c, lo, wlo, pal_tz_offset_at(c->sc->tz, lo), 3);
		}
		walk(c, wlo, whi);
		lo = whi;
	}
}

bool pal_schedule_countable(const pal_schedule *sc)
{
	return sc->n_excl == 0 && !sc->cals;
}

const pal_calendar *pal_schedule_excluding(const pal_schedule *sc, int64_t t)
{
	if (sc->n_excl) {
		int64_t day = pal_floor_div(pal_tz_to_local(sc->tz, t), 86400);
		for (size_t i = 0; i < sc->n_excl; i++)
			if (day >= sc->excl[i].first_day && day <= sc->excl[i].last_day)
				return NULL; /* the job's own exclude: comes first */
	}
	return pal_cal_set_excluding(sc->cals, t);
}

int pal_schedule_count(const pal_schedule *sc, int64_t after, int64_t until, int64_t *count,
		       int64_t *first, int64_t *last)
{
	*count = 0;
	*first = *last = PAL_NO_TIME;
	if (sc->n_excl)
		return PAL_EINVAL;
	int64_t lo = after + 1, hi = until + 1;
	if (sc->has_start && lo < sc->start)
		lo = sc->start;
	if (sc->has_end && hi > sc->end)
		hi = sc->end;
	if (lo >= hi)
		return PAL_OK;
	cnt_ctx c = { .sc = sc, .k = { -1, -1, -1, -1 } };
	span(&c, lo, hi);
	*count = c.n;
	if (c.n) {
		*first = c.first;
		*last = c.last;
	}
	return PAL_OK;
}
