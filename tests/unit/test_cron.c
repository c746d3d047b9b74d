/*
 * test_cron.c - cron parsing, matching and DST policies (src/cron/cron.c).
 *
 * Every expectation is a concrete instant; transition instants come from
 * `zdump -v` of Debian 12's tzdata.  tests/reference/cron_reference.py
 * checks the same engine on thousands of generated cases.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "palisade/cron.h"
#include "palisade/timefmt.h"
#include "palisade/tz.h"

static const pal_dst_policy FIXED = { false, PAL_DST_GAP_SHIFT, PAL_DST_OVERLAP_FIRST };
static const pal_dst_policy SKIP_FIRST = { false, PAL_DST_GAP_SKIP, PAL_DST_OVERLAP_FIRST };
static const pal_dst_policy SHIFT_LAST = { false, PAL_DST_GAP_SHIFT, PAL_DST_OVERLAP_LAST };
static const pal_dst_policy SHIFT_BOTH = { false, PAL_DST_GAP_SHIFT, PAL_DST_OVERLAP_BOTH };

static int64_t at(const char *rfc3339)
{
	int64_t t;
	if (pal_parse_rfc3339(rfc3339, &t))
		fail_msg("bad instant %s", rfc3339);
	return t;
}

static pal_cron *parse_ok(const char *expr)
{
	pal_cron *c = NULL;
	char err[256];
	int field = -1;
	if (pal_cron_parse(expr, &c, err, sizeof err, &field))
		fail_msg("parse \"%s\": %s", expr, err);
	return c;
}

/*
 * Checks that the next instants of EXPR in ZONE after FROM under POLICY are
 * exactly the NULL-terminated list of RFC 3339 strings, and (when the list
 * ends with "END") that there is no further instant.
 */
static void expect_next(const char *expr, const char *zone, pal_dst_policy policy,
			const char *from, ...)
{
	pal_cron *c = parse_ok(expr);
	pal_tz *tz = NULL;
	char err[256];
	if (pal_tz_open(zone, &tz, err, sizeof err))
		fail_msg("zone %s: %s", zone, err);
	va_list ap;
	va_start(ap, from);
	int64_t t = at(from);
	int i = 0;
	for (const char *want; (want = va_arg(ap, const char *)); i++) {
		int64_t next = 0;
		int rc = pal_cron_next(c, tz, policy, t, &next);
		if (!strcmp(want, "END")) {
			if (rc != PAL_ENOENT) {
				char got[32];
				pal_fmt_rfc3339(next, got, sizeof got);
				fail_msg("\"%s\" in %s: #%d: expected no more instants, got %s (rc %d)",
					 expr, zone, i, got, rc);
			}
			break;
		}
		char got[32];
		pal_fmt_rfc3339(next, got, sizeof got);
		if (rc != 0 || strcmp(got, want))
			fail_msg("\"%s\" in %s after %s: #%d: expected %s, got %s (rc %d)", expr, zone,
				 from, i, want, rc ? "nothing" : got, rc);
		t = next;
	}
	va_end(ap);
	pal_tz_close(tz);
	pal_cron_free(c);
}

/* Parse must fail with the field number and a message containing WANT. */
static void expect_error(const char *expr, int want_field, const char *want)
{
	pal_cron *c = (pal_cron *)1;
	char err[256] = "";
	int field = -1;
	int rc = pal_cron_parse(expr, &c, err, sizeof err, &field);
	if (rc != PAL_EINVAL)
		fail_msg("\"%s\": accepted (rc %d)", expr, rc);
	assert_null(c);
	if (field != want_field || !strstr(err, want))
		fail_msg("\"%s\": field %d \"%s\", expected field %d containing \"%s\"", expr, field, err,
			 want_field, want);
}

/* ------------------------------------------------------------ Vixie form */

static void test_cron_vixie_every_five_minutes(void **state)
{
	(void)state;
	expect_next("*/5 * * * *", "UTC", PAL_DST_AUTO, "2026-01-01T00:00:00Z",
		    "2026-01-01T00:05:00Z", "2026-01-01T00:10:00Z", NULL);
	expect_next("*/5 * * * *", "UTC", PAL_DST_AUTO, "2026-01-01T00:04:59Z",
		    "2026-01-01T00:05:00Z", NULL);
}

static void test_cron_vixie_ranges_lists_steps(void **state)
{
	(void)state;
	expect_next("10-50/20 9,17 * * *", "UTC", PAL_DST_AUTO, "2026-01-01T00:00:00Z",
		    "2026-01-01T09:10:00Z", "2026-01-01T09:30:00Z", "2026-01-01T09:50:00Z",
		    "2026-01-01T17:10:00Z", NULL);
	expect_next("5/20 0 * * *", "UTC", PAL_DST_AUTO, "2026-01-01T00:00:00Z",
		    "2026-01-01T00:05:00Z", "2026-01-01T00:25:00Z", "2026-01-01T00:45:00Z",
		    "2026-01-02T00:05:00Z", NULL);
	expect_next("0 0 1-3,15 * *", "UTC", PAL_DST_AUTO, "2026-01-02T12:00:00Z",
		    "2026-01-03T00:00:00Z", "2026-01-15T00:00:00Z", "2026-02-01T00:00:00Z", NULL);
}

