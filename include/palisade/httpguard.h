/*
 * httpguard.h - connection accounting and request-head limits for the
 * libmicrohttpd listeners (the node's admin endpoint, the sink's two
 * listeners).  docs/operations.md, "Listener limits", says what a client
 * sees.
 *
 * libmicrohttpd's own timeout is an idle timeout (any byte resets it) and
 * its limits refuse new connections, so a client that trickles a header
 * line a second, or one address holding every slot, starves a listener.
 * The guard adds, on top of the daemon:
 *   - a head deadline: a new connection must complete its request head
 *     within head_timeout_ms of being accepted; a kept-alive connection must
 *     send its next request line within idle_timeout_ms of the previous
 *     answer and complete that head within head_timeout_ms of the request
 *     line.  Past it the connection is shut down, however slowly it was
 *     still sending.  The body that follows must be complete within
 *     body_timeout_ms of the head; the answer has no deadline of its own;
 *   - a total and a per-client-address limit enforced by eviction: a new
 *     connection beyond a limit shuts down the oldest connection of the same
 *     scope (the listener, or the address) that is waiting for a request
 *     head; only when none is waiting is the new connection itself refused.
 *     A connection whose request is under way is never evicted.  A probe
 *     sends its head at once, so waiting connections (idle or trickling)
 *     make room for it, and nothing needs exempting by address or path;
 *   - head checks that refuse request smuggling shapes (RFC 9112 6.3):
 *     Content-Length given more than once, or with Transfer-Encoding.
 *
 * Wiring: pass pal_httpguard_notify() as MHD_OPTION_NOTIFY_CONNECTION (with
 * the guard as its argument) and pal_httpguard_mhd_limit() as
 * MHD_OPTION_CONNECTION_LIMIT; call pal_httpguard_request_line() from the
 * URI log callback, pal_httpguard_head() on the first access-handler call of
 * each request, pal_httpguard_body_done() on its last (the body complete)
 * and pal_httpguard_request_done() from the completion callback.  All are
 * thread-safe (one mutex).  A sweeper thread of the guard's own enforces the
 * deadlines every GUARD_TICK_MS.
 *
 * Ownership: pal_httpguard_new() allocates the guard and starts its thread;
 * pal_httpguard_free() stops the thread and frees it, after
 * MHD_stop_daemon() of the daemon that uses it.
 */
#ifndef PALISADE_HTTPGUARD_H
#define PALISADE_HTTPGUARD_H

#include <stdint.h>
#include <microhttpd.h>
#include "palisade/err.h"
#include "palisade/metrics.h"

typedef struct pal_httpguard_limits {
	unsigned max_conns;	  /* connections at once, all addresses (>= 1) */
	unsigned max_per_addr;	  /* connections at once from one client address (>= 1) */
	unsigned head_timeout_ms; /* a complete request head within this (>= 1) */
	unsigned body_timeout_ms; /* the body within this of the head (>= 1) */
	unsigned idle_timeout_ms; /* kept-alive: next request line within this (>= 1) */
} pal_httpguard_limits;

/* What the guard did since it started (monotonic counters). */
typedef struct pal_httpguard_stats {
	uint64_t head_timeouts; /* connections shut down at their head deadline */
	uint64_t body_timeouts; /* connections shut down at their body deadline */
	uint64_t evicted;	/* waiting connections shut down to admit a new one */
	uint64_t refused;	/* new connections shut down: over a limit, nothing to evict */
	uint64_t smuggling;	/* requests refused by pal_httpguard_head() */
	unsigned open;		/* connections open now (not yet shut down) */
} pal_httpguard_stats;

typedef struct pal_httpguard pal_httpguard;

/* A guard for LIMITS; NAME ("admin", "sink", ...) labels its log lines and
 * its metrics and is copied.  M (borrowed, may be NULL) receives
 * palisade_http_connections{listener} and
 * palisade_http_connections_closed_total{listener,reason}.  PAL_EINVAL for
 * a zero limit, PAL_ENOMEM / PAL_EIO (thread). */
PAL_MUST_CHECK int pal_httpguard_new(const pal_httpguard_limits *limits, const char *name,
				     pal_metrics *m, pal_httpguard **out);
void pal_httpguard_free(pal_httpguard *g);

/* The value for MHD_OPTION_CONNECTION_LIMIT of a daemon with THREADS
 * polling threads (1 without a pool): max_conns plus room for the
 * connections being shut down, so the daemon keeps accepting (and the guard
 * keeps evicting) while they close, for each thread.  libmicrohttpd divides
 * the limit among a pool's threads, and a thread at its share stops
 * accepting: with the others busy (a page waiting on the database), one
 * thread must be able to take the listener's whole limit, or connections
 * wait in the kernel's backlog where the guard cannot make room. */
unsigned pal_httpguard_mhd_limit(const pal_httpguard *g, unsigned threads);

/* MHD_OPTION_NOTIFY_CONNECTION callback; CLS is the guard. */
void pal_httpguard_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
			  enum MHD_ConnectionNotificationCode code);

/* The request line of a request on CONN arrived (URI log callback). */
void pal_httpguard_request_line(pal_httpguard *g, struct MHD_Connection *conn);

/* The head of a request on CONN is complete.  Returns NULL when it may go
 * on, or why it must be refused (a static string): answer 400 with
 * "Connection: close" (pal_httpguard_close_after()) and read no body. */
const char *pal_httpguard_head(pal_httpguard *g, struct MHD_Connection *conn);

/* The body of the request on CONN is complete (the access handler's call
 * with no upload data after the first): the route may answer at leisure. */
void pal_httpguard_body_done(pal_httpguard *g, struct MHD_Connection *conn);

/* The request on CONN ended, answered or not (completion callback). */
void pal_httpguard_request_done(pal_httpguard *g, struct MHD_Connection *conn);

/* Mark response R so that the connection closes once it is sent. */
void pal_httpguard_close_after(struct MHD_Response *r);

void pal_httpguard_get_stats(pal_httpguard *g, pal_httpguard_stats *out);

#endif
