/*
 * test_jobfile.c - job file loading and validation (src/config/jobfile.c).
 *
 * One fixture per kind of bad input (tests/unit/fixtures/NAME.yaml), asserting
 * the exact file:line:col and message; a file with many problems must have
 * all of them reported; valid files must produce the right spec with every
 * default filled in.  The shipped examples (config/jobs/NAME.yaml) must
 * validate.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <glob.h>
#include <cmocka.h>
#include "palisade/jobfile.h"
#include "palisade/timefmt.h"

static const char *fixture(const char *name)
{
	static char buf[8][4096];
	static int k;
	const char *dir = getenv("PALISADE_FIXTURES");
	const char *src = __FILE__;
	const char *slash = strrchr(src, '/');
	char *b = buf[k++ % 8];

	if (dir && *dir)
		snprintf(b, 4096, "%s/%s", dir, name);
	else if (slash)
		snprintf(b, 4096, "%.*s/fixtures/%s", (int)(slash - src), src, name);
	else
		snprintf(b, 4096, "fixtures/%s", name);
	return b;
}

/* The repository root, derived like the fixtures (tests/unit/x.c -> .). */
static const char *repo_path(const char *rel)
{
	static char buf[4096];
	const char *src = __FILE__;
	const char *p = strstr(src, "tests/unit/");

	if (p)
		snprintf(buf, sizeof buf, "%.*s%s", (int)(p - src), src, rel);
	else
		snprintf(buf, sizeof buf, "%s", rel);
	return buf;
}

static int find_diag(const pal_diags *d, int line, int col, const char *needle)
{
	for (size_t i = 0; i < d->n; i++)
		if ((!line || d->v[i].line == line) && (!col || d->v[i].col == col) &&
		    strstr(d->v[i].msg, needle))
			return (int)i;
	return -1;
}

#define ASSERT_DIAG(d, line, col, needle)                                                          \
	do {                                                                                       \
		if (find_diag((d), (line), (col), (needle)) < 0) {                                 \
			pal_diags_print((d), stderr);                                              \
			fail_msg("no diagnostic %d:%d containing \"%s\"", (line), (col),           \
				 (needle));                                                        \
		}                                                                                  \
	} while (0)

struct loaded {
	pal_jobset set;
	pal_diags diags;
	int rc;
};

static void load1(const char *name, struct loaded *l)
{
	const char *p = fixture(name);

	memset(l, 0, sizeof *l);
	l->rc = pal_jobfiles_load(&p, 1, &l->set, &l->diags);
}

static void load_str(const char *text, struct loaded *l)
{
	memset(l, 0, sizeof *l);
	l->rc = pal_jobfile_load_buffer("t.yaml", text, strlen(text), &l->set, &l->diags);
}

static void done(struct loaded *l)
{
	pal_jobset_free(&l->set);
	pal_diags_free(&l->diags);
}

/* A minimal valid job with EXTRA lines spliced into the job mapping. */
static void load_job(const char *extra, struct loaded *l)
{
	char buf[8192];

	snprintf(buf, sizeof buf,
		 "jobs:\n"
		 "  - id: t.job\n"
		 "    schedule: {cron: \"* * * * *\"}\n"
		 "    target: {url: \"http://127.0.0.1:8089/x\"}\n"
		 "%s",
		 extra);
	load_str(buf, l);
}

/* ---- valid input ---- */

static void test_jobfile_full_example_loads_every_key(void **state)
{
	struct loaded l;
	const pal_job_spec *s;
	int64_t t;

	(void)state;
	load1("full.yaml", &l);
	if (l.diags.n)
		pal_diags_print(&l.diags, stderr);
	assert_int_equal(l.rc, 0);
	assert_int_equal(l.diags.n, 0);
	assert_int_equal(l.set.n, 2);
	s = &l.set.jobs[0];
	assert_string_equal(s->id, "billing.daily-summary");
	assert_string_equal(s->tenant, "billing");
	assert_string_equal(s->group, "reports");
	assert_string_equal(s->cron, "0 30 2 * * ?");
	assert_string_equal(s->timezone, "Europe/Berlin");
	assert_true(s->dst.is_auto);
	assert_true(s->has_start && s->has_end);
	assert_int_equal(pal_parse_rfc3339("2026-01-01T00:00:00Z", &t), 0);
	assert_int_equal(s->start, t);
	assert_int_equal(s->n_exclusions, 2);
	assert_int_equal(s->exclusions[0].first_day, pal_days_from_civil(2026, 12, 25));
	assert_int_equal(s->exclusions[0].last_day, pal_days_from_civil(2026, 12, 25));
	assert_int_equal(s->exclusions[1].first_day, pal_days_from_civil(2026, 12, 30));
	assert_int_equal(s->exclusions[1].last_day, pal_days_from_civil(2027, 1, 2));
	assert_int_equal(s->misfire, PAL_MISFIRE_FIRE_ONCE);
	assert_int_equal(s->catchup_window_ms, 3600000);
	assert_int_equal(s->max_catchup, 100);
	assert_int_equal(s->overlap, PAL_OVERLAP_FORBID);
	assert_int_equal(s->partitions, 4);
	assert_int_equal(s->priority, 5);
	assert_int_equal(s->max_in_flight, 2);
	assert_int_equal(s->deadline_ms, 600000);
	assert_string_equal(s->idempotency_key, "{job}/{scheduled_at}/{partition}");
	assert_string_equal(s->method, "POST");
	assert_string_equal(s->url, "http://127.0.0.1:8089/effects/summary");
	assert_int_equal(s->n_headers, 1);
	assert_string_equal(s->headers[0].name, "Authorization");
	/* secrets stay unresolved */
	assert_string_equal(s->headers[0].value, "Bearer ${SUMMARY_TOKEN}");
	assert_string_equal(s->body, "{\"day\": \"{scheduled_date}\", \"partition\": {partition}}");
	assert_int_equal(s->timeout_ms, 30000);
	assert_string_equal(s->status_url, "http://127.0.0.1:8089/effects/{idempotency_key}");
	assert_int_equal(s->max_attempts, 5);
	assert_int_equal(s->backoff_initial_ms, 1000);
	assert_int_equal(s->backoff_max_ms, 300000);
	assert_true(s->backoff_multiplier == 2.0);
	assert_int_equal(s->jitter, PAL_JITTER_FULL);
	assert_int_equal(s->max_age_ms, 3600000);
	assert_non_null(strstr(s->file, "full.yaml"));
	assert_int_equal(s->line, 2);
	assert_int_equal(s->col, 5);
	done(&l);
}

/* `after`: unknown upstreams, cycles (a job after itself too), another
 * cluster's job, both schedule and after, neither; each at the position of
 * what is wrong. */
static void test_jobfile_after_refusals(void **state)
{
	struct loaded l;

	(void)state;
	load1("after_bad.yaml", &l);
	assert_int_equal(l.rc, PAL_EINVAL);
	ASSERT_DIAG(&l.diags, 3, 19, "job \"x\" waits for itself (x -> y -> x)");
	ASSERT_DIAG(&l.diags, 6, 19, "job \"y\" waits for itself (y -> x -> y)");
	ASSERT_DIAG(&l.diags, 6, 29, "unknown job \"nope\"");
	ASSERT_DIAG(&l.diags, 9, 19, "job \"s\" waits for itself (s -> s)");
	ASSERT_DIAG(&l.diags, 12, 15, "may not also have a \"schedule\"");
	ASSERT_DIAG(&l.diags, 16, 19, "names a job of another cluster");
	ASSERT_DIAG(&l.diags, 16, 47, "add a unit");
	ASSERT_DIAG(&l.diags, 18, 5, "missing the required key \"schedule\"");
	assert_int_equal(l.diags.n, 8);
	done(&l);
}

static void test_jobfile_minimal_job_gets_defaults(void **state)
{
	struct loaded l;
	const pal_job_spec *s;

	(void)state;
	load_job("", &l);
	assert_int_equal(l.rc, 0);
	assert_int_equal(l.set.n, 1);
	s = &l.set.jobs[0];
	assert_string_equal(s->tenant, "default");
	assert_string_equal(s->group, "default");
	assert_string_equal(s->timezone, "UTC");
	assert_true(s->dst.is_auto);
	assert_false(s->has_start);
	assert_false(s->has_end);
	assert_int_equal(s->n_exclusions, 0);
	assert_int_equal(s->misfire, PAL_MISFIRE_FIRE_ONCE);
	assert_int_equal(s->catchup_window_ms, 3600000);
	assert_int_equal(s->max_catchup, 100);
	assert_int_equal(s->overlap, PAL_OVERLAP_ALLOW);
	assert_int_equal(s->partitions, 1);
	assert_int_equal(s->priority, 0);
	assert_int_equal(s->max_in_flight, 0);
	assert_int_equal(s->deadline_ms, 0);
	assert_string_equal(s->idempotency_key, "{job}/{scheduled_at}/{partition}");
	assert_string_equal(s->method, "POST");
	assert_int_equal(s->n_headers, 0);
	assert_null(s->body);
	assert_null(s->status_url);
	assert_int_equal(s->timeout_ms, 30000);
	assert_int_equal(s->max_attempts, 5);
	assert_int_equal(s->backoff_initial_ms, 1000);
	assert_int_equal(s->backoff_max_ms, 300000);
	assert_true(s->backoff_multiplier == 2.0);
	assert_int_equal(s->jitter, PAL_JITTER_FULL);
	assert_int_equal(s->max_age_ms, 3600000);
	done(&l);
}

