/*
 * cmd_read.c - the read commands of the operator: `palisade attempts
 * TRIGGER`, `gates`, `misfires`, `audit`, `calendars`, `notify-rules` (SQL
 * in src/store/lifecycle.c).
 * A readable table by default, the rows as JSON with --output json.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/cli.h"
#include "palisade/err.h"
#include "palisade/lifecycle.h"
#include <glib.h>
#include "palisade/timefmt.h"
#include "cli_int.h"

#define DEFAULT_LIMIT 100

static const char *s_(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	if (json_is_string(v))
		return json_string_value(v);
	return "-";
}

static long long i_(json_t *o, const char *k)
{
	return (long long)json_integer_value(json_object_get(o, k));
}

static void dump(json_t *j)
{
	json_dumpf(j, stdout, JSON_INDENT(2));
	putchar('\n');
}

/* Read the rows with FN (its arguments CTX) and print them: JSON, or
 * TABLE.  Through the API (--server) the rows are the "items" of the pages
 * of GET REMOTE instead, up to ROWS_MAX rows (0: every page); NULL: the
 * command needs the database. */
static int run(const char *cmd, const pal_cli_common *c, pal_cli_store_fn fn, const void *ctx,
	       void (*table)(json_t *rows), const char *remote, long long rows_max)
{
	json_t *rows = NULL;
	int ec = pal_cli_server(c) && remote ? pal_cli_remote_rows(c, cmd, remote, rows_max, &rows)
					     : pal_cli_store_call(c, cmd, fn, ctx, &rows);
	if (ec)
		return ec;
	if (c->json)
		dump(rows);
	else
		table(rows);
	json_decref(rows);
	return PAL_EXIT_OK;
}

/* ---- attempts ---- */

static void usage_attempts(FILE *fp)
{
	fprintf(fp,
		"usage: palisade attempts [--output table|json] [--pg CONNINFO] [--config FILE]\n"
		"                         [--server URL [--token-file FILE]]\n"
		"                         TRIGGER\n"
		"Every attempt (claim) of trigger TRIGGER, oldest first: fence, node, when,\n"
		"the idempotency key sent, outcome, error class, HTTP status, duration, and\n"
		"what the attempt kept of the answer (target.keep_headers, keep_body), its\n"
		"body shown escaped (--output json: response.body whole, body_base64 exact).\n"
		"Exit: 0 listed, 3 no such trigger, 64 usage, 69 database unreachable.\n");
}

/* The bytes of an excerpt shown on one line of a table. */
#define EXCERPT_COLS 72

/* What an attempt kept of the answer, under its row: the headers, then the
 * body's first EXCERPT_COLS characters as shown escaped. */
static void response_excerpt(json_t *r)
{
	json_t *h = json_object_get(r, "headers");
	const char *body = json_string_value(json_object_get(r, "body"));
	if (!json_object_size(h) && (!body || !*body))
		return;
	const char *k;
	json_t *v;
	json_object_foreach(h, k, v)
	{
		printf("         %s: %s\n", k, json_string_value(v));
	}
	if (json_is_true(json_object_get(r, "headers_truncated")))
		printf("         (headers cut at %d B)\n", PAL_KEEP_HEADERS_BYTES);
	if (!body || !*body)
		return;
	/* a whole UTF-8 character at the cut */
	const char *end = body;
	for (int n = 0; *end && n < EXCERPT_COLS; n++)
		end = g_utf8_next_char(end);
	printf("         body (%lld B%s%s%s): %.*s%s\n", i_(r, "bytes"),
	       json_is_true(json_object_get(r, "truncated")) ? ", truncated" : "",
	       json_is_string(json_object_get(r, "content_type")) ? ", " : "",
	       json_is_string(json_object_get(r, "content_type")) ? s_(r, "content_type") : "",
	       (int)(end - body), body, *end ? "..." : "");
}

