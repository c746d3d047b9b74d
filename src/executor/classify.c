/*
 * classify.c - response classification (the response table of docs/protocol.md).
 *
 * The distinction that matters most is *before* versus *after* sending: a
 * failure before any byte of the request left is safely retryable; a
 * timeout or reset after sending leaves the outcome unknown, and the
 * executor must ask the status URL with the same key before anything else
 * (G5).
 */
#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include "palisade/callpolicy.h"

static void set(pal_class *c, pal_outcome o, const char *cls)
{
	c->outcome = o;
	snprintf(c->error_class, sizeof c->error_class, "%s", cls);
}

static void transport(const pal_http_result *r, pal_class *c)
{
	switch ((CURLcode)r->curl_code) {
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
		set(c, PAL_OUT_RETRYABLE, "resolve");
		return;
	case CURLE_COULDNT_CONNECT:
		set(c, PAL_OUT_RETRYABLE, "connect");
		return;
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_ISSUER_ERROR:
		/* Before any request byte: nothing was applied.  A bad certificate
		 * does not heal by retrying: permanent, an operator must act. */
		set(c, PAL_OUT_PERMANENT, "tls");
		return;
	case CURLE_URL_MALFORMAT:
		set(c, PAL_OUT_PERMANENT, "bad_url");
		return;
	case CURLE_UNSUPPORTED_PROTOCOL:
		/* Before sending: the URL's scheme.  After: libcurl's answer to
		 * a reply that is not HTTP (HTTP/0.9 is refused), and the
		 * request may have been applied: unknown, like any garbage. */
		if (r->request_sent)
			set(c, PAL_OUT_UNKNOWN, "garbage_reply");
		else
			set(c, PAL_OUT_PERMANENT, "bad_url");
		return;
	case CURLE_TOO_MANY_REDIRECTS:
		set(c, PAL_OUT_PERMANENT, "redirect");
		return;
	default:
		break;
	}
	if (!r->request_sent) {
		set(c, PAL_OUT_RETRYABLE, r->curl_code == CURLE_OPERATION_TIMEDOUT ? "timeout_before_send"
										  : "send_failed");
		return;
	}
	/* Sent, then timed out, reset, or answered with garbage: unknown. */
	switch ((CURLcode)r->curl_code) {
	case CURLE_OPERATION_TIMEDOUT:
		set(c, PAL_OUT_UNKNOWN, "timeout_after_send");
		break;
	case CURLE_GOT_NOTHING:
		set(c, PAL_OUT_UNKNOWN, "empty_reply");
		break;
	case CURLE_WEIRD_SERVER_REPLY:
		set(c, PAL_OUT_UNKNOWN, "garbage_reply");
		break;
	default:
		set(c, PAL_OUT_UNKNOWN, "reset_after_send");
		break;
	}
}

