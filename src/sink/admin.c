/*
 * admin.c - the sink's admin routes, served on the --admin listener:
 *
 *   GET  /admin/stats    counters and the fault settings as JSON
 *   GET  /admin/faults   the fault settings
 *   POST /admin/faults   change any subset of them (all or nothing)
 *   GET  /metrics        Prometheus text (pal_metrics_render)
 *   GET  /healthz        200 while the process serves
 *
 * palisade's own admin endpoint (include/palisade/admin.h) has a fixed
 * route table, so the sink serves these on its own daemon (http.c).
 * Threading: called from the admin listener's single thread; the counters
 * live in the metrics registry (thread-safe), the settings in ctx->faults
 * (faults.c).  No authentication: bind it to loopback.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include <microhttpd.h>
#include "palisade/log.h"
#include "sink_int.h"

const char *const pal__sink_outcomes[] = {
    "applied",	   "replayed",	     "stale",	  "in_progress",     "payload_mismatch",
    "bad_request", "bad_checkpoint", "too_large", "errors_injected", "dropped_after_commit",
    "db_errors",   "commit_unknown", "found",	  "not_found",	     "query_in_progress",
};
const size_t pal__sink_n_outcomes = sizeof pal__sink_outcomes / sizeof pal__sink_outcomes[0];

static json_t *faults_json(const sink_faults *f)
{
	return json_pack("{s:I, s:f, s:i, s:f, s:b}", "delay_ms", (json_int_t)f->delay_ms,
			 "error_rate", f->error_rate, "error_status",
			 f->error_status ? f->error_status : 503, "drop_after_commit_rate",
			 f->drop_rate, "paused", f->paused);
}

static char *dump(json_t *j)
{
	char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	return s;
}

static int h_stats(sink_ctx *ctx, struct MHD_Connection *conn)
{
	json_t *j = json_object();
	json_object_set_new(
	    j, "requests",
	    json_integer((json_int_t)pal_metric_get(ctx->metrics, SINK_M_REQUESTS, NULL)));
	for (size_t i = 0; i < pal__sink_n_outcomes; i++) {
		char labels[64];
		snprintf(labels, sizeof labels, "outcome=\"%s\"", pal__sink_outcomes[i]);
		json_object_set_new(j, pal__sink_outcomes[i],
				    json_integer((json_int_t)pal_metric_get(
					ctx->metrics, SINK_M_OUTCOMES, labels)));
	}
	sink_faults f;
	pal__sink_faults_get(ctx, &f);
	pthread_mutex_lock(&ctx->mu);
	int inflight = ctx->inflight;
	pthread_mutex_unlock(&ctx->mu);
	json_object_set_new(j, "inflight", json_integer(inflight));
	json_object_set_new(j, "noop", json_boolean(ctx->opts.noop));
	json_object_set_new(j, "faults", faults_json(&f));
	return pal__sink_respond(conn, MHD_HTTP_OK, dump(j), NULL, NULL);
}

static int h_faults(sink_ctx *ctx, struct MHD_Connection *conn, bool post, const char *body,
		    size_t len)
{
	sink_faults f;
	if (!post) {
		pal__sink_faults_get(ctx, &f);
		return pal__sink_respond(conn, MHD_HTTP_OK, dump(faults_json(&f)), NULL, NULL);
	}
	char err[256];
	if (pal__sink_faults_update(ctx, body, len, &f, err, sizeof err) != PAL_OK)
		return pal__sink_respond(conn, MHD_HTTP_BAD_REQUEST,
					 pal__sink_body_error("bad_request", err), NULL, NULL);
	pal_log(PAL_LOG_INFO, "sink.faults", "{s:I, s:f, s:f, s:b}", "delay_ms",
		(json_int_t)f.delay_ms, "error_rate", f.error_rate, "drop_after_commit_rate",
		f.drop_rate, "paused", f.paused);
	return pal__sink_respond(conn, MHD_HTTP_OK, dump(faults_json(&f)), NULL, NULL);
}

static int h_metrics(sink_ctx *ctx, struct MHD_Connection *conn)
{
	char *text = pal_metrics_render(ctx->metrics);
	if (text == NULL)
		return pal__sink_respond(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, NULL, NULL);
	struct MHD_Response *r =
	    MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
	if (r == NULL) {
		free(text);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				"text/plain; version=0.0.4; charset=utf-8");
	enum MHD_Result ret = MHD_queue_response(conn, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

int pal__sink_admin_route(sink_ctx *ctx, struct MHD_Connection *conn, const char *url,
			  const char *method, const char *body, size_t len)
{
	bool get =
	    strcmp(method, MHD_HTTP_METHOD_GET) == 0 || strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
	bool post = strcmp(method, MHD_HTTP_METHOD_POST) == 0;
	if (strcmp(url, "/admin/faults") == 0 && (get || post))
		return h_faults(ctx, conn, post, body, len);
	if (get && strcmp(url, "/admin/stats") == 0)
		return h_stats(ctx, conn);
	if (get && strcmp(url, "/metrics") == 0)
		return h_metrics(ctx, conn);
	if (get && strcmp(url, "/healthz") == 0)
		return pal__sink_respond(conn, MHD_HTTP_OK, strdup("{\"ok\":true}"), NULL, NULL);
	bool known = strcmp(url, "/admin/faults") == 0 || strcmp(url, "/admin/stats") == 0 ||
		     strcmp(url, "/metrics") == 0 || strcmp(url, "/healthz") == 0;
	if (known)
		return pal__sink_respond(conn, MHD_HTTP_METHOD_NOT_ALLOWED,
					 pal__sink_body_error("method_not_allowed", NULL), "Allow",
					 strcmp(url, "/admin/faults") == 0 ? "GET, HEAD, POST"
									   : "GET, HEAD");
	return pal__sink_respond(conn, MHD_HTTP_NOT_FOUND, pal__sink_body_error("not_found", NULL),
				 NULL, NULL);
}
