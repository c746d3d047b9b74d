/*
 * test_nodeconf.c - the node config table, loader and sample
 * (src/config/nodeconf.c, config/palisade.yaml).
 *
 * The sample must list exactly the table's keys, each with its default, and
 * load without a diagnostic; every default in the table must pass the
 * table's own validation; bad values are reported with file:line:col and
 * did-you-mean; connection settings resolve flag > file > environment.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <glib.h>
#include "palisade/nodeconf.h"
#include "palisade/yamltree.h"

static const char *repo_path(const char *rel)
{
	static char buf[4096];
	const char *src = __FILE__;
	const char *p = strstr(src, "tests/unit/");

	if (p)
		snprintf(buf, sizeof buf, "%.*s%s", (int)(p - src), src, rel);
	else
		snprintf(buf, sizeof buf, "%s", rel);
	return buf;
}

static int find_diag(const pal_diags *d, int line, int col, const char *needle)
{
	for (size_t i = 0; i < d->n; i++)
		if ((!line || d->v[i].line == line) && (!col || d->v[i].col == col) &&
		    strstr(d->v[i].msg, needle))
			return (int)i;
	return -1;
}

#define ASSERT_DIAG(d, line, col, needle)                                                          \
	do {                                                                                       \
		if (find_diag((d), (line), (col), (needle)) < 0) {                                 \
			pal_diags_print((d), stderr);                                              \
			fail_msg("no diagnostic %d:%d containing \"%s\"", (line), (col),           \
				 (needle));                                                        \
		}                                                                                  \
	} while (0)

static int load_str(const char *text, pal_nodeconf *c, pal_diags *d)
{
	return pal_nodeconf_load_buffer("palisade.yaml", text, strlen(text), c, d);
}

/* The table's entry of key NAME (fails the test when there is none). */
static const pal_conf_key *table_key(const char *name)
{
	size_t n;
	const pal_conf_key *t = pal_nodeconf_table(&n);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(t[i].name, name))
			return &t[i];
	fail_msg("no key %s in the table", name);
	return NULL;
}

static void test_nodeconf_defaults_match_table(void **state)
{
	pal_nodeconf c;
	size_t n;
	const pal_conf_key *t = pal_nodeconf_table(&n);

	(void)state;
	assert_true(n >= 20);
	assert_int_equal(pal_nodeconf_defaults(&c), 0);
	assert_string_equal(c.node_id, g_get_host_name());
	assert_int_equal(c.roles, PAL_ROLE_CONTROLLER | PAL_ROLE_EXECUTOR);
	assert_string_equal(c.cluster, "default");
	assert_int_equal(c.shards, 16);
	assert_string_equal(c.zk_connect, "");
	assert_int_equal(c.zk_session_timeout_ms, 6000);
	assert_string_equal(c.zk_root, "/palisade");
	assert_string_equal(c.pg_conninfo, "");
	assert_int_equal(c.scan_interval_ms, 1000);
	assert_int_equal(c.overlap_ms, 10000);
	assert_int_equal(c.lookahead_ms, 5000);
	assert_int_equal(c.misfire_threshold_ms, 60000);
	assert_int_equal(c.lease_ms, 30000);
	assert_int_equal(c.heartbeat_ms, 10000);
	assert_int_equal(c.batch, 256);
	assert_int_equal(c.max_inflight, 1024);
	assert_int_equal(c.renew_failures_to_close_gate, 3);
	assert_int_equal(c.n_groups, 0);
	assert_int_equal(c.n_tenants, 0);
	assert_int_equal(c.claim_ahead_ms, 500);
	assert_string_equal(c.admin_listen, "127.0.0.1:9464");
	assert_int_equal(c.log_level, PAL_LOG_INFO);
	assert_null(c.file);

	/* the table's default text formats back to itself */
	for (size_t i = 0; i < n; i++) {
		char *v = pal_nodeconf_format(&c, &t[i]);

		assert_non_null(v);
		if (strcmp(t[i].name, "node.id") != 0)
			assert_string_equal(v, t[i].def);
		free(v);
		/* every key is documented and two levels deep */
		assert_non_null(strchr(t[i].name, '.'));
		assert_null(strchr(strchr(t[i].name, '.') + 1, '.'));
		assert_true(strlen(t[i].help) > 10);
	}
	pal_nodeconf_free(&c);
}

