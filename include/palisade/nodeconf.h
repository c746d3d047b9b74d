/*
 * nodeconf.h - the node configuration (config/palisade.yaml).
 *
 * The configuration is a table (pal_nodeconf_table()): every key with its
 * type, default, unit, bounds and whether a running node may pick up a new
 * value on reload or needs a restart.  docs/config.md and the sample
 * config/palisade.yaml are copies of this table; tests/unit/test_nodeconf.c
 * checks that the sample lists exactly the table's keys with their defaults.
 *
 * Loading parses into a fresh struct, validates every key (file:line:col
 * diagnostics, did-you-mean for unknown keys) and the relations between
 * keys, and only then returns it; a caller reloading keeps its old struct
 * when the load fails, and uses pal_nodeconf_restart_changes() to report
 * keys whose new value needs a restart.
 *
 * Connection settings may be left empty in the file; pal_nodeconf_pg() and
 * pal_nodeconf_zk() resolve them: command-line flag > config file >
 * environment ($PALISADE_PG, $PALISADE_ZK).
 *
 * Ownership: a pal_nodeconf owns all its strings and its groups; free it
 * with pal_nodeconf_free().  The table is static and immutable.
 */
#ifndef PALISADE_NODECONF_H
#define PALISADE_NODECONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "palisade/err.h"
#include "palisade/diags.h"
#include "palisade/limits.h"  /* pal_group_conf, pal_tenant_conf */
#include "palisade/log.h"     /* pal_log_level */
#include "palisade/secrets.h" /* pal_secret_grant, pal_secret_policy */
#include "palisade/targethosts.h" /* pal_target_policy */

enum { PAL_ROLE_CONTROLLER = 1u << 0, PAL_ROLE_EXECUTOR = 1u << 1 };

/* postgres.pool_mode: what postgres.conninfo reaches (docs/operations.md,
 * "Behind PgBouncer"). */
typedef enum { PAL_POOL_SESSION = 0, PAL_POOL_TRANSACTION = 1 } pal_pool_mode;

typedef struct pal_nodeconf {
	/* node */
	char *node_id;	/* the host name when the file leaves it empty */
	unsigned roles; /* PAL_ROLE_* bits, never 0 */
	/* cluster */
	char *cluster; /* cluster.name */
	int32_t shards;
	/* zookeeper */
	char *zk_connect; /* "" = unset (see pal_nodeconf_zk) */
	int64_t zk_session_timeout_ms;
	char *zk_root; /* the cluster lives at <root>/<cluster> */
	char *zk_auth_file; /* "" = read zk_auth_env instead */
	char *zk_auth_env;  /* variable holding user:password; "" = none */
	/* postgres */
	char *pg_conninfo; /* "" = unset (see pal_nodeconf_pg) */
	int pg_pool_mode;  /* pal_pool_mode: what pg_conninfo reaches */
	char *pg_direct_conninfo; /* "" = pg_conninfo (see pal_nodeconf_pg_direct) */
	int64_t pg_idle_in_transaction_timeout_ms; /* every session of the node */
	int64_t pg_statement_timeout_ms;
	/* controller */
	int64_t scan_interval_ms;
	int64_t overlap_ms;
	int64_t lookahead_ms;
	int64_t misfire_threshold_ms;
	/* resume (read by `palisade resume`): default ramp per scope kind */
	int64_t resume_ramp_job_ms, resume_ramp_group_ms, resume_ramp_tenant_ms, resume_ramp_all_ms;
	/* executor */
	int64_t lease_ms;
	int64_t heartbeat_ms;
	int32_t batch;
	int32_t max_inflight;
	int32_t host_connections; /* per target host:port, 0 = max_inflight */
	int32_t spec_cache;       /* compiled job versions kept, 0 = no bound */
	int32_t renew_failures_to_close_gate;
	pal_group_conf *groups; /* sorted by name */
	size_t n_groups;
	pal_tenant_conf *tenants; /* sorted by name */
	size_t n_tenants;
	pal_secret_grant *secrets; /* executor.secrets, sorted by tenant; none: no binding */
	size_t n_secrets;
	pal_tenant_grant *target_hosts; /* executor.target_hosts, sorted by tenant; none: any */
	size_t n_target_hosts;
	int64_t claim_ahead_ms;
	int32_t claim_connections; /* claims in flight at once, 1 or 2 */
	char *proxy;		   /* "" direct, "env", or a proxy URL */
	int trace_sampled;	   /* 1: traceparent's sampled flag set */
	int32_t keep_body_max;	   /* bytes of a response body an attempt keeps, at most */
	/* admin, log */
	char *admin_listen;	 /* host:port */
	char *admin_token_file;	 /* "" = read admin_token_env instead */
	char *admin_token_env;	 /* variable name; "" = no token */
	int admin_reads;	 /* 0 open, 1 token (PAL_ADMIN_READS_*) */
	char *admin_host;	 /* "" = the listen address */
	char *admin_tls_cert;	 /* PEM file; "" with admin_tls_key "": plain HTTP */
	char *admin_tls_key;	 /* PEM file of its private key */
	char *admin_public_url;	 /* "" = links are paths */
	int32_t admin_max_conns; /* listener limits (httpguard.h) */
	int32_t admin_max_per_addr;
	int64_t admin_head_timeout_ms;
	int64_t admin_body_timeout_ms;
	/* metrics */
	int64_t cluster_stats_interval_ms;
	int32_t job_series;
	/* retention (include/palisade/retention.h) */
	int64_t retention_keep_ms;
	int64_t retention_interval_ms;
	int64_t retention_ahead_ms;
	int64_t retention_check_ms;
	int64_t retention_misfires_ms; /* misfires: whole range older than this */
	int64_t retention_audit_ms;    /* audit_log */
	int64_t retention_request_ids_ms; /* request_ids: used longer ago than this */
	int32_t retention_slice;       /* rows per delete transaction */
	/* notify: the outbox's delivery by executor nodes */
	int64_t notify_interval_ms;
	int64_t notify_backoff_max_ms;
	int64_t notify_retention_ms;	  /* undelivered rows */
	int64_t notify_keep_delivered_ms; /* delivered rows */
	/* sink (what the side-effect services promise; src/config/keyhorizon.c) */
	int64_t sink_key_retention_ms;
	pal_log_level log_level;

	char *file; /* where it was loaded from; NULL for pure defaults */
} pal_nodeconf;

