/*
 * sha256.c - SHA-256 of a buffer (include/palisade/sha256.h).
 *
 * With the x86 SHA extensions (checked once at run time) the blocks are
 * hashed by the CPU's own rounds, else by GChecksum: at 1M jobs GChecksum's
 * portable rounds were a fifth of `palisade apply`'s CPU time, all of it the
 * digests of job specs.  Both give the same digest (FIPS 180-4);
 * tests/unit/test_sha256.c compares them over every padding length.
 */
#include <stdbool.h>
#include <string.h>
#include <glib.h>
#include "palisade/sha256.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>

static const uint32_t sha_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

__attribute__((target("sha,sse4.1,ssse3"))) static void sha_ni_blocks(uint32_t st[8],
								      const uint8_t *p, size_t n)
{
	const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
	__m128i tmp = _mm_loadu_si128((const __m128i *)&st[0]);
	__m128i s1 = _mm_loadu_si128((const __m128i *)&st[4]);
	__m128i s0;

	tmp = _mm_shuffle_epi32(tmp, 0xB1);  /* CDAB */
	s1 = _mm_shuffle_epi32(s1, 0x1B);    /* EFGH */
	s0 = _mm_alignr_epi8(tmp, s1, 8);    /* ABEF */
	s1 = _mm_blend_epi16(s1, tmp, 0xF0); /* CDGH */
	for (; n; n--, p += 64) {
		__m128i w[4], save0 = s0, save1 = s1;

		for (int i = 0; i < 16; i++) {
			__m128i m;

			if (i < 4) {
				w[i] = _mm_shuffle_epi8(
				    _mm_loadu_si128((const __m128i *)(p + 16 * i)), bswap);
			} else {
				/* W[t-16] + s0(W[t-15]) + W[t-7], then + s1(W[t-2]) */
				m = _mm_add_epi32(
				    _mm_sha256msg1_epu32(w[i & 3], w[(i + 1) & 3]),
				    _mm_alignr_epi8(w[(i + 3) & 3], w[(i + 2) & 3], 4));
				w[i & 3] = _mm_sha256msg2_epu32(m, w[(i + 3) & 3]);
			}
			m = _mm_add_epi32(w[i & 3],
					  _mm_loadu_si128((const __m128i *)&sha_k[4 * i]));
			s1 = _mm_sha256rnds2_epu32(s1, s0, m);
			m = _mm_shuffle_epi32(m, 0x0E);
			s0 = _mm_sha256rnds2_epu32(s0, s1, m);
		}
		s0 = _mm_add_epi32(s0, save0);
		s1 = _mm_add_epi32(s1, save1);
	}
	tmp = _mm_shuffle_epi32(s0, 0x1B);   /* FEBA */
	s1 = _mm_shuffle_epi32(s1, 0xB1);    /* DCHG */
	s0 = _mm_blend_epi16(tmp, s1, 0xF0); /* DCBA */
	s1 = _mm_alignr_epi8(s1, tmp, 8);    /* HGFE */
	_mm_storeu_si128((__m128i *)&st[0], s0);
	_mm_storeu_si128((__m128i *)&st[4], s1);
}

static bool sha_ni(void)
{
	static int have = -1;

	if (have < 0) {
		/* cpuid directly: clang's __builtin_cpu_supports knows no "sha" */
		unsigned a, b, c, d;

		have = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_SSE4_1) && (c & bit_SSSE3) &&
		       __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & bit_SHA);
	}
	return have;
}

static bool sha256_ni(const void *data, size_t len, uint8_t out[32])
{
	uint32_t st[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
			  0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
	uint8_t tail[128] = {0};
	size_t full = len / 64, rest = len % 64, tn = rest < 56 ? 64 : 128;
	uint64_t bits = (uint64_t)len * 8;

	if (!sha_ni())
		return false;
	sha_ni_blocks(st, data, full);
	memcpy(tail, (const uint8_t *)data + full * 64, rest);
	tail[rest] = 0x80;
	for (int i = 0; i < 8; i++)
		tail[tn - 1 - i] = (uint8_t)(bits >> (8 * i));
	sha_ni_blocks(st, tail, tn / 64);
	for (int i = 0; i < 8; i++) {
		out[4 * i] = (uint8_t)(st[i] >> 24);
		out[4 * i + 1] = (uint8_t)(st[i] >> 16);
		out[4 * i + 2] = (uint8_t)(st[i] >> 8);
		out[4 * i + 3] = (uint8_t)st[i];
	}
	return true;
}
#else
static bool sha256_ni(const void *data, size_t len, uint8_t out[32])
{
	(void)data;
	(void)len;
	(void)out;
	return false;
}
#endif

void pal_sha256(const void *data, size_t len, uint8_t out[32])
{
	if (!sha256_ni(data, len, out)) {
		GChecksum *ck = g_checksum_new(G_CHECKSUM_SHA256);
		gsize dl = 32;

		g_checksum_update(ck, data, (gssize)len);
		g_checksum_get_digest(ck, out, &dl);
		g_checksum_free(ck);
	}
}

void pal_sha256_hex(const void *data, size_t len, char hex[65])
{
	uint8_t dg[32];

	pal_sha256(data, len, dg);
	for (size_t i = 0; i < 32; i++) {
		hex[2 * i] = "0123456789abcdef"[dg[i] >> 4];
		hex[2 * i + 1] = "0123456789abcdef"[dg[i] & 15];
	}
	hex[64] = '\0';
}
