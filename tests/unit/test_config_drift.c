/*
 * test_config_drift.c - which executor nodes disagree on the settings they
 * must share (pal_coord_config_drift(), src/coord/inspect.c), from the
 * nodes as `palisade status` lists them.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>
#include "palisade/coord.h"

static json_t *drift_of(const char *nodes_json)
{
	json_t *nodes = json_loads(nodes_json, 0, NULL);
	assert_non_null(nodes);
	json_t *d = pal_coord_config_drift(nodes);
	json_decref(nodes);
	return d;
}

static void test_agreeing_nodes_give_nothing(void **state)
{
	(void)state;
	json_t *d = drift_of(
	    "[{\"id\": \"x1\", \"info\": {\"roles\": [\"executor\"], \"config\":"
	    "  {\"executor.target_hosts\": \"abc\", \"executor.tenants\": \"default\"}}},"
	    " {\"id\": \"x2\", \"info\": {\"roles\": [\"controller\", \"executor\"], \"config\":"
	    "  {\"executor.target_hosts\": \"abc\", \"executor.tenants\": \"default\"}}},"
	    " {\"id\": \"c1\", \"info\": {\"roles\": [\"controller\"]}}]");
	assert_int_equal(json_array_size(d), 0);
	json_decref(d);
}

static void test_each_value_with_its_nodes_an_older_node_unpublished(void **state)
{
	(void)state;
	json_t *d = drift_of(
	    "[{\"id\": \"x1\", \"info\": {\"roles\": [\"executor\"], \"config\":"
	    "  {\"executor.target_hosts\": \"abc\", \"executor.secrets\": \"default\"}}},"
	    " {\"id\": \"x2\", \"info\": {\"roles\": [\"executor\"], \"config\":"
	    "  {\"executor.target_hosts\": \"default\", \"executor.secrets\": \"default\"}}},"
	    " {\"id\": \"x3\", \"info\": {\"roles\": [\"executor\"], \"config\":"
	    "  {\"executor.target_hosts\": \"abc\", \"executor.secrets\": \"default\"}}},"
	    " {\"id\": \"old\", \"info\": {\"version\": \"0.3.0\", \"roles\": [\"executor\"]}},"
	    " {\"id\": \"gone\", \"info\": \"not json\"}]");
	assert_int_equal(json_array_size(d), 2);
	assert_string_equal(json_string_value(json_array_get(d, 0)),
			    "executor.target_hosts differs between executor nodes: abc: x1, x3; "
			    "default: x2; unpublished (an older release): old (a node where it is "
			    "default or unpublished calls any host)");
	assert_string_equal(json_string_value(json_array_get(d, 1)),
			    "executor.secrets differs between executor nodes: default: x1, x2, x3; "
			    "unpublished (an older release): old");
	json_decref(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_agreeing_nodes_give_nothing),
	    cmocka_unit_test(test_each_value_with_its_nodes_an_older_node_unpublished),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
