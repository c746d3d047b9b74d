/*
 * cmd_plan.c - `palisade plan diff FILE...`: before `apply`, show how the next
 * fire instants of each job would move against the version stored now.
 */
#include <getopt.h>
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "palisade/cli.h"
#include "palisade/err.h"
#include "palisade/jobfile.h"
#include "palisade/plandiff.h"
#include "palisade/schedule.h"
#include "palisade/timefmt.h"
#include "cli_int.h"

static void usage(FILE *fp)
{
	fprintf(fp,
		"usage: palisade plan diff [--count N] [--from RFC3339] [--max-instants N]\n"
		"                          [--output table|json]\n"
		"                          [--pg CONNINFO] [--config FILE]\n"
		"                          [--server URL [--token-file FILE]] FILE...\n"
		"For every job in FILE, compare the next N (default 5) fire instants after\n"
		"--from (default now) of the stored latest version with those of the file's\n"
		"spec.  Lines: '-' only in the stored plan, '+' only in the new one, ' ' both;\n"
		"'x' marks an excluded instant (an exclude: date or a shared calendar), '~'\n"
		"one whose exclusion changes (a changed calendar).  The stored jobs that\n"
		"name a calendar of the files at another version, and those whose notify\n"
		"the files' notify rules change, follow them on apply: they are listed\n"
		"too, with what they follow.  Nothing is written.\n"
		"--max-instants N: show at most N instants of each side (the jobs, with\n"
		"the followers, times --count), else refuse (exit 65): a smaller --count or\n"
		"fewer jobs at a time (default %d, the API's bound; 0: no bound).\n"
		"Through --server (POST /api/v1/plan/diff) it takes one file, and the\n"
		"node's bound holds (no --max-instants).\n"
		"Exit: 0 shown, 65 invalid files or over --max-instants, 69 database\n"
		"unreachable.\n",
		PAL_PLAN_DIFF_MAX_INSTANTS);
}

/* Merge two ascending lists and print them diff-style. */
static void print_merge(const int64_t *a, const bool *aex, int na, const int64_t *b,
			const bool *bex, int nb)
{
	int i = 0, j = 0;
	char buf[32];
	while (i < na || j < nb) {
		char mark;
		int64_t t;
		bool ex;
		if (j >= nb || (i < na && a[i] < b[j])) {
			mark = '-', t = a[i], ex = aex[i], i++;
		} else if (i >= na || b[j] < a[i]) {
			mark = '+', t = b[j], ex = bex[j], j++;
		} else {
			mark = aex[i] == bex[j] ? ' ' : '~', t = a[i], ex = bex[j], i++, j++;
		}
		pal_fmt_rfc3339(t, buf, sizeof buf);
		printf("  %c %s%s\n", mark, buf, ex ? "  x excluded" : "");
	}
}

/* D of job ID into OUT (json) or stdout; FOLLOWS (NULL for a job of the
 * files): "calendar NAME vN[, ...]", the calendars a stored job follows. */
static void show(const pal_plan_diff *d, const char *id, const char *follows, json_t *out)
{
	if (out) {
		json_array_append_new(out, pal_plan_diff_json(d, id, follows));
		return;
	}
	if (d->stored_version)
		printf("%s: %s (stored v%d%s%s)\n", id, d->status, d->stored_version,
		       follows ? "; follows " : "", follows ? follows : "");
	else
		printf("%s: new job\n", id);
	if (strcmp(d->status, "unchanged"))
		print_merge(d->stored, d->stored_ex, d->n_stored, d->next, d->next_ex, d->n_new);
	if (strcmp(d->status, "unchanged") && d->after && !d->n_new)
		printf("  (after: no schedule of its own; it runs at the instants of %s)\n",
		       d->after);
}

static int exit_of(int rc)
{
	return rc == PAL_EDB	  ? PAL_EXIT_UNAVAIL
	       : rc == PAL_EINVAL ? PAL_EXIT_DATAERR
				  : PAL_EXIT_SOFTWARE;
}

static int diff_job(pal_store *st, const pal_job_spec *s, int64_t from, int count, json_t *out)
{
	char err[1024];
	pal_plan_diff d;
	int rc = pal_plan_diff_job(st, s, from, count, &d, err, sizeof err);
	if (rc) {
		pal_cli_err("plan diff", "%s", err);
		return exit_of(rc);
	}
	show(&d, s->id, NULL, out);
	pal_plan_diff_clear(&d);
	return PAL_EXIT_OK;
}

/* Where the followers go, and the bound over every job. */
typedef struct {
	json_t *out;
	size_t n; /* jobs shown so far */
	int count;
	int64_t max;
	char *err;
	size_t errlen;
} follow_out;

