/*
 * test_html.c - the escaping of the nodes' pages (src/util/html.c): every
 * value from the database, ZooKeeper or a peer is text, never markup, a URL
 * or a shell word.
 */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "palisade/html.h"

static char *run_text(const char *s)
{
	GString *o = g_string_new(NULL);
	pal_html_text(o, s);
	return g_string_free(o, FALSE);
}

static void test_html_escapes_markup(void **state)
{
	(void)state;
	char *s = run_text("<script>alert('x')</script> & \"q\"");
	assert_string_equal(s, "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;");
	g_free(s);
	s = run_text(NULL);
	assert_string_equal(s, "");
	g_free(s);
}

static void test_html_replaces_controls_and_bad_utf8(void **state)
{
	(void)state;
	/* ESC, DEL, a C1 control, a lone continuation byte; tab and newline stay */
	char *s = run_text("a\x1b" "b\x7f" "c\xc2\x85" "d\x80" "e\tf\ng");
	assert_string_equal(s, "a\xef\xbf\xbd" "b\xef\xbf\xbd" "c\xef\xbf\xbd" "d\xef\xbf\xbd" "e\tf\ng");
	g_free(s);
	s = run_text("caf\xc3\xa9 \xe2\x82\xac"); /* valid UTF-8 passes */
	assert_string_equal(s, "caf\xc3\xa9 \xe2\x82\xac");
	g_free(s);
}

static void test_html_urlarg(void **state)
{
	(void)state;
	GString *o = g_string_new(NULL);
	pal_html_urlarg(o, "a b&c=d/\"<>#%\xc3\xa9.-_~");
	assert_string_equal(o->str, "a%20b%26c%3Dd%2F%22%3C%3E%23%25%C3%A9.-_~");
	g_string_free(o, TRUE);
}

static void test_html_shell_quote(void **state)
{
	(void)state;
	GString *o = g_string_new(NULL);
	pal_shell_quote(o, "it's; rm -rf /");
	assert_string_equal(o->str, "'it'\\''s; rm -rf /'");
	g_string_free(o, TRUE);
}

static void test_html_value(void **state)
{
	(void)state;
	GString *o = g_string_new(NULL);
	json_t *v = json_pack("[s, n, b, i, f]", "<b>", true, 42, 1.5);
	for (size_t i = 0; i < json_array_size(v); i++) {
		pal_html_value(o, json_array_get(v, i));
		g_string_append_c(o, '|');
	}
	pal_html_value(o, NULL);
	assert_string_equal(o->str, "&lt;b&gt;|-|yes|42|1.5|-");
	json_decref(v);
	g_string_free(o, TRUE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_html_escapes_markup),
		cmocka_unit_test(test_html_replaces_controls_and_bad_utf8),
		cmocka_unit_test(test_html_urlarg),
		cmocka_unit_test(test_html_shell_quote),
		cmocka_unit_test(test_html_value),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
