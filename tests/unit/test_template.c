/*
 * test_template.c - placeholders and secrets in job templates.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "palisade/template.h"

static const pal_tpl_vars vars = { .job = "billing.daily", .scheduled_at = 1774746000,
				   .scheduled_date = "2026-03-29", .partition = 2, .trigger = 77,
				   .request_id = "", .idempotency_key = "billing.daily/2026-03-29T01:00:00Z/2" };

static char *render(const char *tpl, unsigned flags)
{
	char *out = NULL, err[256];
	assert_int_equal(pal_tpl_render(tpl, &vars, flags, &out, err, sizeof err), 0);
	return out;
}

static void test_template_default_key(void **st)
{
	char *s = render("{job}/{scheduled_at}/{partition}", 0);
	assert_string_equal(s, "billing.daily/2026-03-29T01:00:00Z/2");
	free(s);
}

static void test_template_json_braces_stay_literal(void **st)
{
	char *s = render("{\"day\": \"{scheduled_date}\", \"partition\": {partition}, \"x\": {}}", 0);
	assert_string_equal(s, "{\"day\": \"2026-03-29\", \"partition\": 2, \"x\": {}}");
	free(s);
}

static void test_template_url_encodes_values(void **st)
{
	char *s = render("http://h/effects/{idempotency_key}", PAL_TPL_URL);
	assert_string_equal(s, "http://h/effects/billing.daily%2F2026-03-29T01%3A00%3A00Z%2F2");
	free(s);
}

static void test_template_secrets_resolved_only_when_asked(void **st)
{
	setenv("PAL_TEST_TOKEN", "s3cret", 1);
	char *s = render("Bearer ${PAL_TEST_TOKEN}", PAL_TPL_SECRETS);
	assert_string_equal(s, "Bearer s3cret");
	free(s);
	s = render("Bearer ${PAL_TEST_TOKEN}", 0);
	assert_string_equal(s, "Bearer ${PAL_TEST_TOKEN}");
	free(s);
}

static void test_template_missing_secret_names_variable_not_value(void **st)
{
	unsetenv("PAL_TEST_MISSING");
	char *out = NULL, err[256];
	assert_int_equal(pal_tpl_render("x ${PAL_TEST_MISSING}", &vars, PAL_TPL_SECRETS, &out, err,
					sizeof err),
			 PAL_ENOENT);
	assert_null(out);
	assert_non_null(strstr(err, "PAL_TEST_MISSING"));
}

/* Render TPL with secrets for a trigger of TENANT under policy P: the
 * return code, the message into ERR. */
static int render_as(const char *tpl, const pal_secret_policy *p, const char *tenant, char **out,
		     char err[512])
{
	pal_tpl_vars v = vars;
	v.secrets = p;
	v.tenant = tenant;
	*out = NULL;
	return pal_tpl_render(tpl, &v, PAL_TPL_SECRETS, out, err, 512);
}

static void test_template_node_own_variables_are_never_resolved(void **st)
{
	/* set on the node, yet refused before the environment is read; the
	 * message names the variable, never its value */
	const char *own[] = {"PALISADE_ADMIN_TOKEN", "PALISADE_ZK_AUTH", "PGPASSWORD",
			     "PGSERVICEFILE", "PGSSLKEY", "PGLOCALEDIR", "PGREQUIREAUTH",
			     "HTTPS_PROXY", "TZDIR", "NODE_TOK", "ZK_CREDS"};
	pal_secret_policy p = {.token_env = "NODE_TOK", .zk_auth_env = "ZK_CREDS"};
	for (size_t i = 0; i < sizeof own / sizeof *own; i++) {
		setenv(own[i], "v4lue", 1);
		char tpl[64], err[512], *out;
		snprintf(tpl, sizeof tpl, "x ${%s}", own[i]);
		assert_int_equal(render_as(tpl, &p, "red", &out, err), PAL_EPERM);
		assert_null(out);
		assert_non_null(strstr(err, own[i]));
		assert_non_null(strstr(err, "node's own"));
		assert_null(strstr(err, "v4lue"));
		unsetenv(own[i]);
	}
	/* the default policy (NULL) knows the fixed names only */
	setenv("NODE_TOK", "v4lue", 1);
	setenv("PALISADE_ADMIN_TOKEN", "v4lue", 1);
	char err[512], *out;
	assert_int_equal(render_as("${PALISADE_ADMIN_TOKEN}", NULL, "red", &out, err), PAL_EPERM);
	assert_int_equal(render_as("${NODE_TOK}", NULL, "red", &out, err), 0);
	free(out);
	/* a name that merely contains PG or PALISADE is a job's, and so is
	 * one that begins with PG but is not libpq's */
	const char *jobs[] = {"MY_PG_PASSWORD", "PGP_SIGNING_KEY", "PGP_PASSPHRASE", "PG",
			      "PGPASSWORD2", "PGSSL_X"};
	for (size_t i = 0; i < sizeof jobs / sizeof *jobs; i++) {
		char tpl[64];
		snprintf(tpl, sizeof tpl, "${%s}", jobs[i]);
		setenv(jobs[i], "ok", 1);
		assert_int_equal(pal_secret_check(&p, "red", jobs[i]), PAL_SECRET_OK);
		assert_int_equal(render_as(tpl, &p, "red", &out, err), 0);
		assert_string_equal(out, "ok");
		free(out);
		unsetenv(jobs[i]);
	}
	unsetenv("NODE_TOK");
	unsetenv("PALISADE_ADMIN_TOKEN");
}

