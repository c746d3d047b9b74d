/*
 * inspect.c - read-only look at a cluster's ZooKeeper tree for the CLI
 * (`palisade status`, `palisade drain --node`) and the console: a session of
 * its own, independent of a node's pal_coord, short-lived for a command and
 * kept by the console from page to page (opening one, about 25 ms, was most
 * of a page's time).  Credentials for a cluster whose znodes are protected:
 * $PALISADE_ZK_AUTH_FILE, else $PALISADE_ZK_AUTH.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <glib.h>
#include <zookeeper.h>
#include "palisade/clock.h"
#include "palisade/coord.h"

/* The schema range a node advertises (docs/election.md): {"min", "max",
 * "compatible_from"} from its info, or the string "unknown" for a node that
 * does not advertise one (v0.1.0 writes "schema" but no "schema_min").
 * Returns a new reference. */
static json_t *schema_range(json_t *info)
{
	json_t *min = json_object_get(info, "schema_min"), *max = json_object_get(info, "schema");
	if (!json_is_integer(min) || !json_is_integer(max))
		return json_string("unknown");
	json_t *cf = json_object_get(info, "schema_compatible_from");
	return json_pack("{s:O, s:O, s:O}", "min", min, "max", max, "compatible_from",
			 json_is_integer(cf) ? cf : max);
}

struct pal_coord_inspector {
	zhandle_t *zh;
	char *connect;
	atomic_bool greeted; /* the watcher has been handed the session's connected event */
};

/* The watcher only notes the session's connected event, and the inspector
 * waits for it, not for zoo_state() alone: until the client's completion
 * thread has delivered it, a zookeeper_close() can meet that thread inside
 * the watcher and leave the handle for it to free, which the exit of a
 * short-lived command then cuts short (LeakSanitizer saw it once in about
 * 600 commands on a loaded machine; none in 6,000 since). */
static void greeting_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
	(void)zh, (void)path;
	pal_coord_inspector *in = ctx;
	if (type == ZOO_SESSION_EVENT && state == ZOO_CONNECTED_STATE)
		atomic_store(&in->greeted, true);
}

int pal_coord_inspector_open(const char *connect, int timeout_ms, pal_coord_inspector **out,
			     char *err, size_t errlen)
{
	*out = NULL;
	char *auth = NULL;
	int arc = pal_coord_auth_load(getenv("PALISADE_ZK_AUTH_FILE"), NULL, &auth, err, errlen);
	if (arc != 0)
		return arc;
	pal_coord_inspector *in = calloc(1, sizeof *in);
	if (!in || !(in->connect = strdup(connect))) {
		free(in);
		free(auth);
		snprintf(err, errlen, "out of memory");
		return PAL_ENOMEM;
	}
	zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
	zhandle_t *zh = zookeeper_init(connect, greeting_watcher,
				       timeout_ms > 2000 ? timeout_ms : 2000, NULL, in, 0);
	if (!zh) {
		snprintf(err, errlen, "cannot start a ZooKeeper session to %s: %s", connect,
			 strerror(errno));
		free(auth);
		pal_coord_inspector_close(in);
		return PAL_EZK;
	}
	in->zh = zh;
	if (auth != NULL) {
		arc = zoo_add_auth(zh, "digest", auth, (int)strlen(auth), NULL, NULL);
		memset(auth, 0, strlen(auth));
		free(auth);
		if (arc != ZOK) {
			snprintf(err, errlen, "cannot add ZooKeeper credentials: %s", zerror(arc));
			pal_coord_inspector_close(in);
			return PAL_EZK;
		}
	}
	/* polled in short steps: a connection on loopback takes about a
	 * millisecond, and a first step of 20 ms was most of a page */
	for (int waited = 0; zoo_state(zh) != ZOO_CONNECTED_STATE || !atomic_load(&in->greeted);
	     waited += 2) {
		if (waited >= timeout_ms) {
			snprintf(err, errlen, "ZooKeeper at %s not reachable within %d ms", connect,
				 timeout_ms);
			pal_coord_inspector_close(in);
			return PAL_EZK;
		}
		pal_sleep_ms(2);
	}
	*out = in;
	return PAL_OK;
}

void pal_coord_inspector_close(pal_coord_inspector *in)
{
	if (!in)
		return;
	if (in->zh)
		zookeeper_close(in->zh);
	free(in->connect);
	free(in);
}

/* The nodes of CLUSTER under ROOT through IN; a nodes path that does not
 * exist is no node when ABSENT_OK, else PAL_ENOENT with ERR naming it. */
