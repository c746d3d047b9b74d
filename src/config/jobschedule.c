/*
 * jobschedule.c - a job's `schedule:`: its forms (cron, every, at), the
 * zone and daylight-saving policy, the window (start, end), spread and
 * jitter, excluded dates and the calendars it names; then the schedule as
 * a whole, once every key is read.
 *
 * Crons and zones are parsed through the loader's cache (jobcache.c): a
 * million jobs share a handful of each.  Calendars are the ones loaded
 * before the job.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "jobfile_int.h"
#include "palisade/cron.h"
#include "palisade/schedule.h"
#include "palisade/timefmt.h"
#include "palisade/tz.h"

#define MAX_EXCLUSIONS 1000

static void k_cron(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
static void k_timezone(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
static void k_dst(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
static void k_dst_gap(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
static void k_dst_overlap(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
static void k_start(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
static void k_every(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
static void k_at(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
static void k_spread(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
static void k_jitter(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
static void k_end(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
static void k_exclude(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
static void k_calendar(struct jctx *c, const pal_ynode *v, pal_job_spec *s);

static const struct keydef dst_keys[] = {
    {"gap", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_dst_gap, false},
    {"overlap", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_dst_overlap, false},
};
const struct section pal__job_dst_section = {"schedule.dst", dst_keys, N(dst_keys)};

static const struct keydef schedule_keys[] = {
    {"cron", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_cron, false},
    {"every", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_every, false},
    {"at", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_at, false},
    {"spread", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_spread, false},
    {"jitter", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_jitter, false},
    {"timezone", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_timezone, false},
    {"dst", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_dst, false},
    {"start", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_start, false},
    {"end", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_end, false},
    {"exclude", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_exclude, false},
    {"calendar", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_calendar, false},
};
const struct section pal__job_schedule_section = {"schedule", schedule_keys, N(schedule_keys)};

/* Byte offset of 1-based field K of cron text S (fields split by blanks). */
static size_t cron_field_offset(const char *s, int k)
{
	size_t i = 0;

	for (int f = 1;; f++) {
		while (s[i] && isspace((unsigned char)s[i]))
			i++;
		if (f == k || !s[i])
			return i;
		while (s[i] && !isspace((unsigned char)s[i]))
			i++;
	}
}

/* Trim and collapse blank runs: "0  30 2 * * ?" and "0 30 2 * * ?" mean
 * the same and must canonicalise the same. */
static char *normalise_cron(const char *s)
{
	char *out = malloc(strlen(s) + 1);
	size_t o = 0;

	if (!out)
		return NULL;
	for (size_t i = 0; s[i];) {
		if (isspace((unsigned char)s[i])) {
			while (s[i] && isspace((unsigned char)s[i]))
				i++;
			if (o && s[i])
				out[o++] = ' ';
			continue;
		}
		out[o++] = s[i++];
	}
	out[o] = '\0';
	return out;
}

static void k_cron(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	char *raw = pal__job_str(c, v, "cron", 256), *norm;
	char err[256] = "";
	int field = 0;

	c->n_cron = v;
	if (!raw)
		return;
	norm = normalise_cron(raw);
	if (!norm) {
		free(raw);
		c->errors++;
		return;
	}
	/* Jenkins' H resolves per job (its id may come later in the mapping):
	 * here it is checked with a stand-in id, whose values are as valid. */
	char *resolved = NULL;
	if (pal_cron_resolve_hash(norm, "", &resolved, err, sizeof err)) {
		pal__job_diag(c, v, "invalid cron expression \"%.128s\": %s", norm, err);
		free(norm);
	} else if (!pal__job_cached_cron(c->cache, resolved, err, sizeof err, &field)) {
		pal__job_diag_at(c, v, field > 0 ? cron_field_offset(raw, field) : 0,
				 "invalid cron expression \"%.128s\": %s", norm,
				 err[0] ? err : "not a valid expression");
		free(norm);
	} else {
		free(s->cron);
		s->cron = norm;
		c->cron_ok = true;
	}
	free(resolved);
	free(raw);
}

static void k_timezone(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	char *name = pal__job_str(c, v, "timezone", 128);
	char err[256] = "";

	if (!name) {
		c->tz_ok = false;
		return;
	}
	if (!pal__job_cached_tz(c->cache, name, err, sizeof err)) {
		if (err[0])
			pal__job_diag(c, v, "timezone: %s", err);
		else
			pal__job_diag(
			    c, v,
			    "unknown time zone \"%.128s\"; hint: use an IANA name such as "
			    "Europe/Berlin or UTC",
			    name);
		free(name);
		c->tz_ok = false;
		return;
	}
	free(s->timezone);
	s->timezone = name;
}

