/*
 * httpguard.c - head deadline, total and per-address connection limits and
 * smuggling checks for the libmicrohttpd listeners (httpguard.h says what
 * and how to wire it).
 *
 * Each connection the daemon accepts gets a record (its socket context):
 * its descriptor, client address, and the deadline by which it must have
 * completed a request head, or none while a request is under way.  The
 * records form one list under one mutex; the lists are at most the daemon's
 * connection limit long, so the scans below (count an address, find the
 * oldest waiting connection, sweep the deadlines) are linear on purpose.
 *
 * Shutting a connection down is shutdown(2) on its descriptor: the daemon's
 * thread (or the connection's own, thread-per-connection) sees the end of
 * the stream and closes it, then calls the CLOSED notification, which drops
 * the record.  libmicrohttpd calls that notification before it closes the
 * descriptor, and both run under the guard's mutex, so a shutdown never
 * reaches a descriptor that was closed and reused.
 *
 * Threading: the notifications and request hooks run in the daemon's
 * threads; the sweeper is the guard's own thread, waking every
 * GUARD_TICK_MS.  None of them blocks beyond the mutex.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include "palisade/clock.h"
#include "palisade/httpguard.h"
#include "palisade/log.h"

#define GUARD_TICK_MS 100
#define GUARD_SLACK 64 /* daemon slots beyond max_conns for connections being shut down */

typedef struct gconn {
	struct gconn *prev, *next;
	int fd;
	char addr[INET6_ADDRSTRLEN];
	int64_t deadline; /* monotonic ms by which the head (or body) is due; 0: being answered */
	bool in_request;  /* past its head: never evicted */
	uint64_t waiting_since; /* when it started waiting for a head (g->clock): eviction order */
	unsigned requests;	/* heads completed on this connection */
	bool down;		/* shut down by the guard, waiting for the daemon to close it */
} gconn;

struct pal_httpguard {
	pal_httpguard_limits lim;
	char name[32];
	pal_metrics *m;	      /* borrowed, may be NULL */
	char open_labels[64]; /* listener="NAME" */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stopping;
	pthread_t sweeper;
	gconn *head;	/* every connection the daemon holds, newest first */
	uint64_t clock; /* orders the waits: milliseconds would tie within a burst */
	pal_httpguard_stats stats;
};

/* The client address of CONN as text (IPv4-mapped IPv6 as IPv4), "" when
 * unknown. */
static void conn_addr(struct MHD_Connection *conn, char *buf, size_t len)
{
	buf[0] = '\0';
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (ci == NULL || ci->client_addr == NULL)
		return;
	const struct sockaddr *sa = ci->client_addr;
	if (sa->sa_family == AF_INET) {
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, buf, len);
	} else if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a6 = &((const struct sockaddr_in6 *)sa)->sin6_addr;
		if (IN6_IS_ADDR_V4MAPPED(a6))
			inet_ntop(AF_INET, &a6->s6_addr[12], buf, len);
		else
			inet_ntop(AF_INET6, a6, buf, len);
	}
}

static gconn *record_of(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci ? ci->socket_context : NULL;
}

#define M_OPEN "palisade_http_connections"
#define M_CLOSED "palisade_http_connections_closed_total"

static const char *const closed_reasons[] = {"head_timeout", "body_timeout", "evicted", "refused",
					     "ambiguous_length"};

/* N more connections closed by the guard for REASON. */
static void count_closed_n(pal_httpguard *g, const char *reason, double n)
{
	char labels[96];
	snprintf(labels, sizeof labels, "%s,reason=\"%s\"", g->open_labels, reason);
	pal_metric_inc(g->m, M_CLOSED, labels, n);
}

static void count_closed(pal_httpguard *g, const char *reason)
{
	count_closed_n(g, reason, 1);
}

/* Shut C down (the daemon closes it) for REASON.  Caller holds the mutex. */
static void shut(pal_httpguard *g, gconn *c, const char *reason)
{
	shutdown(c->fd, SHUT_RDWR);
	c->down = true;
	g->stats.open--;
	pal_metric_set(g->m, M_OPEN, g->open_labels, g->stats.open);
	count_closed(g, reason);
}

/* The connection waiting longest for a head, from ADDR (or any when NULL),
 * other than SELF; NULL when none waits.  Caller holds the mutex. */
static gconn *oldest_waiting(pal_httpguard *g, const char *addr, const gconn *self)
{
	gconn *best = NULL;
	for (gconn *c = g->head; c; c = c->next) {
		if (c == self || c->down || c->in_request)
			continue;
		if (addr != NULL && strcmp(c->addr, addr) != 0)
			continue;
		if (best == NULL || c->waiting_since < best->waiting_since)
			best = c;
	}
	return best;
}

