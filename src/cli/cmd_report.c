/*
 * cmd_report.c - `palisade report cost`: what each correct result cost over
 * a range of instants (src/store/report.c, docs/operations.md "What a
 * correct result costs").  A table by default, the report's JSON object
 * with --output json.
 */
#include <getopt.h>
#include <glib.h>
#include <stdio.h>
#include <string.h>
#include "palisade/cli.h"
#include "palisade/ops.h"
#include "palisade/report.h"
#include "palisade/timefmt.h"
#include "cli_int.h"

#define DEFAULT_LIMIT 50

static void usage(FILE *fp)
{
	fprintf(fp,
		"usage: palisade report cost --from RFC3339 --to RFC3339\n"
		"                            [--job JOB | --group GROUP | --tenant TENANT]\n"
		"                            [--limit N] [--output table|json]\n"
		"                            [--pg CONNINFO] [--config FILE]\n"
		"                            [--server URL [--token-file FILE]]\n"
		"Cost per correct result: over the triggers scheduled in [--from, --to), per\n"
		"job and in total, the attempts, retries, unknown outcomes, manual tickets,\n"
		"calls, status queries and stored row bytes they took, and each of them per\n"
		"succeeded trigger.  Jobs costliest first (attempts per success; jobs without\n"
		"a success first), at most --limit (default %d).  Reads the database, or\n"
		"through --server GET /api/v1/report/cost.\n"
		"Exit: 0 reported, 3 no such job, 64 usage, 69 database unreachable.\n",
		DEFAULT_LIMIT);
}

static long long i_(json_t *o, const char *k)
{
	return (long long)json_integer_value(json_object_get(o, k));
}

/* one count per success as "1.250", or "-" without a success */
static const char *per(json_t *row, const char *k, char *buf, size_t len)
{
	json_t *ps = json_object_get(row, "per_success");
	json_t *v = ps ? json_object_get(ps, k) : NULL;
	if (!json_is_number(v))
		return "-";
	snprintf(buf, len, "%.3f", json_number_value(v));
	return buf;
}

static void line(json_t *row, const char *name)
{
	char a[32], r[32], u[32], t[32], c[32], b[32];
	printf("%-32s %8lld %9lld %7lld %10s %9s %9s %9s %9s %10s\n", name, i_(row, "triggers"),
	       i_(row, "succeeded"), i_(row, "unfinished"), per(row, "attempts", a, sizeof a),
	       per(row, "retries", r, sizeof r), per(row, "unknown", u, sizeof u),
	       per(row, "tickets", t, sizeof t), per(row, "calls", c, sizeof c),
	       per(row, "stored_bytes", b, sizeof b));
}

static void table(json_t *rep)
{
	printf("cost per correct result, instants from %s to %s\n",
	       json_string_value(json_object_get(rep, "from")),
	       json_string_value(json_object_get(rep, "to")));
	printf("%-32s %8s %9s %7s %10s %9s %9s %9s %9s %10s\n", "JOB", "TRIGGERS", "SUCCEEDED",
	       "OPEN", "ATTEMPTS/S", "RETRIES/S", "UNKNOWN/S", "TICKETS/S", "CALLS/S", "BYTES/S");
	size_t i;
	json_t *row;
	json_array_foreach(json_object_get(rep, "jobs"), i, row)
	    line(row, json_string_value(json_object_get(row, "job_id")));
	if (json_is_true(json_object_get(rep, "jobs_truncated")))
		printf("(more jobs: raise --limit, or narrow with --job, --group or --tenant)\n");
	line(json_object_get(rep, "total"), "total");
}

/* The report of R's range and scope, LIMIT job rows, through the API
 * (--server) into *OUT; the exit code. */
static int cost_remote(const pal_cli_common *c, const pal_cli_range *r, int limit, json_t **out)
{
	char *q = pal_cli_range_query(r);
	char *path = g_strdup_printf("/api/v1/report/cost?%s&limit=%d", q, limit);
	int ec = pal_cli_remote_get(c, "report", path, out);
	g_free(path);
	g_free(q);
	return ec;
}

static int cost_call(pal_store *st, const void *ctx, json_t **out, char *err, size_t errlen)
{
	return pal_store_cost_json(st, ctx, out, err, errlen);
}

static int cost(int argc, char **argv)
{
	pal_cli_common c = {0};
	pal_cli_range r = {.from = PAL_OPS_NOW, .to = PAL_OPS_NOW};
	long long limit = DEFAULT_LIMIT;
	static const struct option lo[] = {PAL_CLI_COMMON_LONGOPTS,
					   PAL_CLI_RANGE_LONGOPTS,
					   {"limit", required_argument, NULL, 'n'},
					   {"help", no_argument, NULL, 'h'},
					   {0}};
	int opt, ec;
	bool ok;
	while ((opt = getopt_long(argc, argv, "hn:", lo, NULL)) != -1) {
		if (pal_cli_range_opt("report", opt, optarg, &r, &ok)) {
			if (!ok)
				return PAL_EXIT_USAGE;
		} else if (opt == 'n') {
			if (!pal_cli_int("report", "limit", optarg, 1, 100000, &limit))
				return PAL_EXIT_USAGE;
		} else if ((ec = pal_cli_opt_other(&c, opt, optarg, usage)) >= 0) {
			return ec;
		}
	}
	if (optind != argc || !pal_cli_range_ok("report", &r)) {
		usage(stderr);
		return PAL_EXIT_USAGE;
	}
	pal_cost_scope s = {r.from, r.to, r.scope, (int)limit};
	json_t *rep;
	ec = pal_cli_server(&c) ? cost_remote(&c, &r, s.limit, &rep)
				: pal_cli_store_call(&c, "report", cost_call, &s, &rep);
	if (ec)
		return ec;
	if (c.json) {
		json_dumpf(rep, stdout, JSON_INDENT(2));
		putchar('\n');
	} else {
		table(rep);
	}
	json_decref(rep);
	return PAL_EXIT_OK;
}

int pal_cmd_report(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "cost") == 0)
		return cost(argc - 1, argv + 1);
	if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		usage(stdout);
		return PAL_EXIT_OK;
	}
	usage(stderr);
	return PAL_EXIT_USAGE;
}
