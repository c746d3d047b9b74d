/*
 * console.c - the cluster console (console.h): gathers one model of the
 * cluster and renders it as HTML or JSON.
 *
 * The model of a cluster page, built per request:
 *   - PostgreSQL (pal_store_console_cluster): shards, backlogs, leases,
 *     attempts, misfires, tickets, breakers, jobs - the same whichever node
 *     serves the page;
 *   - ZooKeeper (pal_coord_inspector_nodes, through a session the console
 *     keeps from page to page): the live nodes and what they registered
 *     (version, roles, schema, admin address);
 *   - each live peer's /status (ready, draining, its executor's counters),
 *     fetched with a short timeout; this node's own status from memory.
 * A source that fails is named on the page (and in the JSON under
 * database/zookeeper) and the rest still renders.  After a failure the
 * source is not retried for RETRY_MS, so a page with the database down
 * answers at once instead of waiting out a connect timeout every time.
 *
 * Threading: called from the admin endpoint's thread(s); one request at a
 * time (c->mu), which also keeps the one connection single-threaded.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <curl/curl.h>
#include "palisade/clock.h"
#include "palisade/console.h"
#include "palisade/consolestore.h"
#include "palisade/coord.h"
#include "palisade/html.h"
#include "palisade/jobspec.h"
#include "palisade/log.h"
#include "palisade/ops.h"
#include "palisade/schedule.h"
#include "palisade/store.h"
#include "palisade/timefmt.h"
#include "palisade/trace.h"
#include "console_int.h"

#define RETRY_MS 5000	     /* a failed source is not asked again before this */
#define PEER_TIMEOUT_MS 800  /* a peer's /status */
#define PEER_BODY_MAX 262144 /* bytes of a peer's /status we read */

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

int pal_console_open(const pal_console_config *cfg, pal_console **out, char *err, size_t errlen)
{
	*out = NULL;
	pal_console *c = calloc(1, sizeof *c);
	if (!c) {
		snprintf(err, errlen, "console: out of memory");
		return PAL_ENOMEM;
	}
	c->conninfo = dup_or_null(cfg->conninfo);
	c->zk_connect = dup_or_null(cfg->zk_connect);
	c->zk_root = strdup(cfg->zk_root ? cfg->zk_root : "/palisade");
	c->cluster = strdup(cfg->cluster ? cfg->cluster : "default");
	c->node_id = strdup(cfg->node_id ? cfg->node_id : "");
	c->peer_token = cfg->peer_token && *cfg->peer_token ? strdup(cfg->peer_token) : NULL;
	c->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : 2000;
	pthread_mutex_init(&c->mu, NULL);
	c->sessions = pal__sessions_new();
	c->history = pal__history_start(cfg->metrics);
	*out = c;
	return PAL_OK;
}

void pal_console_close(pal_console *c)
{
	if (!c)
		return;
	pal_store_close(c->st);
	pal_coord_inspector_close(c->zk);
	pal__history_stop(c->history);
	pal__sessions_free(c->sessions);
	pthread_mutex_destroy(&c->mu);
	free(c->conninfo);
	free(c->zk_connect);
	free(c->zk_root);
	free(c->cluster);
	free(c->node_id);
	free(c->peer_token);
	free(c);
}

/* ---- sources ----------------------------------------------------------- */

/* The console's connection, opened if needed; NULL with c->db_err. */
static pal_store *db(pal_console *c)
{
	if (c->st)
		return c->st;
	if (pal_mono_ms() < c->db_retry_at)
		return NULL; /* c->db_err still says why */
	char err[512];
	if (pal_store_console_open(c->conninfo, c->timeout_ms, &c->st, err, sizeof err)) {
		snprintf(c->db_err, sizeof c->db_err, "%s", err);
		c->db_retry_at = pal_mono_ms() + RETRY_MS;
		c->st = NULL;
		return NULL;
	}
	c->db_err[0] = '\0';
	return c->st;
}

/* A query on the console's connection failed: drop it (the next page
 * reconnects after RETRY_MS) and remember why. */
static void db_failed(pal_console *c, const char *err)
{
	snprintf(c->db_err, sizeof c->db_err, "%s", err);
	pal_store_close(c->st);
	c->st = NULL;
	c->db_retry_at = pal_mono_ms() + RETRY_MS;
	pal_log(PAL_LOG_WARN, "console.db_failed", "{s:s}", "error", err);
}

static json_t *zk_nodes(pal_console *c)
{
	if (!c->zk_connect) {
		snprintf(c->zk_err, sizeof c->zk_err, "no ZooKeeper configured");
		return NULL;
	}
	if (pal_mono_ms() < c->zk_retry_at)
		return NULL;
	json_t *nodes;
	char err[512];
	int rc =
	    c->zk ? PAL_OK
		  : pal_coord_inspector_open(c->zk_connect, c->timeout_ms, &c->zk, err, sizeof err);
	if (!rc)
		rc = pal_coord_inspector_nodes(c->zk, c->zk_root, c->cluster, &nodes, err,
					       sizeof err);
	if (rc) {
		/* a new session next time: this one may have expired */
		pal_coord_inspector_close(c->zk);
		c->zk = NULL;
		snprintf(c->zk_err, sizeof c->zk_err, "%s", err);
		c->zk_retry_at = pal_mono_ms() + RETRY_MS;
		return NULL;
	}
	c->zk_err[0] = '\0';
	return nodes;
}

static size_t peer_write(char *p, size_t size, size_t n, void *arg)
{
	GString *b = arg;
	if (b->len + size * n > PEER_BODY_MAX)
		return 0; /* aborts the transfer */
	g_string_append_len(b, p, (gssize)(size * n));
	return size * n;
}

/* A peer's /status at ADMIN ("host:port"), or NULL with ERR. */
static json_t *peer_status(pal_console *c, const char *admin, char *err, size_t errlen)
{
	CURL *h = curl_easy_init();
	if (!h) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	char url[600];
	snprintf(url, sizeof url, "http://%s/status", admin);
	GString *body = g_string_new(NULL);
	struct curl_slist *hdr = NULL;
	if (c->peer_token) {
		char *a = g_strdup_printf("Authorization: Bearer %s", c->peer_token);
		hdr = curl_slist_append(hdr, a);
		g_free(a);
	}
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http");
	curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)PEER_TIMEOUT_MS);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)PEER_TIMEOUT_MS);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, peer_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, body);
	if (hdr)
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	CURLcode rc = curl_easy_perform(h);
	long code = 0;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(h);
	curl_slist_free_all(hdr);
	json_t *st = NULL;
	if (rc != CURLE_OK)
		snprintf(err, errlen, "%s", curl_easy_strerror(rc));
	else if (code != 200)
		snprintf(err, errlen, "/status answered %ld", code);
	else if (!(st = json_loads(body->str, 0, NULL)) || !json_is_object(st)) {
		json_decref(st);
		st = NULL;
		snprintf(err, errlen, "/status is not a JSON object");
	}
	g_string_free(body, TRUE);
	return st;
}

/* ---- the model ----------------------------------------------------------- */

/* The next N instants of the job whose canonical spec is SPEC (RFC 3339,
 * after now) for its version activated at ANCHOR (epoch seconds, null when
 * not activated yet: as if activated now); an empty array when it has none
 * or the spec does not load. */
static json_t *next_instants(const json_t *spec, const json_t *anchor, int n)
{
	json_t *out = json_array();
	if (!json_is_object(spec))
		return out;
	pal_job_spec js;
	char err[256];
	if (pal_job_spec_from_canonical(spec, &js, err, sizeof err))
		return out;
	pal_schedule *sc = NULL;
	if (!pal_schedule_open(&js, &sc, err, sizeof err)) {
		int64_t t = (int64_t)time(NULL), x;
		int64_t a = json_is_integer(anchor) ? json_integer_value(anchor) : t;
		bool ex;
		for (int k = 0; k < n && pal_schedule_next_from(sc, a, t, &x, &ex) == PAL_OK; k++) {
			char buf[32];
			pal_fmt_rfc3339(x, buf, sizeof buf);
			json_array_append_new(out, json_string(buf));
			t = x;
		}
		pal_schedule_close(sc);
	}
	pal_job_spec_clear(&js);
	return out;
}

static json_t *find_by(json_t *arr, const char *key, const char *val)
{
	size_t i;
	json_t *e;
	json_array_foreach(arr, i, e)
	{
		const char *v = json_string_value(json_object_get(e, key));
		if (v && !strcmp(v, val))
			return e;
	}
	return NULL;
}

static void set_from(json_t *dst, const char *dkey, json_t *src, const char *skey)
{
	json_t *v = json_object_get(src, skey);
	if (v)
		json_object_set(dst, dkey, v);
}