static int nodes_at(pal_coord_inspector *in, const char *root, const char *cluster,
		    bool absent_ok, json_t **out, char *err, size_t errlen)
{
	*out = NULL;
	zhandle_t *zh = in->zh;
	/* between connections the client would queue the request and wait
	 * for a reconnection: answer now instead */
	int state = zoo_state(zh);
	if (state != ZOO_CONNECTED_STATE) {
		snprintf(err, errlen, "ZooKeeper at %s: session %s", in->connect,
			 state == ZOO_EXPIRED_SESSION_STATE ? "expired"
			 : state == ZOO_AUTH_FAILED_STATE   ? "refused its credentials"
							    : "not connected");
		return PAL_EZK;
	}
	char path[512];
	snprintf(path, sizeof path, "%s/%s/nodes", root, cluster);
	struct String_vector kids = {0, NULL};
	int zrc = zoo_get_children(zh, path, 0, &kids);
	if (zrc == ZNONODE && !absent_ok) {
		snprintf(err, errlen,
			 "%s does not exist in ZooKeeper at %s: no node of cluster \"%s\" under "
			 "root %s has ever registered there (are the root and cluster name the "
			 "nodes'? pass --config with the nodes' configuration)",
			 path, in->connect, cluster, root);
		return PAL_ENOENT;
	}
	json_t *arr = json_array();
	if (zrc == ZNONODE) {
		*out = arr;
		return PAL_OK;
	}
	if (zrc != ZOK) {
		snprintf(err, errlen, "cannot list %s: %s%s", path, zerror(zrc),
			 zrc == ZNOAUTH ? " (protected: export PALISADE_ZK_AUTH_FILE or "
					  "PALISADE_ZK_AUTH with the cluster's credentials)"
					: "");
		json_decref(arr);
		return PAL_EZK;
	}
	for (int i = 0; i < kids.count; i++) {
		char child[768], buf[4096];
		int len = sizeof buf - 1;
		snprintf(child, sizeof child, "%s/%s", path, kids.data[i]);
		json_t *info = NULL;
		if (zoo_get(zh, child, 0, buf, &len, NULL) == ZOK && len >= 0) {
			buf[len] = '\0';
			info = json_loads(buf, 0, NULL);
			if (!info)
				info = json_string(buf);
		}
		json_t *v = json_object_get(info, "version");
		json_array_append_new(
		    arr, json_pack("{s:s, s:s, s:o, s:o*}", "id", kids.data[i], "version",
				   json_is_string(v) ? json_string_value(v) : "unknown",
				   "schema_range", schema_range(info), "info", info));
	}
	deallocate_String_vector(&kids);
	*out = arr;
	return PAL_OK;
}

int pal_coord_inspector_nodes(pal_coord_inspector *in, const char *root, const char *cluster,
			      json_t **out, char *err, size_t errlen)
{
	return nodes_at(in, root, cluster, true, out, err, errlen);
}

/* pal_coord_list_nodes(), or with ABSENT_OK false
 * pal_coord_list_registered_nodes(). */
static int list_nodes(const char *connect, const char *root, const char *cluster, int timeout_ms,
		      bool absent_ok, json_t **out, char *err, size_t errlen)
{
	*out = NULL;
	pal_coord_inspector *in;
	int rc = pal_coord_inspector_open(connect, timeout_ms, &in, err, errlen);
	if (!rc)
		rc = nodes_at(in, root, cluster, absent_ok, out, err, errlen);
	pal_coord_inspector_close(in);
	return rc;
}

int pal_coord_list_nodes(const char *connect, const char *root, const char *cluster, int timeout_ms,
			 json_t **out, char *err, size_t errlen)
{
	return list_nodes(connect, root, cluster, timeout_ms, true, out, err, errlen);
}

int pal_coord_list_registered_nodes(const char *connect, const char *root, const char *cluster,
				    int timeout_ms, json_t **out, char *err, size_t errlen)
{
	return list_nodes(connect, root, cluster, timeout_ms, false, out, err, errlen);
}

/* Whether NODE's info names ROLE. */
static bool has_role(const json_t *node, const char *role)
{
	size_t i;
	json_t *r;
	json_array_foreach(json_object_get(json_object_get(node, "info"), "roles"), i, r)
	{
		if (json_is_string(r) && !strcmp(json_string_value(r), role))
			return true;
	}
	return false;
}

/* Whether NODE advertises ROLE, or no roles at all (its release unknown). */
static bool may_have_role(const json_t *node, const char *role)
{
	return !json_is_array(json_object_get(json_object_get(node, "info"), "roles")) ||
	       has_role(node, role);
}

int pal_coord_older_nodes(const char *connect, const char *root, const char *cluster,
			  int timeout_ms, int min_schema, const char *role, json_t **older,
			  char *err, size_t errlen)
{
	json_t *nodes = NULL;
	*older = NULL;
	int rc = pal_coord_list_nodes(connect, root, cluster, timeout_ms, &nodes, err, errlen);
	if (rc)
		return rc;
	*older = pal_coord_older_of(nodes, min_schema, role);
	json_decref(nodes);
	return PAL_OK;
}

json_t *pal_coord_older_of(const json_t *nodes, int min_schema, const char *role)
{
	json_t *older = json_array();
	size_t i;
	json_t *n;
	json_array_foreach(nodes, i, n)
	{
		json_t *s = json_object_get(json_object_get(n, "info"), "schema");
		if ((json_is_integer(s) && json_integer_value(s) >= min_schema) ||
		    (role && !may_have_role(n, role)))
			continue;
		json_array_append_new(
		    older, json_pack("{s:O, s:O, s:o}", "id", json_object_get(n, "id"), "version",
				     json_object_get(n, "version"), "schema",
				     json_is_integer(s) ? json_copy(s) : json_string("unknown")));
	}
	return older;
}

