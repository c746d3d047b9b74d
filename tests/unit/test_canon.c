/*
 * test_canon.c - canonical JSON and digest of job specs (src/spec/canon.c).
 *
 * The digest decides whether `apply` creates a new job version, so: same
 * meaning -> same digest (key order, equivalent durations, blank runs in the
 * cron, exclusion order), different meaning -> different digest, the
 * round trip through the stored JSON keeps the digest, and the digest of a
 * fixed spec is pinned (a change there re-versions every job in every
 * cluster; bump "format" deliberately instead).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <glib.h>
#include "palisade/jobfile.h"

/* sha256 of the canonical JSON pinned in test_canon_digest_is_pinned (checked
 * independently with python3 hashlib). */
#define PINNED_DIGEST "55f514a46cbde6b24c65f7595687a6ce0979aee0ada0e056abc4b48315823684"

static const char *fixture(const char *name)
{
	static char buf[4][4096];
	static int k;
	const char *dir = getenv("PALISADE_FIXTURES");
	const char *src = __FILE__;
	const char *slash = strrchr(src, '/');
	char *b = buf[k++ % 4];

	if (dir && *dir)
		snprintf(b, 4096, "%s/%s", dir, name);
	else if (slash)
		snprintf(b, 4096, "%.*s/fixtures/%s", (int)(slash - src), src, name);
	else
		snprintf(b, 4096, "fixtures/%s", name);
	return b;
}

/* Load TEXT (one job) and return its digest in HEX (and canonical JSON). */
static void digest_of_text(const char *text, char hex[65], char **json)
{
	pal_jobset set = {0};
	pal_diags d = {0};
	int rc = pal_jobfile_load_buffer("t.yaml", text, strlen(text), &set, &d);

	if (rc != 0)
		pal_diags_print(&d, stderr);
	assert_int_equal(rc, 0);
	assert_int_equal(set.n, 1);
	assert_int_equal(pal_job_spec_digest(&set.jobs[0], json, hex), 0);
	assert_int_equal(strlen(hex), 64);
	pal_jobset_free(&set);
	pal_diags_free(&d);
}

static void digest_of_file(const char *name, size_t idx, char hex[65])
{
	const char *p = fixture(name);
	pal_jobset set = {0};
	pal_diags d = {0};

	assert_int_equal(pal_jobfiles_load(&p, 1, &set, &d), 0);
	assert_true(set.n > idx);
	assert_int_equal(pal_job_spec_digest(&set.jobs[idx], NULL, hex), 0);
	pal_jobset_free(&set);
	pal_diags_free(&d);
}

#define JOB3(sched_extra, target_extra, job_extra)                                                 \
	"jobs:\n  - id: c.job\n    schedule: {cron: \"0 30 2 * * ?\"" sched_extra "}\n"            \
	"    target: {url: \"http://127.0.0.1:8089/x\"" target_extra "}\n" job_extra
#define JOB(sched_extra, job_extra) JOB3(sched_extra, "", job_extra)

static void test_canon_reordered_keys_and_equivalent_values_same_digest(void **state)
{
	char a[65], b[65];

	(void)state;
	/* full.yaml and reordered.yaml say the same thing in a different order,
	 * with 1h as 60m, 5m as 300s, 1s as 1000ms, 2 as 2.0, end with an
	 * offset, exclusions swapped and an extra blank in the cron */
	digest_of_file("full.yaml", 0, a);
	digest_of_file("reordered.yaml", 0, b);
	assert_string_equal(a, b);

	digest_of_text(JOB("", "    deadline: 60s\n"), a, NULL);
	digest_of_text(JOB("", "    deadline: 1m\n"), b, NULL);
	assert_string_equal(a, b);

	/* explicit defaults are the defaults */
	digest_of_text(JOB("", ""), a, NULL);
	digest_of_text(
	    JOB(", timezone: UTC, dst: auto",
		"    tenant: default\n    partitions: 1\n    overlap: allow\n"
		"    misfire: {policy: fire_once, catchup_window: 1h, max_catchup: 100}\n"
		"    retry: {max_attempts: 5, max_age: 1h,\n"
		"            backoff: {initial: 1s, max: 5m, multiplier: 2, jitter: full}}\n"),
	    b, NULL);
	assert_string_equal(a, b);

	/* overlapping and adjacent exclusions merge */
	digest_of_text(JOB(", exclude: [\"2026-12-24..2026-12-26\", \"2026-12-27\"]", ""), a, NULL);
	digest_of_text(
	    JOB(", exclude: [\"2026-12-27\", \"2026-12-25..2026-12-26\", \"2026-12-24\"]", ""), b,
	    NULL);
	assert_string_equal(a, b);
}

