/*
 * random.c - secrets from getrandom(2) (random.h).  Blocks only until the
 * kernel's pool is initialised, which on a running system it is.
 */
#include <errno.h>
#include <stdio.h>
#include <sys/random.h>
#include "palisade/random.h"

int pal_random_hex(char *out, size_t bytes)
{
	unsigned char b[32];
	if (bytes > sizeof b)
		return PAL_EINVAL;
	size_t got = 0;
	while (got < bytes) {
		ssize_t n = getrandom(b + got, bytes - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return PAL_EIO;
		got += (size_t)n;
	}
	for (size_t i = 0; i < bytes; i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
	return PAL_OK;
}
