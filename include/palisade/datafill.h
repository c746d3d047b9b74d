/*
 * datafill.h - the data backfills of expand steps: values a migration adds
 * to rows that exist already (041: jobs.ref, then triggers.job_ref), filled
 * in bounded batches after the migration rather than by one UPDATE inside
 * it (docs/upgrades.md, "The job reference during a roll from 0.2.0").
 *
 * The steps and where each one is are rows of palisade_backfills; one batch
 * is one call of palisade_backfill() (sql/functions/), one transaction of at
 * most PAL_DATAFILL_BATCH_MAX rows.  Any number of nodes and `palisade migrate` runs may call
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
	int checks;	 /* checks of the whole table this run made (after its walk) */
	bool finished;	 /* it finished during this run */
	char cursor[64]; /* where it is after the run's last batch */
} pal_datafill_step;

/* What a run of batches did, per step (at most PAL_DATAFILL_STEPS). */
#define PAL_DATAFILL_STEPS 8
typedef struct pal_datafill_report {
	pal_datafill_step s[PAL_DATAFILL_STEPS];
	int n;
	int batches;  /* all steps */
	bool done;    /* no step is left unfinished */
	bool busy;    /* stopped because another run held the batch lock, or a row lock,
		       * or a step's check waits for older transactions (waiting) */
	bool waiting; /* the check waits for transactions older than the previous step's end */
	bool stopped; /* stopped by the limits' time or stop request */
} pal_datafill_report;

/* The most rows a batch may have: a batch holds its rows' locks until it
 * commits, a few thousand rows for tens of milliseconds. */
#define PAL_DATAFILL_BATCH_MAX 5000

/* How long `palisade migrate` waits for the transactions a step's check
 * waits for (usually those in flight when the previous step finished: a few
 * milliseconds), and how often a waiting run asks again. */
#define PAL_DATAFILL_MIGRATE_WAIT_MS 3000
#define PAL_DATAFILL_WAIT_STEP_MS 100

/* How much a run may do. */
typedef struct pal_datafill_limits {
	int batch;	      /* rows per batch, 1 to PAL_DATAFILL_BATCH_MAX */
	int max_batches;      /* 0: no limit */
	int64_t max_ms;	      /* no batch starts after this long (0: no limit) */
	int64_t wait_ms;      /* how long a step's check waits, asked again every
			       * PAL_DATAFILL_WAIT_STEP_MS, for the transactions older
			       * than the previous step's end (within max_ms; 0: not) */
	bool (*stop)(void *); /* asked before each batch and, every PAL_DATAFILL_WAIT_STEP_MS,
			       * during the jobs_ref build: true stops the run (NULL: never) */
	void *stop_arg;
} pal_datafill_limits;

/*
 * Batches of at most LIM->batch rows, each its own transaction, until no
 * step is left, LIM->max_batches were made, LIM->max_ms passed or
 * LIM->stop said so, another run holds the batch lock, a batch gives way to
 * a row lock, or a step's check still waits for older transactions after
 * LIM->wait_ms (asked again meanwhile: a check right after the previous
 * step's end finds the transactions then in flight, which end soon).  A
 * step's check of its whole table, after its walk, is a call of its own,
 * not counted as a batch.  Then, once the jobs step has finished, the
 * unique index jobs_ref is built (CONCURRENTLY: it waits for every older
 * transaction), unless LIM->stop says stop; when it says so during the
 * build, the build is cancelled (REP->stopped) and the invalid index it
 * leaves is dropped and built again by the next run.  REP filled.  Logs
 * store.datafill_finished once per step that finishes.  PAL_EINVAL for a batch out of range; PAL_EDB with
 * ERR on any other database error; on a database without
 * palisade_backfills (a schema before 041), REP says done.
 */
PAL_MUST_CHECK int pal_store_datafill(pal_store *st, const pal_datafill_limits *lim,
				      pal_datafill_report *rep, char *err, size_t errlen);

#endif