/* Dotted leaf keys of the sample file (executor.groups is one leaf). */
static void collect_keys(const pal_ynode *root, GPtrArray *out)
{
	for (size_t i = 0; i < root->n; i++) {
		const pal_ynode *sec = root->vals[i];

		assert_int_equal(sec->kind, PAL_YNODE_MAP);
		for (size_t j = 0; j < sec->n; j++)
			g_ptr_array_add(
			    out, g_strdup_printf("%s.%s", root->keys[i]->str, sec->keys[j]->str));
	}
}

static void test_nodeconf_sample_lists_every_key_with_its_default(void **state)
{
	const char *path = repo_path("config/palisade.yaml");
	pal_ydoc doc;
	pal_diags d = {0};
	GPtrArray *keys = g_ptr_array_new_with_free_func(g_free);
	pal_nodeconf sample, def;
	size_t n;
	const pal_conf_key *t = pal_nodeconf_table(&n);

	(void)state;
	assert_int_equal(pal_ydoc_load_file(path, &doc, &d), 0);
	collect_keys(doc.root, keys);
	pal_ydoc_free(&doc);

	/* table -> sample */
	for (size_t i = 0; i < n; i++) {
		bool found = false;

		for (size_t j = 0; j < keys->len; j++)
			found = found || !strcmp(keys->pdata[j], t[i].name);
		if (!found)
			fail_msg("table key %s is missing from config/palisade.yaml", t[i].name);
	}
	/* sample -> table */
	for (size_t j = 0; j < keys->len; j++) {
		bool found = false;

		for (size_t i = 0; i < n; i++)
			found = found || !strcmp(keys->pdata[j], t[i].name);
		if (!found)
			fail_msg("config/palisade.yaml has %s, which the table does not know",
				 (const char *)keys->pdata[j]);
	}
	assert_int_equal(keys->len, n);
	g_ptr_array_free(keys, TRUE);

	/* it loads cleanly, and every value in it is the default */
	if (pal_nodeconf_load(path, &sample, &d) != 0) {
		pal_diags_print(&d, stderr);
		fail_msg("the sample config does not load");
	}
	assert_int_equal(d.n, 0);
	assert_int_equal(pal_nodeconf_defaults(&def), 0);
	for (size_t i = 0; i < n; i++)
		if (!pal_nodeconf_key_equal(&sample, &def, &t[i]))
			fail_msg("config/palisade.yaml sets %s to something else than its default",
				 t[i].name);
	assert_non_null(strstr(sample.file, "palisade.yaml"));
	pal_nodeconf_free(&sample);
	pal_nodeconf_free(&def);
}

static void test_nodeconf_docs_list_every_key(void **state)
{
	gchar *text = NULL;
	size_t n;
	const pal_conf_key *t = pal_nodeconf_table(&n);

	(void)state;
	assert_true(g_file_get_contents(repo_path("docs/config.md"), &text, NULL, NULL));
	for (size_t i = 0; i < n; i++) {
		gchar *cell = g_strdup_printf("| `%s` |", t[i].name);

		if (!strstr(text, cell))
			fail_msg("docs/config.md has no table row for %s", t[i].name);
		g_free(cell);
	}
	g_free(text);
}

