/* test_tstate.c - the trigger-state name table (src/util/tstate.c) against
 * itself and against the states the schema allows (sql/001_init.sql). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/tstate.h"

static void test_tstate_names_round_trip(void **state)
{
	(void)state;
	for (int i = 0; i < PAL_TS__COUNT; i++) {
		pal_tstate s;
		assert_int_equal(pal_tstate_parse(pal_tstate_name((pal_tstate)i), &s), PAL_OK);
		assert_int_equal(s, i);
	}
	pal_tstate s;
	assert_int_equal(pal_tstate_parse("done", &s), PAL_EINVAL);
	assert_int_equal(pal_tstate_parse(NULL, &s), PAL_EINVAL);
	assert_string_equal(pal_tstate_name(PAL_TS__COUNT), "?");
	assert_true(pal_tstate_terminal(PAL_TS_SKIPPED));
	assert_false(pal_tstate_terminal(PAL_TS_MANUAL));
}

/* Every state the CHECK constraint of triggers.state lists has a name in
 * the table, and the other way round. */
static void test_tstate_table_matches_the_schema(void **state)
{
	(void)state;
	FILE *f = fopen("sql/001_init.sql", "r");
	assert_non_null(f);
	static char buf[1 << 16];
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	const char *p = strstr(buf, "state            text NOT NULL DEFAULT 'pending' CHECK (state IN (");
	assert_non_null(p);
	const char *end = strstr(p, "))");
	assert_non_null(end);
	int seen = 0;
	for (const char *q = strchr(p, '\''); q && q < end; q = strchr(q + 1, '\'')) {
		const char *e = strchr(q + 1, '\'');
		char name[32];
		snprintf(name, sizeof name, "%.*s", (int)(e - q - 1), q + 1);
		q = e;
		pal_tstate s;
		if (pal_tstate_parse(name, &s) != PAL_OK)
			fail_msg("the schema allows state \"%s\", the table has no name for it", name);
		seen++;
	}
	/* DEFAULT 'pending' is read once more than the list */
	assert_int_equal(seen - 1, PAL_TS__COUNT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tstate_names_round_trip),
		cmocka_unit_test(test_tstate_table_matches_the_schema),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
