/*
 * cmd_plan.c - `palisade plan diff FILE...`: before `apply`, show how the next
 * fire instants of each job would move against the version stored now.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "palisade/cli.h"
#include "palisade/err.h"
#include "palisade/jobfile.h"
#include "palisade/schedule.h"
#include "palisade/timefmt.h"
#include "cli_int.h"

static void usage(FILE *fp)
{
	fprintf(fp,
		"usage: palisade plan diff [--count N] [--from RFC3339] [--output table|json]\n"
		"                          [--pg CONNINFO] [--config FILE] FILE...\n"
		"For every job in FILE, compare the next N (default 5) fire instants after\n"
		"--from (default now) of the stored latest version with those of the file's\n"
		"spec.  Lines: '-' only in the stored plan, '+' only in the new one, ' ' both;\n"
		"'x' marks an instant that falls on an excluded date.  Nothing is written.\n"
		"Exit: 0 shown, 65 invalid files, 69 database unreachable.\n");
}

/* Up to N instants of spec S after FROM into out[]; returns how many, or -1. */
static int instants(const pal_job_spec *s, int64_t from, int n, int64_t *out, bool *ex,
		    char *err, size_t errlen)
{
	pal_schedule *sc;
	if (pal_schedule_open(s, &sc, err, errlen))
		return -1;
	int k = 0;
	int64_t t = from;
	while (k < n && pal_schedule_next(sc, t, &out[k], &ex[k]) == PAL_OK)
		t = out[k++];
	pal_schedule_close(sc);
	return k;
}

static json_t *list_json(const int64_t *v, const bool *ex, int n)
{
	json_t *a = json_array();
	char buf[32];
	for (int i = 0; i < n; i++) {
		pal_fmt_rfc3339(v[i], buf, sizeof buf);
		json_array_append_new(a, json_pack("{s:s, s:b}", "at", buf, "excluded", ex[i]));
	}
	return a;
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

static int diff_job(pal_store *st, const pal_job_spec *s, int64_t from, int count, json_t *out)
{
	char err[1024], hex[65];
	char *canon = NULL;
	json_t *old_json = NULL;
	int old_version = 0;
	int rc = pal_store_latest_spec(st, s->id, &old_json, &old_version, err, sizeof err);
	if (rc && rc != PAL_ENOENT) {
		pal_cli_err("plan diff", "%s", err);
		return PAL_EXIT_UNAVAIL;
	}
	if (pal_job_spec_digest(s, &canon, hex)) {
		pal_cli_err("plan diff", "job %s: cannot canonicalise", s->id);
		json_decref(old_json);
		return PAL_EXIT_SOFTWARE;
	}
	free(canon);
	const char *status = "new";
	pal_job_spec old = { 0 };
	bool have_old = false;
	if (old_json) {
		const char *old_digest = NULL;
		if (pal_job_spec_from_canonical(old_json, &old, err, sizeof err)) {
			pal_cli_err("plan diff", "job %s v%d: %s", s->id, old_version, err);
			json_decref(old_json);
			return PAL_EXIT_SOFTWARE;
		}
		have_old = true;
		char *oc = NULL, ohex[65];
		if (!pal_job_spec_digest(&old, &oc, ohex))
			old_digest = ohex;
		free(oc);
		status = old_digest && !strcmp(old_digest, hex) ? "unchanged" : "changed";
		json_decref(old_json);
	}
	int64_t *a = calloc((size_t)count * 2, sizeof *a);
	bool *aex = calloc((size_t)count * 2, sizeof *aex);
	if (!a || !aex) {
		free(a), free(aex);
		if (have_old)
			pal_job_spec_clear(&old);
		return PAL_EXIT_SOFTWARE;
	}
	int64_t *b = a + count;
	bool *bex = aex + count;
	int na = 0, nb = instants(s, from, count, b, bex, err, sizeof err);
	if (nb >= 0 && have_old)
		na = instants(&old, from, count, a, aex, err, sizeof err);
	if (have_old)
		pal_job_spec_clear(&old);
	if (na < 0 || nb < 0) {
		pal_cli_err("plan diff", "%s", err);
		free(a), free(aex);
		return PAL_EXIT_DATAERR;
	}
	if (out) {
		json_t *o = json_pack("{s:s, s:s, s:o}", "job_id", s->id, "status", status, "new",
				      list_json(b, bex, nb));
		if (have_old) {
			json_object_set_new(o, "stored_version", json_integer(old_version));
			json_object_set_new(o, "stored", list_json(a, aex, na));
		}
		json_array_append_new(out, o);
	} else {
		if (have_old)
			printf("%s: %s (stored v%d)\n", s->id, status, old_version);
		else
			printf("%s: new job\n", s->id);
		if (strcmp(status, "unchanged"))
			print_merge(a, aex, na, b, bex, nb);
	}
	free(a), free(aex);
	return PAL_EXIT_OK;
}

int pal_cmd_plan(int argc, char **argv)
{
	pal_cli_common c = { 0 };
	int count = 5;
	int64_t from = (int64_t)time(NULL);
	static const struct option lo[] = { PAL_CLI_COMMON_LONGOPTS,
					    { "count", required_argument, NULL, 'n' },
					    { "from", required_argument, NULL, 'f' },
					    { "help", no_argument, NULL, 'h' },
					    { 0 } };
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
	while ((opt = getopt_long(argc, argv, "hn:f:", lo, NULL)) != -1) {
		switch (opt) {
		case 'n': {
			long long v;
			if (!pal_cli_int("plan diff", "count", optarg, 1, 10000, &v))
				return PAL_EXIT_USAGE;
			count = (int)v;
			break;
		}
		case 'f':
			if (pal_parse_rfc3339(optarg, &from)) {
				pal_cli_err("plan diff", "--from \"%s\": expected RFC 3339", optarg);
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
	pal_jobset set = { 0 };
	pal_diags diags = { 0 };
	if (pal_jobfiles_load((const char *const *)argv + optind, (size_t)(argc - optind), &set,
			      &diags)) {
		pal_diags_print(&diags, stderr);
		pal_diags_free(&diags);
		pal_jobset_free(&set);
		return PAL_EXIT_DATAERR;
	}
	pal_diags_free(&diags);
	pal_store *st;
	ec = pal_cli_connect(&c, false, &st);
	if (ec) {
		pal_jobset_free(&set);
		return ec;
	}
	json_t *out = c.json ? json_array() : NULL;
	for (size_t i = 0; i < set.n && !ec; i++)
		ec = diff_job(st, &set.jobs[i], from, count, out);
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
