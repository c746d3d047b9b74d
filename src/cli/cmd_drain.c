/*
 * cmd_drain.c - `palisade drain`: ask a node to hand its shards off and
 * exit (POST /drain on its admin endpoint), optionally waiting until it has
 * left the cluster.
 */
#include <curl/curl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/cli.h"
#include "palisade/clock.h"
#include "palisade/coord.h"
#include "palisade/err.h"
#include "palisade/nodeconf.h"
#include "cli_int.h"

static void usage(FILE *fp)
{
	fprintf(fp, "usage: palisade drain (--node ID | --admin HOST:PORT) [--wait SECONDS]\n"
		    "                      [--zk HOSTS] [--config FILE]\n"
		    "       palisade drain --server URL [--token-file FILE]\n"
		    "Ask a node to drain: stop planning, delete its election znodes so that the\n"
		    "next nodes in line take its shards over at once, and exit 0.  --node looks\n"
		    "its admin address up in ZooKeeper; --wait waits until it has left.\n"
		    "The request carries the node's admin token: --config's admin.token_file,\n"
		    "else $PALISADE_ADMIN_TOKEN (admin.token_env).  With --server (and neither\n"
		    "--node nor --admin) an admin API token drains the node that serves URL\n"
		    "(POST /api/v1/drain), audited under the token's name.\n"
		    "Exit: 0 accepted (and gone, with --wait), 1 refused or still there, 65 token\n"
		    "file unreadable, 69 unreachable.\n");
}

static size_t discard(char *p, size_t s, size_t n, void *u)
{
	(void)p, (void)u;
	return s * n;
}

/* Admin address of node ID from its ZooKeeper record; NULL when absent.
 * With IN, through that open session (the wait loop keeps one), silent on
 * an error for the caller to look again; without, through a session of its
 * own, with 5 s to connect. */
static char *lookup_admin(const pal_cli_common *c, pal_coord_inspector *in, const char *id,
			  bool *present, int *ec)
{
	const char *zk = pal__cli_zk(c);
	if (!zk) {
		pal_cli_err("drain",
			    "no ZooKeeper connect string: pass --zk or export PALISADE_ZK");
		*ec = PAL_EXIT_USAGE;
		return NULL;
	}
	json_t *nodes;
	char err[512];
	int rc =
	    in ? pal_coord_inspector_nodes(in, pal__cli_config_zk_root(c),
					   pal__cli_config_cluster(c), &nodes, err, sizeof err)
	       : pal_coord_list_nodes(zk, pal__cli_config_zk_root(c), pal__cli_config_cluster(c),
				      5000, &nodes, err, sizeof err);
	if (rc) {
		if (!in)
			pal_cli_err("drain", "%s", err);
		*ec = PAL_EXIT_UNAVAIL;
		return NULL;
	}
	char *admin = NULL;
	*present = false;
	size_t i;
	json_t *n;
	json_array_foreach(nodes, i, n)
	{
		if (strcmp(json_string_value(json_object_get(n, "id")), id))
			continue;
		*present = true;
		const char *a =
		    json_string_value(json_object_get(json_object_get(n, "info"), "admin"));
		if (a)
			admin = strdup(a);
	}
	json_decref(nodes);
	return admin;
}

/* Waits up to WAIT_S seconds for NODE to leave, looking every 100 ms
 * through one ZooKeeper session.  When that session breaks (a connection
 * lost, a session expired), the look is made through a session of its own,
 * as a single lookup is, and a new session is kept for the next ones: exit
 * 69 only when ZooKeeper cannot be reached that way either. */
static int wait_gone(const pal_cli_common *c, const char *node, int wait_s)
{
	pal_coord_inspector *in = NULL;
	char err[512];
	if (pal_coord_inspector_open(pal__cli_zk(c), 5000, &in, err, sizeof err))
		in = NULL;
	int ec = PAL_EXIT_FAIL;
	for (int i = 0; i < wait_s * 10; i++) {
		bool present = true;
		int lec = 0;
		free(lookup_admin(c, in, node, &present, &lec));
		if (lec == PAL_EXIT_UNAVAIL && in) {
			pal_coord_inspector_close(in);
			in = NULL;
			lec = 0;
			free(lookup_admin(c, NULL, node, &present, &lec));
			if (!lec &&
			    pal_coord_inspector_open(pal__cli_zk(c), 5000, &in, err, sizeof err))
				in = NULL;
		}
		if (lec) {
			ec = lec;
			break;
		}
		if (!present) {
			printf("drain: %s left the cluster after %.1f s\n", node, i / 10.0);
			ec = PAL_EXIT_OK;
			break;
		}
		pal_sleep_ms(100);
	}
	pal_coord_inspector_close(in);
	if (ec == PAL_EXIT_FAIL)
		pal_cli_err("drain", "%s is still live after %d s", node, wait_s);
	return ec;
}