/* Make room for NEW under one limit: LIVE connections in the scope of ADDR
 * (NULL: the listener's) against MAX.  Returns false when NEW itself was
 * refused.  Caller holds the mutex. */
static bool make_room(pal_httpguard *g, gconn *new, const char *addr, unsigned live, unsigned max)
{
	if (live <= max)
		return true;
	gconn *victim = oldest_waiting(g, addr, new);
	if (victim == NULL) {
		shut(g, new, "refused");
		g->stats.refused++;
		return false;
	}
	shut(g, victim, "evicted");
	g->stats.evicted++;
	return true;
}

static void on_started(pal_httpguard *g, struct MHD_Connection *conn, void **ctx)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	gconn *c = calloc(1, sizeof *c);
	if (c == NULL || ci == NULL) {
		/* no record: the connection cannot be accounted for, so refuse it */
		if (ci != NULL)
			shutdown(ci->connect_fd, SHUT_RDWR);
		free(c);
		return;
	}
	c->fd = ci->connect_fd;
	conn_addr(conn, c->addr, sizeof c->addr);
	int64_t now = pal_mono_ms();
	c->deadline = now + g->lim.head_timeout_ms;

	pthread_mutex_lock(&g->mu);
	c->waiting_since = ++g->clock;
	c->next = g->head;
	if (g->head)
		g->head->prev = c;
	g->head = c;
	g->stats.open++;
	pal_metric_set(g->m, M_OPEN, g->open_labels, g->stats.open);
	unsigned same = 0;
	for (gconn *o = g->head; o; o = o->next)
		same += !o->down && strcmp(o->addr, c->addr) == 0;
	if (make_room(g, c, c->addr, same, g->lim.max_per_addr))
		make_room(g, c, NULL, g->stats.open, g->lim.max_conns);
	pthread_mutex_unlock(&g->mu);
	*ctx = c;
}

static void on_closed(pal_httpguard *g, void **ctx)
{
	gconn *c = *ctx;
	if (c == NULL)
		return;
	pthread_mutex_lock(&g->mu);
	if (c->prev)
		c->prev->next = c->next;
	else
		g->head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	if (!c->down) {
		g->stats.open--;
		pal_metric_set(g->m, M_OPEN, g->open_labels, g->stats.open);
	}
	pthread_mutex_unlock(&g->mu);
	free(c);
	*ctx = NULL;
}

void pal_httpguard_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	pal_httpguard *g = cls;
	if (code == MHD_CONNECTION_NOTIFY_STARTED)
		on_started(g, conn, socket_context);
	else if (code == MHD_CONNECTION_NOTIFY_CLOSED)
		on_closed(g, socket_context);
}

void pal_httpguard_request_line(pal_httpguard *g, struct MHD_Connection *conn)
{
	gconn *c = record_of(conn);
	if (c == NULL)
		return;
	pthread_mutex_lock(&g->mu);
	/* a new connection's first head is due head_timeout_ms after the
	 * accept, however slowly the request line came; a kept-alive one's
	 * from its request line, which had idle_timeout_ms to arrive */
	if (c->requests > 0 && !c->in_request)
		c->deadline = pal_mono_ms() + g->lim.head_timeout_ms;
	pthread_mutex_unlock(&g->mu);
}

/* Header counting for the smuggling checks. */
typedef struct framing {
	unsigned content_length, transfer_encoding;
} framing;

static enum MHD_Result count_framing(void *cls, enum MHD_ValueKind kind, const char *key,
				     const char *value)
{
	framing *f = cls;
	if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0)
		f->content_length++;
	else if (strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0)
		f->transfer_encoding++;
	return MHD_YES;
}

const char *pal_httpguard_head(pal_httpguard *g, struct MHD_Connection *conn)
{
	gconn *c = record_of(conn);
	if (c != NULL) {
		pthread_mutex_lock(&g->mu);
		c->deadline = pal_mono_ms() + g->lim.body_timeout_ms;
		c->in_request = true;
		c->requests++;
		pthread_mutex_unlock(&g->mu);
	}
	framing f = {0, 0};
	MHD_get_connection_values(conn, MHD_HEADER_KIND, count_framing, &f);
	const char *why = NULL;
	if (f.content_length > 1)
		why = "Content-Length is given more than once (RFC 9112 6.3: the body's length "
		      "would be ambiguous)";
	else if (f.content_length > 0 && f.transfer_encoding > 0)
		why = "Content-Length together with Transfer-Encoding (RFC 9112 6.1: the body's "
		      "length would be ambiguous)";
	else {
		/* one header whose value is a list ("5, 5") is a duplicate too */
		const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
							     MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (cl != NULL && strchr(cl, ',') != NULL)
			why = "Content-Length is a list (RFC 9112 6.3)";
	}
	if (why != NULL) {
		pthread_mutex_lock(&g->mu);
		g->stats.smuggling++;
		count_closed(g, "ambiguous_length");
		pthread_mutex_unlock(&g->mu);
	}
	return why;
}

