/*
 * test_yamltree.c - the YAML tree loader: positions, styles, and every
 * input it must refuse (syntax, aliases and anchors, size, UTF-8, NUL,
 * empty, several documents, duplicate keys, depth, tags), plus the typed
 * accessors and did-you-mean.
 *
 * Fixtures live in tests/unit/fixtures (found next to this source file, or
 * in $PALISADE_FIXTURES).
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
#include "palisade/yamltree.h"

static const char *fixture(const char *name)
{
	static char buf[4096];
	const char *dir = getenv("PALISADE_FIXTURES");
	const char *src = __FILE__;
	const char *slash = strrchr(src, '/');

	if (dir && *dir)
		snprintf(buf, sizeof buf, "%s/%s", dir, name);
	else if (slash)
		snprintf(buf, sizeof buf, "%.*s/fixtures/%s", (int)(slash - src), src, name);
	else
		snprintf(buf, sizeof buf, "fixtures/%s", name);
	return buf;
}

/* Index of the diagnostic at LINE:COL whose message contains NEEDLE, or -1
 * (line/col 0 match any position). */
static int find_diag(const pal_diags *d, int line, int col, const char *needle)
{
	for (size_t i = 0; i < d->n; i++)
		if ((!line || d->v[i].line == line) && (!col || d->v[i].col == col) &&
		    strstr(d->v[i].msg, needle))
			return (int)i;
	return -1;
}

static void dump(const pal_diags *d)
{
	pal_diags_print(d, stderr);
}

#define ASSERT_DIAG(d, line, col, needle)                                                          \
	do {                                                                                       \
		if (find_diag((d), (line), (col), (needle)) < 0) {                                 \
			dump(d);                                                                   \
			fail_msg("no diagnostic %d:%d containing \"%s\"", (line), (col),           \
				 (needle));                                                        \
		}                                                                                  \
	} while (0)

static int load_str(const char *text, pal_ydoc *doc, pal_diags *d)
{
	return pal_ydoc_load_buffer("t.yaml", text, strlen(text), doc, d);
}

static void test_yaml_tree_positions_and_styles(void **state)
{
	pal_ydoc doc;
	pal_diags d = {0};
	const pal_ynode *jobs, *job, *v;

	(void)state;
	assert_int_equal(
	    load_str("jobs:\n  - id: x\n    n: 5\n    q: \"5\"\n    s: 'a b'\n", &doc, &d), 0);
	assert_int_equal(d.n, 0);
	assert_int_equal(doc.root->kind, PAL_YNODE_MAP);
	jobs = pal_ynode_get(doc.root, "jobs");
	assert_non_null(jobs);
	assert_int_equal(jobs->kind, PAL_YNODE_SEQ);
	assert_int_equal(jobs->n, 1);
	job = jobs->vals[0];
	assert_int_equal(job->line, 2);
	assert_int_equal(job->col, 5);
	v = pal_ynode_get(job, "n");
	assert_int_equal(v->line, 3);
	assert_int_equal(v->col, 8);
	assert_int_equal(v->style, PAL_YSTYLE_PLAIN);
	assert_string_equal(pal_ynode_describe(v), "an integer");
	v = pal_ynode_get(job, "q");
	assert_int_equal(v->style, PAL_YSTYLE_DOUBLE);
	assert_string_equal(v->str, "5");
	assert_string_equal(pal_ynode_describe(v), "a string");
	v = pal_ynode_get(job, "s");
	assert_int_equal(v->style, PAL_YSTYLE_SINGLE);
	assert_string_equal(v->str, "a b");
	assert_int_equal(v->end_col - v->col, 5);
	assert_null(pal_ynode_get(job, "missing"));
	pal_ydoc_free(&doc);
}

