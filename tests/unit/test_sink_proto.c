/*
 * test_sink_proto.c - the pure helpers of palisade-sink (src/sink/proto.c):
 * fencing-token and integer parsing, the Idempotency-Key limit (and that it
 * admits every key a valid job can expand to), strict percent-decoding of
 * the status URL, the payload digest and the chunk bodies.
 *
 * The sink's objects are not part of libpalisade.a (the Makefile links them
 * into bin/palisade-sink only), so this test compiles proto.c directly.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>
#include "palisade/jobfile.h"
#include "palisade/template.h"
#include "../../src/sink/proto.c"

static void test_sink_token_accepts_decimal_up_to_bigint(void **state)
{
	(void)state;
	int64_t v = -1;
	assert_int_equal(pal__sink_parse_token("0", &v), PAL_OK);
	assert_int_equal(v, 0);
	assert_int_equal(pal__sink_parse_token("42", &v), PAL_OK);
	assert_int_equal(v, 42);
	assert_int_equal(pal__sink_parse_token("007", &v), PAL_OK);
	assert_int_equal(v, 7);
	assert_int_equal(pal__sink_parse_token("9223372036854775807", &v), PAL_OK);
	assert_true(v == INT64_MAX);
}

static void test_sink_token_rejects_garbage_and_overflow(void **state)
{
	(void)state;
	int64_t v = 5;
	const char *bad[] = {"", "-1", "+1", " 1", "1 ", "1a", "0x10", "1.0", "1e3", "١"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(pal__sink_parse_token(bad[i], &v), PAL_EINVAL);
	assert_int_equal(pal__sink_parse_token(NULL, &v), PAL_EINVAL);
	/* valid u64, but above what a PostgreSQL sequence can hand out */
	assert_int_equal(pal__sink_parse_token("9223372036854775808", &v), PAL_ETOOBIG);
	assert_int_equal(pal__sink_parse_token("18446744073709551615", &v), PAL_ETOOBIG);
	/* beyond u64, and 21 digits */
	assert_int_equal(pal__sink_parse_token("18446744073709551616", &v), PAL_ETOOBIG);
	assert_int_equal(pal__sink_parse_token("000000000000000000001", &v), PAL_EINVAL);
	assert_int_equal(v, 5); /* untouched on failure */
}

static void test_sink_int_bounds(void **state)
{
	(void)state;
	int64_t v;
	assert_int_equal(pal__sink_parse_int("3", 1, 3, &v), PAL_OK);
	assert_int_equal(v, 3);
	assert_int_equal(pal__sink_parse_int("4", 1, 3, &v), PAL_EINVAL);
	assert_int_equal(pal__sink_parse_int("0", 1, 3, &v), PAL_EINVAL);
	assert_int_equal(pal__sink_parse_int("-1", 0, 3, &v), PAL_EINVAL);
	assert_int_equal(pal__sink_parse_int("-1", -5, 3, &v), PAL_OK);
	assert_int_equal(v, -1);
	assert_int_equal(pal__sink_parse_int("-", -5, 3, &v), PAL_EINVAL);
	assert_int_equal(pal__sink_parse_int("99999999999999999999", 0, INT64_MAX, &v), PAL_EINVAL);
	assert_int_equal(pal__sink_parse_int("9223372036854775807", 0, INT64_MAX, &v), PAL_OK);
}

static void test_sink_checkpoint_bare_or_json_string(void **state)
{
	(void)state;
	int64_t v;
	assert_int_equal(pal__sink_parse_checkpoint("2", 2, &v), PAL_OK);
	assert_int_equal(v, 2);
	/* the executor sends a string checkpoint as its JSON text */
	assert_int_equal(pal__sink_parse_checkpoint("\"2\"", 2, &v), PAL_OK);
	assert_int_equal(v, 2);
	assert_int_equal(pal__sink_parse_checkpoint("\"3\"", 2, &v), PAL_EINVAL);
	assert_int_equal(pal__sink_parse_checkpoint("\"\"", 2, &v), PAL_EINVAL);
	assert_int_equal(pal__sink_parse_checkpoint("\"", 2, &v), PAL_EINVAL);
	assert_int_equal(pal__sink_parse_checkpoint("\"2", 2, &v), PAL_EINVAL);
	assert_int_equal(pal__sink_parse_checkpoint("{\"c\":2}", 2, &v), PAL_EINVAL);
	assert_int_equal(pal__sink_parse_checkpoint("-1", 2, &v), PAL_EINVAL);
}

