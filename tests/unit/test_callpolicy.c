/*
 * test_callpolicy.c - classification of responses (docs/protocol.md), retry
 * budgets with jitter, and the per-host circuit breaker.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <curl/curl.h>
#include <glib.h>
#include "palisade/callpolicy.h"
#include "palisade/url.h"

static pal_class classify(int curl, long status, bool sent, bool stale, const char *body)
{
	pal_http_result r = { .curl_code = curl, .status = status, .request_sent = sent,
			      .stale_header = stale, .retry_after_ms = -1, .body = body,
			      .body_len = body ? strlen(body) : 0 };
	pal_class c;
	pal_classify(&r, &c);
	return c;
}

static void test_classify_success_and_replay(void **st)
{
	assert_int_equal(classify(0, 200, true, false, "{}").outcome, PAL_OUT_SUCCESS);
	assert_int_equal(classify(0, 201, true, false, "not json").outcome, PAL_OUT_SUCCESS);
}

static void test_classify_has_more_keeps_checkpoint(void **st)
{
	pal_class c = classify(0, 200, true, false,
			       "{\"has_more\": true, \"checkpoint\": {\"page\": 3}, \"next_delay_s\": 1.5}");
	assert_int_equal(c.outcome, PAL_OUT_MORE);
	assert_string_equal(c.checkpoint, "{\"page\":3}");
	assert_int_equal(c.next_delay_ms, 1500);
	free(c.checkpoint);
	c = classify(0, 200, true, false, "{\"has_more\": true}");
	assert_int_equal(c.outcome, PAL_OUT_PERMANENT);
	c = classify(0, 200, true, false, "{\"has_more\": false, \"checkpoint\": 9}");
	assert_int_equal(c.outcome, PAL_OUT_SUCCESS);
	/* The key spelt with an escape is the same key (bodies without the
	 * key's bytes are not parsed: this one must be). */
	c = classify(0, 200, true, false,
		     "{\"has\\u005fmore\": true, \"checkpoint\": {\"page\": 4}}");
	assert_int_equal(c.outcome, PAL_OUT_MORE);
	assert_string_equal(c.checkpoint, "{\"page\":4}");
	free(c.checkpoint);
	c = classify(0, 200, true, false, "{\"applied\": true, \"key\": \"a/b\"}");
	assert_int_equal(c.outcome, PAL_OUT_SUCCESS);
	assert_null(c.checkpoint);
}

static void test_classify_409_stale_versus_in_progress(void **st)
{
	assert_int_equal(classify(0, 409, true, true, NULL).outcome, PAL_OUT_STALE);
	pal_class c = classify(0, 409, true, false, NULL);
	assert_int_equal(c.outcome, PAL_OUT_RETRYABLE);
	assert_string_equal(c.error_class, "in_progress");
}

static void test_classify_permanent_and_retryable_statuses(void **st)
{
	assert_int_equal(classify(0, 422, true, false, NULL).outcome, PAL_OUT_PERMANENT);
	long perm[] = { 400, 401, 403, 404 };
	for (size_t i = 0; i < 4; i++)
		assert_int_equal(classify(0, perm[i], true, false, NULL).outcome, PAL_OUT_PERMANENT);
	long retry[] = { 408, 429, 500, 502, 503, 504 };
	for (size_t i = 0; i < 6; i++)
		assert_int_equal(classify(0, retry[i], true, false, NULL).outcome, PAL_OUT_RETRYABLE);
	pal_class c = classify(0, 302, true, false, NULL);
	assert_int_equal(c.outcome, PAL_OUT_PERMANENT);
	assert_string_equal(c.error_class, "redirect");
}

static void test_classify_before_send_is_retryable_after_send_unknown(void **st)
{
	assert_int_equal(classify(CURLE_COULDNT_CONNECT, 0, false, false, NULL).outcome,
			 PAL_OUT_RETRYABLE);
	assert_int_equal(classify(CURLE_OPERATION_TIMEDOUT, 0, false, false, NULL).outcome,
			 PAL_OUT_RETRYABLE);
	pal_class c = classify(CURLE_OPERATION_TIMEDOUT, 0, true, false, NULL);
	assert_int_equal(c.outcome, PAL_OUT_UNKNOWN);
	assert_string_equal(c.error_class, "timeout_after_send");
	assert_int_equal(classify(CURLE_RECV_ERROR, 0, true, false, NULL).outcome, PAL_OUT_UNKNOWN);
	assert_int_equal(classify(CURLE_GOT_NOTHING, 0, true, false, NULL).outcome, PAL_OUT_UNKNOWN);
	assert_int_equal(classify(CURLE_WEIRD_SERVER_REPLY, 0, true, false, NULL).outcome,
			 PAL_OUT_UNKNOWN);
}

