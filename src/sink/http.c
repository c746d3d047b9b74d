/*
 * http.c - the sink's two HTTP listeners (libmicrohttpd) and the effects
 * routes: apply (any method but GET/HEAD on /effects/...) and query
 * (GET /effects/<percent-encoded key>).
 *
 * Threading: the effects listener runs one thread per HTTP connection
 * (keep-alive connections keep their thread), because a request blocks for
 * the length of its PostgreSQL transaction (or its group's, group.c), an
 * injected delay or a pause; the PostgreSQL connections come from the pool
 * (pool.c), which bounds the transactions running at once.  The admin listener serves every
 * connection from one internal thread: its requests never block.
 *
 * Request life cycle: MHD calls on_uri() first with the request-target as
 * sent (path and query, not decoded: the payload digest covers it exactly);
 * its result becomes the per-request state.  on_request() is then called
 * with the headers, once per body piece, and once more when the body is
 * complete, when it answers.  A body announced (Content-Length) above
 * SINK_BODY_MAX is refused with 413 at once; one discovered mid-stream
 * (chunked transfer) closes the connection.  request_done() frees the
 * state, whatever happened.
 *
 * libmicrohttpd's automatic percent-decoding of the path is switched off
 * (unescape_none), so /effects/a%2Fb keeps its key "a/b" distinct from the
 * path /effects/a/b; keys are decoded here, strictly (proto.c).
 *
 * Ownership: pal__sink_listener_start() allocates the listener and its
 * daemon; pal__sink_listener_stop() stops and frees both.  CTX is borrowed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <glib.h>
#include <jansson.h>
#include <microhttpd.h>
#include "palisade/clock.h"
#include "palisade/httpguard.h"
#include "palisade/listen.h"
#include "palisade/log.h"
#include "palisade/timefmt.h"
#include "palisade/trace.h"
#include "sink_int.h"

#define CONN_TIMEOUT_S 120	/* idle keep-alive connection */
#define ADMIN_CONN_LIMIT 64	/* concurrent admin connections */
#define ADMIN_PER_ADDR_LIMIT 16 /* of them from one client address */
#define ADMIN_BODY_MAX 65536	/* admin requests carry small JSON bodies */

struct sink_listener {
	sink_ctx *ctx;
	bool admin;
	struct MHD_Daemon *daemon;
	pal_httpguard *guard; /* limits, head deadline, smuggling checks */
	struct sockaddr_storage sa;
	int port;
	int quiesced_fd;     /* listen socket handed back by MHD_quiesce_daemon(), or -1 */
	atomic_int active;   /* requests between on_uri() and request_done() */
	atomic_bool started; /* false while MHD_start_daemon() runs */
	char start_err[256]; /* last libmicrohttpd message while starting */
};

/* Per-request state, allocated in on_uri(), freed in request_done(). */
typedef struct request {
	char *target; /* request-target as sent */
	char *body;   /* NUL-terminated for convenience; LEN bytes */
	size_t len, cap;
	bool seen; /* the headers-only first call happened */
} request;

/* ---- responses ----------------------------------------------------------- */