static void table_attempts(json_t *rows)
{
	printf("%-8s %-16s %-20s %-20s %-10s %-20s %4s %7s  %s\n", "FENCE", "NODE", "CLAIMED",
	       "ENDED", "OUTCOME", "ERROR", "HTTP", "MS", "KEY");
	size_t i;
	json_t *a;
	json_array_foreach(rows, i, a)
	{
		char http[8] = "-", ms[16] = "-";
		if (json_is_integer(json_object_get(a, "http_status")))
			snprintf(http, sizeof http, "%lld", i_(a, "http_status"));
		if (json_is_integer(json_object_get(a, "duration_ms")))
			snprintf(ms, sizeof ms, "%lld", i_(a, "duration_ms"));
		printf("%-8lld %-16s %-20s %-20s %-10s %-20s %4s %7s  %s\n", i_(a, "fence"),
		       s_(a, "node"), s_(a, "claimed_at"), s_(a, "ended_at"), s_(a, "outcome"),
		       s_(a, "error_class"), http, ms, s_(a, "idempotency_key"));
		response_excerpt(json_object_get(a, "response"));
	}
	if (!json_array_size(rows))
		printf("(no attempts: the trigger was never claimed)\n");
}

static int read_attempts(pal_store *st, const void *ctx, json_t **rows, char *err, size_t errlen)
{
	return pal_store_attempts_json(st, *(const long long *)ctx, rows, err, errlen);
}

int pal_cmd_attempts(int argc, char **argv)
{
	pal_cli_common c = { 0 };
	int ec = pal_cli_parse_args(argc, argv, &c, usage_attempts, 1, 1);
	if (ec >= 0)
		return ec;
	long long id;
	if (!pal_cli_int("attempts", "trigger", argv[optind], 1, INT64_MAX, &id))
		return PAL_EXIT_USAGE;
	char remote[96];
	snprintf(remote, sizeof remote, "/api/v1/triggers/%lld/attempts", id);
	return run("attempts", &c, read_attempts, &id, table_attempts, remote, 0);
}

/* ---- gates ---- */

static void usage_gates(FILE *fp)
{
	fprintf(fp, "usage: palisade gates [--output table|json] [--pg CONNINFO] [--config FILE]\n"
		    "                      [--server URL [--token-file FILE]]\n"
		    "Every gate (persistent pause): scope, since, who set it and why, and its\n"
		    "source: 'operator' (`palisade pause`) or 'spec' (`suspend: true` in a job\n"
		    "file, lifted by apply when the file no longer says so).\n"
		    "Exit: 0 listed, 64 usage, 69 database unreachable.\n");
}

static void table_gates(json_t *rows)
{
	printf("%-40s %-20s %-8s %-20s  %s\n", "SCOPE", "SINCE", "SOURCE", "ACTOR", "REASON");
	size_t i;
	json_t *g;
	json_array_foreach(rows, i, g)
	printf("%-40s %-20s %-8s %-20s  %s\n", s_(g, "scope"), s_(g, "since"), s_(g, "source"),
	       s_(g, "actor"), s_(g, "reason"));
	if (!json_array_size(rows))
		printf("(no gates: nothing is paused)\n");
}

static int read_gates(pal_store *st, const void *ctx, json_t **rows, char *err, size_t errlen)
{
	return pal_store_gates_json(st, rows, err, errlen);
}

int pal_cmd_gates(int argc, char **argv)
{
	pal_cli_common c = { 0 };
	int ec = pal_cli_parse_common(argc, argv, &c, usage_gates);
	if (ec >= 0)
		return ec;
	return run("gates", &c, read_gates, NULL, table_gates, "/api/v1/gates", 0);
}

/* ---- misfires ---- */