static void k_dst(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	if (v->kind == PAL_YNODE_SCALAR && !pal_ynode_is_null(v)) {
		if (!strcmp(v->str, "auto")) {
			s->dst = PAL_DST_AUTO;
			return;
		}
		pal__job_diag(
		    c, v,
		    "unknown dst policy \"%.64s\" (expected auto, or a mapping such as {gap: "
		    "shift, overlap: first})",
		    v->str);
		return;
	}
	if (v->kind != PAL_YNODE_MAP) {
		pal__job_diag(c, v, "dst: expected auto or a mapping {gap, overlap}, got %s",
			      pal_ynode_describe(v));
		return;
	}
	/* an explicit policy: omitted keys take the fixed-time defaults */
	s->dst.is_auto = false;
	s->dst.gap = PAL_DST_GAP_SHIFT;
	s->dst.overlap = PAL_DST_OVERLAP_FIRST;
	pal__job_walk(c, &pal__job_dst_section, v, s);
}

static void k_dst_gap(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	int e;

	if (pal_yget_enum(c->doc, v, "dst gap policy", gap_names, N(gap_names), &e, c->diags))
		c->errors++;
	else
		s->dst.gap = (pal_dst_gap)e;
}

static void k_dst_overlap(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	int e;

	if (pal_yget_enum(c->doc, v, "dst overlap policy", dst_overlap_names, N(dst_overlap_names),
			  &e, c->diags))
		c->errors++;
	else
		s->dst.overlap = (pal_dst_overlap)e;
}

static void get_instant(struct jctx *c, const pal_ynode *v, const char *what, bool *has,
			int64_t *out)
{
	char *str = pal__job_str(c, v, what, 64);
	int64_t t;

	if (!str)
		return;
	if (pal_parse_rfc3339(str, &t) != 0) {
		pal__job_diag(
		    c, v,
		    "%s: invalid timestamp \"%.64s\" (expected rfc 3339 with a zone, such as "
		    "2026-01-01T00:00:00Z or 2026-01-01T02:00:00+02:00)",
		    what, str);
	} else if (pal_rfc3339_has_fraction(str)) {
		pal__job_diag(c, v,
			      "%s: \"%.64s\" has a fraction of a second; instants are whole "
			      "seconds, and cutting it off would name another instant",
			      what, str);
		*has = true; /* the form is known: no "no schedule" besides */
		*out = t;
	} else {
		*has = true;
		*out = t;
	}
	free(str);
}

static void k_start(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	c->n_start = v;
	get_instant(c, v, "start", &s->has_start, &s->start);
}

/* A schedule duration of whole seconds in [MIN_S, MAX_S] into *OUT. */
static void get_seconds(struct jctx *c, const pal_ynode *v, const char *what, int64_t min_s,
			int64_t max_s, int64_t *out)
{
	int64_t ms;

	if (pal_yget_duration(c->doc, v, what, min_s * MS_S, max_s * MS_S, false, &ms, c->diags)) {
		c->errors++;
		return;
	}
	if (ms % MS_S) {
		pal__job_diag(c, v, "%s: schedules have whole seconds (got %lld ms)", what,
			      (long long)ms);
		return;
	}
	*out = ms / MS_S;
}

static void k_every(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	c->n_every = v;
	get_seconds(c, v, "every", 1, 366 * 86400, &s->every_s);
}

static void k_at(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	c->n_at = v;
	get_instant(c, v, "at", &s->has_at, &s->at);
}

static void k_spread(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	get_seconds(c, v, "spread", 1, 7 * 86400, &s->spread_s);
}

static void k_jitter(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	get_seconds(c, v, "jitter", 1, 86400, &s->jitter_s);
}

static void k_end(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	c->n_end = v;
	get_instant(c, v, "end", &s->has_end, &s->end);
}

/* `calendar: NAME` or a list of names: each a calendar loaded before this
 * job (earlier in the file, or in an earlier file), copied into the spec. */
