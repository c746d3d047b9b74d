/*
 * session.c - the ZooKeeper session of a pal_coord: watcher callbacks,
 * session start and restart with a fresh node uuid, registration of
 * nodes/<node-id>, and the cached listing of nodes/.
 *
 * Watchers run on the ZooKeeper client's completion thread.  They only
 * record events under pal_coord.mu and signal pal_coord.wake; the one thing
 * a watcher publishes itself is a suspension: on a disconnect or an expiry
 * it clears every shard's published leadership at once, because the
 * coordination thread may at that moment be blocked in a synchronous call
 * for up to the session timeout.  Everything else in this file runs on the
 * coordination thread.
 *
 * Each handle gets a coord_handle_ctx with a serial number; events of a
 * handle that has been replaced (after an expiry) are dropped.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <jansson.h>
#include "palisade/log.h"
#include "coord_int.h"

#define NODE_DATA_MAX 16384
#define REGISTER_RETRY_MS 200

/* ---- watchers (completion thread) ---------------------------------------- */

/* Clear the published leadership; caller holds mu. */
static void suspend_locked(pal_coord *c)
{
	bool changed = c->pub_connected;
	int64_t now = pal_wall_ms();
	for (int i = 0; i < c->n_shards; i++) {
		if (c->pub[i].leading) {
			changed = true;
			c->pub[i] = (pal_shard_lead){false, 0, now};
		}
	}
	c->pub_connected = false;
	if (changed) {
		c->gen++;
		pthread_cond_broadcast(&c->changed);
	}
}

static void session_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
	const coord_handle_ctx *h = zoo_get_context(zh);
	if (h == NULL || type != ZOO_SESSION_EVENT)
		return;
	pal_coord *c = h->c;
	pthread_mutex_lock(&c->mu);
	if (h->serial == c->serial) {
		c->conn_changes++;
		if (state == ZOO_CONNECTED_STATE) {
			c->zk_connected = true;
			c->ev_connected = true;
		} else {
			c->zk_connected = false;
			suspend_locked(c);
			if (state == ZOO_EXPIRED_SESSION_STATE || state == ZOO_AUTH_FAILED_STATE)
				c->ev_expired = true;
			else
				c->ev_disconnected = true;
		}
		pthread_cond_signal(&c->wake);
	}
	bool down = !c->zk_connected;
	pthread_mutex_unlock(&c->mu);
	/* The coordination thread may sit in a blocked zoo_* call for a while:
	 * the gauges must say "disconnected" now (metrics take their own lock
	 * and make no ZooKeeper call). */
	if (down && c->m != NULL) {
		pal_metric_set(c->m, "palisade_coord_connected", NULL, 0);
		pal_metric_set(c->m, "palisade_coord_shards_led", NULL, 0);
	}
}

void pal_coord__shard_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
	const coord_handle_ctx *h = zoo_get_context(zh);
	coord_shard *s = ctx;
	if (h == NULL || s == NULL || type == ZOO_SESSION_EVENT)
		return; /* session events are the session watcher's */
	pal_coord *c = s->c;
	pthread_mutex_lock(&c->mu);
	if (h->serial == c->serial) {
		c->ev_watch[s->idx] = true;
		pthread_cond_signal(&c->wake);
	}
	pthread_mutex_unlock(&c->mu);
}

static void nodes_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
	const coord_handle_ctx *h = zoo_get_context(zh);
	pal_coord *c = ctx;
	if (h == NULL || c == NULL || type == ZOO_SESSION_EVENT)
		return;
	pthread_mutex_lock(&c->mu);
	if (h->serial == c->serial) {
		c->ev_nodes = true;
		pthread_cond_signal(&c->wake);
	}
	pthread_mutex_unlock(&c->mu);
}

/* The client library's own log lines (warnings and errors only, see
 * pal_coord_open) become structured log lines. */
