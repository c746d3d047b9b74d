/*
 * test_schedule_forms.c - interval (`every`), one-shot (`at`), `spread`,
 * `jitter` and Jenkins' `H` instants of pal_schedule against a model
 * computed here: plain arithmetic on epoch seconds for UTC schedules, with
 * the tagged SHA-256 of docs/jobs.md ("spread:ID:0", "jitter:ID:N",
 * "H:ID:FIELD", first 8 bytes big-endian) taken from the SHA-256 module
 * directly, not from the schedule's own hash.  Also: the schedule text the
 * planner reads (pal_schedule_acquire) gives the same instants as the spec
 * (pal_schedule_open), and counting equals walking for the countable forms.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "palisade/planbatch.h"
#include "palisade/planner.h"
#include "palisade/schedule.h"
#include "palisade/sha256.h"

#define T0 1772323200LL /* 2026-03-01T00:00:00Z */
#define DAY 86400LL

/* The model's hash: SHA-256 of "TAG:ID:N", first 8 bytes big-endian. */
static uint64_t model_hash(const char *tag, const char *id, long long n)
{
	char buf[256];
	int len = snprintf(buf, sizeof buf, "%s:%s:%lld", tag, id, n);
	uint8_t d[32];
	pal_sha256(buf, (size_t)len, d);
	uint64_t h = 0;
	for (int i = 0; i < 8; i++)
		h = (h << 8) | d[i];
	return h;
}

static pal_job_spec base_spec(const char *id)
{
	pal_job_spec s = {0};
	s.id = (char *)id;
	s.timezone = "UTC";
	s.dst = PAL_DST_AUTO;
	s.partitions = 1;
	return s;
}

static pal_schedule *open_spec(const pal_job_spec *s)
{
	pal_schedule *sc = NULL;
	char err[256];
	if (pal_schedule_open(s, &sc, err, sizeof err))
		fail_msg("%s", err);
	return sc;
}

/* The first N instants of SC after AFTER for a version activated at ANCHOR. */
static int walk(const pal_schedule *sc, int64_t anchor, int64_t after, int n, int64_t *out)
{
	int k = 0;
	int64_t t = after;
	while (k < n && pal_schedule_next_from(sc, anchor, t, &out[k], NULL) == PAL_OK)
		t = out[k++];
	return k;
}

static void same_list(const int64_t *got, int n_got, const int64_t *want, int n_want,
		      const char *what)
{
	if (n_got != n_want)
		fail_msg("%s: %d instants, the model has %d", what, n_got, n_want);
	for (int i = 0; i < n_got; i++)
		if (got[i] != want[i])
			fail_msg("%s: instant %d is %lld, the model says %lld", what, i,
				 (long long)got[i], (long long)want[i]);
}

static void test_every_from_start_and_from_activation(void **state)
{
	(void)state;
	pal_job_spec s = base_spec("every.start");
	s.every_s = 90;
	s.has_start = true;
	s.start = T0 + 17;
	s.has_end = true;
	s.end = T0 + 17 + 90 * 10; /* exclusive: ten instants */
	pal_schedule *sc = open_spec(&s);
	int64_t got[32], want[32];
	int n = walk(sc, PAL_NO_TIME, T0 - DAY, 32, got);
	for (int k = 0; k < 10; k++)
		want[k] = T0 + 17 + 90LL * k;
	same_list(got, n, want, 10, "every 90s from start, until end");
	/* the anchor does not matter when start is given */
	n = walk(sc, T0 + 5, T0 + 200, 32, got);
	same_list(got, n, want + 3, 7, "every 90s after an instant inside");
	pal_schedule_close(sc);

	/* no start: counted from the activation (the version's effective_from) */
	s = base_spec("every.anchor");
	s.every_s = 3600;
	sc = open_spec(&s);
	const int64_t eff = T0 + 1234;
	n = walk(sc, eff, eff, 5, got);
	for (int k = 0; k < 5; k++)
		want[k] = eff + 3600LL * (k + 1);
	same_list(got, n, want, 5, "every 1h from activation");
	/* a walk that resumes anywhere (a reload's cursor) stays on the grid */
	n = walk(sc, eff, eff + 5000, 3, got);
	same_list(got, n, want + 1, 3, "every 1h resumed between instants");
	pal_schedule_close(sc);
}

static void test_at_fires_once_inside_bounds(void **state)
{
	(void)state;
	pal_job_spec s = base_spec("one.shot");
	s.has_at = true;
	s.at = T0 + 3 * DAY + 45;
	pal_schedule *sc = open_spec(&s);
	int64_t got[4];
	int n = walk(sc, PAL_NO_TIME, T0, 4, got);
	int64_t want[] = {T0 + 3 * DAY + 45};
	same_list(got, n, want, 1, "at");
	assert_int_equal(walk(sc, PAL_NO_TIME, T0 + 3 * DAY + 45, 4, got), 0);
	pal_schedule_close(sc);
}

