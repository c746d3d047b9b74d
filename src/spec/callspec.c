/*
 * callspec.c - the compact form of a job version that calls are made from
 * (include/palisade/callspec.h): the fields are checked as
 * pal_job_spec_from_canonical checks them and copied into one block.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/callspec.h"

#define DAY_MS 86400000LL

static const char *const field_names[PAL_CF_N] = {
	[PAL_CF_FORMAT] = "format",
	[PAL_CF_METHOD] = "target.method",
	[PAL_CF_URL] = "target.url",
	[PAL_CF_BODY] = "target.body",
	[PAL_CF_STATUS_URL] = "target.status_url",
	[PAL_CF_HEADERS] = "target.headers",
	[PAL_CF_TIMEOUT_MS] = "target.timeout_ms",
	[PAL_CF_IDEM_KEY] = "idempotency_key",
	[PAL_CF_TIMEZONE] = "schedule.timezone",
	[PAL_CF_DEADLINE_MS] = "deadline_ms",
	[PAL_CF_MAX_ATTEMPTS] = "retry.max_attempts",
	[PAL_CF_MAX_AGE_MS] = "retry.max_age_ms",
	[PAL_CF_INITIAL_MS] = "retry.backoff.initial_ms",
	[PAL_CF_MAX_MS] = "retry.backoff.max_ms",
	[PAL_CF_MULTIPLIER] = "retry.backoff.multiplier",
	[PAL_CF_JITTER] = "retry.backoff.jitter",
	[PAL_CF_TRACESTATE] = "target.tracestate",
	[PAL_CF_NOTIFY] = "notify",
	[PAL_CF_KEEP_BODY] = "target.keep_body",
	[PAL_CF_KEEP_HEADERS] = "target.keep_headers",
};

typedef struct build {
	const char *const *f;
	char *err;
	size_t errlen;
	bool bad;
} build;

static void fail(build *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void fail(build *b, const char *fmt, ...)
{
	if (b->bad)
		return; /* keep the first problem */
	b->bad = true;
	char buf[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (b->err && b->errlen)
		snprintf(b->err, b->errlen, "invalid job version: %s", buf);
}

static int64_t integer(build *b, int i, int64_t min, int64_t max)
{
	const char *s = b->f[i];
	if (!s || !*s) {
		fail(b, "%s: expected an integer", field_names[i]);
		return min;
	}
	char *end;
	errno = 0;
	long long x = strtoll(s, &end, 10);
	if (*end || errno) {
		fail(b, "%s: expected an integer, not \"%s\"", field_names[i], s);
		return min;
	}
	if (x < min || x > max) {
		fail(b, "%s: %lld out of range", field_names[i], x);
		return min;
	}
	return x;
}

static int name(build *b, int i, const char *const *names, int n)
{
	for (int k = 0; b->f[i] && k < n; k++)
		if (!strcmp(b->f[i], names[k]))
			return k;
	fail(b, "%s: expected one of the known names", field_names[i]);
	return 0;
}

static const char *need(build *b, int i)
{
	if (!b->f[i])
		fail(b, "%s: expected a string", field_names[i]);
	return b->f[i];
}

/* Copy S (may be NULL) to *AT, advancing it. */
static const char *put(char **at, const char *s)
{
	if (!s)
		return NULL;
	size_t n = strlen(s) + 1;
	memcpy(*at, s, n);
	const char *r = *at;
	*at += n;
	return r;
}

