/*
 * cmd_jobs.c - `palisade jobs [JOB]`: jobs and their plan versions.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <glib.h>
#include "palisade/cli.h"
#include "palisade/err.h"
#include "palisade/lifecycle.h"
#include "palisade/plandiff.h"
#include "palisade/timefmt.h"
#include <stdlib.h>
#include <time.h>
#include "cli_int.h"

static void usage(FILE *fp)
{
	fprintf(fp, "usage: palisade jobs [--versions] [--next N] [--retired] [--output table|json]\n"
		    "                     [--pg CONNINFO] [--config FILE]\n"
		    "                     [--server URL [--token-file FILE]] [JOB]\n"
		    "List the live jobs (or one JOB, live or retired) with their latest and\n"
		    "active plan versions, owner, description and labels; --versions adds one\n"
		    "line per stored version, --next N the next N fire instants of the latest\n"
		    "version.\n"
		    "JSON always holds the versions.  --retired lists the retired jobs instead\n"
		    "(`palisade delete`, `apply --prune`), with when they were retired.\n"
		    "Exit: 0 listed, 3 no such job, 64 usage, 69 database unreachable.\n");
}

static const char *str(json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));
	return s ? s : "-";
}

/* V's schedule as the table prints it: "after: a, b" for a dependent job
 * (its stored cron is the never-firing placeholder), else "CRON (ZONE)"
 * (with PAREN) or "CRON ZONE". */
static void sched_text(json_t *v, bool paren, char *buf, size_t len)
{
	json_t *after = json_object_get(v, "after");
	if (!json_array_size(after)) {
		snprintf(buf, len, paren ? "%s (%s)" : "%s %s", str(v, "cron"), str(v, "timezone"));
		return;
	}
	size_t i, off = 0;
	json_t *u;
	off = (size_t)snprintf(buf, len, "after:");
	json_array_foreach(after, i, u)
	{
		if (off < len)
			off += (size_t)snprintf(buf + off, len - off, "%s %s", i ? "," : "",
						json_string_value(u));
	}
}

/* Add "next": [RFC 3339...] (N instants of the latest version) to each job. */
static int add_next(pal_store *st, json_t *jobs, int n)
{
	size_t i;
	json_t *j;
	int64_t now = (int64_t)time(NULL);
	json_array_foreach(jobs, i, j)
	{
		json_t *next;
		char err[1024];
		if (pal_plan_job_next(st, json_string_value(json_object_get(j, "job_id")), now, n,
				      &next, err, sizeof err)) {
			pal_cli_err("jobs", "%s", err);
			return PAL_EXIT_UNAVAIL;
		}
		json_object_set_new(j, "next", next);
	}
	return PAL_EXIT_OK;
}

static void print_table(json_t *jobs, bool versions)
{
	printf("%-32s %-12s %-12s %5s %6s %6s  %s\n", "JOB", "TENANT", "GROUP", "SHARD", "LATEST",
	       "ACTIVE", "SCHEDULE");
	size_t i;
	json_t *j;
	json_array_foreach(jobs, i, j)
	{
		json_t *vs = json_object_get(j, "versions");
		/* the API's job list carries the latest version's schedule only */
		json_t *last = vs ? json_array_get(vs, json_array_size(vs) - 1)
				  : json_object_get(j, "latest");
		json_t *act = json_object_get(j, "active_version");
		char active[16] = "-", sched[1024];
		if (json_is_integer(act))
			snprintf(active, sizeof active, "v%lld", (long long)json_integer_value(act));
		sched_text(last, true, sched, sizeof sched);
		printf("%-32s %-12s %-12s %5lld %5s%lld %6s  %s%s%s\n", str(j, "job_id"),
		       str(j, "tenant"), str(j, "group"),
		       (long long)json_integer_value(json_object_get(j, "shard")), "v",
		       (long long)json_integer_value(json_object_get(j, "latest_version")), active,
		       sched,
		       json_is_string(json_object_get(j, "retired_at")) ? "  retired at " : "",
		       json_is_string(json_object_get(j, "retired_at")) ? str(j, "retired_at") : "");
		const char *ow = json_string_value(json_object_get(j, "owner"));
		const char *de = json_string_value(json_object_get(j, "description"));
		if (ow && *ow)
			printf("    owner: %s\n", ow);
		if (de && *de)
			printf("    description: %.*s\n", (int)strcspn(de, "\n"), de);
		const char *lk;
		json_t *lv;
		int nl = 0;
		json_object_foreach(json_object_get(j, "labels"), lk, lv)
		printf("%s%s=%s", nl++ ? ", " : "    labels: ", lk, json_string_value(lv));
		if (nl)
			putchar('\n');
		json_t *next = json_object_get(j, "next");
		json_t *ups = json_object_get(last, "after");
		if (next && !json_array_size(next) && json_array_size(ups))
			/* a dependent's instants are its first upstream's (docs/jobs.md) */
			printf("    next: at the instants of %s, as it runs them\n",
			       json_string_value(json_array_get(ups, 0)));
		else if (json_array_size(next)) {
			printf("    next:");
			size_t k;
			json_t *x;
			json_array_foreach(next, k, x)
			printf(" %s", json_string_value(x));
			putchar('\n');
		}
		if (!versions)
			continue;
		size_t k;
		json_t *v;
		json_array_foreach(vs, k, v)
		{
			sched_text(v, false, sched, sizeof sched);
			printf("    v%-4lld digest %.12s  %s  by %s at %s\n",
			       (long long)json_integer_value(json_object_get(v, "version")),
			       str(v, "digest"), sched, str(v, "created_by"), str(v, "created_at"));
		}
	}
}

