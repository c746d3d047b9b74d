/*
 * test_planner.c - the planning decisions of a tick, without a database:
 * activation of new jobs and versions, re-scan below the watermark, every
 * misfire policy, exclusions, the row cap, and the job index under loads,
 * reloads and removals.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "palisade/planner.h"
#include "palisade/schedule.h"

static pal_planner_config cfg = { .overlap_s = 10, .lookahead_s = 5, .misfire_threshold_s = 60,
				  .max_rows_per_tick = 50000 };

static pal_job_spec spec(const char *id, const char *cron, pal_misfire_policy mp)
{
	pal_job_spec s = { 0 };
	s.id = strdup(id);
	s.tenant = strdup("t");
	s.group = strdup("g");
	s.cron = strdup(cron);
	s.timezone = strdup("UTC");
	s.dst = PAL_DST_AUTO;
	s.misfire = mp;
	s.catchup_window_ms = 3600 * 1000;
	s.max_catchup = 100;
	s.partitions = 1;
	s.idempotency_key = strdup("{job}/{scheduled_at}/{partition}");
	s.method = strdup("POST");
	s.url = strdup("http://127.0.0.1/x");
	return s;
}

static void put1(pal_planner *p, pal_job_spec s, int version, int64_t eff, int64_t wm)
{
	pal_plan_version v = pal_plan_version_of_spec(&s, version, eff);
	char err[256];
	assert_int_equal(pal_planner_put_job(p, s.id ? s.id : "x", &v, 1, wm, err, sizeof err), 0);
	pal_job_spec_clear(&s);
}

static size_t count_source(const pal_plan_batch *b, pal_plan_source src)
{
	size_t n = 0;
	for (size_t i = 0; i < b->n_trig; i++)
		n += b->trig[i].source == src;
	return n;
}

static void test_planner_new_job_activates_now_and_plans_lookahead(void **st)
{
	pal_planner *p = pal_planner_new(0, &cfg);
	pal_job_spec s = spec("a.every-second", "* * * * * ?", PAL_MISFIRE_SKIP);
	s.partitions = 3;
	put1(p, s, 1, PAL_NO_TIME, PAL_NO_TIME);
	pal_plan_batch b = { 0 };
	assert_int_equal(pal_planner_tick(p, PAL_NO_TIME, 1000, &b), 0);
	assert_int_equal(b.n_act, 1);
	assert_int_equal(b.act[0].effective_from, 1000);
	/* instants 1001..1005, three partitions each */
	assert_int_equal(b.n_trig, 15);
	assert_int_equal(b.trig[0].at, 1001);
	assert_int_equal(b.trig[14].at, 1005);
	assert_int_equal(b.trig[14].partition, 2);
	assert_int_equal(b.watermark, 1005);
	assert_int_equal(b.n_mis, 0);
	pal_planner_commit(p, &b);
	/* next tick: only the new second */
	assert_int_equal(pal_planner_tick(p, 1005, 1001, &b), 0);
	assert_int_equal(b.n_act, 0);
	assert_int_equal(b.n_trig, 3);
	assert_int_equal(b.trig[0].at, 1006);
	pal_planner_commit(p, &b);
	pal_plan_batch_free(&b);
	pal_planner_free(p);
}

/* A job applied while its shard runs, with a lookahead (30 s) longer than
 * the overlap (10 s): the watermark is 29 s ahead of now, and every instant
 * from the activation on is planned, once - none between the activation
 * and watermark - overlap is lost.  A reload after the activation and a
 * takeover by a new planner (the job active, loaded at the watermark)
 * re-scan from watermark - overlap as before, not from the activation. */
static void test_planner_new_job_below_watermark_plans_from_activation(void **st)
{
	pal_planner_config c = cfg;
	c.lookahead_s = 30;
	pal_planner *p = pal_planner_new(0, &c);
	put1(p, spec("a.new", "* * * * * ?", PAL_MISFIRE_SKIP), 1, PAL_NO_TIME, 1030);
	pal_plan_batch b = { 0 };
	assert_int_equal(pal_planner_tick(p, 1030, 1001, &b), 0);
	assert_int_equal(b.n_act, 1);
	assert_int_equal(b.act[0].effective_from, 1001);
	assert_int_equal(b.n_mis, 0);
	/* 1002..1031, each once, in order */
	assert_int_equal(b.n_trig, 30);
	for (size_t i = 0; i < b.n_trig; i++)
		assert_int_equal(b.trig[i].at, 1002 + (int64_t)i);
	assert_int_equal(b.watermark, 1031);
	pal_planner_commit(p, &b);
	/* a reload of the activated job keeps its cursor: nothing again */
	put1(p, spec("a.new", "* * * * * ?", PAL_MISFIRE_SKIP), 1, 1001, 1031);
	assert_int_equal(pal_planner_tick(p, 1031, 1002, &b), 0);
	assert_int_equal(b.n_act, 0);
	assert_int_equal(b.n_trig, 1);
	assert_int_equal(b.trig[0].at, 1032);
	pal_planner_commit(p, &b);
	pal_planner_free(p);
	/* a new leader loads it active: re-scan (1022, 1032] (ON CONFLICT
	 * keeps those), not from the activation */
	p = pal_planner_new(0, &c);
	put1(p, spec("a.new", "* * * * * ?", PAL_MISFIRE_SKIP), 1, 1001, 1032);
	assert_int_equal(pal_planner_tick(p, 1032, 1003, &b), 0);
	assert_int_equal(b.n_act, 0);
	assert_int_equal(b.n_mis, 0);
	assert_int_equal(b.trig[0].at, 1023);
	assert_int_equal(b.trig[b.n_trig - 1].at, 1033);
	pal_plan_batch_free(&b);
	pal_planner_free(p);
}

/* Three new every-second jobs, PARTITIONS each, under a row cap of CAP
 * that holds the rows up to the watermark of one of them but not two: one
 * activation a tick, as of the tick that first saw them, each with every
 * partition of every instant 1002..watermark, once. */
static void three_new_jobs_one_a_tick(int cap, int partitions)
{
	pal_planner_config c = cfg;
	c.lookahead_s = 30;
	c.max_rows_per_tick = cap;
	pal_planner *p = pal_planner_new(0, &c);
	const char *ids[] = { "a.one", "a.two", "a.three" };
	for (int i = 0; i < 3; i++) {
		pal_job_spec s = spec(ids[i], "* * * * * ?", PAL_MISFIRE_SKIP);
		s.partitions = partitions;
		put1(p, s, 1, PAL_NO_TIME, 1030);
	}
	pal_plan_batch b = { 0 };
	int64_t wm = 1030;
	for (int tick = 0; tick < 3; tick++) {
		assert_int_equal(pal_planner_tick(p, wm, 1001 + tick, &b), 0);
		assert_int_equal(b.n_act, 1);
		assert_int_equal(b.act[0].effective_from, 1001);
		assert_int_equal(b.n_mis, 0);
		size_t rows = 0;
		for (size_t i = 0; i < b.n_trig; i++)
			if (!strcmp(b.trig[i].job_id, b.act[0].job_id)) {
				assert_int_equal(b.trig[i].at, 1002 + (int64_t)rows / partitions);
				assert_int_equal(b.trig[i].partition, (int)rows % partitions);
				rows++;
			}
		assert_true(1002 + (int64_t)rows / partitions > wm);
		assert_true(b.watermark >= wm);
		wm = b.watermark;
		pal_planner_commit(p, &b);
	}
	assert_int_equal(pal_planner_pending(p), 0);
	pal_plan_batch_free(&b);
	pal_planner_free(p);
}

/* New jobs whose instants up to the watermark pass the row cap (40): a
 * tick activates them while those rows fit, plans each one's whole (none
 * left to memory alone: the activation commits with them), and leaves the
 * others for the next tick, activated as of the same instant.  A job alone
 * over the cap is activated and planned whole up to the watermark. */
static void test_planner_new_jobs_over_row_cap_activate_in_slices(void **st)
{
	three_new_jobs_one_a_tick(40, 1);

	pal_planner_config c = cfg;
	c.lookahead_s = 30;
	c.max_rows_per_tick = 10;
	pal_planner *p = pal_planner_new(0, &c);
	pal_plan_batch b = { 0 };
	put1(p, spec("a.big", "* * * * * ?", PAL_MISFIRE_SKIP), 1, PAL_NO_TIME, 1030);
	assert_int_equal(pal_planner_tick(p, 1030, 1001, &b), 0);
	assert_int_equal(b.n_act, 1);
	assert_int_equal(b.n_trig, 29); /* 1002..1030, past the cap of 10 */
	for (size_t i = 0; i < b.n_trig; i++)
		assert_int_equal(b.trig[i].at, 1002 + (int64_t)i);
	assert_int_equal(b.watermark, 1030);
	pal_plan_batch_free(&b);
	pal_planner_free(p);
}

/* The same count is of rows, not instants: a partitioned job's instant is
 * a row per partition.  Three jobs of 29 instants x 2 partitions up to the
 * watermark (58 rows) under a cap of 100: one activation a tick, each with
 * every partition of every instant up to the watermark. */
static void test_planner_new_jobs_row_cap_counts_partitions(void **st)
{
	three_new_jobs_one_a_tick(100, 2);
}

/* New jobs the row cap deferred, activated by a late tick (a slow tick, a
 * stall): their first instants are past the misfire threshold while the
 * tick already holds half its row cap in catch-ups.  A job is not activated
 * there without its missed run (committed alone, a new leader would resume
 * it at watermark - overlap with nothing below): it waits, and the next
 * tick activates it as of the same instant with its missed run decided by
 * its own policy (skip: misfires, not triggers re-planted as a re-scan). */
static void test_planner_deferred_new_job_not_activated_without_missed_run(void **st)
{
	pal_planner_config c = cfg;
	c.lookahead_s = 30;
	c.max_rows_per_tick = 60;
	pal_planner *p = pal_planner_new(0, &c);
	const char *ids[] = { "a.1", "a.2", "a.3", "a.4" };
	for (int i = 0; i < 4; i++)
		put1(p, spec(ids[i], "* * * * * ?", i < 3 ? PAL_MISFIRE_FIRE_ALL : PAL_MISFIRE_SKIP),
		     1, PAL_NO_TIME, 1030);
	pal_plan_batch b = { 0 };
	assert_int_equal(pal_planner_tick(p, 1030, 1001, &b), 0);
	assert_int_equal(b.n_act, 2);
	int64_t wm = b.watermark;
	pal_planner_commit(p, &b);
	int64_t a4_from = PAL_NO_TIME, a4_mis_to = PAL_NO_TIME;
	for (int64_t now = 1100; now < 1104; now++) {
		int64_t limit = now - c.misfire_threshold_s;
		assert_int_equal(pal_planner_tick(p, wm, now, &b), 0);
		for (size_t a = 0; a < b.n_act; a++) {
			size_t rows = 0, mis = 0;
			for (size_t i = 0; i < b.n_trig; i++)
				rows += !strcmp(b.trig[i].job_id, b.act[a].job_id);
			for (size_t i = 0; i < b.n_mis; i++)
				mis += !strcmp(b.mis[i].job_id, b.act[a].job_id);
			/* never an activation with neither */
			assert_true(rows + mis > 0);
			assert_int_equal(b.act[a].effective_from, 1001);
			if (!strcmp(b.act[a].job_id, "a.4"))
				a4_from = b.act[a].effective_from;
		}
		for (size_t i = 0; i < b.n_trig; i++)
			if (!strcmp(b.trig[i].job_id, "a.4"))
				assert_true(b.trig[i].at > limit); /* skip: none past the threshold */
		for (size_t i = 0; i < b.n_mis; i++)
			if (!strcmp(b.mis[i].job_id, "a.4")) {
				assert_string_equal(b.mis[i].reason, "missed");
				assert_int_equal(b.mis[i].from, 1002);
				a4_mis_to = b.mis[i].to;
			}
		assert_true(b.watermark >= wm);
		wm = b.watermark;
		pal_planner_commit(p, &b);
	}
	assert_int_equal(a4_from, 1001);
	assert_true(a4_mis_to >= 1040);
	assert_int_equal(pal_planner_pending(p), 0);
	pal_plan_batch_free(&b);
	pal_planner_free(p);
}