static void usage_misfires(FILE *fp)
{
	fprintf(fp,
		"usage: palisade misfires [--job JOB] [--from RFC3339] [--to RFC3339] [--limit N]\n"
		"                         [--output table|json] [--pg CONNINFO] [--config FILE]\n"
		"                         [--server URL [--token-file FILE]]\n"
		"The ledger of non-runs: every recorded decision not to fire (missed, excluded,\n"
		"overlap, ...), one row per range, newest first; --from/--to keep the ranges\n"
		"that overlap the interval (whole seconds); at most --limit rows (default %d).\n"
		"Exit: 0 listed, 3 no such job, 64 usage, 69 database unreachable.\n",
		DEFAULT_LIMIT);
}

static void table_misfires(json_t *rows)
{
	printf("%-32s %4s %4s %-20s %-20s %7s %-10s  %s\n", "JOB", "VER", "PART", "FROM", "TO",
	       "COUNT", "POLICY", "REASON");
	size_t i;
	json_t *m;
	json_array_foreach(rows, i, m)
	{
		char part[8] = "all";
		if (json_is_integer(json_object_get(m, "partition")))
			snprintf(part, sizeof part, "%lld", i_(m, "partition"));
		char why[200];
		/* excluded by a shared calendar: "excluded (holidays v3)" */
		if (json_is_string(json_object_get(m, "calendar")))
			snprintf(why, sizeof why, "%s (%s v%lld)", s_(m, "reason"), s_(m, "calendar"),
				 i_(m, "calendar_version"));
		else
			snprintf(why, sizeof why, "%s", s_(m, "reason"));
		printf("%-32s %4lld %4s %-20s %-20s %7lld %-10s  %s\n", s_(m, "job_id"),
		       i_(m, "version"), part, s_(m, "range_from"), s_(m, "range_to"),
		       i_(m, "count"), s_(m, "policy"), why);
	}
	if (!json_array_size(rows))
		printf("(no misfires recorded)\n");
}

/* "&NAME=VALUE" URL-escaped onto Q when VALUE is set. */
static void query_arg(GString *q, const char *name, const char *value)
{
	if (!value)
		return;
	char *v = g_uri_escape_string(value, NULL, FALSE);
	g_string_append_printf(q, "&%s=%s", name, v);
	g_free(v);
}

struct misfires_args {
	const char *job;
	int64_t from, to;
	int limit;
};

static int read_misfires(pal_store *st, const void *ctx, json_t **rows, char *err, size_t errlen)
{
	const struct misfires_args *a = ctx;
	return pal_store_misfires_json(st, a->job, a->from, a->to, a->limit, rows, err, errlen);
}

int pal_cmd_misfires(int argc, char **argv)
{
	pal_cli_common c = { 0 };
	const char *job = NULL;
	int64_t from = PAL_OPS_NOW, to = PAL_OPS_NOW;
	long long limit = DEFAULT_LIMIT;
	static const struct option lo[] = { PAL_CLI_COMMON_LONGOPTS,
					    { "job", required_argument, NULL, 'j' },
					    { "from", required_argument, NULL, 'f' },
					    { "to", required_argument, NULL, 't' },
					    { "limit", required_argument, NULL, 'n' },
					    { "help", no_argument, NULL, 'h' },
					    { 0 } };
	int opt, ec;
	while ((opt = getopt_long(argc, argv, "hj:n:", lo, NULL)) != -1) {
		switch (opt) {
		case 'j':
			if (!pal_cli_name("misfires", "job", optarg))
				return PAL_EXIT_USAGE;
			job = optarg;
			break;
		case 'f':
			if (!pal_cli_time("misfires", "from", optarg, &from))
				return PAL_EXIT_USAGE;
			break;
		case 't':
			if (!pal_cli_time("misfires", "to", optarg, &to))
				return PAL_EXIT_USAGE;
			break;
		case 'n':
			if (!pal_cli_int("misfires", "limit", optarg, 1, 100000, &limit))
				return PAL_EXIT_USAGE;
			break;
		default:
			if ((ec = pal_cli_opt_other(&c, opt, optarg, usage_misfires)) >= 0)
				return ec;
		}
	}
	if (optind != argc) {
		usage_misfires(stderr);
		return PAL_EXIT_USAGE;
	}
	if (from != PAL_OPS_NOW && to != PAL_OPS_NOW && to < from) {
		pal_cli_err("misfires", "--to is before --from");
		return PAL_EXIT_USAGE;
	}
	struct misfires_args a = { job, from, to, (int)limit };
	/* the API lists one job's, newest first */
	GString *remote = g_string_new(NULL);
	g_string_printf(remote, "/api/v1/misfires?job=%s", job ? job : "");
	char at[32];
	if (from != PAL_OPS_NOW) {
		pal_fmt_rfc3339(from, at, sizeof at);
		query_arg(remote, "from", at);
	}
	if (to != PAL_OPS_NOW) {
		pal_fmt_rfc3339(to, at, sizeof at);
		query_arg(remote, "to", at);
	}
	/* through the API: its pages, up to --limit rows */
	ec =
	    run("misfires", &c, read_misfires, &a, table_misfires, job ? remote->str : NULL, limit);
	g_string_free(remote, TRUE);
	return ec;
}

