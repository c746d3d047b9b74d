/*
 * node.c - the daemon: ordered start-up, one main loop that reacts to flags
 * set by signal handlers and the admin endpoint, ordered drain.
 *
 * Threads: main (this loop), the controller thread, the coordination thread
 * and ZooKeeper's own I/O threads, the admin HTTP thread, the schema watch
 * (re-reads the database's schema range every 10 s, docs/upgrades.md).  The main thread
 * never blocks on the database or ZooKeeper after start-up.
 *
 * systemd (docs/operations.md): READY=1 once the roles run, WATCHDOG=1 from
 * the main loop while every registered thread beats (health.h), RELOADING=1
 * ... READY=1 around a SIGHUP reload, STOPPING=1 when the drain starts.
 * Outside systemd (no $NOTIFY_SOCKET) sd_notify() does nothing.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>
#include "palisade/admin.h"
#include "palisade/clock.h"
#include "palisade/controller.h"
#include "palisade/console.h"
#include "palisade/api.h"
#include "palisade/coord.h"
#include "palisade/executor.h"
#include "palisade/health.h"
#include "palisade/log.h"
#include "palisade/metrics.h"
#include "palisade/clusterstats.h"
#include "palisade/node.h"
#include "palisade/nodeconf.h"
#include "palisade/ops.h"
#include "palisade/periodic.h"
#include "palisade/retention.h"
#include "palisade/notify.h"
#include "palisade/sha256.h"
#include "palisade/store.h"

#include "palisade/version.h"

static volatile sig_atomic_t term_signals, hup_signal;

static void on_term(int sig)
{
	(void)sig;
	if (++term_signals >= 2)
		_exit(1); /* second SIGTERM: stop now */
}

static void on_hup(int sig)
{
	(void)sig;
	hup_signal = 1;
}

typedef struct node {
	pal_nodeconf conf;
	/* which ${NAME} secrets a job may name, borrowed from conf (its keys
	 * are restart-only): the API's apply, the executor, the notifier */
	pal_secret_policy secrets;
	/* which hosts a job may call and notify, borrowed from conf as well */
	pal_target_policy targets;
	const char *pg, *zk;
	const char *pg_direct; /* the connections that need a session (postgres.direct_conninfo) */
	int n_shards;
	pal_metrics *m;
	pal_coord *coord;
	pal_controller *ctl;
	pal_executor *exe;
	pal_clusterstats *stats; /* the cluster gauges (palisade_cluster_*) */
	pal_retention_worker *retention; /* partition maintenance rounds */
	pal_notifier *notifier;		 /* the outbox's deliveries (executor role) */
	pal_admin *admin;
	pal_console *console; /* served by the admin thread, with a connection of its own */
	pal_api *api;	      /* /api/v1, the same thread, a connection of its own too */
	atomic_bool drain_requested, ready, draining;
	atomic_bool db_prepared;
	/* The schema check's outcome (docs/upgrades.md), read by the admin
	 * thread under schema_mu.  A node under a database schema outside its
	 * range does not start its roles (no election, no claims) and says why
	 * in schema_refused until the schema is back in range. */
	pthread_mutex_t schema_mu;
	pal_schema_range schema;
	bool schema_known;
	char schema_refused[512]; /* "" when not refused */
	/* The binary's after-roll steps the database lacks (-1: not read). */
	int after_roll_n;
	const char *after_roll[PAL_AFTER_ROLL_MAX];
	pal_periodic *schema_watch; /* re-checks the range while the roles run */
	pal_store *schema_st;	    /* its connection (its thread only), NULL when none */
	atomic_bool schema_resign;  /* the range was left while running: drain, exit 70 */
	char *token; /* admin bearer token, NULL when none */
	struct timespec started;
	/* The data of our nodes/<node-id> in ZooKeeper (main thread only):
	 * what a peer's console shows of this node when its reads need the
	 * token, which consoles do not send to peers (publish_readiness()). */
	json_t *reg_info;
} node;

/* A thread's loop that has not beaten for this long is stuck (/healthz
 * fails, the watchdog pings stop).  Loops pass at least every second;
 * drills shorten it with $PALISADE_STALL_LIMIT_MS. */
static int64_t STALL_MS = 15000;
#define BUSY_RETRY_MS 500 /* while our id is held by another session */
#define PUBLISH_MS 1000	  /* readiness into ZooKeeper: checked this often */

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };
	while (nanosleep(&ts, &ts) && errno == EINTR && !term_signals)
		;
}

static bool ready_check(node *n, char *why, size_t len);