static void k_calendar(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	const pal_ynode *one[1] = {v};
	const pal_ynode *const *names = one;
	size_t n = 1;

	if (v->kind == PAL_YNODE_SEQ) {
		names = (const pal_ynode *const *)v->vals;
		n = v->n;
		if (n == 0) {
			pal__job_diag(
			    c, v,
			    "calendar: empty list; hint: name a calendar or leave the key out");
			return;
		}
	}
	pal_calendar *cals = calloc(n, sizeof *cals);
	size_t k = 0;

	if (!cals) {
		pal__job_diag(c, v, "calendar: out of memory");
		return;
	}
	for (size_t i = 0; i < n; i++) {
		char *name = pal__job_str(c, names[i], "calendar", NAME_MAX_LEN);
		const pal_calendar *cal = name ? pal__job_loaded_calendar(c->cache, name) : NULL;
		bool twice = false;

		for (size_t j = 0; cal && j < k; j++)
			twice |= !strcmp(cals[j].name, name);
		if (name && !cal)
			pal__job_diag(
			    c, names[i],
			    "unknown calendar \"%.128s\"; hint: define it under \"calendars:\" "
			    "before the jobs that name it (earlier in this file or in an earlier "
			    "file)",
			    name);
		else if (twice)
			pal__job_diag(c, names[i], "calendar \"%.128s\" named twice", name);
		else if (cal && pal_calendar_copy(&cals[k], cal) == 0)
			k++;
		else if (cal)
			pal__job_diag(c, names[i], "calendar: out of memory");
		free(name);
	}
	for (size_t i = 0; i < s->n_calendars; i++)
		pal_calendar_clear(&s->calendars[i]);
	free(s->calendars);
	s->calendars = cals;
	s->n_calendars = k;
}

static void k_exclude(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	pal_exclusion *ex;
	size_t n = 0;

	if (pal_yexpect_seq(c->doc, v, "exclude", c->diags) != 0) {
		c->errors++;
		return;
	}
	if (v->n > MAX_EXCLUSIONS) {
		pal__job_diag(c, v,
			      "exclude: too many entries (%zu, at most %d); hint: use date ranges "
			      "such as 2026-12-24..2027-01-01",
			      v->n, MAX_EXCLUSIONS);
		return;
	}
	ex = calloc(v->n ? v->n : 1, sizeof *ex);
	if (!ex) {
		pal__job_diag(c, v, "exclude: out of memory");
		return;
	}
	for (size_t i = 0; i < v->n; i++) {
		const pal_ynode *it = v->vals[i];
		char *str = pal__job_str(c, it, "exclude", 64), *dots;
		int64_t a, b;

		if (!str)
			continue;
		dots = strstr(str, "..");
		if (dots) {
			*dots = '\0';
			if (pal_parse_date(str, &a) != 0 || pal_parse_date(dots + 2, &b) != 0) {
				*dots = '.';
				pal__job_diag(c, it,
					      "exclude: invalid date range \"%.64s\" (expected "
					      "YYYY-MM-DD..YYYY-MM-DD)",
					      str);
			} else if (a > b) {
				pal__job_diag(
				    c, it,
				    "exclude: range \"%s..%s\" ends before it starts; hint: write "
				    "the earlier date first",
				    str, dots + 2);
			} else {
				ex[n].first_day = a;
				ex[n++].last_day = b;
			}
		} else if (pal_parse_date(str, &a) != 0) {
			pal__job_diag(c, it,
				      "exclude: invalid date \"%.64s\" (expected YYYY-MM-DD or "
				      "YYYY-MM-DD..YYYY-MM-DD)",
				      str);
		} else {
			ex[n].first_day = ex[n].last_day = a;
			n++;
		}
		free(str);
	}
	free(s->exclusions);
	s->exclusions = ex;
	s->n_exclusions = n;
}

/* ---- checks that span keys ---- */

/* End after start, for the checks that span keys (the first of them). */
void pal__job_check_window(struct jctx *c, pal_job_spec *s)
{
	if (s->has_start && s->has_end && s->start >= s->end) {
		char a[32], b[32];

		pal_fmt_rfc3339(s->start, a, sizeof a);
		pal_fmt_rfc3339(s->end, b, sizeof b);
		pal__job_diag(c, c->n_end,
			      "end (%s) is not after start (%s); hint: end is exclusive", b, a);
	}
}

/* Why the schedule of S never fires, at WHERE: no instant, moved by spread
 * and jitter as the planner moves it, lies in [start, end). */