int pal__sink_respond(struct MHD_Connection *conn, unsigned status, char *body, const char *hname,
		      const char *hvalue)
{
	static const char oom[] = "{\"error\":\"out_of_memory\"}";
	struct MHD_Response *r;
	if (body == NULL) {
		status = MHD_HTTP_INTERNAL_SERVER_ERROR;
		r = MHD_create_response_from_buffer(sizeof oom - 1, (void *)oom,
						    MHD_RESPMEM_PERSISTENT);
	} else {
		r = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
		if (r == NULL)
			free(body);
	}
	if (r == NULL)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	if (hname != NULL)
		MHD_add_response_header(r, hname, hvalue);
	enum MHD_Result ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

void pal__sink_count(sink_ctx *ctx, const char *name)
{
	char labels[64];
	snprintf(labels, sizeof labels, "outcome=\"%s\"", name);
	pal_metric_inc(ctx->metrics, SINK_M_OUTCOMES, labels, 1);
}

static enum MHD_Result bad_request(sink_ctx *ctx, struct MHD_Connection *conn, const char *why)
{
	pal__sink_count(ctx, "bad_request");
	pal_log(PAL_LOG_DEBUG, "sink.bad_request", "{s:s}", "detail", why);
	return pal__sink_respond(conn, MHD_HTTP_BAD_REQUEST,
				 pal__sink_body_error("bad_request", why), NULL, NULL);
}

static enum MHD_Result unavailable(struct MHD_Connection *conn, const char *code)
{
	return pal__sink_respond(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
				 pal__sink_body_error(code, NULL), "Retry-After", "1");
}

/* A connection of the pool (pal__sink_pool_release() gives it back), or
 * NULL when none can be had: counted as a database error and logged, for
 * the caller to answer 503. */
static sink_conn *acquire(sink_ctx *ctx)
{
	sink_conn *c;
	char err[256];
	if (pal__sink_pool_acquire(ctx->pool, &c, err, sizeof err) != PAL_OK) {
		pal__sink_count(ctx, "db_errors");
		pal_log(PAL_LOG_WARN, "sink.db_unavailable", "{s:s}", "message", err);
		return NULL;
	}
	return c;
}

/* ---- query: GET /effects/<key> -------------------------------------------- */

static enum MHD_Result query(sink_ctx *ctx, struct MHD_Connection *conn, const char *enc)
{
	char key[SINK_KEY_MAX + 1];
	int rc = pal__sink_pct_decode(enc, key, sizeof key);
	if (rc == PAL_ETOOBIG)
		return bad_request(ctx, conn,
				   "the key is longer than " SINK_STR(SINK_KEY_MAX) " bytes");
	if (rc != PAL_OK || key[0] == '\0')
		return bad_request(ctx, conn,
				   "the key in the path is empty, not valid percent-encoding, "
				   "or not UTF-8");
	if (ctx->opts.noop) {
		pal__sink_count(ctx, "not_found");
		return pal__sink_respond(
		    conn, MHD_HTTP_NOT_FOUND,
		    pal__sink_body_error("not_found", "noop mode keeps no records"), NULL, NULL);
	}
	sink_conn *c = acquire(ctx);
	if (c == NULL)
		return unavailable(conn, "db_unavailable");
	/* before the read: a request that leaves the set after it began
	 * committed (or failed) before the read's snapshot */
	bool inflight = pal__sink_inflight_has(ctx, key);
	sink_reply rep;
	pal__sink_effect_query(c, key, inflight, &rep);
	pal__sink_pool_release(ctx->pool, c);
	if (rep.outcome == SINK_DB_ERROR) {
		pal__sink_count(ctx, "db_errors");
		return pal__sink_respond(conn, rep.status, rep.body, "Retry-After", "1");
	}
	if (rep.outcome == SINK_IN_PROGRESS) {
		/* an apply for the key is open: not "not found", ask again */
		pal__sink_count(ctx, "query_in_progress");
		return pal__sink_respond(conn, rep.status, rep.body, "Retry-After", "1");
	}
	pal__sink_found(ctx, key); /* the database answered: 200 or 404 */
	pal__sink_count(ctx, rep.status == MHD_HTTP_OK ? "found" : "not_found");
	return pal__sink_respond(conn, rep.status, rep.body, NULL, NULL);
}

/* ---- apply: any other method on /effects/... ------------------------------ */

static const char *header(struct MHD_Connection *conn, const char *name)
{
	return MHD_lookup_connection_value(conn, MHD_HEADER_KIND, name);
}

/* The trace context of the request into RQ, for the logs. */
static void sink_trace(struct MHD_Connection *conn, sink_apply_req *rq)
{
	uint64_t span;
	uint8_t flags;
	rq->trace_id[0] = rq->span_id[0] = rq->trace_flags[0] = '\0';
	rq->tracestate = header(conn, "tracestate");
	if (pal_traceparent_parse(header(conn, "traceparent"), rq->trace_id, &span, &flags) ==
	    PAL_OK) {
		snprintf(rq->span_id, sizeof rq->span_id, "%016" PRIx64, span);
		snprintf(rq->trace_flags, sizeof rq->trace_flags, "%02x", flags);
	} else {
		rq->trace_id[0] = '\0';
	}
}

/* Validate the headers of an apply request into RQ; on failure returns the
 * reason (a static string) for the 400 answer. */
static const char *validate(struct MHD_Connection *conn, const request *req, sink_apply_req *rq)
{
	int64_t v;
	rq->key = header(conn, "Idempotency-Key");
	const char *why = pal__sink_check_key(rq->key);
	if (why != NULL)
		return why;
	const char *tok = header(conn, "Palisade-Fencing-Token");
	if (tok == NULL)
		return "missing Palisade-Fencing-Token header";
	int rc = pal__sink_parse_token(tok, &rq->token);
	if (rc == PAL_ETOOBIG)
		return "Palisade-Fencing-Token is above 9223372036854775807 (tokens come from a "
		       "PostgreSQL bigint sequence)";
	if (rc != PAL_OK)
		return "Palisade-Fencing-Token is not a decimal unsigned integer";
	rq->trigger = header(conn, "Palisade-Trigger");
	if (rq->trigger && pal__sink_parse_int(rq->trigger, 0, INT64_MAX, &v) != PAL_OK)
		return "Palisade-Trigger is not a non-negative decimal integer";
	rq->attempt = header(conn, "Palisade-Attempt");
	if (rq->attempt && pal__sink_parse_int(rq->attempt, 0, INT32_MAX, &v) != PAL_OK)
		return "Palisade-Attempt is not a decimal integer in 0..2147483647";
	rq->scheduled_at = header(conn, "Palisade-Scheduled-At");
	int64_t t;
	if (rq->scheduled_at && pal_parse_rfc3339(rq->scheduled_at, &t) != PAL_OK)
		return "Palisade-Scheduled-At is not an RFC 3339 timestamp";
	sink_trace(conn, rq);
	rq->chunks = 1;
	rq->chunk = 1;
	/* jobs cannot set Palisade-* headers (jobs.md), so a job's target URL
	 * may ask for chunked work with ?chunks=N instead */
	const char *chunks = header(conn, "Palisade-Test-Chunks");
	if (chunks == NULL)
		chunks = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "chunks");
	if (chunks != NULL) {
		if (pal__sink_parse_int(chunks, 1, SINK_CHUNKS_MAX, &v) != PAL_OK)
			return "Palisade-Test-Chunks (or ?chunks=) is not an integer in 1..100000";
		rq->chunks = (int)v;
	}
	/* the checkpoint is opaque to palisade; this sink's checkpoints are the
	 * number of chunks done, so only a chunked effect reads it */
	const char *cp = header(conn, "Palisade-Checkpoint");
	if (rq->chunks > 1 && cp != NULL) {
		if (pal__sink_parse_checkpoint(cp, rq->chunks - 1, &v) != PAL_OK)
			return "Palisade-Checkpoint is not a checkpoint this sink gave (an integer "
			       "below the chunk count, bare or as a JSON string)";
		rq->chunk = (int)v + 1;
	}
	rq->target = req->target;
	if (!g_utf8_validate(rq->target, -1, NULL))
		return "the request-target is not valid UTF-8";
	return NULL;
}

