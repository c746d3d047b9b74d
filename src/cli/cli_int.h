/* cli_int.h - what the subcommands of bin/palisade share. */
#ifndef PALISADE_CLI_INT_H
#define PALISADE_CLI_INT_H

#include <stdbool.h>
#include <stdio.h>
#include "palisade/store.h"

/* Options every cluster-touching command accepts. */
typedef struct pal_cli_common {
	const char *pg;     /* --pg CONNINFO */
	const char *zk;     /* --zk HOSTS */
	const char *config; /* --config FILE (node config: postgres.conninfo, zookeeper.connect) */
	bool json;          /* --output json */
} pal_cli_common;

/* getopt_long entries for the common options; ids 0x100.. */
#define PAL_CLI_COMMON_LONGOPTS                                                                    \
	{ "pg", required_argument, NULL, 0x100 }, { "zk", required_argument, NULL, 0x101 },      \
		{ "config", required_argument, NULL, 0x102 },                                     \
		{ "output", required_argument, NULL, 0x103 }

/* Handle a common option returned by getopt_long; true when it was one.
 * Exits with 64 on a bad --output value. */
bool pal_cli_common_opt(pal_cli_common *c, int opt, const char *arg);

/* An option the command does not handle itself: a common one (returns -1,
 * go on), -h/--help (usage on stdout, returns 0) or anything else (usage on
 * stderr, returns 64).  A command's option loop ends with
 *   default: if ((ec = pal_cli_opt_other(&c, opt, optarg, usage)) >= 0) return ec; */
int pal_cli_opt_other(pal_cli_common *c, int opt, const char *arg, void (*usage)(FILE *));

/* The whole command line of a command that takes only the common options
 * and no arguments: -1 when it parsed, else the exit code to return. */
int pal_cli_parse_common(int argc, char **argv, pal_cli_common *c, void (*usage)(FILE *));

/* --NAME ARG as an integer in LO..HI; false (message printed) otherwise. */
bool pal_cli_int(const char *cmd, const char *name, const char *arg, long long lo, long long hi,
		 long long *out);

/* Resolve the PostgreSQL conninfo: --pg, else the config file's
 * postgres.conninfo, else $PALISADE_PG.  NULL when none (message printed).
 * The returned string is owned by the process (lives until exit). */
const char *pal_cli_pg(const pal_cli_common *c);

/* postgres.conninfo / zookeeper.connect of node config PATH, or NULL when
 * unset; exits 65 with the diagnostics when the file is invalid. */
const char *pal__cli_config_pg(const char *path);
const char *pal__cli_config_zk(const char *path);
/* Default shard count for a new cluster: the config's shards, else 16. */
int pal__cli_config_shards(const pal_cli_common *c);
/* zookeeper.root and cluster.name of --config, else the defaults. */
const char *pal__cli_config_zk_root(const pal_cli_common *c);
const char *pal__cli_config_cluster(const pal_cli_common *c);

/* Add "nodes": [{id, info}] from ZooKeeper to STATUS (or "nodes_error"). */
void pal__cli_add_nodes(const pal_cli_common *c, json_t *status);

/* Connect, and unless MIGRATING, check the schema version.  Prints the
 * error and returns the exit code (0 on success). */
int pal_cli_connect(const pal_cli_common *c, bool migrating, pal_store **out);

/* Actor for audit rows: $PALISADE_ACTOR, else user@host. Static buffer. */
const char *pal_cli_actor(void);

/* Print "palisade CMD: " + message to stderr. */
void pal_cli_err(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
