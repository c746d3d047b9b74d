/*
 * test_metrics.c - the metric registry: exact exposition text, value
 * spelling, name and label validation, misuse ignored and logged once,
 * concurrent updates, and (when installed) `promtool check metrics`.
 */
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <jansson.h>
#include "palisade/log.h"
#include <glib.h>
#include "palisade/metrics.h"

static int log_fd[2];

/* Capture the log: misuse warnings are part of the contract. */
static int setup(void **state)
{
	if (pipe(log_fd) != 0)
		return -1;
	fcntl(log_fd[0], F_SETFL, O_NONBLOCK);
	pal_log_init("t", PAL_LOG_INFO);
	pal_log_set_fd(log_fd[1]);
	pal_metrics *m = pal_metrics_new();
	if (m == NULL)
		return -1;
	*state = m;
	return 0;
}

static int teardown(void **state)
{
	pal_metrics_free(*state);
	pal_log_set_fd(1);
	close(log_fd[0]);
	close(log_fd[1]);
	return 0;
}

/* The log lines written so far, parsed; caller json_decref()s the array. */
static json_t *log_lines(void)
{
	json_t *arr = json_array();
	char buf[65536];
	size_t len = 0;
	ssize_t n;
	while (len < sizeof buf - 1 && (n = read(log_fd[0], buf + len, sizeof buf - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
	char *save = NULL;
	for (char *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		json_t *o = json_loads(l, 0, NULL);
		assert_non_null(o);
		json_array_append_new(arr, o);
	}
	return arr;
}

static void expect_one_warning(const char *event, const char *metric)
{
	json_t *lines = log_lines();
	if (json_array_size(lines) != 1)
		fail_msg("expected one warning %s, got %zu lines", event, json_array_size(lines));
	json_t *l = json_array_get(lines, 0);
	assert_string_equal(json_string_value(json_object_get(l, "level")), "warn");
	assert_string_equal(json_string_value(json_object_get(l, "event")), event);
	assert_string_equal(json_string_value(json_object_get(l, "metric")), metric);
	json_decref(lines);
}

static void expect_no_log(void)
{
	json_t *lines = log_lines();
	assert_int_equal(json_array_size(lines), 0);
	json_decref(lines);
}

static void test_metrics_render_exact_text(void **state)
{
	pal_metrics *m = *state;
	pal_metric_declare(m, "palisade_triggers_planned_total", PAL_METRIC_COUNTER,
			   "Triggers planned.\nA second line with a \\ backslash and \"quotes\".");
	pal_metric_declare(m, "palisade_backlog", PAL_METRIC_GAUGE, "Triggers waiting.");
	pal_metric_declare(m, "palisade_empty", PAL_METRIC_GAUGE, NULL);
	pal_metric_inc(m, "palisade_triggers_planned_total", "shard=\"1\"", 2);
	pal_metric_inc(m, "palisade_triggers_planned_total", "shard=\"10\"", 5);
	pal_metric_inc(m, "palisade_triggers_planned_total", "shard=\"0\"", 1);
	pal_metric_inc(m, "palisade_triggers_planned_total", "shard=\"1\"", 0.5);
	pal_metric_set(m, "palisade_backlog", NULL, 7);
	pal_metric_set(m, "palisade_backlog", "", 8); /* "" and NULL are one sample */

	char *text = pal_metrics_render(m);
	assert_string_equal(
	    text, "# HELP palisade_backlog Triggers waiting.\n"
		  "# TYPE palisade_backlog gauge\n"
		  "palisade_backlog 8\n"
		  "# TYPE palisade_empty gauge\n"
		  "# HELP palisade_triggers_planned_total Triggers planned.\\nA second line with a "
		  "\\\\ backslash and \"quotes\".\n"
		  "# TYPE palisade_triggers_planned_total counter\n"
		  "palisade_triggers_planned_total{shard=\"0\"} 1\n"
		  "palisade_triggers_planned_total{shard=\"1\"} 2.5\n"
		  "palisade_triggers_planned_total{shard=\"10\"} 5\n");
	free(text);
	assert_true(pal_metric_get(m, "palisade_triggers_planned_total", "shard=\"1\"") == 2.5);
	assert_true(pal_metric_get(m, "palisade_backlog", NULL) == 8);
	assert_true(pal_metric_get(m, "palisade_backlog", "x=\"1\"") == 0);
	assert_true(pal_metric_get(m, "nope", NULL) == 0);
	expect_no_log();
}

static void test_metrics_empty_registry_renders_empty_text(void **state)
{
	char *text = pal_metrics_render(*state);
	assert_string_equal(text, "");
	free(text);
	text = pal_metrics_render(NULL);
	assert_string_equal(text, "");
	free(text);
}

static void check_value(double v, const char *want)
{
	char buf[32];
	pal_metric_format_value(v, buf, sizeof buf);
	if (strcmp(buf, want) != 0)
		fail_msg("value %.17g rendered \"%s\", want \"%s\"", v, buf, want);
}

static void test_metrics_value_spelling(void **state)
{
	check_value(0, "0");
	check_value(-0.0, "0");
	check_value(1, "1");
	check_value(-3, "-3");
	check_value(1e15, "1000000000000000");
	check_value(9007199254740992.0, "9007199254740992");
	check_value(9007199254740994.0, "9007199254740994"); /* %g: still exact */
	check_value(1e17, "1e+17");
	check_value(-2.5e20, "-2.5e+20");
	check_value(0.5, "0.5");
	check_value(0.1, "0.1");
	check_value(1.0 / 3, "0.3333333333333333");
	check_value(123456.789, "123456.789");
	check_value(1.5e-7, "1.5e-07");
	check_value(1e300, "1e+300");
	check_value(DBL_MAX, "1.7976931348623157e+308");
	check_value(DBL_MIN, "2.2250738585072014e-308");
	check_value(INFINITY, "+Inf");
	check_value(-INFINITY, "-Inf");
	check_value(NAN, "NaN");
}

static void test_metrics_values_read_back_exactly(void **state)
{
	uint64_t x = 0x9E3779B97F4A7C15ULL;
	for (int i = 0; i < 100000; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64 */
		double v;
		memcpy(&v, &x, sizeof v);
		if (!isfinite(v))
			continue;
		char buf[32];
		pal_metric_format_value(v, buf, sizeof buf);
		if (strtod(buf, NULL) != v)
			fail_msg("%a rendered as \"%s\" does not read back", v, buf);
		assert_true(strlen(buf) <= 24);
	}
}

static void test_metrics_name_validation(void **state)
{
	assert_true(pal_metric_name_valid("a"));
	assert_true(pal_metric_name_valid("_a"));
	assert_true(pal_metric_name_valid(":x"));
	assert_true(pal_metric_name_valid("palisade_x:rate5m_total"));
	assert_false(pal_metric_name_valid(NULL));
	assert_false(pal_metric_name_valid(""));
	assert_false(pal_metric_name_valid("9a"));
	assert_false(pal_metric_name_valid("a-b"));
	assert_false(pal_metric_name_valid("a b"));
	assert_false(pal_metric_name_valid("caf\xc3\xa9"));
}

static void test_metrics_label_validation(void **state)
{
	assert_true(pal_metric_labels_valid(NULL));
	assert_true(pal_metric_labels_valid(""));
	assert_true(pal_metric_labels_valid("a=\"1\""));
	assert_true(pal_metric_labels_valid("_x=\"\""));
	assert_true(pal_metric_labels_valid("a=\"1\",b=\"x\\\"y\\\\z\\nw\""));
	assert_true(pal_metric_labels_valid("job=\"caf\xc3\xa9\tbar\""));
	assert_false(pal_metric_labels_valid("a=1"));
	assert_false(pal_metric_labels_valid("a=\"1\","));
	assert_false(pal_metric_labels_valid("a=\"1\" "));
	assert_false(pal_metric_labels_valid("a = \"1\""));
	assert_false(pal_metric_labels_valid("a=\"1\",a=\"2\""));
	assert_false(pal_metric_labels_valid("a=\"\\q\""));
	assert_false(pal_metric_labels_valid("a=\"unterminated"));
	assert_false(pal_metric_labels_valid("a=\"line\nbreak\""));
	assert_false(pal_metric_labels_valid("9a=\"1\""));
	assert_false(pal_metric_labels_valid("a:b=\"1\""));
	assert_false(pal_metric_labels_valid("a=\"\xff\""));
	assert_false(pal_metric_labels_valid("{a=\"1\"}"));
}

static void test_metrics_unknown_family_ignored_and_logged_once(void **state)
{
	pal_metrics *m = *state;
	pal_metric_inc(m, "nope_total", NULL, 1);
	pal_metric_inc(m, "nope_total", "a=\"1\"", 1);
	pal_metric_set(m, "nope_total", NULL, 3);
	expect_one_warning("metrics.unknown_family", "nope_total");
	assert_true(pal_metric_get(m, "nope_total", NULL) == 0);
	char *text = pal_metrics_render(m);
	assert_string_equal(text, "");
	free(text);
	pal_metric_inc(m, "other_total", NULL, 1); /* another name: its own warning */
	expect_one_warning("metrics.unknown_family", "other_total");
}

static void test_metrics_counter_misuse_ignored(void **state)
{
	pal_metrics *m = *state;
	pal_metric_declare(m, "c_total", PAL_METRIC_COUNTER, "c");
	pal_metric_inc(m, "c_total", NULL, 5);
	pal_metric_inc(m, "c_total", NULL, -1);
	expect_one_warning("metrics.counter_decrease", "c_total");
	pal_metric_inc(m, "c_total", NULL, NAN);
	pal_metric_set(m, "c_total", NULL, 1);
	expect_one_warning("metrics.counter_set", "c_total");
	assert_true(pal_metric_get(m, "c_total", NULL) == 5);

	pal_metric_declare(m, "g", PAL_METRIC_GAUGE, "g");
	pal_metric_inc(m, "g", NULL, 2);
	pal_metric_inc(m, "g", NULL, -5);
	assert_true(pal_metric_get(m, "g", NULL) == -3);
	expect_no_log();
}

static void test_metrics_bad_labels_ignored(void **state)
{
	pal_metrics *m = *state;
	pal_metric_declare(m, "g", PAL_METRIC_GAUGE, "g");
	pal_metric_set(m, "g", "shard=3", 1);
	pal_metric_set(m, "g", "shard=3", 2);
	expect_one_warning("metrics.bad_labels", "g");
	char *text = pal_metrics_render(m);
	assert_string_equal(text, "# HELP g g\n# TYPE g gauge\n");
	free(text);
}

static void test_metrics_declare_rules(void **state)
{
	pal_metrics *m = *state;
	pal_metric_declare(m, "bad-name", PAL_METRIC_GAUGE, "x");
	expect_one_warning("metrics.bad_name", "bad-name");
	pal_metric_declare(m, "x_total", PAL_METRIC_COUNTER, "first");
	pal_metric_declare(m, "x_total", PAL_METRIC_COUNTER, "second"); /* silent no-op */
	expect_no_log();
	pal_metric_declare(m, "x_total", PAL_METRIC_GAUGE, "third");
	expect_one_warning("metrics.redeclared", "x_total");
	pal_metric_declare(m, "requests", PAL_METRIC_COUNTER, "no suffix");
	expect_one_warning("metrics.counter_name", "requests");
	pal_metric_inc(m, "bad-name", NULL, 1);
	expect_one_warning("metrics.unknown_family", "bad-name");
	char *text = pal_metrics_render(m);
	assert_string_equal(text, "# HELP requests no suffix\n# TYPE requests counter\n"
				  "# HELP x_total first\n# TYPE x_total counter\n");
	free(text);
}

static void test_metrics_null_registry_is_noop(void **state)
{
	pal_metric_declare(NULL, "a", PAL_METRIC_GAUGE, "a");
	pal_metric_inc(NULL, "a", NULL, 1);
	pal_metric_set(NULL, "a", NULL, 1);
	assert_true(pal_metric_get(NULL, "a", NULL) == 0);
	pal_metrics_free(NULL);
	expect_no_log();
}

#define THREADS 8
#define INCS 20000

static void *incrementer(void *p)
{
	pal_metrics *m = p;
	static const char *const labels[] = {"k=\"a\"", "k=\"b\"", "k=\"c\"", "k=\"d\""};
	for (int i = 0; i < INCS; i++) {
		pal_metric_inc(m, "hits_total", labels[i % 4], 1);
		pal_metric_inc(m, "level", NULL, i % 2 ? -1 : 1);
	}
	return NULL;
}

static void *renderer(void *p)
{
	for (int i = 0; i < 200; i++)
		free(pal_metrics_render(p));
	return NULL;
}

static void test_metrics_concurrent_updates_are_exact(void **state)
{
	pal_metrics *m = *state;
	pal_metric_declare(m, "hits_total", PAL_METRIC_COUNTER, "hits");
	pal_metric_declare(m, "level", PAL_METRIC_GAUGE, "level");
	pthread_t t[THREADS + 1];
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, incrementer, m), 0);
	assert_int_equal(pthread_create(&t[THREADS], NULL, renderer, m), 0);
	for (int i = 0; i <= THREADS; i++)
		pthread_join(t[i], NULL);
	double total = 0;
	static const char *const labels[] = {"k=\"a\"", "k=\"b\"", "k=\"c\"", "k=\"d\""};
	for (int i = 0; i < 4; i++) {
		assert_true(pal_metric_get(m, "hits_total", labels[i]) == THREADS * INCS / 4);
		total += pal_metric_get(m, "hits_total", labels[i]);
	}
	assert_true(total == THREADS * INCS);
	assert_true(pal_metric_get(m, "level", NULL) == 0);
}

static void test_metrics_histogram_renders_cumulative_buckets(void **state)
{
	pal_metrics *m = *state;
	const double b[] = { 0.01, 0.1, 1 };
	pal_metric_declare_histogram(m, "palisade_call_seconds", "Call duration.", b, 3);
	pal_metric_observe(m, "palisade_call_seconds", "host=\"a\"", 0.005);
	pal_metric_observe(m, "palisade_call_seconds", "host=\"a\"", 0.01); /* le is inclusive */
	pal_metric_observe(m, "palisade_call_seconds", "host=\"a\"", 0.5);
	pal_metric_observe(m, "palisade_call_seconds", "host=\"a\"", 7);
	pal_metric_observe(m, "palisade_call_seconds", NULL, 0.25);
	char *text = pal_metrics_render(m);
	assert_string_equal(text, "# HELP palisade_call_seconds Call duration.\n"
				  "# TYPE palisade_call_seconds histogram\n"
				  "palisade_call_seconds_bucket{le=\"0.01\"} 0\n"
				  "palisade_call_seconds_bucket{le=\"0.1\"} 0\n"
				  "palisade_call_seconds_bucket{le=\"1\"} 1\n"
				  "palisade_call_seconds_bucket{le=\"+Inf\"} 1\n"
				  "palisade_call_seconds_sum 0.25\n"
				  "palisade_call_seconds_count 1\n"
				  "palisade_call_seconds_bucket{host=\"a\",le=\"0.01\"} 2\n"
				  "palisade_call_seconds_bucket{host=\"a\",le=\"0.1\"} 2\n"
				  "palisade_call_seconds_bucket{host=\"a\",le=\"1\"} 3\n"
				  "palisade_call_seconds_bucket{host=\"a\",le=\"+Inf\"} 4\n"
				  "palisade_call_seconds_sum{host=\"a\"} 7.515\n"
				  "palisade_call_seconds_count{host=\"a\"} 4\n");
	free(text);
	assert_true(pal_metric_get(m, "palisade_call_seconds", "host=\"a\"") == 4);
	expect_no_log();
}

static void test_metrics_label_pair_escapes(void **state)
{
	char *l = pal_metric_label_pair("job", "a\"b\\c\nd");
	assert_string_equal(l, "job=\"a\\\"b\\\\c\\nd\"");
	assert_true(pal_metric_labels_valid(l));
	g_free(l);
	l = pal_metric_label_pair("host", "\xff");
	assert_true(pal_metric_labels_valid(l));
	g_free(l);
}

static void test_metrics_histogram_misuse_ignored(void **state)
{
	pal_metrics *m = *state;
	const double bad[] = { 1, 0.5 };
	pal_metric_declare_histogram(m, "h_bad", "x", bad, 2);
	expect_one_warning("metrics.bad_buckets", "h_bad");
	pal_metric_declare(m, "h_plain", PAL_METRIC_HISTOGRAM, "x");
	expect_one_warning("metrics.bad_buckets", "h_plain");
	pal_metric_declare_histogram(m, "h", "x", pal_metric_latency_bounds,
				     pal_metric_latency_nbounds);
	pal_metric_inc(m, "h", NULL, 1);
	expect_one_warning("metrics.histogram_update", "h");
	pal_metric_observe(m, "h", "le=\"1\"", 1);
	expect_one_warning("metrics.bad_labels", "h");
	pal_metric_observe(m, "h", NULL, NAN);
	expect_one_warning("metrics.nan_observation", "h");
	pal_metric_declare(m, "g", PAL_METRIC_GAUGE, "x");
	pal_metric_observe(m, "g", NULL, 1);
	expect_one_warning("metrics.not_histogram", "g");
	char *text = pal_metrics_render(m);
	assert_string_equal(text, "# HELP g x\n# TYPE g gauge\n# HELP h x\n# TYPE h histogram\n");
	free(text);
}

/* Run promtool on TEXT; returns its exit status, output into OUT. */
static int promtool_check(const char *text, char *out, size_t outlen)
{
	char path[] = "/tmp/palisade-metrics-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	char cmd[256];
	snprintf(cmd, sizeof cmd, "promtool check metrics < %s 2>&1", path);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	size_t n = fread(out, 1, outlen - 1, p);
	out[n] = '\0';
	int status = pclose(p);
	unlink(path);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_metrics_promtool_accepts_rendering(void **state)
{
	if (system("command -v promtool >/dev/null 2>&1") != 0) {
		print_message("promtool not installed (apt-get install prometheus): skipped\n");
		skip();
	}
	pal_metrics *m = *state;
	pal_metric_declare(m, "palisade_elections_total", PAL_METRIC_COUNTER,
			   "Shard elections by outcome.\nWon means this node became leader.");
	pal_metric_declare(m, "palisade_shard_epoch", PAL_METRIC_GAUGE,
			   "Epoch held for a shard, 0 when not leading (C:\\path).");
	pal_metric_declare(m, "palisade_lag_seconds", PAL_METRIC_GAUGE, "Lag.");
	pal_metric_inc(m, "palisade_elections_total", "shard=\"3\",outcome=\"won\"", 1);
	pal_metric_inc(m, "palisade_elections_total", "shard=\"3\",outcome=\"lost\"", 2);
	pal_metric_set(m, "palisade_shard_epoch", "shard=\"3\"", 4294967299.0);
	pal_metric_set(m, "palisade_lag_seconds", "job=\"a\\\"b\\\\c\\nd\"", 0.1);
	pal_metric_set(m, "palisade_lag_seconds", "job=\"inf\"", INFINITY);
	pal_metric_set(m, "palisade_lag_seconds", "job=\"nan\"", NAN);
	pal_metric_set(m, "palisade_lag_seconds", "job=\"tiny\"", 1.5e-300);
	pal_metric_declare_histogram(m, "palisade_fire_lateness_seconds", "Lateness.",
				     pal_metric_latency_bounds, pal_metric_latency_nbounds);
	pal_metric_observe(m, "palisade_fire_lateness_seconds", "group=\"g\"", 0.003);
	pal_metric_observe(m, "palisade_fire_lateness_seconds", NULL, 100);
	char *text = pal_metrics_render(m);
	char out[4096];
	int rc = promtool_check(text, out, sizeof out);
	if (rc != 0 || out[0] != '\0')
		fail_msg("promtool check metrics: exit %d: %s\n--- input ---\n%s", rc, out, text);
	free(text);

	/* and the check can fail: promtool must reject a lint problem */
	rc = promtool_check("# HELP x_total x\n# TYPE x_total gauge\nx_total 1\n", out, sizeof out);
	assert_int_not_equal(rc, 0);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
	    T(test_metrics_render_exact_text),
	    T(test_metrics_empty_registry_renders_empty_text),
	    cmocka_unit_test(test_metrics_value_spelling),
	    cmocka_unit_test(test_metrics_values_read_back_exactly),
	    cmocka_unit_test(test_metrics_name_validation),
	    cmocka_unit_test(test_metrics_label_validation),
	    T(test_metrics_unknown_family_ignored_and_logged_once),
	    T(test_metrics_counter_misuse_ignored),
	    T(test_metrics_bad_labels_ignored),
	    T(test_metrics_declare_rules),
	    T(test_metrics_null_registry_is_noop),
	    T(test_metrics_concurrent_updates_are_exact),
	    T(test_metrics_histogram_renders_cumulative_buckets),
	    T(test_metrics_histogram_misuse_ignored),
	    cmocka_unit_test(test_metrics_label_pair_escapes),
	    T(test_metrics_promtool_accepts_rendering),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