static void test_cron_names_are_case_insensitive(void **state)
{
	(void)state;
	/* 2026-01-01 is a Thursday */
	expect_next("0 9 * jan-Mar mon-FRI", "UTC", PAL_DST_AUTO, "2026-01-01T10:00:00Z",
		    "2026-01-02T09:00:00Z", "2026-01-05T09:00:00Z", NULL);
	expect_next("0 9 1 Dec,FEB *", "UTC", PAL_DST_AUTO, "2026-01-01T10:00:00Z",
		    "2026-02-01T09:00:00Z", "2026-12-01T09:00:00Z", NULL);
}

static void test_cron_dow_seven_is_sunday(void **state)
{
	(void)state;
	/* 2026-01-04 is a Sunday */
	expect_next("0 0 * * 7", "UTC", PAL_DST_AUTO, "2026-01-01T00:00:00Z",
		    "2026-01-04T00:00:00Z", "2026-01-11T00:00:00Z", NULL);
	expect_next("0 0 * * 0", "UTC", PAL_DST_AUTO, "2026-01-01T00:00:00Z",
		    "2026-01-04T00:00:00Z", NULL);
	expect_next("0 0 * * 5-7", "UTC", PAL_DST_AUTO, "2026-01-01T00:00:00Z",
		    "2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z", "2026-01-04T00:00:00Z",
		    "2026-01-09T00:00:00Z", NULL);
}

static void test_cron_vixie_dom_or_dow_when_both_restricted(void **state)
{
	(void)state;
	/* the 13th OR any Friday: Fri 2026-02-06, Fri 02-13 (both), Fri 02-20 */
	expect_next("0 0 13 * 5", "UTC", PAL_DST_AUTO, "2026-02-01T00:00:00Z",
		    "2026-02-06T00:00:00Z", "2026-02-13T00:00:00Z", "2026-02-20T00:00:00Z",
		    "2026-02-27T00:00:00Z", "2026-03-06T00:00:00Z", "2026-03-13T00:00:00Z", NULL);
	/* dom starts with '*': both must match - odd days that are Mondays */
	expect_next("0 0 */2 * 1", "UTC", PAL_DST_AUTO, "2026-02-01T00:00:00Z",
		    "2026-02-09T00:00:00Z", "2026-02-23T00:00:00Z", "2026-03-09T00:00:00Z", NULL);
	/* dow '*': only dom counts */
	expect_next("0 0 13 * *", "UTC", PAL_DST_AUTO, "2026-02-01T00:00:00Z",
		    "2026-02-13T00:00:00Z", "2026-03-13T00:00:00Z", NULL);
	/* "1-31" does not start with '*': OR with Monday means every day */
	expect_next("0 0 1-31 * 1", "UTC", PAL_DST_AUTO, "2026-02-01T00:00:00Z",
		    "2026-02-02T00:00:00Z", "2026-02-03T00:00:00Z", NULL);
}

static void test_cron_vixie_question_mark_reads_as_star(void **state)
{
	(void)state;
	expect_next("0 0 ? * 1", "UTC", PAL_DST_AUTO, "2026-02-01T00:00:00Z",
		    "2026-02-02T00:00:00Z", "2026-02-09T00:00:00Z", NULL);
}

static void test_cron_macros(void **state)
{
	(void)state;
	expect_next("@yearly", "UTC", PAL_DST_AUTO, "2026-05-05T00:00:00Z", "2027-01-01T00:00:00Z",
		    NULL);
	expect_next("@annually", "UTC", PAL_DST_AUTO, "2026-05-05T00:00:00Z",
		    "2027-01-01T00:00:00Z", NULL);
	expect_next("@monthly", "UTC", PAL_DST_AUTO, "2026-05-05T00:00:00Z",
		    "2026-06-01T00:00:00Z", NULL);
	expect_next("@weekly", "UTC", PAL_DST_AUTO, "2026-05-05T00:00:00Z",
		    "2026-05-10T00:00:00Z", NULL);
	expect_next("@daily", "UTC", PAL_DST_AUTO, "2026-05-05T00:00:00Z", "2026-05-06T00:00:00Z",
		    NULL);
	expect_next("@midnight", "UTC", PAL_DST_AUTO, "2026-05-05T00:00:00Z",
		    "2026-05-06T00:00:00Z", NULL);
	expect_next("  @HOURLY ", "UTC", PAL_DST_AUTO, "2026-05-05T00:00:00Z",
		    "2026-05-05T01:00:00Z", NULL);
	pal_cron *c = parse_ok("@hourly");
	assert_true(pal_cron_follows_wall_clock(c));
	pal_cron_free(c);
	c = parse_ok("@daily");
	assert_false(pal_cron_follows_wall_clock(c));
	pal_cron_free(c);
}

/* ------------------------------------------------------------ Quartz form */

static void test_cron_quartz_seconds_field(void **state)
{
	(void)state;
	expect_next("15,45 * * * * ?", "UTC", PAL_DST_AUTO, "2026-01-01T00:00:00Z",
		    "2026-01-01T00:00:15Z", "2026-01-01T00:00:45Z", "2026-01-01T00:01:15Z", NULL);
	expect_next("0 0 12 * * ?", "UTC", PAL_DST_AUTO, "2026-01-01T12:00:00Z",
		    "2026-01-02T12:00:00Z", NULL);
}

