/* tstate.c - the name and edge tables of trigger states, read from the
 * list in include/palisade/tstate.def (include/palisade/tstate.h). */
#include <string.h>
#include "palisade/tstate.h"

static const char *const names[PAL_TS__COUNT] = {
#define PAL_TSTATE(e, name, terminal) [PAL_TS_##e] = #name,
#include "palisade/tstate.def"
};

static const bool terminal[PAL_TS__COUNT] = {
#define PAL_TSTATE(e, name, term) [PAL_TS_##e] = term,
#include "palisade/tstate.def"
};

static const bool edges[PAL_TS__COUNT][PAL_TS__COUNT] = {
#define PAL_TEDGE(from, to) [PAL_TS_##from][PAL_TS_##to] = true,
#include "palisade/tstate.def"
};

const char *pal_tstate_name(pal_tstate s)
{
	return (unsigned)s < PAL_TS__COUNT ? names[s] : "?";
}

int pal_tstate_parse(const char *name, pal_tstate *out)
{
	for (int i = 0; i < PAL_TS__COUNT; i++)
		if (name && !strcmp(name, names[i])) {
			*out = (pal_tstate)i;
			return PAL_OK;
		}
	return PAL_EINVAL;
}

bool pal_tstate_terminal(pal_tstate s)
{
	return (unsigned)s < PAL_TS__COUNT && terminal[s];
}

bool pal_tstate_edge_ok(pal_tstate from, pal_tstate to)
{
	return (unsigned)from < PAL_TS__COUNT && (unsigned)to < PAL_TS__COUNT && edges[from][to];
}
