/*
 * tstate.h - the states of a trigger (docs/schema.md, the state machine in
 * docs/architecture.md): one enum and one name table (src/util/tstate.c),
 * so that C code compares enums, never strings.  The names are the values
 * of triggers.state in PostgreSQL; the legal edges are enforced there
 * (palisade_trigger_edge_ok, G7).
 */
#ifndef PALISADE_TSTATE_H
#define PALISADE_TSTATE_H

#include <stdbool.h>
#include "palisade/err.h"

typedef enum {
	PAL_TS_PENDING,
	PAL_TS_RUNNING,
	PAL_TS_SUCCEEDED,
	PAL_TS_RETRY_WAIT,
	PAL_TS_FAILED,
	PAL_TS_UNKNOWN,
	PAL_TS_PAUSING,
	PAL_TS_PAUSED,
	PAL_TS_CANCELLING,
	PAL_TS_CANCELLED,
	PAL_TS_MANUAL,
	PAL_TS_SKIPPED,
	PAL_TS__COUNT
} pal_tstate;

/* The state's name as stored ("retry_wait"); "?" for a value out of range. */
const char *pal_tstate_name(pal_tstate s);
/* NAME's state; PAL_EINVAL for a name that is not a state. */
PAL_MUST_CHECK int pal_tstate_parse(const char *name, pal_tstate *out);
/* succeeded, failed, cancelled, skipped: never left again. */
bool pal_tstate_terminal(pal_tstate s);

#endif
