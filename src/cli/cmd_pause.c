/*
 * cmd_pause.c - `palisade pause` and `palisade resume`: persistent gates by
 * scope (job, group, tenant, global), audited (src/store/gates.c does the SQL;
 * docs/operations.md describes the effect and the safe points).
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include "palisade/cli.h"
#include "palisade/err.h"
#include "palisade/ops.h"
#include "palisade/timefmt.h"
#include "cli_int.h"

static void usage(FILE *fp, bool pause)
{
	if (pause)
		fprintf(fp,
			"usage: palisade pause (--job JOB | --group GROUP | --tenant TENANT | --all)\n"
			"                      --reason TEXT [--output table|json]\n"
			"                      [--pg CONNINFO] [--config FILE]\n"
			"                      [--server URL [--token-file FILE]]\n"
			"Set a persistent gate on the scope: executors claim no trigger of a paused\n"
			"scope, and running triggers of the scope are asked to pause (state\n"
			"'pausing'); each stops at its next safe point with its checkpoint and\n"
			"becomes 'paused'.  Pending triggers stay pending.  Pausing a paused scope\n"
			"updates the reason.  Written to audit_log with actor and reason.\n"
			"Exit: 0 done, 3 no such job, 64 usage (--reason is required, names are\n"
			"checked like those of job files), 69 database unreachable or gates lock not available.\n");
	else
		fprintf(fp,
			"usage: palisade resume (--job JOB | --group GROUP | --tenant TENANT | --all)\n"
			"                       [--reason TEXT] [--ramp DURATION] [--output table|json]\n"
			"                       [--pg CONNINFO] [--config FILE]\n"
			"                       [--server URL [--token-file FILE]]\n"
			"Delete the scope's gate and move its paused triggers back to 'pending'\n"
			"unless another paused gate still covers them (the next claim gives them a\n"
			"new token; their checkpoint stays).  Triggers still 'pausing' (their\n"
			"executor has not reached a safe point) go back to 'running' under the\n"
			"same token, so one resume is enough.  Scheduled instants the gate held\n"
			"longer than controller.misfire_threshold go through their job's misfire\n"
			"policy, as instants missed by downtime do: those not fired are recorded\n"
			"as misfires (reason paused).  --ramp DURATION (default: resume.ramp_job,\n"
			"_group, _tenant or _all of --config FILE, else 0) releases the triggers\n"
			"that run at a rate rising from a small start over DURATION instead of at\n"
			"once.  Resuming a scope without a gate only releases paused triggers that\n"
			"no gate covers.  Written to audit_log.\n"
			"Exit: 0 done, 3 no such job, 64 usage, 69 database unreachable.\n");
}

static const char *plural(int64_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

/* " (fire_all 3, skip 2)" of the policies with a count. */
static void print_by_policy(const int64_t *n)
{
	const char *sep = " (";
	for (int i = 0; i < 4; i++)
		if (n[i]) {
			printf("%s%s %lld", sep, pal_misfire_policy_names[i], (long long)n[i]);
			sep = ", ";
		}
	if (*sep == ',')
		printf(")");
}

/* pause (P given) or resume (RO and R given) of scope SC */
struct gate_args {
	const pal_scope *sc;
	const char *reason;
	const pal_resume_opts *ro;
	pal_pause_result *p;
	pal_resume_result *r;
};

static int gate_call(pal_store *st, const void *ctx, json_t **out, char *err, size_t errlen)
{
	const struct gate_args *a = ctx;
	if (a->p)
		return pal_ops_pause(st, a->sc, pal_cli_actor(), a->reason, a->p, err, errlen);
	return pal_ops_resume(st, a->sc, pal_cli_actor(), a->reason, a->ro, a->r, err, errlen);
}

