/*
 * test_phase.c - the phases of an executor call (src/executor/phase.c,
 * phase.def): the edges are exactly the moves the executor makes, parking
 * counts the call against its host and unparking gives it back, and a move
 * that is not an edge is logged as an error.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "palisade/log.h"
#include "../../src/executor/executor_int.h"

/* The moves the executor makes (claim.c, outcome.c, executor.c), written
 * out once more: the table must say exactly these. */
static const struct {
	pal__phase from, to;
} want[] = {
    {PHASE_CLAIMED, PHASE_AHEAD},  {PHASE_CLAIMED, PHASE_QUERY}, {PHASE_CLAIMED, PHASE_CALL},
    {PHASE_CLAIMED, PHASE_PARKED}, {PHASE_AHEAD, PHASE_QUERY},	 {PHASE_AHEAD, PHASE_CALL},
    {PHASE_AHEAD, PHASE_PARKED},   {PHASE_PARKED, PHASE_QUERY},	 {PHASE_PARKED, PHASE_CALL},
    {PHASE_QUERY, PHASE_CALL},	   {PHASE_CALL, PHASE_QUERY},	 {PHASE_CALL, PHASE_WAIT},
    {PHASE_WAIT, PHASE_CALL},
};

static void test_edges_are_the_executors_moves(void **state)
{
	(void)state;
	for (int f = 0; f < PHASE__COUNT; f++)
		for (int t = 0; t < PHASE__COUNT; t++) {
			bool w = false;
			for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
				w |= want[i].from == (pal__phase)f && want[i].to == (pal__phase)t;
			if (pal__phase_edge_ok((pal__phase)f, (pal__phase)t) != w)
				fail_msg("edge %s -> %s: table says %d, want %d",
					 pal__phase_name((pal__phase)f),
					 pal__phase_name((pal__phase)t), !w, w);
		}
	assert_false(pal__phase_edge_ok(PHASE__COUNT, PHASE_CALL));
	assert_false(pal__phase_edge_ok(PHASE_CALL, (pal__phase)-1));
	assert_string_equal(pal__phase_name(PHASE_PARKED), "parked");
	assert_string_equal(pal__phase_name(PHASE__COUNT), "?");
}

/* The log, sent to a file for the test; read back whole. */
static FILE *logf;

static int log_to_file(void **state)
{
	(void)state;
	logf = tmpfile();
	assert_non_null(logf);
	pal_log_set_fd(fileno(logf));
	return 0;
}

static int log_back(void **state)
{
	(void)state;
	pal_log_set_fd(1);
	fclose(logf);
	return 0;
}

static char *logged(void)
{
	static char buf[8192];
	fflush(logf);
	size_t n = pread(fileno(logf), buf, sizeof buf - 1, 0);
	buf[n == (size_t)-1 ? 0 : n] = 0;
	return buf;
}

static void test_park_counts_the_call_against_its_host(void **state)
{
	(void)state;
	pal_breaker_config bc = {
	    .window = 20, .failure_rate = 0.8, .open_ms = 5000, .probe_failures = 3};
	pal_executor ex = {.breakers = pal_breakers_new(&bc)};
	assert_non_null(ex.breakers);
	pal__call k = {.ex = &ex, .c.id = 7};
	snprintf(k.host, sizeof k.host, "sink.example");
	assert_int_equal(k.ph, PHASE_CLAIMED); /* a new call, as calloc leaves it */
	assert_true(pal__phase_set(&ex, &k, PHASE_AHEAD));
	assert_true(pal__phase_park(&ex, &k, PHASE_QUERY));
	assert_int_equal(k.ph, PHASE_PARKED);
	assert_int_equal(k.parked_ph, PHASE_QUERY);
	assert_int_equal(pal_breaker_parked_count(ex.breakers, "sink.example"), 1);
	pal__phase_unpark(&ex, &k);
	assert_int_equal(k.ph, PHASE_QUERY);
	assert_int_equal(pal_breaker_parked_count(ex.breakers, "sink.example"), 0);
	/* not parked: nothing */
	pal__phase_unpark(&ex, &k);
	assert_int_equal(k.ph, PHASE_QUERY);
	assert_int_equal(pal_breaker_parked_count(ex.breakers, "sink.example"), 0);
	/* and on through a checkpointed call */
	assert_true(pal__phase_set(&ex, &k, PHASE_CALL));
	assert_true(pal__phase_set(&ex, &k, PHASE_WAIT));
	assert_true(pal__phase_set(&ex, &k, PHASE_CALL));
	assert_true(pal__phase_set(&ex, &k, PHASE_QUERY));
	assert_null(strstr(logged(), "phase_illegal"));
	pal_breakers_free(ex.breakers);
}

static void test_illegal_move_is_logged(void **state)
{
	(void)state;
	pal_breaker_config bc = {
	    .window = 20, .failure_rate = 0.8, .open_ms = 5000, .probe_failures = 3};
	pal_executor ex = {.breakers = pal_breakers_new(&bc)};
	pal__call k = {.ex = &ex, .c.id = 42};
	snprintf(k.host, sizeof k.host, "sink.example");
	/* a claimed call never waits for a next chunk */
	assert_false(pal__phase_set(&ex, &k, PHASE_WAIT));
	const char *log = logged();
	assert_non_null(strstr(log, "\"event\":\"executor.phase_illegal\""));
	assert_non_null(strstr(log, "\"trigger\":42"));
	assert_non_null(strstr(log, "\"from\":\"claimed\""));
	assert_non_null(strstr(log, "\"to\":\"wait\""));
	assert_non_null(strstr(log, "\"level\":\"error\""));
	/* made all the same: the caller goes on as if it were */
	assert_int_equal(k.ph, PHASE_WAIT);
	/* parking goes through pal__phase_park (it needs the phase to resume) */
	assert_false(pal__phase_set(&ex, &k, PHASE_PARKED));
	/* and it resumes only a query or a call */
	k = (pal__call){.ex = &ex, .c.id = 43};
	snprintf(k.host, sizeof k.host, "sink.example");
	assert_false(pal__phase_park(&ex, &k, PHASE_WAIT));
	assert_non_null(strstr(logged(), "\"resume\":\"wait\""));
	pal_breakers_free(ex.breakers);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_edges_are_the_executors_moves),
	    cmocka_unit_test_setup_teardown(test_park_counts_the_call_against_its_host, log_to_file,
					    log_back),
	    cmocka_unit_test_setup_teardown(test_illegal_move_is_logged, log_to_file, log_back),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
