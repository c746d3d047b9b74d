/*
 * timefmt.h - RFC 3339 instants, dates and durations, zone-free.
 */
#ifndef PALISADE_TIMEFMT_H
#define PALISADE_TIMEFMT_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include "palisade/err.h"

/* A / B rounded towards minus infinity (B != 0): the day of an instant
 * before 1970 is floor_div(t, 86400), not t / 86400.  The one copy of the
 * calendar arithmetic's helper. */
static inline int64_t pal_floor_div(int64_t a, int64_t b)
{
	return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

/* Civil date <-> days since 1970-01-01 (proleptic Gregorian). */
int64_t pal_days_from_civil(int64_t y, unsigned m, unsigned d);
void pal_civil_from_days(int64_t days, int64_t *y, unsigned *m, unsigned *d);

/* Whether Y is a leap year of the proleptic Gregorian calendar. */
static inline bool pal_is_leap(int64_t y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* Days in month M (1..12) of year Y. */
static inline unsigned pal_days_in_month(int64_t y, unsigned m)
{
	static const unsigned char dim[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	return m == 2 && pal_is_leap(y) ? 29 : dim[m - 1];
}

/* Weekday (0 = Sunday .. 6 = Saturday) of day DAYS since 1970-01-01, a
 * Thursday. */
static inline int pal_weekday(int64_t days)
{
	return (int)(((days + 4) % 7 + 7) % 7);
}

/* Format UTC instant t as "2026-03-29T01:00:00Z" into buf (>= 21 bytes). */
void pal_fmt_rfc3339(int64_t t, char *buf, size_t len);

/* Parse an RFC 3339 timestamp with Z or a numeric offset ("2026-01-01T00:00:00Z",
 * "2026-01-01T02:00:00+02:00", fractional seconds truncated). */
PAL_MUST_CHECK int pal_parse_rfc3339(const char *s, int64_t *out);

/* True when S (an RFC 3339 timestamp) has a fraction of a second other than
 * zeros: an instant of palisade is whole seconds, and cutting the fraction
 * off would name another instant than the one written. */
bool pal_rfc3339_has_fraction(const char *s);

/* Parse "YYYY-MM-DD" into days since epoch. */
PAL_MUST_CHECK int pal_parse_date(const char *s, int64_t *days);

/* Format day DAYS since epoch as "YYYY-MM-DD" into buf (>= 11 bytes; the
 * output is truncated, still NUL-terminated, when LEN is too small). */
void pal_fmt_date(int64_t days, char *buf, size_t len);

/* Parse a duration: one or more <number><unit> groups, units ms s m h d
 * ("90s", "1h30m", "500ms").  Result in milliseconds; rejects empty, negative,
 * unit-less and overflowing input. */
PAL_MUST_CHECK int pal_parse_duration_ms(const char *s, int64_t *ms);

/* Formats a duration in ms for messages and docs: "1h30m", "500ms", "0s".
 * Writes at most LEN bytes to BUF and returns BUF. */
char *pal_fmt_duration(int64_t ms, char *buf, size_t len);

#endif