static void test_cron_quartz_dow_one_is_sunday(void **state)
{
	(void)state;
	expect_next("0 0 0 ? * 1", "UTC", PAL_DST_AUTO, "2026-01-01T00:00:00Z",
		    "2026-01-04T00:00:00Z", NULL);
	expect_next("0 0 0 ? * 7", "UTC", PAL_DST_AUTO, "2026-01-01T00:00:00Z",
		    "2026-01-03T00:00:00Z", NULL);
	expect_next("0 0 0 ? * MON-FRI", "UTC", PAL_DST_AUTO, "2026-01-02T00:00:00Z",
		    "2026-01-05T00:00:00Z", NULL);
}

static void test_cron_quartz_last_day_of_month(void **state)
{
	(void)state;
	expect_next("0 0 0 L * ?", "UTC", PAL_DST_AUTO, "2024-01-31T00:00:00Z",
		    "2024-02-29T00:00:00Z", "2024-03-31T00:00:00Z", "2024-04-30T00:00:00Z", NULL);
}

static void test_cron_quartz_third_to_last_day(void **state)
{
	(void)state;
	expect_next("0 0 0 L-3 * ?", "UTC", PAL_DST_AUTO, "2025-01-01T00:00:00Z",
		    "2025-01-28T00:00:00Z", "2025-02-25T00:00:00Z", "2025-03-28T00:00:00Z",
		    "2025-04-27T00:00:00Z", NULL);
	/* L-30 exists only in 31-day months, as the 1st */
	expect_next("0 0 0 L-30 * ?", "UTC", PAL_DST_AUTO, "2025-01-02T00:00:00Z",
		    "2025-03-01T00:00:00Z", "2025-05-01T00:00:00Z", NULL);
}

static void test_cron_quartz_nearest_weekday(void **state)
{
	(void)state;
	/* 15W: 2026-02-15 is a Sunday -> Monday 16th; 2026-03-15 Sunday -> 16th;
	 * 2026-08-15 Saturday -> Friday 14th; 2026-04-15 Wednesday -> 15th */
	expect_next("0 0 9 15W * ?", "UTC", PAL_DST_AUTO, "2026-02-01T00:00:00Z",
		    "2026-02-16T09:00:00Z", "2026-03-16T09:00:00Z", "2026-04-15T09:00:00Z", NULL);
	expect_next("0 0 9 15W 8 ?", "UTC", PAL_DST_AUTO, "2026-01-01T00:00:00Z",
		    "2026-08-14T09:00:00Z", NULL);
}

static void test_cron_quartz_1w_on_saturday_is_monday_the_3rd(void **state)
{
	(void)state;
	/* 2026-08-01 is a Saturday: Friday would leave the month */
	expect_next("0 0 0 1W 8 ?", "UTC", PAL_DST_AUTO, "2026-01-01T00:00:00Z",
		    "2026-08-03T00:00:00Z", NULL);
	/* 2026-02-01 is a Sunday: Monday the 2nd */
	expect_next("0 0 0 1W 2 ?", "UTC", PAL_DST_AUTO, "2026-01-01T00:00:00Z",
		    "2026-02-02T00:00:00Z", NULL);
}

static void test_cron_quartz_31w_skips_short_months(void **state)
{
	(void)state;
	/* 2026-01-31 Saturday -> Friday 30th; Feb, Apr, Jun have no 31st;
	 * 2026-05-31 Sunday -> Friday 29th (Monday would leave the month). */
	expect_next("0 0 0 31W * ?", "UTC", PAL_DST_AUTO, "2026-01-01T00:00:00Z",
		    "2026-01-30T00:00:00Z", "2026-03-31T00:00:00Z", "2026-05-29T00:00:00Z",
		    "2026-07-31T00:00:00Z", NULL);
}

static void test_cron_quartz_last_weekday_of_month(void **state)
{
	(void)state;
	/* LW: 2026-01-31 Sat -> 30th; 2026-02-28 Sat -> 27th; 2026-05-31 Sun -> 29th */
	expect_next("0 0 0 LW * ?", "UTC", PAL_DST_AUTO, "2026-01-01T00:00:00Z",
		    "2026-01-30T00:00:00Z", "2026-02-27T00:00:00Z", "2026-03-31T00:00:00Z",
		    "2026-04-30T00:00:00Z", "2026-05-29T00:00:00Z", NULL);
}

static void test_cron_quartz_last_friday(void **state)
{
	(void)state;
	expect_next("0 0 0 ? * 6L", "UTC", PAL_DST_AUTO, "2026-01-01T00:00:00Z",
		    "2026-01-30T00:00:00Z", "2026-02-27T00:00:00Z", "2026-03-27T00:00:00Z", NULL);
}