static json_t *status_cb(void *arg)
{
	node *n = arg;
	json_t *roles = json_array();
	if (n->conf.roles & PAL_ROLE_CONTROLLER)
		json_array_append_new(roles, json_string("controller"));
	if (n->conf.roles & PAL_ROLE_EXECUTOR)
		json_array_append_new(roles, json_string("executor"));
	char why[256] = "", hwhy[512] = "";
	bool ready = ready_check(n, why, sizeof why);
	bool healthy = pal_health_check(hwhy, sizeof hwhy);
	json_t *st = json_pack("{s:s, s:s, s:s, s:o, s:b, s:s?, s:b, s:s?, s:b, s:i}", "node",
			       n->conf.node_id, "cluster", n->conf.cluster, "version",
			       PALISADE_VERSION, "roles", roles, "ready", ready, "not_ready",
			       ready ? NULL : why, "healthy", healthy, "unhealthy",
			       healthy ? NULL : hwhy, "draining", atomic_load(&n->draining),
			       "shard_count", n->n_shards);
	char names[PAL_HEALTH_MAX][32];
	int64_t age[PAL_HEALTH_MAX], lim[PAL_HEALTH_MAX];
	size_t nt = pal_health_list(names, age, lim, PAL_HEALTH_MAX);
	json_t *threads = json_object();
	for (size_t i = 0; i < nt; i++)
		json_object_set_new(threads, names[i],
				    json_pack("{s:I, s:I}", "last_beat_ms_ago", (json_int_t)age[i],
					      "stall_ms", (json_int_t)lim[i]));
	json_object_set_new(st, "threads", threads);
	pthread_mutex_lock(&n->schema_mu);
	const pal_schema_range *r = &n->schema;
	json_t *sc = json_pack("{s:i, s:i, s:i}", "binary", r->binary, "min", r->min,
			       "compatible_from", r->compatible_from);
	if (n->schema_known) {
		json_object_set_new(sc, "database", json_integer(r->db_version));
		json_object_set_new(sc, "database_compatible_from",
				    json_integer(r->db_compatible_from));
		json_object_set_new(sc, "supported", json_boolean(pal_schema_supported(r)));
	}
	if (n->schema_refused[0])
		json_object_set_new(sc, "refused", json_string(n->schema_refused));
	if (n->after_roll_n >= 0) {
		json_t *pend = json_array();
		for (int i = 0; i < n->after_roll_n && i < PAL_AFTER_ROLL_MAX; i++)
			json_array_append_new(pend, json_string(n->after_roll[i]));
		json_object_set_new(sc, "pending_after_roll", pend);
	}
	pthread_mutex_unlock(&n->schema_mu);
	json_object_set_new(st, "schema", sc);
	if (n->coord) {
		pal_shard_lead *lead = calloc((size_t)n->n_shards, sizeof *lead);
		bool connected = false;
		if (lead) {
			pal_coord_snapshot(n->coord, lead, &connected);
			json_t *led = json_array();
			for (int s = 0; s < n->n_shards; s++)
				if (lead[s].leading)
					json_array_append_new(led, json_integer(s));
			json_object_set_new(st, "zookeeper_connected", json_boolean(connected));
			json_object_set_new(st, "elected_shards", led);
			free(lead);
		}
	}
	if (n->exe)
		json_object_set_new(st, "executor", pal_executor_status(n->exe));
	if (n->ctl) {
		json_t *cs = pal_controller_status(n->ctl);
		json_object_set(st, "db_up", json_object_get(cs, "db_up"));
		json_object_set(st, "shards", json_object_get(cs, "shards"));
		json_object_set(st, "key_horizon_exceeded",
				json_object_get(cs, "key_horizon_exceeded"));
		json_decref(cs);
	}
	return st;
}

/* The audit row of an admin write; a database that cannot take it does not
 * stop the action (a drain is how an operator gets out of an outage), the
 * log line names the client either way. */
static void audit(node *n, const char *action, const char *client)
{
	char err[512] = "";
	pal_store *st = NULL;
	json_t *d = json_pack("{s:s, s:s}", "client", client, "via", "admin endpoint");
	char *details = json_dumps(d, JSON_COMPACT);
	json_decref(d);
	char actor[160], scope[160];
	snprintf(actor, sizeof actor, "admin@%s", client);
	snprintf(scope, sizeof scope, "node:%s", n->conf.node_id);
	int rc = pal_store_open(n->pg, &st, err, sizeof err);
	if (!rc)
		rc = pal_store_audit(st, actor, action, scope, "POST /drain", details, err,
				     sizeof err);
	pal_store_close(st);
	free(details);
	if (rc)
		pal_log(PAL_LOG_ERROR, "node.audit_failed", "{s:s, s:s, s:s}", "action", action,
			"client", client, "error", err);
}

static int action_cb(void *arg, const char *action, const char *client)
{
	node *n = arg;
	if (!strcmp(action, "drain")) {
		audit(n, "drain", client);
		atomic_store(&n->drain_requested, true);
		return 0;
	}
	return -1;
}

/* POST /api/v1/drain (api.h): the API wrote the audit row itself. */
static void api_drain_cb(void *arg)
{
	node *n = arg;
	atomic_store(&n->drain_requested, true);
}

static bool healthy_cb(void *arg, char *why, size_t len)
{
	return pal_health_check(why, len);
}

/* Ready: started, not draining, PostgreSQL and ZooKeeper reachable. */
static bool ready_check(node *n, char *why, size_t len)
{
	if (atomic_load(&n->draining)) {
		snprintf(why, len, "draining");
		return false;
	}
	pthread_mutex_lock(&n->schema_mu);
	bool refused = n->schema_refused[0] != '\0';
	if (refused)
		snprintf(why, len, "refusing to lead: %s", n->schema_refused);
	pthread_mutex_unlock(&n->schema_mu);
	if (refused)
		return false;
	if (!atomic_load(&n->db_prepared)) {
		snprintf(why, len, "waiting for PostgreSQL (schema check)");
		return false;
	}
	if (!n->coord) {
		snprintf(why, len, "ZooKeeper unreachable (connecting)");
		return false;
	}
	if (!atomic_load(&n->ready)) {
		snprintf(why, len, "starting the roles");
		return false;
	}
	if (n->coord) {
		bool connected = false;
		pal_shard_lead *lead = calloc((size_t)n->n_shards, sizeof *lead);
		if (lead)
			pal_coord_snapshot(n->coord, lead, &connected);
		free(lead);
		if (!connected) {
			snprintf(why, len, "ZooKeeper unreachable");
			return false;
		}
	}
	json_t *parts[2] = { n->ctl ? pal_controller_status(n->ctl) : NULL,
			     n->exe ? pal_executor_status(n->exe) : NULL };
	bool db = true;
	char which[64] = "";
	for (int i = 0; i < 2; i++) {
		json_t *v = parts[i] ? json_object_get(parts[i], "db_up") : NULL;
		const char *d = parts[i] ? json_string_value(json_object_get(parts[i], "db_down"))
					 : NULL;
		if (v && !json_is_true(v)) {
			/* the executor names the path that is down */
			if (db && d)
				snprintf(which, sizeof which, " (executor: %s)", d);
			db = false;
		}
		json_decref(parts[i]);
	}
	if (!db) {
		snprintf(why, len, "PostgreSQL unreachable%s", which);
		return false;
	}
	return true;
}

static bool ready_cb(void *arg, char *why, size_t len)
{
	return ready_check(arg, why, len);
}

/* Readiness and draining into our nodes/<node-id> when they changed: a
 * console shows them for a peer whose /status needs the token (admin.reads:
 * token), since it sends peers no credential.  Only the two flags, not the
 * reason, which /readyz keeps behind the token.  Fresh to PUBLISH_MS while
 * ZooKeeper is reachable; a node that loses it keeps its last flags there
 * until its session expires and the entry goes. */
