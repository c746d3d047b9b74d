/* test_migrate.c - the schema range rule (src/store/migrate.c,
 * docs/upgrades.md): a migration's compatible_from header and when a binary
 * supports a database.  No server. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdbool.h>
#include <string.h>
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
	/* min: the highest migration before the after-roll tail */
	int min = 0;
	bool tail = true;
	for (int i = pal_n_migrations - 1; i >= 0; i--) {
		tail = tail && pal_migration_after_roll(&pal_migrations[i]);
		if (!tail && pal_migrations[i].version > min)
			min = pal_migrations[i].version;
	}
	assert_int_equal(r.min, min);
	assert_true(r.min <= r.binary);
	assert_true(r.compatible_from >= 1 && r.compatible_from <= max);
}

static void test_migrate_after_roll_marker(void **state)
{
	(void)state;
	pal_migration m = { .version = 48, .name = "048_x",
			    .sql = "-- 048_x.sql - what\n--\n-- compatible_from: 48\n"
				   "-- applied: after the roll\n--\nDROP INDEX x;\n" };
	assert_true(pal_migration_after_roll(&m));
	assert_int_equal(pal_migration_compatible_from(&m), 48);
	m.sql = "-- applied: after the roll  \r\nSELECT 1;\n";
	assert_true(pal_migration_after_roll(&m));
	m.sql = "-- compatible_from: 47\nSELECT 1;\n-- applied: after the roll\n";
	assert_false(pal_migration_after_roll(&m)); /* below the header */
	m.sql = "-- applied: after the rollout\nSELECT 1;\n";
	assert_false(pal_migration_after_roll(&m));
	m.sql = "-- applied: before\nSELECT 1;\n";
	assert_false(pal_migration_after_roll(&m));
}

#define EXPAND(v) { v, #v "_expand", "-- compatible_from: 10\nSELECT 1;\n" }
#define CONTRACT(v) { v, #v "_contract", "SELECT 1;\n" }
#define AFTER(v) { v, #v "_after", "-- applied: after the roll\nSELECT 1;\n" }

static void test_migrate_after_roll_step_may_be_followed(void **state)
{
	(void)state;
	char err[256];
	pal_schema_range r;
	const pal_migration ok[] = { EXPAND(11), CONTRACT(12), AFTER(13), AFTER(14) };
	assert_int_equal(pal_migrations_check(ok, 4, err, sizeof err), 0);
	/* the next release: an expand step 49 after the released 48, marked */
	const pal_migration next[] = { EXPAND(47), AFTER(48), EXPAND(49) };
	assert_int_equal(pal_migrations_check(next, 3, err, sizeof err), 0);
	pal_schema_range_of(next, 3, &r);
	assert_int_equal(r.binary, 49);
	assert_int_equal(r.min, 49); /* 48 is a plain contract step here */
	assert_int_equal(r.compatible_from, 10);
	/* a database at 47 (48 pending) or 48: below min, a node migrates
	 * first; it applies 49 on 48, and on 47 refuses the contract step 48 */
	r.db_version = 47, r.db_compatible_from = 10;
	assert_false(pal_schema_supported(&r));
	r.db_version = 48, r.db_compatible_from = 48;
	assert_false(pal_schema_supported(&r));
	r.db_version = 49, r.db_compatible_from = 48;
	assert_true(pal_schema_supported(&r));
	/* and a tail of its own after it */
	const pal_migration later[] = { EXPAND(11), AFTER(12), EXPAND(13), AFTER(14) };
	assert_int_equal(pal_migrations_check(later, 4, err, sizeof err), 0);
	pal_schema_range_of(later, 4, &r);
	assert_int_equal(r.min, 13);
	assert_int_equal(r.binary, 14);
	/* the binary's own list */
	assert_int_equal(pal_migrations_check(pal_migrations, pal_n_migrations, err, sizeof err), 0);
}

static void test_migrate_list_numbers_rise(void **state)
{
	(void)state;
	char err[256];
	const pal_migration twice[] = { EXPAND(11), EXPAND(12), CONTRACT(12) };
	assert_int_equal(pal_migrations_check(twice, 3, err, sizeof err), PAL_EINVAL);
	assert_non_null(strstr(err, "migrations 12_expand and 12_contract"));
	assert_non_null(strstr(err, "(12, then 12)"));
	const pal_migration down[] = { EXPAND(12), EXPAND(11) };
	assert_int_equal(pal_migrations_check(down, 2, err, sizeof err), PAL_EINVAL);
	const pal_migration none[] = { EXPAND(0) };
	assert_int_equal(pal_migrations_check(none, 1, err, sizeof err), PAL_EINVAL);
	assert_non_null(strstr(err, "0_expand has no version number"));
}

static void test_migrate_after_roll_range(void **state)
{
	(void)state;
	pal_schema_range r;
	const pal_migration tail[] = { EXPAND(11), EXPAND(12), AFTER(14) };
	pal_schema_range_of(tail, 3, &r);
	assert_int_equal(r.binary, 14);
	assert_int_equal(r.min, 12);
	assert_int_equal(r.compatible_from, 14);
	r.db_version = 12, r.db_compatible_from = 10; /* the tail pending */
	assert_true(pal_schema_supported(&r));
	r.db_version = 14, r.db_compatible_from = 14; /* applied */
	assert_true(pal_schema_supported(&r));
	r.db_version = 11, r.db_compatible_from = 10; /* below min: migrate first */
	assert_false(pal_schema_supported(&r));
	const pal_migration none[] = { EXPAND(11), AFTER(12), CONTRACT(13) };
	pal_schema_range_of(none, 3, &r);
	assert_int_equal(r.min, 13);
	assert_int_equal(r.binary, 13);
	const pal_migration plain[] = { EXPAND(11), EXPAND(12) };
	pal_schema_range_of(plain, 2, &r);
	assert_int_equal(r.min, 12);
	assert_int_equal(r.compatible_from, 10);
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
		cmocka_unit_test(test_migrate_after_roll_marker),
		cmocka_unit_test(test_migrate_after_roll_step_may_be_followed),
		cmocka_unit_test(test_migrate_list_numbers_rise),
		cmocka_unit_test(test_migrate_after_roll_range),
		cmocka_unit_test(test_migrate_supported_range),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
