/*
 * model.c - the console's sources and the model it renders: one JSON
 * object per request, the same whether a page or /api/cluster shows it.
 *
 * The model of a cluster page, built per request:
 *   - PostgreSQL (pal_store_console_cluster): shards, backlogs, leases,
 *     attempts, misfires, tickets, breakers, jobs - the same whichever node
 *     serves the page;
 *   - ZooKeeper (pal_coord_inspector_nodes, through a session the console
 *     keeps from page to page): the live nodes and what they registered
 *     (version, roles, schema, admin address, ready, draining);
 *   - each live peer's /status (ready, draining, its executor's counters),
 *     fetched with a short timeout and no credentials; of a peer whose
 *     /status needs the token, ready and draining from its registration
 *     and no counters; this node's own status from memory.
 * A source that fails is named on the page (and in the JSON under
 * database/zookeeper) and the rest still renders.  After a failure the
 * source is not retried for RETRY_MS, so a page with the database down
 * answers at once instead of waiting out a connect timeout every time.
 *
 * Threading: called from pal_console_serve() with c->mu held, which
 * keeps the one database connection and ZooKeeper session single-threaded.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <curl/curl.h>
#include "palisade/clock.h"
#include "palisade/consolestore.h"
#include "palisade/coord.h"
#include "palisade/jobspec.h"
#include "palisade/log.h"
#include "palisade/plandiff.h"
#include "palisade/schedule.h"
#include "palisade/store.h"
#include "palisade/timefmt.h"
#include "palisade/trace.h"
#include "console_int.h"

#define RETRY_MS 5000	     /* a failed source is not asked again before this */
#define PEER_TIMEOUT_MS 800  /* a peer's /status */
#define PEER_BODY_MAX 262144 /* bytes of a peer's /status we read */

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

/* A peer's /status at ADMIN ("host:port"), or NULL with ERR and *CODE, its
 * HTTP status (0: no answer). */
static json_t *peer_status(pal_console *c, const char *admin, long *code, char *err,
			   size_t errlen)
{
	CURL *h = curl_easy_init();
	if (!h) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	/* No credentials: the address comes from ZooKeeper, whoever can write
	 * a registration names it, and a token is a credential for every
	 * node.  A peer whose reads need a token answers 401: merge_nodes()
	 * then shows what the peer publishes in ZooKeeper. */
	char url[600];
	snprintf(url, sizeof url, "%s://%s/status", c->peer_cacert ? "https" : "http", admin);
	GString *body = g_string_new(NULL);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, c->peer_cacert ? "https" : "http");
	if (c->peer_cacert)
		curl_easy_setopt(h, CURLOPT_CAINFO, c->peer_cacert);
	curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)PEER_TIMEOUT_MS);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)PEER_TIMEOUT_MS);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, peer_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, body);
	CURLcode rc = curl_easy_perform(h);
	*code = 0;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, code);
	curl_easy_cleanup(h);
	json_t *st = NULL;
	if (rc != CURLE_OK)
		snprintf(err, errlen, "%s", curl_easy_strerror(rc));
	else if (*code == 401)
		snprintf(err, errlen, "/status needs a token (admin.reads: token), which the "
				      "console does not send to peers");
	else if (*code != 200)
		snprintf(err, errlen, "/status answered %ld", *code);
	else if (!(st = json_loads(body->str, 0, NULL)) || !json_is_object(st)) {
		json_decref(st);
		st = NULL;
		snprintf(err, errlen, "/status is not a JSON object");
	}
	g_string_free(body, TRUE);
	return st;
}

/* ---- the model ----------------------------------------------------------- */

/* The next N instants of the job whose canonical spec is SPEC (its latest
 * version's; RFC 3339, after now) counted from ANCHOR (epoch seconds, the
 * store's PAL__ANCHOR_SQL: its activation, or where the controller takes it
 * over while it awaits activation, as `jobs --next` counts; null: now); an
 * empty array when it has none or the spec does not load. */
static json_t *next_instants(const json_t *spec, const json_t *anchor, int n)
{
	int64_t now = (int64_t)time(NULL);
	return pal_plan_spec_next(spec, json_is_integer(anchor) ? json_integer_value(anchor) : now,
				  now, n);
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

void pal__console_set_from(json_t *dst, const char *dkey, json_t *src, const char *skey)
{
	json_t *v = json_object_get(src, skey);
	if (v)
		json_object_set(dst, dkey, v);
}

/* What a login limited to tenants is shown of a node's /status: its
 * identity and health, nothing of every tenant's (shards, elected shards,
 * the executor's counters). */
static json_t *status_identity(const json_t *st)
{
	static const char *const keep[] = { "node",	 "cluster",   "version",  "roles", "ready",
					    "not_ready", "healthy",   "unhealthy", "draining" };
	json_t *out = json_object();
	for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++)
		pal__console_set_from(out, keep[i], (json_t *)st, keep[i]);
	return out;
}