static void test_yaml_syntax_error_names_position(void **state)
{
	pal_ydoc doc;
	pal_diags d = {0};

	(void)state;
	assert_int_equal(pal_ydoc_load_file(fixture("syntax_error_indent.yaml"), &doc, &d),
			 PAL_EINVAL);
	assert_null(doc.root);
	assert_int_equal(d.n, 1);
	ASSERT_DIAG(&d, 5, 6, "yaml syntax error: did not find expected key");
	assert_non_null(strstr(d.v[0].file, "syntax_error_indent.yaml"));
	pal_diags_free(&d);
	pal_ydoc_free(&doc);

	assert_int_equal(load_str("a: [1, 2\nb: 3\n", &doc, &d), PAL_EINVAL);
	ASSERT_DIAG(&d, 0, 0, "yaml syntax error");
	pal_diags_free(&d);
	pal_ydoc_free(&doc);
}

static void test_yaml_billion_laughs_refused_at_first_anchor(void **state)
{
	pal_ydoc doc;
	pal_diags d = {0};

	(void)state;
	assert_int_equal(pal_ydoc_load_file(fixture("alias_bomb.yaml"), &doc, &d), PAL_EINVAL);
	assert_null(doc.root);
	assert_int_equal(d.n, 1);
	ASSERT_DIAG(&d, 1, 4, "yaml anchors are not allowed (found \"&a\")");
	pal_diags_free(&d);
	pal_ydoc_free(&doc);
}

static void test_yaml_alias_without_anchor_refused(void **state)
{
	pal_ydoc doc;
	pal_diags d = {0};

	(void)state;
	assert_int_equal(load_str("a: 1\nb: *x\n", &doc, &d), PAL_EINVAL);
	ASSERT_DIAG(&d, 2, 4, "yaml aliases are not allowed");
	pal_diags_free(&d);
	pal_ydoc_free(&doc);
}

static void test_yaml_tags_refused(void **state)
{
	pal_ydoc doc;
	pal_diags d = {0};

	(void)state;
	assert_int_equal(load_str("a: !!str 5\n", &doc, &d), PAL_EINVAL);
	ASSERT_DIAG(&d, 1, 4, "yaml tags are not allowed");
	pal_diags_free(&d);
	pal_ydoc_free(&doc);
}

static void test_yaml_oversized_file_refused_before_reading(void **state)
{
	char path[] = "/tmp/palisade-test-yaml-XXXXXX";
	int fd = mkstemp(path);
	FILE *fp;
	pal_ydoc doc;
	pal_diags d = {0};
	char *buf;

	(void)state;
	assert_true(fd >= 0);
	fp = fdopen(fd, "w");
	assert_non_null(fp);
	/* a valid document, one byte over the limit */
	fputs("a: 1\n", fp);
	for (size_t n = 5; n < PAL_YAML_MAX_BYTES + 1; n++)
		fputc(n % 64 == 63 ? '\n' : (n % 64 == 0 ? '#' : 'x'), fp);
	fclose(fp);
	assert_int_equal(pal_ydoc_load_file(path, &doc, &d), PAL_ETOOBIG);
	ASSERT_DIAG(&d, 0, 0, "file is too large");
	pal_diags_free(&d);
	pal_ydoc_free(&doc);
	unlink(path);

	/* exactly at the limit is accepted (the limit is inclusive) */
	buf = malloc(PAL_YAML_MAX_BYTES + 1);
	assert_non_null(buf);
	memset(buf, ' ', PAL_YAML_MAX_BYTES + 1);
	memcpy(buf, "a: 1\n#", 6);
	buf[PAL_YAML_MAX_BYTES - 1] = '\n';
	assert_int_equal(pal_ydoc_load_buffer("big", buf, PAL_YAML_MAX_BYTES, &doc, &d), 0);
	pal_ydoc_free(&doc);
	assert_int_equal(d.n, 0);
	assert_int_equal(pal_ydoc_load_buffer("big", buf, PAL_YAML_MAX_BYTES + 1, &doc, &d),
			 PAL_ETOOBIG);
	pal_ydoc_free(&doc);
	free(buf);
	ASSERT_DIAG(&d, 0, 0, "file is too large: 4194305 bytes");
	pal_diags_free(&d);
}

