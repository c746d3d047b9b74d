/*
 * jobfile.h - job files: YAML -> validated job specs (src/config/jobfile.c and
 * the job*.c beside it, which share jobfile_int.h).
 *
 * A job file holds `jobs: [ ... ]` (docs/jobs.md lists every key).  Loading
 * validates everything and collects *all* problems as diagnostics naming
 * file:line:col, instead of stopping at the first.  Secrets stay as
 * ${ENV_NAME} references: they are never resolved here (resolution happens
 * at call time in the executor).  The specs themselves, their canonical
 * form and digest are the job-spec model (jobspec.h): the controller, the
 * executor and the store use that and never this loader.
 */
#ifndef PALISADE_JOBFILE_H
#define PALISADE_JOBFILE_H

#include "palisade/diags.h"
#include "palisade/jobspec.h"

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
/*
 * The same, with the jobs handed over while the file is still being parsed:
 * TAKE(ARG, SET) gets every SIZE valid jobs in file order as soon as they
 * are read, as long as no problem was found in the file so far, and the
 * rest once the whole file proved valid (a valid file: every job went to
 * TAKE exactly once).  TAKE owns SET's jobs (pal_jobset_free).  Returns 0,
 * or PAL_EINVAL with the problems in DIAGS: jobs TAKE got before the
 * problem was found must then be discarded (`apply` rolls back).
 */
typedef void (*pal_jobbatch_fn)(void *arg, pal_jobset *set);
PAL_MUST_CHECK int pal_jobloader_file_batches(pal_jobloader *l, const char *path, size_t size,
					      pal_jobbatch_fn take, void *arg, pal_diags *diags);
void pal_jobloader_free(pal_jobloader *l);
/*
 * Only the `notify_rules:` of the file at PATH, appended to SET (its
 * calendars and jobs are neither read nor checked), for `apply`, which
 * takes in the rules of all its files before it stores any job.  Returns
 * 0, or an error with the problems in DIAGS (the rules appended before it
 * was found stay in SET); the loading of the file proper checks it again.
 */
PAL_MUST_CHECK int pal_jobfile_load_rules(const char *path, pal_jobset *set, pal_diags *diags);
/* Whether a file loaded so far defined job ID (`apply --prune` retires the
 * stored jobs that none did). */
bool pal_jobloader_seen(const pal_jobloader *l, const char *id);

/*
 * Dependencies (`after:`) across everything L loaded so far: the graph of
 * its valid dependent jobs (owned by L; apply adds the stored jobs to it),
 * and the check of that graph: unknown upstreams and cycles, each a
 * diagnostic at the upstream's file:line:col.  pal_jobfiles_load runs the
 * check itself (against the files alone); a caller of pal_jobloader_file
 * runs it once every file is loaded.  Returns the number of problems.
 */
struct pal_after_graph *pal_jobloader_after(pal_jobloader *l);
size_t pal_jobloader_check_after(pal_jobloader *l, bool stored_checked, pal_diags *diags);

/*
 * Load one job file from memory: LEN bytes at BUF, NAME used in diagnostics.
 * Same checks and result convention as pal_jobfiles_load(); ids are checked
 * for duplicates against the jobs already in SET.  This is the entry point
 * of the fuzz target.
 */
PAL_MUST_CHECK int pal_jobfile_load_buffer(const char *name, const void *buf, size_t len,
					   pal_jobset *set, pal_diags *diags);

#endif