static void test_nodeconf_values_and_groups_load(void **state)
{
	pal_nodeconf c;
	pal_diags d = {0};

	(void)state;
	assert_int_equal(
	    load_str(
		"node: {id: node-a.1, roles: [executor]}\n"
		"cluster: {name: prod, shards: 64}\n"
		"zookeeper: {connect: \"zk1:2181,zk2:2181/chroot\", session_timeout: 10s}\n"
		"controller: {scan_interval: 500ms, lookahead: 2s}\n"
		"executor:\n"
		"  groups:\n"
		"    reports: {concurrency: 4, cluster_concurrency: 8}\n"
		"    billing: {concurrency: 2}\n"
		"admin: {listen: \"[::1]:0\", public_url: \"https://ops.example.com:8443/p/\"}\n"
		"log: {level: debug}\n",
		&c, &d),
	    0);
	assert_int_equal(d.n, 0);
	assert_string_equal(c.node_id, "node-a.1");
	assert_int_equal(c.roles, PAL_ROLE_EXECUTOR);
	assert_string_equal(c.cluster, "prod");
	assert_int_equal(c.shards, 64);
	assert_string_equal(c.zk_connect, "zk1:2181,zk2:2181/chroot");
	assert_int_equal(c.zk_session_timeout_ms, 10000);
	assert_int_equal(c.scan_interval_ms, 500);
	assert_int_equal(c.lookahead_ms, 2000);
	assert_int_equal(c.n_groups, 2);
	assert_string_equal(c.groups[0].name, "billing"); /* sorted */
	assert_int_equal(c.groups[0].concurrency, 2);
	assert_int_equal(c.groups[0].cluster_concurrency, 0);
	assert_string_equal(c.groups[1].name, "reports");
	assert_int_equal(c.groups[1].cluster_concurrency, 8);
	assert_string_equal(c.admin_listen, "[::1]:0");
	assert_string_equal(c.admin_public_url, "https://ops.example.com:8443/p/");
	assert_int_equal(c.log_level, PAL_LOG_DEBUG);
	assert_int_equal(c.lease_ms, 30000); /* untouched keys keep defaults */
	pal_nodeconf_free(&c);
}

static void test_nodeconf_secrets_load_and_are_checked(void **state)
{
	pal_nodeconf c;
	pal_diags d = {0};

	(void)state;
	assert_int_equal(load_str("executor:\n"
				  "  secrets:\n"
				  "    red: [SHARED, RED_*, SHARED]\n"
				  "    blue: [\"*\"]\n"
				  "    none: []\n",
				  &c, &d),
			 0);
	assert_int_equal(d.n, 0);
	assert_int_equal(c.n_secrets, 3);
	assert_string_equal(c.secrets[0].tenant, "blue"); /* sorted */
	assert_string_equal(c.secrets[0].names[0], "*");
	assert_int_equal(c.secrets[1].n_names, 0);
	assert_int_equal(c.secrets[2].n_names, 2); /* sorted, each once */
	assert_string_equal(c.secrets[2].names[0], "RED_*");
	assert_string_equal(c.secrets[2].names[1], "SHARED");
	pal_secret_policy p = pal_nodeconf_secret_policy(&c);
	assert_int_equal(pal_secret_check(&p, "red", "RED_KEY"), PAL_SECRET_OK);
	assert_int_equal(pal_secret_check(&p, "none", "RED_KEY"), PAL_SECRET_NOT_GRANTED);
	assert_int_equal(pal_secret_check(&p, "green", "RED_KEY"), PAL_SECRET_NOT_GRANTED);
	assert_int_equal(pal_secret_check(&p, "blue", "PALISADE_ADMIN_TOKEN"), PAL_SECRET_NODE);
	char *f = pal_nodeconf_format(&c, table_key("executor.secrets"));
	assert_string_equal(f, "{blue: [\"*\"], none: [], red: [RED_*, SHARED]}");
	free(f);
	pal_nodeconf_free(&c);

	/* the variable admin.token_env names is the node's, whatever it is */
	assert_int_equal(load_str("admin: {token_env: NODE_TOK}\n", &c, &d), 0);
	p = pal_nodeconf_secret_policy(&c);
	assert_int_equal(pal_secret_check(&p, "red", "NODE_TOK"), PAL_SECRET_NODE);
	assert_int_equal(pal_secret_check(&p, "red", "ANY_KEY"), PAL_SECRET_OK); /* no grants */
	pal_nodeconf_free(&c);

	assert_int_equal(load_str("executor:\n"
				  "  secrets: {Bad: [X], red: [lower, 9LIVES, \"A*B\"], blue: X}\n",
				  &c, &d),
			 PAL_EINVAL);
	ASSERT_DIAG(&d, 2, 13, "invalid tenant name \"Bad\"");
	ASSERT_DIAG(&d, 2, 29, "invalid secret name \"lower\" of tenant \"red\"");
	ASSERT_DIAG(&d, 2, 36, "invalid secret name \"9LIVES\"");
	ASSERT_DIAG(&d, 2, 44, "invalid secret name \"A*B\"");
	ASSERT_DIAG(&d, 2, 58, "executor.secrets: blue: expected a sequence");
	pal_diags_free(&d);
}

