/*
 * jobspec.h - the job-spec model (src/spec/canon.c): a validated job spec,
 * its canonical JSON and digest, the shard of a job id, the names of the
 * policies.  The loader of job files (jobfile.h) produces specs; the store
 * keeps their canonical form as immutable versions; the controller and the
 * executor read them back.  Nothing here parses YAML or node config.
 *
 * Ownership: a pal_jobset owns every string it points to; free it with
 * pal_jobset_free() (a single spec: pal_job_spec_clear()).
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
#include "palisade/calendar.h"

/* The layout of the canonical form this binary writes and reads (its
 * "format" key). */
#define PAL_SPEC_FORMAT 1

typedef enum {
	PAL_MISFIRE_FIRE_ALL,
	PAL_MISFIRE_FIRE_ONCE,
	PAL_MISFIRE_SKIP,
	PAL_MISFIRE_MANUAL
} pal_misfire_policy;
typedef enum {
	PAL_OVERLAP_ALLOW,
	PAL_OVERLAP_FORBID,
	PAL_OVERLAP_QUEUE,
	PAL_OVERLAP_REPLACE
} pal_overlap_policy;
typedef enum { PAL_JITTER_FULL, PAL_JITTER_EQUAL, PAL_JITTER_NONE } pal_jitter;

/* One excluded range of local calendar dates, inclusive, in the job's zone. */
typedef struct pal_exclusion {
	int64_t first_day; /* days since 1970-01-01 */
	int64_t last_day;  /* == first_day for a single date */
} pal_exclusion;

/*
 * One upstream of a dependent job (`after:`, docs/jobs.md): the job runs at
 * JOB's instants once JOB's trigger for the instant reached ON, and records
 * the instant as a misfire when that cannot happen any more or WITHIN_MS
 * after the instant passed without it.
 */
typedef enum { PAL_AFTER_SUCCEEDED, PAL_AFTER_FINISHED } pal_after_on;
typedef struct pal_after {
	char *job;
	pal_after_on on;   /* default succeeded */
	int64_t within_ms; /* default 1 day */
	int line, col;	   /* of the upstream's name, for messages; 0 when read back */
} pal_after;

/* The cron stored for a dependent job (a job with `after:` and no
 * schedule): it never fires (its only year is past), so the schedule
 * planner of every version, older binaries included, plans nothing for it
 * and verify counts no instant of it; its instants come from its
 * upstreams (src/controller/depends.c).  A job file cannot name it: the
 * loader refuses a cron that can never fire again. */
#define PAL_AFTER_CRON "0 0 0 1 1 ? 1970"

typedef struct pal_header {
	char *name;
	char *value; /* may contain ${ENV} references, unresolved */
} pal_header;

/* Events a job's `notify:` entry may ask for (docs/jobs.md, "notify"),
 * as bits of pal_notify.events, in the order of pal_notify_event_names. */
typedef enum {
	PAL_NOTIFY_FAILED,
	PAL_NOTIFY_MANUAL,
	PAL_NOTIFY_MISFIRE,
	PAL_NOTIFY_QUARANTINED,
	PAL_NOTIFY_RECOVERED,
	PAL_NOTIFY_N_EVENTS
} pal_notify_event;

/* One `notify:` entry: which events go to which webhook. */
typedef struct pal_notify {
	unsigned events; /* 1u << pal_notify_event, never 0 */
	char *url;	 /* http or https, no placeholders or secrets */
	char *secret;	 /* a "${NAME}" reference to a whsec_ secret, unresolved */
} pal_notify;

/* One of a job's `labels:` (docs/jobs.md): informative only, never read
 * by planning or calls.  Key and value follow Kubernetes' label rule
 * (pal_label_key_problem, pal_label_value_problem). */
typedef struct pal_label {
	char *key;
	char *value;
} pal_label;
#define PAL_LABELS_MAX 64

/* Why KEY is not a Kubernetes label key (an optional DNS-subdomain prefix
 * of at most 253 bytes and a '/', then a name of 1-63 bytes of letters,
 * digits, '-', '_' and '.', beginning and ending with a letter or digit),
 * or NULL when it is one.  The reason is static text. */
const char *pal_label_key_problem(const char *key);
/* The same for a value: empty, or a name as above (at most 63 bytes). */
const char *pal_label_value_problem(const char *value);

