/* test_migrate.c - the schema range rule (src/store/migrate.c,
 * docs/upgrades.md): a migration's compatible_from header and when a binary
 * supports a database.  No server. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "palisade/store.h"

static int cf(int version, const char *sql)
{
	pal_migration m = { .version = version, .name = "test", .sql = sql };
	return pal_migration_compatible_from(&m);
}

static void test_migrate_header_declares_compatible_from(void **state)
{
	(void)state;
	assert_int_equal(cf(11, "-- 011_x.sql - what\n--\n-- compatible_from: 10\n--\nCREATE TABLE a();\n"), 10);
	assert_int_equal(cf(12, "-- compatible_from:9\nSELECT 1;\n"), 9);
}

static void test_migrate_no_header_is_a_contract_step(void **state)
{
	(void)state;
	assert_int_equal(cf(11, "-- 011_x.sql - what\nCREATE TABLE a();\n"), 11);
	/* after the leading comment block the line no longer counts */
	assert_int_equal(cf(11, "-- what\nSELECT 1;\n-- compatible_from: 10\n"), 11);
	assert_int_equal(cf(11, ""), 11);
}

static void test_migrate_bad_header_is_a_contract_step(void **state)
{
	(void)state;
	assert_int_equal(cf(11, "-- compatible_from: ten\n"), 11);
	assert_int_equal(cf(11, "-- compatible_from: 12\n"), 11); /* above itself */
	assert_int_equal(cf(11, "-- compatible_from: 0\n"), 11);
}

static void test_migrate_binary_schema_is_its_newest_migration(void **state)
{
	(void)state;
	pal_schema_range r;
	pal_store_binary_schema(&r);
	int max = 0;
	for (int i = 0; i < pal_n_migrations; i++)
		if (pal_migrations[i].version > max)
			max = pal_migrations[i].version;
	assert_int_equal(r.binary, max);
	assert_int_equal(r.min, max);
	assert_true(r.compatible_from >= 1 && r.compatible_from <= max);
}

static void test_migrate_supported_range(void **state)
{
	(void)state;
	pal_schema_range r = { .binary = 13, .min = 13 };
	r.db_version = 13, r.db_compatible_from = 10;
	assert_true(pal_schema_supported(&r));
	r.db_version = 20, r.db_compatible_from = 13; /* newer, expand steps only */
	assert_true(pal_schema_supported(&r));
	r.db_version = 20, r.db_compatible_from = 14; /* a contract step beyond 13 */
	assert_false(pal_schema_supported(&r));
	r.db_version = 12, r.db_compatible_from = 10; /* older: migrate first */
	assert_false(pal_schema_supported(&r));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_migrate_header_declares_compatible_from),
		cmocka_unit_test(test_migrate_no_header_is_a_contract_step),
		cmocka_unit_test(test_migrate_bad_header_is_a_contract_step),
		cmocka_unit_test(test_migrate_binary_schema_is_its_newest_migration),
		cmocka_unit_test(test_migrate_supported_range),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