static void test_template_secrets_bound_to_tenants(void **st)
{
	char *red_names[] = {"RED_*", "SHARED_KEY"}, *all_names[] = {"*"};
	pal_secret_grant g[] = {{.tenant = "ops", .names = all_names, .n_names = 1},
				{.tenant = "red", .names = red_names, .n_names = 2}};
	pal_secret_policy p = {.token_env = "PALISADE_ADMIN_TOKEN", .grants = g, .n_grants = 2};
	setenv("RED_API_KEY", "r", 1);
	setenv("SHARED_KEY", "s", 1);
	setenv("BLUE_API_KEY", "b", 1);
	char err[512], *out;
	assert_int_equal(render_as("${RED_API_KEY}/${SHARED_KEY}", &p, "red", &out, err), 0);
	assert_string_equal(out, "r/s");
	free(out);
	/* another tenant's variable, and a tenant not listed: not granted by
	 * this node (PAL_ENOGRANT, which the executor hands back for a node
	 * whose executor.secrets may differ), not the node's own (PAL_EPERM) */
	assert_int_equal(render_as("${BLUE_API_KEY}", &p, "red", &out, err), PAL_ENOGRANT);
	assert_non_null(strstr(err, "does not give BLUE_API_KEY to tenant red"));
	assert_int_equal(render_as("${SHARED_KEY}", &p, "blue", &out, err), PAL_ENOGRANT);
	/* SHARED_KEY is exact, not a prefix */
	setenv("SHARED_KEY2", "x", 1);
	assert_int_equal(render_as("${SHARED_KEY2}", &p, "red", &out, err), PAL_ENOGRANT);
	/* "*" gives any name, but never the node's own */
	assert_int_equal(render_as("${BLUE_API_KEY}", &p, "ops", &out, err), 0);
	free(out);
	assert_int_equal(render_as("${PALISADE_ADMIN_TOKEN}", &p, "ops", &out, err), PAL_EPERM);
	/* without grants: any tenant, any name but the node's own */
	p.n_grants = 0;
	assert_int_equal(render_as("${BLUE_API_KEY}", &p, "red", &out, err), 0);
	free(out);
	/* refused before the environment is read: not a missing secret
	 * (PAL_ENOENT), whatever this node has */
	unsetenv("BLUE_API_KEY");
	p.n_grants = 2;
	assert_int_equal(render_as("${BLUE_API_KEY}", &p, "red", &out, err), PAL_ENOGRANT);
	unsetenv("RED_API_KEY");
	unsetenv("SHARED_KEY");
	unsetenv("SHARED_KEY2");
}

/* The key a trigger sends: TPL rendered for VARS with request id RID. */
static char *key_for(const char *tpl, const char *rid)
{
	pal_tpl_vars v = vars;
	v.request_id = rid;
	char *out = NULL, err[256];
	assert_int_equal(pal_tpl_render_key(tpl, &v, &out, err, sizeof err), 0);
	return out;
}

static void test_template_key_of_scheduled_run_is_the_template(void **st)
{
	char *s = key_for("{job}/{scheduled_at}/{partition}", "");
	assert_string_equal(s, "billing.daily/2026-03-29T01:00:00Z/2");
	free(s);
	s = key_for("{job}/{scheduled_at}/{partition}", NULL);
	assert_string_equal(s, "billing.daily/2026-03-29T01:00:00Z/2");
	free(s);
}

static void test_template_key_of_manual_run_ends_in_its_request_id(void **st)
{
	char *s = key_for("{job}/{scheduled_at}/{partition}", "INC-4711");
	assert_string_equal(s, "billing.daily/2026-03-29T01:00:00Z/2/INC-4711");
	free(s);
	/* another request id at the same instant: another key */
	s = key_for("{job}/{scheduled_at}/{partition}", "INC-4712");
	assert_string_equal(s, "billing.daily/2026-03-29T01:00:00Z/2/INC-4712");
	free(s);
}

static void test_template_key_using_request_id_is_rendered_as_written(void **st)
{
	char *s = key_for("{job}:{request_id}:{scheduled_at}:{partition}", "INC-4711");
	assert_string_equal(s, "billing.daily:INC-4711:2026-03-29T01:00:00Z:2");
	free(s);
	s = key_for("{job}:{request_id}:{scheduled_at}:{partition}", "");
	assert_string_equal(s, "billing.daily::2026-03-29T01:00:00Z:2");
	free(s);
}

static void test_template_uses_reads_placeholders_as_the_renderer_does(void **st)
{
	assert_true(pal_tpl_uses("{job}/{request_id}", "request_id"));
	assert_true(pal_tpl_uses("{{request_id}}", "request_id"));
	assert_false(pal_tpl_uses("{job}/{scheduled_at}/{partition}", "request_id"));
	assert_false(pal_tpl_uses("{request_idx}/{xrequest_id}/{request_id", "request_id"));
	assert_false(pal_tpl_uses("request_id", "request_id"));
	/* a name that is not a placeholder is literal text in the key: with a
	 * request id the suffix is still added */
	char *s = key_for("{job}/{scheduled_at}/{request_idx}", "R1");
	assert_string_equal(s, "billing.daily/2026-03-29T01:00:00Z/{request_idx}/R1");
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_template_default_key),
		cmocka_unit_test(test_template_json_braces_stay_literal),
		cmocka_unit_test(test_template_url_encodes_values),
		cmocka_unit_test(test_template_secrets_resolved_only_when_asked),
		cmocka_unit_test(test_template_missing_secret_names_variable_not_value),
		cmocka_unit_test(test_template_node_own_variables_are_never_resolved),
		cmocka_unit_test(test_template_secrets_bound_to_tenants),
		cmocka_unit_test(test_template_key_of_scheduled_run_is_the_template),
		cmocka_unit_test(test_template_key_of_manual_run_ends_in_its_request_id),
		cmocka_unit_test(test_template_key_using_request_id_is_rendered_as_written),
		cmocka_unit_test(test_template_uses_reads_placeholders_as_the_renderer_does),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
