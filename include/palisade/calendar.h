/*
 * calendar.h - shared named calendars (src/plan/calendar.c): the times a
 * calendar names (dates, yearly dates, weekdays, date ranges, daily time
 * windows, in the calendar's own zone), whether they are excluded or the
 * only times included, the calendar's canonical JSON and digest, and the
 * one test the planner asks: does this calendar exclude instant T?
 *
 * A job names its calendars (`calendar: NAME`, docs/jobs.md); the loader
 * copies each named calendar into the job's spec, so a job version carries
 * the calendars it was planned with (name, version and rules) and planning
 * stays a pure function of the version.
 *
 * Ownership: a pal_calendar owns its strings and arrays; free them with
 * pal_calendar_clear().
 */
#ifndef PALISADE_CALENDAR_H
#define PALISADE_CALENDAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "palisade/err.h"
#include "palisade/tz.h"

/* Inclusive range of local dates, days since 1970-01-01. */
typedef struct pal_cal_range {
	int64_t first_day, last_day;
} pal_cal_range;

/* A daily window of local time, seconds since local midnight, [from, to)
 * with 0 <= from < to <= 86400. */
typedef struct pal_cal_window {
	int32_t from, to;
} pal_cal_window;

typedef struct pal_calendar {
	char *name;	   /* [a-z0-9._-]+, unique across the loaded set */
	int version;	   /* assigned when stored; 0 before */
	char *timezone;	   /* IANA, default "UTC" */
	bool include_only; /* the rules name the only times a job may fire */
	int64_t *dates;	   /* local dates, days since 1970-01-01 */
	size_t n_dates;
	uint16_t *yearly; /* month * 100 + day, every year */
	size_t n_yearly;
	unsigned weekdays; /* bit pal_weekday() of the day: 0 = Sunday */
	pal_cal_range *ranges;
	size_t n_ranges;
	pal_cal_window *windows;
	size_t n_windows;
	/* where it came from, for messages (not canonical) */
	char *file;
	int line, col;
} pal_calendar;

/* Weekday names in pal_weekday() order ("sun" .. "sat"). */
extern const char *const pal_weekday_names[7];

void pal_calendar_clear(pal_calendar *c);
/* Deep copy of SRC into DST (previous contents ignored).  0 or PAL_ENOMEM;
 * free with pal_calendar_clear(). */
PAL_MUST_CHECK int pal_calendar_copy(pal_calendar *dst, const pal_calendar *src);
/* Sort every list and drop duplicates: the same rules always read the same. */
void pal_calendar_normalize(pal_calendar *c);

/*
 * Canonical JSON: {"name", "timezone", "mode": "exclude"|"include_only",
 * "dates", "yearly", "weekdays", "ranges", "windows"}, lists sorted, and
 * "version" when WITH_VERSION (the form a job spec carries).  New
 * reference, NULL on ENOMEM.
 */
json_t *pal_calendar_canonical(const pal_calendar *c, bool with_version);
/* SHA-256 hex of the canonical form without the version into hex[65]. */
PAL_MUST_CHECK int pal_calendar_digest(const pal_calendar *c, char hex[65]);
/* Read a canonical form back (with or without "version"); 0 or PAL_EINVAL
 * with a message.  Free with pal_calendar_clear(). */
PAL_MUST_CHECK int pal_calendar_from_canonical(const json_t *j, pal_calendar *out, char *err,
					       size_t errlen);

/* Whether C's rules name local time LOCAL (seconds since 1970-01-01T00:00
 * local): a listed day (date, yearly date, weekday, range) or a window.
 * Day rules and windows combine by "or" in an exclude calendar and by
 * "and" in an include-only one (either kind absent counts as "any"). */
bool pal_calendar_names_local(const pal_calendar *c, int64_t local);
/* Whether C excludes UTC instant T; TZ is C's zone (opened by the caller). */
bool pal_calendar_excludes(const pal_calendar *c, const pal_tz *tz, int64_t t);

/*
 * The calendars of one job version with their zones open (shared zone
 * table, schedule.h): what a schedule holds.  pal_cal_set_open copies
 * CALS[0..n) (N may be 0: *out is then NULL, which every call below takes as
 * "no calendar"); fails with PAL_ENOENT/PAL_EINVAL and a message for a zone
 * that does not open.  Free with pal_cal_set_close().
 */
typedef struct pal_cal_set pal_cal_set;
PAL_MUST_CHECK int pal_cal_set_open(const pal_calendar *cals, size_t n, pal_cal_set **out,
				    char *err, size_t errlen);
void pal_cal_set_close(pal_cal_set *cs);
/* The first calendar of CS (in the job's order) that excludes T, or NULL. */
const pal_calendar *pal_cal_set_excluding(const pal_cal_set *cs, int64_t t);

/* "HH:MM[:SS]-HH:MM[:SS]" (the end may be 24:00) into W; 0 or PAL_EINVAL. */
PAL_MUST_CHECK int pal_cal_window_parse(const char *s, pal_cal_window *w);
/* "MM-DD" (02-29 allowed) into month * 100 + day; 0 or PAL_EINVAL. */
PAL_MUST_CHECK int pal_cal_yearly_parse(const char *s, uint16_t *md);

#endif
