/*
 * test_backfill.c - the instants of a backfill (src/plan/backfill.c): which
 * stored version owns each instant of a window (the latest before the first
 * activation, then each activated version up to the next one's
 * effective_from, inclusive), one row per partition, calendar exclusions
 * counted and not returned, and the --max limit; a version with `after`
 * has its first upstream's instants (recursively), in its own segment,
 * with its own partitions.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "palisade/backfill.h"
#include "palisade/jobfile.h"

#define T0 1772409600LL /* 2026-03-02T00:00:00Z */
#define H 3600LL

/* {version, spec, effective_from} of the one job in YAML TEXT; EFF < 0 is
 * a version never activated (effective_from null). */
static json_t *version(int v, const char *text, int64_t eff)
{
	pal_jobset set = {0};
	pal_diags d = {0};
	assert_int_equal(pal_jobfile_load_buffer("b.yaml", text, strlen(text), &set, &d), 0);
	json_t *o =
	    json_pack("{s:i, s:o, s:o}", "version", v, "spec", pal_job_spec_canonical(&set.jobs[0]),
		      "effective_from", eff < 0 ? json_null() : json_integer(eff));
	pal_jobset_free(&set);
	pal_diags_free(&d);
	return o;
}

#define HOURLY                                                                                     \
	"jobs:\n  - id: b.job\n    schedule: {cron: \"0 0 * * * ?\"}\n"                            \
	"    target: {url: \"http://127.0.0.1:8089/x\"}\n"
#define HALF_HOURLY_2                                                                              \
	"jobs:\n  - id: b.job\n    schedule: {cron: \"0 0/30 * * * ?\"}\n"                         \
	"    target: {url: \"http://127.0.0.1:8089/x\"}\n    partitions: 2\n"
#define HOURLY_EXCLUDED                                                                            \
	"jobs:\n  - id: b.job\n    schedule: {cron: \"0 0 * * * ?\", exclude: [\"2026-03-02\"]}\n" \
	"    target: {url: \"http://127.0.0.1:8089/x\"}\n"

/* {version, spec, effective_from} of job ID among the jobs of YAML TEXT. */
static json_t *version_of(int v, const char *text, const char *id, int64_t eff)
{
	pal_jobset set = {0};
	pal_diags d = {0};
	assert_int_equal(pal_jobfile_load_buffer("b.yaml", text, strlen(text), &set, &d), 0);
	json_t *o = NULL;
	for (size_t i = 0; i < set.n; i++)
		if (!strcmp(set.jobs[i].id, id))
			o = json_pack("{s:i, s:o, s:o}", "version", v, "spec",
				      pal_job_spec_canonical(&set.jobs[i]), "effective_from",
				      eff < 0 ? json_null() : json_integer(eff));
	assert_non_null(o);
	pal_jobset_free(&set);
	pal_diags_free(&d);
	return o;
}

#define CHAIN                                                                                      \
	"jobs:\n  - id: b.job\n    schedule: {cron: \"0 0 * * * ?\"}\n"                            \
	"    target: {url: \"http://127.0.0.1:8089/x\"}\n"                                          \
	"  - id: b.two\n    schedule: {cron: \"0 0/20 * * * ?\"}\n"                                \
	"    target: {url: \"http://127.0.0.1:8089/x\"}\n"                                          \
	"  - id: b.dep\n    after: [{job: b.job}, {job: b.two, on: finished}]\n"                     \
	"    target: {url: \"http://127.0.0.1:8089/x\"}\n    partitions: 2\n"                       \
	"  - id: b.next\n    after: [{job: b.dep}]\n"                                                \
	"    target: {url: \"http://127.0.0.1:8089/x\"}\n"

static void test_after_has_the_first_upstreams_instants(void **state)
{
	(void)state;
	/* b.dep v1 (after b.job, then b.two) from T0 + 1h; v2 a schedule of its
	 * own (half-hourly, 2 partitions) from T0 + 3h; b.next after b.dep */
	json_t *dep = json_pack("[o, o]", version_of(1, CHAIN, "b.dep", T0 + H),
				version(2, HALF_HOURLY_2, T0 + 3 * H));
	json_t *ups = json_pack("{s:[o], s:[o], s:o}", "b.job", version_of(1, CHAIN, "b.job", T0),
				"b.two", version_of(1, CHAIN, "b.two", T0), "b.dep",
				json_deep_copy(dep));
	json_t *next = json_pack("[o]", version_of(1, CHAIN, "b.next", T0));
	pal_backfill_plan pl = {0};
	char err[256] = "";
	int rc = pal_backfill_instants_after(dep, ups, T0, T0 + 4 * H, 1000, &pl, err, sizeof err);
	if (rc)
		fail_msg("%s", err);
	/* up to the first activation (T0+1h) the latest version's (v2, its
	 * schedule); (T0+1h, T0+3h] b.job's hourly instants, not b.two's;
	 * then v2's half-hourly ones */
	static const struct {
		int64_t at;
		int version, partitions;
		bool after;
	} want[] = {
	    {T0, 2, 2, false},		      {T0 + 1800, 2, 2, false}, {T0 + H, 2, 2, false},
	    {T0 + 2 * H, 1, 2, true},	      {T0 + 3 * H, 1, 2, true},
	    {T0 + 3 * H + 1800, 2, 2, false}, {T0 + 4 * H, 2, 2, false},
	};
	assert_int_equal(pl.n, sizeof want / sizeof want[0]);
	for (size_t i = 0; i < pl.n; i++) {
		assert_int_equal(pl.v[i].at, want[i].at);
		assert_int_equal(pl.v[i].version, want[i].version);
		assert_int_equal(pl.v[i].partitions, want[i].partitions);
		assert_int_equal(pl.v[i].after, want[i].after);
	}
	pal_backfill_plan_clear(&pl);
	/* without the upstreams' versions a dependent version has no instant */
	assert_int_equal(pal_backfill_instants(dep, T0 + H + 1, T0 + 3 * H, 1000, &pl, err, sizeof err),
			 0);
	assert_int_equal(pl.n, 0);
	pal_backfill_plan_clear(&pl);
	/* b.next after b.dep: b.dep's instants (its latest version's before
	 * its first activation, b.job's, then its own), with b.next's version */
	assert_int_equal(
	    pal_backfill_instants_after(next, ups, T0 + 1, T0 + 4 * H, 1000, &pl, err, sizeof err), 0);
	static const int64_t chain[] = {T0 + 1800, T0 + H, T0 + 2 * H, T0 + 3 * H,
					T0 + 3 * H + 1800, T0 + 4 * H};
	assert_int_equal(pl.n, sizeof chain / sizeof chain[0]);
	for (size_t i = 0; i < pl.n; i++) {
		assert_int_equal(pl.v[i].at, chain[i]);
		assert_int_equal(pl.v[i].version, 1);
		assert_int_equal(pl.v[i].partitions, 1);
		assert_true(pl.v[i].after);
	}
	pal_backfill_plan_clear(&pl);
	json_decref(dep);
	json_decref(ups);
	json_decref(next);
}

