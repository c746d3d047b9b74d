/*
 * cmd_verify.c - `palisade verify --from T --to T [--job J]`: recompute the
 * plan set from the job versions; report missing instants (plan - triggers -
 * misfires), duplicates, unexpected triggers and quarantined jobs.  Exit 0
 * only when all are 0, 2 (verify found a mismatch) otherwise.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include "palisade/cli.h"
#include "palisade/err.h"
#include "palisade/retention.h"
#include "palisade/timefmt.h"
#include "palisade/verify.h"
#include "cli_int.h"

static void usage(FILE *fp)
{
	fprintf(fp,
		"usage: palisade verify --from RFC3339 --to RFC3339 [--job JOB]\n"
		"                       [--stuck-after DURATION] [--sink-pg CONNINFO]\n"
		"                       [--max-instants N]\n"
		"                       [--output table|json] [--pg CONNINFO] [--config FILE]\n"
		"                       [--server URL [--token-file FILE]]\n"
		"Recompute every instant of every activated job version in [from, to] and\n"
		"compare with the triggers and misfire decisions in the database.\n"
		"  missing     instants with neither a trigger nor a misfire record (G1)\n"
		"  duplicates  extra trigger rows for one plan key (G2)\n"
		"  unexpected  scheduled triggers at instants outside the plan set\n"
		"  quarantined jobs whose planning failed and was stopped (palisade release)\n"
		"  never activated  jobs with no activated version 60 s after they were\n"
		"              stored: their instants since count as missing\n"
		"  stuck       triggers scheduled in the range still pending, retry_wait,\n"
		"              running, unknown, pausing or cancelling, unchanged and overdue\n"
		"              for longer than --stuck-after (default 1h; 0: not checked)\n"
		"  sink duplicates  with --sink-pg, a palisade-sink database: keys whose\n"
		"              effect was applied more than once (the last at or after --from)\n"
		"  key horizon jobs a controller found may send a key later than its\n"
		"              sink.key_retention (an open ticket each; docs/protocol.md)\n"
		"A range that starts before the retention horizon (`palisade retention\n"
		"--horizon`) is refused: its triggers may have been dropped.  A --to after\n"
		"the database clock is taken as the clock (said on stderr; to_clamped in\n"
		"the JSON): an instant still to come is not missing.\n"
		"--max-instants N  recompute at most N instants (times partitions), else\n"
		"              refuse (exit 65) before holding more: verify a shorter range\n"
		"              or one job (default 1000000, the API's bound; 0: no bound;\n"
		"              not with --server, where the node's bound holds)\n"
		"Exit: 0 all zero, 2 verify found a mismatch, 3 no such job, 4 range before\n"
		"the retention horizon, 64 usage, 65 over --max-instants, 69 database\n"
		"unreachable.\n");
}

/* The note of a report whose --to was after the database clock. */
static void say_clamped(const char *to)
{
	pal_cli_err("verify",
		    "--to is after the database clock: checked up to %s, the later instants "
		    "have not come",
		    to ? to : "now");
}

/* verify through the API (--server): the report's counts on one line and
 * its samples one a line (or the JSON); exit 2 when it is not ok. */
static int verify_remote(const pal_cli_common *c, int64_t from, int64_t to, const char *job)
{
	char f[32], t[32], path[320];
	pal_fmt_rfc3339(from, f, sizeof f);
	pal_fmt_rfc3339(to, t, sizeof t);
	snprintf(path, sizeof path, "/api/v1/verify?from=%s&to=%s%s%s", f, t, job ? "&job=" : "",
		 job ? job : "");
	json_t *o;
	int ec = pal_cli_remote_get(c, "verify", path, &o);
	if (ec)
		return ec;
	bool ok = json_is_true(json_object_get(o, "ok"));
	if (json_is_true(json_object_get(o, "to_clamped")))
		say_clamped(json_string_value(json_object_get(o, "to")));
	if (c->json) {
		json_dumpf(o, stdout, JSON_INDENT(2));
		putchar('\n');
	} else {
		const char *k;
		json_t *v;
		printf("verify: %s", ok ? "OK" : "FAILED");
		json_object_foreach(o, k, v)
		{
			if (json_is_integer(v))
				printf(" %s=%lld", k, (long long)json_integer_value(v));
		}
		putchar('\n');
		json_object_foreach(json_object_get(o, "samples"), k, v)
		{
			size_t i;
			json_t *e;
			json_array_foreach(v, i, e)
			{
				char *line = json_dumps(e, JSON_COMPACT);
				printf("  %-10s %s\n", k, line ? line : "");
				free(line);
			}
		}
	}
	json_decref(o);
	return ok ? PAL_EXIT_OK : PAL_EXIT_MISMATCH;
}

