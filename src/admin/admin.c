/*
 * admin.c - the node's admin HTTP endpoint (admin.h): metrics, health,
 * readiness, status JSON, a status page and the drain action.
 *
 * Threading: libmicrohttpd runs a pool of ADMIN_THREADS internal polling
 * threads (epoll through MHD_USE_AUTO, so a process with more than
 * FD_SETSIZE descriptors still works), each serving the connections it
 * accepted; the status, health and action callbacks, the console and the
 * API are therefore called from any of them, several at once, never from
 * the thread that called pal_admin_start().  So a console page or an API
 * request waiting on PostgreSQL holds its own thread only: /healthz,
 * /readyz and /metrics are answered by the others meanwhile.  The console
 * and the API serialise their own requests (each has one connection and a
 * mutex); the callbacks copy what they report under their owners' locks.
 * Nothing here blocks on the network beyond the socket being served.  A
 * slow or crowding client cannot hold the endpoint: the guard
 * (httpguard.h) cuts a request head at its deadline and makes room for a
 * new connection by closing the oldest one waiting for a head, and
 * libmicrohttpd closes a connection idle for CONN_TIMEOUT_S.
 *
 * Security checks run on the first call of each request, before any
 * route: Host, then Origin / Sec-Fetch-Site, then the form content types
 * and the bearer token (admin.h).  A refused write is logged with the
 * client address; an accepted one goes to the action callback with it,
 * which records it (the node writes audit_log).
 *
 * Requests carry no useful body: bodies are read and discarded, and one
 * announced or sent beyond BODY_MAX is refused (413, or the connection is
 * closed when it is only discovered mid-stream).  An /api/v1 request's body
 * (up to API_BODY_MAX) is kept for the API, but only when it carries a
 * Bearer token: one without is answered from its head.  A console form's
 * body (login, logout, act; up to BODY_MAX) is kept for the console, which
 * authenticates it itself (console.h).
 *
 * libmicrohttpd's own messages go through log_mhd(): captured into the error
 * buffer while starting, afterwards logged at debug level (clients that
 * misbehave should not fill the node's log).
 *
 * Ownership: pal_admin_start() allocates the pal_admin and the daemon;
 * pal_admin_stop() stops the thread and frees both.  The metrics registry
 * and ARG are borrowed and must outlive the endpoint.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <glib.h>
#include <microhttpd.h>
#include "palisade/admin.h"
#include "palisade/api.h"
#include "palisade/console.h"
#include "palisade/html.h"
#include "palisade/httpguard.h"
#include "palisade/listen.h"
#include "palisade/log.h"
#include "palisade/secret.h"
#include "palisade/version.h"

#define BODY_MAX 65536		/* bytes of request body we are willing to read */
#define API_BODY_MAX (4u << 20) /* an /api/v1 body: a job file may be 4 MiB */
#define CONN_TIMEOUT_S 10	/* idle connection timeout */
#define ADMIN_THREADS 4		/* libmicrohttpd's thread pool */

struct pal_admin {
	struct MHD_Daemon *daemon;
	pal_httpguard *guard; /* limits, head deadline, smuggling checks */
	struct sockaddr_storage sa;
	pal_metrics *metrics;
	pal_admin_status_fn status;
	pal_admin_action_fn action;
	pal_admin_check_fn healthy, ready;
	void *arg;
	pal_console *console; /* the cluster console's paths; NULL: 404 */
	pal_api *api;	      /* /api/v1 (api.h); NULL: 404 */
	char *token;	      /* NULL: writes refused */
	bool protect_reads;
	char *host;	       /* configured Host, or NULL */
	bool loopback_names;   /* also localhost/127.0.0.1/[::1] with our port */
	char listen_host[264]; /* as written in Host: "127.0.0.1", "[::1]" */
	int port;
	bool loopback_only;	  /* listening on a loopback address only */
	atomic_bool started;	  /* false while MHD_start_daemon() runs */
	char start_err[256];	  /* last libmicrohttpd message while starting */
	char *tls_cert, *tls_key; /* PEM text handed to MHD, kept while it runs */
};

/* Per-request state, freed in request_done(). */
typedef struct request {
	size_t body_bytes;
	unsigned refused; /* a status code decided on the headers, 0 = none */
	const char *why;  /* its text */
	bool api;	  /* an /api/v1 request: its body is kept */
	bool form;	  /* a console form (login, logout, act): its body is kept */
	GString *body;	  /* the kept body (api), NULL until it comes */
	bool too_big;	  /* over the limit: the rest is discarded, then 413 */
} request;

/* ---- responses ------------------------------------------------------- */

/* A response with BODY (LEN bytes; freed with free() when OWNED, also on
 * failure) and the headers every admin response carries; NULL on ENOMEM. */