/* One row per node known to any source: ZooKeeper (live), the database
 * (shard leaders, lease holders, attempt makers), and this node. */
static json_t *merge_nodes(pal_console *c, json_t *zk, json_t *view, const json_t *self)
{
	json_t *rows = json_array();
	json_t *activity = json_object_get(view, "nodes");
	json_t *shards = json_object_get(view, "shards");
	size_t i;
	json_t *e;
#define ADD_ID(id)                                                                                 \
	do {                                                                                       \
		const char *id_ = (id);                                                            \
		if (id_ && *id_ && !find_by(rows, "node", id_))                                    \
			json_array_append_new(rows, json_pack("{s:s}", "node", id_));              \
	} while (0)
	json_array_foreach(zk, i, e) ADD_ID(json_string_value(json_object_get(e, "id")));
	ADD_ID(c->node_id);
	json_array_foreach(activity, i, e) ADD_ID(json_string_value(json_object_get(e, "node")));
	json_array_foreach(shards, i, e) ADD_ID(json_string_value(json_object_get(e, "leader")));
#undef ADD_ID
	json_array_foreach(rows, i, e)
	{
		const char *id = json_string_value(json_object_get(e, "node"));
		bool is_self = !strcmp(id, c->node_id);
		json_t *z = find_by(zk, "id", id);
		json_t *info = json_object_get(z, "info");
		json_object_set_new(e, "live", zk ? json_boolean(z != NULL) : json_null());
		json_object_set_new(e, "this_node", json_boolean(is_self));
		set_from(e, "version", info, "version");
		set_from(e, "roles", info, "roles");
		set_from(e, "schema_max", info, "schema");
		set_from(e, "admin", info, "admin");
		json_t *st = NULL;
		if (is_self) {
			st = json_incref((json_t *)self);
		} else if (z && json_is_string(json_object_get(info, "admin"))) {
			char err[256];
			st = peer_status(c, json_string_value(json_object_get(info, "admin")), err,
					 sizeof err);
			if (!st)
				json_object_set_new(e, "status_error", json_string(err));
		}
		if (st) {
			if (!json_object_get(e, "version"))
				set_from(e, "version", st, "version");
			if (!json_object_get(e, "roles"))
				set_from(e, "roles", st, "roles");
			set_from(e, "ready", st, "ready");
			set_from(e, "draining", st, "draining");
			json_t *ex = json_object_get(st, "executor");
			set_from(e, "stale_rejections_sink", ex, "stale_rejections_sink");
			set_from(e, "stale_rejections_db", ex, "stale_rejections_db");
			json_decref(st);
		}
		int led = 0;
		size_t k;
		json_t *s;
		json_array_foreach(shards, k, s)
		{
			const char *l = json_string_value(json_object_get(s, "leader"));
			led += l && !strcmp(l, id);
		}
		json_object_set_new(e, "shards_led", view ? json_integer(led) : json_null());
		json_t *a = find_by(activity, "node", id);
		const char *keys[] = { "held_leases", "expired_leases", "attempts", "succeeded",
				       "failed", "fenced", "deferred", "last_claim" };
		for (size_t q = 0; q < sizeof keys / sizeof keys[0]; q++)
			if (a)
				set_from(e, keys[q], a, keys[q]);
			else if (view)
				json_object_set_new(e, keys[q],
						    q == 7 ? json_null() : json_integer(0));
	}
	return rows;
}

static int by_node(const void *a, const void *b)
{
	return strcmp(json_string_value(json_object_get(*(json_t *const *)a, "node")),
		      json_string_value(json_object_get(*(json_t *const *)b, "node")));
}

/* ROWS sorted by node id (ZooKeeper lists children in no fixed order). */
static json_t *sort_nodes(json_t *rows)
{
	size_t n = json_array_size(rows);
	json_t **v = calloc(n ? n : 1, sizeof *v);
	json_t *out = json_array();
	if (!v)
		return rows;
	for (size_t i = 0; i < n; i++)
		v[i] = json_array_get(rows, i);
	qsort(v, n, sizeof *v, by_node);
	for (size_t i = 0; i < n; i++)
		json_array_append(out, v[i]);
	free(v);
	json_decref(rows);
	return out;
}

static json_t *source(bool ok, const char *err)
{
	return json_pack("{s:b, s:s?}", "ok", ok, "error", ok ? NULL : err);
}

/* The tenants a page or its JSON shows: a login's token limited to tenants
 * sees theirs only, as the API shows them to it (n == 0: every tenant).
 * The pointers borrow the session copy. */
typedef struct scope {
	const char *t[PAL_TOKEN_TENANTS_MAX];
	size_t n;
} scope;

static scope scope_of(const pal__session *s)
{
	scope sc = {.n = 0};
	for (size_t i = 0; s && i < s->who.n_tenants && i < PAL_TOKEN_TENANTS_MAX; i++)
		sc.t[sc.n++] = s->who.tenants[i];
	return sc;
}

/* The whole cluster model (a new reference), of the tenants of SC. */
static json_t *cluster_model(pal_console *c, const json_t *self, const char *q, const char *after,
			     const scope *sc)
{
	json_t *m = json_object();
	char now[32];
	pal_fmt_rfc3339((int64_t)time(NULL), now, sizeof now);
	json_object_set_new(m, "now", json_string(now));
	json_object_set_new(m, "cluster", json_string(c->cluster));
	json_object_set_new(m, "served_by", json_string(c->node_id));
	json_t *view = NULL;
	pal_store *st = db(c);
	if (st) {
		char err[1024];
		if (pal_store_console_cluster(st, NULL, sc->t, sc->n, q, after, &view, err,
					      sizeof err))
			db_failed(c, err);
	}
	json_object_set_new(m, "database", source(view != NULL, c->db_err));
	json_t *zk = zk_nodes(c);
	json_object_set_new(m, "zookeeper", source(zk != NULL, c->zk_err));
	json_object_set_new(m, "this_node", self ? json_deep_copy(self) : json_null());
	/* The node's samples (its fires, their lateness, the backlog of every
	 * group) are every tenant's: a login limited to tenants gets null,
	 * which the page says; absent means the node keeps no samples. */
	json_object_set_new(m, "history", sc->n ? json_null() : pal__history_json(c->history));
	json_object_set_new(m, "nodes", sort_nodes(merge_nodes(c, zk, view, self)));
	if (view) {
		json_object_del(view, "nodes"); /* merged above */
		size_t i;
		json_t *j;
		json_array_foreach(json_object_get(json_object_get(view, "jobs"), "rows"), i, j)
		{
			json_object_set_new(j, "next", next_instants(json_object_get(j, "spec"),
								     json_object_get(j, "anchor"), 2));
			json_object_del(j, "spec");
			json_object_del(j, "anchor");
		}
		json_object_update(m, view);
		json_decref(view);
	}
	json_decref(zk);
	return m;
}

/* ---- HTML: common parts --------------------------------------------------- */

static const char CSS[] =
	"body{font:13px/1.35 system-ui,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}"
	"header{background:#1d2330;color:#fff;padding:.5em 1.2em;display:flex;gap:1.5em;"
	"align-items:baseline;flex-wrap:wrap}header h1{font-size:16px;margin:0}"
	"header a{color:#cfe0ff}main{padding:.6em 1.2em;max-width:1400px}"
	".banner{padding:.5em .8em;margin:.5em 0;border-radius:4px;background:#fde2e1;"
	"border:1px solid #e5a3a0}"
	".cards{display:flex;flex-wrap:wrap;gap:.6em;margin:.6em 0}"
	".card{background:#fff;border:1px solid #d8dce3;border-radius:4px;padding:.4em .8em;"
	"min-width:8.5em}.card b{display:block;font-size:20px}.card.bad{border-color:#d9534f;"
	"background:#fff3f2}.card span{color:#5a6272}"
	".grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(620px,1fr));gap:0 1.4em}"
	"section{margin:.4em 0 1em}h2{font-size:14px;margin:.8em 0 .2em}"
	"p.src{margin:0 0 .3em;color:#5a6272;font-size:12px}code{font-size:12px}"
	"table{border-collapse:collapse;background:#fff;width:100%}"
	"th,td{border:1px solid #d8dce3;padding:.15em .45em;text-align:left;vertical-align:top}"
	"th{background:#eceff3;font-weight:600}td.num{text-align:right;"
	"font-variant-numeric:tabular-nums}tr.bad td{background:#fff3f2}"
	"tr.warn td{background:#fffbe6}table.sub{width:auto;margin:.2em 0 .2em 1.5em}"
	"p.none{color:#5a6272;margin:.2em 0}a{color:#1750b8}"
	"form.act,form.logout{display:inline-flex;gap:.2em;margin:0 .3em 0 0}"
	"form.act input[name=reason]{font-size:12px}#who{color:#cfe0ff}"
	"form.search{margin:.2em 0 .4em}.pager{color:#5a6272}"
	"#charts{display:flex;flex-wrap:wrap;gap:0 1em}#charts h2,#charts p.src{flex-basis:100%}"
	"figure.chart{margin:0}figure.chart figcaption{font-size:12px;color:#5a6272}"
	"p.legend{margin:0;font-size:11px}"
	".flash{padding:.4em .8em;border-radius:4px;margin:.5em 0}.flash.ok{background:#e3f4e1;"
	"border:1px solid #9fd19a}.flash.bad{background:#fde2e1;border:1px solid #e5a3a0}";