/* Load new every-second job ID, stored at CREATED, at watermark WM: active
 * as of EFF, or awaiting activation (EFF PAL_NO_TIME). */
static void put_new(pal_planner *p, const char *id, int64_t created, int64_t eff, int64_t wm)
{
	pal_job_spec s = spec(id, "* * * * * ?", PAL_MISFIRE_SKIP);
	pal_plan_version v = pal_plan_version_of_spec(&s, 1, eff);
	v.created_at = eff == PAL_NO_TIME ? created : PAL_NO_TIME;
	char err[256];
	assert_int_equal(pal_planner_put_job(p, id, &v, 1, wm, err, sizeof err), 0);
	pal_job_spec_clear(&s);
}

/* Each activation of B has a trigger for every instant from its
 * effective_from to B's watermark, once; returns the effective_from of
 * ID's activation (PAL_NO_TIME: none). */
static int64_t activated_whole(const pal_plan_batch *b, const char *id)
{
	int64_t eff = PAL_NO_TIME;
	for (size_t a = 0; a < b->n_act; a++) {
		int64_t next = b->act[a].effective_from + 1;
		for (size_t i = 0; i < b->n_trig; i++)
			if (!strcmp(b->trig[i].job_id, b->act[a].job_id)) {
				assert_int_equal(b->trig[i].at, next);
				next++;
			}
		assert_true(next > b->watermark);
		if (!strcmp(b->act[a].job_id, id))
			eff = b->act[a].effective_from;
	}
	return eff;
}

/* NEW_IDS: three brand-new jobs stored at CREATED (three_deferred). */
static const char *new_ids[] = { "a.one", "a.two", "a.three" };

/* A planner with config *C (a lookahead of 30 s, a row cap of 40: one
 * brand-new every-second job a tick) holding the jobs NEW_IDS, and its tick
 * at 1001 (watermark 1030), which activates one of them, in B. */
static pal_planner *three_deferred(pal_planner_config *c, int64_t created, pal_plan_batch *b)
{
	*c = cfg;
	c->lookahead_s = 30;
	c->max_rows_per_tick = 40;
	pal_planner *p = pal_planner_new(0, c);
	for (int i = 0; i < 3; i++)
		put_new(p, new_ids[i], created, PAL_NO_TIME, 1030);
	assert_int_equal(pal_planner_tick(p, 1030, 1001, b), 0);
	assert_int_equal(b->n_act, 1);
	return p;
}

/* New jobs the row cap deferred when their leader went away: the first
 * sight was in its memory only.  A new leader activates those stored at or
 * before the shard's last write before its claim (the last committed tick:
 * pal_planner_inherit) as of when they were stored, at or before that
 * first sight, so no instant from it on is lost; one stored after it
 * starts at the new leader's first sight.  A reload of the same versions
 * keeps what the load decided. */
static void test_planner_new_leader_keeps_first_sight_of_deferred_jobs(void **st)
{
	pal_planner_config c;
	pal_plan_batch b = { 0 };
	/* no previous leader (pal_planner_inherit not called): first seen by
	 * the tick at 1001 */
	pal_planner *p = three_deferred(&c, 1001, &b);
	assert_int_equal(b.act[0].effective_from, 1001);
	char first[16]; /* the id belongs to the planner */
	snprintf(first, sizeof first, "%s", b.act[0].job_id);
	int64_t wm = b.watermark;
	pal_planner_commit(p, &b);
	pal_planner_free(p); /* the leader dies with two jobs waiting */

	p = pal_planner_new(0, &c);
	pal_planner_inherit(p, 1001); /* the tick at 1001 was the last write */
	for (int i = 0; i < 3; i++)
		put_new(p, new_ids[i], 1001, strcmp(new_ids[i], first) ? PAL_NO_TIME : 1001, wm);
	/* stored after the last write: first seen by this leader's first tick */
	int64_t late = 1002;
	put_new(p, "a.late", late, PAL_NO_TIME, wm);
	int64_t eff[3] = { PAL_NO_TIME, PAL_NO_TIME, PAL_NO_TIME }, eff_late = PAL_NO_TIME;
	for (int64_t now = 1010; pal_planner_pending(p) && now < 1020; now++) {
		assert_int_equal(pal_planner_tick(p, wm, now, &b), 0);
		assert_int_equal(b.n_mis, 0);
		for (int i = 0; i < 3; i++) {
			int64_t e = activated_whole(&b, new_ids[i]);
			if (e != PAL_NO_TIME) {
				assert_string_not_equal(new_ids[i], first);
				eff[i] = e;
			}
		}
		int64_t e = activated_whole(&b, "a.late");
		if (e != PAL_NO_TIME)
			eff_late = e;
		assert_true(b.watermark >= wm);
		wm = b.watermark;
		pal_planner_commit(p, &b);
		/* a reload of the same versions (at the new watermark) keeps
		 * what the load and the first sight decided */
		for (int i = 0; i < 3; i++)
			if (eff[i] == PAL_NO_TIME && strcmp(new_ids[i], first))
				put_new(p, new_ids[i], 1001, PAL_NO_TIME, wm);
		if (eff_late == PAL_NO_TIME)
			put_new(p, "a.late", late, PAL_NO_TIME, wm);
	}
	assert_int_equal(pal_planner_pending(p), 0);
	for (int i = 0; i < 3; i++)
		if (strcmp(new_ids[i], first))
			assert_int_equal(eff[i], 1001);
	assert_int_equal(eff_late, 1010);
	pal_plan_batch_free(&b);
	pal_planner_free(p);
}

/* Brand-new job ID with two versions, neither activated, stored at C1
 * and C2 (a re-apply while it waits). */
static void put_new2(pal_planner *p, const char *id, int64_t c1, int64_t c2, int64_t wm)
{
	pal_job_spec s = spec(id, "* * * * * ?", PAL_MISFIRE_SKIP);
	pal_plan_version v[2] = { pal_plan_version_of_spec(&s, 1, PAL_NO_TIME),
				  pal_plan_version_of_spec(&s, 2, PAL_NO_TIME) };
	v[0].created_at = c1;
	v[1].created_at = c2;
	char err[256];
	assert_int_equal(pal_planner_put_job(p, id, v, 2, wm, err, sizeof err), 0);
	pal_job_spec_clear(&s);
}

/* New jobs the row cap deferred, applied again (a second version) while
 * they wait: under the same leader the reload keeps the tick's first
 * sight; a new leader judges them by their first version's apply, not
 * the second's (stored after the shard's last write). */
static void test_planner_reapplied_waiting_jobs_keep_first_sight(void **st)
{
	pal_planner_config c;
	pal_plan_batch b = { 0 };
	pal_planner *p = three_deferred(&c, 1000, &b);
	int first = 0;
	while (strcmp(new_ids[first], b.act[0].job_id))
		first++;
	const char *same = new_ids[(first + 1) % 3], *next = new_ids[(first + 2) % 3];
	int64_t wm = b.watermark;
	pal_planner_commit(p, &b);
	put_new2(p, same, 1000, 1002, wm); /* same leader */
	int64_t eff = PAL_NO_TIME;
	for (int64_t now = 1003; eff == PAL_NO_TIME && now < 1010; now++) {
		assert_int_equal(pal_planner_tick(p, wm, now, &b), 0);
		eff = activated_whole(&b, same);
		wm = b.watermark;
		pal_planner_commit(p, &b);
	}
	assert_int_equal(eff, 1001);
	pal_planner_free(p); /* the leader dies with NEXT waiting */

	p = pal_planner_new(0, &c);
	pal_planner_inherit(p, 1004);
	put_new2(p, next, 1000, 1006, wm); /* v2 stored after the last write */
	eff = PAL_NO_TIME;
	for (int64_t now = 1010; eff == PAL_NO_TIME && now < 1020; now++) {
		assert_int_equal(pal_planner_tick(p, wm, now, &b), 0);
		eff = activated_whole(&b, next);
		wm = b.watermark;
		pal_planner_commit(p, &b);
	}
	assert_int_equal(eff, 1000);
	pal_plan_batch_free(&b);
	pal_planner_free(p);
}

static void test_planner_uncommitted_tick_is_repeated(void **st)
{
	pal_planner *p = pal_planner_new(0, &cfg);
	put1(p, spec("a.j", "*/2 * * * * ?", PAL_MISFIRE_SKIP), 1, 0, 1000);
	pal_plan_batch b = { 0 };
	assert_int_equal(pal_planner_tick(p, 1000, 1000, &b), 0);
	size_t n1 = b.n_trig;
	int64_t last1 = b.trig[n1 - 1].at;
	/* no commit (transaction failed): the same instants come out again */
	assert_int_equal(pal_planner_tick(p, 1000, 1000, &b), 0);
	assert_int_equal(b.n_trig, n1);
	assert_int_equal(b.trig[n1 - 1].at, last1);
	pal_plan_batch_free(&b);
	pal_planner_free(p);
}

static void test_planner_rescan_below_watermark_is_not_a_misfire(void **st)
{
	pal_planner *p = pal_planner_new(0, &cfg);
	put1(p, spec("a.j", "*/2 * * * * ?", PAL_MISFIRE_SKIP), 1, 0, 1000);
	pal_plan_batch b = { 0 };
	/* watermark 1000, now 1001: re-scan (990, 1000] then (1000, 1006] */
	assert_int_equal(pal_planner_tick(p, 1000, 1001, &b), 0);
	assert_int_equal(b.n_mis, 0);
	assert_int_equal(b.trig[0].at, 992);
	assert_int_equal(b.trig[b.n_trig - 1].at, 1006);
	assert_int_equal(count_source(&b, PAL_SOURCE_SCHEDULE), b.n_trig);
	pal_plan_batch_free(&b);
	pal_planner_free(p);
}

/* Down from watermark 1000 to now 2000, every 10 s, threshold 60 s:
 * missed = 1010..1940 (94 instants), planned normally = 1950..2005. */
static pal_plan_batch after_downtime(pal_misfire_policy mp, int64_t window_s, int max_catchup)
{
	pal_planner *p = pal_planner_new(0, &cfg);
	pal_job_spec s = spec("a.j", "*/10 * * * * ?", mp);
	s.catchup_window_ms = window_s * 1000;
	s.max_catchup = max_catchup;
	put1(p, s, 1, 0, 1000);
	pal_plan_batch b = { 0 };
	assert_int_equal(pal_planner_tick(p, 1000, 2000, &b), 0);
	pal_planner_free(p);
	return b;
}

static void test_planner_misfire_skip_records_all(void **st)
{
	pal_plan_batch b = after_downtime(PAL_MISFIRE_SKIP, 3600, 100);
	assert_int_equal(count_source(&b, PAL_SOURCE_CATCHUP), 0);
	assert_int_equal(b.n_mis, 1);
	assert_int_equal(b.mis[0].from, 1010);
	assert_int_equal(b.mis[0].to, 1940);
	assert_int_equal(b.mis[0].count, 94);
	assert_string_equal(b.mis[0].policy, "skip");
	/* rescan 1000 + normal 1950..2000 */
	assert_int_equal(count_source(&b, PAL_SOURCE_SCHEDULE), 1 + 6);
	assert_int_equal(b.n_tick, 0);
	pal_plan_batch_free(&b);
}

