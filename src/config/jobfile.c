/*
 * jobfile.c - job files: YAML documents -> validated pal_job_spec lists.
 *
 * The loader: it reads each file's top level (`calendars:`, then `jobs:`),
 * validates every job with the key tables (jobkeys.c, which walks each
 * section into the files that own it: jobschedule.c, jobtarget.c,
 * jobtemplate.c, jobpolicy.c, jobafter.c, jobnotify.c), then runs the
 * checks that span keys, and keeps what the jobs of a set share: the ids
 * seen (a duplicate names the first definition), the calendars loaded so
 * far, the caches of parsed crons and zones, and the graph of `after`.
 * Validation never stops at the first problem: every key of every job is
 * checked and every problem becomes a diagnostic at file:line:col, sorted
 * into file order.
 *
 * Nothing here resolves ${ENV} secrets or touches the cluster; cron and zone
 * checks call the cron and tz modules (pure functions).  docs/jobs.md is the
 * user-facing copy of the key tables; keep them in step.
 */
#include <stdlib.h>
#include <string.h>
#include <glib.h>
#include "jobfile_int.h"
#include "calfile.h"
#include "palisade/aftergraph.h"

/* Where a job id was first defined, for the duplicate diagnostic; the id
 * itself follows the struct (it is the hash table's key) and the file name
 * is the loader's copy, shared by every job of the file. */
struct idpos {
	const char *file;
	int line, col;
	char id[];
};

struct pal_jobloader {
	GHashTable *ids;	/* id -> struct idpos (freed with the table) */
	GPtrArray *files;	/* the file names idpos point to */
	struct job_cache cache; /* parsed zones and crons, the calendars loaded so far */
	pal_after_graph *after; /* the valid jobs with `after`, for the set's checks */
	GHashTable *rules;	/* "g|t name url" of each notify rule -> "file:line:col" */
};

pal_jobloader *pal_jobloader_new(void)
{
	pal_jobloader *l = calloc(1, sizeof *l);

	if (!l)
		return NULL;
	l->ids = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, free);
	l->files = g_ptr_array_new_with_free_func(free);
	l->rules = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	pal__job_cache_init(&l->cache);
	l->after = pal_after_graph_new();
	if (!l->after) {
		pal_jobloader_free(l);
		return NULL;
	}
	return l;
}

void pal_jobloader_free(pal_jobloader *l)
{
	if (!l)
		return;
	g_hash_table_destroy(l->ids);
	g_ptr_array_free(l->files, TRUE);
	g_hash_table_destroy(l->rules);
	pal__job_cache_clear(&l->cache);
	pal_after_graph_free(l->after);
	free(l);
}

static bool seen_cb(void *arg, const char *id)
{
	return pal_jobloader_seen(arg, id);
}

pal_after_graph *pal_jobloader_after(pal_jobloader *l)
{
	return l->after;
}

bool pal_jobloader_seen(const pal_jobloader *l, const char *id)
{
	return l && g_hash_table_contains(l->ids, id);
}

/* The loader's copy of file name NAME (the last one added when equal). */
static const char *intern_file(pal_jobloader *l, const char *name)
{
	if (!name)
		return NULL;
	if (l->files->len && !strcmp(g_ptr_array_index(l->files, l->files->len - 1), name))
		return g_ptr_array_index(l->files, l->files->len - 1);
	char *copy = strdup(name);

	if (copy)
		g_ptr_array_add(l->files, copy);
	return copy;
}

/* Remember ID as defined at FILE:LINE:COL (FILE interned), unless it is
 * known already (the first definition is the one diagnostics name). */
static void remember_id(pal_jobloader *l, const char *id, const char *file, int line, int col)
{
	size_t n = strlen(id);
	struct idpos *ip;

	if (g_hash_table_contains(l->ids, id) || !(ip = malloc(sizeof *ip + n + 1)))
		return;
	memcpy(ip->id, id, n + 1);
	ip->file = file;
	ip->line = line;
	ip->col = col;
	g_hash_table_insert(l->ids, ip->id, ip);
}

/* Append S to SET, growing the array geometrically (set->n alone says how
 * much is allocated: the next power of two, at least 16). */
