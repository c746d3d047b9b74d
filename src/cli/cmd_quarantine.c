/*
 * cmd_quarantine.c - `palisade release JOB --reason TEXT`: take a job out
 * of quarantine (a job whose planning failed: docs/controller.md).  Deletes
 * its quarantine row, resolves its ticket and writes an audit_log row
 * (action job.release) in one transaction, then the controllers plan the
 * job again from their next tick.  If its planning still fails, it is
 * quarantined again.
 */
#include <getopt.h>
#include <stdio.h>
#include "palisade/cli.h"
#include "palisade/err.h"
#include "palisade/store.h"
#include "cli_int.h"

static void usage(FILE *fp)
{
	fprintf(fp,
		"usage: palisade release JOB --reason TEXT [--pg CONNINFO] [--config FILE]\n"
		"                        [--server URL [--token-file FILE]]\n"
		"Release JOB from quarantine.  A job is quarantined when its planning fails\n"
		"(the database refuses its rows, its cron or time zone no longer opens): the\n"
		"rest of its shard keeps being planned, its instants are recorded as misfires\n"
		"with reason quarantined, a ticket is opened and `palisade verify` reports it.\n"
		"Release deletes the quarantine row, resolves the ticket and records the\n"
		"release in the audit log; the job is planned again from its controller's\n"
		"next tick (quarantined again if its planning still fails).\n"
		"Exit: 0 released, 3 the job is not quarantined, 64 usage,\n"
		"69 database unreachable.\n");
}

/* CTX: the job and the reason */
static int release_call(pal_store *st, const void *ctx, json_t **out, char *err, size_t errlen)
{
	const char *const *a = ctx;
	return pal_store_release_quarantine(st, a[0], pal_cli_actor(), a[1], err, errlen);
}

int pal_cmd_release(int argc, char **argv)
{
	pal_cli_common c = { 0 };
	const char *reason = NULL;
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
	if (optind + 1 != argc) {
		pal_cli_err("release", "name exactly one job");
		usage(stderr);
		return PAL_EXIT_USAGE;
	}
	const char *job = argv[optind];
	if (!pal_cli_name("release", "job", job))
		return PAL_EXIT_USAGE;
	if (!reason || !*reason) {
		pal_cli_err("release", "--reason is required: say why, it is kept in the audit log");
		return PAL_EXIT_USAGE;
	}
	if (pal_cli_server(&c)) {
		char path[256];
		snprintf(path, sizeof path, "/api/v1/jobs/%s/release", job);
		return pal_cli_remote_json(&c, "release", path, json_pack("{s:s}", "reason", reason));
	}
	const char *args[] = {job, reason};
	if ((ec = pal_cli_store_call(&c, "release", release_call, args, NULL)))
		return ec;
	printf("job %s released from quarantine; its controller plans it again from its next "
	       "tick\n",
	       job);
	return PAL_EXIT_OK;
}
