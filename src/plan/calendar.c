/*
 * calendar.c - shared named calendars: rules, canonical form, digest, and
 * whether an instant is excluded (include/palisade/calendar.h).
 *
 * A calendar's rules are read in its own zone: an instant is turned into
 * local time once, and its local day and second of the day are matched
 * against the lists.  Lists are small (the loader bounds them) and kept
 * sorted, so a match is a few comparisons; the planner calls this once per
 * instant of a job that names the calendar.  Pure functions, no I/O.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/calendar.h"
#include "palisade/schedule.h"
#include "palisade/sha256.h"
#include "palisade/timefmt.h"

#define DIGEST_FLAGS (JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII)

const char *const pal_weekday_names[7] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};

void pal_calendar_clear(pal_calendar *c)
{
	if (!c)
		return;
	free(c->name);
	free(c->timezone);
	free(c->dates);
	free(c->yearly);
	free(c->ranges);
	free(c->windows);
	free(c->file);
	memset(c, 0, sizeof *c);
}

static void *dup_mem(const void *p, size_t n, size_t size, bool *bad)
{
	if (!n)
		return NULL;
	void *q = malloc(n * size);
	if (!q)
		*bad = true;
	else
		memcpy(q, p, n * size);
	return q;
}

static char *dup_str(const char *s, bool *bad)
{
	if (!s)
		return NULL;
	char *d = strdup(s);
	if (!d)
		*bad = true;
	return d;
}

int pal_calendar_copy(pal_calendar *dst, const pal_calendar *src)
{
	bool bad = false;
	*dst = *src;
	dst->name = dup_str(src->name, &bad);
	dst->timezone = dup_str(src->timezone, &bad);
	dst->file = dup_str(src->file, &bad);
	dst->dates = dup_mem(src->dates, src->n_dates, sizeof *src->dates, &bad);
	dst->yearly = dup_mem(src->yearly, src->n_yearly, sizeof *src->yearly, &bad);
	dst->ranges = dup_mem(src->ranges, src->n_ranges, sizeof *src->ranges, &bad);
	dst->windows = dup_mem(src->windows, src->n_windows, sizeof *src->windows, &bad);
	if (bad) {
		pal_calendar_clear(dst);
		return PAL_ENOMEM;
	}
	return PAL_OK;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

static int cmp_u16(const void *a, const void *b)
{
	return (int)*(const uint16_t *)a - (int)*(const uint16_t *)b;
}

static int cmp_range(const void *a, const void *b)
{
	const pal_cal_range *x = a, *y = b;
	if (x->first_day != y->first_day)
		return x->first_day < y->first_day ? -1 : 1;
	return (x->last_day > y->last_day) - (x->last_day < y->last_day);
}

static int cmp_window(const void *a, const void *b)
{
	const pal_cal_window *x = a, *y = b;
	if (x->from != y->from)
		return x->from < y->from ? -1 : 1;
	return (x->to > y->to) - (x->to < y->to);
}

/* Sort BASE[0..*n) and drop equal neighbours. */
static void sort_unique(void *base, size_t *n, size_t size, int (*cmp)(const void *, const void *))
{
	if (*n < 2)
		return;
	qsort(base, *n, size, cmp);
	char *b = base;
	size_t m = 1;
	for (size_t i = 1; i < *n; i++)
		if (cmp(b + (m - 1) * size, b + i * size))
			memmove(b + m++ * size, b + i * size, size);
	*n = m;
}

void pal_calendar_normalize(pal_calendar *c)
{
	sort_unique(c->dates, &c->n_dates, sizeof *c->dates, cmp_i64);
	sort_unique(c->yearly, &c->n_yearly, sizeof *c->yearly, cmp_u16);
	sort_unique(c->ranges, &c->n_ranges, sizeof *c->ranges, cmp_range);
	sort_unique(c->windows, &c->n_windows, sizeof *c->windows, cmp_window);
	c->weekdays &= 0x7f;
}

static void fmt_hms(int32_t s, char *buf, size_t len)
{
	snprintf(buf, len, "%02d:%02d:%02d", s / 3600, s / 60 % 60, s % 60);
}