/* Row E of a live peer whose /status needs the token (admin.reads: token):
 * its readiness and draining as it publishes them in its ZooKeeper
 * registration INFO (a node of 0.3.0 publishes neither: an error row), the
 * executor's counters unavailable (null; SCOPED: absent, as for any peer). */
static void published_readiness(json_t *e, const json_t *info, bool scoped)
{
	pal__console_set_from(e, "ready", (json_t *)info, "ready");
	json_object_set_new(e, "draining",
			    json_boolean(json_is_true(json_object_get(info, "draining"))));
	json_object_set_new(e, "status_from", json_string("zookeeper"));
	json_object_set_new(e, "status_note",
			    json_string("counters unavailable: /status needs a token "
					"(admin.reads: token), which the console does not send "
					"to peers; ready and draining as the node publishes "
					"them in ZooKeeper"));
	if (!scoped) {
		json_object_set_new(e, "stale_rejections_sink", json_null());
		json_object_set_new(e, "stale_rejections_db", json_null());
	}
}

/* One row per node known to any source: ZooKeeper (live), the database
 * (shard leaders, lease holders, attempt makers), and this node; SCOPED
 * (a login limited to tenants): without the executors' counters. */
static json_t *merge_nodes(pal_console *c, json_t *zk, json_t *view, const json_t *self,
			   bool scoped)
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
		pal__console_set_from(e, "version", info, "version");
		pal__console_set_from(e, "roles", info, "roles");
		pal__console_set_from(e, "schema_max", info, "schema");
		pal__console_set_from(e, "admin", info, "admin");
		json_t *st = NULL;
		if (is_self) {
			st = json_incref((json_t *)self);
		} else if (z && json_is_string(json_object_get(info, "admin"))) {
			char err[256];
			long code;
			st = peer_status(c, json_string_value(json_object_get(info, "admin")), &code,
					 err, sizeof err);
			if (!st && code == 401 && json_is_boolean(json_object_get(info, "ready")))
				published_readiness(e, info, scoped);
			else if (!st)
				json_object_set_new(e, "status_error", json_string(err));
		}
		if (st) {
			if (!json_object_get(e, "version"))
				pal__console_set_from(e, "version", st, "version");
			if (!json_object_get(e, "roles"))
				pal__console_set_from(e, "roles", st, "roles");
			pal__console_set_from(e, "ready", st, "ready");
			pal__console_set_from(e, "draining", st, "draining");
			json_t *ex = scoped ? NULL : json_object_get(st, "executor");
			pal__console_set_from(e, "stale_rejections_sink", ex,
					      "stale_rejections_sink");
			pal__console_set_from(e, "stale_rejections_db", ex, "stale_rejections_db");
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
				pal__console_set_from(e, keys[q], a, keys[q]);
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

pal__scope pal__console_scope_of(const pal__session *s)
{
	pal__scope sc = {.n = 0};
	for (size_t i = 0; s && i < s->who.n_tenants && i < PAL_TOKEN_TENANTS_MAX; i++)
		sc.t[sc.n++] = s->who.tenants[i];
	return sc;
}

/* The whole cluster model (a new reference), of the tenants of SC. */
json_t *pal__console_cluster_model(pal_console *c, const json_t *self, const char *q,
				   const char *after, const pal__scope *sc)
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
	json_object_set_new(m, "this_node", !self	   ? json_null()
					    : sc->n ? status_identity(self)
						    : json_deep_copy(self));
	/* The node's samples (its fires, their lateness, the backlog of every
	 * group) are every tenant's: a login limited to tenants gets null,
	 * which the page says; absent means the node keeps no samples. */
	json_object_set_new(m, "history", sc->n ? json_null() : pal__history_json(c->history));
	json_object_set_new(m, "nodes", sort_nodes(merge_nodes(c, zk, view, self, sc->n > 0)));
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

/* TENANT (a JSON string) is one of SC's. */
static bool tenant_in(const pal__scope *sc, const json_t *tenant)
{
	for (size_t i = 0; json_is_string(tenant) && i < sc->n; i++)
		if (!strcmp(sc->t[i], json_string_value(tenant)))
			return true;
	return false;
}

/* The job model (a new reference): the store's object plus next instants,
 * or {error} with database/zookeeper sources; another tenant's job than
 * SC's (when it names any) is no job (404). */
json_t *pal__console_job_model(pal_console *c, const char *id, const pal__scope *sc,
			       unsigned *status)
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