static int gate_cmd(int argc, char **argv, bool pause)
{
	const char *cmd = pause ? "pause" : "resume";
	pal_cli_common c = { 0 };
	pal_scope sc = { PAL_SCOPE_GLOBAL, NULL };
	int nscopes = 0;
	const char *reason = NULL, *ramp = NULL;
	static const struct option lo[] = {PAL_CLI_COMMON_LONGOPTS,
					   PAL_CLI_SCOPE_LONGOPTS,
					   {"all", no_argument, NULL, 'a'},
					   {"reason", required_argument, NULL, 'r'},
					   {"ramp", required_argument, NULL, 'R'},
					   {"help", no_argument, NULL, 'h'},
					   {0}};
	int opt;
	bool ok;
	while ((opt = getopt_long(argc, argv, "hj:g:t:ar:", lo, NULL)) != -1) {
		if (pal_cli_common_opt(&c, opt, optarg))
			continue;
		if (pal_cli_scope_opt(cmd, opt == 't' ? 'T' : opt, optarg, &sc, &nscopes, &ok)) {
			if (!ok)
				return PAL_EXIT_USAGE;
			continue;
		}
		switch (opt) {
		case 'a':
			sc.kind = PAL_SCOPE_GLOBAL;
			sc.name = NULL;
			nscopes++;
			break;
		case 'r':
			reason = optarg;
			break;
		case 'R':
			if (pause)
				goto bad;
			ramp = optarg;
			break;
		case 'h':
			usage(stdout, pause);
			return PAL_EXIT_OK;
		default:
		bad:
			usage(stderr, pause);
			return PAL_EXIT_USAGE;
		}
	}
	if (optind != argc || nscopes != 1) {
		if (nscopes != 1)
			pal_cli_err(cmd, "name exactly one scope: --job, --group, --tenant or --all");
		usage(stderr, pause);
		return PAL_EXIT_USAGE;
	}
	if (pause && (!reason || !*reason)) {
		pal_cli_err(cmd, "--reason is required: say why, it is kept in the audit log");
		return PAL_EXIT_USAGE;
	}
	if (pal_cli_server(&c)) {
		if (ramp) {
			pal_cli_err(cmd, "--ramp is not sent through --server: the node applies its "
					 "resume.ramp_* setting");
			return PAL_EXIT_USAGE;
		}
		char path[256];
		const char *kind = sc.kind == PAL_SCOPE_JOB ? "jobs" : sc.kind == PAL_SCOPE_GROUP ? "groups" : "tenants";
		if (sc.kind == PAL_SCOPE_GLOBAL)
			snprintf(path, sizeof path, "/api/v1/%s", cmd);
		else
			snprintf(path, sizeof path, "/api/v1/%s/%s/%s", kind, sc.name, cmd);
		return pal_cli_remote_json(&c, cmd, path, json_pack("{s:s?}", "reason", reason));
	}
	pal_resume_opts ro;
	if (!pause) {
		pal__cli_resume_opts(c.config, sc.kind, &ro);
		if (ramp && (pal_parse_duration_ms(ramp, &ro.ramp_ms) || ro.ramp_ms < 0 ||
			     ro.ramp_ms > 86400 * 1000)) {
			pal_cli_err(cmd, "--ramp \"%s\": expected a duration from 0 to 1d (e.g. 30s)",
				    ramp);
			return PAL_EXIT_USAGE;
		}
	}
	char scope[300];
	pal_scope_format(&sc, scope, sizeof scope);
	int rc;
	if (pause) {
		pal_pause_result r;
		struct gate_args ga = {&sc, reason, NULL, &r, NULL};
		if ((rc = pal_cli_store_call(&c, cmd, gate_call, &ga, NULL)))
			return rc;
		if (c.json) {
			json_t *o = json_pack("{s:s, s:b, s:s, s:I, s:I, s:I}", "scope", scope,
					      "was_paused", r.was_paused, "since", r.since,
					      "running_to_pausing", (json_int_t)r.asked, "pending_held",
					      (json_int_t)r.held, "jobs", (json_int_t)r.jobs);
			json_dumpf(o, stdout, JSON_INDENT(2));
			putchar('\n');
			json_decref(o);
			return PAL_EXIT_OK;
		}
		printf("paused %s; %lld running %s asked to pause\n", scope, (long long)r.asked,
		       plural(r.asked, "trigger", "triggers"));
		if (r.was_paused)
			printf("  %s was already paused since %s; reason updated (was: \"%s\")\n", scope,
			       r.since, r.prev_reason);
		printf("  %lld pending %s will not be claimed while paused\n", (long long)r.held,
		       plural(r.held, "trigger", "triggers"));
		if (!r.jobs && sc.kind != PAL_SCOPE_GLOBAL)
			printf("  note: no job is in %s yet; the gate applies to jobs added later\n",
			       scope);
		return PAL_EXIT_OK;
	}
	pal_resume_result r;
	struct gate_args ga = {&sc, reason, &ro, NULL, &r};
	if ((rc = pal_cli_store_call(&c, cmd, gate_call, &ga, NULL)))
		return rc;
	int64_t nrel = 0, nmis = 0;
	for (int i = 0; i < 4; i++) {
		nrel += r.released[i];
		nmis += r.misfired[i];
	}
	if (c.json) {
		json_t *o = pal_resume_result_json(scope, &r);
		json_dumpf(o, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(o);
		return PAL_EXIT_OK;
	}
	if (r.had_gate)
		printf("resumed %s; %lld paused %s back to pending\n", scope, (long long)r.resumed,
		       plural(r.resumed, "trigger", "triggers"));
	else
		printf("%s was not paused; %lld paused %s back to pending\n", scope,
		       (long long)r.resumed, plural(r.resumed, "trigger", "triggers"));
	if (r.had_gate) {
		printf("  released %lld %s to run", (long long)nrel,
		       plural(nrel, "trigger", "triggers"));
		print_by_policy(r.released);
		if (*r.ramp_until)
			printf("; ramped until %s", r.ramp_until);
		printf("\n  recorded %lld held %s older than %llds as misfires (reason paused)",
		       (long long)nmis, plural(nmis, "instant", "instants"),
		       (long long)(ro.misfire_threshold_ms / 1000));
		print_by_policy(r.misfired);
		printf("\n");
		if (r.tickets)
			printf("  %lld %s opened for policy manual (palisade tickets)\n",
			       (long long)r.tickets, plural(r.tickets, "ticket", "tickets"));
	}
	if (r.expired)
		printf("  %lld pausing %s had lost their executor (lease expired) and were resumed\n",
		       (long long)r.expired, plural(r.expired, "trigger", "triggers"));
	if (r.still_gated)
		printf("  %lld paused %s stay paused: another gate still covers them, or a "
		       "roll-back handed their instant to the old system (SELECT * FROM gates; "
		       "palisade shadow list)\n",
		       (long long)r.still_gated, plural(r.still_gated, "trigger", "triggers"));
	if (r.continued)
		printf("  %lld pausing %s had not reached a safe point yet and carry on running\n",
		       (long long)r.continued, plural(r.continued, "trigger", "triggers"));
	if (r.pausing)
		printf("  %lld pausing %s stay on their way to paused: another gate still covers "
		       "them, or a roll-back handed their instant to the old system (SELECT * FROM "
		       "gates; palisade shadow list)\n",
		       (long long)r.pausing, plural(r.pausing, "trigger", "triggers"));
	return PAL_EXIT_OK;
}

int pal_cmd_pause(int argc, char **argv)
{
	return gate_cmd(argc, argv, true);
}

int pal_cmd_resume(int argc, char **argv)
{
	return gate_cmd(argc, argv, false);
}