/* 2xx body: {"has_more": true, "checkpoint": ..., "next_delay_s": n}? */
static void success(const pal_http_result *r, pal_class *c)
{
	set(c, PAL_OUT_SUCCESS, "");
	if (!r->body || !r->body_len || r->body_truncated)
		return;
	/* Most answers are not chunked: a body without the key's bytes and
	 * without an escape (a key may spell has_more with \u escapes) cannot
	 * say has_more, and is not parsed (a parse per call showed in the
	 * executor's profile of the aligned burst). */
	if (!memmem(r->body, r->body_len, "has_more", 8) && !memchr(r->body, '\\', r->body_len))
		return;
	json_t *j = json_loadb(r->body, r->body_len, 0, NULL);
	if (!json_is_object(j)) {
		json_decref(j);
		return;
	}
	if (json_is_true(json_object_get(j, "has_more"))) {
		json_t *cp = json_object_get(j, "checkpoint");
		c->checkpoint = cp ? json_dumps(cp, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
		if (!c->checkpoint) {
			/* has_more without a checkpoint cannot be resumed: a broken
			 * service; treat as permanent rather than loop forever. */
			set(c, PAL_OUT_PERMANENT, "has_more_without_checkpoint");
		} else {
			c->outcome = PAL_OUT_MORE;
			json_t *d = json_object_get(j, "next_delay_s");
			double s = json_is_number(d) ? json_number_value(d) : 0;
			if (s < 0)
				s = 0;
			if (s > 3600)
				s = 3600;
			c->next_delay_ms = (int64_t)(s * 1000);
		}
	}
	json_decref(j);
}

static void classify(const pal_http_result *r, pal_class *c)
{
	if (r->curl_code && !(r->curl_code == CURLE_WRITE_ERROR && r->status)) {
		transport(r, c);
		return;
	}
	long s = r->status;
	char cls[32];
	snprintf(cls, sizeof cls, "http_%ld", s);
	if (s >= 200 && s < 300) {
		success(r, c);
		return;
	}
	if (s == 409 && r->stale_header) {
		set(c, PAL_OUT_STALE, "stale_token");
		return;
	}
	if (s == 409) {
		set(c, PAL_OUT_RETRYABLE, "in_progress");
		return;
	}
	if (s == 422) {
		set(c, PAL_OUT_PERMANENT, "payload_mismatch");
		return;
	}
	if (s == 408 || s == 429 || (s >= 500 && s < 600)) {
		set(c, PAL_OUT_RETRYABLE, cls);
		return;
	}
	if (s >= 300 && s < 400) {
		set(c, PAL_OUT_PERMANENT, "redirect");
		return;
	}
	if (s >= 400 && s < 500) {
		set(c, PAL_OUT_PERMANENT, cls);
		return;
	}
	/* 1xx or nonsense status after sending: we cannot know. */
	set(c, PAL_OUT_UNKNOWN, "bad_status");
}

void pal_classify(const pal_http_result *r, pal_class *c)
{
	memset(c, 0, sizeof *c);
	classify(r, c);
	/* When a reused connection dies before any answer byte, libcurl sends
	 * the request again on a fresh connection by itself.  The first
	 * transmission may have been applied, so what the resend got - a 5xx,
	 * a refused connection, any answer but success or a stale token - does
	 * not say "not applied": the outcome is unknown. */
	if (r->resent && (c->outcome == PAL_OUT_RETRYABLE || c->outcome == PAL_OUT_PERMANENT)) {
		set(c, PAL_OUT_UNKNOWN, "reset_after_send");
	}
}

bool pal_unknown_after(bool unknown, bool query, const pal_class *c, long status)
{
	if (query)
		return !((status >= 200 && status < 300) || status == 404);
	switch (c->outcome) {
	case PAL_OUT_UNKNOWN:
		return true;
	case PAL_OUT_RETRYABLE:
		return unknown || !strcmp(c->error_class, "in_progress");
	case PAL_OUT_SUCCESS:
	case PAL_OUT_MORE:
		return false;
	default:
		return unknown;
	}
}

pal_action pal_spent_action(bool unknown)
{
	return unknown ? PAL_ACT_TICKET : PAL_ACT_FAIL;
}

pal_action pal_outcome_decide(bool query, const pal_class *c, long status, bool called,
			      bool has_status_url)
{
	if (query) {
		if (status >= 200 && status < 300)
			return PAL_ACT_SUCCEED; /* found: it was applied */
		if (status == 404)
			/* Not applied.  An earlier claim's outcome was unknown:
			 * send now, with the same key; this claim's own call was
			 * not applied: an ordinary retry under the budget. */
			return called ? PAL_ACT_RETRY : PAL_ACT_SEND;
		return PAL_ACT_UNKNOWN;
	}
	switch (c->outcome) {
	case PAL_OUT_SUCCESS:
		return PAL_ACT_SUCCEED;
	case PAL_OUT_MORE:
		return PAL_ACT_CHECKPOINT;
	case PAL_OUT_STALE:
		return PAL_ACT_STALE;
	case PAL_OUT_PERMANENT:
		return strcmp(c->error_class, "payload_mismatch") ? PAL_ACT_FAIL : PAL_ACT_TICKET;
	case PAL_OUT_RETRYABLE:
		return PAL_ACT_RETRY;
	case PAL_OUT_UNKNOWN:
		/* Without a status URL: the same key again; a service that
		 * honours the protocol replays instead of applying twice. */
		return has_status_url ? PAL_ACT_QUERY : PAL_ACT_RETRY;
	}
	return PAL_ACT_RETRY;
}
