/*
 * cmd_apply.c - `palisade apply FILE...`: validate, canonicalise and store job
 * specs as plan versions, in one transaction.
 *
 * Files are read one at a time, and each file's jobs are handed to the
 * store (pal_store_apply_add) BATCH at a time while the file is still being
 * parsed (pal_jobloader_file_batches), so memory follows the largest file,
 * not the whole set, and the server stores the first jobs of a file while
 * the CLI parses the rest.  A problem in any file rolls the transaction
 * back: nothing is stored, and the remaining files are still validated so
 * that every problem is reported.  The per-job report waits in a temporary
 * file until the commit succeeded.
 *
 * The connection and the apply transaction are opened by a thread of their
 * own while the first file is parsed (struct opener): a new backend, the
 * schema check and BEGIN are round trips and server start-up that would
 * otherwise wait for the parse.  Its result is taken when the first valid
 * file is stored, and its messages printed then, as if it had connected
 * there; when no file is valid it is dropped unseen, and a connection
 * attempt still under way is not waited for (exit 65 at once, as before).
 */
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "palisade/cli.h"
#include "palisade/err.h"
#include "palisade/jobfile.h"
#include "palisade/aftergraph.h"
#include "palisade/coord.h"
#include "palisade/lifecycle.h"
#include "palisade/store.h"
#include "palisade/timefmt.h"
#include "palisade/shadow.h"
#include "cli_int.h"
#include <glib.h>

static void usage(FILE *fp)
{
	fprintf(fp,
		"usage: palisade apply [--prune | --prune-prefix PREFIX] [--dry-run]\n"
		"                      [--reason TEXT] [--pg CONNINFO]\n"
		"                      [--config FILE] [--output table|json]\n"
		"                      [--server URL [--token-file FILE]] FILE...\n"
		"Validate the job files, then store each job as a new plan version when its\n"
		"canonical spec changed (version n+1), or report it unchanged.  All jobs go in\n"
		"one transaction: on any error nothing is stored.  History is never rewritten.\n"
		"owner and description are updated in place (no new version).  A job with\n"
		"`suspend: true` gets its gate closed (as `palisade pause --job`, source\n"
		"'spec'); without it, a gate that a job file closed is lifted (an operator's\n"
		"pause is never lifted by apply).\n"
		"--prune  also retire every stored live job that none of the files defines\n"
		"         (as `palisade delete` does: history kept; applying it again later\n"
		"         makes a new version).\n"
		"--prune-prefix PREFIX  the same for the live jobs of PREFIX's whole segments\n"
		"         only (host-a. or host-a: host-a.x, not host-ab.x; after `palisade\n"
		"         import crontab --prefix host-a`): the files are the whole truth of\n"
		"         those ids, not of the cluster; but a job a cut-over makes live stays\n"
		"         live (its entry is gone from the old system), named as kept.\n"
		"--dry-run  do everything in a transaction that is rolled back: report what\n"
		"         would be created, updated, retired, suspended; store nothing.\n"
		"A job that may repeat an idempotency key later than the config's\n"
		"sink.key_retention (default 7d) after its instant is refused (docs/protocol.md).\n"
		"A job naming a ${NAME} secret the config's policy refuses to its tenant is\n"
		"refused (docs/jobs.md, \"Secrets\"; without --config: the node's own\n"
		"PALISADE_*, libpq's PG variables and proxy variables only), and so is one\n"
		"calling or notifying a host the config's executor.target_hosts does not\n"
		"give its tenant (docs/jobs.md, \"Target hosts\"; not checked without --config).\n"
		"A job created or updated with after:, notify: or target.keep_* is refused while\n"
		"a live node runs a binary older than those keys (docs/upgrades.md).\n"
		"A version that stops or moves its job's instants at the apply (an end\n"
		"reached, a one-shot) cancels the old version's waiting rows; after the\n"
		"commit (and after applying a retired job again) apply waits up to 10 s for\n"
		"the controllers to take it in and cancels what they planned from the old\n"
		"version meanwhile (docs/jobs.md); it is refused, as those keys, while a live\n"
		"node's controller would activate it at its watermark instead (0.3.0).\n"
		"Exit: 0 applied, 4 refused (older nodes live), 65 invalid files (nothing\n"
		"stored), 69 database or ZooKeeper unreachable.\n");
}

static const char *const word[] = {"created", "updated", "unchanged"};

/* One line (table) or one array element (json) per job into OUT; WHY
 * (NULL for none) follows the line of the table. */
static void report(FILE *out, bool json, size_t *count, const char *job_id,
		   const pal_apply_result *r, const char *why)
{
	if (json) {
		json_t *id = json_string(job_id);
		char *q = id ? json_dumps(id, JSON_ENCODE_ANY) : NULL;
		fprintf(out,
			"%s  {\n    \"job_id\": %s,\n    \"outcome\": \"%s\",\n    \"version\": "
			"%d\n  }",
			count[0] + count[1] + count[2] ? ",\n" : "", q ? q : "null",
			word[r->outcome], r->version);
		free(q);
		json_decref(id);
	} else {
		fprintf(out, "%-9s %s v%d%s%s\n", word[r->outcome], job_id, r->version,
			why ? " " : "", why ? why : "");
	}
	count[r->outcome]++;
}

