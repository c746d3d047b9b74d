/*
 * cmd_lifecycle.c - `palisade delete JOB...`: retire jobs (their history
 * stays; see include/palisade/lifecycle.h and docs/operations.md), and the
 * settling step it shares with `apply --prune`.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/cli.h"
#include "palisade/clock.h"
#include "palisade/err.h"
#include "palisade/lifecycle.h"
#include "palisade/timefmt.h"
#include "cli_int.h"
#include <glib.h>

#define DEFAULT_WAIT_MS 10000

static void usage(FILE *fp)
{
	fprintf(fp,
		"usage: palisade delete [--dry-run] [--wait SECONDS] --reason TEXT\n"
		"                       [--output table|json] [--pg CONNINFO] [--config FILE]\n"
		"                       [--server URL [--token-file FILE]] JOB...\n"
		"Retire each JOB: a last version (its latest spec, the schedule ending now) so\n"
		"that nothing is planned after now; its pending, retry_wait and paused\n"
		"triggers are cancelled (audit_log: one 'cancel' row with their ids, and a\n"
		"'job.retire' row).  Running triggers finish on their own (`palisade cancel\n"
		"--job` stops them).  Versions, triggers, attempts, misfires and audit rows\n"
		"stay; `palisade jobs --retired` lists retired jobs.  Applying the job again\n"
		"later makes a new version (n+2) and the job lives again from that apply\n"
		"(the retired period is not caught up; every instant after the apply runs).\n"
		"After the commit it waits up to --wait seconds (default %d) for the\n"
		"controllers planning the jobs' shards to take the last version in (no wait\n"
		"where no controller plans) and cancels what they planned meanwhile.\n"
		"--dry-run shows what would be retired and stores nothing.  All jobs go in\n"
		"one transaction\n"
		"(through --server: one DELETE /api/v1/jobs/JOB each, after a check that\n"
		"every JOB exists).\n"
		"Exit: 0 retired (or already retired), 3 a JOB does not exist (nothing\n"
		"retired), 64 usage, 69 database unreachable.\n",
		DEFAULT_WAIT_MS / 1000);
}

int pal__cli_retire_settle(const char *cmd, pal_store *st, const char *const *ids, size_t n,
			   const char *reason, int64_t wait_ms, int64_t *late_cancelled)
{
	char err[1024];
	int64_t pending = 0, waited = 0;
	*late_cancelled = 0;
	for (;;) {
		if (pal_store_retire_pending(st, ids, n, &pending, err, sizeof err)) {
			pal_cli_err(cmd, "%s", err);
			return PAL_EXIT_UNAVAIL;
		}
		if (!pending || waited >= wait_ms)
			break;
		pal_sleep_ms(200);
		waited += 200;
	}
	if (pal_store_retire_sweep(st, ids, n, pal_cli_actor(), reason, late_cancelled, err,
				   sizeof err)) {
		pal_cli_err(cmd, "%s", err);
		return PAL_EXIT_UNAVAIL;
	}
	if (pending)
		fprintf(stderr,
			"palisade %s: note: %lld retiring version%s not taken in by its controller "
			"within the wait; `palisade delete` again cancels what the old plan left\n",
			cmd, (long long)pending, pending == 1 ? "" : "s");
	return PAL_EXIT_OK;
}

static int delete_jobs(const pal_cli_common *cc, const char *const *ids, size_t n,
		       const char *reason, bool dry, int64_t wait_ms);

int pal_cmd_delete(int argc, char **argv)
{
	pal_cli_common c = { 0 };
	const char *reason = NULL;
	bool dry = false;
	int64_t wait_ms = DEFAULT_WAIT_MS;
	static const struct option lo[] = { PAL_CLI_COMMON_LONGOPTS,
					    { "reason", required_argument, NULL, 'r' },
					    { "dry-run", no_argument, NULL, 'n' },
					    { "wait", required_argument, NULL, 'w' },
					    { "help", no_argument, NULL, 'h' },
					    { 0 } };
	int opt, ec;
	while ((opt = getopt_long(argc, argv, "hr:n", lo, NULL)) != -1) {
		switch (opt) {
		case 'r':
			reason = optarg;
			break;
		case 'n':
			dry = true;
			break;
		case 'w': {
			long long v;
			if (!pal_cli_int("delete", "wait", optarg, 0, 3600, &v))
				return PAL_EXIT_USAGE;
			wait_ms = v * 1000;
			break;
		}
		default:
			if ((ec = pal_cli_opt_other(&c, opt, optarg, usage)) >= 0)
				return ec;
		}
	}
	if (optind >= argc) {
		pal_cli_err("delete", "name at least one JOB");
		usage(stderr);
		return PAL_EXIT_USAGE;
	}
	if (!dry && (!reason || !*reason)) {
		pal_cli_err("delete", "--reason is required: say why, it is kept in the audit log");
		return PAL_EXIT_USAGE;
	}
	for (int i = optind; i < argc; i++)
		if (!pal_cli_name("delete", "job", argv[i]))
			return PAL_EXIT_USAGE;
	/* each job once, in the order given */
	const char **uniq = calloc((size_t)(argc - optind), sizeof *uniq);
	GHashTable *seen = g_hash_table_new(g_str_hash, g_str_equal);
	size_t n = 0;
	for (int i = optind; uniq && i < argc; i++)
		if (g_hash_table_add(seen, argv[i]))
			uniq[n++] = argv[i];
	g_hash_table_destroy(seen);
	if (!uniq)
		return PAL_EXIT_SOFTWARE;
	const char *const *ids = uniq;
	int ret = delete_jobs(&c, ids, n, reason, dry, wait_ms);
	free(uniq);
	return ret;
}