static void test_planner_misfire_fire_once_fires_latest(void **st)
{
	pal_plan_batch b = after_downtime(PAL_MISFIRE_FIRE_ONCE, 3600, 100);
	assert_int_equal(count_source(&b, PAL_SOURCE_CATCHUP), 1);
	for (size_t i = 0; i < b.n_trig; i++)
		if (b.trig[i].source == PAL_SOURCE_CATCHUP)
			assert_int_equal(b.trig[i].at, 1940);
	assert_int_equal(b.n_mis, 1);
	assert_int_equal(b.mis[0].from, 1010);
	assert_int_equal(b.mis[0].to, 1930);
	assert_int_equal(b.mis[0].count, 93);
	pal_plan_batch_free(&b);
}

/* The window's edge: the newest missed instant (1940) fires when it is
 * exactly now - catchup_window, and is recorded when one second older. */
static void test_planner_misfire_fire_once_window_edge(void **st)
{
	pal_plan_batch b = after_downtime(PAL_MISFIRE_FIRE_ONCE, 60, 100);
	assert_int_equal(count_source(&b, PAL_SOURCE_CATCHUP), 1);
	assert_int_equal(b.n_mis, 1);
	assert_int_equal(b.mis[0].count, 93);
	pal_plan_batch_free(&b);
	b = after_downtime(PAL_MISFIRE_FIRE_ONCE, 59, 100);
	assert_int_equal(count_source(&b, PAL_SOURCE_CATCHUP), 0);
	assert_int_equal(b.n_mis, 1);
	assert_int_equal(b.mis[0].from, 1010);
	assert_int_equal(b.mis[0].to, 1940);
	assert_int_equal(b.mis[0].count, 94);
	assert_string_equal(b.mis[0].policy, "fire_once");
	assert_string_equal(b.mis[0].reason, "missed");
	pal_plan_batch_free(&b);
}

/*
 * A daily job with catchup_window 60 s (startingDeadlineSeconds: 60), every
 * node down for 3 days 20 h: the latest missed midnight is 20 h old, so
 * nothing fires and the three midnights are recorded as missed.  Counted,
 * and walked (an excluded day makes the planner walk the run).
 */
static void fire_once_long_outage(bool walked)
{
	pal_planner *p = pal_planner_new(0, &cfg);
	pal_job_spec s = spec("r.daily", "0 0 0 * * ?", PAL_MISFIRE_FIRE_ONCE);
	s.catchup_window_ms = 60 * 1000;
	int64_t D = 20880 * 86400LL; /* a midnight, UTC */
	if (walked) {
		s.exclusions = calloc(1, sizeof *s.exclusions);
		s.exclusions[0] = (pal_exclusion){ 20881, 20881 };
		s.n_exclusions = 1;
	}
	put1(p, s, 1, 0, D + 10);
	pal_plan_batch b = { 0 };
	assert_int_equal(pal_planner_tick(p, D + 10, D + 3 * 86400 + 20 * 3600, &b), 0);
	assert_int_equal(count_source(&b, PAL_SOURCE_CATCHUP), 0);
	int64_t missed = 0, excluded = 0, to = 0;
	for (size_t i = 0; i < b.n_mis; i++) {
		if (!strcmp(b.mis[i].reason, "excluded")) {
			excluded += b.mis[i].count;
			continue;
		}
		assert_string_equal(b.mis[i].reason, "missed");
		assert_string_equal(b.mis[i].policy, "fire_once");
		missed += b.mis[i].count;
		to = b.mis[i].to > to ? b.mis[i].to : to;
	}
	assert_int_equal(missed, walked ? 2 : 3);
	assert_int_equal(excluded, walked ? 1 : 0);
	assert_int_equal(to, D + 3 * 86400);
	pal_plan_batch_free(&b);
	pal_planner_free(p);
}

static void test_planner_misfire_fire_once_outside_window_counted(void **st)
{
	fire_once_long_outage(false);
}

static void test_planner_misfire_fire_once_outside_window_walked(void **st)
{
	fire_once_long_outage(true);
}

/* A one-shot `at` with the defaults (fire_once, 1 h window) missed by a
 * 3-day outage: recorded, not run 71 h late. */
static void test_planner_misfire_at_outside_window(void **st)
{
	pal_planner *p = pal_planner_new(0, &cfg);
	pal_job_spec s = spec("o.once", "* * * * * ?", PAL_MISFIRE_FIRE_ONCE);
	int64_t E = 20880 * 86400LL;
	free(s.cron);
	s.cron = NULL;
	s.has_at = true;
	s.at = E + 3600;
	char *text, err[256];
	assert_int_equal(pal_schedule_text(&s, &text, err, sizeof err), 0);
	s.cron = text;
	put1(p, s, 1, E, E + 60);
	pal_plan_batch b = { 0 };
	assert_int_equal(pal_planner_tick(p, E + 60, E + 3 * 86400, &b), 0);
	assert_int_equal(count_source(&b, PAL_SOURCE_CATCHUP), 0);
	assert_int_equal(b.n_mis, 1);
	assert_int_equal(b.mis[0].from, E + 3600);
	assert_int_equal(b.mis[0].count, 1);
	assert_string_equal(b.mis[0].reason, "missed");
	pal_plan_batch_free(&b);
	pal_planner_free(p);
}

static void test_planner_misfire_fire_all_window_and_cap(void **st)
{
	/* window 300 s: 1700..1940 inside (25), 1010..1690 outside (69);
	 * cap 10 keeps 1850..1940, 1700..1840 over the cap (15). */
	pal_plan_batch b = after_downtime(PAL_MISFIRE_FIRE_ALL, 300, 10);
	assert_int_equal(count_source(&b, PAL_SOURCE_CATCHUP), 10);
	int64_t lo = INT64_MAX, hi = 0;
	for (size_t i = 0; i < b.n_trig; i++)
		if (b.trig[i].source == PAL_SOURCE_CATCHUP) {
			lo = b.trig[i].at < lo ? b.trig[i].at : lo;
			hi = b.trig[i].at > hi ? b.trig[i].at : hi;
		}
	assert_int_equal(lo, 1850);
	assert_int_equal(hi, 1940);
	assert_int_equal(b.n_mis, 2);
	assert_string_equal(b.mis[0].reason, "outside_window");
	assert_int_equal(b.mis[0].from, 1010);
	assert_int_equal(b.mis[0].to, 1690);
	assert_int_equal(b.mis[0].count, 69);
	assert_string_equal(b.mis[1].reason, "over_max_catchup");
	assert_int_equal(b.mis[1].from, 1700);
	assert_int_equal(b.mis[1].to, 1840);
	assert_int_equal(b.mis[1].count, 15);
	/* every missed instant is either fired or recorded: 69 + 15 + 10 = 94 */
	pal_plan_batch_free(&b);
}

static void test_planner_misfire_fire_all_everything_in_window(void **st)
{
	pal_plan_batch b = after_downtime(PAL_MISFIRE_FIRE_ALL, 3600, 100);
	assert_int_equal(count_source(&b, PAL_SOURCE_CATCHUP), 94);
	assert_int_equal(b.n_mis, 0);
	pal_plan_batch_free(&b);
}

static void test_planner_misfire_manual_opens_ticket(void **st)
{
	pal_plan_batch b = after_downtime(PAL_MISFIRE_MANUAL, 3600, 100);
	assert_int_equal(count_source(&b, PAL_SOURCE_CATCHUP), 0);
	assert_int_equal(b.n_mis, 1);
	assert_int_equal(b.mis[0].count, 94);
	assert_string_equal(b.mis[0].policy, "manual");
	assert_int_equal(b.n_tick, 1);
	assert_int_equal(b.tick[0].from, 1010);
	assert_int_equal(b.tick[0].to, 1940);
	pal_plan_batch_free(&b);
}

static void test_planner_new_version_applies_after_watermark(void **st)
{
	pal_planner *p = pal_planner_new(0, &cfg);
	pal_job_spec s1 = spec("a.j", "*/10 * * * * ?", PAL_MISFIRE_SKIP),
		     s2 = spec("a.j", "*/3 * * * * ?", PAL_MISFIRE_SKIP);
	pal_plan_version v[2] = { pal_plan_version_of_spec(&s1, 1, 0),
				  pal_plan_version_of_spec(&s2, 2, PAL_NO_TIME) };
	char err[256];
	assert_int_equal(pal_planner_put_job(p, "a.j", v, 2, 1000, err, sizeof err), 0);
	pal_job_spec_clear(&s1);
	pal_job_spec_clear(&s2);
	pal_plan_batch b = { 0 };
	assert_int_equal(pal_planner_tick(p, 1000, 1001, &b), 0);
	assert_int_equal(b.n_act, 1);
	assert_int_equal(b.act[0].version, 2);
	assert_int_equal(b.act[0].effective_from, 1000);
	/* (990, 1000] from v1: 1000; (1000, 1006] from v2: 1002, 1005 */
	assert_int_equal(b.n_trig, 3);
	assert_int_equal(b.trig[0].at, 1000);
	assert_int_equal(b.trig[0].version, 1);
	assert_int_equal(b.trig[1].at, 1002);
	assert_int_equal(b.trig[1].version, 2);
	assert_int_equal(b.trig[2].at, 1005);
	/* one ref per job version, and every trigger points at its own */
	assert_int_equal(b.n_refs, 2);
	for (size_t k = 0; k < b.n_trig; k++) {
		assert_true(b.trig[k].ref < b.n_refs);
		assert_int_equal(b.refs[b.trig[k].ref].version, b.trig[k].version);
		assert_string_equal(b.refs[b.trig[k].ref].job_id, b.trig[k].job_id);
		assert_string_equal(b.refs[b.trig[k].ref].tenant, "t");
	}
	pal_planner_commit(p, &b);
	assert_int_equal(pal_planner_tick(p, 1006, 1004, &b), 0);
	assert_int_equal(b.n_act, 0);
	assert_int_equal(b.n_trig, 1);
	assert_int_equal(b.trig[0].at, 1008);
	assert_int_equal(b.trig[0].version, 2);
	pal_plan_batch_free(&b);
	pal_planner_free(p);
}

/* v1 every second; v2 its retiring version (end 1001, activated at EFF2 or,
 * PAL_NO_TIME, stored at 1000 and not activated); v3, the job applied again
 * at CREATED, awaiting activation; loaded at watermark WM. */
static pal_planner *retired_and_reapplied(int64_t eff2, int64_t created, int64_t wm)
{
	pal_planner *p = pal_planner_new(0, &cfg);
	pal_job_spec s1 = spec("r.j", "* * * * * ?", PAL_MISFIRE_SKIP),
		     s2 = spec("r.j", "* * * * * ?", PAL_MISFIRE_SKIP),
		     s3 = spec("r.j", "* * * * * ?", PAL_MISFIRE_SKIP);
	s2.has_end = true;
	s2.end = 1001;
	pal_plan_version v[3] = { pal_plan_version_of_spec(&s1, 1, 0),
				  pal_plan_version_of_spec(&s2, 2, eff2),
				  pal_plan_version_of_spec(&s3, 3, PAL_NO_TIME) };
	if (eff2 == PAL_NO_TIME)
		v[1].created_at = 1000;
	v[2].created_at = created;
	char err[256];
	assert_int_equal(pal_planner_put_job(p, "r.j", v, 3, wm, err, sizeof err), 0);
	pal_job_spec_clear(&s1);
	pal_job_spec_clear(&s2);
	pal_job_spec_clear(&s3);
	return p;
}

