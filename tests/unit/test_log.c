/*
 * test_log.c - the structured logger: line format, levels, bad formats,
 * and that concurrent lines never interleave.  Output is captured through a
 * pipe given to pal_log_set_fd() and parsed back with jansson.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <cmocka.h>
#include <jansson.h>
#include "palisade/log.h"

static int pipe_fd[2];

static int setup(void **state)
{
	if (pipe(pipe_fd) != 0)
		return -1;
	fcntl(pipe_fd[0], F_SETFL, O_NONBLOCK);
	/* room for the long-line test, which writes before it reads */
	if (fcntl(pipe_fd[0], F_SETPIPE_SZ, 1 << 18) < (1 << 18))
		return -1;
	pal_log_init("n1", PAL_LOG_INFO);
	pal_log_set_fd(pipe_fd[1]);
	return 0;
}

static int teardown(void **state)
{
	pal_log_set_fd(1);
	close(pipe_fd[0]);
	close(pipe_fd[1]);
	return 0;
}

/* Everything currently in the pipe (waits up to 1 s for the first byte);
 * caller frees. */
static char *drain(void)
{
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);
	struct pollfd p = {.fd = pipe_fd[0], .events = POLLIN};
	if (poll(&p, 1, 1000) > 0) {
		for (;;) {
			if (len + 4096 > cap)
				buf = realloc(buf, cap *= 2);
			ssize_t n = read(pipe_fd[0], buf + len, cap - len - 1);
			if (n <= 0)
				break;
			len += (size_t)n;
		}
	}
	buf[len] = '\0';
	return buf;
}

/* Exactly one line in the pipe, parsed; fails the test otherwise. */
static json_t *one_line(void)
{
	char *text = drain();
	size_t len = strlen(text);
	assert_true(len > 0);
	assert_int_equal(text[len - 1], '\n');
	assert_ptr_equal(strchr(text, '\n'), text + len - 1);
	json_error_t jerr;
	json_t *obj = json_loads(text, 0, &jerr);
	if (obj == NULL)
		fail_msg("line does not parse: %s: %s", jerr.text, text);
	assert_true(json_is_object(obj));
	free(text);
	return obj;
}

static const char *str(const json_t *obj, const char *key)
{
	const char *s = json_string_value(json_object_get(obj, key));
	if (s == NULL)
		fail_msg("no string field \"%s\"", key);
	return s;
}

static void test_log_line_has_standard_keys_first(void **state)
{
	pal_log(PAL_LOG_INFO, "election.won", "{s:i, s:I}", "shard", 3, "epoch",
		(json_int_t)4294967299LL);
	json_t *obj = one_line();
	static const char *const order[] = {"ts", "level", "node", "event", "shard", "epoch"};
	size_t i = 0;
	const char *key;
	json_t *v;
	json_object_foreach(obj, key, v)
	{
		assert_true(i < 6);
		assert_string_equal(key, order[i]);
		i++;
	}
	assert_int_equal(i, 6);
	assert_string_equal(str(obj, "level"), "info");
	assert_string_equal(str(obj, "node"), "n1");
	assert_string_equal(str(obj, "event"), "election.won");
	assert_int_equal(json_integer_value(json_object_get(obj, "shard")), 3);
	assert_int_equal(json_integer_value(json_object_get(obj, "epoch")), 4294967299LL);
	json_decref(obj);
}

static void test_log_ts_is_rfc3339_utc_millis_and_now(void **state)
{
	/* The logger reads CLOCK_REALTIME; time() reads the coarse clock, which
	 * lags it by up to a tick and so can still name the previous second. */
	struct timespec b, a;
	clock_gettime(CLOCK_REALTIME, &b);
	pal_log(PAL_LOG_WARN, "x", NULL);
	clock_gettime(CLOCK_REALTIME, &a);
	time_t before = b.tv_sec, after = a.tv_sec;
	json_t *obj = one_line();
	const char *ts = str(obj, "ts");
	regex_t re;
	assert_int_equal(
	    regcomp(&re, "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z$",
		    REG_EXTENDED | REG_NOSUB),
	    0);
	if (regexec(&re, ts, 0, NULL, 0) != 0)
		fail_msg("ts \"%s\" is not RFC 3339 UTC with milliseconds", ts);
	regfree(&re);
	struct tm tm = {0};
	assert_non_null(strptime(ts, "%Y-%m-%dT%H:%M:%S", &tm));
	time_t t = timegm(&tm);
	assert_true(t >= before && t <= after);
	assert_string_equal(str(obj, "level"), "warn");
	assert_int_equal(json_object_size(obj), 4);
	json_decref(obj);
}