static void test_classify_tls_is_permanent(void **st)
{
	pal_class c = classify(CURLE_PEER_FAILED_VERIFICATION, 0, false, false, NULL);
	assert_int_equal(c.outcome, PAL_OUT_PERMANENT);
	assert_string_equal(c.error_class, "tls");
}

static void test_classify_oversized_2xx_body_is_success(void **st)
{
	pal_http_result r = { .curl_code = CURLE_WRITE_ERROR, .status = 200, .request_sent = true,
			      .retry_after_ms = -1, .body = "xxxx", .body_len = 4, .body_truncated = true };
	pal_class c;
	pal_classify(&r, &c);
	assert_int_equal(c.outcome, PAL_OUT_SUCCESS);
}

static pal_retry_policy retry_spec(void)
{
	pal_retry_policy s = { 0 };
	s.max_attempts = 5;
	s.backoff_initial_ms = 1000;
	s.backoff_max_ms = 8000;
	s.backoff_multiplier = 2;
	s.jitter = PAL_JITTER_FULL;
	s.max_age_ms = 3600 * 1000;
	return s;
}

static void test_backoff_grows_and_caps(void **st)
{
	pal_retry_policy s = retry_spec();
	assert_int_equal(pal_backoff_ms(&s, 1), 1000);
	assert_int_equal(pal_backoff_ms(&s, 2), 2000);
	assert_int_equal(pal_backoff_ms(&s, 3), 4000);
	assert_int_equal(pal_backoff_ms(&s, 4), 8000);
	assert_int_equal(pal_backoff_ms(&s, 9), 8000);
}

static void test_full_jitter_stays_within_backoff(void **st)
{
	pal_retry_policy s = retry_spec();
	uint64_t rng = 42;
	int64_t lo = INT64_MAX, hi = 0;
	for (int i = 0; i < 2000; i++) {
		pal_retry_decision d = pal_retry_decide(&s, 3, 100000, 100000, -1, &rng);
		assert_true(d.retry);
		int64_t delay = d.at_ms - 100000;
		assert_true(delay >= 0 && delay <= 4000);
		assert_int_equal(d.delay_ms, delay); /* the commit adds it to the database's now */
		lo = delay < lo ? delay : lo;
		hi = delay > hi ? delay : hi;
	}
	/* full jitter spreads over the whole range */
	assert_true(lo < 400);
	assert_true(hi > 3600);
}

static void test_retry_budgets(void **st)
{
	pal_retry_policy s = retry_spec();
	uint64_t rng = 7;
	pal_retry_decision d = pal_retry_decide(&s, 5, 0, 0, -1, &rng);
	assert_false(d.retry);
	assert_string_equal(d.reason, "max_attempts");
	s.max_age_ms = 10000;
	d = pal_retry_decide(&s, 1, 9990, 0, 5000, &rng); /* Retry-After pushes past max_age */
	assert_false(d.retry);
	assert_string_equal(d.reason, "max_age");
	s.max_age_ms = 0;
	s.deadline_ms = 3000;
	d = pal_retry_decide(&s, 1, 2900, 0, 1000, &rng);
	assert_false(d.retry);
	assert_string_equal(d.reason, "deadline");
	s.deadline_ms = 0;
	d = pal_retry_decide(&s, 1, 0, 0, 7000, &rng);
	assert_true(d.retry);
	assert_int_equal(d.at_ms, 7000); /* Retry-After honoured */
	d = pal_retry_decide(&s, 1, 50000, 0, 7000, &rng);
	assert_true(d.retry);
	assert_int_equal(d.delay_ms, 7000); /* a delay, whatever the clock said */
}

