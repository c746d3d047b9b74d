/*
 * callpolicy.h - the executor's decisions about one side-effect call, pure
 * functions without I/O (docs/protocol.md, docs/executor.md): how a response is classified,
 * when and whether to retry, and the per-host circuit breaker.
 */
#ifndef PALISADE_CALLPOLICY_H
#define PALISADE_CALLPOLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "palisade/err.h"
#include "palisade/callspec.h"

/* ---- classification ------------------------------------------------------ */

typedef enum {
	PAL_OUT_SUCCESS,     /* 2xx: applied (or replayed) */
	PAL_OUT_MORE,        /* 2xx with has_more: a chunk committed, continue */
	PAL_OUT_STALE,       /* 409 with Palisade-Stale-Token: fenced */
	PAL_OUT_PERMANENT,   /* 4xx (not 408/409/429), 422, redirects, TLS */
	PAL_OUT_RETRYABLE,   /* 408, 429, 5xx, 409 in progress, failure before sending */
	PAL_OUT_UNKNOWN,     /* failure after sending: outcome unknown, query first */
} pal_outcome;

/* What the transfer produced (filled by the executor from libcurl). */
typedef struct pal_http_result {
	int curl_code;          /* CURLcode; 0 = a response was received */
	long status;            /* HTTP status, 0 when none */
	bool request_sent;      /* bytes of the request reached the socket */
	bool resent;            /* libcurl sent it again after a reused connection died */
	bool stale_header;      /* Palisade-Stale-Token present */
	int64_t retry_after_ms; /* Retry-After, -1 when absent */
	const char *body;       /* NUL-terminated, possibly truncated */
	size_t body_len;
	bool body_truncated;    /* over the executor's cap */
} pal_http_result;

typedef struct pal_class {
	pal_outcome outcome;
	char error_class[48]; /* "http_503", "timeout_after_send", "connect", "tls", ... */
	/* PAL_OUT_MORE: */
	char *checkpoint;     /* JSON text of "checkpoint" (caller frees) */
	int64_t next_delay_ms;
} pal_class;

/* Classify R per the response table of docs/protocol.md.  Fills C (free c->checkpoint). */
void pal_classify(const pal_http_result *r, pal_class *c);

/* ---- retry ------------------------------------------------------------------ */

typedef struct pal_retry_decision {
	bool retry;
	int64_t at_ms;       /* when to retry (ms since epoch, NOW_MS + delay_ms) */
	int64_t delay_ms;    /* how long from NOW_MS */
	const char *reason;  /* when not: "max_attempts", "max_age", "deadline" */
} pal_retry_decision;

/*
 * After ATTEMPTS failed attempts (1-based count so far) at NOW_MS of a
 * trigger scheduled at SCHEDULED_MS, under retry policy P: retry after
 * exponential backoff with P's jitter (full by default), not before
 * RETRY_AFTER_MS (-1: none), unless a budget (attempts, age since the
 * scheduled instant, job deadline) would be spent.  RNG is a xorshift state.
 */
pal_retry_decision pal_retry_decide(const pal_retry_policy *p, int attempts, int64_t now_ms,
				    int64_t scheduled_ms, int64_t retry_after_ms, uint64_t *rng);

/* The un-jittered backoff before attempt ATTEMPTS+1, in ms. */
int64_t pal_backoff_ms(const pal_retry_policy *p, int attempts);

/* ---- circuit breaker per target host ------------------------------------------ */

typedef struct pal_breakers pal_breakers;

typedef struct pal_breaker_config {
	int window;            /* outcomes remembered per host (default 20) */
	int min_samples;       /* before the rate is judged (default: window) */
	double failure_rate;   /* open at or above (default 0.8) */
	int64_t open_ms;       /* stay open this long, then half-open (default 5000) */
	int probe_failures;    /* consecutive failed probes that re-open (default 3) */
} pal_breaker_config;

typedef enum { PAL_BREAKER_CLOSED, PAL_BREAKER_OPEN, PAL_BREAKER_HALF_OPEN } pal_breaker_state;

pal_breakers *pal_breakers_new(const pal_breaker_config *cfg);
void pal_breakers_free(pal_breakers *b);
/* May a call to HOST start now?  In half-open state one probe at a time:
 * the first success closes the breaker, PROBE_FAILURES failed probes in a
 * row open it again. */
bool pal_breaker_allow(pal_breakers *b, const char *host, int64_t now_ms);
/* What the executor does with a classified response: the response table of
 * docs/protocol.md as one pure function (src/executor/classify.c). */
typedef enum {
	PAL_ACT_SUCCEED,    /* commit `succeeded` */
	PAL_ACT_CHECKPOINT, /* a chunk: store its checkpoint, continue later */
	PAL_ACT_STALE,      /* the service holds a newer token: stop, write nothing */
	PAL_ACT_FAIL,       /* permanent: `failed` */
	PAL_ACT_TICKET,     /* permanent, for a person to judge: `manual` + ticket */
	PAL_ACT_RETRY,      /* `retry_wait` with backoff (`failed` once the budget is spent) */
	PAL_ACT_QUERY,      /* outcome unknown: GET the status URL with the same key */
	PAL_ACT_SEND,       /* the status URL says not applied, never sent by this claim: send */
	PAL_ACT_UNKNOWN,    /* the status URL gave no answer: `unknown`, query again later
			       (`manual` + ticket once the budget is spent) */
} pal_action;

/* QUERY: C classifies an answer of the status URL (STATUS its HTTP status);
 * otherwise the answer to the side-effect request.  CALLED: this claim has
 * sent the request already; HAS_STATUS_URL: the job declares one. */
pal_action pal_outcome_decide(bool query, const pal_class *c, long status, bool called,
			      bool has_status_url);

/* Whether an earlier send of this trigger stays of unknown outcome after
 * this transfer (UNKNOWN: it was before; QUERY, C, STATUS as for
 * pal_outcome_decide).  Set by a call whose outcome is unknown and by an
 * in_progress answer (409 without Palisade-Stale-Token: a request with the
 * key is in flight); cleared only by a status query that answers (2xx
 * applied, 404 not applied).  Any other answer to a query (409 in_progress,
 * 5xx, no answer) leaves it unknown: that is not "not applied". */
bool pal_unknown_after(bool unknown, bool query, const pal_class *c, long status);

/* The retry budget is spent (or the deadline passed): PAL_ACT_FAIL, or
 * PAL_ACT_TICKET while the outcome is UNKNOWN - an unknown outcome never
 * becomes `failed`. */
pal_action pal_spent_action(bool unknown);

/* Record the end of a call to HOST (FAILED: retryable or unknown outcome). */
void pal_breaker_record(pal_breakers *b, const char *host, bool failed, int64_t now_ms);
pal_breaker_state pal_breaker_state_of(pal_breakers *b, const char *host, int64_t now_ms);
/* Calls the executor holds for HOST while its probe is in flight (DELTA +1
 * when one is parked, -1 when it leaves), and how many it holds now. */
void pal_breaker_parked(pal_breakers *b, const char *host, int delta);
int pal_breaker_parked_count(pal_breakers *b, const char *host);
/* Hosts that must not be claimed for now - breaker open, or half-open with
 * its probe in flight or calls parked for the next probes - as a
 * NULL-terminated vector (caller frees with g_strfreev; empty when none). */
char **pal_breakers_open_hosts(pal_breakers *b, int64_t now_ms);



#endif