/* spread: one offset per job id, in [0, spread), on every instant. */
static void test_spread_is_a_stable_offset_per_job(void **state)
{
	(void)state;
	const char *ids[] = {"report.a", "report.b", "report.c", "billing.nightly"};
	int64_t seen[4];
	for (int i = 0; i < 4; i++) {
		pal_job_spec s = base_spec(ids[i]);
		s.cron = "0 * * * *";
		s.spread_s = 600;
		pal_schedule *sc = open_spec(&s);
		int64_t got[24], want[24];
		int n = walk(sc, PAL_NO_TIME, T0 - 1, 24, got);
		int64_t off = (int64_t)(model_hash("spread", ids[i], 0) % 600);
		for (int k = 0; k < 24; k++)
			want[k] = T0 + 3600LL * k + off;
		same_list(got, n, want, 24, ids[i]);
		seen[i] = off;
		pal_schedule_close(sc);
	}
	/* four ids, four offsets: the burst is spread (a hash collision here
	 * would make the test prove nothing) */
	for (int i = 0; i < 4; i++)
		for (int j = i + 1; j < 4; j++)
			assert_true(seen[i] != seen[j]);
}

/* jitter: per nominal instant n, hash(id, n) mod min(jitter, gap to the next). */
static void test_jitter_per_instant_and_never_past_the_next(void **state)
{
	(void)state;
	pal_job_spec s = base_spec("jittery");
	s.cron = "0 * * * *";
	s.jitter_s = 300;
	s.spread_s = 120;
	pal_schedule *sc = open_spec(&s);
	int64_t got[48], want[48];
	int n = walk(sc, PAL_NO_TIME, T0 - 1, 48, got);
	int64_t off = (int64_t)(model_hash("spread", "jittery", 0) % 120);
	bool moved = false;
	for (int k = 0; k < 48; k++) {
		long long nominal = T0 + 3600LL * k;
		int64_t j = (int64_t)(model_hash("jitter", "jittery", nominal) % 300);
		want[k] = nominal + off + j;
		moved = moved || (k && want[k] - want[k - 1] != 3600);
		/* and back: the nominal instant of each fired one */
		if (k < n)
			assert_int_equal(pal_schedule_nominal(sc, PAL_NO_TIME, got[k]), nominal);
	}
	same_list(got, n, want, 48, "hourly, spread 2m, jitter 5m");
	assert_true(moved);
	pal_schedule_close(sc);

	/* jitter longer than the interval is cut at the gap: order and
	 * distinctness hold, so no two instants share a plan key */
	s = base_spec("jitter.wide");
	s.every_s = 60;
	s.has_start = true;
	s.start = T0;
	s.jitter_s = 3600;
	sc = open_spec(&s);
	n = walk(sc, PAL_NO_TIME, T0 - 1, 48, got);
	assert_int_equal(n, 48);
	for (int k = 0; k < 48; k++) {
		long long nominal = T0 + 60LL * k;
		want[k] = nominal + (int64_t)(model_hash("jitter", "jitter.wide", nominal) % 60);
		if (k)
			assert_true(want[k] > want[k - 1]);
		assert_int_equal(pal_schedule_nominal(sc, PAL_NO_TIME, got[k]), nominal);
	}
	same_list(got, n, want, 48, "every 1m, jitter 1h cut to 1m");
	pal_schedule_close(sc);
}