static pal_planner *reapplied(int64_t created, int64_t wm)
{
	return retired_and_reapplied(1005, created, wm);
}

static size_t version_at(const pal_plan_batch *b, int version, int64_t from, int64_t to)
{
	size_t n = 0;
	for (size_t i = 0; i < b->n_trig; i++)
		n += b->trig[i].version == version && b->trig[i].at >= from && b->trig[i].at <= to;
	return n;
}

/* The job applied again at CREATED, loaded at watermark WM, ticked at NOW:
 * v3 takes over at WANT_EFF and the tick plans its instants after it (N of
 * them up to TO), none before it, none of v2, no misfire, and a watermark
 * that covers them. */
static void takeover(int64_t created, int64_t wm, int64_t now, int64_t want_eff, int64_t to,
		     size_t n)
{
	pal_planner *p = reapplied(created, wm);
	pal_plan_batch b = { 0 };
	assert_int_equal(pal_planner_tick(p, wm, now, &b), 0);
	assert_int_equal(b.n_act, 1);
	assert_int_equal(b.act[0].version, 3);
	assert_int_equal(b.act[0].effective_from, want_eff);
	assert_int_equal(version_at(&b, 3, want_eff + 1, to), n);
	assert_int_equal(version_at(&b, 3, 0, want_eff), 0);
	assert_int_equal(version_at(&b, 2, 0, 2000), 0);
	assert_int_equal(b.n_mis, 0);
	assert_true(b.watermark >= to);
	pal_plan_batch_free(&b);
	pal_planner_free(p);
}

/* A version after one that ended takes over where nothing is left of the
 * old one, not at the watermark: at the apply, or at the retiring
 * version's own switch point when the apply came before it; its instants
 * between are planned in the tick that activates it, none of the retired
 * period (1001 up to the switch point) is.  With a watermark far above
 * the horizon (a longer lookahead before a restart) the cursor goes back
 * to the switch point and the tick plans up to the watermark, which moves
 * only over planned instants. */
static void test_planner_version_after_ended_takes_over_at_apply(void **st)
{
	takeover(1007, 1010, 1008, 1007, 1013, 6);
	takeover(1003, 1010, 1004, 1005, 1009, 4);
	takeover(1007, 1100, 1008, 1007, 1100, 93);
}

/* A retiring version (its `end` the retirement, stored at 1000 while the
 * watermark is 1010) takes over when it was stored, not at the watermark,
 * and plans nothing: the version applied after it can take over at its
 * own apply. */
static void test_planner_retiring_version_takes_over_when_stored(void **st)
{
	pal_planner *p = pal_planner_new(0, &cfg);
	pal_job_spec s1 = spec("r.j", "* * * * * ?", PAL_MISFIRE_SKIP),
		     s2 = spec("r.j", "* * * * * ?", PAL_MISFIRE_SKIP);
	s2.has_end = true;
	s2.end = 1001;
	pal_plan_version v[2] = { pal_plan_version_of_spec(&s1, 1, 0),
				  pal_plan_version_of_spec(&s2, 2, PAL_NO_TIME) };
	v[1].created_at = 1000;
	char err[256];
	assert_int_equal(pal_planner_put_job(p, "r.j", v, 2, 1010, err, sizeof err), 0);
	pal_plan_batch b = { 0 };
	assert_int_equal(pal_planner_tick(p, 1010, 1001, &b), 0);
	assert_int_equal(b.n_act, 1);
	assert_int_equal(b.act[0].version, 2);
	assert_int_equal(b.act[0].effective_from, 1000);
	assert_int_equal(version_at(&b, 2, 0, 2000), 0);
	assert_int_equal(b.n_mis, 0);
	pal_plan_batch_free(&b);
	pal_planner_free(p);
	pal_job_spec_clear(&s1);
	pal_job_spec_clear(&s2);
}

/* v1 every second (active); v2 its retiring version (end 1001, stored at
 * 1000) that no tick activated; v3 the job applied again at 1003 or
 * CREATED, both awaiting activation: loaded at watermark WM and ticked at
 * NOW, the tick activates v2 where a tick that saw it in time would have
 * (WANT2), then v3 at the later of that and its apply (WANT3). */
static pal_plan_batch stop_unseen(int64_t created, int64_t wm, int64_t now, int64_t want2,
				  int64_t want3, pal_planner **out)
{
	pal_planner *p = retired_and_reapplied(PAL_NO_TIME, created, wm);
	pal_plan_batch b = { 0 };
	assert_int_equal(pal_planner_tick(p, wm, now, &b), 0);
	assert_int_equal(b.n_act, 2);
	assert_int_equal(b.act[0].version, 2);
	assert_int_equal(b.act[0].effective_from, want2);
	assert_int_equal(b.act[1].version, 3);
	assert_int_equal(b.act[1].effective_from, want3);
	assert_int_equal(b.n_mis, 0);
	*out = p;
	return b;
}

/* A stop that no tick activated before the job was applied again still
 * stops it: within one scan (the watermark above both applies) v2 takes
 * over when it was stored and v3 at its apply, which plans its instants
 * from there, also those below the watermark, and v1 none after the stop;
 * with the controller down across both (the watermark below them) v2
 * takes over at the watermark and runs the instants before its end, none
 * of the retired period runs, and v3 has those after its apply.  The
 * next tick activates nothing. */
static void test_planner_unseen_stop_still_stops(void **st)
{
	pal_planner *p;
	pal_plan_batch b = stop_unseen(1003, 1010, 1004, 1000, 1003, &p);
	assert_int_equal(version_at(&b, 3, 1004, 1010), 7);
	assert_int_equal(version_at(&b, 3, 0, 1003), 0);
	assert_int_equal(version_at(&b, 1, 1001, 2000), 0);
	assert_int_equal(version_at(&b, 2, 0, 2000), 0);
	assert_true(b.watermark >= 1010);
	pal_planner_commit(p, &b);
	assert_int_equal(pal_planner_pending(p), 0);
	int64_t wm = b.watermark;
	assert_int_equal(pal_planner_tick(p, wm, 1006, &b), 0);
	assert_int_equal(b.n_act, 0);
	assert_int_equal(version_at(&b, 3, wm + 1, 1011), b.n_trig);
	pal_plan_batch_free(&b);
	pal_planner_free(p);

	b = stop_unseen(1005, 990, 1008, 990, 1005, &p);
	assert_int_equal(version_at(&b, 1, 991, 2000), 0);
	assert_int_equal(version_at(&b, 2, 991, 1000), 10);
	assert_int_equal(version_at(&b, 2, 1001, 2000), 0);
	assert_int_equal(version_at(&b, 3, 0, 1005), 0);
	assert_int_equal(version_at(&b, 3, 1006, 1013), 8);
	pal_plan_batch_free(&b);
	pal_planner_free(p);
}

/* Job c.j, every second from 0, planned by ticks through 1010; then loaded
 * again with N versions after v1 (SPECS, each stored at STORED[i]) that no
 * tick activated, and ticked at watermark 1010, now 1009: the activations
 * must be WANT[i] (PAL_NO_TIME: left out).  The batch in *B. */
static pal_planner *chain(pal_job_spec *specs, const int64_t *stored, const int64_t *want,
			  size_t n, pal_plan_batch *b)
{
	pal_planner *p = pal_planner_new(0, &cfg);
	pal_job_spec s1 = spec("c.j", "* * * * * ?", PAL_MISFIRE_SKIP);
	pal_plan_version v[8] = { pal_plan_version_of_spec(&s1, 1, 0) };
	char err[256];
	assert_int_equal(pal_planner_put_job(p, "c.j", v, 1, 990, err, sizeof err), 0);
	assert_int_equal(pal_planner_tick(p, 990, 1005, b), 0);
	assert_int_equal(b->watermark, 1010);
	pal_planner_commit(p, b);
	for (size_t i = 0; i < n; i++) {
		v[i + 1] = pal_plan_version_of_spec(&specs[i], (int)i + 2, PAL_NO_TIME);
		v[i + 1].created_at = stored[i];
	}
	assert_int_equal(pal_planner_put_job(p, "c.j", v, n + 1, 1010, err, sizeof err), 0);
	assert_int_equal(pal_planner_tick(p, 1010, 1009, b), 0);
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (want[i] == PAL_NO_TIME)
			continue;
		assert_true(k < b->n_act);
		assert_int_equal(b->act[k].version, (int)i + 2);
		assert_int_equal(b->act[k].effective_from, want[i]);
		k++;
	}
	assert_int_equal(b->n_act, k);
	assert_int_equal(b->n_mis, 0);
	pal_job_spec_clear(&s1);
	return p;
}

/* S made a one-shot `at` AT (its cron column as pal_schedule_text reads). */
static void make_one_shot(pal_job_spec *s, int64_t at)
{
	char *text, err[256];
	free(s->cron);
	s->cron = NULL;
	s->has_at = true;
	s->at = at;
	assert_int_equal(pal_schedule_text(s, &text, err, sizeof err), 0);
	s->cron = text;
}

/* A version applied between two stops that no tick activated, and a
 * one-shot between two cron versions, are activated where a tick that saw
 * them in time would have, and their instants planned, also those below
 * what was planned: (1) v2 retiring (end 1001, stored 1000), v3 applied
 * again at 1003, v4 retiring (end 1006, stored 1005), v5 applied again at
 * 1008: v3 fires 1004 and 1005, nothing runs in 1001..1003 nor 1006..1008,
 * v5 from 1009; (2) v2 a one-shot at 1003 stored at 1001, v3 every second
 * again at 1004: 1003 fires under v2, 1002 and 1004 under none, v3 from
 * 1005; (3) v2 a cron version at 1001 and v3 at 1004 (neither a stop nor a
 * one-shot): v2 is left out, v3 takes over at the watermark; (4) v2
 * retiring (end 1001, stored 1000), v3 applied again at 1003, v4 a cron
 * version at 1006: v3 has 1004..1010 (v4 takes over at the watermark, as
 * after any version that has not ended), v4 from 1011. */