json_t *pal_calendar_canonical(const pal_calendar *c, bool with_version)
{
	json_t *o = json_object(), *dates = json_array(), *yearly = json_array(),
	       *wd = json_array(), *ranges = json_array(), *win = json_array();
	bool ok = o && dates && yearly && wd && ranges && win;
	char a[32], b[32], both[72];

	for (size_t i = 0; ok && i < c->n_dates; i++) {
		pal_fmt_date(c->dates[i], a, sizeof a);
		ok = json_array_append_new(dates, json_string(a)) == 0;
	}
	for (size_t i = 0; ok && i < c->n_yearly; i++) {
		snprintf(a, sizeof a, "%02u-%02u", c->yearly[i] / 100u, c->yearly[i] % 100u);
		ok = json_array_append_new(yearly, json_string(a)) == 0;
	}
	for (int d = 0; ok && d < 7; d++)
		if (c->weekdays & (1u << d))
			ok = json_array_append_new(wd, json_string(pal_weekday_names[d])) == 0;
	for (size_t i = 0; ok && i < c->n_ranges; i++) {
		pal_fmt_date(c->ranges[i].first_day, a, sizeof a);
		pal_fmt_date(c->ranges[i].last_day, b, sizeof b);
		snprintf(both, sizeof both, "%s..%s", a, b);
		ok = json_array_append_new(ranges, json_string(both)) == 0;
	}
	for (size_t i = 0; ok && i < c->n_windows; i++) {
		fmt_hms(c->windows[i].from, a, sizeof a);
		fmt_hms(c->windows[i].to, b, sizeof b);
		snprintf(both, sizeof both, "%s-%s", a, b);
		ok = json_array_append_new(win, json_string(both)) == 0;
	}
	if (ok)
		ok = json_object_set_new(o, "name", json_string(c->name ? c->name : "")) == 0 &&
		     json_object_set_new(o, "timezone",
					 json_string(c->timezone ? c->timezone : "UTC")) == 0 &&
		     json_object_set_new(
			 o, "mode", json_string(c->include_only ? "include_only" : "exclude")) ==
			 0 &&
		     (!with_version ||
		      json_object_set_new(o, "version", json_integer(c->version)) == 0);
	if (ok) {
		ok = json_object_set(o, "dates", dates) == 0 &&
		     json_object_set(o, "yearly", yearly) == 0 &&
		     json_object_set(o, "weekdays", wd) == 0 &&
		     json_object_set(o, "ranges", ranges) == 0 &&
		     json_object_set(o, "windows", win) == 0;
	}
	json_decref(dates);
	json_decref(yearly);
	json_decref(wd);
	json_decref(ranges);
	json_decref(win);
	if (!ok) {
		json_decref(o);
		return NULL;
	}
	return o;
}

int pal_calendar_digest(const pal_calendar *c, char hex[65])
{
	json_t *j = pal_calendar_canonical(c, false);
	char *s = j ? json_dumps(j, DIGEST_FLAGS) : NULL;
	json_decref(j);
	if (!s)
		return PAL_ENOMEM;
	pal_sha256_hex(s, strlen(s), hex);
	free(s);
	return PAL_OK;
}

/* "HH:MM" or "HH:MM:SS" at S (up to END) into seconds; MAX_H bounds hours. */
static bool read_hms(const char *s, const char *end, int max_h, int32_t *out)
{
	int h, m, sec = 0, n = 0;
	size_t len = (size_t)(end - s);
	char buf[16];
	if (len != 5 && len != 8)
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (len == 5 ? sscanf(buf, "%2d:%2d%n", &h, &m, &n) != 2
		     : sscanf(buf, "%2d:%2d:%2d%n", &h, &m, &sec, &n) != 3)
		return false;
	if (n != (int)len || buf[2] != ':' || (len == 8 && buf[5] != ':'))
		return false;
	for (size_t i = 0; i < len; i++)
		if (buf[i] != ':' && (buf[i] < '0' || buf[i] > '9'))
			return false;
	if (h > max_h || m > 59 || sec > 59 || (h == 24 && (m || sec)))
		return false;
	*out = h * 3600 + m * 60 + sec;
	return true;
}

int pal_cal_window_parse(const char *s, pal_cal_window *w)
{
	const char *dash = s ? strchr(s, '-') : NULL;
	int32_t a, b;
	if (!dash || !read_hms(s, dash, 23, &a) ||
	    !read_hms(dash + 1, dash + 1 + strlen(dash + 1), 24, &b) || a >= b)
		return PAL_EINVAL;
	w->from = a;
	w->to = b;
	return PAL_OK;
}