static struct MHD_Response *new_response(const char *ctype, char *body, size_t len, bool owned)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(
	    len, body, owned ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
	if (r == NULL) {
		if (owned)
			free(body);
		return NULL;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	return r;
}

/* Queue R (may be NULL: the connection is then closed) and drop our reference. */
static enum MHD_Result queue(struct MHD_Connection *conn, unsigned code, struct MHD_Response *r)
{
	if (r == NULL)
		return MHD_NO;
	enum MHD_Result ret = MHD_queue_response(conn, code, r);
	MHD_destroy_response(r);
	return ret;
}

/* R (may be NULL) with the Palisade-Version header when API: every answer
 * under /api/v1 names the node's release, those the listener gives itself
 * (a refusal, a body too large, no API) as well as the API's own. */
static struct MHD_Response *versioned(struct MHD_Response *r, bool api)
{
	if (r != NULL && api)
		MHD_add_response_header(r, "Palisade-Version", PALISADE_VERSION);
	return r;
}

static enum MHD_Result respond(struct MHD_Connection *conn, unsigned code, const char *ctype,
			       char *body, size_t len, bool owned)
{
	return queue(conn, code, new_response(ctype, body, len, owned));
}

static enum MHD_Result respond_text(struct MHD_Connection *conn, unsigned code, const char *text)
{
	return respond(conn, code, "text/plain; charset=utf-8", (char *)text, strlen(text), false);
}

/* A body over the limit: 413, as a problem (too-big) on /api/v1, whose
 * errors are all problems, as text elsewhere. */
static enum MHD_Result respond_too_big(struct MHD_Connection *conn, bool api)
{
	if (!api)
		return respond_text(conn, MHD_HTTP_CONTENT_TOO_LARGE, "request body too large\n");
	static const char problem[] =
	    "{\"type\": \"urn:palisade:problem:too-big\", \"title\": \"Request body too large\","
	    " \"status\": 413, \"detail\": \"an /api/v1 body is at most 4 MiB\"}";
	return queue(conn, MHD_HTTP_CONTENT_TOO_LARGE,
		     versioned(new_response("application/problem+json", (char *)problem,
					    sizeof problem - 1, false),
			       true));
}

/* The status object from the callback, or NULL when there is none. */
static json_t *get_status(pal_admin *a)
{
	return a->status ? a->status(a->arg) : NULL;
}

/* ---- the status page ------------------------------------------------- */

/* A JSON value as cell text: strings as they are, null as nothing, arrays
 * of scalars comma-joined, anything else as compact JSON. */
static void html_value(GString *out, const json_t *v)
{
	if (json_is_string(v)) {
		pal_html_text(out, json_string_value(v));
		return;
	}
	if (json_is_null(v))
		return;
	if (json_is_array(v)) {
		size_t i;
		const json_t *e;
		bool scalars = true;
		json_array_foreach(v, i, e)
		{
			if (json_is_object(e) || json_is_array(e))
				scalars = false;
		}
		if (scalars) {
			json_array_foreach(v, i, e)
			{
				if (i > 0)
					g_string_append(out, ", ");
				html_value(out, e);
			}
			return;
		}
	}
	char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	if (s != NULL) {
		pal_html_text(out, s);
		free(s);
	}
}

static bool is_table(const json_t *v)
{
	if (!json_is_array(v) || json_array_size(v) == 0)
		return json_is_array(v); /* an empty array still gets its section */
	size_t i;
	const json_t *e;
	json_array_foreach(v, i, e)
	{
		if (!json_is_object(e))
			return false;
	}
	return true;
}

static void html_kv_table(GString *out, const json_t *obj, bool top)
{
	const char *k;
	const json_t *v;
	g_string_append(out, "<table class=\"kv\">\n");
	json_object_foreach((json_t *)obj, k, v)
	{
		if (top && (json_is_object(v) || is_table(v)))
			continue; /* rendered as sections of their own */
		g_string_append(out, "<tr><th>");
		pal_html_text(out, k);
		g_string_append(out, "</th><td>");
		html_value(out, v);
		g_string_append(out, "</td></tr>\n");
	}
	g_string_append(out, "</table>\n");
}

/* An array of objects as a table whose columns are the union of the keys,
 * in order of first appearance. */
static void html_rows_table(GString *out, const json_t *rows)
{
	if (json_array_size(rows) == 0) {
		g_string_append(out, "<p class=\"none\">none</p>\n");
		return;
	}
	json_t *cols = json_object(); /* used as an ordered set of keys */
	size_t i;
	const json_t *row;
	const char *k;
	const json_t *v;
	json_array_foreach(rows, i, row)
	{
		json_object_foreach((json_t *)row, k, v)
		{
			json_object_set_new(cols, k, json_true());
		}
	}
	g_string_append(out, "<table>\n<tr>");
	json_object_foreach(cols, k, v)
	{
		g_string_append(out, "<th>");
		pal_html_text(out, k);
		g_string_append(out, "</th>");
	}
	g_string_append(out, "</tr>\n");
	json_array_foreach(rows, i, row)
	{
		g_string_append(out, "<tr>");
		json_object_foreach(cols, k, v)
		{
			g_string_append(out, "<td>");
			html_value(out, json_object_get(row, k));
			g_string_append(out, "</td>");
		}
		g_string_append(out, "</tr>\n");
	}
	g_string_append(out, "</table>\n");
	json_decref(cols);
}

static const char page_head[] =
    "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
    "<meta http-equiv=\"refresh\" content=\"5\">\n"
    "<style>body{font:14px system-ui,sans-serif;margin:1.5em}"
    "table{border-collapse:collapse;margin:.3em 0 1.2em}"
    "th,td{border:1px solid #ccc;padding:.2em .6em;text-align:left}"
    "th{background:#f3f3f3}table.kv th{width:14em}"
    "p.none{color:#777}footer{color:#777;margin-top:2em}</style>\n";

/* The whole page for STATUS (may be NULL); returns malloc()ed HTML. */
static char *render_page(const json_t *status)
{
	GString *out = g_string_new(page_head);
	const char *node = json_string_value(json_object_get(status, "node"));
	g_string_append(out, "<title>palisade ");
	pal_html_text(out, node ? node : "");
	g_string_append(out, "</title></head><body>\n<h1>palisade ");
	pal_html_text(out, node ? node : "");
	g_string_append(out, "</h1>\n");
	if (!json_is_object(status)) {
		g_string_append(out, "<p class=\"none\">status unavailable</p>\n");
	} else {
		html_kv_table(out, status, true);
		const char *k;
		const json_t *v;
		json_object_foreach((json_t *)status, k, v)
		{
			if (!json_is_object(v) && !is_table(v))
				continue;
			g_string_append(out, "<h2>");
			pal_html_text(out, k);
			g_string_append(out, "</h2>\n");
			if (json_is_object(v))
				html_kv_table(out, v, false);
			else
				html_rows_table(out, v);
		}
	}
	g_string_append(out, "<footer><a href=\"/status\">/status</a> &middot; "
			     "<a href=\"/metrics\">/metrics</a> &middot; refreshes every 5 s"
			     "</footer>\n</body></html>\n");
	/* g_malloc is malloc since GLib 2.46, so MHD may free() this */
	return g_string_free(out, FALSE);
}

/* ---- routes ----------------------------------------------------------- */

typedef enum MHD_Result (*route_fn)(pal_admin *a, struct MHD_Connection *conn);

static enum MHD_Result h_metrics(pal_admin *a, struct MHD_Connection *conn)
{
	char *text = pal_metrics_render(a->metrics);
	if (text == NULL)
		return respond_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	return respond(conn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", text,
		       strlen(text), true);
}

/* 200 TEXT, or 503 "not TEXT: why" (the why comes from the callback). */
static enum MHD_Result respond_check(struct MHD_Connection *conn, bool ok, const char *text,
				     const char *why)
{
	if (ok) {
		char *body = g_strdup_printf("%s\n", text);
		return respond(conn, MHD_HTTP_OK, "text/plain; charset=utf-8", body, strlen(body),
			       true);
	}
	char *body =
	    why[0] ? g_strdup_printf("not %s: %s\n", text, why) : g_strdup_printf("not %s\n", text);
	return respond(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain; charset=utf-8", body,
		       strlen(body), true);
}

static enum MHD_Result h_healthz(pal_admin *a, struct MHD_Connection *conn)
{
	char why[512] = "";
	bool ok = a->healthy ? a->healthy(a->arg, why, sizeof why) : true;
	return respond_check(conn, ok, ok ? "ok" : "healthy", why);
}

static enum MHD_Result h_readyz(pal_admin *a, struct MHD_Connection *conn)
{
	char why[512] = "";
	bool ok;
	if (a->ready) {
		ok = a->ready(a->arg, why, sizeof why);
	} else {
		json_t *st = get_status(a);
		ok = json_is_true(json_object_get(st, "ready"));
		json_decref(st);
	}
	return respond_check(conn, ok, "ready", why);
}

static enum MHD_Result h_status(pal_admin *a, struct MHD_Connection *conn)
{
	json_t *st = get_status(a);
	char *text = st ? json_dumps(st, JSON_INDENT(2) | JSON_ENCODE_ANY) : NULL;
	json_decref(st);
	if (text == NULL) {
		static const char unavailable[] = "{\"error\": \"status unavailable\"}\n";
		return respond(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "application/json",
			       (char *)unavailable, sizeof unavailable - 1, false);
	}
	size_t n = strlen(text);
	char *body = realloc(text, n + 2);
	if (body == NULL) {
		free(text);
		return respond_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	}
	body[n] = '\n';
	body[n + 1] = '\0';
	return respond(conn, MHD_HTTP_OK, "application/json", body, n + 1, true);
}

static enum MHD_Result h_page(pal_admin *a, struct MHD_Connection *conn)
{
	json_t *st = get_status(a);
	char *html = render_page(st);
	json_decref(st);
	struct MHD_Response *r = new_response("text/html; charset=utf-8", html, strlen(html), true);
	/* the page shows operator-supplied strings: forbid scripts outright */
	if (r != NULL)
		MHD_add_response_header(r, "Content-Security-Policy",
					"default-src 'none'; style-src 'unsafe-inline'");
	return queue(conn, MHD_HTTP_OK, r);
}

/* "addr:port" of the client into BUF. */
static const char *client_addr(struct MHD_Connection *conn, char *buf, size_t len)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	snprintf(buf, len, "unknown");
	if (ci == NULL || ci->client_addr == NULL)
		return buf;
	const struct sockaddr *sa = ci->client_addr;
	char host[INET6_ADDRSTRLEN] = "?";
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
		inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
		snprintf(buf, len, "%s:%u", host, ntohs(in->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
		snprintf(buf, len, "[%s]:%u", host, ntohs(in6->sin6_port));
	}
	return buf;
}

static enum MHD_Result h_drain(pal_admin *a, struct MHD_Connection *conn)
{
	if (a->action == NULL)
		return respond_text(conn, MHD_HTTP_NOT_IMPLEMENTED, "no actions on this node\n");
	char client[80];
	client_addr(conn, client, sizeof client);
	int rc = a->action(a->arg, "drain", client);
	pal_log(PAL_LOG_INFO, "admin.drain", "{s:b, s:i, s:s}", "accepted", rc == 0, "rc", rc,
		"client", client);
	return rc == 0 ? respond_text(conn, MHD_HTTP_ACCEPTED, "draining\n")
		       : respond_text(conn, MHD_HTTP_CONFLICT, "drain refused\n");
}

/* The console's headers: no script, forms only to us, never in a frame. */
static void console_headers(struct MHD_Response *r)
{
	MHD_add_response_header(
	    r, "Content-Security-Policy",
	    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
	    "frame-ancestors 'none'");
	MHD_add_response_header(r, "X-Frame-Options", "DENY");
	MHD_add_response_header(r, "Referrer-Policy", "same-origin");
}

/* The cluster console (console.h) for PATH: its pages and JSON (GET), its
 * login and action forms (POST, with the form body of REQ). */
static enum MHD_Result console_route(pal_admin *a, struct MHD_Connection *conn, const char *path,
				     const char *method, const request *req)
{
	pal_console_reply rep;
	json_t *st = get_status(a);
	char client[80];
	client_addr(conn, client, sizeof client);
	pal_console_request cr = {
	    .method = method,
	    .path = path,
	    .id = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "id"),
	    .section = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "section"),
	    .q = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "q"),
	    .after = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "after"),
	    .session = MHD_lookup_connection_value(conn, MHD_COOKIE_KIND, PAL_CONSOLE_COOKIE),
	    .form = req && req->body ? req->body->str : NULL,
	    .form_len = req && req->body ? req->body->len : 0,
	    .client = client,
	    .tls = a->tls_cert != NULL,
	    .plain_login_ok = a->loopback_only,
	    .node_status = st,
	    .api = a->api,
	};
	bool ok = a->console && pal_console_serve(a->console, &cr, &rep);
	json_decref(st);
	if (!ok)
		return respond_text(conn, MHD_HTTP_NOT_FOUND, "no console on this node\n");
	struct MHD_Response *r = new_response(rep.content_type, rep.body, rep.len, true);
	if (r != NULL) {
		console_headers(r);
		if (rep.location[0])
			MHD_add_response_header(r, MHD_HTTP_HEADER_LOCATION, rep.location);
		if (rep.set_cookie[0])
			MHD_add_response_header(r, MHD_HTTP_HEADER_SET_COOKIE, rep.set_cookie);
		if (rep.allow[0])
			MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, rep.allow);
	}
	return queue(conn, rep.status, r);
}
static enum MHD_Result h_console(pal_admin *a, struct MHD_Connection *c)
{
	return console_route(a, c, "/console", "GET", NULL);
}
static enum MHD_Result h_console_job(pal_admin *a, struct MHD_Connection *c)
{
	return console_route(a, c, "/console/job", "GET", NULL);
}
static enum MHD_Result h_api_cluster(pal_admin *a, struct MHD_Connection *c)
{
	return console_route(a, c, "/api/cluster", "GET", NULL);
}
static enum MHD_Result h_api_job(pal_admin *a, struct MHD_Connection *c)
{
	return console_route(a, c, "/api/job", "GET", NULL);
}

