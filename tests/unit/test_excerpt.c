/*
 * test_excerpt.c - what an attempt keeps of a response (src/util/excerpt.c):
 * every secret value masked, even one the cut left half-read, and every
 * byte shown as readable text.
 */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "palisade/excerpt.h"

static char *mask(const char *s, size_t len, bool cut, size_t *out_len)
{
	static const char *const secrets[] = {"s3cr3t-token", "s3cr3t", "", NULL};
	return pal_excerpt_mask(s, len, secrets, 4, cut, out_len);
}

static void test_excerpt_masks_every_occurrence_longest_first(void **state)
{
	(void)state;
	size_t n;
	const char *in = "a=s3cr3t-token b=s3cr3t c=s3cr3ts3cr3t d=s3cr";
	char *m = mask(in, strlen(in), false, &n);
	assert_string_equal(m, "a=*** b=*** c=****** d=s3cr");
	assert_int_equal(n, strlen(m));
	g_free(m);
}

static void test_excerpt_cut_drops_a_half_read_secret(void **state)
{
	(void)state;
	size_t n;
	/* the transfer stopped inside a secret: its first bytes go too */
	char *m = mask("x=s3cr3t-to", 11, true, &n);
	assert_string_equal(m, "x="); /* not "x=***-to": "-to" is s3cr3t-token's */
	g_free(m);
	m = mask("x=s3cr3t y", 10, true, &n);
	assert_string_equal(m, "x=*** y");
	g_free(m);
	m = mask("x=s3cr", 6, true, &n);
	assert_string_equal(m, "x=");
	g_free(m);
	m = mask("x=s3cr", 6, false, &n); /* not cut: the body ends there */
	assert_string_equal(m, "x=s3cr");
	g_free(m);
}

static void test_excerpt_mask_keeps_nul_bytes(void **state)
{
	(void)state;
	size_t n;
	char *m = mask("a\0s3cr3t\0b", 10, false, &n);
	assert_int_equal(n, 7);
	assert_memory_equal(m, "a\0***\0b", 7);
	g_free(m);
}

static char *shown(const char *s, size_t len)
{
	GString *g = g_string_new(NULL);
	pal_excerpt_escape(g, s, len);
	return g_string_free(g, FALSE);
}

static void test_excerpt_escape_names_every_byte(void **state)
{
	(void)state;
	char *s = shown("ok \"q\" caf\xc3\xa9\n\t\\ \x00\x1b\xff\xc3", 20);
	assert_string_equal(s, "ok \"q\" caf\xc3\xa9\\n\\t\\\\ \\x00\\x1b\\xff\\xc3");
	assert_true(g_utf8_validate(s, -1, NULL));
	g_free(s);
	s = shown(NULL, 0); /* an empty body, as the store decodes it */
	assert_string_equal(s, "");
	g_free(s);
}

static void test_excerpt_escape_max_cuts_at_a_whole_character(void **state)
{
	(void)state;
	/* "a" and three euro signs (3 bytes each): 6 bytes of room hold "a€"
	 * and not the half of the next one */
	const char *v = "a\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac";
	for (size_t room = 0; room <= 12; room++) {
		GString *g = g_string_new(NULL);
		size_t in = pal_excerpt_escape_max(g, v, 10, room);
		size_t want = room == 0 ? 0 : 1 + (room - 1) / 3 * 3;
		assert_int_equal(in, want > 10 ? 10 : want);
		assert_int_equal(g->len, in);
		assert_true(g_utf8_validate(g->str, -1, NULL));
		g_string_free(g, TRUE);
	}
	/* the room counts what is shown: a tab is "\\t", a stray byte "\\xNN" */
	GString *g = g_string_new(NULL);
	assert_int_equal(pal_excerpt_escape_max(g, "\t\t\xff", 3, 5), 2);
	assert_string_equal(g->str, "\\t\\t");
	g_string_truncate(g, 0);
	assert_int_equal(pal_excerpt_escape_max(g, "\\\xff", 2, 5), 1);
	assert_string_equal(g->str, "\\\\");
	g_string_truncate(g, 0);
	assert_int_equal(pal_excerpt_escape_max(g, "\\\xff", 2, 6), 2);
	assert_string_equal(g->str, "\\\\\\xff");
	g_string_free(g, TRUE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_excerpt_masks_every_occurrence_longest_first),
	    cmocka_unit_test(test_excerpt_cut_drops_a_half_read_secret),
	    cmocka_unit_test(test_excerpt_mask_keeps_nul_bytes),
	    cmocka_unit_test(test_excerpt_escape_names_every_byte),
	    cmocka_unit_test(test_excerpt_escape_max_cuts_at_a_whole_character),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
