/*
 * test_schedule_count.c - pal_schedule_count() against a walk of every
 * instant: crons of every shape, zones with and without DST transitions
 * (gaps and repeats under each DST policy), ranges that start and end inside
 * days, hours and minutes, start/end bounds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "palisade/schedule.h"

static pal_schedule *open_sched(const char *cron, const char *zone, pal_dst_policy dst)
{
	pal_job_spec s = { 0 };
	s.id = "count.test";
	s.cron = (char *)cron;
	s.timezone = (char *)zone;
	s.dst = dst;
	pal_schedule *sc = NULL;
	char err[256];
	int rc = pal_schedule_open(&s, &sc, err, sizeof err);
	if (rc)
		fail_msg("%s", err);
	return sc;
}

static void walked(const pal_schedule *sc, int64_t after, int64_t until, int64_t *n,
		   int64_t *first, int64_t *last)
{
	*n = 0;
	*first = *last = PAL_NO_TIME;
	int64_t x = after;
	while (pal_schedule_next(sc, x, &x, NULL) == PAL_OK && x <= until) {
		if (!*n)
			*first = x;
		*last = x;
		++*n;
	}
}

static void same(const pal_schedule *sc, int64_t after, int64_t until, const char *what)
{
	int64_t n, f, l, wn, wf, wl;
	assert_int_equal(pal_schedule_count(sc, after, until, &n, &f, &l), 0);
	walked(sc, after, until, &wn, &wf, &wl);
	if (n != wn || f != wf || l != wl)
		fail_msg("%s (%lld, %lld]: count %lld first %lld last %lld, walk %lld %lld %lld", what,
			 (long long)after, (long long)until, (long long)n, (long long)f,
			 (long long)l, (long long)wn, (long long)wf, (long long)wl);
}

/* 2026-03-01T00:00:00Z .. two months, covering the March DST changes of
 * Europe and America; and the November ones. */
#define MAR1 1772323200LL
#define OCT20 1792454400LL

static void test_count_matches_walk(void **st)
{
	(void)st;
	static const char *crons[] = { "* * * * * ?",	 "*/7 * * * * ?",   "0 * * * * ?",
				       "15 30 2 * * ?",	 "0 0/20 1-3 * * ?", "0 0 0 L * ?",
				       "0 15 10 ? * 6#3", "*/5 * * * *",	    "30 2 * * 1-5",
				       "0 0 12 29 2 ?" };
	static const char *zones[] = { "UTC", "Europe/Berlin", "America/New_York",
				       "Australia/Lord_Howe", "Asia/Kathmandu" };
	pal_dst_policy pols[] = { PAL_DST_AUTO,
				  { .gap = PAL_DST_GAP_SHIFT, .overlap = PAL_DST_OVERLAP_FIRST },
				  { .gap = PAL_DST_GAP_SKIP, .overlap = PAL_DST_OVERLAP_BOTH },
				  { .gap = PAL_DST_GAP_SHIFT, .overlap = PAL_DST_OVERLAP_LAST } };
	/* Ranges: odd starts and ends, short and long, across transitions. */
	int64_t ranges[][2] = { { MAR1 - 1, MAR1 + 86400 * 45 + 3599 },
				{ MAR1 + 12345, MAR1 + 86400 * 40 + 77 },
				{ OCT20 + 7, OCT20 + 86400 * 20 + 61 },
				{ MAR1 + 59, MAR1 + 121 },
				{ MAR1 + 3601, MAR1 + 3599 + 3600 * 3 },
				{ MAR1, MAR1 },
				/* a day either side of a transition (Berlin, New York) */
				{ 1774746000LL - 86400 - 13, 1774746000LL + 86400 + 7 },
				{ 1793512800LL - 86400 + 1, 1793512800LL + 86400 - 1 } };
	char what[160];
	for (size_t c = 0; c < sizeof crons / sizeof *crons; c++)
		for (size_t z = 0; z < sizeof zones / sizeof *zones; z++)
			for (size_t p = 0; p < sizeof pols / sizeof *pols; p++) {
				/* every-second walks are long: fewer of them */
				if (c == 0 && (p > 1 || z > 2))
					continue;
				pal_schedule *sc = open_sched(crons[c], zones[z], pols[p]);
				for (size_t r = 0; r < sizeof ranges / sizeof *ranges; r++) {
					if (c == 0 && r < 3)
						continue; /* months of seconds: walked below once */
					snprintf(what, sizeof what, "%s in %s, policy %zu", crons[c],
						 zones[z], p);
					same(sc, ranges[r][0], ranges[r][1], what);
				}
				pal_schedule_close(sc);
			}
}

static void test_count_thirty_days_of_seconds(void **st)
{
	(void)st;
	pal_schedule *sc = open_sched("* * * * * ?", "UTC", PAL_DST_AUTO);
	int64_t n, f, l;
	assert_int_equal(pal_schedule_count(sc, MAR1, MAR1 + 30 * 86400, &n, &f, &l), 0);
	assert_int_equal(n, 30 * 86400);
	assert_int_equal(f, MAR1 + 1);
	assert_int_equal(l, MAR1 + 30 * 86400);
	pal_schedule_close(sc);
}

static void test_count_respects_start_end(void **st)
{
	(void)st;
	pal_job_spec s = { 0 };
	s.id = "count.bounds";
	s.cron = "0 * * * * ?";
	s.timezone = "Europe/Berlin";
	s.dst = PAL_DST_AUTO;
	s.has_start = s.has_end = true;
	s.start = MAR1 + 86400 + 17;
	s.end = MAR1 + 86400 * 31 + 5;
	pal_schedule *sc = NULL;
	char err[256];
	assert_int_equal(pal_schedule_open(&s, &sc, err, sizeof err), 0);
	same(sc, MAR1 - 100, MAR1 + 86400 * 40, "bounded");
	same(sc, MAR1 + 86400 * 2, MAR1 + 86400 * 3, "inside bounds");
	pal_schedule_close(sc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_count_matches_walk),
		cmocka_unit_test(test_count_thirty_days_of_seconds),
		cmocka_unit_test(test_count_respects_start_end),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
