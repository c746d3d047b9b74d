/* test_misfire.c - the split of a missed run by misfire policy
 * (src/plan/misfire.c), shared by the planner and `palisade resume`. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "palisade/misfire.h"

static void expect_split(pal_misfire_split s, int64_t outside, int64_t over, int64_t missed,
			 int64_t fire, bool ticket)
{
	assert_int_equal(s.outside, outside);
	assert_int_equal(s.over, over);
	assert_int_equal(s.missed, missed);
	assert_int_equal(s.fire, fire);
	assert_int_equal(s.ticket, ticket);
}

static void test_misfire_fire_all_window_then_cap(void **state)
{
	(void)state;
	/* 100 missed, 30 before the window, cap 50: 30 outside, 20 over, 50 fire */
	expect_split(pal_misfire_decide(PAL_MISFIRE_FIRE_ALL, 100, 30, 50), 30, 20, 0, 50, false);
	/* everything inside the window and under the cap fires */
	expect_split(pal_misfire_decide(PAL_MISFIRE_FIRE_ALL, 9, 0, 100), 0, 0, 0, 9, false);
	/* all before the window */
	expect_split(pal_misfire_decide(PAL_MISFIRE_FIRE_ALL, 9, 9, 100), 9, 0, 0, 0, false);
	/* a cap of 0 keeps none */
	expect_split(pal_misfire_decide(PAL_MISFIRE_FIRE_ALL, 9, 2, 0), 2, 7, 0, 0, false);
}

static void test_misfire_fire_once_skip_manual(void **state)
{
	(void)state;
	expect_split(pal_misfire_decide(PAL_MISFIRE_FIRE_ONCE, 9, 5, 100), 0, 0, 8, 1, false);
	expect_split(pal_misfire_decide(PAL_MISFIRE_FIRE_ONCE, 1, 0, 100), 0, 0, 0, 1, false);
	expect_split(pal_misfire_decide(PAL_MISFIRE_SKIP, 9, 5, 100), 0, 0, 9, 0, false);
	expect_split(pal_misfire_decide(PAL_MISFIRE_MANUAL, 9, 5, 100), 0, 0, 9, 0, true);
}

/* fire_once fires the newest only inside catchup_window: a run wholly
 * before the window is all missed (an imported startingDeadlineSeconds). */
static void test_misfire_fire_once_outside_window_fires_none(void **state)
{
	(void)state;
	expect_split(pal_misfire_decide(PAL_MISFIRE_FIRE_ONCE, 9, 9, 100), 0, 0, 9, 0, false);
	expect_split(pal_misfire_decide(PAL_MISFIRE_FIRE_ONCE, 1, 1, 100), 0, 0, 1, 0, false);
	/* only the newest inside: it fires */
	expect_split(pal_misfire_decide(PAL_MISFIRE_FIRE_ONCE, 9, 8, 100), 0, 0, 8, 1, false);
}

static void test_misfire_empty_run_decides_nothing(void **state)
{
	(void)state;
	for (int p = PAL_MISFIRE_FIRE_ALL; p <= PAL_MISFIRE_MANUAL; p++)
		expect_split(pal_misfire_decide((pal_misfire_policy)p, 0, 0, 100), 0, 0, 0, 0,
			     false);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_misfire_fire_all_window_then_cap),
		cmocka_unit_test(test_misfire_fire_once_skip_manual),
		cmocka_unit_test(test_misfire_fire_once_outside_window_fires_none),
		cmocka_unit_test(test_misfire_empty_run_decides_nothing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
