/* test_pgarray.c - the array-parameter encoder (src/store/pgarray.c): every
 * element quoted, so SQL words, empty strings and special characters stay
 * what they are. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>
#include "../../src/store/store_int.h"

static void test_pgarray_empty(void **state)
{
	pal_pgarr a;
	pal__pgarr_init(&a);
	char *s = pal__pgarr_end(&a);
	assert_string_equal(s, "{}");
	g_free(s);
}

static void test_pgarray_text_always_quoted(void **state)
{
	pal_pgarr a;
	pal__pgarr_init(&a);
	const char *v[] = { "null", "NULL", "", "true", "default", "a,b", "{x}", "q\"uo\\te", " sp ",
			    "\\", "\"\"" };
	for (size_t i = 0; i < sizeof v / sizeof *v; i++)
		pal__pgarr_text(&a, v[i]);
	pal__pgarr_text(&a, NULL);
	char *s = pal__pgarr_end(&a);
	assert_string_equal(s, "{\"null\",\"NULL\",\"\",\"true\",\"default\",\"a,b\",\"{x}\","
			       "\"q\\\"uo\\\\te\",\" sp \",\"\\\\\",\"\\\"\\\"\",NULL}");
	g_free(s);
}

static void test_pgarray_integers(void **state)
{
	pal_pgarr a;
	pal__pgarr_init(&a);
	pal__pgarr_i64(&a, 0);
	pal__pgarr_i64(&a, -7);
	pal__pgarr_i64(&a, INT64_MAX);
	pal__pgarr_i64(&a, INT64_MIN);
	pal__pgarr_i64(&a, 1234567890);
	char *s = pal__pgarr_end(&a);
	assert_string_equal(s, "{0,-7,9223372036854775807,-9223372036854775808,1234567890}");
	g_free(s);
}

static void test_pgarray_ints(void **state)
{
	const int v[] = { 3, -1, 0, 2147483647 };
	char *s = pal__pgarr_ints(v, 4);
	assert_string_equal(s, "{3,-1,0,2147483647}");
	g_free(s);
	s = pal__pgarr_ints(v, 0);
	assert_string_equal(s, "{}");
	g_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pgarray_empty),
		cmocka_unit_test(test_pgarray_text_always_quoted),
		cmocka_unit_test(test_pgarray_integers),
		cmocka_unit_test(test_pgarray_ints),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
