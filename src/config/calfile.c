/*
 * calfile.c - the `calendars:` document of a job file: one YAML mapping ->
 * one validated pal_calendar (calendar.h), every problem a diagnostic with
 * file:line:col, none fatal.  jobfile.c calls it for each item of a file's
 * `calendars:` list and resolves the jobs' `calendar:` names against what
 * it returns; docs/jobs.md is the user-facing copy of these keys.
 *
 *   calendars:
 *     - name: holidays              # [a-z0-9._-], unique across the files
 *       timezone: Europe/Berlin     # IANA, default UTC
 *       exclude:                    # or include_only: (exactly one)
 *         dates: [2026-12-24]
 *         yearly: ["12-25", "01-01"]
 *         weekdays: [sat, sun]
 *         ranges: ["2026-12-27..2026-12-31"]
 *         windows: ["02:00-03:00"]
 */
#include <stdlib.h>
#include <string.h>
#include "calfile.h"
#include "palisade/name.h"
#include "palisade/timefmt.h"

#define CAL_MAX_ENTRIES 1000

struct cctx {
	const pal_ydoc *doc;
	pal_diags *diags;
	int errors;
};

/* The scalar N as a new string, or NULL with a diagnostic. */
static char *cstr(struct cctx *c, const pal_ynode *n, const char *what)
{
	char *s = NULL;
	if (pal_yget_string(c->doc, n, what, &s, c->diags) != 0) {
		c->errors++;
		return NULL;
	}
	return s;
}

static void cdiag(struct cctx *c, const pal_ynode *n, const char *what, const char *s,
		  const char *expected)
{
	pal_ydiag(c->diags, c->doc, n, "%s: invalid entry \"%.64s\" (expected %s)", what, s,
		  expected);
	c->errors++;
}

/* The sequence V of calendar WHAT as strings: each through PARSE into
 * OUT[0..*n) (a new array of V->n elements of SIZE). */
static void clist(struct cctx *c, const pal_ynode *v, const char *what, void **out, size_t *n,
		  size_t size, bool (*parse)(const char *, void *), const char *expected)
{
	if (pal_yexpect_seq(c->doc, v, what, c->diags) != 0) {
		c->errors++;
		return;
	}
	if (v->n > CAL_MAX_ENTRIES) {
		pal_ydiag(c->diags, c->doc, v, "%s: too many entries (%zu, at most %d)", what, v->n,
			  CAL_MAX_ENTRIES);
		c->errors++;
		return;
	}
	char *arr = calloc(v->n ? v->n : 1, size);
	if (!arr) {
		pal_ydiag(c->diags, c->doc, v, "%s: out of memory", what);
		c->errors++;
		return;
	}
	free(*out);
	*out = arr;
	*n = 0;
	for (size_t i = 0; i < v->n; i++) {
		char *s = cstr(c, v->vals[i], what);
		if (s && parse(s, arr + *n * size))
			(*n)++;
		else if (s)
			cdiag(c, v->vals[i], what, s, expected);
		free(s);
	}
}

static bool p_date(const char *s, void *out)
{
	return strlen(s) == 10 && pal_parse_date(s, out) == 0;
}

static bool p_yearly(const char *s, void *out)
{
	return pal_cal_yearly_parse(s, out) == 0;
}

static bool p_range(const char *s, void *out)
{
	pal_cal_range *r = out;
	const char *dots = strstr(s, "..");
	char a[16];
	if (!dots || dots - s != 10)
		return false;
	memcpy(a, s, 10);
	a[10] = '\0';
	return pal_parse_date(a, &r->first_day) == 0 && strlen(dots + 2) == 10 &&
	       pal_parse_date(dots + 2, &r->last_day) == 0 && r->first_day <= r->last_day;
}

static bool p_window(const char *s, void *out)
{
	return pal_cal_window_parse(s, out) == 0;
}

