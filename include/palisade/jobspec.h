/*
 * jobspec.h - job files: YAML -> validated job specs -> canonical JSON + digest.
 *
 * A job file holds `jobs: [ ... ]` (docs/jobs.md lists every key).  Loading
 * validates everything and collects *all* problems as diagnostics naming
 * file:line:col, instead of stopping at the first.  Secrets stay as
 * ${ENV_NAME} references: they are never resolved here (resolution happens
 * at call time in the executor).
 *
 * Ownership: a pal_jobset and a pal_diags own every string they point to;
 * free them with pal_jobset_free() / pal_diags_free().
 */
#ifndef PALISADE_JOBSPEC_H
#define PALISADE_JOBSPEC_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>
#include <jansson.h>
#include "palisade/err.h"
#include "palisade/cron.h"

typedef enum { PAL_MISFIRE_FIRE_ALL, PAL_MISFIRE_FIRE_ONCE, PAL_MISFIRE_SKIP, PAL_MISFIRE_MANUAL } pal_misfire_policy;
typedef enum { PAL_OVERLAP_ALLOW, PAL_OVERLAP_FORBID, PAL_OVERLAP_QUEUE, PAL_OVERLAP_REPLACE } pal_overlap_policy;
typedef enum { PAL_JITTER_FULL, PAL_JITTER_EQUAL, PAL_JITTER_NONE } pal_jitter;

/* One excluded range of local calendar dates, inclusive, in the job's zone. */
typedef struct pal_exclusion {
	int64_t first_day; /* days since 1970-01-01 */
	int64_t last_day;  /* == first_day for a single date */
} pal_exclusion;

typedef struct pal_header {
	char *name;
	char *value; /* may contain ${ENV} references, unresolved */
} pal_header;

typedef struct pal_job_spec {
	char *id;     /* [a-z0-9._-]+, unique across the loaded set */
	char *tenant; /* default "default" */
	char *group;  /* resource group, default "default" */

	/* schedule */
	char *cron;     /* as written (trimmed) */
	char *timezone; /* IANA, default "UTC" */
	pal_dst_policy dst;
	bool has_start, has_end;
	int64_t start, end; /* UTC instants; start inclusive, end exclusive */
	pal_exclusion *exclusions;
	size_t n_exclusions;

	/* misfire */
	pal_misfire_policy misfire;
	int64_t catchup_window_ms; /* default 1h */
	int32_t max_catchup;       /* default 100 */

	pal_overlap_policy overlap; /* default allow */
	int32_t partitions;         /* 1..1024, default 1 */
	int32_t priority;           /* -100..100, default 0 */
	int32_t max_in_flight;      /* 0 = unlimited, default 0 */
	int64_t deadline_ms;        /* 0 = none */
	char *idempotency_key;      /* template, default "{job}/{scheduled_at}/{partition}" */

	/* target */
	char *method; /* GET POST PUT PATCH DELETE, default POST */
	char *url;    /* http or https */
	pal_header *headers;
	size_t n_headers;
	char *body;           /* template, may be NULL */
	int64_t timeout_ms;   /* default 30s */
	char *status_url;     /* template, may be NULL */

	/* retry */
	int32_t max_attempts; /* default 5 */
	int64_t backoff_initial_ms, backoff_max_ms; /* default 1s, 5m */
	double backoff_multiplier;                  /* default 2.0 */
	pal_jitter jitter;                          /* default full */
	int64_t max_age_ms;                         /* 0 = none; default 1h */

	/* where it came from, for messages */
	char *file;
	int line, col;
} pal_job_spec;

typedef struct pal_jobset {
	pal_job_spec *jobs;
	size_t n;
} pal_jobset;

typedef struct pal_diag {
	char *file;
	int line, col; /* 1-based; 0 when unknown */
	char *msg;     /* lower-case, no trailing period */
} pal_diag;

typedef struct pal_diags {
	pal_diag *v;
	size_t n;
} pal_diags;

/*
 * Load and validate job files PATHS[0..n).  Specs of every file are appended
 * to SET; every problem is appended to DIAGS (file:line:col, what was expected).
 * Duplicate job ids across all files are diagnosed.  Returns 0 when no
 * diagnostic was produced, PAL_EINVAL otherwise (SET then holds the valid
 * jobs only and must not be applied).
 * Limits: files over 4 MiB, YAML aliases, non-UTF-8 input and empty files
 * are rejected with a diagnostic.
 */
