/*
 * nodeconf.c - node configuration: the key table, loading and validation.
 *
 * The table below is the single source of truth for the node config: the
 * loader, the defaults (each default is parsed from its YAML text through
 * the same code as the file, so a default can never be invalid), the
 * restart-only diff, docs/config.md and the sample config/palisade.yaml all
 * follow it.  Keys are two levels deep ("section.key"); the YAML file nests
 * them as mappings.
 *
 * Loading: defaults -> every key of the file (all problems reported, with
 * did-you-mean) -> checks between keys -> node.id defaults to the host
 * name.  Nothing here connects anywhere or keeps global state.
 */
#include <errno.h>
#include <stdio.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <glib.h>
#include "palisade/nodeconf.h"
#include "palisade/timefmt.h"
#include "palisade/yamltree.h"

_Static_assert(sizeof(pal_log_level) == sizeof(int), "enum stored as int");

#define MS_S 1000LL
#define MS_M (60 * MS_S)
#define MS_H (60 * MS_M)
#define MS_D (24 * MS_H)

#define OFF(f) offsetof(pal_nodeconf, f)
#define N(a) (sizeof(a) / sizeof((a)[0]))

static const char *const log_level_names[] = {"debug", "info", "warn", "error"};
static const char *const admin_reads_names[] = {"open", "token"};
static const char *const role_names[] = {"controller", "executor"};
static const char *const pool_mode_names[] = {"session", "transaction"};
static const char *const bool_names[] = {"false", "true"};