static void test_planner_unseen_versions_chain(void **st)
{
	pal_plan_batch b = { 0 };
	pal_job_spec s[4] = { spec("c.j", "* * * * * ?", PAL_MISFIRE_SKIP),
			      spec("c.j", "* * * * * ?", PAL_MISFIRE_SKIP),
			      spec("c.j", "* * * * * ?", PAL_MISFIRE_SKIP),
			      spec("c.j", "* * * * * ?", PAL_MISFIRE_SKIP) };
	s[0].has_end = true;
	s[0].end = 1001;
	s[2].has_end = true;
	s[2].end = 1006;
	pal_planner *p = chain(s, (int64_t[]){ 1000, 1003, 1005, 1008 },
			       (int64_t[]){ 1000, 1003, 1005, 1008 }, 4, &b);
	assert_int_equal(version_at(&b, 1, 1001, 2000), 0);
	assert_int_equal(version_at(&b, 2, 0, 2000), 0);
	assert_int_equal(version_at(&b, 3, 1004, 1005), 2);
	assert_int_equal(version_at(&b, 3, 1006, 2000) + version_at(&b, 3, 0, 1003), 0);
	assert_int_equal(version_at(&b, 4, 0, 2000), 0);
	assert_int_equal(version_at(&b, 5, 0, 1008), 0);
	assert_int_equal(version_at(&b, 5, 1009, 1014), 6);
	pal_planner_commit(p, &b);
	assert_int_equal(pal_planner_tick(p, b.watermark, 1010, &b), 0);
	assert_int_equal(b.n_act, 0);
	assert_int_equal(version_at(&b, 5, 1015, 1015), b.n_trig);
	pal_planner_free(p);
	for (int i = 0; i < 4; i++)
		pal_job_spec_clear(&s[i]);

	pal_job_spec o[2] = { spec("c.j", "* * * * * ?", PAL_MISFIRE_SKIP),
			      spec("c.j", "* * * * * ?", PAL_MISFIRE_SKIP) };
	make_one_shot(&o[0], 1003);
	p = chain(o, (int64_t[]){ 1001, 1004 }, (int64_t[]){ 1001, 1004 }, 2, &b);
	assert_int_equal(version_at(&b, 1, 1002, 2000), 0);
	assert_int_equal(version_at(&b, 2, 1003, 1003), 1);
	assert_int_equal(version_at(&b, 2, 0, 2000), 1);
	assert_int_equal(version_at(&b, 3, 0, 1004), 0);
	assert_int_equal(version_at(&b, 3, 1005, 1014), 10);
	pal_planner_free(p);
	pal_job_spec_clear(&o[1]);
	pal_job_spec_clear(&o[0]);

	pal_job_spec c[2] = { spec("c.j", "*/2 * * * * ?", PAL_MISFIRE_SKIP),
			      spec("c.j", "*/3 * * * * ?", PAL_MISFIRE_SKIP) };
	p = chain(c, (int64_t[]){ 1001, 1004 }, (int64_t[]){ PAL_NO_TIME, 1010 }, 2, &b);
	assert_int_equal(version_at(&b, 1, 1011, 2000) + version_at(&b, 2, 0, 2000), 0);
	assert_int_equal(version_at(&b, 3, 0, 1010), 0);
	pal_planner_free(p);
	pal_job_spec_clear(&c[0]);
	pal_job_spec_clear(&c[1]);

	pal_job_spec m[3] = { spec("c.j", "* * * * * ?", PAL_MISFIRE_SKIP),
			      spec("c.j", "* * * * * ?", PAL_MISFIRE_SKIP),
			      spec("c.j", "* * * * * ?", PAL_MISFIRE_SKIP) };
	m[0].has_end = true;
	m[0].end = 1001;
	p = chain(m, (int64_t[]){ 1000, 1003, 1006 }, (int64_t[]){ 1000, 1003, 1010 }, 3, &b);
	assert_int_equal(version_at(&b, 1, 1001, 2000) + version_at(&b, 2, 0, 2000), 0);
	assert_int_equal(version_at(&b, 3, 1004, 1010), 7);
	assert_int_equal(version_at(&b, 3, 0, 1003) + version_at(&b, 3, 1011, 2000), 0);
	assert_int_equal(version_at(&b, 4, 0, 1010), 0);
	assert_int_equal(version_at(&b, 4, 1011, 1014), 4);
	pal_planner_free(p);
	for (int i = 0; i < 3; i++)
		pal_job_spec_clear(&m[i]);
	pal_plan_batch_free(&b);
}

/* Job d.j, version 1 (S[0], active from 0) planned up to watermark WM,
 * versions 2.. (S[1..N-1], each stored at STORED[i - 1]) applied while the
 * shard had no controller, all loaded and ticked at NOW.  The batch in *B. */
static pal_planner *down_chain(pal_job_spec *s, const int64_t *stored, size_t n, int64_t wm,
			       int64_t now, pal_plan_batch *b)
{
	pal_planner *p = pal_planner_new(0, &cfg);
	pal_plan_version v[8] = { pal_plan_version_of_spec(&s[0], 1, 0) };
	for (size_t i = 1; i < n; i++) {
		v[i] = pal_plan_version_of_spec(&s[i], (int)i + 1, PAL_NO_TIME);
		v[i].created_at = stored[i - 1];
	}
	char err[256];
	assert_int_equal(pal_planner_put_job(p, "d.j", v, n, wm, err, sizeof err), 0);
	assert_int_equal(pal_planner_tick(p, wm, now, b), 0);
	for (size_t i = 0; i < n; i++)
		pal_job_spec_clear(&s[i]);
	return p;
}

/* A switch to or from a one-shot applied while the shard had no controller
 * for longer than the lookahead (the watermark below the apply) takes over
 * at the apply, not at the watermark: (1) a cron job made a one-shot at
 * 1020 at 1010, watermark 1000: the cron version keeps 1001..1010, the
 * one-shot fires once; (2) a one-shot at 1005 made a cron job at 1010: the
 * one-shot fires, the cron version nothing up to its apply; (3) the same
 * with a second cron version (every 2 s) stored at 1012: the first cron
 * version is not left out (it takes over at its apply, the second one
 * there too, as after any version that has not ended), nothing of either
 * before 1008; (4) as (1) but ticked after the misfire threshold: each of
 * 1001..1010 has a trigger or is in a misfire range. */
static void test_planner_one_shot_switch_while_down(void **st)
{
	pal_plan_batch b = { 0 };
	pal_job_spec a[2] = { spec("d.j", "* * * * * ?", PAL_MISFIRE_FIRE_ALL),
			      spec("d.j", "* * * * * ?", PAL_MISFIRE_FIRE_ALL) };
	make_one_shot(&a[1], 1020);
	pal_planner *p = down_chain(a, (int64_t[]){ 1010 }, 2, 1000, 1030, &b);
	assert_int_equal(b.n_act, 1);
	assert_int_equal(b.act[0].effective_from, 1010);
	assert_int_equal(version_at(&b, 1, 1001, 1010), 10);
	assert_int_equal(version_at(&b, 1, 1011, 2000), 0);
	assert_int_equal(version_at(&b, 2, 1020, 1020), 1);
	assert_int_equal(version_at(&b, 2, 0, 2000), 1);
	pal_planner_free(p);

	pal_job_spec f[2] = { spec("d.j", "* * * * * ?", PAL_MISFIRE_FIRE_ALL),
			      spec("d.j", "* * * * * ?", PAL_MISFIRE_FIRE_ALL) };
	make_one_shot(&f[0], 1005);
	p = down_chain(f, (int64_t[]){ 1010 }, 2, 1000, 1012, &b);
	assert_int_equal(b.n_act, 1);
	assert_int_equal(b.act[0].effective_from, 1010);
	assert_int_equal(version_at(&b, 1, 1005, 1005), 1);
	assert_int_equal(version_at(&b, 2, 0, 1010), 0);
	assert_int_equal(version_at(&b, 2, 1011, 1017), 7);
	pal_planner_free(p);

	pal_job_spec y[3] = { spec("d.j", "* * * * * ?", PAL_MISFIRE_FIRE_ALL),
			      spec("d.j", "* * * * * ?", PAL_MISFIRE_FIRE_ALL),
			      spec("d.j", "*/2 * * * * ?", PAL_MISFIRE_FIRE_ALL) };
	make_one_shot(&y[0], 1005);
	p = down_chain(y, (int64_t[]){ 1008, 1012 }, 3, 1000, 1014, &b);
	assert_int_equal(b.n_act, 2);
	assert_int_equal(b.act[0].version, 2);
	assert_int_equal(b.act[0].effective_from, 1008);
	assert_int_equal(b.act[1].version, 3);
	assert_int_equal(b.act[1].effective_from, 1008);
	assert_int_equal(version_at(&b, 1, 1005, 1005), 1);
	assert_int_equal(version_at(&b, 2, 0, 2000) + version_at(&b, 3, 0, 1008), 0);
	assert_int_equal(version_at(&b, 3, 1010, 1019), 5);
	pal_planner_free(p);

	pal_job_spec m[2] = { spec("d.j", "* * * * * ?", PAL_MISFIRE_FIRE_ALL),
			      spec("d.j", "* * * * * ?", PAL_MISFIRE_FIRE_ALL) };
	make_one_shot(&m[1], 1020);
	p = down_chain(m, (int64_t[]){ 1010 }, 2, 1000, 1200, &b);
	assert_int_equal(b.n_act, 1);
	assert_int_equal(b.act[0].effective_from, 1010);
	for (int64_t t = 1001; t <= 1010; t++) {
		size_t n = version_at(&b, 1, t, t);
		for (size_t i = 0; i < b.n_mis; i++)
			n += b.mis[i].from <= t && t <= b.mis[i].to;
		assert_int_equal(n, 1);
	}
	assert_int_equal(version_at(&b, 1, 1011, 2000), 0);
	pal_planner_free(p);
	pal_plan_batch_free(&b);
}

/* The misfire rows of version V in B with POLICY and REASON: how many
 * instants, the range's bounds in *FROM and *TO (one row expected). */
static int misfires_of(const pal_plan_batch *b, int v, const char *policy, const char *reason,
		       int64_t *from, int64_t *to)
{
	int n = 0;
	for (size_t i = 0; i < b->n_mis; i++) {
		if (b->mis[i].version != v || strcmp(b->mis[i].policy, policy) ||
		    strcmp(b->mis[i].reason, reason))
			continue;
		n += b->mis[i].count;
		*from = b->mis[i].from;
		*to = b->mis[i].to;
	}
	return n;
}

/* A missed run that crosses a switch to or from a one-shot (applied at
 * 1010 while the shard had no controller, watermark 1000, ticked at 1200,
 * past the threshold) is split at the switch: each version's instants are
 * decided by its own policy and its rows name it.  (1) cron `skip` made a
 * `fire_all` one-shot at 1020: 1001..1010 recorded missed under version 1
 * (skip), none runs, the one-shot runs; (2) cron `fire_all` made a
 * `fire_once` one-shot: all ten cron instants run, and the one-shot;
 * (3) a `fire_once` one-shot at 1005 made a `skip` cron job: the one-shot
 * runs, the cron seconds 1011..1140 are missed under version 2. */
static void test_planner_missed_run_split_at_one_shot_switch(void **st)
{
	pal_plan_batch b = { 0 };
	int64_t f = 0, t = 0;
	pal_job_spec a[2] = { spec("d.j", "* * * * * ?", PAL_MISFIRE_SKIP),
			      spec("d.j", "* * * * * ?", PAL_MISFIRE_FIRE_ALL) };
	make_one_shot(&a[1], 1020);
	pal_planner *p = down_chain(a, (int64_t[]){ 1010 }, 2, 1000, 1200, &b);
	assert_int_equal(version_at(&b, 1, 1001, 2000), 0);
	assert_int_equal(misfires_of(&b, 1, "skip", "missed", &f, &t), 10);
	assert_int_equal(f, 1001);
	assert_int_equal(t, 1010);
	assert_int_equal(version_at(&b, 2, 1020, 1020), 1);
	assert_int_equal(b.n_mis, 1);
	pal_planner_free(p);

	pal_job_spec o[2] = { spec("d.j", "* * * * * ?", PAL_MISFIRE_FIRE_ALL),
			      spec("d.j", "* * * * * ?", PAL_MISFIRE_FIRE_ONCE) };
	make_one_shot(&o[1], 1020);
	p = down_chain(o, (int64_t[]){ 1010 }, 2, 1000, 1200, &b);
	assert_int_equal(version_at(&b, 1, 1001, 1010), 10);
	assert_int_equal(version_at(&b, 2, 1020, 1020), 1);
	assert_int_equal(version_at(&b, 1, 1011, 2000) + version_at(&b, 2, 0, 1019), 0);
	assert_int_equal(b.n_mis, 0);
	pal_planner_free(p);

	pal_job_spec c[2] = { spec("d.j", "* * * * * ?", PAL_MISFIRE_FIRE_ONCE),
			      spec("d.j", "* * * * * ?", PAL_MISFIRE_SKIP) };
	make_one_shot(&c[0], 1005);
	p = down_chain(c, (int64_t[]){ 1010 }, 2, 1000, 1200, &b);
	assert_int_equal(version_at(&b, 1, 1005, 1005), 1);
	assert_int_equal(version_at(&b, 2, 0, 1140), 0);
	assert_int_equal(misfires_of(&b, 2, "skip", "missed", &f, &t), 130);
	assert_int_equal(f, 1011);
	assert_int_equal(t, 1140);
	assert_int_equal(b.n_mis, 1);
	pal_planner_free(p);
	pal_plan_batch_free(&b);
}