/* The connection and transaction opened in the background (see the top). */
struct opener {
	pthread_t tid;
	bool started;
	atomic_bool done;
	char *conninfo, *actor; /* copies: a detached thread outlives the run */
	const char *reason;	/* an argv string */
	int shards;
	bool rules;	/* a file may hold notify rules (files_name_rules) */
	pal_store *st;
	pal_apply *ap;
	int ec, rc;	/* pal__cli_connect_msg's exit code, pal_store_apply_begin's rc */
	char msg[2100]; /* a connection failure, as pal_cli_connect prints it */
	char err[1024]; /* a failed BEGIN */
};

static void *opener_run(void *arg)
{
	struct opener *o = arg;
	o->ec = pal__cli_connect_msg(o->conninfo, false, &o->st, o->msg, sizeof o->msg);
	if (!o->ec)
		o->rc = pal_store_apply_begin_rules(o->st, o->actor, o->reason, o->shards, o->rules,
						    &o->ap, o->err, sizeof o->err);
	atomic_store(&o->done, true);
	return NULL;
}

/* Whether PATH is a regular file holding the text "notify_rules" (a
 * mention outside a rules document only costs a needless look).  A pipe
 * cannot be read twice: false. */
static bool file_names_rules(const char *path)
{
	gchar *text = NULL;
	gsize len = 0;
	if (!g_file_test(path, G_FILE_TEST_IS_REGULAR) ||
	    !g_file_get_contents(path, &text, &len, NULL))
		return false;
	bool has = memmem(text, len, "notify_rules", strlen("notify_rules")) != NULL;
	g_free(text);
	return has;
}

/* Whether one of FILES[0..n) may hold notify rules (file_names_rules):
 * the apply then takes the rules' lock exclusive from its start; a pipe's
 * rules take it when they come (pal_store_apply_begin_rules). */
static bool files_name_rules(int n, char **files)
{
	for (int i = 0; i < n; i++)
		if (file_names_rules(files[i]))
			return true;
	return false;
}

/* Start opening; the thread gets copies of what it reads.  RULES: the
 * files may change notify rules.  Freed by opener_take() or opener_drop(). */
static struct opener *opener_start(const pal_cli_common *c, const char *reason, bool rules)
{
	struct opener *o = g_new0(struct opener, 1);
	atomic_init(&o->done, false);
	o->reason = reason;
	o->rules = rules;
	o->conninfo = g_strdup(pal_cli_pg(c));
	o->shards = pal__cli_config_shards(c);
	o->actor = g_strdup(pal_cli_actor());
	o->started = !pthread_create(&o->tid, NULL, opener_run, o);
	return o;
}

/* Wait for the opener (or open here, if no thread started) and free it;
 * its connection and transaction go to *ST and *AP (NULL on a failure, whose
 * message is printed here).  Returns the exit code of a failure, 0. */
static int opener_take(struct opener *o, pal_store **st, pal_apply **ap)
{
	if (o->started)
		pthread_join(o->tid, NULL);
	else
		opener_run(o);
	*st = o->st;
	*ap = o->ap;
	int ec = o->ec;
	if (ec)
		fputs(o->msg, stderr);
	else if (o->rc) {
		pal_cli_err("apply", "%s; nothing applied", o->err);
		ec = o->rc == PAL_EDB ? PAL_EXIT_UNAVAIL : PAL_EXIT_SOFTWARE;
	}
	g_free(o->conninfo);
	g_free(o->actor);
	g_free(o);
	return ec;
}

/* Drop what the opener opened, unseen.  Returns false, and drops nothing,
 * while its connection attempt is still under way: the caller then ends the
 * process with _exit() instead of waiting for it (refused files must not
 * wait for an unreachable database) or running the exit handlers under it
 * (libpq's and OpenSSL's state, which the thread is using). */
static bool opener_drop(struct opener *o)
{
	if (o->started && !atomic_load(&o->done))
		return false;
	if (o->started)
		pthread_join(o->tid, NULL);
	pal_store_apply_abort(o->ap);
	pal_store_close(o->st);
	g_free(o->conninfo);
	g_free(o->actor);
	g_free(o);
	return true;
}

/* pal_store_apply_spec_gates()'s question: did a file define job ID? */
static bool loader_seen(void *ctx, const char *id)
{
	return pal_jobloader_seen(ctx, id);
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
	GPtrArray *suspended; /* ids of the jobs whose file says suspend: true */
	json_t *shadow;	      /* ids of the new jobs whose file says mode: shadow */
	json_t *shadow_live;  /* ... and of the jobs live before the apply */
	GHashTable *defined;  /* every id the files define (for the gates) */
	struct opener *op;    /* until the first store_set(), or the end of a failed run */
	/* the newest key a created or updated job sets that older nodes
	 * ignore (pal_job_spec_min_schema): its schema, the job, the key */
	int need_schema;
	char *need_job;
	const char *need_key;
	/* the notify rules of the files after the first (prescan_rules),
	 * stored with the first set, before any job */
	pal_jobset early;
	bool early_stored;
};

