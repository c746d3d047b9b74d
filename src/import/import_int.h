/* import_int.h - what the importers (crontab.c, kubernetes.c, quartz.c) share:
 * the result, the report, quoting and the writing of one job (common.c). */
#ifndef PALISADE_IMPORT_INT_H
#define PALISADE_IMPORT_INT_H

#include <glib.h>
#include <stdbool.h>
#include "palisade/importer.h"
#include "palisade/jobspec.h"

struct pal_import_result {
	GString *yaml;	 /* "  - id: ..." items */
	GString *report; /* one line per element not translated exactly */
	GString *file;	 /* pal_import_yaml()'s "jobs:" + items */
	GHashTable *ids; /* ids handed out (owned keys) */
	size_t n_jobs, n_issues;
};

/* One job to write; every string is borrowed.  NULL means "leave the key
 * out" (its default), except where noted. */
typedef struct pal__import_job {
	const char *id; /* wanted id, a valid name; made unique */
	const char *tenant;
	const char *cron; /* one of cron, every_s, has_at */
	int64_t every_s;  /* schedule.every, seconds */
	bool has_at;	  /* schedule.at */
	int64_t at;
	const char *timezone; /* required */
	const char *misfire;  /* a YAML flow value, e.g. "skip" */
	const char *overlap;
	bool suspend;
	bool has_start, has_end, has_priority;
	int64_t start, end; /* UTC seconds */
	int priority;
	const char *description;
	/* labels: n_labels pairs, labels[2i] the key and labels[2i+1] the
	 * value, each valid (pal_label_key_problem) */
	const char *const *labels;
	size_t n_labels;
	const char *body;   /* a JSON body template (pal__import_json_str) */
	const char *source; /* the source entry's text: {digest} */
	size_t source_len;
} pal__import_job;

/* Append "NAME:WHERE: WHAT: fmt..." to the report and count it. */
void pal__import_issue(pal_import_result *r, const char *name, const char *where, const char *what,
		       const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* The same line, as a note: it does not count as an element not
 * translated exactly (pal_import_issues()), so the exit status stays. */
void pal__import_note(pal_import_result *r, const char *name, const char *where, const char *what,
		      const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Write J into R with O's target URL ({job} the id used, {digest} of
 * J->source); the id gets "-2", "-3", ... when an earlier job has it.
 * Returns the id used, owned by R. */
const char *pal__import_emit(pal_import_result *r, const pal__import_job *j,
			     const pal_import_opts *o);

/* An earlier job of R has the id ID. */
bool pal__import_taken(const pal_import_result *r, const char *id);

/* Append S as a JSON string (with its quotes) to G, escaped so that it is
 * taken literally in a palisade body template: '$' and '{' are written as
 * \u0024 and \u007b, which a JSON reader turns back into the same text. */
void pal__import_json_str(GString *g, const char *s);

/* A name ([a-z0-9][a-z0-9._-]*) made of S: lower case, every run of other
 * characters one '-', at most MAX bytes, cut at a '-' where one is near;
 * "" when S has no letter or digit.  g_free(). */
char *pal__import_slug(const char *s, size_t max);

/* NULL when CRON parses and fires at least once after FROM in ZONE (which
 * opens), else why not (g_free()). */
char *pal__import_check_schedule(const char *cron, const char *zone, int64_t from);

/* NULL, or how cron's and palisade's instants of the fixed-time 5-field
 * CRON in ZONE differ at the first spring-forward change in [FROM, TO):
 * cron runs a fixed-time entry once for every one of its wall times that a
 * change skips and once more for the first time after it (Vixie cron's
 * catch-up), palisade fires all of them once, at the change (docs/cron.md,
 * gap=shift).  The two differ when two of the entry's times fall in the
 * skipped span with its end.  g_free(). */
char *pal__import_gap_collision(const char *cron, const char *zone, int64_t from, int64_t to);

/* Valid UTF-8 without control characters other than tab. */
bool pal__import_text_ok(const char *s, size_t len);

#endif