static void rules(struct cctx *c, const pal_ynode *m, const char *mode, pal_calendar *out)
{
	static const char *const keys[] = {"dates", "yearly", "weekdays", "ranges", "windows"};
	char what[48];
	if (pal_yexpect_map(c->doc, m, mode, c->diags) != 0) {
		c->errors++;
		return;
	}
	if (m->n == 0) {
		pal_ydiag(
		    c->diags, c->doc, m,
		    "%s: names nothing; hint: list dates, yearly, weekdays, ranges or windows",
		    mode);
		c->errors++;
	}
	for (size_t i = 0; i < m->n; i++) {
		const char *k = m->keys[i]->str;
		const pal_ynode *v = m->vals[i];
		snprintf(what, sizeof what, "%s.%s", mode, k);
		if (!strcmp(k, "dates")) {
			clist(c, v, what, (void **)&out->dates, &out->n_dates, sizeof *out->dates,
			      p_date, "YYYY-MM-DD");
		} else if (!strcmp(k, "yearly")) {
			clist(c, v, what, (void **)&out->yearly, &out->n_yearly,
			      sizeof *out->yearly, p_yearly, "MM-DD, quoted");
		} else if (!strcmp(k, "ranges")) {
			clist(c, v, what, (void **)&out->ranges, &out->n_ranges,
			      sizeof *out->ranges, p_range,
			      "YYYY-MM-DD..YYYY-MM-DD, the earlier date first");
		} else if (!strcmp(k, "windows")) {
			clist(c, v, what, (void **)&out->windows, &out->n_windows,
			      sizeof *out->windows, p_window,
			      "HH:MM-HH:MM of local time, the end after the start, 24:00 at most");
		} else if (!strcmp(k, "weekdays")) {
			if (pal_yexpect_seq(c->doc, v, what, c->diags) != 0) {
				c->errors++;
				continue;
			}
			for (size_t j = 0; j < v->n; j++) {
				char *s = cstr(c, v->vals[j], what);
				int d = 0;
				while (s && d < 7 && strcmp(s, pal_weekday_names[d]))
					d++;
				if (s && d < 7)
					out->weekdays |= 1u << d;
				else if (s)
					cdiag(c, v->vals[j], what, s,
					      "sun, mon, tue, wed, thu, fri or sat");
				free(s);
			}
		} else {
			const char *hint = pal_suggest(k, keys, sizeof keys / sizeof *keys);
			pal_ydiag(
			    c->diags, c->doc, m->keys[i],
			    "unknown key \"%.64s\" in %s%s%s%s (expected dates, yearly, weekdays, "
			    "ranges or windows)",
			    k, mode, hint ? "; did you mean \"" : "", hint ? hint : "",
			    hint ? "\"?" : "");
			c->errors++;
		}
	}
}

int pal__calfile_parse(const pal_ydoc *doc, const pal_ynode *n, pal_calendar *out, pal_diags *diags)
{
	static const char *const keys[] = {"name", "timezone", "exclude", "include_only"};
	struct cctx c = {.doc = doc, .diags = diags};
	const pal_ynode *mode = NULL;
	memset(out, 0, sizeof *out);
	if (pal_yexpect_map(doc, n, "calendar", diags) != 0)
		return 1;
	for (size_t i = 0; i < n->n; i++) {
		const char *k = n->keys[i]->str;
		const pal_ynode *v = n->vals[i];
		if (!strcmp(k, "name")) {
			char *s = cstr(&c, v, "calendar name");
			if (s && !pal_name_ok(s, 128)) {
				pal_ydiag(diags, doc, v,
					  "calendar name \"%.64s\": expected 1-128 characters of "
					  "[a-z0-9._-], starting with a letter or digit",
					  s);
				c.errors++;
				free(s);
			} else if (s) {
				free(out->name);
				out->name = s;
			}
		} else if (!strcmp(k, "timezone")) {
			char *s = cstr(&c, v, "calendar timezone"), e[256];
			pal_tz *tz = NULL;
			if (s && pal_tz_open_iana(s, &tz, e, sizeof e) != 0) {
				pal_ydiag(diags, doc, v,
					  "calendar timezone: %s; hint: use an IANA name such as "
					  "Europe/Berlin or UTC",
					  e);
				c.errors++;
				free(s);
			} else if (s) {
				free(out->timezone);
				out->timezone = s;
			}
			pal_tz_close(tz);
		} else if (!strcmp(k, "exclude") || !strcmp(k, "include_only")) {
			if (mode) {
				pal_ydiag(
				    diags, doc, n->keys[i],
				    "calendar: both exclude and include_only (first at line "
				    "%d); hint: a calendar either excludes times or names the "
				    "only ones allowed",
				    mode->line);
				c.errors++;
				continue;
			}
			mode = n->keys[i];
			out->include_only = !strcmp(k, "include_only");
			rules(&c, v, k, out);
		} else {
			const char *hint = pal_suggest(k, keys, sizeof keys / sizeof *keys);
			pal_ydiag(
			    diags, doc, n->keys[i],
			    "unknown key \"%.64s\" in calendar%s%s%s (expected name, timezone, "
			    "exclude or include_only)",
			    k, hint ? "; did you mean \"" : "", hint ? hint : "",
			    hint ? "\"?" : "");
			c.errors++;
		}
	}
	if (!out->name && !pal_ynode_get(n, "name")) {
		pal_ydiag(diags, doc, n, "calendar: the key \"name\" is missing");
		c.errors++;
	}
	if (!mode) {
		pal_ydiag(diags, doc, n,
			  "calendar%s%s: neither exclude nor include_only; hint: add \"exclude:\" "
			  "with the dates, weekdays or windows to leave out",
			  out->name ? " " : "", out->name ? out->name : "");
		c.errors++;
	}
	if (!out->timezone && !(out->timezone = strdup("UTC"))) {
		pal_ydiag(diags, doc, n, "calendar: out of memory");
		c.errors++;
	}
	pal_calendar_normalize(out);
	if (c.errors)
		pal_calendar_clear(out);
	else
		out->line = n->line, out->col = n->col;
	return c.errors;
}
