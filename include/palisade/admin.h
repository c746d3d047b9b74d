/*
 * admin.h - the node's admin HTTP endpoint (libmicrohttpd, its own thread).
 *
 *   GET  /metrics   Prometheus text (pal_metrics_render)
 *   GET  /healthz   200 "ok" while the process serves
 *   GET  /readyz    200 when status()["ready"] is true, else 503
 *   GET  /status    status() as JSON
 *   GET  /          an HTML status page rendered from status()
 *   POST /drain     calls action("drain"); 202 when accepted
 *
 * Loopback by default; it is an operator interface with no authentication.
 */
#ifndef PALISADE_ADMIN_H
#define PALISADE_ADMIN_H

#include <jansson.h>
#include "palisade/err.h"
#include "palisade/metrics.h"

/* Returns a new JSON object reference describing the node (the caller of
 * this callback json_decref()s it).  Called from the admin thread. */
typedef json_t *(*pal_admin_status_fn)(void *arg);
/* Performs an operator action ("drain"); returns 0 when accepted. */
typedef int (*pal_admin_action_fn)(void *arg, const char *action);

typedef struct pal_admin pal_admin;

/* Listen on ADDR ("127.0.0.1:9464", "[::1]:9464", port 0 = any free port).
 * Free with pal_admin_stop(). */
PAL_MUST_CHECK int pal_admin_start(const char *addr, pal_metrics *m, pal_admin_status_fn status,
				   pal_admin_action_fn action, void *arg, pal_admin **out,
				   char *err, size_t errlen);
/* The port actually bound (useful with port 0). */
int pal_admin_port(const pal_admin *a);
void pal_admin_stop(pal_admin *a);

#endif