typedef struct pal_job_spec {
	char *id;     /* [a-z0-9._-]+, unique across the loaded set */
	char *tenant; /* default "default" */
	char *group;  /* resource group, default "default" */

	/* schedule: exactly one of cron, every_s, has_at */
	char *cron;	 /* as written (blank runs collapsed, `H` kept); NULL for every/at */
	int64_t every_s; /* schedule.every in seconds; 0 when not an interval */
	bool has_at;	 /* schedule.at: one instant */
	int64_t at;
	int64_t spread_s, jitter_s; /* schedule.spread / jitter in seconds; 0 = none */
	char *timezone;		    /* IANA, default "UTC" */
	pal_dst_policy dst;
	bool has_start, has_end;
	int64_t start, end; /* UTC instants; start inclusive, end exclusive */
	pal_exclusion *exclusions;
	size_t n_exclusions;
	/* `calendar:` the shared calendars the job names, in its order, each a
	 * copy (rules, name, version) owned by the spec */
	pal_calendar *calendars;
	size_t n_calendars;

	/* dependencies: instants come from the upstreams, cron is PAL_AFTER_CRON */
	pal_after *after;
	size_t n_after;

	/* misfire */
	pal_misfire_policy misfire;
	int64_t catchup_window_ms; /* default 1h */
	int32_t max_catchup;	   /* default 100 */

	pal_overlap_policy overlap; /* default allow */
	int32_t partitions;	    /* 1..1024, default 1 */
	int32_t priority;	    /* -100..100, default 0 */
	int32_t max_in_flight;	    /* 0 = unlimited, default 0 */
	int64_t deadline_ms;	    /* 0 = none */
	char *idempotency_key;	    /* template, default "{job}/{scheduled_at}/{partition}" */

	/* target */
	char *method; /* GET POST PUT PATCH DELETE, default POST */
	char *url;    /* http or https */
	pal_header *headers;
	size_t n_headers;
	char *body;	    /* template, may be NULL */
	int64_t timeout_ms; /* default 30s */
	char *status_url;   /* template, may be NULL */
	char *tracestate;   /* W3C tracestate sent as written, may be NULL */
	/* What each attempt keeps of the response (docs/jobs.md, target):
	 * the first keep_body bytes of the body when has_keep_body (else the
	 * executor's default, PAL_KEEP_BODY_DEFAULT), and the headers named
	 * here (lower case, sorted, each once; none when 0). */
	bool has_keep_body;
	int64_t keep_body;
	char **keep_headers;
	size_t n_keep_headers;

	/* notify: in the canonical form only when there is at least one.
	 * Once merged with the notify rules of the job's group and tenant
	 * (pal_job_spec_merge_notify), the first n_notify_own entries are
	 * the job's own and the others inherited; before, all are its own.
	 * notify_none: `notify: []`, none and nothing inherited. */
	pal_notify *notify;
	size_t n_notify;
	bool notify_none, notify_merged;
	size_t n_notify_own;

	/* labels: sorted by key, each key once; in the canonical form only
	 * when there is at least one */
	pal_label *labels;
	size_t n_labels;

	/* retry */
	int32_t max_attempts;			    /* default 5 */
	int64_t backoff_initial_ms, backoff_max_ms; /* default 1s, 5m */
	double backoff_multiplier;		    /* default 2.0 */
	pal_jitter jitter;			    /* default full */
	int64_t max_age_ms;			    /* 0 = none; default 1h */

	/* About the job, not its plan: kept on the jobs row, outside the
	 * canonical form and its digest (a change of these never makes a new
	 * version).  NULL when absent. */
	char *owner;	   /* free text, one line */
	char *description; /* free text */
	bool suspend;	   /* `suspend: true`: the job's gate is closed by apply */
	bool shadow;	   /* `mode: shadow`: apply puts the job in shadow */

	/* Set by the loader: the schedule has no instant at or after the load
	 * (a past `at`, a cron whose years are past, an `end` gone by).  Such a
	 * job is valid and applied; validate and apply report it. */
	bool spent;

	/* where it came from, for messages */
	char *file;
	int line, col;
} pal_job_spec;

/* target.keep_body when a job does not set it, and the most a job may set
 * (a node keeps at most executor.keep_body_max of it). */
#define PAL_KEEP_BODY_DEFAULT 4096
#define PAL_KEEP_BODY_MAX (1024 * 1024)
/* target.keep_headers: at most this many names. */
#define PAL_KEEP_HEADERS_MAX 32
/* What an attempt keeps of the named headers (names, values after masking,
 * the ", " joining a repeated one) and, apart, of the content type: at
 * most this many bytes each.  A value that would go past is cut there and
 * the later ones are left out; the stored headers then carry the key
 * PAL_KEEP_HEADERS_CUT_KEY (not an HTTP token, so never a header's name)
 * with the string "true" (a 0.3.0 reader shows it as one more header),
 * which the readers show as response.headers_truncated. */
#define PAL_KEEP_HEADERS_BYTES 8192
#define PAL_KEEP_HEADERS_CUT_KEY "(truncated)"

/* One entry of `notify_rules:` (docs/jobs.md, "Notify rules"): the
 * webhook N for every job of a group (tenant false) or a tenant, or, with
 * remove, the end of the rule of that scope and url (N.events 0, N.secret
 * NULL). */
typedef struct pal_notify_rule {
	bool tenant;
	char *name; /* the group or the tenant */
	pal_notify n;
	bool remove;
} pal_notify_rule;

void pal_notify_rule_clear(pal_notify_rule *r);
/* Clear RULES[0..n) and free the array. */
void pal_notify_rules_free(pal_notify_rule *rules, size_t n);
/* A spec read back from job_versions gets what the version's notify_own
 * says (COL, the column's text; NULL or "" for SQL NULL, a version written
 * without rules: every entry is the job's own). */
void pal_job_spec_stored_notify_own(pal_job_spec *s, const char *col);

