/*
 * cmd_validate.c - `palisade validate FILE...`: check job files offline.
 *
 * Loads every file with pal_jobfiles_load() (all checks of docs/jobs.md,
 * duplicate ids across the files), prints every diagnostic to stderr as
 * "file:line:col: error: message", and exits
 *   0  (PAL_EXIT_OK)      all valid; "ok: N jobs in M files" on stdout
 *   65 (PAL_EXIT_DATAERR) at least one problem
 *   64 (PAL_EXIT_USAGE)   bad command line (no files, unknown option)
 * It never connects to PostgreSQL or ZooKeeper.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include "palisade/cli.h"
#include "palisade/err.h"
#include "palisade/jobfile.h"
#include "cli_int.h"

static void usage(FILE *fp)
{
	fprintf(fp, "usage: palisade validate [--config FILE] FILE...\n"
		    "\n"
		    "Check job files (docs/jobs.md) without touching the cluster: YAML syntax,\n"
		    "every key and value, cron expressions, time zones, templates, and job ids\n"
		    "unique across all the files given.  Every problem is printed to stderr as\n"
		    "FILE:LINE:COL: error: MESSAGE.\n"
		    "A job whose retry and catch-up horizon exceeds sink.key_retention of the\n"
		    "node config FILE (default 7d) is refused: the services it calls would have\n"
		    "forgotten its idempotency key (docs/protocol.md).\n"
		    "A job naming a ${NAME} secret that is the node's own (PALISADE_*, libpq's,\n"
		    "the proxy variables; with --config also admin.token_env and\n"
		    "zookeeper.auth_env) or that the config's executor.secrets does not give\n"
		    "the job's tenant is refused (docs/jobs.md, \"Secrets\"), and with --config\n"
		    "so is a job whose target.url, target.status_url or notify url names a\n"
		    "host the config's executor.target_hosts does not give its tenant\n"
		    "(docs/jobs.md, \"Target hosts\").\n"
		    "\n"
		    "exit status: 0 valid, 65 invalid, 64 usage error\n");
}

int pal_cmd_validate(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"help", no_argument, NULL, 'h'},
	    {"config", required_argument, NULL, 'c'},
	    {NULL, 0, NULL, 0},
	};
	const char *config = NULL;
	pal_jobset set = {0};
	pal_diags diags = {0};
	int opt, rc;
	size_t n_files;

	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+hc:", opts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			config = optarg;
			break;
		case 'h':
			usage(stdout);
			return PAL_EXIT_OK;
		default:
			fprintf(stderr, "palisade validate: unknown option \"%s\"\n",
				argv[optind - 1]);
			usage(stderr);
			return PAL_EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "palisade validate: no job files given; hint: palisade validate "
				"config/jobs/*.yaml\n");
		usage(stderr);
		return PAL_EXIT_USAGE;
	}
	n_files = (size_t)(argc - optind);
	rc = pal_jobfiles_load((const char *const *)(argv + optind), n_files, &set, &diags);
	if (rc == 0 && pal__cli_check_key_horizons(config, &set, &diags))
		rc = PAL_EINVAL;
	if (rc == 0 && pal__cli_check_tenant_policy(config, &set, &diags))
		rc = PAL_EINVAL;
	if (rc == 0 && diags.n == 0) {
		size_t spent = 0;
		for (size_t i = 0; i < set.n; i++)
			spent += pal__cli_note_spent(&set.jobs[i], stderr);
		if (spent)
			fprintf(stderr,
				"palisade validate: %zu job%s will not fire again (valid)\n", spent,
				spent == 1 ? "" : "s");
		printf("ok: %zu job%s in %zu file%s\n", set.n, set.n == 1 ? "" : "s", n_files,
		       n_files == 1 ? "" : "s");
		pal_jobset_free(&set);
		return PAL_EXIT_OK;
	}
	pal_diags_print(&diags, stderr);
	if (diags.n == 0) /* only possible when out of memory while reporting */
		fprintf(stderr, "palisade validate: %s\n", pal_strerror(rc));
	else
		fprintf(stderr, "palisade validate: %zu problem%s found\n", diags.n,
			diags.n == 1 ? "" : "s");
	pal_diags_free(&diags);
	pal_jobset_free(&set);
	return PAL_EXIT_DATAERR;
}