/* clang-format off */
static const pal_conf_key table[] = {
	{ "node.id", PAL_CONF_STRING, "\"\"", "", 0, 64, false,
	  "unique name of this node in the cluster; empty: the host name", OFF(node_id), NULL, 0 },
	{ "node.roles", PAL_CONF_ROLES, "[controller, executor]", "", 1, 2, false,
	  "what this node runs: controller (plans triggers), executor (runs them)", OFF(roles), NULL, 0 },
	{ "cluster.name", PAL_CONF_STRING, "default", "", 1, 64, false,
	  "cluster name; its ZooKeeper nodes live under zookeeper.root/<name>", OFF(cluster), NULL, 0 },
	{ "cluster.shards", PAL_CONF_INT, "16", "", 1, 1024, false,
	  "number of shards; fixed when the cluster is created (a database holds one value)",
	  OFF(shards), NULL, 0 },
	{ "zookeeper.connect", PAL_CONF_STRING, "\"\"", "", 0, 1024, false,
	  "ZooKeeper hosts, host:port[,host:port...]; empty: --zk, then $PALISADE_ZK",
	  OFF(zk_connect), NULL, 0 },
	{ "zookeeper.session_timeout", PAL_CONF_DURATION, "6s", "ms", 2 * MS_S, 60 * MS_S, false,
	  "ZooKeeper session timeout: how long a silent node keeps its shard leadership",
	  OFF(zk_session_timeout_ms), NULL, 0 },
	{ "zookeeper.root", PAL_CONF_STRING, "/palisade", "", 2, 256, false,
	  "ZooKeeper path under which every cluster lives", OFF(zk_root), NULL, 0 },
	{ "zookeeper.auth_file", PAL_CONF_STRING, "\"\"", "", 0, 4096, false,
	  "file holding the ZooKeeper digest credentials user:password (first line); "
	  "empty: zookeeper.auth_env", OFF(zk_auth_file), NULL, 0 },
	{ "zookeeper.auth_env", PAL_CONF_STRING, "PALISADE_ZK_AUTH", "", 0, 128, false,
	  "environment variable holding user:password when zookeeper.auth_file is empty; "
	  "no credentials: the cluster's znodes are open to anyone", OFF(zk_auth_env), NULL, 0 },
	{ "postgres.conninfo", PAL_CONF_STRING, "\"\"", "", 0, 4096, false,
	  "libpq connection string or URI; empty: --pg, then $PALISADE_PG", OFF(pg_conninfo), NULL, 0 },
	{ "postgres.pool_mode", PAL_CONF_ENUM, "session", "", 0, 0, false,
	  "what postgres.conninfo reaches: session (PostgreSQL, or a pooler in session mode) or "
	  "transaction (a pooler in transaction mode such as PgBouncer's: the connections that "
	  "need a session of their own then use postgres.direct_conninfo)",
	  OFF(pg_pool_mode), pool_mode_names, N(pool_mode_names) },
	{ "postgres.direct_conninfo", PAL_CONF_STRING, "\"\"", "", 0, 4096, false,
	  "libpq connection string of the connections that need a session (LISTEN, session "
	  "settings, the migration lock) when postgres.pool_mode is transaction; empty: "
	  "postgres.conninfo", OFF(pg_direct_conninfo), NULL, 0 },
	{ "postgres.idle_in_transaction_timeout", PAL_CONF_DURATION, "5s", "ms", 1 * MS_S, 1 * MS_H,
	  false, "the server ends a session of this node idle this long inside a transaction "
	  "(a vanished or frozen node then stops holding its locks)",
	  OFF(pg_idle_in_transaction_timeout_ms), NULL, 0 },
	{ "postgres.statement_timeout", PAL_CONF_DURATION, "30s", "ms", 1 * MS_S, 1 * MS_H, false,
	  "longest statement of the node's controller session (the executor bounds its own at "
	  "30 s)", OFF(pg_statement_timeout_ms), NULL, 0 },
	{ "controller.scan_interval", PAL_CONF_DURATION, "1s", "ms", 100, 60 * MS_S, true,
	  "how often a shard leader plans due instants", OFF(scan_interval_ms), NULL, 0 },
	{ "controller.overlap", PAL_CONF_DURATION, "10s", "ms", 0, 1 * MS_H, true,
	  "each scan re-plans this far behind the watermark (idempotent; catches late commits)",
	  OFF(overlap_ms), NULL, 0 },
	{ "controller.lookahead", PAL_CONF_DURATION, "5s", "ms", 0, 10 * MS_M, true,
	  "instants are planned this far ahead of now", OFF(lookahead_ms), NULL, 0 },
	{ "controller.misfire_threshold", PAL_CONF_DURATION, "1m", "ms", 1 * MS_S, 1 * MS_D, true,
	  "an instant not planned this long after it was due is a misfire (misfire policy applies)",
	  OFF(misfire_threshold_ms), NULL, 0 },
	{ "resume.ramp_job", PAL_CONF_DURATION, "0s", "ms", 0, 1 * MS_D, true,
	  "palisade resume --job without --ramp: release the held triggers over this long "
	  "(0 = at once)", OFF(resume_ramp_job_ms), NULL, 0 },
	{ "resume.ramp_group", PAL_CONF_DURATION, "0s", "ms", 0, 1 * MS_D, true,
	  "the same for palisade resume --group", OFF(resume_ramp_group_ms), NULL, 0 },
	{ "resume.ramp_tenant", PAL_CONF_DURATION, "0s", "ms", 0, 1 * MS_D, true,
	  "the same for palisade resume --tenant", OFF(resume_ramp_tenant_ms), NULL, 0 },
	{ "resume.ramp_all", PAL_CONF_DURATION, "0s", "ms", 0, 1 * MS_D, true,
	  "the same for palisade resume --all", OFF(resume_ramp_all_ms), NULL, 0 },
	{ "executor.lease", PAL_CONF_DURATION, "30s", "ms", 2 * MS_S, 1 * MS_H, false,
	  "lease length of a claimed trigger, judged by the database clock", OFF(lease_ms), NULL, 0 },
	{ "executor.heartbeat", PAL_CONF_DURATION, "10s", "ms", 500, 10 * MS_M, false,
	  "interval of the batched lease renewal; at most half of executor.lease",
	  OFF(heartbeat_ms), NULL, 0 },
	{ "executor.batch", PAL_CONF_INT, "256", "", 1, 10000, true,
	  "triggers claimed per claim statement", OFF(batch), NULL, 0 },
	{ "executor.max_inflight", PAL_CONF_INT, "1024", "", 1, 100000, true,
	  "side-effect calls in flight on this node, all groups together", OFF(max_inflight), NULL, 0 },
	{ "executor.host_connections", PAL_CONF_INT, "256", "", 0, 100000, false,
	  "connections open at once to one target host:port (0 = as many as max_inflight); "
	  "calls beyond it wait in the node for a free connection",
	  OFF(host_connections), NULL, 0 },
	{ "executor.spec_cache", PAL_CONF_INT, "100000", "", 0, 100000000, false,
	  "job versions kept compiled in memory (0 = no bound); beyond it the versions "
	  "least recently called are read again when next claimed",
	  OFF(spec_cache), NULL, 0 },
	{ "executor.renew_failures_to_close_gate", PAL_CONF_INT, "3", "", 1, 100, true,
	  "consecutive failed renewals after which the node stops starting side effects",
	  OFF(renew_failures_to_close_gate), NULL, 0 },
	{ "executor.groups", PAL_CONF_GROUPS, "{}", "", 0, 1000, true,
	  "resource groups: name -> {concurrency: per node, cluster_concurrency: cluster-wide}; "
	  "0 or absent = no limit of its own", OFF(groups), NULL, 0 },
	{ "executor.tenants", PAL_CONF_TENANTS, "{}", "", 0, 1000, true,
	  "tenant quotas: name -> {cap: calls in flight cluster-wide (0 = unlimited), weight: "
	  "share of claims beside other waiting tenants (default 1)}; the same on every node",
	  OFF(tenants), NULL, 0 },
	{ "executor.secrets", PAL_CONF_SECRETS, "{}", "", 0, 1000, false,
	  "which environment variables each tenant's jobs may name as ${NAME} secrets: "
	  "tenant -> [NAME or PREFIX*, ...]; empty: any tenant any name but the node's own "
	  "(PALISADE_*, libpq's PG variables, the proxy variables, admin.token_env, "
	  "zookeeper.auth_env); set: a tenant not listed may name none", OFF(secrets), NULL, 0 },
	{ "executor.target_hosts", PAL_CONF_TARGET_HOSTS, "{}", "", 0, 1000, false,
	  "which hosts each tenant's jobs may call and notify: tenant -> [host, *.domain or *, "
	  "each with an optional :port]; empty: any tenant any host; set: a tenant not listed "
	  "may call none", OFF(target_hosts), NULL, 0 },
	{ "executor.claim_ahead", PAL_CONF_DURATION, "500ms", "ms", 0, 10 * MS_S, false,
	  "claim triggers due this much ahead of their instant and call them at the instant "
	  "(0 = only due triggers); at most lease / 4", OFF(claim_ahead_ms), NULL, 0 },
	{ "executor.claim_connections", PAL_CONF_INT, "1", "", 1, 2, false,
	  "claims in flight at once on this node, each on its own connection; 2 only helps a "
	  "node alone on a database with cores to spare", OFF(claim_connections), NULL, 0 },
	{ "executor.proxy", PAL_CONF_STRING, "\"\"", "", 0, 1024, false,
	  "HTTP proxy for side-effect calls: empty = connect directly (proxy variables in the "
	  "environment are ignored), a URL = use it, env = honour http_proxy/https_proxy/no_proxy",
	  OFF(proxy), NULL, 0 },
	{ "executor.trace_sampled", PAL_CONF_ENUM, "true", "", 0, 0, false,
	  "the sampled flag of the traceparent header every side-effect call carries: true "
	  "asks the service's tracer to record the call", OFF(trace_sampled), bool_names,
	  N(bool_names) },
	{ "executor.keep_body_max", PAL_CONF_INT, "65536", "bytes", 0, 65536, false,
	  "the most bytes of a response body an attempt keeps, whatever its job's "
	  "target.keep_body asks (0: no body is kept on this node)", OFF(keep_body_max), NULL, 0 },
	{ "admin.listen", PAL_CONF_STRING, "127.0.0.1:9464", "", 3, 256, false,
	  "address of the admin HTTP endpoint (metrics, health, status), host:port",
	  OFF(admin_listen), NULL, 0 },
	{ "admin.token_file", PAL_CONF_STRING, "\"\"", "", 0, 4096, false,
	  "file holding the bearer token of the admin endpoint (first line); empty: admin.token_env",
	  OFF(admin_token_file), NULL, 0 },
	{ "admin.token_env", PAL_CONF_STRING, "PALISADE_ADMIN_TOKEN", "", 0, 128, false,
	  "environment variable holding the bearer token when admin.token_file is empty",
	  OFF(admin_token_env), NULL, 0 },
	{ "admin.reads", PAL_CONF_ENUM, "open", "", 0, 0, false,
	  "reads of the admin endpoint (metrics, health, status): open, or token (bearer token)",
	  OFF(admin_reads), admin_reads_names, N(admin_reads_names) },
	{ "admin.host", PAL_CONF_STRING, "\"\"", "", 0, 256, false,
	  "host[:port] that requests must name in Host and Origin; empty: the listen address "
	  "(and localhost when it is loopback)", OFF(admin_host), NULL, 0 },
	{ "admin.tls_cert", PAL_CONF_STRING, "\"\"", "", 0, 4096, false,
	  "PEM certificate (chain) of the admin endpoint: set with admin.tls_key, it serves "
	  "HTTPS only; empty: plain HTTP", OFF(admin_tls_cert), NULL, 0 },
	{ "admin.tls_key", PAL_CONF_STRING, "\"\"", "", 0, 4096, false,
	  "PEM private key of admin.tls_cert (keep it mode 0600)", OFF(admin_tls_key), NULL, 0 },
	{ "admin.public_url", PAL_CONF_STRING, "\"\"", "", 0, 512, false,
	  "where people reach the cluster's console from outside, http(s)://host[:port][/prefix]: "
	  "a notification's console link is this followed by the page's path; empty: the path "
	  "alone", OFF(admin_public_url), NULL, 0 },
	{ "admin.max_connections", PAL_CONF_INT, "256", "", 8, 100000, false,
	  "connections the admin endpoint holds at once; a new one beyond it shuts the one "
	  "waiting longest for a request head", OFF(admin_max_conns), NULL, 0 },
	{ "admin.max_connections_per_address", PAL_CONF_INT, "32", "", 1, 100000, false,
	  "connections one client address holds at once; a new one beyond it shuts that "
	  "address's connection waiting longest for a request head",
	  OFF(admin_max_per_addr), NULL, 0 },
	{ "admin.head_timeout", PAL_CONF_DURATION, "5s", "ms", 100, 60 * MS_S, false,
	  "a request head must be complete within this of the connection opening (of the "
	  "request line on a kept-alive connection), however slowly it trickles",
	  OFF(admin_head_timeout_ms), NULL, 0 },
	{ "admin.body_timeout", PAL_CONF_DURATION, "30s", "ms", 100, 10 * MS_M, false,
	  "a request body must be complete within this of its head, however slowly it trickles",
	  OFF(admin_body_timeout_ms), NULL, 0 },
	{ "metrics.cluster_interval", PAL_CONF_DURATION, "10s", "ms", 1 * MS_S, 10 * MS_M, false,
	  "how often the node reads the cluster gauges (palisade_cluster_*: backlog, open "
	  "tickets, last success per job) from PostgreSQL", OFF(cluster_stats_interval_ms), NULL, 0 },
	{ "metrics.job_series", PAL_CONF_INT, "1000", "", 0, 100000, false,
	  "jobs looked at (the first by id) for a "
	  "palisade_cluster_job_last_success_timestamp_seconds series, which each of "
	  "them with a success in the last 7 days gets; 0 = none",
	  OFF(job_series), NULL, 0 },
	{ "retention.triggers", PAL_CONF_DURATION, "14d", "ms", 1 * MS_S, 3650 * MS_D, false,
	  "how long terminal triggers and their attempts are kept: a time range of both tables "
	  "is dropped once it ended this long ago and holds no live trigger",
	  OFF(retention_keep_ms), NULL, 0 },
	{ "retention.partition_interval", PAL_CONF_DURATION, "1d", "ms", 1 * MS_S, 31 * MS_D, false,
	  "length of the time range of each new partition of triggers and attempts (the "
	  "granularity of dropping)", OFF(retention_interval_ms), NULL, 0 },
	{ "retention.ahead", PAL_CONF_DURATION, "2d", "ms", 1 * MS_S, 365 * MS_D, false,
	  "partitions exist this far ahead of now (an instant beyond lands in the default "
	  "partition until its range is created)", OFF(retention_ahead_ms), NULL, 0 },
	{ "retention.check_interval", PAL_CONF_DURATION, "1m", "ms", 1 * MS_S, 1 * MS_D, false,
	  "how often a node runs a round of partition maintenance (one node at a time works, "
	  "under an advisory lock)", OFF(retention_check_ms), NULL, 0 },
	{ "retention.misfires", PAL_CONF_DURATION, "90d", "ms", 1 * MS_S, 3650 * MS_D, false,
	  "how long misfire records are kept: a record goes once its whole range ended this long "
	  "ago (at least retention.triggers)", OFF(retention_misfires_ms), NULL, 0 },
	{ "retention.audit", PAL_CONF_DURATION, "90d", "ms", 1 * MS_S, 3650 * MS_D, false,
	  "how long audit_log rows are kept", OFF(retention_audit_ms), NULL, 0 },
	{ "retention.request_ids", PAL_CONF_DURATION, "90d", "ms", 1 * MS_S, 3650 * MS_D, false,
	  "how long a request id a manual run used is remembered after its use (a repeat "
	  "within it creates nothing, also once retention dropped the run's triggers; at "
	  "least retention.triggers)", OFF(retention_request_ids_ms), NULL, 0 },
	{ "retention.delete_slice", PAL_CONF_INT, "5000", "", 1, 1000000, false,
	  "rows of misfires, audit_log or request_ids deleted per transaction by a round (a "
	  "round deletes slices until none is full, at most 100)", OFF(retention_slice), NULL, 0 },
	{ "notify.interval", PAL_CONF_DURATION, "1s", "ms", 100, 1 * MS_M, false,
	  "how often an executor node looks for due notifications of the outbox and delivers "
	  "them, also while deliveries are under way (docs/protocol.md, \"Notifications\")",
	  OFF(notify_interval_ms), NULL, 0 },
	{ "notify.backoff_max", PAL_CONF_DURATION, "5m", "ms", 1 * MS_S, 1 * MS_D, false,
	  "longest wait between two deliveries of one notification (the wait starts at 1s and "
	  "doubles)", OFF(notify_backoff_max_ms), NULL, 0 },
	{ "notify.retention", PAL_CONF_DURATION, "7d", "ms", 1 * MS_S, 3650 * MS_D, false,
	  "how long an undelivered notification is kept and retried; it has a last try at this "
	  "age, then is deleted and counted as expired", OFF(notify_retention_ms), NULL, 0 },
	{ "notify.keep_delivered", PAL_CONF_DURATION, "1d", "ms", 1 * MS_S, 3650 * MS_D, false,
	  "how long a delivered notification stays in the outbox", OFF(notify_keep_delivered_ms),
	  NULL, 0 },
	{ "sink.key_retention", PAL_CONF_DURATION, "7d", "ms", 1 * MS_S, 3650 * MS_D, true,
	  "how long the side-effect services the jobs call keep idempotency keys and fences "
	  "(palisade-sink --key-retention); apply and validate --config refuse a job whose "
	  "retry and catch-up horizon is longer, and a controller reports (log, metric, "
	  "ticket, verify) every job of its shards that exceeds it at start and on reload",
	  OFF(sink_key_retention_ms), NULL, 0 },
	{ "log.level", PAL_CONF_ENUM, "info", "", 0, 0, true,
	  "least severe level logged: debug, info, warn or error", OFF(log_level),
	  log_level_names, N(log_level_names) },
};
/* clang-format on */