static const char *outcome_name(sink_outcome o)
{
	switch (o) {
	case SINK_APPLIED:
		return "applied";
	case SINK_REPLAYED:
		return "replayed";
	case SINK_STALE:
		return "stale";
	case SINK_IN_PROGRESS:
		return "in_progress";
	case SINK_MISMATCH:
		return "payload_mismatch";
	case SINK_BAD_CHECKPOINT:
		return "bad_checkpoint";
	case SINK_DB_ERROR:
		return "db_errors";
	case SINK_UNKNOWN:
		return "commit_unknown";
	}
	return "db_errors";
}

/* REP (any outcome, freed here) becomes 409 in_progress: for a request
 * whose key's last COMMIT's fate was lost (inflight.c) and that cannot reach
 * the database either, 503 would say "not applied" for an effect that may
 * have committed (docs/sink.md, "A COMMIT whose fate is unknown"). */
static void fate_lost(sink_reply *rep)
{
	free(rep->body);
	memset(rep, 0, sizeof *rep);
	rep->outcome = SINK_IN_PROGRESS;
	rep->status = MHD_HTTP_CONFLICT;
	rep->body = pal__sink_body_error("in_progress",
					 "the fate of this key's last COMMIT is not known yet");
}

static enum MHD_Result apply_validated(sink_ctx *ctx, struct MHD_Connection *conn,
				       const request *req, sink_apply_req *rq)
{
	if (!pal__sink_wait_unpaused(ctx))
		return unavailable(conn, "shutting_down");
	sink_faults f;
	pal__sink_faults_get(ctx, &f);
	if (f.error_rate > 0 && g_random_double() < f.error_rate) {
		pal__sink_count(ctx, "errors_injected");
		pal_log(PAL_LOG_DEBUG, "sink.error_injected", "{s:s, s:I, s:s, s:s, s:s, s:s}",
			"key", rq->key, "token", (json_int_t)rq->token, "trace_id", rq->trace_id,
			"span_id", rq->span_id, "trace_flags", rq->trace_flags, "tracestate",
			rq->tracestate ? rq->tracestate : "");
		if (f.error_status && f.error_status != MHD_HTTP_SERVICE_UNAVAILABLE)
			return pal__sink_respond(conn, (unsigned)f.error_status,
						 pal__sink_body_error("injected", NULL), NULL,
						 NULL);
		return unavailable(conn, "injected");
	}
	char digest[65];
	pal__sink_digest(rq->method, rq->target, req->body, req->len, digest);
	rq->digest = digest;
	rq->delay_ms = f.delay_ms;

	sink_reply rep;
	if (ctx->opts.noop) {
		pal__sink_sleep_ms(ctx, f.delay_ms);
		memset(&rep, 0, sizeof rep);
		rep.outcome = SINK_APPLIED;
		rep.status = MHD_HTTP_OK;
		rep.body = strdup("{\"applied\":true}");
		rep.committed = true;
	} else if (ctx->group != NULL && rq->delay_ms == 0) {
		pal__sink_group_apply(ctx->group, rq, &rep);
	} else {
		/* one transaction of its own: with --group-max 1, and for a
		 * request with a delay (the slow service holds its own
		 * transaction, not a whole group and its committer) */
		sink_conn *c = acquire(ctx);
		if (c == NULL && !pal__sink_lost_has(ctx, rq->key))
			return unavailable(conn, "db_unavailable");
		memset(&rep, 0, sizeof rep);
		rep.outcome = SINK_DB_ERROR;
		if (c != NULL) {
			pal__sink_effect_apply(ctx, c, rq, &rep);
			pal__sink_pool_release(ctx->pool, c);
		}
	}
	switch (rep.outcome) {
	case SINK_DB_ERROR:
		if (pal__sink_lost_has(ctx, rq->key))
			fate_lost(&rep);
		break;
	case SINK_UNKNOWN:
		pal__sink_lost(ctx, rq->key);
		break;
	case SINK_IN_PROGRESS:
		break;
	default: /* the database answered for the key */
		pal__sink_found(ctx, rq->key);
		break;
	}
	pal__sink_count(ctx, outcome_name(rep.outcome));
	pal_log(PAL_LOG_DEBUG, "sink.apply", "{s:s, s:I, s:i, s:i, s:s, s:i, s:s, s:s, s:s, s:s}",
		"key", rq->key, "token", (json_int_t)rq->token, "chunk", rq->chunk, "chunks",
		rq->chunks, "outcome", outcome_name(rep.outcome), "status", (int)rep.status,
		"trace_id", rq->trace_id, "span_id", rq->span_id, "trace_flags", rq->trace_flags,
		"tracestate", rq->tracestate ? rq->tracestate : "");

	if (rep.outcome == SINK_UNKNOWN) {
		/* the COMMIT was sent and its answer lost: a 5xx would say "not
		 * applied" (docs/protocol.md), so no answer at all, which the
		 * client reads as unknown and resolves with the status query */
		pal_log(PAL_LOG_WARN, "sink.commit_unknown", "{s:s, s:I}", "key", rq->key, "token",
			(json_int_t)rq->token);
		free(rep.body);
		return MHD_NO;
	}
	if (rep.committed && f.drop_rate > 0 && g_random_double() < f.drop_rate) {
		/* the lost response: committed, and the client hears nothing */
		pal__sink_count(ctx, "dropped_after_commit");
		pal_log(PAL_LOG_INFO, "sink.dropped_after_commit", "{s:s, s:I}", "key", rq->key,
			"token", (json_int_t)rq->token);
		free(rep.body);
		return MHD_NO;
	}
	char highest[24];
	switch (rep.outcome) {
	case SINK_REPLAYED:
		return pal__sink_respond(conn, rep.status, rep.body, "Idempotent-Replayed", "true");
	case SINK_STALE:
		snprintf(highest, sizeof highest, "%lld", (long long)rep.highest);
		return pal__sink_respond(conn, rep.status, rep.body, "Palisade-Stale-Token",
					 highest);
	case SINK_IN_PROGRESS:
	case SINK_DB_ERROR:
		return pal__sink_respond(conn, rep.status, rep.body, "Retry-After", "1");
	default:
		return pal__sink_respond(conn, rep.status, rep.body, NULL, NULL);
	}
}