static void test_jobfile_shipped_examples_validate(void **state)
{
	glob_t g;
	pal_jobset set = {0};
	pal_diags d = {0};
	int rc;

	(void)state;
	assert_int_equal(glob(repo_path("config/jobs/*.yaml"), 0, NULL, &g), 0);
	assert_true(g.gl_pathc >= 2);
	rc = pal_jobfiles_load((const char *const *)g.gl_pathv, g.gl_pathc, &set, &d);
	if (d.n)
		pal_diags_print(&d, stderr);
	assert_int_equal(rc, 0);
	assert_int_equal(d.n, 0);
	assert_true(set.n >= g.gl_pathc);
	globfree(&g);
	pal_jobset_free(&set);
}

static void test_jobfile_dst_and_misfire_forms(void **state)
{
	struct loaded l;

	(void)state;
	load_job("    misfire: skip\n"
		 "    retry: {backoff: {jitter: none, multiplier: 1.5}, max_age: 0}\n",
		 &l);
	assert_int_equal(l.rc, 0);
	assert_int_equal(l.set.jobs[0].misfire, PAL_MISFIRE_SKIP);
	assert_int_equal(l.set.jobs[0].jitter, PAL_JITTER_NONE);
	assert_true(l.set.jobs[0].backoff_multiplier == 1.5);
	assert_int_equal(l.set.jobs[0].max_age_ms, 0);
	done(&l);

	load_str(
	    "jobs:\n"
	    "  - id: dst.explicit\n"
	    "    schedule: {cron: \"0 30 2 * * ?\", timezone: Europe/Berlin, dst: {gap: skip}}\n"
	    "    target: {url: \"http://127.0.0.1:8089/x\"}\n",
	    &l);
	assert_int_equal(l.rc, 0);
	assert_false(l.set.jobs[0].dst.is_auto);
	assert_int_equal(l.set.jobs[0].dst.gap, PAL_DST_GAP_SKIP);
	assert_int_equal(l.set.jobs[0].dst.overlap, PAL_DST_OVERLAP_FIRST);
	done(&l);

	load_str("jobs:\n"
		 "  - id: dst.bad\n"
		 "    schedule: {cron: \"0 30 2 * * ?\", dst: {gap: jump, overlaps: both}}\n"
		 "    target: {url: \"http://127.0.0.1:8089/x\"}\n",
		 &l);
	assert_int_equal(l.rc, PAL_EINVAL);
	ASSERT_DIAG(&l.diags, 3, 49, "unknown dst gap policy \"jump\" (expected shift, skip)");
	ASSERT_DIAG(&l.diags, 3, 55,
		    "unknown key \"overlaps\" in schedule.dst (did you mean \"overlap\"?)");
	done(&l);
}

/* ---- one fixture per bad input ---- */

static void test_jobfile_unknown_key_suggests(void **state)
{
	struct loaded l;

	(void)state;
	load1("unknown_key.yaml", &l);
	assert_int_equal(l.rc, PAL_EINVAL);
	assert_int_equal(l.diags.n, 1);
	ASSERT_DIAG(&l.diags, 5, 5, "unknown key \"misfir\" in job (did you mean \"misfire\"?)");
	assert_non_null(strstr(l.diags.v[0].file, "unknown_key.yaml"));
	assert_int_equal(l.set.n, 0);
	done(&l);

	/* a key in the wrong section says where it belongs */
	load_job("    timezone: UTC\n", &l);
	ASSERT_DIAG(&l.diags, 5, 5,
		    "unknown key \"timezone\" in job; hint: it belongs in the schedule section");
	done(&l);
}

static void test_jobfile_wrong_types(void **state)
{
	struct loaded l;

	(void)state;
	load1("wrong_type.yaml", &l);
	assert_int_equal(l.rc, PAL_EINVAL);
	assert_int_equal(l.diags.n, 3);
	ASSERT_DIAG(&l.diags, 5, 17, "partitions: expected an integer, got a mapping");
	ASSERT_DIAG(&l.diags, 6, 15, "priority: expected an integer, got a string (\"5\")");
	ASSERT_DIAG(&l.diags, 7, 13, "target: expected a mapping, got a string");
	done(&l);

	load_str("jobs: {a: 1}\n", &l);
	ASSERT_DIAG(&l.diags, 1, 7, "jobs: expected a sequence, got a mapping");
	done(&l);
	load_str("- a\n", &l);
	ASSERT_DIAG(&l.diags, 1, 1, "expected a mapping with the key \"jobs\", got a sequence");
	done(&l);
	load_str("jobs:\n  - just a string\n", &l);
	ASSERT_DIAG(&l.diags, 2, 5, "job: expected a mapping");
	done(&l);
	load_str("job:\n  - id: x\n", &l);
	ASSERT_DIAG(&l.diags, 1, 1,
		    "unknown key \"job\" at the top level (did you mean \"jobs\"?)");
	done(&l);
}

static void test_jobfile_invalid_cron_names_field(void **state)
{
	struct loaded l;

	(void)state;
	load1("invalid_cron.yaml", &l);
	assert_int_equal(l.rc, PAL_EINVAL);
	assert_int_equal(l.diags.n, 1);
	/* column of the hour field inside the quoted expression */
	ASSERT_DIAG(&l.diags, 4, 19, "invalid cron expression \"0 30 25 * * ?\": field 3 (hour)");
	done(&l);
}

static void test_jobfile_cron_that_never_fires(void **state)
{
	struct loaded l;

	(void)state;
	load_str("jobs:\n"
		 "  - id: feb.thirtieth\n"
		 "    schedule: {cron: \"0 0 0 30 2 ?\"}\n"
		 "    target: {url: \"http://127.0.0.1:8089/x\"}\n",
		 &l);
	assert_int_equal(l.rc, PAL_EINVAL);
	ASSERT_DIAG(&l.diags, 3, 22, "never fires");
	done(&l);

	load_str("jobs:\n"
		 "  - id: outside.window\n"
		 "    schedule: {cron: \"0 0 0 1 1 ? 2030\", start: 2026-01-01T00:00:00Z,\n"
		 "               end: 2027-01-01T00:00:00Z}\n"
		 "    target: {url: \"http://127.0.0.1:8089/x\"}\n",
		 &l);
	ASSERT_DIAG(&l.diags, 3, 22, "never fires between start and end");
	done(&l);
}

static void test_jobfile_unknown_zone(void **state)
{
	struct loaded l;

	(void)state;
	load1("unknown_zone.yaml", &l);
	assert_int_equal(l.rc, PAL_EINVAL);
	assert_int_equal(l.diags.n, 1);
	ASSERT_DIAG(&l.diags, 5, 17, "Europe/Berln");
	ASSERT_DIAG(&l.diags, 5, 17, "timezone:");
	done(&l);
}

static void test_jobfile_duplicate_ids_name_both_positions(void **state)
{
	const char *paths[2];
	pal_jobset set = {0};
	pal_diags d = {0};
	char want[4200];

	(void)state;
	paths[0] = fixture("duplicate_ids_a.yaml");
	paths[1] = fixture("duplicate_ids_b.yaml");
	assert_int_equal(pal_jobfiles_load(paths, 2, &set, &d), PAL_EINVAL);
	assert_int_equal(d.n, 1);
	snprintf(want, sizeof want, "duplicate job id \"shared.id\" (first defined at %s:2:9)",
		 paths[0]);
	ASSERT_DIAG(&d, 5, 9, want);
	assert_non_null(strstr(d.v[0].file, "duplicate_ids_b.yaml"));
	/* the valid jobs are kept, the duplicate is not */
	assert_int_equal(set.n, 2);
	assert_string_equal(set.jobs[0].id, "shared.id");
	assert_string_equal(set.jobs[1].id, "other.id");
	pal_jobset_free(&set);
	pal_diags_free(&d);

	/* the same within one buffer, and against a set loaded before */
	{
		struct loaded l;
		static const char text[] = "jobs:\n"
					   "  - id: a\n    schedule: {cron: \"* * * * *\"}\n"
					   "    target: {url: \"http://h/x\"}\n";

		load_str(text, &l);
		assert_int_equal(l.rc, 0);
		assert_int_equal(
		    pal_jobfile_load_buffer("u.yaml", text, strlen(text), &l.set, &l.diags),
		    PAL_EINVAL);
		ASSERT_DIAG(&l.diags, 2, 9, "duplicate job id \"a\" (first defined at t.yaml:2:5)");
		done(&l);
	}
}