static void test_canon_meaning_changes_change_digest(void **state)
{
	char base[65], other[65];

	(void)state;
	digest_of_text(JOB("", ""), base, NULL);
	digest_of_text(JOB("", "    partitions: 2\n"), other, NULL);
	assert_string_not_equal(base, other);
	digest_of_text("jobs:\n  - id: c.job\n    schedule: {cron: \"0 31 2 * * ?\"}\n"
		       "    target: {url: \"http://127.0.0.1:8089/x\"}\n",
		       other, NULL);
	assert_string_not_equal(base, other);
	digest_of_text(JOB(", timezone: Europe/Berlin", ""), other, NULL);
	assert_string_not_equal(base, other);
	digest_of_text(JOB(", dst: {gap: shift, overlap: first}", ""), other, NULL);
	assert_string_not_equal(base, other); /* explicit is not auto */
	digest_of_text(JOB3("", ", headers: {A: \"${TOKEN_A}\"}", ""), other, NULL);
	assert_string_not_equal(base, other);
}

static void test_canon_layout_has_every_key_with_defaults(void **state)
{
	pal_jobset set = {0};
	pal_diags d = {0};
	json_t *j;
	static const char text[] = JOB3("", ", headers: {A: \"${SECRET_A}\"}", "");

	(void)state;
	assert_int_equal(pal_jobfile_load_buffer("t.yaml", text, strlen(text), &set, &d), 0);
	j = pal_job_spec_canonical(&set.jobs[0]);
	assert_non_null(j);
	assert_int_equal(json_integer_value(json_object_get(j, "format")), 1);
	assert_string_equal(json_string_value(json_object_get(j, "tenant")), "default");
	assert_true(json_is_true(
	    json_object_get(json_object_get(json_object_get(j, "schedule"), "dst"), "auto")));
	assert_true(json_is_null(json_object_get(json_object_get(j, "schedule"), "start")));
	assert_int_equal(
	    json_array_size(json_object_get(json_object_get(j, "schedule"), "exclude")), 0);
	assert_int_equal(json_integer_value(json_object_get(j, "deadline_ms")), 0);
	assert_int_equal(
	    json_integer_value(json_object_get(json_object_get(j, "misfire"), "catchup_window_ms")),
	    3600000);
	assert_string_equal(json_string_value(json_object_get(j, "idempotency_key")),
			    "{job}/{scheduled_at}/{partition}");
	/* secrets are not resolved */
	assert_string_equal(json_string_value(json_object_get(
				json_object_get(json_object_get(j, "target"), "headers"), "A")),
			    "${SECRET_A}");
	assert_true(json_is_null(json_object_get(json_object_get(j, "target"), "body")));
	assert_true(
	    json_real_value(json_object_get(json_object_get(json_object_get(j, "retry"), "backoff"),
					    "multiplier")) == 2.0);
	assert_null(json_object_get(j, "file"));
	json_decref(j);
	pal_jobset_free(&set);
	pal_diags_free(&d);
}

static void test_canon_exclusions_and_times_formatted(void **state)
{
	char hex[65];
	char *json = NULL;

	(void)state;
	digest_of_text(JOB(", start: \"2026-01-01T02:00:00+02:00\", end: 2027-01-01T00:00:00Z,"
			   " exclude: [\"2026-12-30..2027-01-02\", \"2026-12-25\"]",
			   ""),
		       hex, &json);
	assert_non_null(strstr(json, "\"start\":\"2026-01-01T00:00:00Z\""));
	assert_non_null(strstr(json, "\"end\":\"2027-01-01T00:00:00Z\""));
	assert_non_null(strstr(json, "\"exclude\":[\"2026-12-25\",\"2026-12-30..2027-01-02\"]"));
	/* compact, sorted keys */
	assert_null(strstr(json, ": "));
	assert_true(strstr(json, "\"deadline_ms\"") < strstr(json, "\"group\""));
	free(json);
}

