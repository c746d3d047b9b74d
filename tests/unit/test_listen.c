/*
 * test_listen.c - listening addresses of the HTTP listeners
 * (src/util/listen.c): what is accepted and how, the reasons for what is
 * refused, and the port a daemon asked for port 0 really bound.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <netinet/in.h>
#include <cmocka.h>
#include "palisade/listen.h"

static void expect_ok(const char *addr, int family, uint16_t port)
{
	struct sockaddr_storage sa;
	char err[256] = "";
	if (pal_listen_parse("address", 8088, addr, &sa, err, sizeof err) != 0)
		fail_msg("\"%s\" refused: %s", addr, err);
	assert_int_equal(sa.ss_family, family);
	assert_int_equal(pal_listen_port(&sa), port);
}

/* ADDR is refused with a message that starts with WHAT and contains WHY. */
static void expect_refused(const char *addr, const char *why)
{
	struct sockaddr_storage sa;
	char err[256] = "";
	assert_int_equal(pal_listen_parse("sink address", 8088, addr, &sa, err, sizeof err),
			 PAL_EINVAL);
	if (strncmp(err, "sink address", 12) != 0 || strstr(err, why) == NULL)
		fail_msg("\"%s\": want \"%s\" in: %s", addr ? addr : "(null)", why, err);
}

static void test_listen_parse_accepts_host_port(void **state)
{
	(void)state;
	expect_ok("127.0.0.1:9464", AF_INET, 9464);
	expect_ok("0.0.0.0:0", AF_INET, 0);
	expect_ok("[::1]:65535", AF_INET6, 65535);
}

static void test_listen_parse_refusals_say_why(void **state)
{
	(void)state;
	expect_refused(NULL, "is empty (expected host:port, e.g. 127.0.0.1:8088)");
	expect_refused("", "is empty");
	expect_refused("127.0.0.1", "has no port");
	expect_refused("127.0.0.1:", "is not a number in 0..65535");
	expect_refused("127.0.0.1:65536", "is not a number in 0..65535");
	expect_refused("127.0.0.1:80a", "is not a number");
	expect_refused(":8088", "has no host");
	expect_refused("::1:8088", "needs brackets, e.g. [::1]:8088");
	expect_refused("[::1", "expected [ipv6]:port");
	expect_refused("[]:8088", "bad IPv6 address");
	expect_refused("[localhost]:8088", "cannot resolve \"localhost\"");
	expect_refused("host.invalid:8088", "cannot resolve");
}

static enum MHD_Result no_route(void *cls, struct MHD_Connection *c, const char *url,
				const char *method, const char *version, const char *data,
				size_t *size, void **ptr)
{
	return MHD_NO;
}

static void test_listen_bound_port_of_port_0(void **state)
{
	(void)state;
	struct sockaddr_storage sa;
	char err[256];
	assert_int_equal(pal_listen_parse("address", 8088, "127.0.0.1:0", &sa, err, sizeof err), 0);
	struct MHD_Daemon *d = MHD_start_daemon(MHD_USE_AUTO_INTERNAL_THREAD, pal_listen_port(&sa),
						NULL, NULL, no_route, NULL, MHD_OPTION_SOCK_ADDR,
						(struct sockaddr *)&sa, MHD_OPTION_END);
	assert_non_null(d);
	int port = pal_listen_bound_port(d);
	MHD_stop_daemon(d);
	assert_true(port > 0 && port <= 65535);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_listen_parse_accepts_host_port),
	    cmocka_unit_test(test_listen_parse_refusals_say_why),
	    cmocka_unit_test(test_listen_bound_port_of_port_0),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
