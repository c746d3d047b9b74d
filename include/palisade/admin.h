/*
 * admin.h - the node's admin HTTP endpoint (libmicrohttpd, its own thread).
 *
 *   GET  /metrics   Prometheus text (pal_metrics_render)
 *   GET  /healthz   200 "ok" while healthy() says so (every worker thread
 *                   beats), else 503 naming what is stuck
 *   GET  /readyz    200 while ready() says so (database and ZooKeeper
 *                   reachable, not draining), else 503 with the reason
 *   GET  /status    status() as JSON
 *   GET  /          an HTML status page rendered from status()
 *   POST /drain     calls action("drain", client); 202 when accepted
 *   GET  /console, /console/job, /api/cluster, /api/job   the cluster console
 *                   (console.h), when cfg.console is set
 *   *    /api/v1/...  the HTTP API (api.h), when cfg.api is set: after the
 *                   Host and Origin checks, its own tokens and roles
 *
 * Security (docs/operations.md): loopback by default.  Every request must
 * name an allowed Host (421 otherwise) and, when it sends Origin or
 * Sec-Fetch-Site, come from that same origin (403): a page of another site
 * in a local browser, or a DNS name rebound to 127.0.0.1, is refused.
 * Writes need "Authorization: Bearer TOKEN" (compared in constant time;
 * 401 without it, 403 when no token is configured) and refuse form content
 * types (415), so no "simple" cross-site request can act.  Reads need the
 * token too when protect_reads is set.
 */
#ifndef PALISADE_ADMIN_H
#define PALISADE_ADMIN_H

#include <stdbool.h>
#include <jansson.h>
#include "palisade/err.h"
#include "palisade/metrics.h"

/* Returns a new JSON object reference describing the node (the caller of
 * this callback json_decref()s it).  Called from the admin thread. */
typedef json_t *(*pal_admin_status_fn)(void *arg);
/* Performs an operator action ("drain") asked by CLIENT ("addr:port");
 * returns 0 when accepted. */
typedef int (*pal_admin_action_fn)(void *arg, const char *action, const char *client);
/* true when fine; otherwise false with WHY filled.  Must not block. */
typedef bool (*pal_admin_check_fn)(void *arg, char *why, size_t whylen);

typedef struct pal_admin_config {
	const char *listen;	    /* "127.0.0.1:9464", "[::1]:9464", port 0 = any free */
	pal_metrics *metrics;	    /* NULL: empty /metrics */
	pal_admin_status_fn status; /* NULL: no status */
	pal_admin_action_fn action; /* NULL: no actions (501) */
	pal_admin_check_fn healthy; /* NULL: healthy while serving */
	pal_admin_check_fn ready;   /* NULL: status()["ready"] */
	void *arg;
	struct pal_console *console; /* /console, /api/cluster, /api/job (console.h); NULL: 404 */
	struct pal_api *api;	     /* /api/v1 (api.h); NULL: 404 */
	const char *token;  /* bearer token of writes; NULL or "": writes refused */
	bool protect_reads; /* reads need the token too */
	const char *tls_cert; /* PEM files: both set, HTTPS only; NULL or "": HTTP */
	const char *tls_key;
	const char *host;   /* allowed Host, "name" or "name:port"; NULL or "": the
			     * listen address, plus localhost names on loopback */
	/* listener limits (httpguard.h); 0: the PAL_ADMIN_* defaults */
	unsigned max_conns;	  /* connections at once */
	unsigned max_per_addr;	  /* connections at once from one client address */
	unsigned head_timeout_ms; /* a complete request head within this */
	unsigned body_timeout_ms; /* its body within this of the head */
} pal_admin_config;

#define PAL_ADMIN_MAX_CONNS 256
#define PAL_ADMIN_MAX_PER_ADDR 32
#define PAL_ADMIN_HEAD_TIMEOUT_MS 5000
#define PAL_ADMIN_BODY_TIMEOUT_MS 30000

typedef struct pal_admin pal_admin;

/* Start serving CFG (its strings are copied; metrics and arg are borrowed
 * and must outlive the endpoint).  Free with pal_admin_stop(). */
PAL_MUST_CHECK int pal_admin_start(const pal_admin_config *cfg, pal_admin **out, char *err,
				   size_t errlen);
/* The port actually bound (useful with port 0). */
int pal_admin_port(const pal_admin *a);
void pal_admin_stop(pal_admin *a);

#endif