const char *pal_coord_describe_nodes(const json_t *older, char *buf, size_t len)
{
	size_t at = 0, i;
	json_t *n;
	buf[0] = '\0';
	json_array_foreach(older, i, n)
	{
		json_t *s = json_object_get(n, "schema");
		char sch[32];
		if (json_is_integer(s))
			snprintf(sch, sizeof sch, "schema %lld", (long long)json_integer_value(s));
		else
			snprintf(sch, sizeof sch, "schema unknown");
		int w = snprintf(buf + at, len - at, "%s%s (%s, %s)", i ? ", " : "",
				 json_string_value(json_object_get(n, "id")),
				 json_string_value(json_object_get(n, "version")), sch);
		if (w < 0 || (size_t)w >= len - at)
			break;
		at += (size_t)w;
	}
	return buf;
}

json_t *pal_coord_config_drift(const json_t *nodes)
{
	json_t *out = json_array(), *keys = json_object();
	size_t i;
	json_t *n;
	/* every key any executor publishes */
	json_array_foreach(nodes, i, n)
	{
		const char *k;
		json_t *v;
		if (!has_role(n, "executor"))
			continue;
		json_object_foreach(json_object_get(json_object_get(n, "info"), "config"), k, v)
			json_object_set_new(keys, k, json_true());
	}
	const char *key;
	json_t *unused;
	json_object_foreach(keys, key, unused)
	{
		/* value -> "id, id" in node order; a node of an older release
		 * publishes none */
		json_t *by = json_object();
		json_array_foreach(nodes, i, n)
		{
			if (!has_role(n, "executor"))
				continue;
			json_t *v = json_object_get(json_object_get(json_object_get(n, "info"), "config"),
						    key);
			const char *val = json_is_string(v) ? json_string_value(v)
							    : "unpublished (an older release)";
			json_t *ids = json_object_get(by, val);
			const char *id = json_string_value(json_object_get(n, "id"));
			if (!ids)
				json_object_set_new(by, val, json_string(id ? id : "?"));
			else
				json_object_set_new(by, val,
						    json_sprintf("%s, %s", json_string_value(ids),
								 id ? id : "?"));
		}
		if (json_object_size(by) > 1) {
			GString *w = g_string_new(NULL);
			g_string_printf(w, "%s differs between executor nodes:", key);
			const char *val;
			json_t *ids;
			size_t k = 0;
			json_object_foreach(by, val, ids)
				g_string_append_printf(w, "%s %s: %s", k++ ? ";" : "", val,
						       json_string_value(ids));
			if (!strcmp(key, "executor.target_hosts"))
				g_string_append(w, " (a node where it is default or unpublished "
						   "calls any host)");
			json_array_append_new(out, json_string(w->str));
			g_string_free(w, TRUE);
		}
		json_decref(by);
	}
	json_decref(keys);
	return out;
}

void pal_coord_status_nodes(json_t *status, json_t *nodes)
{
	json_t *drift = pal_coord_config_drift(nodes);
	json_object_set_new(status, "nodes", nodes);
	if (json_array_size(drift))
		json_object_set_new(status, "warnings", drift);
	else
		json_decref(drift);
}

int pal_coord_require_schema(const char *connect, const char *root, const char *cluster,
			     int timeout_ms, int min_schema, const char *role, const char *what,
			     char *msg, size_t len)
{
	char err[512], who[1024];
	json_t *older = NULL;
	int rc = connect && *connect ? pal_coord_older_nodes(connect, root, cluster, timeout_ms,
							     min_schema, role, &older, err,
							     sizeof err)
				     : PAL_EZK;
	if (rc) {
		snprintf(
		    msg, len,
		    "%s, which nodes older than schema %d ignore, and the live nodes cannot be "
		    "read (%s): apply it once ZooKeeper answers",
		    what, min_schema,
		    connect && *connect ? err : "no ZooKeeper connect string is known");
		return PAL_EZK;
	}
	size_t n = json_array_size(older);
	if (n)
		snprintf(msg, len,
			 "%s, which nodes older than schema %d ignore (docs/upgrades.md); live "
			 "node%s older than that: %s; apply it once every node runs a release of "
			 "schema %d or later",
			 what, min_schema, n == 1 ? "" : "s",
			 pal_coord_describe_nodes(older, who, sizeof who), min_schema);
	json_decref(older);
	return n ? PAL_EBUSY : PAL_OK;
}

void pal_coord_nodes_path(const char *connect, const char *root, const char *cluster, char *out,
			  size_t len)
{
	const char *chroot = connect ? strchr(connect, '/') : NULL;
	size_t n = chroot ? strlen(chroot) : 0;
	while (n > 1 && chroot[n - 1] == '/')
		n--; /* "/east/" is "/east"; a lone "/" is no chroot */
	if (n == 1)
		n = 0;
	snprintf(out, len, "%.*s%s/%s/nodes", (int)n, n ? chroot : "", root, cluster);
}