static void test_jobfile_bad_durations(void **state)
{
	struct loaded l;

	(void)state;
	load1("bad_duration.yaml", &l);
	assert_int_equal(l.rc, PAL_EINVAL);
	assert_int_equal(l.diags.n, 2);
	ASSERT_DIAG(&l.diags, 4, 15, "deadline: invalid duration \"10 minutes\"");
	ASSERT_DIAG(&l.diags, 7, 16, "timeout: expected a duration, got an integer (30)");
	done(&l);

	load_job("    misfire: {catchup_window: 100d}\n", &l);
	ASSERT_DIAG(&l.diags, 5, 31, "catchup_window: 100d is out of range (expected 1s to 90d)");
	done(&l);
}

static void test_jobfile_bad_urls(void **state)
{
	struct loaded l;

	(void)state;
	load1("bad_url.yaml", &l);
	assert_int_equal(l.rc, PAL_EINVAL);
	assert_int_equal(l.diags.n, 4);
	ASSERT_DIAG(&l.diags, 4, 19, "url: \"ftp://127.0.0.1/x\" is not an http or https url");
	ASSERT_DIAG(&l.diags, 7, 27, "url: the url has no host");
	ASSERT_DIAG(&l.diags, 10, 37, "url: invalid port in url");
	ASSERT_DIAG(&l.diags, 13, 28, "credentials in the url are not allowed");
	assert_int_equal(l.set.n, 0);
	done(&l);

	load_str("jobs:\n  - id: u\n    schedule: {cron: \"* * * * *\"}\n"
		 "    target: {url: \"http://h/{job}\"}\n",
		 &l);
	ASSERT_DIAG(&l.diags, 4, 29, "url: placeholders such as \"{job}\" are not expanded here");
	done(&l);
	/* a fragment after the path is never sent either; a '%' starts an escape */
	load_str("jobs:\n  - id: u\n    schedule: {cron: \"* * * * *\"}\n"
		 "    target: {url: \"http://h/x#frag\"}\n"
		 "  - id: v\n    schedule: {cron: \"* * * * *\"}\n"
		 "    target: {url: \"http://h/x?q=%zz\"}\n"
		 "  - id: w\n    schedule: {cron: \"* * * * *\"}\n"
		 "    target: {url: \"http://h/a%20b?q=100%25\"}\n",
		 &l);
	assert_int_equal(l.diags.n, 2);
	ASSERT_DIAG(&l.diags, 4, 0, "url: a url fragment (#...) is never sent");
	ASSERT_DIAG(&l.diags, 7, 0, "starts an escape of two hex digits");
	done(&l);
	load_str("jobs:\n  - id: u\n    schedule: {cron: \"* * * * *\"}\n"
		 "    target: {url: \"http://[::1]:8089/x?token=${TOKEN}\"}\n",
		 &l);
	assert_int_equal(l.rc, 0);
	done(&l);
}

static void test_jobfile_yaml_level_rejections(void **state)
{
	struct loaded l;

	(void)state;
	load1("syntax_error_indent.yaml", &l);
	assert_int_equal(l.rc, PAL_EINVAL);
	ASSERT_DIAG(&l.diags, 5, 6, "yaml syntax error");
	done(&l);
	load1("syntax_error.yaml", &l);
	ASSERT_DIAG(&l.diags, 0, 0, "while scanning a quoted scalar started at line 4, column 13");
	done(&l);
	load1("alias_bomb.yaml", &l);
	assert_int_equal(l.rc, PAL_EINVAL);
	assert_int_equal(l.diags.n, 1);
	ASSERT_DIAG(&l.diags, 1, 4, "yaml anchors are not allowed");
	done(&l);
	load1("non_utf8.yaml", &l);
	ASSERT_DIAG(&l.diags, 3, 16, "invalid utf-8 byte 0xe9");
	done(&l);
	load1("empty.yaml", &l);
	assert_int_equal(l.rc, PAL_EINVAL);
	ASSERT_DIAG(&l.diags, 1, 1, "file is empty");
	done(&l);
}

static void test_jobfile_oversized_file(void **state)
{
	char path[] = "/tmp/palisade-test-jobs-XXXXXX";
	int fd = mkstemp(path);
	FILE *fp;
	const char *p = path;
	pal_jobset set = {0};
	pal_diags d = {0};
	size_t n = 0;

	(void)state;
	assert_true(fd >= 0);
	fp = fdopen(fd, "w");
	assert_non_null(fp);
	fputs("jobs:\n", fp);
	while (n < ((size_t)4 << 20)) {
		char line[160];
		int w = snprintf(line, sizeof line,
				 "  - {id: j%zu, schedule: {cron: \"* * * * *\"}, "
				 "target: {url: \"http://h/x\"}}\n",
				 n);

		fputs(line, fp);
		n += (size_t)w;
	}
	fclose(fp);
	assert_int_equal(pal_jobfiles_load(&p, 1, &set, &d), PAL_EINVAL);
	assert_int_equal(d.n, 1);
	ASSERT_DIAG(&d, 0, 0, "file is too large");
	assert_int_equal(set.n, 0);
	pal_diags_free(&d);
	unlink(path);
}

static void test_jobfile_every_error_is_reported(void **state)
{
	struct loaded l;

	(void)state;
	load1("multiple_errors.yaml", &l);
	assert_int_equal(l.rc, PAL_EINVAL);
	ASSERT_DIAG(&l.diags, 2, 9, "id: invalid character 'M'");
	ASSERT_DIAG(&l.diags, 5, 17, "Mars/Olympus");
	ASSERT_DIAG(&l.diags, 7, 12, "end (2026-01-01T00:00:00Z) is not after start");
	ASSERT_DIAG(&l.diags, 8, 17,
		    "exclude: range \"2026-12-31..2026-12-01\" ends before it starts");
	ASSERT_DIAG(&l.diags, 8, 43, "exclude: invalid date \"2026-02-30\"");
	ASSERT_DIAG(&l.diags, 9, 23,
		    "unknown misfire policy \"fire_twice\" (expected fire_all, fire_once, skip, "
		    "manual)");
	ASSERT_DIAG(&l.diags, 10, 14, "unknown overlap policy \"sometimes\"");
	ASSERT_DIAG(&l.diags, 11, 17,
		    "partitions: 2000 is out of range (expected an integer from 1 to 1024)");
	ASSERT_DIAG(&l.diags, 12, 44,
		    "unknown placeholder \"{partiton}\" (did you mean \"{partition}\"?)");
	ASSERT_DIAG(&l.diags, 14, 15, "unknown http method \"FETCH\"");
	ASSERT_DIAG(&l.diags, 16, 27, "malformed secret reference \"${bad\"");
	ASSERT_DIAG(&l.diags, 17, 22,
		    "unknown placeholder \"{scheduledat}\" (did you mean \"{scheduled_at}\"?)");
	ASSERT_DIAG(&l.diags, 18, 27, "max_attempts: 0 is out of range");
	ASSERT_DIAG(&l.diags, 18, 59, "retry.backoff.max (1s) is less than initial (10s)");
	ASSERT_DIAG(&l.diags, 22, 5, "unknown key \"retyr\" in job (did you mean \"retry\"?)");
	assert_int_equal(l.diags.n, 15);
	/* sorted by position */
	for (size_t i = 1; i < l.diags.n; i++)
		assert_true(l.diags.v[i - 1].line < l.diags.v[i].line ||
			    (l.diags.v[i - 1].line == l.diags.v[i].line &&
			     l.diags.v[i - 1].col <= l.diags.v[i].col));
	assert_int_equal(l.set.n, 0);
	done(&l);
}