/* Jenkins' H: H, H(a-b), H/n in a 5-field cron, per job id. */
static void test_h_fields_per_job(void **state)
{
	(void)state;
	const char *id = "nightly.export";
	pal_job_spec s = base_spec(id);
	s.cron = "H H(0-5) * * *";
	pal_schedule *sc = open_spec(&s);
	int64_t got[3], want[3];
	int n = walk(sc, PAL_NO_TIME, T0 - 1, 3, got);
	long long minute = (long long)(model_hash("H", id, 0) % 60);
	long long hour = (long long)(model_hash("H", id, 1) % 6);
	for (int k = 0; k < 3; k++)
		want[k] = T0 + DAY * k + hour * 3600 + minute * 60;
	same_list(got, n, want, 3, "H H(0-5) * * *");
	pal_schedule_close(sc);

	s.cron = "H/15 * * * *";
	sc = open_spec(&s);
	int64_t g8[8], w8[8];
	n = walk(sc, PAL_NO_TIME, T0 - 1, 8, g8);
	long long m0 = (long long)(model_hash("H", id, 0) % 15);
	for (int k = 0; k < 8; k++)
		w8[k] = T0 + 3600LL * (k / 4) + (m0 + 15 * (k % 4)) * 60;
	same_list(g8, n, w8, 8, "H/15 * * * *");
	pal_schedule_close(sc);

	/* the same text on every node and every re-apply, and a bad H refused */
	char *a = NULL, *b = NULL, err[256];
	assert_int_equal(pal_cron_resolve_hash("H H(0-5) * * *", id, &a, err, sizeof err), 0);
	assert_int_equal(pal_cron_resolve_hash("H H(0-5) * * *", id, &b, err, sizeof err), 0);
	assert_string_equal(a, b);
	free(a);
	free(b);
	assert_int_equal(pal_cron_resolve_hash("H(5-70) * * * *", id, &a, err, sizeof err),
			 PAL_EINVAL);
	assert_int_equal(pal_cron_resolve_hash("0 0 * * * ? H", id, &a, err, sizeof err),
			 PAL_EINVAL);
	/* a day name with an H in it is not Jenkins' H */
	assert_int_equal(pal_cron_resolve_hash("0 0 12 ? * MON-THU", id, &a, err, sizeof err), 0);
	assert_string_equal(a, "0 0 12 ? * MON-THU");
	free(a);
}

/* What the planner reads (the schedule text in job_versions.cron, through
 * pal_schedule_acquire) gives what the spec gives. */
static void test_text_through_acquire_equals_spec(void **state)
{
	(void)state;
	pal_job_spec specs[4];
	specs[0] = base_spec("t.every");
	specs[0].every_s = 600;
	specs[0].spread_s = 300;
	specs[1] = base_spec("t.at");
	specs[1].has_at = true;
	specs[1].at = T0 + 777;
	specs[2] = base_spec("t.cron");
	specs[2].cron = "H 3 * * *";
	specs[2].jitter_s = 900;
	specs[3] = base_spec("t.plain");
	specs[3].cron = "0 0 * * *";
	for (int i = 0; i < 4; i++) {
		char *text = NULL, err[256];
		assert_int_equal(pal_schedule_text(&specs[i], &text, err, sizeof err), 0);
		/* every extended form is a text no cron parser accepts */
		pal_cron *cr = NULL;
		if (i < 3) {
			assert_true(pal_cron_parse(text, &cr, err, sizeof err, NULL) != 0);
		} else {
			assert_string_equal(text, "0 0 * * *");
		}
		pal_plan_version v = pal_plan_version_of_spec(&specs[i], 1, T0);
		v.cron = text;
		pal_schedule *shared = NULL, *own = open_spec(&specs[i]);
		if (pal_schedule_acquire(&v, specs[i].id, &shared, err, sizeof err))
			fail_msg("%s", err);
		int64_t a[20], b[20];
		int na = walk(shared, T0, T0, 20, a), nb = walk(own, T0, T0, 20, b);
		same_list(a, na, b, nb, text);
		assert_true(na > 0);
		pal_schedule_release(shared);
		pal_schedule_close(own);
		free(text);
	}
}

/* Counting equals walking for every, at and spread. */
static void test_count_equals_walk(void **state)
{
	(void)state;
	pal_job_spec specs[3];
	specs[0] = base_spec("c.every");
	specs[0].every_s = 97;
	specs[0].spread_s = 50;
	specs[1] = base_spec("c.at");
	specs[1].has_at = true;
	specs[1].at = T0 + 5000;
	specs[2] = base_spec("c.spread");
	specs[2].cron = "0 */5 * * * ?";
	specs[2].spread_s = 1000;
	specs[2].has_end = true;
	specs[2].end = T0 + 2 * DAY;
	for (int i = 0; i < 3; i++) {
		pal_schedule *sc = open_spec(&specs[i]);
		assert_true(pal_schedule_countable(sc));
		const int64_t ranges[][2] = {
		    {T0, T0 + DAY}, {T0 + 4999, T0 + 5000}, {T0 + 33, T0 + 3 * DAY + 17}};
		for (int r = 0; r < 3; r++) {
			int64_t n, f, l, wn = 0, wf = PAL_NO_TIME, wl = PAL_NO_TIME,
					 x = ranges[r][0];
			assert_int_equal(
			    pal_schedule_count_from(sc, T0, ranges[r][0], ranges[r][1], &n, &f, &l),
			    0);
			while (pal_schedule_next_from(sc, T0, x, &x, NULL) == PAL_OK &&
			       x <= ranges[r][1]) {
				if (!wn)
					wf = x;
				wl = x;
				wn++;
			}
			if (n != wn || f != wf || l != wl)
				fail_msg("%s range %d: count %lld %lld %lld, walk %lld %lld %lld",
					 specs[i].id, r, (long long)n, (long long)f, (long long)l,
					 (long long)wn, (long long)wf, (long long)wl);
		}
		pal_schedule_close(sc);
	}
	pal_job_spec j = base_spec("c.jitter");
	j.every_s = 60;
	j.jitter_s = 10;
	pal_schedule *sc = open_spec(&j);
	assert_false(pal_schedule_countable(sc));
	pal_schedule_close(sc);
}