static void roundtrip(const pal_job_spec *s)
{
	char a[65], b[65], err[256];
	char *ja = NULL, *jb = NULL;
	json_t *j, *parsed;
	pal_job_spec back;
	json_error_t je;

	assert_int_equal(pal_job_spec_digest(s, &ja, a), 0);
	/* through text, as job_versions.spec would be */
	parsed = json_loads(ja, 0, &je);
	assert_non_null(parsed);
	if (pal_job_spec_from_canonical(parsed, &back, err, sizeof err) != 0)
		fail_msg("%s", err);
	assert_int_equal(pal_job_spec_digest(&back, &jb, b), 0);
	assert_string_equal(a, b);
	assert_string_equal(ja, jb);
	/* and straight from the object */
	j = pal_job_spec_canonical(&back);
	assert_true(json_equal(j, parsed));
	json_decref(j);
	json_decref(parsed);
	pal_job_spec_clear(&back);
	free(ja);
	free(jb);
}

/* A dependent job: `after` in the canonical form (sorted first, in the
 * file's order), the never-firing cron, the defaults of on and within, and
 * the round trip; a job without `after` has no such key. */
static void test_canon_after_round_trip(void **state)
{
	static const char text[] =
	    "jobs:\n"
	    "  - {id: a, schedule: {cron: \"*/2 * * * * ?\"}, target: {url: \"http://h/x\"}}\n"
	    "  - {id: c, after: [{job: b, on: finished, within: 30s}, {job: a}],"
	    " target: {url: \"http://h/x\"}}\n"
	    "  - {id: b, after: [{job: a}], target: {url: \"http://h/x\"}}\n";
	static const char after_c[] =
	    "{\"after\":[{\"job\":\"b\",\"on\":\"finished\",\"within_ms\":30000},"
	    "{\"job\":\"a\",\"on\":\"succeeded\",\"within_ms\":86400000}],";
	pal_jobset set = {0};
	pal_diags d = {0};
	char hex[65], *json = NULL;

	(void)state;
	assert_int_equal(pal_jobfile_load_buffer("t.yaml", text, strlen(text), &set, &d), 0);
	assert_int_equal(set.n, 3);
	assert_int_equal(pal_job_spec_digest(&set.jobs[0], &json, hex), 0);
	assert_null(strstr(json, "\"after\""));
	free(json);
	assert_int_equal(pal_job_spec_digest(&set.jobs[1], &json, hex), 0);
	assert_true(strncmp(json, after_c, strlen(after_c)) == 0);
	assert_non_null(strstr(json, "\"cron\":\"" PAL_AFTER_CRON "\""));
	free(json);
	for (size_t i = 0; i < set.n; i++)
		roundtrip(&set.jobs[i]);
	pal_jobset_free(&set);
	pal_diags_free(&d);
}

static void test_canon_round_trip_keeps_digest(void **state)
{
	const char *p = fixture("full.yaml");
	pal_jobset set = {0};
	pal_diags d = {0};

	(void)state;
	assert_int_equal(pal_jobfiles_load(&p, 1, &set, &d), 0);
	for (size_t i = 0; i < set.n; i++)
		roundtrip(&set.jobs[i]);
	pal_jobset_free(&set);

	assert_int_equal(
	    pal_jobfile_load_buffer(
		"t.yaml",
		JOB(", dst: {gap: skip, overlap: both}",
		    "    retry: {backoff: {multiplier: 1.1, jitter: equal}, max_age: 0}\n"
		    "    misfire: manual\n"),
		strlen(JOB(", dst: {gap: skip, overlap: both}",
			   "    retry: {backoff: {multiplier: 1.1, jitter: equal}, "
			   "max_age: 0}\n"
			   "    misfire: manual\n")),
		&set, &d),
	    0);
	roundtrip(&set.jobs[0]);
	pal_jobset_free(&set);
	pal_diags_free(&d);
}