int pal_cal_yearly_parse(const char *s, uint16_t *md)
{
	if (!s || strlen(s) != 5 || s[2] != '-')
		return PAL_EINVAL;
	for (int i = 0; i < 5; i++)
		if (i != 2 && (s[i] < '0' || s[i] > '9'))
			return PAL_EINVAL;
	unsigned m = (unsigned)((s[0] - '0') * 10 + s[1] - '0'),
		 d = (unsigned)((s[3] - '0') * 10 + s[4] - '0');
	if (m < 1 || m > 12 || d < 1 || d > pal_days_in_month(2000, m)) /* a leap year: 02-29 */
		return PAL_EINVAL;
	*md = (uint16_t)(m * 100 + d);
	return PAL_OK;
}

/* Read a JSON array of strings through PARSE into a new array. */
static bool read_list(const json_t *arr, void **out, size_t *n, size_t size,
		      bool (*parse)(const char *, void *))
{
	*out = NULL;
	*n = 0;
	if (!json_is_array(arr))
		return false;
	size_t k = json_array_size(arr);
	if (!k)
		return true;
	char *v = calloc(k, size);
	if (!v)
		return false;
	for (size_t i = 0; i < k; i++) {
		const char *s = json_string_value(json_array_get(arr, i));
		if (!s || !parse(s, v + i * size)) {
			free(v);
			return false;
		}
	}
	*out = v;
	*n = k;
	return true;
}

static bool parse_date(const char *s, void *out)
{
	return strlen(s) == 10 && pal_parse_date(s, out) == 0;
}

static bool parse_yearly(const char *s, void *out)
{
	return pal_cal_yearly_parse(s, out) == 0;
}

static bool parse_range(const char *s, void *out)
{
	pal_cal_range *r = out;
	char a[11];
	if (strlen(s) != 22 || strncmp(s + 10, "..", 2))
		return false;
	memcpy(a, s, 10);
	a[10] = '\0';
	return pal_parse_date(a, &r->first_day) == 0 && pal_parse_date(s + 12, &r->last_day) == 0 &&
	       r->first_day <= r->last_day;
}

static bool parse_window(const char *s, void *out)
{
	return pal_cal_window_parse(s, out) == 0;
}

int pal_calendar_from_canonical(const json_t *j, pal_calendar *out, char *err, size_t errlen)
{
	static const char *const keys[] = {"name",   "timezone", "mode",   "version", "dates",
					   "yearly", "weekdays", "ranges", "windows"};
	const char *what = NULL, *name = NULL;
	memset(out, 0, sizeof *out);
	if (!json_is_object(j)) {
		what = "expected an object";
		goto fail;
	}
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)j, k, v)
	{
		size_t i = 0;
		while (i < sizeof keys / sizeof *keys && strcmp(keys[i], k))
			i++;
		if (i == sizeof keys / sizeof *keys) {
			snprintf(err, errlen, "calendar: unknown key \"%s\"", k);
			return PAL_EINVAL;
		}
	}
	name = json_string_value(json_object_get(j, "name"));
	const char *tz = json_string_value(json_object_get(j, "timezone")),
		   *mode = json_string_value(json_object_get(j, "mode"));
	const json_t *ver = json_object_get(j, "version"), *wd = json_object_get(j, "weekdays");
	if (!name || !tz || !mode || (strcmp(mode, "exclude") && strcmp(mode, "include_only"))) {
		what = "name, timezone or mode missing or invalid";
		goto fail;
	}
	if (ver && (!json_is_integer(ver) || json_integer_value(ver) < 0 ||
		    json_integer_value(ver) > INT32_MAX)) {
		what = "version: expected a non-negative integer";
		goto fail;
	}
	out->version = ver ? (int)json_integer_value(ver) : 0;
	out->include_only = !strcmp(mode, "include_only");
	if (!(out->name = strdup(name)) || !(out->timezone = strdup(tz))) {
		what = "out of memory";
		goto fail;
	}
	if (!read_list(json_object_get(j, "dates"), (void **)&out->dates, &out->n_dates,
		       sizeof *out->dates, parse_date) ||
	    !read_list(json_object_get(j, "yearly"), (void **)&out->yearly, &out->n_yearly,
		       sizeof *out->yearly, parse_yearly) ||
	    !read_list(json_object_get(j, "ranges"), (void **)&out->ranges, &out->n_ranges,
		       sizeof *out->ranges, parse_range) ||
	    !read_list(json_object_get(j, "windows"), (void **)&out->windows, &out->n_windows,
		       sizeof *out->windows, parse_window) ||
	    !json_is_array(wd)) {
		what = "dates, yearly, ranges, windows or weekdays: invalid list";
		goto fail;
	}
	for (size_t i = 0; i < json_array_size(wd); i++) {
		const char *s = json_string_value(json_array_get(wd, i));
		int d = 0;
		while (s && d < 7 && strcmp(s, pal_weekday_names[d]))
			d++;
		if (!s || d == 7) {
			what = "weekdays: expected sun, mon, tue, wed, thu, fri or sat";
			goto fail;
		}
		out->weekdays |= 1u << d;
	}
	return PAL_OK;