/* ---- audit ---- */

static void usage_audit(FILE *fp)
{
	fprintf(fp,
		"usage: palisade audit [--since RFC3339] [--until RFC3339] [--limit N]\n"
		"                      [--actor A] [--action X] [--scope S]\n"
		"                      [--output table|json] [--pg CONNINFO]\n"
		"                      [--config FILE] [--server URL [--token-file FILE]]\n"
		"The audit log, newest first: every operator action and every automatic\n"
		"decision worth explaining, with actor, scope, reason and details (and for\n"
		"rows written through the HTTP API the token's role and the client address);\n"
		"rows at or after --since and before --until (whole seconds), of --actor,\n"
		"--action and --scope (exact), at most --limit (default %d).\n"
		"Exit: 0 listed, 64 usage, 69 database unreachable.\n"
		"\n"
		"usage: palisade audit verify [--output table|json] [--pg CONNINFO]\n"
		"                             [--config FILE]\n"
		"Recompute the audit log's hash chain and report its first broken link: a row\n"
		"edited, or rows deleted in the middle or at the start (retention's deletions\n"
		"are recorded and keep it whole).\n"
		"Exit: 0 whole, 2 broken, 64 usage, 69 database unreachable.\n",
		DEFAULT_LIMIT);
}

static int read_audit_verify(pal_store *st, const void *ctx, json_t **out, char *err, size_t errlen)
{
	return pal_store_audit_verify_json(st, out, err, errlen);
}

/* `palisade audit verify`: the chain from the database, one line or the
 * JSON object; exit 2 when a link is broken. */
static int audit_verify(int argc, char **argv)
{
	pal_cli_common c = { 0 };
	int ec = pal_cli_parse_common(argc, argv, &c, usage_audit);
	if (ec >= 0)
		return ec;
	if (pal_cli_server(&c)) {
		pal_cli_err("audit verify", "reads the database: --pg or --config, not --server");
		return PAL_EXIT_USAGE;
	}
	json_t *v = NULL;
	if ((ec = pal_cli_store_call(&c, "audit verify", read_audit_verify, NULL, &v)))
		return ec;
	const char *problem = json_string_value(json_object_get(v, "problem"));
	if (c.json)
		dump(v);
	else if (!problem)
		printf("audit chain whole: %lld rows checked (seq %lld..%lld)\n", i_(v, "checked"),
		       i_(v, "first_seq"), i_(v, "last_seq"));
	else if (!strcmp(problem, "missing"))
		printf("audit chain broken: rows seq %lld..%lld missing before id %lld (seq %lld); "
		       "%lld rows verified before\n",
		       i_(v, "missing_from"), i_(v, "missing_to"), i_(v, "id"), i_(v, "seq"),
		       i_(v, "checked"));
	else if (!strcmp(problem, "unsealed"))
		printf("audit chain broken: row id %lld has no seq or hash; %lld rows verified "
		       "before\n",
		       i_(v, "id"), i_(v, "checked"));
	else
		printf("audit chain broken: row id %lld (seq %lld) %s; %lld rows verified before\n",
		       i_(v, "id"), i_(v, "seq"), problem, i_(v, "checked"));
	json_decref(v);
	return problem ? PAL_EXIT_BROKEN : PAL_EXIT_OK;
}

