/*
 * test_calendar.c - shared calendars against an independent model: the
 * model turns an instant into local time with the C library (setenv TZ,
 * localtime_r: not palisade's TZif reader) and checks each rule as text
 * ("YYYY-MM-DD" compared with the listed dates and ranges, "MM-DD" with the
 * yearly ones, tm_wday, the "HH:MM:SS" of the day against each window).
 * Every rule kind, exclude and include-only, zones across their DST
 * changes; then through a schedule (pal_schedule_next's excluded flag and
 * pal_schedule_excluding's attribution); and the canonical form round trip.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>
#include "palisade/calendar.h"
#include "palisade/jobfile.h"
#include "palisade/schedule.h"
#include "palisade/timefmt.h"

/* The rules as the model reads them: text. */
typedef struct model {
	const char *zone;
	bool include_only;
	const char *dates[4];
	const char *yearly[4];
	int wdays[7]; /* tm_wday values, -1 ends */
	const char *ranges[4][2];
	const char *windows[4][2]; /* "HH:MM:SS" from, to ("24:00:00" allowed) */
} model;

static bool model_excludes(const model *m, time_t t)
{
	struct tm tm;
	char date[16], md[8], hms[16];
	setenv("TZ", m->zone, 1);
	tzset();
	localtime_r(&t, &tm);
	strftime(date, sizeof date, "%Y-%m-%d", &tm);
	strftime(md, sizeof md, "%m-%d", &tm);
	strftime(hms, sizeof hms, "%H:%M:%S", &tm);
	bool has_days = false, day = false, has_win = false, win = false;
	for (int i = 0; i < 4 && m->dates[i]; i++) {
		has_days = true;
		day |= !strcmp(m->dates[i], date);
	}
	for (int i = 0; i < 4 && m->yearly[i]; i++) {
		has_days = true;
		day |= !strcmp(m->yearly[i], md);
	}
	for (int i = 0; i < 7 && m->wdays[i] >= 0; i++) {
		has_days = true;
		day |= m->wdays[i] == tm.tm_wday;
	}
	for (int i = 0; i < 4 && m->ranges[i][0]; i++) {
		has_days = true;
		day |= strcmp(m->ranges[i][0], date) <= 0 && strcmp(date, m->ranges[i][1]) <= 0;
	}
	for (int i = 0; i < 4 && m->windows[i][0]; i++) {
		has_win = true;
		win |= strcmp(m->windows[i][0], hms) <= 0 && strcmp(hms, m->windows[i][1]) < 0;
	}
	if (m->include_only)
		return !((!has_days || day) && (!has_win || win));
	return (has_days && day) || (has_win && win);
}

/* The same rules as a pal_calendar, through the parsers the loader uses. */
static void build(const model *m, pal_calendar *c)
{
	memset(c, 0, sizeof *c);
	c->name = strdup("cal");
	c->timezone = strdup(m->zone);
	c->include_only = m->include_only;
	c->dates = calloc(4, sizeof *c->dates);
	c->yearly = calloc(4, sizeof *c->yearly);
	c->ranges = calloc(4, sizeof *c->ranges);
	c->windows = calloc(4, sizeof *c->windows);
	for (int i = 0; i < 4 && m->dates[i]; i++)
		assert_int_equal(pal_parse_date(m->dates[i], &c->dates[c->n_dates++]), 0);
	for (int i = 0; i < 4 && m->yearly[i]; i++)
		assert_int_equal(pal_cal_yearly_parse(m->yearly[i], &c->yearly[c->n_yearly++]), 0);
	for (int i = 0; i < 7 && m->wdays[i] >= 0; i++)
		c->weekdays |= 1u << m->wdays[i];
	for (int i = 0; i < 4 && m->ranges[i][0]; i++) {
		assert_int_equal(pal_parse_date(m->ranges[i][0], &c->ranges[c->n_ranges].first_day),
				 0);
		assert_int_equal(
		    pal_parse_date(m->ranges[i][1], &c->ranges[c->n_ranges++].last_day), 0);
	}
	for (int i = 0; i < 4 && m->windows[i][0]; i++) {
		char w[40];
		snprintf(w, sizeof w, "%s-%s", m->windows[i][0], m->windows[i][1]);
		assert_int_equal(pal_cal_window_parse(w, &c->windows[c->n_windows++]), 0);
	}
	pal_calendar_normalize(c);
}

/* 2026-03-01T00:00:00Z; the walk covers March (Europe's and America's
 * spring DST changes) and, from OCT20, the autumn ones. */
#define MAR1 1772323200LL
#define OCT20 1792454400LL