const pal_conf_key *pal_nodeconf_table(size_t *n)
{
	*n = N(table);
	return table;
}

/* ---- field access ---- */

static char **str_at(pal_nodeconf *c, const pal_conf_key *k)
{
	return (char **)((char *)c + k->offset);
}

static const char *cstr_at(const pal_nodeconf *c, const pal_conf_key *k)
{
	return *(char *const *)((const char *)c + k->offset);
}

static int32_t *i32_at(pal_nodeconf *c, const pal_conf_key *k)
{
	return (int32_t *)((char *)c + k->offset);
}

static int32_t ci32_at(const pal_nodeconf *c, const pal_conf_key *k)
{
	return *(const int32_t *)((const char *)c + k->offset);
}

static int64_t *i64_at(pal_nodeconf *c, const pal_conf_key *k)
{
	return (int64_t *)((char *)c + k->offset);
}

static int64_t ci64_at(const pal_nodeconf *c, const pal_conf_key *k)
{
	return *(const int64_t *)((const char *)c + k->offset);
}

static void groups_free(pal_group_conf *g, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(g[i].name);
	free(g);
}

static void tenants_free(pal_tenant_conf *t, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(t[i].name);
	free(t);
}

static void grants_free(pal_tenant_grant *g, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		for (size_t j = 0; j < g[i].n_names; j++)
			free(g[i].names[j]);
		free(g[i].names);
		free(g[i].tenant);
	}
	free(g);
}

void pal_nodeconf_free(pal_nodeconf *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < N(table); i++)
		if (table[i].type == PAL_CONF_STRING)
			free(*str_at(c, &table[i]));
	groups_free(c->groups, c->n_groups);
	tenants_free(c->tenants, c->n_tenants);
	grants_free(c->secrets, c->n_secrets);
	grants_free(c->target_hosts, c->n_target_hosts);
	free(c->file);
	memset(c, 0, sizeof *c);
}

/* ---- value checks ---- */

struct nctx {
	const pal_ydoc *doc;
	pal_diags *diags;
	int errors;
};

static void ndiag(struct nctx *x, const pal_ynode *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void ndiag(struct nctx *x, const pal_ynode *n, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	pal_ydiag(x->diags, x->doc, n, "%s", msg);
	x->errors++;
}

static bool name_ok(const char *s, bool upper)
{
	if (!*s)
		return false;
	for (; *s; s++) {
		char ch = *s;

		if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '.' ||
		      ch == '_' || ch == '-' || (upper && ch >= 'A' && ch <= 'Z')))
			return false;
	}
	return true;
}

/* http:// or https://, a host, then an optional port and path: printable
 * ASCII without spaces, no query or fragment (a link is this followed by
 * a path). */