static void test_jobfile_templates_and_secrets(void **state)
{
	struct loaded l;

	(void)state;
	load_job("    partitions: 3\n    idempotency_key: \"{job}/{scheduled_at}\"\n", &l);
	ASSERT_DIAG(&l.diags, 6, 22,
		    "idempotency_key: must contain {partition} when partitions is 3");
	done(&l);
	load_job("    idempotency_key: \"{job}/{partition}\"\n", &l);
	ASSERT_DIAG(&l.diags, 5, 22, "must contain {scheduled_at}");
	done(&l);
	load_job("    idempotency_key: \"{job}/{scheduled_at}/${TOKEN}\"\n", &l);
	ASSERT_DIAG(&l.diags, 5, 44, "secret references such as \"${TOKEN}\" are not allowed here");
	done(&l);
	load_job("    idempotency_key: \"{job}/{scheduled_at}/{idempotency_key}\"\n", &l);
	ASSERT_DIAG(&l.diags, 5, 44, "unknown placeholder \"{idempotency_key}\"");
	done(&l);
	load_job("    idempotency_key: "
		 "\"{job}/{scheduled_at}/{request_id}/{trigger}/{scheduled_date}\"\n",
		 &l);
	assert_int_equal(l.rc, 0);
	done(&l);
	/* A key must name its job: {job} first, then a character no id holds. */
	static const char *const ambiguous[] = {
	    "billing.{job}/{scheduled_at}", "k-{job}-{scheduled_at}", "{job}{scheduled_at}",
	    "{job}.{scheduled_at}", "{job}-x/{scheduled_at}", "{request_id}:{job}@{scheduled_at}"};
	for (size_t i = 0; i < sizeof ambiguous / sizeof *ambiguous; i++) {
		char line[128];
		snprintf(line, sizeof line, "    idempotency_key: \"%s\"\n", ambiguous[i]);
		load_job(line, &l);
		assert_int_equal(l.rc, PAL_EINVAL);
		ASSERT_DIAG(&l.diags, 5, 22, "idempotency_key: must begin with {job} and a character");
		done(&l);
	}
	static const char *const named[] = {"{job}:{scheduled_at}", "{job}@{request_id}:{scheduled_at}",
					    "{job}#{scheduled_at}", "{job}/x-{scheduled_at}"};
	for (size_t i = 0; i < sizeof named / sizeof *named; i++) {
		char line[128];
		snprintf(line, sizeof line, "    idempotency_key: \"%s\"\n", named[i]);
		load_job(line, &l);
		assert_int_equal(l.rc, 0);
		done(&l);
	}

	load_str("jobs:\n  - id: s\n    schedule: {cron: \"* * * * *\"}\n"
		 "    target:\n"
		 "      url: http://h/x\n"
		 "      headers: {X-A: \"${A_1}\", x-a: b, Palisade-Fencing-Token: \"1\", \"bad "
		 "name\": x}\n"
		 "      body: '{\"k\": \"${lower}\", \"j\": {job}}'\n",
		 &l);
	ASSERT_DIAG(&l.diags, 6, 32, "headers: \"x-a\" repeats \"X-A\"");
	ASSERT_DIAG(&l.diags, 6, 40, "\"Palisade-Fencing-Token\" is set by palisade itself");
	ASSERT_DIAG(&l.diags, 6, 69, "invalid header name \"bad name\"");
	ASSERT_DIAG(&l.diags, 7, 21, "body: malformed secret reference \"${lower}\"");
	assert_int_equal(l.diags.n, 4);
	done(&l);

	load_str("jobs:\n  - id: g\n    schedule: {cron: \"* * * * *\"}\n"
		 "    target: {method: GET, url: \"http://h/x\", body: x}\n",
		 &l);
	ASSERT_DIAG(&l.diags, 4, 52, "body: a GET request carries no body");
	done(&l);
}

static void test_jobfile_ranges_and_required_keys(void **state)
{
	struct loaded l;

	(void)state;
	load_str("jobs:\n  - tenant: x\n", &l);
	ASSERT_DIAG(&l.diags, 2, 5, "job is missing the required key \"id\"");
	ASSERT_DIAG(&l.diags, 2, 5, "job is missing the required key \"schedule\"");
	ASSERT_DIAG(&l.diags, 2, 5, "job is missing the required key \"target\"");
	done(&l);
	load_str("jobs:\n  - id: x\n    schedule: {timezone: UTC}\n    target: {method: GET}\n",
		 &l);
	ASSERT_DIAG(&l.diags, 3, 15, "schedule is missing the required key \"cron\"");
	ASSERT_DIAG(&l.diags, 4, 13, "target is missing the required key \"url\"");
	done(&l);
	load_job("    partitions: 0\n    priority: -101\n    max_in_flight: -1\n", &l);
	ASSERT_DIAG(&l.diags, 5, 17,
		    "partitions: 0 is out of range (expected an integer from 1 to 1024)");
	ASSERT_DIAG(&l.diags, 6, 15, "priority: -101 is out of range");
	ASSERT_DIAG(&l.diags, 7, 20, "max_in_flight: -1 is out of range");
	assert_int_equal(l.diags.n, 3);
	done(&l);
	load_job("    partitions: 1024\n", &l);
	assert_int_equal(l.rc, 0);
	done(&l);
	load_str("jobs:\n  - id: .x\n    schedule: {cron: \"* * * * *\"}\n"
		 "    target: {url: \"http://h/x\"}\n",
		 &l);
	ASSERT_DIAG(&l.diags, 2, 9, "id: invalid character '.'");
	done(&l);
	load_str("jobs:\n  - id: \"\"\n    tenant: \"\"\n    schedule: {cron: \"* * * * *\"}\n"
		 "    target: {url: \"http://h/x\"}\n",
		 &l);
	ASSERT_DIAG(&l.diags, 2, 9, "id: must not be empty");
	ASSERT_DIAG(&l.diags, 3, 13, "tenant: must not be empty");
	assert_int_equal(l.set.n, 0);
	done(&l);
	load_job("    schedule2: {start: 2026-01-01}\n", &l);
	ASSERT_DIAG(&l.diags, 5, 5,
		    "unknown key \"schedule2\" in job (did you mean \"schedule\"?)");
	done(&l);
	load_str("jobs:\n  - id: st\n    schedule: {cron: \"* * * * *\", start: 2026-01-01}\n"
		 "    target: {url: \"http://h/x\"}\n",
		 &l);
	ASSERT_DIAG(&l.diags, 3, 42, "start: invalid timestamp \"2026-01-01\"");
	done(&l);
}

static void test_jobfile_garbage_never_crashes(void **state)
{
	static const char *const inputs[] = {
	    "jobs:\n  - id: [1, 2]\n    schedule: [cron]\n    target: {headers: [a]}\n",
	    "jobs:\n  -\n  - ~\n  - {}\n",
	    "jobs: ~\n",
	    "jobs:\n  - id: x\n    schedule: {cron: \"\", timezone: \"\", exclude: [[1]]}\n"
	    "    target: {url: \"\", headers: {\"\": \"\"}}\n",
	    "jobs:\n  - id: x\n    schedule: {cron: \"@daily\", dst: [1], exclude: "
	    "\"2026-01-01\"}\n"
	    "    target: {url: \"http://[zz]/\", status_url: \"http://h/{idempotency_key\"}\n"
	    "    retry: {backoff: 5}\n",
	    "\"\\u0000\"",
	    "jobs:\n  - id: x\n    schedule: {cron: \"* * * * *\"}\n"
	    "    target: {url: \"http://h:0/x\", body: \"${\"}\n",
	    "jobs:\n  - id: x\n    schedule: {cron: \"* * * * *\"}\n"
	    "    target: {url: \"http://h:/x\", body: \"${A\"}\n",
	    /* regression (fuzz): a collection where the key template belongs */
	    "jobs:\n  - id: x\n    schedule: {cron: \"* * * * *\"}\n"
	    "    target: {url: \"http://h/x\"}\n    idempotency_key: {a: 1}\n",
	    "jobs:\n  - id: x\n    schedule: {cron: \"* * * * *\"}\n"
	    "    target: {url: \"http://h/x\"}\n    idempotency_key: [a]\n",
	};

	(void)state;
	for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; i++) {
		struct loaded l;

		load_str(inputs[i], &l);
		assert_int_not_equal(l.rc, 0);
		assert_true(l.diags.n > 0);
		done(&l);
	}
}

/* A schedule whose instants are all past (a Quartz cron with past years, a
 * past `at`, a past end) is valid and marked spent: one such job must never
 * make the whole set fail (it blocked every later apply when it did).  A
 * schedule that never fires at all (Feb 30, or nothing inside its own
 * window) is still refused (test_jobfile_cron_that_never_fires). */
static void test_jobfile_past_schedules_are_spent_not_refused(void **state)
{
	struct loaded l;

	(void)state;
	load_str("jobs:\n"
		 "  - id: past.years\n"
		 "    schedule: {cron: \"0 0 0 31 * ? 1999-2001\"}\n"
		 "    target: {url: \"http://127.0.0.1:8089/x\"}\n"
		 "  - id: past.at\n"
		 "    schedule: {at: 2021-06-01T12:00:00Z}\n"
		 "    target: {url: \"http://127.0.0.1:8089/x\"}\n"
		 "  - id: past.window\n"
		 "    schedule: {cron: \"0 0 0 * * ?\", start: 2020-01-01T00:00:00Z,\n"
		 "               end: 2021-01-01T00:00:00Z}\n"
		 "    target: {url: \"http://127.0.0.1:8089/x\"}\n"
		 "  - id: future.at\n"
		 "    schedule: {at: 2099-06-01T12:00:00Z}\n"
		 "    target: {url: \"http://127.0.0.1:8089/x\"}\n",
		 &l);
	assert_int_equal(l.rc, 0);
	assert_int_equal(l.diags.n, 0);
	assert_int_equal(l.set.n, 4);
	assert_true(l.set.jobs[0].spent);
	assert_true(l.set.jobs[1].spent);
	assert_true(l.set.jobs[2].spent);
	assert_false(l.set.jobs[3].spent);
	done(&l);
}

/* Validation judges the instants the planner plans: the nominal ones moved
 * by spread.  Job r.at2's spread offset in 1h is 3514 s, so 12:00 fires at
 * 12:58:34: an end of 12:30 leaves it no instant (refused at its position,
 * though the nominal 12:00 lies inside), a start of 12:30 keeps it. */
