/*
 * cmd_trigger.c - `palisade trigger` (run a job now or at an instant, as a
 * manual run with its own request id) and `palisade backfill` (every instant
 * of a past range, one request id for the whole backfill).  The SQL is in
 * src/store/manual.c and src/store/backfill.c; docs/operations.md describes both.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/cli.h"
#include "palisade/err.h"
#include "palisade/ops.h"
#include "palisade/lifecycle.h"
#include "palisade/timefmt.h"
#include "cli_int.h"

#define DEFAULT_MAX 1000

static void usage_trigger(FILE *fp)
{
	fprintf(fp,
		"usage: palisade trigger --job JOB [--at RFC3339] [--request-id ID] [--new-effect]\n"
		"                        --reason TEXT [--output table|json] [--pg CONNINFO]\n"
		"                        [--config FILE]\n"
		"                        [--server URL [--token-file FILE]]\n"
		"Plan a manual run of JOB: one trigger per partition of its active version\n"
		"(else its latest), source 'manual', scheduled and due at --at or now (the\n"
		"database clock).  Its idempotency key is the job's key template followed by\n"
		"'/' and the request id (unless the template uses {request_id}): a new id\n"
		"is a new, deliberate effect even at an instant that already ran; repeating\n"
		"an id creates nothing (\"already exists\").\n"
		"Without --request-id a random UUID is used.  Written to audit_log.\n"
		"--at is whole seconds (a fraction is refused, not cut off).  When a trigger\n"
		"of JOB at that instant already had an attempt whose outcome is unknown (a\n"
		"request sent and not answered; trigger state unknown or manual), the effect\n"
		"may have happened: a re-run with a new key could make it twice.  Then the\n"
		"command names those triggers and refuses unless --new-effect says that a\n"
		"second effect is what you want (resolve the ticket instead: `palisade\n"
		"tickets`, action retry keeps the key).  A retired job is refused, and so,\n"
		"without --new-effect, is an --at still to come that the job's schedule has\n"
		"(the scheduler runs it under its own key: a manual run is a second effect);\n"
		"for a job with after: its first upstream's instants, and also a past one the\n"
		"dependency planner has not decided yet (it runs the job there once the\n"
		"upstream ends).\n"
		"A paused job's run (its own, group's, tenant's or a global pause) waits for\n"
		"the resume: a note on stderr names each pause (held_by in JSON).\n"
		"Exit: 0 created or already existing, 3 no such job, 4 refused (unknown\n"
		"outcome or a scheduled instant to come without --new-effect, or the job is\n"
		"retired), 64 usage,\n"
		"65 request id already used differently, 69 database unreachable.\n");
}

static void usage_backfill(FILE *fp)
{
	fprintf(fp,
		"usage: palisade backfill --job JOB --from RFC3339 --to RFC3339 [--max N]\n"
		"                         [--request-id ID] [--new-effect] --reason TEXT\n"
		"                         [--output table|json] [--pg CONNINFO] [--config FILE]\n"
		"                         [--server URL [--token-file FILE]]\n"
		"Plan every instant of JOB in [from, to] (inclusive) as computed from its stored\n"
		"versions (each for its effective range; a version with after: has its first\n"
		"upstream's instants, whatever their outcome), times its partitions, as source\n"
		"'backfill' under one request id (given, else a random UUID).  Rows that exist\n"
		"already for that request id are kept (ON CONFLICT DO NOTHING), so repeating a\n"
		"backfill with its request id creates nothing new.  Its keys end in '/' and the\n"
		"request id as a manual run's do, so instants that already ran run again.\n"
		"Refuses ranges of more than --max instants (default %d), a --to after the\n"
		"database clock (the scheduler runs those instants), a retired job, and, as\n"
		"`trigger --at` does, a range with an instant whose earlier trigger has an\n"
		"unknown outcome (the effect may have happened; a new key could make it twice)\n"
		"or that is before the retention horizon (its triggers may be gone), and a\n"
		"request id whose earlier backfill's triggers retention dropped (kept for\n"
		"retention.request_ids): the message names them, nothing is written, unless\n"
		"--new-effect says a second effect is wanted.  Written to audit_log.\n"
		"Exit: 0 done, 3 no such job, 4 refused (unknown outcome, retention horizon or\n"
		"dropped backfill without --new-effect, or the job is retired), 64 usage, 65\n"
		"over --max, --to in the future, or request id already used by a manual run,\n"
		"69 database unreachable.\n",
		DEFAULT_MAX);
}

/* The given request id, or a new UUID into BUF.  NULL when none can be made. */
static const char *request_id(const char *cmd, const char *given, char buf[37])
{
	if (given)
		return given;
	if (pal_ops_uuid4(buf)) {
		pal_cli_err(cmd, "cannot read /dev/urandom for a request id; hint: pass --request-id");
		return NULL;
	}
	return buf;
}