static void test_canon_from_canonical_refuses_unknown_and_malformed(void **state)
{
	const char *p = fixture("full.yaml");
	pal_jobset set = {0};
	pal_diags d = {0};
	pal_job_spec out;
	char err[256];
	json_t *j;

	(void)state;
	assert_int_equal(pal_jobfiles_load(&p, 1, &set, &d), 0);

	j = pal_job_spec_canonical(&set.jobs[0]);
	json_object_set_new(j, "future_key", json_true());
	assert_int_equal(pal_job_spec_from_canonical(j, &out, err, sizeof err), PAL_EINVAL);
	assert_non_null(strstr(err, "unknown key \"future_key\""));
	json_decref(j);

	j = pal_job_spec_canonical(&set.jobs[0]);
	json_object_set_new(j, "format", json_integer(2));
	assert_int_equal(pal_job_spec_from_canonical(j, &out, err, sizeof err), PAL_EINVAL);
	assert_non_null(strstr(err, "format 2 is not understood"));
	json_decref(j);

	j = pal_job_spec_canonical(&set.jobs[0]);
	json_object_set_new(j, "partitions", json_string("4"));
	assert_int_equal(pal_job_spec_from_canonical(j, &out, err, sizeof err), PAL_EINVAL);
	assert_non_null(strstr(err, "partitions: expected an integer"));
	json_decref(j);

	j = pal_job_spec_canonical(&set.jobs[0]);
	json_object_set_new(json_object_get(j, "misfire"), "policy", json_string("fire_twice"));
	assert_int_equal(pal_job_spec_from_canonical(j, &out, err, sizeof err), PAL_EINVAL);
	json_decref(j);

	j = pal_job_spec_canonical(&set.jobs[0]);
	json_object_del(json_object_get(j, "target"), "url");
	assert_int_equal(pal_job_spec_from_canonical(j, &out, err, sizeof err), PAL_EINVAL);
	assert_non_null(strstr(err, "missing key \"url\""));
	json_decref(j);

	assert_int_equal(pal_job_spec_from_canonical(json_null(), &out, err, sizeof err),
			 PAL_EINVAL);
	pal_jobset_free(&set);
	pal_diags_free(&d);
}

static void test_canon_digest_is_pinned(void **state)
{
	char hex[65];
	char *json = NULL;

	(void)state;
	digest_of_text(JOB("", ""), hex, &json);
	/* If this changes, every stored job version gets a new digest and the
	 * next apply re-versions every job: change "format" instead. */
	assert_string_equal(
	    json,
	    "{\"deadline_ms\":0,\"format\":1,\"group\":\"default\",\"id\":\"c.job\","
	    "\"idempotency_key\":\"{job}/{scheduled_at}/{partition}\",\"max_in_flight\":0,"
	    "\"misfire\":{\"catchup_window_ms\":3600000,\"max_catchup\":100,\"policy\":"
	    "\"fire_once\"},\"overlap\":\"allow\",\"partitions\":1,\"priority\":0,"
	    "\"retry\":{\"backoff\":{\"initial_ms\":1000,\"jitter\":\"full\",\"max_ms\":300000,"
	    "\"multiplier\":2.0},\"max_age_ms\":3600000,\"max_attempts\":5},"
	    "\"schedule\":{\"cron\":\"0 30 2 * * ?\",\"dst\":{\"auto\":true},\"end\":null,"
	    "\"exclude\":[],\"start\":null,\"timezone\":\"UTC\"},"
	    "\"target\":{\"body\":null,\"headers\":{},\"method\":\"POST\",\"status_url\":null,"
	    "\"timeout_ms\":30000,\"url\":\"http://127.0.0.1:8089/x\"},\"tenant\":\"default\"}");
	assert_string_equal(hex, PINNED_DIGEST);
	free(json);
}

static void test_canon_non_ascii_is_escaped(void **state)
{
	char hex[65];
	char *json = NULL;

	(void)state;
	digest_of_text(JOB3("", ", body: \"caf\xc3\xa9\"", ""), hex, &json);
	assert_non_null(strstr(json, "\"body\":\"caf\\u00E9\""));
	free(json);
}