/* Store SET's notify rules in the apply and report each. */
static int store_rules(struct run *r, const pal_jobset *set, char *err, size_t errlen)
{
	size_t nr = set->n_notify_rules;
	if (!nr)
		return PAL_OK;
	pal_rule_outcome *ro = calloc(nr, sizeof *ro);
	int rc = ro ? pal_store_apply_notify_rules(r->ap, set->notify_rules, nr, ro, err, errlen)
		    : PAL_ENOMEM;
	for (size_t i = 0; !rc && !r->c->json && i < nr; i++) {
		static const char *const rw[] = {"unchanged", "created", "updated", "removed"};
		const pal_notify_rule *x = &set->notify_rules[i];
		fprintf(r->out, "%-9s notify rule %s %s %s\n", rw[ro[i]],
			x->tenant ? "tenant" : "group", x->name, x->n.url);
	}
	free(ro);
	return rc;
}

/* Hand SET to the store (connecting on first use); a failure is kept in
 * r->db_ec and stops further stores, not the validation of later files. */
static void store_set(struct run *r, const pal_jobset *set)
{
	char err[1024];
	if (r->db_ec)
		return;
	if (!r->ap) {
		r->db_ec = opener_take(r->op, &r->st, &r->ap);
		r->op = NULL;
		if (r->db_ec)
			return;
		pal_store_apply_secret_policy(r->ap, pal__cli_config_secrets(r->c->config));
	}
	/* the calendars first: the jobs after them carry their versions */
	size_t nc = set->n_calendars;
	pal_apply_result *res = calloc((set->n > nc ? set->n : nc) + 1, sizeof *res);
	int rc = res ? pal_store_apply_calendars(r->ap, set->calendars, nc, res, err, sizeof err)
		     : PAL_ENOMEM;
	for (size_t i = 0; !rc && !r->c->json && i < nc; i++)
		fprintf(r->out, "%-9s calendar %s v%d\n", word[res[i].outcome],
			set->calendars[i].name, res[i].version);
	/* then the notify rules, this set's and, with the first set, those of
	 * the later files: the jobs inherit them */
	if (!rc)
		rc = store_rules(r, set, err, sizeof err);
	if (!rc && !r->early_stored) {
		r->early_stored = true;
		rc = store_rules(r, &r->early, err, sizeof err);
		pal_jobset_free(&r->early);
	}
	if (!rc)
		rc = pal_store_apply_add(r->ap, set->jobs, set->n, res, err, sizeof err);
	if (rc) {
		pal_cli_err("apply", "%s; nothing applied",
			    rc == PAL_ENOMEM ? "out of memory" : err);
		pal_store_apply_abort(r->ap);
		r->ap = NULL;
		r->db_ec = rc == PAL_EDB			      ? PAL_EXIT_UNAVAIL
			   : rc == PAL_ENOGRANT || rc == PAL_EPERM ? PAL_EXIT_DATAERR
								   : PAL_EXIT_SOFTWARE;
	}
	for (size_t i = 0; !rc && i < set->n; i++) {
		report(r->out, r->c->json, r->count, set->jobs[i].id, &res[i], NULL);
		pal__cli_note_spent(&set->jobs[i], stderr);
		if (set->jobs[i].suspend)
			g_ptr_array_add(r->suspended, g_strdup(set->jobs[i].id));
		if (set->jobs[i].shadow)
			json_array_append_new(res[i].was_live ? r->shadow_live : r->shadow,
					      json_string(set->jobs[i].id));
	}
	const char *job, *key;
	int need = rc ? 0 : pal_apply_min_schema(set->jobs, res, set->n, &job, &key);
	if (need > r->need_schema) {
		r->need_schema = need;
		r->need_key = key;
		g_free(r->need_job);
		r->need_job = g_strdup(job);
	}
	free(res);
}

/* pal_apply_follow_fn: a job that follows a calendar or notify rules. */
static void report_follower(void *ctx, const char *job_id, int version, const char *follows)
{
	struct run *r = ctx;
	pal_apply_result res = {.outcome = PAL_APPLY_UPDATED, .version = version};
	char why[96];
	snprintf(why, sizeof why, "(follows %s)", follows);
	report(r->out, r->c->json, r->count, job_id, &res, why);
}

/* Whether every live node (of ROLE, NULL: any) runs a binary of schema
 * NEED or later, as WHAT needs.  Returns 0, else the exit code after
 * saying why: 4 with the older nodes named, 69 when the live nodes cannot
 * be read. */
static int require_schema(const struct run *r, int need, const char *role, const char *what)
{
	char msg[2048];
	int rc = pal_coord_require_schema(pal__cli_zk(r->c), pal__cli_config_zk_root(r->c),
					  pal__cli_config_cluster(r->c), 5000, need, role, what, msg,
					  sizeof msg);
	if (!rc)
		return PAL_EXIT_OK;
	pal_cli_err("apply", "%s; nothing applied", msg);
	return rc == PAL_EBUSY ? PAL_EXIT_REFUSED : PAL_EXIT_UNAVAIL;
}

/* Keys that nodes older than their schema ignore (`after`, `notify`,
 * `target.keep_*`) are applied only while every live node understands
 * them (docs/upgrades.md). */