/*
 * The effective notify of S: its own entries (the first n_notify_own
 * when S was merged before, e.g. read back from the store), then those
 * of the rules RULES[0..n) of its group, then of its tenant (each level
 * in the order of RULES), an event a url gets already from an earlier
 * entry left out of the later one (an entry left with none is dropped):
 * the job's own entry wins over its group's, its group's over its
 * tenant's.  Nothing is inherited with notify_none.  Removal entries of
 * RULES are skipped.  0 or PAL_ENOMEM (S unchanged).
 */
PAL_MUST_CHECK int pal_job_spec_merge_notify(pal_job_spec *s, const pal_notify_rule *rules,
					     size_t n);

typedef struct pal_jobset {
	pal_job_spec *jobs;
	size_t n;
	/* the `notify_rules:` the files defined, in file order; stored by
	 * apply before the jobs */
	pal_notify_rule *notify_rules;
	size_t n_notify_rules;
	/* the `calendars:` the files defined (jobs hold copies of those they
	 * name); stored by apply before the jobs */
	pal_calendar *calendars;
	size_t n_calendars;
} pal_jobset;

void pal_jobset_free(pal_jobset *set);
/* Give every job's copy of a calendar the version of SET's calendar of the
 * same name (after the store assigned those: pal_store_calendar_versions). */
void pal_jobset_calendar_versions(pal_jobset *set);

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
PAL_MUST_CHECK int pal_job_spec_digest_spans(const pal_job_spec *s, char **canon_json, char hex[65],
					     pal_canon_spans *spans);

/*
 * Rebuild a spec from its canonical JSON (as stored in job_versions.spec).
 * Returns 0 or PAL_EINVAL with a message.  Free with pal_job_spec_clear().
 */
PAL_MUST_CHECK int pal_job_spec_from_canonical(const json_t *j, pal_job_spec *out, char *err,
					       size_t errlen);
void pal_job_spec_clear(pal_job_spec *s);

/* S's copy of calendar C (by name), when S names it at another version:
 * replaced by a copy of C, rules and version (a calendar's follower,
 * docs/jobs.md "Calendars").  *TAKEN (may be NULL) says whether it was.
 * 0 or PAL_ENOMEM (the old copy then stays). */
PAL_MUST_CHECK int pal_job_spec_follow_calendar(pal_job_spec *s, const pal_calendar *c,
						bool *taken);

/*
 * Keys of a job that a binary older than the migration they came with does
 * not understand: a node of 0.2.0 (schema 28) plans, claims and calls such
 * a job as if they were absent (no dependency wait, no notification, no
 * excerpt kept), so apply refuses them while such a node is live
 * (docs/upgrades.md).  The schema is the migration that brought each.
 */
#define PAL_SCHEMA_NOTIFY 33	/* notify: 033_notifications */
#define PAL_SCHEMA_RESPONSES 34 /* target.keep_headers, target.keep_body: 034_attempt_responses */
#define PAL_SCHEMA_AFTER 35	/* after: 035_after */
/* labels: no migration of its own; a controller of 0.3.0 (schema 41) cannot
 * read a version that has them, so it needs a binary of schema 42 */
#define PAL_SCHEMA_LABELS 42

/* The binary schema every node must run for job S: the largest
 * PAL_SCHEMA_* among the keys S sets, with *KEY naming it ("after",
 * "target.keep_body", ...; static), or 0 (and *KEY NULL) when S sets none. */
int pal_job_spec_min_schema(const pal_job_spec *s, const char **key);

/* Shard of a job id: stable hash (FNV-1a 64 of the id) mod n_shards. */
int pal_job_shard(const char *job_id, int n_shards);

/* Fill S (whose previous contents are ignored) with every default of
 * docs/jobs.md; the default strings (tenant and group "default", timezone
 * "UTC", method "POST", the idempotency key template) are allocated, id, cron
 * and url stay NULL.  Returns 0 or PAL_ENOMEM; free with pal_job_spec_clear(). */
PAL_MUST_CHECK int pal_job_spec_defaults(pal_job_spec *s);

/* YAML / canonical spellings of the enums ("fire_once", "forbid", "full"),
 * indexed by the enum: the one table of each, for the loader (which
 * parses them), the canonical form and the planner. */
extern const char *const pal_misfire_policy_names[4];
extern const char *const pal_overlap_policy_names[4];
extern const char *const pal_jitter_names[3];
extern const char *const pal_dst_gap_names[2];	   /* pal_dst_gap order: shift, skip */
extern const char *const pal_dst_overlap_names[3]; /* first, last, both */
extern const char *const pal_http_method_names[5]; /* GET POST PUT PATCH DELETE */
/* failed manual misfire quarantined recovered, indexed by pal_notify_event */
extern const char *const pal_notify_event_names[PAL_NOTIFY_N_EVENTS];
extern const char *const pal_after_on_names[2]; /* succeeded, finished */
const char *pal_misfire_policy_name(pal_misfire_policy p);
const char *pal_overlap_policy_name(pal_overlap_policy p);
const char *pal_jitter_name(pal_jitter j);

#endif
