/*
 * cmd_apply.c - `palisade apply FILE...`: validate, canonicalise and store job
 * specs as plan versions, in one transaction.
 *
 * Files are read one at a time and each file's jobs are handed to the store
 * (pal_store_apply_add) before the next file is read, so memory follows the
 * largest file, not the whole set, and the server stores one file while the
 * next is parsed.  A problem in any file rolls the transaction back: nothing
 * is stored, and the remaining files are still validated so that every
 * problem is reported.  The per-job report waits in a temporary file until
 * the commit succeeded.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/cli.h"
#include "palisade/err.h"
#include "palisade/jobfile.h"
#include "palisade/store.h"
#include "cli_int.h"

static void usage(FILE *fp)
{
	fprintf(fp,
		"usage: palisade apply [--reason TEXT] [--pg CONNINFO] [--config FILE]\n"
		"                      [--output table|json] FILE...\n"
		"Validate the job files, then store each job as a new plan version when its\n"
		"canonical spec changed (version n+1), or report it unchanged.  All jobs go in\n"
		"one transaction: on any error nothing is stored.  History is never rewritten.\n"
		"Exit: 0 applied, 65 invalid files (nothing stored), 69 database unreachable.\n");
}

static const char *const word[] = { "created", "updated", "unchanged" };

/* One line (table) or one array element (json) per job into OUT. */
static void report(FILE *out, bool json, size_t *count, const pal_job_spec *s,
		   const pal_apply_result *r)
{
	if (json) {
		json_t *id = json_string(s->id);
		char *q = id ? json_dumps(id, JSON_ENCODE_ANY) : NULL;
		fprintf(out, "%s  {\n    \"job_id\": %s,\n    \"outcome\": \"%s\",\n    \"version\": %d\n  }",
			count[0] + count[1] + count[2] ? ",\n" : "", q ? q : "null", word[r->outcome],
			r->version);
		free(q);
		json_decref(id);
	} else {
		fprintf(out, "%-9s %s v%d\n", word[r->outcome], s->id, r->version);
	}
	count[r->outcome]++;
}

/* The state of one apply run. */
struct run {
	pal_cli_common *c;
	const char *reason;
	pal_store *st;
	pal_apply *ap;
	int db_ec; /* exit code of a database failure, 0 when none */
	FILE *out;
	size_t count[3];
};

/* Hand SET to the store (connecting on first use); a failure is kept in
 * r->db_ec and stops further stores, not the validation of later files. */
static void store_set(struct run *r, const pal_jobset *set)
{
	char err[1024];
	if (r->db_ec)
		return;
	if (!r->ap) {
		if ((r->db_ec = pal_cli_connect(r->c, false, &r->st)))
			return;
		int rc = pal_store_apply_begin(r->st, pal_cli_actor(), r->reason,
					       pal__cli_config_shards(r->c), &r->ap, err, sizeof err);
		if (rc) {
			pal_cli_err("apply", "%s; nothing applied", err);
			r->db_ec = rc == PAL_EDB ? PAL_EXIT_UNAVAIL : PAL_EXIT_SOFTWARE;
			return;
		}
	}
	pal_apply_result *res = calloc(set->n ? set->n : 1, sizeof *res);
	int rc = res ? pal_store_apply_add(r->ap, set->jobs, set->n, res, err, sizeof err)
		     : PAL_ENOMEM;
	if (rc) {
		pal_cli_err("apply", "%s; nothing applied", rc == PAL_ENOMEM ? "out of memory" : err);
		pal_store_apply_abort(r->ap);
		r->ap = NULL;
		r->db_ec = rc == PAL_EDB ? PAL_EXIT_UNAVAIL : PAL_EXIT_SOFTWARE;
	}
	for (size_t i = 0; !rc && i < set->n; i++)
		report(r->out, r->c->json, r->count, &set->jobs[i], &res[i]);
	free(res);
}

int pal_cmd_apply(int argc, char **argv)
{
	pal_cli_common c = { 0 };
	const char *reason = "";
	static const struct option lo[] = { PAL_CLI_COMMON_LONGOPTS,
					    { "reason", required_argument, NULL, 'r' },
					    { "help", no_argument, NULL, 'h' },
					    { 0 } };
	int opt, ec;
	while ((opt = getopt_long(argc, argv, "hr:", lo, NULL)) != -1) {
		if (opt == 'r') {
			reason = optarg;
			continue;
		}
		if ((ec = pal_cli_opt_other(&c, opt, optarg, usage)) >= 0)
			return ec;
	}
	if (optind >= argc) {
		usage(stderr);
		return PAL_EXIT_USAGE;
	}
	struct run r = { .c = &c, .reason = reason, .out = tmpfile() };
	pal_jobloader *l = pal_jobloader_new();
	if (!r.out || !l) {
		pal_cli_err("apply", "%s; nothing applied",
			    r.out ? "out of memory" : "cannot create a temporary file");
		if (r.out)
			fclose(r.out);
		pal_jobloader_free(l);
		return PAL_EXIT_SOFTWARE;
	}
	pal_diags diags = { 0 };
	size_t bad = 0;
	for (int i = optind; i < argc; i++) {
		pal_jobset set = { 0 };
		if (pal_jobloader_file(l, argv[i], &set, &diags))
			bad++;
		else if (!bad)
			store_set(&r, &set);
		pal_jobset_free(&set);
	}
	pal_jobloader_free(l);
	if (!bad && !r.ap && !r.db_ec) {
		pal_jobset none = { 0 }; /* files without jobs: still one (empty) apply */
		store_set(&r, &none);
	}
	if (bad) {
		pal_store_apply_abort(r.ap);
		pal_store_close(r.st);
		fclose(r.out);
		pal_diags_print(&diags, stderr);
		fprintf(stderr, "palisade apply: %zu error%s; nothing applied\n", diags.n,
			diags.n == 1 ? "" : "s");
		pal_diags_free(&diags);
		return PAL_EXIT_DATAERR;
	}
	pal_diags_free(&diags);
	char err[1024];
	int rc = r.db_ec ? 0 : pal_store_apply_commit(r.ap, err, sizeof err);
	pal_store_close(r.st);
	if (rc) {
		pal_cli_err("apply", "%s; nothing applied", err);
		r.db_ec = rc == PAL_EDB ? PAL_EXIT_UNAVAIL : PAL_EXIT_SOFTWARE;
	}
	if (r.db_ec) {
		fclose(r.out);
		return r.db_ec;
	}
	/* Committed: now the report. */
	if (c.json)
		fputs(r.count[0] + r.count[1] + r.count[2] ? "[\n" : "[", stdout);
	rewind(r.out);
	char buf[65536];
	size_t n;
	while ((n = fread(buf, 1, sizeof buf, r.out)) > 0)
		fwrite(buf, 1, n, stdout);
	fclose(r.out);
	if (c.json)
		fputs(r.count[0] + r.count[1] + r.count[2] ? "\n]\n" : "]\n", stdout);
	else
		printf("apply: %zu created, %zu updated, %zu unchanged\n", r.count[0], r.count[1],
		       r.count[2]);
	return PAL_EXIT_OK;
}
