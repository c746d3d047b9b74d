/*
 * test_callspec.c - the compact call form of a job version
 * (src/spec/callspec.c): built from the fields the store reads, it says
 * what pal_job_spec_from_canonical says of the same spec, and it refuses
 * what that refuses.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "palisade/callspec.h"

/* The fields of canonical spec J, taken as the store's statement takes them
 * from job_versions (src/store/exec.c, SQL_CALLS); strings of BUF. */
typedef struct fields {
	const char *f[PAL_CF_N];
	char buf[PAL_CF_N][512];
} fields;

static void take(fields *x, int i, const json_t *v)
{
	if (!v || json_is_null(v)) {
		x->f[i] = NULL;
		return;
	}
	if (json_is_string(v)) {
		snprintf(x->buf[i], sizeof x->buf[i], "%s", json_string_value(v));
	} else {
		char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(15));
		snprintf(x->buf[i], sizeof x->buf[i], "%s", s);
		free(s);
	}
	x->f[i] = x->buf[i];
}

static void fields_of(const json_t *j, fields *x)
{
	const json_t *t = json_object_get(j, "target"), *r = json_object_get(j, "retry");
	const json_t *b = json_object_get(r, "backoff");
	take(x, PAL_CF_FORMAT, json_object_get(j, "format"));
	take(x, PAL_CF_METHOD, json_object_get(t, "method"));
	take(x, PAL_CF_URL, json_object_get(t, "url"));
	take(x, PAL_CF_BODY, json_object_get(t, "body"));
	take(x, PAL_CF_STATUS_URL, json_object_get(t, "status_url"));
	take(x, PAL_CF_HEADERS, json_object_get(t, "headers"));
	take(x, PAL_CF_TIMEOUT_MS, json_object_get(t, "timeout_ms"));
	take(x, PAL_CF_IDEM_KEY, json_object_get(j, "idempotency_key"));
	take(x, PAL_CF_TIMEZONE, json_object_get(json_object_get(j, "schedule"), "timezone"));
	take(x, PAL_CF_DEADLINE_MS, json_object_get(j, "deadline_ms"));
	take(x, PAL_CF_MAX_ATTEMPTS, json_object_get(r, "max_attempts"));
	take(x, PAL_CF_MAX_AGE_MS, json_object_get(r, "max_age_ms"));
	take(x, PAL_CF_INITIAL_MS, json_object_get(b, "initial_ms"));
	take(x, PAL_CF_MAX_MS, json_object_get(b, "max_ms"));
	take(x, PAL_CF_MULTIPLIER, json_object_get(b, "multiplier"));
	take(x, PAL_CF_JITTER, json_object_get(b, "jitter"));
	take(x, PAL_CF_TRACESTATE, json_object_get(t, "tracestate"));
	/* the store selects (spec ? 'notify'), never the entries */
	snprintf(x->buf[PAL_CF_NOTIFY], sizeof x->buf[PAL_CF_NOTIFY], "%s",
		 json_object_get(j, "notify") ? "true" : "false");
	x->f[PAL_CF_NOTIFY] = x->buf[PAL_CF_NOTIFY];
	take(x, PAL_CF_KEEP_BODY, json_object_get(t, "keep_body"));
	take(x, PAL_CF_KEEP_HEADERS, json_object_get(t, "keep_headers"));
}

static void spec_base(pal_job_spec *s)
{
	assert_int_equal(pal_job_spec_defaults(s), 0);
	s->id = strdup("calls.one");
	s->cron = strdup("0 * * * * ?");
	s->url = strdup("https://pay.example/charge/{job}");
}

static void same_str(const char *a, const char *b)
{
	if (!a || !b)
		assert_ptr_equal(a, b);
	else
		assert_string_equal(a, b);
}