/* Every STEP seconds over DAYS days from FROM: calendar and model agree,
 * and both say "excluded" at least once and "not" at least once (a model
 * that never excludes would agree with a broken calendar too). */
static void agree(const model *m, int64_t from, int days, int step)
{
	pal_calendar c;
	const pal_tz *tz;
	char err[256];
	build(m, &c);
	assert_int_equal(pal_zone_acquire(m->zone, &tz, err, sizeof err), 0);
	int yes = 0, no = 0;
	for (int64_t t = from; t < from + (int64_t)days * 86400; t += step) {
		bool want = model_excludes(m, (time_t)t), got = pal_calendar_excludes(&c, tz, t);
		if (want != got) {
			char buf[32];
			pal_fmt_rfc3339(t, buf, sizeof buf);
			fail_msg("%s at %s (%s): calendar says %d, model %d", m->zone, buf,
				 m->include_only ? "include_only" : "exclude", got, want);
		}
		want ? yes++ : no++;
	}
	assert_true(yes > 0);
	assert_true(no > 0);
	pal_zone_release(tz);
	pal_calendar_clear(&c);
}

static void test_calendar_dates_and_ranges(void **st)
{
	(void)st;
	model m = {.zone = "Europe/Berlin",
		   .dates = {"2026-03-03", "2026-03-29"},
		   .wdays = {-1},
		   .ranges = {{"2026-03-10", "2026-03-12"}, {"2026-03-31", "2026-04-01"}}};
	agree(&m, MAR1, 35, 900);
}

static void test_calendar_yearly_and_weekdays(void **st)
{
	(void)st;
	model m = {
	    .zone = "America/New_York", .yearly = {"03-08", "11-01", "02-29"}, .wdays = {0, 6, -1}};
	agree(&m, MAR1, 30, 1800);
	agree(&m, OCT20, 30, 1800);
}

static void test_calendar_daily_windows_across_dst(void **st)
{
	(void)st;
	/* 02:00-03:00 does not exist on the spring day and happens twice on
	 * the autumn one: both follow local time */
	model m = {.zone = "Europe/Berlin",
		   .wdays = {-1},
		   .windows = {{"02:00:00", "03:00:00"}, {"23:30:00", "24:00:00"}}};
	agree(&m, MAR1 + 20 * 86400, 14, 300);
	agree(&m, OCT20, 14, 300);
}

static void test_calendar_include_only(void **st)
{
	(void)st;
	/* business hours on weekdays, minus nothing: everything else excluded */
	model m = {.zone = "Australia/Sydney",
		   .include_only = true,
		   .wdays = {1, 2, 3, 4, 5, -1},
		   .windows = {{"09:00:00", "17:30:00"}}};
	agree(&m, MAR1, 45, 600);
	model days = {.zone = "UTC",
		      .include_only = true,
		      .dates = {"2026-03-05"},
		      .wdays = {-1},
		      .ranges = {{"2026-03-20", "2026-03-22"}}};
	agree(&days, MAR1, 30, 3600);
}

static void test_calendar_exclude_mixes_days_and_windows(void **st)
{
	(void)st;
	model m = {.zone = "America/New_York",
		   .dates = {"2026-11-01"},
		   .yearly = {"12-25"},
		   .wdays = {6, -1},
		   .windows = {{"01:00:00", "02:00:00"}}};
	agree(&m, OCT20, 70, 600);
}

/* Through a schedule: every hourly instant of a job in New York with a
 * Berlin calendar is flagged exactly when the model excludes it, and
 * attributed to the calendar. */
static void test_calendar_through_schedule(void **st)
{
	(void)st;
	model m = {
	    .zone = "Europe/Berlin", .wdays = {0, -1}, .windows = {{"08:00:00", "09:00:00"}}};
	pal_calendar c;
	build(&m, &c);
	c.version = 3;
	pal_job_spec s = {0};
	s.id = "cal.test";
	s.cron = "0 * * * *";
	s.timezone = "America/New_York";
	s.dst = PAL_DST_AUTO;
	s.calendars = &c;
	s.n_calendars = 1;
	pal_schedule *sc;
	char err[256];
	assert_int_equal(pal_schedule_open(&s, &sc, err, sizeof err), 0);
	assert_false(pal_schedule_countable(sc));
	int64_t t = MAR1;
	int ex = 0;
	for (int i = 0; i < 24 * 40; i++) {
		bool excluded;
		assert_int_equal(pal_schedule_next(sc, t, &t, &excluded), 0);
		assert_int_equal(excluded, model_excludes(&m, (time_t)t));
		const pal_calendar *by = pal_schedule_excluding(sc, t);
		assert_int_equal(by != NULL, excluded);
		if (by) {
			assert_string_equal(by->name, "cal");
			assert_int_equal(by->version, 3);
			ex++;
		}
	}
	assert_true(ex > 24 * 5);
	pal_schedule_close(sc);
	/* the shared table (the controller's): one schedule for equal
	 * versions, its calendar zones from the same table */
	pal_plan_version pv = pal_plan_version_of_spec(&s, 1, PAL_NO_TIME);
	pal_schedule *a, *b;
	assert_int_equal(pal_schedule_acquire(&pv, s.id, &a, err, sizeof err), 0);
	assert_int_equal(pal_schedule_acquire(&pv, s.id, &b, err, sizeof err), 0);
	assert_ptr_equal(a, b);
	assert_non_null(pal_schedule_excluding(a, MAR1 + 8 * 3600 - 3600)); /* 08:00 Berlin */
	pal_schedule_release(a);
	pal_schedule_release(b);
	pal_calendar_clear(&c);
}

