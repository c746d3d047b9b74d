/*
 * cmd_shadow.c - `palisade shadow diff`: the old system's record of what it
 * fired against palisade's plan of the same jobs (src/plan/shadowdiff.c,
 * docs/migrating.md).  Exit 0 when they agree, 2 when not.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <glib.h>
#include "palisade/cli.h"
#include "palisade/name.h"
#include "palisade/ops.h"
#include "palisade/report.h"
#include "palisade/schedule.h"
#include "palisade/shadowdiff.h"
#include "palisade/timefmt.h"
#include "cli_int.h"

#define DEFAULT_LIMIT 1000
#define MAX_INSTANTS 1000000 /* of one job in the range, either side */

static void usage(FILE *fp)
{
	fprintf(
	    fp,
	    "usage: palisade shadow (--job JOB | --group GROUP | --tenant TENANT) --reason TEXT\n"
	    "       palisade shadow list\n"
	    "       palisade shadow diff --from RFC3339 --to RFC3339 --against FILE|-\n"
	    "                            [--job JOB | --group GROUP | --tenant TENANT]\n"
	    "                            [--limit N] [--output table|json]\n"
	    "                            [--pg CONNINFO] [--config FILE]\n"
	    "shadow --job|--group|--tenant, shadow list: see `palisade shadow list --help`.\n"
	    "shadow diff: compare the old system's record of what it fired (FILE: one\n"
	    "\"job_id,RFC3339\" line per fired instant; blank lines and lines starting\n"
	    "with # are skipped)\n"
	    "with the instants palisade's plan has for the same jobs in [--from, --to):\n"
	    "each instant only one side has, with the reason palisade can tell\n"
	    "(excluded, misfire, dst, zone, repeated; else schedule or not_fired).\n"
	    "Without a scope, lines of jobs palisade does not know are differences\n"
	    "(unknown_job); with one, lines of other jobs are skipped.  At most --limit\n"
	    "differences are listed (default %d); the counts cover all.\n"
	    "Exit: 0 equal, 2 different, 3 no such job, 64 usage, 65 unreadable FILE\n"
	    "or a line of it not \"job_id,RFC3339\", 69 database unreachable.\n",
	    DEFAULT_LIMIT);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static void free_array(gpointer a)
{
	g_array_free(a, TRUE);
}

/* The record into job -> GArray of instants in [from, to); *outside counts
 * the well-formed lines out of the range.  65 with the line named when a
 * line is not "job_id,RFC3339". */
static int read_record(const char *path, int64_t from, int64_t to, GHashTable *old,
		       int64_t *outside)
{
	FILE *fp = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
	if (!fp) {
		pal_cli_err("shadow", "%s: %s", path, strerror(errno));
		return PAL_EXIT_DATAERR;
	}
	char *line = NULL;
	size_t cap = 0;
	long no = 0;
	int ec = PAL_EXIT_OK;
	while (getline(&line, &cap, fp) >= 0) {
		no++;
		g_strstrip(line);
		if (!*line || *line == '#')
			continue;
		char *comma = strchr(line, ',');
		int64_t at;
		if (comma)
			*comma = '\0';
		if (!comma || !pal_name_ok(line, PAL_CLI_JOB_MAX) ||
		    pal_parse_rfc3339(g_strstrip(comma + 1), &at)) {
			pal_cli_err("shadow", "%s:%ld: expected \"job_id,RFC3339\"", path, no);
			ec = PAL_EXIT_DATAERR;
			break;
		}
		if (at < from || at >= to) {
			(*outside)++;
			continue;
		}
		GArray *a = g_hash_table_lookup(old, line);
		if (!a) {
			a = g_array_new(FALSE, FALSE, sizeof(int64_t));
			g_hash_table_insert(old, g_strdup(line), a);
		}
		g_array_append_val(a, at);
	}
	if (ferror(fp) && !ec) {
		pal_cli_err("shadow", "%s: %s", path, strerror(errno));
		ec = PAL_EXIT_DATAERR;
	}
	free(line);
	if (fp != stdin)
		fclose(fp);
	return ec;
}

static void table(json_t *rep)
{
	json_t *c = json_object_get(rep, "counts");
	printf("shadow diff %s .. %s: %lld jobs; old %lld instants, palisade %lld, %lld in both\n",
	       json_string_value(json_object_get(rep, "from")),
	       json_string_value(json_object_get(rep, "to")),
	       (long long)json_integer_value(json_object_get(rep, "jobs")),
	       (long long)json_integer_value(json_object_get(c, "old")),
	       (long long)json_integer_value(json_object_get(c, "palisade")),
	       (long long)json_integer_value(json_object_get(c, "both")));
	json_t *d = json_object_get(rep, "differences");
	if (json_array_size(d))
		printf("%-9s %-32s %-20s %-10s %s\n", "ONLY IN", "JOB", "INSTANT", "REASON",
		       "DETAIL");
	size_t i;
	json_t *x;
	json_array_foreach(d, i, x)
	{
		printf("%-9s %-32s %-20s %-10s %s\n", json_string_value(json_object_get(x, "only")),
		       json_string_value(json_object_get(x, "job")),
		       json_string_value(json_object_get(x, "at")),
		       json_string_value(json_object_get(x, "reason")),
		       json_string_value(json_object_get(x, "detail")));
	}
	if (json_is_true(json_object_get(rep, "truncated")))
		printf("(more differences: see the counts; raise --limit)\n");
	printf("%s: %lld only in the old record, %lld only in palisade's plan\n",
	       json_is_true(json_object_get(rep, "equal")) ? "equal" : "different",
	       (long long)json_integer_value(json_object_get(c, "only_old")),
	       (long long)json_integer_value(json_object_get(c, "only_palisade")));
}

/* Diff every job of JOBS against its record in OLD (taken out of OLD). */
static int diff_jobs(json_t *jobs, GHashTable *old, int64_t from, int64_t to, size_t limit,
		     json_t *diffs, pal_shadow_counts *c)
{
	size_t i;
	json_t *job;
	json_array_foreach(jobs, i, job)
	{
		const char *id = json_string_value(json_object_get(job, "job_id"));
		GArray *fire = g_array_new(FALSE, FALSE, sizeof(int64_t));
		GArray *excl = g_array_new(FALSE, FALSE, sizeof(int64_t));
		GArray *mis = g_array_new(FALSE, FALSE, sizeof(int64_t));
		const pal_tz *zone = NULL;
		char err[1024];
		int rc = pal_shadow_plan_job(job, from, to, MAX_INSTANTS, fire, excl, mis, &zone,
					     err, sizeof err);
		GArray *o = g_hash_table_lookup(old, id);
		if (!rc) {
			if (o)
				g_array_sort(o, cmp_i64);
			pal_shadow_plan p = {(int64_t *)fire->data,
					     fire->len,
					     (int64_t *)excl->data,
					     excl->len,
					     (int64_t *)mis->data,
					     mis->len,
					     zone};
			rc = pal_shadow_diff_job(id, o ? (int64_t *)o->data : NULL, o ? o->len : 0,
						 &p, limit, diffs, c);
			if (rc)
				snprintf(err, sizeof err, "out of memory");
		}
		if (zone)
			pal_zone_release(zone);
		g_array_free(fire, TRUE);
		g_array_free(excl, TRUE);
		g_array_free(mis, TRUE);
		g_hash_table_remove(old, id);
		if (rc) {
			pal_cli_err("shadow", "%s", err);
			return rc == PAL_ETOOBIG ? PAL_EXIT_USAGE : PAL_EXIT_SOFTWARE;
		}
	}
	return PAL_EXIT_OK;
}

static int diff(int argc, char **argv)
{
	pal_cli_common c = {0};
	pal_cli_range r = {.from = PAL_OPS_NOW, .to = PAL_OPS_NOW};
	const char *against = NULL;
	long long limit = DEFAULT_LIMIT;
	static const struct option lo[] = {PAL_CLI_COMMON_LONGOPTS,
					   PAL_CLI_RANGE_LONGOPTS,
					   {"against", required_argument, NULL, 'a'},
					   {"limit", required_argument, NULL, 'n'},
					   {"help", no_argument, NULL, 'h'},
					   {0}};
	int opt, ec;
	bool ok;
	while ((opt = getopt_long(argc, argv, "hn:", lo, NULL)) != -1) {
		if (pal_cli_range_opt("shadow", opt, optarg, &r, &ok)) {
			if (!ok)
				return PAL_EXIT_USAGE;
		} else if (opt == 'a') {
			against = optarg;
		} else if (opt == 'n') {
			if (!pal_cli_int("shadow", "limit", optarg, 1, 1000000, &limit))
				return PAL_EXIT_USAGE;
		} else if ((ec = pal_cli_opt_other(&c, opt, optarg, usage)) >= 0) {
			return ec;
		}
	}
	if (optind != argc || !pal_cli_range_ok("shadow", &r) || !against) {
		if (!against)
			pal_cli_err("shadow", "--against is required");
		usage(stderr);
		return PAL_EXIT_USAGE;
	}
	int64_t from = r.from, to = r.to;
	int scopes = r.scopes;
	GHashTable *old = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, free_array);
	int64_t outside = 0;
	if ((ec = read_record(against, from, to, old, &outside))) {
		g_hash_table_destroy(old);
		return ec;
	}
	pal_store *st;
	if ((ec = pal_cli_connect(&c, false, &st))) {
		g_hash_table_destroy(old);
		return ec;
	}
	json_t *jobs;
	char err[1024];
	int rc = pal_store_shadow_jobs_json(st, &r.scope, from, to, &jobs, err, sizeof err);
	pal_store_close(st);
	if (rc) {
		g_hash_table_destroy(old);
		pal_cli_err("shadow", "%s", err);
		return pal_cli_exit_code(rc);
	}
	json_t *diffs = json_array();
	pal_shadow_counts n = {0};
	/* lines of jobs palisade has not in the scope first: skipped with a
	 * scope, listed first without one (a job the import left out) */
	GHashTable *known = g_hash_table_new(g_str_hash, g_str_equal);
	size_t i;
	json_t *jb;
	json_array_foreach(jobs, i, jb)
	    g_hash_table_add(known, (char *)json_string_value(json_object_get(jb, "job_id")));
	int64_t skipped = outside;
	GHashTableIter it;
	gpointer k, v;
	g_hash_table_iter_init(&it, old);
	while (g_hash_table_iter_next(&it, &k, &v)) {
		GArray *a = v;
		if (g_hash_table_contains(known, k))
			continue;
		if (scopes) {
			skipped += a->len;
			g_hash_table_iter_remove(&it);
			continue;
		}
		g_array_sort(a, cmp_i64);
		n.old += a->len;
		n.only_old += a->len;
		for (guint x = 0; x < a->len && json_array_size(diffs) < (size_t)limit; x++) {
			char ts[32];
			pal_fmt_rfc3339(g_array_index(a, int64_t, x), ts, sizeof ts);
			json_array_append_new(diffs,
					      json_pack("{s:s, s:s, s:s, s:s, s:s}", "job",
							(char *)k, "at", ts, "only", "old",
							"reason", "unknown_job", "detail", ""));
		}
		g_hash_table_iter_remove(&it);
	}
	g_hash_table_destroy(known);
	ec = diff_jobs(jobs, old, from, to, (size_t)limit, diffs, &n);
	g_hash_table_destroy(old);
	bool equal = !n.only_old && !n.only_palisade;
	char f[32], t[32];
	pal_fmt_rfc3339(from, f, sizeof f);
	pal_fmt_rfc3339(to, t, sizeof t);
	json_t *rep = json_pack(
	    "{s:s, s:s, s:b, s:I, s:{s:I, s:I, s:I, s:I, s:I}, s:I, s:o, s:b}", "from", f, "to", t,
	    "equal", equal, "jobs", (json_int_t)json_array_size(jobs), "counts", "old",
	    (json_int_t)n.old, "palisade", (json_int_t)n.palisade, "both", (json_int_t)n.both,
	    "only_old", (json_int_t)n.only_old, "only_palisade", (json_int_t)n.only_palisade,
	    "skipped_lines", (json_int_t)skipped, "differences", diffs, "truncated",
	    (json_int_t)json_array_size(diffs) < n.only_old + n.only_palisade);
	json_decref(jobs);
	if (!ec) {
		if (c.json) {
			json_dumpf(rep, stdout, JSON_INDENT(2));
			putchar('\n');
		} else {
			table(rep);
		}
		ec = equal ? PAL_EXIT_OK : PAL_EXIT_BROKEN;
	}
	json_decref(rep);
	return ec;
}

int pal_cmd_shadow(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "diff") == 0)
		return diff(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "--help") && strcmp(argv[1], "-h"))
		return pal__cli_shadow_set(argc, argv); /* cmd_cutover.c */
	if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		usage(stdout);
		return PAL_EXIT_OK;
	}
	usage(stderr);
	return PAL_EXIT_USAGE;
}