/* CALL agrees with the spec decoded from the canonical form. */
static void agrees(const pal_call_spec *c, const pal_job_spec *d)
{
	assert_string_equal(c->method, d->method);
	same_str(c->url, d->url);
	same_str(c->body, d->body);
	same_str(c->status_url, d->status_url);
	same_str(c->tracestate, d->tracestate);
	same_str(c->idempotency_key, d->idempotency_key);
	same_str(c->timezone, d->timezone);
	assert_int_equal(c->timeout_ms, d->timeout_ms);
	assert_int_equal(c->n_headers, d->n_headers);
	for (size_t i = 0; i < c->n_headers; i++) {
		assert_string_equal(c->headers[i].name, d->headers[i].name);
		assert_string_equal(c->headers[i].value, d->headers[i].value);
	}
	assert_int_equal(c->retry.max_attempts, d->max_attempts);
	assert_int_equal(c->retry.backoff_initial_ms, d->backoff_initial_ms);
	assert_int_equal(c->retry.backoff_max_ms, d->backoff_max_ms);
	assert_true(c->retry.backoff_multiplier == d->backoff_multiplier);
	assert_int_equal(c->retry.jitter, d->jitter);
	assert_int_equal(c->retry.max_age_ms, d->max_age_ms);
	assert_int_equal(c->retry.deadline_ms, d->deadline_ms);
	assert_int_equal(c->notify, d->n_notify > 0);
	assert_int_equal(c->keep_body, d->has_keep_body ? d->keep_body : -1);
	assert_int_equal(c->n_keep_headers, d->n_keep_headers);
	for (size_t i = 0; i < c->n_keep_headers; i++)
		assert_string_equal(c->keep_headers[i], d->keep_headers[i]);
}

static void check_spec(pal_job_spec *s)
{
	json_t *j = pal_job_spec_canonical(s);
	assert_non_null(j);
	pal_job_spec d;
	char err[256];
	assert_int_equal(pal_job_spec_from_canonical(j, &d, err, sizeof err), 0);
	fields x;
	fields_of(j, &x);
	pal_call_spec *c = pal_call_spec_new(x.f, err, sizeof err);
	if (!c)
		fail_msg("%s", err);
	agrees(c, &d);
	free(c);
	pal_job_spec_clear(&d);
	json_decref(j);
}

static void test_defaults_agree(void **st)
{
	(void)st;
	pal_job_spec s;
	spec_base(&s);
	check_spec(&s);
	pal_job_spec_clear(&s);
}

static void test_every_field_agrees(void **st)
{
	(void)st;
	pal_job_spec s;
	spec_base(&s);
	free(s.method);
	s.method = strdup("PUT");
	s.body = strdup("{\"at\": \"{scheduled_at}\", \"note\": \"caf\xc3\xa9\"}");
	s.status_url = strdup("https://pay.example/status/{idempotency_key}");
	s.tracestate = strdup("vendor=abc,t@sys=1");
	free(s.timezone);
	s.timezone = strdup("Europe/Berlin");
	free(s.idempotency_key);
	s.idempotency_key = strdup("{job}:{scheduled_date}");
	s.timeout_ms = 2500;
	s.deadline_ms = 90000;
	s.max_attempts = 9;
	s.backoff_initial_ms = 250;
	s.backoff_max_ms = 4000;
	s.backoff_multiplier = 1.1;
	s.jitter = PAL_JITTER_EQUAL;
	s.max_age_ms = 0;
	s.n_headers = 3;
	s.headers = calloc(4, sizeof *s.headers);
	s.headers[0] = (pal_header){ strdup("X-Tenant"), strdup("acme") };
	s.headers[1] = (pal_header){ strdup("Authorization"), strdup("Bearer ${PAY_TOKEN}") };
	s.headers[2] = (pal_header){ strdup("Content-Type"), strdup("application/json") };
	s.n_notify = 2;
	s.notify = calloc(2, sizeof *s.notify);
	s.notify[0] = (pal_notify){1u << PAL_NOTIFY_FAILED | 1u << PAL_NOTIFY_RECOVERED,
				   strdup("https://hooks.example/a"), strdup("${HOOK_A}")};
	s.notify[1] = (pal_notify){1u << PAL_NOTIFY_MISFIRE, strdup("http://127.0.0.1:9/b"),
				   strdup("${HOOK_B}")};
	s.has_keep_body = true;
	s.keep_body = 0;
	s.n_keep_headers = 2;
	s.keep_headers = calloc(3, sizeof *s.keep_headers);
	s.keep_headers[0] = strdup("retry-after");
	s.keep_headers[1] = strdup("x-request-id");
	check_spec(&s);
	pal_job_spec_clear(&s);
}

