/*
 * cmd_node.c - `palisade node`: parse flags and run the daemon (src/node).
 */
#include <getopt.h>
#include <stdio.h>
#include "palisade/cli.h"
#include "palisade/err.h"
#include "palisade/log.h"
#include "palisade/node.h"

static void usage(FILE *fp)
{
	fprintf(fp,
		"usage: palisade node [--config FILE] [--node-id ID] [--admin HOST:PORT]\n"
		"                     [--roles controller,executor] [--pg CONNINFO] [--zk HOSTS]\n"
		"                     [--log-format json|text]\n"
		"Run a cluster node.  Settings: flags > config file > PALISADE_PG / PALISADE_ZK.\n"
		"Logs are JSON lines on stdout (--log-format text: one line for humans).\n"
		"SIGTERM or 'palisade drain' (POST /drain with the admin token) hands the\n"
		"node's shards off and exits 0; a second SIGTERM exits at once; SIGHUP\n"
		"reloads (command-line settings are kept).  Exit status: 0 drained, 64 bad\n"
		"command line, 65 invalid configuration, 69 admin address unavailable,\n"
		"70 internal error or schema too new (see palisade(1)).\n");
}

int pal_cmd_node(int argc, char **argv)
{
	pal_node_opts o = { 0 };
	static const struct option lo[] = { { "config", required_argument, NULL, 'c' },
					    { "node-id", required_argument, NULL, 'n' },
					    { "admin", required_argument, NULL, 'a' },
					    { "roles", required_argument, NULL, 'r' },
					    { "pg", required_argument, NULL, 'p' },
					    { "zk", required_argument, NULL, 'z' },
					    { "log-format", required_argument, NULL, 'l' },
					    { "help", no_argument, NULL, 'h' },
					    { 0 } };
	int opt;
	while ((opt = getopt_long(argc, argv, "hc:", lo, NULL)) != -1) {
		switch (opt) {
		case 'c': o.config_path = optarg; break;
		case 'n': o.node_id = optarg; break;
		case 'a': o.admin = optarg; break;
		case 'r': o.roles = optarg; break;
		case 'p': o.pg = optarg; break;
		case 'z': o.zk = optarg; break;
		case 'l':
			if (pal_log_format_parse(optarg) < 0) {
				fprintf(stderr, "palisade node: --log-format: \"%s\" is not json or text\n", optarg);
				return PAL_EXIT_USAGE;
			}
			o.log_format = optarg;
			break;
		case 'h': usage(stdout); return PAL_EXIT_OK;
		default: usage(stderr); return PAL_EXIT_USAGE;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return PAL_EXIT_USAGE;
	}
	return pal_node_run(&o);
}