static int append_job(pal_jobset *set, pal_job_spec *s)
{
	size_t n = set->n;

	if (n == 0 || (n >= 16 && (n & (n - 1)) == 0)) {
		size_t cap = n < 16 ? 16 : 2 * n;
		pal_job_spec *v = realloc(set->jobs, cap * sizeof *v);

		if (!v)
			return PAL_ENOMEM;
		set->jobs = v;
	}
	set->jobs[set->n++] = *s;
	return 0;
}

/* The checks that span keys, once every key of the job is read, in this
 * order (a file's diagnostics are sorted by position, stably). */
static void cross_checks(struct jctx *c, const pal_ynode *job, pal_job_spec *s)
{
	/* only meaningful when the parts they combine are valid */
	pal__job_check_window(c, s);
	pal__job_check_backoff(c, s);
	pal__job_check_idem(c, job, s);
	pal__job_check_body(c, s);
	pal__job_check_schedule(c, job, s);
}

/* Validate one job mapping; append it to SET when it has no problem.
 * Returns the number of problems. */
static int load_job(const pal_ydoc *doc, const char *file, const pal_ynode *jn, pal_jobset *set,
		    pal_jobloader *l, pal_diags *diags)
{
	struct jctx c = {.doc = doc, .diags = diags, .tz_ok = true, .cache = &l->cache};
	pal_job_spec s;

	if (pal_job_spec_defaults(&s) != 0) {
		pal_ydiag(diags, doc, jn, "out of memory");
		return 1;
	}
	if (jn->kind != PAL_YNODE_MAP) {
		pal_ydiag(diags, doc, jn,
			  "job: expected a mapping with keys id, schedule, target, "
			  "got %s",
			  pal_ynode_describe(jn));
		pal_job_spec_clear(&s);
		return 1;
	}
	pal__job_walk(&c, &pal__job_section, jn, &s);
	pal__job_after_schedule(&c, jn, &s);
	cross_checks(&c, jn, &s);

	if (s.id) {
		const pal_ynode *idn = pal_ynode_get(jn, "id");
		struct idpos *first = g_hash_table_lookup(l->ids, s.id);

		if (first)
			pal__job_diag(
			    &c, idn,
			    "duplicate job id \"%s\" (first defined at %s:%d:%d); hint: job ids "
			    "are unique across all files",
			    s.id, first->file ? first->file : "?", first->line, first->col);
		else
			remember_id(l, s.id, file, idn->line, idn->col);
	}
	if (c.errors == 0) {
		s.file = strdup(doc->file);
		s.line = jn->line;
		s.col = jn->col;
		if (!s.file ||
		    (s.n_after &&
		     pal_after_graph_add_loaded(l->after, s.id, s.after, s.n_after, file) != 0) ||
		    append_job(set, &s) != 0) {
			pal_ydiag(diags, doc, jn, "out of memory");
			pal_job_spec_clear(&s);
			return 1;
		}
		return 0;
	}
	pal_job_spec_clear(&s);
	return c.errors;
}

/* Append calendar C (taken) to SET's list; PAL_ENOMEM leaves C to the caller. */
static int append_calendar(pal_jobset *set, pal_calendar *c)
{
	pal_calendar *v = realloc(set->calendars, (set->n_calendars + 1) * sizeof *v);

	if (!v)
		return PAL_ENOMEM;
	set->calendars = v;
	set->calendars[set->n_calendars++] = *c;
	return 0;
}

/* Validate one item of `calendars:`; known to the loader (for the jobs
 * after it) and appended to SET when it has no problem.  Returns the
 * number of problems. */
static int load_calendar(const pal_ydoc *doc, const pal_ynode *n, pal_jobset *set, pal_jobloader *l,
			 pal_diags *diags)
{
	pal_calendar c, *mine = NULL;
	int errors = pal__calfile_parse(doc, n, &c, diags);

	if (errors)
		return errors;
	const pal_calendar *first = g_hash_table_lookup(l->cache.cals, c.name);

	if (first) {
		pal_ydiag(diags, doc, n,
			  "duplicate calendar \"%s\" (first defined at %s:%d:%d); hint: calendar "
			  "names are unique across all files",
			  c.name, first->file ? first->file : "?", first->line, first->col);
		pal_calendar_clear(&c);
		return 1;
	}
	c.file = doc->file ? strdup(doc->file) : NULL;
	if ((doc->file && !c.file) || !(mine = malloc(sizeof *mine)) ||
	    pal_calendar_copy(mine, &c) != 0 || append_calendar(set, &c) != 0) {
		pal_ydiag(diags, doc, n, "out of memory");
		free(mine);
		pal_calendar_clear(&c);
		return 1;
	}
	g_hash_table_insert(l->cache.cals, mine->name, mine);
	return 0;
}