void pal__console_page_begin(GString *o, const char *title, bool refresh)
{
	g_string_append(o, "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
			   "<meta name=\"viewport\" content=\"width=device-width\">\n");
	if (refresh)
		g_string_append(o, "<meta http-equiv=\"refresh\" content=\"15\">\n");
	g_string_append(o, "<title>");
	pal_html_text(o, title);
	g_string_append_printf(o, "</title><style>%s</style></head><body>\n", CSS);
}

/* What a page knows of who looks at it: the session (NULL when nobody is
 * logged in) and the page's own path, where its forms come back to. */
typedef struct viewer {
	const pal__session *s;
	const char *back;
	const char *tenant; /* the job page's job's tenant; NULL elsewhere */
} viewer;

/* V may act on TENANT's jobs (NULL: on something of every tenant, such as
 * a group or the whole cluster): logged in with an operator or admin
 * token that sees it.  The API decides again; this only hides buttons a
 * click on which would be refused. */
static bool may(const viewer *v, const char *tenant)
{
	if (!v || !v->s || !pal_role_allows(v->s->who.role, PAL_ROLE_OPERATOR))
		return false;
	return tenant ? pal_token_sees_tenant(&v->s->who, tenant) : v->s->who.n_tenants == 0;
}

static void hidden(GString *o, const char *name, const char *value)
{
	g_string_append_printf(o, "<input type=\"hidden\" name=\"%s\" value=\"", name);
	pal_html_text(o, value);
	g_string_append(o, "\">");
}

/*
 * A form that asks the API for OP on TARGET (NULL: none) with a reason:
 * POST /console/act with the session's CSRF token.  CHOICES (may be NULL)
 * are a ticket's allowed actions, offered in a list.  LABEL is the button.
 */
static void act_form(GString *o, const viewer *v, const char *op, const char *target,
		     const char *label, const json_t *choices)
{
	g_string_append_printf(o, "<form class=\"act\" method=\"post\" action=\"/console/act\" "
				  "data-op=\"%s\" data-target=\"",
			       op);
	pal_html_text(o, target ? target : "");
	g_string_append(o, "\">");
	hidden(o, "csrf", v->s->csrf);
	hidden(o, "op", op);
	if (target)
		hidden(o, "target", target);
	hidden(o, "back", v->back);
	if (!strcmp(op, "trigger-job")) {
		/* the run's identity: a form sent twice makes one run */
		char rid[37];
		if (pal_ops_uuid4(rid) == 0)
			hidden(o, "request_id", rid);
	}
	if (json_array_size(choices)) {
		g_string_append(o, "<select name=\"action\">");
		size_t i;
		json_t *a;
		json_array_foreach(choices, i, a)
		{
			const char *n = json_string_value(a);
			if (!n || !strcmp(n, "release")) /* its own form (release-job) */
				continue;
			g_string_append(o, "<option>");
			pal_html_text(o, n);
			g_string_append(o, "</option>");
		}
		g_string_append(o, "</select>");
	}
	g_string_append(o, "<input name=\"reason\" placeholder=\"reason\" required "
			   "maxlength=\"500\" size=\"12\"><button type=\"submit\">");
	pal_html_text(o, label);
	g_string_append(o, "</button></form>");
}

static void header_bar(GString *o, const json_t *m, const char *api, const viewer *v)
{
	g_string_append(o, "<header><h1>palisade &middot; ");
	pal_html_text(o, json_string_value(json_object_get(m, "cluster")));
	g_string_append(o, "</h1><span>served by ");
	pal_html_text(o, json_string_value(json_object_get(m, "served_by")));
	g_string_append(o, " at ");
	pal_html_text(o, json_string_value(json_object_get(m, "now")));
	g_string_append(o, "</span><a href=\"/console\">cluster</a><a href=\"");
	pal_html_text(o, api);
	g_string_append(o, "\">JSON</a><a href=\"/\">this node</a><a href=\"/metrics\">metrics</a>");
	if (v && v->s) {
		const pal_token_identity *w = &v->s->who;
		g_string_append(o, "<span id=\"who\">");
		pal_html_text(o, w->name);
		g_string_append_printf(o, " (%s", pal_role_name(w->role));
		for (size_t i = 0; i < w->n_tenants; i++) {
			g_string_append(o, i ? ", " : "; tenants ");
			pal_html_text(o, w->tenants[i]);
		}
		g_string_append(o, ")</span><form class=\"logout\" method=\"post\" "
				   "action=\"/console/logout\">");
		hidden(o, "csrf", v->s->csrf);
		g_string_append(o, "<button type=\"submit\">log out</button></form>");
	} else {
		g_string_append(o, "<a id=\"login-link\" href=\"/console/login\">log in</a>");
	}
	g_string_append(o, "</header>\n<main>\n");
	if (v && v->s && v->s->flash[0]) {
		g_string_append_printf(o, "<p class=\"flash %s\" id=\"flash\">",
				       v->s->flash_bad ? "bad" : "ok");
		pal_html_text(o, v->s->flash);
		g_string_append(o, "</p>\n");
	}
}

static void banners(GString *o, const json_t *m)
{
	const char *names[] = { "database", "zookeeper" };
	const char *labels[] = { "PostgreSQL unavailable", "ZooKeeper unavailable" };
	for (int i = 0; i < 2; i++) {
		json_t *s = json_object_get(m, names[i]);
		if (!s || json_is_true(json_object_get(s, "ok")))
			continue;
		g_string_append_printf(o, "<p class=\"banner\" id=\"%s-down\"><b>%s</b>: ", names[i],
				       labels[i]);
		pal_html_text(o, json_string_value(json_object_get(s, "error")));
		g_string_append(o, i == 0 ? " &mdash; the database sections are missing; what this "
					    "node knows is shown below.</p>\n"
					  : " &mdash; the live-node list is missing.</p>\n");
	}
}

/* "<section><h2>TITLE</h2><p class=src>CLI ... JSON ...</p>". */
static void section_begin(GString *o, const char *id, const char *title, const char *cli,
			  const char *json_href)
{
	g_string_append_printf(o, "<section id=\"%s\"><h2>%s</h2><p class=\"src\">", id, title);
	if (cli) {
		g_string_append(o, "CLI <code>");
		pal_html_text(o, cli);
		g_string_append(o, "</code> &middot; ");
	}
	g_string_append(o, "JSON <a href=\"");
	pal_html_text(o, json_href);
	g_string_append(o, "\">");
	pal_html_text(o, json_href);
	g_string_append(o, "</a></p>\n");
}

static void fmt_secs(GString *o, double s)
{
	if (s < 0)
		s = 0;
	if (s < 60)
		g_string_append_printf(o, "%.1f s", s);
	else if (s < 3600)
		g_string_append_printf(o, "%d min %d s", (int)(s / 60), (int)s % 60);
	else if (s < 86400 * 2)
		g_string_append_printf(o, "%d h %d min", (int)(s / 3600), ((int)s % 3600) / 60);
	else
		g_string_append_printf(o, "%d d %d h", (int)(s / 86400), ((int)s % 86400) / 3600);
}

/* A number that links to where the same figure comes from: HREF (a JSON
 * endpoint) with the CLI command as its title. */
static void num_link(GString *o, const json_t *v, const char *href, const char *cli)
{
	g_string_append(o, "<a href=\"");
	pal_html_text(o, href);
	g_string_append(o, "\"");
	if (cli) {
		g_string_append(o, " title=\"");
		pal_html_text(o, cli);
		g_string_append(o, "\"");
	}
	g_string_append(o, ">");
	pal_html_value(o, v);
	g_string_append(o, "</a>");
}

/* Column kinds of a table. */
enum { C_TEXT, C_NUM, C_SECS, C_JOB, C_LIST, C_BOOL, C_TICKET, C_TRIGGER, C_DIGEST };

typedef struct col {
	const char *key, *label;
	int kind;
} col;