static void test_calendar_canonical_round_trip(void **st)
{
	(void)st;
	model m = {.zone = "Europe/Berlin",
		   .include_only = true,
		   .dates = {"2026-03-29", "2026-03-03"},
		   .yearly = {"12-25", "01-01"},
		   .wdays = {5, 1, -1},
		   .ranges = {{"2026-03-10", "2026-03-12"}},
		   .windows = {{"09:00:00", "17:00:00"}, {"02:00:00", "03:00:00"}}};
	pal_calendar c, back;
	build(&m, &c);
	c.version = 7;
	json_t *j = pal_calendar_canonical(&c, true);
	char *text = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	assert_string_equal(
	    text,
	    "{\"dates\":[\"2026-03-03\",\"2026-03-29\"],\"mode\":\"include_only\",\"name\":\"cal\","
	    "\"ranges\":[\"2026-03-10..2026-03-12\"],\"timezone\":\"Europe/Berlin\",\"version\":7,"
	    "\"weekdays\":[\"mon\",\"fri\"],\"windows\":[\"02:00:00-03:00:00\",\"09:00:00-17:00:"
	    "00\"],"
	    "\"yearly\":[\"01-01\",\"12-25\"]}");
	char err[256], h1[65], h2[65];
	assert_int_equal(pal_calendar_from_canonical(j, &back, err, sizeof err), 0);
	assert_int_equal(back.version, 7);
	assert_int_equal(pal_calendar_digest(&c, h1), 0);
	assert_int_equal(pal_calendar_digest(&back, h2), 0);
	assert_string_equal(h1, h2);
	back.version = 8; /* the digest is of the rules, not the version */
	assert_int_equal(pal_calendar_digest(&back, h2), 0);
	assert_string_equal(h1, h2);
	back.weekdays &= ~2u;
	assert_int_equal(pal_calendar_digest(&back, h2), 0);
	assert_string_not_equal(h1, h2);
	json_object_set_new(j, "colour", json_string("red"));
	pal_calendar_clear(&back);
	assert_int_equal(pal_calendar_from_canonical(j, &back, err, sizeof err), PAL_EINVAL);
	assert_non_null(strstr(err, "colour"));
	free(text);
	json_decref(j);
	pal_calendar_clear(&c);
}

static void test_calendar_parsers_refuse(void **st)
{
	(void)st;
	pal_cal_window w;
	uint16_t md;
	assert_int_equal(pal_cal_window_parse("09:00-17:00", &w), 0);
	assert_int_equal(w.from, 9 * 3600);
	assert_int_equal(w.to, 17 * 3600);
	assert_int_equal(pal_cal_window_parse("22:00-24:00", &w), 0);
	assert_int_equal(pal_cal_window_parse("17:00-09:00", &w), PAL_EINVAL);
	assert_int_equal(pal_cal_window_parse("24:00-24:00", &w), PAL_EINVAL);
	assert_int_equal(pal_cal_window_parse("9:00-17:00", &w), PAL_EINVAL);
	assert_int_equal(pal_cal_window_parse("09:60-10:00", &w), PAL_EINVAL);
	assert_int_equal(pal_cal_yearly_parse("02-29", &md), 0);
	assert_int_equal(md, 229);
	assert_int_equal(pal_cal_yearly_parse("02-30", &md), PAL_EINVAL);
	assert_int_equal(pal_cal_yearly_parse("13-01", &md), PAL_EINVAL);
}

/* The loader: `calendars:` before `jobs:`, names resolved into copies, the
 * canonical text written directly equal to jansson's (the digest), and the
 * refusals with their positions. */
