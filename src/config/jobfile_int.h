/*
 * jobfile_int.h - what the files of the job loader share (src/config/job*.c).
 *
 * jobfile.c (files, documents, ids), jobcache.c (what the loader parses
 * once), jobkeys.c (the job's key table, the walk, the diagnostics),
 * jobschedule.c, jobtarget.c, jobtemplate.c, jobpolicy.c, jobafter.c and
 * jobnotify.c (one part of a job each, with its section's table and its
 * checks that span keys).  Nothing here is for other modules: they load job
 * files through jobfile.h.
 */
#ifndef PALISADE_CONFIG_JOBFILE_INT_H
#define PALISADE_CONFIG_JOBFILE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <glib.h>
#include "palisade/calendar.h"
#include "palisade/cron.h"
#include "palisade/diags.h"
#include "palisade/jobfile.h"
#include "palisade/tz.h"
#include "palisade/yamltree.h"

#define MS_S 1000LL
#define MS_M (60 * MS_S)
#define MS_H (60 * MS_M)
#define MS_D (24 * MS_H)

#define NAME_MAX_LEN 128
#define URL_MAX_LEN 2048

/* Per-job validation state. */
struct jctx {
	const pal_ydoc *doc;
	pal_diags *diags;
	int errors; /* problems found in the current job */

	/* nodes remembered for the checks that span keys */
	const pal_ynode *n_schedule, *n_cron, *n_every, *n_at, *n_start, *n_end, *n_idem;
	const pal_ynode *n_partitions;
	const pal_ynode *n_backoff_max, *n_body, *n_status_url;
	const pal_ynode *n_after;
	bool cron_ok, tz_ok;
	struct job_cache *cache; /* the loader's parsed crons and zones, its calendars */
};

/* ---- diagnostics (jobkeys.c) ---- */