static bool public_url_ok(const char *s)
{
	const char *h = !strncmp(s, "http://", 7)    ? s + 7
			: !strncmp(s, "https://", 8) ? s + 8
						     : NULL;
	if (!h || !*h || *h == '/' || *h == ':')
		return false;
	for (const char *p = h; *p; p++)
		if (*p <= ' ' || *p > '~' || *p == '?' || *p == '#' || *p == '@')
			return false;
	return true;
}

/* host:port with host a name, an IPv4 address or [IPv6]; port 0..65535
 * (0: any free port, for tests). */
static bool listen_ok(const char *s)
{
	const char *colon;
	char *end;
	long port;

	if (*s == '[') {
		const char *rb = strchr(s, ']');

		if (!rb || rb == s + 1 || rb[1] != ':')
			return false;
		for (const char *p = s + 1; p < rb; p++)
			if (!g_ascii_isxdigit(*p) && *p != ':' && *p != '.')
				return false;
		colon = rb + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon || colon == s)
			return false;
		for (const char *p = s; p < colon; p++)
			if (!g_ascii_isalnum(*p) && *p != '.' && *p != '-')
				return false;
	}
	if (!g_ascii_isdigit(colon[1]))
		return false;
	port = strtol(colon + 1, &end, 10);
	return *end == '\0' && port >= 0 && port <= 65535;
}

/* Key-specific checks of a string value; S is already length-checked. */
static void check_string(struct nctx *x, const pal_conf_key *k, const pal_ynode *n, const char *s)
{
	if (!strcmp(k->name, "node.id")) {
		if (*s && !name_ok(s, true))
			ndiag(x, n,
			      "node.id: invalid node id \"%.64s\" (allowed: letters, digits, "
			      "'.', '_' and '-'); hint: leave it empty to use the host name",
			      s);
	} else if (!strcmp(k->name, "cluster.name")) {
		if (!name_ok(s, false))
			ndiag(x, n,
			      "cluster.name: invalid cluster name \"%.64s\" (allowed: "
			      "lower-case letters, digits, '.', '_' and '-')",
			      s);
	} else if (!strcmp(k->name, "zookeeper.root")) {
		bool ok = s[0] == '/' && s[strlen(s) - 1] != '/' && !strstr(s, "//");

		for (const char *p = s; ok && *p; p++)
			ok = g_ascii_isalnum(*p) || strchr("/._-", *p);
		if (!ok)
			ndiag(x, n,
			      "zookeeper.root: invalid path \"%.64s\" (expected an absolute "
			      "znode path such as /palisade, without a trailing slash)",
			      s);
	} else if (!strcmp(k->name, "zookeeper.connect")) {
		for (const char *p = s; *p; p++) {
			if (g_ascii_isspace(*p)) {
				ndiag(x, n,
				      "zookeeper.connect: spaces are not allowed (expected "
				      "host:port[,host:port...])");
				break;
			}
		}
	} else if (!strcmp(k->name, "admin.public_url")) {
		if (*s && !public_url_ok(s))
			ndiag(x, n,
			      "admin.public_url: \"%.64s\" is not a base URL (expected "
			      "http(s)://host[:port][/prefix], no query, fragment or spaces)",
			      s);
	} else if (!strcmp(k->name, "admin.listen")) {
		if (!listen_ok(s))
			ndiag(x, n,
			      "admin.listen: invalid address \"%.64s\" (expected host:port "
			      "such as 127.0.0.1:9464 or [::1]:9464)",
			      s);
	}
}

static void set_roles(struct nctx *x, const pal_conf_key *k, const pal_ynode *v, pal_nodeconf *c)
{
	unsigned roles = 0;

	if (pal_yexpect_seq(x->doc, v, k->name, x->diags) != 0) {
		x->errors++;
		return;
	}
	if (v->n == 0) {
		ndiag(x, v,
		      "%s: a node needs at least one role (expected controller, executor "
		      "or both)",
		      k->name);
		return;
	}
	for (size_t i = 0; i < v->n; i++) {
		int r;

		if (pal_yget_enum(x->doc, v->vals[i], "role", role_names, N(role_names), &r,
				  x->diags) != 0) {
			x->errors++;
			continue;
		}
		if (roles & (1u << r))
			ndiag(x, v->vals[i], "%s: role \"%s\" is listed twice", k->name,
			      role_names[r]);
		roles |= 1u << r;
	}
	if (roles)
		c->roles = roles;
}

static int group_cmp(const void *a, const void *b)
{
	return strcmp(((const pal_group_conf *)a)->name, ((const pal_group_conf *)b)->name);
}

static int tenant_cmp(const void *a, const void *b)
{
	return strcmp(((const pal_tenant_conf *)a)->name, ((const pal_tenant_conf *)b)->name);
}

/* One entry of a named table: its value VAL (a mapping, already checked)
 * parsed into ONE; problems reported through X (counted in x->errors). */
typedef void (*entry_fn)(struct nctx *x, const pal_ynode *kn, const pal_ynode *val, void *one);

/*
 * A table keyed by name (executor.groups, executor.tenants): a mapping from
 * names in [a-z0-9._-] (at most 64 bytes) to mappings, each parsed by FN
 * into an entry of SIZE bytes whose first member is its name (strdup'd
 * here).  Returns the entries that parsed cleanly (calloc'd, caller frees;
 * NULL when none), their count in *N.  KIND names an entry in messages.
 */
_Static_assert(offsetof(pal_group_conf, name) == 0, "a table entry's name comes first");
_Static_assert(offsetof(pal_tenant_conf, name) == 0, "a table entry's name comes first");

static void *set_named(struct nctx *x, const pal_conf_key *k, const pal_ynode *v,
		       const char *kind, size_t size, entry_fn fn, size_t *n)
{
	*n = 0;
	if (pal_yexpect_map(x->doc, v, k->name, x->diags) != 0) {
		x->errors++;
		return NULL;
	}
	if ((int64_t)v->n > k->max) {
		ndiag(x, v, "%s: too many entries (%zu, at most %lld)", k->name, v->n,
		      (long long)k->max);
		return NULL;
	}
	char *t = calloc(v->n ? v->n : 1, size);
	if (!t) {
		ndiag(x, v, "%s: out of memory", k->name);
		return NULL;
	}
	char *one = calloc(1, size);
	for (size_t i = 0; one && i < v->n; i++) {
		const pal_ynode *kn = v->keys[i], *ev = v->vals[i];
		int before = x->errors;

		if (!name_ok(kn->str, false) || strlen(kn->str) > 64) {
			ndiag(x, kn,
			      "%s: invalid %s name \"%.64s\" (allowed: lower-case "
			      "letters, digits, '.', '_' and '-', as in a job's %s key)",
			      k->name, kind, kn->str, kind);
			continue;
		}
		if (pal_yexpect_map(x->doc, ev, kind, x->diags) != 0) {
			x->errors++;
			continue;
		}
		memset(one, 0, size);
		fn(x, kn, ev, one);
		if (x->errors != before)
			continue;
		char *name = strdup(kn->str);
		if (!name) {
			ndiag(x, kn, "out of memory");
			continue;
		}
		memcpy(one, &name, sizeof name); /* the first member */
		memcpy(t + (*n)++ * size, one, size);
	}
	free(one);
	return t;
}

/* Report unknown key KEY of entry KN (KIND) against the known KEYS. */
static void unknown_entry_key(struct nctx *x, const pal_ynode *key, const pal_ynode *kn,
			      const char *kind, const char *const *keys, size_t n_keys,
			      const char *expected)
{
	const char *hint = pal_suggest(key->str, keys, n_keys);

	if (hint)
		ndiag(x, key, "unknown key \"%.64s\" in %s \"%s\" (did you mean \"%s\"?)", key->str,
		      kind, kn->str, hint);
	else
		ndiag(x, key, "unknown key \"%.64s\" in %s \"%s\" (expected %s)", key->str, kind,
		      kn->str, expected);
}

