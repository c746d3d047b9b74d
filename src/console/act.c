/*
 * act.c - the console's writes (console.h): the login form, logout, and the
 * action forms of the pages, each turned into one request of the HTTP API
 * (api.h) made with the session's token, so that an action from a page has
 * exactly the role checks, tenant checks, validation, rate limit and audit
 * rows of the same request from curl or `palisade --server`.
 *
 *   GET  /console/login    the login form
 *   POST /console/login    token=SECRET: opens a session (a cookie)
 *   POST /console/logout   csrf=...: ends it
 *   POST /console/act      csrf, op, target, reason (+ action, request_id):
 *                          one API call, then 303 back to the page, which
 *                          shows the outcome once
 *
 * Every form of a logged-in page carries the session's CSRF token; a POST
 * to /console/act or /console/logout without the session's own token is
 * refused (403) before anything else is read.  The login form carries none
 * (there is no session yet): the admin endpoint's Origin and Sec-Fetch-Site
 * checks refuse a cross-site post of it, as of every other write.
 *
 * The session cookie is HttpOnly and SameSite=Strict, and Secure when the
 * listener speaks TLS; over plain HTTP a login is accepted only on a
 * loopback listener, where the token and the cookie never cross a network.
 *
 * Threading: any admin thread; the session table and the API have locks of
 * their own, nothing here keeps state.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/api.h"
#include "palisade/html.h"
#include "palisade/log.h"
#include "palisade/secret.h"
#include "palisade/ops.h"
#include "console_int.h"

#define COOKIE PAL_CONSOLE_COOKIE
#define REASON_MAX 500

/* ---- forms --------------------------------------------------------------------- */

/* An application/x-www-form-urlencoded body as name -> value (the first of
 * a repeated name wins); NULL when it does not decode. */
static GHashTable *parse_form(const char *body, size_t len)
{
	GHashTable *f = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	char *text = g_strndup(body ? body : "", len);
	char **pairs = g_strsplit(text, "&", -1);
	bool bad = false;
	for (char **p = pairs; *p && !bad; p++) {
		if (!**p)
			continue;
		g_strdelimit(*p, "+", ' ');
		char *eq = strchr(*p, '=');
		if (eq)
			*eq = '\0';
		char *k = g_uri_unescape_string(*p, NULL);
		char *v = g_uri_unescape_string(eq ? eq + 1 : "", NULL);
		bad = !k || !v || !g_utf8_validate(v, -1, NULL);
		if (!bad && !g_hash_table_contains(f, k)) {
			g_hash_table_insert(f, k, v);
			continue;
		}
		g_free(k);
		g_free(v);
	}
	g_strfreev(pairs);
	g_free(text);
	if (bad) {
		g_hash_table_destroy(f);
		return NULL;
	}
	return f;
}

static const char *field(GHashTable *f, const char *name)
{
	const char *v = f ? g_hash_table_lookup(f, name) : NULL;
	return v && *v ? v : NULL;
}

/* ---- answers --------------------------------------------------------------------- */

static void reply_page(pal_console_reply *out, unsigned status, GString *html)
{
	out->status = status;
	out->content_type = "text/html; charset=utf-8";
	out->len = html->len;
	out->body = g_string_free(html, FALSE); /* g_malloc is malloc: free() works */
}

/* A 303 to WHERE (a path of ours). */
static void redirect(pal_console_reply *out, const char *where)
{
	GString *o = g_string_new("<!doctype html>\n<p>see <a href=\"");
	pal_html_text(o, where);
	g_string_append(o, "\">the console</a></p>\n");
	reply_page(out, 303, o);
	g_strlcpy(out->location, where, sizeof out->location);
}

/* The cookie that carries session ID (empty: one that deletes it). */
static void set_cookie(pal_console_reply *out, const char *id, bool tls)
{
	snprintf(out->set_cookie, sizeof out->set_cookie,
		 COOKIE "=%s; Path=/; HttpOnly; SameSite=Strict%s%s", id, *id ? "" : "; Max-Age=0",
		 tls ? "; Secure" : "");
}

