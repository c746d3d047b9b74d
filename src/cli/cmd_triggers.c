/*
 * cmd_triggers.c - `palisade triggers [--job JOB | --trace-id ID | --tenant T]`: planned
 * executions with their state, fence, lease and trace id, newest first
 * (src/store/listings.c); a trace id names its trigger (trace.h), so --trace-id
 * reads one trigger by its id, without an index of trace ids.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <glib.h>
#include "palisade/apistore.h"
#include "palisade/cli.h"
#include "palisade/err.h"
#include "palisade/ops.h"
#include "palisade/timefmt.h"
#include "palisade/trace.h"
#include "palisade/tstate.h"
#include "cli_int.h"

static void usage(FILE *fp)
{
	static const char lead[] = "STATE is one of";
	fprintf(fp,
		"usage: palisade triggers [--job JOB | --trace-id ID | --tenant T] [--state STATE]\n"
		"                         [--since RFC3339] [--until RFC3339] [--limit N]\n"
		"                         [--output table|json]\n"
		"                         [--pg CONNINFO] [--config FILE]\n"
		"                         [--server URL [--token-file FILE]]\n"
		"List triggers of JOB (or of all jobs), newest scheduled instant first, at most\n"
		"--limit (default 50): id, job, version, scheduled_at, partition, source,\n"
		"state, fence, lease owner and expiry, attempts, last error class, and (json)\n"
		"the trace id its calls carry.  --trace-id: the trigger whose calls carried the\n"
		"traceparent trace id ID (32 hex digits) in the cluster of --config.\n"
		"--tenant: the triggers of tenant T's jobs only.\n"
		"--since keeps instants at or after it, --until those before it.  Through\n"
		"--server the triggers of all jobs need both, at most %d s apart, or\n"
		"neither with a --state of retry_wait, unknown, pausing, paused, cancelling\n"
		"or manual (every such trigger, whatever its instant).\n"
		"%s",
		PAL_API_TRIGGERS_SPAN, lead);
	/* From the state table itself (tstate.def), so the list cannot drift. */
	size_t col = sizeof lead - 1;
	for (int s = 0; s < PAL_TS__COUNT; s++) {
		const char *name = pal_tstate_name((pal_tstate)s);
		if (col + 1 + strlen(name) > 78) {
			fputc('\n', fp);
			col = 0;
		} else {
			fputc(' ', fp);
			col++;
		}
		col += (size_t)fprintf(fp, "%s", name);
	}
	fprintf(fp, ".\n"
		    "Exit: 0 listed, 3 no such job (or no trigger of that trace id), 64 usage,\n"
		    "69 database unreachable.\n");
}

static const char *str(json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));
	return s ? s : "-";
}

static void print_table(json_t *list)
{
	printf("%8s %-24s %4s %-20s %4s %-8s %-10s %8s %-16s %-20s %3s %s\n", "ID", "JOB", "VER",
	       "SCHEDULED_AT", "PART", "SOURCE", "STATE", "FENCE", "LEASE_OWNER", "LEASE_UNTIL",
	       "ATT", "ERROR");
	size_t i;
	json_t *t;
	json_array_foreach(list, i, t)
	{
		char fence[24] = "-";
		if (json_is_integer(json_object_get(t, "fence")))
			snprintf(fence, sizeof fence, "%lld",
				 (long long)json_integer_value(json_object_get(t, "fence")));
		printf("%8lld %-24s %4lld %-20s %4lld %-8s %-10s %8s %-16s %-20s %3lld %s\n",
		       (long long)json_integer_value(json_object_get(t, "id")), str(t, "job_id"),
		       (long long)json_integer_value(json_object_get(t, "version")),
		       str(t, "scheduled_at"),
		       (long long)json_integer_value(json_object_get(t, "partition")),
		       str(t, "source"), str(t, "state"), fence, str(t, "lease_owner"),
		       str(t, "lease_until"),
		       (long long)json_integer_value(json_object_get(t, "attempt_count")),
		       str(t, "last_error_class"));
	}
	if (!json_array_size(list))
		printf("(no triggers)\n");
}

/* NAME=VALUE added to the query of Q, when VALUE is set and not empty. */
static void query_arg(GString *q, const char *name, const char *value)
{
	if (value && *value)
		g_string_append_printf(q, "%c%s=%s", strchr(q->str, '?') ? '&' : '?', name, value);
}

struct triggers_args {
	const char *job, *tenant, *state;
	int64_t since, until, trigger_id;
	int limit;
};

static int triggers_call(pal_store *st, const void *ctx, json_t **out, char *err, size_t errlen)
{
	const struct triggers_args *a = ctx;
	return pal_ops_triggers_json(st, a->job, a->tenant, a->state, a->since, a->until,
				     a->trigger_id, a->limit, out, err, errlen);
}

