/*
 * coord_int.h - internals of the ZooKeeper coordination module (coord.h),
 * shared by its three files and by the self-test of
 * tests/integration/coord_probe.c:
 *
 *   coord.c     public API, the coordination thread's loop, publication of
 *               the per-shard view, balance
 *   session.c   the ZooKeeper handle: watchers, session start and restart,
 *               node registration, the cached nodes/ listing
 *   election.c  one shard's election: protected create, ranking of the
 *               children, predecessor watch, delete for handoff
 *
 * Threading model (the whole module):
 *   - the caller's threads use the public API: they read the published view
 *     and post requests, both under pal_coord.mu, and never call zoo_*;
 *   - the ZooKeeper client's completion thread runs our watcher callbacks:
 *     they record events under mu (and, for a disconnect, clear the
 *     published leadership at once) and signal pal_coord.wake; they never
 *     call a synchronous zoo_* function;
 *   - the coordination thread (one per pal_coord) makes every synchronous
 *     zoo_* call and owns every field marked "thread" below without locking.
 *     It never holds mu across a zoo_* call: the completion thread that
 *     would answer the call may be waiting for mu inside a watcher.
 */
#ifndef PALISADE_COORD_INT_H
#define PALISADE_COORD_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <zookeeper.h>
#include "palisade/clock.h"
#include "palisade/coord.h"
#include "palisade/metrics.h"

#define PAL_COORD_UUID_HEX 32 /* 128-bit node uuid, lower-case hex */
#define PAL_COORD_PATH_MAX 512
#define PAL_COORD_MAX_SHARDS 9999 /* shard directories are %04d */

/* Result of one step of work against ZooKeeper (election.c, session.c). */
typedef enum {
	COORD_DONE,  /* finished; nothing left to do until the next event */
	COORD_CONN,  /* connection or session problem: retry after reconnect */
	COORD_LATER, /* other failure, logged: retry after a back-off */
} coord_step;

/* Why an election znode was deleted and re-created (metrics label). */
typedef enum { HANDOFF_NONE, HANDOFF_BALANCE, HANDOFF_RESIGN, HANDOFF_DRAIN } coord_handoff_reason;

/* Watcher context of one ZooKeeper handle; lives from zookeeper_init() until
 * after zookeeper_close() (thread). SERIAL tells events of a closed session
 * from those of the current one. */
typedef struct coord_handle_ctx {
	struct pal_coord *c;
	uint64_t serial;
} coord_handle_ctx;

/* One shard's election as the coordination thread sees it. */
typedef struct coord_shard {
	struct pal_coord *c; /* watcher context back-pointer (immutable) */
	int idx;	     /* shard number (immutable) */
	/* thread: */
	char *node;		     /* basename of our election znode, NULL when none; owned */
	int64_t czxid;		     /* its czxid = our epoch for this shard */
	char *watched;		     /* predecessor we set a watch on, or NULL; owned */
	bool want;		     /* we should be in this election */
	bool uncertain;		     /* a create/delete outcome is unknown: look up by uuid */
	bool leading;		     /* lowest at the last evaluation */
	bool verified;		     /* that evaluation happened in the current connection */
	bool counted_lost;	     /* "lost" already counted for the current znode */
	bool dirty;		     /* needs reconcile() */
	coord_handoff_reason rejoin; /* delete and re-create at the tail */
	char *checked_pred;	     /* predecessor found to be a palisade candidate; owned */
	char **foreign;		     /* election children found foreign (reported once); owned */
	int n_foreign;
} coord_shard;

struct pal_coord {
	/* Immutable after pal_coord_open(); owned copies of the config.
	 * node_info, the data of nodes/<node-id>: thread only once the thread
	 * runs, replaced by info_next (pal_coord_set_info()). */
	char *connect, *node_id, *node_info;
	char *auth;			 /* digest "user:password", NULL = none */
	const struct ACL_vector *acl;	 /* for znodes from base down */
	const struct ACL_vector *up_acl; /* for components of ROOT above base */
	char *base;	  /* ROOT/CLUSTER */
	char *nodes_path; /* base/nodes */
	char *self_path;  /* base/nodes/<node-id> */
	int session_timeout_ms, n_shards;
	bool controller, balance;
	pal_metrics *m; /* borrowed, may be NULL */
	pthread_t thread;

	pthread_mutex_t mu;
	pthread_cond_t wake;	/* wakes the coordination thread */
	pthread_cond_t changed; /* wakes API callers: generation, open, handoff */

	/* Under mu: the published view. */
	pal_shard_lead *pub;
	uint64_t gen;
	uint64_t kicks; /* pal_coord_wake() calls: end the waits */
	bool pub_connected;
	char **nodes_cache; /* NULL-terminated, owned */

	/* Under mu: events recorded by watchers. */
	uint64_t serial;       /* of the current handle */
	bool zk_connected;     /* raw session state from the session watcher */
	uint64_t conn_changes; /* number of session state changes seen */
	bool ev_connected, ev_disconnected, ev_expired, ev_nodes;
	bool *ev_watch; /* per shard: a predecessor watch fired */

