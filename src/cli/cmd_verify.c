/*
 * cmd_verify.c - `palisade verify --from T --to T [--job J]`: recompute the
 * plan set from the job versions; report missing instants (plan - triggers -
 * misfires), duplicates and unexpected triggers.  Exit 0 only when all are 0.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include "palisade/cli.h"
#include "palisade/err.h"
#include "palisade/timefmt.h"
#include "palisade/verify.h"
#include "cli_int.h"

static void usage(FILE *fp)
{
	fprintf(fp,
		"usage: palisade verify --from RFC3339 --to RFC3339 [--job JOB]\n"
		"                       [--output table|json] [--pg CONNINFO] [--config FILE]\n"
		"Recompute every instant of every activated job version in [from, to] and\n"
		"compare with the triggers and misfire decisions in the database.\n"
		"  missing     instants with neither a trigger nor a misfire record (G1)\n"
		"  duplicates  extra trigger rows for one plan key (G2)\n"
		"  unexpected  scheduled triggers at instants outside the plan set\n"
		"Exit: 0 all three zero, 1 otherwise, 64 usage, 69 database unreachable.\n");
}

int pal_cmd_verify(int argc, char **argv)
{
	pal_cli_common c = { 0 };
	const char *job = NULL;
	int64_t from = 0, to = 0;
	bool have_from = false, have_to = false;
	static const struct option lo[] = { PAL_CLI_COMMON_LONGOPTS,
					    { "from", required_argument, NULL, 'f' },
					    { "to", required_argument, NULL, 't' },
					    { "job", required_argument, NULL, 'j' },
					    { "help", no_argument, NULL, 'h' },
					    { 0 } };
	int opt, ec;
	while ((opt = getopt_long(argc, argv, "hf:t:j:", lo, NULL)) != -1) {
		switch (opt) {
		case 'f':
		case 't':
			if (pal_parse_rfc3339(optarg, opt == 'f' ? &from : &to)) {
				pal_cli_err("verify", "--%s \"%s\": expected RFC 3339",
					    opt == 'f' ? "from" : "to", optarg);
				return PAL_EXIT_USAGE;
			}
			*(opt == 'f' ? &have_from : &have_to) = true;
			break;
		case 'j':
			job = optarg;
			break;
		default:
			if ((ec = pal_cli_opt_other(&c, opt, optarg, usage)) >= 0)
				return ec;
		}
	}
	if (optind != argc || !have_from || !have_to || to < from) {
		if (have_from && have_to && to < from)
			pal_cli_err("verify", "--to is before --from");
		usage(stderr);
		return PAL_EXIT_USAGE;
	}
	pal_store *st;
	ec = pal_cli_connect(&c, false, &st);
	if (ec)
		return ec;
	pal_verify_report r;
	char err[1024];
	int rc = pal_verify(st, from, to, job, &r, err, sizeof err);
	pal_store_close(st);
	if (rc) {
		pal_cli_err("verify", "%s", err);
		pal_verify_report_free(&r);
		return rc == PAL_ENOENT ? PAL_EXIT_FAIL : PAL_EXIT_UNAVAIL;
	}
	bool ok = !r.missing && !r.duplicates && !r.unexpected;
	if (c.json) {
		json_t *o = json_pack("{s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:O}", "ok", ok, "jobs",
				      (json_int_t)r.jobs, "expected", (json_int_t)r.expected,
				      "triggered", (json_int_t)r.triggered, "misfired",
				      (json_int_t)r.misfired, "missing", (json_int_t)r.missing,
				      "duplicates", (json_int_t)r.duplicates, "unexpected",
				      (json_int_t)r.unexpected, "samples", r.samples);
		json_dumpf(o, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(o);
	} else {
		printf("verify: %s jobs=%lld expected=%lld triggered=%lld misfired=%lld "
		       "missing=%lld duplicates=%lld unexpected=%lld\n",
		       ok ? "OK" : "FAILED", (long long)r.jobs, (long long)r.expected,
		       (long long)r.triggered, (long long)r.misfired, (long long)r.missing,
		       (long long)r.duplicates, (long long)r.unexpected);
		const char *key;
		json_t *arr;
		json_object_foreach(r.samples, key, arr)
		{
			size_t i;
			json_t *s;
			json_array_foreach(arr, i, s)
			printf("  %-10s %s %s partition %lld\n", key,
			       json_string_value(json_object_get(s, "job")),
			       json_string_value(json_object_get(s, "at")),
			       (long long)json_integer_value(json_object_get(s, "partition")));
		}
	}
	pal_verify_report_free(&r);
	return ok ? PAL_EXIT_OK : PAL_EXIT_FAIL;
}
