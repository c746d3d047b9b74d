/*
 * random.h - secrets from the kernel's random source (src/util/random.c):
 * API token secrets, console session ids and CSRF tokens.
 */
#ifndef PALISADE_RANDOM_H
#define PALISADE_RANDOM_H

#include <stddef.h>
#include "palisade/err.h"

/* BYTES (at most 32) random bytes from getrandom(2) as 2 * BYTES lower-case
 * hex digits and a NUL into OUT.  PAL_EINVAL for more than 32 bytes,
 * PAL_EIO when the kernel gives none (never a weaker fallback). */
PAL_MUST_CHECK int pal_random_hex(char *out, size_t bytes);

#endif