static void test_log_below_min_level_is_dropped(void **state)
{
	pal_log_set_level(PAL_LOG_WARN);
	assert_false(pal_log_enabled(PAL_LOG_INFO));
	assert_true(pal_log_enabled(PAL_LOG_ERROR));
	pal_log(PAL_LOG_INFO, "quiet", "{s:i}", "n", 1);
	pal_log(PAL_LOG_DEBUG, "quieter", NULL);
	pal_log(PAL_LOG_ERROR, "loud", NULL);
	json_t *obj = one_line(); /* only the error line */
	assert_string_equal(str(obj, "event"), "loud");
	assert_string_equal(str(obj, "level"), "error");
	json_decref(obj);
	pal_log_set_level(PAL_LOG_INFO);
}

static void check_log_error(const char *event)
{
	json_t *obj = one_line();
	assert_string_equal(str(obj, "event"), event);
	assert_string_equal(str(obj, "node"), "n1");
	assert_true(strlen(str(obj, "log_error")) > 0);
	json_decref(obj);
}

static void test_log_bad_format_still_logs_event_with_log_error(void **state)
{
	pal_log(PAL_LOG_INFO, "unterminated", "{s:i", "a", 1);
	check_log_error("unterminated");
	pal_log(PAL_LOG_INFO, "not.object", "[i]", 7);
	check_log_error("not.object");
	pal_log(PAL_LOG_INFO, "null.string", "{s:s}", "who", (const char *)NULL);
	check_log_error("null.string");
	pal_log(PAL_LOG_INFO, "bad.utf8", "{s:s}", "who", "\xff\xfe");
	check_log_error("bad.utf8");
	pal_log(PAL_LOG_INFO, "bad.char", "{s:Q}", "q", 1);
	check_log_error("bad.char");
}

static void test_log_fields_cannot_forge_standard_keys(void **state)
{
	pal_log(PAL_LOG_INFO, "forge", "{s:s, s:s}", "level", "error", "node", "n9");
	json_t *obj = one_line();
	assert_string_equal(str(obj, "level"), "info");
	assert_string_equal(str(obj, "node"), "n1");
	assert_string_equal(str(obj, "field_level"), "error");
	assert_string_equal(str(obj, "field_node"), "n9");
	json_decref(obj);
}

static void test_log_escapes_strings(void **state)
{
	pal_log(PAL_LOG_INFO, "esc", "{s:s}", "msg", "a \"quoted\"\nline\twith \\ and \x01");
	json_t *obj = one_line();
	assert_string_equal(str(obj, "msg"), "a \"quoted\"\nline\twith \\ and \x01");
	json_decref(obj);
}

static void test_log_long_line_is_one_line(void **state)
{
	size_t n = 200000; /* well past the logger's stack buffer and PIPE_BUF */
	char *big = malloc(n + 1);
	memset(big, 'x', n);
	big[n] = '\0';
	pal_log(PAL_LOG_INFO, "big", "{s:s}", "pad", big);
	json_t *obj = one_line();
	assert_int_equal(strlen(str(obj, "pad")), n);
	json_decref(obj);
	free(big);
}

static void test_log_filtered_line_releases_stolen_reference(void **state)
{
	json_t *val = json_object();
	json_incref(val); /* one for us, one for the "o" below */
	pal_log(PAL_LOG_DEBUG, "dropped", "{s:o}", "obj", val);
	assert_int_equal(val->refcount, 1);
	json_incref(val);
	pal_log(PAL_LOG_INFO, "kept", "{s:o}", "obj", val);
	assert_int_equal(val->refcount, 1);
	json_decref(val);
	json_t *obj = one_line();
	assert_string_equal(str(obj, "event"), "kept");
	json_decref(obj);
}

static void test_log_node_unset_is_null(void **state)
{
	pal_log_init(NULL, PAL_LOG_INFO);
	pal_log(PAL_LOG_INFO, "anon", NULL);
	json_t *obj = one_line();
	assert_true(json_is_null(json_object_get(obj, "node")));
	json_decref(obj);
	pal_log_init("n1", PAL_LOG_INFO);
}