static void publish_readiness(node *n)
{
	char why[256];
	bool ready = ready_check(n, why, sizeof why), draining = atomic_load(&n->draining);
	if (n->coord == NULL || n->reg_info == NULL ||
	    (json_is_true(json_object_get(n->reg_info, "ready")) == ready &&
	     json_is_true(json_object_get(n->reg_info, "draining")) == draining))
		return;
	json_object_set_new(n->reg_info, "ready", json_boolean(ready));
	json_object_set_new(n->reg_info, "draining", json_boolean(draining));
	char *s = json_dumps(n->reg_info, JSON_COMPACT);
	if (s != NULL)
		pal_coord_set_info(n->coord, s);
	free(s);
}

/* The settings every executor node of a cluster must agree on, as
 * digests in our nodes/<node-id> ("default", or 12 hex digits of the
 * SHA-256 of the value as written), so that `palisade status` can say
 * which nodes differ (pal_coord_config_drift()): a node whose
 * executor.target_hosts is unset calls any host.  RUNNING: the node's
 * values; FRESH (NULL at start): a reload's file, whose reloadable keys
 * take effect now. */
static json_t *shared_config(const pal_nodeconf *running, const pal_nodeconf *fresh)
{
	static const char *const keys[] = {"executor.target_hosts", "executor.secrets",
					   "executor.tenants"};
	size_t n;
	const pal_conf_key *table = pal_nodeconf_table(&n);
	json_t *out = json_object();
	for (size_t i = 0; i < n; i++) {
		for (size_t j = 0; j < sizeof keys / sizeof *keys; j++) {
			if (strcmp(table[i].name, keys[j]))
				continue;
			const pal_nodeconf *c = fresh && table[i].reloadable ? fresh : running;
			char *v = pal_nodeconf_format(c, &table[i]), hex[65];
			if (!v)
				continue;
			bool def = !strcmp(v, table[i].def);
			pal_sha256_hex(v, strlen(v), hex);
			hex[12] = '\0';
			json_object_set_new(out, keys[j], json_string(def ? "default" : hex));
			free(v);
		}
	}
	return out;
}

/* Record the schema check's outcome for /status, /readyz and the metrics;
 * REFUSED is the reason ("" when the schema is in range).  Logs a change. */
static void schema_outcome(node *n, const pal_schema_range *r, bool known, const char *refused)
{
	pthread_mutex_lock(&n->schema_mu);
	bool was = n->schema_refused[0] != '\0';
	bool same = !strcmp(n->schema_refused, refused);
	if (known) {
		n->schema = *r;
		n->schema_known = true;
	}
	snprintf(n->schema_refused, sizeof n->schema_refused, "%s", refused);
	pthread_mutex_unlock(&n->schema_mu);
	pal_metric_set(n->m, "palisade_node_schema_refused", NULL, *refused ? 1 : 0);
	if (known) {
		pal_metric_set(n->m, "palisade_node_schema", "of=\"binary\"", r->binary);
		pal_metric_set(n->m, "palisade_node_schema", "of=\"database\"", r->db_version);
		pal_metric_set(n->m, "palisade_node_schema", "of=\"database_compatible_from\"",
			       r->db_compatible_from);
	}
	if (*refused && !same)
		pal_log(PAL_LOG_ERROR, "node.schema_refused", "{s:s, s:i, s:i, s:s}", "error",
			refused, "binary_schema", r->binary, "db_schema", r->db_version, "hint",
			"not leading and not claiming until the schema is back in this binary's "
			"range; start a newer palisade instead");
	else if (!*refused && was)
		pal_log(PAL_LOG_INFO, "node.schema_accepted", "{s:i, s:i}", "binary_schema",
			r->binary, "db_schema", r->db_version);
}

/* Say in the database where this node registers in ZooKeeper (at start,
 * then every SCHEMA_WATCH_MS), for `palisade migrate` to check that it
 * reads the nodes' path; another path live on the database (a node
 * configured for another cluster, the chroot, root or name changed) is
 * logged.  A failure is logged and not fatal: the record only sharpens
 * migrate's check. */
static void say_zk_path(node *n, pal_store *st, bool at_start)
{
	char path[512], others[512], err[512];
	pal_coord_nodes_path(n->zk, n->conf.zk_root, n->conf.cluster, path, sizeof path);
	if (pal_store_zk_nodes_path_seen(st, path, others, sizeof others, err, sizeof err)) {
		if (at_start)
			pal_log(PAL_LOG_WARN, "node.zk_path_unrecorded", "{s:s, s:s}", "path", path,
				"error", err);
		return;
	}
	if (*others && at_start)
		pal_log(PAL_LOG_WARN, "node.zk_path_other", "{s:s, s:s}", "path", path, "others",
			others);
}

/* Record which of the binary's after-roll steps the database of ST lacks
 * (/status: schema.pending_after_roll); logs node.schema_after_roll_applied
 * when the last of them has been applied beside the running node. */
static void after_roll_outcome(node *n, pal_store *st)
{
	const char *names[PAL_AFTER_ROLL_MAX];
	int cnt = 0;
	char err[256];
	if (pal_store_pending_after_roll(st, names, PAL_AFTER_ROLL_MAX, &cnt, err, sizeof err))
		return;
	pthread_mutex_lock(&n->schema_mu);
	int was = n->after_roll_n;
	n->after_roll_n = cnt;
	memcpy(n->after_roll, names, sizeof names);
	pthread_mutex_unlock(&n->schema_mu);
	if (was > 0 && cnt == 0)
		pal_log(PAL_LOG_INFO, "node.schema_after_roll_applied", "{s:i}", "steps", was);
	else if (cnt > 0 && was != cnt)
		pal_log(PAL_LOG_INFO, "node.schema_after_roll_pending", "{s:i, s:s, s:s}", "steps",
			cnt, "first", names[0], "hint",
			"this node runs with or without them; 'palisade migrate' applies them once "
			"every node runs this release");
}

/* How often a running node re-reads the database's schema range. */
#define SCHEMA_WATCH_MS 10000