int pal_cmd_verify(int argc, char **argv)
{
	pal_cli_common c = { 0 };
	const char *job = NULL, *sink_pg = NULL;
	pal_verify_opts vo = { .activation_grace_s = PAL_VERIFY_ACTIVATION_GRACE_S,
			       .stuck_after_s = PAL_VERIFY_STUCK_AFTER_S,
			       .max_instants = PAL_VERIFY_MAX_INSTANTS };
	int64_t from = 0, to = 0;
	bool have_from = false, have_to = false, have_max = false;
	static const struct option lo[] = { PAL_CLI_COMMON_LONGOPTS,
					    { "from", required_argument, NULL, 'f' },
					    { "to", required_argument, NULL, 't' },
					    { "job", required_argument, NULL, 'j' },
					    { "stuck-after", required_argument, NULL, 'S' },
					    { "sink-pg", required_argument, NULL, 'K' },
					    { "max-instants", required_argument, NULL, 'M' },
					    { "help", no_argument, NULL, 'h' },
					    { 0 } };
	int opt, ec;
	while ((opt = getopt_long(argc, argv, "hf:t:j:S:K:M:", lo, NULL)) != -1) {
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
		case 'S': {
			int64_t ms;
			if (!strcmp(optarg, "0")) {
				vo.stuck_after_s = 0;
			} else if (pal_parse_duration_ms(optarg, &ms) || ms < 1000) {
				pal_cli_err("verify", "--stuck-after \"%s\": expected a duration of "
					    "at least 1s (e.g. 15m), or 0", optarg);
				return PAL_EXIT_USAGE;
			} else {
				vo.stuck_after_s = ms / 1000;
			}
			break;
		}
		case 'K':
			sink_pg = optarg;
			break;
		case 'M': {
			long long v;
			if (!pal_cli_int("verify", "max-instants", optarg, 0, INT64_MAX, &v))
				return PAL_EXIT_USAGE;
			vo.max_instants = v;
			have_max = true;
			break;
		}
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
	if (pal_cli_server(&c) && !sink_pg) {
		if (have_max) {
			pal_cli_err("verify", "--max-instants: through --server the node's bound "
				    "holds (%d)", PAL_VERIFY_MAX_INSTANTS);
			return PAL_EXIT_USAGE;
		}
		return verify_remote(&c, from, to, job);
	}
	pal_store *st;
	ec = pal_cli_connect(&c, false, &st);
	if (ec)
		return ec;
	pal_verify_report r;
	char err[1024];
	/* Before the retention horizon, triggers may have been dropped with
	 * their partition: a range there would count them as missing. */
	bool have_h;
	int64_t h_ms;
	if (pal_store_retention_horizon(st, &have_h, &h_ms, err, sizeof err)) {
		pal_cli_err("verify", "%s", err);
		pal_store_close(st);
		return PAL_EXIT_UNAVAIL;
	}
	if (have_h && from * 1000 < h_ms) {
		char a[40], b[40];
		pal_fmt_rfc3339(from, a, sizeof a);
		pal_fmt_rfc3339((h_ms + 999) / 1000, b, sizeof b);
		pal_cli_err("verify", "--from %s is before the retention horizon %s: the triggers of "
			    "earlier instants may have been dropped (retention.triggers); verify "
			    "from %s on", a, b, b);
		pal_store_close(st);
		return PAL_EXIT_REFUSED;
	}
	if (sink_pg && pal_store_open(sink_pg, &vo.sink, err, sizeof err)) {
		pal_cli_err("verify", "--sink-pg: %s", err);
		pal_store_close(st);
		return PAL_EXIT_UNAVAIL;
	}
	int rc = pal_verify(st, from, to, job, &vo, &r, err, sizeof err);
	pal_store_close(st);
	if (vo.sink)
		pal_store_close(vo.sink);
	if (rc) {
		pal_cli_err("verify", "%s%s", err,
			    rc == PAL_ETOOBIG ? " (--max-instants sets the bound, 0 none)" : "");
		pal_verify_report_free(&r);
		return rc == PAL_ENOENT	   ? PAL_EXIT_NOTFOUND
		       : rc == PAL_ETOOBIG ? PAL_EXIT_DATAERR
					   : PAL_EXIT_UNAVAIL;
	}
	bool ok = pal_verify_ok(&r);
	if (r.to_clamped) {
		char t[32];
		pal_fmt_rfc3339(r.to, t, sizeof t);
		say_clamped(t);
	}
	if (c.json) {
		json_t *o = pal_verify_report_json(&r);
		json_dumpf(o, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(o);
	} else {
		printf("verify: %s jobs=%lld expected=%lld triggered=%lld misfired=%lld "
		       "missing=%lld duplicates=%lld unexpected=%lld quarantined=%lld "
		       "never_activated=%lld stuck=%lld key_horizon=%lld%s",
		       ok ? "OK" : "FAILED", (long long)r.jobs, (long long)r.expected,
		       (long long)r.triggered, (long long)r.misfired, (long long)r.missing,
		       (long long)r.duplicates, (long long)r.unexpected, (long long)r.quarantined,
		       (long long)r.never_activated, (long long)r.stuck, (long long)r.key_horizon,
		       sink_pg ? "" : "\n");
		if (sink_pg)
			printf(" sink_duplicates=%lld\n", (long long)r.sink_duplicates);
		const char *key;
		json_t *arr;
		json_object_foreach(r.samples, key, arr)
		{
			size_t i;
			json_t *s;
			if (!strcmp(key, "quarantined")) {
				json_array_foreach(arr, i, s)
				printf("  %-10s %s since %s: %s\n", "quarantined",
				       json_string_value(json_object_get(s, "job")),
				       json_string_value(json_object_get(s, "since")),
				       json_string_value(json_object_get(s, "error")));
				continue;
			}
			if (!strcmp(key, "key_horizon")) {
				json_array_foreach(arr, i, s)
				printf("  %-10s %s v%lld may send a key %lld s after its instant, "
				       "sink.key_retention of node %s is %lld s (ticket %lld)\n",
				       "key_horizon", json_string_value(json_object_get(s, "job")),
				       (long long)json_integer_value(json_object_get(s, "version")),
				       (long long)json_integer_value(json_object_get(s, "horizon_ms")) /
					       1000,
				       json_string_value(json_object_get(s, "node")),
				       (long long)json_integer_value(
					       json_object_get(s, "key_retention_ms")) /
					       1000,
				       (long long)json_integer_value(json_object_get(s, "ticket")));
				continue;
			}
			if (!strcmp(key, "stuck")) {
				json_array_foreach(arr, i, s)
				printf("  %-10s trigger %lld %s %s %s since %s\n", "stuck",
				       (long long)json_integer_value(json_object_get(s, "trigger")),
				       json_string_value(json_object_get(s, "job")),
				       json_string_value(json_object_get(s, "at")),
				       json_string_value(json_object_get(s, "state")),
				       json_string_value(json_object_get(s, "since")));
				continue;
			}
			if (!strcmp(key, "sink_duplicates")) {
				json_array_foreach(arr, i, s)
				printf("  %-10s key %s chunk %lld applied %lld times\n", "sink_dup",
				       json_string_value(json_object_get(s, "key")),
				       (long long)json_integer_value(json_object_get(s, "chunk")),
				       (long long)json_integer_value(json_object_get(s, "rows")));
				continue;
			}
			json_array_foreach(arr, i, s)
			printf("  %-10s %s %s partition %lld\n", key,
			       json_string_value(json_object_get(s, "job")),
			       json_string_value(json_object_get(s, "at")),
			       (long long)json_integer_value(json_object_get(s, "partition")));
		}
	}
	pal_verify_report_free(&r);
	return ok ? PAL_EXIT_OK : PAL_EXIT_MISMATCH;
}