typedef enum {
	PAL_CONF_STRING,
	PAL_CONF_INT,
	PAL_CONF_DURATION, /* stored in ms */
	PAL_CONF_ENUM,
	PAL_CONF_ROLES,	 /* list of controller, executor */
	PAL_CONF_GROUPS, /* mapping name -> {concurrency, cluster_concurrency} */
	PAL_CONF_TENANTS, /* mapping name -> {cap, weight} */
	PAL_CONF_SECRETS, /* mapping tenant -> [NAME or PREFIX*, ...] */
	PAL_CONF_TARGET_HOSTS, /* mapping tenant -> [host pattern, ...] */
} pal_conf_type;

typedef struct pal_conf_key {
	const char *name; /* dotted path, "zookeeper.session_timeout" */
	pal_conf_type type;
	const char *def;  /* the default, written as in the YAML file */
	const char *unit; /* "ms" for durations (as stored), "" otherwise */
	int64_t min, max; /* INT: value; DURATION: ms; STRING: length */
	bool reloadable;  /* false: restart-only */
	const char *help; /* one line for docs and the sample */
	/* how nodeconf.c stores and checks it */
	size_t offset;
	const char *const *names; /* ENUM: allowed values */
	size_t n_names;
} pal_conf_key;

/* The table, in file order.  *n receives its length. */
const pal_conf_key *pal_nodeconf_table(size_t *n);

/* Fill C with every default (node.id: the host name).  Returns 0 or
 * PAL_ENOMEM.  Free with pal_nodeconf_free(). */
PAL_MUST_CHECK int pal_nodeconf_defaults(pal_nodeconf *c);

/*
 * Load config file PATH into OUT: defaults, then the file's keys, then the
 * checks that span keys.  Returns 0 with OUT filled, or PAL_EINVAL / PAL_EIO
 * / PAL_ETOOBIG / PAL_ENOMEM with every problem appended to DIAGS and OUT
 * zeroed (nothing to free).  OUT's previous contents are ignored, so a
 * caller reloading passes a fresh struct and swaps it in on success.
 */
PAL_MUST_CHECK int pal_nodeconf_load(const char *path, pal_nodeconf *out, pal_diags *diags);

/* The same from memory (tests, fuzzing); NAME is used in diagnostics. */
PAL_MUST_CHECK int pal_nodeconf_load_buffer(const char *name, const void *buf, size_t len,
					    pal_nodeconf *out, pal_diags *diags);

void pal_nodeconf_free(pal_nodeconf *c);

/*
 * PostgreSQL conninfo / ZooKeeper connect string to use: FLAG when non-empty,
 * else the config's value when non-empty, else $PALISADE_PG / $PALISADE_ZK
 * when non-empty, else NULL.  C may be NULL (no config file).  The result
 * points into FLAG, C or the environment: do not free it.
 */
const char *pal_nodeconf_pg(const pal_nodeconf *c, const char *flag);
const char *pal_nodeconf_zk(const pal_nodeconf *c, const char *flag);
/* The conninfo of the connections that need a session of their own
 * (LISTEN, session settings, the migration lock): postgres.direct_conninfo
 * when postgres.pool_mode is transaction and it is set, else POOLED (the
 * resolved pal_nodeconf_pg()).  Points into C or POOLED: do not free it. */
const char *pal_nodeconf_pg_direct(const pal_nodeconf *c, const char *pooled);

/* Value of key K in C formatted as it would be written in the YAML file
 * ("6s", "[controller, executor]").  Returns a new string (free()) or NULL
 * on ENOMEM. */
char *pal_nodeconf_format(const pal_nodeconf *c, const pal_conf_key *k);

/* Two configs agree on key K. */
bool pal_nodeconf_key_equal(const pal_nodeconf *a, const pal_nodeconf *b, const pal_conf_key *k);

/*
 * For a reload: append to DIAGS one entry per restart-only key whose value
 * differs between OLD and NEW ("cluster.shards changed from 16 to 32; it
 * takes effect only after a restart"), naming NEW's file.  Returns the
 * number of such keys.
 */
int pal_nodeconf_restart_changes(const pal_nodeconf *old, const pal_nodeconf *new_,
				 pal_diags *diags);

/* The admin bearer token: admin.token_file's first line, else the variable
 * named by admin.token_env; *OUT is NULL when neither gives one (malloc()ed
 * otherwise).  PAL_EINVAL with ERR filled when the file is set but cannot
 * be read or is empty. */
int pal_nodeconf_admin_token(const pal_nodeconf *c, char **out, char *err, size_t errlen);

/* The secret policy of C (secrets.h): admin.token_env, zookeeper.auth_env
 * and executor.secrets, borrowed from C (valid while C is). */
pal_secret_policy pal_nodeconf_secret_policy(const pal_nodeconf *c);
/* The target host policy of C (targethosts.h): executor.target_hosts,
 * borrowed from C (valid while C is). */
pal_target_policy pal_nodeconf_target_policy(const pal_nodeconf *c);

#endif