pal_call_spec *pal_call_spec_new(const char *const *f, char *err, size_t errlen)
{
	build b = { .f = f, .err = err, .errlen = errlen };
	pal_call_spec s = { 0 };
	if (err && errlen)
		err[0] = '\0';
	int64_t format = integer(&b, PAL_CF_FORMAT, 1, 1000000);
	if (!b.bad && format != PAL_SPEC_FORMAT)
		fail(&b,
		     "format %lld is not understood by this binary (it reads %d); hint: upgrade "
		     "palisade",
		     (long long)format, PAL_SPEC_FORMAT);
	s.method = pal_http_method_names[name(&b, PAL_CF_METHOD, pal_http_method_names, 5)];
	need(&b, PAL_CF_URL);
	need(&b, PAL_CF_IDEM_KEY);
	need(&b, PAL_CF_TIMEZONE);
	s.timeout_ms = integer(&b, PAL_CF_TIMEOUT_MS, 1, 3650 * DAY_MS);
	s.retry.deadline_ms = integer(&b, PAL_CF_DEADLINE_MS, 0, 3650 * DAY_MS);
	s.retry.max_attempts = (int32_t)integer(&b, PAL_CF_MAX_ATTEMPTS, 1, INT32_MAX);
	s.retry.max_age_ms = integer(&b, PAL_CF_MAX_AGE_MS, 0, 3650 * DAY_MS);
	s.retry.backoff_initial_ms = integer(&b, PAL_CF_INITIAL_MS, 0, 3650 * DAY_MS);
	s.retry.backoff_max_ms = integer(&b, PAL_CF_MAX_MS, 0, 3650 * DAY_MS);
	s.retry.jitter = (pal_jitter)name(&b, PAL_CF_JITTER, pal_jitter_names, 3);
	const char *m = f[PAL_CF_MULTIPLIER];
	char *end = NULL;
	double mult = m ? strtod(m, &end) : 0;
	if (!m || !*m || *end || !(mult >= 1 && mult <= 1000))
		fail(&b, "%s: expected a number >= 1", field_names[PAL_CF_MULTIPLIER]);
	s.retry.backoff_multiplier = mult;
	s.keep_body =
	    f[PAL_CF_KEEP_BODY] ? integer(&b, PAL_CF_KEEP_BODY, 0, PAL_KEEP_BODY_MAX) : -1;

	/* Headers are an object of strings, "{}" nearly always: parsed only
	 * when there are some. */
	json_t *hdr = NULL;
	const char *h = f[PAL_CF_HEADERS];
	size_t size = sizeof s;
	if (!h) {
		fail(&b, "%s: expected an object", field_names[PAL_CF_HEADERS]);
	} else if (strcmp(h, "{}") != 0 && !b.bad) {
		hdr = json_loads(h, 0, NULL);
		if (!json_is_object(hdr)) {
			fail(&b, "%s: expected an object", field_names[PAL_CF_HEADERS]);
		} else {
			const char *k;
			json_t *v;
			json_object_foreach(hdr, k, v)
			{
				if (!json_is_string(v)) {
					fail(&b, "%s: value of \"%s\" is not a string",
					     field_names[PAL_CF_HEADERS], k);
					break;
				}
				size += sizeof(pal_header) + strlen(k) + strlen(json_string_value(v)) + 2;
				s.n_headers++;
			}
		}
	}
	/* Kept header names: absent nearly always. */
	json_t *keep = NULL;
	if (f[PAL_CF_KEEP_HEADERS] && !b.bad) {
		keep = json_loads(f[PAL_CF_KEEP_HEADERS], 0, NULL);
		size_t i;
		json_t *v;
		if (!json_is_array(keep) || json_array_size(keep) > PAL_KEEP_HEADERS_MAX)
			fail(&b, "%s: expected an array of at most %d names",
			     field_names[PAL_CF_KEEP_HEADERS], PAL_KEEP_HEADERS_MAX);
		json_array_foreach(keep, i, v)
		{
			if (!json_is_string(v)) {
				fail(&b, "%s: expected strings", field_names[PAL_CF_KEEP_HEADERS]);
				break;
			}
			size += sizeof(char *) + strlen(json_string_value(v)) + 1;
			s.n_keep_headers++;
		}
	}
	if (b.bad) {
		json_decref(hdr);
		json_decref(keep);
		return NULL;
	}
	static const int strs[] = { PAL_CF_URL,	     PAL_CF_BODY,     PAL_CF_STATUS_URL,
				    PAL_CF_IDEM_KEY, PAL_CF_TIMEZONE, PAL_CF_TRACESTATE };
	for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
		size += f[strs[i]] ? strlen(f[strs[i]]) + 1 : 0;
	/* One block: the struct, the header array, the strings. */
	pal_call_spec *out = malloc(size);
	if (!out) {
		json_decref(hdr);
		json_decref(keep);
		fail(&b, "out of memory");
		return NULL;
	}
	pal_header *hs = (pal_header *)(out + 1);
	const char **kh = (const char **)(hs + s.n_headers);
	char *at = (char *)(kh + s.n_keep_headers);
	s.url = put(&at, f[PAL_CF_URL]);
	s.body = put(&at, f[PAL_CF_BODY]);
	s.status_url = put(&at, f[PAL_CF_STATUS_URL]);
	s.tracestate = put(&at, f[PAL_CF_TRACESTATE]);
	s.idempotency_key = put(&at, f[PAL_CF_IDEM_KEY]);
	s.timezone = put(&at, f[PAL_CF_TIMEZONE]);
	if (hdr) {
		const char *k;
		json_t *v;
		size_t i = 0;
		json_object_foreach(hdr, k, v)
		{
			hs[i].name = (char *)put(&at, k);
			hs[i++].value = (char *)put(&at, json_string_value(v));
		}
		json_decref(hdr);
	}
	s.headers = s.n_headers ? hs : NULL;
	s.notify = f[PAL_CF_NOTIFY] && f[PAL_CF_NOTIFY][0] == 't';
	for (size_t i = 0; i < s.n_keep_headers; i++)
		kh[i] = put(&at, json_string_value(json_array_get(keep, i)));
	json_decref(keep);
	s.keep_headers = s.n_keep_headers ? kh : NULL;
	*out = s;
	return out;
}
