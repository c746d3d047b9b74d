/*
 * test_httpguard.c - the listener guard on a real libmicrohttpd daemon on a
 * loopback port: head and body deadlines, the per-address and total limits
 * closing the oldest waiting connection (never one with a request under
 * way, the newcomer when nothing waits), the smuggling refusals, and the
 * stats that count each.  Limits are small (2 per address, 4 in all, a
 * 300 ms head and a 1 s body deadline) so that each case is short.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>
#include "palisade/clock.h"
#include "palisade/httpguard.h"

#define HEAD_MS 300
#define BODY_MS 1000

typedef struct fixture {
	pal_httpguard *g;
	struct MHD_Daemon *d;
	int port;
} fixture;

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
	pal_httpguard_request_line(cls, conn);
	return NULL;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *data,
				  size_t *size, void **req)
{
	static int seen;
	struct MHD_Response *r;
	if (*req == NULL) {
		*req = &seen;
		const char *why = pal_httpguard_head(cls, conn);
		if (why == NULL)
			return MHD_YES;
		r = MHD_create_response_from_buffer(strlen(why), (void *)why,
						    MHD_RESPMEM_PERSISTENT);
		pal_httpguard_close_after(r);
		enum MHD_Result ret = MHD_queue_response(conn, MHD_HTTP_BAD_REQUEST, r);
		MHD_destroy_response(r);
		return ret;
	}
	if (*size != 0) {
		*size = 0;
		return MHD_YES;
	}
	pal_httpguard_body_done(cls, conn);
	r = MHD_create_response_from_buffer(2, (void *)"ok", MHD_RESPMEM_PERSISTENT);
	enum MHD_Result ret = MHD_queue_response(conn, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

static void on_done(void *cls, struct MHD_Connection *conn, void **req,
		    enum MHD_RequestTerminationCode toe)
{
	pal_httpguard_request_done(cls, conn);
	*req = NULL;
}

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof *f);
	pal_httpguard_limits lim = {.max_conns = 4,
				    .max_per_addr = 2,
				    .head_timeout_ms = HEAD_MS,
				    .body_timeout_ms = BODY_MS,
				    .idle_timeout_ms = 1000};
	assert_int_equal(pal_httpguard_new(&lim, "test", NULL, &f->g), PAL_OK);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
	f->d = MHD_start_daemon(
	    MHD_USE_AUTO_INTERNAL_THREAD, 0, NULL, NULL, on_request, f->g, MHD_OPTION_SOCK_ADDR,
	    (struct sockaddr *)&sa, MHD_OPTION_CONNECTION_LIMIT, pal_httpguard_mhd_limit(f->g, 1),
	    MHD_OPTION_NOTIFY_CONNECTION, pal_httpguard_notify, f->g, MHD_OPTION_URI_LOG_CALLBACK,
	    on_uri, f->g, MHD_OPTION_NOTIFY_COMPLETED, on_done, f->g, MHD_OPTION_END);
	assert_non_null(f->d);
	f->port = MHD_get_daemon_info(f->d, MHD_DAEMON_INFO_BIND_PORT)->port;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;
	MHD_stop_daemon(f->d);
	pal_httpguard_free(f->g);
	free(f);
	return 0;
}

/* A connection from 127.0.0.FROM to the daemon. */
static int dial(const fixture *f, int from)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in src = {.sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(0x7f000000 | from)};
	struct sockaddr_in dst = {.sin_family = AF_INET,
				  .sin_port = htons((uint16_t)f->port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	assert_int_equal(bind(fd, (struct sockaddr *)&src, sizeof src), 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&dst, sizeof dst), 0);
	usleep(20000); /* accepted, in this order */
	return fd;
}

static void say(int fd, const char *s)
{
	assert_int_equal(send(fd, s, strlen(s), MSG_NOSIGNAL), (ssize_t)strlen(s));
}

/* Whether the server closed FD within MS (reading and dropping any answer). */
static bool closed_within(int fd, int ms)
{
	char buf[512];
	int64_t end = pal_mono_ms() + ms;
	for (int64_t now; (now = pal_mono_ms()) < end;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, (int)(end - now)) <= 0)
			return false;
		ssize_t n = recv(fd, buf, sizeof buf, 0);
		if (n <= 0)
			return true;
	}
	return false;
}

/* The status code of the answer on FD, 0 when none comes within 1 s. */
static int status_of(int fd)
{
	char buf[512] = "";
	struct pollfd p = {.fd = fd, .events = POLLIN};
	if (poll(&p, 1, 1000) <= 0 || recv(fd, buf, sizeof buf - 1, 0) < 12)
		return 0;
	return atoi(buf + 9);
}