static void test_breaker_opens_half_opens_and_closes(void **st)
{
	pal_breaker_config cfg = { .window = 10, .min_samples = 4, .failure_rate = 0.5, .open_ms = 1000,
				   .probe_failures = 1 };
	pal_breakers *b = pal_breakers_new(&cfg);
	assert_true(pal_breaker_allow(b, "h", 0));
	pal_breaker_record(b, "h", false, 0);
	pal_breaker_record(b, "h", true, 0);
	pal_breaker_record(b, "h", false, 0);
	assert_int_equal(pal_breaker_state_of(b, "h", 0), PAL_BREAKER_CLOSED);
	pal_breaker_record(b, "h", true, 0); /* 2 of 4 failed */
	assert_int_equal(pal_breaker_state_of(b, "h", 10), PAL_BREAKER_OPEN);
	assert_false(pal_breaker_allow(b, "h", 10));
	char **open = pal_breakers_open_hosts(b, 10);
	assert_int_equal(g_strv_length(open), 1);
	assert_string_equal(open[0], "h");
	g_strfreev(open);
	assert_true(pal_breaker_allow(b, "other", 10));
	/* half-open after open_ms: one probe only */
	assert_true(pal_breaker_allow(b, "h", 1010));
	assert_false(pal_breaker_allow(b, "h", 1011));
	open = pal_breakers_open_hosts(b, 1011); /* probe in flight: still not claimable */
	assert_int_equal(g_strv_length(open), 1);
	assert_string_equal(open[0], "h");
	g_strfreev(open);
	/* a probe that never reports expires after open_ms */
	assert_false(pal_breaker_allow(b, "h", 2000));
	assert_true(pal_breaker_allow(b, "h", 2011));
	pal_breaker_record(b, "h", true, 1020);
	assert_int_equal(pal_breaker_state_of(b, "h", 1020), PAL_BREAKER_OPEN);
	assert_true(pal_breaker_allow(b, "h", 2030));
	pal_breaker_record(b, "h", false, 2040);
	assert_int_equal(pal_breaker_state_of(b, "h", 2040), PAL_BREAKER_CLOSED);
	open = pal_breakers_open_hosts(b, 2040);
	assert_int_equal(g_strv_length(open), 0);
	g_strfreev(open);
	pal_breakers_free(b);
}

/* Defaults: judged on a full window of 20, and a half-open breaker needs 3
 * failed probes in a row to open again; one success closes it. */
static void test_breaker_defaults_tolerate_a_degraded_target(void **st)
{
	pal_breakers *b = pal_breakers_new(NULL);
	/* 9 failures of the first 10: not judged yet (10 < 20 samples) */
	for (int i = 0; i < 10; i++)
		pal_breaker_record(b, "h", i != 0, 0);
	assert_int_equal(pal_breaker_state_of(b, "h", 0), PAL_BREAKER_CLOSED);
	/* alternate: 50% over the window stays closed */
	for (int i = 0; i < 40; i++)
		pal_breaker_record(b, "h", i % 2, 0);
	assert_int_equal(pal_breaker_state_of(b, "h", 0), PAL_BREAKER_CLOSED);
	/* 16 of the last 20 failed: open */
	for (int i = 0; i < 16; i++)
		pal_breaker_record(b, "h", true, 0);
	assert_int_equal(pal_breaker_state_of(b, "h", 0), PAL_BREAKER_OPEN);
	/* half-open: two failed probes keep it half-open, the third opens it */
	for (int i = 0; i < 2; i++) {
		assert_true(pal_breaker_allow(b, "h", 5000 + i));
		pal_breaker_record(b, "h", true, 5000 + i);
		assert_int_equal(pal_breaker_state_of(b, "h", 5000 + i), PAL_BREAKER_HALF_OPEN);
	}
	assert_true(pal_breaker_allow(b, "h", 5002));
	pal_breaker_record(b, "h", true, 5002);
	assert_int_equal(pal_breaker_state_of(b, "h", 5002), PAL_BREAKER_OPEN);
	/* next half-open: the count starts again; a success closes it */
	assert_true(pal_breaker_allow(b, "h", 10002));
	pal_breaker_record(b, "h", true, 10002);
	assert_true(pal_breaker_allow(b, "h", 10003));
	pal_breaker_record(b, "h", false, 10003);
	assert_int_equal(pal_breaker_state_of(b, "h", 10003), PAL_BREAKER_CLOSED);
	pal_breakers_free(b);
}

static void test_url_host(void **st)
{
	char h[64];
	pal_url_host("http://127.0.0.1:8089/effects/x", h, sizeof h);
	assert_string_equal(h, "127.0.0.1:8089");
	pal_url_host("https://user:pw@api.example.com/x?y=1", h, sizeof h);
	assert_string_equal(h, "api.example.com");
	pal_url_host("http://[::1]:80/", h, sizeof h);
	assert_string_equal(h, "[::1]:80");
	pal_url_host("nonsense", h, sizeof h);
	assert_string_equal(h, "");
}

