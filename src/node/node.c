/*
 * node.c - the daemon: ordered start-up, one main loop that reacts to flags
 * set by signal handlers and the admin endpoint, ordered drain.
 *
 * Threads: main (this loop), the controller thread, the coordination thread
 * and ZooKeeper's own I/O threads, the admin HTTP thread.  The main thread
 * never blocks on the database or ZooKeeper after start-up.
 */
#include <errno.h>
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
#include "palisade/coord.h"
#include "palisade/executor.h"
#include "palisade/log.h"
#include "palisade/metrics.h"
#include "palisade/node.h"
#include "palisade/nodeconf.h"
#include "palisade/store.h"

#ifndef PALISADE_VERSION
#define PALISADE_VERSION "0.1.0"
#endif

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
	const char *pg, *zk;
	int n_shards;
	pal_metrics *m;
	pal_coord *coord;
	pal_controller *ctl;
	pal_executor *exe;
	pal_admin *admin;
	atomic_bool drain_requested, ready, draining;
	struct timespec started;
} node;

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };
	while (nanosleep(&ts, &ts) && errno == EINTR && !term_signals)
		;
}

static json_t *status_cb(void *arg)
{
	node *n = arg;
	json_t *roles = json_array();
	if (n->conf.roles & PAL_ROLE_CONTROLLER)
		json_array_append_new(roles, json_string("controller"));
	if (n->conf.roles & PAL_ROLE_EXECUTOR)
		json_array_append_new(roles, json_string("executor"));
	json_t *st = json_pack("{s:s, s:s, s:s, s:o, s:b, s:b, s:i}", "node", n->conf.node_id,
			       "cluster", n->conf.cluster, "version", PALISADE_VERSION, "roles",
			       roles, "ready", atomic_load(&n->ready), "draining",
			       atomic_load(&n->draining), "shard_count", n->n_shards);
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
		json_decref(cs);
	}
	return st;
}

static int action_cb(void *arg, const char *action)
{
	node *n = arg;
	if (!strcmp(action, "drain")) {
		atomic_store(&n->drain_requested, true);
		return 0;
	}
	return -1;
}

