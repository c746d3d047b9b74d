/*
 * schedule.c - a job version's fire instants: cron + zone + DST policy, a
 * fixed interval or one instant, moved by spread and jitter, bounded by
 * start/end, with exclusion dates flagged (see schedule.h).
 *
 * The schedule text.  job_versions.cron holds one line the planner reads
 * the whole schedule form from (pal_schedule_text): a cron job's
 * expression as before, with Jenkins' `H` already resolved for its job
 * (so a plain or `H` cron is an expression every release plans alike), and
 * for the forms after the first release a line an older binary cannot
 * parse as a cron - "@palisade;every=90;spread=600" or
 * "@palisade;at=1767225600" or "@palisade;jitter=30 0 0 * * * ?" - so an
 * older controller refuses (quarantines) the job instead of planning it
 * wrongly.  The digest and canonical spec stay the source; this text is
 * derived from them.
 *
 * Instants.  A nominal instant n (the cron's, start + k * every, or at)
 * fires at n + offset + jit(n): offset = H(job id) mod spread, the same for
 * every instant; jit(n) = H(job id, n) mod min(jitter, next nominal - n),
 * so an instant never moves past the next one: the fired instants stay in
 * the nominal order, distinct, and a function of the plan key alone.
 * H is the first 8 bytes of SHA-256 of a tagged string (hash64 below).
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
#include "palisade/sha256.h"
#include "palisade/timefmt.h"
#include "palisade/tz.h"

enum sched_kind { SK_CRON, SK_EVERY, SK_AT };

/* The latest instant a schedule computes (9999-12-31T23:59:59Z), so that
 * interval arithmetic never overflows. */
#define LAST_INSTANT INT64_C(253402300799)