/* The periodic re-check (its own thread and connection): a database that
 * left this binary's range while the roles run (a contract step applied
 * beside it) makes the node resign: the main loop drains it (shards handed
 * off, no more claims) and it exits 70; started again, it waits refusing.
 * An unreachable database is not judged here (the roles report it). */
static void schema_watch(void *arg)
{
	node *n = arg;
	char err[512];
	if (!n->schema_st && pal_store_open(n->pg, &n->schema_st, err, sizeof err))
		return;
	int v = 0;
	int rc = pal_store_schema_check(n->schema_st, &v, err, sizeof err);
	if (!rc)
		say_zk_path(n, n->schema_st, false);
	if (rc != PAL_ESCHEMA) {
		if (rc == PAL_EDB) {
			pal_store_close(n->schema_st);
			n->schema_st = NULL;
		}
		pthread_mutex_lock(&n->schema_mu);
		bool pending = n->after_roll_n != 0;
		pthread_mutex_unlock(&n->schema_mu);
		if (!rc && pending) {
			/* an after-roll step applied beside it: in range still */
			pal_schema_range r;
			if (!pal_store_schema_range(n->schema_st, &r, err, sizeof err))
				schema_outcome(n, &r, true, "");
			after_roll_outcome(n, n->schema_st);
		}
		return;
	}
	pal_schema_range r;
	char rerr[256];
	bool known = pal_store_schema_range(n->schema_st, &r, rerr, sizeof rerr) == 0;
	schema_outcome(n, &r, known, err);
	atomic_store(&n->schema_resign, true);
	atomic_store(&n->drain_requested, true);
}

/* Migrations at start-up, retried while the database is unreachable or its
 * schema is outside this binary's range (docs/upgrades.md): in the latter
 * case the node stays up, not ready, and takes no role until it is in range. */
static int prepare_database(node *n)
{
	char err[1024];
	int backoff = 500;
	while (!term_signals) {
		pal_health_beat("main", STALL_MS + 10000); /* connect_timeout 5 s + backoff */
		pal_store *st;
		pal_schema_range r;
		pal_store_binary_schema(&r);
		/* The migration lock is a session's: the direct connection. */
		int rc = pal_store_open_session(n->pg_direct, &st, err, sizeof err);
		if (!rc) {
			int applied = 0;
			rc = pal_store_migrate(st, &applied, err, sizeof err);
			char rerr[256];
			bool known = pal_store_schema_range(st, &r, rerr, sizeof rerr) == 0;
			if (!rc)
				rc = pal_store_shard_count(st, n->conf.shards, &n->n_shards, err, sizeof err);
			if (!rc) {
				after_roll_outcome(n, st);
				say_zk_path(n, st, true);
			}
			pal_store_close(st);
			if (!rc) {
				schema_outcome(n, &r, known, "");
				pal_log(PAL_LOG_INFO, "node.schema_ready", "{s:i, s:i, s:i, s:i}", "applied",
					applied, "shards", n->n_shards, "binary_schema", r.binary,
					"db_schema", r.db_version);
				if (r.db_version > r.binary)
					pal_log(PAL_LOG_WARN, "node.schema_newer", "{s:i, s:i, s:i}",
						"binary_schema", r.binary, "db_schema", r.db_version,
						"db_compatible_from", r.db_compatible_from);
				if (n->n_shards != n->conf.shards)
					pal_log(PAL_LOG_WARN, "node.shard_count_fixed", "{s:i, s:i}",
						"configured", n->conf.shards, "cluster", n->n_shards);
				return 0;
			}
			if (rc == PAL_ESCHEMA) {
				schema_outcome(n, &r, known, err);
				sleep_ms(5000);
				continue;
			}
		}
		pal_log(PAL_LOG_WARN, "node.db_unavailable", "{s:s, s:i}", "error", err, "retry_ms",
			backoff);
		sleep_ms(backoff);
		backoff = backoff * 2 > 10000 ? 10000 : backoff * 2;
	}
	return PAL_EXIT_OK;
}

/* The command line's overrides of CONF (at start and on every reload, so
 * that a SIGHUP does not revert them to the file's values). */
static int apply_overrides(pal_nodeconf *conf, const pal_node_opts *o)
{
	if (o->node_id) {
		free(conf->node_id);
		conf->node_id = strdup(o->node_id);
	}
	if (o->admin) {
		free(conf->admin_listen);
		conf->admin_listen = strdup(o->admin);
	}
	if (o->roles) {
		unsigned r = 0;
		char *copy = strdup(o->roles), *save = NULL;
		for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
			if (!strcmp(t, "controller"))
				r |= PAL_ROLE_CONTROLLER;
			else if (!strcmp(t, "executor"))
				r |= PAL_ROLE_EXECUTOR;
			else {
				fprintf(stderr, "palisade node: unknown role \"%s\" (expected controller, executor)\n", t);
				free(copy);
				return PAL_EXIT_USAGE;
			}
		}
		free(copy);
		if (!r) {
			fprintf(stderr, "palisade node: --roles is empty\n");
			return PAL_EXIT_USAGE;
		}
		conf->roles = r;
	}
	return 0;
}

static int apply_opts(node *n, const pal_node_opts *o)
{
	pal_diags d = { 0 };
	int rc = o->config_path ? pal_nodeconf_load(o->config_path, &n->conf, &d)
				: pal_nodeconf_defaults(&n->conf);
	if (rc) {
		pal_diags_print(&d, stderr);
		pal_diags_free(&d);
		return PAL_EXIT_DATAERR;
	}
	pal_diags_free(&d);
	if ((rc = apply_overrides(&n->conf, o)))
		return rc;
	char terr[512];
	if (pal_nodeconf_admin_token(&n->conf, &n->token, terr, sizeof terr)) {
		fprintf(stderr, "palisade node: %s\n", terr);
		return PAL_EXIT_DATAERR;
	}
	n->secrets = pal_nodeconf_secret_policy(&n->conf);
	n->targets = pal_nodeconf_target_policy(&n->conf);
	n->pg = pal_nodeconf_pg(&n->conf, o->pg);
	n->zk = pal_nodeconf_zk(&n->conf, o->zk);
	n->pg_direct = pal_nodeconf_pg_direct(&n->conf, n->pg);
	if (!n->pg) {
		fprintf(stderr, "palisade node: no PostgreSQL connection string: pass --pg, set "
				"postgres.conninfo, or export PALISADE_PG\n");
		return PAL_EXIT_USAGE;
	}
	if (!n->zk) {
		fprintf(stderr, "palisade node: no ZooKeeper connect string: pass --zk, set "
				"zookeeper.connect, or export PALISADE_ZK\n");
		return PAL_EXIT_USAGE;
	}
	return 0;
}

