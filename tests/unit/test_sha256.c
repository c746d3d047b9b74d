/*
 * test_sha256.c - SHA-256 of a buffer (src/util/sha256.c): the FIPS 180-4
 * vectors, and the same digest as GChecksum at every length of the last
 * block and from an unaligned start (the SHA-extension path loads unaligned).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>
#include <glib.h>
#include "palisade/sha256.h"

static void test_sha256_fips_vectors(void **state)
{
	static const char two_blocks[] = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	char hex[65];
	uint8_t raw[32];

	(void)state;
	pal_sha256_hex("", 0, hex);
	assert_string_equal(hex,
			    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	pal_sha256_hex("abc", 3, hex);
	assert_string_equal(hex,
			    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	pal_sha256_hex(two_blocks, strlen(two_blocks), hex);
	assert_string_equal(hex,
			    "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	pal_sha256("abc", 3, raw);
	assert_int_equal(raw[0], 0xba);
	assert_int_equal(raw[31], 0xad);
}

static void test_sha256_matches_gchecksum_at_every_padding_length(void **state)
{
	uint8_t buf[1 + 300];
	char hex[65];

	(void)state;
	for (size_t i = 0; i < sizeof buf; i++)
		buf[i] = (uint8_t)(i * 131 + 7);
	for (size_t off = 0; off <= 1; off++) {
		for (size_t n = 0; n <= 300; n++) {
			gchar *want = g_compute_checksum_for_data(G_CHECKSUM_SHA256, buf + off, n);

			pal_sha256_hex(buf + off, n, hex);
			assert_string_equal(hex, want);
			g_free(want);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sha256_fips_vectors),
	    cmocka_unit_test(test_sha256_matches_gchecksum_at_every_padding_length),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