/*
 * Through the planner: an `every` job without start (counted from its
 * activation, 1003) and one with jitter (not countable: walked), down from
 * watermark 1003 to now 2000 with misfire skip, threshold 60 s: every
 * instant of the model up to 1940 is a recorded misfire, every later one up
 * to now + lookahead a trigger at the model's second, none twice.
 */
static void test_planner_every_and_jitter_after_downtime(void **state)
{
	(void)state;
	const pal_planner_config cfg = {.overlap_s = 10,
					.lookahead_s = 5,
					.misfire_threshold_s = 60,
					.max_rows_per_tick = 50000};
	const char *ids[2] = {"p.every", "p.jitter"};
	pal_planner *p = pal_planner_new(0, &cfg);
	assert_non_null(p);
	for (int i = 0; i < 2; i++) {
		pal_job_spec s = base_spec(ids[i]);
		s.every_s = 10;
		s.jitter_s = i ? 5 : 0;
		s.tenant = "t";
		s.group = "g";
		s.misfire = PAL_MISFIRE_SKIP;
		s.catchup_window_ms = 3600 * 1000;
		s.max_catchup = 100;
		char *text = NULL, err[256];
		assert_int_equal(pal_schedule_text(&s, &text, err, sizeof err), 0);
		pal_plan_version v = pal_plan_version_of_spec(&s, 1, 1003);
		v.cron = text;
		if (pal_planner_put_job(p, ids[i], &v, 1, 1003, err, sizeof err))
			fail_msg("%s", err);
		free(text);
	}
	pal_plan_batch b = {0};
	assert_int_equal(pal_planner_tick(p, 1003, 2000, &b), 0);
	for (int i = 0; i < 2; i++) {
		/* the model: nominal 1003 + 10k, moved by the jitter hash below 5 */
		long long missed = 0, planned = 0, first_missed = -1, last_missed = -1;
		int64_t want[16], want_nominal[16];
		for (long long n = 1013; n <= 2005; n += 10) {
			long long at =
			    n + (i ? (long long)(model_hash("jitter", ids[i], n) % 5) : 0);
			if (at > 2005)
				break;
			if (at <= 1940) {
				if (first_missed < 0)
					first_missed = at;
				last_missed = at;
				missed++;
			} else {
				assert_true(planned < 16);
				want_nominal[planned] = n;
				want[planned++] = at;
			}
		}
		int64_t got[16], got_nominal[16];
		int n_got = 0;
		for (size_t k = 0; k < b.n_trig; k++)
			if (!strcmp(b.trig[k].job_id, ids[i])) {
				assert_true(n_got < 16);
				got_nominal[n_got] = b.trig[k].nominal;
				got[n_got++] = b.trig[k].at;
			}
		same_list(got, n_got, want, (int)planned, ids[i]);
		/* each trigger carries its nominal instant (the version's
		 * activation anchors the intervals) */
		same_list(got_nominal, n_got, want_nominal, (int)planned, ids[i]);
		long long m = 0, mf = -1, ml = -1;
		for (size_t k = 0; k < b.n_mis; k++)
			if (!strcmp(b.mis[k].job_id, ids[i])) {
				m += b.mis[k].count;
				if (mf < 0 || b.mis[k].from < mf)
					mf = b.mis[k].from;
				if (b.mis[k].to > ml)
					ml = b.mis[k].to;
			}
		if (m != missed || mf != first_missed || ml != last_missed)
			fail_msg("%s: misfires %lld [%lld, %lld], the model %lld [%lld, %lld]",
				 ids[i], m, mf, ml, missed, first_missed, last_missed);
	}
	pal_plan_batch_free(&b);
	pal_planner_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_from_start_and_from_activation),
	    cmocka_unit_test(test_at_fires_once_inside_bounds),
	    cmocka_unit_test(test_spread_is_a_stable_offset_per_job),
	    cmocka_unit_test(test_jitter_per_instant_and_never_past_the_next),
	    cmocka_unit_test(test_h_fields_per_job),
	    cmocka_unit_test(test_text_through_acquire_equals_spec),
	    cmocka_unit_test(test_count_equals_walk),
	    cmocka_unit_test(test_planner_every_and_jitter_after_downtime),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
