/*
 * keyhorizon.h - how long after its scheduled instant a job may still send
 * a request with that instant's idempotency key, and the check that the
 * services it calls keep keys longer (docs/protocol.md, "How long to keep
 * keys"; node config sink.key_retention).
 *
 * Pure functions of a parsed job spec: no I/O, no allocation.
 */
#ifndef PALISADE_KEYHORIZON_H
#define PALISADE_KEYHORIZON_H

#include <stddef.h>
#include <stdint.h>
#include "palisade/diags.h"
#include "palisade/jobspec.h"

/* The parts of a job's key horizon, in ms after the scheduled instant. */
typedef struct pal_key_horizon {
	int64_t catchup_ms; /* a catch-up trigger may be created this late (fire_all, fire_once) */
	int64_t retry_ms;   /* first to last attempt start: (max_attempts - 1) x (timeout + backoff.max) */
	int64_t bound_ms;   /* min(max_age, deadline) when either is set, else 0 */
	int64_t total_ms;   /* the latest start, bounded, plus one timeout */
} pal_key_horizon;

/* Compute S's horizon into *H: the latest start of an attempt is
 * catchup + retry, cut by max_age and deadline (no attempt starts later),
 * plus the timeout of that last request.  A longer Retry-After from the
 * service and an operator's retry of a ticket are not counted: the first
 * is the service's own choice, the second a human's. */
void pal_job_key_horizon(const pal_job_spec *s, pal_key_horizon *h);

/* Refuse S when its horizon exceeds KEY_RETENTION_MS: appends one
 * diagnostic at the job's position to D (naming the job, the horizon and
 * its parts, the retention and a hint) and returns PAL_EINVAL; 0 when it
 * fits. */
int pal_job_key_horizon_check(const pal_job_spec *s, int64_t key_retention_ms, pal_diags *d);

#endif