static enum MHD_Result apply(sink_ctx *ctx, struct MHD_Connection *conn, const char *method,
			     const request *req)
{
	sink_apply_req rq = {.method = method};
	const char *why = validate(conn, req, &rq);
	if (why != NULL)
		return bad_request(ctx, conn, why);

	/* in flight for the status query until answered (inflight.c) */
	pal_metric_set(ctx->metrics, SINK_M_INFLIGHT, NULL, pal__sink_inflight_enter(ctx, rq.key));
	enum MHD_Result ret = apply_validated(ctx, conn, req, &rq);
	pal_metric_set(ctx->metrics, SINK_M_INFLIGHT, NULL, pal__sink_inflight_leave(ctx, rq.key));
	return ret;
}

static enum MHD_Result effects_route(sink_ctx *ctx, struct MHD_Connection *conn, const char *url,
				     const char *method, const request *req)
{
	static const char prefix[] = "/effects/";
	bool get =
	    strcmp(method, MHD_HTTP_METHOD_GET) == 0 || strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
	if (strncmp(url, prefix, sizeof prefix - 1) == 0) {
		if (get)
			return query(ctx, conn, url + sizeof prefix - 1);
		return apply(ctx, conn, method, req);
	}
	if (get && strcmp(url, "/healthz") == 0)
		return pal__sink_respond(conn, MHD_HTTP_OK, strdup("{\"ok\":true}"), NULL, NULL);
	return pal__sink_respond(conn, MHD_HTTP_NOT_FOUND, pal__sink_body_error("not_found", NULL),
				 NULL, NULL);
}