static void test_sink_pct_decode_strict(void **state)
{
	(void)state;
	char out[32];
	assert_int_equal(pal__sink_pct_decode("job%2Fa%20b%3F%23%25", out, sizeof out), PAL_OK);
	assert_string_equal(out, "job/a b?#%");
	assert_int_equal(pal__sink_pct_decode("a+b", out, sizeof out), PAL_OK);
	assert_string_equal(out, "a+b"); /* '+' is not a space in a path */
	assert_int_equal(pal__sink_pct_decode("caf%C3%A9", out, sizeof out), PAL_OK);
	assert_string_equal(out, "caf\xc3\xa9");
	assert_int_equal(pal__sink_pct_decode("", out, sizeof out), PAL_OK);
	assert_string_equal(out, "");

	assert_int_equal(pal__sink_pct_decode("%zz", out, sizeof out), PAL_EINVAL);
	assert_int_equal(pal__sink_pct_decode("%4", out, sizeof out), PAL_EINVAL);
	assert_int_equal(pal__sink_pct_decode("abc%", out, sizeof out), PAL_EINVAL);
	assert_int_equal(pal__sink_pct_decode("a%00b", out, sizeof out), PAL_EINVAL);
	assert_int_equal(pal__sink_pct_decode("%C3%28", out, sizeof out),
			 PAL_EINVAL); /* bad UTF-8 */
}

static void test_sink_pct_decode_length_limit(void **state)
{
	(void)state;
	char out[4];
	assert_int_equal(pal__sink_pct_decode("abc", out, sizeof out), PAL_OK);
	assert_int_equal(pal__sink_pct_decode("abcd", out, sizeof out), PAL_ETOOBIG);
	assert_int_equal(pal__sink_pct_decode("%41%42%43", out, sizeof out), PAL_OK);
	assert_string_equal(out, "ABC");
	assert_int_equal(pal__sink_pct_decode("%41%42%43%44", out, sizeof out), PAL_ETOOBIG);
}

static void test_sink_pct_encode_round_trips(void **state)
{
	(void)state;
	const char *keys[] = {"plain-key_1.~", "job/2026-11-30T08:00:00Z/0",
			      "a b?#%&+=", "caf\xc3\xa9"};
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		char *enc = pal__sink_pct_encode(keys[i]);
		assert_non_null(enc);
		assert_null(strpbrk(enc, "/?# &+=:"));
		char dec[64];
		assert_int_equal(pal__sink_pct_decode(enc, dec, sizeof dec), PAL_OK);
		assert_string_equal(dec, keys[i]);
		free(enc);
	}
}

static void test_sink_digest_covers_method_target_and_body(void **state)
{
	(void)state;
	char a[65], b[65];
	pal__sink_digest("POST", "/effects/x", "", 0, a);
	/* sha256("POST\n/effects/x\n") */
	assert_string_equal(a, "20fade0d92f7e9064992eb380c559249083d9b85d23523ce1044633f0596b683");
	pal__sink_digest("POST", "/effects/x", "body", 4, a);
	pal__sink_digest("POST", "/effects/x", "body", 4, b);
	assert_string_equal(a, b);
	assert_int_equal(strlen(a), 64);
	pal__sink_digest("PUT", "/effects/x", "body", 4, b);
	assert_string_not_equal(a, b);
	pal__sink_digest("POST", "/effects/y", "body", 4, b);
	assert_string_not_equal(a, b);
	pal__sink_digest("POST", "/effects/x?a=1", "body", 4, b);
	assert_string_not_equal(a, b);
	pal__sink_digest("POST", "/effects/x", "bodY", 4, b);
	assert_string_not_equal(a, b);
	/* bodies with NUL bytes are hashed by length, not as strings */
	pal__sink_digest("POST", "/effects/x", "a\0b", 3, a);
	pal__sink_digest("POST", "/effects/x", "a\0c", 3, b);
	assert_string_not_equal(a, b);
}

static void test_sink_chunk_body_has_more_until_last(void **state)
{
	(void)state;
	char *s = pal__sink_body_chunk("k", 1, 3);
	assert_non_null(s);
	json_t *j = json_loads(s, 0, NULL);
	assert_non_null(j);
	assert_true(json_is_true(json_object_get(j, "has_more")));
	assert_string_equal(json_string_value(json_object_get(j, "checkpoint")), "1");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "progress"), "of")),
			 3);
	assert_int_equal(json_integer_value(json_object_get(j, "next_delay_s")), 0);
	assert_null(json_object_get(j, "applied"));
	json_decref(j);
	free(s);

	s = pal__sink_body_chunk("k", 3, 3);
	j = json_loads(s, 0, NULL);
	assert_true(json_is_false(json_object_get(j, "has_more")));
	assert_true(json_is_true(json_object_get(j, "applied")));
	json_decref(j);
	/* a replay regenerates exactly the same answer */
	char *again = pal__sink_body_chunk("k", 3, 3);
	assert_string_equal(s, again);
	free(again);
	free(s);
}

