/*
 * timefmt.c - zone-free calendar arithmetic and the text forms of time that
 * palisade reads and writes: RFC 3339 instants, ISO dates and durations.
 *
 * Everything here is pure (no allocation, no global state, no libc time
 * functions), so it is thread-safe and usable from the cron engine, the job
 * loader and the CLI alike.  Parsers are strict: they accept the whole string
 * or fail with PAL_EINVAL, and they never overflow on hostile input.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "palisade/timefmt.h"

/* floor division for the days/seconds split of negative instants. */
/*
 * Howard Hinnant's days_from_civil: days since 1970-01-01 of the proleptic
 * Gregorian date y-m-d.  Valid for any y whose result fits in int64_t; m in
 * 1..12, d in 1..31 (not checked against the month length).
 */
int64_t pal_days_from_civil(int64_t y, unsigned m, unsigned d)
{
	y -= m <= 2;
	const int64_t era = (y >= 0 ? y : y - 399) / 400;
	const unsigned yoe = (unsigned)(y - era * 400);			      /* [0, 399] */
	const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1; /* [0, 365] */
	const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;	      /* [0, 146096] */
	return era * 146097 + (int64_t)doe - 719468;
}

/* Inverse of pal_days_from_civil (Hinnant's civil_from_days). */
void pal_civil_from_days(int64_t days, int64_t *y, unsigned *m, unsigned *d)
{
	days += 719468;
	const int64_t era = (days >= 0 ? days : days - 146096) / 146097;
	const unsigned doe = (unsigned)(days - era * 146097);		       /* [0, 146096] */
	const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365; /* [0, 399] */
	const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);	       /* [0, 365] */
	const unsigned mp = (5 * doy + 2) / 153;			       /* [0, 11] */
	*d = doy - (153 * mp + 2) / 5 + 1;
	*m = mp < 10 ? mp + 3 : mp - 9;
	*y = (int64_t)yoe + era * 400 + (*m <= 2);
}

/*
 * Writes "YYYY-MM-DDTHH:MM:SSZ" (20 chars + NUL) into buf; years outside
 * 0000-9999 are written with as many digits as they need (and a sign), and
 * the output is truncated, still NUL-terminated, when len is too small.
 */
void pal_fmt_rfc3339(int64_t t, char *buf, size_t len)
{
	if (!buf || len == 0)
		return;
	int64_t days = pal_floor_div(t, 86400);
	int64_t sod = t - days * 86400;
	int64_t y;
	unsigned m, d;
	pal_civil_from_days(days, &y, &m, &d);
	snprintf(buf, len, "%04lld-%02u-%02uT%02d:%02d:%02dZ", (long long)y, m, d,
		 (int)(sod / 3600), (int)(sod / 60 % 60), (int)(sod % 60));
}

void pal_fmt_date(int64_t days, char *buf, size_t len)
{
	int64_t y;
	unsigned m, d;

	if (!buf || len == 0)
		return;
	pal_civil_from_days(days, &y, &m, &d);
	snprintf(buf, len, "%04lld-%02u-%02u", (long long)y, m, d);
}

/* Reads exactly n decimal digits at *p, advancing it.  False otherwise. */
static bool read_digits(const char **p, int n, int *out)
{
	int v = 0;
	for (int i = 0; i < n; i++) {
		char c = (*p)[i];
		if (c < '0' || c > '9')
			return false;
		v = v * 10 + (c - '0');
	}
	*p += n;
	*out = v;
	return true;
}

/* "YYYY-MM-DD" at *p (advanced past it), validated against the calendar. */
static bool read_date(const char **p, int64_t *days)
{
	int y, m, d;
	if (!read_digits(p, 4, &y) || **p != '-')
		return false;
	(*p)++;
	if (!read_digits(p, 2, &m) || **p != '-')
		return false;
	(*p)++;
	if (!read_digits(p, 2, &d))
		return false;
	if (m < 1 || m > 12 || d < 1 || (unsigned)d > pal_days_in_month(y, (unsigned)m))
		return false;
	*days = pal_days_from_civil(y, (unsigned)m, (unsigned)d);
	return true;
}

bool pal_rfc3339_has_fraction(const char *s)
{
	/* the fraction follows the seconds: "YYYY-MM-DDTHH:MM:SS.fff" */
	if (!s || strlen(s) <= 19 || s[19] != '.')
		return false;
	for (const char *p = s + 20; *p >= '0' && *p <= '9'; p++)
		if (*p != '0')
			return true;
	return false;
}