static void test_yaml_non_utf8_names_first_bad_byte(void **state)
{
	pal_ydoc doc;
	pal_diags d = {0};
	static const char overlong[] = "a: \"\xc0\xaf\"\n";
	static const char surrogate[] = "a: x\nb: \xed\xa0\x80\n";
	static const char truncated[] = "a: \xe2\x82";

	(void)state;
	assert_int_equal(pal_ydoc_load_file(fixture("non_utf8.yaml"), &doc, &d), PAL_EINVAL);
	/* "    tenant: caf\xe9": the bad byte is the 16th character of line 3 */
	ASSERT_DIAG(&d, 3, 16, "invalid utf-8 byte 0xe9");
	pal_diags_free(&d);
	pal_ydoc_free(&doc);

	assert_int_equal(load_str(overlong, &doc, &d), PAL_EINVAL);
	ASSERT_DIAG(&d, 1, 5, "invalid utf-8 byte 0xc0");
	pal_diags_free(&d);
	pal_ydoc_free(&doc);

	assert_int_equal(load_str(surrogate, &doc, &d), PAL_EINVAL);
	ASSERT_DIAG(&d, 2, 4, "invalid utf-8 byte 0xed");
	pal_diags_free(&d);
	pal_ydoc_free(&doc);

	assert_int_equal(load_str(truncated, &doc, &d), PAL_EINVAL);
	ASSERT_DIAG(&d, 1, 4, "invalid utf-8 byte 0xe2");
	pal_diags_free(&d);
	pal_ydoc_free(&doc);

	/* multi-byte characters count as one column */
	assert_int_equal(load_str("a: \xc3\xa9\xc3\xa9\xff\n", &doc, &d), PAL_EINVAL);
	ASSERT_DIAG(&d, 1, 6, "invalid utf-8 byte 0xff");
	pal_diags_free(&d);
	pal_ydoc_free(&doc);

	/* valid multi-byte text passes */
	assert_int_equal(load_str("a: \"caf\xc3\xa9 \xf0\x9f\x98\x80\"\n", &doc, &d), 0);
	assert_string_equal(pal_ynode_get(doc.root, "a")->str, "caf\xc3\xa9 \xf0\x9f\x98\x80");
	pal_ydoc_free(&doc);
}

static void test_yaml_nul_bytes_refused(void **state)
{
	pal_ydoc doc;
	pal_diags d = {0};
	static const char raw[] = "a: 1\nb: x\0y\n";

	(void)state;
	assert_int_equal(pal_ydoc_load_buffer("t.yaml", raw, sizeof raw - 1, &doc, &d), PAL_EINVAL);
	ASSERT_DIAG(&d, 2, 5, "nul byte");
	pal_diags_free(&d);
	pal_ydoc_free(&doc);

	assert_int_equal(load_str("a: \"x\\0y\"\n", &doc, &d), PAL_EINVAL);
	ASSERT_DIAG(&d, 1, 4, "nul character");
	pal_diags_free(&d);
	pal_ydoc_free(&doc);
}

static void test_yaml_empty_and_comment_only_files_refused(void **state)
{
	pal_ydoc doc;
	pal_diags d = {0};

	(void)state;
	assert_int_equal(pal_ydoc_load_file(fixture("empty.yaml"), &doc, &d), PAL_EINVAL);
	ASSERT_DIAG(&d, 1, 1, "file is empty");
	pal_diags_free(&d);
	pal_ydoc_free(&doc);
	assert_int_equal(pal_ydoc_load_file(fixture("comments_only.yaml"), &doc, &d), PAL_EINVAL);
	ASSERT_DIAG(&d, 1, 1, "file is empty");
	pal_diags_free(&d);
	pal_ydoc_free(&doc);
	assert_int_equal(pal_ydoc_load_file(fixture("no-such-file.yaml"), &doc, &d), PAL_EIO);
	ASSERT_DIAG(&d, 0, 0, "cannot open file");
	pal_diags_free(&d);
	pal_ydoc_free(&doc);
}