static void good(fields *x)
{
	static const char *const f[PAL_CF_N] = {
		[PAL_CF_FORMAT] = "1",	       [PAL_CF_METHOD] = "POST",
		[PAL_CF_URL] = "http://a/",    [PAL_CF_HEADERS] = "{}",
		[PAL_CF_TIMEOUT_MS] = "30000", [PAL_CF_IDEM_KEY] = "{job}",
		[PAL_CF_TIMEZONE] = "UTC",     [PAL_CF_DEADLINE_MS] = "0",
		[PAL_CF_MAX_ATTEMPTS] = "5",   [PAL_CF_MAX_AGE_MS] = "3600000",
		[PAL_CF_INITIAL_MS] = "1000",  [PAL_CF_MAX_MS] = "300000",
		[PAL_CF_MULTIPLIER] = "2.0",   [PAL_CF_JITTER] = "full",
	};
	memcpy(x->f, f, sizeof f);
}

/* Field I set to V is refused with a message naming WHAT. */
static void refused(int i, const char *v, const char *what)
{
	fields x;
	good(&x);
	x.f[i] = v;
	char err[256] = "";
	pal_call_spec *c = pal_call_spec_new(x.f, err, sizeof err);
	if (c)
		fail_msg("field %d = \"%s\" was taken", i, v ? v : "(null)");
	if (!strstr(err, what))
		fail_msg("\"%s\" does not say \"%s\"", err, what);
}

static void test_refuses_what_the_decoder_refuses(void **st)
{
	(void)st;
	fields x;
	good(&x);
	char err[256];
	pal_call_spec *c = pal_call_spec_new(x.f, err, sizeof err);
	assert_non_null(c);
	assert_null(c->headers);
	assert_null(c->body);
	free(c);

	refused(PAL_CF_FORMAT, "2", "upgrade palisade");
	refused(PAL_CF_FORMAT, NULL, "format");
	refused(PAL_CF_METHOD, "TRACE", "target.method");
	refused(PAL_CF_URL, NULL, "target.url");
	refused(PAL_CF_IDEM_KEY, NULL, "idempotency_key");
	refused(PAL_CF_TIMEZONE, NULL, "schedule.timezone");
	refused(PAL_CF_TIMEOUT_MS, "0", "out of range");
	refused(PAL_CF_TIMEOUT_MS, "30s", "expected an integer");
	refused(PAL_CF_TIMEOUT_MS, "", "expected an integer");
	refused(PAL_CF_DEADLINE_MS, "-1", "deadline_ms");
	refused(PAL_CF_MAX_ATTEMPTS, "0", "retry.max_attempts");
	refused(PAL_CF_MAX_ATTEMPTS, "99999999999", "retry.max_attempts");
	refused(PAL_CF_MULTIPLIER, "0.5", "retry.backoff.multiplier");
	refused(PAL_CF_MULTIPLIER, "2x", "retry.backoff.multiplier");
	refused(PAL_CF_MULTIPLIER, NULL, "retry.backoff.multiplier");
	refused(PAL_CF_JITTER, "some", "retry.backoff.jitter");
	refused(PAL_CF_HEADERS, NULL, "target.headers");
	refused(PAL_CF_HEADERS, "[]", "target.headers");
	refused(PAL_CF_HEADERS, "{\"X-N\": 5}", "not a string");
	refused(PAL_CF_HEADERS, "{\"X-N\": ", "target.headers");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults_agree),
		cmocka_unit_test(test_every_field_agrees),
		cmocka_unit_test(test_refuses_what_the_decoder_refuses),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
