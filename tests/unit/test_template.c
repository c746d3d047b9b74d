/*
 * test_template.c - placeholders and secrets in job templates.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
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
		cmocka_unit_test(test_template_key_of_scheduled_run_is_the_template),
		cmocka_unit_test(test_template_key_of_manual_run_ends_in_its_request_id),
		cmocka_unit_test(test_template_key_using_request_id_is_rendered_as_written),
		cmocka_unit_test(test_template_uses_reads_placeholders_as_the_renderer_does),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