static void test_cron_quartz_third_monday(void **state)
{
	(void)state;
	expect_next("0 0 12 ? * 2#3", "UTC", PAL_DST_AUTO, "2026-01-01T00:00:00Z",
		    "2026-01-19T12:00:00Z", "2026-02-16T12:00:00Z", "2026-03-16T12:00:00Z", NULL);
	expect_next("0 0 12 ? * MON#3", "UTC", PAL_DST_AUTO, "2026-01-01T00:00:00Z",
		    "2026-01-19T12:00:00Z", NULL);
	/* a fifth Thursday exists only in some months */
	expect_next("0 0 0 ? * 5#5", "UTC", PAL_DST_AUTO, "2026-01-01T00:00:00Z",
		    "2026-01-29T00:00:00Z", "2026-04-30T00:00:00Z", "2026-07-30T00:00:00Z", NULL);
}

static void test_cron_quartz_lone_l_is_saturday(void **state)
{
	(void)state;
	expect_next("0 0 0 ? * L", "UTC", PAL_DST_AUTO, "2026-01-01T00:00:00Z",
		    "2026-01-03T00:00:00Z", "2026-01-10T00:00:00Z", NULL);
}

static void test_cron_quartz_year_field(void **state)
{
	(void)state;
	expect_next("0 0 0 1 1 ? 2028,2030", "UTC", PAL_DST_AUTO, "2026-01-01T00:00:00Z",
		    "2028-01-01T00:00:00Z", "2030-01-01T00:00:00Z", "END", NULL);
	expect_next("0 0 0 29 2 ? 2090-2099", "UTC", PAL_DST_AUTO, "2026-01-01T00:00:00Z",
		    "2092-02-29T00:00:00Z", "2096-02-29T00:00:00Z", "END", NULL);
	expect_next("0 0 0 1 1 ? 2020", "UTC", PAL_DST_AUTO, "2026-01-01T00:00:00Z", "END", NULL);
}

static void test_cron_quartz_wrapping_range(void **state)
{
	(void)state;
	expect_next("0 0 22-1 * * ?", "UTC", PAL_DST_AUTO, "2026-01-01T02:00:00Z",
		    "2026-01-01T22:00:00Z", "2026-01-01T23:00:00Z", "2026-01-02T00:00:00Z",
		    "2026-01-02T01:00:00Z", "2026-01-02T22:00:00Z", NULL);
	expect_next("0 0 0 ? * FRI-MON", "UTC", PAL_DST_AUTO, "2026-01-01T00:00:00Z",
		    "2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z", "2026-01-04T00:00:00Z",
		    "2026-01-05T00:00:00Z", "2026-01-09T00:00:00Z", NULL);
}

static void test_cron_never_matching_is_enoent(void **state)
{
	(void)state;
	expect_next("0 0 0 30 2 ?", "UTC", PAL_DST_AUTO, "2026-01-01T00:00:00Z", "END", NULL);
	expect_next("0 0 31 4 *", "Europe/Berlin", PAL_DST_AUTO, "1970-01-01T00:00:00Z", "END",
		    NULL);
	expect_next("0 0 0 L-30 2 ?", "UTC", PAL_DST_AUTO, "2026-01-01T00:00:00Z", "END", NULL);
}

static void test_cron_enoent_after_2099(void **state)
{
	(void)state;
	expect_next("0 0 1 1 *", "UTC", PAL_DST_AUTO, "2098-06-01T00:00:00Z",
		    "2099-01-01T00:00:00Z", "END", NULL);
	expect_next("* * * * * ?", "UTC", PAL_DST_AUTO, "2099-12-31T23:59:58Z",
		    "2099-12-31T23:59:59Z", "END", NULL);
	/* the limit is the local calendar: 2099-12-31 23:59 in UTC-12 is 2100 in UTC */
	expect_next("59 23 31 12 *", "Etc/GMT+12", PAL_DST_AUTO, "2099-06-01T00:00:00Z",
		    "2100-01-01T11:59:00Z", "END", NULL);
	pal_cron *c = parse_ok("* * * * *");
	pal_tz *tz;
	assert_int_equal(pal_tz_open("UTC", &tz, NULL, 0), 0);
	int64_t next;
	assert_int_equal(pal_cron_next(c, tz, PAL_DST_AUTO, INT64_MAX, &next), PAL_ENOENT);
	assert_int_equal(pal_cron_next(c, tz, PAL_DST_AUTO, INT64_MIN, &next), 0);
	assert_int_equal(next, 0); /* 1970-01-01T00:00:00Z */
	pal_tz_close(tz);
	pal_cron_free(c);
}

/* ------------------------------------------------------------ errors */