/* `drain --server URL`: POST /api/v1/drain with the API token (admin) drains
 * the node serving URL, audited under the token's name; the exit code. */
static int drain_remote(const pal_cli_common *c)
{
	json_t *o;
	int ec = pal_cli_remote_call(c, "drain", "POST", "/api/v1/drain", "application/json", "{}",
				     2, &o);
	if (ec)
		return ec;
	const char *id = json_string_value(json_object_get(o, "node"));
	printf("drain: accepted by %s at %s\n", id ? id : "the node", pal_cli_server(c));
	json_decref(o);
	return PAL_EXIT_OK;
}

int pal_cmd_drain(int argc, char **argv)
{
	pal_cli_common c = {0};
	const char *node = NULL, *admin = NULL;
	int wait_s = 0;
	static const struct option lo[] = {PAL_CLI_COMMON_LONGOPTS,
					   {"node", required_argument, NULL, 'n'},
					   {"admin", required_argument, NULL, 'a'},
					   {"wait", required_argument, NULL, 'w'},
					   {"help", no_argument, NULL, 'h'},
					   {0}};
	int opt, ec;
	while ((opt = getopt_long(argc, argv, "hn:a:w:", lo, NULL)) != -1) {
		switch (opt) {
		case 'n':
			node = optarg;
			break;
		case 'a':
			admin = optarg;
			break;
		case 'w': {
			long long v;
			if (!pal_cli_int("drain", "wait", optarg, 0, 3600, &v))
				return PAL_EXIT_USAGE;
			wait_s = (int)v;
			break;
		}
		default:
			if ((ec = pal_cli_opt_other(&c, opt, optarg, usage)) >= 0)
				return ec;
		}
	}
	if (optind == argc && !node && !admin && pal_cli_server(&c)) {
		if (!wait_s)
			return drain_remote(&c);
		pal_cli_err("drain", "--wait needs --node (to watch the node leave)");
		return PAL_EXIT_USAGE;
	}
	if (optind != argc || (!node == !admin) || (wait_s && !node)) {
		if (wait_s && !node)
			pal_cli_err("drain", "--wait needs --node (to watch the node leave)");
		usage(stderr);
		return PAL_EXIT_USAGE;
	}
	char *found = NULL;
	ec = 0;
	if (node) {
		bool present;
		found = lookup_admin(&c, NULL, node, &present, &ec);
		if (ec)
			return ec;
		if (!present) {
			pal_cli_err("drain", "node \"%s\" is not live in the cluster", node);
			return PAL_EXIT_FAIL;
		}
		if (!found) {
			pal_cli_err("drain", "node \"%s\" publishes no admin address", node);
			return PAL_EXIT_FAIL;
		}
		admin = found;
	}
	/* The admin token: --config's admin.token_file / admin.token_env, else
	 * $PALISADE_ADMIN_TOKEN (the default of admin.token_env). */
	pal_nodeconf tc;
	pal_diags td = {0};
	char *token = NULL, terr[512];
	int trc = c.config ? pal_nodeconf_load(c.config, &tc, &td) : pal_nodeconf_defaults(&tc);
	pal_diags_free(&td);
	if (!trc) {
		trc = pal_nodeconf_admin_token(&tc, &token, terr, sizeof terr);
		pal_nodeconf_free(&tc);
		if (trc) {
			pal_cli_err("drain", "%s", terr);
			free(found);
			return PAL_EXIT_DATAERR;
		}
	}
	char url[512], auth[1100];
	snprintf(url, sizeof url, "http://%s/drain", admin);
	snprintf(auth, sizeof auth, "Authorization: Bearer %s", token ? token : "");
	free(token);
	/* no body and no form content type: the node refuses those (CSRF) */
	struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type:");
	hdr = curl_slist_append(hdr, auth);
	CURL *h = curl_easy_init();
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, "");
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 5000L);
	curl_easy_setopt(h, CURLOPT_PROXY, ""); /* a node admin address, never via an env proxy */
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
	CURLcode cc = curl_easy_perform(h);
	long code = 0;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(h);
	curl_slist_free_all(hdr);
	if (cc != CURLE_OK) {
		pal_cli_err("drain", "cannot reach %s: %s", url, curl_easy_strerror(cc));
		free(found);
		return PAL_EXIT_UNAVAIL;
	}
	if (code != 202) {
		pal_cli_err("drain", "%s answered HTTP %ld%s", url, code,
			    code == 401 || code == 403
				? " (the node's admin token: $PALISADE_ADMIN_TOKEN, or --config "
				  "with admin.token_file)"
				: "");
		free(found);
		return PAL_EXIT_FAIL;
	}
	printf("drain: accepted by %s%s%s\n", node ? node : admin, node ? " at " : "",
	       node ? admin : "");
	free(found);
	if (!wait_s)
		return PAL_EXIT_OK;
	return wait_gone(&c, node, wait_s);
}
