/*
 * coord.h - ZooKeeper coordination: node registry and per-shard leader
 * election whose epoch is the controller's fencing token (docs/election.md).
 *
 * Layout under ROOT/CLUSTER (ROOT default /palisade):
 *   nodes/<node-id>                              ephemeral, JSON node info
 *   shards/<NNNN>/election/_c_<uuid>-n_<seq>     ephemeral-sequential
 *
 * The module owns one ZooKeeper session (multi-threaded C client) and one
 * thread of its own that does every synchronous zoo_* call; watcher
 * callbacks only set flags and wake that thread.  Nothing here touches
 * PostgreSQL: leadership from this module is a *hint*; the controller turns
 * it into authority by claiming the shard in PostgreSQL with the epoch and
 * re-checking it in every transaction (G6).
 *
 * Epoch = czxid of our election znode (from zoo_create2).  A later leader's
 * znode is always younger, so its czxid is larger.  Never the sequence
 * suffix.
 *
 * Access control: with credentials (cfg->auth, "user:password") the session
 * authenticates with the digest scheme and every znode from ROOT/CLUSTER
 * down is created with the ACL "the authenticated identity may do
 * everything" (ZooKeeper's auth scheme): a process with other credentials, or
 * none, can neither read, create nor delete there.  Components of ROOT above
 * the cluster are created world-readable and world-creatable only (several
 * clusters with different credentials may share ROOT; nobody can delete a
 * cluster's root).  A tree created earlier without credentials is taken
 * over at the first session (its ACLs are set to ours).  Without
 * credentials everything is world:anyone as before.
 *
 * Foreign election znodes: a child of an election counts as a candidate only
 * when it has the protected name form, is ephemeral, carries our ACL (with
 * credentials), and its data names a node registered in nodes/ by the same
 * session.  Anything else is ignored (it cannot block a shard) and reported
 * once: log event election.foreign_znode, counter
 * palisade_coord_foreign_znodes_total.
 *
 * Connection handling: on disconnect every shard is reported as not led
 * (suspended) at once; on reconnect with the same session the children are
 * re-read and leadership resumes only if still lowest; on session expiry all
 * shards are dropped, a new session is opened and the node re-joins (new
 * znodes, hence new, larger epochs).
 */
#ifndef PALISADE_COORD_H
#define PALISADE_COORD_H

#include <stdbool.h>
#include <stdint.h>
#include "palisade/err.h"
#include "palisade/metrics.h"
#include <jansson.h>

typedef struct pal_coord_config {
	const char *connect;      /* "127.0.0.1:2181,..." */
	int session_timeout_ms;   /* requested; the server may adjust */
	const char *root;         /* default "/palisade" */
	const char *cluster;      /* default "default" */
	const char *node_id;      /* unique per node */
	const char *node_info;    /* JSON stored in nodes/<node-id> (version, roles, admin) */
	int n_shards;
	bool controller;          /* join the shard elections */
	bool balance;             /* hand off shards above ceil(shards / live controllers) */
	const char *auth;         /* digest credentials "user:password"; NULL or "" = none */
} pal_coord_config;

/*
 * Resolve ZooKeeper digest credentials: the first line of FILE when FILE is
 * non-empty, else the value of the environment variable ENV (NULL: the
 * default PALISADE_ZK_AUTH; "": none).  *OUT is a malloc'd "user:password"
 * or NULL when nothing is configured.  PAL_EINVAL (with ERR) when the file
 * cannot be read or the value has no "user:" part.
 */
PAL_MUST_CHECK int pal_coord_auth_load(const char *file, const char *env, char **out, char *err,
				       size_t errlen);

typedef struct pal_coord pal_coord;

/* Per-shard view published to the controller. */
typedef struct pal_shard_lead {
	bool leading;	  /* we hold the lowest election znode and are connected */
	int64_t epoch;	  /* czxid of our znode while leading, else 0 */
	int64_t since_ms; /* wall clock (unix ms) when leading or epoch last changed
			   * in the published view, 0 if never: a reader that looks
			   * late still knows when a step-down was published */
} pal_shard_lead;