static void diag_never_fires(struct jctx *c, const pal_ynode *where, const pal_job_spec *s,
			     int64_t offset)
{
	char moved[160] = "";

	if (offset)
		snprintf(moved, sizeof moved,
			 "; hint: start and end bound the instants moved by spread%s (this job's "
			 "spread offset is %llds)",
			 s->jitter_s ? " and jitter" : "", (long long)offset);
	else if (s->jitter_s)
		snprintf(moved, sizeof moved,
			 "; hint: start and end bound the instants moved by jitter");
	if (s->has_at)
		pal__job_diag(c, where, "at is outside [start, end)%s%s", moved,
			      *moved ? "" : "; hint: end is exclusive");
	else if (s->every_s)
		pal__job_diag(c, where, "every: no instant lies between start and end%s", moved);
	else
		pal__job_diag(c, where, "cron expression \"%s\" never fires%s%s", s->cron,
			      s->has_end     ? " between start and end"
			      : s->has_start ? " after start"
					     : "",
			      moved);
}

/*
 * The schedule as a whole: exactly one of cron, every and at; a schedule
 * that can never fire is a mistake, not a job (Feb 30, nothing between
 * start and end, an `at` outside them).  One that fired in the past but
 * never will again (a past `at`, a cron whose years are past, an `end` gone
 * by) is valid: a file must not go bad with the mere passing of time, and
 * one such job must not block the apply of all the others.  It is marked
 * spent, and validate and apply report it.  Both are judged on the instants
 * the planner plans, the nominal ones moved by spread and jitter, from the
 * planner's own schedule (pal_schedule_next): a window that holds a nominal
 * instant but not its moved one is refused, and an `at` just past whose
 * moved instant is ahead is not spent.  An `every` without `start` counts
 * from its activation, which only the controller knows: it is spent when
 * its end is past, never refused.
 */
void pal__job_check_schedule(struct jctx *c, const pal_ynode *job, pal_job_spec *s)
{
	const pal_ynode *where = c->n_cron ? c->n_cron : c->n_every ? c->n_every : c->n_at;
	int forms = (c->n_cron != NULL) + (c->n_every != NULL) + (c->n_at != NULL);
	int64_t now = (int64_t)time(NULL), t;
	const pal_cron *cr = NULL;
	const pal_tz *tz;
	pal_schedule *sc;
	char err[256], *text = NULL;
	bool fires_again;

	if (forms != 1) {
		/* a bad cron was diagnosed already */
		if (forms > 1 || (!c->n_cron && c->n_schedule))
			pal__job_diag(
			    c, forms > 1 ? where : c->n_schedule,
			    forms > 1
				? "schedule: cron, every and at exclude each other; hint: "
				  "keep one"
				: "schedule is missing the required key \"cron\" (or \"every\" "
				  "or \"at\")");
		return;
	}
	if (s->has_start && s->has_end && s->start >= s->end)
		return; /* diagnosed above */
	if (!c->tz_ok || !s->timezone || (c->n_cron && (!c->cron_ok || !s->cron)))
		return; /* diagnosed where the cron and zone were read */
	if (s->cron &&
	    (pal_cron_resolve_hash(s->cron, s->id ? s->id : "", &text, err, sizeof err) ||
	     !(cr = pal__job_cached_cron(c->cache, text, err, sizeof err, NULL)))) {
		free(text);
		return; /* diagnosed where the cron was read */
	}
	free(text);
	if (!(tz = pal__job_cached_tz(c->cache, s->timezone, err, sizeof err)))
		return; /* diagnosed where the zone was read */
	if (pal_schedule_open_borrowed(s, cr, tz, &sc, err, sizeof err) != 0) {
		pal__job_diag(c, where, "%s", err);
		return;
	}
	if (pal_schedule_fixed_anchor(sc)) {
		/* the first instant of all: none after start (at: before it) */
		int64_t after = s->has_start ? s->start - 1 : s->has_at ? s->at - 1 : 0;

		if (pal_schedule_next(sc, after, &t, NULL) != 0) {
			diag_never_fires(c, where, s, pal_schedule_offset(sc));
			pal_schedule_close(sc);
			return;
		}
		fires_again = pal_schedule_next(sc, now, &t, NULL) == 0;
	} else {
		fires_again = !s->has_end || s->end > now;
	}
	pal_schedule_close(sc);
	s->spent = !fires_again || (s->has_end && s->end <= now);
}
