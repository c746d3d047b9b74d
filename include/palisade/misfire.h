/*
 * misfire.h - what a job's misfire policy does with a run of instants that
 * were not fired in time (docs/controller.md, "Misfires").  One decision for
 * every way an instant can be late: the controller's planner applies it to
 * instants never planned (downtime, a leader gap), `palisade resume` to the
 * triggers a pause held past the misfire threshold (docs/operations.md).
 *
 * Pure arithmetic on counts: the callers count or list the instants and map
 * the split back to them.  The instants not fired are always the oldest of
 * the run, so a split is a prefix of reasons and a suffix that fires.
 */
#ifndef PALISADE_MISFIRE_H
#define PALISADE_MISFIRE_H

#include <stdbool.h>
#include <stdint.h>
#include "palisade/jobspec.h"

/* A run of N instants, oldest first, cut in order into these parts. */
typedef struct pal_misfire_split {
	int64_t outside; /* fire_all: before now - catchup_window (outside_window) */
	int64_t over;	 /* fire_all: in the window but beyond max_catchup (over_max_catchup) */
	int64_t missed;	 /* fire_once, skip, manual: not fired (missed) */
	int64_t fire;	 /* the newest FIRE instants run (never one before the window) */
	bool ticket;	 /* manual: an operator decides (a ticket) */
} pal_misfire_split;

/*
 * The split of a run of N missed instants under POLICY, N_OUTSIDE of which
 * (the oldest) lie before now - catchup_window, with MAX_CATCHUP the
 * policy's cap (fire_all keeps the newest MAX_CATCHUP inside the window; 0 or
 * less keeps none).  fire_once fires the newest only when it lies inside the
 * window (N_OUTSIDE < N); otherwise all N are missed.  outside + over +
 * missed + fire == N.
 */
pal_misfire_split pal_misfire_decide(pal_misfire_policy policy, int64_t n, int64_t n_outside,
				     int64_t max_catchup);

#endif