static void test_planner_excluded_dates_are_recorded(void **st)
{
	pal_planner *p = pal_planner_new(0, &cfg);
	pal_job_spec s = spec("a.j", "0 0 * * * ?", PAL_MISFIRE_SKIP);
	/* 1970-01-02 excluded (day 1) */
	s.exclusions = calloc(1, sizeof *s.exclusions);
	s.exclusions[0] = (pal_exclusion){ 1, 1 };
	s.n_exclusions = 1;
	put1(p, s, 1, 0, 86400 - 10);
	pal_plan_batch b = { 0 };
	/* now = end of day 1 + 1h: day 1's 24 hourly instants are excluded, not missed */
	assert_int_equal(pal_planner_tick(p, 86400 - 10, 2 * 86400 + 3600, &b), 0);
	size_t excluded = 0, missed = 0;
	for (size_t i = 0; i < b.n_mis; i++) {
		if (!strcmp(b.mis[i].reason, "excluded"))
			excluded += b.mis[i].count;
		else
			missed += b.mis[i].count;
	}
	assert_int_equal(excluded, 24);
	/* day 2 00:00 is missed (past the threshold) */
	assert_int_equal(missed, 1);
	pal_plan_batch_free(&b);
	pal_planner_free(p);
}

static void test_planner_row_cap_cuts_at_clean_instant(void **st)
{
	pal_planner_config small = cfg;
	small.max_rows_per_tick = 4;
	small.lookahead_s = 20;
	pal_planner *p = pal_planner_new(0, &small);
	put1(p, spec("a.one", "* * * * * ?", PAL_MISFIRE_SKIP), 1, 0, 1000);
	put1(p, spec("a.two", "* * * * * ?", PAL_MISFIRE_SKIP), 1, 0, 1000);
	pal_plan_batch b = { 0 };
	assert_int_equal(pal_planner_tick(p, 1000, 1000, &b), 0);
	/* re-scan from 991: 991, 991, 992, 992 then cut */
	assert_false(b.complete);
	assert_int_equal(b.n_trig, 4);
	assert_int_equal(b.watermark, 1000); /* never moves backwards */
	pal_planner_commit(p, &b);
	assert_int_equal(pal_planner_tick(p, 1000, 1000, &b), 0);
	assert_int_equal(b.trig[0].at, 993);
	pal_plan_batch_free(&b);
	pal_planner_free(p);
}

static void test_planner_catchup_sliced_by_row_cap(void **st)
{
	/* Three jobs missed 30 days of seconds (fire_all, window 1 h, cap 100):
	 * catch-up may take half of a tick's 400 rows, so the first tick
	 * decides two jobs' runs (10 re-scanned + 100 rows each), the third
	 * waits and the watermark stays below its run; the current instants
	 * of the first two are planned in the same tick. */
	pal_planner_config small = cfg;
	small.max_rows_per_tick = 400;
	pal_planner *p = pal_planner_new(0, &small);
	int64_t w = 1000, now = w + 30 * 86400;
	const char *ids[] = { "slice.a", "slice.b", "slice.c" };
	for (int i = 0; i < 3; i++) {
		pal_job_spec s = spec(ids[i], "* * * * * ?", PAL_MISFIRE_FIRE_ALL);
		put1(p, s, 1, 0, w);
	}
	pal_plan_batch b = { 0 };
	assert_int_equal(pal_planner_tick(p, w, now, &b), 0);
	assert_false(b.complete);
	assert_int_equal(b.watermark, w); /* the waiting run starts at w + 1 */
	size_t catchup = count_source(&b, PAL_SOURCE_CATCHUP);
	assert_int_equal(catchup, 200);
	assert_int_equal(b.n_mis, 4);
	int64_t total = 0;
	for (size_t i = 0; i < b.n_mis; i++)
		total += b.mis[i].count;
	/* (w, now - 60]: 30 days less a minute per job; 100 of each fired */
	assert_int_equal(total, 2 * (30 * 86400 - 60 - 100));
	/* each job re-scans (w - 10, w]; a and b plan (now - 60, now + 5] */
	assert_int_equal(count_source(&b, PAL_SOURCE_SCHEDULE), 3 * 10 + 2 * 65);
	pal_planner_commit(p, &b);
	assert_int_equal(pal_planner_tick(p, b.watermark, now + 1, &b), 0);
	assert_int_equal(count_source(&b, PAL_SOURCE_CATCHUP), 100);
	assert_int_equal(b.n_mis, 2);
	assert_true(b.complete);
	assert_true(b.watermark > now);
	pal_plan_batch_free(&b);
	pal_planner_free(p);
}

static void test_planner_idle_jobs_are_not_touched(void **st)
{
	pal_planner *p = pal_planner_new(0, &cfg);
	char id[32];
	for (int i = 0; i < 2000; i++) {
		snprintf(id, sizeof id, "idle.%d", i);
		put1(p, spec(id, "0 0 0 1 1 ? 2090", PAL_MISFIRE_SKIP), 1, 0, 1000);
	}
	put1(p, spec("busy.one", "* * * * * ?", PAL_MISFIRE_SKIP), 1, 0, 1000);
	assert_int_equal(pal_planner_jobs(p), 2001);
	pal_plan_batch b = { 0 };
	assert_int_equal(pal_planner_tick(p, 1005, 1001, &b), 0);
	pal_planner_commit(p, &b);
	assert_int_equal(pal_planner_tick(p, 1006, 1002, &b), 0);
	assert_int_equal(b.n_trig, 1);
	assert_int_equal(b.trig[0].at, 1007);
	pal_plan_batch_free(&b);
	pal_planner_free(p);
}


/* A handoff: after a committed tick at watermark W, pal_planner_due_ids(H)
 * names exactly the jobs with an instant in (W, H] (and pending ones); a
 * planner capped at H plans nothing past it and its watermark stops there
 * until the cap is lifted. */
static void test_planner_handoff_due_ids_and_cap(void **st)
{
	pal_planner *p = pal_planner_new(0, &cfg);
	char id[32];
	for (int i = 0; i < 500; i++) {
		snprintf(id, sizeof id, "idle.%d", i);
		put1(p, spec(id, "0 0 0 1 1 ? 2090", PAL_MISFIRE_SKIP), 1, 0, 1000);
	}
	put1(p, spec("busy.every", "* * * * * ?", PAL_MISFIRE_SKIP), 1, 0, 1000);
	put1(p, spec("soon.at-1030", "10 17 0 1 1 ? 1970", PAL_MISFIRE_SKIP), 1, 0, 1000);
	put1(p, spec("late.at-1100", "20 18 0 1 1 ? 1970", PAL_MISFIRE_SKIP), 1, 0, 1000);
	pal_plan_batch b = { 0 };
	assert_int_equal(pal_planner_tick(p, 1000, 1000, &b), 0);
	pal_planner_commit(p, &b);
	assert_int_equal(b.watermark, 1005);
	/* applied after that tick: awaits activation */
	put1(p, spec("new.pending", "0 0 0 1 1 ? 2090", PAL_MISFIRE_SKIP), 1, PAL_NO_TIME, 1005);

	GPtrArray *ids = g_ptr_array_new();
	assert_int_equal(pal_planner_due_ids(p, 1040, 100, ids), 0);
	/* busy (every second), soon (1030) and the pending new job; not late
	 * (1100) nor the idle ones */
	assert_int_equal(ids->len, 3);
	bool busy = false, soon = false;
	for (guint i = 0; i < ids->len; i++) {
		busy |= !strcmp(ids->pdata[i], "busy.every");
		soon |= !strcmp(ids->pdata[i], "soon.at-1030");
		assert_true(strcmp(ids->pdata[i], "late.at-1100"));
	}
	assert_true(busy && soon);
	assert_int_equal(pal_planner_due_ids(p, 1040, 2, ids), PAL_ETOOBIG);

	/* Capped at 1040: at now 1100 the tick stops at 1040. */
	pal_planner_cap_horizon(p, 1040);
	assert_int_equal(pal_planner_tick(p, 1005, 1100, &b), 0);
	assert_int_equal(b.watermark, 1040);
	for (size_t i = 0; i < b.n_trig; i++)
		assert_true(b.trig[i].at <= 1040);
	pal_planner_commit(p, &b);
	pal_planner_cap_horizon(p, PAL_NO_TIME);
	assert_int_equal(pal_planner_tick(p, 1040, 1100, &b), 0);
	assert_int_equal(b.watermark, 1105);
	pal_plan_batch_free(&b);
	g_ptr_array_free(ids, TRUE);
	pal_planner_free(p);
}

/* A committed row of the database: job JOB's instants LO..HI have a
 * trigger (LO == HI) or a misfire row. */
typedef struct db_row {
	const char *job;
	int64_t lo, hi, count;
	bool misfire;
} db_row;

static size_t db_add(db_row *db, size_t n, const pal_plan_batch *b)
{
	for (size_t i = 0; i < b->n_trig; i++)
		db[n++] = (db_row){b->trig[i].job_id, b->trig[i].at, b->trig[i].at, 1, false};
	for (size_t i = 0; i < b->n_mis; i++)
		db[n++] =
		    (db_row){b->mis[i].job_id, b->mis[i].from, b->mis[i].to, b->mis[i].count, true};
	return n;
}