static void test_log_level_parse_and_names(void **state)
{
	assert_int_equal(pal_log_level_parse("debug"), PAL_LOG_DEBUG);
	assert_int_equal(pal_log_level_parse("info"), PAL_LOG_INFO);
	assert_int_equal(pal_log_level_parse("warn"), PAL_LOG_WARN);
	assert_int_equal(pal_log_level_parse("WARNING"), PAL_LOG_WARN);
	assert_int_equal(pal_log_level_parse("Error"), PAL_LOG_ERROR);
	assert_int_equal(pal_log_level_parse("fatal"), -1);
	assert_int_equal(pal_log_level_parse(""), -1);
	assert_int_equal(pal_log_level_parse("info "), -1);
	assert_int_equal(pal_log_level_parse(NULL), -1);
	assert_string_equal(pal_log_level_name(PAL_LOG_DEBUG), "debug");
	assert_string_equal(pal_log_level_name(PAL_LOG_ERROR), "error");
	assert_string_equal(pal_log_level_name((pal_log_level)42), "unknown");
}

/* ---- concurrency ------------------------------------------------------ */

#define THREADS 8
#define LINES 3000

typedef struct reader {
	int fd;
	char *buf;
	size_t len, cap;
} reader;

static void *reader_main(void *p)
{
	reader *r = p;
	struct pollfd pfd = {.fd = r->fd, .events = POLLIN};
	for (;;) {
		if (r->len + 65536 > r->cap)
			r->buf = realloc(r->buf, r->cap = r->cap * 2 + 65536);
		ssize_t n = read(r->fd, r->buf + r->len, r->cap - r->len - 1);
		if (n > 0) {
			r->len += (size_t)n;
		} else if (n == 0) {
			break;
		} else if (errno == EAGAIN) {
			poll(&pfd, 1, 1000);
		} else if (errno != EINTR) {
			break;
		}
	}
	r->buf[r->len] = '\0';
	return NULL;
}

static void *writer_main(void *p)
{
	int id = (int)(intptr_t)p;
	char pad[6001];
	memset(pad, 'a' + id, sizeof pad - 1);
	pad[sizeof pad - 1] = '\0';
	for (int i = 0; i < LINES; i++) {
		/* every 50th line is longer than PIPE_BUF (4096) */
		pal_log(PAL_LOG_INFO, "stress", "{s:i, s:i, s:s}", "thread", id, "seq", i, "pad",
			i % 50 == 0 ? pad : "x");
	}
	return NULL;
}

