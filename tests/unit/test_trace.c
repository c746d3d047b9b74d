/*
 * test_trace.c - W3C Trace Context helpers (src/util/trace.c): the trace id
 * derived from the trigger and its reverse, span ids per attempt and
 * transfer, the traceparent sent and parsed, the tracestate check.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "palisade/trace.h"

static void test_trace_id_names_its_trigger(void **state)
{
	char id[PAL_TRACE_ID_HEX + 1], err[256];
	uint64_t prefix = pal_trace_cluster("prod"), p2;
	int64_t trig;

	(void)state;
	assert_int_not_equal(prefix, pal_trace_cluster("staging"));
	assert_int_equal(prefix, pal_trace_cluster("prod"));
	pal_trace_id(0x0123456789abcdefULL, 4711, id);
	assert_string_equal(id, "0123456789abcdef0000000000001267");
	pal_trace_id(prefix, INT64_MAX, id);
	assert_int_equal(pal_trace_id_parse(id, &p2, &trig, err, sizeof err), PAL_OK);
	assert_int_equal(p2, prefix);
	assert_int_equal(trig, INT64_MAX);
	/* upper case is read too: people paste ids from other tools */
	assert_int_equal(
	    pal_trace_id_parse("0123456789ABCDEF0000000000001267", &p2, &trig, err, sizeof err),
	    PAL_OK);
	assert_int_equal(trig, 4711);
	assert_int_equal(
	    pal_trace_id_parse("0123456789abcdef000000000000126", &p2, &trig, err, sizeof err),
	    PAL_EINVAL);
	assert_non_null(strstr(err, "32 hex digits"));
	assert_int_equal(
	    pal_trace_id_parse("0123456789abcdef000000000000126x", &p2, &trig, err, sizeof err),
	    PAL_EINVAL);
	assert_int_equal(
	    pal_trace_id_parse("0123456789abcdef0000000000000000", &p2, &trig, err, sizeof err),
	    PAL_EINVAL);
	assert_non_null(strstr(err, "names no trigger"));
	assert_int_equal(
	    pal_trace_id_parse("0123456789abcdef8000000000000000", &p2, &trig, err, sizeof err),
	    PAL_EINVAL);
}

static void test_span_id_per_attempt_and_transfer(void **state)
{
	(void)state;
	assert_int_equal(pal_span_id(PAL_SPAN_REQUEST, 3, 0x1234567890LL), 0x0100031234567890ULL);
	assert_int_equal(pal_span_id(PAL_SPAN_QUERY, 3, 0x1234567890LL), 0x0200031234567890ULL);
	/* a retry (next attempt) and a takeover (new fence) each differ */
	assert_int_not_equal(pal_span_id(PAL_SPAN_REQUEST, 1, 77),
			     pal_span_id(PAL_SPAN_REQUEST, 2, 77));
	assert_int_not_equal(pal_span_id(PAL_SPAN_REQUEST, 2, 77),
			     pal_span_id(PAL_SPAN_REQUEST, 2, 78));
	/* only the low 40 bits of the fence: never spills into the attempt */
	assert_int_equal(pal_span_id(PAL_SPAN_REQUEST, 1, 0x7fffffffffffffffLL),
			 0x010001ffffffffffULL);
	assert_int_not_equal(pal_span_id(PAL_SPAN_REQUEST, 0, 0), 0);
}

static void test_traceparent_round_trip(void **state)
{
	char tp[PAL_TRACEPARENT_LEN + 1], trace[PAL_TRACE_ID_HEX + 1];
	uint64_t span;
	uint8_t flags;

	(void)state;
	pal_traceparent(0x0123456789abcdefULL, 4711, 0x0100020000000009ULL, true, tp);
	assert_string_equal(tp, "00-0123456789abcdef0000000000001267-0100020000000009-01");
	assert_int_equal(strlen(tp), PAL_TRACEPARENT_LEN);
	assert_int_equal(pal_traceparent_parse(tp, trace, &span, &flags), PAL_OK);
	assert_string_equal(trace, "0123456789abcdef0000000000001267");
	assert_int_equal(span, 0x0100020000000009ULL);
	assert_int_equal(flags, 1);
	pal_traceparent(1, 2, 3, false, tp);
	assert_string_equal(tp + 52, "-00");
	assert_int_equal(
	    pal_traceparent_parse(" 00-0000000000000001000000000000000a-0000000000000003-00\r\n",
				  trace, &span, &flags),
	    PAL_OK);
	assert_int_equal(flags, 0);
}