static void test_yaml_second_document_refused(void **state)
{
	pal_ydoc doc;
	pal_diags d = {0};

	(void)state;
	assert_int_equal(load_str("a: 1\n---\nb: 2\n", &doc, &d), PAL_EINVAL);
	ASSERT_DIAG(&d, 2, 1, "a second yaml document starts here");
	pal_diags_free(&d);
	pal_ydoc_free(&doc);
	/* one explicit document is fine */
	assert_int_equal(load_str("---\na: 1\n...\n", &doc, &d), 0);
	pal_ydoc_free(&doc);
}

static void test_yaml_every_duplicate_key_reported(void **state)
{
	pal_ydoc doc;
	pal_diags d = {0};

	(void)state;
	assert_int_equal(load_str("a: 1\nb:\n  x: 1\n  x: 2\na: 3\nc: {y: 1, y: 2}\n", &doc, &d),
			 PAL_EINVAL);
	assert_null(doc.root);
	assert_int_equal(d.n, 3);
	ASSERT_DIAG(&d, 4, 3, "duplicate key \"x\" (first at line 3, column 3)");
	ASSERT_DIAG(&d, 5, 1, "duplicate key \"a\" (first at line 1, column 1)");
	ASSERT_DIAG(&d, 6, 11, "duplicate key \"y\"");
	pal_diags_free(&d);
	pal_ydoc_free(&doc);

	/* regression (fuzz): the value of a duplicate key is a collection */
	assert_int_equal(load_str("a: [1]\na: {b: [2, {c: 3}]}\nd: 4\n", &doc, &d), PAL_EINVAL);
	assert_int_equal(d.n, 1);
	ASSERT_DIAG(&d, 2, 1, "duplicate key \"a\"");
	pal_diags_free(&d);
	pal_ydoc_free(&doc);
}

static void test_yaml_nesting_limit(void **state)
{
	pal_ydoc doc;
	pal_diags d = {0};
	char buf[512];
	size_t o = 0;

	(void)state;
	for (int i = 0; i < PAL_YAML_MAX_DEPTH; i++)
		buf[o++] = '[';
	for (int i = 0; i < PAL_YAML_MAX_DEPTH; i++)
		buf[o++] = ']';
	buf[o] = '\0';
	assert_int_equal(load_str(buf, &doc, &d), 0);
	pal_ydoc_free(&doc);

	o = 0;
	for (int i = 0; i <= PAL_YAML_MAX_DEPTH; i++)
		buf[o++] = '[';
	for (int i = 0; i <= PAL_YAML_MAX_DEPTH; i++)
		buf[o++] = ']';
	buf[o] = '\0';
	assert_int_equal(load_str(buf, &doc, &d), PAL_EINVAL);
	ASSERT_DIAG(&d, 1, PAL_YAML_MAX_DEPTH + 1, "nesting is deeper than 64 levels");
	pal_diags_free(&d);
	pal_ydoc_free(&doc);

	/* deep nesting far past the limit stops early and cleanly */
	{
		size_t n = 100000;
		char *deep = malloc(n + 1);

		assert_non_null(deep);
		memset(deep, '[', n);
		deep[n] = '\0';
		assert_int_equal(load_str(deep, &doc, &d), PAL_EINVAL);
		assert_int_equal(d.n, 1);
		pal_diags_free(&d);
		pal_ydoc_free(&doc);
		free(deep);
	}
}