/* The login page; MSG (may be NULL) says why it is shown again. */
static void login_page(pal_console_reply *out, unsigned status, const char *msg)
{
	GString *o = g_string_new(NULL);
	pal__console_page_begin(o, "palisade: log in", false);
	g_string_append(o, "<main><h2>Log in to the console</h2>\n");
	if (msg) {
		g_string_append(o, "<p class=\"banner\" id=\"login-error\">");
		pal_html_text(o, msg);
		g_string_append(o, "</p>\n");
	}
	g_string_append(
	    o, "<form id=\"login\" method=\"post\" action=\"/console/login\">\n"
	       "<p><label>API token <input type=\"password\" name=\"token\" required "
	       "autocomplete=\"off\" size=\"90\"></label></p>\n"
	       "<p><button type=\"submit\">log in</button></p>\n</form>\n"
	       "<p class=\"src\">A token from <code>palisade token create --name NAME --role "
	       "operator</code>. It stays on this node; the browser keeps only a session "
	       "cookie, which ends at logout, after 30 minutes idle or 12 hours.</p>\n"
	       "</main></body></html>\n");
	reply_page(out, status, o);
}

/* A refusal page: STATUS, TEXT. */
static void refused(pal_console_reply *out, unsigned status, const char *text)
{
	GString *o = g_string_new(NULL);
	pal__console_page_begin(o, "palisade: refused", false);
	g_string_append(o, "<main><p class=\"banner\" id=\"refused\">");
	pal_html_text(o, text);
	g_string_append(o, "</p><p><a href=\"/console\">back to the console</a></p>"
			   "</main></body></html>\n");
	reply_page(out, status, o);
}

/* ---- login and logout ---------------------------------------------------------------- */

static void login(pal_console *c, const pal_console_request *req, GHashTable *f,
		  pal_console_reply *out)
{
	if (!req->tls && !req->plain_login_ok) {
		login_page(out, 403,
			   "log in over https: this listener is not on loopback and has no TLS "
			   "(admin.tls_cert, admin.tls_key)");
		return;
	}
	const char *token = field(f, "token");
	if (!token) {
		login_page(out, 400, "no token given");
		return;
	}
	pal_token_identity who;
	char err[512];
	int rc = pal_api_identify(req->api, token, &who, err, sizeof err);
	if (rc) {
		pal_log(PAL_LOG_WARN, "console.login_refused", "{s:s, s:s}", "client", req->client,
			"reason", err);
		login_page(out, rc == PAL_ENOENT ? 401 : 503,
			   rc == PAL_ENOENT ? "the token is unknown or revoked" : err);
		return;
	}
	pal__session s;
	if (pal__session_open(c->sessions, token, &who, &s)) {
		refused(out, 500, "no random bytes for a session id");
		return;
	}
	pal_log(PAL_LOG_INFO, "console.login", "{s:s, s:s, s:s}", "token", who.name, "role",
		pal_role_name(who.role), "client", req->client);
	redirect(out, "/console");
	set_cookie(out, s.id, req->tls);
	explicit_bzero(&s, sizeof s);
}

/* The session of REQ with its CSRF token checked against the form's: true
 * with S filled; otherwise the refusal is answered. */
static bool checked_session(pal_console *c, const pal_console_request *req, GHashTable *f,
			    pal__session *s, pal_console_reply *out)
{
	if (!pal__session_get(c->sessions, req->session, true, s)) {
		login_page(out, 401, "log in first (no session, or it ended)");
		return false;
	}
	const char *csrf = field(f, "csrf");
	if (!csrf || !pal_secret_equal(csrf, s->csrf)) {
		pal_log(PAL_LOG_WARN, "console.csrf_refused", "{s:s, s:s}", "client", req->client,
			"token", s->who.name);
		refused(out, 403,
			"refused: the form carries no CSRF token of the session (a form from "
			"another page, or an old one: reload the page and try again)");
		explicit_bzero(s, sizeof *s);
		return false;
	}
	return true;
}