static void cell(GString *o, const json_t *row, const col *k, const char *href, const char *cli)
{
	const json_t *v = json_object_get(row, k->key);
	switch (k->kind) {
	case C_NUM:
		g_string_append(o, "<td class=\"num\">");
		if (json_is_number(v))
			num_link(o, v, href, cli);
		else
			pal_html_value(o, v);
		break;
	case C_SECS:
		g_string_append(o, "<td class=\"num\">");
		if (json_is_number(v)) {
			GString *t = g_string_new(NULL);
			fmt_secs(t, json_number_value(v));
			json_t *tv = json_string(t->str);
			num_link(o, tv, href, cli);
			json_decref(tv);
			g_string_free(t, TRUE);
		} else {
			pal_html_value(o, v);
		}
		break;
	case C_JOB:
		g_string_append(o, "<td>");
		if (json_is_string(v)) {
			g_string_append(o, "<a class=\"job\" href=\"/console/job?id=");
			GString *u = g_string_new(NULL);
			pal_html_urlarg(u, json_string_value(v));
			pal_html_text(o, u->str);
			g_string_free(u, TRUE);
			g_string_append(o, "\">");
			pal_html_text(o, json_string_value(v));
			g_string_append(o, "</a>");
		} else {
			pal_html_value(o, v);
		}
		break;
	case C_TICKET:
	case C_TRIGGER: {
		g_string_append(o, "<td class=\"num\">");
		if (json_is_integer(v)) {
			char cmd[96];
			if (k->kind == C_TICKET)
				snprintf(cmd, sizeof cmd, "palisade tickets show %lld",
					 (long long)json_integer_value(v));
			else
				snprintf(cmd, sizeof cmd, "palisade attempts %lld",
					 (long long)json_integer_value(v));
			num_link(o, v, href, cmd);
		} else {
			pal_html_value(o, v);
		}
		break;
	}
	case C_DIGEST: /* the first 12 characters, the whole digest as the title */
		g_string_append(o, "<td title=\"");
		pal_html_value(o, v);
		g_string_append(o, "\"><code>");
		if (json_is_string(v)) {
			char head[13];
			snprintf(head, sizeof head, "%s", json_string_value(v));
			pal_html_text(o, head);
		} else {
			pal_html_value(o, v);
		}
		g_string_append(o, "</code>");
		break;
	case C_LIST:
		g_string_append(o, "<td>");
		if (json_is_array(v)) {
			size_t i;
			json_t *e;
			json_array_foreach(v, i, e)
			{
				if (i)
					g_string_append(o, ", ");
				pal_html_value(o, e);
			}
		} else {
			pal_html_value(o, v);
		}
		break;
	default:
		g_string_append(o, "<td>");
		pal_html_value(o, v);
	}
	g_string_append(o, "</td>");
}

typedef const char *(*row_class_fn)(const json_t *row);
/* The action forms of ROW for V (nothing when V may do none of them). */
typedef void (*row_act_fn)(GString *o, const viewer *v, const json_t *row);

static void table_act(GString *o, const json_t *rows, const col *cols, size_t n, const char *href,
		      const char *cli, row_class_fn cls, const viewer *v, row_act_fn act);

static void table(GString *o, const json_t *rows, const col *cols, size_t n, const char *href,
		  const char *cli, row_class_fn cls)
{
	table_act(o, rows, cols, n, href, cli, cls, NULL, NULL);
}

