/*
 * test_sink_inflight.c - the sink's set of apply requests in flight
 * (src/sink/inflight.c), which the status query reads: a key is in flight
 * from the first request's enter to the last one's leave, whatever the
 * order of duplicates, and the process-wide count follows every request.
 *
 * The sink's objects are not part of libpalisade.a (the Makefile links them
 * into bin/palisade-sink only), so this test compiles inflight.c directly.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "../../src/sink/inflight.c"

static int setup(void **state)
{
	sink_ctx *ctx = calloc(1, sizeof *ctx);
	assert_non_null(ctx);
	pthread_mutex_init(&ctx->mu, NULL);
	pal__sink_inflight_init(ctx);
	*state = ctx;
	return 0;
}

static int teardown(void **state)
{
	sink_ctx *ctx = *state;
	pal__sink_inflight_free(ctx);
	pthread_mutex_destroy(&ctx->mu);
	free(ctx);
	return 0;
}

static void test_sink_inflight_key_from_enter_to_leave(void **state)
{
	sink_ctx *ctx = *state;
	assert_false(pal__sink_inflight_has(ctx, "a"));
	assert_int_equal(pal__sink_inflight_enter(ctx, "a"), 1);
	assert_true(pal__sink_inflight_has(ctx, "a"));
	assert_false(pal__sink_inflight_has(ctx, "b"));
	assert_int_equal(pal__sink_inflight_leave(ctx, "a"), 0);
	assert_false(pal__sink_inflight_has(ctx, "a"));
}

static void test_sink_inflight_duplicates_keep_the_key_until_the_last_leaves(void **state)
{
	sink_ctx *ctx = *state;
	/* the key is copied: the caller's buffer may change or go */
	char key[8];
	strcpy(key, "dup");
	assert_int_equal(pal__sink_inflight_enter(ctx, key), 1);
	assert_int_equal(pal__sink_inflight_enter(ctx, "dup"), 2);
	assert_int_equal(pal__sink_inflight_enter(ctx, "other"), 3);
	strcpy(key, "xyz");
	assert_int_equal(pal__sink_inflight_leave(ctx, "dup"), 2);
	assert_true(pal__sink_inflight_has(ctx, "dup"));
	assert_int_equal(pal__sink_inflight_leave(ctx, "dup"), 1);
	assert_false(pal__sink_inflight_has(ctx, "dup"));
	assert_true(pal__sink_inflight_has(ctx, "other"));
	assert_int_equal(pal__sink_inflight_leave(ctx, "other"), 0);
	assert_int_equal(g_hash_table_size(ctx->inflight_keys), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_sink_inflight_key_from_enter_to_leave, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(
		test_sink_inflight_duplicates_keep_the_key_until_the_last_leaves, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