/*
 * Connect and start the coordination thread.  Creates the persistent parent
 * znodes if missing, registers nodes/<node-id> (fails with PAL_EBUSY if a
 * live node already uses that id) and, when cfg->controller, joins the
 * election of every shard.  Copies CFG.  M receives counters (elections,
 * handoffs, suspensions, session expiries) and may be NULL.
 * Free with pal_coord_close().
 */
PAL_MUST_CHECK int pal_coord_open(const pal_coord_config *cfg, pal_metrics *m, pal_coord **out,
				  char *err, size_t errlen);

/*
 * Copy the current view into OUT[0..n_shards) and return its generation,
 * which increases on every change.  *connected tells whether the session is
 * currently connected.  Non-blocking.
 */
uint64_t pal_coord_snapshot(pal_coord *c, pal_shard_lead *out, bool *connected);

/* Block until the generation differs from GEN, pal_coord_wake() was called
 * or TIMEOUT_MS passes; returns the current generation. */
uint64_t pal_coord_wait(pal_coord *c, uint64_t gen, int timeout_ms);

/* End every pal_coord_wait() in progress now (the view did not change: a
 * caller was told to stop). */
void pal_coord_wake(pal_coord *c);

/* Replace the data of our nodes/<node-id> with INFO (JSON, copied): written
 * when the session is connected, and registered with by a later session.
 * Asynchronous; a newer call before the write replaces an older one. */
void pal_coord_set_info(pal_coord *c, const char *info);

/* The controller found itself fenced in PostgreSQL for SHARD (or gives it up):
 * delete our election znode for it and re-join at the tail.  Asynchronous. */
void pal_coord_resign(pal_coord *c, int shard);

/* Handoff for drain: delete all our election znodes at once and stop joining
 * elections (successors take over immediately).  Blocks until the deletes
 * were acknowledged or TIMEOUT_MS passed; returns 0 when all were deleted. */
int pal_coord_handoff(pal_coord *c, int timeout_ms);

/* Live node ids (children of nodes/), as a NULL-terminated array the caller
 * frees with pal_coord_free_list(). */
char **pal_coord_nodes(pal_coord *c);
void pal_coord_free_list(char **list);

/* Delete our znodes (handoff), close the session, join the thread. */
void pal_coord_close(pal_coord *c);

/* Testing only (tests/integration/coord_probe.c): the next N election
 * creates that succeed are treated as if their reply had been lost to a
 * connection loss, so that the protected-create recovery (find our znode by
 * uuid, never create a second one) runs against a real server.  Asynchronous. */
void pal_coord_debug_drop_create_replies(pal_coord *c, int n);

/*
 * Read-only, for the CLI (src/coord/inspect.c): live nodes of CLUSTER under
 * ROOT as a JSON array [{"id", "version", "schema_range", "info"}] (info: the
 * node's JSON; version and schema_range read from it, "unknown" when it has
 * none, as for a node of v0.1.0), using a
 * short-lived session of its own.  PAL_EZK with a message when ZooKeeper is
 * unreachable within TIMEOUT_MS.  Credentials: $PALISADE_ZK_AUTH_FILE (a
 * file holding user:password), else $PALISADE_ZK_AUTH.
 */
PAL_MUST_CHECK int pal_coord_list_nodes(const char *connect, const char *root, const char *cluster,
					int timeout_ms, json_t **out, char *err, size_t errlen);
/* The full path under which the nodes of CLUSTER under ROOT register with
 * the ZooKeeper of CONNECT, its chroot (the "/..." after the host list)
 * included: what tells two clusters apart that share an ensemble.  Into
 * OUT (truncated to LEN). */
void pal_coord_nodes_path(const char *connect, const char *root, const char *cluster, char *out,
			  size_t len);
/* The same for a check that must not take "never registered" for "none
 * live" (migrate's contract steps): a nodes path that does not exist (no
 * node of CLUSTER under ROOT ever registered with that ZooKeeper, or ROOT
 * and CLUSTER are not the nodes') is PAL_ENOENT, ERR naming the path. */