/* Print JOBS (taken) as JSON or as the table; exit 0. */
static int print_jobs(const pal_cli_common *c, json_t *jobs, bool versions)
{
	if (c->json) {
		json_dumpf(jobs, stdout, JSON_INDENT(2));
		putchar('\n');
	} else {
		print_table(jobs, versions);
	}
	json_decref(jobs);
	return PAL_EXIT_OK;
}

/* JOB through the API with every page of its versions into *OUT, and its
 * NEXT instants (0: none). */
static int job_remote(const pal_cli_common *c, const char *job, int next, json_t **out)
{
	char n[24] = "";
	if (next)
		snprintf(n, sizeof n, "?next=%d", next);
	char *path = g_strdup_printf("/api/v1/jobs/%s%s", job, n);
	int ec = pal_cli_remote_whole(c, "jobs", path, "versions", "versions_next_cursor", NULL, out);
	g_free(path);
	return ec;
}

/* The retired jobs (JOBS, taken) as JSON or as their table; exit 0. */
static int print_retired(const pal_cli_common *c, json_t *jobs)
{
	if (c->json) {
		json_dumpf(jobs, stdout, JSON_INDENT(2));
		putchar('\n');
	} else {
		printf("%-32s %-12s %-12s %6s %-20s  %s\n", "JOB", "TENANT", "GROUP", "LATEST",
		       "RETIRED", "OWNER");
		size_t i;
		json_t *j;
		json_array_foreach(jobs, i, j)
		printf("%-32s %-12s %-12s %5s%lld %-20s  %s\n", str(j, "job_id"), str(j, "tenant"),
		       str(j, "group"), "v",
		       (long long)json_integer_value(json_object_get(j, "latest_version")),
		       str(j, "retired_at"), str(j, "owner"));
	}
	json_decref(jobs);
	return PAL_EXIT_OK;
}

/* `jobs [JOB]` through the API (--server): one job, or every page of the
 * list (the retired ones with RETIRED); NEXT instants of each (?next=, in
 * pages the API's bound of a page's instants allows). */
