/*
 * datafill.h - the data backfills of expand steps: values a migration adds
 * to rows that exist already (041: jobs.ref, then triggers.job_ref), filled
 * in bounded batches after the migration rather than by one UPDATE inside
 * it (docs/upgrades.md, "The job reference during a roll from 0.2.0").
 *
 * The steps and where each one is are rows of palisade_backfills; one batch
 * is one call of palisade_backfill() (sql/functions/), one transaction of at
 * most BATCH rows.  Any number of nodes and `palisade migrate` runs may call
 * it at once: one batch runs at a time, the others are told busy.  A batch
 * that waited too long for a row lock gives way (busy as well) and is tried
 * again later; progress is kept in the table, so a stopped run resumes where
 * the last committed batch left it.
 */
#ifndef PALISADE_DATAFILL_H
#define PALISADE_DATAFILL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "palisade/err.h"
#include "palisade/store.h"

/* What a run of batches did to one step. */
typedef struct pal_datafill_step {
	char step[64];	 /* "jobs.ref", "triggers.job_ref" */
	int64_t filled;	 /* rows given their value by this run */
	int batches;	 /* batches this run made of it */
	bool finished;	 /* it finished during this run */
	char cursor[64]; /* where it is after the run's last batch */
} pal_datafill_step;

/* What a run of batches did, per step (at most PAL_DATAFILL_STEPS). */
#define PAL_DATAFILL_STEPS 8
typedef struct pal_datafill_report {
	pal_datafill_step s[PAL_DATAFILL_STEPS];
	int n;
	int batches; /* all steps */
	bool done;   /* no step is left unfinished */
	bool busy;   /* stopped because another run held the batch lock, or a row lock */
} pal_datafill_report;

/*
 * Batches of at most BATCH rows (>= 1), each its own transaction, until no
 * step is left, MAX_BATCHES (0: no limit) were made, another run holds the
 * batch lock, or a batch gives way to a row lock.  REP filled.  Logs
 * store.datafill_finished once per step that finishes.  Blocks for as long
 * as the batches take.  PAL_EDB with ERR on any other database error; on a
 * database without palisade_backfills (a schema before 041), REP says done.
 */
PAL_MUST_CHECK int pal_store_datafill(pal_store *st, int batch, int max_batches,
				      pal_datafill_report *rep, char *err, size_t errlen);

#endif