static void test_job_shard_is_fnv1a_mod_n(void **state)
{
	int counts[16] = {0};
	char id[32];

	(void)state;
	/* FNV-1a 64 of "a" is 0xaf63dc4c8601ec8c */
	assert_int_equal(pal_job_shard("a", 16), (int)(0xaf63dc4c8601ec8cULL % 16));
	assert_int_equal(pal_job_shard("a", 1000), (int)(0xaf63dc4c8601ec8cULL % 1000));
	/* "" hashes to the offset basis */
	assert_int_equal(pal_job_shard("", 7), (int)(0xcbf29ce484222325ULL % 7));
	assert_int_equal(pal_job_shard("x", 0), 0);
	assert_int_equal(pal_job_shard("x", -3), 0);
	for (int i = 0; i < 16000; i++) {
		int s;

		snprintf(id, sizeof id, "job.%d", i);
		s = pal_job_shard(id, 16);
		assert_in_range(s, 0, 15);
		counts[s]++;
	}
	for (int i = 0; i < 16; i++)
		assert_in_range(counts[i], 800, 1200);
}

static void test_diags_print_format(void **state)
{
	pal_diags d = {0};
	char buf[512] = "";
	FILE *fp = fmemopen(buf, sizeof buf, "w");

	(void)state;
	assert_non_null(fp);
	pal_diags_addf(&d, "jobs.yaml", 14, 9, "unknown key \"%s\"", "misfir");
	pal_diags_addf(&d, "jobs.yaml", 0, 0, "cannot open file");
	pal_diags_addf(&d, NULL, 1, 2, "x");
	pal_diags_print(&d, fp);
	fclose(fp);
	assert_string_equal(buf, "jobs.yaml:14:9: error: unknown key \"misfir\"\n"
				 "jobs.yaml: error: cannot open file\n"
				 "<input>:1:2: error: x\n");
	pal_diags_free(&d);
}

/* pal_job_spec_digest writes the canonical text itself; it must be, byte
 * for byte, what json_dumps of the jansson object gives (the flags of
 * canon.c), or stored digests would change.  Specs with every optional key,
 * strings that need escaping (quotes, backslash, slash, controls, DEL,
 * non-ASCII in and beyond the BMP), unsorted headers, exclusions, reals. */
static void expect_same_text(const pal_job_spec *s)
{
	const size_t flags =
	    JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII | JSON_REAL_PRECISION(15);
	json_t *j = pal_job_spec_canonical(s);
	char *want, *got = NULL, hex[65], *retry, *target;
	pal_canon_spans sp;

	assert_non_null(j);
	want = json_dumps(j, flags);
	retry = json_dumps(json_object_get(j, "retry"), flags);
	target = json_dumps(json_object_get(j, "target"), flags);
	json_decref(j);
	assert_non_null(want);
	assert_int_equal(pal_job_spec_digest_spans(s, &got, hex, &sp), 0);
	assert_string_equal(got, want);
	/* the digest (SHA extensions where the CPU has them) is GChecksum's */
	gchar *ref = g_compute_checksum_for_string(G_CHECKSUM_SHA256, want, -1);
	assert_string_equal(hex, ref);
	g_free(ref);
	/* the slices the store sends as job_versions.retry and .target */
	assert_int_equal(sp.retry_len, strlen(retry));
	assert_memory_equal(got + sp.retry_off, retry, sp.retry_len);
	assert_int_equal(sp.target_len, strlen(target));
	assert_memory_equal(got + sp.target_off, target, sp.target_len);
	free(got);
	free(want);
	free(retry);
	free(target);
}

/* The schedule forms after the first release: their keys (at, every_ms,
 * spread_ms, jitter_ms) are written only when set, in the digest, in sorted
 * order by the direct writer too, and read back; a cron job without them
 * keeps its digest (test_canon_digest_is_pinned). */