PAL_MUST_CHECK int pal_coord_list_registered_nodes(const char *connect, const char *root,
						   const char *cluster, int timeout_ms,
						   json_t **out, char *err, size_t errlen);

/*
 * The same through a session that lasts (the console's, src/coord/inspect.c):
 * pal_coord_inspector_open connects (within TIMEOUT_MS, credentials as
 * above; free with pal_coord_inspector_close), pal_coord_inspector_nodes
 * lists the live nodes as pal_coord_list_nodes does.  While the session is
 * not connected it answers PAL_EZK at once (the client reconnects on its
 * own); after an expiry or refused credentials the caller closes it and
 * opens another.  One thread at a time per inspector.
 */
typedef struct pal_coord_inspector pal_coord_inspector;
PAL_MUST_CHECK int pal_coord_inspector_open(const char *connect, int timeout_ms,
					    pal_coord_inspector **out, char *err, size_t errlen);
PAL_MUST_CHECK int pal_coord_inspector_nodes(pal_coord_inspector *in, const char *root,
					     const char *cluster, json_t **out, char *err,
					     size_t errlen);
void pal_coord_inspector_close(pal_coord_inspector *in);

/*
 * The live nodes of CLUSTER whose binary schema (the "schema" of their
 * record) is below MIN_SCHEMA or not advertised, as a JSON array
 * [{"id", "version", "schema"}] (schema an integer, or "unknown") into
 * *OLDER, a new reference the caller frees with json_decref(); an empty
 * array when every live node is at MIN_SCHEMA or above.  Errors as
 * pal_coord_list_nodes(): "no node seen" is never made up for "cannot see".
 * Blocks up to TIMEOUT_MS.  Used where an action is safe only once no
 * older binary runs: migrate's contract steps, apply's newer job keys.
 * ROLE ("controller"): only the nodes that advertise it, or advertise no
 * roles at all; NULL: every node.
 */
PAL_MUST_CHECK int pal_coord_older_nodes(const char *connect, const char *root, const char *cluster,
					 int timeout_ms, int min_schema, const char *role,
					 json_t **older, char *err, size_t errlen);
/* The nodes of NODES (as pal_coord_list_nodes() returns them) that
 * pal_coord_older_nodes() would return: a new reference. */
json_t *pal_coord_older_of(const json_t *nodes, int min_schema, const char *role);

/*
 * Whether every live node of CLUSTER runs a binary of schema MIN_SCHEMA or
 * later, as WHAT needs ("job dep.b sets after"): 0 when so; PAL_EBUSY with
 * MSG naming the older nodes; PAL_EZK with MSG when the live nodes cannot
 * be read (CONNECT NULL included), which refuses as well.  Blocks up to
 * TIMEOUT_MS.  apply's check of the keys older nodes ignore
 * (pal_job_spec_min_schema(), docs/upgrades.md).  ROLE as
 * pal_coord_older_nodes().
 */
PAL_MUST_CHECK int pal_coord_require_schema(const char *connect, const char *root,
					    const char *cluster, int timeout_ms, int min_schema,
					    const char *role, const char *what, char *msg,
					    size_t len);

/* The settings executor nodes must agree on and do not, in NODES (as
 * pal_coord_list_nodes() returns them; each executor publishes digests
 * of them in its info's "config"): an array of messages, one per
 * setting, naming each value and its nodes ("executor.target_hosts
 * differs between executor nodes: default: x1; 3fa2c1d0e9ab: x2, x3");
 * empty when they agree.  A new reference. */
json_t *pal_coord_config_drift(const json_t *nodes);
/* NODES (stolen) into STATUS's "nodes", and its drift, when there is
 * some, into "warnings" (`palisade status`, GET /api/v1/status). */
void pal_coord_status_nodes(json_t *status, json_t *nodes);

/* "id (version, schema S), ..." of the nodes of OLDER (as
 * pal_coord_older_nodes() returns them) into BUF; returns BUF. */
const char *pal_coord_describe_nodes(const json_t *older, char *buf, size_t len);

#endif