static void test_traceparent_parse_refuses(void **state)
{
	char trace[PAL_TRACE_ID_HEX + 1];
	uint64_t span;
	uint8_t flags;
	static const char *const bad[] = {
	    "",
	    "00-0123456789abcdef0000000000001267-0100020000000009",
	    "00-0123456789ABCDEF0000000000001267-0100020000000009-01",	 /* upper case */
	    "00-00000000000000000000000000000000-0100020000000009-01",	 /* zero trace */
	    "00-0123456789abcdef0000000000001267-0000000000000000-01",	 /* zero span */
	    "ff-0123456789abcdef0000000000001267-0100020000000009-01",	 /* version ff */
	    "00-0123456789abcdef0000000000001267-0100020000000009-01-x", /* 00 is exact */
	    "01-0123456789abcdef0000000000001267-0100020000000009-01x",
	    "00_0123456789abcdef0000000000001267-0100020000000009-01",
	};

	(void)state;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(pal_traceparent_parse(bad[i], trace, &span, &flags), PAL_EINVAL);
	/* a later version may append fields */
	assert_int_equal(pal_traceparent_parse("01-0123456789abcdef0000000000001267-"
					       "0100020000000009-01-later",
					       trace, &span, &flags),
			 PAL_OK);
}

static void test_tracestate_valid(void **state)
{
	char err[256], big[600];

	(void)state;
	assert_true(pal_tracestate_valid("vendor=abc", err, sizeof err));
	assert_true(
	    pal_tracestate_valid("congo=t61rcWkgMzE, rojo=00f067aa0ba902b7", err, sizeof err));
	assert_true(pal_tracestate_valid("tenant1@sys=x y z,a*b/c_d-e=1", err, sizeof err));
	assert_false(pal_tracestate_valid("", err, sizeof err));
	assert_false(pal_tracestate_valid("Vendor=abc", err, sizeof err));
	assert_non_null(strstr(err, "Vendor=abc"));
	assert_false(pal_tracestate_valid("vendor", err, sizeof err));
	assert_false(pal_tracestate_valid("vendor=", err, sizeof err));
	assert_false(pal_tracestate_valid("vendor=a=b", err, sizeof err));
	assert_false(pal_tracestate_valid("a=1,,b=2", err, sizeof err));
	assert_non_null(strstr(err, "empty"));
	assert_false(pal_tracestate_valid("a=1,a=2", err, sizeof err));
	assert_non_null(strstr(err, "twice"));
	assert_false(pal_tracestate_valid("a=caf\xc3\xa9", err, sizeof err));
	assert_false(pal_tracestate_valid("t@Sys=1", err, sizeof err));
	assert_false(pal_tracestate_valid("t@systemnameislong=1", err, sizeof err));
	/* 33 members */
	big[0] = '\0';
	for (int i = 0; i < 33; i++) {
		char m[16];
		snprintf(m, sizeof m, "%sk%d=v", i ? "," : "", i);
		strcat(big, m);
	}
	assert_false(pal_tracestate_valid(big, err, sizeof err));
	assert_non_null(strstr(err, "32"));
	memset(big, 'a', 513);
	big[0] = 'k';
	big[1] = '=';
	big[513] = '\0';
	assert_false(pal_tracestate_valid(big, err, sizeof err));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_trace_id_names_its_trigger),
	    cmocka_unit_test(test_span_id_per_attempt_and_transfer),
	    cmocka_unit_test(test_traceparent_round_trip),
	    cmocka_unit_test(test_traceparent_parse_refuses),
	    cmocka_unit_test(test_tracestate_valid),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