static void logout(pal_console *c, const pal_console_request *req, GHashTable *f,
		   pal_console_reply *out)
{
	pal__session s;
	if (!checked_session(c, req, f, &s, out))
		return;
	pal__session_end(c->sessions, s.id);
	explicit_bzero(&s, sizeof s);
	redirect(out, "/console");
	set_cookie(out, "", req->tls);
}

/* ---- actions ---------------------------------------------------------------------------- */

/* The actions a form may ask for: OP, the API path (TARGET goes into %s),
 * and what of the form goes into the JSON body besides the reason. */
static const struct op {
	const char *op, *path;
	bool action, request_id;
} ops[] = {
    {"pause-job", "/api/v1/jobs/%s/pause", false, false},
    {"resume-job", "/api/v1/jobs/%s/resume", false, false},
    {"trigger-job", "/api/v1/jobs/%s/trigger", false, true},
    {"release-job", "/api/v1/jobs/%s/release", false, false},
    {"pause-group", "/api/v1/groups/%s/pause", false, false},
    {"resume-group", "/api/v1/groups/%s/resume", false, false},
    {"pause-tenant", "/api/v1/tenants/%s/pause", false, false},
    {"resume-tenant", "/api/v1/tenants/%s/resume", false, false},
    {"pause-all", "/api/v1/pause", false, false},
    {"resume-all", "/api/v1/resume", false, false},
    {"cancel-trigger", "/api/v1/triggers/%s/cancel", false, false},
    {"resolve-ticket", "/api/v1/tickets/%s/resolve", true, false},
};

/* What the API sees of the console's request. */
typedef struct api_ctx {
	char auth[PAL_TOKEN_LEN + 160];
} api_ctx;

static const char *api_lookup(void *ctx, bool header, const char *name)
{
	api_ctx *a = ctx;
	if (!header)
		return NULL; /* the console's calls have no query arguments */
	if (!g_ascii_strcasecmp(name, "Authorization"))
		return a->auth;
	if (!g_ascii_strcasecmp(name, "Content-Type"))
		return "application/json";
	return NULL;
}

/* BACK, where the form came from, when it is one of the console's pages;
 * otherwise "/console" (never a redirect to somewhere else). */
static const char *back_to(const char *back)
{
	if (!back || strncmp(back, "/console", 8) || strlen(back) > 400 ||
	    back[strspn(back, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
			      "/?=&%._~-")] != '\0')
		return "/console";
	return back;
}

/* A path segment of an API route: a name or a number, nothing that could
 * reach another route. */
static bool target_ok(const char *t)
{
	return t && strlen(t) <= 128 && t[strcspn(t, "/?#%\\ \t\r\n")] == '\0';
}