/* docs/protocol.md's response table, row by row. */
static void test_outcome_follows_the_protocol_table(void **st)
{
	pal_class c = { 0 };
#define CALL(o, cls, status, url) \
	(c.outcome = (o), snprintf(c.error_class, sizeof c.error_class, "%s", cls), \
	 pal_outcome_decide(false, &c, status, false, url))
	assert_int_equal(CALL(PAL_OUT_SUCCESS, "", 200, true), PAL_ACT_SUCCEED);
	assert_int_equal(CALL(PAL_OUT_MORE, "", 200, true), PAL_ACT_CHECKPOINT);
	assert_int_equal(CALL(PAL_OUT_STALE, "stale", 409, true), PAL_ACT_STALE);
	assert_int_equal(CALL(PAL_OUT_PERMANENT, "payload_mismatch", 422, true), PAL_ACT_TICKET);
	assert_int_equal(CALL(PAL_OUT_PERMANENT, "http_404", 404, true), PAL_ACT_FAIL);
	assert_int_equal(CALL(PAL_OUT_RETRYABLE, "http_503", 503, true), PAL_ACT_RETRY);
	/* unknown after sending: ask the status URL; without one, the same key again */
	assert_int_equal(CALL(PAL_OUT_UNKNOWN, "timeout_after_send", 0, true), PAL_ACT_QUERY);
	assert_int_equal(CALL(PAL_OUT_UNKNOWN, "timeout_after_send", 0, false), PAL_ACT_RETRY);
#undef CALL
	/* the status URL's answers */
	c.outcome = PAL_OUT_SUCCESS;
	assert_int_equal(pal_outcome_decide(true, &c, 200, true, true), PAL_ACT_SUCCEED);
	c.outcome = PAL_OUT_PERMANENT;
	assert_int_equal(pal_outcome_decide(true, &c, 404, false, true), PAL_ACT_SEND);
	assert_int_equal(pal_outcome_decide(true, &c, 404, true, true), PAL_ACT_RETRY);
	c.outcome = PAL_OUT_RETRYABLE;
	assert_int_equal(pal_outcome_decide(true, &c, 503, true, true), PAL_ACT_UNKNOWN);
	c.outcome = PAL_OUT_UNKNOWN;
	assert_int_equal(pal_outcome_decide(true, &c, 0, false, true), PAL_ACT_UNKNOWN);
}

/* A reply that is not HTTP after the request left (libcurl refuses
 * HTTP/0.9: CURLE_UNSUPPORTED_PROTOCOL, or a weird server reply) may have
 * been applied: unknown, never the permanent bad_url of a wrong scheme. */
static void test_classify_garbage_after_send_is_unknown(void **st)
{
	pal_class c = classify(CURLE_UNSUPPORTED_PROTOCOL, 0, true, false, NULL);
	assert_int_equal(c.outcome, PAL_OUT_UNKNOWN);
	assert_string_equal(c.error_class, "garbage_reply");
	c = classify(CURLE_WEIRD_SERVER_REPLY, 0, true, false, NULL);
	assert_int_equal(c.outcome, PAL_OUT_UNKNOWN);
	assert_string_equal(c.error_class, "garbage_reply");
	c = classify(CURLE_UNSUPPORTED_PROTOCOL, 0, false, false, NULL);
	assert_int_equal(c.outcome, PAL_OUT_PERMANENT);
	assert_string_equal(c.error_class, "bad_url");
	assert_int_equal(pal_outcome_decide(false, &c, 0, false, true), PAL_ACT_FAIL);
	c = classify(CURLE_UNSUPPORTED_PROTOCOL, 0, true, false, NULL);
	assert_int_equal(pal_outcome_decide(false, &c, 0, false, true), PAL_ACT_QUERY);
}

/* libcurl resent the request after the reused connection it first went out
 * on died: whatever the resend got but success or a stale token is unknown,
 * queried with the same key, never "not applied". */
static void test_classify_resent_request_is_unknown(void **st)
{
	static const struct {
		int curl;
		long status;
		bool sent;
		bool stale;
		pal_outcome want;
	} cases[] = {
		{ 0, 503, true, false, PAL_OUT_UNKNOWN },
		{ 0, 429, true, false, PAL_OUT_UNKNOWN },
		{ 0, 400, true, false, PAL_OUT_UNKNOWN },
		{ 0, 409, true, false, PAL_OUT_UNKNOWN },
		{ CURLE_COULDNT_CONNECT, 0, false, false, PAL_OUT_UNKNOWN },
		{ CURLE_OPERATION_TIMEDOUT, 0, false, false, PAL_OUT_UNKNOWN },
		{ CURLE_GOT_NOTHING, 0, true, false, PAL_OUT_UNKNOWN },
		{ 0, 201, true, false, PAL_OUT_SUCCESS },
		{ 0, 409, true, true, PAL_OUT_STALE },
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		pal_http_result r = { .curl_code = cases[i].curl, .status = cases[i].status,
				      .request_sent = cases[i].sent, .resent = true,
				      .stale_header = cases[i].stale, .retry_after_ms = -1 };
		pal_class c;
		pal_classify(&r, &c);
		assert_int_equal(c.outcome, cases[i].want);
		if (c.outcome == PAL_OUT_UNKNOWN) {
			assert_true(pal_unknown_after(false, false, &c, cases[i].status));
			assert_int_equal(pal_outcome_decide(false, &c, cases[i].status, false, true),
					 PAL_ACT_QUERY);
		}
	}
	/* the same 503 without a resend: not applied */
	assert_int_equal(classify(0, 503, true, false, NULL).outcome, PAL_OUT_RETRYABLE);
}