/* pal_plan_follow_fn: a stored job that follows a calendar of the files */
static int show_follower(void *ctx, const char *id, const char *tenant, const char *follows,
			 const pal_plan_diff *d)
{
	follow_out *o = ctx;
	(void)tenant; /* the CLI reads the database: every tenant's */
	if (!pal_plan_diff_within(++o->n, o->count, o->max, o->err, o->errlen))
		return PAL_ETOOBIG;
	show(d, id, follows, o->out);
	return 0;
}

/* The instants LIST ([{at, excluded}] of pal_plan_diff_json()) into V and
 * EX from index 0; returns how many, -1 when an item is malformed. */
static int list_of(const json_t *list, int64_t *v, bool *ex)
{
	size_t i;
	json_t *e;
	json_array_foreach(list, i, e)
	{
		const char *at = json_string_value(json_object_get(e, "at"));
		if (!at || pal_parse_rfc3339(at, &v[i]))
			return -1;
		ex[i] = json_is_true(json_object_get(e, "excluded"));
	}
	return (int)json_array_size(list);
}

/* One job of the API's answer (pal_plan_diff_json()'s object O) shown as
 * the direct path shows it; false when O is not such an object. */
static bool show_remote(const json_t *o)
{
	const char *id = json_string_value(json_object_get(o, "job_id"));
	const char *status = json_string_value(json_object_get(o, "status"));
	const json_t *st = json_object_get(o, "stored"), *nw = json_object_get(o, "new");
	size_t n = json_array_size(st) + json_array_size(nw);
	if (!id || !status)
		return false;
	pal_plan_diff d = {.status = status,
			   .after = json_string_value(json_object_get(o, "after")),
			   .stored_version =
			       (int)json_integer_value(json_object_get(o, "stored_version"))};
	d.stored = calloc(n + 1, sizeof *d.stored);
	d.stored_ex = calloc(n + 1, sizeof *d.stored_ex);
	d.n_stored = list_of(st, d.stored, d.stored_ex);
	d.next = d.stored + json_array_size(st);
	d.next_ex = d.stored_ex + json_array_size(st);
	d.n_new = list_of(nw, d.next, d.next_ex);
	bool good = d.n_stored >= 0 && d.n_new >= 0;
	if (good)
		show(&d, id, json_string_value(json_object_get(o, "follows")), NULL);
	pal_plan_diff_clear(&d);
	return good;
}

/* plan diff through the API (--server): one file, its documents in one
 * body; the answer's jobs printed as the direct path prints them. */
static int diff_remote(const pal_cli_common *c, const char *file, int64_t from, int count)
{
	char *text = NULL, *q_file = g_uri_escape_string(file, NULL, FALSE);
	gsize len = 0;
	GError *ge = NULL;
	if (!g_file_get_contents(file, &text, &len, &ge)) {
		pal_cli_err("plan diff", "%s", ge->message);
		g_error_free(ge);
		g_free(q_file);
		return PAL_EXIT_DATAERR;
	}
	char at[32];
	pal_fmt_rfc3339(from, at, sizeof at);
	char *path =
	    g_strdup_printf("/api/v1/plan/diff?file=%s&count=%d&from=%s", q_file, count, at);
	json_t *o = NULL;
	int ec =
	    pal_cli_remote_call(c, "plan diff", "POST", path, "application/yaml", text, len, &o);
	g_free(path);
	g_free(text);
	g_free(q_file);
	if (ec)
		return ec;
	json_t *jobs = json_object_get(o, "jobs");
	/* a token limited to tenants: other tenants' followers counted only */
	json_int_t hidden = json_integer_value(json_object_get(o, "hidden_followers"));
	if (hidden > 0)
		pal_cli_err("plan diff",
			    "%lld stored job%s of tenants this token does not see follow%s a "
			    "calendar of the file; not shown (an apply with this token is refused)",
			    (long long)hidden, hidden == 1 ? "" : "s", hidden == 1 ? "s" : "");
	if (!json_is_array(jobs)) {
		pal_cli_err("plan diff", "the server's answer has no jobs");
		ec = PAL_EXIT_SOFTWARE;
	} else if (c->json) {
		json_dumpf(jobs, stdout, JSON_INDENT(2));
		putchar('\n');
	} else {
		size_t i;
		json_t *j;
		json_array_foreach(jobs, i, j) if (!show_remote(j))
		{
			pal_cli_err("plan diff", "the server's answer has a malformed job");
			ec = PAL_EXIT_SOFTWARE;
			break;
		}
	}
	json_decref(o);
	return ec;
}

