/*
 * test_speccache.c - the executor's cache of compiled job versions
 * (src/executor/specs.c): bounded by its cap, a held entry is never freed,
 * and entries called since the last sweep stay.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "../../src/executor/executor_int.h"

static spec_entry *fresh(int i)
{
	spec_entry *e = calloc(1, sizeof *e);
	char url[64], err[256];
	snprintf(url, sizeof url, "http://127.0.0.1/job-%d", i);
	const char *f[PAL_CF_N] = {
		[PAL_CF_FORMAT] = "1",		    [PAL_CF_METHOD] = "POST",
		[PAL_CF_URL] = url,		    [PAL_CF_HEADERS] = "{}",
		[PAL_CF_TIMEOUT_MS] = "30000",	    [PAL_CF_IDEM_KEY] = "{job}",
		[PAL_CF_TIMEZONE] = "UTC",	    [PAL_CF_DEADLINE_MS] = "0",
		[PAL_CF_MAX_ATTEMPTS] = "5",	    [PAL_CF_MAX_AGE_MS] = "0",
		[PAL_CF_INITIAL_MS] = "1000",	    [PAL_CF_MAX_MS] = "60000",
		[PAL_CF_MULTIPLIER] = "2.0",	    [PAL_CF_JITTER] = "full",
	};
	e->call = pal_call_spec_new(f, err, sizeof err);
	assert_non_null(e->call);
	return e;
}

static void put(spec_cache *c, int i)
{
	char id[32];
	snprintf(id, sizeof id, "job-%d", i);
	pal__spec_cache_insert(c, id, 1, fresh(i));
}

/* Held for the caller, or NULL when not cached (no store to read from). */
static const spec_entry *get(spec_cache *c, int i)
{
	char id[32], err[128];
	bool transient;
	snprintf(id, sizeof id, "job-%d", i);
	return pal__spec_get(c, NULL, id, 1, err, sizeof err, &transient);
}

static void test_stays_within_its_bound(void **st)
{
	(void)st;
	spec_cache c;
	pal__spec_cache_init(&c, 100);
	size_t most = 0;
	for (int i = 0; i < 5000; i++) {
		put(&c, i);
		size_t n = g_hash_table_size(c.map);
		if (n > most)
			most = n;
	}
	assert_true(most <= 100);
	assert_int_equal(c.evicted + g_hash_table_size(c.map), 5000);
	/* The latest one is always there. */
	const spec_entry *e = get(&c, 4999);
	assert_non_null(e);
	pal__spec_release(&c, e);
	pal__spec_cache_free(&c);
}

static void test_held_entry_is_never_freed(void **st)
{
	(void)st;
	spec_cache c;
	pal__spec_cache_init(&c, 100);
	const spec_entry *held[10];
	for (int i = 0; i < 10; i++) {
		put(&c, i);
		held[i] = get(&c, i);
		assert_non_null(held[i]);
	}
	for (int i = 10; i < 3000; i++)
		put(&c, i);
	for (int i = 0; i < 10; i++) {
		const spec_entry *e = get(&c, i);
		assert_ptr_equal(e, held[i]); /* still cached, same memory */
		assert_string_equal(e->call->url, held[i]->call->url);
		pal__spec_release(&c, e);
		pal__spec_release(&c, held[i]);
	}
	/* Released, they may go like any other. */
	for (int i = 3000; i < 6000; i++)
		put(&c, i);
	int left = 0;
	for (int i = 0; i < 10; i++) {
		const spec_entry *e = get(&c, i);
		left += e != NULL;
		pal__spec_release(&c, e);
	}
	assert_int_equal(left, 0);
	pal__spec_cache_free(&c);
}

/* Twenty versions called all the time stay cached while thousands of
 * versions called once pass through. */
static void test_called_versions_stay(void **st)
{
	(void)st;
	spec_cache c;
	pal__spec_cache_init(&c, 100);
	int rereads = 0;
	for (int i = 0; i < 20; i++)
		put(&c, i);
	for (int i = 1000; i < 6000; i++) {
		put(&c, i);
		for (int h = 0; h < 20; h++) {
			const spec_entry *e = get(&c, h);
			if (!e) {
				rereads++;
				put(&c, h);
				e = get(&c, h);
			}
			assert_non_null(e);
			pal__spec_release(&c, e);
		}
	}
	/* At most the first sweep (a cache full of entries all called since
	 * the last one) takes some of them. */
	assert_true(rereads <= 20);
	assert_true(c.evicted >= 4800);
	pal__spec_cache_free(&c);
}

static void test_no_bound(void **st)
{
	(void)st;
	spec_cache c;
	pal__spec_cache_init(&c, 0);
	for (int i = 0; i < 3000; i++)
		put(&c, i);
	assert_int_equal(g_hash_table_size(c.map), 3000);
	assert_int_equal(c.evicted, 0);
	/* A second insert under a cached key keeps the first entry. */
	const spec_entry *e = get(&c, 7);
	put(&c, 7);
	const spec_entry *again = get(&c, 7);
	assert_ptr_equal(e, again);
	pal__spec_release(&c, e);
	pal__spec_release(&c, again);
	pal__spec_cache_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stays_within_its_bound),
		cmocka_unit_test(test_held_entry_is_never_freed),
		cmocka_unit_test(test_called_versions_stay),
		cmocka_unit_test(test_no_bound),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
