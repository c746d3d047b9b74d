/*
 * cmd_cutover.c - moving a scope from shadow to live and back:
 * `palisade shadow --job|--group|--tenant` (and `shadow list`),
 * `palisade cutover` with its stop lines, `palisade rollback`
 * (src/store/shadow.c, docs/migrating.md).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "palisade/cli.h"
#include "palisade/cutover.h"
#include "palisade/shadow.h"
#include "palisade/timefmt.h"
#include "palisade/verify.h"
#include "cli_int.h"

#define EXIT_STOPLINE 4 /* a stop line of the previous step is crossed */

/* What shadow, cutover and rollback share: one scope, --reason and the
 * common options; each command adds its own (OWN). */
typedef struct scope_args {
	const char *cmd;
	pal_cli_common c;
	pal_scope sc;
	int n;
	const char *reason;
} scope_args;
#define SCOPE_ARGS_LONGOPTS                                                                        \
	PAL_CLI_COMMON_LONGOPTS, PAL_CLI_SCOPE_LONGOPTS, {"reason", required_argument, NULL, 'r'}, \
	{                                                                                          \
		"help", no_argument, NULL, 'h'                                                     \
	}
/* A command's own option: 0 taken, an exit code (> 0) for a bad value,
 * -1 not one of its own. */
typedef int (*own_opt_fn)(void *ctx, const char *cmd, int opt, const char *arg);

/* Parse ARGV with LO (SCOPE_ARGS_LONGOPTS and the command's own, which OWN
 * takes; OWN may be NULL).  When REQUIRED, exactly one scope and a
 * non-empty --reason must be given.  Returns -1 to go on, else the exit
 * code to return (0 after --help), the message and usage printed. */
