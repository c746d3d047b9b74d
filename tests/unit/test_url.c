/*
 * test_url.c - URL helpers (src/util/url.c): the breaker host and the
 * masking of userinfo passwords in messages.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "palisade/url.h"

static void test_url_redact(void **state)
{
	char b[128];

	(void)state;
	pal_url_redact("http://u:pw@h:1/x?y", b, sizeof b);
	assert_string_equal(b, "http://u:***@h:1/x?y");
	pal_url_redact("https://user@h/x", b, sizeof b);
	assert_string_equal(b, "https://user@h/x");
	pal_url_redact("ftp://a:b:c@h", b, sizeof b);
	assert_string_equal(b, "ftp://a:***@h");
	pal_url_redact("http://h/p@x:y", b, sizeof b);
	assert_string_equal(b, "http://h/p@x:y"); /* '@' in the path is no userinfo */
	pal_url_redact("u:pw@h/x", b, sizeof b);
	assert_string_equal(b, "u:***@h/x");
	pal_url_redact("http://u:secret@h/x", b, 12);
	assert_null(strstr(b, "secret"));
}

static void test_url_redact_text(void **state)
{
	char b[256];

	(void)state;
	pal_url_redact_text("invalid URI propagated to internal parser routine: "
			    "\"postgresql://app:hunter2@[::1/db\"",
			    b, sizeof b);
	assert_null(strstr(b, "hunter2"));
	assert_non_null(strstr(b, "postgresql://app:***@[::1/db\""));
	pal_url_redact_text("a http://x:1@h/ and https://y:2@g/ end", b, sizeof b);
	assert_string_equal(b, "a http://x:***@h/ and https://y:***@g/ end");
	pal_url_redact_text("no url here: host=h password=p", b, sizeof b);
	assert_string_equal(b, "no url here: host=h password=p");
	pal_url_redact_text("http://u:secretsecret@h", b, 14);
	assert_null(strstr(b, "secret"));
}

static void test_url_host(void **state)
{
	char b[64];

	(void)state;
	pal_url_host("http://u:pw@h:1/x", b, sizeof b);
	assert_string_equal(b, "h:1");
	pal_url_host("https://[::1]:8443/x", b, sizeof b);
	assert_string_equal(b, "[::1]:8443");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_url_redact),
		cmocka_unit_test(test_url_redact_text),
		cmocka_unit_test(test_url_host),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
