/*
 * main.c - bin/palisade: dispatch to a subcommand (include/palisade/cli.h).
 */
#include <stdio.h>
#include <string.h>
#include "palisade/retention.h"
#include "palisade/cli.h"
#include "palisade/err.h"
#include "cli_int.h"

#include "palisade/version.h"

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

int pal_cmd_release(int argc, char **argv); /* cmd_quarantine.c */

static const struct command commands[] = {
    {"migrate", pal_cmd_migrate, "apply schema migrations (safe to run concurrently)"},
    {"validate", pal_cmd_validate, "check job files without touching the cluster"},
    {"apply", pal_cmd_apply, "store job files as new plan versions where changed"},
    {"jobs", pal_cmd_jobs, "list jobs and their versions"},
    {"plan", pal_cmd_plan, "plan diff FILE...: how next fire instants would move"},
    {"cron", pal_cmd_cron, "cron next EXPR: preview fire instants"},
    {"import", pal_cmd_import, "crontab, Kubernetes CronJobs, Quartz stores as a job file"},
    {"node", pal_cmd_node, "run a cluster node (controller and/or executor)"},
    {"status", pal_cmd_status, "nodes, shards, leaders, epochs, lag, backlog"},
    {"verify", pal_cmd_verify, "check the plan set: missing and duplicate instants"},
    {"retention", pal_cmd_retention, "partition maintenance: create ahead, drop old history"},
    {"drain", pal_cmd_drain, "hand a node's shards off and stop it"},
    {"triggers", pal_cmd_triggers, "list triggers: state, fence, lease, attempts"},
    {"pause", pal_cmd_pause, "pause a job, group, tenant or everything (audited)"},
    {"resume", pal_cmd_resume, "resume a paused scope (audited)"},
    {"cancel", pal_cmd_cancel, "cancel a trigger or a job's triggers (audited)"},
    {"trigger", pal_cmd_trigger, "run a job now or at --at, as a manual run"},
    {"backfill", pal_cmd_backfill, "plan every instant of a job in a past range"},
    {"tickets", pal_cmd_tickets, "list, show and resolve manual-intervention tickets"},
    {"delete", pal_cmd_delete, "retire jobs: nothing planned after now, history kept"},
    {"attempts", pal_cmd_attempts, "list the attempts (claims) of a trigger"},
    {"gates", pal_cmd_gates, "list the gates (pauses) and who set them"},
    {"misfires", pal_cmd_misfires, "list recorded non-runs (misfires) of jobs"},
    {"calendars", pal_cmd_calendars, "list shared calendars and the jobs that name them"},
    {"notify-rules", pal_cmd_notify_rules, "list the notify rules of groups and tenants"},
    {"audit", pal_cmd_audit, "list the audit log"},
    {"release", pal_cmd_release, "release a quarantined job (audited)"},
    {"token", pal_cmd_token, "create, list and revoke tokens of the HTTP API"},
    {"report", pal_cmd_report, "report cost: attempts, calls, bytes per correct result"},
    {"shadow", pal_cmd_shadow, "a scope in shadow (planned, never called); shadow diff"},
    {"cutover", pal_cmd_cutover, "make a share of a shadow scope live from an instant on"},
    {"rollback", pal_cmd_rollback, "a scope back to shadow; list what it hands back"},
};

static void usage(FILE *fp)
{
	fprintf(fp, "usage: palisade COMMAND [ARGS...]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		fprintf(fp, "  %-12s %s\n", commands[i].name, commands[i].summary);
	fprintf(fp,
		"\nexit codes: 0 ok, 2 verify found a mismatch, 3 not found, 4 refused,\n"
		"64 usage, 65 invalid input, 69 database or ZooKeeper unavailable, 70 internal,\n"
		"77 the API refused the token (--server)\n");
	fprintf(fp, "\n'palisade COMMAND --help' describes a command.  See palisade(1).\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return PAL_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return PAL_EXIT_OK;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("palisade %s\n", PALISADE_VERSION);
		return PAL_EXIT_OK;
	}
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "palisade: unknown command \"%s\"\n", argv[1]);
	usage(stderr);
	return PAL_EXIT_USAGE;
}