static void test_sink_bodies_refuse_invalid_utf8(void **state)
{
	(void)state;
	assert_null(pal__sink_body_applied("\xff", 1));
	char *s = pal__sink_body_applied("k", 9223372036854775807LL);
	assert_string_equal(s, "{\"applied\":true,\"key\":\"k\",\"fence\":9223372036854775807}");
	free(s);
	s = pal__sink_body_error("bad_request", "why");
	assert_string_equal(s, "{\"error\":\"bad_request\",\"detail\":\"why\"}");
	free(s);
}

/* A string of N copies of CH (caller frees). */
static char *repeat(char ch, size_t n)
{
	char *s = malloc(n + 1);
	assert_non_null(s);
	memset(s, ch, n);
	s[n] = '\0';
	return s;
}

static void test_sink_key_limit_is_the_protocol_limit(void **state)
{
	(void)state;
	assert_int_equal(SINK_KEY_MAX, 1000); /* docs/protocol.md states it */
	char *k = repeat('k', SINK_KEY_MAX);
	assert_null(pal__sink_check_key(k));
	free(k);
	k = repeat('k', SINK_KEY_MAX + 1);
	const char *why = pal__sink_check_key(k);
	assert_non_null(why);
	assert_string_equal(why, "Idempotency-Key is longer than 1000 bytes");
	free(k);
	/* bytes, not characters: 500 two-byte characters are exactly the limit */
	GString *g = g_string_new(NULL);
	for (int i = 0; i < SINK_KEY_MAX / 2; i++)
		g_string_append(g, "\xc3\xa9");
	assert_null(pal__sink_check_key(g->str));
	g_string_append_c(g, 'x');
	assert_non_null(pal__sink_check_key(g->str));
	g_string_free(g, TRUE);
	assert_non_null(pal__sink_check_key(NULL));
	assert_non_null(pal__sink_check_key(""));
	assert_non_null(pal__sink_check_key("\xff"));

	/* the status URL: a key at the limit, percent-encoded, decodes into the
	 * query's buffer; one byte more does not */
	char out[SINK_KEY_MAX + 1];
	k = repeat('/', SINK_KEY_MAX);
	char *enc = pal__sink_pct_encode(k);
	assert_int_equal(strlen(enc), 3 * SINK_KEY_MAX);
	assert_int_equal(pal__sink_pct_decode(enc, out, sizeof out), PAL_OK);
	assert_string_equal(out, k);
	free(enc);
	free(k);
	k = repeat('/', SINK_KEY_MAX + 1);
	enc = pal__sink_pct_encode(k);
	assert_int_equal(pal__sink_pct_decode(enc, out, sizeof out), PAL_ETOOBIG);
	free(enc);
	free(k);
}

/* Load one job with id ID and idempotency-key template TPL (1024 partitions,
 * so {partition} can reach 4 digits).  Returns the loader's result; on
 * success *KEY receives the key the executor renders from the template for a
 * manual run with every placeholder and the request id at their longest
 * (caller frees), and DIAG the first diagnostic otherwise. */
static int load_and_render_longest(const char *id, const char *tpl, char **key, char *diag,
				   size_t diaglen)
{
	char *yaml = g_strdup_printf("jobs:\n"
				     "  - id: %s\n"
				     "    schedule: {cron: \"* * * * *\"}\n"
				     "    partitions: 1024\n"
				     "    idempotency_key: \"%s\"\n"
				     "    target: {url: \"http://127.0.0.1:8089/x\"}\n",
				     id, tpl);
	pal_jobset set = {0};
	pal_diags diags = {0};
	int rc = pal_jobfile_load_buffer("t.yaml", yaml, strlen(yaml), &set, &diags);
	g_free(yaml);
	*key = NULL;
	snprintf(diag, diaglen, "%s", diags.n ? diags.v[0].msg : "");
	if (rc == PAL_OK) {
		assert_int_equal(set.n, 1);
		char *rid = repeat('r', 128); /* --request-id: at most 128 characters */
		pal_tpl_vars v = {.job = id,
				  .scheduled_at = 4102444799, /* 2099-12-31T23:59:59Z */
				  .scheduled_date = "2099-12-31",
				  .partition = 1023,
				  .trigger = INT64_MAX,
				  .request_id = rid};
		char err[256];
		assert_int_equal(
		    pal_tpl_render_key(set.jobs[0].idempotency_key, &v, key, err, sizeof err),
		    PAL_OK);
		free(rid);
	}
	pal_jobset_free(&set);
	pal_diags_free(&diags);
	return rc;
}