static void test_canon_schedule_forms(void **state)
{
	static const char yaml[] =
	    "jobs:\n"
	    "  - id: f.every\n"
	    "    schedule: {every: 90s, spread: 10m, jitter: 30s, start: 2026-01-01T00:00:00Z}\n"
	    "    target: {url: \"http://127.0.0.1:8089/x\"}\n"
	    "  - id: f.at\n"
	    "    schedule: {at: 2030-01-01T00:00:00Z, exclude: [\"2029-12-25\"]}\n"
	    "    target: {url: \"http://127.0.0.1:8089/x\"}\n"
	    "  - id: f.cron\n"
	    "    schedule: {cron: \"H H * * *\", spread: 1h}\n"
	    "    target: {url: \"http://127.0.0.1:8089/x\"}\n"
	    "  - id: f.plain\n"
	    "    schedule: {cron: \"H H * * *\"}\n"
	    "    target: {url: \"http://127.0.0.1:8089/x\"}\n";
	pal_jobset set = {0};
	pal_diags d = {0};
	char hex[4][65], *text;

	(void)state;
	assert_int_equal(pal_jobfile_load_buffer("f.yaml", yaml, strlen(yaml), &set, &d), 0);
	assert_int_equal(set.n, 4);
	for (size_t i = 0; i < set.n; i++) {
		expect_same_text(&set.jobs[i]);
		roundtrip(&set.jobs[i]);
		assert_int_equal(pal_job_spec_digest(&set.jobs[i], &text, hex[i]), 0);
		assert_int_equal(strstr(text, "\"every_ms\"") != NULL, i == 0);
		assert_int_equal(strstr(text, "\"at\"") != NULL, i == 1);
		assert_int_equal(strstr(text, "\"spread_ms\"") != NULL, i == 0 || i == 2);
		assert_int_equal(strstr(text, "\"jitter_ms\"") != NULL, i == 0);
		free(text);
	}
	/* spread is part of the meaning: with and without it differ */
	assert_string_not_equal(hex[2], hex[3]);
	pal_jobset_free(&set);
	pal_diags_free(&d);
}

static void test_canon_direct_text_matches_jansson(void **state)
{
	static const char *const strings[] = {"plain",
					      "",
					      "quote\"d",
					      "back\\slash",
					      "a/b",
					      "tab\there",
					      "nl\nx",
					      "cr\rx",
					      "\b\f\x01\x1f",
					      "del\x7f",
					      "caf\xc3\xa9",
					      "\xe2\x82\xac",
					      "\xf0\x9f\x98\x80 smile",
					      "${SECRET_TOKEN}",
					      "{job}/{scheduled_at}/{partition}",
					      "null",
					      "true"};
	static const double reals[] = {1,    1.1, 1.5,	    2, 2.5, 3.3333333333333335,
				       9.99, 10,  1.0000001};
	const char *p = fixture("full.yaml");
	pal_jobset set = {0};
	pal_diags d = {0};

	(void)state;
	assert_int_equal(pal_jobfiles_load(&p, 1, &set, &d), 0);
	for (size_t i = 0; i < set.n; i++)
		expect_same_text(&set.jobs[i]);

	pal_job_spec s;
	pal_header h[3];
	pal_exclusion ex[3] = {{20500, 20502}, {20400, 20400}, {20401, 20410}};
	for (size_t k = 0; k < sizeof strings / sizeof *strings; k++) {
		assert_int_equal(pal_job_spec_defaults(&s), 0);
		char *str = (char *)strings[k];
		s.id = "x.job";
		s.cron = str;
		s.url = str;
		s.body = k % 2 ? str : NULL;
		s.status_url = k % 3 ? NULL : str;
		h[0] = (pal_header){"X-Zeta", str};
		h[1] = (pal_header){"Authorization", "Bearer ${T}"};
		h[2] = (pal_header){"x-alpha", str};
		s.headers = h;
		s.n_headers = k % 4;
		s.exclusions = ex;
		s.n_exclusions = k % 4;
		s.has_start = k % 2;
		s.start = 1767225600 + (int64_t)k;
		s.has_end = k % 3 == 0;
		s.end = 1798761600;
		s.dst.is_auto = k % 2;
		s.dst.gap = (int)(k % 2);
		s.dst.overlap = (int)(k % 3);
		s.backoff_multiplier = reals[k % (sizeof reals / sizeof *reals)];
		s.priority = -(int)k;
		s.deadline_ms = 86400000LL * (int64_t)k;
		char *keep[] = {"retry-after", "x-request-id"};
		s.has_keep_body = k % 2;
		s.keep_body = 100 * (int64_t)k;
		s.keep_headers = keep;
		s.n_keep_headers = k % 3;
		expect_same_text(&s);
		s.keep_headers = NULL;
		s.n_keep_headers = 0;
		/* the strings above belong to the test */
		s.id = s.cron = s.url = s.body = s.status_url = NULL;
		s.headers = NULL;
		s.n_headers = 0;
		s.exclusions = NULL;
		s.n_exclusions = 0;
		pal_job_spec_clear(&s);
	}
	/* every length of the last SHA-256 block: bodies of 0..200 bytes */
	char body[256];
	for (size_t k = 0; k <= 200; k++) {
		assert_int_equal(pal_job_spec_defaults(&s), 0);
		memset(body, 'b', k);
		body[k] = '\0';
		s.id = "x.job";
		s.cron = "0 0 * * * ?";
		s.url = "http://h/x";
		s.body = body;
		expect_same_text(&s);
		s.id = s.cron = s.url = s.body = NULL;
		pal_job_spec_clear(&s);
	}
	pal_jobset_free(&set);
	pal_diags_free(&d);
}

