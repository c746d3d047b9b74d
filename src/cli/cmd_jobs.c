/*
 * cmd_jobs.c - `palisade jobs [JOB]`: jobs and their plan versions.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include "palisade/cli.h"
#include "palisade/err.h"
#include "cli_int.h"

static void usage(FILE *fp)
{
	fprintf(fp, "usage: palisade jobs [--versions] [--output table|json] [--pg CONNINFO]\n"
		    "                     [--config FILE] [JOB]\n"
		    "List jobs (or one JOB) with their latest and active plan versions;\n"
		    "--versions adds one line per stored version.  JSON always holds the versions.\n");
}

static const char *str(json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));
	return s ? s : "-";
}

static void print_table(json_t *jobs, bool versions)
{
	printf("%-32s %-12s %-12s %5s %6s %6s  %s\n", "JOB", "TENANT", "GROUP", "SHARD", "LATEST",
	       "ACTIVE", "SCHEDULE");
	size_t i;
	json_t *j;
	json_array_foreach(jobs, i, j)
	{
		json_t *vs = json_object_get(j, "versions");
		json_t *last = json_array_get(vs, json_array_size(vs) - 1);
		json_t *act = json_object_get(j, "active_version");
		char active[16] = "-";
		if (json_is_integer(act))
			snprintf(active, sizeof active, "v%lld", (long long)json_integer_value(act));
		printf("%-32s %-12s %-12s %5lld %5s%lld %6s  %s (%s)\n", str(j, "job_id"),
		       str(j, "tenant"), str(j, "group"),
		       (long long)json_integer_value(json_object_get(j, "shard")), "v",
		       (long long)json_integer_value(json_object_get(j, "latest_version")), active,
		       str(last, "cron"), str(last, "timezone"));
		if (!versions)
			continue;
		size_t k;
		json_t *v;
		json_array_foreach(vs, k, v)
		{
			printf("    v%-4lld digest %.12s  %s %s  by %s at %s\n",
			       (long long)json_integer_value(json_object_get(v, "version")),
			       str(v, "digest"), str(v, "cron"), str(v, "timezone"),
			       str(v, "created_by"), str(v, "created_at"));
		}
	}
}

int pal_cmd_jobs(int argc, char **argv)
{
	pal_cli_common c = { 0 };
	bool versions = false;
	static const struct option lo[] = { PAL_CLI_COMMON_LONGOPTS,
					    { "versions", no_argument, NULL, 'V' },
					    { "help", no_argument, NULL, 'h' },
					    { 0 } };
	int opt;
	while ((opt = getopt_long(argc, argv, "hV", lo, NULL)) != -1) {
		if (pal_cli_common_opt(&c, opt, optarg))
			continue;
		if (opt == 'V') {
			versions = true;
			continue;
		}
		if (opt == 'h') {
			usage(stdout);
			return PAL_EXIT_OK;
		}
		usage(stderr);
		return PAL_EXIT_USAGE;
	}
	if (argc - optind > 1) {
		usage(stderr);
		return PAL_EXIT_USAGE;
	}
	const char *job = optind < argc ? argv[optind] : NULL;
	pal_store *st;
	int ec = pal_cli_connect(&c, false, &st);
	if (ec)
		return ec;
	json_t *jobs;
	char err[1024];
	int rc = pal_store_jobs_json(st, job, &jobs, err, sizeof err);
	pal_store_close(st);
	if (rc) {
		pal_cli_err("jobs", "%s", err);
		return PAL_EXIT_UNAVAIL;
	}
	if (job && json_array_size(jobs) == 0) {
		pal_cli_err("jobs", "no job \"%s\"", job);
		json_decref(jobs);
		return PAL_EXIT_FAIL;
	}
	if (c.json) {
		json_dumpf(jobs, stdout, JSON_INDENT(2));
		putchar('\n');
	} else {
		print_table(jobs, versions || job);
	}
	json_decref(jobs);
	return PAL_EXIT_OK;
}