static void test_nodeconf_target_hosts_load_and_match(void **state)
{
	pal_nodeconf c;
	pal_diags d = {0};

	(void)state;
	assert_int_equal(load_str("executor:\n"
				  "  target_hosts:\n"
				  "    red: [api.example.com, \"*.red.example.com:443\", \"[::1]:8080\", "
				  "10.0.0.7]\n"
				  "    blue: [\"*\"]\n"
				  "    none: []\n"
				  "    port: [\"*:8443\"]\n",
				  &c, &d),
			 0);
	assert_int_equal(d.n, 0);
	assert_int_equal(c.n_target_hosts, 4);
	assert_string_equal(c.target_hosts[0].tenant, "blue"); /* sorted */
	pal_target_policy p = pal_nodeconf_target_policy(&c);
	/* a host, case-insensitively, on any port */
	assert_true(pal_target_granted(&p, "red", "https://api.example.com/x"));
	assert_true(pal_target_granted(&p, "red", "http://API.Example.COM:9000?q=1"));
	assert_true(pal_target_granted(&p, "red", "http://10.0.0.7"));
	assert_false(pal_target_granted(&p, "red", "http://api.example.com.evil.net/"));
	assert_false(pal_target_granted(&p, "red", "http://example.com/"));
	assert_false(pal_target_granted(&p, "red", "http://10.0.0.70/"));
	/* *.DOMAIN:PORT: a longer name, on that port (https's default counts) */
	assert_true(pal_target_granted(&p, "red", "https://a.b.red.example.com/"));
	assert_true(pal_target_granted(&p, "red", "http://a.red.example.com:443/"));
	assert_false(pal_target_granted(&p, "red", "https://red.example.com/"));
	assert_false(pal_target_granted(&p, "red", "http://a.red.example.com/"));
	assert_false(pal_target_granted(&p, "red", "https://xred.example.com/"));
	assert_true(pal_target_granted(&p, "red", "http://[::1]:8080/"));
	assert_false(pal_target_granted(&p, "red", "http://[::1]/"));
	/* what libcurl could read as another host never passes */
	assert_false(pal_target_granted(&p, "red", "http://api.example.com@127.0.0.1/"));
	assert_false(pal_target_granted(&p, "red", "http://api.example.com\\@127.0.0.1/"));
	assert_false(pal_target_granted(&p, "red", "http://api.example.com%2e/"));
	assert_false(pal_target_granted(&p, "red", "ftp://api.example.com/"));
	assert_false(pal_target_granted(&p, "red", "HTTP://api.example.com/"));
	assert_false(pal_target_granted(&p, "red", "http://api.example.com:0/"));
	assert_false(pal_target_granted(&p, "red", "http://api.example.com:99999/"));
	/* "*" any host; "*:PORT" any host on that port; none, or not listed: nothing */
	assert_true(pal_target_granted(&p, "blue", "http://169.254.169.254/latest"));
	assert_true(pal_target_granted(&p, "port", "https://any.where:8443/"));
	assert_false(pal_target_granted(&p, "port", "https://any.where/"));
	assert_false(pal_target_granted(&p, "none", "http://api.example.com/"));
	assert_false(pal_target_granted(&p, "default", "http://api.example.com/"));
	assert_false(pal_target_granted(&p, NULL, "http://api.example.com/"));
	char msg[512];
	assert_non_null(strstr(pal_target_refusal("red", "http://127.0.0.1:9464/metrics", msg,
						  sizeof msg),
			       "executor.target_hosts does not give host 127.0.0.1:9464 to tenant red"));
	char *f = pal_nodeconf_format(&c, table_key("executor.target_hosts"));
	/* each tenant's patterns sorted (the file's order grants nothing) */
	assert_string_equal(f, "{blue: [\"*\"], none: [], port: [\"*:8443\"], red: "
			       "[\"*.red.example.com:443\", 10.0.0.7, \"[::1]:8080\", api.example.com]}");
	free(f);
	pal_nodeconf_free(&c);

	/* the default: no grants, any host */
	assert_int_equal(load_str("executor: {lease: 30s}\n", &c, &d), 0);
	p = pal_nodeconf_target_policy(&c);
	assert_true(pal_target_granted(&p, "red", "http://127.0.0.1:9464/metrics"));
	assert_true(pal_target_granted(NULL, "red", "http://127.0.0.1:9464/metrics"));
	pal_nodeconf_free(&c);

	assert_int_equal(load_str("executor:\n"
				  "  target_hosts: {red: [\"a b\", \"*.\", \"x:0\", \"**\", \"h:\", "
				  "\"u@h\"], blue: x}\n",
				  &c, &d),
			 PAL_EINVAL);
	ASSERT_DIAG(&d, 2, 24, "invalid host pattern \"a b\" of tenant \"red\"");
	ASSERT_DIAG(&d, 2, 31, "invalid host pattern \"*.\"");
	ASSERT_DIAG(&d, 2, 37, "invalid host pattern \"x:0\"");
	ASSERT_DIAG(&d, 2, 44, "invalid host pattern \"**\"");
	ASSERT_DIAG(&d, 2, 50, "invalid host pattern \"h:\"");
	ASSERT_DIAG(&d, 2, 56, "invalid host pattern \"u@h\"");
	ASSERT_DIAG(&d, 2, 70, "executor.target_hosts: blue: expected a sequence");
	pal_diags_free(&d);
}

