/*
 * cmd_apply.c - `palisade apply FILE...`: validate, canonicalise and store job
 * specs as plan versions, in one transaction.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/cli.h"
#include "palisade/err.h"
#include "palisade/jobspec.h"
#include "cli_int.h"

static void usage(FILE *fp)
{
	fprintf(fp,
		"usage: palisade apply [--reason TEXT] [--pg CONNINFO] [--config FILE]\n"
		"                      [--output table|json] FILE...\n"
		"Validate the job files, then store each job as a new plan version when its\n"
		"canonical spec changed (version n+1), or report it unchanged.  All jobs go in\n"
		"one transaction: on any error nothing is stored.  History is never rewritten.\n"
		"Exit: 0 applied, 65 invalid files (nothing stored), 69 database unreachable.\n");
}

int pal_cmd_apply(int argc, char **argv)
{
	pal_cli_common c = { 0 };
	const char *reason = "";
	static const struct option lo[] = { PAL_CLI_COMMON_LONGOPTS,
					    { "reason", required_argument, NULL, 'r' },
					    { "help", no_argument, NULL, 'h' },
					    { 0 } };
	int opt, ec;
	while ((opt = getopt_long(argc, argv, "hr:", lo, NULL)) != -1) {
		if (opt == 'r') {
			reason = optarg;
			continue;
		}
		if ((ec = pal_cli_opt_other(&c, opt, optarg, usage)) >= 0)
			return ec;
	}
	if (optind >= argc) {
		usage(stderr);
		return PAL_EXIT_USAGE;
	}
	pal_jobset set = { 0 };
	pal_diags diags = { 0 };
	if (pal_jobfiles_load((const char *const *)argv + optind, (size_t)(argc - optind), &set,
			      &diags)) {
		pal_diags_print(&diags, stderr);
		fprintf(stderr, "palisade apply: %zu error%s; nothing applied\n", diags.n,
			diags.n == 1 ? "" : "s");
		pal_diags_free(&diags);
		pal_jobset_free(&set);
		return PAL_EXIT_DATAERR;
	}
	pal_diags_free(&diags);

	pal_store *st;
	ec = pal_cli_connect(&c, false, &st);
	if (ec) {
		pal_jobset_free(&set);
		return ec;
	}
	pal_apply_result *res = calloc(set.n ? set.n : 1, sizeof *res);
	char err[1024];
	int rc = res ? pal_store_apply(st, &set, pal_cli_actor(), reason, pal__cli_config_shards(&c),
				       res, err, sizeof err)
		     : PAL_ENOMEM;
	pal_store_close(st);
	if (rc) {
		pal_cli_err("apply", "%s; nothing applied", rc == PAL_ENOMEM ? "out of memory" : err);
		free(res);
		pal_jobset_free(&set);
		return rc == PAL_EDB ? PAL_EXIT_UNAVAIL : PAL_EXIT_SOFTWARE;
	}
	static const char *const word[] = { "created", "updated", "unchanged" };
	size_t count[3] = { 0 };
	json_t *arr = c.json ? json_array() : NULL;
	for (size_t i = 0; i < set.n; i++) {
		count[res[i].outcome]++;
		if (arr)
			json_array_append_new(arr, json_pack("{s:s, s:s, s:i}", "job_id", res[i].job_id,
							     "outcome", word[res[i].outcome],
							     "version", res[i].version));
		else
			printf("%-9s %s v%d\n", word[res[i].outcome], res[i].job_id, res[i].version);
	}
	if (arr) {
		json_dumpf(arr, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(arr);
	} else {
		printf("apply: %zu created, %zu updated, %zu unchanged\n", count[0], count[1],
		       count[2]);
	}
	free(res);
	pal_jobset_free(&set);
	return PAL_EXIT_OK;
}