/* Validate one item of `notify_rules:`; appended to SET when it has no
 * problem and no earlier rule of the set has its scope and url.  Returns
 * the number of problems. */
static int load_rule(const pal_ydoc *doc, const pal_ynode *n, pal_jobset *set, pal_jobloader *l,
		     pal_diags *diags)
{
	pal_notify_rule r;
	int errors = pal__notify_rule_parse(doc, n, &r, diags);

	if (errors)
		return errors;
	char *key = g_strdup_printf("%c %s %s", r.tenant ? 't' : 'g', r.name, r.n.url);
	const char *first = g_hash_table_lookup(l->rules, key);

	if (first) {
		pal_ydiag(diags, doc, n,
			  "duplicate notify rule for %s %s and url %s (first defined at %s); "
			  "hint: one entry per scope and url, listing all its events",
			  r.tenant ? "tenant" : "group", r.name, r.n.url, first);
		g_free(key);
		pal_notify_rule_clear(&r);
		return 1;
	}
	pal_notify_rule *v =
	    realloc(set->notify_rules, (set->n_notify_rules + 1) * sizeof *set->notify_rules);
	if (!v) {
		pal_ydiag(diags, doc, n, "out of memory");
		g_free(key);
		pal_notify_rule_clear(&r);
		return 1;
	}
	set->notify_rules = v;
	set->notify_rules[set->n_notify_rules++] = r;
	g_hash_table_insert(
	    l->rules, key,
	    g_strdup_printf("%s:%d:%d", doc->file ? doc->file : "?", n->line, n->col));
	return 0;
}

/* The top level of DOC: its calendars, then its jobs, the first SKIP_CALS
 * and SKIP of which were loaded already (while the file was parsed:
 * pal_jobloader_file_batches). */
static int load_doc(const pal_ydoc *doc, pal_jobset *set, pal_jobloader *l, pal_diags *diags,
		    size_t skip_cals, size_t skip_rules, size_t skip)
{
	static const char *const top[] = {"jobs", "calendars", "notify_rules"};
	const pal_ynode *root = doc->root, *jobs = NULL, *cals = NULL, *jobs_key = NULL;
	const pal_ynode *rules = NULL;
	int errors = 0;

	if (!root || root->kind != PAL_YNODE_MAP) {
		pal_ydiag(diags, doc, root,
			  "expected a mapping with the key \"jobs\", got %s; hint: start the file "
			  "with \"jobs:\" followed by a list of jobs",
			  pal_ynode_describe(root));
		return 1;
	}
	for (size_t i = 0; i < root->n; i++) {
		const pal_ynode *kn = root->keys[i];
		const char *hint;

		if (!strcmp(kn->str, "jobs")) {
			jobs = root->vals[i];
			jobs_key = kn;
			continue;
		}
		/* the lists the jobs use: before them */
		bool is_cals = !strcmp(kn->str, "calendars");
		if (is_cals || !strcmp(kn->str, "notify_rules")) {
			*(is_cals ? &cals : &rules) = root->vals[i];
			if (jobs_key) {
				pal_ydiag(diags, doc, kn,
					  "\"%s\" after \"jobs\" (line %d); hint: define %s before "
					  "the jobs",
					  kn->str, jobs_key->line,
					  is_cals ? "calendars" : "notify rules");
				errors++;
			}
			continue;
		}
		hint = pal_suggest(kn->str, top, N(top));
		errors++;
		if (hint)
			pal_ydiag(diags, doc, kn,
				  "unknown key \"%.64s\" at the top level (did you "
				  "mean \"%s\"?)",
				  kn->str, hint);
		else
			pal_ydiag(
			    diags, doc, kn,
			    "unknown key \"%.64s\" at the top level; hint: "
			    "a job file holds only \"calendars:\", \"notify_rules:\" and \"jobs:\"",
			    kn->str);
	}
	if (cals && pal_yexpect_seq(doc, cals, "calendars", diags) != 0)
		errors++;
	else
		for (size_t i = skip_cals; cals && i < cals->n; i++)
			errors += load_calendar(doc, cals->vals[i], set, l, diags);
	if (rules && pal_yexpect_seq(doc, rules, "notify_rules", diags) != 0)
		errors++;
	else
		for (size_t i = skip_rules; rules && i < rules->n; i++)
			errors += load_rule(doc, rules->vals[i], set, l, diags);
	if (!jobs && (cals || rules))
		return errors;
	if (!jobs) {
		if (!errors)
			pal_ydiag(diags, doc, root,
				  "the key \"jobs\" is missing; hint: start the file "
				  "with \"jobs:\" followed by a list of jobs");
		return errors + 1;
	}
	if (pal_yexpect_seq(doc, jobs, "jobs", diags) != 0)
		return errors + 1;
	const char *file = intern_file(l, doc->file);

	for (size_t i = skip; i < jobs->n; i++)
		errors += load_job(doc, file, jobs->vals[i], set, l, diags);
	return errors;
}