static void table_audit(json_t *rows)
{
	printf("%-20s %-20s %-14s %-36s  %s\n", "AT", "ACTOR", "ACTION", "SCOPE", "REASON / DETAILS");
	size_t i;
	json_t *a;
	json_array_foreach(rows, i, a)
	{
		char *d = json_dumps(json_object_get(a, "details"), JSON_COMPACT | JSON_ENCODE_ANY);
		/* rows written through the API: the token's role and the client */
		const char *role = json_string_value(json_object_get(a, "role"));
		const char *client = json_string_value(json_object_get(a, "client"));
		printf("%-20s %-20s %-14s %-36s  %s %s", s_(a, "at"), s_(a, "actor"),
		       s_(a, "action"), s_(a, "scope"), s_(a, "reason"), d ? d : "");
		if (role || client)
			printf(" (role %s, client %s)", role ? role : "-", client ? client : "-");
		putchar('\n');
		free(d);
	}
	if (!json_array_size(rows))
		printf("(no audit rows)\n");
}

struct audit_args {
	int64_t since, until;
	const char *actor, *action, *scope;
	int limit;
};

static int read_audit(pal_store *st, const void *ctx, json_t **rows, char *err, size_t errlen)
{
	const struct audit_args *a = ctx;
	return pal_store_audit_json(st, a->since, a->until, a->actor, a->action, a->scope,
				    a->limit, rows, err, errlen);
}

int pal_cmd_audit(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "verify"))
		return audit_verify(argc - 1, argv + 1);
	pal_cli_common c = { 0 };
	struct audit_args a = { .since = PAL_OPS_NOW, .until = PAL_OPS_NOW };
	long long limit = DEFAULT_LIMIT;
	static const struct option lo[] = { PAL_CLI_COMMON_LONGOPTS,
					    { "since", required_argument, NULL, 's' },
					    { "until", required_argument, NULL, 'u' },
					    { "limit", required_argument, NULL, 'n' },
					    { "actor", required_argument, NULL, 'A' },
					    { "action", required_argument, NULL, 'C' },
					    { "scope", required_argument, NULL, 'S' },
					    { "help", no_argument, NULL, 'h' },
					    { 0 } };
	int opt, ec;
	while ((opt = getopt_long(argc, argv, "hn:", lo, NULL)) != -1) {
		switch (opt) {
		case 's':
			if (!pal_cli_time("audit", "since", optarg, &a.since))
				return PAL_EXIT_USAGE;
			break;
		case 'u':
			if (!pal_cli_time("audit", "until", optarg, &a.until))
				return PAL_EXIT_USAGE;
			break;
		case 'n':
			if (!pal_cli_int("audit", "limit", optarg, 1, 100000, &limit))
				return PAL_EXIT_USAGE;
			break;
		case 'A': a.actor = optarg; break;
		case 'C': a.action = optarg; break;
		case 'S': a.scope = optarg; break;
		default:
			if ((ec = pal_cli_opt_other(&c, opt, optarg, usage_audit)) >= 0)
				return ec;
		}
	}
	if (optind != argc) {
		usage_audit(stderr);
		return PAL_EXIT_USAGE;
	}
	a.limit = (int)limit;
	GString *remote = g_string_new(NULL);
	g_string_printf(remote, "/api/v1/audit");
	query_arg(remote, "actor", a.actor);
	query_arg(remote, "action", a.action);
	query_arg(remote, "scope", a.scope);
	if (a.since != PAL_OPS_NOW) {
		char since[32];
		pal_fmt_rfc3339(a.since, since, sizeof since);
		query_arg(remote, "since", since);
	}
	if (a.until != PAL_OPS_NOW) {
		char until[32];
		pal_fmt_rfc3339(a.until, until, sizeof until);
		query_arg(remote, "until", until);
	}
	/* through the API: its pages, up to --limit rows (the first "&" of the
	 * filters begins the query) */
	if (remote->len > strlen("/api/v1/audit"))
		remote->str[strlen("/api/v1/audit")] = '?';
	ec = run("audit", &c, read_audit, &a, table_audit, remote->str, limit);
	g_string_free(remote, TRUE);
	return ec;
}