/* Send FIRST on a new connection, then DRIP every 100 ms until the server
 * closes it; returns after how many ms (3,000 at most).  *ST: the stats. */
static int64_t trickle(fixture *f, const char *first, const char *drip, pal_httpguard_stats *st)
{
	int fd = dial(f, 1);
	int64_t t0 = pal_mono_ms();
	say(fd, first);
	while (!closed_within(fd, 100) && pal_mono_ms() - t0 < 3000)
		(void)send(fd, drip, strlen(drip), MSG_NOSIGNAL);
	int64_t took = pal_mono_ms() - t0;
	close(fd);
	pal_httpguard_get_stats(f->g, st);
	return took;
}

static void test_httpguard_cuts_a_trickled_head_at_its_deadline(void **state)
{
	pal_httpguard_stats st;
	int64_t took = trickle(*state, "GET / HTTP/1.1\r\n", "X-Slow: 1\r\n", &st);
	assert_in_range(took, HEAD_MS - 50, HEAD_MS + 400);
	assert_int_equal(st.head_timeouts, 1);
}

static void test_httpguard_cuts_a_trickled_body_at_its_deadline(void **state)
{
	pal_httpguard_stats st;
	int64_t took =
	    trickle(*state, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n", "x", &st);
	assert_in_range(took, BODY_MS - 50, BODY_MS + 400);
	assert_int_equal(st.body_timeouts, 1);
}

static void test_httpguard_per_address_limit_closes_that_address_oldest(void **state)
{
	fixture *f = *state;
	int a1 = dial(f, 2), other = dial(f, 3), a2 = dial(f, 2), a3 = dial(f, 2);
	assert_true(closed_within(a1, 200));
	assert_false(closed_within(other, 50));
	assert_false(closed_within(a2, 50));
	say(a3, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
	assert_int_equal(status_of(a3), 200);
	pal_httpguard_stats st;
	pal_httpguard_get_stats(f->g, &st);
	assert_int_equal(st.evicted, 1);
	close(a1), close(other), close(a2), close(a3);
}

static void test_httpguard_total_limit_spares_requests_under_way(void **state)
{
	fixture *f = *state;
	/* two requests under way (bodies half sent), then idle connections */
	int busy1 = dial(f, 2), busy2 = dial(f, 3);
	say(busy1, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nab");
	say(busy2, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nab");
	usleep(20000);
	int idle1 = dial(f, 4), idle2 = dial(f, 5), idle3 = dial(f, 6);
	assert_true(closed_within(idle1, 200)); /* the oldest waiting, not busy1 */
	assert_false(closed_within(idle2, 50));
	/* the next two push out the remaining waiting ones and start requests;
	 * then nothing waits and a newcomer is itself closed */
	int busy3 = dial(f, 7);
	say(busy3, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nab");
	int busy4 = dial(f, 8);
	say(busy4, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nab");
	usleep(20000);
	int late = dial(f, 9);
	assert_true(closed_within(idle2, 200));
	assert_true(closed_within(idle3, 200));
	assert_true(closed_within(late, 200));
	say(busy1, "cd");
	assert_int_equal(status_of(busy1), 200);
	pal_httpguard_stats st;
	pal_httpguard_get_stats(f->g, &st);
	assert_int_equal(st.evicted, 3);
	assert_int_equal(st.refused, 1);
	close(busy1), close(busy2), close(busy3), close(busy4), close(idle1), close(idle2),
	    close(idle3), close(late);
}

static void test_httpguard_refuses_ambiguous_lengths_and_closes(void **state)
{
	fixture *f = *state;
	static const char *const shapes[] = {
	    "Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
	    "Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello",
	    "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
	};
	for (size_t i = 0; i < 3; i++) {
		int fd = dial(f, 10 + (int)i);
		say(fd, "POST / HTTP/1.1\r\nHost: x\r\n");
		say(fd, shapes[i]);
		assert_int_equal(status_of(fd), 400);
		assert_true(closed_within(fd, 500));
		close(fd);
	}
	int fd = dial(f, 20);
	say(fd, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello");
	assert_int_equal(status_of(fd), 200);
	close(fd);
	pal_httpguard_stats st;
	pal_httpguard_get_stats(f->g, &st);
	assert_int_equal(st.smuggling, 3);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_httpguard_cuts_a_trickled_head_at_its_deadline),
	    T(test_httpguard_cuts_a_trickled_body_at_its_deadline),
	    T(test_httpguard_per_address_limit_closes_that_address_oldest),
	    T(test_httpguard_total_limit_spares_requests_under_way),
	    T(test_httpguard_refuses_ambiguous_lengths_and_closes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
