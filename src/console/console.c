/*
 * console.c - the cluster console (console.h): opens and closes it, and
 * serves its read paths.  A request takes the viewer's session and its
 * tenant scope, builds the cluster or job model (model.c) and answers it
 * as JSON or renders it as a page (page_cluster.c, page_job.c, from the
 * parts in html.c); the login, logout and action paths go to act.c.
 *
 * Threading: called from the admin endpoint's thread(s); one request at a
 * time (c->mu), which also keeps the one connection single-threaded.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/console.h"
#include "palisade/coord.h"
#include "palisade/html.h"
#include "palisade/store.h"
#include "console_int.h"


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
	c->peer_cacert = cfg->peer_cacert && *cfg->peer_cacert ? strdup(cfg->peer_cacert) : NULL;
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
	free(c->peer_cacert);
	free(c);
}


/* ---- serving ------------------------------------------------------------------ */

static void reply_json(pal_console_reply *out, unsigned status, const json_t *v)
{
	char *s = json_dumps(v, JSON_INDENT(2) | JSON_ENCODE_ANY);
	size_t n = s ? strlen(s) : 0;
	char *b = malloc(n + 2);
	out->content_type = "application/json";
	if (!b) {
		free(s);
		out->status = 500;
		out->body = strdup("");
		out->len = 0;
		return;
	}
	memcpy(b, s ? s : "", n);
	b[n] = '\n';
	b[n + 1] = '\0';
	free(s);
	out->status = status;
	out->body = b;
	out->len = n + 1;
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
	pal__viewer v = { .back = path };
	if (pal__session_get(c->sessions, req->session, page || jpage, &s))
		v.s = &s;
	pal__scope sc = pal__console_scope_of(v.s);
	GString *back = g_string_new("/console/job?id=");
	pal_html_urlarg(back, id ? id : "");
	if (jpage)
		v.back = back->str;
	pthread_mutex_lock(&c->mu);
	if (page || api) {
		json_t *m =
		    pal__console_cluster_model(c, req->node_status, req->q, req->after, &sc);
		if (page) {
			GString *o = g_string_new(NULL);
			pal__console_render_cluster(o, m, &v);
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
		json_t *m = pal__console_job_model(c, id, &sc, &status);
		if (jpage) {
			GString *o = g_string_new(NULL);
			pal__console_render_job(o, m, id ? id : "", &v);
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