/* RELOADING=1 with the monotonic time (systemd's reload protocol). */
static void notify_reloading(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	sd_notifyf(0, "RELOADING=1\nSTATUS=reloading the configuration\nMONOTONIC_USEC=%llu",
		   (unsigned long long)ts.tv_sec * 1000000ULL + (unsigned long long)ts.tv_nsec / 1000);
}

static void reload(node *n, const pal_node_opts *o)
{
	hup_signal = 0;
	notify_reloading();
	pal_log(PAL_LOG_INFO, "node.reload", NULL);
	const char *result = "reloaded";
	int restart_only = 0;
	if (o->config_path) {
		pal_nodeconf fresh;
		pal_diags d = { 0 };
		int rc = pal_nodeconf_load(o->config_path, &fresh, &d);
		if (!rc && apply_overrides(&fresh, o)) {
			pal_nodeconf_free(&fresh);
			rc = -1; /* cannot happen: the same flags passed at start */
		}
		if (rc) {
			result = "rejected";
			for (size_t i = 0; i < d.n; i++)
				pal_log(PAL_LOG_ERROR, "node.reload_rejected", "{s:s, s:i, s:i, s:s}",
					"file", d.v[i].file, "line", d.v[i].line, "col", d.v[i].col,
					"error", d.v[i].msg);
			pal_diags_free(&d);
		} else {
			pal_diags_free(&d);
			int k = restart_only = pal_nodeconf_restart_changes(&n->conf, &fresh, &d);
			for (size_t i = 0; i < d.n; i++)
				pal_log(PAL_LOG_WARN, "node.reload_needs_restart", "{s:s}", "key", d.v[i].msg);
			pal_diags_free(&d);
			/* The reloadable keys take effect now; restart-only ones keep
			 * their running values (logged above). */
			pal_log_set_level(fresh.log_level);
			if (n->ctl) {
				pal_controller_set_timing(n->ctl, (int)fresh.scan_interval_ms,
							  fresh.overlap_ms / 1000, fresh.lookahead_ms / 1000,
							  fresh.misfire_threshold_ms / 1000);
				/* Lowered or not: the jobs are checked against it again. */
				pal_controller_set_key_retention(n->ctl, fresh.sink_key_retention_ms);
			}
			n->conf.sink_key_retention_ms = fresh.sink_key_retention_ms;
			if (n->exe)
				pal_executor_set_limits(n->exe, fresh.batch, fresh.max_inflight,
							fresh.renew_failures_to_close_gate, fresh.groups,
							fresh.n_groups, fresh.tenants, fresh.n_tenants);
			pal_log(PAL_LOG_INFO, "node.config_reloaded", "{s:i}", "restart_only_changes", k);
			if (n->exe && n->coord && n->reg_info) {
				json_object_set_new(n->reg_info, "config", shared_config(&n->conf, &fresh));
				char *s = json_dumps(n->reg_info, JSON_COMPACT);
				if (s != NULL)
					pal_coord_set_info(n->coord, s);
				free(s);
			}
			pal_nodeconf_free(&fresh);
		}
	}
	if (n->ctl)
		pal_controller_reload(n->ctl);
	pal_log(!strcmp(result, "rejected") ? PAL_LOG_ERROR : PAL_LOG_INFO, "node.reload_done",
		"{s:s, s:i}", "result", result, "restart_only_changes", restart_only);
	sd_notifyf(0, "READY=1\nSTATUS=%s%s", !strcmp(result, "rejected")
		   ? "reload rejected (configuration file invalid), running the previous one"
		   : "ready, configuration reloaded", "");
}