static int parse_scope_args(scope_args *a, int argc, char **argv, const struct option *lo,
			    own_opt_fn own, void *ctx, void (*usage)(FILE *), bool required)
{
	int opt, ec;
	bool ok;
	while ((opt = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		if (pal_cli_scope_opt(a->cmd, opt, optarg, &a->sc, &a->n, &ok)) {
			if (!ok)
				return PAL_EXIT_USAGE;
		} else if (opt == 'r') {
			a->reason = optarg;
		} else if (!own || (ec = own(ctx, a->cmd, opt, optarg)) < 0) {
			if ((ec = pal_cli_opt_other(&a->c, opt, optarg, usage)) >= 0)
				return ec;
		} else if (ec) {
			return ec;
		}
	}
	if (optind != argc || (required && (a->n != 1 || !a->reason || !*a->reason))) {
		if (required && a->n != 1)
			pal_cli_err(a->cmd, "name exactly one scope: --job, --group or --tenant");
		else if (required && optind == argc)
			pal_cli_err(a->cmd, "--reason is required: it is kept in the audit log");
		usage(stderr);
		return PAL_EXIT_USAGE;
	}
	return -1;
}

/* --NAME ARG as a duration (>= 0) into *MS; false with the message printed. */
static bool duration_opt(const char *cmd, const char *name, const char *arg, int64_t *ms)
{
	if (pal_parse_duration_ms(arg, ms) == 0 && *ms >= 0)
		return true;
	pal_cli_err(cmd, "--%s \"%s\": expected a duration", name, arg);
	return false;
}

static void dump(json_t *j)
{
	json_dumpf(j, stdout, JSON_INDENT(2));
	putchar('\n');
}

/* ---- shadow --job|--group|--tenant, shadow list ---- */

static void usage_shadow_set(FILE *fp)
{
	fprintf(
	    fp,
	    "usage: palisade shadow (--job JOB | --group GROUP | --tenant TENANT) --reason TEXT\n"
	    "                       [--output table|json] [--pg CONNINFO] [--config FILE]\n"
	    "       palisade shadow list [--output table|json]\n"
	    "       (either with --server URL [--token-file FILE]: through the API)\n"
	    "Put a scope in shadow from now on: its instants from now are planned as\n"
	    "triggers in the state shadow, which no executor claims, so no call leaves\n"
	    "palisade for them; its planned schedule triggers of those instants not yet\n"
	    "attempted move to shadow now, and first attempts claimed ahead of their\n"
	    "instant are asked to pause (it waits for those instants, at most 12 s).\n"
	    "Instants before now stay palisade's: it lists the unfinished ones (calls in\n"
	    "flight, retries, due instants still waiting), which palisade finishes.  To\n"
	    "hand those to the old system instead, use `palisade rollback`, which lists\n"
	    "what the old system takes over.\n"
	    "`shadow list`: every scope in shadow, and every scope with cut-over steps,\n"
	    "with its steps; a job's LIVE %% is the greatest its own, its group's, its\n"
	    "tenant's or the cluster's latest step gives it.  Audited.\n"
	    "A scope holding a job with spread or jitter (or following one) is refused\n"
	    "while a node older than schema 45 is live (read from ZooKeeper, as apply).\n"
	    "Exit: 0 done, 3 no such job, 4 refused (older nodes live), 64 usage,\n"
	    "69 database or ZooKeeper unreachable.\n");
}

/* shadow list's rows (pal_store_shadow_list_json()'s) as JSON or a table */
static void print_list(const pal_cli_common *c, json_t *rows)
{
	if (c->json) {
		dump(rows);
		return;
	}
	printf("%-32s %-8s %7s  %-20s %s\n", "SCOPE", "SOURCE", "LIVE %", "SINCE", "REASON");
	size_t i;
	json_t *r;
	json_array_foreach(rows, i, r)
	{
		/* a job's percent given by its group's, tenant's or the cluster's step */
		const char *scope = json_string_value(json_object_get(r, "scope"));
		const char *from = json_string_value(json_object_get(r, "percent_from"));
		bool other = from && strcmp(from, scope);
		printf("%-32s %-8s %7lld  %-20s %s%s%s%s\n", scope,
		       json_string_value(json_object_get(r, "source")),
		       (long long)json_integer_value(json_object_get(r, "percent")),
		       json_string_value(json_object_get(r, "since")),
		       json_string_value(json_object_get(r, "reason")), other ? " (live % by " : "",
		       other ? from : "", other ? ")" : "");
	}
}

/* shadow's answer {scope, already, live_percent, moved} as JSON or a line */
static void print_set(const pal_cli_common *c, json_t *o)
{
	const char *scope = json_string_value(json_object_get(o, "scope"));
	if (c->json)
		dump(o);
	else if (json_is_true(json_object_get(o, "already")))
		printf("%s is in shadow already (cut over to %d %% so far); nothing changed\n",
		       scope, (int)json_integer_value(json_object_get(o, "live_percent")));
	else {
		json_int_t back = json_integer_value(json_object_get(o, "handed_back"));
		printf("%s is in shadow from %s on: %lld planned triggers moved to shadow", scope,
		       json_string_value(json_object_get(o, "since")),
		       (long long)json_integer_value(json_object_get(o, "moved")));
		if (back)
			printf(", %lld claimed ahead handed back without a call", (long long)back);
		printf("\n");
	}
	json_t *fly = json_object_get(o, "in_flight");
	if (c->json || !json_array_size(fly))
		return;
	printf("%zu unfinished instants, which palisade finishes (calls in flight, retries, due "
	       "instants waiting; the old system must not run them, or runs them with the same "
	       "key):\n",
	       json_array_size(fly));
	size_t i;
	json_t *r;
	json_array_foreach(fly, i, r)
	{
		const char *key = json_string_value(json_object_get(r, "idempotency_key"));
		printf("  %-32s %-20s %4lld %-10s %s\n",
		       json_string_value(json_object_get(r, "job_id")),
		       json_string_value(json_object_get(r, "scheduled_at")),
		       (long long)json_integer_value(json_object_get(r, "partition")),
		       json_string_value(json_object_get(r, "state")), key ? key : "-");
	}
}

/* shadow SC (NULL: shadow list) with REASON */
struct shadow_args {
	const pal_scope *sc;
	const char *reason;
	const pal_cli_common *c;
};

/* pal_boundary_check_nodes() for CMD over SC, its answer as the codes
 * pal_cli_exit_code() reads: PAL_ESTALE (exit 4) for older nodes live,
 * PAL_EDB (exit 69) when they cannot be read, unless LENIENT (rollback, a
 * dry run): then a warning on stderr. */
static int check_nodes(const pal_cli_common *c, pal_store *st, const pal_scope *sc,
		       const char *cmd, bool lenient, char *err, size_t errlen)
{
	int rc = pal_boundary_check_nodes(st, sc, cmd, pal__cli_zk(c), pal__cli_config_zk_root(c),
					  pal__cli_config_cluster(c), lenient, err, errlen);
	if (!rc && err[0])
		fprintf(stderr, "palisade %s: warning: %s\n", cmd, err);
	return rc == PAL_EBUSY ? PAL_ESTALE : rc == PAL_EZK ? PAL_EDB : rc;
}

/* The answer of shadow through the API (--server; the list, every page of
 * it) into *O; the exit code. */
static int shadow_remote(const pal_cli_common *c, const struct shadow_args *a, json_t **o)
{
	if (!a->sc)
		return pal_cli_remote_items(c, "shadow", "/api/v1/shadow", o);
	return pal_cli_remote_send(c, "shadow", "POST", "/api/v1/shadow",
				   json_pack("{s:s, s:s}", pal_scope_kind_name(a->sc->kind),
					     a->sc->name, "reason", a->reason),
				   o);
}

/* The same on the database (pal_cli_store_call) */
static int shadow_call(pal_store *st, const void *ctx, json_t **o, char *err, size_t errlen)
{
	const struct shadow_args *a = ctx;
	if (!a->sc)
		return pal_store_shadow_list_json(st, o, err, errlen);
	int rc = check_nodes(a->c, st, a->sc, "shadow", false, err, errlen);
	return rc ? rc
		  : pal_store_shadow_set_json(st, a->sc, pal_cli_actor(), a->reason, o, err,
					      errlen);
}

int pal__cli_shadow_set(int argc, char **argv)
{
	scope_args a = {.cmd = "shadow", .sc = {PAL_SCOPE_GLOBAL, NULL}};
	bool list = argc >= 2 && strcmp(argv[1], "list") == 0;
	static const struct option lo[] = {SCOPE_ARGS_LONGOPTS, {0}};
	if (list)
		argc--, argv++;
	int ec = parse_scope_args(&a, argc, argv, lo, NULL, NULL, usage_shadow_set, !list);
	if (ec >= 0)
		return ec;
	if (list && a.n) {
		pal_cli_err("shadow", "shadow list takes no scope");
		usage_shadow_set(stderr);
		return PAL_EXIT_USAGE;
	}
	pal_cli_common c = a.c;
	struct shadow_args sa = {list ? NULL : &a.sc, a.reason, &c};
	json_t *o;
	ec = pal_cli_server(&c) ? shadow_remote(&c, &sa, &o)
				: pal_cli_store_call(&c, "shadow", shadow_call, &sa, &o);
	if (ec)
		return ec;
	if (list)
		print_list(&c, o);
	else
		print_set(&c, o);
	json_decref(o);
	return PAL_EXIT_OK;
}

/* ---- cutover ---- */

/* A chain (`after:`) the step left with one side live and one shadow
 * (docs/migrating.md, "Chains of jobs"), one line each on stderr. */
static void warn_split(json_t *split)
{
	size_t i;
	json_t *x;
	json_array_foreach(split, i, x)
	{
		const char *job = json_string_value(json_object_get(x, "job"));
		const char *up = json_string_value(json_object_get(x, "upstream"));
		if (json_is_true(json_object_get(x, "job_live")))
			pal_cli_err("cutover",
				    "warning: %s is live but its upstream %s is in shadow: %s's "
				    "instants follow %s's into shadow, so the old system runs both "
				    "until %s is cut over",
				    job, up, job, up, up);
		else
			pal_cli_err(
			    "cutover",
			    "warning: %s is live but %s, which runs after it, is in shadow: "
			    "palisade plans %s's instants shadow after %s's runs, which the "
			    "old system no longer makes; hint: cut %s over too",
			    up, job, job, up, job);
	}
}

static void usage_cutover(FILE *fp)
{
	fprintf(fp,
		"usage: palisade cutover (--job JOB | --group GROUP | --tenant TENANT)\n"
		"                        --at RFC3339 --reason TEXT [--percent N] [--dry-run]\n"
		"                        [--max-pending-age DURATION] [--sink-pg CONNINFO]\n"
		"                        [--output table|json] [--pg CONNINFO] [--config FILE]\n"
		"                        [--server URL [--token-file FILE]] (not with --sink-pg)\n"
		"From --at on (now or later), the scope's jobs whose bucket (a hash of the job\n"
		"id, 0-99) is below --percent (default 100) are live; their instants before it\n"
		"stay shadow.  Steps only widen (10, 25, 50, 100 only ever add jobs).  A step\n"
		"after a live one is refused while a stop line of that step is crossed:\n"
		"missing or doubled instants since it (verify; doubled effects with --sink-pg),\n"
		"stale-token rejections above the same length of time before it, a pending\n"
		"trigger older than --max-pending-age (default 60s), an open ticket.  Audited.\n"
		"A chain of jobs (after:) the step leaves with one side live and the other\n"
		"shadow is named in a warning on stderr (split_chains with --output json).\n"
		"It lists the jobs it makes live, one per line (made_live): take them out of\n"
		"the old system at --at.  --dry-run checks the stop lines and answers what the\n"
		"step would do, changing nothing (no audit row).\n"
		"A scope holding a job with spread or jitter (or following one) is refused\n"
		"while a node older than schema 45 is live (read from ZooKeeper, as apply).\n"
		"Exit: 0 done, 3 no such job or nothing in shadow, 4 a stop line is crossed (each\n"
		"named) or older nodes are live, 64 usage (a narrowing step, --at in the past\n"
		"or before the latest step), 69 database or ZooKeeper unreachable.\n");
}

/* cutover's own options */
typedef struct cutover_opts {
	const char *sink_pg;
	long long percent;
	int64_t at, max_pending_ms;
	bool dry_run;
} cutover_opts;

static int cutover_opt(void *ctx, const char *cmd, int opt, const char *arg)
{
	cutover_opts *o = ctx;
	switch (opt) {
	case 'A':
		return pal_cli_time(cmd, "at", arg, &o->at) ? 0 : PAL_EXIT_USAGE;
	case 'P':
		return pal_cli_int(cmd, "percent", arg, 1, 100, &o->percent) ? 0 : PAL_EXIT_USAGE;
	case 'M':
		return duration_opt(cmd, "max-pending-age", arg, &o->max_pending_ms)
			   ? 0
			   : PAL_EXIT_USAGE;
	case 'K':
		o->sink_pg = arg;
		return 0;
	case 'D':
		o->dry_run = true;
		return 0;
	default:
		return -1;
	}
}

int pal_cmd_cutover(int argc, char **argv)
{
	scope_args a = {.cmd = "cutover", .sc = {PAL_SCOPE_GLOBAL, NULL}};
	cutover_opts o = {.percent = 100, .at = PAL_OPS_NOW, .max_pending_ms = 60000};
	static const struct option lo[] = {SCOPE_ARGS_LONGOPTS,
					   {"at", required_argument, NULL, 'A'},
					   {"percent", required_argument, NULL, 'P'},
					   {"max-pending-age", required_argument, NULL, 'M'},
					   {"sink-pg", required_argument, NULL, 'K'},
					   {"dry-run", no_argument, NULL, 'D'},
					   {0}};
	int ec = parse_scope_args(&a, argc, argv, lo, cutover_opt, &o, usage_cutover, true);
	if (ec >= 0)
		return ec;
	if (o.at == PAL_OPS_NOW) {
		pal_cli_err("cutover", "--at is required");
		usage_cutover(stderr);
		return PAL_EXIT_USAGE;
	}
	pal_cli_common c = a.c;
	pal_scope sc = a.sc;
	const char *reason = a.reason, *sink_pg = o.sink_pg;
	long long percent = o.percent;
	int64_t at = o.at, max_pending_ms = o.max_pending_ms;
	if (at < (int64_t)time(NULL) - 1) {
		pal_cli_err("cutover", "--at is in the past: instants the old system has run "
				       "would run again; give now or later");
		return PAL_EXIT_USAGE;
	}
	pal_cutover_req rq = {sc, (int)percent, at, max_pending_ms / 1000, sink_pg, o.dry_run, NULL};
	json_t *ans;
	bool refused = false;
	if (pal_cli_server(&c)) {
		if (sink_pg) {
			pal_cli_err("cutover", "--sink-pg works on the database only, not through "
					       "--server");
			return PAL_EXIT_USAGE;
		}
		char ts[32];
		pal_fmt_rfc3339(at, ts, sizeof ts);
		json_t *body = json_pack("{s:s, s:s, s:i, s:s, s:I}", pal_scope_kind_name(sc.kind),
					 sc.name, "reason", reason, "percent", (int)percent, "at",
					 ts, "max_pending_age_ms", (json_int_t)max_pending_ms);
		/* 0.3.0 drops ?dry_run and takes the step */
		if (o.dry_run && (ec = pal_cli_remote_needs(&c, "cutover", "--dry-run"))) {
			json_decref(body);
			return ec;
		}
		/* a crossed stop line: 409, its detail naming each, exit 4 */
		if ((ec = pal_cli_remote_send(&c, "cutover", "POST",
					      o.dry_run ? "/api/v1/cutover?dry_run=true"
							: "/api/v1/cutover",
					      body, &ans)))
			return ec;
	} else {
		pal_store *st;
		if ((ec = pal_cli_connect(&c, false, &st)))
			return ec;
		char err[1024];
		int rc = check_nodes(&c, st, &sc, "cutover", o.dry_run, err, sizeof err);
		if (!rc)
			rc = pal_cutover_step(st, &rq, pal_cli_actor(), reason, &ans, &refused, err,
					      sizeof err);
		pal_store_close(st);
		if (rc) {
			pal_cli_err("cutover", "%s", err);
			return rc == PAL_EINVAL ? PAL_EXIT_USAGE : pal_cli_exit_code(rc);
		}
	}
	ec = refused ? EXIT_STOPLINE : PAL_EXIT_OK;
	/* what was done is the answer's word, not the flag's */
	bool dry = json_is_true(json_object_get(ans, "dry_run"));
	if (o.dry_run && !dry && !refused) {
		pal_cli_err("cutover", "--dry-run was asked, but the node's answer is not a dry "
				       "run: the step below WAS taken (a node older than 0.4.0?)");
		ec = PAL_EXIT_SOFTWARE;
	}
	if (c.json) {
		dump(ans);
	} else if (refused) {
		size_t i;
		json_t *x;
		json_array_foreach(json_object_get(ans, "crossed"), i, x)
		{
			pal_cli_err(
			    "cutover",
			    "stop line crossed since the %d %% step: %s = %lld (bound %lld)",
			    (int)json_integer_value(json_object_get(ans, "previous_percent")),
			    json_string_value(json_object_get(x, "line")),
			    (long long)json_integer_value(json_object_get(x, "value")),
			    (long long)json_integer_value(json_object_get(x, "bound")));
		}
	} else {
		json_t *made = json_object_get(ans, "made_live");
		printf("%s%s cut over to %lld %% from %s: %lld of %lld jobs live from then on; "
		       "%lld planned triggers made live; %zu jobs made live by this step%s\n",
		       dry ? "dry run, nothing changed: " : "",
		       json_string_value(json_object_get(ans, "scope")), percent,
		       json_string_value(json_object_get(ans, "at")),
		       (long long)json_integer_value(json_object_get(ans, "live_jobs")),
		       (long long)json_integer_value(json_object_get(ans, "jobs")),
		       (long long)json_integer_value(json_object_get(ans, "moved")),
		       json_array_size(made), json_array_size(made) ? ":" : "");
		size_t i;
		json_t *x;
		json_array_foreach(made, i, x) printf("  %s\n", json_string_value(x));
		warn_split(json_object_get(ans, "split_chains"));
	}
	json_decref(ans);
	return ec;
}

/* ---- rollback ---- */

static void usage_rollback(FILE *fp)
{
	fprintf(
	    fp,
	    "usage: palisade rollback (--job JOB | --group GROUP | --tenant TENANT) --reason TEXT\n"
	    "                         [--wait DURATION] [--output table|json]\n"
	    "                         [--pg CONNINFO] [--config FILE]\n"
	    "                         [--server URL [--token-file FILE]]\n"
	    "Put a scope back in shadow from now on: no new claim in it, its waiting\n"
	    "schedule triggers (pending, retry_wait, paused) handed back, those claimed\n"
	    "ahead of their instant asked to pause, running calls left to finish or\n"
	    "checkpoint (up to --wait, default 30s).  Prints the instant AT it took\n"
	    "effect (now, or the last instant of a call in flight) and every unfinished\n"
	    "trigger up to AT with its instant, idempotency key and last outcome\n"
	    "(unknown outcomes flagged): the old system takes over exactly those, with\n"
	    "the same business keys, and every instant after AT.  Audited.\n"
	    "A scope holding a job with spread or jitter (or following one) is refused\n"
	    "while a node older than schema 45 is live (read from ZooKeeper, as apply).\n"
	    "Exit: 0 done, 3 no such job, 4 refused (older nodes live), 64 usage,\n"
	    "69 database or ZooKeeper unreachable.\n");
}

static int rollback_opt(void *ctx, const char *cmd, int opt, const char *arg)
{
	if (opt != 'W')
		return -1;
	return duration_opt(cmd, "wait", arg, ctx) ? 0 : PAL_EXIT_USAGE;
}

struct rollback_args {
	const pal_scope *sc;
	const char *reason;
	int64_t wait_ms;
	const pal_cli_common *c;
};

static int rollback_call(pal_store *st, const void *ctx, json_t **o, char *err, size_t errlen)
{
	const struct rollback_args *a = ctx;
	int rc = check_nodes(a->c, st, a->sc, "rollback", true, err, errlen);
	return rc ? rc
		  : pal_store_rollback_json(st, a->sc, pal_cli_actor(), a->reason, a->wait_ms, o,
					    err, errlen);
}

int pal_cmd_rollback(int argc, char **argv)
{
	scope_args a = {.cmd = "rollback", .sc = {PAL_SCOPE_GLOBAL, NULL}};
	int64_t wait_ms = 30000;
	static const struct option lo[] = {
	    SCOPE_ARGS_LONGOPTS, {"wait", required_argument, NULL, 'W'}, {0}};
	int ec = parse_scope_args(&a, argc, argv, lo, rollback_opt, &wait_ms, usage_rollback, true);
	if (ec >= 0)
		return ec;
	pal_cli_common c = a.c;
	pal_scope sc = a.sc;
	const char *reason = a.reason;
	json_t *o;
	if (pal_cli_server(&c)) {
		json_t *body = json_pack("{s:s, s:s, s:I}", pal_scope_kind_name(sc.kind), sc.name,
					 "reason", reason, "wait_ms", (json_int_t)wait_ms);
		if ((ec =
			 pal_cli_remote_send(&c, "rollback", "POST", "/api/v1/rollback", body, &o)))
			return ec;
	} else {
		struct rollback_args ra = {&sc, reason, wait_ms, &c};
		if ((ec = pal_cli_store_call(&c, "rollback", rollback_call, &ra, &o)))
			return ec;
	}
	json_t *rows = json_object_get(o, "unfinished");
	if (c.json) {
		dump(o);
	} else {
		printf("%s rolled back at %s: %lld due triggers handed back, %lld later instants "
		       "back to shadow, %lld calls still in flight\n",
		       json_string_value(json_object_get(o, "scope")),
		       json_string_value(json_object_get(o, "at")),
		       (long long)json_integer_value(json_object_get(o, "handed_back")),
		       (long long)json_integer_value(json_object_get(o, "later")),
		       (long long)json_integer_value(json_object_get(o, "in_flight")));
		printf("%-32s %-20s %4s %-10s %-40s %s\n", "JOB", "INSTANT", "PART", "STATE", "KEY",
		       "LAST OUTCOME");
		size_t i;
		json_t *r;
		json_array_foreach(rows, i, r)
		{
			json_t *lo = json_object_get(r, "last_outcome");
			char last[160] = "-";
			if (json_is_object(lo))
				snprintf(last, sizeof last, "%s%s%s",
					 json_string_value(json_object_get(lo, "outcome"))
					     ? json_string_value(json_object_get(lo, "outcome"))
					     : "?",
					 json_is_true(json_object_get(r, "unknown_outcome"))
					     ? " (UNKNOWN OUTCOME)"
					     : "",
					 json_is_true(json_object_get(r, "in_flight"))
					     ? " (in flight)"
					     : "");
			const char *nom = json_string_value(json_object_get(r, "nominal_at"));
			if (nom) /* moved by spread or jitter: the old system's instant */
				snprintf(last + strlen(last), sizeof last - strlen(last),
					 " (nominal %s)", nom);
			printf("%-32s %-20s %4lld %-10s %-40s %s\n",
			       json_string_value(json_object_get(r, "job_id")),
			       json_string_value(json_object_get(r, "scheduled_at")),
			       (long long)json_integer_value(json_object_get(r, "partition")),
			       json_string_value(json_object_get(r, "state")),
			       json_string_value(json_object_get(r, "idempotency_key"))
				   ? json_string_value(json_object_get(r, "idempotency_key"))
				   : "-",
			       last);
		}
	}
	json_decref(o);
	return PAL_EXIT_OK;
}