/* ---- libmicrohttpd callbacks ---------------------------------------------- */

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
	sink_listener *l = cls;
	request *req = calloc(1, sizeof *req);
	if (req == NULL)
		return NULL;
	req->target = strdup(uri);
	if (req->target == NULL) {
		free(req);
		return NULL;
	}
	atomic_fetch_add(&l->active, 1); /* MHD calls request_done() for it */
	pal_httpguard_request_line(l->guard, conn);
	return req;
}

static size_t unescape_none(void *cls, struct MHD_Connection *conn, char *s)
{
	return strlen(s);
}

static bool append(request *req, const char *data, size_t n, size_t max)
{
	if (req->len + n > max)
		return false;
	if (req->len + n + 1 > req->cap) {
		size_t cap = req->cap ? req->cap : 4096;
		while (cap < req->len + n + 1)
			cap *= 2;
		char *b = realloc(req->body, cap);
		if (b == NULL)
			return false;
		req->body = b;
		req->cap = cap;
	}
	memcpy(req->body + req->len, data, n);
	req->len += n;
	req->body[req->len] = '\0';
	return true;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload_data,
				  size_t *upload_data_size, void **con_cls)
{
	sink_listener *l = cls;
	request *req = *con_cls;
	size_t max = l->admin ? ADMIN_BODY_MAX : SINK_BODY_MAX;
	if (req == NULL)
		return MHD_NO; /* on_uri() ran out of memory */
	if (!req->seen) {
		req->seen = true;
		if (!l->admin)
			pal_metric_inc(l->ctx->metrics, SINK_M_REQUESTS, NULL, 1);
		const char *smuggled = pal_httpguard_head(l->guard, conn);
		if (smuggled != NULL) {
			pal__sink_count(l->ctx, "bad_request");
			return pal__sink_respond(conn, MHD_HTTP_BAD_REQUEST,
						 pal__sink_body_error("bad_request", smuggled),
						 MHD_HTTP_HEADER_CONNECTION, "close");
		}
		const char *cl = header(conn, MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (cl != NULL && strtoull(cl, NULL, 10) > max) {
			pal__sink_count(l->ctx, "too_large");
			return pal__sink_respond(conn, MHD_HTTP_CONTENT_TOO_LARGE,
						 pal__sink_body_error("too_large", NULL), NULL,
						 NULL);
		}
		return MHD_YES;
	}
	if (*upload_data_size != 0) {
		if (!append(req, upload_data, *upload_data_size, max)) {
			pal__sink_count(l->ctx, "too_large");
			return MHD_NO;
		}
		*upload_data_size = 0;
		return MHD_YES;
	}
	pal_httpguard_body_done(l->guard, conn);
	if (l->admin)
		return (enum MHD_Result)pal__sink_admin_route(l->ctx, conn, url, method,
							      req->body ? req->body : "", req->len);
	return effects_route(l->ctx, conn, url, method, req);
}

static void request_done(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	sink_listener *l = cls;
	request *req = *con_cls;
	pal_httpguard_request_done(l->guard, conn);
	if (req != NULL) {
		atomic_fetch_sub(&l->active, 1);
		free(req->target);
		free(req->body);
		free(req);
	}
	*con_cls = NULL;
}

static void log_mhd(void *cls, const char *fmt, va_list ap)
{
	sink_listener *l = cls;
	char msg[256];
	vsnprintf(msg, sizeof msg, fmt, ap);
	msg[strcspn(msg, "\r\n")] = '\0';
	if (!atomic_load(&l->started))
		snprintf(l->start_err, sizeof l->start_err, "%s", msg);
	else
		pal_log(PAL_LOG_DEBUG, "sink.httpd", "{s:b, s:s}", "admin", l->admin, "message",
			msg);
}

/* ---- public ---------------------------------------------------------------- */

int pal__sink_listener_start(sink_ctx *ctx, const char *addr, bool admin, sink_listener **out,
			     char *err, size_t errlen)
{
	*out = NULL;
	sink_listener *l = calloc(1, sizeof *l);
	if (l == NULL) {
		snprintf(err, errlen, "out of memory");
		return PAL_ENOMEM;
	}
	int rc = pal_listen_parse("address", 8088, addr, &l->sa, err, errlen);
	if (rc != PAL_OK) {
		free(l);
		return rc;
	}
	l->ctx = ctx;
	l->admin = admin;
	l->quiesced_fd = -1;
	unsigned flags = MHD_USE_ERROR_LOG | MHD_USE_ITC; /* ITC: for MHD_quiesce_daemon() */
	if (admin)
		flags |= MHD_USE_AUTO_INTERNAL_THREAD;
	else
		flags |=
		    MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL;
	if (l->sa.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	pal_httpguard_limits lim = {
	    .max_conns = admin ? ADMIN_CONN_LIMIT : (unsigned)ctx->opts.max_conns,
	    .max_per_addr = admin ? ADMIN_PER_ADDR_LIMIT : (unsigned)ctx->opts.max_conns_per_addr,
	    .head_timeout_ms = (unsigned)ctx->opts.head_timeout_ms,
	    .body_timeout_ms = (unsigned)ctx->opts.body_timeout_ms,
	    .idle_timeout_ms = CONN_TIMEOUT_S * 1000,
	};
	rc = pal_httpguard_new(&lim, admin ? "sink-admin" : "sink", ctx->metrics, &l->guard);
	if (rc != PAL_OK) {
		snprintf(err, errlen, "cannot set up the connection limits of %s: %s", addr,
			 pal_strerror(rc));
		free(l);
		return rc;
	}
	errno = 0;
	l->daemon = MHD_start_daemon(
	    flags, pal_listen_port(&l->sa), NULL, NULL, on_request, l, MHD_OPTION_EXTERNAL_LOGGER,
	    log_mhd, l, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&l->sa,
	    MHD_OPTION_LISTENING_ADDRESS_REUSE, 1u, MHD_OPTION_CONNECTION_LIMIT,
	    pal_httpguard_mhd_limit(l->guard, 1), MHD_OPTION_NOTIFY_CONNECTION,
	    pal_httpguard_notify, l->guard, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)CONN_TIMEOUT_S,
	    MHD_OPTION_URI_LOG_CALLBACK, on_uri, l, MHD_OPTION_UNESCAPE_CALLBACK, unescape_none, l,
	    MHD_OPTION_NOTIFY_COMPLETED, request_done, l, MHD_OPTION_END);
	if (l->daemon == NULL) {
		int e = errno;
		snprintf(err, errlen, "cannot listen on %s: %s", addr,
			 l->start_err[0] ? l->start_err
					 : (e ? strerror(e) : "libmicrohttpd refused to start"));
		pal_httpguard_free(l->guard);
		free(l);
		return PAL_EIO;
	}
	atomic_store(&l->started, true);
	l->port = pal_listen_bound_port(l->daemon);
	*out = l;
	return PAL_OK;
}

int pal__sink_listener_port(const sink_listener *l)
{
	return l ? l->port : 0;
}

void pal__sink_listener_drain(sink_listener *l, int timeout_ms)
{
	if (l == NULL)
		return;
	if (l->quiesced_fd < 0)
		l->quiesced_fd = (int)MHD_quiesce_daemon(l->daemon);
	for (int waited = 0; atomic_load(&l->active) > 0 && waited < timeout_ms; waited += 10) {
		pal_sleep_ms(10);
	}
}

void pal__sink_listener_stop(sink_listener *l)
{
	if (l == NULL)
		return;
	MHD_stop_daemon(l->daemon);
	pal_httpguard_free(l->guard);
	if (l->quiesced_fd >= 0)
		close(l->quiesced_fd);
	free(l);
}