int pal_node_run(const pal_node_opts *o)
{
	node n;
	memset(&n, 0, sizeof n);
	pthread_mutex_init(&n.schema_mu, NULL);
	pal_store_binary_schema(&n.schema);
	n.after_roll_n = -1;
	int ec = apply_opts(&n, o);
	if (ec)
		return ec;
	const char *lim = getenv("PALISADE_STALL_LIMIT_MS");
	if (lim && atoi(lim) > 0)
		STALL_MS = atoi(lim);
	pal_log_init(n.conf.node_id, n.conf.log_level);
	pal_store_set_session_timeouts(n.conf.pg_idle_in_transaction_timeout_ms, 0);
	pal_store_set_transaction_pooling(n.conf.pg_pool_mode == PAL_POOL_TRANSACTION);
	if (o->log_format)
		pal_log_set_format(pal_log_format_parse(o->log_format) == PAL_LOG_TEXT ? PAL_LOG_TEXT
											: PAL_LOG_JSON);
	pal_log_journal_detect();
	/* The client libraries' own messages: a burst each 10 s at most (an
	 * unreachable ZooKeeper makes its client log ~24 lines a second). */
	pal_log_limit("zk.client", 5, 10000);
	pal_log_limit("pg.notice", 20, 10000);

	struct sigaction sa = { 0 };
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = on_hup;
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	pal_log(PAL_LOG_INFO, "node.starting", "{s:s, s:s, s:b, s:b}", "version", PALISADE_VERSION,
		"cluster", n.conf.cluster, "controller", (n.conf.roles & PAL_ROLE_CONTROLLER) != 0,
		"executor", (n.conf.roles & PAL_ROLE_EXECUTOR) != 0);

	n.m = pal_metrics_new();
	char err[1024];
	pal_metric_declare(n.m, "palisade_node_info", PAL_METRIC_GAUGE, "node identity (value 1)");
	pal_metric_declare(n.m, "palisade_node_draining", PAL_METRIC_GAUGE,
			   "1 while the node drains");
	pal_metric_declare(n.m, "palisade_node_schema_refused", PAL_METRIC_GAUGE,
			   "1 while the database schema is outside this binary's range (not leading)");
	pal_metric_declare(n.m, "palisade_node_schema", PAL_METRIC_GAUGE,
			   "schema versions: of the binary, of the database, the database's "
			   "compatible_from");
	pal_metric_set(n.m, "palisade_node_schema_refused", NULL, 0);
	char lab[256];
	snprintf(lab, sizeof lab, "node=\"%s\",version=\"%s\"", n.conf.node_id, PALISADE_VERSION);
	pal_metric_set(n.m, "palisade_node_info", lab, 1);

	/* Admin first, so that health and metrics answer (not ready) while the
	 * database and ZooKeeper are reached. */
	/* The console's reads run read-only, a session setting: direct. */
	/* Peers' /status over the scheme of this node's own listener: a TLS
	 * node verifies its peers against $PALISADE_CACERT, else against its
	 * own certificate file (curl accepts any certificate of that chain). */
	const char *peer_cacert = NULL;
	if (n.conf.admin_tls_cert[0]) {
		const char *ca = getenv("PALISADE_CACERT");
		peer_cacert = ca && *ca ? ca : n.conf.admin_tls_cert;
	}
	pal_console_config kcfg = { .conninfo = n.pg_direct,
				    .zk_connect = n.zk,
				    .zk_root = n.conf.zk_root,
				    .cluster = n.conf.cluster,
				    .node_id = n.conf.node_id,
				    .peer_cacert = peer_cacert,
				    .metrics = n.m };
	if (pal_console_open(&kcfg, &n.console, err, sizeof err))
		pal_log(PAL_LOG_WARN, "node.console_failed", "{s:s}", "error", err);
	/* The API names its caller in session settings the audit rows read:
	 * direct. */
	pal_api_config pcfg = { .conninfo = n.pg_direct,
				.admin_token = n.token,
				.key_retention_ms = n.conf.sink_key_retention_ms,
				.default_shards = n.conf.shards,
				.misfire_threshold_ms = n.conf.misfire_threshold_ms,
				.resume_ramp_ms = { [PAL_SCOPE_GLOBAL] = n.conf.resume_ramp_all_ms,
						    [PAL_SCOPE_JOB] = n.conf.resume_ramp_job_ms,
						    [PAL_SCOPE_GROUP] = n.conf.resume_ramp_group_ms,
						    [PAL_SCOPE_TENANT] = n.conf.resume_ramp_tenant_ms },
				.node_id = n.conf.node_id,
				.drain = api_drain_cb,
				.drain_arg = &n,
				.cluster = n.conf.cluster,
				.zk_connect = n.zk,
				.zk_root = n.conf.zk_root,
				.secrets = &n.secrets,
				.targets = &n.targets };
	if (pal_api_open(&pcfg, &n.api, err, sizeof err))
		pal_log(PAL_LOG_WARN, "node.api_failed", "{s:s}", "error", err);
	pal_admin_config acfg = { .listen = n.conf.admin_listen,
				  .console = n.console,
				  .api = n.api,
				  .metrics = n.m,
				  .status = status_cb,
				  .action = action_cb,
				  .healthy = healthy_cb,
				  .ready = ready_cb,
				  .arg = &n,
				  .token = n.token,
				  .protect_reads = n.conf.admin_reads == 1,
				  .host = n.conf.admin_host,
				  .tls_cert = n.conf.admin_tls_cert,
				  .tls_key = n.conf.admin_tls_key,
				  .max_conns = (unsigned)n.conf.admin_max_conns,
				  .max_per_addr = (unsigned)n.conf.admin_max_per_addr,
				  .head_timeout_ms = (unsigned)n.conf.admin_head_timeout_ms,
				  .body_timeout_ms = (unsigned)n.conf.admin_body_timeout_ms };
	if (pal_admin_start(&acfg, &n.admin, err, sizeof err)) {
		pal_log(PAL_LOG_ERROR, "node.admin_failed", "{s:s, s:s}", "listen",
			n.conf.admin_listen, "error", err);
		ec = PAL_EXIT_UNAVAIL;
		goto out;
	}
	if (!n.token)
		pal_log(PAL_LOG_WARN, "node.admin_read_only", "{s:s}", "hint",
			"no admin token (admin.token_file, admin.token_env): POST /drain is refused; "
			"SIGTERM still drains");
	/* A fault of the build, not of the database: said once, and no
	 * restart would mend it (65, RestartPreventExitStatus). */
	if (pal_migrations_check(pal_migrations, pal_n_migrations, err, sizeof err)) {
		pal_log(PAL_LOG_ERROR, "node.migrations_invalid", "{s:s}", "error", err);
		ec = PAL_EXIT_DATAERR;
		goto out;
	}
	sd_notify(0, "STATUS=waiting for PostgreSQL");
	if ((ec = prepare_database(&n)) || term_signals)
		goto out;
	atomic_store(&n.db_prepared, true);
	sd_notify(0, "STATUS=connecting to ZooKeeper");
	/* Publish the address actually bound (admin.listen may say port 0). */
	char admin_addr[300];
	const char *colon = strrchr(n.conf.admin_listen, ':');
	snprintf(admin_addr, sizeof admin_addr, "%.*s:%d",
		 colon ? (int)(colon - n.conf.admin_listen) : (int)strlen(n.conf.admin_listen),
		 n.conf.admin_listen, pal_admin_port(n.admin));
	/* schema_min and schema_compatible_from: the range (docs/election.md);
	 * a node of v0.1.0 writes neither and reads as "range unknown". */
	json_t *info = json_pack("{s:s, s:[], s:s, s:i, s:i, s:i, s:i, s:b, s:b}", "version",
				 PALISADE_VERSION, "roles", "admin", admin_addr, "pid", (int)getpid(),
				 "schema", n.schema.binary, "schema_min", n.schema.min,
				 "schema_compatible_from", n.schema.compatible_from, "ready", false,
				 "draining", false);
	if (n.conf.roles & PAL_ROLE_CONTROLLER)
		json_array_append_new(json_object_get(info, "roles"), json_string("controller"));
	if (n.conf.roles & PAL_ROLE_EXECUTOR) {
		json_array_append_new(json_object_get(info, "roles"), json_string("executor"));
		json_object_set_new(info, "config", shared_config(&n.conf, NULL));
	}
	char *info_s = json_dumps(info, JSON_COMPACT);
	n.reg_info = info;
	char *zk_auth = NULL;
	if (pal_coord_auth_load(n.conf.zk_auth_file, n.conf.zk_auth_env, &zk_auth, err,
				sizeof err) != 0) {
		fprintf(stderr, "palisade node: %s\n", err);
		ec = PAL_EXIT_USAGE;
		free(info_s);
		goto out;
	}
	pal_coord_config cc = { .auth = zk_auth,
				.connect = n.zk,
				.session_timeout_ms = (int)n.conf.zk_session_timeout_ms,
				.root = n.conf.zk_root,
				.cluster = n.conf.cluster,
				.node_id = n.conf.node_id,
				.node_info = info_s,
				.n_shards = n.n_shards,
				.controller = (n.conf.roles & PAL_ROLE_CONTROLLER) != 0,
				.balance = true };
	/* Our id held by another session: a node restarted right after it
	 * died (kill -9, a crash and systemd's RestartSec) finds its old
	 * session alive until the server expires it, within the session
	 * timeout.  Wait that out; an id still held after twice the timeout
	 * (+2 s) belongs to a live node, which a second one must not
	 * impersonate: exit 64 (systemd does not restart it). */
	int backoff = 500;
	int64_t busy_until = 0;
	while (!term_signals) {
		pal_health_beat("main", STALL_MS + 35000); /* an open waits up to 30 s */
		int rc = pal_coord_open(&cc, n.m, &n.coord, err, sizeof err);
		if (!rc)
			break;
		if (rc == PAL_EBUSY) {
			int64_t now = pal_mono_ms();
			if (busy_until == 0) {
				busy_until = now + 2 * (int64_t)n.conf.zk_session_timeout_ms + 2000;
				pal_log(PAL_LOG_WARN, "node.id_busy", "{s:s, s:I}", "error", err,
					"wait_ms", (json_int_t)(busy_until - now));
			}
			if (now >= busy_until) {
				pal_log(PAL_LOG_ERROR, "node.id_in_use", "{s:s}", "error", err);
				fprintf(stderr, "palisade node: %s\n", err);
				ec = PAL_EXIT_USAGE;
				free(info_s);
				free(zk_auth);
				goto out;
			}
			sleep_ms(BUSY_RETRY_MS);
			continue;
		}
		pal_log(PAL_LOG_WARN, "node.zookeeper_unavailable", "{s:s, s:i}", "error", err,
			"retry_ms", backoff);
		sleep_ms(backoff);
		backoff = backoff * 2 > 10000 ? 10000 : backoff * 2;
	}
	free(zk_auth); /* pal_coord_open copied it */
	zk_auth = NULL;
	free(info_s);
	if (term_signals)
		goto out;
	if (n.conf.roles & PAL_ROLE_CONTROLLER) {
		/* LISTEN and the session's lock and statement timeouts: direct. */
		pal_controller_config ccfg = {
			.conninfo = n.pg_direct,
			.node_id = n.conf.node_id,
			.n_shards = n.n_shards,
			.scan_interval_ms = (int)n.conf.scan_interval_ms,
			.overlap_s = n.conf.overlap_ms / 1000,
			.lookahead_s = n.conf.lookahead_ms / 1000,
			.misfire_threshold_s = n.conf.misfire_threshold_ms / 1000,
			.statement_timeout_ms = n.conf.pg_statement_timeout_ms,
			.key_retention_ms = n.conf.sink_key_retention_ms,
		};
		if (pal_controller_start(&ccfg, n.coord, n.m, &n.ctl, err, sizeof err)) {
			pal_log(PAL_LOG_ERROR, "node.controller_failed", "{s:s}", "error", err);
			ec = PAL_EXIT_SOFTWARE;
			goto out;
		}
	}
	if (n.conf.roles & PAL_ROLE_EXECUTOR) {
		pal_executor_config ecfg = {
			.conninfo = n.pg,
			.direct_conninfo = n.pg_direct,
			.node_id = n.conf.node_id,
			.lease_ms = n.conf.lease_ms,
			.heartbeat_ms = n.conf.heartbeat_ms,
			.batch = n.conf.batch,
			.max_inflight = n.conf.max_inflight,
			.host_connections = n.conf.host_connections,
			.spec_cache = n.conf.spec_cache,
			.renew_failures = n.conf.renew_failures_to_close_gate,
			.groups = n.conf.groups,
			.n_groups = n.conf.n_groups,
			.tenants = n.conf.tenants,
			.n_tenants = n.conf.n_tenants,
			.claim_ahead_ms = n.conf.claim_ahead_ms,
			.claim_connections = n.conf.claim_connections,
			.proxy = n.conf.proxy,
			.cluster = n.conf.cluster,
			.trace_sampled = n.conf.trace_sampled != 0,
			.keep_body_max = n.conf.keep_body_max,
			.secrets = &n.secrets,
			.targets = &n.targets,
		};
		if (pal_executor_start(&ecfg, n.m, &n.exe, err, sizeof err)) {
			pal_log(PAL_LOG_ERROR, "node.executor_failed", "{s:s}", "error", err);
			ec = PAL_EXIT_SOFTWARE;
			goto out;
		}
		/* Notifications are delivered beside the executor's loop, never
		 * on it: a thread and a connection of their own. */
		pal_notifier_config ncfg = {.conninfo = n.pg,
					    .node_id = n.conf.node_id,
					    .proxy = n.conf.proxy,
					    .interval_ms = n.conf.notify_interval_ms,
					    .backoff_max_ms = n.conf.notify_backoff_max_ms,
					    .retention_ms = n.conf.notify_retention_ms,
					    .keep_delivered_ms = n.conf.notify_keep_delivered_ms,
					    .console_url = n.conf.admin_public_url,
					    .secrets = &n.secrets,
					    .targets = &n.targets};
		if (pal_notifier_start(&ncfg, n.m, &n.notifier, err, sizeof err))
			pal_log(PAL_LOG_WARN, "node.notifier_failed", "{s:s}", "error", err);
	}
	{
		/* Every node exports the same cluster gauges, read from
		 * PostgreSQL on a connection of their own. */
		pal_clusterstats_config scfg = { .conninfo = n.pg,
						 .interval_ms = n.conf.cluster_stats_interval_ms,
						 .job_series = n.conf.job_series };
		if (pal_clusterstats_start(&scfg, n.m, &n.stats, err, sizeof err))
			pal_log(PAL_LOG_WARN, "node.cluster_stats_failed", "{s:s}", "error", err);
	}
	{
		/* Partition maintenance of triggers and attempts: every node runs
		 * rounds, an advisory lock lets one work at a time. */
		pal_retention_conf rcf = { .keep_ms = n.conf.retention_keep_ms,
					   .interval_ms = n.conf.retention_interval_ms,
					   .ahead_ms = n.conf.retention_ahead_ms,
					   .lock_ms = PAL_RETENTION_LOCK_MS,
					   .misfires_ms = n.conf.retention_misfires_ms,
					   .audit_ms = n.conf.retention_audit_ms,
					   .request_ids_ms = n.conf.retention_request_ids_ms,
					   .slice = n.conf.retention_slice,
					   .direct_conninfo = n.pg_direct };
		if (pal_retention_start(n.pg, &rcf, n.conf.retention_check_ms, n.m, &n.retention, err,
					sizeof err))
			pal_log(PAL_LOG_WARN, "node.retention_failed", "{s:s}", "error", err);
	}
	if (pal_periodic_start(schema_watch, &n, SCHEMA_WATCH_MS, &n.schema_watch))
		pal_log(PAL_LOG_WARN, "node.schema_watch_failed", "{s:s}", "error",
			"no thread: the schema range is checked at start-up only");
	atomic_store(&n.ready, true);
	sd_notify(0, "READY=1\nSTATUS=ready");
	pal_log(PAL_LOG_INFO, "node.ready", "{s:s}", "admin", admin_addr);

	/* The watchdog is pinged at half its interval, and only while every
	 * thread that registered a heartbeat beats. */
	uint64_t wd_usec = 0;
	int64_t wd_every = sd_watchdog_enabled(0, &wd_usec) > 0 ? (int64_t)(wd_usec / 2000) : 0;
	int64_t next_wd = 0;
	bool was_healthy = true;
	int64_t next_publish = 0;
	const char *stall = getenv("PALISADE_FAULT_STALL_MAIN_MS"); /* drills only */
	while (!term_signals && !atomic_load(&n.drain_requested)) {
		pal_health_beat("main", STALL_MS);
		if (stall && hup_signal) {
			hup_signal = 0;
			/* drill: SIGHUP makes the main loop hang this long */
			pal_log(PAL_LOG_WARN, "node.fault_stall", "{s:s}", "ms", stall);
			sleep_ms(atoi(stall));
			continue;
		}
		if (hup_signal)
			reload(&n, o);
		char why[512];
		bool healthy = pal_health_check(why, sizeof why);
		if (healthy != was_healthy) {
			pal_log(healthy ? PAL_LOG_INFO : PAL_LOG_ERROR,
				healthy ? "node.healthy" : "node.unhealthy", "{s:s}", "reason",
				healthy ? "every thread beats" : why);
			was_healthy = healthy;
		}
		int64_t now = pal_mono_ms();
		if (now >= next_publish) {
			publish_readiness(&n);
			next_publish = now + PUBLISH_MS;
		}
		if (wd_every && healthy && now >= next_wd) {
			sd_notify(0, "WATCHDOG=1");
			next_wd = now + wd_every;
		}
		sleep_ms(100);
	}

	/* Drain: stop planning, hand shards off, then leave. */
	int64_t t0 = pal_mono_ms();
	atomic_store(&n.draining, true);
	atomic_store(&n.ready, false);
	pal_metric_set(n.m, "palisade_node_draining", NULL, 1);
	sd_notify(0, "STOPPING=1\nSTATUS=draining");
	bool resign = atomic_load(&n.schema_resign);
	publish_readiness(&n);
	pal_log(resign ? PAL_LOG_ERROR : PAL_LOG_INFO, "node.draining", "{s:s}", "cause",
		term_signals ? "signal"
		: resign     ? "database schema outside this binary's range (node.schema_refused)"
			     : "drain request");
	/* Resign as soon as planning has stopped and the handoff rows are
	 * written; the planners are freed meanwhile, not before. */
	pal_controller_quiesce(n.ctl);
	int hrc = pal_coord_handoff(n.coord, 5000);
	pal_log(PAL_LOG_INFO, "node.handoff_done", "{s:b, s:f}", "complete", hrc == 0, "seconds",
		(double)(pal_mono_ms() - t0) / 1e3);
	pal_controller_stop(n.ctl);
	n.ctl = NULL;
	/* In-flight calls finish or reach a safe point within the grace period;
	 * the rest are left to lease expiry (another executor queries first). */
	pal_executor_stop(n.exe, 10000);
	n.exe = NULL;
	ec = resign && !term_signals ? PAL_EXIT_SOFTWARE : PAL_EXIT_OK;
out:
	pal_periodic_stop(n.schema_watch);
	pal_store_close(n.schema_st);
	pal_clusterstats_stop(n.stats);
	pal_retention_stop(n.retention);
	pal_notifier_stop(n.notifier);
	pal_executor_stop(n.exe, 0);
	pal_controller_stop(n.ctl);
	if (n.coord)
		pal_coord_close(n.coord);
	pal_admin_stop(n.admin);
	pal_console_close(n.console);
	pal_api_close(n.api);
	pal_metrics_free(n.m);
	pal_log(PAL_LOG_INFO, "node.stopped", "{s:i}", "exit", ec);
	pal_nodeconf_free(&n.conf);
	json_decref(n.reg_info);
	free(n.token);
	pthread_mutex_destroy(&n.schema_mu);
	return ec;
}
