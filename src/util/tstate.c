/* tstate.c - the one name table of trigger states (include/palisade/tstate.h). */
#include <string.h>
#include "palisade/tstate.h"

static const char *const names[PAL_TS__COUNT] = {
	[PAL_TS_PENDING] = "pending",	    [PAL_TS_RUNNING] = "running",
	[PAL_TS_SUCCEEDED] = "succeeded",   [PAL_TS_RETRY_WAIT] = "retry_wait",
	[PAL_TS_FAILED] = "failed",	    [PAL_TS_UNKNOWN] = "unknown",
	[PAL_TS_PAUSING] = "pausing",	    [PAL_TS_PAUSED] = "paused",
	[PAL_TS_CANCELLING] = "cancelling", [PAL_TS_CANCELLED] = "cancelled",
	[PAL_TS_MANUAL] = "manual",	    [PAL_TS_SKIPPED] = "skipped",
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
	return s == PAL_TS_SUCCEEDED || s == PAL_TS_FAILED || s == PAL_TS_CANCELLED ||
	       s == PAL_TS_SKIPPED;
}
