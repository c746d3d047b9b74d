/*
 * console.h - the cluster console: every node serves the same view of the
 * whole cluster in the browser, read from PostgreSQL (consolestore.h),
 * ZooKeeper (live nodes) and the other nodes' /status, plus this node's own
 * memory (docs/observability.md, "Console").
 *
 *   GET /console              the cluster page (HTML, no script)
 *   GET /console/job?id=JOB   one job: versions, recent triggers, attempts
 *   GET /api/cluster          the same data as JSON (?section=NAME: one key)
 *   GET /api/job?id=JOB       the job page's data as JSON
 *
 * The admin endpoint (admin.c) routes these paths here; this module knows
 * nothing of HTTP servers.  A pal_console owns one PostgreSQL connection,
 * opened lazily by the first request in the thread that serves it and never
 * shared with the node's other roles; requests are served one at a time (a
 * mutex), each bounded by the configured timeout: an unreachable database
 * or ZooKeeper makes the page say so, not hang.
 */
#ifndef PALISADE_CONSOLE_H
#define PALISADE_CONSOLE_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>
#include "palisade/err.h"

typedef struct pal_console_config {
	const char *conninfo;	/* the node's PostgreSQL conninfo */
	const char *zk_connect; /* ZooKeeper hosts; NULL: no live-node list */
	const char *zk_root;	/* "/palisade" */
	const char *cluster;	/* cluster name */
	const char *node_id;	/* this node (its row comes from its own status) */
	const char *peer_token; /* bearer token sent to peers' /status; NULL: none */
	int timeout_ms;		/* per database statement and ZooKeeper wait; 0: 2000 */
} pal_console_config;

typedef struct pal_console pal_console;

/* Copies CFG; connects nothing yet.  Free with pal_console_close(). */
PAL_MUST_CHECK int pal_console_open(const pal_console_config *cfg, pal_console **out, char *err,
				    size_t errlen);
void pal_console_close(pal_console *c);

/* An answer: STATUS, CONTENT_TYPE (static) and BODY (LEN bytes, malloc()ed,
 * the caller frees it with free()). */
typedef struct pal_console_reply {
	unsigned status;
	const char *content_type;
	char *body;
	size_t len;
} pal_console_reply;

/*
 * Serve PATH (one of the paths above) with its query arguments ID and
 * SECTION (decoded; NULL when absent).  NODE_STATUS is this node's status
 * object (borrowed, may be NULL).  Blocks for at most a few timeouts.
 * Returns false (OUT untouched) when PATH is not the console's.
 */
bool pal_console_serve(pal_console *c, const char *path, const char *id, const char *section,
		       const json_t *node_status, pal_console_reply *out);

#endif
