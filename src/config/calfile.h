/*
 * calfile.h - the `calendars:` document of a job file (calfile.c), for
 * jobfile.c only.
 */
#ifndef PALISADE_CONFIG_CALFILE_H
#define PALISADE_CONFIG_CALFILE_H

#include "palisade/calendar.h"
#include "palisade/diags.h"
#include "palisade/yamltree.h"

/*
 * Validate calendar mapping N of DOC into OUT (previous contents ignored):
 * returns the number of problems, each appended to DIAGS.  On 0, OUT holds
 * the calendar (lists sorted, version 0, line/col set, file NULL); free
 * with pal_calendar_clear().  Otherwise OUT is cleared.
 */
int pal__calfile_parse(const pal_ydoc *doc, const pal_ynode *n, pal_calendar *out,
		       pal_diags *diags);

#endif
