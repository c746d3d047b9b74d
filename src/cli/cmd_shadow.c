/*
 * cmd_shadow.c - `palisade shadow diff`: the old system's record of what it
 * fired against palisade's plan of the same jobs (src/plan/shadowdiff.c,
 * docs/migrating.md).  Exit 0 when they agree, 2 when not.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <glib.h>
#include "palisade/cli.h"
#include "palisade/name.h"
#include "palisade/ops.h"
#include "palisade/report.h"
#include "palisade/schedule.h"
#include "palisade/shadowdiff.h"
#include "palisade/timefmt.h"
#include "cli_int.h"

#define DEFAULT_LIMIT 1000

static void usage(FILE *fp)
{
	fprintf(
	    fp,
	    "usage: palisade shadow (--job JOB | --group GROUP | --tenant TENANT) --reason TEXT\n"
	    "       palisade shadow list\n"
	    "       palisade shadow diff --from RFC3339 --to RFC3339 --against FILE|-\n"
	    "                            [--job JOB | --group GROUP | --tenant TENANT]\n"
	    "                            [--limit N] [--max-instants N] [--output table|json]\n"
	    "                            [--pg CONNINFO] [--config FILE]\n"
	    "                            [--server URL [--token-file FILE]]\n"
	    "shadow --job|--group|--tenant, shadow list: see `palisade shadow list --help`.\n"
	    "shadow diff: compare the old system's record of what it fired (FILE: one\n"
	    "\"job_id,RFC3339\" line per fired instant; blank lines and lines starting\n"
	    "with # are skipped)\n"
	    "with the instants palisade's plan has for the same jobs in [--from, --to):\n"
	    "each instant only one side has, with the reason palisade can tell\n"
	    "(excluded, misfire, dst, zone, repeated; else schedule or not_fired).\n"
	    "Without a scope, lines of jobs palisade does not know are differences\n"
	    "(unknown_job); with one, lines of other jobs are skipped.  At most --limit\n"
	    "differences are listed (default %d); the counts cover all.\n"
	    "--max-instants N: plan at most N instants of the jobs together, else\n"
	    "refuse (exit 65) before holding more: a shorter range or fewer jobs\n"
	    "(default %d, the API's bound; 0: no bound).\n"
	    "Through --server the file goes whole to the node (POST /api/v1/shadow/diff;\n"
	    "--limit at most 100000 there, the node's bound of instants, no\n"
	    "--max-instants).\n"
	    "Exit: 0 equal, 2 different, 3 no such job, 64 usage, 65 unreadable FILE,\n"
	    "a line of it not \"job_id,RFC3339\" or over --max-instants, 69 database\n"
	    "unreachable.\n",
	    DEFAULT_LIMIT, PAL_SHADOW_MAX_INSTANTS);
}

/* The record of PATH ("-": stdin) into R.  65 with the line named when a
 * line is not "job_id,RFC3339". */
static int read_record(const char *path, pal_shadow_record *r)
{
	FILE *fp = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
	if (!fp) {
		pal_cli_err("shadow", "%s: %s", path, strerror(errno));
		return PAL_EXIT_DATAERR;
	}
	char *line = NULL;
	size_t cap = 0;
	long no = 0;
	int ec = PAL_EXIT_OK;
	while (getline(&line, &cap, fp) >= 0) {
		no++;
		if (!pal_shadow_record_line(r, line)) {
			pal_cli_err("shadow", "%s:%ld: expected \"job_id,RFC3339\"", path, no);
			ec = PAL_EXIT_DATAERR;
			break;
		}
	}
	if (ferror(fp) && !ec) {
		pal_cli_err("shadow", "%s: %s", path, strerror(errno));
		ec = PAL_EXIT_DATAERR;
	}
	free(line);
	if (fp != stdin)
		fclose(fp);
	return ec;
}

/* The report of the record PATH ("-": stdin) through the API (--server):
 * the file is the body, sent as it is; the server reads and checks its
 * lines. */
static int diff_remote(const pal_cli_common *c, const pal_cli_range *r, const char *path,
		       long long limit, json_t **rep)
{
	char *text = NULL;
	gsize len = 0;
	GError *ge = NULL;
	if (!strcmp(path, "-")) {
		GString *in = g_string_new(NULL);
		char buf[65536];
		size_t n;
		while ((n = fread(buf, 1, sizeof buf, stdin)) > 0)
			g_string_append_len(in, buf, (gssize)n);
		len = in->len;
		text = g_string_free(in, FALSE);
	} else if (!g_file_get_contents(path, &text, &len, &ge)) {
		pal_cli_err("shadow", "%s", ge->message);
		g_error_free(ge);
		return PAL_EXIT_DATAERR;
	}
	char *q = pal_cli_range_query(r);
	char *url = g_strdup_printf("/api/v1/shadow/diff?%s&limit=%lld", q, limit);
	int ec = pal_cli_remote_call(c, "shadow", "POST", url, "text/csv", text, len, rep);
	g_free(url);
	g_free(q);
	g_free(text);
	return ec;
}