static void test_yaml_collection_keys_refused(void **state)
{
	pal_ydoc doc;
	pal_diags d = {0};

	(void)state;
	assert_int_equal(load_str("? [a, b]\n: 1\n", &doc, &d), PAL_EINVAL);
	ASSERT_DIAG(&d, 1, 3, "a mapping key must be a plain value, got a sequence");
	pal_diags_free(&d);
	pal_ydoc_free(&doc);
}

static void test_yaml_typed_accessors(void **state)
{
	pal_ydoc doc;
	pal_diags d = {0};
	int64_t i = 0;
	double x = 0;
	int e = -1;
	char *s = NULL;
	static const char *const names[] = {"fire_all", "fire_once", "skip", "manual"};

	(void)state;
	assert_int_equal(load_str("i: 42\nq: \"42\"\nz: 010\nbig: 99999999999999999999\n"
				  "neg: -7\nd: 90s\nd0: 0\nn: 30\nm: 1.5\ne: fire_twice\n"
				  "s: hello\nnul: ~\nmap: {a: 1}\n",
				  &doc, &d),
			 0);
	assert_int_equal(pal_yget_int(&doc, pal_ynode_get(doc.root, "i"), "i", 0, 100, &i, &d), 0);
	assert_int_equal(i, 42);
	assert_int_equal(pal_yget_int(&doc, pal_ynode_get(doc.root, "neg"), "neg", -10, 10, &i, &d),
			 0);
	assert_int_equal(i, -7);
	assert_int_equal(d.n, 0);

	assert_int_equal(pal_yget_int(&doc, pal_ynode_get(doc.root, "q"), "q", 0, 100, &i, &d),
			 PAL_EINVAL);
	ASSERT_DIAG(&d, 2, 4,
		    "q: expected an integer, got a string (\"42\"); hint: remove the quotes");
	assert_int_equal(pal_yget_int(&doc, pal_ynode_get(doc.root, "z"), "z", 0, 100, &i, &d),
			 PAL_EINVAL);
	assert_int_equal(pal_yget_int(&doc, pal_ynode_get(doc.root, "big"), "big", 0, 100, &i, &d),
			 PAL_EINVAL);
	ASSERT_DIAG(&d, 4, 6, "out of range");
	assert_int_equal(pal_yget_int(&doc, pal_ynode_get(doc.root, "i"), "i", 0, 10, &i, &d),
			 PAL_EINVAL);
	ASSERT_DIAG(&d, 1, 4, "i: 42 is out of range (expected an integer from 0 to 10)");
	assert_int_equal(pal_yget_int(&doc, pal_ynode_get(doc.root, "map"), "map", 0, 10, &i, &d),
			 PAL_EINVAL);
	ASSERT_DIAG(&d, 13, 6, "map: expected an integer, got a mapping");
	assert_int_equal(pal_yget_int(&doc, pal_ynode_get(doc.root, "nul"), "nul", 0, 10, &i, &d),
			 PAL_EINVAL);
	ASSERT_DIAG(&d, 12, 6, "nul: expected an integer, got null");

	assert_int_equal(pal_yget_duration(&doc, pal_ynode_get(doc.root, "d"), "d", 1000, 3600000,
					   false, &i, &d),
			 0);
	assert_int_equal(i, 90000);
	assert_int_equal(pal_yget_duration(&doc, pal_ynode_get(doc.root, "d0"), "d0", 1000, 3600000,
					   true, &i, &d),
			 0);
	assert_int_equal(i, 0);
	assert_int_equal(pal_yget_duration(&doc, pal_ynode_get(doc.root, "d0"), "d0", 1000, 3600000,
					   false, &i, &d),
			 PAL_EINVAL);
	assert_int_equal(pal_yget_duration(&doc, pal_ynode_get(doc.root, "n"), "n", 1000, 3600000,
					   false, &i, &d),
			 PAL_EINVAL);
	ASSERT_DIAG(&d, 8, 4, "n: expected a duration, got an integer (30); hint: add a unit");
	assert_int_equal(
	    pal_yget_duration(&doc, pal_ynode_get(doc.root, "d"), "d", 1000, 60000, false, &i, &d),
	    PAL_EINVAL);
	ASSERT_DIAG(&d, 6, 4, "d: 90s is out of range (expected 1s to 1m)");

	assert_int_equal(pal_yget_number(&doc, pal_ynode_get(doc.root, "m"), "m", 1, 10, &x, &d),
			 0);
	assert_true(x == 1.5);

	assert_int_equal(
	    pal_yget_enum(&doc, pal_ynode_get(doc.root, "e"), "misfire policy", names, 4, &e, &d),
	    PAL_EINVAL);
	ASSERT_DIAG(&d, 10, 4,
		    "unknown misfire policy \"fire_twice\" (expected fire_all, fire_once, skip, "
		    "manual)");
	assert_int_equal(e, -1);

	assert_int_equal(pal_yget_string(&doc, pal_ynode_get(doc.root, "s"), "s", &s, &d), 0);
	assert_string_equal(s, "hello");
	free(s);
	assert_int_equal(pal_yexpect_seq(&doc, pal_ynode_get(doc.root, "s"), "s", &d), PAL_EINVAL);
	ASSERT_DIAG(&d, 11, 4, "s: expected a sequence, got a string");
	pal_diags_free(&d);
	pal_ydoc_free(&doc);
}

