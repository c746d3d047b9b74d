/*
 * callspec.h - what a call needs of a job version, in a compact form: the
 * target, the key template, the retry budget and the zone, in one
 * allocation.  The executor keeps one per version it calls (docs/executor.md,
 * "A job version that cannot be read"), built from the columns the store reads, never from the
 * whole canonical spec: an aligned burst of 100,000 distinct jobs decodes
 * 100,000 of them on the executor's loop.
 */
#ifndef PALISADE_CALLSPEC_H
#define PALISADE_CALLSPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "palisade/err.h"
#include "palisade/jobspec.h"

/* The retry budget of a version (docs/jobs.md, `retry` and `deadline`). */
typedef struct pal_retry_policy {
	int32_t max_attempts;
	int64_t backoff_initial_ms, backoff_max_ms;
	double backoff_multiplier;
	pal_jitter jitter;
	int64_t max_age_ms;  /* 0 = none */
	int64_t deadline_ms; /* 0 = none */
} pal_retry_policy;

typedef struct pal_call_spec {
	const char *method;          /* an entry of pal_http_method_names */
	const char *url;             /* template */
	const char *body;            /* template, NULL when none */
	const char *status_url;      /* template, NULL when none */
	const char *tracestate;      /* sent as written, NULL when none */
	const char *idempotency_key; /* template */
	const char *timezone;        /* IANA name, for {scheduled_date} */
	const pal_header *headers;   /* values are templates */
	size_t n_headers;
	int64_t timeout_ms;
	pal_retry_policy retry;
	bool notify; /* the version has `notify:`: its results go through the
			commit that queues notifications (docs/jobs.md) */
	int64_t keep_body;               /* body bytes an attempt keeps; -1: not set
					    (the default, PAL_KEEP_BODY_DEFAULT) */
	const char *const *keep_headers; /* response headers an attempt keeps
					    (lower case), NULL when none */
	size_t n_keep_headers;
} pal_call_spec;

/* The fields a call spec is built from, as text (NULL for SQL or JSON
 * null), in this order: the store's statement selects them so. */
enum {
	PAL_CF_FORMAT,       /* the spec's "format" */
	PAL_CF_METHOD,       /* target.method */
	PAL_CF_URL,          /* target.url */
	PAL_CF_BODY,         /* target.body */
	PAL_CF_STATUS_URL,   /* target.status_url */
	PAL_CF_HEADERS,      /* target.headers, a JSON object of strings */
	PAL_CF_TIMEOUT_MS,   /* target.timeout_ms */
	PAL_CF_IDEM_KEY,     /* idempotency_key */
	PAL_CF_TIMEZONE,     /* schedule.timezone */
	PAL_CF_DEADLINE_MS,  /* deadline_ms */
	PAL_CF_MAX_ATTEMPTS, /* retry.max_attempts */
	PAL_CF_MAX_AGE_MS,   /* retry.max_age_ms */
	PAL_CF_INITIAL_MS,   /* retry.backoff.initial_ms */
	PAL_CF_MAX_MS,       /* retry.backoff.max_ms */
	PAL_CF_MULTIPLIER,   /* retry.backoff.multiplier */
	PAL_CF_JITTER,       /* retry.backoff.jitter */
	PAL_CF_TRACESTATE,   /* target.tracestate (absent: NULL) */
	PAL_CF_NOTIFY,       /* "true" when the spec has notify, "false" else */
	PAL_CF_KEEP_BODY,    /* target.keep_body (absent: NULL) */
	PAL_CF_KEEP_HEADERS, /* target.keep_headers, a JSON array of strings (absent: NULL) */
	PAL_CF_N
};

/* A call spec from F[0..PAL_CF_N) (copied; free the result with free()),
 * or NULL with ERR when a field is missing or out of its range, or the
 * format is not the one this binary reads (the checks of
 * pal_job_spec_from_canonical for these fields). */
pal_call_spec *pal_call_spec_new(const char *const *f, char *err, size_t errlen);

#endif
