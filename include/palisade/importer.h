/*
 * importer.h - translate another scheduler's job definitions into palisade
 * job YAML (docs/migrating.md): crontab files and Kubernetes CronJob
 * manifests.
 *
 * Pure functions of the input text: no I/O, no clock, no global state.  An
 * importer appends jobs to a pal_import_result (the YAML items of a `jobs:`
 * list, each written so that `palisade validate` accepts it) and one report
 * line for every element of the source it could not translate exactly,
 * naming the source line (crontab) or document and field (Kubernetes).
 *
 * Ownership: a pal_import_result is made by pal_import_result_init() and
 * freed by pal_import_result_free(); it owns its strings and the set of the
 * ids it handed out (ids stay unique across every file imported into it).
 */
#ifndef PALISADE_IMPORTER_H
#define PALISADE_IMPORTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "palisade/err.h"

typedef struct pal_import_opts {
	/* The target URL of every job, with the placeholders {job} (the job id)
	 * and {digest} (16 hex digits of the SHA-256 of the source entry),
	 * replaced at import time.  Required. */
	const char *target_url;
	/* The zone the source system reads its schedules in when the source
	 * does not say (the cron daemon's or the controller manager's local
	 * zone).  NULL: UTC, and the assumption is reported. */
	const char *timezone;
	/* crontab: the first part of every job id; NULL: from the file name. */
	const char *prefix;
	/* crontab: the file has the user column (/etc/crontab, /etc/cron.d). */
	bool system;
	/* crontab: the DST changes of the ten years from this UTC instant are
	 * searched for entries cron would run more often than palisade. */
	int64_t now;
} pal_import_opts;

typedef struct pal_import_result pal_import_result;

/* A new, empty result; NULL when out of memory.  Free with
 * pal_import_result_free(). */
pal_import_result *pal_import_result_new(void);
void pal_import_result_free(pal_import_result *r);

/* The job file: "jobs:" and every job imported so far ("jobs: []" when
 * none).  Owned by R, valid until the next import into R. */
const char *pal_import_yaml(const pal_import_result *r);
/* The report: one line per element not translated exactly. */
const char *pal_import_report(const pal_import_result *r);
size_t pal_import_jobs(const pal_import_result *r);
size_t pal_import_issues(const pal_import_result *r);

/*
 * Import the crontab text BUF[0..len) named NAME (used in the report, the
 * descriptions and the default id prefix).  Returns 0, or PAL_EINVAL when
 * the text cannot be read as a crontab at all (a NUL byte), with a line in
 * the report.  Entries that cannot be translated are reported and left out.
 */
PAL_MUST_CHECK int pal_import_crontab(pal_import_result *r, const char *name, const char *buf,
				      size_t len, const pal_import_opts *o);

/*
 * Import the Kubernetes manifests BUF[0..len) named NAME: one or more YAML
 * documents; CronJobs (batch/v1, batch/v1beta1, also inside a `kind: List`)
 * become jobs, other kinds are skipped and named in the report.  Returns 0,
 * or PAL_EINVAL when a document is not readable YAML (reported).
 */
PAL_MUST_CHECK int pal_import_kubernetes(pal_import_result *r, const char *name, const char *buf,
					 size_t len, const pal_import_opts *o);

/* Check a --target-url template: only {job} and {digest} as placeholders.
 * 0, or PAL_EINVAL with the reason in ERR. */
PAL_MUST_CHECK int pal_import_check_target(const char *tmpl, char *err, size_t errlen);

#endif