struct pal_schedule {
	enum sched_kind kind;
	int64_t every, at; /* SK_EVERY: seconds; SK_AT: the instant */
	int64_t offset;	   /* spread: this job's offset, seconds */
	int64_t jitter;	   /* seconds; 0 = none */
	char *jid;	   /* job id (jitter only), owned */
	pal_cron *cron;	   /* SK_CRON only */
	pal_tz *tz;
	pal_dst_policy dst;
	bool has_start, has_end;
	int64_t start, end;
	pal_exclusion *excl;
	size_t n_excl;
	pal_cal_set *cals; /* NULL: no shared calendar (calendar.h) */
	bool borrowed;	   /* cron and tz are the caller's (pal_schedule_open_borrowed) */
	/* shared ones only (pal_schedule_acquire) */
	unsigned refs;
	char *key;			  /* in `schedules`; owned */
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

/* ---- hashing: spread, jitter and H ---------------------------------------- */

uint64_t pal_schedule_hash(const char *tag, const char *job_id, int64_t n)
{
	GString *g = g_string_sized_new(64);
	g_string_append_printf(g, "%s:%s:%" PRId64, tag, job_id, n);
	uint8_t d[32];
	pal_sha256(g->str, g->len, d);
	g_string_free(g, TRUE);
	uint64_t h = 0;
	for (int i = 0; i < 8; i++)
		h = h << 8 | d[i];
	return h;
}

/* ---- the schedule text ------------------------------------------------------ */

#define TEXT_PREFIX "@palisade;"

/* The parts of a schedule text. */
typedef struct sched_form {
	enum sched_kind kind;
	const char *cron; /* into the text, SK_CRON */
	int64_t every, at, spread, jitter;
} sched_form;

static int parse_form(const char *text, sched_form *f, char *err, size_t errlen)
{
	memset(f, 0, sizeof *f);
	f->kind = SK_CRON;
	f->cron = text;
	if (strncmp(text, TEXT_PREFIX, strlen(TEXT_PREFIX)))
		return PAL_OK;
	const char *p = text + strlen(TEXT_PREFIX);
	bool has_every = false, has_at = false;
	while (*p && *p != ' ') {
		const char *eq = strchr(p, '='), *e;
		char *end;
		if (!eq)
			goto bad;
		long long v = strtoll(eq + 1, &end, 10);
		e = end;
		if (e == eq + 1 || (*e && *e != ';' && *e != ' '))
			goto bad;
		size_t kl = (size_t)(eq - p);
		if (kl == 5 && !strncmp(p, "every", 5) && v > 0 && v <= LAST_INSTANT)
			has_every = true, f->every = v;
		else if (kl == 2 && !strncmp(p, "at", 2) && v >= 0 && v <= LAST_INSTANT)
			has_at = true, f->at = v;
		else if (kl == 6 && !strncmp(p, "spread", 6) && v >= 0 && v <= LAST_INSTANT)
			f->spread = v;
		else if (kl == 6 && !strncmp(p, "jitter", 6) && v >= 0 && v <= LAST_INSTANT)
			f->jitter = v;
		else
			goto bad;
		p = *e == ';' ? e + 1 : e;
	}
	f->cron = *p == ' ' ? p + 1 : NULL;
	if ((f->cron != NULL) + has_every + has_at != 1)
		goto bad;
	f->kind = has_every ? SK_EVERY : has_at ? SK_AT : SK_CRON;
	return PAL_OK;
bad:
	snprintf(err, errlen, "schedule text \"%.128s\" is not understood", text);
	return PAL_EINVAL;
}

/*
 * Jenkins' H in one comma item ITEM of field K (range [LO, HI]) for JOB_ID,
 * appended to OUT resolved: H, H/n, H(a-b), H(a-b)/n.  False on a bad item.
 */
static bool resolve_h_item(const char *item, size_t len, int k, int lo, int hi, const char *job_id,
			   GString *out)
{
	char buf[64];
	if (len >= sizeof buf)
		return false;
	memcpy(buf, item, len);
	buf[len] = '\0';
	if (buf[0] != 'H') {
		g_string_append(out, buf);
		return true;
	}
	const char *p = buf + 1;
	int a = lo, b = hi;
	if (*p == '(') {
		char *e;
		a = (int)strtol(p + 1, &e, 10);
		if (e == p + 1 || *e != '-')
			return false;
		p = e + 1;
		b = (int)strtol(p, &e, 10);
		if (e == p || *e != ')')
			return false;
		p = e + 1;
		if (a < lo || b > hi || a > b)
			return false;
	}
	uint64_t h = pal_schedule_hash("H", job_id, k);
	if (!*p) {
		g_string_append_printf(out, "%d", a + (int)(h % (uint64_t)(b - a + 1)));
		return true;
	}
	if (*p != '/')
		return false;
	char *e;
	long step = strtol(p + 1, &e, 10);
	if (e == p + 1 || *e || step < 1 || step > b - a + 1)
		return false;
	g_string_append_printf(out, "%d-%d/%ld", a + (int)(h % (uint64_t)step), b, step);
	return true;
}

int pal_cron_resolve_hash(const char *expr, const char *job_id, char **out, char *err,
			  size_t errlen)
{
	*out = NULL;
	if (expr[0] != 'H' && !strstr(expr, " H") && !strstr(expr, ",H"))
		return (*out = strdup(expr)) ? PAL_OK : PAL_ENOMEM;
	/* [low, high] of H per field: the day of month stops at 28 so that
	 * every month has the day (Jenkins does the same). */
	static const int vixie[5][2] = {{0, 59}, {0, 23}, {1, 28}, {1, 12}, {0, 6}};
	static const int quartz[6][2] = {{0, 59}, {0, 59}, {0, 23}, {1, 28}, {1, 12}, {1, 7}};
	gchar **f = g_strsplit(expr, " ", -1);
	int nf = (int)g_strv_length(f);
	GString *g = g_string_sized_new(strlen(expr) + 16);
	int rc = PAL_OK;
	for (int k = 0; k < nf && !rc; k++) {
		if (k)
			g_string_append_c(g, ' ');
		if (f[k][0] != 'H' && !strstr(f[k], ",H")) {
			g_string_append(g, f[k]);
			continue;
		}
		const int(*r)[2] = nf == 5 ? vixie : quartz;
		int nr = nf == 5 ? 5 : 6;
		if ((nf != 5 && nf != 6 && nf != 7) || k >= nr) {
			snprintf(err, errlen,
				 "H is allowed in the fields of a 5-field cron or the "
				 "first six of a Quartz one, not in field %d",
				 k + 1);
			rc = PAL_EINVAL;
			break;
		}
		const char *p = f[k];
		while (!rc) {
			const char *c = strchr(p, ',');
			size_t len = c ? (size_t)(c - p) : strlen(p);
			if (!resolve_h_item(p, len, k, r[k][0], r[k][1], job_id, g)) {
				snprintf(err, errlen,
					 "invalid H in field %d \"%.64s\" (expected H, H/STEP, "
					 "H(LOW-HIGH) or H(LOW-HIGH)/STEP within %d-%d)",
					 k + 1, f[k], r[k][0], r[k][1]);
				rc = PAL_EINVAL;
			}
			if (!c)
				break;
			g_string_append_c(g, ',');
			p = c + 1;
		}
	}
	g_strfreev(f);
	if (rc) {
		g_string_free(g, TRUE);
		return rc;
	}
	*out = strdup(g->str);
	g_string_free(g, TRUE);
	return *out ? PAL_OK : PAL_ENOMEM;
}

int pal_schedule_text(const pal_job_spec *s, char **out, char *err, size_t errlen)
{
	*out = NULL;
	char *cron = NULL;
	if (s->cron) {
		int rc = pal_cron_resolve_hash(s->cron, s->id ? s->id : "", &cron, err, errlen);
		if (rc)
			return rc;
		if (!s->spread_s && !s->jitter_s) {
			*out = cron;
			return PAL_OK;
		}
	} else if (!s->every_s && !s->has_at) {
		snprintf(err, errlen, "job %s: no schedule (cron, every or at)", s->id);
		return PAL_EINVAL;
	}
	GString *g = g_string_new(TEXT_PREFIX);
	if (s->every_s)
		g_string_append_printf(g, "every=%" PRId64 ";", s->every_s);
	else if (s->has_at)
		g_string_append_printf(g, "at=%" PRId64 ";", s->at);
	if (s->spread_s)
		g_string_append_printf(g, "spread=%" PRId64 ";", s->spread_s);
	if (s->jitter_s)
		g_string_append_printf(g, "jitter=%" PRId64 ";", s->jitter_s);
	g_string_truncate(g, g->len - 1);
	if (cron) {
		g_string_append_c(g, ' ');
		g_string_append(g, cron);
		free(cron);
	}
	*out = strdup(g->str);
	g_string_free(g, TRUE);
	return *out ? PAL_OK : PAL_ENOMEM;
}

/* Everything of SC but its cron and zone, from form F and version V. */
static int fill(pal_schedule *sc, const sched_form *f, const pal_plan_version *v,
		const char *job_id)
{
	sc->kind = f->kind;
	sc->every = f->every;
	sc->at = f->at;
	sc->offset =
	    f->spread ? (int64_t)(pal_schedule_hash("spread", job_id, 0) % (uint64_t)f->spread) : 0;
	sc->jitter = f->jitter;
	if (f->jitter && !(sc->jid = strdup(job_id)))
		return PAL_ENOMEM;
	sc->dst = v->dst;
	sc->has_start = v->has_start;
	sc->has_end = v->has_end;
	sc->start = v->start;
	sc->end = v->end;
	if (v->n_exclusions) {
		sc->excl = malloc(v->n_exclusions * sizeof *sc->excl);
		if (!sc->excl)
			return PAL_ENOMEM;
		memcpy(sc->excl, v->exclusions, v->n_exclusions * sizeof *sc->excl);
		sc->n_excl = v->n_exclusions;
	}
	return PAL_OK;
}

/* The schedule of spec S; CRON and TZ borrowed when given (then the shared
 * calendars are left out), parsed and opened here otherwise. */
static int open_spec(const pal_job_spec *s, const pal_cron *cron, const pal_tz *tz,
		     pal_schedule **out, char *err, size_t errlen)
{
	*out = NULL;
	pal_schedule *sc = calloc(1, sizeof *sc);
	if (!sc)
		return PAL_ENOMEM;
	char e[256], *text = NULL;
	sched_form f;
	pal_plan_version v = pal_plan_version_of_spec(s, 0, PAL_NO_TIME);
	int rc = pal_schedule_text(s, &text, e, sizeof e);
	if (!rc)
		rc = parse_form(text, &f, e, sizeof e);
	if (rc) {
		snprintf(err, errlen, "job %s: %s", s->id, e);
		goto fail;
	}
	if (tz) {
		sc->borrowed = true;
		sc->cron = (pal_cron *)cron;
		sc->tz = (pal_tz *)tz;
		if (f.kind == SK_CRON && !cron) {
			snprintf(err, errlen, "job %s: no compiled cron for \"%s\"", s->id, f.cron);
			rc = PAL_EINVAL;
			goto fail;
		}
	} else {
		if (f.kind == SK_CRON &&
		    (rc = pal_cron_parse(f.cron, &sc->cron, e, sizeof e, NULL))) {
			snprintf(err, errlen, "job %s: cron \"%s\": %s", s->id, f.cron, e);
			goto fail;
		}
		rc = pal_tz_open(s->timezone, &sc->tz, e, sizeof e);
		if (rc) {
			snprintf(err, errlen, "job %s: %s", s->id, e);
			goto fail;
		}
	}
	if ((rc = fill(sc, &f, &v, s->id ? s->id : "")))
		goto fail;
	if (!sc->borrowed &&
	    (rc = pal_cal_set_open(s->calendars, s->n_calendars, &sc->cals, e, sizeof e))) {
		snprintf(err, errlen, "job %s: %s", s->id, e);
		goto fail;
	}
	free(text);
	*out = sc;
	return PAL_OK;
fail:
	free(text);
	pal_schedule_close(sc);
	return rc;
}

int pal_schedule_open(const pal_job_spec *s, pal_schedule **out, char *err, size_t errlen)
{
	return open_spec(s, NULL, NULL, out, err, errlen);
}

int pal_schedule_open_borrowed(const pal_job_spec *s, const pal_cron *cron, const pal_tz *tz,
			       pal_schedule **out, char *err, size_t errlen)
{
	return open_spec(s, cron, tz, out, err, errlen);
}

void pal_schedule_close(pal_schedule *sc)
{
	if (!sc)
		return;
	if (!sc->borrowed) {
		pal_cron_free(sc->cron);
		pal_tz_close(sc->tz);
	}
	free(sc->excl);
	free(sc->jid);
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

/* Under the mutex: the calendar set (which takes the mutex for its zones)
 * is the caller's to close after unlocking. */
static void schedule_free(pal_schedule *sc)
{
	free(sc->excl);
	free(sc->jid);
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
	sched_form f;
	char e[256];
	int rc = parse_form(v->cron, &f, e, sizeof e);
	if (rc) {
		snprintf(err, errlen, "job %s: %s", job_id, e);
		return rc;
	}
	int64_t offset =
	    f.spread ? (int64_t)(pal_schedule_hash("spread", job_id, 0) % (uint64_t)f.spread) : 0;
	/* Everything the schedule holds, as its table key: the job's own parts
	 * (spread offset, jitter's job id) only when it has them. */
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
	if (offset)
		g_string_append_printf(k, "\x1f" "o%" PRId64, offset);
	if (f.jitter)
		g_string_append_printf(k, "\x1f" "j%s", job_id);
	/* opened outside the mutex: its zones come from the shared table */
	pal_cal_set *cals = NULL;
	rc = pal_cal_set_open(v->calendars, v->n_calendars, &cals, e, sizeof e);
	if (rc) {
		snprintf(err, errlen, "job %s: %s", job_id, e);
		g_string_free(k, TRUE);
		return rc;
	}
	g_mutex_lock(&shared_mu);
	tables_init();
	pal_schedule *sc = g_hash_table_lookup(schedules, k->str);
	if (sc) {
		sc->refs++;
		goto done;
	}
	struct shared *cr = NULL, *tz = NULL;
	if (f.kind == SK_CRON && (rc = shared_get(crons, f.cron, true, &cr, e, sizeof e))) {
		snprintf(err, errlen, "job %s: cron \"%s\": %s", job_id, f.cron, e);
		goto done;
	}
	if ((rc = shared_get(zones, v->timezone, false, &tz, e, sizeof e))) {
		snprintf(err, errlen, "job %s: %s", job_id, e);
		shared_put(crons, cr, true);
		goto done;
	}
	sc = calloc(1, sizeof *sc);
	if (!sc || fill(sc, &f, v, job_id)) {
		if (sc)
			schedule_free(sc);
		sc = NULL;
		shared_put(crons, cr, true);
		shared_put(zones, tz, false);
		rc = PAL_ENOMEM;
		goto done;
	}
	sc->cron = cr ? cr->obj : NULL;
	sc->tz = tz->obj;
	sc->cron_ref = cr;
	sc->tz_ref = tz;
	sc->cals = cals;
	cals = NULL;
	sc->refs = 1;
	sc->key = g_string_free(k, FALSE);
	k = NULL;
	g_hash_table_insert(schedules, sc->key, sc);
done:
	g_mutex_unlock(&shared_mu);
	pal_cal_set_close(cals); /* not taken: an equal schedule existed, or a failure */
	if (k)
		g_string_free(k, TRUE);
	*out = sc;
	return rc;
}

void pal_schedule_release(pal_schedule *sc)
{
	if (!sc)
		return;
	pal_cal_set *cals = NULL;
	g_mutex_lock(&shared_mu);
	if (--sc->refs == 0) {
		g_hash_table_remove(schedules, sc->key);
		shared_put(crons, sc->cron_ref, true);
		shared_put(zones, sc->tz_ref, false);
		cals = sc->cals;
		schedule_free(sc);
	}
	g_mutex_unlock(&shared_mu);
	pal_cal_set_close(cals);
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

/* Nominal instant strictly after AFTER (before spread and jitter). */
static int base_next(const pal_schedule *sc, int64_t anchor, int64_t after, int64_t *x)
{
	if (after >= LAST_INSTANT)
		return PAL_ENOENT;
	switch (sc->kind) {
	case SK_AT:
		if (sc->at <= after)
			return PAL_ENOENT;
		*x = sc->at;
		return PAL_OK;
	case SK_EVERY: {
		/* the first instant: start, or one interval after the activation
		 * (the activation itself is never one, moved or not) */
		int64_t a = sc->has_start ? sc->start
					  : (anchor != PAL_NO_TIME ? anchor : after) + sc->every;
		*x = after < a ? a : a + (pal_floor_div(after - a, sc->every) + 1) * sc->every;
		return *x > LAST_INSTANT ? PAL_ENOENT : PAL_OK;
	}
	case SK_CRON:
		break;
	}
	return pal_cron_next(sc->cron, sc->tz, sc->dst, after, x);
}

/* Jitter of nominal instant N: below both the jitter and the gap to the
 * next nominal instant, so the order of the instants is kept. */
static int64_t jit(const pal_schedule *sc, int64_t anchor, int64_t n)
{
	if (!sc->jitter)
		return 0;
	int64_t span = sc->jitter, nx;
	if (base_next(sc, anchor, n, &nx) == PAL_OK && nx - n < span)
		span = nx - n;
	if (span <= 1)
		return 0;
	return (int64_t)(pal_schedule_hash("jitter", sc->jid, n) % (uint64_t)span);
}

int pal_schedule_next_from(const pal_schedule *sc, int64_t anchor, int64_t after, int64_t *next,
			   bool *excluded)
{
	if (sc->has_start && after < sc->start - 1)
		after = sc->start - 1;
	if (anchor == PAL_NO_TIME)
		anchor = after;
	/* Any nominal instant at or before after - offset - jitter fires at or
	 * before AFTER: start the search just past it. */
	int64_t n, t = 0;
	int rc = base_next(sc, anchor, after - sc->offset - sc->jitter, &n);
	while (rc == PAL_OK && (t = n + sc->offset + jit(sc, anchor, n)) <= after)
		rc = base_next(sc, anchor, n, &n);
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

int pal_schedule_next(const pal_schedule *sc, int64_t after, int64_t *next, bool *excluded)
{
	return pal_schedule_next_from(sc, PAL_NO_TIME, after, next, excluded);
}

bool pal_schedule_moves(const pal_schedule *sc)
{
	return sc->offset || sc->jitter;
}

int64_t pal_schedule_nominal(const pal_schedule *sc, int64_t anchor, int64_t t)
{
	if (!sc->jitter)
		return t - sc->offset;
	if (anchor == PAL_NO_TIME)
		anchor = t;
	/* as pal_schedule_next_from(): the nominal instants from the first
	 * that can fire at T on, in order, their fired instants increasing */
	int64_t n, f = 0;
	int rc = base_next(sc, anchor, t - sc->offset - sc->jitter - 1, &n);
	while (rc == PAL_OK && (f = n + sc->offset + jit(sc, anchor, n)) < t)
		rc = base_next(sc, anchor, n, &n);
	return rc == PAL_OK && f == t ? n : t;
}

int64_t pal_schedule_offset(const pal_schedule *sc)
{
	return sc->offset;
}

bool pal_schedule_fixed_anchor(const pal_schedule *sc)
{
	return sc->kind != SK_EVERY || sc->has_start;
}

bool pal_schedule_one_shot(const pal_schedule *sc)
{
	return sc->kind == SK_AT;
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

static const int64_t UNIT[4] = {1, 60, 3600, 86400};

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
	int64_t b1 = pal_floor_div(hi + off, u) * u - off;     /* last block end <= hi */
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
			cnt_ctx sub = {.sc = c->sc, .k = {-1, -1, -1, -1}};
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
		cnt_ctx sub = {.sc = c->sc};
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
			if (pal_tz_min_offset(c->sc->tz, a, m) !=
			    pal_tz_max_offset(c->sc->tz, a, m))
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
	return sc->n_excl == 0 && !sc->cals && sc->jitter == 0;
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

int pal_schedule_count_from(const pal_schedule *sc, int64_t anchor, int64_t after, int64_t until,
			    int64_t *count, int64_t *first, int64_t *last)
{
	*count = 0;
	*first = *last = PAL_NO_TIME;
	if (!pal_schedule_countable(sc))
		return PAL_EINVAL;
	/* Fired instants in [lo, hi); the nominal ones lie OFFSET before. */
	int64_t lo = after + 1, hi = until + 1, off = sc->offset;
	if (sc->has_start && lo < sc->start)
		lo = sc->start;
	if (sc->has_end && hi > sc->end)
		hi = sc->end;
	if (lo >= hi)
		return PAL_OK;
	if (sc->kind == SK_AT) {
		if (sc->at + off >= lo && sc->at + off < hi) {
			*count = 1;
			*first = *last = sc->at + off;
		}
		return PAL_OK;
	}
	if (sc->kind == SK_EVERY) {
		int64_t a0 = sc->has_start ? sc->start
					   : (anchor != PAL_NO_TIME ? anchor : after) + sc->every;
		int64_t a = a0 + off;
		if (hi > LAST_INSTANT + off + 1)
			hi = LAST_INSTANT + off + 1;
		int64_t k0 = lo <= a ? 0 : -pal_floor_div(-(lo - a), sc->every);
		int64_t k1 = -pal_floor_div(-(hi - a), sc->every) - 1;
		if (k1 >= k0) {
			*count = k1 - k0 + 1;
			*first = a + k0 * sc->every;
			*last = a + k1 * sc->every;
		}
		return PAL_OK;
	}
	cnt_ctx c = {.sc = sc, .k = {-1, -1, -1, -1}};
	span(&c, lo - off, hi - off);
	*count = c.n;
	if (c.n) {
		*first = c.first + off;
		*last = c.last + off;
	}
	return PAL_OK;
}

int pal_schedule_count(const pal_schedule *sc, int64_t after, int64_t until, int64_t *count,
		       int64_t *first, int64_t *last)
{
	return pal_schedule_count_from(sc, PAL_NO_TIME, after, until, count, first, last);
}