int pal_cmd_triggers(int argc, char **argv)
{
	pal_cli_common c = {0};
	const char *job = NULL, *state = NULL, *tenant = NULL;
	int64_t since = PAL_OPS_NOW, until = PAL_OPS_NOW;
	int limit = 50;
	const char *trace = NULL;
	int64_t trigger_id = 0;
	static const struct option lo[] = {PAL_CLI_COMMON_LONGOPTS,
					   {"trace-id", required_argument, NULL, 'T'},
					   {"job", required_argument, NULL, 'j'},
					   {"tenant", required_argument, NULL, 't'},
					   {"state", required_argument, NULL, 's'},
					   {"since", required_argument, NULL, 'S'},
					   {"until", required_argument, NULL, 'U'},
					   {"limit", required_argument, NULL, 'n'},
					   {"help", no_argument, NULL, 'h'},
					   {0}};
	int opt, ec;
	while ((opt = getopt_long(argc, argv, "hj:s:n:", lo, NULL)) != -1) {
		switch (opt) {
		case 'j':
			if (!pal_cli_name("triggers", "job", optarg))
				return PAL_EXIT_USAGE;
			job = optarg;
			break;
		case 't':
			if (!pal_cli_name("triggers", "tenant", optarg))
				return PAL_EXIT_USAGE;
			tenant = optarg;
			break;
		case 's': {
			pal_tstate st;
			if (pal_tstate_parse(optarg, &st)) {
				pal_cli_err("triggers",
					    "--state \"%s\": not a trigger state (see --help)",
					    optarg);
				return PAL_EXIT_USAGE;
			}
			state = optarg;
			break;
		}
		case 'T':
			trace = optarg;
			break;
		case 'S':
			if (!pal_cli_time("triggers", "since", optarg, &since))
				return PAL_EXIT_USAGE;
			break;
		case 'U':
			if (!pal_cli_time("triggers", "until", optarg, &until))
				return PAL_EXIT_USAGE;
			break;
		case 'n': {
			long long v;
			if (!pal_cli_int("triggers", "limit", optarg, 1, 100000, &v))
				return PAL_EXIT_USAGE;
			limit = (int)v;
			break;
		}
		default:
			if ((ec = pal_cli_opt_other(&c, opt, optarg, usage)) >= 0)
				return ec;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return PAL_EXIT_USAGE;
	}
	if (tenant && (job || trace)) {
		pal_cli_err("triggers", "--tenant lists the triggers of a tenant's jobs; drop %s",
			    job ? "--job" : "--trace-id");
		return PAL_EXIT_USAGE;
	}
	uint64_t prefix = pal_trace_cluster(pal__cli_config_cluster(&c));
	if (trace) {
		char err[256];
		uint64_t p;
		if (job) {
			pal_cli_err("triggers", "--trace-id names one trigger; drop --job");
			return PAL_EXIT_USAGE;
		}
		if (pal_trace_id_parse(trace, &p, &trigger_id, err, sizeof err)) {
			pal_cli_err("triggers", "--trace-id: %s", err);
			return PAL_EXIT_USAGE;
		}
		/* through --server the node checks it against its own cluster */
		if (p != prefix && !pal_cli_server(&c)) {
			pal_cli_err(
			    "triggers",
			    "--trace-id %s: not a trace id of cluster \"%s\" (its ids begin "
			    "with %016llx); hint: --config with the node config of the "
			    "cluster that sent it",
			    trace, pal__cli_config_cluster(&c), (unsigned long long)prefix);
			return PAL_EXIT_NOTFOUND;
		}
	}
	if (pal_cli_server(&c) && !job && !trace &&
	    !(since == PAL_OPS_NOW && until == PAL_OPS_NOW && pal_apistore_state_open_rare(state)) &&
	    (since == PAL_OPS_NOW || until == PAL_OPS_NOW || until <= since ||
	     until - since > PAL_API_TRIGGERS_SPAN)) {
		pal_cli_err("triggers",
			    "through --server the triggers of all jobs need --since and --until, "
			    "at most %d s apart (or --job, --trace-id, or --state with one of "
			    "retry_wait, unknown, pausing, paused, cancelling, manual)",
			    PAL_API_TRIGGERS_SPAN);
		return PAL_EXIT_USAGE;
	}
	json_t *list;
	if (pal_cli_server(&c)) {
		/* the API lists one job's, newest first: its pages up to --limit;
		 * or the trigger of a trace id; or every job's over [since, until);
		 * each with the trace id its calls carry, of the node's cluster */
		char at[32] = "", to[32] = "";
		if (since != PAL_OPS_NOW)
			pal_fmt_rfc3339(since, at, sizeof at);
		if (until != PAL_OPS_NOW)
			pal_fmt_rfc3339(until, to, sizeof to);
		GString *q = g_string_new("/api/v1/triggers");
		query_arg(q, "job", job);
		query_arg(q, "trace_id", trace);
		query_arg(q, "tenant", tenant);
		query_arg(q, "state", state);
		query_arg(q, "since", at);
		query_arg(q, "until", to);
		char *path = g_string_free(q, FALSE);
		ec = pal_cli_remote_rows(&c, "triggers", path, limit, &list);
		g_free(path);
		if (ec)
			return ec;
		/* whole seconds, as the database path prints them */
		pal_cli_whole_seconds(list, "scheduled_at");
		pal_cli_whole_seconds(list, "lease_until");
	} else {
		struct triggers_args ta = {job, tenant, state, since, until, trigger_id, limit};
		if ((ec = pal_cli_store_call(&c, "triggers", triggers_call, &ta, &list)))
			return ec;
	}
	if (!pal_cli_server(&c))
		pal_trace_ids_json(list, prefix);
	if (trace && !json_array_size(list)) {
		pal_cli_err("triggers",
			    "no trigger of trace id %s (trigger %lld): it may have "
			    "been removed by retention",
			    trace, (long long)trigger_id);
		json_decref(list);
		return PAL_EXIT_NOTFOUND;
	}
	if (c.json) {
		json_dumpf(list, stdout, JSON_INDENT(2));
		putchar('\n');
	} else {
		print_table(list);
	}
	json_decref(list);
	return PAL_EXIT_OK;
}