/* Migrations at start-up, retried while the database is unreachable. */
static int prepare_database(node *n)
{
	char err[1024];
	int backoff = 500;
	while (!term_signals) {
		pal_store *st;
		int rc = pal_store_open(n->pg, &st, err, sizeof err);
		if (!rc) {
			int applied = 0;
			rc = pal_store_migrate(st, &applied, err, sizeof err);
			if (!rc)
				rc = pal_store_shard_count(st, n->conf.shards, &n->n_shards, err, sizeof err);
			pal_store_close(st);
			if (!rc) {
				pal_log(PAL_LOG_INFO, "node.schema_ready", "{s:i, s:i}", "applied",
					applied, "shards", n->n_shards);
				if (n->n_shards != n->conf.shards)
					pal_log(PAL_LOG_WARN, "node.shard_count_fixed", "{s:i, s:i}",
						"configured", n->conf.shards, "cluster", n->n_shards);
				return 0;
			}
			if (rc == PAL_ESCHEMA) {
				pal_log(PAL_LOG_ERROR, "node.schema_too_new", "{s:s}", "error", err);
				return PAL_EXIT_SOFTWARE;
			}
		}
		pal_log(PAL_LOG_WARN, "node.db_unavailable", "{s:s, s:i}", "error", err, "retry_ms",
			backoff);
		sleep_ms(backoff);
		backoff = backoff * 2 > 10000 ? 10000 : backoff * 2;
	}
	return PAL_EXIT_OK;
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
	if (o->node_id) {
		free(n->conf.node_id);
		n->conf.node_id = strdup(o->node_id);
	}
	if (o->admin) {
		free(n->conf.admin_listen);
		n->conf.admin_listen = strdup(o->admin);
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
		n->conf.roles = r;
	}
	n->pg = pal_nodeconf_pg(&n->conf, o->pg);
	n->zk = pal_nodeconf_zk(&n->conf, o->zk);
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

static void reload(node *n, const pal_node_opts *o)
{
	hup_signal = 0;
	pal_log(PAL_LOG_INFO, "node.reload", NULL);
	if (o->config_path) {
		pal_nodeconf fresh;
		pal_diags d = { 0 };
		if (pal_nodeconf_load(o->config_path, &fresh, &d)) {
			for (size_t i = 0; i < d.n; i++)
				pal_log(PAL_LOG_ERROR, "node.reload_rejected", "{s:s, s:i, s:i, s:s}",
					"file", d.v[i].file, "line", d.v[i].line, "col", d.v[i].col,
					"error", d.v[i].msg);
			pal_diags_free(&d);
		} else {
			pal_diags_free(&d);
			int k = pal_nodeconf_restart_changes(&n->conf, &fresh, &d);
			for (size_t i = 0; i < d.n; i++)
				pal_log(PAL_LOG_WARN, "node.reload_needs_restart", "{s:s}", "key", d.v[i].msg);
			pal_diags_free(&d);
			/* The reloadable keys take effect now; restart-only ones keep
			 * their running values (logged above). */
			pal_log_set_level(fresh.log_level);
			if (n->ctl)
				pal_controller_set_timing(n->ctl, (int)fresh.scan_interval_ms,
							  fresh.overlap_ms / 1000, fresh.lookahead_ms / 1000,
							  fresh.misfire_threshold_ms / 1000);
			if (n->exe)
				pal_executor_set_limits(n->exe, fresh.batch, fresh.max_inflight,
							fresh.renew_failures_to_close_gate, fresh.groups,
							fresh.n_groups, fresh.tenants, fresh.n_tenants);
			pal_log(PAL_LOG_INFO, "node.config_reloaded", "{s:i}", "restart_only_changes", k);
			pal_nodeconf_free(&fresh);
		}
	}
	if (n->ctl)
		pal_controller_reload(n->ctl);
}

int pal_node_run(const pal_node_opts *o)
{
	node n;
	memset(&n, 0, sizeof n);
	int ec = apply_opts(&n, o);
	if (ec)
		return ec;
	pal_log_init(n.conf.node_id, n.conf.log_level);

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
	if ((ec = prepare_database(&n)) || term_signals)
		goto out;

	n.m = pal_metrics_new();
	char err[1024];
	pal_metric_declare(n.m, "palisade_node_info", PAL_METRIC_GAUGE, "node identity (value 1)");
	pal_metric_declare(n.m, "palisade_node_draining", PAL_METRIC_GAUGE,
			   "1 while the node drains");
	char lab[256];
	snprintf(lab, sizeof lab, "node=\"%s\",version=\"%s\"", n.conf.node_id, PALISADE_VERSION);
	pal_metric_set(n.m, "palisade_node_info", lab, 1);

	/* Admin first, so that health and metrics answer while ZooKeeper connects. */
	if (pal_admin_start(n.conf.admin_listen, n.m, status_cb, action_cb, &n, &n.admin, err,
			    sizeof err)) {
		pal_log(PAL_LOG_ERROR, "node.admin_failed", "{s:s, s:s}", "listen",
			n.conf.admin_listen, "error", err);
		ec = PAL_EXIT_UNAVAIL;
		goto out;
	}
	/* Publish the address actually bound (admin.listen may say port 0). */
	char admin_addr[300];
	const char *colon = strrchr(n.conf.admin_listen, ':');
	snprintf(admin_addr, sizeof admin_addr, "%.*s:%d",
		 colon ? (int)(colon - n.conf.admin_listen) : (int)strlen(n.conf.admin_listen),
		 n.conf.admin_listen, pal_admin_port(n.admin));
	json_t *info = json_pack("{s:s, s:[], s:s, s:i}", "version", PALISADE_VERSION, "roles",
				 "admin", admin_addr, "pid", (int)getpid());
	if (n.conf.roles & PAL_ROLE_CONTROLLER)
		json_array_append_new(json_object_get(info, "roles"), json_string("controller"));
	if (n.conf.roles & PAL_ROLE_EXECUTOR)
		json_array_append_new(json_object_get(info, "roles"), json_string("executor"));
	char *info_s = json_dumps(info, JSON_COMPACT);
	json_decref(info);
	pal_coord_config cc = { .connect = n.zk,
				.session_timeout_ms = (int)n.conf.zk_session_timeout_ms,
				.root = n.conf.zk_root,
				.cluster = n.conf.cluster,
				.node_id = n.conf.node_id,
				.node_info = info_s,
				.n_shards = n.n_shards,
				.controller = (n.conf.roles & PAL_ROLE_CONTROLLER) != 0,
				.balance = true };
	int backoff = 500;
	while (!term_signals) {
		int rc = pal_coord_open(&cc, n.m, &n.coord, err, sizeof err);
		if (!rc)
			break;
		pal_log(PAL_LOG_WARN, "node.zookeeper_unavailable", "{s:s, s:i}", "error", err,
			"retry_ms", backoff);
		if (rc == PAL_EBUSY) {
			ec = PAL_EXIT_USAGE;
			free(info_s);
			goto out;
		}
		sleep_ms(backoff);
		backoff = backoff * 2 > 10000 ? 10000 : backoff * 2;
	}
	free(info_s);
	if (term_signals)
		goto out;
	if (n.conf.roles & PAL_ROLE_CONTROLLER) {
		pal_controller_config ccfg = {
			.conninfo = n.pg,
			.node_id = n.conf.node_id,
			.n_shards = n.n_shards,
			.scan_interval_ms = (int)n.conf.scan_interval_ms,
			.overlap_s = n.conf.overlap_ms / 1000,
			.lookahead_s = n.conf.lookahead_ms / 1000,
			.misfire_threshold_s = n.conf.misfire_threshold_ms / 1000,
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
			.node_id = n.conf.node_id,
			.lease_ms = n.conf.lease_ms,
			.heartbeat_ms = n.conf.heartbeat_ms,
			.batch = n.conf.batch,
			.max_inflight = n.conf.max_inflight,
			.renew_failures = n.conf.renew_failures_to_close_gate,
			.groups = n.conf.groups,
			.n_groups = n.conf.n_groups,
			.tenants = n.conf.tenants,
			.n_tenants = n.conf.n_tenants,
			.claim_ahead_ms = n.conf.claim_ahead_ms,
			.proxy = n.conf.proxy,
		};
		if (pal_executor_start(&ecfg, n.m, &n.exe, err, sizeof err)) {
			pal_log(PAL_LOG_ERROR, "node.executor_failed", "{s:s}", "error", err);
			ec = PAL_EXIT_SOFTWARE;
			goto out;
		}
	}
	atomic_store(&n.ready, true);
	sd_notify(0, "READY=1");
	pal_log(PAL_LOG_INFO, "node.ready", "{s:s}", "admin", admin_addr);

	while (!term_signals && !atomic_load(&n.drain_requested)) {
		if (hup_signal)
			reload(&n, o);
		sleep_ms(100);
	}

	/* Drain: stop planning, hand shards off, then leave. */
	int64_t t0 = pal_mono_ms();
	atomic_store(&n.draining, true);
	atomic_store(&n.ready, false);
	pal_metric_set(n.m, "palisade_node_draining", NULL, 1);
	sd_notify(0, "STOPPING=1");
	pal_log(PAL_LOG_INFO, "node.draining", "{s:s}", "cause",
		term_signals ? "signal" : "drain request");
	pal_controller_stop(n.ctl);
	n.ctl = NULL;
	int hrc = pal_coord_handoff(n.coord, 5000);
	pal_log(PAL_LOG_INFO, "node.handoff_done", "{s:b, s:f}", "complete", hrc == 0, "seconds",
		(double)(pal_mono_ms() - t0) / 1e3);
	/* In-flight calls finish or reach a safe point within the grace period;
	 * the rest are left to lease expiry (another executor queries first). */
	pal_executor_stop(n.exe, 10000);
	n.exe = NULL;
	ec = PAL_EXIT_OK;
out:
	pal_executor_stop(n.exe, 0);
	pal_controller_stop(n.ctl);
	if (n.coord)
		pal_coord_close(n.coord);
	pal_admin_stop(n.admin);
	pal_metrics_free(n.m);
	pal_log(PAL_LOG_INFO, "node.stopped", "{s:i}", "exit", ec);
	pal_nodeconf_free(&n.conf);
	return ec;
}