static const struct route {
	const char *path;
	bool post; /* POST only; otherwise GET and HEAD */
	route_fn fn;
} routes[] = {
    {"/metrics", false, h_metrics},
    {"/healthz", false, h_healthz},
    {"/readyz", false, h_readyz},
    {"/status", false, h_status},
    {"/", false, h_page},
    {"/drain", true, h_drain},
    {"/console", false, h_console},
    {"/console/job", false, h_console_job},
    {"/api/cluster", false, h_api_cluster},
    {"/api/job", false, h_api_job},
};

/* ---- security (admin.h) ------------------------------------------------ */

/* HOST (a Host header value, or an Origin's authority) names this
 * endpoint: the configured host (its port optional in the config), or
 * the listen address or, on loopback, a localhost name with our port. */
static bool host_allowed(const pal_admin *a, const char *host, size_t len)
{
	if (a->host != NULL) {
		size_t hl = strlen(a->host);
		if (len == hl && strncasecmp(host, a->host, hl) == 0)
			return true;
		/* "name" in the config accepts "name:PORT" of our port */
		char with_port[300];
		snprintf(with_port, sizeof with_port, "%s:%d", a->host, a->port);
		return len == strlen(with_port) && strncasecmp(host, with_port, len) == 0;
	}
	char cand[300];
	const char *names[4] = {a->listen_host, NULL, NULL, NULL};
	if (a->loopback_names) {
		names[1] = "localhost";
		names[2] = "127.0.0.1";
		names[3] = "[::1]";
	}
	for (size_t i = 0; i < 4; i++) {
		if (names[i] == NULL || names[i][0] == '\0')
			continue;
		snprintf(cand, sizeof cand, "%s:%d", names[i], a->port);
		if (len == strlen(cand) && strncasecmp(host, cand, len) == 0)
			return true;
	}
	return false;
}

