/*
 * listen.h - the listening address of palisade's HTTP listeners (the node's
 * admin endpoint, the sink's two listeners; src/util/listen.c): parsing
 * "host:port" into a socket address, and the port a started daemon bound.
 */
#ifndef PALISADE_LISTEN_H
#define PALISADE_LISTEN_H

#include <stdint.h>
#include <sys/socket.h>
#include <microhttpd.h>
#include "palisade/err.h"

/*
 * ADDR is "host:port" or "[v6]:port": port a decimal number in 0..65535
 * (0: any free port), host a name (resolved once, first address wins) or a
 * numeric address; inside brackets only a numeric IPv6 address.  Fills SA.
 * Returns 0, or PAL_EINVAL with ERR saying what is wrong: each message
 * starts with WHAT ("admin address") and its examples use EXAMPLE_PORT.
 * Blocks while a host name is resolved.
 */
PAL_MUST_CHECK int pal_listen_parse(const char *what, int example_port, const char *addr,
				    struct sockaddr_storage *sa, char *err, size_t errlen);

/* The port of SA (an AF_INET or AF_INET6 address), host byte order. */
uint16_t pal_listen_port(const struct sockaddr_storage *sa);

/* The port daemon D listens on (the one the kernel chose when it was asked
 * for port 0); 0 when it cannot be told. */
int pal_listen_bound_port(struct MHD_Daemon *d);

#endif