static void zk_log(const char *message)
{
	char buf[512];
	const char *m = message ? message : "";
	const char *lvl = strstr(m, "ZOO_"); /* skip the library's own time/pid/thread prefix */
	snprintf(buf, sizeof buf, "%s", lvl ? lvl : m);
	size_t n = strlen(buf);
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = '\0';
	pal_log(PAL_LOG_WARN, "zk.client", "{s:s}", "message", buf);
}

/* ---- helpers (coordination thread) ----------------------------------------- */

coord_step pal_coord__classify(int zrc)
{
	if (zrc == ZOK)
		return COORD_DONE;
	if (zrc == ZCONNECTIONLOSS || zrc == ZOPERATIONTIMEOUT || zrc == ZSESSIONEXPIRED ||
	    zrc == ZINVALIDSTATE || zrc == ZSESSIONMOVED || zrc == ZCLOSING)
		return COORD_CONN;
	return COORD_LATER;
}

int pal_coord__ensure_path(pal_coord *c, const char *path)
{
	char buf[PAL_COORD_PATH_MAX];
	size_t base_len = strlen(c->base);
	snprintf(buf, sizeof buf, "%s", path);
	for (char *p = buf + 1;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char saved = *p;
		*p = '\0';
		const struct ACL_vector *acl = (size_t)(p - buf) < base_len ? c->up_acl : c->acl;
		int zrc = zoo_create(c->zh, buf, NULL, -1, acl, ZOO_PERSISTENT, NULL, 0);
		*p = saved;
		if (zrc != ZOK && zrc != ZNODEEXISTS)
			return zrc;
		if (saved == '\0')
			return ZOK;
	}
}

/* Sleep MS on the wake condvar; true when stop was requested. */
static bool nap(pal_coord *c, int ms)
{
	struct timespec ts = pal_mono_deadline(ms);
	pthread_mutex_lock(&c->mu);
	while (!c->stop && pthread_cond_timedwait(&c->wake, &c->mu, &ts) == 0)
		;
	bool stop = c->stop;
	pthread_mutex_unlock(&c->mu);
	return stop;
}

