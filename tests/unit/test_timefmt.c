/*
 * test_timefmt.c - civil-date arithmetic, RFC 3339, dates and durations
 * (src/util/timefmt.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>
#include "palisade/timefmt.h"

static void test_timefmt_days_from_civil_known_dates(void **state)
{
	(void)state;
	assert_int_equal(pal_days_from_civil(1970, 1, 1), 0);
	assert_int_equal(pal_days_from_civil(1969, 12, 31), -1);
	assert_int_equal(pal_days_from_civil(2000, 3, 1), 11017);
	assert_int_equal(pal_days_from_civil(2026, 3, 29), 20541);
	assert_int_equal(pal_days_from_civil(2100, 1, 1), 47482);
	assert_int_equal(pal_days_from_civil(1600, 2, 29), -135081);
}

static void test_timefmt_civil_round_trip_over_centuries(void **state)
{
	(void)state;
	int64_t prev_y = 0;
	unsigned prev_m = 0, prev_d = 0;
	for (int64_t days = -800000; days <= 800000; days++) {
		int64_t y;
		unsigned m, d;
		pal_civil_from_days(days, &y, &m, &d);
		assert_int_equal(pal_days_from_civil(y, m, d), days);
		if (days > -800000 && d != prev_d + 1) { /* a new month starts on the 1st */
			assert_int_equal(d, 1);
			assert_true(m == prev_m % 12 + 1);
			assert_true(y == prev_y || (m == 1 && y == prev_y + 1));
		}
		prev_y = y;
		prev_m = m;
		prev_d = d;
	}
}

static void test_timefmt_format_rfc3339(void **state)
{
	(void)state;
	char buf[32];
	pal_fmt_rfc3339(0, buf, sizeof buf);
	assert_string_equal(buf, "1970-01-01T00:00:00Z");
	pal_fmt_rfc3339(1774746000, buf, sizeof buf);
	assert_string_equal(buf, "2026-03-29T01:00:00Z");
	pal_fmt_rfc3339(-1, buf, sizeof buf);
	assert_string_equal(buf, "1969-12-31T23:59:59Z");
	pal_fmt_rfc3339(4102444799, buf, sizeof buf);
	assert_string_equal(buf, "2099-12-31T23:59:59Z");
	pal_fmt_rfc3339(951782400, buf, sizeof buf);
	assert_string_equal(buf, "2000-02-29T00:00:00Z");
	char small[8];
	pal_fmt_rfc3339(0, small, sizeof small); /* truncated, still terminated */
	assert_string_equal(small, "1970-01");
}

static void test_timefmt_parse_rfc3339_accepts(void **state)
{
	(void)state;
	int64_t t;
	assert_int_equal(pal_parse_rfc3339("2026-03-29T01:00:00Z", &t), 0);
	assert_int_equal(t, 1774746000);
	assert_int_equal(pal_parse_rfc3339("2026-03-29T03:00:00+02:00", &t), 0);
	assert_int_equal(t, 1774746000);
	assert_int_equal(pal_parse_rfc3339("2026-03-28T20:00:00-05:00", &t), 0);
	assert_int_equal(t, 1774746000);
	assert_int_equal(pal_parse_rfc3339("2026-03-29t01:00:00.999999z", &t), 0);
	assert_int_equal(t, 1774746000);
	assert_int_equal(pal_parse_rfc3339("2026-03-29 06:30:00+05:30", &t), 0);
	assert_int_equal(t, 1774746000);
	assert_int_equal(pal_parse_rfc3339("1969-12-31T23:59:59Z", &t), 0);
	assert_int_equal(t, -1);
	assert_int_equal(pal_parse_rfc3339("2024-02-29T00:00:00Z", &t), 0);
}

static void test_timefmt_parse_rfc3339_rejects_garbage(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"",
		"2026-03-29",
		"2026-03-29T01:00:00",	     /* no offset */
		"2026-03-29T01:00Z",	     /* no seconds */
		"2026-02-30T00:00:00Z",	     /* no Feb 30 */
		"2025-02-29T00:00:00Z",	     /* not a leap year */
		"2026-13-01T00:00:00Z",
		"2026-00-01T00:00:00Z",
		"2026-03-29T24:00:00Z",
		"2026-03-29T23:60:00Z",
		"2026-12-31T23:59:60Z",	     /* leap seconds are not modelled */
		"2026-03-29T01:00:00+2:00",
		"2026-03-29T01:00:00+02",
		"2026-03-29T01:00:00+24:00",
		"2026-03-29T01:00:00Zjunk",
		"2026-03-29T01:00:00.Z",
		"26-03-29T01:00:00Z",
		"+2026-03-29T01:00:00Z",
		"2026-03-29X01:00:00Z",
	};
	int64_t t = 42;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		if (pal_parse_rfc3339(bad[i], &t) != PAL_EINVAL)
			fail_msg("accepted \"%s\"", bad[i]);
	}
	assert_int_equal(t, 42);
	assert_int_equal(pal_parse_rfc3339(NULL, &t), PAL_EINVAL);
}