	/* Under mu: requests from API callers. */
	bool *req_resign;
	bool req_handoff, handoff_done, stop;
	char *info_next; /* new data for nodes/<node-id>, NULL = none; owned */
	int drop_create_replies; /* test hook */
	bool open_done;
	int open_rc;
	char open_err[256];

	/* Thread only. */
	zhandle_t *zh;
	coord_handle_ctx *hctx;
	int64_t session_id;
	char uuid[PAL_COORD_UUID_HEX + 1];
	char *ident;	   /* our digest id "user:hash" as the server stores it; NULL without auth */
	bool tree_secured; /* the ACL pass over base ran (first session) */
	coord_shard *sh;
	bool draining;	/* handoff done or requested: never join again */
	/* drills only (PALISADE_FAULT_SLOW_DRAIN_MS): each candidacy a drain
	 * withdraws takes this much longer */
	int fault_drain_ms;
	bool suspended; /* a disconnect was seen and not yet resumed */
	bool nodes_dirty;
	bool info_dirty; /* node_info not yet written to nodes/<node-id> */
	int live_controllers; /* from nodes/ */
	int drop_creates;     /* test hook, copied from drop_create_replies */
	uint64_t round_seq;   /* conn_changes when the current round began */
	int64_t retry_at_ms;  /* 0 = none */
	int64_t balance_at_ms;
};

/* ---- election.c: pure helpers (no ZooKeeper; unit-tested by coord_probe) */

/* Sequence number of a protected election znode name "_c_<32 hex>-n_<digits>";
 * -1 when NAME does not have that form. */
int64_t pal_coord__parse_seq(const char *name);

/* True when NAME is a protected election znode created with UUID. */
bool pal_coord__name_has_uuid(const char *name, const char *uuid);

/*
 * Rank the children NAMES[0..N) of an election for UUID.  Names not of the
 * protected form are ignored.  On return *OWN is our lowest znode (NULL when
 * we have none), *PRED the znode immediately before it in sequence order
 * (NULL when *OWN is lowest or absent), *N_DUPS the number of further znodes
 * carrying our uuid (a duplicate can only come from a create whose reply was
 * lost and that was retried anyway; the caller deletes them), *N_VALID the
 * number of protected names.  Returned pointers point into NAMES.
 * Returns 0, or PAL_ENOENT when we have no znode.
 */
int pal_coord__rank(char *const *names, int n, const char *uuid, const char **own,
		    const char **pred, int *n_dups, int *n_valid);

/* Sort NAMES[0..N) in place into queue order: protected names by sequence
 * first (the leader at [0]), foreign names after them.  Returns the number
 * of protected names. */
int pal_coord__sort_queue(char **names, int n);

/* ---- election.c: per-shard work (coordination thread) ------------------ */

/* Bring shard S to the state its flags ask for: resolve an uncertain
 * outcome by uuid, delete for handoff, create at the tail, evaluate and
 * watch the predecessor.  Updates s->leading. */
coord_step pal_coord__reconcile(pal_coord *c, coord_shard *s);
/* NAME was found foreign in shard S's election. */
bool pal_coord__is_foreign(const coord_shard *s, const char *name);
/* Path of shard IDX's election znode directory into BUF. */
void pal_coord__election_path(const pal_coord *c, int idx, char *buf, size_t len);

/* ---- session.c (coordination thread unless noted) ------------------------ */

/* Open a new session (new uuid), wait until connected (up to WAIT_MS, or
 * forever when WAIT_MS < 0, or until stop), create the parents and register
 * nodes/<node-id>.  FIRST: a node id held by another session fails with
 * PAL_EBUSY at once; otherwise it is retried (the ephemeral of our expired
 * session may linger for a moment).  Returns 0 or a PAL_E* code with ERR. */
int pal_coord__session_open(pal_coord *c, bool first, int wait_ms, char *err, size_t errlen);
/* Close the handle (if any); ends all its watcher callbacks. */
void pal_coord__session_close(pal_coord *c);
/* Re-read nodes/ with a watch; update the cache and live_controllers. */
coord_step pal_coord__refresh_nodes(pal_coord *c);
/* Create every missing component of PATH as a persistent znode (components
 * above base with up_acl, base and below with acl). */
int pal_coord__ensure_path(pal_coord *c, const char *path);
/* Does ACL (of a znode from base down) say "only us"?  True without auth. */
bool pal_coord__acl_is_ours(const pal_coord *c, const struct ACL_vector *acl);
/* Classify a ZooKeeper return code of a synchronous call. */
coord_step pal_coord__classify(int zrc);
/* The predecessor watcher (context: coord_shard *). */
void pal_coord__shard_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx);

/* ---- coord.c (coordination thread) --------------------------------------- */

/* Publish the thread's view (leading && connected-and-current); bumps the
 * generation when anything changed. */
void pal_coord__publish(pal_coord *c);
/* CLOCK_MONOTONIC in milliseconds. */
/* Metric helpers: no-ops when c->m is NULL. */
void pal_coord__count(pal_coord *c, const char *name, const char *labels);

#endif