static void act(pal_console *c, const pal_console_request *req, GHashTable *f,
		pal_console_reply *out)
{
	pal__session s;
	if (!checked_session(c, req, f, &s, out))
		return;
	const char *back = back_to(field(f, "back")), *opname = field(f, "op");
	const char *target = field(f, "target"), *why = field(f, "reason");
	const struct op *op = NULL;
	for (size_t i = 0; opname && i < G_N_ELEMENTS(ops); i++)
		if (!strcmp(ops[i].op, opname))
			op = &ops[i];
	char msg[600];
	bool needs_target = op && strstr(op->path, "%s");
	if (!op || (needs_target && !target_ok(target))) {
		snprintf(msg, sizeof msg, "unknown action \"%.40s\" or target",
			 opname ? opname : "");
		pal__session_flash(c->sessions, s.id, true, msg);
		redirect(out, back);
		explicit_bzero(&s, sizeof s);
		return;
	}
	if (!why || strlen(why) > REASON_MAX) {
		snprintf(msg, sizeof msg,
			 "%s %s: say why in 1 to %d characters (the reason is kept in "
			 "the audit log)",
			 op->op, target ? target : "", REASON_MAX);
		pal__session_flash(c->sessions, s.id, true, msg);
		redirect(out, back);
		explicit_bzero(&s, sizeof s);
		return;
	}
	char path[256];
	if (needs_target)
		snprintf(path, sizeof path, op->path, target);
	else
		snprintf(path, sizeof path, "%s", op->path);
	json_t *body = json_pack("{s:s}", "reason", why);
	if (op->action && field(f, "action"))
		json_object_set_new(body, "action", json_string(field(f, "action")));
	if (op->request_id && field(f, "request_id"))
		json_object_set_new(body, "request_id", json_string(field(f, "request_id")));
	char *text = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	api_ctx ctx;
	snprintf(ctx.auth, sizeof ctx.auth, "Bearer %s", s.token);
	pal_api_request ar = {.method = "POST",
			      .path = path,
			      .client = req->client,
			      .body = text,
			      .body_len = text ? strlen(text) : 0,
			      .lookup = api_lookup,
			      .ctx = &ctx};
	pal_api_reply rep;
	pal_api_serve(req->api, &ar, &rep);
	explicit_bzero(&ctx, sizeof ctx);
	free(text);
	json_t *ans = rep.body ? json_loadb(rep.body, rep.len, 0, NULL) : NULL;
	free(rep.body);
	bool good = rep.status >= 200 && rep.status < 300;
	const char *detail = json_string_value(json_object_get(ans, "detail"));
	snprintf(msg, sizeof msg, "%s %s: %s (%u)%s%s", op->op, target ? target : "",
		 good ? "done" : "refused", rep.status, detail ? ": " : "", detail ? detail : "");
	json_decref(ans);
	pal_log(good ? PAL_LOG_INFO : PAL_LOG_WARN, "console.action", "{s:s, s:s, s:s, s:i, s:s}",
		"op", op->op, "target", target ? target : "", "token", s.who.name, "status",
		(int)rep.status, "client", req->client);
	if (rep.status == 401) {
		/* the token was revoked since the login: the session ends with it */
		pal__session_end(c->sessions, s.id);
		explicit_bzero(&s, sizeof s);
		login_page(out, 401,
			   "the session's token is no longer accepted (revoked?): log in again");
		set_cookie(out, "", req->tls);
		return;
	}
	pal__session_flash(c->sessions, s.id, !good, msg);
	explicit_bzero(&s, sizeof s);
	redirect(out, back);
}

bool pal__console_act(pal_console *c, const pal_console_request *req, pal_console_reply *out)
{
	bool post = !strcmp(req->method, "POST");
	bool is_login = !strcmp(req->path, "/console/login");
	if (!is_login && strcmp(req->path, "/console/logout") && strcmp(req->path, "/console/act"))
		return false;
	if (!post) {
		if (is_login) {
			login_page(out, 200, NULL);
		} else {
			refused(out, 405, "use the console's forms (POST)");
			g_strlcpy(out->allow, "POST", sizeof out->allow);
		}
		return true;
	}
	if (!req->api) {
		refused(out, 404, "no API on this node: the console cannot act");
		return true;
	}
	GHashTable *f = parse_form(req->form, req->form_len);
	if (!f)
		refused(out, 400, "the form does not decode (application/x-www-form-urlencoded)");
	else if (is_login)
		login(c, req, f, out);
	else if (!strcmp(req->path, "/console/logout"))
		logout(c, req, f, out);
	else
		act(c, req, f, out);
	if (f) {
		const char *tok = g_hash_table_lookup(f, "token");
		if (tok)
			explicit_bzero((char *)tok, strlen(tok));
		g_hash_table_destroy(f);
	}
	return true;
}