static void test_timefmt_parse_date(void **state)
{
	(void)state;
	int64_t d;
	assert_int_equal(pal_parse_date("1970-01-01", &d), 0);
	assert_int_equal(d, 0);
	assert_int_equal(pal_parse_date("2026-12-25", &d), 0);
	assert_int_equal(d, pal_days_from_civil(2026, 12, 25));
	assert_int_equal(pal_parse_date("2026-04-31", &d), PAL_EINVAL);
	assert_int_equal(pal_parse_date("2026-4-30", &d), PAL_EINVAL);
	assert_int_equal(pal_parse_date("2026-04-30 ", &d), PAL_EINVAL);
	assert_int_equal(pal_parse_date("", &d), PAL_EINVAL);
}

static void test_timefmt_parse_duration_accepts(void **state)
{
	(void)state;
	int64_t ms;
	assert_int_equal(pal_parse_duration_ms("90s", &ms), 0);
	assert_int_equal(ms, 90000);
	assert_int_equal(pal_parse_duration_ms("1h30m", &ms), 0);
	assert_int_equal(ms, 5400000);
	assert_int_equal(pal_parse_duration_ms("500ms", &ms), 0);
	assert_int_equal(ms, 500);
	assert_int_equal(pal_parse_duration_ms("10m", &ms), 0);
	assert_int_equal(ms, 600000);
	assert_int_equal(pal_parse_duration_ms("2d", &ms), 0);
	assert_int_equal(ms, 172800000);
	assert_int_equal(pal_parse_duration_ms("1m1ms", &ms), 0);
	assert_int_equal(ms, 60001);
	assert_int_equal(pal_parse_duration_ms("0s", &ms), 0);
	assert_int_equal(ms, 0);
	assert_int_equal(pal_parse_duration_ms("106751991167d", &ms), 0); /* fits in int64 ms */
	assert_int_equal(ms, INT64_C(106751991167) * 86400000);
}

static void test_timefmt_parse_duration_rejects_garbage_and_overflow(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"", "10", "-1s", "+1s", "1.5h", "s", "1x", "1h ", " 1h", "1H", "ms", "1h30",
		"106751991168d", "9223372036854775807ms1ms", "99999999999999999999s", "1d-1h",
	};
	int64_t ms = 42;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		if (pal_parse_duration_ms(bad[i], &ms) != PAL_EINVAL)
			fail_msg("accepted \"%s\"", bad[i]);
	}
	assert_int_equal(ms, 42);
}

static void test_timefmt_fmt_duration_largest_unit_first(void **state)
{
	char buf[32];

	(void)state;
	assert_string_equal(pal_fmt_duration(0, buf, sizeof buf), "0s");
	assert_string_equal(pal_fmt_duration(500, buf, sizeof buf), "500ms");
	assert_string_equal(pal_fmt_duration(5400000, buf, sizeof buf), "1h30m");
	assert_string_equal(pal_fmt_duration(90061001, buf, sizeof buf), "1d1h1m1s1ms");
}

static void test_timefmt_leap_month_length_weekday_and_date(void **state)
{
	char buf[16];
	int64_t days;

	(void)state;
	assert_true(pal_is_leap(2000));
	assert_true(pal_is_leap(2024));
	assert_false(pal_is_leap(1900));
	assert_false(pal_is_leap(2023));
	assert_int_equal(pal_days_in_month(2024, 2), 29);
	assert_int_equal(pal_days_in_month(1900, 2), 28);
	assert_int_equal(pal_days_in_month(2026, 12), 31);
	assert_int_equal(pal_days_in_month(2026, 4), 30);
	assert_int_equal(pal_weekday(0), 4);	   /* 1970-01-01, a Thursday */
	assert_int_equal(pal_weekday(-1), 3);	   /* 1969-12-31 */
	assert_int_equal(pal_weekday(20541), 0);   /* 2026-03-29, a Sunday */
	assert_int_equal(pal_weekday(-135081), 2); /* 1600-02-29, a Tuesday */
	pal_fmt_date(-1, buf, sizeof buf);
	assert_string_equal(buf, "1969-12-31");
	pal_fmt_date(20541, buf, sizeof buf);
	assert_string_equal(buf, "2026-03-29");
	assert_int_equal(pal_parse_date(buf, &days), 0);
	assert_int_equal(days, 20541);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_timefmt_days_from_civil_known_dates),
	    cmocka_unit_test(test_timefmt_civil_round_trip_over_centuries),
	    cmocka_unit_test(test_timefmt_format_rfc3339),
	    cmocka_unit_test(test_timefmt_parse_rfc3339_accepts),
	    cmocka_unit_test(test_timefmt_parse_rfc3339_rejects_garbage),
	    cmocka_unit_test(test_timefmt_parse_date),
	    cmocka_unit_test(test_timefmt_parse_duration_accepts),
	    cmocka_unit_test(test_timefmt_parse_duration_rejects_garbage_and_overflow),
	    cmocka_unit_test(test_timefmt_fmt_duration_largest_unit_first),
	    cmocka_unit_test(test_timefmt_leap_month_length_weekday_and_date),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