/* Which transfers leave an earlier send's outcome unknown, and what a spent
 * budget writes: an unknown outcome never becomes `failed`. */
static void test_unknown_outcome_is_never_failed(void **st)
{
	pal_class c = { 0 };
#define CALL(o, cls) \
	(c.outcome = (o), snprintf(c.error_class, sizeof c.error_class, "%s", cls), &c)
	/* calls */
	assert_true(pal_unknown_after(false, false, CALL(PAL_OUT_UNKNOWN, "timeout_after_send"), 0));
	assert_true(pal_unknown_after(false, false, CALL(PAL_OUT_RETRYABLE, "in_progress"), 409));
	assert_false(pal_unknown_after(false, false, CALL(PAL_OUT_RETRYABLE, "http_503"), 503));
	/* a 503 says nothing about what an earlier request did */
	assert_true(pal_unknown_after(true, false, CALL(PAL_OUT_RETRYABLE, "http_503"), 503));
	assert_true(pal_unknown_after(true, false, CALL(PAL_OUT_RETRYABLE, "connect"), 0));
	assert_true(pal_unknown_after(true, false, CALL(PAL_OUT_PERMANENT, "http_400"), 400));
	assert_false(pal_unknown_after(true, false, CALL(PAL_OUT_SUCCESS, ""), 200));
	assert_false(pal_unknown_after(true, false, CALL(PAL_OUT_MORE, ""), 200));
	/* status queries: only 2xx and 404 answer */
	assert_false(pal_unknown_after(true, true, CALL(PAL_OUT_SUCCESS, ""), 200));
	assert_false(pal_unknown_after(true, true, CALL(PAL_OUT_PERMANENT, "http_404"), 404));
	/* 409 in_progress (no stale header): an apply is open, not "not applied" */
	pal_class ip = classify(0, 409, true, false, "{\"error\":\"in_progress\"}");
	assert_true(pal_unknown_after(true, true, &ip, 409));
	assert_int_equal(pal_outcome_decide(true, &ip, 409, true, true), PAL_ACT_UNKNOWN);
	assert_true(pal_unknown_after(true, true, CALL(PAL_OUT_RETRYABLE, "http_503"), 503));
	assert_true(pal_unknown_after(true, true, CALL(PAL_OUT_UNKNOWN, "timeout_after_send"), 0));
	assert_true(pal_unknown_after(true, true, CALL(PAL_OUT_RETRYABLE, "connect"), 0));
#undef CALL
	/* the budget is spent */
	assert_int_equal(pal_spent_action(true), PAL_ACT_TICKET);
	assert_int_equal(pal_spent_action(false), PAL_ACT_FAIL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_classify_success_and_replay),
		cmocka_unit_test(test_classify_has_more_keeps_checkpoint),
		cmocka_unit_test(test_classify_409_stale_versus_in_progress),
		cmocka_unit_test(test_classify_permanent_and_retryable_statuses),
		cmocka_unit_test(test_classify_before_send_is_retryable_after_send_unknown),
		cmocka_unit_test(test_classify_tls_is_permanent),
		cmocka_unit_test(test_classify_oversized_2xx_body_is_success),
		cmocka_unit_test(test_backoff_grows_and_caps),
		cmocka_unit_test(test_full_jitter_stays_within_backoff),
		cmocka_unit_test(test_retry_budgets),
		cmocka_unit_test(test_breaker_opens_half_opens_and_closes),
		cmocka_unit_test(test_breaker_defaults_tolerate_a_degraded_target),
		cmocka_unit_test(test_url_host),
		cmocka_unit_test(test_outcome_follows_the_protocol_table),
		cmocka_unit_test(test_classify_garbage_after_send_is_unknown),
		cmocka_unit_test(test_classify_resent_request_is_unknown),
		cmocka_unit_test(test_unknown_outcome_is_never_failed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
