/* test_shadowdiff.c - the comparison behind `palisade shadow diff`
 * (src/plan/shadowdiff.c): each instant only one side has, with its
 * reason, against lists written out by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "palisade/schedule.h"
#include "palisade/shadowdiff.h"

#define DAY 86400
#define H 3600
/* 2026-03-01T08:00:00Z */
#define T0 1772352000

/* "only reason detail" of difference I */
static void expect_diff(json_t *d, size_t i, const char *only, const char *at, const char *reason,
			const char *detail)
{
	json_t *x = json_array_get(d, i);
	assert_non_null(x);
	assert_string_equal(json_string_value(json_object_get(x, "only")), only);
	assert_string_equal(json_string_value(json_object_get(x, "at")), at);
	assert_string_equal(json_string_value(json_object_get(x, "reason")), reason);
	assert_string_equal(json_string_value(json_object_get(x, "detail")), detail);
}

static void test_equal_lists_have_no_difference(void **state)
{
	(void)state;
	int64_t fire[] = {T0, T0 + DAY, T0 + 2 * DAY};
	pal_shadow_plan p = {fire, 3, NULL, 0, NULL, 0, NULL};
	json_t *d = json_array();
	pal_shadow_counts c = {0};
	assert_int_equal(pal_shadow_diff_job("j", fire, 3, &p, 10, d, &c), 0);
	assert_int_equal(json_array_size(d), 0);
	assert_int_equal(c.both, 3);
	assert_int_equal(c.old, 3);
	assert_int_equal(c.palisade, 3);
	assert_int_equal(c.only_old + c.only_palisade, 0);
	json_decref(d);
}

static void test_reasons_excluded_misfire_repeated_schedule_not_fired(void **state)
{
	(void)state;
	/* palisade: days 0, 2, 4 fire; day 1 excluded; day 3 misfired; day 5 fires */
	int64_t fire[] = {T0, T0 + 2 * DAY, T0 + 4 * DAY, T0 + 5 * DAY};
	int64_t excl[] = {T0 + DAY}, mis[] = {T0 + 3 * DAY};
	/* old: days 0, 0 (twice), 1, 2, 3, 4, and 10:17 on day 4 */
	int64_t old[] = {T0,
			 T0,
			 T0 + DAY,
			 T0 + 2 * DAY,
			 T0 + 3 * DAY,
			 T0 + 4 * DAY,
			 T0 + 4 * DAY + 2 * H + 17 * 60};
	pal_shadow_plan p = {fire, 4, excl, 1, mis, 1, NULL};
	json_t *d = json_array();
	pal_shadow_counts c = {0};
	assert_int_equal(pal_shadow_diff_job("j", old, 7, &p, 10, d, &c), 0);
	assert_int_equal(json_array_size(d), 5);
	expect_diff(d, 0, "old", "2026-03-01T08:00:00Z", "repeated", "");
	expect_diff(d, 1, "old", "2026-03-02T08:00:00Z", "excluded", "");
	expect_diff(d, 2, "old", "2026-03-04T08:00:00Z", "misfire", "");
	expect_diff(d, 3, "old", "2026-03-05T10:17:00Z", "schedule", "");
	expect_diff(d, 4, "palisade", "2026-03-06T08:00:00Z", "not_fired", "");
	assert_int_equal(c.both, 3);
	assert_int_equal(c.only_old, 4);
	assert_int_equal(c.only_palisade, 1);
	json_decref(d);
}

static void test_zone_shift_named_both_ways(void **state)
{
	(void)state;
	/* a daily job the old system ran an hour later (another zone) */
	int64_t fire[] = {T0, T0 + DAY}, old[] = {T0 + H, T0 + DAY + H};
	pal_shadow_plan p = {fire, 2, NULL, 0, NULL, 0, NULL};
	json_t *d = json_array();
	pal_shadow_counts c = {0};
	assert_int_equal(pal_shadow_diff_job("j", old, 2, &p, 10, d, &c), 0);
	assert_int_equal(json_array_size(d), 4);
	expect_diff(d, 0, "palisade", "2026-03-01T08:00:00Z", "zone", "+1.00 h");
	expect_diff(d, 1, "old", "2026-03-01T09:00:00Z", "zone", "-1.00 h");
	expect_diff(d, 2, "palisade", "2026-03-02T08:00:00Z", "zone", "+1.00 h");
	expect_diff(d, 3, "old", "2026-03-02T09:00:00Z", "zone", "-1.00 h");
	json_decref(d);
}

static void test_dst_near_an_offset_change(void **state)
{
	(void)state;
	const pal_tz *berlin;
	char err[256];
	assert_int_equal(pal_zone_acquire("Europe/Berlin", &berlin, err, sizeof err), 0);
	/* 2026-03-29T01:00:00Z Berlin springs forward; 02:30 local does not
	 * exist: the old system fired at 01:30Z, palisade at 01:00Z */
	int64_t spring = 1774746000;
	int64_t fire[] = {spring}, old[] = {spring + 1800};
	pal_shadow_plan p = {fire, 1, NULL, 0, NULL, 0, berlin};
	json_t *d = json_array();
	pal_shadow_counts c = {0};
	assert_int_equal(pal_shadow_diff_job("j", old, 1, &p, 10, d, &c), 0);
	expect_diff(d, 0, "palisade", "2026-03-29T01:00:00Z", "dst", "");
	expect_diff(d, 1, "old", "2026-03-29T01:30:00Z", "dst", "");
	/* the same pair a month earlier is no DST matter: zone (half an hour) */
	int64_t fire2[] = {spring - 28 * DAY}, old2[] = {spring - 28 * DAY + 1800};
	pal_shadow_plan p2 = {fire2, 1, NULL, 0, NULL, 0, berlin};
	json_t *d2 = json_array();
	assert_int_equal(pal_shadow_diff_job("j", old2, 1, &p2, 10, d2, &c), 0);
	expect_diff(d2, 0, "palisade", "2026-03-01T01:00:00Z", "zone", "+0.50 h");
	pal_zone_release(berlin);
	json_decref(d);
	json_decref(d2);
}

static void test_limit_caps_the_list_not_the_counts(void **state)
{
	(void)state;
	int64_t fire[50];
	for (int i = 0; i < 50; i++)
		fire[i] = T0 + (int64_t)i * DAY;
	pal_shadow_plan p = {fire, 50, NULL, 0, NULL, 0, NULL};
	json_t *d = json_array();
	pal_shadow_counts c = {0};
	assert_int_equal(pal_shadow_diff_job("j", NULL, 0, &p, 7, d, &c), 0);
	assert_int_equal(json_array_size(d), 7);
	assert_int_equal(c.only_palisade, 50);
	json_decref(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_equal_lists_have_no_difference),
	    cmocka_unit_test(test_reasons_excluded_misfire_repeated_schedule_not_fired),
	    cmocka_unit_test(test_zone_shift_named_both_ways),
	    cmocka_unit_test(test_dst_near_an_offset_change),
	    cmocka_unit_test(test_limit_caps_the_list_not_the_counts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