/* The note on stderr that the run of JOB waits for the resume of the
 * pauses HELD ([{scope since reason}]) covering it; none when empty. */
static void note_held(const char *job, const json_t *held)
{
	size_t i;
	json_t *g;
	json_array_foreach(held, i, g)
	fprintf(stderr,
		"palisade trigger: note: job %s is held by %s (paused since %s: %s): the run "
		"waits for the resume (`palisade resume`), and fails if the job's deadline "
		"passes first\n",
		job, json_string_value(json_object_get(g, "scope")),
		json_string_value(json_object_get(g, "since")),
		json_string_value(json_object_get(g, "reason")));
}

/*
 * Before a manual run of JOB at AT: refuse a retired job, and a re-run of an
 * instant whose effect may already have happened (an attempt with an
 * unknown outcome) unless NEW_EFFECT; the triggers of the same request id
 * do not count (repeating it creates nothing).  0 to go on, else the exit
 * code (message printed).
 */
static int check_rerun(pal_store *st, const char *job, int64_t at, const char *rid,
		       bool new_effect)
{
	char err[1024];
	bool retired;
	int rc = pal_store_job_retired(st, job, &retired, err, sizeof err);
	if (rc) {
		pal_cli_err("trigger", "%s", err);
		return pal_cli_exit_code(rc);
	}
	if (retired) {
		pal_cli_err("trigger",
			    "job %s is retired (`palisade jobs --retired`); apply it again to run it",
			    job);
		return PAL_EXIT_REFUSED;
	}
	if (at == PAL_OPS_NOW)
		return 0; /* a fresh instant: nothing ran at it */
	json_t *unk = NULL;
	if ((rc = pal_store_unknown_at(st, job, at, &unk, err, sizeof err))) {
		pal_cli_err("trigger", "%s", err);
		return pal_cli_exit_code(rc);
	}
	size_t i, n = 0;
	json_t *t;
	json_array_foreach(unk, i, t)
	{
		const char *r = json_string_value(json_object_get(t, "request_id"));
		if (r && !strcmp(r, rid))
			continue;
		if (!n++) {
			char ts[32];
			pal_fmt_rfc3339(at, ts, sizeof ts);
			fprintf(stderr,
				"palisade trigger: warning: job %s at %s already had an attempt whose "
				"outcome is unknown: the effect may have happened, and a run with a new "
				"key could make it a second time:\n",
				job, ts);
		}
		bool flag = json_is_true(json_object_get(t, "outcome_unknown"));
		fprintf(stderr, "  trigger %lld (%s, state %s%s):",
			(long long)json_integer_value(json_object_get(t, "trigger_id")),
			json_string_value(json_object_get(t, "source")),
			json_string_value(json_object_get(t, "state")), flag ? ", outcome unknown" : "");
		size_t k;
		json_t *a;
		json_array_foreach(json_object_get(t, "attempts"), k, a)
		{
			const char *o = json_string_value(json_object_get(a, "outcome"));
			const char *e = json_string_value(json_object_get(a, "error_class"));
			fprintf(stderr, " [fence %lld %s%s%s]",
				(long long)json_integer_value(json_object_get(a, "fence")),
				o ? o : "open", e ? " " : "", e ? e : "");
		}
		fputc('\n', stderr);
	}
	json_decref(unk);
	if (n && !new_effect) {
		fprintf(stderr, "palisade trigger: refused; hint: resolve its ticket (`palisade "
				"tickets`: retry keeps the key, mark_succeeded if it happened), or pass "
				"--new-effect to run it again with a new key anyway\n");
		return PAL_EXIT_REFUSED;
	}
	if (n)
		fprintf(stderr, "palisade trigger: --new-effect given: running it again\n");
	return 0;
}

