/*
 * listen.c - listening addresses of the HTTP listeners (listen.h): the
 * node's admin endpoint and the sink's listeners parse their host:port and
 * find the port they bound here, so that both accept and refuse the same
 * addresses with the same reasons.
 */
#include <netdb.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "palisade/listen.h"

/* S as a port: 1 to 5 decimal digits, at most 65535; 0 or -1. */
static int parse_port(const char *s, int *port)
{
	if (*s == '\0' || strlen(s) > 5)
		return -1;
	long v = 0;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		v = v * 10 + (*p - '0');
	}
	if (v > 65535)
		return -1;
	*port = (int)v;
	return 0;
}

int pal_listen_parse(const char *what, int example_port, const char *addr,
		     struct sockaddr_storage *sa, char *err, size_t errlen)
{
	char host[256];
	const char *port_s;
	bool bracketed = false;
	int port;

	if (addr == NULL || *addr == '\0') {
		snprintf(err, errlen, "%s is empty (expected host:port, e.g. 127.0.0.1:%d)", what,
			 example_port);
		return PAL_EINVAL;
	}
	if (addr[0] == '[') {
		const char *close = strchr(addr, ']');
		if (close == NULL || close[1] != ':') {
			snprintf(err, errlen, "%s \"%s\": expected [ipv6]:port, e.g. [::1]:%d",
				 what, addr, example_port);
			return PAL_EINVAL;
		}
		size_t n = (size_t)(close - addr - 1);
		if (n == 0 || n >= sizeof host) {
			snprintf(err, errlen, "%s \"%s\": bad IPv6 address", what, addr);
			return PAL_EINVAL;
		}
		memcpy(host, addr + 1, n);
		host[n] = '\0';
		port_s = close + 2;
		bracketed = true;
	} else {
		const char *colon = strrchr(addr, ':');
		if (colon == NULL) {
			snprintf(err, errlen,
				 "%s \"%s\" has no port (expected host:port, e.g. 127.0.0.1:%d)",
				 what, addr, example_port);
			return PAL_EINVAL;
		}
		size_t n = (size_t)(colon - addr);
		if (memchr(addr, ':', n) != NULL) {
			snprintf(err, errlen,
				 "%s \"%s\": an IPv6 address needs brackets, e.g. [::1]:%d", what,
				 addr, example_port);
			return PAL_EINVAL;
		}
		if (n == 0) {
			snprintf(err, errlen,
				 "%s \"%s\" has no host (use 0.0.0.0:PORT to listen on every "
				 "interface)",
				 what, addr);
			return PAL_EINVAL;
		}
		if (n >= sizeof host) {
			snprintf(err, errlen, "%s \"%.40s...\": host name too long", what, addr);
			return PAL_EINVAL;
		}
		memcpy(host, addr, n);
		host[n] = '\0';
		port_s = colon + 1;
	}
	if (parse_port(port_s, &port) != 0) {
		snprintf(err, errlen, "%s \"%s\": port \"%s\" is not a number in 0..65535", what,
			 addr, port_s);
		return PAL_EINVAL;
	}

	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
	hints.ai_family = bracketed ? AF_INET6 : AF_UNSPEC;
	if (bracketed)
		hints.ai_flags |= AI_NUMERICHOST;
	struct addrinfo *res = NULL;
	int rc = getaddrinfo(host, port_s, &hints, &res);
	if (rc != 0 || res == NULL) {
		snprintf(err, errlen, "%s \"%s\": cannot resolve \"%s\": %s", what, addr, host,
			 rc ? gai_strerror(rc) : "no address");
		return PAL_EINVAL;
	}
	memset(sa, 0, sizeof *sa);
	memcpy(sa, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return 0;
}

uint16_t pal_listen_port(const struct sockaddr_storage *sa)
{
	return ntohs(sa->ss_family == AF_INET6 ? ((const struct sockaddr_in6 *)sa)->sin6_port
					       : ((const struct sockaddr_in *)sa)->sin_port);
}

int pal_listen_bound_port(struct MHD_Daemon *d)
{
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	int port = info ? info->port : 0;
	if (port == 0) {
		struct sockaddr_storage bound;
		socklen_t len = sizeof bound;
		info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_LISTEN_FD);
		if (info && getsockname(info->listen_fd, (struct sockaddr *)&bound, &len) == 0)
			port = pal_listen_port(&bound);
	}
	return port;
}