static void test_log_concurrent_lines_never_interleave(void **state)
{
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	fcntl(fds[0], F_SETFL, O_NONBLOCK);
	pal_log_set_fd(fds[1]);

	reader r = {.fd = fds[0]};
	pthread_t rt, wt[THREADS];
	assert_int_equal(pthread_create(&rt, NULL, reader_main, &r), 0);
	for (int t = 0; t < THREADS; t++)
		assert_int_equal(pthread_create(&wt[t], NULL, writer_main, (void *)(intptr_t)t), 0);
	for (int t = 0; t < THREADS; t++)
		pthread_join(wt[t], NULL);
	pal_log_set_fd(pipe_fd[1]);
	close(fds[1]);
	pthread_join(rt, NULL);
	close(fds[0]);

	int next[THREADS] = {0};
	int lines = 0;
	char *save = NULL;
	assert_true(r.len > 0 && r.buf[r.len - 1] == '\n');
	for (char *line = strtok_r(r.buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		json_error_t jerr;
		json_t *obj = json_loads(line, 0, &jerr);
		if (obj == NULL)
			fail_msg("line %d does not parse (%s): %.120s", lines, jerr.text, line);
		int id = (int)json_integer_value(json_object_get(obj, "thread"));
		int seq = (int)json_integer_value(json_object_get(obj, "seq"));
		assert_true(id >= 0 && id < THREADS);
		assert_int_equal(seq, next[id]); /* per-thread order kept, nothing lost */
		next[id]++;
		const char *pad = json_string_value(json_object_get(obj, "pad"));
		assert_non_null(pad);
		assert_int_equal(strlen(pad), seq % 50 == 0 ? 6000 : 1);
		json_decref(obj);
		lines++;
	}
	assert_int_equal(lines, THREADS * LINES);
	free(r.buf);
}

static void test_log_text_format_is_one_readable_line(void **state)
{
	pal_log_set_format(PAL_LOG_TEXT);
	pal_log(PAL_LOG_WARN, "zk.client", "{s:s, s:i}", "message", "a b=\"c\"", "n", 3);
	pal_log_set_format(PAL_LOG_JSON);
	char *text = drain();
	/* "<ts> warn  n1 zk.client message=\"a b=\\\"c\\\"\" n=3\n" */
	char *sp = strchr(text, ' ');
	assert_non_null(sp);
	assert_true(sp - text == 24 && text[23] == 'Z');
	assert_string_equal(sp + 1, "warn  n1 zk.client message=\"a b=\\\"c\\\"\" n=3\n");
	free(text);
}

static void test_log_journal_prefix_only_when_journal_stream_is_ours(void **state)
{
	struct stat sb;
	assert_int_equal(fstat(pipe_fd[1], &sb), 0);
	char js[64];
	snprintf(js, sizeof js, "%llu:%llu", (unsigned long long)sb.st_dev,
		 (unsigned long long)sb.st_ino + 1);
	setenv("JOURNAL_STREAM", js, 1);
	assert_false(pal_log_journal_detect()); /* another stream: no prefix */
	snprintf(js, sizeof js, "%llu:%llu", (unsigned long long)sb.st_dev,
		 (unsigned long long)sb.st_ino);
	setenv("JOURNAL_STREAM", js, 1);
	assert_true(pal_log_journal_detect());
	pal_log(PAL_LOG_ERROR, "a", NULL);
	pal_log(PAL_LOG_WARN, "b", NULL);
	pal_log(PAL_LOG_INFO, "c", NULL);
	unsetenv("JOURNAL_STREAM");
	assert_false(pal_log_journal_detect());
	char *text = drain();
	char *l2 = strchr(text, '\n') + 1, *l3 = strchr(l2, '\n') + 1;
	assert_true(strncmp(text, "<3>{", 4) == 0);
	assert_true(strncmp(l2, "<4>{", 4) == 0);
	assert_true(strncmp(l3, "<6>{", 4) == 0);
	free(text);
}

static void test_log_limit_drops_a_burst_and_counts_it(void **state)
{
	pal_log_limit("noisy.event", 3, 60000);
	for (int i = 0; i < 10; i++)
		pal_log(PAL_LOG_WARN, "noisy.event", "{s:i}", "i", i);
	pal_log(PAL_LOG_INFO, "other.event", NULL); /* not limited */
	char *text = drain();
	int lines = 0;
	for (char *p = text; (p = strchr(p, '\n')); p++)
		lines++;
	assert_int_equal(lines, 4);
	assert_non_null(strstr(text, "\"i\":2"));
	assert_null(strstr(text, "\"i\":3"));
	assert_null(strstr(text, "suppressed")); /* reported when the window turns */
	free(text);

	pal_log_limit("noisy.two", 1, 50);
	for (int i = 0; i < 3; i++)
		pal_log(PAL_LOG_WARN, "noisy.two", NULL);
	free(drain());
	usleep(60000); /* the window has turned: the next line says what was dropped */
	pal_log(PAL_LOG_WARN, "noisy.two", NULL);
	json_t *o = one_line();
	assert_int_equal(json_integer_value(json_object_get(o, "suppressed")), 2);
	json_decref(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_log_line_has_standard_keys_first, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_log_ts_is_rfc3339_utc_millis_and_now, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_log_below_min_level_is_dropped, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_log_bad_format_still_logs_event_with_log_error,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_log_fields_cannot_forge_standard_keys, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_log_escapes_strings, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_log_long_line_is_one_line, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_log_filtered_line_releases_stolen_reference, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_log_node_unset_is_null, setup, teardown),
	    cmocka_unit_test(test_log_level_parse_and_names),
	    cmocka_unit_test_setup_teardown(test_log_concurrent_lines_never_interleave, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_log_text_format_is_one_readable_line, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_log_journal_prefix_only_when_journal_stream_is_ours,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_log_limit_drops_a_burst_and_counts_it, setup,
					    teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
