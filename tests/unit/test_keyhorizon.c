/*
 * test_keyhorizon.c - a job's key horizon (how long after its instant it
 * may still send the instant's idempotency key) and the check against the
 * services' key retention (src/config/keyhorizon.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "palisade/keyhorizon.h"

#define S 1000LL
#define M (60 * S)
#define H (60 * M)
#define D (24 * H)

static pal_job_spec spec(void)
{
	pal_job_spec s;
	assert_int_equal(pal_job_spec_defaults(&s), 0);
	s.id = "j";
	return s;
}

static void test_key_horizon_of_the_defaults_is_max_age_plus_timeout(void **st)
{
	pal_job_spec s = spec();
	pal_key_horizon h;
	pal_job_key_horizon(&s, &h);
	/* fire_once, catch-up 1h, 5 attempts of 30s with backoff up to 5m, max_age 1h */
	assert_int_equal(h.catchup_ms, 1 * H);
	assert_int_equal(h.retry_ms, 4 * (30 * S + 5 * M));
	assert_int_equal(h.bound_ms, 1 * H);
	assert_int_equal(h.total_ms, 1 * H + 30 * S);
	s.id = NULL;
	pal_job_spec_clear(&s);
}

static void test_key_horizon_without_bounds_adds_catchup_and_retries(void **st)
{
	pal_job_spec s = spec();
	s.max_age_ms = 0;
	s.misfire = PAL_MISFIRE_FIRE_ALL;
	s.catchup_window_ms = 2 * D;
	pal_key_horizon h;
	pal_job_key_horizon(&s, &h);
	assert_int_equal(h.bound_ms, 0);
	assert_int_equal(h.total_ms, 2 * D + 4 * (30 * S + 5 * M) + 30 * S);
	/* skip never creates a late trigger: no catch-up part */
	s.misfire = PAL_MISFIRE_SKIP;
	pal_job_key_horizon(&s, &h);
	assert_int_equal(h.catchup_ms, 0);
	assert_int_equal(h.total_ms, 4 * (30 * S + 5 * M) + 30 * S);
	s.id = NULL;
	pal_job_spec_clear(&s);
}

static void test_key_horizon_is_cut_by_the_earlier_of_deadline_and_max_age(void **st)
{
	pal_job_spec s = spec();
	s.max_attempts = 1000;
	s.backoff_max_ms = 1 * D;
	s.max_age_ms = 10 * D;
	s.deadline_ms = 3 * D;
	pal_key_horizon h;
	pal_job_key_horizon(&s, &h);
	assert_int_equal(h.bound_ms, 3 * D);
	assert_int_equal(h.total_ms, 3 * D + 30 * S);
	s.deadline_ms = 0;
	pal_job_key_horizon(&s, &h);
	assert_int_equal(h.total_ms, 10 * D + 30 * S);
	s.id = NULL;
	pal_job_spec_clear(&s);
}

static void test_key_horizon_check_refuses_longer_than_the_retention(void **st)
{
	pal_job_spec s = spec();
	s.max_age_ms = 7 * D;
	s.max_attempts = 1000;
	s.backoff_max_ms = 1 * D;
	s.file = "jobs/x.yaml";
	s.line = 3;
	s.col = 5;
	pal_diags d = { 0 };
	/* 7d + 30s: refused under exactly 7d, accepted one timeout later */
	assert_int_equal(pal_job_key_horizon_check(&s, 7 * D, &d), PAL_EINVAL);
	assert_int_equal(d.n, 1);
	assert_string_equal(d.v[0].file, "jobs/x.yaml");
	assert_int_equal(d.v[0].line, 3);
	assert_non_null(strstr(d.v[0].msg, "job \"j\" may send the same idempotency key up to 7d30s"));
	assert_non_null(strstr(d.v[0].msg, "longer than sink.key_retention 7d"));
	assert_int_equal(pal_job_key_horizon_check(&s, 7 * D + 30 * S, &d), 0);
	assert_int_equal(d.n, 1);
	pal_diags_free(&d);
	s.id = NULL;
	s.file = NULL;
	pal_job_spec_clear(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_key_horizon_of_the_defaults_is_max_age_plus_timeout),
		cmocka_unit_test(test_key_horizon_without_bounds_adds_catchup_and_retries),
		cmocka_unit_test(test_key_horizon_is_cut_by_the_earlier_of_deadline_and_max_age),
		cmocka_unit_test(test_key_horizon_check_refuses_longer_than_the_retention),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