static int check_node_schemas(const struct run *r)
{
	if (!r->need_schema)
		return PAL_EXIT_OK;
	char what[256];
	snprintf(what, sizeof what, "job %s sets %s", r->need_job, r->need_key);
	return require_schema(r, r->need_schema, NULL, what);
}

/* A version that takes over at its apply (pal_store_apply_takeover_job:
 * the apply cancels the old version's rows after it) is applied only
 * while every live node's controller activates it there, the dry run
 * checked too: 0, else the exit code after saying why (4, 69). */
static int check_takeover(const struct run *r)
{
	const char *job = pal_store_apply_takeover_job(r->ap);
	if (!job)
		return PAL_EXIT_OK;
	char what[512];
	snprintf(what, sizeof what, PAL_TAKEOVER_WHAT, job);
	/* the controllers: they activate the version (an executor plans nothing) */
	return require_schema(r, PAL_SCHEMA_TAKEOVER, "controller", what);
}

/* Jobs handed to the store at a time while a file is parsed: the server
 * starts on the first ones while the CLI reads the rest (the server's work
 * on a 5,000-job file is about three times the CLI's parse). */
#define BATCH 1000

/* One file's jobs as the loader hands them over (pal_jobbatch_fn). */
struct batch_ctx {
	struct run *r;
	pal_diags *diags;
	bool store;	  /* no earlier file was refused */
	bool refused;	  /* a key horizon of this file is refused */
	bool early;	  /* its notify rules are in r->early (prescan_rules) */
	pal_jobset ready; /* checked jobs waiting for the connection */
};

/* Move SET's jobs and calendars to the end of TO (TO owns them then; SET
 * is emptied). */
static bool jobs_move(pal_jobset *to, pal_jobset *set)
{
	pal_calendar *cv =
	    set->n_calendars
		? realloc(to->calendars, (to->n_calendars + set->n_calendars) * sizeof *cv)
		: to->calendars;
	if (set->n_calendars && !cv)
		return false;
	if (set->n_calendars) {
		memcpy(cv + to->n_calendars, set->calendars, set->n_calendars * sizeof *cv);
		to->calendars = cv;
		to->n_calendars += set->n_calendars;
		free(set->calendars);
		set->calendars = NULL;
		set->n_calendars = 0;
	}
	if (set->n_notify_rules) {
		pal_notify_rule *rv = realloc(
		    to->notify_rules, (to->n_notify_rules + set->n_notify_rules) * sizeof *rv);
		if (!rv)
			return false;
		memcpy(rv + to->n_notify_rules, set->notify_rules,
		       set->n_notify_rules * sizeof *rv);
		to->notify_rules = rv;
		to->n_notify_rules += set->n_notify_rules;
		free(set->notify_rules);
		set->notify_rules = NULL;
		set->n_notify_rules = 0;
	}
	pal_job_spec *v = realloc(to->jobs, (to->n + set->n + 1) * sizeof *v);
	if (!v)
		return false;
	if (set->n) /* an empty batch has no array: memcpy from NULL is undefined */
		memcpy(v + to->n, set->jobs, set->n * sizeof *v);
	to->jobs = v;
	to->n += set->n;
	free(set->jobs);
	*set = (pal_jobset){0};
	return true;
}

/* A batch of valid jobs: its key horizons checked, then stored, unless this
 * file or an earlier one was refused (then only checked, to report every
 * problem).  A problem found later in the file rolls the apply back.  While
 * the opener is still connecting the jobs wait in b->ready instead: an
 * invalid file must not wait for a database that does not answer (they are
 * stored once it answered, at the latest at the end of the file). */
static void take_batch(void *arg, pal_jobset *set)
{
	struct batch_ctx *b = arg;
	if (pal__cli_check_key_horizons(b->r->c->config, set, b->diags))
		b->refused = true;
	if (pal__cli_check_tenant_policy(b->r->c->config, set, b->diags))
		b->refused = true;
	if (b->early) { /* checked here as well, but stored before the first job */
		pal_notify_rules_free(set->notify_rules, set->n_notify_rules);
		set->notify_rules = NULL;
		set->n_notify_rules = 0;
	}
	if (b->store && !b->refused && !jobs_move(&b->ready, set))
		b->r->db_ec = PAL_EXIT_SOFTWARE; /* out of memory: stop storing */
	pal_jobset_free(set);
	if ((b->ready.n || b->ready.n_calendars || b->ready.n_notify_rules) && !b->refused &&
	    (b->r->ap || b->r->db_ec || !b->r->op->started || atomic_load(&b->r->op->done))) {
		store_set(b->r, &b->ready);
		pal_jobset_free(&b->ready);
	}
}

/*
 * The notify rules of the files after the first (the first file's come
 * before its jobs), into r->early: stored with the first set, before any
 * job, so that every job of the apply inherits every rule of it whatever
 * the order of the files (else a job stored before a later file's rule got
 * a second version, following it, in the same apply).  Only a regular file
 * that holds the text "notify_rules" is parsed (for its rules only; a file
 * read from a pipe cannot be read twice: its rules are stored where it
 * stands).  A file whose rules cannot be read here is left to its loading,
 * which reports the problem.  EARLY[i]: file i's rules are in r->early.
 */