/* A form content type: what a plain HTML form (or a "simple" fetch) sends. */
static bool simple_content_type(const char *ct)
{
	static const char *const forms[] = {"application/x-www-form-urlencoded",
					    "multipart/form-data", "text/plain"};
	while (*ct == ' ' || *ct == '\t')
		ct++;
	for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
		size_t n = strlen(forms[i]);
		if (strncasecmp(ct, forms[i], n) == 0 &&
		    (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' '))
			return true;
	}
	return false;
}

/* /api/v1 and below: the API (api.h) checks tokens and roles itself. */
static bool is_api_path(const char *url)
{
	return strncmp(url, "/api/v1", 7) == 0 && (url[7] == '\0' || url[7] == '/');
}

/* The console's login, logout and action paths: they take a form and
 * authenticate it themselves (a token, or a session and its CSRF token). */
static bool is_console_form(const char *url)
{
	return !strcmp(url, "/console/login") || !strcmp(url, "/console/logout") ||
	       !strcmp(url, "/console/act");
}

static bool is_write_route(const char *url)
{
	return strcmp(url, "/drain") == 0;
}

/* The token of the request's "Authorization: Bearer TOKEN", NULL when it
 * has none (borrowed from the connection). */
static const char *bearer(struct MHD_Connection *conn)
{
	const char *auth =
	    MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	if (auth == NULL || strncasecmp(auth, "Bearer ", 7) != 0)
		return NULL;
	const char *given = auth + 7;
	while (*given == ' ')
		given++;
	return given;
}