static void test_calendar_job_file(void **st)
{
	(void)st;
	static const char ok[] =
	    "calendars:\n"
	    "  - name: hol\n"
	    "    timezone: Europe/Berlin\n"
	    "    exclude: {yearly: [\"12-25\"], weekdays: [sun, sat], windows: [\"02:00-03:30\"]}\n"
	    "  - {name: biz, include_only: {weekdays: [mon], windows: [\"09:00-17:00\"]}}\n"
	    "jobs:\n"
	    "  - {id: a, schedule: {cron: \"0 * * * *\", calendar: [biz, hol]}, target: {url: "
	    "\"http://x/y\"}}\n"
	    "  - {id: b, schedule: {cron: \"0 * * * *\"}, target: {url: \"http://x/y\"}}\n";
	pal_jobset set = {0};
	pal_diags d = {0};
	assert_int_equal(pal_jobfile_load_buffer("f.yaml", ok, sizeof ok - 1, &set, &d), 0);
	assert_int_equal(set.n_calendars, 2);
	assert_int_equal(set.n, 2);
	assert_int_equal(set.jobs[0].n_calendars, 2);
	assert_string_equal(set.jobs[0].calendars[0].name, "biz");
	assert_true(set.jobs[0].calendars[0].include_only);
	assert_int_equal(set.jobs[1].n_calendars, 0);
	set.calendars[1].version = 4;
	pal_jobset_calendar_versions(&set);
	assert_int_equal(set.jobs[0].calendars[0].version, 4); /* biz */
	assert_int_equal(set.jobs[0].calendars[1].version, 0);
	for (size_t i = 0; i < set.n; i++) {
		json_t *j = pal_job_spec_canonical(&set.jobs[i]);
		char *want = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII |
					       JSON_REAL_PRECISION(15));
		char *got, hex[65];
		assert_int_equal(pal_job_spec_digest(&set.jobs[i], &got, hex), 0);
		assert_string_equal(got, want);
		/* and it reads back to the same text */
		pal_job_spec back;
		char err[256], *again, hex2[65];
		assert_int_equal(pal_job_spec_from_canonical(j, &back, err, sizeof err), 0);
		assert_int_equal(pal_job_spec_digest(&back, &again, hex2), 0);
		assert_string_equal(hex, hex2);
		assert_int_equal(back.n_calendars, set.jobs[i].n_calendars);
		pal_job_spec_clear(&back);
		free(again);
		free(got);
		free(want);
		json_decref(j);
	}
	/* job b has no calendar: no schedule.calendars key, the digest of old */
	char *text, hex[65];
	assert_int_equal(pal_job_spec_digest(&set.jobs[1], &text, hex), 0);
	assert_null(strstr(text, "calendars"));
	free(text);
	pal_jobset_free(&set);
	pal_diags_free(&d);

	static const char bad[] =
	    "jobs:\n"
	    "  - {id: a, schedule: {cron: \"0 * * * *\", calendar: nope}, target: {url: "
	    "\"http://x/y\"}}\n"
	    "calendars:\n"
	    "  - {name: nope, exclude: {windows: [\"03:00-02:00\"], weekdays: [sun, funday]}}\n";
	assert_int_equal(pal_jobfile_load_buffer("b.yaml", bad, sizeof bad - 1, &set, &d),
			 PAL_EINVAL);
	const char *want[] = {"2:53 unknown calendar \"nope\"", "3:1 \"calendars\" after \"jobs\"",
			      "4:38 exclude.windows: invalid entry \"03:00-02:00\"",
			      "4:70 exclude.weekdays: invalid entry \"funday\""};
	assert_int_equal(d.n, 4);
	for (size_t i = 0; i < d.n; i++) {
		char at[300];
		snprintf(at, sizeof at, "%d:%d %s", d.v[i].line, d.v[i].col, d.v[i].msg);
		if (strncmp(at, want[i], strlen(want[i])))
			fail_msg("diagnostic %zu: [%s], want [%s...]", i, at, want[i]);
	}
	pal_jobset_free(&set);
	pal_diags_free(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_calendar_dates_and_ranges),
	    cmocka_unit_test(test_calendar_yearly_and_weekdays),
	    cmocka_unit_test(test_calendar_daily_windows_across_dst),
	    cmocka_unit_test(test_calendar_include_only),
	    cmocka_unit_test(test_calendar_exclude_mixes_days_and_windows),
	    cmocka_unit_test(test_calendar_through_schedule),
	    cmocka_unit_test(test_calendar_canonical_round_trip),
	    cmocka_unit_test(test_calendar_parsers_refuse),
	    cmocka_unit_test(test_calendar_job_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