PAL_MUST_CHECK int pal_jobfiles_load(const char *const *paths, size_t n, pal_jobset *set,
				     pal_diags *diags);

void pal_jobset_free(pal_jobset *set);
/*
 * The same, one file at a time, for a caller that handles each file's jobs
 * before reading the next (apply, so that memory does not grow with the
 * number of files): a loader remembers every job id it has seen, so that
 * duplicates across files are still diagnosed.  pal_jobloader_file appends
 * PATH's valid jobs to SET and its problems to DIAGS, with the result
 * convention of pal_jobfiles_load.  pal_jobloader_new returns NULL on
 * ENOMEM; free with pal_jobloader_free.
 */
typedef struct pal_jobloader pal_jobloader;
pal_jobloader *pal_jobloader_new(void);
PAL_MUST_CHECK int pal_jobloader_file(pal_jobloader *l, const char *path, pal_jobset *set,
				      pal_diags *diags);
void pal_jobloader_free(pal_jobloader *l);

void pal_diags_free(pal_diags *d);
/* Print each diagnostic as "file:line:col: error: msg\n". */
void pal_diags_print(const pal_diags *d, FILE *fp);

/*
 * Canonical JSON of a spec: every key present with its effective default,
 * fixed key order, durations in ms, times in RFC 3339 UTC, no source
 * position.  Two specs with the same meaning give byte-identical output.
 * Returns a new reference (json_decref) or NULL on ENOMEM.
 */
json_t *pal_job_spec_canonical(const pal_job_spec *s);

/* Canonical JSON serialised compactly (caller frees) and its SHA-256 hex
 * digest into hex[65]. */
PAL_MUST_CHECK int pal_job_spec_digest(const pal_job_spec *s, char **canon_json, char hex[65]);
/* The same, and where the values of the top-level keys "retry" and
 * "target" lie in the canonical text (job_versions stores them as columns
 * of their own; the store sends these slices instead of having the server
 * extract them from the parsed spec). */
typedef struct pal_canon_spans {
	size_t retry_off, retry_len, target_off, target_len;
} pal_canon_spans;
PAL_MUST_CHECK int pal_job_spec_digest_spans(const pal_job_spec *s, char **canon_json,
					     char hex[65], pal_canon_spans *spans);

/*
 * Rebuild a spec from its canonical JSON (as stored in job_versions.spec).
 * Returns 0 or PAL_EINVAL with a message.  Free with pal_job_spec_clear().
 */
PAL_MUST_CHECK int pal_job_spec_from_canonical(const json_t *j, pal_job_spec *out, char *err,
					       size_t errlen);
void pal_job_spec_clear(pal_job_spec *s);

/* Shard of a job id: stable hash (FNV-1a 64 of the id) mod n_shards. */
int pal_job_shard(const char *job_id, int n_shards);

/* ---- additions by the config module (src/config/) ---- */

/* At most this many diagnostics are kept in one pal_diags; the last one kept
 * says that further diagnostics were suppressed (a garbage file must not
 * produce a million lines). */
#define PAL_DIAGS_MAX 1000

/* Append a diagnostic (FILE may be NULL).  Copies everything it is given.
 * On allocation failure the diagnostic is dropped: callers track failure by
 * their own return codes, never by d->n alone. */
void pal_diags_addf(pal_diags *d, const char *file, int line, int col, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/*
 * Load one job file from memory: LEN bytes at BUF, NAME used in diagnostics.
 * Same checks and result convention as pal_jobfiles_load(); ids are checked
 * for duplicates against the jobs already in SET.  This is the entry point
 * of the fuzz target.
 */
PAL_MUST_CHECK int pal_jobfile_load_buffer(const char *name, const void *buf, size_t len,
					   pal_jobset *set, pal_diags *diags);

/* Fill S (whose previous contents are ignored) with every default of
 * docs/jobs.md; the default strings (tenant and group "default", timezone
 * "UTC", method "POST", the idempotency key template) are allocated, id, cron
 * and url stay NULL.  Returns 0 or PAL_ENOMEM; free with pal_job_spec_clear(). */
PAL_MUST_CHECK int pal_job_spec_defaults(pal_job_spec *s);

/* YAML / canonical spellings of the enums ("fire_once", "forbid", "full"). */
const char *pal_misfire_policy_name(pal_misfire_policy p);
const char *pal_overlap_policy_name(pal_overlap_policy p);
const char *pal_jitter_name(pal_jitter j);

#endif