/* The bearer token check: 0 when it passes, else the status to answer. */
static unsigned check_token(const pal_admin *a, struct MHD_Connection *conn, const char **why)
{
	if (a->token == NULL) {
		*why = "no admin token is configured on this node (admin.token_file, "
		       "admin.token_env)\n";
		return MHD_HTTP_FORBIDDEN;
	}
	const char *given = bearer(conn);
	if (given == NULL) {
		*why = "authorization required (Authorization: Bearer TOKEN)\n";
		return MHD_HTTP_UNAUTHORIZED;
	}
	if (!pal_secret_equal(given, a->token)) {
		*why = "wrong token\n";
		return MHD_HTTP_UNAUTHORIZED;
	}
	return 0;
}

/* Every check that the headers decide; 0 when the request may proceed. */
static unsigned check_request(const pal_admin *a, struct MHD_Connection *conn, const char *url,
			      const char *method, const char **why)
{
	const char *host = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
	if (host == NULL || !host_allowed(a, host, strlen(host))) {
		*why = "this endpoint does not serve that Host (admin.host)\n";
		return MHD_HTTP_MISDIRECTED_REQUEST;
	}
	const char *origin = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Origin");
	if (origin != NULL) {
		const char *auth = NULL;
		if (strncasecmp(origin, "http://", 7) == 0)
			auth = origin + 7;
		else if (strncasecmp(origin, "https://", 8) == 0)
			auth = origin + 8;
		if (auth == NULL || !host_allowed(a, auth, strcspn(auth, "/"))) {
			*why = "cross-origin requests are refused\n";
			return MHD_HTTP_FORBIDDEN;
		}
	}
	const char *site = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Sec-Fetch-Site");
	if (site != NULL && strcasecmp(site, "same-origin") != 0 && strcasecmp(site, "none") != 0) {
		*why = "cross-site requests are refused\n";
		return MHD_HTTP_FORBIDDEN;
	}
	if (is_api_path(url) || is_console_form(url))
		return 0;
	bool write = is_write_route(url) && strcmp(method, MHD_HTTP_METHOD_POST) == 0;
	if (write) {
		const char *ct = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
							     MHD_HTTP_HEADER_CONTENT_TYPE);
		if (ct != NULL && simple_content_type(ct)) {
			*why = "form content types are refused: a write sends no body\n";
			return MHD_HTTP_UNSUPPORTED_MEDIA_TYPE;
		}
	}
	if (write || a->protect_reads)
		return check_token(a, conn, why);
	return 0;
}

