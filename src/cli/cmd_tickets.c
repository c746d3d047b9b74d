/*
 * cmd_tickets.c - `palisade tickets list|show|resolve`: manual-intervention
 * cases and their resolution with an allowed action, in one audited
 * transaction (src/store/tickets.c; docs/operations.md).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/cli.h"
#include "palisade/err.h"
#include "palisade/ops.h"
#include "cli_int.h"

#define DEFAULT_MAX 1000

static void usage(FILE *fp)
{
	fprintf(fp,
		"usage: palisade tickets [list] [--all] [--output table|json]\n"
		"       palisade tickets show ID [--output table|json]\n"
		"       palisade tickets resolve ID --action ACTION --reason TEXT\n"
		"                        [--evidence JSON] [--max N]\n"
		"       (each also takes --pg CONNINFO and --config FILE, or\n"
		"       --server URL [--token-file FILE])\n"
		"list shows open tickets (--all: resolved ones too), show one ticket.\n"
		"resolve applies one of the ticket's allowed actions, in one transaction:\n"
		"  retry           its trigger goes manual -> pending (same trigger, same\n"
		"                  idempotency key; the next claim gives it a new token)\n"
		"  mark_succeeded  its trigger goes manual -> succeeded (say why in --evidence)\n"
		"  abandon         its trigger goes manual -> failed; a misfire ticket is\n"
		"                  just resolved\n"
		"  backfill        misfire ticket: plan its evidence range as a backfill\n"
		"                  (request id ticket-ID; at most --max instants, default %d),\n"
		"                  leaving out each instant and partition that ran or is to run\n"
		"  release         quarantine ticket: the job leaves quarantine, as\n"
		"                  `palisade release JOB` does\n"
		"The ticket becomes resolved with actor, time, reason and evidence; audited.\n"
		"Exit: 0 done, 3 no such ticket, 4 already resolved or its trigger not in\n"
		"'manual', 64 usage, 65 action not allowed / bad evidence / over --max,\n"
		"69 database unreachable.\n",
		DEFAULT_MAX);
}

static const char *str(json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));
	return s ? s : "-";
}

static void actions(json_t *t, char *buf, size_t len)
{
	buf[0] = '\0';
	size_t i, used = 0;
	json_t *a;
	json_array_foreach(json_object_get(t, "allowed_actions"), i, a)
	{
		int n =
		    snprintf(buf + used, len - used, "%s%s", i ? "," : "", json_string_value(a));
		if (n < 0 || (size_t)n >= len - used)
			break;
		used += (size_t)n;
	}
}

static void print_list(json_t *list)
{
	printf("%6s %-8s %-28s %8s %-10s %-20s %-28s %s\n", "ID", "STATE", "JOB", "TRIGGER",
	       "TR.STATE", "CREATED", "ALLOWED", "REASON");
	size_t i;
	json_t *t;
	json_array_foreach(list, i, t)
	{
		char trig[24] = "-", acts[128];
		if (json_is_integer(json_object_get(t, "trigger_id")))
			snprintf(trig, sizeof trig, "%lld",
				 (long long)json_integer_value(json_object_get(t, "trigger_id")));
		actions(t, acts, sizeof acts);
		printf("%6lld %-8s %-28s %8s %-10s %-20s %-28s %s\n",
		       (long long)json_integer_value(json_object_get(t, "id")), str(t, "state"),
		       str(t, "job_id"), trig, str(t, "trigger_state"), str(t, "created_at"), acts,
		       str(t, "reason"));
	}
	if (!json_array_size(list))
		printf("(no tickets)\n");
}

static void print_one(json_t *t)
{
	char acts[128];
	actions(t, acts, sizeof acts);
	printf("ticket %lld (%s)\n", (long long)json_integer_value(json_object_get(t, "id")),
	       str(t, "state"));
	printf("  job:       %s\n", str(t, "job_id"));
	if (json_is_integer(json_object_get(t, "trigger_id")))
		printf("  trigger:   %lld (%s)\n",
		       (long long)json_integer_value(json_object_get(t, "trigger_id")),
		       str(t, "trigger_state"));
	printf("  reason:    %s\n  allowed:   %s\n  created:   %s\n", str(t, "reason"), acts,
	       str(t, "created_at"));
	if (json_is_string(json_object_get(t, "resolution")))
		printf("  resolved:  %s by %s at %s\n", str(t, "resolution"), str(t, "actor"),
		       str(t, "resolved_at"));
	char *ev = json_dumps(json_object_get(t, "evidence"), JSON_COMPACT | JSON_ENCODE_ANY);
	printf("  evidence:  %s\n", ev ? ev : "null");
	free(ev);
}

static bool parse_id(const char *arg, int64_t *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(arg, &end, 10);
	if (errno || *end || end == arg || v <= 0)
		return false;
	*out = v;
	return true;
}

static bool known_action(const char *a)
{
	return !strcmp(a, "retry") || !strcmp(a, "mark_succeeded") || !strcmp(a, "abandon") ||
	       !strcmp(a, "backfill") || !strcmp(a, "release");
}

static void dump(json_t *o)
{
	json_dumpf(o, stdout, JSON_INDENT(2));
	putchar('\n');
}

/* tickets list (LIST), show ID, or resolve ID (R given) */
struct tickets_args {
	bool list, all;
	int64_t id;
	const char *action, *evidence;
	int64_t max;
	const char *reason;
	pal_resolve_result *r;
};