static void test_suggest_finds_plausible_typos_only(void **state)
{
	static const char *const keys[] = {"id",      "tenant",	    "schedule", "misfire",
					   "overlap", "partitions", "retry",	"target"};

	(void)state;
	assert_string_equal(pal_suggest("misfir", keys, 8), "misfire");
	assert_string_equal(pal_suggest("shcedule", keys, 8), "schedule"); /* transposition */
	assert_string_equal(pal_suggest("retyr", keys, 8), "retry");
	assert_string_equal(pal_suggest("partition", keys, 8), "partitions");
	assert_string_equal(pal_suggest("Tenant", keys, 8), "tenant");
	assert_null(pal_suggest("xyz", keys, 8));
	assert_null(pal_suggest("ix", keys, 8)); /* too short to guess */
	assert_null(pal_suggest("completely_unrelated", keys, 8));
}

static void test_diags_capped(void **state)
{
	pal_diags d = {0};

	(void)state;
	for (int i = 0; i < 3 * PAL_DIAGS_MAX; i++)
		pal_diags_addf(&d, "f", i + 1, 1, "problem %d", i);
	assert_int_equal(d.n, PAL_DIAGS_MAX);
	assert_string_equal(d.v[0].msg, "problem 0");
	assert_non_null(strstr(d.v[PAL_DIAGS_MAX - 1].msg, "too many problems"));
	pal_diags_free(&d);
	assert_int_equal(d.n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_yaml_tree_positions_and_styles),
	    cmocka_unit_test(test_yaml_syntax_error_names_position),
	    cmocka_unit_test(test_yaml_billion_laughs_refused_at_first_anchor),
	    cmocka_unit_test(test_yaml_alias_without_anchor_refused),
	    cmocka_unit_test(test_yaml_tags_refused),
	    cmocka_unit_test(test_yaml_oversized_file_refused_before_reading),
	    cmocka_unit_test(test_yaml_non_utf8_names_first_bad_byte),
	    cmocka_unit_test(test_yaml_nul_bytes_refused),
	    cmocka_unit_test(test_yaml_empty_and_comment_only_files_refused),
	    cmocka_unit_test(test_yaml_second_document_refused),
	    cmocka_unit_test(test_yaml_every_duplicate_key_reported),
	    cmocka_unit_test(test_yaml_nesting_limit),
	    cmocka_unit_test(test_yaml_collection_keys_refused),
	    cmocka_unit_test(test_yaml_typed_accessors),
	    cmocka_unit_test(test_suggest_finds_plausible_typos_only),
	    cmocka_unit_test(test_diags_capped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