static void test_cron_errors_name_the_field(void **state)
{
	(void)state;
	expect_error("0 0 25 * * ?", 3, "field 3 (hour) \"25\": value 25 out of range 0-23");
	expect_error("61 * * * *", 1, "field 1 (minute) \"61\": value 61 out of range 0-59");
	expect_error("0 60 * * * ?", 2, "field 2 (minute)");
	expect_error("* * 0 * *", 3, "field 3 (day-of-month) \"0\": value 0 out of range 1-31");
	expect_error("* * * 13 *", 4, "field 4 (month)");
	expect_error("* * * * 8", 5, "field 5 (day-of-week) \"8\": value 8 out of range 0-7");
	expect_error("0 0 0 ? * 0", 6, "value 0 out of range 1-7");
	expect_error("0 0 0 1 1 ? 2100", 7, "field 7 (year) \"2100\": value 2100 out of range 1970-2099");
	expect_error("0 0 0 1 1 ? 1969", 7, "out of range 1970-2099");
	expect_error("* * * FOO *", 4, "unknown month \"FOO\"");
	expect_error("* * * * FUNDAY", 5, "unknown day of week");
	expect_error("*/0 * * * *", 1, "step 0 out of range 1-60");
	expect_error("*/x * * * *", 1, "invalid step");
	expect_error("5-1 * * * *", 1, "range 5-1 is reversed");
	expect_error("1,,2 * * * *", 1, "empty list element");
	expect_error("1- * * * *", 1, "missing value");
	expect_error("0 0 0 1 1 ? 2030-2020", 7, "reversed");
	expect_error("? * * * *", 1, "'?' is only allowed in the day-of-month and day-of-week");
	expect_error("0 0 L * *", 3, "only supported in 6/7-field Quartz");
	expect_error("0 0 * * 5L", 5, "only supported in 6/7-field Quartz");
	expect_error("0 0 * * 1#2", 5, "only supported in 6/7-field Quartz");
}

static void test_cron_errors_quartz_day_rules(void **state)
{
	(void)state;
	expect_error("0 0 0 ? * ?", 6, "cannot both be '?'");
	expect_error("0 0 0 1 * MON", 6, "one of day-of-month and day-of-week must be '?'");
	expect_error("0 0 0 * * *", 6, "must be '?'");
	expect_error("0 0 0 32W * ?", 4, "value 32 out of range 1-31");
	expect_error("0 0 0 0W * ?", 4, "out of range 1-31");
	expect_error("0 0 0 L-31 * ?", 4, "offset 31 out of range 0-30");
	expect_error("0 0 0 1,LW * ?", 4, "cannot be combined");
	expect_error("0 0 0 W * ?", 4, "invalid use of L or W");
	expect_error("0 0 0 ? * 8#1", 6, "value 8 out of range 1-7");
	expect_error("0 0 0 ? * 2#6", 6, "occurrence 6 out of range 1-5");
	expect_error("0 0 0 ? * 2#", 6, "invalid occurrence");
	expect_error("0 0 0 ? * 1-2L", 6, "cannot be combined");
	expect_error("0 0 0 ? * 9L", 6, "value 9 out of range 1-7");
}

