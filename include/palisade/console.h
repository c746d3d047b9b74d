/*
 * console.h - the cluster console: every node serves the same view of the
 * whole cluster in the browser, read from PostgreSQL (consolestore.h),
 * ZooKeeper (live nodes) and the other nodes' /status, plus this node's own
 * memory (docs/observability.md, "Console").
 *
 *   GET /console              the cluster page (HTML, no script); its jobs
 *                             table searched with ?q=TEXT, paged with ?after=ID
 *   GET /console/job?id=JOB   one job: versions, recent triggers, attempts
 *   GET /api/cluster          the same data as JSON (?section=NAME: one key)
 *   GET /api/job?id=JOB       the job page's data as JSON
 *   GET/POST /console/login, POST /console/logout, POST /console/act
 *                             a login by API token and the pages' actions,
 *                             each one request of the HTTP API (api.h)
 *
 * Logged in with an operator or admin token, the pages carry forms (pause,
 * resume, run now, cancel, resolve, release) for what the token may do; a
 * viewer's pages and those of a visitor who is not logged in carry none.
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
	/* Peers' /status is asked without credentials (the console never sends
	 * a token to an address read from ZooKeeper); with peer_cacert, over
	 * https:// verified against that PEM file, else over http://. */
	const char *peer_cacert;
	int timeout_ms;		/* per database statement and ZooKeeper wait; 0: 2000 */
	struct pal_metrics *metrics; /* the node's registry (the charts' samples); NULL: none */
} pal_console_config;

typedef struct pal_console pal_console;

/* Copies CFG; connects nothing yet.  Free with pal_console_close(). */
PAL_MUST_CHECK int pal_console_open(const pal_console_config *cfg, pal_console **out, char *err,
				    size_t errlen);
void pal_console_close(pal_console *c);

typedef struct pal_api pal_api;

/* A request as the admin endpoint saw it. */
typedef struct pal_console_request {
	const char *method;	 /* "GET", "HEAD" or "POST" */
	const char *path;	 /* one of the paths above */
	const char *id, *section; /* query arguments (decoded); NULL when absent */
	const char *q, *after;	  /* the jobs table's search and page (/console, /api/cluster) */
	const char *session;	 /* the session cookie's value; NULL when none */
	const char *form;	 /* a POST's body (form_len bytes, urlencoded) */
	size_t form_len;
	const char *client; /* "addr:port", for the log */
	bool tls;	    /* served over https: the cookie gets Secure */
	bool plain_login_ok; /* a login over plain http is allowed (a loopback listener) */
	const json_t *node_status; /* this node's status (borrowed, may be NULL) */
	pal_api *api;		   /* what the actions go through; NULL: none */
} pal_console_request;

/* An answer: STATUS, CONTENT_TYPE (static) and BODY (LEN bytes, malloc()ed,
 * the caller frees it with free()); LOCATION, SET_COOKIE and ALLOW are
 * headers to add when not empty. */
typedef struct pal_console_reply {
	unsigned status;
	const char *content_type;
	char *body;
	size_t len;
	char location[512];
	char set_cookie[192];
	char allow[16];
} pal_console_reply;

/* The cookie that carries a console session. */
#define PAL_CONSOLE_COOKIE "palisade_session"

/*
 * Serve REQ (one of the paths above) into OUT.  Blocks for at most a few
 * timeouts.  Returns false (OUT untouched) when the path is not the
 * console's.
 */
bool pal_console_serve(pal_console *c, const pal_console_request *req, pal_console_reply *out);

#endif