static enum MHD_Result refuse(const pal_admin *a, struct MHD_Connection *conn, const char *url,
			      const char *method, unsigned code, const char *why)
{
	char client[80];
	client_addr(conn, client, sizeof client);
	pal_log(is_write_route(url) ? PAL_LOG_WARN : PAL_LOG_DEBUG, "admin.refused",
		"{s:s, s:s, s:s, s:i, s:s}", "client", client, "method", method, "path", url,
		"status", (int)code, "reason", why);
	struct MHD_Response *r = versioned(
	    new_response("text/plain; charset=utf-8", (char *)why, strlen(why), false),
	    is_api_path(url));
	if (r != NULL && code == MHD_HTTP_UNAUTHORIZED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
					"Bearer realm=\"palisade\"");
	return queue(conn, code, r);
}

static const char *api_lookup(void *ctx, bool header, const char *name)
{
	return MHD_lookup_connection_value(ctx, header ? MHD_HEADER_KIND : MHD_GET_ARGUMENT_KIND,
					   name);
}

static enum MHD_Result add_arg(void *cls, enum MHD_ValueKind kind, const char *key,
			       const char *value)
{
	(void)kind;
	g_ptr_array_add(cls, g_strdup_printf("%zu:%s=%zu:%s\n", strlen(key), key,
					     value ? strlen(value) : 0, value ? value : ""));
	return MHD_YES;
}

static gint cmp_str(gconstpointer a, gconstpointer b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The query arguments of CONN in the canonical text of pal_api_request's
 * query: sorted, so their order does not matter.  Free with g_free(). */
static char *canonical_query(struct MHD_Connection *conn)
{
	GPtrArray *args = g_ptr_array_new_with_free_func(g_free);
	MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, add_arg, args);
	g_ptr_array_sort(args, cmp_str);
	GString *s = g_string_new(NULL);
	for (guint i = 0; i < args->len; i++)
		g_string_append(s, g_ptr_array_index(args, i));
	g_ptr_array_free(args, TRUE);
	return g_string_free(s, FALSE);
}

/* An /api/v1 request, answered by the API module. */
static enum MHD_Result api_route(pal_admin *a, struct MHD_Connection *conn, const char *url,
				 const char *method, const request *req)
{
	if (a->api == NULL) {
		static const char none[] = "no API on this node\n";
		return queue(conn, MHD_HTTP_NOT_FOUND,
			     versioned(new_response("text/plain; charset=utf-8", (char *)none,
						    sizeof none - 1, false),
				       true));
	}
	char client[80];
	client_addr(conn, client, sizeof client);
	pal_api_request ar = {.method = method,
			      .path = url,
			      .client = client,
			      .body = req->body ? req->body->str : NULL,
			      .body_len = req->body ? req->body->len : 0,
			      .lookup = api_lookup,
			      .ctx = conn,
			      .query = canonical_query(conn)};
	pal_api_reply rep;
	pal_api_serve(a->api, &ar, &rep);
	g_free((char *)ar.query);
	struct MHD_Response *r = new_response(rep.content_type, rep.body, rep.len, true);
	for (int i = 0; r != NULL && i < rep.n_headers; i++)
		MHD_add_response_header(r, rep.header_name[i], rep.header_value[i]);
	return queue(conn, rep.status, r);
}

static enum MHD_Result dispatch(pal_admin *a, struct MHD_Connection *conn, const char *url,
				const char *method)
{
	for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
		const struct route *r = &routes[i];
		if (strcmp(url, r->path) != 0)
			continue;
		bool ok = r->post ? strcmp(method, MHD_HTTP_METHOD_POST) == 0
				  : (strcmp(method, MHD_HTTP_METHOD_GET) == 0 ||
				     strcmp(method, MHD_HTTP_METHOD_HEAD) == 0);
		if (ok)
			return r->fn(a, conn);
		static const char msg[] = "method not allowed\n";
		struct MHD_Response *resp =
		    new_response("text/plain; charset=utf-8", (char *)msg, sizeof msg - 1, false);
		if (resp != NULL)
			MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW,
						r->post ? "POST" : "GET, HEAD");
		return queue(conn, MHD_HTTP_METHOD_NOT_ALLOWED, resp);
	}
	return respond_text(conn, MHD_HTTP_NOT_FOUND, "not found\n");
}