static void test_nodeconf_tenants_load_and_are_checked(void **state)
{
	pal_nodeconf c;
	pal_diags d = {0};

	(void)state;
	assert_int_equal(load_str("executor:\n"
				  "  claim_ahead: 500ms\n"
				  "  tenants:\n"
				  "    payroll: {cap: 5}\n"
				  "    billing: {cap: 50, weight: 2.5}\n",
				  &c, &d),
			 0);
	assert_int_equal(d.n, 0);
	assert_int_equal(c.claim_ahead_ms, 500);
	assert_int_equal(c.n_tenants, 2);
	assert_string_equal(c.tenants[0].name, "billing"); /* sorted */
	assert_int_equal(c.tenants[0].cap, 50);
	assert_true(c.tenants[0].weight > 2.49 && c.tenants[0].weight < 2.51);
	assert_string_equal(c.tenants[1].name, "payroll");
	assert_true(c.tenants[1].weight > 0.99 && c.tenants[1].weight < 1.01); /* default 1 */
	pal_nodeconf_free(&c);

	assert_int_equal(load_str("executor:\n"
				  "  tenants: {Bad: {cap: 1}, ok: {cap: -1}, fine: {wieght: 2}, w: {weight: 0}}\n",
				  &c, &d),
			 PAL_EINVAL);
	ASSERT_DIAG(&d, 2, 13, "invalid tenant name \"Bad\"");
	ASSERT_DIAG(&d, 2, 38, "cap: -1 is out of range");
	ASSERT_DIAG(&d, 2, 50, "unknown key \"wieght\" in tenant \"fine\" (did you mean \"weight\"?)");
	ASSERT_DIAG(&d, 2, 74, "weight: 0 is out of range");
	assert_int_equal(d.n, 4);
	pal_diags_free(&d);
}