void pal_httpguard_body_done(pal_httpguard *g, struct MHD_Connection *conn)
{
	gconn *c = record_of(conn);
	if (c == NULL)
		return;
	pthread_mutex_lock(&g->mu);
	c->deadline = 0; /* the answer may take as long as the route needs */
	pthread_mutex_unlock(&g->mu);
}

void pal_httpguard_request_done(pal_httpguard *g, struct MHD_Connection *conn)
{
	gconn *c = record_of(conn);
	if (c == NULL)
		return;
	pthread_mutex_lock(&g->mu);
	int64_t now = pal_mono_ms();
	c->deadline = now + g->lim.idle_timeout_ms;
	c->in_request = false;
	c->waiting_since = ++g->clock;
	pthread_mutex_unlock(&g->mu);
}

void pal_httpguard_close_after(struct MHD_Response *r)
{
	if (r != NULL)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
}

unsigned pal_httpguard_mhd_limit(const pal_httpguard *g, unsigned threads)
{
	return (g->lim.max_conns + GUARD_SLACK) * (threads ? threads : 1);
}

void pal_httpguard_get_stats(pal_httpguard *g, pal_httpguard_stats *out)
{
	pthread_mutex_lock(&g->mu);
	*out = g->stats;
	pthread_mutex_unlock(&g->mu);
}

static void *sweep(void *arg)
{
	pal_httpguard *g = arg;
	pthread_mutex_lock(&g->mu);
	while (!g->stopping) {
		struct timespec ts = pal_mono_deadline(GUARD_TICK_MS);
		pthread_cond_timedwait(&g->cv, &g->mu, &ts);
		int64_t now = pal_mono_ms();
		unsigned heads = 0, bodies = 0;
		for (gconn *c = g->head; c; c = c->next) {
			if (c->down || c->deadline == 0 || now < c->deadline)
				continue;
			shut(g, c, c->in_request ? "body_timeout" : "head_timeout");
			if (c->in_request)
				bodies++;
			else
				heads++;
		}
		g->stats.head_timeouts += heads;
		g->stats.body_timeouts += bodies;
		if (heads + bodies > 0)
			pal_log(PAL_LOG_DEBUG, "httpguard.timeout", "{s:s, s:i, s:i}", "listener",
				g->name, "heads", (int)heads, "bodies", (int)bodies);
	}
	pthread_mutex_unlock(&g->mu);
	return NULL;
}

int pal_httpguard_new(const pal_httpguard_limits *limits, const char *name, pal_metrics *m,
		      pal_httpguard **out)
{
	*out = NULL;
	if (limits->max_conns == 0 || limits->max_per_addr == 0 || limits->head_timeout_ms == 0 ||
	    limits->body_timeout_ms == 0 || limits->idle_timeout_ms == 0)
		return PAL_EINVAL;
	pal_httpguard *g = calloc(1, sizeof *g);
	if (g == NULL)
		return PAL_ENOMEM;
	g->lim = *limits;
	snprintf(g->name, sizeof g->name, "%s", name);
	g->m = m;
	snprintf(g->open_labels, sizeof g->open_labels, "listener=\"%s\"", g->name);
	pal_metric_declare(m, M_OPEN, PAL_METRIC_GAUGE,
			   "connections an HTTP listener holds (not yet closed by its limits)");
	pal_metric_declare(m, M_CLOSED, PAL_METRIC_COUNTER,
			   "connections an HTTP listener closed by its limits, by reason");
	pal_metric_set(m, M_OPEN, g->open_labels, 0);
	for (size_t i = 0; i < sizeof closed_reasons / sizeof closed_reasons[0]; i++)
		count_closed_n(g, closed_reasons[i],
			       0); /* every reason has a sample from the start */
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&g->cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&g->mu, NULL);
	if (pthread_create(&g->sweeper, NULL, sweep, g) != 0) {
		pthread_cond_destroy(&g->cv);
		pthread_mutex_destroy(&g->mu);
		free(g);
		return PAL_EIO;
	}
	*out = g;
	return PAL_OK;
}

void pal_httpguard_free(pal_httpguard *g)
{
	if (g == NULL)
		return;
	pthread_mutex_lock(&g->mu);
	g->stopping = true;
	pthread_cond_signal(&g->cv);
	pthread_mutex_unlock(&g->mu);
	pthread_join(g->sweeper, NULL);
	/* the daemon is stopped: every connection was closed and notified */
	while (g->head) {
		gconn *c = g->head;
		g->head = c->next;
		free(c);
	}
	pthread_cond_destroy(&g->cv);
	pthread_mutex_destroy(&g->mu);
	free(g);
}