static void test_planner_takeover_resumes_after_decided(void **st)
{
	/* An hour down; the tick's row cap defers b.minutely's catch-up, so
	 * the tick commits a watermark below the missed runs it decided for
	 * a.skip and c.fill.  A successor loading the jobs at that watermark
	 * must neither plant the instants recorded as not fired nor decide
	 * the missed runs again: it resumes each job after the latest instant
	 * the database holds for it (what pal_store_decided_after() reads). */
	pal_planner_config c = cfg;
	c.max_rows_per_tick = 200;
	int64_t w0 = 1803988800 + 20, now = w0 + 3600; /* :20 past a minute */
	const char *cron[] = {"* * * * * ?", "* * * * * ?", "0 * * * * ?", "0 0 0 1 1 ? 2090",
			      "* * * * * ?"};
	const char *ids[] = {"a.skip", "c.fill", "b.minutely", "d.idle", "e.once"};
	pal_misfire_policy mp[] = {PAL_MISFIRE_SKIP, PAL_MISFIRE_FIRE_ALL, PAL_MISFIRE_FIRE_ALL,
				   PAL_MISFIRE_SKIP, PAL_MISFIRE_FIRE_ONCE};
	pal_planner *p1 = pal_planner_new(0, &c), *p2 = pal_planner_new(0, &c);
	for (int i = 0; i < 5; i++) {
		pal_job_spec s = spec(ids[i], cron[i], mp[i]);
		s.max_catchup = i == 1 ? 150 : 100;
		put1(p1, s, 1, 0, w0);
	}
	pal_plan_batch b = {0};
	assert_int_equal(pal_planner_tick(p1, w0, now, &b), 0);
	assert_false(b.complete);
	int64_t wm = b.watermark;
	assert_true(wm < now - 60); /* below the runs decided */
	db_row *db = malloc((b.n_trig + b.n_mis + 100000) * sizeof *db);
	size_t n_db = db_add(db, 0, &b);
	pal_planner_commit(p1, &b);

	/* The leader dies; a successor loads the shard at WM. */
	for (int i = 0; i < 5; i++) {
		pal_job_spec s = spec(ids[i], cron[i], mp[i]);
		s.max_catchup = i == 1 ? 150 : 100;
		put1(p2, s, 1, 0, wm);
	}
	int64_t now2 = now + 2;
	GPtrArray *due = g_ptr_array_new();
	assert_true(pal_planner_loaded_due(p2, now2, due));
	assert_int_equal(due->len, 4); /* not d.idle */
	for (guint i = 0; i < due->len; i++) {
		assert_true(strcmp(due->pdata[i], "d.idle"));
		int64_t decided = PAL_NO_TIME;
		for (size_t k = 0; k < n_db; k++)
			if (!strcmp(db[k].job, due->pdata[i]) && db[k].hi > wm - c.overlap_s &&
			    (decided == PAL_NO_TIME || db[k].hi > decided))
				decided = db[k].hi;
		assert_int_equal(pal_planner_resume_after(p2, due->pdata[i], decided), 0);
	}
	pal_planner_loaded_checked(p2);
	assert_false(pal_planner_loaded_due(p2, now2, due));
	assert_int_equal(pal_planner_resume_after(p2, "no.such", wm), PAL_ENOENT);

	/* Until every missed run is decided: no instant in two rows. */
	for (int t = 0; t < 10; t++) {
		assert_int_equal(pal_planner_tick(p2, wm, now2 + t, &b), 0);
		for (size_t i = 0; i < b.n_trig; i++)
			for (size_t k = 0; k < n_db; k++)
				if (!strcmp(db[k].job, b.trig[i].job_id) && db[k].misfire)
					assert_false(b.trig[i].at >= db[k].lo &&
						     b.trig[i].at <= db[k].hi);
		for (size_t i = 0; i < b.n_mis; i++)
			for (size_t k = 0; k < n_db; k++)
				if (!strcmp(db[k].job, b.mis[i].job_id))
					assert_false(b.mis[i].from <= db[k].hi &&
						     db[k].lo <= b.mis[i].to);
		n_db = db_add(db, n_db, &b);
		pal_planner_commit(p2, &b);
		wm = b.watermark;
		if (b.complete)
			break;
	}
	assert_true(b.complete);
	/* Nothing lost either: every instant in (w0, wm] is in exactly one
	 * row (no two rows share one, checked above). */
	for (int i = 0; i < 5; i++) {
		if (i == 3)
			continue; /* d.idle */
		int64_t n = 0, want = i != 2 ? wm - w0 : (wm - (w0 + 40)) / 60 + 1;
		for (size_t k = 0; k < n_db; k++)
			if (!strcmp(db[k].job, ids[i]) && db[k].lo > w0 && db[k].hi <= wm)
				n += db[k].count;
		assert_int_equal(n, want);
	}
	g_ptr_array_free(due, TRUE);
	free(db);
	pal_plan_batch_free(&b);
	pal_planner_free(p2);
	pal_planner_free(p1);
}

/* Put job ID as version VERSION (activated at EFF) with CRON. */
static void put_v(pal_planner *p, const char *id, const char *cron, int version, int64_t eff,
		  int64_t wm)
{
	pal_job_spec s = spec(id, cron, PAL_MISFIRE_SKIP);
	pal_plan_version v = pal_plan_version_of_spec(&s, version, eff);
	char err[256];
	assert_int_equal(pal_planner_put_job(p, id, &v, 1, wm, err, sizeof err), 0);
	pal_job_spec_clear(&s);
}

/* Every trigger of B belongs to JOB_ID at VERSION; returns how many. */
static size_t only_job(const pal_plan_batch *b, const char *job_id, int version)
{
	for (size_t i = 0; i < b->n_trig; i++) {
		assert_string_equal(b->trig[i].job_id, job_id);
		assert_int_equal(b->trig[i].version, version);
	}
	return b->n_trig;
}

static bool current(const pal_planner *p, const char *id, int version, int64_t eff)
{
	pal_plan_version v = { .version = version, .effective_from = eff };
	return pal_planner_job_current(p, id, &v, 1);
}

/* The id index stays in step with the heap through loads, reloads,
 * replacements and removals of a large shard. */
static void test_planner_index_follows_50000_jobs(void **st)
{
	enum { N = 50000 };
	const char *idle = "0 0 0 1 1 ? 2090", *busy = "* * * * * ?";
	pal_planner *p = pal_planner_new(0, &cfg);
	char id[32];
	for (int i = 0; i < N; i++) {
		snprintf(id, sizeof id, "j.%d", i);
		put_v(p, id, idle, 1, 0, 1000);
	}
	assert_int_equal(pal_planner_jobs(p), N);
	/* a full reload with nothing changed */
	for (int i = 0; i < N; i++) {
		snprintf(id, sizeof id, "j.%d", i);
		put_v(p, id, idle, 1, 0, 1000);
	}
	assert_int_equal(pal_planner_jobs(p), N);
	assert_true(current(p, "j.31337", 1, 0));
	assert_false(current(p, "j.31337", 1, 5)); /* another activation */
	assert_false(current(p, "j.31337", 2, 0));
	assert_false(current(p, "j.50000", 1, 0));

	/* replace one job deep in the heap by a busy version: found, not doubled */
	put_v(p, "j.31337", busy, 2, 0, 1000);
	assert_int_equal(pal_planner_jobs(p), N);
	assert_true(current(p, "j.31337", 2, 0));
	pal_plan_batch b = { 0 };
	assert_int_equal(pal_planner_tick(p, 1000, 1000, &b), 0);
	assert_int_equal(only_job(&b, "j.31337", 2), 15); /* 991..1005 */
	pal_planner_commit(p, &b);

	/* remove every odd job (j.31337 among them), twice: the second is a no-op */
	for (int pass = 0; pass < 2; pass++)
		for (int i = 1; i < N; i += 2) {
			snprintf(id, sizeof id, "j.%d", i);
			pal_planner_remove_job(p, id);
		}
	assert_int_equal(pal_planner_jobs(p), N / 2);
	assert_false(current(p, "j.31337", 2, 0));
	assert_true(current(p, "j.4242", 1, 0));
	assert_int_equal(pal_planner_tick(p, 1005, 1001, &b), 0);
	assert_int_equal(b.n_trig, 0);

	/* after the heap has been reshuffled, replace and re-add still land */
	put_v(p, "j.4242", busy, 2, 0, 1005);
	put_v(p, "j.31337", idle, 3, 0, 1005);
	assert_int_equal(pal_planner_jobs(p), N / 2 + 1);
	assert_int_equal(pal_planner_tick(p, 1005, 1001, &b), 0);
	assert_int_equal(only_job(&b, "j.4242", 2), 11); /* 996..1006 */
	pal_planner_remove_job(p, "j.4242");
	assert_int_equal(pal_planner_jobs(p), N / 2);
	assert_int_equal(pal_planner_tick(p, 1005, 1001, &b), 0);
	assert_int_equal(b.n_trig, 0);
	pal_plan_batch_free(&b);
	pal_planner_free(p);
}

/* A reload that brings the same versions keeps the job's place: nothing
 * already planned comes out again. */
static void test_planner_reload_unchanged_keeps_cursor(void **st)
{
	pal_planner *p = pal_planner_new(0, &cfg);
	put_v(p, "a.j", "*/2 * * * * ?", 1, 0, 1000);
	pal_plan_batch b = { 0 };
	assert_int_equal(pal_planner_tick(p, 1000, 1000, &b), 0);
	assert_int_equal(b.trig[b.n_trig - 1].at, 1004);
	pal_planner_commit(p, &b);
	put_v(p, "a.j", "*/2 * * * * ?", 1, 0, b.watermark);
	assert_int_equal(pal_planner_tick(p, 1005, 1002, &b), 0);
	assert_int_equal(b.n_trig, 1);
	assert_int_equal(b.trig[0].at, 1006);
	pal_plan_batch_free(&b);
	pal_planner_free(p);
}

/* A reload that brings a new version keeps planning the versions it had
 * (their compiled schedules are carried over) and activates the new one. */
static void test_planner_reload_new_version_keeps_old_schedule(void **st)
{
	pal_planner *p = pal_planner_new(0, &cfg);
	put_v(p, "a.j", "*/10 * * * * ?", 1, 0, 1000);
	pal_job_spec s1 = spec("a.j", "*/10 * * * * ?", PAL_MISFIRE_SKIP),
		     s2 = spec("a.j", "*/3 * * * * ?", PAL_MISFIRE_SKIP);
	pal_plan_version v[2] = { pal_plan_version_of_spec(&s1, 1, 0),
				  pal_plan_version_of_spec(&s2, 2, PAL_NO_TIME) };
	char err[256];
	assert_false(pal_planner_job_current(p, "a.j", v, 2));
	assert_int_equal(pal_planner_put_job(p, "a.j", v, 2, 1000, err, sizeof err), 0);
	pal_job_spec_clear(&s1);
	pal_job_spec_clear(&s2);
	assert_int_equal(pal_planner_jobs(p), 1);
	pal_plan_batch b = { 0 };
	assert_int_equal(pal_planner_tick(p, 1000, 1001, &b), 0);
	assert_int_equal(b.n_act, 1);
	assert_int_equal(b.n_trig, 3); /* 1000 from v1; 1002, 1005 from v2 */
	assert_int_equal(b.trig[0].version, 1);
	assert_int_equal(b.trig[0].at, 1000);
	assert_int_equal(b.trig[1].version, 2);
	pal_planner_commit(p, &b);
	/* the activation is now known: the same rows, activated, are current */
	v[1].effective_from = 1000;
	assert_true(pal_planner_job_current(p, "a.j", v, 2));
	pal_plan_batch_free(&b);
	pal_planner_free(p);
}

/* A first start after a large apply: brand-new jobs with an instant by the
 * horizon are activated at once, the others a few per tick, each as of the
 * tick that first saw it - so deferring changes when the row is written,
 * not which instants are planned. */
static void test_planner_defers_idle_activations(void **st)
{
	pal_planner_config c = cfg;
	c.max_activations_per_tick = 2;
	pal_planner *p = pal_planner_new(0, &c);
	put1(p, spec("a.busy", "* * * * * ?", PAL_MISFIRE_SKIP), 1, PAL_NO_TIME, PAL_NO_TIME);
	char id[16];
	for (int i = 0; i < 4; i++) {
		snprintf(id, sizeof id, "a.idle-%d", i);
		put1(p, spec(id, "0 0 0 1 1 ? 2090", PAL_MISFIRE_SKIP), 1, PAL_NO_TIME, PAL_NO_TIME);
	}
	assert_int_equal(pal_planner_pending(p), 5);
	pal_plan_batch b = { 0 };
	assert_int_equal(pal_planner_tick(p, PAL_NO_TIME, 1000, &b), 0);
	assert_int_equal(b.n_act, 3); /* the busy one and two idle ones */
	bool busy = false;
	for (size_t i = 0; i < b.n_act; i++) {
		assert_int_equal(b.act[i].effective_from, 1000);
		busy |= !strcmp(b.act[i].job_id, "a.busy");
	}
	assert_true(busy);
	assert_int_equal(b.n_trig, 5); /* 1001..1005 of the busy job */
	pal_planner_commit(p, &b);
	assert_int_equal(pal_planner_pending(p), 2);
	/* an uncommitted tick leaves them pending, with the same effective_from */
	assert_int_equal(pal_planner_tick(p, 1005, 1003, &b), 0);
	assert_int_equal(b.n_act, 2);
	assert_int_equal(b.act[0].effective_from, 1000);
	assert_int_equal(b.act[1].effective_from, 1000);
	assert_int_equal(pal_planner_pending(p), 2);
	assert_int_equal(pal_planner_tick(p, 1005, 1004, &b), 0);
	assert_int_equal(b.n_act, 2);
	assert_int_equal(b.act[0].effective_from, 1000);
	pal_planner_commit(p, &b);
	assert_int_equal(pal_planner_pending(p), 0);
	assert_int_equal(pal_planner_tick(p, b.watermark, 1005, &b), 0);
	assert_int_equal(b.n_act, 0);
	pal_plan_batch_free(&b);
	pal_planner_free(p);
}