/* libmicrohttpd's request callback: first call with headers only, then once
 * per body chunk, then once more with no data, when we answer. */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload_data,
				  size_t *upload_data_size, void **con_cls)
{
	pal_admin *a = cls;
	request *req = *con_cls;
	if (req == NULL) {
		req = calloc(1, sizeof *req);
		if (req == NULL)
			return MHD_NO;
		*con_cls = req;
		const char *smuggled = pal_httpguard_head(a->guard, conn);
		if (smuggled != NULL) {
			struct MHD_Response *r =
			    versioned(new_response("text/plain; charset=utf-8", (char *)smuggled,
						   strlen(smuggled), false),
				      is_api_path(url));
			pal_httpguard_close_after(r);
			return queue(conn, MHD_HTTP_BAD_REQUEST, r);
		}
		req->refused = check_request(a, conn, url, method, &req->why);
		req->api = is_api_path(url);
		req->form = is_console_form(url);
		const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
							     MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (cl != NULL && strtoull(cl, NULL, 10) > (req->api ? API_BODY_MAX : BODY_MAX))
			return respond_too_big(conn, req->api);
		/* An API request without a token is answered from its head (401,
		 * or what a route that needs none says), never after keeping a
		 * body of up to API_BODY_MAX for a client that has shown nothing. */
		if (req->api && !req->refused && bearer(conn) == NULL)
			return api_route(a, conn, url, method, req);
		return MHD_YES;
	}
	if (*upload_data_size != 0) {
		size_t max = req->api ? API_BODY_MAX : BODY_MAX;
		req->body_bytes += *upload_data_size;
		if ((req->api || req->form) && !req->refused && req->body_bytes <= max) {
			if (req->body == NULL)
				req->body = g_string_new(NULL);
			g_string_append_len(req->body, upload_data, (gssize)*upload_data_size);
		}
		*upload_data_size = 0; /* other routes need no body: discarded */
		/* A chunked body (no Content-Length) over the limit is read to its
		 * end and answered 413; one that goes on past four times the limit
		 * has its connection closed. */
		req->too_big = req->body_bytes > max;
		return req->body_bytes > 4 * (size_t)max ? MHD_NO : MHD_YES;
	}
	pal_httpguard_body_done(a->guard, conn);
	if (req->too_big)
		return respond_too_big(conn, req->api);
	if (req->refused)
		return refuse(a, conn, url, method, req->refused, req->why);
	if (req->api)
		return api_route(a, conn, url, method, req);
	if (req->form)
		return console_route(a, conn, url, method, req);
	return dispatch(a, conn, url, method);
}

static void request_done(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	pal_admin *a = cls;
	pal_httpguard_request_done(a->guard, conn);
	request *req = *con_cls;
	if (req != NULL && req->body != NULL)
		g_string_free(req->body, TRUE);
	free(req);
	*con_cls = NULL;
}

/* The request line arrived; the request state is made on the first call
 * of on_request(), so none here. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
	pal_admin *a = cls;
	pal_httpguard_request_line(a->guard, conn);
	return NULL;
}

static void log_mhd(void *cls, const char *fmt, va_list ap)
{
	pal_admin *a = cls;
	char msg[256];
	vsnprintf(msg, sizeof msg, fmt, ap);
	msg[strcspn(msg, "\r\n")] = '\0';
	if (!atomic_load(&a->started))
		snprintf(a->start_err, sizeof a->start_err, "%s", msg);
	else
		pal_log(PAL_LOG_DEBUG, "admin.httpd", "{s:s}", "message", msg);
}

/* ---- public ---------------------------------------------------------- */

/* The host part of the listen address as a client writes it in Host, and
 * whether localhost names are accepted too (loopback or every interface). */
static void listen_names(pal_admin *a)
{
	char h[INET6_ADDRSTRLEN] = "";
	if (a->sa.ss_family == AF_INET6) {
		const struct in6_addr *in6 = &((const struct sockaddr_in6 *)&a->sa)->sin6_addr;
		inet_ntop(AF_INET6, in6, h, sizeof h);
		snprintf(a->listen_host, sizeof a->listen_host, "[%s]", h);
		a->loopback_names = IN6_IS_ADDR_LOOPBACK(in6) || IN6_IS_ADDR_UNSPECIFIED(in6);
		a->loopback_only = IN6_IS_ADDR_LOOPBACK(in6);
	} else {
		const struct in_addr *in = &((const struct sockaddr_in *)&a->sa)->sin_addr;
		inet_ntop(AF_INET, in, h, sizeof h);
		snprintf(a->listen_host, sizeof a->listen_host, "%s", h);
		uint32_t v = ntohl(in->s_addr);
		a->loopback_names = (v >> 24) == 127 || v == 0;
		a->loopback_only = (v >> 24) == 127;
	}
}

static void admin_free(pal_admin *a)
{
	if (a->tls_key)
		memset(a->tls_key, 0, strlen(a->tls_key));
	g_free(a->tls_key);
	g_free(a->tls_cert);
	pal_httpguard_free(a->guard);
	free(a->token);
	free(a->host);
	free(a);
}