static void table(json_t *rep)
{
	json_t *c = json_object_get(rep, "counts");
	printf("shadow diff %s .. %s: %lld jobs; old %lld instants, palisade %lld, %lld in both\n",
	       json_string_value(json_object_get(rep, "from")),
	       json_string_value(json_object_get(rep, "to")),
	       (long long)json_integer_value(json_object_get(rep, "jobs")),
	       (long long)json_integer_value(json_object_get(c, "old")),
	       (long long)json_integer_value(json_object_get(c, "palisade")),
	       (long long)json_integer_value(json_object_get(c, "both")));
	json_t *d = json_object_get(rep, "differences");
	if (json_array_size(d))
		printf("%-9s %-32s %-20s %-10s %s\n", "ONLY IN", "JOB", "INSTANT", "REASON",
		       "DETAIL");
	size_t i;
	json_t *x;
	json_array_foreach(d, i, x)
	{
		printf("%-9s %-32s %-20s %-10s %s\n", json_string_value(json_object_get(x, "only")),
		       json_string_value(json_object_get(x, "job")),
		       json_string_value(json_object_get(x, "at")),
		       json_string_value(json_object_get(x, "reason")),
		       json_string_value(json_object_get(x, "detail")));
	}
	if (json_is_true(json_object_get(rep, "truncated")))
		printf("(more differences: see the counts; raise --limit)\n");
	printf("%s: %lld only in the old record, %lld only in palisade's plan\n",
	       json_is_true(json_object_get(rep, "equal")) ? "equal" : "different",
	       (long long)json_integer_value(json_object_get(c, "only_old")),
	       (long long)json_integer_value(json_object_get(c, "only_palisade")));
}

static int diff(int argc, char **argv)
{
	pal_cli_common c = {0};
	pal_cli_range r = {.from = PAL_OPS_NOW, .to = PAL_OPS_NOW};
	const char *against = NULL;
	long long limit = DEFAULT_LIMIT, max = PAL_SHADOW_MAX_INSTANTS;
	bool have_max = false;
	static const struct option lo[] = {PAL_CLI_COMMON_LONGOPTS,
					   PAL_CLI_RANGE_LONGOPTS,
					   {"against", required_argument, NULL, 'a'},
					   {"limit", required_argument, NULL, 'n'},
					   {"max-instants", required_argument, NULL, 'M'},
					   {"help", no_argument, NULL, 'h'},
					   {0}};
	int opt, ec;
	bool ok;
	while ((opt = getopt_long(argc, argv, "hn:M:", lo, NULL)) != -1) {
		if (pal_cli_range_opt("shadow", opt, optarg, &r, &ok)) {
			if (!ok)
				return PAL_EXIT_USAGE;
		} else if (opt == 'a') {
			against = optarg;
		} else if (opt == 'n') {
			if (!pal_cli_int("shadow", "limit", optarg, 1, 1000000, &limit))
				return PAL_EXIT_USAGE;
		} else if (opt == 'M') {
			if (!pal_cli_int("shadow", "max-instants", optarg, 0, INT64_MAX, &max))
				return PAL_EXIT_USAGE;
			have_max = true;
		} else if ((ec = pal_cli_opt_other(&c, opt, optarg, usage)) >= 0) {
			return ec;
		}
	}
	if (optind != argc || !pal_cli_range_ok("shadow", &r) || !against) {
		if (!against)
			pal_cli_err("shadow", "--against is required");
		usage(stderr);
		return PAL_EXIT_USAGE;
	}
	json_t *rep = NULL;
	if (pal_cli_server(&c) && have_max) {
		pal_cli_err("shadow", "--max-instants: through --server the node's bound holds (%d)",
			    PAL_SHADOW_MAX_INSTANTS);
		return PAL_EXIT_USAGE;
	}
	if (pal_cli_server(&c)) {
		if ((ec = diff_remote(&c, &r, against, limit, &rep)))
			return ec;
	} else {
		pal_shadow_record *rec = pal_shadow_record_new(r.from, r.to);
		pal_store *st = NULL;
		if (!(ec = read_record(against, rec)) && !(ec = pal_cli_connect(&c, false, &st))) {
			char err[1024];
			int rc = pal_shadow_report(st, &r.scope, NULL, 0, rec, (size_t)limit,
						   (size_t)max, &rep, err, sizeof err);
			if (rc) {
				pal_cli_err("shadow", "%s%s", err,
					    rc == PAL_ETOOBIG ? " (--max-instants sets the bound, 0 none)"
							      : "");
				ec = rc == PAL_ETOOBIG	? PAL_EXIT_DATAERR
				     : rc == PAL_EINVAL ? PAL_EXIT_SOFTWARE
							: pal_cli_exit_code(rc);
			}
		}
		pal_store_close(st);
		pal_shadow_record_free(rec);
		if (ec)
			return ec;
	}
	if (c.json) {
		json_dumpf(rep, stdout, JSON_INDENT(2));
		putchar('\n');
	} else {
		table(rep);
	}
	ec = json_is_true(json_object_get(rep, "equal")) ? PAL_EXIT_OK : PAL_EXIT_BROKEN;
	json_decref(rep);
	return ec;
}

int pal_cmd_shadow(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "diff") == 0)
		return diff(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "--help") && strcmp(argv[1], "-h"))
		return pal__cli_shadow_set(argc, argv); /* cmd_cutover.c */
	if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		usage(stdout);
		return PAL_EXIT_OK;
	}
	usage(stderr);
	return PAL_EXIT_USAGE;
}