static int jobs_remote(const pal_cli_common *c, const char *job, bool versions, bool retired,
		       int next)
{
	json_t *jobs = json_array(), *o;
	int ec;
	if (job && !retired) {
		if ((ec = job_remote(c, job, next, &o))) {
			json_decref(jobs);
			return ec;
		}
		json_array_append_new(jobs, o);
	} else {
		json_decref(jobs);
		char *path = g_strdup_printf("/api/v1/jobs%s%s", retired ? "?retired=true" : "",
					     next ? (retired ? "&next=" : "?next=") : "");
		char *full = next ? g_strdup_printf("%s%d", path, next) : g_strdup(path);
		int page = next ? PAL_JOB_NEXT_MAX_INSTANTS / next : 1000;
		ec = pal_cli_remote_pages(c, "jobs", full, 0, page < 1000 ? page : 1000, &jobs);
		g_free(path);
		g_free(full);
		if (ec)
			return ec;
		if (retired) {
			pal_cli_whole_seconds(jobs, "retired_at");
			return print_retired(c, jobs);
		}
		/* the versions (JSON holds them, as --versions prints them): each
		 * job's own read, the list carrying the latest one's schedule */
		size_t i;
		json_t *j;
		json_array_foreach((versions || c->json) ? jobs : NULL, i, j)
		{
			if ((ec = job_remote(c, json_string_value(json_object_get(j, "job_id")),
					     next, &o))) {
				json_decref(jobs);
				return ec;
			}
			json_array_set_new(jobs, i, o);
		}
	}
	return print_jobs(c, jobs, versions || job);
}

static int retired_call(pal_store *st, const void *ctx, json_t **out, char *err, size_t errlen)
{
	return pal_store_retired_json(st, out, err, errlen);
}

int pal_cmd_jobs(int argc, char **argv)
{
	pal_cli_common c = { 0 };
	bool versions = false, retired = false;
	int next = 0;
	static const struct option lo[] = { PAL_CLI_COMMON_LONGOPTS,
					    { "versions", no_argument, NULL, 'V' },
					    { "retired", no_argument, NULL, 'X' },
					    { "next", required_argument, NULL, 'N' },
					    { "help", no_argument, NULL, 'h' },
					    { 0 } };
	int opt, ec;
	while ((opt = getopt_long(argc, argv, "hV", lo, NULL)) != -1) {
		if (opt == 'N') {
			long long v;
			if (!pal_cli_int("jobs", "next", optarg, 1, PAL_JOB_NEXT_MAX, &v))
				return PAL_EXIT_USAGE;
			next = (int)v;
			continue;
		}
		if (opt == 'V') {
			versions = true;
			continue;
		}
		if (opt == 'X') {
			retired = true;
			continue;
		}
		if ((ec = pal_cli_opt_other(&c, opt, optarg, usage)) >= 0)
			return ec;
	}
	if (argc - optind > 1) {
		usage(stderr);
		return PAL_EXIT_USAGE;
	}
	const char *job = optind < argc ? argv[optind] : NULL;
	if (job && !pal_cli_name("jobs", "job", job))
		return PAL_EXIT_USAGE;
	if (pal_cli_server(&c))
		return jobs_remote(&c, job, versions, retired, next);
	json_t *jobs, *meta = NULL;
	if (retired) {
		if ((ec = pal_cli_store_call(&c, "jobs", retired_call, NULL, &jobs)))
			return ec;
		return print_retired(&c, jobs);
	}
	pal_store *st;
	ec = pal_cli_connect(&c, false, &st);
	if (ec)
		return ec;
	char err[1024];
	int rc = pal_store_jobs_json(st, job, &jobs, err, sizeof err);
	if (!rc)
		rc = pal_store_job_meta_json(st, job, &meta, err, sizeof err);
	if (rc) {
		pal_store_close(st);
		pal_cli_err("jobs", "%s", err);
		json_decref(jobs);
		return PAL_EXIT_UNAVAIL;
	}
	/* Owner, description and retirement from the jobs row; retired jobs
	 * are listed only when named. */
	for (size_t i = json_array_size(jobs); i-- > 0;) {
		json_t *j = json_array_get(jobs, i);
		json_t *m = json_object_get(meta, json_string_value(json_object_get(j, "job_id")));
		if (!job && m && json_is_string(json_object_get(m, "retired_at"))) {
			json_array_remove(jobs, i);
			continue;
		}
		if (m)
			json_object_update(j, m);
	}
	json_decref(meta);
	if (next && (ec = add_next(st, jobs, next))) {
		pal_store_close(st);
		json_decref(jobs);
		return ec;
	}
	pal_store_close(st);
	if (job && json_array_size(jobs) == 0) {
		pal_cli_err("jobs", "no job \"%s\"", job);
		json_decref(jobs);
		return PAL_EXIT_NOTFOUND;
	}
	return print_jobs(&c, jobs, versions || job);
}
