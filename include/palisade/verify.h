/*
 * verify.h - recompute the plan set from the stored job versions and check
 * it against what the controllers wrote (G1, G2).
 *
 * For every job, the plan set in [from, to] is the union over its activated
 * versions v of the instants of v in (effective_from(v),
 * effective_from(v+1)], times its partitions.  Then
 *   missing    = plan set - triggers - instants covered by a misfire range
 *   duplicates = plan keys with more than one scheduled trigger row
 *   unexpected = scheduled trigger rows at instants outside the plan set
 *   quarantined = jobs whose planning failed and was stopped (their
 *              instants are recorded as misfires while their schedule opens)
 *   never activated = jobs with no activated version although stored long
 *              enough ago; their instants since are counted as missing
 *   stuck      = triggers in a non-terminal state past a bound
 *   sink duplicates = effects applied twice (with a sink database)
 *   key horizon = jobs whose key horizon exceeds a controller's
 *              sink.key_retention (their open tickets; docs/protocol.md)
 * A correct cluster has all of them at zero.
 */
#ifndef PALISADE_VERIFY_H
#define PALISADE_VERIFY_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include "palisade/err.h"
#include "palisade/store.h"

typedef struct pal_verify_report {
	int64_t jobs;
	int64_t expected;   /* (instant, partition) pairs in the plan set */
	int64_t triggered;  /* of those, with a trigger row */
	int64_t misfired;   /* of those, covered by a misfire decision */
	int64_t missing;
	int64_t duplicates;
	int64_t unexpected;
	int64_t quarantined; /* jobs taken out of planning (docs/controller.md) */
	int64_t never_activated; /* jobs with no activated version past the grace */
	int64_t stuck;		 /* triggers in a non-terminal state past the bound */
	int64_t sink_duplicates; /* keys applied twice at the sink (--sink-pg) */
	int64_t key_horizon;	 /* jobs over sink.key_retention (open tickets) */
	int64_t from, to; /* the range checked: TO no later than the database clock */
	bool to_clamped;  /* the TO asked for was later: the range ends at the clock */
	json_t *samples; /* up to 20 examples per kind: {"missing": [...], ...} */
} pal_verify_report;

/* What pal_verify checks beside the plan set. */
typedef struct pal_verify_opts {
	/* a job with no activated version whose latest version was stored this
	 * long before TO should have been activated: its instants after it was
	 * stored count as missing */
	int64_t activation_grace_s;
	/* a trigger in a non-terminal state, unchanged and overdue this long,
	 * is stuck; <= 0: not checked */
	int64_t stuck_after_s;
	pal_store *sink; /* a palisade-sink database, or NULL */
	/* at most this many (instant, partition) pairs recomputed over every
	 * job (the plan set, a never-activated job's instants, the upstream
	 * instants of dependent jobs): past it pal_verify stops at once and
	 * answers PAL_ETOOBIG, having held no more than that; <= 0: no bound */
	int64_t max_instants;
} pal_verify_opts;

#define PAL_VERIFY_ACTIVATION_GRACE_S 60
#define PAL_VERIFY_STUCK_AFTER_S 3600
/* The bound of one verify through the API (and the CLI's default): a day of
 * eleven jobs every second, of 694 every minute, a year of 114 hourly. */
#define PAL_VERIFY_MAX_INSTANTS 1000000

/* Check [FROM, TO] for JOB_ID (NULL: every job).  A TO after the database
 * clock is taken as the clock (R->to_clamped): an instant still to come is
 * not missing.  Fills R (free with pal_verify_report_free).  PAL_EDB /
 * PAL_EINVAL with a message on failure, PAL_ETOOBIG past OPTS->max_instants
 * (the message says the bound and how to narrow the range).  OPTS may be
 * NULL (the defaults: no sink, PAL_VERIFY_MAX_INSTANTS). */
PAL_MUST_CHECK int pal_verify(pal_store *st, int64_t from, int64_t to, const char *job_id,
			      const pal_verify_opts *opts, pal_verify_report *r, char *err,
			      size_t errlen);
void pal_verify_report_free(pal_verify_report *r);
/* Every count of R is zero: the cluster agrees with its plan. */
bool pal_verify_ok(const pal_verify_report *r);
/* R as `verify --output json` prints it: {ok, from, to, to_clamped, the
 * counts, samples}; a new reference. */
json_t *pal_verify_report_json(const pal_verify_report *r);

#endif