int pal_cmd_plan(int argc, char **argv)
{
	pal_cli_common c = {0};
	int count = 5;
	int64_t from = (int64_t)time(NULL);
	long long max = PAL_PLAN_DIFF_MAX_INSTANTS;
	bool have_max = false;
	static const struct option lo[] = {PAL_CLI_COMMON_LONGOPTS,
					   {"count", required_argument, NULL, 'n'},
					   {"from", required_argument, NULL, 'f'},
					   {"max-instants", required_argument, NULL, 'M'},
					   {"help", no_argument, NULL, 'h'},
					   {0}};
	if (argc < 2 || strcmp(argv[1], "diff")) {
		if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
			usage(stdout);
			return PAL_EXIT_OK;
		}
		usage(stderr);
		return PAL_EXIT_USAGE;
	}
	argc--, argv++;
	int opt, ec;
	while ((opt = getopt_long(argc, argv, "hn:f:M:", lo, NULL)) != -1) {
		switch (opt) {
		case 'M':
			if (!pal_cli_int("plan diff", "max-instants", optarg, 0, INT64_MAX, &max))
				return PAL_EXIT_USAGE;
			have_max = true;
			break;
		case 'n': {
			long long v;
			if (!pal_cli_int("plan diff", "count", optarg, 1, 10000, &v))
				return PAL_EXIT_USAGE;
			count = (int)v;
			break;
		}
		case 'f':
			if (pal_parse_rfc3339(optarg, &from)) {
				pal_cli_err("plan diff", "--from \"%s\": expected RFC 3339",
					    optarg);
				return PAL_EXIT_USAGE;
			}
			break;
		default:
			if ((ec = pal_cli_opt_other(&c, opt, optarg, usage)) >= 0)
				return ec;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return PAL_EXIT_USAGE;
	}
	if (pal_cli_server(&c)) {
		if (argc - optind != 1) {
			pal_cli_err("plan diff", "through --server, plan diff takes one file "
						 "(its documents in one body)");
			return PAL_EXIT_USAGE;
		}
		if (have_max) {
			pal_cli_err("plan diff", "--max-instants: through --server the node's "
						 "bound holds (%d)",
				    PAL_PLAN_DIFF_MAX_INSTANTS);
			return PAL_EXIT_USAGE;
		}
		return diff_remote(&c, argv[optind], from, count);
	}
	pal_jobset set = {0};
	pal_diags diags = {0};
	if (pal_jobfiles_load((const char *const *)argv + optind, (size_t)(argc - optind), &set,
			      &diags)) {
		pal_diags_print(&diags, stderr);
		pal_diags_free(&diags);
		pal_jobset_free(&set);
		return PAL_EXIT_DATAERR;
	}
	pal_diags_free(&diags);
	char err[1024];
	if (!pal_plan_diff_within(set.n, count, max, err, sizeof err)) {
		pal_cli_err("plan diff", "%s (--max-instants sets the bound, 0 none)", err);
		pal_jobset_free(&set);
		return PAL_EXIT_DATAERR;
	}
	pal_store *st;
	ec = pal_cli_connect(&c, false, &st);
	if (ec) {
		pal_jobset_free(&set);
		return ec;
	}
	/* the versions the calendars would get: a changed one shows in the
	 * digest (and the instants) of every job that names it */
	/* and the notify the jobs would inherit from the stored rules and
	 * the files' */
	if (pal_store_calendar_versions(st, set.calendars, set.n_calendars, err, sizeof err) ||
	    pal_store_merge_notify_rules(st, &set, err, sizeof err)) {
		pal_cli_err("plan diff", "%s", err);
		pal_store_close(st);
		pal_jobset_free(&set);
		return PAL_EXIT_UNAVAIL;
	}
	pal_jobset_calendar_versions(&set);
	json_t *out = c.json ? json_array() : NULL;
	for (size_t i = 0; i < set.n && !ec; i++)
		ec = diff_job(st, &set.jobs[i], from, count, out);
	int rc;
	follow_out fo = {out, set.n, count, max, err, sizeof err};
	if (!ec && (rc = pal_plan_diff_followers(st, &set, from, count, show_follower, &fo, err,
						 sizeof err))) {
		pal_cli_err("plan diff", "%s%s", err,
			    rc == PAL_ETOOBIG ? " (--max-instants sets the bound, 0 none)" : "");
		ec = rc == PAL_ETOOBIG ? PAL_EXIT_DATAERR : exit_of(rc);
	}
	pal_store_close(st);
	if (out) {
		if (!ec) {
			json_dumpf(out, stdout, JSON_INDENT(2));
			putchar('\n');
		}
		json_decref(out);
	}
	pal_jobset_free(&set);
	return ec;
}