/* Template PH followed by filler that brings its longest key (PH's longest
 * expansion is LONGEST bytes for the 128-byte job id ID) to exactly the
 * limit: the job loads and its longest key is accepted by the sink; one byte
 * more of filler, and the job is refused when it is loaded, not by the
 * service when its first trigger runs.  The refusal's message into DIAG. */
static void assert_limit_exact(const char *id, const char *ph, size_t longest, char *diag,
			       size_t diaglen)
{
	char *fill = repeat('f', SINK_KEY_MAX - longest);
	char *tpl = g_strconcat(ph, fill, NULL);
	char *key;
	assert_int_equal(load_and_render_longest(id, tpl, &key, diag, diaglen), PAL_OK);
	assert_int_equal(strlen(key), SINK_KEY_MAX);
	assert_null(pal__sink_check_key(key));
	free(key);
	g_free(tpl);

	tpl = g_strconcat(ph, fill, "f", NULL);
	assert_int_equal(load_and_render_longest(id, tpl, &key, diag, diaglen), PAL_EINVAL);
	assert_null(key);
	assert_non_null(strstr(diag, "expands to up to 1001 bytes, more than the 1000"));
	g_free(tpl);
	free(fill);
}

static void test_sink_accepts_every_key_a_valid_job_can_render(void **state)
{
	(void)state;
	/* the longest job id, every placeholder once, filler up to the limit */
	char *id = repeat('j', 128);
	const char *ph =
	    "{job}/{scheduled_at}/{scheduled_date}/{partition}/{trigger}/{request_id}/";
	size_t longest = 128 + 20 + 10 + 4 + 19 + 128 + 6;
	char *key, diag[1024];
	assert_limit_exact(id, ph, longest, diag, sizeof diag);
	/* a short id leaves room: {job} counts as this job's id */
	char *fill = repeat('f', SINK_KEY_MAX - longest + 1);
	char *tpl = g_strconcat(ph, fill, NULL);
	assert_int_equal(load_and_render_longest("short.id", tpl, &key, diag, sizeof diag), PAL_OK);
	assert_true(strlen(key) < SINK_KEY_MAX);
	assert_null(pal__sink_check_key(key));
	free(key);
	g_free(tpl);
	free(fill);
	free(id);
}

static void test_sink_accepts_every_manual_key_a_valid_job_can_render(void **state)
{
	(void)state;
	/* without {request_id}, a manual run's or backfill's key ends in "/" and
	 * its request id (up to 128 characters): the loader counts those 129 */
	char *id = repeat('j', 128);
	const char *ph = "{job}/{scheduled_at}/{scheduled_date}/{partition}/{trigger}/";
	char diag[1024];
	assert_limit_exact(id, ph, 128 + 20 + 10 + 4 + 19 + 5 + 1 + 128, diag, sizeof diag);
	assert_non_null(strstr(diag, "\"/<request id>\" of a manual run's key 129"));
	free(id);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sink_token_accepts_decimal_up_to_bigint),
	    cmocka_unit_test(test_sink_token_rejects_garbage_and_overflow),
	    cmocka_unit_test(test_sink_int_bounds),
	    cmocka_unit_test(test_sink_checkpoint_bare_or_json_string),
	    cmocka_unit_test(test_sink_pct_decode_strict),
	    cmocka_unit_test(test_sink_pct_decode_length_limit),
	    cmocka_unit_test(test_sink_pct_encode_round_trips),
	    cmocka_unit_test(test_sink_digest_covers_method_target_and_body),
	    cmocka_unit_test(test_sink_chunk_body_has_more_until_last),
	    cmocka_unit_test(test_sink_bodies_refuse_invalid_utf8),
	    cmocka_unit_test(test_sink_key_limit_is_the_protocol_limit),
	    cmocka_unit_test(test_sink_accepts_every_key_a_valid_job_can_render),
	    cmocka_unit_test(test_sink_accepts_every_manual_key_a_valid_job_can_render),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