static void test_cron_errors_outside_fields(void **state)
{
	(void)state;
	expect_error("", 0, "expected 5 fields");
	expect_error("* * * *", 0, "got 4");
	expect_error("* * * * * * * *", 0, "got more than 7");
	expect_error("@reboot", 0, "unknown macro \"@reboot\"");
	expect_error("@daily *", 0, "expected 5 fields");
	char big[1100];
	memset(big, '1', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	expect_error(big, 0, "expression too long");
	pal_cron *c;
	assert_int_equal(pal_cron_parse(NULL, &c, NULL, 0, NULL), PAL_EINVAL);
}

static void test_cron_follows_wall_clock_and_auto_policy(void **state)
{
	(void)state;
	static const struct {
		const char *expr;
		bool wall;
	} cases[] = {
		{ "* * * * *", true },	  { "*/15 * * * *", true }, { "0 * * * *", true },
		{ "30 2 * * *", false },  { "0 1-5 * * *", false }, { "* 0 0 * * ?", true },
		{ "0 0 2 * * ?", false }, { "0 */5 3 * * ?", true }, { "0 0 */2 * * ?", true },
		{ "0 0 ? * *", false }, /* Vixie '?' in dom: day fields never count */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		pal_cron *c = parse_ok(cases[i].expr);
		if (pal_cron_follows_wall_clock(c) != cases[i].wall)
			fail_msg("\"%s\": wall clock %d", cases[i].expr, !cases[i].wall);
		pal_dst_policy p = pal_cron_effective_dst(c, PAL_DST_AUTO);
		assert_false(p.is_auto);
		assert_int_equal(p.gap, cases[i].wall ? PAL_DST_GAP_SKIP : PAL_DST_GAP_SHIFT);
		assert_int_equal(p.overlap, cases[i].wall ? PAL_DST_OVERLAP_BOTH : PAL_DST_OVERLAP_FIRST);
		p = pal_cron_effective_dst(c, SHIFT_LAST);
		assert_int_equal(p.overlap, PAL_DST_OVERLAP_LAST);
		pal_cron_free(c);
	}
}

static void test_cron_dst_policy_parse(void **state)
{
	(void)state;
	pal_dst_policy p;
	char err[256];
	assert_int_equal(pal_dst_policy_parse("auto", &p, err, sizeof err), 0);
	assert_true(p.is_auto);
	assert_int_equal(pal_dst_policy_parse("gap=skip,overlap=both", &p, err, sizeof err), 0);
	assert_false(p.is_auto);
	assert_int_equal(p.gap, PAL_DST_GAP_SKIP);
	assert_int_equal(p.overlap, PAL_DST_OVERLAP_BOTH);
	assert_int_equal(pal_dst_policy_parse("overlap=last", &p, err, sizeof err), 0);
	assert_int_equal(p.gap, PAL_DST_GAP_SHIFT);
	assert_int_equal(p.overlap, PAL_DST_OVERLAP_LAST);
	assert_int_equal(pal_dst_policy_parse("gap=skip", &p, err, sizeof err), 0);
	assert_int_equal(p.overlap, PAL_DST_OVERLAP_FIRST);
	static const char *const bad[] = { "", "manual", "gap=later", "gap=skip,gap=shift",
					   "gap=skip,", "overlap=both,auto", "GAP=skip" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		if (pal_dst_policy_parse(bad[i], &p, err, sizeof err) != PAL_EINVAL)
			fail_msg("accepted \"%s\"", bad[i]);
	assert_non_null(strstr(err, "invalid dst policy"));
}

/* ------------------------------------------------------------ DST */

static void test_cron_spring_forward_fixed_time_shifts_to_transition(void **state)
{
	(void)state;
	/* Berlin 2026-03-29: 02:00 CET -> 03:00 CEST at 01:00Z */
	expect_next("30 2 * * *", "Europe/Berlin", PAL_DST_AUTO, "2026-03-27T12:00:00Z",
		    "2026-03-28T01:30:00Z", "2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z", NULL);
	/* 02:00 and 02:30 both fall in the gap: they fire once, together */
	expect_next("0,30 2 * * *", "Europe/Berlin", PAL_DST_AUTO, "2026-03-28T12:00:00Z",
		    "2026-03-29T01:00:00Z", "2026-03-30T00:00:00Z", NULL);
	/* a gap time and the first time after the gap also coincide */
	expect_next("30 2,3 * * *", "Europe/Berlin", PAL_DST_AUTO, "2026-03-28T12:00:00Z",
		    "2026-03-29T01:00:00Z", "2026-03-29T01:30:00Z", "2026-03-30T00:30:00Z", NULL);
	/* New York 2026-03-08: 02:00 EST -> 03:00 EDT at 07:00Z */
	expect_next("30 2 * * *", "America/New_York", PAL_DST_AUTO, "2026-03-07T12:00:00Z",
		    "2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z", NULL);
}

static void test_cron_spring_forward_skip_policy_drops_the_day(void **state)
{
	(void)state;
	expect_next("30 2 * * *", "Europe/Berlin", SKIP_FIRST, "2026-03-27T12:00:00Z",
		    "2026-03-28T01:30:00Z", "2026-03-30T00:30:00Z", NULL);
}

static void test_cron_spring_forward_wall_clock_skips_missing_hour(void **state)
{
	(void)state;
	expect_next("*/30 * * * *", "Europe/Berlin", PAL_DST_AUTO, "2026-03-29T00:00:00Z",
		    "2026-03-29T00:30:00Z", "2026-03-29T01:00:00Z", "2026-03-29T01:30:00Z", NULL);
	/* with shift, every gap time collapses onto the transition: still once */
	expect_next("*/30 * * * *", "Europe/Berlin", SHIFT_BOTH, "2026-03-29T00:00:00Z",
		    "2026-03-29T00:30:00Z", "2026-03-29T01:00:00Z", "2026-03-29T01:30:00Z", NULL);
}

static void test_cron_fall_back_fires_once(void **state)
{
	(void)state;
	/* Berlin 2026-10-25: 03:00 CEST -> 02:00 CET at 01:00Z */
	expect_next("30 2 * * *", "Europe/Berlin", PAL_DST_AUTO, "2026-10-24T12:00:00Z",
		    "2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z", NULL);
	/* starting between the two passes does not fire the second one */
	expect_next("30 2 * * *", "Europe/Berlin", PAL_DST_AUTO, "2026-10-25T00:45:00Z",
		    "2026-10-26T01:30:00Z", NULL);
}

static void test_cron_fall_back_overlap_last_and_both(void **state)
{
	(void)state;
	expect_next("30 2 * * *", "Europe/Berlin", SHIFT_LAST, "2026-10-24T12:00:00Z",
		    "2026-10-25T01:30:00Z", "2026-10-26T01:30:00Z", NULL);
	expect_next("30 2 * * *", "Europe/Berlin", SHIFT_BOTH, "2026-10-24T12:00:00Z",
		    "2026-10-25T00:30:00Z", "2026-10-25T01:30:00Z", "2026-10-26T01:30:00Z", NULL);
	/* New York 2026-11-01: 02:00 EDT -> 01:00 EST at 06:00Z */
	expect_next("30 1 * * *", "America/New_York", PAL_DST_AUTO, "2026-10-31T12:00:00Z",
		    "2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z", NULL);
	expect_next("30 1 * * *", "America/New_York", SHIFT_LAST, "2026-10-31T12:00:00Z",
		    "2026-11-01T06:30:00Z", "2026-11-02T06:30:00Z", NULL);
}

static void test_cron_fall_back_wall_clock_fires_both_passes(void **state)
{
	(void)state;
	expect_next("*/30 * * * *", "Europe/Berlin", PAL_DST_AUTO, "2026-10-24T23:00:00Z",
		    "2026-10-24T23:30:00Z", "2026-10-25T00:00:00Z", "2026-10-25T00:30:00Z",
		    "2026-10-25T01:00:00Z", "2026-10-25T01:30:00Z", "2026-10-25T02:00:00Z", NULL);
	/* the same job with overlap=first leaves out the second pass */
	expect_next("*/30 * * * *", "Europe/Berlin", FIXED, "2026-10-24T23:00:00Z",
		    "2026-10-24T23:30:00Z", "2026-10-25T00:00:00Z", "2026-10-25T00:30:00Z",
		    "2026-10-25T02:00:00Z", NULL);
	/* started inside the first pass, a Quartz every-20-minutes job goes on
	 * through the second pass */
	expect_next("0 */20 * * * ?", "Europe/Berlin", PAL_DST_AUTO, "2026-10-25T00:50:00Z",
		    "2026-10-25T01:00:00Z", "2026-10-25T01:20:00Z", "2026-10-25T01:40:00Z",
		    "2026-10-25T02:00:00Z", NULL);
}

static void test_cron_lord_howe_half_hour_shifts(void **state)
{
	(void)state;
	/* 2026-10-04 02:00 -> 02:30 (+10:30 -> +11) at 2026-10-03T15:30Z */
	expect_next("15 2 * * *", "Australia/Lord_Howe", PAL_DST_AUTO, "2026-10-02T12:00:00Z",
		    "2026-10-02T15:45:00Z", "2026-10-03T15:30:00Z", "2026-10-04T15:15:00Z", NULL);
	/* 2026-04-05 02:00 -> 01:30 (+11 -> +10:30) at 2026-04-04T15:00Z */
	expect_next("45 1 * * *", "Australia/Lord_Howe", SHIFT_BOTH, "2026-04-03T12:00:00Z",
		    "2026-04-03T14:45:00Z", "2026-04-04T14:45:00Z", "2026-04-04T15:15:00Z",
		    "2026-04-05T15:15:00Z", NULL);
	expect_next("*/15 * * * *", "Australia/Lord_Howe", PAL_DST_AUTO, "2026-04-04T14:40:00Z",
		    "2026-04-04T14:45:00Z", "2026-04-04T15:00:00Z", "2026-04-04T15:15:00Z",
		    "2026-04-04T15:30:00Z", NULL);
}

static void test_cron_sao_paulo_midnight_gap_then_rule_abolished(void **state)
{
	(void)state;
	/* 2018-11-04 00:00 did not exist (-03 -> -02 at 03:00Z) */
	expect_next("0 0 * * *", "America/Sao_Paulo", PAL_DST_AUTO, "2018-11-03T12:00:00Z",
		    "2018-11-04T03:00:00Z", "2018-11-05T02:00:00Z", NULL);
	expect_next("0 0 * * *", "America/Sao_Paulo", SKIP_FIRST, "2018-11-03T12:00:00Z",
		    "2018-11-05T02:00:00Z", NULL);
	/* no DST any more in 2019 */
	expect_next("0 0 * * *", "America/Sao_Paulo", PAL_DST_AUTO, "2019-11-02T12:00:00Z",
		    "2019-11-03T03:00:00Z", "2019-11-04T03:00:00Z", NULL);
}

static void test_cron_apia_skipped_day(void **state)
{
	(void)state;
	/* Friday 2011-12-30 never happened in Apia (-10 -> +14 at 10:00Z) */
	expect_next("0 12 * * *", "Pacific/Apia", PAL_DST_AUTO, "2011-12-29T12:00:00Z",
		    "2011-12-29T22:00:00Z", "2011-12-30T10:00:00Z", "2011-12-30T22:00:00Z", NULL);
	expect_next("0 12 * * *", "Pacific/Apia", SKIP_FIRST, "2011-12-29T12:00:00Z",
		    "2011-12-29T22:00:00Z", "2011-12-30T22:00:00Z", NULL);
	/* an every-minute job just skips the day */
	expect_next("* * * * *", "Pacific/Apia", PAL_DST_AUTO, "2011-12-30T09:58:30Z",
		    "2011-12-30T09:59:00Z", "2011-12-30T10:00:00Z", "2011-12-30T10:01:00Z", NULL);
	/* "every Friday" had no Friday that week; with shift it fires at the jump */
	expect_next("0 0 9 ? * FRI", "Pacific/Apia", PAL_DST_AUTO, "2011-12-20T00:00:00Z",
		    "2011-12-23T19:00:00Z", "2011-12-30T10:00:00Z", "2012-01-05T19:00:00Z", NULL);
}

static void test_cron_moscow_offset_changes(void **state)
{
	(void)state;
	/* 2011-03-27 02:00 -> 03:00 (+3 -> +4, for good) */
	expect_next("30 2 * * *", "Europe/Moscow", PAL_DST_AUTO, "2011-03-25T12:00:00Z",
		    "2011-03-25T23:30:00Z", "2011-03-26T23:00:00Z", "2011-03-27T22:30:00Z", NULL);
	/* 2014-10-26 02:00 -> 01:00 (+4 -> +3, for good) */
	expect_next("30 1 * * *", "Europe/Moscow", SHIFT_BOTH, "2014-10-24T12:00:00Z",
		    "2014-10-24T21:30:00Z", "2014-10-25T21:30:00Z", "2014-10-25T22:30:00Z",
		    "2014-10-26T22:30:00Z", NULL);
}

static void test_cron_kolkata_has_no_dst(void **state)
{
	(void)state;
	expect_next("30 2 * * *", "Asia/Kolkata", PAL_DST_AUTO, "2026-03-28T00:00:00Z",
		    "2026-03-28T21:00:00Z", "2026-03-29T21:00:00Z", NULL);
	expect_next("0 0 0 L * ?", "Asia/Kolkata", PAL_DST_AUTO, "2026-01-01T00:00:00Z",
		    "2026-01-30T18:30:00Z", "2026-02-27T18:30:00Z", NULL);
}

static void test_cron_far_future_dst(void **state)
{
	(void)state;
	expect_next("30 2 * * *", "Europe/Berlin", PAL_DST_AUTO, "2099-03-28T12:00:00Z",
		    "2099-03-29T01:00:00Z", "2099-03-30T00:30:00Z", NULL);
	expect_next("0 0 1 * *", "Europe/Dublin", PAL_DST_AUTO, "2068-10-15T00:00:00Z",
		    "2068-11-01T00:00:00Z", "2068-12-01T00:00:00Z", NULL);
}

/* next(next(x)) > next(x) through three days around transitions, and the
 * walk terminates (completeness is the reference script's job). */
static void test_cron_results_strictly_increase_across_transitions(void **state)
{
	(void)state;
	static const char *const exprs[] = { "*/7 * * * *", "0 30 1-3 * * ?", "17 2 * * *",
					     "*/45 * * * * ?" };
	static const char *const zones[] = { "Europe/Berlin", "Australia/Lord_Howe",
					     "Pacific/Apia", "America/Sao_Paulo" };
	static const char *const from[] = { "2026-10-24T00:00:00Z", "2026-04-03T00:00:00Z",
					    "2011-12-29T00:00:00Z", "2018-11-03T00:00:00Z" };
	for (size_t z = 0; z < 4; z++) {
		pal_tz *tz;
		assert_int_equal(pal_tz_open(zones[z], &tz, NULL, 0), 0);
		for (size_t e = 0; e < 4; e++) {
			pal_cron *c = parse_ok(exprs[e]);
			int64_t t = at(from[z]), end = t + 3 * 86400;
			for (int n = 0; t < end; n++) {
				int64_t next;
				assert_int_equal(pal_cron_next(c, tz, SHIFT_BOTH, t, &next), 0);
				assert_true(next > t);
				t = next;
				assert_true(n < 100000);
			}
			pal_cron_free(c);
		}
		pal_tz_close(tz);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cron_vixie_every_five_minutes),
		cmocka_unit_test(test_cron_vixie_ranges_lists_steps),
		cmocka_unit_test(test_cron_names_are_case_insensitive),
		cmocka_unit_test(test_cron_dow_seven_is_sunday),
		cmocka_unit_test(test_cron_vixie_dom_or_dow_when_both_restricted),
		cmocka_unit_test(test_cron_vixie_question_mark_reads_as_star),
		cmocka_unit_test(test_cron_macros),
		cmocka_unit_test(test_cron_quartz_seconds_field),
		cmocka_unit_test(test_cron_quartz_dow_one_is_sunday),
		cmocka_unit_test(test_cron_quartz_last_day_of_month),
		cmocka_unit_test(test_cron_quartz_third_to_last_day),
		cmocka_unit_test(test_cron_quartz_nearest_weekday),
		cmocka_unit_test(test_cron_quartz_1w_on_saturday_is_monday_the_3rd),
		cmocka_unit_test(test_cron_quartz_31w_skips_short_months),
		cmocka_unit_test(test_cron_quartz_last_weekday_of_month),
		cmocka_unit_test(test_cron_quartz_last_friday),
		cmocka_unit_test(test_cron_quartz_third_monday),
		cmocka_unit_test(test_cron_quartz_lone_l_is_saturday),
		cmocka_unit_test(test_cron_quartz_year_field),
		cmocka_unit_test(test_cron_quartz_wrapping_range),
		cmocka_unit_test(test_cron_never_matching_is_enoent),
		cmocka_unit_test(test_cron_enoent_after_2099),
		cmocka_unit_test(test_cron_errors_name_the_field),
		cmocka_unit_test(test_cron_errors_quartz_day_rules),
		cmocka_unit_test(test_cron_errors_outside_fields),
		cmocka_unit_test(test_cron_follows_wall_clock_and_auto_policy),
		cmocka_unit_test(test_cron_dst_policy_parse),
		cmocka_unit_test(test_cron_spring_forward_fixed_time_shifts_to_transition),
		cmocka_unit_test(test_cron_spring_forward_skip_policy_drops_the_day),
		cmocka_unit_test(test_cron_spring_forward_wall_clock_skips_missing_hour),
		cmocka_unit_test(test_cron_fall_back_fires_once),
		cmocka_unit_test(test_cron_fall_back_overlap_last_and_both),
		cmocka_unit_test(test_cron_fall_back_wall_clock_fires_both_passes),
		cmocka_unit_test(test_cron_lord_howe_half_hour_shifts),
		cmocka_unit_test(test_cron_sao_paulo_midnight_gap_then_rule_abolished),
		cmocka_unit_test(test_cron_apia_skipped_day),
		cmocka_unit_test(test_cron_moscow_offset_changes),
		cmocka_unit_test(test_cron_kolkata_has_no_dst),
		cmocka_unit_test(test_cron_far_future_dst),
		cmocka_unit_test(test_cron_results_strictly_increase_across_transitions),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