/*
 * Accepts "YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)"; 't', 'z' and a
 * space separator are accepted as RFC 3339 allows.  The fraction is
 * truncated.  Leap seconds (:60) are rejected: palisade's time has none.
 */
int pal_parse_rfc3339(const char *s, int64_t *out)
{
	if (!s || !out)
		return PAL_EINVAL;
	const char *p = s;
	int64_t days;
	int hh, mm, ss;
	if (!read_date(&p, &days))
		return PAL_EINVAL;
	if (*p != 'T' && *p != 't' && *p != ' ')
		return PAL_EINVAL;
	p++;
	if (!read_digits(&p, 2, &hh) || *p++ != ':' || !read_digits(&p, 2, &mm) || *p++ != ':' ||
	    !read_digits(&p, 2, &ss))
		return PAL_EINVAL;
	if (hh > 23 || mm > 59 || ss > 59)
		return PAL_EINVAL;
	if (*p == '.') {
		p++;
		if (*p < '0' || *p > '9')
			return PAL_EINVAL;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	int64_t off = 0;
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		int sign = *p == '-' ? -1 : 1, oh, om;
		p++;
		if (!read_digits(&p, 2, &oh) || *p++ != ':' || !read_digits(&p, 2, &om))
			return PAL_EINVAL;
		if (oh > 23 || om > 59)
			return PAL_EINVAL;
		off = sign * (oh * 3600 + om * 60);
	} else {
		return PAL_EINVAL;
	}
	if (*p != '\0')
		return PAL_EINVAL;
	*out = days * 86400 + hh * 3600 + mm * 60 + ss - off;
	return PAL_OK;
}

int pal_parse_date(const char *s, int64_t *days)
{
	if (!s || !days)
		return PAL_EINVAL;
	const char *p = s;
	int64_t d;
	if (!read_date(&p, &d) || *p != '\0')
		return PAL_EINVAL;
	*days = d;
	return PAL_OK;
}

/*
 * Groups of <digits><unit>, unit one of ms s m h d, in any order, at least
 * one group; no sign, no spaces, no fractions.  The total must fit in
 * int64_t milliseconds.
 */
int pal_parse_duration_ms(const char *s, int64_t *ms)
{
	if (!s || !ms || *s == '\0')
		return PAL_EINVAL;
	const char *p = s;
	int64_t total = 0;
	while (*p) {
		if (*p < '0' || *p > '9')
			return PAL_EINVAL;
		int64_t n = 0;
		while (*p >= '0' && *p <= '9') {
			if (n > (INT64_MAX - 9) / 10)
				return PAL_EINVAL;
			n = n * 10 + (*p - '0');
			p++;
		}
		int64_t unit;
		if (p[0] == 'm' && p[1] == 's') {
			unit = 1;
			p += 2;
		} else if (*p == 's') {
			unit = 1000;
			p++;
		} else if (*p == 'm') {
			unit = 60 * 1000;
			p++;
		} else if (*p == 'h') {
			unit = 3600 * 1000;
			p++;
		} else if (*p == 'd') {
			unit = 86400 * 1000;
			p++;
		} else {
			return PAL_EINVAL;
		}
		if (n > INT64_MAX / unit || total > INT64_MAX - n * unit)
			return PAL_EINVAL;
		total += n * unit;
	}
	*ms = total;
	return PAL_OK;
}

/* Largest unit first, zero groups left out: 90061001 -> "1d1h1m1s1ms". */
char *pal_fmt_duration(int64_t ms, char *buf, size_t len)
{
	static const struct {
		const char *unit;
		int64_t ms;
	} units[] = {{"d", 86400000}, {"h", 3600000}, {"m", 60000}, {"s", 1000}, {"ms", 1}};
	size_t off = 0;

	if (len == 0)
		return buf;
	buf[0] = '\0';
	if (ms <= 0) {
		snprintf(buf, len, "%s0s", ms < 0 ? "-" : "");
		return buf;
	}
	for (size_t i = 0; i < sizeof units / sizeof units[0] && off < len; i++) {
		int64_t q = ms / units[i].ms;

		if (q) {
			int w = snprintf(buf + off, len - off, "%" PRId64 "%s", q, units[i].unit);

			if (w < 0)
				break;
			off += (size_t)w;
			ms -= q * units[i].ms;
		}
	}
	return buf;
}
