/* test_tstate.c - the trigger-state tables (include/palisade/tstate.def,
 * src/util/tstate.c) against themselves, against the states the schema
 * allows (sql/001_init.sql) and against the edges the database checks
 * (sql/functions/palisade_trigger_edge_ok.sql), and the states the door
 * (sql/functions/palisade_trigger_move.sql) treats as terminal. */
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

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	static char buf[1 << 16];
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	return buf;
}

/* The quoted names of TEXT from P up to END, parsed as states into SET
 * (a bit per state); a name that is no state fails the test. */
static unsigned quoted_states(const char *p, const char *end, const char *where)
{
	unsigned set = 0;
	for (const char *q = strchr(p, '\''); q && q < end; q = strchr(q + 1, '\'')) {
		const char *e = strchr(q + 1, '\'');
		char name[32];
		snprintf(name, sizeof name, "%.*s", (int)(e - q - 1), q + 1);
		q = e;
		pal_tstate st;
		if (pal_tstate_parse(name, &st) != PAL_OK)
			fail_msg("%s names \"%s\", which is no state of tstate.def", where, name);
		set |= 1u << st;
	}
	return set;
}

/* Every state the CHECK constraint of triggers.state lists has a name in
 * the table, and the other way round: the CHECK as 001 wrote it, until a
 * later migration (039) replaced it with triggers_state_check. */
static void test_tstate_table_matches_the_schema(void **state)
{
	(void)state;
	const char *sql = slurp("sql/039_shadow.sql");
	static const char check[] = "ADD CONSTRAINT triggers_state_check CHECK (state IN (";
	const char *p = strstr(sql, check);
	assert_non_null(p);
	const char *end = strstr(p, "))");
	assert_non_null(end);
	assert_int_equal(quoted_states(p + sizeof check - 1, end, "the CHECK of triggers.state"),
			 (1u << PAL_TS__COUNT) - 1);
	/* 001's, which 039 replaces, lists every state but shadow */
	const char *first = slurp("sql/001_init.sql");
	static const char check1[] =
	    "state            text NOT NULL DEFAULT 'pending' CHECK (state IN (";
	p = strstr(first, check1);
	assert_non_null(p);
	end = strstr(p, "))");
	assert_non_null(end);
	assert_int_equal(quoted_states(p + sizeof check1 - 1, end, "001's CHECK of triggers.state"),
			 ((1u << PAL_TS__COUNT) - 1) & ~(1u << PAL_TS_SHADOW));
}

/* Every edge palisade_trigger_edge_ok() accepts is one of tstate.def, and
 * the other way round: each `WHEN 'from' THEN new_state IN (...)` of its
 * CASE against pal_tstate_edge_ok(), a state with no WHEN (the terminal
 * ones, ELSE false) against no edge at all. */
static void test_tstate_edges_match_the_sql(void **state)
{
	(void)state;
	const char *sql = slurp("sql/functions/palisade_trigger_edge_ok.sql");
	unsigned sql_edges[PAL_TS__COUNT] = {0};
	int whens = 0;
	for (const char *w = strstr(sql, "WHEN '"); w; w = strstr(w + 1, "WHEN '")) {
		const char *then = strstr(w, "THEN new_state IN (");
		assert_non_null(then);
		const char *close = strchr(then, ')');
		assert_non_null(close);
		unsigned from = quoted_states(w, then, "a WHEN");
		assert_int_equal(__builtin_popcount(from), 1);
		int f = __builtin_ctz(from);
		if (sql_edges[f])
			fail_msg("state %s has two WHENs", pal_tstate_name((pal_tstate)f));
		sql_edges[f] = quoted_states(then, close, "an IN list");
		whens++;
	}
	assert_true(whens > 0);
	for (int f = 0; f < PAL_TS__COUNT; f++)
		for (int t = 0; t < PAL_TS__COUNT; t++) {
			bool in_sql = sql_edges[f] & (1u << t);
			if (in_sql != pal_tstate_edge_ok((pal_tstate)f, (pal_tstate)t))
				fail_msg(
				    "edge %s -> %s: %s in the SQL, %s in tstate.def",
				    pal_tstate_name((pal_tstate)f), pal_tstate_name((pal_tstate)t),
				    in_sql ? "allowed" : "refused", in_sql ? "absent" : "present");
		}
	/* a terminal state has no way out, and every other has one */
	for (int f = 0; f < PAL_TS__COUNT; f++)
		assert_int_equal(pal_tstate_terminal((pal_tstate)f), sql_edges[f] == 0);
	assert_false(pal_tstate_edge_ok(PAL_TS__COUNT, PAL_TS_PENDING));
}

/* The door sets finished_at and clears the lease on the terminal states:
 * each `p_to IN (...)` list of palisade_trigger_move() is the terminal
 * states of tstate.def exactly, or holds none of them (the states that
 * keep a lease), and the terminal list is there (finished_at, the retry
 * time). */
static void test_tstate_door_knows_the_terminal_states(void **state)
{
	(void)state;
	const char *sql = slurp("sql/functions/palisade_trigger_move.sql");
	unsigned terminal = 0;
	for (int s = 0; s < PAL_TS__COUNT; s++)
		if (pal_tstate_terminal((pal_tstate)s))
			terminal |= 1u << s;
	int lists = 0, terminal_lists = 0;
	for (const char *p = strstr(sql, "p_to IN ("); p; p = strstr(p + 1, "p_to IN (")) {
		const char *close = strchr(p, ')');
		assert_non_null(close);
		unsigned set = quoted_states(p, close, "a p_to IN list of the door");
		if (set & terminal) {
			if (set != terminal)
				fail_msg("the door names some terminal states but not all in: %.*s",
					 (int)(close - p + 1), p);
			terminal_lists++;
		}
		lists++;
	}
	assert_true(lists > 0);
	assert_true(terminal_lists >= 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tstate_names_round_trip),
	    cmocka_unit_test(test_tstate_table_matches_the_schema),
	    cmocka_unit_test(test_tstate_edges_match_the_sql),
	    cmocka_unit_test(test_tstate_door_knows_the_terminal_states),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