static void test_nodeconf_every_problem_reported_with_position(void **state)
{
	pal_nodeconf c;
	pal_diags d = {0};

	(void)state;
	assert_int_equal(load_str("node:\n"
				  "  id: \"bad id\"\n"
				  "  roles: [controller, controller, janitor]\n"
				  "cluster:\n"
				  "  shards: 2000\n"
				  "zookeper:\n"
				  "  connect: x\n"
				  "controller:\n"
				  "  scan_intervall: 1s\n"
				  "executor:\n"
				  "  lease: 30\n"
				  "  batch: \"64\"\n"
				  "  groups: {Reports: {concurrency: 1}, ok: {concurency: 1}}\n"
				  "admin: {listen: localhost, public_url: \"ftp://x/?q\"}\n"
				  "log: {level: verbose}\n"
				  "shards: 16\n",
				  &c, &d),
			 PAL_EINVAL);
	ASSERT_DIAG(&d, 2, 7, "node.id: invalid node id \"bad id\"");
	ASSERT_DIAG(&d, 3, 23, "node.roles: role \"controller\" is listed twice");
	ASSERT_DIAG(&d, 3, 35, "unknown role \"janitor\" (expected controller, executor)");
	ASSERT_DIAG(&d, 5, 11,
		    "cluster.shards: 2000 is out of range (expected an integer from 1 to 1024)");
	ASSERT_DIAG(&d, 6, 1, "unknown section \"zookeper\" (did you mean \"zookeeper\"?)");
	ASSERT_DIAG(
	    &d, 9, 3,
	    "unknown key \"scan_intervall\" in controller (did you mean \"scan_interval\"?)");
	ASSERT_DIAG(&d, 11, 10, "executor.lease: expected a duration, got an integer (30)");
	ASSERT_DIAG(&d, 12, 10, "executor.batch: expected an integer, got a string");
	ASSERT_DIAG(&d, 13, 12, "invalid group name \"Reports\"");
	ASSERT_DIAG(&d, 13, 44,
		    "unknown key \"concurency\" in group \"ok\" (did you mean \"concurrency\"?)");
	ASSERT_DIAG(&d, 14, 17, "admin.listen: invalid address \"localhost\"");
	ASSERT_DIAG(&d, 15, 14,
		    "unknown log.level \"verbose\" (expected debug, info, warn, error)");
	ASSERT_DIAG(&d, 16, 1, "unknown section \"shards\"; hint: did you mean \"cluster.shards\"");
	ASSERT_DIAG(&d, 14, 40, "admin.public_url: \"ftp://x/?q\" is not a base URL");
	assert_int_equal(d.n, 14);
	/* nothing to free on failure, and the struct is zeroed */
	assert_null(c.node_id);
	pal_diags_free(&d);
}

static void test_nodeconf_relations_between_keys(void **state)
{
	pal_nodeconf c;
	pal_diags d = {0};

	(void)state;
	assert_int_equal(
	    load_str("executor: {lease: 10s, heartbeat: 6s}\n"
		     "controller: {scan_interval: 10s, lookahead: 5s, misfire_threshold: 12s}\n",
		     &c, &d),
	    PAL_EINVAL);
	ASSERT_DIAG(&d, 1, 35,
		    "executor.heartbeat (6s) must be at most half of executor.lease (10s)");
	ASSERT_DIAG(&d, 2, 45,
		    "controller.lookahead (5s) is shorter than controller.scan_interval (10s)");
	ASSERT_DIAG(
	    &d, 2, 68,
	    "controller.misfire_threshold (12s) must exceed scan_interval + lookahead (15s)");
	assert_int_equal(d.n, 3);
	pal_diags_free(&d);

	assert_int_equal(load_str("executor: {lease: 10s, heartbeat: 5s}\n", &c, &d), 0);
	pal_nodeconf_free(&c);
	assert_int_equal(load_str("zookeeper: {session_timeout: 1s, root: /a/}\n", &c, &d),
			 PAL_EINVAL);
	ASSERT_DIAG(&d, 1, 30, "zookeeper.session_timeout: 1s is out of range (expected 2s to 1m)");
	ASSERT_DIAG(&d, 1, 40, "zookeeper.root: invalid path \"/a/\"");
	pal_diags_free(&d);
	assert_int_equal(load_str("- a\n", &c, &d), PAL_EINVAL);
	ASSERT_DIAG(&d, 1, 1, "expected a mapping of sections");
	pal_diags_free(&d);
	assert_int_equal(load_str("node: [a]\n", &c, &d), PAL_EINVAL);
	ASSERT_DIAG(&d, 1, 7, "node: expected a mapping, got a sequence");
	pal_diags_free(&d);
	assert_int_equal(pal_nodeconf_load("/nonexistent/palisade.yaml", &c, &d), PAL_EIO);
	ASSERT_DIAG(&d, 0, 0, "cannot open file");
	pal_diags_free(&d);
}