static gint diag_cmp(gconstpointer a, gconstpointer b, gpointer unused)
{
	const pal_diag *x = a, *y = b;
	long lx = x->line > 0 ? x->line : 0x7fffffffL, ly = y->line > 0 ? y->line : 0x7fffffffL;

	(void)unused;
	if (lx != ly)
		return lx < ly ? -1 : 1;
	return x->col < y->col ? -1 : x->col > y->col;
}

/* Diagnostics of one file read best in file order; checks that span keys
 * run last, so sort (stable: same position keeps its order). */
static void sort_diags(pal_diags *d, size_t from)
{
	if (d && d->n > from + 1)
		g_qsort_with_data(d->v + from, (gint)(d->n - from), sizeof *d->v, diag_cmp, NULL);
}

/* Diagnostics of several files: by file, then in file order. */
static gint file_diag_cmp(gconstpointer a, gconstpointer b, gpointer unused)
{
	const pal_diag *x = a, *y = b;
	int c = strcmp(x->file ? x->file : "", y->file ? y->file : "");

	return c ? c : diag_cmp(a, b, unused);
}

size_t pal_jobloader_check_after(pal_jobloader *l, bool stored_checked, pal_diags *diags)
{
	size_t from = diags->n;
	size_t n = pal_after_graph_check(l->after, seen_cb, l, stored_checked, diags);

	if (diags->n > from + 1)
		g_qsort_with_data(diags->v + from, (gint)(diags->n - from), sizeof *diags->v,
				  file_diag_cmp, NULL);
	return n;
}

/* A loader that knows the ids of SET already (NULL on ENOMEM). */
static pal_jobloader *loader_for(const pal_jobset *set)
{
	pal_jobloader *l = pal_jobloader_new();

	for (size_t i = 0; l && i < set->n_calendars; i++) {
		pal_calendar *c = malloc(sizeof *c);

		if (c && pal_calendar_copy(c, &set->calendars[i]) == 0)
			g_hash_table_insert(l->cache.cals, c->name, c);
		else
			free(c);
	}
	for (size_t i = 0; l && i < set->n; i++)
		if (set->jobs[i].id)
			remember_id(l, set->jobs[i].id, intern_file(l, set->jobs[i].file),
				    set->jobs[i].line, set->jobs[i].col);
	return l;
}

int pal_jobfile_load_buffer(const char *name, const void *buf, size_t len, pal_jobset *set,
			    pal_diags *diags)
{
	pal_jobloader *l = loader_for(set);
	pal_ydoc doc;
	int rc, errors = 0;

	size_t from = diags->n;

	if (!l)
		return PAL_ENOMEM;
	rc = pal_ydoc_load_buffer(name, buf, len, &doc, diags);
	if (rc == 0)
		errors = load_doc(&doc, set, l, diags, 0, 0, 0);
	sort_diags(diags, from);
	pal_ydoc_free(&doc);
	pal_jobloader_free(l);
	if (rc)
		return rc == PAL_ENOMEM ? PAL_ENOMEM : PAL_EINVAL;
	return errors ? PAL_EINVAL : 0;
}