static int tickets_call(pal_store *st, const void *ctx, json_t **out, char *err, size_t errlen)
{
	const struct tickets_args *a = ctx;
	if (a->r)
		return pal_ops_ticket_resolve(st, a->id, a->action, a->evidence, a->max,
					      pal_cli_actor(), a->reason, a->r, err, errlen);
	return a->list ? pal_ops_tickets_json(st, a->all, out, err, errlen)
		       : pal_ops_ticket_json(st, a->id, out, err, errlen);
}

int pal_cmd_tickets(int argc, char **argv)
{
	const char *sub = "list";
	if (argc > 1 && argv[1][0] != '-') {
		sub = argv[1];
		argc--, argv++;
	}
	bool list = !strcmp(sub, "list"), show = !strcmp(sub, "show"),
	     resolve = !strcmp(sub, "resolve");
	if (!list && !show && !resolve) {
		pal_cli_err("tickets", "unknown subcommand \"%s\" (expected list, show or resolve)",
			    sub);
		usage(stderr);
		return PAL_EXIT_USAGE;
	}
	pal_cli_common c = {0};
	bool all = false;
	const char *action = NULL, *reason = NULL, *evidence = NULL;
	int64_t max = DEFAULT_MAX;
	static const struct option lo[] = {PAL_CLI_COMMON_LONGOPTS,
					   {"all", no_argument, NULL, 'a'},
					   {"action", required_argument, NULL, 'A'},
					   {"reason", required_argument, NULL, 'r'},
					   {"evidence", required_argument, NULL, 'E'},
					   {"max", required_argument, NULL, 'M'},
					   {"help", no_argument, NULL, 'h'},
					   {0}};
	int opt, ec;
	while ((opt = getopt_long(argc, argv, "har:", lo, NULL)) != -1) {
		switch (opt) {
		case 'a':
			all = true;
			break;
		case 'A':
			action = optarg;
			break;
		case 'r':
			reason = optarg;
			break;
		case 'E':
			evidence = optarg;
			break;
		case 'M': {
			long long v;
			if (!pal_cli_int("tickets", "max", optarg, 1, 10000000, &v))
				return PAL_EXIT_USAGE;
			max = v;
			break;
		}
		default:
			if ((ec = pal_cli_opt_other(&c, opt, optarg, usage)) >= 0)
				return ec;
		}
	}
	int64_t id = 0;
	if (list) {
		if (optind != argc || action || reason || evidence) {
			usage(stderr);
			return PAL_EXIT_USAGE;
		}
	} else {
		if (argc - optind != 1 || !parse_id(argv[optind], &id)) {
			pal_cli_err("tickets", "%s needs one ticket id", sub);
			usage(stderr);
			return PAL_EXIT_USAGE;
		}
		if (show && (action || reason || evidence)) {
			usage(stderr);
			return PAL_EXIT_USAGE;
		}
	}
	if (resolve) {
		if (!action || !known_action(action)) {
			pal_cli_err(
			    "tickets",
			    "--action is required: retry, mark_succeeded, abandon, backfill or "
			    "release");
			return PAL_EXIT_USAGE;
		}
		if (!reason || !*reason) {
			pal_cli_err(
			    "tickets",
			    "--reason is required: say why, it is kept in the ticket and the "
			    "audit log");
			return PAL_EXIT_USAGE;
		}
	}
	if (pal_cli_server(&c)) {
		char path[256];
		if (list) { /* every page, printed as the direct path prints them */
			json_t *rows;
			if ((ec = pal_cli_remote_items(
				 &c, "tickets",
				 all ? "/api/v1/tickets?all=true" : "/api/v1/tickets", &rows)))
				return ec;
			if (c.json)
				dump(rows);
			else
				print_list(rows);
			json_decref(rows);
			return PAL_EXIT_OK;
		}
		snprintf(path, sizeof path, "/api/v1/tickets/%lld%s", (long long)id,
			 resolve ? "/resolve" : "");
		if (show)
			return pal_cli_remote(&c, "tickets", "GET", path, NULL, NULL, 0);
		json_t *ev = evidence ? json_loads(evidence, JSON_DECODE_ANY, NULL) : NULL;
		if (evidence && !ev) {
			pal_cli_err("tickets", "--evidence is not JSON");
			return PAL_EXIT_DATAERR;
		}
		return pal_cli_remote_json(&c, "tickets", path,
					   json_pack("{s:s, s:s, s:I, s:o?}", "reason", reason,
						     "action", action, "max", (json_int_t)max,
						     "evidence", ev));
	}
	json_t *out = NULL;
	pal_resolve_result r = {0}, *res = resolve ? &r : NULL;
	struct tickets_args ta = {list, all, id, action, evidence, max, reason, res};
	if ((ec = pal_cli_store_call(&c, "tickets", tickets_call, &ta, &out)))
		return ec;
	if (list || show) {
		if (c.json)
			dump(out);
		else if (list)
			print_list(out);
		else
			print_one(out);
		json_decref(out);
		return PAL_EXIT_OK;
	}
	if (c.json) {
		out = json_pack("{s:I, s:s, s:s}", "ticket", (json_int_t)id, "action", action,
				"state", "resolved");
		if (r.trigger_state[0])
			json_object_set_new(out, "trigger_state", json_string(r.trigger_state));
		if (!strcmp(action, "backfill"))
			json_object_set_new(out, "backfill",
					    json_pack("{s:I, s:I, s:I, s:I}", "instants",
						      (json_int_t)r.backfill.instants, "rows",
						      (json_int_t)r.backfill.rows, "inserted",
						      (json_int_t)r.backfill.inserted, "ran",
						      (json_int_t)r.backfill.ran));
		dump(out);
		json_decref(out);
		return PAL_EXIT_OK;
	}
	printf("resolved ticket %lld with %s", (long long)id, action);
	if (r.trigger_state[0])
		printf("; its trigger is now %s", r.trigger_state);
	if (!strcmp(action, "backfill"))
		printf("; backfill request ticket-%lld: %lld instants, %lld triggers created, "
		       "%lld left out (their instant and partition ran or is to run)",
		       (long long)id, (long long)r.backfill.instants,
		       (long long)r.backfill.inserted, (long long)r.backfill.ran);
	putchar('\n');
	return PAL_EXIT_OK;
}