/* A diagnostic at node N of the job's document; counts against the job. */
void pal__job_diag(struct jctx *c, const pal_ynode *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Diagnostic at byte offset OFF inside scalar N: exact when the scalar is on
 * one line without escapes, otherwise at the scalar's start. */
void pal__job_diag_at(struct jctx *c, const pal_ynode *n, size_t off, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Wrap the typed accessors so that failures count against the job. */
#define CHECK(c, call)                                                                             \
	do {                                                                                       \
		if ((call) != 0)                                                                   \
			(c)->errors++;                                                             \
	} while (0)

/* ---- the key tables (jobkeys.c walks them) ---- */

enum ktype {
	K_NAME,	     /* char *, [a-z0-9][a-z0-9._-]* */
	K_INT32,     /* int32_t in [min, max] */
	K_DURATION,  /* int64_t ms in [min, max] */
	K_DURATION0, /* the same, or 0 meaning none */
	K_NUMBER,    /* double in [min, max] */
	K_ENUM,	     /* enum stored as int */
	K_SECTION,   /* nested mapping, walked with sub */
	K_CUSTOM,    /* fn */
};

struct section;

struct keydef {
	const char *name;
	enum ktype type;
	size_t off; /* into pal_job_spec */
	int64_t min, max;
	const char *const *names; /* K_ENUM */
	size_t n_names;
	const char *what; /* K_ENUM: "misfire policy" */
	const struct section *sub;
	void (*fn)(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
	bool required;
};

struct section {
	const char *name; /* for messages: "job", "schedule", ... */
	const struct keydef *keys;
	size_t n;
};

/* The name tables are the model's (jobspec.h), one of each. */
#define misfire_names pal_misfire_policy_names
#define overlap_names pal_overlap_policy_names
#define jitter_names pal_jitter_names
#define method_names pal_http_method_names
#define gap_names pal_dst_gap_names
#define dst_overlap_names pal_dst_overlap_names

#define OFF(field) offsetof(pal_job_spec, field)
#define N(a) (sizeof(a) / sizeof((a)[0]))

/* Each section's table, beside the keys it checks. */
extern const struct section pal__job_section;	       /* jobkeys.c */
extern const struct section pal__job_schedule_section; /* jobschedule.c */
extern const struct section pal__job_dst_section;      /* jobschedule.c */
extern const struct section pal__job_target_section;   /* jobtarget.c */
extern const struct section pal__job_misfire_section;  /* jobpolicy.c */
extern const struct section pal__job_retry_section;    /* jobpolicy.c */
extern const struct section pal__job_backoff_section;  /* jobpolicy.c */

/*
 * Apply table SEC to mapping MAP of spec S: every key of MAP is checked,
 * unknown ones get a suggestion (or the section they belong in), and the
 * missing required keys are reported at the mapping.
 */
void pal__job_walk(struct jctx *c, const struct section *sec, const pal_ynode *map,
		   pal_job_spec *s);

/* ---- values every part checks (jobkeys.c) ---- */

/* An id, tenant or group name: [a-z0-9][a-z0-9._-]*, at most MAX bytes,
 * into *OUT (the old value freed); *OUT is left alone on a problem. */
void pal__job_name(struct jctx *c, const pal_ynode *v, const char *what, int64_t max, char **out);

/* A string key of at most MAX bytes (the caller frees it); NULL (with a
 * diagnostic) otherwise. */
char *pal__job_str(struct jctx *c, const pal_ynode *v, const char *what, size_t max);

/* ---- templates and secrets (jobtemplate.c) ---- */

enum {
	PH_JOB = 1 << 0,
	PH_SCHEDULED_AT = 1 << 1,
	PH_SCHEDULED_DATE = 1 << 2,
	PH_PARTITION = 1 << 3,
	PH_TRIGGER = 1 << 4,
	PH_REQUEST_ID = 1 << 5,
	PH_IDEMPOTENCY_KEY = 1 << 6,
};

#define PH_COMMON                                                                                  \
	(PH_JOB | PH_SCHEDULED_AT | PH_SCHEDULED_DATE | PH_PARTITION | PH_TRIGGER | PH_REQUEST_ID)

/*
 * Check the string of scalar V for ${SECRET} references (allowed when
 * SECRETS) and {placeholder}s from ALLOWED (a PH_* mask; 0: none is
 * expanded in this field).  Returns the mask of the placeholders used.
 */
unsigned pal__job_template(struct jctx *c, const pal_ynode *v, const char *what, unsigned allowed,
			   bool secrets);

/* ---- urls (jobtarget.c) ---- */

/* U (the string of V) is an http or https url palisade may call; false
 * (with a diagnostic) otherwise.  Placeholders and secrets are not
 * checked: pal__job_template() does that. */
bool pal__job_url(struct jctx *c, const pal_ynode *v, const char *what, const char *u);

/* ---- keys of the job's table that live with their part ---- */

void pal__job_key_after(struct jctx *c, const pal_ynode *v, pal_job_spec *s);	/* jobafter.c */
void pal__job_key_notify(struct jctx *c, const pal_ynode *v, pal_job_spec *s);	/* jobnotify.c */
void pal__job_key_labels(struct jctx *c, const pal_ynode *v, pal_job_spec *s); /* joblabels.c */
void pal__job_key_idem(struct jctx *c, const pal_ynode *v, pal_job_spec *s);	/* jobtemplate.c */
void pal__job_key_misfire(struct jctx *c, const pal_ynode *v, pal_job_spec *s); /* jobpolicy.c */
void pal__job_key_partitions(struct jctx *c, const pal_ynode *v, pal_job_spec *s); /* jobpolicy.c */
void pal__job_key_suspend(struct jctx *c, const pal_ynode *v, pal_job_spec *s);	   /* jobpolicy.c */
void pal__job_key_mode(struct jctx *c, const pal_ynode *v, pal_job_spec *s);	   /* jobpolicy.c */

/* Validate `notify_rules:` item N of DOC into OUT: returns the number of
 * problems, each appended to DIAGS; OUT is cleared on any (jobnotify.c). */
int pal__notify_rule_parse(const pal_ydoc *doc, const pal_ynode *n, pal_notify_rule *out,
			   pal_diags *diags);

/* ---- checks that span keys, run by the loader in this order ---- */

void pal__job_check_window(struct jctx *c, pal_job_spec *s);			 /* jobschedule.c */
void pal__job_check_backoff(struct jctx *c, pal_job_spec *s);			 /* jobpolicy.c */
void pal__job_check_idem(struct jctx *c, const pal_ynode *job, pal_job_spec *s); /* jobtemplate.c */
void pal__job_check_body(struct jctx *c, pal_job_spec *s);			 /* jobtarget.c */
void pal__job_check_schedule(struct jctx *c, const pal_ynode *job,
			     pal_job_spec *s); /* jobschedule.c */

/* A job with `after` has no schedule and gets the never-firing cron; one
 * without has a schedule (jobafter.c). */
void pal__job_after_schedule(struct jctx *c, const pal_ynode *jn, pal_job_spec *s);

/* ---- the loader's cache (jobcache.c) ---- */

/* Zones and crons that parsed, by name and normalised expression, and the
 * calendars loaded so far, by name; the cache owns all of them. */
struct job_cache {
	GHashTable *tzs;   /* name -> pal_tz */
	GHashTable *crons; /* expression -> pal_cron */
	GHashTable *cals;  /* name -> pal_calendar (the `calendars:` loaded so far) */
};

/* Make K's empty tables; pal__job_cache_clear() frees them and all they hold. */
void pal__job_cache_init(struct job_cache *k);
void pal__job_cache_clear(struct job_cache *k);

/* The zone NAME, opened once per cache (the cache owns it); NULL with ERR
 * when it does not open. */
const pal_tz *pal__job_cached_tz(struct job_cache *k, const char *name, char *err, size_t errlen);
/* The cron EXPR, parsed once per cache (the cache owns it); NULL with ERR
 * and *FIELD (1-based, when not NULL) when it does not parse. */
const pal_cron *pal__job_cached_cron(struct job_cache *k, const char *expr, char *err,
				     size_t errlen, int *field);
/* The calendar NAME loaded before the current job (the cache owns it), or
 * NULL. */
const pal_calendar *pal__job_loaded_calendar(struct job_cache *k, const char *name);

#endif