/* TABLE with a last column of ACT's forms, when V may act at all. */
static void table_act(GString *o, const json_t *rows, const col *cols, size_t n, const char *href,
		      const char *cli, row_class_fn cls, const viewer *v, row_act_fn act)
{
	if (!v || !v->s || !pal_role_allows(v->s->who.role, PAL_ROLE_OPERATOR))
		act = NULL; /* a viewer's table has no act column */
	if (!json_is_array(rows)) {
		g_string_append(o, "<p class=\"none\">not available</p>\n");
		return;
	}
	if (json_array_size(rows) == 0) {
		g_string_append(o, "<p class=\"none\">none</p>\n");
		return;
	}
	g_string_append(o, "<table><tr>");
	for (size_t i = 0; i < n; i++)
		g_string_append_printf(o, "<th>%s</th>", cols[i].label);
	if (act)
		g_string_append(o, "<th>act</th>");
	g_string_append(o, "</tr>\n");
	size_t r;
	json_t *row;
	json_array_foreach((json_t *)rows, r, row)
	{
		const char *c = cls ? cls(row) : NULL;
		g_string_append_printf(o, "<tr%s%s%s>", c ? " class=\"" : "", c ? c : "",
				       c ? "\"" : "");
		for (size_t i = 0; i < n; i++)
			cell(o, row, &cols[i], href, cli);
		if (act) {
			g_string_append(o, "<td class=\"acts\">");
			act(o, v, row);
			g_string_append(o, "</td>");
		}
		g_string_append(o, "</tr>\n");
	}
	g_string_append(o, "</table>\n");
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

static void card(GString *o, const char *id, const char *label, const json_t *v, const char *href,
		 const char *cli, bool bad)
{
	g_string_append_printf(o, "<div class=\"card%s\" id=\"card-%s\"><b>", bad ? " bad" : "", id);
	num_link(o, v, href, cli);
	g_string_append_printf(o, "</b><span>%s</span></div>\n", label);
}

static int64_t sum_key(const json_t *rows, const char *key)
{
	int64_t s = 0;
	size_t i;
	json_t *e;
	json_array_foreach((json_t *)rows, i, e) s += json_integer_value(json_object_get(e, key));
	return s;
}

/* ---- the forms of the rows ------------------------------------------------------ */

/* The tenant an action on ROW concerns: the page's job's, or the row's. */
static const char *row_tenant(const viewer *v, const json_t *row)
{
	return v->tenant ? v->tenant : json_string_value(json_object_get(row, "tenant"));
}

/* A paused scope ("global", "job:J", "group:G", "tenant:T"): resume it. */
static void gate_acts(GString *o, const viewer *v, const json_t *row)
{
	static const struct {
		const char *prefix, *op;
	} k[] = { { "job:", "resume-job" }, { "group:", "resume-group" }, { "tenant:", "resume-tenant" } };
	const char *scope = json_string_value(json_object_get(row, "scope"));
	if (scope && !strcmp(scope, "global") && may(v, NULL))
		act_form(o, v, "resume-all", NULL, "resume", NULL);
	for (size_t i = 0; scope && i < G_N_ELEMENTS(k); i++) {
		const char *t = scope + strlen(k[i].prefix);
		if (strncmp(scope, k[i].prefix, strlen(k[i].prefix)))
			continue;
		if (may(v, !strcmp(k[i].op, "resume-tenant") ? t : NULL))
			act_form(o, v, k[i].op, t, "resume", NULL);
	}
}

/* A backlog row of a group (TENANT false) or a tenant: pause or resume it. */
static void scope_acts(GString *o, const viewer *v, const json_t *row, bool tenant)
{
	const char *name = json_string_value(json_object_get(row, "name"));
	bool paused = json_is_true(json_object_get(row, "gate_paused"));
	if (!name || !may(v, tenant ? name : NULL))
		return;
	const char *op = tenant ? (paused ? "resume-tenant" : "pause-tenant")
				: (paused ? "resume-group" : "pause-group");
	act_form(o, v, op, name, paused ? "resume" : "pause", NULL);
}

static void group_acts(GString *o, const viewer *v, const json_t *row)
{
	scope_acts(o, v, row, false);
}

static void tenant_acts(GString *o, const viewer *v, const json_t *row)
{
	scope_acts(o, v, row, true);
}

/* An open ticket: resolve it with one of its allowed actions; a quarantine
 * ticket (allowed: release) releases its job. */
static void ticket_acts(GString *o, const viewer *v, const json_t *row)
{
	const char *state = json_string_value(json_object_get(row, "state"));
	const char *job = json_string_value(json_object_get(row, "job_id"));
	json_t *allowed = json_object_get(row, "allowed_actions");
	if ((state && strcmp(state, "open")) || !json_is_integer(json_object_get(row, "id")) ||
	    !may(v, row_tenant(v, row)))
		return;
	bool release = false, other = false;
	size_t i;
	json_t *a;
	json_array_foreach(allowed, i, a)
	{
		const char *n = json_string_value(a);
		release |= n && !strcmp(n, "release");
		other |= n && strcmp(n, "release");
	}
	if (release && job)
		act_form(o, v, "release-job", job, "release", NULL);
	if (other) {
		char id[24];
		snprintf(id, sizeof id, "%lld", (long long)json_integer_value(json_object_get(row, "id")));
		act_form(o, v, "resolve-ticket", id, "resolve", allowed);
	}
}

/* A trigger that can still be cancelled. */
static void trigger_acts(GString *o, const viewer *v, const json_t *row)
{
	static const char *const live[] = { "pending", "retry_wait", "paused", "running" };
	const char *state = json_string_value(json_object_get(row, "state"));
	if (!state || !json_is_integer(json_object_get(row, "id")) || !may(v, row_tenant(v, row)))
		return;
	for (size_t i = 0; i < G_N_ELEMENTS(live); i++) {
		if (strcmp(state, live[i]))
			continue;
		char id[24];
		snprintf(id, sizeof id, "%lld", (long long)json_integer_value(json_object_get(row, "id")));
		act_form(o, v, "cancel-trigger", id, "cancel", NULL);
	}
}

/* SCOPES ("a, b, ...", may be NULL) names SCOPE. */
static bool lists_scope(const char *scopes, const char *scope)
{
	bool found = false;
	char **v = g_strsplit(scopes ? scopes : "", ", ", -1);
	for (char **p = v; *p && !found; p++)
		found = !strcmp(*p, scope);
	g_strfreev(v);
	return found;
}

/* ---- the cluster page ------------------------------------------------------ */

static const char *node_class(const json_t *r)
{
	if (json_is_false(json_object_get(r, "live")) || json_object_get(r, "status_error"))
		return "bad";
	if (json_is_true(json_object_get(r, "draining")) ||
	    json_is_false(json_object_get(r, "ready")))
		return "warn";
	return NULL;
}

static const char *shard_class(const json_t *r)
{
	return json_is_null(json_object_get(r, "leader")) ? "bad" : NULL;
}

static const char *backlog_class(const json_t *r)
{
	if (json_is_true(json_object_get(r, "gate_paused")))
		return "warn";
	return json_integer_value(json_object_get(r, "due")) > 0 &&
			       json_is_null(json_object_get(r, "recovery_s"))
		       ? "bad"
		       : NULL;
}

static const char *job_class(const json_t *r)
{
	json_t *f = json_object_get(r, "last_failure");
	if (json_is_object(f)) {
		const char *fa = json_string_value(json_object_get(f, "at"));
		const char *ok = json_string_value(json_object_get(r, "last_success"));
		if (!ok || (fa && strcmp(fa, ok) > 0))
			return "bad";
	}
	return json_is_string(json_object_get(r, "paused_by")) ? "warn" : NULL;
}

/* Jobs rows flattened for the table: last failure's fields on the row. */
static json_t *job_rows(const json_t *jobs)
{
	json_t *rows = json_array();
	size_t i;
	json_t *j;
	json_array_foreach(json_object_get(jobs, "rows"), i, j)
	{
		json_t *r = json_deep_copy(j);
		json_t *f = json_object_get(j, "last_failure");
		if (json_is_object(f)) {
			GString *s = g_string_new(NULL);
			g_string_append_printf(s, "%s %s (%s)",
					       json_string_value(json_object_get(f, "at")) ?: "",
					       json_string_value(json_object_get(f, "error_class")) ?: "-",
					       json_string_value(json_object_get(f, "state")) ?: "");
			json_object_set_new(r, "failure", json_string(s->str));
			g_string_free(s, TRUE);
			set_from(r, "failure_class", f, "error_class");
		}
		json_array_append_new(rows, r);
	}
	return rows;
}

/* A link to the cluster page showing the jobs after AFTER (NULL: the
 * first page) that match Q (may be NULL), labelled LABEL. */
static void jobs_link(GString *o, const char *q, const char *after, const char *label,
		      const char *id)
{
	GString *u = g_string_new("/console?");
	if (q) {
		g_string_append(u, "q=");
		pal_html_urlarg(u, q);
		g_string_append(u, "&");
	}
	if (after) {
		g_string_append(u, "after=");
		pal_html_urlarg(u, after);
	}
	g_string_append(u, "#jobs");
	g_string_append_printf(o, "<a id=\"%s\" href=\"", id);
	pal_html_text(o, u->str);
	g_string_append_printf(o, "\">%s</a>", label);
	g_string_free(u, TRUE);
}

/*
 * The jobs table's search form (a GET form: it changes nothing, so it
 * needs no CSRF token) and where the page stands: which rows of how many
 * matching jobs, links to the first and the next page.  Pages are keyset
 * pages by job id (?after=ID), so a page costs the same however deep.
 */
static void jobs_pager(GString *o, const json_t *jobs)
{
	const char *q = json_string_value(json_object_get(jobs, "q"));
	const char *after = json_string_value(json_object_get(jobs, "after"));
	const char *next = json_string_value(json_object_get(jobs, "next_after"));
	size_t n = json_array_size(json_object_get(jobs, "rows"));
	g_string_append(o, "<form class=\"search\" method=\"get\" action=\"/console#jobs\">"
			   "<input name=\"q\" placeholder=\"job, tenant or group\" value=\"");
	pal_html_text(o, q ? q : "");
	g_string_append(o, "\"><button type=\"submit\">search</button> <span class=\"pager\">");
	if (n)
		g_string_append_printf(o, "%zu jobs from ", n);
	else
		g_string_append(o, "no jobs of ");
	g_string_append_printf(o, "%lld", (long long)json_integer_value(json_object_get(jobs, "matching")));
	if (q) {
		g_string_append(o, " matching &ldquo;");
		pal_html_text(o, q);
		g_string_append(o, "&rdquo;");
	}
	g_string_append_printf(o, " (%lld in all)",
			       (long long)json_integer_value(json_object_get(jobs, "total")));
	if (after) {
		g_string_append(o, " &middot; after ");
		pal_html_text(o, after);
		g_string_append(o, " &middot; ");
		jobs_link(o, q, NULL, "first page", "jobs-first");
	}
	if (next) {
		g_string_append(o, " &middot; ");
		jobs_link(o, q, next, "next page &rarr;", "jobs-next");
	}
	g_string_append(o, "</span></form>\n");
}

static void render_cluster(GString *o, const json_t *m, const viewer *vw)
{
	/* no refresh under forms: it would wipe a reason being typed */
	pal__console_page_begin(o, "palisade console", !may(vw, NULL));
	header_bar(o, m, "/api/cluster", vw);
	banners(o, m);
	bool db_ok = json_is_true(json_object_get(json_object_get(m, "database"), "ok"));
	/* a login limited to tenants sees no whole-cluster figure (shards,
	 * triggers by state, misfired instants), as the API's status */
	bool whole = !vw || !vw->s || vw->s->who.n_tenants == 0;
	json_t *nodes = json_object_get(m, "nodes");
	json_t *shards = json_object_get(m, "shards");
	json_t *tickets = json_object_get(m, "tickets");
	json_t *backlog = json_object_get(m, "backlog");
	json_t *gates = json_object_get(m, "gates");

	/* the figures an operator looks at first */
	g_string_append(o, "<div class=\"cards\">\n");
	int64_t live = 0, led = 0;
	size_t i;
	json_t *e;
	json_array_foreach(nodes, i, e) live += json_is_true(json_object_get(e, "live"));
	json_array_foreach(shards, i, e) led += !json_is_null(json_object_get(e, "leader"));
	json_t *v = json_integer(live);
	card(o, "nodes", "live nodes", v, "/api/cluster?section=nodes", "palisade status", false);
	json_decref(v);
	if (db_ok && whole) {
		v = json_sprintf("%lld/%zu", (long long)led, json_array_size(shards));
		card(o, "shards", "shards led", v, "/api/cluster?section=shards", "palisade status",
		     (size_t)led < json_array_size(shards));
		json_decref(v);
	}
	if (db_ok) {
		v = json_integer(sum_key(json_object_get(backlog, "groups"), "due"));
		card(o, "due", "due backlog", v, "/api/cluster?section=backlog", "palisade status",
		     false);
		json_decref(v);
		v = json_object_get(tickets, "open");
		card(o, "tickets", "open tickets", v, "/api/cluster?section=tickets",
		     "palisade tickets list", json_integer_value(v) > 0);
		v = json_integer((json_int_t)json_array_size(gates));
		card(o, "paused", "paused scopes", v, "/api/cluster?section=gates",
		     "palisade gates", json_array_size(gates) > 0);
		json_decref(v);
		v = json_object_get(m, "misfired_instants");
		if (whole)
			card(o, "misfires", "misfired instants", v, "/api/cluster?section=misfires",
			     "palisade misfires", false);
		v = json_integer(sum_key(nodes, "fenced"));
		card(o, "stale", "stale-token rejections", v, "/api/cluster?section=nodes",
		     "palisade status", json_integer_value(v) > 0);
		json_decref(v);
		v = json_integer((json_int_t)json_array_size(json_object_get(m, "breakers")));
		card(o, "breakers", "open breakers", v, "/api/cluster?section=breakers", NULL,
		     json_integer_value(v) > 0);
		json_decref(v);
	}
	g_string_append(o, "</div>\n");

	section_begin(o, "charts", "The last hour, as this node sampled it", NULL,
		      "/api/cluster?section=history");
	pal__history_svg(o, json_object_get(m, "history"));
	g_string_append(o, "</section>\n");

	section_begin(o, "nodes", "Nodes", "palisade status", "/api/cluster?section=nodes");
	static const col ncols[] = {
		{ "node", "node", C_TEXT },	     { "live", "live (ZooKeeper)", C_BOOL },
		{ "version", "version", C_TEXT },    { "roles", "roles", C_LIST },
		{ "schema_max", "schema (knows up to)", C_NUM },
		{ "ready", "ready", C_BOOL },	     { "draining", "draining", C_BOOL },
		{ "shards_led", "shards led", C_NUM }, { "held_leases", "leases held", C_NUM },
		{ "expired_leases", "leases expired", C_NUM }, { "attempts", "attempts", C_NUM },
		{ "failed", "failed", C_NUM },	     { "fenced", "stale-token rejections (db)", C_NUM },
		{ "stale_rejections_sink", "stale rejections (sink)", C_NUM },
		{ "admin", "admin", C_TEXT },	     { "status_error", "status", C_TEXT },
	};
	table(o, nodes, ncols, N(ncols), "/api/cluster?section=nodes", "palisade status", node_class);
	if (db_ok) {
		g_string_append_printf(o, "<p class=\"src\">database schema version %lld; attempts "
					  "and rejections over the latest attempts (rate window ",
				       (long long)json_integer_value(json_object_get(m, "schema_version")));
		fmt_secs(o, json_number_value(json_object_get(m, "rate_window_s")));
		g_string_append(o, ")</p>\n");
	}
	g_string_append(o, "</section>\n");

	if (db_ok) {
		g_string_append(o, "<div class=\"grid\">\n");
		if (whole) {
			section_begin(o, "shards", "Shards", "palisade status",
				      "/api/cluster?section=shards");
			static const col scols[] = {
			    {"shard", "shard", C_TEXT},
			    {"leader", "leader", C_TEXT},
			    {"epoch", "epoch", C_NUM},
			    {"lag_s", "watermark lag", C_SECS},
			    {"jobs", "jobs", C_NUM},
			    {"due", "due", C_NUM},
			    {"planned", "planned", C_NUM},
			    {"running", "running", C_NUM},
			    {"oldest_due_s", "oldest due", C_SECS},
			};
			table(o, shards, scols, N(scols), "/api/cluster?section=shards",
			      "palisade status", shard_class);
			g_string_append(o, "</section>\n<div>\n");

			section_begin(o, "states", "Triggers by state",
				      "palisade triggers --state STATE",
				      "/api/cluster?section=triggers");
			json_t *states = json_object_get(m, "triggers");
			if (json_object_size(states) == 0) {
				g_string_append(o, "<p class=\"none\">none</p>\n");
			} else {
				g_string_append(
				    o, "<table><tr><th>state</th><th>triggers</th></tr>\n");
				const char *k;
				json_object_foreach(states, k, v)
				{
					g_string_append(o, "<tr><td>");
					pal_html_text(o, k);
					g_string_append(o, "</td><td class=\"num\">");
					/* a finished state's count is the planner's estimate */
					size_t e;
					json_t *est;
					json_array_foreach(json_object_get(m, "triggers_estimated"),
							   e, est)
					{
						if (json_is_string(est) &&
						    !strcmp(json_string_value(est), k))
							g_string_append(
							    o,
							    "<span title=\"an estimate from the "
							    "table statistics\">&asymp;</span> ");
					}
					GString *cli = g_string_new("palisade triggers --state ");
					g_string_append(cli, k);
					num_link(o, v, "/api/cluster?section=triggers", cli->str);
					g_string_free(cli, TRUE);
					g_string_append(o, "</td></tr>\n");
				}
				g_string_append(o, "</table>\n");
			}
			g_string_append(o, "</section>\n");
		} else {
			g_string_append(o, "<p class=\"none\" id=\"scoped\">shards and triggers by "
					   "state are every tenant's: not shown to a token limited "
					   "to tenants</p>\n<div>\n");
		}
		section_begin(o, "gates", "Paused scopes", "palisade gates",
			      "/api/cluster?section=gates");
		static const col gcols[] = { { "scope", "scope", C_TEXT },
					     { "reason", "reason", C_TEXT },
					     { "actor", "actor", C_TEXT },
					     { "since", "since", C_TEXT },
					     { "held", "instants held", C_NUM },
					     { "oldest_held", "oldest held", C_TEXT } };
		table_act(o, gates, gcols, N(gcols), "/api/cluster?section=gates",
			  "palisade gates", NULL, vw, gate_acts);
		g_string_append(o, "</section>\n</div>\n");

		static const col bcols[] = {
			{ "name", "name", C_TEXT },
			{ "due", "due", C_NUM },
			{ "oldest_pending_s", "oldest pending", C_SECS },
			{ "planned", "planned", C_NUM },
			{ "running", "running", C_NUM },
			{ "paused", "paused", C_NUM },
			{ "done_per_s", "done/s", C_NUM },
			{ "recovery_s", "recovery estimate", C_SECS },
			{ "gate_paused", "gate paused", C_BOOL },
		};
		section_begin(o, "backlog-groups", "Backlog by group", "palisade status",
			      "/api/cluster?section=backlog");
		table_act(o, json_object_get(backlog, "groups"), bcols, N(bcols),
			  "/api/cluster?section=backlog", "palisade status", backlog_class, vw,
			  group_acts);
		g_string_append(o, "</section>\n");
		section_begin(o, "backlog-tenants", "Backlog by tenant", "palisade status",
			      "/api/cluster?section=backlog");
		table_act(o, json_object_get(backlog, "tenants"), bcols, N(bcols),
			  "/api/cluster?section=backlog", "palisade status", backlog_class, vw,
			  tenant_acts);
		g_string_append(o, "</section>\n");

		section_begin(o, "tickets", "Open tickets", "palisade tickets list",
			      "/api/cluster?section=tickets");
		static const col tcols[] = {
			{ "id", "ticket", C_TICKET },	  { "job_id", "job", C_JOB },
			{ "trigger_id", "trigger", C_TRIGGER }, { "reason", "reason", C_TEXT },
			{ "error_class", "error class", C_TEXT },
			{ "allowed_actions", "allowed actions", C_LIST },
			{ "age_s", "open for", C_SECS },
		};
		table_act(o, json_object_get(tickets, "rows"), tcols, N(tcols),
			  "/api/cluster?section=tickets", "palisade tickets list", NULL, vw,
			  ticket_acts);
		g_string_append(o, "</section>\n<div>\n");

		section_begin(o, "misfires", "Misfires by reason", "palisade misfires",
			      "/api/cluster?section=misfires");
		static const col mcols[] = { { "reason", "reason", C_TEXT },
					     { "decisions", "decisions", C_NUM },
					     { "instants", "instants", C_NUM },
					     { "last", "last", C_TEXT } };
		table(o, json_object_get(m, "misfires"), mcols, N(mcols),
		      "/api/cluster?section=misfires", "palisade misfires", NULL);
		g_string_append(o, "</section>\n");
		section_begin(o, "breakers", "Open breakers (calls held back, last 2 min)", NULL,
			      "/api/cluster?section=breakers");
		static const col brcols[] = { { "host", "host", C_TEXT },
					      { "node", "node", C_TEXT },
					      { "held", "calls held", C_NUM },
					      { "last", "last", C_TEXT } };
		table(o, json_object_get(m, "breakers"), brcols, N(brcols),
		      "/api/cluster?section=breakers", NULL, NULL);
		g_string_append(o, "</section>\n</div>\n</div>\n");

		json_t *jobs = json_object_get(m, "jobs");
		section_begin(o, "jobs", "Jobs", "palisade jobs --next 2",
			      "/api/cluster?section=jobs");
		jobs_pager(o, jobs);
		static const col jcols[] = {
			{ "job_id", "job", C_JOB },
			{ "tenant", "tenant", C_TEXT },
			{ "group", "group", C_TEXT },
			{ "active_version", "version", C_NUM },
			{ "cron", "cron", C_TEXT },
			{ "last_success", "last success", C_TEXT },
			{ "failure", "last failure (error class)", C_TEXT },
			{ "next", "next instants", C_LIST },
			{ "paused_by", "paused by", C_TEXT },
			{ "due", "backlog", C_NUM },
			{ "oldest_due_s", "oldest due", C_SECS },
		};
		json_t *rows = job_rows(jobs);
		table(o, rows, jcols, N(jcols), "/api/cluster?section=jobs", "palisade jobs",
		      job_class);
		json_decref(rows);
		if (json_is_string(json_object_get(jobs, "next_after")))
			jobs_pager(o, jobs);
		g_string_append(o, "</section>\n");
	}
	g_string_append(o, "</main></body></html>\n");
}

/* ---- the job page ------------------------------------------------------------ */

/* Characters of a kept body the job page shows (the API and `palisade
 * attempts --output json` have all of it). */
#define PAGE_EXCERPT_CHARS 300

/* What an attempt kept of the answer (R: its "response"), on a row of its
 * own under the attempt: the kept headers and the body's start, both
 * already shown escaped by the store and HTML-escaped here. */
static void response_row(GString *o, json_t *r, size_t span)
{
	json_t *h = json_object_get(r, "headers");
	const char *body = json_string_value(json_object_get(r, "body"));
	if (!json_object_size(h) && (!body || !*body))
		return;
	g_string_append_printf(o, "<tr class=\"response\"><td colspan=\"%zu\"><pre>", span);
	const char *k;
	json_t *v;
	json_object_foreach(h, k, v)
	{
		pal_html_text(o, k);
		g_string_append(o, ": ");
		pal_html_text(o, json_string_value(v));
		g_string_append_c(o, '\n');
	}
	if (body && *body) {
		const char *end = body;
		for (int n = 0; *end && n < PAGE_EXCERPT_CHARS; n++)
			end = g_utf8_next_char(end);
		char *cut = g_strndup(body, (gsize)(end - body));
		pal_html_text(o, cut);
		g_free(cut);
		if (*end || json_is_true(json_object_get(r, "truncated")))
			g_string_append(o, " ...");
	}
	g_string_append(o, "</pre></td></tr>\n");
}

static const char *trigger_class(const json_t *r)
{
	const char *s = json_string_value(json_object_get(r, "state"));
	if (!s)
		return NULL;
	if (!strcmp(s, "failed") || !strcmp(s, "manual") || !strcmp(s, "unknown"))
		return "bad";
	if (!strcmp(s, "retry_wait") || !strcmp(s, "paused") || !strcmp(s, "pausing"))
		return "warn";
	return NULL;
}

/* Upstreams (the jobs this one runs after) and downstreams (the jobs that
 * run after it), each linked to its page; nothing for a job with neither. */
static void render_dependencies(GString *o, const json_t *after, const char *api)
{
	const json_t *ups = json_object_get(after, "upstreams");
	const json_t *downs = json_object_get(after, "downstreams");
	static const col dcols[] = { { "job", "job", C_JOB },
				     { "on", "on", C_TEXT },
				     { "within_ms", "within (ms)", C_NUM } };

	if (!json_array_size(ups) && !json_array_size(downs))
		return;
	section_begin(o, "dependencies", "Dependencies (after)", NULL, api);
	g_string_append(o, "<h3>runs after (upstreams)</h3>\n");
	table(o, ups, dcols, N(dcols), api, NULL, NULL);
	g_string_append(o, "<h3>run after it (downstreams)</h3>\n");
	table(o, downs, dcols, N(dcols), api, NULL, NULL);
	g_string_append(o, "<p>decided up to: ");
	pal_html_value(o, json_object_get(after, "watermark"));
	g_string_append(o, "</p>\n</section>\n");
}

static void render_job(GString *o, const json_t *m, const char *id, const viewer *pv)
{
	GString *api = g_string_new("/api/job?id=");
	pal_html_urlarg(api, id);
	GString *t = g_string_new("palisade job ");
	g_string_append(t, id);
	pal__console_page_begin(o, t->str, false);
	g_string_free(t, TRUE);
	header_bar(o, m, api->str, pv);
	banners(o, m);
	json_t *job = json_object_get(m, "job");
	/* the job page's forms act on this job's tenant */
	viewer jv = *pv;
	jv.tenant = json_string_value(json_object_get(job, "tenant"));
	const viewer *v = &jv;
	const char *err = json_string_value(json_object_get(m, "error"));
	g_string_append(o, "<h2 id=\"job-id\">job ");
	pal_html_text(o, id);
	g_string_append(o, "</h2>\n");
	if (!job) {
		g_string_append(o, "<p class=\"banner\" id=\"job-error\">");
		pal_html_text(o, err ? err : "not available");
		g_string_append(o, "</p></main></body></html>\n");
		g_string_free(api, TRUE);
		return;
	}
	GString *cli = g_string_new(NULL);
	g_string_append(o, "<table id=\"job-summary\" style=\"width:auto\">\n");
	static const struct {
		const char *key, *label;
	} rows[] = { { "tenant", "tenant" },
		     { "group", "group" },
		     { "shard", "shard" },
		     { "latest_version", "latest version" },
		     { "active_version", "planned with version" },
		     { "paused_by", "paused by" },
		     { "created_at", "created" },
		     { "updated_at", "updated" } };
	for (size_t i = 0; i < N(rows); i++) {
		g_string_append_printf(o, "<tr><th>%s</th><td>", rows[i].label);
		json_t *v = json_object_get(job, rows[i].key);
		if (json_is_integer(v)) {
			g_string_assign(cli, "palisade jobs --versions ");
			pal_shell_quote(cli, id);
			num_link(o, v, api->str, cli->str);
		} else {
			pal_html_value(o, v);
		}
		g_string_append(o, "</td></tr>\n");
	}
	g_string_append(o, "<tr><th>next instants</th><td>");
	size_t i;
	json_t *e;
	json_array_foreach(json_object_get(m, "next"), i, e)
	{
		if (i)
			g_string_append(o, ", ");
		pal_html_value(o, e);
	}
	g_string_append(o, "</td></tr>\n</table>\n");
	if (may(v, v->tenant)) {
		GString *scope = g_string_new("job:");
		g_string_append(scope, id);
		bool paused = lists_scope(json_string_value(json_object_get(job, "paused_by")),
					  scope->str);
		g_string_free(scope, TRUE);
		g_string_append(o, "<section id=\"actions\"><h2>Act on the job</h2>\n<p>");
		act_form(o, v, paused ? "resume-job" : "pause-job", id, paused ? "resume" : "pause",
			 NULL);
		act_form(o, v, "trigger-job", id, "run now", NULL);
		g_string_append(o, "</p></section>\n");
	}

	GString *jcli = g_string_new("palisade jobs --versions ");
	pal_shell_quote(jcli, id);
	section_begin(o, "versions", "Versions", jcli->str, api->str);
	static const col vcols[] = {
		{ "version", "version", C_NUM },	{ "digest", "digest", C_DIGEST },
		{ "cron", "cron", C_TEXT },		{ "timezone", "zone", C_TEXT },
		{ "misfire_policy", "misfire", C_TEXT }, { "overlap_policy", "overlap", C_TEXT },
		{ "partitions", "partitions", C_NUM },	{ "target_host", "host", C_TEXT },
		{ "created_by", "created by", C_TEXT },	{ "created_at", "created", C_TEXT },
		{ "activated_at", "activated", C_TEXT }, { "effective_from", "effective from", C_TEXT },
	};
	table(o, json_object_get(m, "versions"), vcols, N(vcols), api->str, jcli->str, NULL);
	g_string_append(o, "</section>\n");

	render_dependencies(o, json_object_get(m, "after"), api->str);

	g_string_assign(jcli, "palisade triggers --job ");
	pal_shell_quote(jcli, id);
	section_begin(o, "triggers", "Recent triggers and their attempts", jcli->str, api->str);
	json_t *trs = json_object_get(m, "triggers");
	static const col tcols[] = {
		{ "id", "trigger", C_TRIGGER },	       { "scheduled_at", "instant", C_TEXT },
		{ "partition", "part", C_NUM },	       { "source", "source", C_TEXT },
		{ "state", "state", C_TEXT },	       { "attempt_count", "attempts", C_NUM },
		{ "fence", "fence", C_NUM },	       { "lease_owner", "lease owner", C_TEXT },
		{ "last_error_class", "error class", C_TEXT },
		{ "next_attempt_at", "next attempt", C_TEXT },
		{ "finished_at", "finished", C_TEXT },
		{ "trace_id", "trace id", C_TEXT },
	};
	static const col acols[] = {
		{ "fence", "fence", C_NUM },	      { "node", "node", C_TEXT },
		{ "claimed_at", "claimed", C_TEXT },  { "ended_at", "ended", C_TEXT },
		{ "outcome", "outcome", C_TEXT },     { "error_class", "error class", C_TEXT },
		{ "http_status", "HTTP", C_NUM },     { "duration_ms", "ms", C_NUM },
	};
	if (json_array_size(trs) == 0) {
		g_string_append(o, "<p class=\"none\">none</p>\n");
	} else {
			bool acts = may(v, v->tenant);
		g_string_append(o, "<table><tr>");
		for (size_t k = 0; k < N(tcols); k++)
			g_string_append_printf(o, "<th>%s</th>", tcols[k].label);
		g_string_append(o, acts ? "<th>act</th></tr>\n" : "</tr>\n");
		json_array_foreach(trs, i, e)
		{
			const char *c = trigger_class(e);
			g_string_append_printf(o, "<tr class=\"trigger%s%s\">", c ? " " : "",
					       c ? c : "");
			for (size_t k = 0; k < N(tcols); k++)
				cell(o, e, &tcols[k], api->str, jcli->str);
			if (acts) {
				g_string_append(o, "<td class=\"acts\">");
				trigger_acts(o, v, e);
				g_string_append(o, "</td>");
			}
			g_string_append(o, "</tr>\n");
			json_t *atts = json_object_get(e, "attempts");
			if (json_array_size(atts)) {
				g_string_append_printf(o, "<tr><td colspan=\"%zu\">",
						       N(tcols) + acts);
				g_string_append(o, "<table class=\"sub\"><tr>");
				for (size_t k = 0; k < N(acols); k++)
					g_string_append_printf(o, "<th>%s</th>", acols[k].label);
				g_string_append(o, "</tr>\n");
				size_t a;
				json_t *at;
				json_array_foreach(atts, a, at)
				{
					g_string_append(o, "<tr class=\"attempt\">");
					for (size_t k = 0; k < N(acols); k++)
						cell(o, at, &acols[k], api->str, jcli->str);
					g_string_append(o, "</tr>\n");
					response_row(o, json_object_get(at, "response"), N(acols));
				}
				g_string_append(o, "</table></td></tr>\n");
			}
		}
		g_string_append(o, "</table>\n");
	}
	g_string_append(o, "</section>\n<div class=\"grid\">\n");

	g_string_assign(jcli, "palisade misfires --job ");
	pal_shell_quote(jcli, id);
	section_begin(o, "misfires", "Misfires", jcli->str, api->str);
	static const col mcols[] = { { "range_from", "from", C_TEXT },
				     { "range_to", "to", C_TEXT },
				     { "count", "instants", C_NUM },
				     { "reason", "reason", C_TEXT },
				     { "upstream_job", "upstream", C_JOB },
				     { "upstream_trigger", "upstream trigger", C_TRIGGER },
				     { "policy", "policy", C_TEXT },
				     { "decided_at", "decided", C_TEXT } };
	table(o, json_object_get(m, "misfires"), mcols, N(mcols), api->str, jcli->str, NULL);
	g_string_append(o, "</section>\n");
	section_begin(o, "tickets", "Tickets", "palisade tickets list --all", api->str);
	static const col kcols[] = {
		{ "id", "ticket", C_TICKET },	       { "state", "state", C_TEXT },
		{ "trigger_id", "trigger", C_NUM },    { "reason", "reason", C_TEXT },
		{ "error_class", "error class", C_TEXT },
		{ "allowed_actions", "allowed actions", C_LIST },
		{ "created_at", "created", C_TEXT },
	};
	table_act(o, json_object_get(m, "tickets"), kcols, N(kcols), api->str, NULL, NULL, v,
		  ticket_acts);
	g_string_append(o, "</section>\n</div>\n</main></body></html>\n");
	g_string_free(jcli, TRUE);
	g_string_free(cli, TRUE);
	g_string_free(api, TRUE);
}

/* TENANT (a JSON string) is one of SC's. */
static bool tenant_in(const scope *sc, const json_t *tenant)
{
	for (size_t i = 0; json_is_string(tenant) && i < sc->n; i++)
		if (!strcmp(sc->t[i], json_string_value(tenant)))
			return true;
	return false;
}

/* The job model (a new reference): the store's object plus next instants,
 * or {error} with database/zookeeper sources; another tenant's job than
 * SC's (when it names any) is no job (404). */
static json_t *job_model(pal_console *c, const char *id, const scope *sc, unsigned *status)
{
	json_t *m = NULL;
	*status = 200;
	char err[1024] = "";
	pal_store *st = db(c);
	if (!id || !*id) {
		*status = 400;
		snprintf(err, sizeof err, "no job id: use ?id=JOB");
	} else if (st) {
		int rc = pal_store_console_job(st, id, NULL, &m, err, sizeof err);
		/* another tenant's job is answered as no job, as the API does */
		if (!rc && sc->n &&
		    !tenant_in(sc, json_object_get(json_object_get(m, "job"), "tenant"))) {
			json_decref(m);
			m = NULL;
			snprintf(err, sizeof err, "no job with this id");
			rc = PAL_ENOENT;
		}
		if (rc == PAL_ENOENT) {
			*status = 404;
		} else if (rc) {
			db_failed(c, err);
			*status = 503;
		}
	} else {
		*status = 503;
		snprintf(err, sizeof err, "%s", c->db_err);
	}
	if (!m) {
		m = json_object();
		json_object_set_new(m, "error", json_string(err));
	} else {
		json_t *links = NULL;
		char lerr[256];
		if (pal_store_after_links(st, id, sc->t, sc->n, &links, lerr, sizeof lerr) == 0)
			json_object_set_new(m, "after", links);
		json_object_set_new(m, "next", next_instants(json_object_get(m, "spec"),
							     json_object_get(m, "anchor"), 5));
		pal_trace_ids_json(json_object_get(m, "triggers"), pal_trace_cluster(c->cluster));
	}
	char now[32];
	pal_fmt_rfc3339((int64_t)time(NULL), now, sizeof now);
	json_object_set_new(m, "now", json_string(now));
	json_object_set_new(m, "cluster", json_string(c->cluster));
	json_object_set_new(m, "served_by", json_string(c->node_id));
	json_object_set_new(m, "database", source(c->st != NULL && *status != 503, c->db_err));
	return m;
}

/* ---- serving ------------------------------------------------------------------ */

static void reply_json(pal_console_reply *out, unsigned status, const json_t *v)
{
	char *s = json_dumps(v, JSON_INDENT(2) | JSON_ENCODE_ANY);
	size_t n = s ? strlen(s) : 0;
	char *b = malloc(n + 2);
	if (b) {
		memcpy(b, s ? s : "", n);
		b[n] = '\n';
		b[n + 1] = '\0';
	}
	free(s);
	out->status = b ? status : 500;
	out->content_type = "application/json";
	out->body = b ? b : strdup("");
	out->len = b ? n + 1 : 0;
}

static void reply_html(pal_console_reply *out, unsigned status, GString *html)
{
	out->status = status;
	out->content_type = "text/html; charset=utf-8";
	out->len = html->len;
	/* g_malloc is malloc since GLib 2.46: the caller may free() it */
	out->body = g_string_free(html, FALSE);
}

bool pal_console_serve(pal_console *c, const pal_console_request *req, pal_console_reply *out)
{
	const char *path = req->path, *id = req->id, *section = req->section;
	bool page = !strcmp(path, "/console"), api = !strcmp(path, "/api/cluster");
	bool jpage = !strcmp(path, "/console/job"), japi = !strcmp(path, "/api/job");
	memset(out, 0, sizeof *out);
	if (!page && !api && !jpage && !japi)
		return pal__console_act(c, req, out);
	/* a login sees its tenants on the pages and in their JSON; only a
	 * page shows (and so takes) the session's message */
	pal__session s;
	viewer v = { .back = path };
	if (pal__session_get(c->sessions, req->session, page || jpage, &s))
		v.s = &s;
	scope sc = scope_of(v.s);
	GString *back = g_string_new("/console/job?id=");
	pal_html_urlarg(back, id ? id : "");
	if (jpage)
		v.back = back->str;
	pthread_mutex_lock(&c->mu);
	if (page || api) {
		json_t *m = cluster_model(c, req->node_status, req->q, req->after, &sc);
		if (page) {
			GString *o = g_string_new(NULL);
			render_cluster(o, m, &v);
			reply_html(out, 200, o);
		} else if (section && *section) {
			json_t *one = json_object_get(m, section);
			if (one) {
				one = json_pack("{s:O}", section, one);
				reply_json(out, 200, one);
				json_decref(one);
			} else {
				json_t *e = json_pack("{s:s, s:s}", "error", "no such section",
						      "section", section);
				reply_json(out, 404, e);
				json_decref(e);
			}
		} else {
			reply_json(out, 200, m);
		}
		json_decref(m);
	} else {
		unsigned status;
		json_t *m = job_model(c, id, &sc, &status);
		if (jpage) {
			GString *o = g_string_new(NULL);
			render_job(o, m, id ? id : "", &v);
			reply_html(out, status, o);
		} else {
			json_object_del(m, "spec");
			reply_json(out, status, m);
		}
		json_decref(m);
	}
	pthread_mutex_unlock(&c->mu);
	g_string_free(back, TRUE);
	if (v.s)
		explicit_bzero(&s, sizeof s);
	return true;
}