int pal_jobloader_file(pal_jobloader *l, const char *path, pal_jobset *set, pal_diags *diags)
{
	pal_ydoc doc;
	size_t from = diags->n;
	int rc = pal_ydoc_load_file(path, &doc, diags), bad = 0;

	if (rc == 0)
		bad = load_doc(&doc, set, l, diags, 0, 0, 0);
	sort_diags(diags, from);
	pal_ydoc_free(&doc);
	return rc || bad ? PAL_EINVAL : 0;
}

/* One file's load by pal_jobloader_file_batches. */
struct batches {
	pal_jobloader *l;
	pal_diags *diags;
	size_t size;
	pal_jobbatch_fn take;
	void *arg;
	pal_jobset cur;	   /* valid jobs not handed over yet */
	size_t done;	   /* items of `jobs` loaded while the file was parsed */
	size_t cals_done;  /* and of `calendars` */
	size_t rules_done; /* and of `notify_rules` */
	int errors;
};

static void hand_over(struct batches *b)
{
	pal_jobset set = b->cur;

	b->cur = (pal_jobset){0};
	b->take(b->arg, &set);
}

/* An item of `jobs`, just parsed: validate it now (pal_ydoc_item_fn). */
static void batch_item(void *arg, const pal_ydoc *doc, const pal_ynode *key, const pal_ynode *item)
{
	struct batches *b = arg;

	if (!strcmp(key->str, "calendars")) {
		b->errors += load_calendar(doc, item, &b->cur, b->l, b->diags);
		b->cals_done++;
		return;
	}
	if (!strcmp(key->str, "notify_rules")) {
		b->errors += load_rule(doc, item, &b->cur, b->l, b->diags);
		b->rules_done++;
		return;
	}
	if (strcmp(key->str, "jobs"))
		return; /* an unknown top-level key: load_doc reports it */
	b->errors += load_job(doc, intern_file(b->l, doc->file), item, &b->cur, b->l, b->diags);
	b->done++;
	if (!b->errors && b->cur.n >= b->size)
		hand_over(b);
}

int pal_jobloader_file_batches(pal_jobloader *l, const char *path, size_t size,
			       pal_jobbatch_fn take, void *arg, pal_diags *diags)
{
	pal_ydoc doc;
	size_t from = diags->n;
	struct batches b = {
	    .l = l, .diags = diags, .size = size ? size : 1, .take = take, .arg = arg};
	int rc = pal_ydoc_load_file_items(path, &doc, diags, batch_item, &b);

	if (rc == 0)
		b.errors += load_doc(&doc, &b.cur, l, diags, b.cals_done, b.rules_done, b.done);
	if (rc == 0 && !b.errors)
		hand_over(&b);
	pal_jobset_free(&b.cur);
	sort_diags(diags, from);
	pal_ydoc_free(&doc);
	return rc || b.errors ? PAL_EINVAL : 0;
}

/* An item of `notify_rules:` for pal_jobfile_load_rules (pal_ydoc_item_fn). */
struct rules_only {
	pal_jobloader *l;
	pal_jobset *set;
	pal_diags *diags;
	int errors;
};

static void rule_item(void *arg, const pal_ydoc *doc, const pal_ynode *key, const pal_ynode *item)
{
	struct rules_only *r = arg;

	if (!strcmp(key->str, "notify_rules"))
		r->errors += load_rule(doc, item, r->set, r->l, r->diags);
}

int pal_jobfile_load_rules(const char *path, pal_jobset *set, pal_diags *diags)
{
	pal_ydoc doc;
	struct rules_only r = {.l = pal_jobloader_new(), .set = set, .diags = diags};

	if (!r.l)
		return PAL_ENOMEM;
	int rc = pal_ydoc_load_file_items(path, &doc, diags, rule_item, &r);

	pal_ydoc_free(&doc);
	pal_jobloader_free(r.l);
	return rc ? rc : r.errors ? PAL_EINVAL : 0;
}

int pal_jobfiles_load(const char *const *paths, size_t n, pal_jobset *set, pal_diags *diags)
{
	pal_jobloader *l = loader_for(set);
	int bad = 0;

	if (!l)
		return PAL_ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (pal_jobloader_file(l, paths[i], set, diags))
			bad++;
	if (pal_jobloader_check_after(l, false, diags))
		bad++;
	pal_jobloader_free(l);
	return bad ? PAL_EINVAL : 0;
}