fail:
	snprintf(err, errlen, "calendar %s: %s", name ? name : "?", what);
	pal_calendar_clear(out);
	return PAL_EINVAL;
}

static bool day_named(const pal_calendar *c, int64_t day)
{
	if (c->weekdays & (1u << pal_weekday(day)))
		return true;
	for (size_t i = 0; i < c->n_dates; i++)
		if (c->dates[i] == day)
			return true;
	for (size_t i = 0; i < c->n_ranges; i++)
		if (day >= c->ranges[i].first_day && day <= c->ranges[i].last_day)
			return true;
	if (c->n_yearly) {
		int64_t y;
		unsigned m, d;
		pal_civil_from_days(day, &y, &m, &d);
		uint16_t md = (uint16_t)(m * 100 + d);
		for (size_t i = 0; i < c->n_yearly; i++)
			if (c->yearly[i] == md)
				return true;
	}
	return false;
}

static bool in_window(const pal_calendar *c, int32_t sec)
{
	for (size_t i = 0; i < c->n_windows; i++)
		if (sec >= c->windows[i].from && sec < c->windows[i].to)
			return true;
	return false;
}

bool pal_calendar_names_local(const pal_calendar *c, int64_t local)
{
	int64_t day = pal_floor_div(local, 86400);
	int32_t sec = (int32_t)(local - day * 86400);
	bool has_days = c->weekdays || c->n_dates || c->n_ranges || c->n_yearly;
	bool has_windows = c->n_windows > 0;
	if (c->include_only)
		return (!has_days || day_named(c, day)) && (!has_windows || in_window(c, sec));
	return (has_days && day_named(c, day)) || (has_windows && in_window(c, sec));
}

bool pal_calendar_excludes(const pal_calendar *c, const pal_tz *tz, int64_t t)
{
	bool named = pal_calendar_names_local(c, pal_tz_to_local(tz, t));
	return c->include_only ? !named : named;
}

struct pal_cal_set {
	size_t n;
	pal_calendar *cal;
	const pal_tz **tz; /* from the shared zone table */
};

void pal_cal_set_close(pal_cal_set *cs)
{
	if (!cs)
		return;
	for (size_t i = 0; i < cs->n; i++) {
		pal_calendar_clear(&cs->cal[i]);
		pal_zone_release(cs->tz[i]);
	}
	free(cs->cal);
	free(cs->tz);
	free(cs);
}

int pal_cal_set_open(const pal_calendar *cals, size_t n, pal_cal_set **out, char *err,
		     size_t errlen)
{
	*out = NULL;
	if (!n)
		return PAL_OK;
	pal_cal_set *cs = calloc(1, sizeof *cs);
	if (!cs || !(cs->cal = calloc(n, sizeof *cs->cal)) ||
	    !(cs->tz = calloc(n, sizeof *cs->tz))) {
		pal_cal_set_close(cs);
		return PAL_ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		char e[256];
		int rc = pal_calendar_copy(&cs->cal[i], &cals[i]);
		if (rc) {
			pal_cal_set_close(cs);
			return rc;
		}
		cs->n = i + 1;
		if ((rc = pal_zone_acquire(cals[i].timezone ? cals[i].timezone : "UTC", &cs->tz[i],
					   e, sizeof e))) {
			snprintf(err, errlen, "calendar %s: %s", cals[i].name, e);
			pal_cal_set_close(cs);
			return rc;
		}
	}
	*out = cs;
	return PAL_OK;
}

const pal_calendar *pal_cal_set_excluding(const pal_cal_set *cs, int64_t t)
{
	for (size_t i = 0; cs && i < cs->n; i++)
		if (pal_calendar_excludes(&cs->cal[i], cs->tz[i], t))
			return &cs->cal[i];
	return NULL;
}
