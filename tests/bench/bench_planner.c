/*
 * bench_planner.c - time the controller's in-memory side of a shard load and
 * of the periodic full reload, without a database.  Prints figures; asserts
 * nothing (built and run by tests/bench/hotpath.sh, not by `make`).
 *
 * For each job count N it builds N typed planning versions (varied crons and
 * time zones, daily and busier ones, as pal_store_shard_jobs hands them to
 * the controller) and times:
 *
 *   load     N jobs into an empty planner (pal_planner_put_job)
 *   reload   the same N rows again (the 30 s full reload, nothing changed)
 *   remove   N/10 jobs by id
 *   tick     one planning tick at "now" (every job is due within the lookahead)
 *   idle     the median of 20 ticks at an instant where no job is due
 *
 * and the resident memory the planner added per job (VmRSS before/after the
 * load), with the distinct shared schedules, crons and zones it holds.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "palisade/planner.h"
#include "palisade/schedule.h"

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

static long rss_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kib = 0;
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, "VmRSS:", 6))
			kib = strtol(line + 6, NULL, 10);
	if (f)
		fclose(f);
	return kib;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int run(size_t n)
{
	char (*ids)[32] = calloc(n, sizeof *ids);
	if (!ids)
		return 1;
	for (size_t i = 0; i < n; i++)
		snprintf(ids[i], sizeof ids[i], "bench.job-%zu", i);
	pal_planner_config cfg = { .overlap_s = 10,
				   .lookahead_s = 120,
				   .misfire_threshold_s = 300,
				   .max_rows_per_tick = 50000 };
	pal_planner *p = pal_planner_new(0, &cfg);
	int64_t eff = NOW - 3600, wm = NOW;
	pal_plan_version v = { .version = 1,
			       .effective_from = eff,
			       .dst = PAL_DST_AUTO,
			       .misfire = PAL_MISFIRE_FIRE_ALL,
			       .catchup_window_ms = 3600000,
			       .max_catchup = 100,
			       .partitions = 1,
			       .tenant = "default",
			       .group = "default" };
	char err[256];
	long rss0 = rss_kib();
	double t0 = secs();
	for (size_t i = 0; i < n; i++) {
		v.cron = crons[i % (sizeof crons / sizeof *crons)];
		v.timezone = zones[(i / 7) % (sizeof zones / sizeof *zones)];
		if (pal_planner_put_job(p, ids[i], &v, 1, wm, err, sizeof err)) {
			fprintf(stderr, "bench_planner: %s\n", err);
			return 1;
		}
	}
	double t_load = secs() - t0;
	long rss1 = rss_kib();
	size_t ns, nc, nz;
	pal_schedule_shared_counts(&ns, &nc, &nz);

	t0 = secs();
	for (size_t i = 0; i < n; i++) {
		v.cron = crons[i % (sizeof crons / sizeof *crons)];
		v.timezone = zones[(i / 7) % (sizeof zones / sizeof *zones)];
		if (pal_planner_put_job(p, ids[i], &v, 1, wm, err, sizeof err))
			return 1;
	}
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
	size_t rows = b.n_trig;
	pal_planner_commit(p, &b);
	/* Plan the whole lookahead, then tick again at the same instant:
	 * nothing is due, every job idle. */
	for (int k = 0; k < 1000 && !b.complete; k++) {
		if (pal_planner_tick(p, b.watermark, NOW, &b))
			return 1;
		pal_planner_commit(p, &b);
	}
	double idle[20];
	for (int k = 0; k < 20; k++) {
		t0 = secs();
		if (pal_planner_tick(p, b.watermark, NOW, &b))
			return 1;
		idle[k] = secs() - t0;
	}
	qsort(idle, 20, sizeof *idle, cmp_d);

	printf("planner: %7zu jobs  load %7.3f s  reload %7.3f s  remove %6zu %7.3f s"
	       "  tick %7.3f s (%zu rows)  idle tick %7.1f us (%zu rows)  rss %5.0f B/job"
	       "  shared: %zu schedules %zu crons %zu zones (%zu jobs left)\n",
	       n, t_load, t_reload, (n + 9) / 10, t_remove, t_tick, rows, idle[10] * 1e6,
	       b.n_trig, (double)(rss1 - rss0) * 1024 / (double)n, ns, nc, nz, left);
	pal_plan_batch_free(&b);
	pal_planner_free(p);
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