/* What delete prints for RES[0..n) of IDS (the table, or JSON with
 * --output json); LATE: triggers cancelled after the commit. */
static void report(const pal_cli_common *cc, const char *const *ids, size_t n,
		   const pal_retire_result *res, bool dry, int64_t late)
{
	const pal_cli_common c = *cc;
	static const char *const word[] = {"retired", "already retired", "missing"};
	json_t *out = json_array();
	for (size_t i = 0; i < n; i++) {
		char end[32] = "";
		if (res[i].outcome == PAL_RETIRE_RETIRED && !dry)
			pal_fmt_rfc3339(res[i].end, end, sizeof end);
		if (c.json) {
			json_t *o = json_pack("{s:s, s:s, s:b}", "job_id", ids[i], "outcome",
					      dry && res[i].outcome == PAL_RETIRE_RETIRED
						  ? "would retire"
						  : word[res[i].outcome],
					      "dry_run", dry);
			if (!dry && res[i].outcome == PAL_RETIRE_RETIRED) {
				json_object_set_new(o, "version", json_integer(res[i].version));
				json_object_set_new(o, "end", json_string(end));
				json_object_set_new(o, "cancelled", json_integer(res[i].cancelled));
			}
			json_array_append_new(out, o);
		} else if (dry) {
			printf("%s %s\n",
			       res[i].outcome == PAL_RETIRE_RETIRED ? "would retire"
								    : "already retired",
			       ids[i]);
		} else if (res[i].outcome == PAL_RETIRE_RETIRED) {
			printf(
			    "retired %s v%d: nothing planned from %s; %lld pending %s cancelled\n",
			    ids[i], res[i].version, end, (long long)res[i].cancelled,
			    res[i].cancelled == 1 ? "trigger" : "triggers");
		} else {
			printf("already retired %s (v%d)\n", ids[i], res[i].version);
		}
	}
	if (c.json) {
		json_t *o = json_pack("{s:o, s:I}", "jobs", out, "cancelled_after_commit",
				      (json_int_t)late);
		json_dumpf(o, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(o);
	} else {
		json_decref(out);
		if (late)
			printf(
			    "%lld more %s planned before the last version took over: cancelled\n",
			    (long long)late, late == 1 ? "trigger" : "triggers");
	}
}

/* DELETE /api/v1/jobs/ID with REASON: RES (NULL: a repeated DELETE,
 * whose answer is "already retired") from the answer, its late_cancelled
 * added to *LATE, *SETTLING whether a controller had still to take the
 * retiring version in; the exit code (the error printed). */
static int delete_one(const pal_cli_common *c, const char *id, const char *reason,
		      pal_retire_result *res, int64_t *late, bool *settling)
{
	char path[300];
	snprintf(path, sizeof path, "/api/v1/jobs/%s", id);
	json_t *o;
	int ec = pal_cli_remote_send(c, "delete", "DELETE", path,
				     json_pack("{s:s}", "reason", reason), &o);
	if (ec)
		return ec;
	const char *outcome = json_string_value(json_object_get(o, "outcome"));
	if (res) {
		res->outcome = outcome && !strcmp(outcome, "retired") ? PAL_RETIRE_RETIRED
								      : PAL_RETIRE_ALREADY;
		res->version = (int)json_integer_value(json_object_get(o, "version"));
		res->cancelled = json_integer_value(json_object_get(o, "cancelled"));
		const char *end = json_string_value(json_object_get(o, "end"));
		if (!end || pal_parse_rfc3339(end, &res->end))
			res->end = 0;
	}
	*late += json_integer_value(json_object_get(o, "late_cancelled"));
	*settling = json_is_true(json_object_get(o, "settling"));
	json_decref(o);
	return PAL_EXIT_OK;
}

/*
 * `delete --server`: the API instead of the database.  A GET of each job
 * first, so that a missing one is found before anything is retired (exit 3,
 * as the direct path), and it is all --dry-run asks; then one DELETE per job
 * (one transaction each, not one for all: a job the API refuses after others
 * were retired leaves those retired).  The API does not wait for the
 * controllers: a job whose answer says "settling" is deleted again every
 * 200 ms until it has settled or --wait is over, each DELETE sweeping what
 * the old plan left, as the direct path's wait does.  Same output and exit
 * codes as the direct path.
 */
static int delete_remote(const pal_cli_common *c, const char *const *ids, size_t n,
			 const char *reason, bool dry, int64_t wait_ms)
{
	pal_retire_result *res = calloc(n, sizeof *res);
	bool *settling = calloc(n, sizeof *settling);
	int ec = res && settling ? PAL_EXIT_OK : PAL_EXIT_SOFTWARE;
	size_t missing = 0;
	for (size_t i = 0; !ec && i < n; i++) {
		char path[300];
		snprintf(path, sizeof path, "/api/v1/jobs/%s", ids[i]);
		json_t *j;
		ec = pal_cli_remote_get(c, "delete", path, &j);
		if (ec == PAL_EXIT_NOTFOUND) {
			missing++;
			ec = PAL_EXIT_OK;
			continue;
		}
		if (!ec)
			res[i].outcome = json_is_string(json_object_get(j, "retired_at"))
					     ? PAL_RETIRE_ALREADY
					     : PAL_RETIRE_RETIRED;
		json_decref(j);
	}
	if (!ec && missing) {
		if (!dry)
			pal_cli_err("delete", "nothing retired");
		ec = PAL_EXIT_NOTFOUND;
	}
	int64_t late = 0, waited = 0;
	for (size_t i = 0; !ec && !dry && i < n; i++)
		ec = delete_one(c, ids[i], reason, &res[i], &late, &settling[i]);
	size_t pending = 0;
	while (!ec && !dry) {
		pending = 0;
		for (size_t i = 0; i < n; i++)
			pending += settling[i];
		if (!pending || waited >= wait_ms)
			break;
		pal_sleep_ms(200);
		waited += 200;
		for (size_t i = 0; !ec && i < n; i++)
			if (settling[i])
				ec = delete_one(c, ids[i], reason, NULL, &late, &settling[i]);
	}
	if (!ec && pending)
		fprintf(
		    stderr,
		    "palisade delete: note: %zu retiring version%s not taken in by its controller "
		    "within the wait; `palisade delete` again cancels what the old plan left\n",
		    pending, pending == 1 ? "" : "s");
	if (!ec)
		report(c, ids, n, res, dry, late);
	free(settling);
	free(res);
	return ec;
}

static int delete_jobs(const pal_cli_common *cc, const char *const *ids, size_t n,
		       const char *reason, bool dry, int64_t wait_ms)
{
	if (pal_cli_server(cc))
		return delete_remote(cc, ids, n, reason, dry, wait_ms);
	pal_cli_common c = *cc;
	int ec;
	pal_store *st;
	if ((ec = pal_cli_connect(&c, false, &st)))
		return ec;
	char err[1024];
	pal_retire_result *res = calloc(n, sizeof *res);
	if (!res) {
		pal_store_close(st);
		return PAL_EXIT_SOFTWARE;
	}
	int rc;
	if (dry) {
		/* What would go: existence and state only, nothing written. */
		json_t *meta = NULL;
		rc = pal_store_job_meta_json(st, NULL, &meta, err, sizeof err);
		for (size_t i = 0; !rc && i < n; i++) {
			json_t *m = json_object_get(meta, ids[i]);
			res[i].outcome = !m ? PAL_RETIRE_NOT_FOUND
				       : json_is_string(json_object_get(m, "retired_at"))
					       ? PAL_RETIRE_ALREADY
					       : PAL_RETIRE_RETIRED;
		}
		json_decref(meta);
	} else {
		pal_apply *a;
		rc = pal_store_apply_begin(st, pal_cli_actor(), reason, pal__cli_config_shards(&c), &a,
					   err, sizeof err);
		if (!rc) {
			rc = pal_store_apply_retire(a, ids, n, res, err, sizeof err);
			bool missing = false;
			for (size_t i = 0; !rc && i < n; i++)
				missing |= res[i].outcome == PAL_RETIRE_NOT_FOUND;
			if (rc || missing) {
				pal_store_apply_abort(a);
			} else {
				rc = pal_store_apply_commit(a, err, sizeof err);
			}
		}
	}
	if (rc) {
		pal_cli_err("delete", "%s; nothing retired", err);
		free(res);
		pal_store_close(st);
		return pal_cli_exit_code(rc);
	}
	size_t missing = 0;
	for (size_t i = 0; i < n; i++)
		if (res[i].outcome == PAL_RETIRE_NOT_FOUND) {
			pal_cli_err("delete", "no job \"%s\"; hint: `palisade jobs` lists the jobs",
				    ids[i]);
			missing++;
		}
	if (missing) {
		if (!dry)
			pal_cli_err("delete", "nothing retired");
		free(res);
		pal_store_close(st);
		return PAL_EXIT_NOTFOUND;
	}
	int64_t late = 0;
	if (!dry && (ec = pal__cli_retire_settle("delete", st, ids, n, reason, wait_ms, &late))) {
		free(res);
		pal_store_close(st);
		return ec;
	}
	pal_store_close(st);
	report(&c, ids, n, res, dry, late);
	free(res);
	return PAL_EXIT_OK;
}