int pal_cmd_trigger(int argc, char **argv)
{
	pal_cli_common c = { 0 };
	const char *job = NULL, *reason = NULL, *rid = NULL;
	int64_t at = PAL_OPS_NOW;
	bool new_effect = false;
	static const struct option lo[] = { PAL_CLI_COMMON_LONGOPTS,
					    { "job", required_argument, NULL, 'j' },
					    { "at", required_argument, NULL, 'A' },
					    { "new-effect", no_argument, NULL, 'E' },
					    { "request-id", required_argument, NULL, 'R' },
					    { "reason", required_argument, NULL, 'r' },
					    { "help", no_argument, NULL, 'h' },
					    { 0 } };
	int opt, ec;
	while ((opt = getopt_long(argc, argv, "hj:r:", lo, NULL)) != -1) {
		switch (opt) {
		case 'j':
			if (!pal_cli_name("trigger", "job", optarg))
				return PAL_EXIT_USAGE;
			job = optarg;
			break;
		case 'A':
			if (!pal_cli_time("trigger", "at", optarg, &at))
				return PAL_EXIT_USAGE;
			break;
		case 'R':
			rid = optarg;
			break;
		case 'E':
			new_effect = true;
			break;
		case 'r':
			reason = optarg;
			break;
		default:
			if ((ec = pal_cli_opt_other(&c, opt, optarg, usage_trigger)) >= 0)
				return ec;
		}
	}
	if (optind != argc || !job) {
		if (!job)
			pal_cli_err("trigger", "--job is required");
		usage_trigger(stderr);
		return PAL_EXIT_USAGE;
	}
	if (!reason || !*reason) {
		pal_cli_err("trigger", "--reason is required: say why, it is kept in the audit log");
		return PAL_EXIT_USAGE;
	}
	if (rid && !pal_ops_request_id_ok(rid)) {
		pal_cli_err("trigger",
			    "--request-id \"%s\": expected 1-128 characters of A-Z a-z 0-9 . _ : -", rid);
		return PAL_EXIT_USAGE;
	}
	char uuid[37];
	if (!(rid = request_id("trigger", rid, uuid)))
		return PAL_EXIT_SOFTWARE;
	if (pal_cli_server(&c)) {
		char path[256], ts[32] = "";
		snprintf(path, sizeof path, "/api/v1/jobs/%s/trigger", job);
		if (at != PAL_OPS_NOW)
			pal_fmt_rfc3339(at, ts, sizeof ts);
		json_t *ans = NULL;
		ec = pal_cli_remote_send(&c, "trigger", "POST", path,
					 json_pack("{s:s, s:s, s:b, s:s?}", "reason", reason,
						   "request_id", rid, "new_effect", new_effect,
						   "at", ts[0] ? ts : NULL),
					 &ans);
		if (!ec) {
			note_held(job, json_object_get(ans, "held_by"));
			pal_cli_print_answer(&c, ans);
		}
		json_decref(ans);
		return ec;
	}
	pal_store *st;
	ec = pal_cli_connect(&c, false, &st);
	if (ec)
		return ec;
	char err[1024];
	if ((ec = check_rerun(st, job, at, rid, new_effect))) {
		pal_store_close(st);
		return ec;
	}
	pal_run_result r;
	int rc = pal_ops_trigger(st, job, at, rid, new_effect, pal_cli_actor(), reason, &r, err,
				 sizeof err);
	/* the pauses that hold it (the run is written: a failed read only
	 * leaves the note out) */
	json_t *held = NULL;
	if (!rc && pal_store_job_held_json(st, r.ids, &held, err, sizeof err))
		held = NULL;
	pal_store_close(st);
	if (rc) {
		pal_cli_err("trigger", "%s", err);
		pal_run_result_clear(&r);
		return pal_cli_exit_code(rc);
	}
	note_held(job, held);
	char ts[32];
	pal_fmt_rfc3339(r.at, ts, sizeof ts);
	if (c.json) {
		json_t *o = json_pack("{s:s, s:s, s:i, s:s, s:b, s:O, s:O*}", "job_id", job,
				      "request_id", rid, "version", r.version, "scheduled_at", ts,
				      "existed", r.existed, "triggers", r.ids, "held_by", held);
		json_dumpf(o, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(o);
	} else {
		if (r.existed)
			printf("request %s of job %s already exists (v%d at %s); nothing created; "
			       "triggers:",
			       rid, job, r.version, ts);
		else
			printf("triggered job %s v%d at %s, request %s; triggers:", job, r.version, ts,
			       rid);
		size_t i;
		json_t *id;
		json_array_foreach(r.ids, i, id)
		printf(" %lld", (long long)json_integer_value(id));
		putchar('\n');
	}
	pal_run_result_clear(&r);
	json_decref(held);
	return PAL_EXIT_OK;
}

struct backfill_args {
	const char *job;
	int64_t from, to, max;
	const char *rid;
	bool new_effect;
	const char *reason;
	pal_backfill_result *r;
};

static int backfill_call(pal_store *st, const void *ctx, json_t **out, char *err, size_t errlen)
{
	const struct backfill_args *a = ctx;
	return pal_ops_backfill(st, a->job, a->from, a->to, a->max, a->rid, a->new_effect,
				pal_cli_actor(), a->reason, a->r, err, errlen);
}

int pal_cmd_backfill(int argc, char **argv)
{
	pal_cli_common c = { 0 };
	const char *job = NULL, *reason = NULL, *rid = NULL;
	int64_t from = 0, to = 0, max = DEFAULT_MAX;
	bool have_from = false, have_to = false, new_effect = false;
	static const struct option lo[] = { PAL_CLI_COMMON_LONGOPTS,
					    { "job", required_argument, NULL, 'j' },
					    { "from", required_argument, NULL, 'f' },
					    { "to", required_argument, NULL, 't' },
					    { "max", required_argument, NULL, 'M' },
					    { "new-effect", no_argument, NULL, 'E' },
					    { "request-id", required_argument, NULL, 'R' },
					    { "reason", required_argument, NULL, 'r' },
					    { "help", no_argument, NULL, 'h' },
					    { 0 } };
	int opt, ec;
	while ((opt = getopt_long(argc, argv, "hj:f:t:r:", lo, NULL)) != -1) {
		switch (opt) {
		case 'j':
			if (!pal_cli_name("backfill", "job", optarg))
				return PAL_EXIT_USAGE;
			job = optarg;
			break;
		case 'f':
			if (!pal_cli_time("backfill", "from", optarg, &from))
				return PAL_EXIT_USAGE;
			have_from = true;
			break;
		case 't':
			if (!pal_cli_time("backfill", "to", optarg, &to))
				return PAL_EXIT_USAGE;
			have_to = true;
			break;
		case 'M': {
			long long v;
			if (!pal_cli_int("backfill", "max", optarg, 1, 10000000, &v))
				return PAL_EXIT_USAGE;
			max = v;
			break;
		}
		case 'R':
			rid = optarg;
			break;
		case 'E':
			new_effect = true;
			break;
		case 'r':
			reason = optarg;
			break;
		default:
			if ((ec = pal_cli_opt_other(&c, opt, optarg, usage_backfill)) >= 0)
				return ec;
		}
	}
	if (optind != argc || !job || !have_from || !have_to) {
		pal_cli_err("backfill", "--job, --from and --to are required");
		usage_backfill(stderr);
		return PAL_EXIT_USAGE;
	}
	if (to < from) {
		pal_cli_err("backfill", "--to is before --from");
		return PAL_EXIT_USAGE;
	}
	if (!reason || !*reason) {
		pal_cli_err("backfill", "--reason is required: say why, it is kept in the audit log");
		return PAL_EXIT_USAGE;
	}
	if (rid && !pal_ops_request_id_ok(rid)) {
		pal_cli_err("backfill",
			    "--request-id \"%s\": expected 1-128 characters of A-Z a-z 0-9 . _ : -", rid);
		return PAL_EXIT_USAGE;
	}
	char uuid[37];
	if (!(rid = request_id("backfill", rid, uuid)))
		return PAL_EXIT_SOFTWARE;
	if (pal_cli_server(&c)) {
		char path[256], f[32], t[32];
		snprintf(path, sizeof path, "/api/v1/jobs/%s/backfill", job);
		pal_fmt_rfc3339(from, f, sizeof f);
		pal_fmt_rfc3339(to, t, sizeof t);
		return pal_cli_remote_json(&c, "backfill", path,
					   json_pack("{s:s, s:s, s:s, s:I, s:s, s:b}", "reason", reason,
						     "from", f, "to", t, "max", (json_int_t)max,
						     "request_id", rid, "new_effect", new_effect));
	}
	pal_backfill_result r;
	struct backfill_args ba = {job, from, to, max, rid, new_effect, reason, &r};
	if ((ec = pal_cli_store_call(&c, "backfill", backfill_call, &ba, NULL)))
		return ec;
	if (r.unknown)
		fprintf(stderr,
			"palisade backfill: warning: --new-effect given: %lld instant(s) whose earlier "
			"outcome is unknown run again with a new key\n",
			(long long)r.unknown);
	char f[32], t[32];
	pal_fmt_rfc3339(from, f, sizeof f);
	pal_fmt_rfc3339(to, t, sizeof t);
	if (c.json) {
		json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I}", "job_id", job,
				      "request_id", rid, "from", f, "to", t, "instants",
				      (json_int_t)r.instants, "excluded", (json_int_t)r.excluded,
				      "rows", (json_int_t)r.rows, "inserted", (json_int_t)r.inserted,
				      "new_effect_instants", (json_int_t)r.unknown);
		json_dumpf(o, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(o);
		return PAL_EXIT_OK;
	}
	printf("backfill job %s [%s, %s], request %s: %lld instants, %lld triggers created", job, f,
	       t, rid, (long long)r.instants, (long long)r.inserted);
	if (r.rows > r.inserted)
		printf(", %lld already existed", (long long)(r.rows - r.inserted));
	if (r.excluded)
		printf(", %lld instants on excluded dates skipped", (long long)r.excluded);
	putchar('\n');
	return PAL_EXIT_OK;
}
