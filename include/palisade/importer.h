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
	/* The first part of every job id, one dot-free segment.  crontab: NULL
	 * takes the file name; kubernetes: NULL writes NAMESPACE.NAME alone;
	 * quartz: NULL writes GROUP.NAME (the trigger's key) alone. */
	const char *prefix;
	/* crontab: the file has the user column (/etc/crontab, /etc/cron.d). */
	bool system;
	/* crontab: the cron daemon that ran the file, for CRON_TZ: "debian"
	 * (Vixie cron 3.0 as Debian ships it: CRON_TZ is one more variable of
	 * the command's environment; the schedules are in the host's zone) or
	 * "cronie" (the zone of the entries after it).  NULL: read as cronie
	 * does, and each CRON_TZ line is reported as approximated. */
	const char *cron;
	/* crontab: where the file is, its directory resolved (the caller's
	 * realpath() of the directory and the file's own name), so that a file
	 * of /etc/cron.d named by a relative path is still a system crontab and
	 * one whose name cron ignores is skipped; NULL: judged by the name. */
	const char *resolved;
	/* The resource group of every job (`group:`); NULL: none written (the
	 * group `default`). */
	const char *group;
	/* Every job written with `mode: shadow`: applied, it is planned and
	 * never called until `palisade cutover` (docs/migrating.md). */
	bool shadow;
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

/* One trigger of a Quartz 2.x JDBC job store (its QRTZ_ tables) with its job;
 * strings borrowed, NULL for SQL NULL. */
typedef struct pal_quartz_trigger {
	const char *trigger_group, *trigger_name, *job_group, *job_name;
	const char *job_class, *job_description;
	const char *type;	      /* TRIGGER_TYPE: CRON, SIMPLE, CAL_INT, DAILY_I, BLOB */
	const char *state;	      /* TRIGGER_STATE: WAITING, PAUSED, COMPLETE, ERROR, ... */
	const char *cron, *time_zone; /* QRTZ_CRON_TRIGGERS, for CRON */
	const char *calendar;
	int64_t start_ms, end_ms; /* end 0: none */
	int misfire_instr, priority;
	bool nonconcurrent, group_paused, job_data, trigger_data;
	int64_t repeat_count, repeat_interval_ms; /* QRTZ_SIMPLE_TRIGGERS, for SIMPLE */
} pal_quartz_trigger;

/*
 * Import the N triggers T of scheduler SCHED (rows of a Quartz store, read
 * by pal_quartz_read()).  Cron triggers become jobs; every other kind, and
 * every element without an exact palisade meaning, is named in the report
 * as "qrtz_triggers:SCHED/GROUP/NAME".  Returns 0.
 */
PAL_MUST_CHECK int pal_import_quartz(pal_import_result *r, const char *sched,
				     const pal_quartz_trigger *t, size_t n,
				     const pal_import_opts *o);

/*
 * Read the triggers of scheduler SCHED from the Quartz store at CONNINFO
 * (PostgreSQL; read-only, one transaction).  SCHED NULL: the store's only
 * scheduler, an error naming them when it holds several.  *ROWS (N of them)
 * and the strings they point to belong to *OWNER: free with
 * pal_quartz_free(*OWNER).  0, PAL_EDB (cannot connect or read: ERR says
 * why), PAL_EINVAL (several schedulers and no SCHED, or SCHED unknown).
 */
typedef struct pal_quartz_rows pal_quartz_rows;
PAL_MUST_CHECK int pal_quartz_read(const char *conninfo, const char *sched, pal_quartz_rows **owner,
				   const pal_quartz_trigger **rows, size_t *n,
				   const char **sched_out, char *err, size_t errlen);
void pal_quartz_free(pal_quartz_rows *owner);

/* Check a --target-url template: only {job} and {digest} as placeholders.
 * 0, or PAL_EINVAL with the reason in ERR. */
PAL_MUST_CHECK int pal_import_check_target(const char *tmpl, char *err, size_t errlen);

#endif
