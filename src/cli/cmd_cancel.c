/*
 * cmd_cancel.c - `palisade cancel (--trigger ID | --job JOB) --reason TEXT`:
 * cancel planned work with conditional updates that never overwrite a
 * concurrent executor commit (src/store/cancel.c; docs/operations.md).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/cli.h"
#include "palisade/err.h"
#include "palisade/ops.h"
#include "cli_int.h"

static void usage(FILE *fp)
{
	fprintf(fp,
		"usage: palisade cancel (--trigger ID | --job JOB) --reason TEXT\n"
		"                       [--output table|json] [--pg CONNINFO] [--config FILE]\n"
		"                       [--server URL [--token-file FILE]]\n"
		"Cancel one trigger, or every non-terminal trigger of a job:\n"
		"  pending, retry_wait, paused  -> cancelled (at once)\n"
		"  running                      -> cancelling: the executor stops it at its next\n"
		"                                  safe point (cancelled), unless its success\n"
		"                                  commits first (succeeded); whichever commits\n"
		"                                  first wins\n"
		"  unknown, pausing, manual     -> not cancelled (reported; see the message)\n"
		"Future instants of a job are still planned: pause the job to stop them.\n"
		"Exit: 0 done (or already cancelling), 3 no such trigger/job, 4 the trigger\n"
		"is finished or not cancellable (its state is named), 64 usage,\n"
		"69 database unreachable.\n");
}

static void print_left(json_t *left)
{
	if (!json_object_size(left))
		return;
	printf("  not cancelled:");
	const char *k;
	json_t *v;
	json_object_foreach(left, k, v)
	printf(" %s %lld", k, (long long)json_integer_value(v));
	printf("  (unknown: being resolved; pausing: cancel once paused; cancelling: under way;"
	       " manual: resolve its ticket)\n");
}

struct cancel_args {
	long long trigger;
	const char *job, *reason;
	pal_cancel_result *r;
};

static int cancel_call(pal_store *st, const void *ctx, json_t **out, char *err, size_t errlen)
{
	const struct cancel_args *a = ctx;
	return pal_ops_cancel(st, a->trigger, a->job, pal_cli_actor(), a->reason, a->r, err,
			      errlen);
}

int pal_cmd_cancel(int argc, char **argv)
{
	pal_cli_common c = { 0 };
	const char *job = NULL, *reason = NULL;
	long long trigger = 0;
	static const struct option lo[] = { PAL_CLI_COMMON_LONGOPTS,
					    { "trigger", required_argument, NULL, 'T' },
					    { "job", required_argument, NULL, 'j' },
					    { "reason", required_argument, NULL, 'r' },
					    { "help", no_argument, NULL, 'h' },
					    { 0 } };
	int opt, ec;
	while ((opt = getopt_long(argc, argv, "hT:j:r:", lo, NULL)) != -1) {
		switch (opt) {
		case 'T': {
			long long v;
			if (!pal_cli_int("cancel", "trigger", optarg, 1, INT64_MAX, &v))
				return PAL_EXIT_USAGE;
			trigger = v;
			break;
		}
		case 'j':
			if (!pal_cli_name("cancel", "job", optarg))
				return PAL_EXIT_USAGE;
			job = optarg;
			break;
		case 'r':
			reason = optarg;
			break;
		default:
			if ((ec = pal_cli_opt_other(&c, opt, optarg, usage)) >= 0)
				return ec;
		}
	}
	if (optind != argc || (!trigger) == (!job)) {
		pal_cli_err("cancel", "name exactly one of --trigger ID or --job JOB");
		usage(stderr);
		return PAL_EXIT_USAGE;
	}
	if (!reason || !*reason) {
		pal_cli_err("cancel", "--reason is required: say why, it is kept in the audit log");
		return PAL_EXIT_USAGE;
	}
	if (pal_cli_server(&c)) {
		char path[256];
		if (trigger)
			snprintf(path, sizeof path, "/api/v1/triggers/%lld/cancel", trigger);
		else
			snprintf(path, sizeof path, "/api/v1/jobs/%s/cancel", job);
		return pal_cli_remote_json(&c, "cancel", path, json_pack("{s:s}", "reason", reason));
	}
	pal_cancel_result r = {0}; /* state stays "" when the connection fails */
	struct cancel_args a = {trigger, job, reason, &r};
	if ((ec = pal_cli_store_call(&c, "cancel", cancel_call, &a, NULL))) {
		if (c.json && r.state[0]) {
			json_t *o = json_pack("{s:I, s:s, s:b}", "trigger", (json_int_t)trigger, "state",
					      r.state, "cancelled", 0);
			json_dumpf(o, stdout, JSON_INDENT(2));
			putchar('\n');
			json_decref(o);
		}
		pal_cancel_result_clear(&r);
		return ec;
	}
	if (c.json) {
		json_t *o = json_pack("{s:I, s:I, s:I, s:I, s:I, s:O}", "pending_to_cancelled",
				      (json_int_t)r.from_pending, "retry_wait_to_cancelled",
				      (json_int_t)r.from_retry_wait, "paused_to_cancelled",
				      (json_int_t)r.from_paused, "running_to_cancelling",
				      (json_int_t)r.to_cancelling, "expired_cancelling_to_cancelled",
				      (json_int_t)r.expired, "not_cancellable", r.left);
		if (trigger) {
			json_object_set_new(o, "trigger", json_integer(trigger));
			json_object_set_new(o, "state", json_string(r.state));
		} else {
			json_object_set_new(o, "job_id", json_string(job));
		}
		json_dumpf(o, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(o);
		pal_cancel_result_clear(&r);
		return PAL_EXIT_OK;
	}
	if (trigger) {
		if (r.to_cancelling)
			printf("trigger %lld: running -> cancelling; the executor stops it at its next "
			       "safe point, unless its success commits first\n",
			       trigger);
		else if (r.from_pending || r.from_retry_wait || r.from_paused)
			printf("trigger %lld: %s -> cancelled\n", trigger,
			       r.from_pending ? "pending" : r.from_retry_wait ? "retry_wait" : "paused");
		else if (r.expired)
			printf("trigger %lld: cancelling -> cancelled (its executor's lease had "
			       "expired)\n",
			       trigger);
		else
			printf("trigger %lld is already cancelling; nothing changed\n", trigger);
	} else {
		printf("cancel job:%s: %lld pending, %lld retry_wait, %lld paused -> cancelled; "
		       "%lld running -> cancelling\n",
		       job, (long long)r.from_pending, (long long)r.from_retry_wait,
		       (long long)r.from_paused, (long long)r.to_cancelling);
		if (r.expired)
			printf("  %lld cancelling -> cancelled (their executor's lease had expired)\n",
			       (long long)r.expired);
		print_left(r.left);
	}
	pal_cancel_result_clear(&r);
	return PAL_EXIT_OK;
}