/* ---- calendars ---- */

static void usage_calendars(FILE *fp)
{
	fprintf(fp, "usage: palisade calendars [--output table|json] [--pg CONNINFO] [--config FILE]\n"
		    "                          [--server URL [--token-file FILE]] [NAME]\n"
		    "The shared calendars (docs/jobs.md, \"Calendars\") at their latest version:\n"
		    "zone, mode, digest, who applied it, and the live jobs whose latest version\n"
		    "names the calendar with the calendar version they carry (a job on an\n"
		    "older one was not applied together with the change).  JSON adds the rules.\n"
		    "Exit: 0 listed, 3 no such calendar, 64 usage, 69 database unreachable.\n");
}

static void table_calendars(json_t *rows)
{
	printf("%-24s %4s %-20s %-12s %-14s %-20s  %s\n", "CALENDAR", "VER", "ZONE", "MODE",
	       "DIGEST", "APPLIED BY", "JOBS (calendar version)");
	size_t i, k;
	json_t *c, *j;
	json_array_foreach(rows, i, c)
	{
		json_t *rules = json_object_get(c, "rules");
		GString *jobs = g_string_new("");
		json_array_foreach(json_object_get(c, "jobs"), k, j)
		g_string_append_printf(jobs, "%s%s (v%lld)", k ? ", " : "", s_(j, "job"),
				       i_(j, "calendar_version"));
		printf("%-24s %4lld %-20s %-12s %-14.12s %-20s  %s\n", s_(c, "name"),
		       i_(c, "latest_version"), s_(rules, "timezone"), s_(rules, "mode"),
		       s_(c, "digest"), s_(c, "created_by"), jobs->len ? jobs->str : "-");
		g_string_free(jobs, TRUE);
	}
	if (!json_array_size(rows))
		printf("(no calendars)\n");
}

static int read_calendars(pal_store *st, const void *ctx, json_t **rows, char *err, size_t errlen)
{
	const char *name = ctx;
	int rc = pal_store_calendars_json(st, name, rows, err, errlen);
	if (!rc && name && !json_array_size(*rows)) {
		snprintf(err, errlen, "no calendar \"%s\"", name);
		json_decref(*rows);
		*rows = NULL;
		return PAL_ENOENT;
	}
	return rc;
}

/* Calendar NAME through the API with every page of its jobs into *OUT: CAL
 * its item of the list (borrowed; its first jobs and their cursor), or NULL
 * to read it from its first page.  The exit code. */
static int calendar_remote(const pal_cli_common *c, const char *name, json_t *cal, json_t **out)
{
	char *n = g_uri_escape_string(name, NULL, FALSE);
	char *path = g_strdup_printf("/api/v1/calendars/%s", n);
	int ec = pal_cli_remote_whole(c, "calendars", path, "jobs", "jobs_next_cursor", cal, out);
	g_free(path);
	g_free(n);
	return ec;
}

/* `calendars [NAME]` through the API (--server): every page of the
 * calendars, each with every page of its jobs, printed as on the database. */