static void prescan_rules(struct run *r, int n, char **files, bool *early)
{
	for (int i = 1; i < n; i++) {
		if (!file_names_rules(files[i]))
			continue;
		pal_jobset set = {0};
		pal_diags d = {0};
		if (!pal_jobfile_load_rules(files[i], &set, &d)) {
			pal_jobset rules = {.notify_rules = set.notify_rules,
					    .n_notify_rules = set.n_notify_rules};
			set.notify_rules = NULL;
			set.n_notify_rules = 0;
			early[i] = jobs_move(&r->early, &rules);
			pal_jobset_free(&rules);
		}
		pal_jobset_free(&set);
		pal_diags_free(&d);
	}
}

/* The dependency check of the files against the stored jobs too (an
 * upstream applied earlier is known; a cycle may run through stored jobs),
 * in the apply's session, before anything commits.  Returns the number of
 * problems added to DIAGS; a database error ends the apply (r->db_ec). */
static size_t check_after_stored(struct run *r, pal_jobloader *l, pal_diags *diags)
{
	char err[1024];
	int rc = pal_store_apply_sync(r->ap, err, sizeof err);

	if (!rc)
		rc = pal_store_after_graph_stored(r->st, pal_jobloader_after(l), NULL, err,
						  sizeof err);
	if (rc) {
		pal_cli_err("apply", "%s; nothing applied", err);
		r->db_ec = pal_cli_exit_code(rc);
		return 0;
	}
	return pal_jobloader_check_after(l, true, diags);
}

/* apply through the API (--server): one file, its documents in one body;
 * --prune retires the live jobs it does not define (?prune=true). */
static int apply_remote(const pal_cli_common *c, int n, char **files, const char *reason,
			bool prune, const char *prefix, bool dry)
{
	if (n != 1) {
		pal_cli_err("apply",
			    "through --server, apply takes one file (its documents in one "
			    "body; with --prune, the whole set: the jobs it does not define go)");
		return PAL_EXIT_USAGE;
	}
	char *text = NULL, *q_reason = g_uri_escape_string(reason, NULL, FALSE),
	     *q_file = g_uri_escape_string(files[0], NULL, FALSE),
	     *q_prefix = prefix ? g_uri_escape_string(prefix, NULL, FALSE) : NULL;
	gsize len = 0;
	GError *ge = NULL;
	if (!g_file_get_contents(files[0], &text, &len, &ge)) {
		pal_cli_err("apply", "%s", ge->message);
		g_error_free(ge);
		g_free(q_reason);
		g_free(q_file);
		g_free(q_prefix);
		return PAL_EXIT_DATAERR;
	}
	/* 0.3.0 drops ?prune_prefix and applies without retiring */
	int ec = prefix ? pal_cli_remote_needs(c, "apply", "--prune-prefix") : PAL_EXIT_OK;
	if (ec) {
		g_free(text);
		g_free(q_reason);
		g_free(q_file);
		g_free(q_prefix);
		return ec;
	}
	char *path =
	    g_strdup_printf("/api/v1/apply?dry_run=%s&reason=%s&file=%s%s%s%s",
			    dry ? "true" : "false", q_reason, q_file, prune ? "&prune=true" : "",
			    q_prefix ? "&prune_prefix=" : "", q_prefix ? q_prefix : "");
	json_t *ans = NULL;
	ec = pal_cli_remote_call(c, "apply", "POST", path, "application/yaml", text, len, &ans);
	g_free(path);
	/* what was pruned is the answer's word: a balancer may have passed the
	 * request to another node than the one that named its release */
	if (!ec && prefix &&
	    g_strcmp0(json_string_value(json_object_get(ans, "prune_prefix")), prefix)) {
		pal_cli_err("apply",
			    "--prune-prefix was asked, but the node's answer names no prune_prefix "
			    "(a node older than 0.4.0, behind a balancer?): %s; run it again "
			    "against a 0.4.0 node's own admin listener",
			    dry ? "the dry run below shows no retirement"
				: "the file WAS applied and nothing was retired");
		ec = PAL_EXIT_SOFTWARE;
	}
	if (ans)
		pal_cli_print_answer(c, ans);
	json_decref(ans);
	g_free(text);
	g_free(q_reason);
	g_free(q_file);
	g_free(q_prefix);
	return ec;
}

/* After the commit: what a controller planned from the old version of a
 * job whose new version took over at the apply, while the apply ran
 * (pal_store_apply_settle), as `delete` sweeps after its own.  A note on
 * stderr for what it cancelled and for jobs not taken in within 10 s
 * (a shard whose controller went stale meanwhile counts as not taken in). */
static int takeover_settle(pal_store *st, const char *reason)
{
	char err[1024];
	int64_t late = 0, pending = 0;
	if (pal_store_apply_settle(st, pal_cli_actor(), reason, 10000, &late, &pending, err,
				   sizeof err)) {
		pal_cli_err("apply", "%s (the versions are applied)", err);
		return PAL_EXIT_UNAVAIL;
	}
	if (late)
		fprintf(stderr,
			"palisade apply: note: %lld trigger%s planned from a replaced version "
			"during the apply cancelled\n",
			(long long)late, late == 1 ? "" : "s");
	if (pending)
		fprintf(stderr,
			"palisade apply: note: %lld job%s whose new version stops or moves its "
			"instants (or lives again) not taken in by its controller within 10 s (or whose controller "
			"stopped answering); rows its old version "
			"planned after the apply may still run: `palisade verify` counts them\n",
			(long long)pending, pending == 1 ? "" : "s");
	return PAL_EXIT_OK;
}

