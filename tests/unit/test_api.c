/*
 * test_api.c - the HTTP API without a database (src/api/api.c,
 * src/store/tokens.c): roles, tenants, the secret comparison, and the
 * answers that need no database: the document, unknown routes and methods,
 * a missing token, and a database that cannot be reached.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>
#include "palisade/api.h"
#include "palisade/name.h"
#include "palisade/secret.h"
#include "palisade/tokens.h"
#include "palisade/version.h"

static void test_roles_are_ordered(void **state)
{
	pal_role r;
	(void)state;
	assert_int_equal(pal_role_parse("operator", &r), PAL_OK);
	assert_int_equal(r, PAL_ROLE_OPERATOR);
	assert_int_equal(pal_role_parse("root", &r), PAL_EINVAL);
	assert_int_equal(pal_role_parse("none", &r), PAL_EINVAL);
	assert_string_equal(pal_role_name(PAL_ROLE_ADMIN), "admin");
	assert_true(pal_role_allows(PAL_ROLE_ADMIN, PAL_ROLE_OPERATOR));
	assert_true(pal_role_allows(PAL_ROLE_OPERATOR, PAL_ROLE_VIEWER));
	assert_false(pal_role_allows(PAL_ROLE_VIEWER, PAL_ROLE_OPERATOR));
	assert_false(pal_role_allows(PAL_ROLE_NONE, PAL_ROLE_NONE));
}

static void test_tenant_scope(void **state)
{
	pal_token_identity all = {0}, red = {.n_tenants = 1};
	(void)state;
	strcpy(red.tenants[0], "red");
	assert_true(pal_token_sees_tenant(&all, "blue"));
	assert_true(pal_token_sees_tenant(&red, "red"));
	assert_false(pal_token_sees_tenant(&red, "blue"));
	assert_false(pal_token_sees_tenant(&red, NULL));
}

static void test_secret_equal(void **state)
{
	(void)state;
	assert_true(pal_secret_equal("abc", "abc"));
	assert_false(pal_secret_equal("abd", "abc"));
	assert_false(pal_secret_equal("ab", "abc"));
	assert_false(pal_secret_equal("abcabc", "abc")); /* a repetition is no match */
	assert_false(pal_secret_equal("", "abc"));
}

/* A request's headers and query arguments for pal_api_serve(). */
struct req_ctx {
	const char *auth;
};
static const char *lookup(void *ctx, bool header, const char *name)
{
	const struct req_ctx *r = ctx;
	return header && !strcmp(name, "Authorization") ? r->auth : NULL;
}

/* Serve METHOD PATH with AUTH against an API whose database is unreachable. */
static pal_api_reply serve(const char *method, const char *path, const char *auth)
{
	pal_api *api;
	pal_api_config cfg = {.conninfo =
				  "host=/nonexistent/palisade-test port=1 connect_timeout=1",
			      .admin_token = "node-secret"};
	assert_int_equal(pal_api_open(&cfg, &api, (char[64]){0}, 64), PAL_OK);
	struct req_ctx rc = {auth};
	pal_api_request req = {
	    .method = method, .path = path, .client = "127.0.0.1:1", .lookup = lookup, .ctx = &rc};
	pal_api_reply out;
	pal_api_serve(api, &req, &out);
	pal_api_close(api);
	return out;
}

/* The problem type of a reply's body (static storage). */
static const char *problem_type(const pal_api_reply *r)
{
	static char t[96];
	json_t *o = json_loadb(r->body, r->len, 0, NULL);
	snprintf(t, sizeof t, "%s", json_string_value(json_object_get(o, "type")));
	json_decref(o);
	return t;
}

static void test_openapi_served_without_token(void **state)
{
	(void)state;
	pal_api_reply r = serve("GET", "/api/v1/openapi.json", NULL);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.content_type, "application/json");
	json_t *doc = json_loadb(r.body, r.len, 0, NULL);
	assert_string_equal(json_string_value(json_object_get(doc, "openapi")), "3.1.0");
	assert_non_null(
	    json_object_get(json_object_get(doc, "paths"), "/api/v1/jobs/{id}/trigger"));
	json_decref(doc);
	free(r.body);
}

static void test_unknown_route_and_method(void **state)
{
	(void)state;
	pal_api_reply r = serve("GET", "/api/v1/nope", "Bearer x");
	assert_int_equal(r.status, 404);
	assert_string_equal(r.content_type, "application/problem+json");
	assert_string_equal(problem_type(&r), "urn:palisade:problem:no-route");
	free(r.body);
	r = serve("PUT", "/api/v1/jobs/a", "Bearer x");
	assert_int_equal(r.status, 405);
	assert_string_equal(problem_type(&r), "urn:palisade:problem:method-not-allowed");
	free(r.body);
	r = serve("GET", "/api/v1/jobs/a/b/c", "Bearer x");
	assert_int_equal(r.status, 404);
	free(r.body);
}

static void test_missing_token_is_401_without_database(void **state)
{
	(void)state;
	pal_api_reply r = serve("GET", "/api/v1/jobs", NULL);
	assert_int_equal(r.status, 401);
	assert_string_equal(problem_type(&r), "urn:palisade:problem:unauthorized");
	assert_int_equal(r.n_headers, 2);
	assert_string_equal(r.header_name[0], "Palisade-Version");
	assert_string_equal(r.header_value[0], PALISADE_VERSION);
	assert_string_equal(r.header_name[1], "WWW-Authenticate");
	free(r.body);
	r = serve("GET", "/api/v1/jobs", "Basic abc");
	assert_int_equal(r.status, 401);
	free(r.body);
}

static void test_unreachable_database_is_503(void **state)
{
	(void)state;
	pal_api_reply r = serve("GET", "/api/v1/jobs", "Bearer node-secret");
	assert_int_equal(r.status, 503);
	assert_string_equal(problem_type(&r), "urn:palisade:problem:unavailable");
	free(r.body);
}

/* The one name rule of jobs, tenants, groups and tokens (name.h), as the
 * API, the token store, the CLI and the job file loader apply it. */
static void test_name_rule(void **state)
{
	(void)state;
	assert_true(pal_name_ok("red", 64));
	assert_true(pal_name_ok("0a.b_c-d", 64));
	assert_false(pal_name_ok(NULL, 64));
	assert_false(pal_name_ok("", 64));
	assert_false(pal_name_ok(".red", 64));
	assert_false(pal_name_ok("-red", 64));
	assert_false(pal_name_ok("Red", 64));
	assert_false(pal_name_ok("red blue", 64));
	assert_true(pal_name_ok("abcd", 4));
	assert_false(pal_name_ok("abcde", 4));
	assert_int_equal(pal_name_bad_byte("ab/c", 4), 2);
	assert_int_equal(pal_name_bad_byte("_ab", 3), 0);
	assert_int_equal(pal_name_bad_byte("a_b", 3), 3);
	assert_int_equal(pal_name_bad_byte("ab\0c", 4), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_roles_are_ordered),
	    cmocka_unit_test(test_name_rule),
	    cmocka_unit_test(test_tenant_scope),
	    cmocka_unit_test(test_secret_equal),
	    cmocka_unit_test(test_openapi_served_without_token),
	    cmocka_unit_test(test_unknown_route_and_method),
	    cmocka_unit_test(test_missing_token_is_401_without_database),
	    cmocka_unit_test(test_unreachable_database_is_503),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
