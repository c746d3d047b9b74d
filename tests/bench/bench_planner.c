/*
 * bench_planner.c - time the controller's in-memory side of a shard load and
 * of the periodic full reload, without a database.  Prints figures; asserts
 * nothing (built and run by tests/bench/hotpath.sh, not by `make`).
 *
 * For each job count N it builds N canonical job specs (varied crons and
 * time zones, as job_versions.spec stores them) and then times what
 * src/controller/controller.c does with the rows of pal_store_shard_jobs():
 *
 *   load     N jobs into an empty planner: canonical JSON -> spec -> put_job
 *   reload   the same N rows again (the 30 s full reload, nothing changed)
 *   remove   N/10 jobs by id
 *   tick     one planning tick at "now" (every job is due within the lookahead)
 *
 * pal_planner_job_current() is declared weak so that this one program also
 * measures a library that predates it: there, reload re-parses every spec
 * and re-opens every schedule, as the controller then did.
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "palisade/planner.h"

bool pal_planner_job_current(const pal_planner *p, const char *job_id,
			     const pal_plan_version *versions, size_t n) __attribute__((weak));

static const char *const crons[] = { "* * * * * ?", "0 */5 * * * ?", "0 0 9 ? * MON-FRI",
				     "0 30 2 * * ?", "0 15 */2 * * ?", "0 0 0 1 * ?" };
static const char *const zones[] = { "UTC", "Europe/Paris", "America/New_York", "Asia/Tokyo",
				     "Australia/Sydney", "America/Sao_Paulo" };

#define NOW INT64_C(1800000000)

static double secs(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Canonical spec of job I (caller json_decrefs). */
static json_t *make_spec(size_t i)
{
	pal_job_spec s;
	if (pal_job_spec_defaults(&s))
		return NULL;
	char id[64];
	snprintf(id, sizeof id, "bench.job-%zu", i);
	s.id = strdup(id);
	s.cron = strdup(crons[i % (sizeof crons / sizeof *crons)]);
	free(s.timezone);
	s.timezone = strdup(zones[(i / 7) % (sizeof zones / sizeof *zones)]);
	s.url = strdup("http://127.0.0.1:1/x");
	json_t *j = pal_job_spec_canonical(&s);
	pal_job_spec_clear(&s);
	return j;
}

/* What controller.c's put_job_json does with one row of one version. */
static int put_row(pal_planner *p, const char *id, const json_t *spec, int64_t eff, int64_t wm)
{
	pal_plan_version v = { .version = 1, .effective_from = eff };
	if (pal_planner_job_current && pal_planner_job_current(p, id, &v, 1))
		return 0;
	char err[256];
	int rc = pal_job_spec_from_canonical(spec, &v.spec, err, sizeof err);
	if (!rc)
		rc = pal_planner_put_job(p, id, &v, 1, wm, err, sizeof err);
	if (rc)
		fprintf(stderr, "bench_planner: %s: %s\n", id, err);
	pal_job_spec_clear(&v.spec);
	return rc;
}

static int run(size_t n)
{
	json_t **specs = calloc(n, sizeof *specs);
	char (*ids)[64] = calloc(n, sizeof *ids);
	if (!specs || !ids)
		return 1;
	for (size_t i = 0; i < n; i++) {
		snprintf(ids[i], sizeof ids[i], "bench.job-%zu", i);
		if (!(specs[i] = make_spec(i)))
			return 1;
	}
	pal_planner_config cfg = { .overlap_s = 10,
				   .lookahead_s = 120,
				   .misfire_threshold_s = 300,
				   .max_rows_per_tick = 50000 };
	pal_planner *p = pal_planner_new(0, &cfg);
	int64_t eff = NOW - 3600, wm = NOW;

	double t0 = secs();
	for (size_t i = 0; i < n; i++)
		if (put_row(p, ids[i], specs[i], eff, wm))
			return 1;
	double t_load = secs() - t0;

	t0 = secs();
	for (size_t i = 0; i < n; i++)
		if (put_row(p, ids[i], specs[i], eff, wm))
			return 1;
	double t_reload = secs() - t0;

	t0 = secs();
	for (size_t i = 0; i < n; i += 10)
		pal_planner_remove_job(p, ids[i]);
	double t_remove = secs() - t0;
	size_t left = pal_planner_jobs(p);

	pal_plan_batch b = { 0 };
	t0 = secs();
	int rc = pal_planner_tick(p, wm, NOW, &b);
	double t_tick = secs() - t0;
	if (rc)
		return 1;

	printf("planner: %6zu jobs  load %7.3f s  reload %7.3f s  remove %6zu %7.3f s"
	       "  tick %7.3f s (%zu rows, %zu jobs left)%s\n",
	       n, t_load, t_reload, (n + 9) / 10, t_remove, t_tick, b.n_trig, left,
	       pal_planner_job_current ? "" : "  [library without pal_planner_job_current]");
	pal_plan_batch_free(&b);
	pal_planner_free(p);
	for (size_t i = 0; i < n; i++)
		json_decref(specs[i]);
	free(specs);
	free(ids);
	return 0;
}

int main(int argc, char **argv)
{
	int rc = 0;
	if (argc < 2) {
		rc |= run(10000);
		rc |= run(50000);
	}
	for (int i = 1; i < argc; i++)
		rc |= run((size_t)strtoull(argv[i], NULL, 10));
	return rc;
}