int pal_admin_start(const pal_admin_config *cfg, pal_admin **out, char *err, size_t errlen)
{
	*out = NULL;
	const char *addr = cfg->listen;
	pal_admin *a = calloc(1, sizeof *a);
	if (a == NULL) {
		snprintf(err, errlen, "admin endpoint: out of memory");
		return PAL_ENOMEM;
	}
	int rc = pal_listen_parse("admin address", 9464, addr, &a->sa, err, errlen);
	if (rc != 0) {
		free(a);
		return rc;
	}
	a->metrics = cfg->metrics;
	a->status = cfg->status;
	a->action = cfg->action;
	a->healthy = cfg->healthy;
	a->ready = cfg->ready;
	a->arg = cfg->arg;
	a->console = cfg->console;
	a->api = cfg->api;
	a->token = cfg->token && cfg->token[0] ? strdup(cfg->token) : NULL;
	a->host = cfg->host && cfg->host[0] ? strdup(cfg->host) : NULL;
	a->protect_reads = cfg->protect_reads;
	listen_names(a);
	pal_httpguard_limits lim = {
	    .max_conns = cfg->max_conns ? cfg->max_conns : PAL_ADMIN_MAX_CONNS,
	    .max_per_addr = cfg->max_per_addr ? cfg->max_per_addr : PAL_ADMIN_MAX_PER_ADDR,
	    .head_timeout_ms =
		cfg->head_timeout_ms ? cfg->head_timeout_ms : PAL_ADMIN_HEAD_TIMEOUT_MS,
	    .body_timeout_ms =
		cfg->body_timeout_ms ? cfg->body_timeout_ms : PAL_ADMIN_BODY_TIMEOUT_MS,
	    .idle_timeout_ms = CONN_TIMEOUT_S * 1000,
	};
	rc = pal_httpguard_new(&lim, "admin", a->metrics, &a->guard);
	if (rc != PAL_OK) {
		snprintf(err, errlen, "admin endpoint: cannot set up its connection limits: %s",
			 pal_strerror(rc));
		admin_free(a);
		return rc;
	}

	unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG;
	if (a->sa.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	/* HTTPS: libmicrohttpd's TLS (GnuTLS) with the PEM files read here */
	char *cert = NULL, *key = NULL;
	struct MHD_OptionItem tls[3] = {{MHD_OPTION_END, 0, NULL}};
	if (cfg->tls_cert && cfg->tls_cert[0]) {
		GError *ge = NULL;
		if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES ||
		    !g_file_get_contents(cfg->tls_cert, &cert, NULL, &ge) ||
		    !g_file_get_contents(cfg->tls_key ? cfg->tls_key : "", &key, NULL, &ge)) {
			snprintf(err, errlen, "admin endpoint: TLS: %s",
				 ge ? ge->message : "libmicrohttpd is built without TLS");
			if (ge)
				g_error_free(ge);
			g_free(cert);
			g_free(key);
			admin_free(a);
			return PAL_EINVAL;
		}
		flags |= MHD_USE_TLS;
		tls[0] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, key};
		tls[1] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, cert};
		tls[2] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
	}
	/* MHD binds SOCK_ADDR and uses the port argument only in its messages */
	uint16_t port = pal_listen_port(&a->sa);
	a->port = port; /* Host checks of the first requests; port 0 is fixed below */
	errno = 0;
	a->daemon = MHD_start_daemon(
	    flags, port, NULL, NULL, on_request, a, MHD_OPTION_EXTERNAL_LOGGER, log_mhd, a,
	    MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&a->sa, MHD_OPTION_CONNECTION_LIMIT,
	    pal_httpguard_mhd_limit(a->guard, ADMIN_THREADS), MHD_OPTION_CONNECTION_TIMEOUT,
	    (unsigned)CONN_TIMEOUT_S, MHD_OPTION_NOTIFY_CONNECTION, pal_httpguard_notify, a->guard,
	    MHD_OPTION_URI_LOG_CALLBACK, on_uri, a, MHD_OPTION_NOTIFY_COMPLETED, request_done, a,
	    MHD_OPTION_THREAD_POOL_SIZE, (unsigned)ADMIN_THREADS, MHD_OPTION_ARRAY, tls,
	    MHD_OPTION_END);
	a->tls_cert = cert; /* MHD keeps the pointers: freed with the endpoint */
	a->tls_key = key;
	if (a->daemon == NULL) {
		int e = errno;
		snprintf(err, errlen, "admin endpoint: cannot listen on %s: %s", addr,
			 a->start_err[0] ? a->start_err
					 : (e ? strerror(e) : "libmicrohttpd refused to start"));
		admin_free(a);
		return PAL_EIO;
	}
	atomic_store(&a->started, true); /* from now on log_mhd() runs in MHD's thread */

	a->port = pal_listen_bound_port(a->daemon);
	pal_log(PAL_LOG_INFO, "admin.listening", "{s:s, s:i, s:b, s:b, s:s?}", "addr", addr, "port",
		a->port, "writes", a->token != NULL, "reads_need_token", a->protect_reads, "host",
		a->host);
	*out = a;
	return PAL_OK;
}

int pal_admin_port(const pal_admin *a)
{
	return a ? a->port : 0;
}

void pal_admin_stop(pal_admin *a)
{
	if (a == NULL)
		return;
	MHD_stop_daemon(a->daemon);
	admin_free(a);
}