/* labels: an object sorted by key in the canonical form, only when set
 * (a job without them keeps its digest); the file's order does not change
 * the digest, a value does; the stored form reads back to the same digest;
 * a version with labels needs nodes of schema 42. */
static void test_canon_labels(void **state)
{
	char plain[65], a[65], b[65], c[65], *json = NULL;
	pal_jobset set = {0};
	pal_diags d = {0};
	const char *key;

	(void)state;
	digest_of_text(JOB("", ""), plain, &json);
	assert_null(strstr(json, "labels"));
	free(json);
	digest_of_text(JOB("", "    labels: {user: root, app.kubernetes.io/name: web}\n"),
		       a, &json);
	assert_non_null(strstr(json, ",\"labels\":{\"app.kubernetes.io/name\":\"web\","
				     "\"user\":\"root\"},\"max_in_flight\":"));
	free(json);
	digest_of_text(JOB("", "    labels: {app.kubernetes.io/name: web, user: root}\n"),
		       b, NULL);
	digest_of_text(JOB("", "    labels: {app.kubernetes.io/name: web, user: toor}\n"),
		       c, NULL);
	assert_string_not_equal(plain, a);
	assert_string_equal(a, b);
	assert_string_not_equal(a, c);

	static const char text[] = JOB("", "    labels: {z: \"\", user: root, a.b/c: d}\n");
	assert_int_equal(pal_jobfile_load_buffer("t.yaml", text, strlen(text), &set, &d), 0);
	roundtrip(&set.jobs[0]);
	expect_same_text(&set.jobs[0]);
	assert_int_equal(pal_job_spec_min_schema(&set.jobs[0], &key), PAL_SCHEMA_LABELS);
	assert_string_equal(key, "labels");

	/* the reader checks them as the loader does */
	pal_job_spec out;
	char err[256];
	json_t *j = pal_job_spec_canonical(&set.jobs[0]);
	json_object_set_new(json_object_get(j, "labels"), "bad key", json_string("x"));
	assert_int_equal(pal_job_spec_from_canonical(j, &out, err, sizeof err), PAL_EINVAL);
	assert_non_null(strstr(err, "labels: \"bad key\" is not a valid label"));
	json_decref(j);
	pal_jobset_free(&set);
	pal_diags_free(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_canon_reordered_keys_and_equivalent_values_same_digest),
	    cmocka_unit_test(test_canon_meaning_changes_change_digest),
	    cmocka_unit_test(test_canon_layout_has_every_key_with_defaults),
	    cmocka_unit_test(test_canon_exclusions_and_times_formatted),
	    cmocka_unit_test(test_canon_round_trip_keeps_digest),
	    cmocka_unit_test(test_canon_from_canonical_refuses_unknown_and_malformed),
	    cmocka_unit_test(test_canon_digest_is_pinned),
	    cmocka_unit_test(test_canon_non_ascii_is_escaped),
	    cmocka_unit_test(test_canon_direct_text_matches_jansson),
	    cmocka_unit_test(test_canon_schedule_forms),
	    cmocka_unit_test(test_canon_after_round_trip),
	    cmocka_unit_test(test_canon_labels),
	    cmocka_unit_test(test_job_shard_is_fnv1a_mod_n),
	    cmocka_unit_test(test_diags_print_format),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