static void test_jobfile_spread_moves_the_window_checks(void **state)
{
	struct loaded l;

	(void)state;
	load_str("jobs:\n"
		 "  - id: r.at2\n"
		 "    schedule: {at: \"2027-03-01T12:00:00Z\", end: \"2027-03-01T12:30:00Z\", "
		 "spread: 1h}\n"
		 "    target: {url: http://127.0.0.1:8089/x}\n"
		 "  - id: r.x3\n"
		 "    schedule: {cron: \"0 0 12 * * ?\", timezone: UTC, start: "
		 "\"2027-03-01T00:00:00Z\", end: \"2027-03-01T12:30:00Z\", spread: 1h}\n"
		 "    target: {url: http://127.0.0.1:8089/x}\n"
		 "  - id: r.ev\n"
		 "    schedule: {every: 1h, start: \"2027-03-01T12:00:00Z\", end: "
		 "\"2027-03-01T12:30:00Z\", spread: 1h}\n"
		 "    target: {url: http://127.0.0.1:8089/x}\n",
		 &l);
	assert_int_equal(l.rc, PAL_EINVAL);
	ASSERT_DIAG(&l.diags, 3, 20, "at is outside [start, end)");
	ASSERT_DIAG(&l.diags, 3, 0, "spread offset is 3514s");
	ASSERT_DIAG(&l.diags, 6, 22, "never fires between start and end");
	ASSERT_DIAG(&l.diags, 9, 23, "every: no instant lies between start and end");
	done(&l);

	/* the same instants with room for the offset; and a nominal instant
	 * before start whose moved one is inside (the planner plans it) */
	load_str("jobs:\n"
		 "  - id: r.at2\n"
		 "    schedule: {at: \"2027-03-01T12:00:00Z\", end: \"2027-03-01T13:00:00Z\", "
		 "spread: 1h}\n"
		 "    target: {url: http://127.0.0.1:8089/x}\n"
		 "  - id: r.cron\n"
		 "    schedule: {cron: \"0 0 12 * * ?\", spread: 1h}\n"
		 "    target: {url: http://127.0.0.1:8089/x}\n"
		 "  - id: r.late\n"
		 "    schedule: {at: \"2027-03-01T12:00:00Z\", start: \"2027-03-01T12:30:00Z\", "
		 "spread: 1h}\n"
		 "    target: {url: http://127.0.0.1:8089/x}\n",
		 &l);
	if (l.rc)
		pal_diags_print(&l.diags, stderr);
	assert_int_equal(l.rc, 0);
	assert_int_equal(l.set.n, 3);
	done(&l);
}

/* An `at` just past whose moved instant is ahead is planned, so it is not
 * spent (validate's note "will not fire again" would be false); one whose
 * moved instant is past too is spent. */
static void test_jobfile_spread_at_not_spent_while_moved_ahead(void **state)
{
	char buf[1024], recent[32], old[32];
	int64_t now = (int64_t)time(NULL);
	struct loaded l;

	(void)state;
	pal_fmt_rfc3339(now - 600, recent, sizeof recent); /* r.at2: fires at now + 2914 */
	pal_fmt_rfc3339(now - 4200, old, sizeof old);	   /* r.old: fired at now - 3339 */
	snprintf(buf, sizeof buf,
		 "jobs:\n"
		 "  - id: r.at2\n"
		 "    schedule: {at: \"%s\", spread: 1h}\n"
		 "    target: {url: http://127.0.0.1:8089/x}\n"
		 "  - id: r.old\n"
		 "    schedule: {at: \"%s\", spread: 1h}\n"
		 "    target: {url: http://127.0.0.1:8089/x}\n",
		 recent, old);
	load_str(buf, &l);
	assert_int_equal(l.rc, 0);
	assert_int_equal(l.set.n, 2);
	assert_false(l.set.jobs[0].spent);
	assert_true(l.set.jobs[1].spent);
	done(&l);
}

/* The schedule forms: one of cron, every, at; whole seconds; H checked. */
static void test_jobfile_schedule_forms(void **state)
{
	struct loaded l;

	(void)state;
	load_str(
	    "jobs:\n"
	    "  - id: every.x\n"
	    "    schedule: {every: 90s, spread: 10m, jitter: 30s, start: 2026-01-01T00:00:00Z}\n"
	    "    target: {url: \"http://127.0.0.1:8089/x\"}\n"
	    "  - id: h.x\n"
	    "    schedule: {cron: \"H H(0-5) * * *\"}\n"
	    "    target: {url: \"http://127.0.0.1:8089/x\"}\n",
	    &l);
	assert_int_equal(l.rc, 0);
	assert_int_equal(l.set.jobs[0].every_s, 90);
	assert_int_equal(l.set.jobs[0].spread_s, 600);
	assert_int_equal(l.set.jobs[0].jitter_s, 30);
	assert_null(l.set.jobs[0].cron);
	assert_string_equal(l.set.jobs[1].cron, "H H(0-5) * * *");
	done(&l);
	load_str("jobs:\n"
		 "  - id: both\n"
		 "    schedule: {cron: \"0 * * * *\", every: 1m}\n"
		 "    target: {url: \"http://127.0.0.1:8089/x\"}\n"
		 "  - id: fraction\n"
		 "    schedule: {every: 1500ms}\n"
		 "    target: {url: \"http://127.0.0.1:8089/x\"}\n"
		 "  - id: bad.h\n"
		 "    schedule: {cron: \"H(0-99) * * * *\"}\n"
		 "    target: {url: \"http://127.0.0.1:8089/x\"}\n"
		 "  - id: at.outside\n"
		 "    schedule: {at: 2030-01-01T00:00:00Z, end: 2029-01-01T00:00:00Z}\n"
		 "    target: {url: \"http://127.0.0.1:8089/x\"}\n",
		 &l);
	assert_int_equal(l.rc, PAL_EINVAL);
	ASSERT_DIAG(&l.diags, 3, 0, "cron, every and at exclude each other");
	ASSERT_DIAG(&l.diags, 6, 0, "whole seconds");
	ASSERT_DIAG(&l.diags, 9, 0, "invalid H in field 1");
	ASSERT_DIAG(&l.diags, 12, 0, "at is outside [start, end)");
	done(&l);
	/* a fraction of a second in an instant would be cut off: refused */
	load_str("jobs:\n"
		 "  - id: frac.range\n"
		 "    schedule: {cron: \"0 0 * * *\", start: 2027-01-01T00:00:00.5Z,\n"
		 "               end: \"2027-01-03T00:00:00.000Z\"}\n"
		 "    target: {url: \"http://127.0.0.1:8089/x\"}\n"
		 "  - id: frac.at\n"
		 "    schedule: {at: \"2030-01-01T00:00:00.9+02:00\"}\n"
		 "    target: {url: \"http://127.0.0.1:8089/x\"}\n",
		 &l);
	assert_int_equal(l.rc, PAL_EINVAL);
	assert_int_equal(l.diags.n, 2); /* the zeros of end's fraction are no fraction */
	ASSERT_DIAG(&l.diags, 3, 0, "start: \"2027-01-01T00:00:00.5Z\" has a fraction of a second");
	ASSERT_DIAG(&l.diags, 7, 0, "at: \"2030-01-01T00:00:00.9+02:00\" has a fraction");
	done(&l);
}

/* HTTP drops leading and trailing spaces of a header value: a key
 * template with them would make the sink store another key. */
static void test_jobfile_idempotency_key_spaces(void **state)
{
	static const char *const keys[] = {"\" {job}/{scheduled_at}/{partition}\"",
					   "\"{job}/{scheduled_at}/{partition} \""};

	(void)state;
	for (size_t i = 0; i < 2; i++) {
		char buf[512];
		struct loaded l;

		snprintf(
		    buf, sizeof buf,
		    "jobs:\n  - id: spaced.key\n    schedule: {cron: \"* * * * *\"}\n"
		    "    target: {url: \"http://127.0.0.1:8089/x\"}\n    idempotency_key: %s\n",
		    keys[i]);
		load_str(buf, &l);
		assert_int_equal(l.rc, PAL_EINVAL);
		ASSERT_DIAG(&l.diags, 5, 0, "begins or ends with a space");
		done(&l);
	}
}

