/*
 * secret.c - a constant-time comparison of secrets (secret.h).
 */
#include <string.h>
#include "palisade/secret.h"

bool pal_secret_equal(const char *given, const char *want)
{
	size_t n = strlen(given), m = strlen(want);
	unsigned char d = n != m;
	for (size_t i = 0; i < m; i++)
		d |= (unsigned char)want[i] ^ (unsigned char)(n ? given[i % n] : 0);
	return d == 0;
}
