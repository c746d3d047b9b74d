/*
 * node.h - `palisade node`: the daemon that hosts the roles of one cluster
 * member (docs/architecture.md, docs/operations.md).
 *
 * Start-up is ordered and idempotent (G8): config, logger, PostgreSQL
 * migrations under the advisory lock (retrying while the database is
 * unreachable), the cluster's shard count, ZooKeeper registration and
 * elections, the roles, then the admin endpoint and sd_notify(READY=1).
 *
 * Signals only set flags (STYLE.md): SIGTERM/SIGINT or POST /drain start a
 * drain (stop planning -> delete election znodes so successors take over at
 * once -> close the session -> exit 0); a second SIGTERM exits at once;
 * SIGHUP reloads the config's reloadable keys and every led shard's jobs.
 */
#ifndef PALISADE_NODE_H
#define PALISADE_NODE_H

#include "palisade/nodeconf.h"

typedef struct pal_node_opts {
	const char *config_path; /* NULL: defaults only */
	const char *node_id;     /* --node-id overrides node.id */
	const char *admin;       /* --admin overrides admin.listen */
	const char *roles;       /* --roles "controller,executor" */
	const char *pg, *zk;     /* --pg / --zk (flag > file > env) */
	const char *log_format;  /* --log-format json|text (NULL: json) */
} pal_node_opts;

/* Run the node until drained; returns the process exit code. */
int pal_node_run(const pal_node_opts *opts);

#endif