/* target.tracestate: checked as W3C Trace Context writes it, at its position. */
static void test_jobfile_tracestate(void **state)
{
	static const struct {
		const char *value;
		int col;
		const char *diag; /* NULL: accepted */
	} cases[] = {
	    {"vendor=a1, t@sys=x", 0, NULL},
	    {"Vendor=a1", 58, "tracestate: \"Vendor=a1\" is not key=value"},
	    {"a=1,a=2", 58, "appears twice"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char buf[512];
		struct loaded l;

		snprintf(buf, sizeof buf,
			 "jobs:\n  - id: traced\n    schedule: {cron: \"* * * * *\"}\n"
			 "    target: {url: \"http://127.0.0.1:8089/x\", tracestate: \"%s\"}\n",
			 cases[i].value);
		load_str(buf, &l);
		if (cases[i].diag) {
			assert_int_equal(l.rc, PAL_EINVAL);
			ASSERT_DIAG(&l.diags, 4, cases[i].col, cases[i].diag);
		} else {
			assert_int_equal(l.rc, 0);
			assert_string_equal(l.set.jobs[0].tracestate, cases[i].value);
		}
		done(&l);
	}
}

/* notify_rules: each entry has one scope, a job's entry's keys and checks
 * (or remove with its url only); one entry per scope and url.  The merge
 * puts the job's own entries first, then its group's, then its tenant's,
 * each event once per url (the more specific level wins); notify: [] gets
 * nothing; merging again replaces the inherited entries only. */
static void test_jobfile_notify_rules(void **state)
{
	struct loaded l;

	(void)state;
	load_str("notify_rules:\n"
		 "  - {group: g, on: [failed, manual], url: \"http://h/a\", secret: \"${G}\"}\n"
		 "  - {tenant: t, on: [failed, recovered], url: \"http://h/a\", secret: \"${T}\"}\n"
		 "  - {tenant: t, on: [failed], url: \"http://h/b\", secret: \"${T}\"}\n"
		 "  - {tenant: t, url: \"http://h/c\", remove: true}\n"
		 "jobs:\n"
		 "  - id: own\n    tenant: t\n    group: g\n    schedule: {cron: \"* * * * *\"}\n"
		 "    target: {url: \"http://127.0.0.1:8089/x\"}\n"
		 "    notify: [{on: [manual], url: \"http://h/a\", secret: \"${J}\"}]\n"
		 "  - id: none\n    tenant: t\n    group: g\n    schedule: {cron: \"* * * * *\"}\n"
		 "    target: {url: \"http://127.0.0.1:8089/x\"}\n    notify: []\n",
		 &l);
	assert_int_equal(l.rc, 0);
	assert_int_equal(l.set.n_notify_rules, 4);
	assert_true(l.set.notify_rules[3].remove);
	assert_null(l.set.notify_rules[3].n.secret);
	assert_true(l.set.jobs[1].notify_none);
	assert_int_equal(l.set.jobs[1].n_notify, 0);
	pal_job_spec *s = &l.set.jobs[0];
	for (int round = 0; round < 2; round++) {
		assert_int_equal(pal_job_spec_merge_notify(s, l.set.notify_rules, 4), 0);
		assert_true(s->notify_merged);
		assert_int_equal(s->n_notify_own, 1);
		assert_int_equal(s->n_notify, 4);
		/* own: manual at a (${J}); group: failed at a (manual left
		 * out); tenant: recovered at a (failed left out), failed at b */
		assert_int_equal(s->notify[0].events, 1u << PAL_NOTIFY_MANUAL);
		assert_string_equal(s->notify[0].secret, "${J}");
		assert_int_equal(s->notify[1].events, 1u << PAL_NOTIFY_FAILED);
		assert_string_equal(s->notify[1].secret, "${G}");
		assert_int_equal(s->notify[2].events, 1u << PAL_NOTIFY_RECOVERED);
		assert_string_equal(s->notify[2].url, "http://h/a");
		assert_string_equal(s->notify[2].secret, "${T}");
		assert_int_equal(s->notify[3].events, 1u << PAL_NOTIFY_FAILED);
		assert_string_equal(s->notify[3].url, "http://h/b");
	}
	/* fewer rules: the inherited entries go, the own one stays */
	assert_int_equal(pal_job_spec_merge_notify(s, NULL, 0), 0);
	assert_int_equal(s->n_notify, 1);
	assert_string_equal(s->notify[0].secret, "${J}");
	assert_int_equal(pal_job_spec_merge_notify(&l.set.jobs[1], l.set.notify_rules, 4), 0);
	assert_int_equal(l.set.jobs[1].n_notify, 0);
	done(&l);

	static const struct {
		const char *rules;
		int line;
		const char *diag;
	} bad[] = {
	    {"  - {group: g, tenant: t, on: [failed], url: \"http://h/a\", secret: \"${G}\"}\n", 2,
	     "exactly one of \"group\" and \"tenant\""},
	    {"  - {on: [failed], url: \"http://h/a\", secret: \"${G}\"}\n", 2,
	     "exactly one of \"group\" and \"tenant\""},
	    {"  - {group: g, on: [failed], url: \"http://h/a\", secret: whsec_x}\n", 2,
	     "not the secret itself"},
	    {"  - {group: g, on: [failed], url: \"http://h/a\", secret: \"${G}\", remove: true}\n",
	     2, "with remove: true"},
	    {"  - {group: g, url: \"http://h/a\"}\n", 2, "missing key \"on\""},
	    {"  - {group: g, on: [failed], url: \"http://h/a\", secret: \"${G}\", grup: 1}\n", 2,
	     "unknown key \"grup\" in notify rule"},
	    {"  - {group: g, on: [failed], url: \"http://h/a\", secret: \"${G}\"}\n"
	     "  - {group: g, on: [manual], url: \"http://h/a\", secret: \"${G}\"}\n",
	     3, "duplicate notify rule for group g"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char buf[1024];
		snprintf(buf, sizeof buf, "notify_rules:\n%s", bad[i].rules);
		load_str(buf, &l);
		assert_int_equal(l.rc, PAL_EINVAL);
		ASSERT_DIAG(&l.diags, bad[i].line, 0, bad[i].diag);
		done(&l);
	}
	load_str("jobs:\n  - id: j\n    schedule: {cron: \"* * * * *\"}\n"
		 "    target: {url: \"http://127.0.0.1:8089/x\"}\n"
		 "notify_rules: []\n",
		 &l);
	assert_int_equal(l.rc, PAL_EINVAL);
	ASSERT_DIAG(&l.diags, 5, 0, "\"notify_rules\" after \"jobs\"");
	done(&l);
}

/* notify: entries load with their events; a literal secret, an unknown
 * event, a placeholder in the url and a missing key are refused at their
 * position; a job without notify keeps its digest. */
static void test_jobfile_notify(void **state)
{
	static const struct {
		const char *entry;
		int line, col;
		const char *diag; /* NULL: accepted */
	} cases[] = {
	    {"{on: [failed, recovered], url: \"http://127.0.0.1:9/h\", secret: \"${HOOK}\"}", 0, 0,
	     NULL},
	    {"{on: manual, url: \"https://h.example/x\", secret: \"${H_2}\"}", 0, 0, NULL},
	    {"{on: [failed], url: \"http://h/x\", secret: whsec_abc}", 5, 0,
	     "not the secret itself"},
	    {"{on: [failled], url: \"http://h/x\", secret: \"${H}\"}", 5, 0, "notify event"},
	    {"{on: [failed, failed], url: \"http://h/x\", secret: \"${H}\"}", 5, 0, "listed twice"},
	    {"{on: [failed], url: \"http://h/{job}\", secret: \"${H}\"}", 5, 0,
	     "not expanded here"},
	    {"{on: [failed], url: \"http://h/x\"}", 5, 0, "missing key \"secret\""},
	    {"{on: [failed], url: \"http://h/x\", secret: \"${H}\", sekret: 1}", 5, 0,
	     "unknown key \"sekret\" in notify"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char buf[512];
		struct loaded l;

		snprintf(
		    buf, sizeof buf,
		    "jobs:\n  - id: told\n    schedule: {cron: \"* * * * *\"}\n"
		    "    target: {url: \"http://127.0.0.1:8089/x\"}\n    notify:\n      - %s\n",
		    cases[i].entry);
		load_str(buf, &l);
		if (cases[i].diag) {
			assert_int_equal(l.rc, PAL_EINVAL);
			ASSERT_DIAG(&l.diags, 6, 0, cases[i].diag);
		} else {
			assert_int_equal(l.rc, 0);
			assert_int_equal(l.set.jobs[0].n_notify, 1);
			assert_true(l.set.jobs[0].notify[0].events != 0);
			assert_true(l.set.jobs[0].notify[0].secret[0] == '$');
		}
		done(&l);
	}
	{ /* two entries of one url may not share an event (one event, two ids) */
		struct loaded l;
		load_str(
		    "jobs:\n  - id: told\n    schedule: {cron: \"* * * * *\"}\n"
		    "    target: {url: \"http://127.0.0.1:8089/x\"}\n    notify:\n"
		    "      - {on: [failed], url: \"http://h/x\", secret: \"${H}\"}\n"
		    "      - {on: [manual], url: \"http://h/y\", secret: \"${H}\"}\n"
		    "      - {on: [recovered, failed], url: \"http://h/x\", secret: \"${G}\"}\n",
		    &l);
		assert_int_equal(l.rc, PAL_EINVAL);
		ASSERT_DIAG(&l.diags, 8, 0,
			    "notify: url http://h/x already gets \"failed\" from entry 0");
		done(&l);
		load_str("jobs:\n  - id: told\n    schedule: {cron: \"* * * * *\"}\n"
			 "    target: {url: \"http://127.0.0.1:8089/x\"}\n    notify:\n"
			 "      - {on: [failed], url: \"http://h/x\", secret: \"${H}\"}\n"
			 "      - {on: [recovered], url: \"http://h/x\", secret: \"${G}\"}\n",
			 &l);
		assert_int_equal(l.rc, 0);
		assert_int_equal(l.set.jobs[0].n_notify, 2);
		done(&l);
	}
	{
		struct loaded a, b;
		char da[65], db[65];
		char *ca, *cb;

		load_str("jobs:\n  - id: told\n    schedule: {cron: \"* * * * *\"}\n"
			 "    target: {url: \"http://127.0.0.1:8089/x\"}\n",
			 &a);
		load_str("jobs:\n  - id: told\n    schedule: {cron: \"* * * * *\"}\n"
			 "    target: {url: \"http://127.0.0.1:8089/x\"}\n"
			 "    notify: [{on: [recovered, failed], url: \"http://h:1/x\", secret: "
			 "\"${H}\"}]\n",
			 &b);
		assert_int_equal(a.rc, 0);
		assert_int_equal(b.rc, 0);
		assert_int_equal(pal_job_spec_digest(&a.set.jobs[0], &ca, da), 0);
		assert_int_equal(pal_job_spec_digest(&b.set.jobs[0], &cb, db), 0);
		assert_null(strstr(ca, "notify"));
		assert_non_null(strstr(cb, "\"notify\":[{\"on\":[\"failed\",\"recovered\"],"
					   "\"secret\":\"${H}\",\"url\":\"http://h:1/x\"}]"));
		assert_string_not_equal(da, db);
		free(ca);
		free(cb);
		done(&a);
		done(&b);
	}
}

/* labels: a mapping of Kubernetes label keys to values, kept sorted by key;
 * a bad key, a bad value, too many labels and a non-mapping are refused at
 * their line and column. */
static void test_jobfile_labels(void **state)
{
	static const struct {
		const char *labels;
		int col;	  /* of the diagnostic on line 5 */
		const char *diag; /* NULL: accepted */
	} cases[] = {
	    {"{user: root, app.kubernetes.io/name: web, tier: \"\"}", 0, NULL},
	    {"{a-b_c.D9: V-1_x.y}", 0, NULL},
	    {"{-bad: x}", 14, "labels: key \"-bad\" must begin and end with a letter or digit"},
	    {"{Example.com/x: y}", 14, "prefix that is not a DNS subdomain"},
	    {"{a/b/c: y}", 14, "may hold one '/' at most"},
	    {"{x/: y}", 14, "has an empty name"},
	    {"{ok: \"has space\"}", 18, "labels: value \"has space\" of \"ok\" may hold only"},
	    {"{ok: \"0123456789012345678901234567890123456789012345678901234567890123\"}", 18,
	     "labels: value: too long (64 bytes, at most 63)"},
	    {"[user, root]", 13, "labels"},
	    {"{}", 13, "labels: expected 1 to 64 labels, got 0"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char buf[512];
		struct loaded l;

		snprintf(buf, sizeof buf,
			 "jobs:\n  - id: tagged\n    schedule: {cron: \"* * * * *\"}\n"
			 "    target: {url: \"http://127.0.0.1:8089/x\"}\n    labels: %s\n",
			 cases[i].labels);
		load_str(buf, &l);
		if (cases[i].diag) {
			assert_int_equal(l.rc, PAL_EINVAL);
			ASSERT_DIAG(&l.diags, 5, cases[i].col, cases[i].diag);
		} else {
			assert_int_equal(l.rc, 0);
			assert_true(l.set.jobs[0].n_labels >= 1);
		}
		done(&l);
	}
	{ /* sorted by key, whatever the file's order */
		struct loaded l;
		load_str("jobs:\n  - id: tagged\n    schedule: {cron: \"* * * * *\"}\n"
			 "    target: {url: \"http://127.0.0.1:8089/x\"}\n"
			 "    labels: {user: root, app: web, tier: \"\"}\n",
			 &l);
		assert_int_equal(l.rc, 0);
		assert_int_equal(l.set.jobs[0].n_labels, 3);
		assert_string_equal(l.set.jobs[0].labels[0].key, "app");
		assert_string_equal(l.set.jobs[0].labels[1].key, "tier");
		assert_string_equal(l.set.jobs[0].labels[1].value, "");
		assert_string_equal(l.set.jobs[0].labels[2].value, "root");
		done(&l);
	}
	{ /* at most 64 */
		char buf[2048];
		size_t n = (size_t)snprintf(buf, sizeof buf,
					    "jobs:\n  - id: tagged\n    schedule: {cron: \"* * * * *\"}\n"
					    "    target: {url: \"http://127.0.0.1:8089/x\"}\n"
					    "    labels:\n");
		struct loaded l;
		for (int k = 0; k < 65; k++)
			n += (size_t)snprintf(buf + n, sizeof buf - n, "      k%d: v\n", k);
		load_str(buf, &l);
		assert_int_equal(l.rc, PAL_EINVAL);
		ASSERT_DIAG(&l.diags, 6, 7, "labels: expected 1 to 64 labels, got 65");
		done(&l);
	}
}

/* target.keep_body is a size up to 1 MiB; keep_headers are header names,
 * kept in lower case, sorted, each once.  Neither changes the digest of a
 * job that does not set it. */
static void test_jobfile_keep_body_and_headers(void **state)
{
	static const struct {
		const char *value;
		long long bytes; /* -1: refused */
	} cases[] = {
		{ "0", 0 },	      { "4096", 4096 },	     { "4KiB", 4096 }, { "1MiB", 1048576 },
		{ "100B", 100 },      { "2MiB", -1 },	     { "4kb", -1 },    { "-1", -1 },
		{ "1048577", -1 },    { "99999999999999999999", -1 },
	};
	struct loaded l, plain;
	char buf[512];

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		snprintf(buf, sizeof buf,
			 "jobs:\n  - id: kept\n    schedule: {cron: \"* * * * *\"}\n"
			 "    target: {url: \"http://127.0.0.1:8089/x\", keep_body: \"%s\"}\n",
			 cases[i].value);
		load_str(buf, &l);
		if (cases[i].bytes < 0) {
			assert_int_equal(l.rc, PAL_EINVAL);
			ASSERT_DIAG(&l.diags, 4, 0, "keep_body: ");
		} else {
			assert_int_equal(l.rc, 0);
			assert_true(l.set.jobs[0].has_keep_body);
			assert_int_equal(l.set.jobs[0].keep_body, cases[i].bytes);
		}
		done(&l);
	}
	load_str("jobs:\n  - id: kept\n    schedule: {cron: \"* * * * *\"}\n"
		 "    target: {url: \"http://127.0.0.1:8089/x\","
		 " keep_headers: [X-Request-Id, retry-after, x-request-ID]}\n",
		 &l);
	assert_int_equal(l.rc, 0);
	assert_int_equal(l.set.jobs[0].n_keep_headers, 2);
	assert_string_equal(l.set.jobs[0].keep_headers[0], "retry-after");
	assert_string_equal(l.set.jobs[0].keep_headers[1], "x-request-id");
	load_str("jobs:\n  - id: kept\n    schedule: {cron: \"* * * * *\"}\n"
		 "    target: {url: \"http://127.0.0.1:8089/x\"}\n",
		 &plain);
	assert_int_equal(plain.rc, 0);
	char *ja, *jb, ha[65], hb[65];
	assert_int_equal(pal_job_spec_digest(&l.set.jobs[0], &ja, ha), 0);
	assert_int_equal(pal_job_spec_digest(&plain.set.jobs[0], &jb, hb), 0);
	assert_string_not_equal(ha, hb);
	assert_non_null(strstr(ja, "\"keep_headers\":[\"retry-after\",\"x-request-id\"]"));
	assert_null(strstr(jb, "keep_")); /* absent: the digest a job had */
	free(ja);
	free(jb);
	done(&l);
	done(&plain);
	load_str("jobs:\n  - id: kept\n    schedule: {cron: \"* * * * *\"}\n"
		 "    target: {url: \"http://127.0.0.1:8089/x\", keep_headers: [\"bad name\"]}\n",
		 &l);
	assert_int_equal(l.rc, PAL_EINVAL);
	ASSERT_DIAG(&l.diags, 4, 0, "keep_headers: invalid header name \"bad name\"");
	done(&l);
}

/* A URL in a message never shows the password of its userinfo. */
static void test_jobfile_url_messages_mask_passwords(void **state)
{
	struct loaded l;

	(void)state;
	load_str("jobs:\n  - id: secret.url\n    schedule: {cron: \"* * * * *\"}\n"
		 "    target: {url: \"ftp://alice:hunter2@files.example/x\","
		 " status_url: \"gopher://bob:s3cret@h/{idempotency_key}\"}\n",
		 &l);
	assert_int_equal(l.rc, PAL_EINVAL);
	ASSERT_DIAG(&l.diags, 4, 0, "ftp://alice:***@files.example/x");
	ASSERT_DIAG(&l.diags, 4, 0, "gopher://bob:***@h/");
	for (size_t i = 0; i < l.diags.n; i++) {
		assert_null(strstr(l.diags.v[i].msg, "hunter2"));
		assert_null(strstr(l.diags.v[i].msg, "s3cret"));
	}
	done(&l);
}

/* owner, description and suspend load; they stay out of the canonical
 * form, so changing them does not change the digest (no new version). */
static void test_jobfile_owner_description_suspend(void **state)
{
	struct loaded a, b;
	char *ca, *cb, ha[65], hb[65];

	(void)state;
	load_str("jobs:\n  - id: meta.job\n    owner: team-billing\n"
		 "    description: \"Sends the invoices.\\nPage billing on failure.\"\n"
		 "    suspend: true\n    schedule: {cron: \"* * * * *\"}\n"
		 "    target: {url: \"http://127.0.0.1:8089/x\"}\n",
		 &a);
	assert_int_equal(a.rc, 0);
	assert_string_equal(a.set.jobs[0].owner, "team-billing");
	assert_non_null(strstr(a.set.jobs[0].description, "\nPage"));
	assert_true(a.set.jobs[0].suspend);
	load_str("jobs:\n  - id: meta.job\n    schedule: {cron: \"* * * * *\"}\n"
		 "    target: {url: \"http://127.0.0.1:8089/x\"}\n",
		 &b);
	assert_int_equal(b.rc, 0);
	assert_null(b.set.jobs[0].owner);
	assert_false(b.set.jobs[0].suspend);
	assert_int_equal(pal_job_spec_digest(&a.set.jobs[0], &ca, ha), 0);
	assert_int_equal(pal_job_spec_digest(&b.set.jobs[0], &cb, hb), 0);
	assert_string_equal(ha, hb);
	assert_null(strstr(ca, "team-billing"));
	free(ca);
	free(cb);
	done(&a);
	done(&b);

	load_str("jobs:\n  - id: meta.bad\n    suspend: maybe\n    owner: \"a\\tb\"\n"
		 "    schedule: {cron: \"* * * * *\"}\n"
		 "    target: {url: \"http://127.0.0.1:8089/x\"}\n",
		 &a);
	assert_int_equal(a.rc, PAL_EINVAL);
	ASSERT_DIAG(&a.diags, 3, 0, "suspend");
	ASSERT_DIAG(&a.diags, 4, 0, "owner: control character");
	done(&a);
}

/* ---- jobs handed over while the file is parsed (apply) ---- */

struct taken {
	pal_jobset all;	  /* every job taken, in order */
	size_t sizes[16]; /* of each batch */
	size_t batches;
};

static void take_into(void *arg, pal_jobset *set)
{
	struct taken *t = arg;

	assert_true(t->batches < 16);
	t->sizes[t->batches++] = set->n;
	for (size_t i = 0; i < set->n; i++) {
		t->all.jobs = realloc(t->all.jobs, (t->all.n + 1) * sizeof *t->all.jobs);
		t->all.jobs[t->all.n++] = set->jobs[i];
	}
	free(set->jobs); /* the specs' strings now belong to t->all */
	set->jobs = NULL;
	set->n = 0;
}

/* Write TEXT to a temporary file; its path in PATH (unlink after). */
static void tmp_yaml(const char *text, char *path, size_t len)
{
	snprintf(path, len, "/tmp/test_jobfile.XXXXXX");
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static struct taken load_batches(const char *text, size_t size, pal_diags *diags, int *rc)
{
	char path[64];
	struct taken t = {0};
	pal_jobloader *l = pal_jobloader_new();

	tmp_yaml(text, path, sizeof path);
	*rc = pal_jobloader_file_batches(l, path, size, take_into, &t, diags);
	pal_jobloader_free(l);
	unlink(path);
	return t;
}

static void test_jobfile_batches_in_file_order(void **state)
{
	(void)state;
	char text[4096] = "jobs:\n";

	for (int i = 1; i <= 7; i++)
		snprintf(text + strlen(text), sizeof text - strlen(text),
			 "  - {id: b.job-%d, schedule: {cron: \"0 %d * * * ?\"}, target: {url: "
			 "\"http://127.0.0.1:8089/x\"}}\n",
			 i, i);
	pal_diags d = {0};
	int rc;
	struct taken t = load_batches(text, 3, &d, &rc);

	assert_int_equal(rc, 0);
	assert_int_equal(d.n, 0);
	assert_int_equal(t.batches, 3);
	assert_int_equal(t.sizes[0], 3);
	assert_int_equal(t.sizes[1], 3);
	assert_int_equal(t.sizes[2], 1);
	/* the same jobs as a whole-file load, in the same order */
	struct loaded whole;

	load_str(text, &whole);
	assert_int_equal(whole.rc, 0);
	assert_int_equal(t.all.n, whole.set.n);
	for (size_t i = 0; i < t.all.n; i++) {
		assert_string_equal(t.all.jobs[i].id, whole.set.jobs[i].id);
		assert_string_equal(t.all.jobs[i].cron, whole.set.jobs[i].cron);
		assert_int_equal(t.all.jobs[i].line, whole.set.jobs[i].line);
	}
	done(&whole);
	pal_jobset_free(&t.all);
	pal_diags_free(&d);
}

static void test_jobfile_batches_stop_at_a_problem(void **state)
{
	(void)state;
	static const char *job = "  - {id: b.job-%d, schedule: {cron: \"%s\"}, target: {url: "
				 "\"http://127.0.0.1:8089/x\"}}\n";
	char text[4096] = "jobs:\n";

	for (int i = 1; i <= 6; i++)
		snprintf(text + strlen(text), sizeof text - strlen(text), job, i,
			 i == 5 ? "0 61 * * * ?" : "0 1 * * * ?");
	pal_diags d = {0};
	int rc;
	struct taken t = load_batches(text, 2, &d, &rc);

	/* jobs 1-4 went before job 5 proved bad; nothing after it */
	assert_int_equal(rc, PAL_EINVAL);
	assert_int_equal(t.batches, 2);
	assert_int_equal(t.all.n, 4);
	ASSERT_DIAG(&d, 6, 0, "minute");
	pal_jobset_free(&t.all);
	pal_diags_free(&d);

	/* valid jobs, then a syntax error: a failure after jobs were handed over */
	memset(&d, 0, sizeof d);
	t = load_batches(
	    "jobs:\n"
	    "  - {id: b.a, schedule: {cron: \"* * * * *\"}, target: {url: \"http://h/x\"}}\n"
	    "  - {id: b.b, schedule: {cron: \"* * * * *\"}, target: {url: \"http://h/x\"}}\n"
	    "  - {id: b.c, schedule: [\n",
	    1, &d, &rc);
	assert_int_equal(rc, PAL_EINVAL);
	assert_int_equal(t.all.n, 2);
	ASSERT_DIAG(&d, 0, 0, "yaml syntax error");
	pal_jobset_free(&t.all);
	pal_diags_free(&d);

	/* an unknown top-level key after the jobs: found once the file is read */
	memset(&d, 0, sizeof d);
	t = load_batches(
	    "jobs:\n"
	    "  - {id: b.a, schedule: {cron: \"* * * * *\"}, target: {url: \"http://h/x\"}}\n"
	    "jobz: []\n",
	    5, &d, &rc);
	assert_int_equal(rc, PAL_EINVAL);
	assert_int_equal(t.all.n, 0); /* the last batch waits for the end of the file */
	ASSERT_DIAG(&d, 3, 1, "unknown key \"jobz\"");
	pal_jobset_free(&t.all);
	pal_diags_free(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_jobfile_full_example_loads_every_key),
	    cmocka_unit_test(test_jobfile_minimal_job_gets_defaults),
	    cmocka_unit_test(test_jobfile_after_refusals),
	    cmocka_unit_test(test_jobfile_shipped_examples_validate),
	    cmocka_unit_test(test_jobfile_dst_and_misfire_forms),
	    cmocka_unit_test(test_jobfile_unknown_key_suggests),
	    cmocka_unit_test(test_jobfile_wrong_types),
	    cmocka_unit_test(test_jobfile_invalid_cron_names_field),
	    cmocka_unit_test(test_jobfile_cron_that_never_fires),
	    cmocka_unit_test(test_jobfile_past_schedules_are_spent_not_refused),
	    cmocka_unit_test(test_jobfile_spread_moves_the_window_checks),
	    cmocka_unit_test(test_jobfile_spread_at_not_spent_while_moved_ahead),
	    cmocka_unit_test(test_jobfile_schedule_forms),
	    cmocka_unit_test(test_jobfile_idempotency_key_spaces),
	    cmocka_unit_test(test_jobfile_url_messages_mask_passwords),
	    cmocka_unit_test(test_jobfile_tracestate),
	    cmocka_unit_test(test_jobfile_notify),
	    cmocka_unit_test(test_jobfile_notify_rules),
	    cmocka_unit_test(test_jobfile_labels),
	    cmocka_unit_test(test_jobfile_keep_body_and_headers),
	    cmocka_unit_test(test_jobfile_owner_description_suspend),
	    cmocka_unit_test(test_jobfile_unknown_zone),
	    cmocka_unit_test(test_jobfile_duplicate_ids_name_both_positions),
	    cmocka_unit_test(test_jobfile_bad_durations),
	    cmocka_unit_test(test_jobfile_bad_urls),
	    cmocka_unit_test(test_jobfile_yaml_level_rejections),
	    cmocka_unit_test(test_jobfile_oversized_file),
	    cmocka_unit_test(test_jobfile_every_error_is_reported),
	    cmocka_unit_test(test_jobfile_templates_and_secrets),
	    cmocka_unit_test(test_jobfile_ranges_and_required_keys),
	    cmocka_unit_test(test_jobfile_garbage_never_crashes),
	    cmocka_unit_test(test_jobfile_batches_in_file_order),
	    cmocka_unit_test(test_jobfile_batches_stop_at_a_problem),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
