/*
 * sha256.h - SHA-256 of a buffer, the digest of job specs (src/util/sha256.c).
 *
 * Pure and thread-safe; no allocation where the CPU has the SHA extensions.
 */
#ifndef PALISADE_SHA256_H
#define PALISADE_SHA256_H

#include <stddef.h>
#include <stdint.h>

/* The 32-byte SHA-256 digest of the LEN bytes at DATA into OUT. */
void pal_sha256(const void *data, size_t len, uint8_t out[32]);

/* The same digest as 64 lower-case hex digits and a NUL into HEX. */
void pal_sha256_hex(const void *data, size_t len, char hex[65]);

#endif