static void group_entry(struct nctx *x, const pal_ynode *kn, const pal_ynode *gv, void *out)
{
	static const char *const gkeys[] = {"concurrency", "cluster_concurrency"};
	pal_group_conf *one = out;

	for (size_t j = 0; j < gv->n; j++) {
		const pal_ynode *gk = gv->keys[j];
		int64_t val;

		if (!strcmp(gk->str, "concurrency")) {
			if (pal_yget_int(x->doc, gv->vals[j], "concurrency", 0, 100000, &val,
					 x->diags) == 0)
				one->concurrency = (int32_t)val;
			else
				x->errors++;
		} else if (!strcmp(gk->str, "cluster_concurrency")) {
			if (pal_yget_int(x->doc, gv->vals[j], "cluster_concurrency", 0, 10000000, &val,
					 x->diags) == 0)
				one->cluster_concurrency = (int32_t)val;
			else
				x->errors++;
		} else {
			unknown_entry_key(x, gk, kn, "group", gkeys, N(gkeys),
					  "concurrency, cluster_concurrency");
		}
	}
}

static void tenant_entry(struct nctx *x, const pal_ynode *kn, const pal_ynode *tv, void *out)
{
	static const char *const tkeys[] = {"cap", "weight"};
	pal_tenant_conf *one = out;

	one->weight = 1.0;
	for (size_t j = 0; j < tv->n; j++) {
		const pal_ynode *tk = tv->keys[j];
		int64_t ival;
		double dval;

		if (!strcmp(tk->str, "cap")) {
			if (pal_yget_int(x->doc, tv->vals[j], "cap", 0, 10000000, &ival, x->diags) == 0)
				one->cap = (int32_t)ival;
			else
				x->errors++;
		} else if (!strcmp(tk->str, "weight")) {
			if (pal_yget_number(x->doc, tv->vals[j], "weight", 0.01, 1000, &dval,
					    x->diags) == 0)
				one->weight = dval;
			else
				x->errors++;
		} else {
			unknown_entry_key(x, tk, kn, "tenant", tkeys, N(tkeys), "cap, weight");
		}
	}
}

static void set_groups(struct nctx *x, const pal_conf_key *k, const pal_ynode *v, pal_nodeconf *c)
{
	size_t n;
	pal_group_conf *g = set_named(x, k, v, "group", sizeof *g, group_entry, &n);

	if (!g)
		return;
	qsort(g, n, sizeof *g, group_cmp);
	groups_free(c->groups, c->n_groups);
	c->groups = g;
	c->n_groups = n;
}