/* While held, a tick activates the brand-new jobs with an instant by the
 * horizon and none of the others - not even one at the top of the heap;
 * released, the next tick activates them as of the held tick that first
 * saw them. */
static void test_planner_hold_deferred(void **st)
{
	pal_planner_config c = cfg;
	c.max_activations_per_tick = 10;
	pal_planner *p = pal_planner_new(0, &c);
	char id[16];
	for (int i = 0; i < 4; i++) {
		snprintf(id, sizeof id, "h.idle-%d", i);
		put1(p, spec(id, "0 0 0 1 1 ? 2090", PAL_MISFIRE_SKIP), 1, PAL_NO_TIME, PAL_NO_TIME);
	}
	put1(p, spec("h.busy", "* * * * * ?", PAL_MISFIRE_SKIP), 1, PAL_NO_TIME, PAL_NO_TIME);
	pal_plan_batch b = { 0 };
	pal_planner_hold_deferred(p, true);
	assert_int_equal(pal_planner_tick(p, PAL_NO_TIME, 1000, &b), 0);
	assert_int_equal(b.n_act, 1);
	assert_string_equal(b.act[0].job_id, "h.busy");
	assert_int_equal(b.n_trig, 5);
	pal_planner_commit(p, &b);
	assert_int_equal(pal_planner_pending(p), 4);
	pal_planner_hold_deferred(p, false);
	assert_int_equal(pal_planner_tick(p, b.watermark, 1001, &b), 0);
	assert_int_equal(b.n_act, 4);
	for (size_t i = 0; i < b.n_act; i++)
		assert_int_equal(b.act[i].effective_from, 1000);
	pal_planner_commit(p, &b);
	assert_int_equal(pal_planner_pending(p), 0);
	pal_plan_batch_free(&b);
	pal_planner_free(p);
}

/* One shared schedule per distinct (cron, zone), one cron per expression,
 * one zone per name, whatever the number of jobs; freed with the last job. */
/* One job whose planning fails is left out of the tick alone: its rows
 * (activation, re-scan) are taken back out, it is listed in failed with its
 * error, its cursor stays, and every other job is planned as usual. */
static void test_planner_failing_job_is_left_out_alone(void **st)
{
	pal_planner_config c = cfg;
	c.fault_job = "a.bad";
	pal_planner *p = pal_planner_new(0, &c);
	put1(p, spec("a.good1", "* * * * * ?", PAL_MISFIRE_SKIP), 1, 0, 1000);
	put1(p, spec("a.bad", "* * * * * ?", PAL_MISFIRE_SKIP), 1, 0, 1000);
	put1(p, spec("a.good2", "* * * * * ?", PAL_MISFIRE_SKIP), 1, PAL_NO_TIME, 1000);
	pal_plan_batch b = { 0 };
	assert_int_equal(pal_planner_tick(p, 1000, 1000, &b), 0);
	assert_int_equal(b.n_failed, 1);
	assert_string_equal(b.failed[0].job_id, "a.bad");
	assert_int_equal(b.failed[0].since, 1000);
	assert_non_null(strstr(b.failed[0].error, "PALISADE_FAULT_PLAN_JOB"));
	size_t good1 = 0, good2 = 0;
	for (size_t i = 0; i < b.n_trig; i++) {
		assert_string_not_equal(b.trig[i].job_id, "a.bad");
		good1 += !strcmp(b.trig[i].job_id, "a.good1");
		good2 += !strcmp(b.trig[i].job_id, "a.good2");
	}
	for (size_t i = 0; i < b.n_refs; i++)
		assert_string_not_equal(b.refs[i].job_id, "a.bad");
	assert_int_equal(good1, 10 + 5); /* re-scan 991..1000, then 1001..1005 */
	assert_int_equal(good2, 5);
	assert_int_equal(b.n_act, 1);
	assert_string_equal(b.act[0].job_id, "a.good2");
	assert_int_equal(b.watermark, 1005);
	/* The controller quarantines it; from then on its instants are misfires. */
	assert_int_equal(pal_planner_quarantine(p, "a.bad"), 0);
	pal_planner_commit(p, &b);
	assert_int_equal(pal_planner_tick(p, 1005, 1001, &b), 0);
	assert_int_equal(b.n_failed, 0);
	assert_int_equal(b.n_mis, 1);
	assert_string_equal(b.mis[0].job_id, "a.bad");
	assert_string_equal(b.mis[0].reason, "quarantined");
	assert_int_equal(b.mis[0].from, 991); /* from its cursor: nothing of it was planned */
	assert_int_equal(b.mis[0].to, 1006);
	assert_int_equal(b.n_trig, 2);
	pal_plan_batch_free(&b);
	pal_planner_free(p);
}

static void test_planner_shares_schedules_and_zones(void **st)
{
	size_t s0, c0, z0, s1, c1, z1;
	pal_schedule_shared_counts(&s0, &c0, &z0);
	pal_planner *p = pal_planner_new(0, &cfg);
	static const char *const crons[] = { "*/5 * * * * ?", "0 0 * * * ?" };
	static const char *const zones[] = { "UTC", "Europe/Paris" };
	char id[32], err[256];
	for (int i = 0; i < 1000; i++) {
		pal_job_spec s = spec("x", crons[i % 2], PAL_MISFIRE_SKIP);
		free(s.timezone);
		s.timezone = strdup(zones[(i / 2) % 2]);
		pal_plan_version v = pal_plan_version_of_spec(&s, 1, 0);
		snprintf(id, sizeof id, "j.%d", i);
		assert_int_equal(pal_planner_put_job(p, id, &v, 1, 1000, err, sizeof err), 0);
		pal_job_spec_clear(&s);
	}
	pal_schedule_shared_counts(&s1, &c1, &z1);
	assert_int_equal(s1 - s0, 4);
	assert_int_equal(c1 - c0, 2);
	assert_int_equal(z1 - z0, 2);
	pal_planner_free(p);
	pal_schedule_shared_counts(&s1, &c1, &z1);
	assert_int_equal(s1, s0);
	assert_int_equal(c1, c0);
	assert_int_equal(z1, z0);
}

/* pal_zone_acquire: the executor's spec cache takes its zones from the same
 * table as the schedules (a zone file read once per process, not per job). */
static void test_zone_acquire_shares_with_schedules(void **st)
{
	size_t s0, c0, z0, s1, c1, z1;
	pal_schedule_shared_counts(&s0, &c0, &z0);
	const pal_tz *a = NULL, *b = NULL, *c = NULL;
	char err[256];
	assert_int_equal(pal_zone_acquire("Asia/Tokyo", &a, err, sizeof err), 0);
	assert_int_equal(pal_zone_acquire("Asia/Tokyo", &b, err, sizeof err), 0);
	assert_ptr_equal(a, b);
	assert_string_equal(pal_tz_name(a), "Asia/Tokyo");
	assert_int_equal(pal_zone_acquire("UTC", &c, err, sizeof err), 0);
	pal_schedule_shared_counts(&s1, &c1, &z1);
	assert_int_equal(z1 - z0, 2);
	assert_int_equal(pal_zone_acquire("Not/AZone", &b, err, sizeof err), PAL_ENOENT);
	assert_null(b);
	assert_int_equal(pal_zone_acquire(NULL, &b, err, sizeof err), PAL_EINVAL);
	pal_zone_release(a);
	pal_schedule_shared_counts(&s1, &c1, &z1);
	assert_int_equal(z1 - z0, 2); /* one reference left */
	pal_zone_release(a);
	pal_zone_release(c);
	pal_zone_release(NULL);
	pal_schedule_shared_counts(&s1, &c1, &z1);
	assert_int_equal(z1, z0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_planner_new_job_activates_now_and_plans_lookahead),
		cmocka_unit_test(test_planner_defers_idle_activations),
		cmocka_unit_test(test_planner_hold_deferred),
		cmocka_unit_test(test_planner_shares_schedules_and_zones),
		cmocka_unit_test(test_planner_failing_job_is_left_out_alone),
		cmocka_unit_test(test_planner_new_job_below_watermark_plans_from_activation),
		cmocka_unit_test(test_planner_new_jobs_over_row_cap_activate_in_slices),
		cmocka_unit_test(test_planner_new_jobs_row_cap_counts_partitions),
		cmocka_unit_test(test_planner_deferred_new_job_not_activated_without_missed_run),
		cmocka_unit_test(test_planner_new_leader_keeps_first_sight_of_deferred_jobs),
		cmocka_unit_test(test_planner_reapplied_waiting_jobs_keep_first_sight),
		cmocka_unit_test(test_planner_uncommitted_tick_is_repeated),
		cmocka_unit_test(test_planner_rescan_below_watermark_is_not_a_misfire),
		cmocka_unit_test(test_planner_misfire_skip_records_all),
		cmocka_unit_test(test_planner_misfire_fire_once_fires_latest),
		cmocka_unit_test(test_planner_misfire_fire_once_window_edge),
		cmocka_unit_test(test_planner_misfire_fire_once_outside_window_counted),
		cmocka_unit_test(test_planner_misfire_fire_once_outside_window_walked),
		cmocka_unit_test(test_planner_misfire_at_outside_window),
		cmocka_unit_test(test_planner_misfire_fire_all_window_and_cap),
		cmocka_unit_test(test_planner_misfire_fire_all_everything_in_window),
		cmocka_unit_test(test_planner_misfire_manual_opens_ticket),
		cmocka_unit_test(test_planner_new_version_applies_after_watermark),
		cmocka_unit_test(test_planner_version_after_ended_takes_over_at_apply),
		cmocka_unit_test(test_planner_retiring_version_takes_over_when_stored),
		cmocka_unit_test(test_planner_unseen_stop_still_stops),
		cmocka_unit_test(test_planner_unseen_versions_chain),
		cmocka_unit_test(test_planner_one_shot_switch_while_down),
		cmocka_unit_test(test_planner_missed_run_split_at_one_shot_switch),
		cmocka_unit_test(test_planner_excluded_dates_are_recorded),
		cmocka_unit_test(test_planner_row_cap_cuts_at_clean_instant),
		cmocka_unit_test(test_planner_catchup_sliced_by_row_cap),
		cmocka_unit_test(test_planner_idle_jobs_are_not_touched),
		cmocka_unit_test(test_planner_handoff_due_ids_and_cap),
		cmocka_unit_test(test_planner_index_follows_50000_jobs),
		cmocka_unit_test(test_planner_reload_unchanged_keeps_cursor),
	    cmocka_unit_test(test_planner_takeover_resumes_after_decided),
		cmocka_unit_test(test_planner_reload_new_version_keeps_old_schedule),
		cmocka_unit_test(test_zone_acquire_shares_with_schedules),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