static void test_versions_own_their_segments(void **state)
{
	(void)state;
	json_t *vs =
	    json_pack("[o, o]", version(1, HOURLY, T0), version(2, HALF_HOURLY_2, T0 + 3 * H));
	pal_backfill_plan pl = {0};
	char err[256] = "";
	int rc = pal_backfill_instants(vs, T0, T0 + 5 * H, 1000, &pl, err, sizeof err);
	if (rc)
		fail_msg("%s", err);
	/* T0 itself is before the first activation's exclusive start: the latest
	 * version (2); (T0, T0+3h] version 1 hourly; after T0+3h version 2. */
	static const struct {
		int64_t at;
		int version, partitions;
	} want[] = {{T0, 2, 2},
		    {T0 + H, 1, 1},
		    {T0 + 2 * H, 1, 1},
		    {T0 + 3 * H, 1, 1},
		    {T0 + 3 * H + H / 2, 2, 2},
		    {T0 + 4 * H, 2, 2},
		    {T0 + 4 * H + H / 2, 2, 2},
		    {T0 + 5 * H, 2, 2}};
	assert_int_equal(pl.n, sizeof want / sizeof want[0]);
	for (size_t i = 0; i < pl.n; i++) {
		assert_int_equal(pl.v[i].at, want[i].at);
		assert_int_equal(pl.v[i].version, want[i].version);
		assert_int_equal(pl.v[i].partitions, want[i].partitions);
	}
	assert_int_equal(pl.excluded, 0);
	pal_backfill_plan_clear(&pl);
	assert_null(pl.v);
	json_decref(vs);
}

static void test_no_activation_means_latest_version(void **state)
{
	(void)state;
	json_t *vs = json_pack("[o, o]", version(1, HALF_HOURLY_2, -1), version(2, HOURLY, -1));
	pal_backfill_plan pl = {0};
	char err[256] = "";
	assert_int_equal(pal_backfill_instants(vs, T0 + 1, T0 + 3 * H, 1000, &pl, err, sizeof err),
			 0);
	assert_int_equal(pl.n, 3);
	for (size_t i = 0; i < pl.n; i++) {
		assert_int_equal(pl.v[i].at, T0 + (int64_t)(i + 1) * H);
		assert_int_equal(pl.v[i].version, 2);
	}
	pal_backfill_plan_clear(&pl);
	json_decref(vs);
}

static void test_excluded_instants_are_counted_not_returned(void **state)
{
	(void)state;
	json_t *vs = json_pack("[o]", version(1, HOURLY_EXCLUDED, -1));
	pal_backfill_plan pl = {0};
	char err[256] = "";
	/* 2026-03-01T22:00Z .. 2026-03-02T01:00Z: 22h and 23h fire, 00h and
	 * 01h fall on the excluded date (UTC zone). */
	assert_int_equal(
	    pal_backfill_instants(vs, T0 - 2 * H, T0 + 1 * H, 1000, &pl, err, sizeof err), 0);
	assert_int_equal(pl.n, 2);
	assert_int_equal(pl.v[0].at, T0 - 2 * H);
	assert_int_equal(pl.v[1].at, T0 - H);
	assert_int_equal(pl.excluded, 2);
	pal_backfill_plan_clear(&pl);
	json_decref(vs);
}

static void test_more_than_max_is_too_big(void **state)
{
	(void)state;
	json_t *vs = json_pack("[o]", version(1, HOURLY, -1));
	pal_backfill_plan pl = {0};
	char err[256] = "";
	assert_int_equal(pal_backfill_instants(vs, T0, T0 + 10 * H, 10, &pl, err, sizeof err),
			 PAL_ETOOBIG);
	pal_backfill_plan_clear(&pl);
	assert_int_equal(pal_backfill_instants(vs, T0, T0 + 10 * H, 11, &pl, err, sizeof err), 0);
	assert_int_equal(pl.n, 11);
	pal_backfill_plan_clear(&pl);
	json_decref(vs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_versions_own_their_segments),
	    cmocka_unit_test(test_no_activation_means_latest_version),
	    cmocka_unit_test(test_excluded_instants_are_counted_not_returned),
	    cmocka_unit_test(test_more_than_max_is_too_big),
	    cmocka_unit_test(test_after_has_the_first_upstreams_instants),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