static void set_tenants(struct nctx *x, const pal_conf_key *k, const pal_ynode *v,
			pal_nodeconf *c)
{
	size_t n;
	pal_tenant_conf *t = set_named(x, k, v, "tenant", sizeof *t, tenant_entry, &n);

	if (!t)
		return;
	qsort(t, n, sizeof *t, tenant_cmp);
	tenants_free(c->tenants, c->n_tenants);
	c->tenants = t;
	c->n_tenants = n;
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int grant_cmp(const void *a, const void *b)
{
	return strcmp(((const pal_tenant_grant *)a)->tenant, ((const pal_tenant_grant *)b)->tenant);
}

/* NAME ([A-Z_][A-Z0-9_]*, as a ${NAME} reference), PREFIX* or "*". */
static bool secret_pattern_ok(const char *s)
{
	size_t n = strlen(s);
	if (n && s[n - 1] == '*')
		n--;
	if (n > 128 || (n && s[0] >= '0' && s[0] <= '9'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return false;
	return n > 0 || s[0] == '*';
}

/* What a per-tenant list of the config (executor.secrets,
 * executor.target_hosts) holds: its entries' word, the check of one, and
 * what a valid one is. */
struct grant_kind {
	const char *what; /* "secret name" */
	bool (*ok)(const char *);
	const char *expected; /* the diagnostic's explanation of a valid one */
};

static const struct grant_kind secret_kind = {
    "secret name", secret_pattern_ok,
    "expected NAME as in ${NAME}: A-Z, 0-9 and _, not starting with a digit; or PREFIX* for "
    "every name that starts with PREFIX"};
static const struct grant_kind host_kind = {
    "host pattern", pal_target_pattern_ok,
    "expected a host (name, IPv4 or [IPv6] address), *.DOMAIN for any name under DOMAIN, or "
    "* for any host; each optionally followed by :PORT"};

/* The list key K (of type PAL_CONF_SECRETS or PAL_CONF_TARGET_HOSTS) sets
 * in C, its length in **N; the format and compare callers only read it. */
static pal_tenant_grant **grants_at(const pal_nodeconf *c, const pal_conf_key *k, size_t **n)
{
	pal_nodeconf *m = (pal_nodeconf *)c;
	if (k->type == PAL_CONF_SECRETS) {
		*n = &m->n_secrets;
		return &m->secrets;
	}
	*n = &m->n_target_hosts;
	return &m->target_hosts;
}

/* executor.secrets, executor.target_hosts: a mapping from tenant names (as
 * a job's tenant key) to sequences of patterns of KIND. */
static void set_grants(struct nctx *x, const pal_conf_key *k, const pal_ynode *v, pal_nodeconf *c,
		       const struct grant_kind *kind)
{
	if (pal_yexpect_map(x->doc, v, k->name, x->diags) != 0) {
		x->errors++;
		return;
	}
	if ((int64_t)v->n > k->max) {
		ndiag(x, v, "%s: too many entries (%zu, at most %lld)", k->name, v->n,
		      (long long)k->max);
		return;
	}
	pal_tenant_grant *g = calloc(v->n ? v->n : 1, sizeof *g);
	if (!g) {
		ndiag(x, v, "%s: out of memory", k->name);
		return;
	}
	size_t n = 0;
	int before = x->errors;
	for (size_t i = 0; i < v->n; i++) {
		const pal_ynode *kn = v->keys[i], *ev = v->vals[i];
		if (!name_ok(kn->str, false) || strlen(kn->str) > 64) {
			ndiag(x, kn,
			      "%s: invalid tenant name \"%.64s\" (allowed: lower-case letters, "
			      "digits, '.', '_' and '-', as in a job's tenant key)",
			      k->name, kn->str);
			continue;
		}
		char what[96];
		snprintf(what, sizeof what, "%s: %s", k->name, kn->str);
		if (pal_yexpect_seq(x->doc, ev, what, x->diags) != 0) {
			x->errors++;
			continue;
		}
		pal_tenant_grant *one = &g[n++];
		one->tenant = strdup(kn->str);
		one->names = calloc(ev->n ? ev->n : 1, sizeof *one->names);
		if (!one->tenant || !one->names) {
			ndiag(x, kn, "%s: out of memory", k->name);
			continue;
		}
		for (size_t j = 0; j < ev->n; j++) {
			char *pat = NULL;
			if (pal_yget_string(x->doc, ev->vals[j], kind->what, &pat, x->diags) != 0) {
				x->errors++;
				continue;
			}
			if (!kind->ok(pat)) {
				ndiag(x, ev->vals[j], "%s: invalid %s \"%.64s\" of tenant \"%s\" (%s)", k->name,
				      kind->what, pat, kn->str, kind->expected);
				free(pat);
				continue;
			}
			one->names[one->n_names++] = pat;
		}
	}
	if (x->errors != before) {
		grants_free(g, n);
		return;
	}
	qsort(g, n, sizeof *g, grant_cmp);
	/* each tenant's names sorted, once each: the value (and the digest
	 * palisade status compares across nodes) does not depend on their
	 * order in the file, which grants nothing */
	for (size_t i = 0; i < n; i++) {
		pal_tenant_grant *one = &g[i];
		size_t kept = 0;
		qsort(one->names, one->n_names, sizeof *one->names, str_cmp);
		for (size_t j = 0; j < one->n_names; j++) {
			if (kept && !strcmp(one->names[kept - 1], one->names[j]))
				free(one->names[j]);
			else
				one->names[kept++] = one->names[j];
		}
		one->n_names = kept;
	}
	size_t *at_n;
	pal_tenant_grant **at = grants_at(c, k, &at_n);
	grants_free(*at, *at_n);
	*at = g;
	*at_n = n;
}

/* Apply value V of key K to C. */
static void apply(struct nctx *x, const pal_conf_key *k, const pal_ynode *v, pal_nodeconf *c)
{
	int64_t i64;
	int e;
	char *s = NULL;

	switch (k->type) {
	case PAL_CONF_STRING:
		if (pal_yget_string(x->doc, v, k->name, &s, x->diags) != 0) {
			x->errors++;
			return;
		}
		if ((int64_t)strlen(s) < k->min || (int64_t)strlen(s) > k->max) {
			ndiag(x, v, "%s: length %zu is out of range (expected %lld to %lld bytes)",
			      k->name, strlen(s), (long long)k->min, (long long)k->max);
			free(s);
			return;
		}
		{
			int before = x->errors;

			check_string(x, k, v, s);
			if (x->errors != before) {
				free(s);
				return;
			}
		}
		free(*str_at(c, k));
		*str_at(c, k) = s;
		break;
	case PAL_CONF_INT:
		if (pal_yget_int(x->doc, v, k->name, k->min, k->max, &i64, x->diags) == 0)
			*i32_at(c, k) = (int32_t)i64;
		else
			x->errors++;
		break;
	case PAL_CONF_DURATION:
		if (pal_yget_duration(x->doc, v, k->name, k->min, k->max, k->min == 0, &i64,
				      x->diags) == 0)
			*i64_at(c, k) = i64;
		else
			x->errors++;
		break;
	case PAL_CONF_ENUM:
		if (pal_yget_enum(x->doc, v, k->name, k->names, k->n_names, &e, x->diags) == 0)
			memcpy((char *)c + k->offset, &e, sizeof e);
		else
			x->errors++;
		break;
	case PAL_CONF_ROLES:
		set_roles(x, k, v, c);
		break;
	case PAL_CONF_GROUPS:
		set_groups(x, k, v, c);
		break;
	case PAL_CONF_TENANTS:
		set_tenants(x, k, v, c);
		break;
	case PAL_CONF_SECRETS:
		set_grants(x, k, v, c, &secret_kind);
		break;
	case PAL_CONF_TARGET_HOSTS:
		set_grants(x, k, v, c, &host_kind);
		break;
	}
}

/* ---- defaults ---- */

static int resolve_node_id(pal_nodeconf *c)
{
	if (c->node_id && *c->node_id)
		return 0;
	free(c->node_id);
	/* g_get_host_name() never fails ("localhost" at worst) */
	c->node_id = strdup(g_get_host_name());
	return c->node_id ? 0 : PAL_ENOMEM;
}

/* Defaults without node.id resolution: a fresh struct for the loader. */
static int defaults(pal_nodeconf *c, pal_diags *diags)
{
	memset(c, 0, sizeof *c);
	for (size_t i = 0; i < N(table); i++) {
		pal_ydoc doc;
		struct nctx x = {.doc = &doc, .diags = diags};
		int rc = pal_ydoc_load_buffer(table[i].name, table[i].def, strlen(table[i].def),
					      &doc, diags);

		if (rc == 0)
			apply(&x, &table[i], doc.root, c);
		pal_ydoc_free(&doc);
		if (rc != 0 || x.errors) {
			pal_nodeconf_free(c);
			return rc == PAL_ENOMEM ? PAL_ENOMEM : PAL_EINVAL;
		}
	}
	return 0;
}

int pal_nodeconf_defaults(pal_nodeconf *c)
{
	pal_diags d = {0};
	int rc = defaults(c, &d);

	/* a diagnostic here is a bug in the table, caught by test_nodeconf */
	pal_diags_free(&d);
	if (rc == 0 && resolve_node_id(c) != 0) {
		pal_nodeconf_free(c);
		rc = PAL_ENOMEM;
	}
	return rc;
}

/* ---- loading ---- */

/* retention.KEY (MS) must be at least retention.triggers, because WHY. */
static void keeps_triggers(struct nctx *x, const pal_ynode *root, const pal_nodeconf *c,
			   const char *key, int64_t ms, const char *why)
{
	char a[32], b[32];

	if (ms >= c->retention_keep_ms)
		return;
	const pal_ynode *n = pal_ynode_get(pal_ynode_get(root, "retention"), key);

	ndiag(x, n ? n : root, "retention.%s (%s) must be at least retention.triggers (%s): %s",
	      key, pal_fmt_duration(ms, a, sizeof a),
	      pal_fmt_duration(c->retention_keep_ms, b, sizeof b), why);
}

static void cross_checks(struct nctx *x, const pal_ynode *root, pal_nodeconf *c)
{
	char a[32], b[32];

	if (!c->admin_tls_cert[0] != !c->admin_tls_key[0]) {
		const pal_ynode *ad = pal_ynode_get(root, "admin");
		const pal_ynode *n = pal_ynode_get(ad, c->admin_tls_cert[0] ? "tls_cert" : "tls_key");

		ndiag(x, n ? n : root,
		      "admin.tls_cert and admin.tls_key go together: set both (HTTPS) or neither "
		      "(plain HTTP)");
	}

	if (c->heartbeat_ms * 2 > c->lease_ms) {
		const pal_ynode *n = pal_ynode_get(pal_ynode_get(root, "executor"), "heartbeat");

		ndiag(x, n ? n : root,
		      "executor.heartbeat (%s) must be at most half of executor.lease (%s): a "
		      "lease needs at least two renewal chances before it expires",
		      pal_fmt_duration(c->heartbeat_ms, a, sizeof a),
		      pal_fmt_duration(c->lease_ms, b, sizeof b));
	}
	if (c->lookahead_ms < c->scan_interval_ms) {
		const pal_ynode *n = pal_ynode_get(pal_ynode_get(root, "controller"), "lookahead");

		ndiag(x, n ? n : root,
		      "controller.lookahead (%s) is shorter than controller.scan_interval (%s): "
		      "instants would be planned after they are due",
		      pal_fmt_duration(c->lookahead_ms, a, sizeof a),
		      pal_fmt_duration(c->scan_interval_ms, b, sizeof b));
	}
	if (c->misfire_threshold_ms <= c->scan_interval_ms + c->lookahead_ms) {
		const pal_ynode *n =
		    pal_ynode_get(pal_ynode_get(root, "controller"), "misfire_threshold");

		ndiag(x, n ? n : root,
		      "controller.misfire_threshold (%s) must exceed scan_interval + lookahead "
		      "(%s): every instant would count as a misfire",
		      pal_fmt_duration(c->misfire_threshold_ms, a, sizeof a),
		      pal_fmt_duration(c->scan_interval_ms + c->lookahead_ms, b, sizeof b));
	}
	if (c->retention_keep_ms < c->retention_interval_ms ||
	    c->retention_ahead_ms < c->retention_interval_ms) {
		const pal_ynode *n =
		    pal_ynode_get(pal_ynode_get(root, "retention"), "partition_interval");

		ndiag(x, n ? n : root,
		      "retention.partition_interval (%s) must be at most retention.triggers and "
		      "retention.ahead: a partition is the smallest unit kept or dropped",
		      pal_fmt_duration(c->retention_interval_ms, a, sizeof a));
	}
	keeps_triggers(x, root, c, "misfires", c->retention_misfires_ms,
		       "verify needs the misfire record of every instant whose trigger is still "
		       "kept");
	keeps_triggers(x, root, c, "request_ids", c->retention_request_ids_ms,
		       "a request id is remembered by its run's triggers until those go");
}

/* Walk the file: ROOT's keys are sections, each a mapping of keys. */
static void walk(struct nctx *x, const pal_ynode *root, pal_nodeconf *c)
{
	const char *sections[N(table)] = {NULL};
	size_t n_sections = 0;

	for (size_t i = 0; i < N(table); i++) {
		size_t sl = (size_t)(strchr(table[i].name, '.') - table[i].name);
		bool dup = false;

		for (size_t j = 0; j < n_sections; j++)
			dup = dup || (strlen(sections[j]) == sl &&
				      !strncmp(sections[j], table[i].name, sl));
		if (!dup)
			sections[n_sections++] = table[i].name; /* compared by prefix */
	}

	for (size_t i = 0; i < root->n; i++) {
		const pal_ynode *sk = root->keys[i], *sv = root->vals[i];
		const char *keys[N(table)];
		const pal_conf_key *kdefs[N(table)];
		size_t nk = 0;

		for (size_t j = 0; j < N(table); j++) {
			size_t sl = (size_t)(strchr(table[j].name, '.') - table[j].name);

			if (strlen(sk->str) == sl && !strncmp(table[j].name, sk->str, sl)) {
				kdefs[nk] = &table[j];
				keys[nk++] = table[j].name + sl + 1;
			}
		}
		if (nk == 0) {
			char names[N(table)][32];
			const char *cands[N(table)];
			const char *hint;

			for (size_t j = 0; j < n_sections; j++) {
				snprintf(names[j], sizeof names[j], "%.*s",
					 (int)(strchr(sections[j], '.') - sections[j]),
					 sections[j]);
				cands[j] = names[j];
			}
			hint = pal_suggest(sk->str, cands, n_sections);
			/* a known key written at the top level? */
			for (size_t j = 0; !hint && j < N(table); j++) {
				if (!strcmp(strchr(table[j].name, '.') + 1, sk->str)) {
					ndiag(x, sk,
					      "unknown section \"%.64s\"; hint: did you mean "
					      "\"%s\" (nested under its section)?",
					      sk->str, table[j].name);
					goto next;
				}
			}
			if (hint)
				ndiag(x, sk, "unknown section \"%.64s\" (did you mean \"%s\"?)",
				      sk->str, hint);
			else
				ndiag(x, sk,
				      "unknown section \"%.64s\"; hint: docs/config.md lists "
				      "the keys",
				      sk->str);
			continue;
		}
		if (pal_yexpect_map(x->doc, sv, sk->str, x->diags) != 0) {
			x->errors++;
			continue;
		}
		for (size_t m = 0; m < sv->n; m++) {
			const pal_ynode *kn = sv->keys[m];
			const pal_conf_key *k = NULL;

			for (size_t j = 0; j < nk; j++)
				if (!strcmp(kn->str, keys[j]))
					k = kdefs[j];
			if (k) {
				apply(x, k, sv->vals[m], c);
			} else {
				const char *hint = pal_suggest(kn->str, keys, nk);

				if (hint)
					ndiag(x, kn,
					      "unknown key \"%.64s\" in %s (did you mean "
					      "\"%s\"?)",
					      kn->str, sk->str, hint);
				else
					ndiag(x, kn,
					      "unknown key \"%.64s\" in %s; hint: docs/config.md "
					      "lists the keys",
					      kn->str, sk->str);
			}
		}
	next:;
	}
}

static int load_doc(const pal_ydoc *doc, pal_nodeconf *out, pal_diags *diags)
{
	struct nctx x = {.doc = doc, .diags = diags};
	pal_nodeconf c;
	int rc;

	rc = defaults(&c, diags);
	if (rc)
		return rc;
	if (pal_ynode_is_null(doc->root)) {
		/* a file of comments only: every default (the sample minus values) */
	} else if (doc->root->kind != PAL_YNODE_MAP) {
		ndiag(&x, doc->root,
		      "expected a mapping of sections (node, cluster, zookeeper, "
		      "...), got %s",
		      pal_ynode_describe(doc->root));
	} else {
		walk(&x, doc->root, &c);
		if (x.errors == 0)
			cross_checks(&x, doc->root, &c);
	}
	if (x.errors == 0 && resolve_node_id(&c) != 0) {
		pal_ydiag(diags, doc, NULL, "out of memory");
		x.errors++;
	}
	if (x.errors == 0) {
		c.file = strdup(doc->file);
		if (!c.file)
			x.errors++;
	}
	if (x.errors) {
		pal_nodeconf_free(&c);
		return PAL_EINVAL;
	}
	*out = c;
	return 0;
}

int pal_nodeconf_load_buffer(const char *name, const void *buf, size_t len, pal_nodeconf *out,
			     pal_diags *diags)
{
	pal_ydoc doc;
	int rc;

	memset(out, 0, sizeof *out);
	rc = pal_ydoc_load_buffer(name, buf, len, &doc, diags);
	if (rc == 0)
		rc = load_doc(&doc, out, diags);
	pal_ydoc_free(&doc);
	return rc;
}

int pal_nodeconf_load(const char *path, pal_nodeconf *out, pal_diags *diags)
{
	pal_ydoc doc;
	int rc;

	memset(out, 0, sizeof *out);
	rc = pal_ydoc_load_file(path, &doc, diags);
	if (rc == 0)
		rc = load_doc(&doc, out, diags);
	pal_ydoc_free(&doc);
	return rc;
}

/* ---- resolution, formatting, comparison ---- */

static const char *resolve(const char *flag, const char *conf, const char *env)
{
	const char *e;

	if (flag && *flag)
		return flag;
	if (conf && *conf)
		return conf;
	e = getenv(env);
	return e && *e ? e : NULL;
}

const char *pal_nodeconf_pg(const pal_nodeconf *c, const char *flag)
{
	return resolve(flag, c ? c->pg_conninfo : NULL, "PALISADE_PG");
}

const char *pal_nodeconf_pg_direct(const pal_nodeconf *c, const char *pooled)
{
	if (c && c->pg_pool_mode == PAL_POOL_TRANSACTION && c->pg_direct_conninfo &&
	    *c->pg_direct_conninfo)
		return c->pg_direct_conninfo;
	return pooled;
}

const char *pal_nodeconf_zk(const pal_nodeconf *c, const char *flag)
{
	return resolve(flag, c ? c->zk_connect : NULL, "PALISADE_ZK");
}

/* A YAML scalar for S: plain when that reads back as the same string. */
static void append_scalar(GString *out, const char *s)
{
	bool plain = *s && !strchr("!&*-?:,[]{}#|>@`\"'%~ ", *s) && s[strlen(s) - 1] != ' ';

	for (const char *p = s; plain && *p; p++)
		plain = (unsigned char)*p >= 0x20 && !(p[0] == ':' && p[1] == ' ') &&
			!(p[0] == ' ' && p[1] == '#');
	if (plain && (!strcmp(s, "null") || !strcmp(s, "true") || !strcmp(s, "false")))
		plain = false;
	if (plain) {
		g_string_append(out, s);
		return;
	}
	g_string_append_c(out, '"');
	for (const char *p = s; *p; p++) {
		if (*p == '"' || *p == '\\')
			g_string_append_c(out, '\\');
		g_string_append_c(out, *p);
	}
	g_string_append_c(out, '"');
}

char *pal_nodeconf_format(const pal_nodeconf *c, const pal_conf_key *k)
{
	GString *out = g_string_new(NULL);
	char buf[64];
	char *res;

	switch (k->type) {
	case PAL_CONF_STRING:
		append_scalar(out, cstr_at(c, k) ? cstr_at(c, k) : "");
		break;
	case PAL_CONF_INT:
		g_string_append_printf(out, "%d", (int)ci32_at(c, k));
		break;
	case PAL_CONF_DURATION:
		g_string_append(out, pal_fmt_duration(ci64_at(c, k), buf, sizeof buf));
		break;
	case PAL_CONF_ENUM: {
		int e;

		memcpy(&e, (const char *)c + k->offset, sizeof e);
		g_string_append(out, e >= 0 && (size_t)e < k->n_names ? k->names[e] : "?");
		break;
	}
	case PAL_CONF_ROLES: {
		bool first = true;

		g_string_append_c(out, '[');
		for (size_t i = 0; i < N(role_names); i++) {
			if (c->roles & (1u << i)) {
				g_string_append_printf(out, "%s%s", first ? "" : ", ",
						       role_names[i]);
				first = false;
			}
		}
		g_string_append_c(out, ']');
		break;
	}
	case PAL_CONF_GROUPS:
		g_string_append_c(out, '{');
		for (size_t i = 0; i < c->n_groups; i++)
			g_string_append_printf(
			    out, "%s%s: {concurrency: %d, cluster_concurrency: %d}", i ? ", " : "",
			    c->groups[i].name, (int)c->groups[i].concurrency,
			    (int)c->groups[i].cluster_concurrency);
		g_string_append_c(out, '}');
		break;
	case PAL_CONF_TENANTS:
		g_string_append_c(out, '{');
		for (size_t i = 0; i < c->n_tenants; i++)
			g_string_append_printf(out, "%s%s: {cap: %d, weight: %g}", i ? ", " : "",
					       c->tenants[i].name, (int)c->tenants[i].cap,
					       c->tenants[i].weight);
		g_string_append_c(out, '}');
		break;
	case PAL_CONF_SECRETS:
	case PAL_CONF_TARGET_HOSTS: {
		size_t *n;
		const pal_tenant_grant *g = *grants_at(c, k, &n);
		g_string_append_c(out, '{');
		for (size_t i = 0; i < *n; i++) {
			g_string_append_printf(out, "%s%s: [", i ? ", " : "", g[i].tenant);
			for (size_t j = 0; j < g[i].n_names; j++) {
				g_string_append(out, j ? ", " : "");
				append_scalar(out, g[i].names[j]);
			}
			g_string_append_c(out, ']');
		}
		g_string_append_c(out, '}');
		break;
	}
	}
	res = strdup(out->str);
	g_string_free(out, TRUE);
	return res;
}

bool pal_nodeconf_key_equal(const pal_nodeconf *a, const pal_nodeconf *b, const pal_conf_key *k)
{
	switch (k->type) {
	case PAL_CONF_STRING: {
		const char *x = cstr_at(a, k), *y = cstr_at(b, k);

		return (!x && !y) || (x && y && !strcmp(x, y));
	}
	case PAL_CONF_INT:
		return ci32_at(a, k) == ci32_at(b, k);
	case PAL_CONF_DURATION:
		return ci64_at(a, k) == ci64_at(b, k);
	case PAL_CONF_ENUM:
		return !memcmp((const char *)a + k->offset, (const char *)b + k->offset,
			       sizeof(int));
	case PAL_CONF_ROLES:
		return a->roles == b->roles;
	case PAL_CONF_GROUPS:
		if (a->n_groups != b->n_groups)
			return false;
		for (size_t i = 0; i < a->n_groups; i++)
			if (strcmp(a->groups[i].name, b->groups[i].name) ||
			    a->groups[i].concurrency != b->groups[i].concurrency ||
			    a->groups[i].cluster_concurrency != b->groups[i].cluster_concurrency)
				return false;
		return true;
	case PAL_CONF_TENANTS:
		if (a->n_tenants != b->n_tenants)
			return false;
		for (size_t i = 0; i < a->n_tenants; i++)
			if (strcmp(a->tenants[i].name, b->tenants[i].name) ||
			    a->tenants[i].cap != b->tenants[i].cap ||
			    a->tenants[i].weight != b->tenants[i].weight)
				return false;
		return true;
	case PAL_CONF_SECRETS:
	case PAL_CONF_TARGET_HOSTS: {
		size_t *na, *nb;
		const pal_tenant_grant *ga = *grants_at(a, k, &na), *gb = *grants_at(b, k, &nb);
		if (*na != *nb)
			return false;
		for (size_t i = 0; i < *na; i++) {
			if (strcmp(ga[i].tenant, gb[i].tenant) || ga[i].n_names != gb[i].n_names)
				return false;
			for (size_t j = 0; j < ga[i].n_names; j++)
				if (strcmp(ga[i].names[j], gb[i].names[j]))
					return false;
		}
		return true;
	}
	}
	return false;
}

int pal_nodeconf_restart_changes(const pal_nodeconf *old, const pal_nodeconf *new_,
				 pal_diags *diags)
{
	int n = 0;

	for (size_t i = 0; i < N(table); i++) {
		char *a, *b;

		if (table[i].reloadable || pal_nodeconf_key_equal(old, new_, &table[i]))
			continue;
		n++;
		a = pal_nodeconf_format(old, &table[i]);
		b = pal_nodeconf_format(new_, &table[i]);
		pal_diags_addf(diags, new_->file, 0, 0,
			       "%s changed from %s to %s; it takes effect only after a restart",
			       table[i].name, a ? a : "?", b ? b : "?");
		free(a);
		free(b);
	}
	return n;
}

int pal_nodeconf_admin_token(const pal_nodeconf *c, char **out, char *err, size_t errlen)
{
	*out = NULL;
	if (c->admin_token_file && c->admin_token_file[0]) {
		FILE *f = fopen(c->admin_token_file, "r");
		char line[1024];
		if (!f) {
			snprintf(err, errlen, "admin.token_file %s: %s", c->admin_token_file,
				 strerror(errno));
			return PAL_EINVAL;
		}
		if (!fgets(line, sizeof line, f))
			line[0] = '\0';
		fclose(f);
		line[strcspn(line, "\r\n")] = '\0';
		if (!line[0]) {
			snprintf(err, errlen, "admin.token_file %s is empty", c->admin_token_file);
			return PAL_EINVAL;
		}
		*out = strdup(line);
		return *out ? PAL_OK : PAL_ENOMEM;
	}
	const char *v = c->admin_token_env && c->admin_token_env[0] ? getenv(c->admin_token_env)
								      : NULL;
	if (v && *v)
		*out = strdup(v);
	return PAL_OK;
}

pal_secret_policy pal_nodeconf_secret_policy(const pal_nodeconf *c)
{
	return (pal_secret_policy){.token_env = c->admin_token_env,
				   .zk_auth_env = c->zk_auth_env,
				   .grants = c->secrets,
				   .n_grants = c->n_secrets};
}

pal_target_policy pal_nodeconf_target_policy(const pal_nodeconf *c)
{
	return (pal_target_policy){.grants = c->target_hosts, .n_grants = c->n_target_hosts};
}