static int calendars_remote(const pal_cli_common *c, const char *name)
{
	json_t *rows, *cal;
	int ec;
	if (name) {
		if ((ec = calendar_remote(c, name, NULL, &cal)))
			return ec;
		rows = json_array();
		json_array_append_new(rows, cal);
	} else {
		if ((ec = pal_cli_remote_items(c, "calendars", "/api/v1/calendars", &rows)))
			return ec;
		size_t i;
		json_t *item;
		json_array_foreach(rows, i, item)
		{
			const char *nm = json_string_value(json_object_get(item, "name"));
			if ((ec = calendar_remote(c, nm ? nm : "", item, &cal))) {
				json_decref(rows);
				return ec;
			}
			json_array_set_new(rows, i, cal);
		}
	}
	if (c->json)
		dump(rows);
	else
		table_calendars(rows);
	json_decref(rows);
	return PAL_EXIT_OK;
}

int pal_cmd_calendars(int argc, char **argv)
{
	pal_cli_common c = { 0 };
	int ec = pal_cli_parse_args(argc, argv, &c, usage_calendars, 0, 1);
	if (ec >= 0)
		return ec;
	const char *name = argc > optind ? argv[optind] : NULL;
	if (name && !pal_cli_name("calendars", "calendar", name))
		return PAL_EXIT_USAGE;
	if (pal_cli_server(&c))
		return calendars_remote(&c, name);
	return run("calendars", &c, read_calendars, name, table_calendars, NULL, 0);
}

/* ---- notify-rules ---- */

static void usage_notify_rules(FILE *fp)
{
	fprintf(fp,
		"usage: palisade notify-rules [--output table|json] [--pg CONNINFO]\n"
		"                             [--config FILE] [--server URL [--token-file FILE]]\n"
		"The stored notify rules (docs/jobs.md, \"Notify rules\"), groups' first, by\n"
		"name and url: scope, name, events, the secret's ${NAME} reference (never its\n"
		"value), who applied the rule last and when, url.  Through --server a token\n"
		"limited to tenants sees its tenants' rules, and a group's only when the group\n"
		"has jobs and every one of them is of its tenants.\n"
		"Exit: 0 listed, 64 usage, 69 database unreachable.\n");
}

/* The strings of array A comma-separated into BUF ("-" for none; cut at
 * LEN: a rule's events are a few short names). */
static const char *joined(json_t *a, char *buf, size_t len)
{
	size_t n = 0;
	snprintf(buf, len, "-");
	for (size_t k = 0; k < json_array_size(a) && n < len; k++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", k ? "," : "",
				      json_string_value(json_array_get(a, k)));
	return buf;
}

static void table_notify_rules(json_t *rows)
{
	printf("%-7s %-24s %-28s %-24s %-20s %-20s  %s\n", "SCOPE", "NAME", "EVENTS", "SECRET",
	       "UPDATED BY", "UPDATED AT", "URL");
	char ev[160];
	for (size_t i = 0; i < json_array_size(rows); i++) {
		json_t *r = json_array_get(rows, i);
		printf("%-7s %-24s %-28s %-24s %-20s %-20s  %s\n", s_(r, "scope"), s_(r, "name"),
		       joined(json_object_get(r, "events"), ev, sizeof ev), s_(r, "secret"),
		       s_(r, "updated_by"), s_(r, "updated_at"), s_(r, "url"));
	}
	if (!json_array_size(rows))
		printf("(no notify rules)\n");
}

static int read_notify_rules(pal_store *st, const void *ctx, json_t **rows, char *err,
			     size_t errlen)
{
	return pal_store_notify_rules_json(st, rows, err, errlen);
}

int pal_cmd_notify_rules(int argc, char **argv)
{
	pal_cli_common c = { 0 };
	int ec = pal_cli_parse_common(argc, argv, &c, usage_notify_rules);
	if (ec >= 0)
		return ec;
	return run("notify-rules", &c, read_notify_rules, NULL, table_notify_rules,
		   "/api/v1/notify_rules", 0);
}
