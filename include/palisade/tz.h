/*
 * tz.h - IANA time zones, thread-safe (no setenv("TZ"), no localtime()).
 *
 * Reads the system TZif files (RFC 8536) itself, including their POSIX
 * footer rule, so instants past the last listed transition are right too
 * (src/tz/tz.c says why GLib's GTimeZone is not used).  A pal_tz is
 * immutable after pal_tz_open() and may be shared between threads.
 *
 * Time is int64_t seconds.  "UTC instant" means seconds since the Unix epoch.
 * "Local wall time" means the wall-clock reading expressed as if it were a
 * UTC instant (i.e. seconds since 1970-01-01T00:00:00 local), so calendar
 * arithmetic on it needs no zone.
 */
#ifndef PALISADE_TZ_H
#define PALISADE_TZ_H

#include <stdint.h>
#include <stddef.h>
#include "palisade/err.h"

typedef struct pal_tz pal_tz;

/*
 * Open zone NAME ("UTC", "Europe/Berlin", ...).  Unknown names fail with
 * PAL_ENOENT and a message in err.  Fixed offsets like "+02:00" are not
 * accepted: a job names an IANA zone.  Free with pal_tz_close().
 */
PAL_MUST_CHECK int pal_tz_open(const char *name, pal_tz **out, char *err, size_t errlen);
/*
 * pal_tz_open() for a name being defined (job files, calendars, imports,
 * `cron next`): also refuses, with PAL_EINVAL, a name that is the host's own
 * zone rather than one IANA zone ("localtime", "posixrules"), which nodes on
 * hosts set to different zones would read as different zones.  Stored names
 * are opened with pal_tz_open().
 */
PAL_MUST_CHECK int pal_tz_open_iana(const char *name, pal_tz **out, char *err, size_t errlen);
void pal_tz_close(pal_tz *tz);
const char *pal_tz_name(const pal_tz *tz);

/* UTC offset in seconds east of Greenwich in effect at UTC instant t. */
int32_t pal_tz_offset_at(const pal_tz *tz, int64_t t);

/* Local wall time at UTC instant t. */
int64_t pal_tz_to_local(const pal_tz *tz, int64_t t);

/*
 * Map local wall time LOCAL to UTC instants.
 * Returns the number of instants whose wall clock reads LOCAL:
 *   1  ordinary: out[0] is it;
 *   2  repeated by a fall-back: out[0] < out[1] (first and second pass);
 *   0  skipped by a spring-forward gap: *gap_end is set to the UTC instant of
 *      the transition that skipped it (the first instant after the gap).
 * gap_end may be NULL when the caller does not care.
 */
int pal_tz_resolve(const pal_tz *tz, int64_t local, int64_t out[2], int64_t *gap_end);

/*
 * Smallest / largest UTC offset in effect at any instant of [from, to]
 * (from <= to).  The cron engine uses them to bound its local-time search
 * around transitions.
 */
int32_t pal_tz_min_offset(const pal_tz *tz, int64_t from, int64_t to);
int32_t pal_tz_max_offset(const pal_tz *tz, int64_t from, int64_t to);

#endif