/* One report line after the jobs' of the job ID (a JSON string), the Nth
 * element of the report: {job_id, outcome: WORD[, live_from: AT]} with
 * --output json, else "WORD ID (NOTE)", or "WORD ID NOTE" when AT is given
 * (the note then begins with when). */
static void report_job_note(struct run *r, size_t nth, const json_t *id, const char *word,
			    const char *at, const char *note)
{
	if (r->c->json)
		fprintf(r->out,
			"%s  {\n    \"job_id\": \"%s\",\n    \"outcome\": \"%s\"%s%s%s\n  }",
			nth > 1 ? ",\n" : "", json_string_value(id), word,
			at ? ",\n    \"live_from\": \"" : "", at ? at : "", at ? "\"" : "");
	else
		fprintf(r->out, at ? "%-9s %s %s\n" : "%-9s %s (%s)\n", word, json_string_value(id),
			note);
}

int pal_cmd_apply(int argc, char **argv)
{
	pal_cli_common c = {0};
	const char *reason = "", *prefix = NULL;
	bool prune = false, dry = false;
	static const struct option lo[] = {PAL_CLI_COMMON_LONGOPTS,
					   {"reason", required_argument, NULL, 'r'},
					   {"prune", no_argument, NULL, 'P'},
					   {"prune-prefix", required_argument, NULL, 'X'},
					   {"dry-run", no_argument, NULL, 'n'},
					   {"help", no_argument, NULL, 'h'},
					   {0}};
	int opt, ec;
	while ((opt = getopt_long(argc, argv, "hr:n", lo, NULL)) != -1) {
		if (opt == 'r') {
			reason = optarg;
			continue;
		}
		if (opt == 'X') {
			if (!*optarg) {
				pal_cli_err("apply", "--prune-prefix: an empty prefix is --prune");
				return PAL_EXIT_USAGE;
			}
			prefix = optarg;
			continue;
		}
		if (opt == 'P' || opt == 'n') {
			*(opt == 'P' ? &prune : &dry) = true;
			continue;
		}
		if ((ec = pal_cli_opt_other(&c, opt, optarg, usage)) >= 0)
			return ec;
	}
	if (optind >= argc) {
		usage(stderr);
		return PAL_EXIT_USAGE;
	}
	if (prune && prefix) {
		pal_cli_err("apply", "--prune and --prune-prefix: give one of them");
		return PAL_EXIT_USAGE;
	}
	if (pal_cli_server(&c))
		return apply_remote(&c, argc - optind, argv + optind, reason, prune, prefix, dry);
	prune = prune || prefix;
	struct run r = {.c = &c,
			.reason = reason,
			.out = tmpfile(),
			.suspended = g_ptr_array_new_with_free_func(g_free),
			.shadow = json_array(),
			.shadow_live = json_array()};
	pal_jobloader *l = pal_jobloader_new();
	if (!r.out || !l) {
		pal_cli_err("apply", "%s; nothing applied",
			    r.out ? "out of memory" : "cannot create a temporary file");
		if (r.out)
			fclose(r.out);
		pal_jobloader_free(l);
		return PAL_EXIT_SOFTWARE;
	}
	r.op = opener_start(&c, reason, files_name_rules(argc - optind, argv + optind));
	bool *early = g_new0(bool, argc - optind);
	prescan_rules(&r, argc - optind, argv + optind, early);
	pal_diags diags = {0};
	size_t bad = 0;
	for (int i = optind; i < argc; i++) {
		struct batch_ctx b = {
		    .r = &r, .diags = &diags, .store = !bad, .early = early[i - optind]};
		if (pal_jobloader_file_batches(l, argv[i], BATCH, take_batch, &b, &diags) ||
		    b.refused)
			bad++;
		else if (b.ready.n || b.ready.n_calendars || b.ready.n_notify_rules)
			store_set(&r, &b.ready);
		pal_jobset_free(&b.ready);
	}
	if (!bad && !r.ap && !r.db_ec) {
		pal_jobset none = {0}; /* files without jobs: still one (empty) apply */
		store_set(&r, &none);
	}
	g_free(early);
	pal_jobset_free(&r.early); /* stored with the first set, or not to be */
	if (!bad && r.ap && !r.db_ec && !pal_after_graph_empty(pal_jobloader_after(l)) &&
	    check_after_stored(&r, l, &diags))
		bad++;
	if (bad) {
		bool dropped = !r.op || opener_drop(r.op);
		g_free(r.need_job);
		pal_jobloader_free(l);
		g_ptr_array_free(r.suspended, TRUE);
		json_decref(r.shadow);
		json_decref(r.shadow_live);
		pal_store_apply_abort(r.ap);
		pal_store_close(r.st);
		fclose(r.out);
		pal_diags_print(&diags, stderr);
		fprintf(stderr, "palisade apply: %zu error%s; nothing applied\n", diags.n,
			diags.n == 1 ? "" : "s");
		pal_diags_free(&diags);
		if (!dropped) {
			fflush(NULL);
			_exit(PAL_EXIT_DATAERR);
		}
		return PAL_EXIT_DATAERR;
	}
	pal_diags_free(&diags);
	char err[1024];
	int rc = 0;
	if (!r.db_ec && (r.db_ec = check_node_schemas(&r))) {
		pal_store_apply_abort(r.ap);
		r.ap = NULL;
	}
	/* --prune: the live jobs no file defines, retired in this transaction. */
	GPtrArray *gone = g_ptr_array_new_with_free_func(g_free);
	pal_retire_result *gres = NULL;
	json_t *kept = json_array(); /* --prune-prefix: cut over, not retired */
	if (!r.db_ec && prune) {
		json_t *ids = json_array();
		rc = pal_store_apply_sync(r.ap, err, sizeof err);
		if (!rc)
			rc = pal_store_prune_ids(r.st, prefix, loader_seen, l, ids, kept, err,
						 sizeof err);
		size_t i;
		json_t *id;
		json_array_foreach(ids, i, id)
		    g_ptr_array_add(gone, g_strdup(json_string_value(id)));
		json_decref(ids);
		gres = calloc(gone->len ? gone->len : 1, sizeof *gres);
		if (!rc && !gres)
			rc = PAL_ENOMEM;
		if (!rc && gone->len)
			rc = pal_store_apply_retire(r.ap, (const char *const *)gone->pdata,
						    gone->len, gres, err, sizeof err);
		if (rc) {
			pal_store_apply_abort(r.ap);
			r.ap = NULL;
		}
	}
	/* The stored jobs that name a calendar this apply changed: a version
	 * each, with the new rules, in this transaction. */
	if (!rc && !r.db_ec)
		rc = pal_store_apply_followers(r.ap, report_follower, &r, err, sizeof err);
	/* The gates of `suspend`, in the apply transaction, just before its
	 * commit; each an audited pause or resume. */
	json_t *close = json_array(), *lift = json_array(), *susp = json_array();
	json_t *shadowed = json_array(); /* put in shadow by `mode: shadow` */
	json_t *ignored = json_array();	 /* live before: `mode: shadow` left aside */
	json_t *covered = json_array();	 /* put in shadow, live by a cut-over step */
	for (guint i = 0; i < r.suspended->len; i++)
		json_array_append_new(susp, json_string(r.suspended->pdata[i]));
	pal_resume_opts ro;
	pal__cli_resume_opts(c.config, PAL_SCOPE_JOB, &ro);
	if (!rc && !r.db_ec)
		rc = pal_store_apply_spec_gates(r.ap, r.st, susp, loader_seen, l, pal_cli_actor(),
						&ro, close, lift, err, sizeof err);
	/* `mode: shadow`: in the same transaction (docs/migrating.md) */
	if (!rc && !r.db_ec)
		rc = pal_store_shadow_spec(r.st, r.shadow, r.shadow_live, pal_cli_actor(), shadowed,
					   ignored, covered, err, sizeof err);
	json_decref(susp);
	pal_jobloader_free(l);
	if (!rc && !r.db_ec)
		r.db_ec = check_takeover(&r);
	if (!rc && !r.db_ec) {
		if (dry)
			pal_store_apply_abort(r.ap);
		else
			rc = pal_store_apply_commit(r.ap, err, sizeof err);
		r.ap = NULL;
	}
	/* A step after the jobs failed (the followers of a rule change, the
	 * gates, `mode: shadow`): its transaction is rolled back and freed. */
	if (r.ap) {
		pal_store_apply_abort(r.ap);
		r.ap = NULL;
	}
	if (rc) {
		pal_cli_err("apply", "%s; nothing applied",
			    rc == PAL_ENOMEM ? "out of memory" : err);
		r.db_ec = pal_cli_exit_code(rc);
	}
	int64_t late = 0;
	if (!r.db_ec && !dry) {
		/* After the commit: the retired jobs' stragglers. */
		if (gone->len &&
		    (ec = pal__cli_retire_settle("apply", r.st, (const char *const *)gone->pdata,
						 gone->len, reason, 10000, &late)))
			r.db_ec = ec;
	}
	if (!r.db_ec && !dry)
		r.db_ec = takeover_settle(r.st, reason);
	pal_store_close(r.st);
	if (r.db_ec) {
		fclose(r.out);
		goto out;
	}
	/* Extra report lines: retired, suspended, lifted. */
	const char *w_ret = dry ? "would retire" : "retired",
		   *w_sus = dry ? "would suspend" : "suspended",
		   *w_lift = dry ? "would resume" : "resumed";
	size_t n_ret = 0;
	for (guint i = 0; i < gone->len; i++) {
		if (gres[i].outcome != PAL_RETIRE_RETIRED)
			continue;
		n_ret++;
		if (c.json)
			fprintf(r.out,
				"%s  {\n    \"job_id\": \"%s\",\n    \"outcome\": \"%s\",\n"
				"    \"version\": %d,\n    \"cancelled\": %lld\n  }",
				r.count[0] + r.count[1] + r.count[2] + n_ret > 1 ? ",\n" : "",
				(char *)gone->pdata[i], w_ret, gres[i].version,
				(long long)gres[i].cancelled);
		else
			fprintf(r.out, "%-9s %s v%d (%lld pending %s cancelled)\n", w_ret,
				(char *)gone->pdata[i], gres[i].version,
				(long long)gres[i].cancelled,
				gres[i].cancelled == 1 ? "trigger" : "triggers");
	}
	size_t extra = n_ret;
	for (int k = 0; k < 2; k++) {
		json_t *g = k ? lift : close;
		for (size_t i = 0; i < json_array_size(g); i++) {
			const char *id = json_string_value(json_array_get(g, i));
			extra++;
			if (c.json)
				fprintf(
				    r.out,
				    "%s  {\n    \"job_id\": \"%s\",\n    \"outcome\": \"%s\"\n  }",
				    r.count[0] + r.count[1] + r.count[2] + extra > 1 ? ",\n" : "",
				    id, k ? w_lift : w_sus);
			else
				fprintf(r.out, "%-9s %s (%s)\n", k ? w_lift : w_sus, id,
					k ? "suspend no longer set: its gate is lifted"
					  : "suspend: true: its gate is closed");
		}
	}
	size_t before = r.count[0] + r.count[1] + r.count[2];
	for (size_t i = 0; i < json_array_size(shadowed); i++)
		report_job_note(&r, before + ++extra, json_array_get(shadowed, i),
				dry ? "would shadow" : "shadow", NULL,
				"mode: shadow: planned, never called until a cutover");
	for (size_t i = 0; i < json_array_size(covered); i++) {
		json_t *o = json_array_get(covered, i);
		const char *at = json_string_value(json_object_get(o, "live_from"));
		char *note =
		    json_is_true(json_object_get(o, "now"))
			? g_strdup("now (mode: shadow, but a cut-over step of its scope already "
				   "taken makes it live: palisade calls it; remove its entry from "
				   "the old system now)")
			: g_strdup_printf("from %s (mode: shadow, but the cut-over step at %s "
					  "covers it: remove its entry from the old system before "
					  "%s)",
					  at, at, at);
		report_job_note(&r, before + ++extra, json_object_get(o, "job_id"),
				dry ? "would be live" : "live", at, note);
		g_free(note);
	}
	/* the jobs `mode: shadow` left live, those --prune-prefix kept */
	static const char *const why[] = {
	    "mode: shadow has no effect on a job that is live and was never in shadow: it stays "
	    "live; `palisade shadow --job %s` puts it in shadow",
	    "not in the file, but cut over to palisade: its entry is gone from the old system, "
	    "so --prune-prefix leaves it live; `palisade delete %s` retires it"};
	json_t *left[] = {ignored, kept};
	for (int k = 0; k < 2; k++)
		for (size_t i = 0; i < json_array_size(left[k]); i++) {
			json_t *id = json_array_get(left[k], i);
			char *note = g_strdup_printf(why[k], json_string_value(id));
			report_job_note(&r, before + ++extra, id,
					k	 ? "kept"
					: c.json ? "shadow ignored"
						 : "live",
					NULL, note);
			g_free(note);
		}
	size_t total = r.count[0] + r.count[1] + r.count[2] + extra;
	/* Committed: now the report. */
	if (c.json)
		fputs(total ? "[\n" : "[", stdout);
	rewind(r.out);
	char buf[65536];
	size_t n;
	while ((n = fread(buf, 1, sizeof buf, r.out)) > 0)
		fwrite(buf, 1, n, stdout);
	fclose(r.out);
	if (c.json)
		fputs(total ? "\n]\n" : "]\n", stdout);
	else {
		printf("apply: %zu created, %zu updated, %zu unchanged", r.count[0], r.count[1],
		       r.count[2]);
		if (prune)
			printf(", %zu retired", n_ret);
		if (json_array_size(close) || json_array_size(lift))
			printf(", %zu suspended, %zu resumed", json_array_size(close),
			       json_array_size(lift));
		if (json_array_size(shadowed))
			printf(", %zu put in shadow", json_array_size(shadowed));
		if (json_array_size(covered))
			printf(", %zu live by a cut-over", json_array_size(covered));
		if (json_array_size(kept))
			printf(", %zu cut over and kept", json_array_size(kept));
		printf("%s\n", dry ? " (dry run: nothing stored)" : "");
		if (late)
			printf(
			    "%lld more %s of retired jobs planned before their last version took "
			    "over: cancelled\n",
			    (long long)late, late == 1 ? "trigger" : "triggers");
	}
out:
	g_free(r.need_job);
	json_decref(close);
	json_decref(lift);
	json_decref(shadowed);
	json_decref(ignored);
	json_decref(covered);
	json_decref(kept);
	json_decref(r.shadow);
	json_decref(r.shadow_live);
	g_ptr_array_free(gone, TRUE);
	g_ptr_array_free(r.suspended, TRUE);
	free(gres);
	return r.db_ec;
}
