/*
 * test_zkpath.c - the ZooKeeper path a cluster's nodes register under
 * (pal_coord_nodes_path, src/coord/inspect.c): the chroot of the connect
 * string is part of it, so that two clusters told apart only by their
 * chroot are two paths to `palisade migrate`.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "palisade/coord.h"

static void test_zkpath_chroot(void **state)
{
	char b[128];

	(void)state;
	pal_coord_nodes_path("h1:2181,h2:2181", "/palisade", "prod", b, sizeof b);
	assert_string_equal(b, "/palisade/prod/nodes");
	pal_coord_nodes_path("h1:2181,h2:2181/east", "/palisade", "prod", b, sizeof b);
	assert_string_equal(b, "/east/palisade/prod/nodes");
	pal_coord_nodes_path("h1:2181/east/", "/palisade", "prod", b, sizeof b);
	assert_string_equal(b, "/east/palisade/prod/nodes");
	pal_coord_nodes_path("h1:2181/", "/palisade", "prod", b, sizeof b);
	assert_string_equal(b, "/palisade/prod/nodes"); /* a lone "/" is no chroot */
	pal_coord_nodes_path(NULL, "/p", "c", b, sizeof b);
	assert_string_equal(b, "/p/c/nodes");
	pal_coord_nodes_path("h:1/a/b", "/p", "c", b, 8);
	assert_string_equal(b, "/a/b/p/"); /* truncated, terminated */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_zkpath_chroot),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