static void new_uuid(char out[PAL_COORD_UUID_HEX + 1])
{
	unsigned char r[16];
	size_t got = 0;
	while (got < sizeof r) {
		ssize_t n = getrandom(r + got, sizeof r - got, 0);
		if (n > 0)
			got += (size_t)n;
		else if (errno != EINTR)
			break;
	}
	if (got < sizeof r) { /* no entropy source: mix time and address */
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		uint64_t x =
		    (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ (uint64_t)(uintptr_t)out;
		for (size_t i = got; i < sizeof r; i++) {
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
			r[i] = (unsigned char)(x >> 56);
		}
	}
	for (int i = 0; i < 16; i++)
		snprintf(out + 2 * i, 3, "%02x", r[i]);
}

void pal_coord__session_close(pal_coord *c)
{
	if (c->zh != NULL) {
		zookeeper_close(c->zh); /* joins the client's threads: no callback after this */
		c->zh = NULL;
	}
	free(c->hctx);
	c->hctx = NULL;
	pthread_mutex_lock(&c->mu);
	c->zk_connected = false;
	pthread_mutex_unlock(&c->mu);
}

/* Wait until the new handle is connected; false on timeout, expiry or stop. */
static bool wait_connected(pal_coord *c, int wait_ms)
{
	int64_t deadline = wait_ms >= 0 ? pal_mono_ms() + wait_ms : INT64_MAX;
	pthread_mutex_lock(&c->mu);
	while (!c->zk_connected && !c->stop && !c->ev_expired) {
		int64_t left = deadline - pal_mono_ms();
		if (left <= 0)
			break;
		if (left > 200)
			left = 200;
		struct timespec ts = pal_mono_deadline(left);
		pthread_cond_timedwait(&c->wake, &c->mu, &ts);
	}
	bool ok = c->zk_connected;
	if (ok)
		c->ev_connected = false; /* consumed here */
	pthread_mutex_unlock(&c->mu);
	return ok;
}

/* ---- access control (coordination thread) --------------------------------- */

static void auth_done(int rc, const void *data)
{
	(void)data;
	if (rc != ZOK)
		pal_log(PAL_LOG_ERROR, "coord.auth_failed", "{s:s}", "error", zerror(rc));
}

static const char *no_auth_hint(const pal_coord *c)
{
	return c->auth != NULL ? " (the cluster's znodes belong to other ZooKeeper credentials)"
			       : " (the cluster's znodes are protected: configure "
				 "zookeeper.auth_file or $PALISADE_ZK_AUTH)";
}

bool pal_coord__acl_is_ours(const pal_coord *c, const struct ACL_vector *acl)
{
	if (c->auth == NULL)
		return true;
	if (c->ident == NULL || acl == NULL || acl->count != 1)
		return false;
	const struct ACL *a = &acl->data[0];
	return a->perms == ZOO_PERM_ALL && a->id.scheme && strcmp(a->id.scheme, "digest") == 0 &&
	       a->id.id && strcmp(a->id.id, c->ident) == 0;
}

/* Our identity as the server recorded it in the ACL of our node znode
 * (digest "user:base64(sha1(user:password))"). */
static int learn_ident(pal_coord *c, char *err, size_t errlen)
{
	struct ACL_vector acl = {0, NULL};
	struct Stat st;
	int zrc = zoo_get_acl(c->zh, c->self_path, &acl, &st);
	if (zrc != ZOK) {
		snprintf(err, errlen, "cannot read the ACL of %s: %s", c->self_path, zerror(zrc));
		return PAL_EZK;
	}
	int rc = 0;
	if (acl.count == 1 && acl.data[0].id.scheme && strcmp(acl.data[0].id.scheme, "digest") == 0) {
		free(c->ident);
		c->ident = strdup(acl.data[0].id.id);
		if (c->ident == NULL)
			rc = PAL_ENOMEM;
	} else {
		snprintf(err, errlen,
			 "%s was not created with our digest identity (the server ignored the "
			 "credentials?)",
			 c->self_path);
		rc = PAL_EZK;
	}
	deallocate_ACL_vector(&acl);
	if (rc == PAL_ENOMEM)
		snprintf(err, errlen, "out of memory");
	return rc;
}

/* Take over one persistent znode of the tree: set our ACL when it has
 * another (a tree created before credentials were configured). */
static int secure_one(pal_coord *c, const char *path, char *err, size_t errlen)
{
	struct ACL_vector acl = {0, NULL};
	struct Stat st;
	int zrc = zoo_get_acl(c->zh, path, &acl, &st);
	if (zrc == ZNONODE)
		return 0; /* created with our ACL when first needed */
	if (zrc != ZOK) {
		snprintf(err, errlen, "cannot read the ACL of %s: %s", path, zerror(zrc));
		return PAL_EZK;
	}
	bool ours = pal_coord__acl_is_ours(c, &acl);
	deallocate_ACL_vector(&acl);
	if (ours)
		return 0;
	zrc = zoo_set_acl(c->zh, path, -1, c->acl);
	if (zrc != ZOK) {
		snprintf(err, errlen, "cannot set our ACL on %s: %s%s", path, zerror(zrc),
			 zrc == ZNOAUTH ? no_auth_hint(c) : "");
		return PAL_EZK;
	}
	pal_log(PAL_LOG_WARN, "coord.acl_taken_over", "{s:s}", "path", path);
	return 0;
}

/* The ACL pass of the first session: base, nodes/, shards/ and every
 * shard's directories end up with our ACL. */
static int secure_tree(pal_coord *c, char *err, size_t errlen)
{
	char path[PAL_COORD_PATH_MAX];
	int rc = secure_one(c, c->base, err, errlen);
	if (rc == 0)
		rc = secure_one(c, c->nodes_path, err, errlen);
	snprintf(path, sizeof path, "%s/shards", c->base);
	if (rc == 0)
		rc = secure_one(c, path, err, errlen);
	for (int i = 0; rc == 0 && i < c->n_shards; i++) {
		snprintf(path, sizeof path, "%s/shards/%04d", c->base, i);
		rc = secure_one(c, path, err, errlen);
		if (rc == 0) {
			pal_coord__election_path(c, i, path, sizeof path);
			rc = secure_one(c, path, err, errlen);
		}
	}
	c->tree_secured = rc == 0;
	return rc;
}

/* Create nodes/<node-id> as ours.  See pal_coord__session_open(). */
static int register_node(pal_coord *c, bool first, char *err, size_t errlen)
{
	int64_t warn_at = pal_mono_ms() + 2 * (int64_t)c->session_timeout_ms;
	for (;;) {
		int zrc = zoo_create(c->zh, c->self_path, c->node_info, (int)strlen(c->node_info),
				     c->acl, ZOO_EPHEMERAL, NULL, 0);
		if (zrc == ZOK)
			return 0;
		if (zrc == ZNODEEXISTS) {
			struct Stat st;
			zrc = zoo_exists(c->zh, c->self_path, 0, &st);
			if (zrc == ZOK && st.ephemeralOwner == c->session_id)
				return 0; /* created by us; the reply was lost */
			if (zrc == ZOK) {
				if (first) {
					snprintf(err, errlen,
						 "node id %s is already in use by a live node "
						 "(ZooKeeper session 0x%llx "
						 "holds %s); if that node just died, its session "
						 "expires within its "
						 "timeout: retry then",
						 c->node_id, (unsigned long long)st.ephemeralOwner,
						 c->self_path);
					return PAL_EBUSY;
				}
				if (pal_mono_ms() > warn_at) {
					pal_log(PAL_LOG_ERROR, "coord.node_id_busy", "{s:s, s:s}",
						"node_id", c->node_id, "path", c->self_path);
					warn_at = pal_mono_ms() + 5000;
				}
			}
		} else if (pal_coord__classify(zrc) == COORD_LATER) {
			snprintf(err, errlen, "cannot register %s in ZooKeeper: %s%s", c->self_path,
				 zerror(zrc), zrc == ZNOAUTH ? no_auth_hint(c) : "");
			return PAL_EZK;
		} else {
			bool expired;
			pthread_mutex_lock(&c->mu);
			expired = c->ev_expired;
			pthread_mutex_unlock(&c->mu);
			if (expired) {
				snprintf(err, errlen,
					 "ZooKeeper session expired while registering %s",
					 c->self_path);
				return PAL_EZK;
			}
		}
		if (nap(c, REGISTER_RETRY_MS)) {
			snprintf(err, errlen, "stopped while registering %s", c->self_path);
			return PAL_EZK;
		}
	}
}

int pal_coord__session_open(pal_coord *c, bool first, int wait_ms, char *err, size_t errlen)
{
	coord_handle_ctx *h = calloc(1, sizeof *h);
	if (h == NULL) {
		snprintf(err, errlen, "out of memory");
		return PAL_ENOMEM;
	}
	new_uuid(c->uuid);
	h->c = c;
	pthread_mutex_lock(&c->mu);
	h->serial = ++c->serial;
	c->zk_connected = false;
	c->ev_connected = c->ev_disconnected = c->ev_expired = false;
	pthread_mutex_unlock(&c->mu);

	c->hctx = h;
	c->zh =
	    zookeeper_init2(c->connect, session_watcher, c->session_timeout_ms, NULL, h, 0, zk_log);
	if (c->zh == NULL) {
		snprintf(err, errlen, "cannot start a ZooKeeper client for %s: %s", c->connect,
			 strerror(errno));
		free(h);
		c->hctx = NULL;
		return PAL_EZK;
	}
	if (c->auth != NULL) {
		/* Queued now, sent first on every (re)connection of this handle. */
		int arc = zoo_add_auth(c->zh, "digest", c->auth, (int)strlen(c->auth),
				       auth_done, NULL);
		if (arc != ZOK) {
			snprintf(err, errlen, "cannot add ZooKeeper credentials: %s", zerror(arc));
			pal_coord__session_close(c);
			return PAL_EZK;
		}
	}
	if (!wait_connected(c, wait_ms)) {
		snprintf(err, errlen, "cannot connect to ZooKeeper at %s within %d ms", c->connect,
			 wait_ms);
		pal_coord__session_close(c);
		return PAL_EZK;
	}
	c->session_id = zoo_client_id(c->zh)->client_id;
	int zrc = pal_coord__ensure_path(c, c->nodes_path);
	if (zrc != ZOK) {
		snprintf(err, errlen, "cannot create %s in ZooKeeper: %s%s", c->nodes_path,
			 zerror(zrc), zrc == ZNOAUTH ? no_auth_hint(c) : "");
		pal_coord__session_close(c);
		return PAL_EZK;
	}
	int rc = register_node(c, first, err, errlen);
	if (rc == 0 && c->auth != NULL)
		rc = learn_ident(c, err, errlen);
	if (rc == 0 && c->auth != NULL && !c->tree_secured)
		rc = secure_tree(c, err, errlen);
	if (rc != 0) {
		pal_coord__session_close(c);
		return rc;
	}
	char sid[24];
	snprintf(sid, sizeof sid, "0x%llx", (unsigned long long)c->session_id);
	pal_log(PAL_LOG_INFO, "coord.session.started", "{s:s, s:s, s:i, s:s}", "session", sid,
		"uuid", c->uuid, "timeout_ms", zoo_recv_timeout(c->zh), "node_path", c->self_path);
	return 0;
}

/* Does the node info JSON say the node runs the controller role?  Info that
 * is not a JSON object with a "roles" array counts as a controller (older or
 * foreign writers), so that the estimate errs towards more controllers,
 * which only makes the quota smaller, never the spread worse. */
static bool is_controller(const char *data, int len)
{
	if (len <= 0)
		return true;
	json_error_t jerr;
	json_t *j = json_loadb(data, (size_t)len, 0, &jerr);
	bool ctl = true;
	json_t *roles = j ? json_object_get(j, "roles") : NULL;
	if (json_is_array(roles)) {
		ctl = false;
		size_t i;
		json_t *r;
		json_array_foreach(roles, i, r)
		{
			if (json_is_string(r) && strcmp(json_string_value(r), "controller") == 0)
				ctl = true;
		}
	}
	json_decref(j);
	return ctl;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

coord_step pal_coord__refresh_nodes(pal_coord *c)
{
	struct String_vector kids = {0, NULL};
	int zrc = zoo_wget_children(c->zh, c->nodes_path, nodes_watcher, c, &kids);
	if (zrc != ZOK)
		return pal_coord__classify(zrc);
	char **list = calloc((size_t)kids.count + 1, sizeof *list);
	char *data = malloc(NODE_DATA_MAX);
	int n = 0, controllers = 0;
	coord_step ret = COORD_DONE;
	if (list == NULL || data == NULL) {
		ret = COORD_LATER;
		goto out;
	}
	for (int i = 0; i < kids.count; i++) {
		char path[PAL_COORD_PATH_MAX];
		int len = NODE_DATA_MAX;
		snprintf(path, sizeof path, "%s/%s", c->nodes_path, kids.data[i]);
		zrc = zoo_get(c->zh, path, 0, data, &len, NULL);
		if (zrc == ZNONODE)
			continue; /* left meanwhile; the watch fires again */
		if (zrc != ZOK) {
			ret = pal_coord__classify(zrc);
			goto out;
		}
		if ((list[n] = strdup(kids.data[i])) == NULL) {
			ret = COORD_LATER;
			goto out;
		}
		n++;
		controllers += is_controller(data, len);
	}
	qsort(list, (size_t)n, sizeof *list, cmp_str);
	pthread_mutex_lock(&c->mu);
	char **old = c->nodes_cache;
	c->nodes_cache = list;
	pthread_mutex_unlock(&c->mu);
	list = old;
	if (controllers != c->live_controllers)
		pal_log(PAL_LOG_INFO, "coord.nodes", "{s:i, s:i}", "live", n, "controllers",
			controllers);
	c->live_controllers = controllers;
out:
	pal_coord_free_list(list);
	free(data);
	deallocate_String_vector(&kids);
	return ret;
}