static void test_nodeconf_connection_precedence_flag_file_env(void **state)
{
	pal_nodeconf c;
	pal_diags d = {0};

	(void)state;
	assert_int_equal(
	    load_str("postgres: {conninfo: \"host=file\"}\nzookeeper: {connect: \"\"}\n", &c, &d),
	    0);
	setenv("PALISADE_PG", "host=env", 1);
	setenv("PALISADE_ZK", "envzk:2181", 1);
	assert_string_equal(pal_nodeconf_pg(&c, "host=flag"), "host=flag");
	assert_string_equal(pal_nodeconf_pg(&c, NULL), "host=file");
	assert_string_equal(pal_nodeconf_pg(&c, ""), "host=file");
	assert_string_equal(pal_nodeconf_pg(NULL, NULL), "host=env");
	assert_string_equal(pal_nodeconf_zk(&c, NULL), "envzk:2181"); /* empty in file */
	assert_string_equal(pal_nodeconf_zk(&c, "flagzk:2181"), "flagzk:2181");
	unsetenv("PALISADE_PG");
	unsetenv("PALISADE_ZK");
	assert_null(pal_nodeconf_zk(&c, NULL));
	assert_null(pal_nodeconf_pg(NULL, ""));
	pal_nodeconf_free(&c);
}

static void test_nodeconf_direct_conninfo_only_behind_a_transaction_pooler(void **state)
{
	pal_nodeconf c;
	pal_diags d = {0};

	(void)state;
	/* session mode: every connection uses the pooled (the only) conninfo */
	assert_int_equal(load_str("postgres: {conninfo: \"host=pool\", direct_conninfo: "
				  "\"host=pg\"}\n",
				  &c, &d),
			 0);
	assert_int_equal(c.pg_pool_mode, PAL_POOL_SESSION);
	assert_string_equal(pal_nodeconf_pg_direct(&c, "host=pool"), "host=pool");
	pal_nodeconf_free(&c);
	assert_int_equal(load_str("postgres: {conninfo: \"host=pool\", pool_mode: transaction, "
				  "direct_conninfo: \"host=pg\"}\n",
				  &c, &d),
			 0);
	assert_int_equal(c.pg_pool_mode, PAL_POOL_TRANSACTION);
	assert_string_equal(pal_nodeconf_pg_direct(&c, "host=pool"), "host=pg");
	pal_nodeconf_free(&c);
	/* transaction mode without a direct conninfo: the same one */
	assert_int_equal(load_str("postgres: {pool_mode: transaction}\n", &c, &d), 0);
	assert_string_equal(pal_nodeconf_pg_direct(&c, "host=flag"), "host=flag");
	pal_nodeconf_free(&c);
	assert_int_not_equal(load_str("postgres: {pool_mode: statement}\n", &c, &d), 0);
	assert_true(d.n > 0 && strstr(d.v[0].msg, "session") != NULL);
	pal_diags_free(&d);
}

static void test_nodeconf_reload_reports_restart_only_changes(void **state)
{
	pal_nodeconf a, b;
	pal_diags d = {0};

	(void)state;
	assert_int_equal(load_str("log: {level: info}\n", &a, &d), 0);
	assert_int_equal(load_str("log: {level: warn}\ncluster: {shards: 32}\n"
				  "executor: {batch: 10, groups: {r: {concurrency: 1}}}\n",
				  &b, &d),
			 0);
	assert_int_equal(pal_nodeconf_restart_changes(&a, &b, &d), 1);
	ASSERT_DIAG(&d, 0, 0,
		    "cluster.shards changed from 16 to 32; it takes effect only after a restart");
	assert_int_equal(pal_nodeconf_restart_changes(&a, &a, &d), 0);
	pal_diags_free(&d);
	pal_nodeconf_free(&a);
	pal_nodeconf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_nodeconf_defaults_match_table),
	    cmocka_unit_test(test_nodeconf_sample_lists_every_key_with_its_default),
	    cmocka_unit_test(test_nodeconf_docs_list_every_key),
	    cmocka_unit_test(test_nodeconf_values_and_groups_load),
	    cmocka_unit_test(test_nodeconf_every_problem_reported_with_position),
	    cmocka_unit_test(test_nodeconf_relations_between_keys),
	    cmocka_unit_test(test_nodeconf_connection_precedence_flag_file_env),
	    cmocka_unit_test(test_nodeconf_direct_conninfo_only_behind_a_transaction_pooler),
	    cmocka_unit_test(test_nodeconf_reload_reports_restart_only_changes),
	    cmocka_unit_test(test_nodeconf_secrets_load_and_are_checked),
	    cmocka_unit_test(test_nodeconf_target_hosts_load_and_match),
	    cmocka_unit_test(test_nodeconf_tenants_load_and_are_checked),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
