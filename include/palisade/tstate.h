/*
 * tstate.h - the states of a trigger (G7, docs/schema.md): one enum, one
 * name table and one edge table, all read from
 * the list in palisade/tstate.def, so that C code compares enums, never
 * strings.  The names are the values of triggers.state in PostgreSQL; the
 * legal edges are enforced there (palisade_trigger_edge_ok, G7), checked
 * against the same list by tests/unit/test_tstate.c.
 */
#ifndef PALISADE_TSTATE_H
#define PALISADE_TSTATE_H

#include <stdbool.h>
#include "palisade/err.h"

typedef enum {
#define PAL_TSTATE(e, name, terminal) PAL_TS_##e,
#include "palisade/tstate.def"
	PAL_TS__COUNT
} pal_tstate;

/* The state's name as stored ("retry_wait"); "?" for a value out of range. */
const char *pal_tstate_name(pal_tstate s);
/* NAME's state; PAL_EINVAL for a name that is not a state. */
PAL_MUST_CHECK int pal_tstate_parse(const char *name, pal_tstate *out);
/* succeeded, failed, cancelled, skipped: never left again. */
bool pal_tstate_terminal(pal_tstate s);
/* Is FROM -> TO an edge of the state machine (as the database's check
 * says)?  False for a value out of range. */
bool pal_tstate_edge_ok(pal_tstate from, pal_tstate to);

#endif
