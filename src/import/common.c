/*
 * common.c - the part every importer shares: the result and its report,
 * YAML and JSON quoting, stable names, and the writing of one job.
 *
 * The YAML written here is plain: every string value double-quoted with
 * escapes, so no text from the source can change the document's shape, and
 * nothing the job loader refuses (anchors, tags, plain "010").
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "palisade/cron.h"
#include "palisade/sha256.h"
#include "palisade/timefmt.h"
#include "palisade/tz.h"
#include "import_int.h"

pal_import_result *pal_import_result_new(void)
{
	pal_import_result *r = g_new0(pal_import_result, 1);
	r->yaml = g_string_new(NULL);
	r->report = g_string_new(NULL);
	r->file = g_string_new(NULL);
	r->ids = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	return r;
}

void pal_import_result_free(pal_import_result *r)
{
	if (!r)
		return;
	g_string_free(r->yaml, TRUE);
	g_string_free(r->report, TRUE);
	g_string_free(r->file, TRUE);
	g_hash_table_destroy(r->ids);
	g_free(r);
}

const char *pal_import_yaml(const pal_import_result *r)
{
	g_string_assign(r->file, r->n_jobs ? "jobs:\n" : "jobs: []\n");
	g_string_append_len(r->file, r->yaml->str, (gssize)r->yaml->len);
	return r->file->str;
}

const char *pal_import_report(const pal_import_result *r)
{
	return r->report->str;
}
size_t pal_import_jobs(const pal_import_result *r)
{
	return r->n_jobs;
}
size_t pal_import_issues(const pal_import_result *r)
{
	return r->n_issues;
}

static void report_line(pal_import_result *r, const char *name, const char *where, const char *what,
			const char *fmt, va_list ap)
{
	g_string_append_printf(r->report, "%s:%s: %s: ", name, where, what);
	g_string_append_vprintf(r->report, fmt, ap);
	g_string_append_c(r->report, '\n');
}

void pal__import_issue(pal_import_result *r, const char *name, const char *where, const char *what,
		       const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	report_line(r, name, where, what, fmt, ap);
	va_end(ap);
	r->n_issues++;
}

void pal__import_note(pal_import_result *r, const char *name, const char *where, const char *what,
		      const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	report_line(r, name, where, what, fmt, ap);
	va_end(ap);
}

/* S quoted into G: as a YAML double-quoted scalar, or (JSON) as a JSON
 * string whose '$' and '{' are \u escapes, so that a body template takes
 * them literally and a JSON reader turns them back into the same text. */
static void quote(GString *g, const char *s, bool json)
{
	g_string_append_c(g, '"');
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			g_string_append_printf(g, "\\%c", *p);
		else if (*p == '\n')
			g_string_append(g, "\\n");
		else if (*p == '\t')
			g_string_append(g, "\\t");
		else if (*p < 0x20 || *p == 0x7f || (json && (*p == '$' || *p == '{')))
			g_string_append_printf(g, json ? "\\u%04x" : "\\x%02x", *p);
		else
			g_string_append_c(g, (char)*p);
	}
	g_string_append_c(g, '"');
}

static void yaml_str(GString *g, const char *s)
{
	quote(g, s, false);
}

void pal__import_json_str(GString *g, const char *s)
{
	quote(g, s, true);
}

char *pal__import_slug(const char *s, size_t max)
{
	GString *g = g_string_new(NULL);
	bool dash = false;

	for (const unsigned char *p = (const unsigned char *)s; *p && g->len < max; p++) {
		unsigned char c = g_ascii_tolower(*p);
		if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
			if (dash && g->len)
				g_string_append_c(g, '-');
			g_string_append_c(g, (char)c);
			dash = false;
		} else {
			dash = true;
		}
	}
	if (g->len > max)
		g_string_truncate(g, max);
	/* cut at the last '-' in the final quarter, so a word is not halved */
	if (g->len == max) {
		const char *d = strrchr(g->str, '-');
		if (d && (size_t)(d - g->str) >= max * 3 / 4)
			g_string_truncate(g, (gsize)(d - g->str));
	}
	while (g->len && g->str[g->len - 1] == '-')
		g_string_truncate(g, g->len - 1);
	return g_string_free(g, FALSE);
}

char *pal__import_check_schedule(const char *cron, const char *zone, int64_t from)
{
	char err[256];
	pal_cron *c = NULL;
	pal_tz *tz = NULL;
	int64_t next;
	char *why = NULL;

	if (pal_cron_parse(cron, &c, err, sizeof err, NULL))
		return g_strdup_printf("invalid schedule \"%s\": %s", cron, err);
	if (pal_tz_open_iana(zone, &tz, err, sizeof err))
		why = g_strdup(err);
	else if (pal_cron_next(c, tz, PAL_DST_AUTO, from, &next))
		why = g_strdup_printf("schedule \"%s\" never fires again", cron);
	pal_tz_close(tz);
	pal_cron_free(c);
	return why;
}

char *pal__import_gap_collision(const char *cron, const char *zone, int64_t from, int64_t to)
{
	char err[256], day[16], *why = NULL;
	pal_cron *c = NULL;
	pal_tz *tz = NULL, *utc = NULL;

	if (pal_cron_parse(cron, &c, err, sizeof err, NULL))
		return NULL;
	if (pal_cron_follows_wall_clock(c) || pal_tz_open(zone, &tz, err, sizeof err) ||
	    pal_tz_open("UTC", &utc, err, sizeof err))
		goto out;
	for (int64_t t = from; t < to && !why; t += 3600) {
		int32_t o1 = pal_tz_offset_at(tz, t), o2 = pal_tz_offset_at(tz, t + 3600);
		int64_t lo = t, hi = t + 3600, a, b;
		if (o2 <= o1)
			continue;
		while (hi - lo > 1) { /* the first instant of the new offset */
			int64_t mid = lo + (hi - lo) / 2;
			if (pal_tz_offset_at(tz, mid) == o1)
				lo = mid;
			else
				hi = mid;
		}
		/* the skipped wall times and the first one after, read in UTC,
		 * which has no change: every wall time of the entry, once */
		int64_t gs = hi + o1, ge = hi + o2;
		if (pal_cron_next(c, utc, PAL_DST_AUTO, gs - 1, &a) == 0 && a <= ge &&
		    pal_cron_next(c, utc, PAL_DST_AUTO, a, &b) == 0 && b <= ge) {
			pal_fmt_date(gs / 86400, day, sizeof day);
			why = g_strdup_printf(
			    "on %s, when %s skips its clock forward, cron runs this entry "
			    "once for each of its times in the skipped span and the first "
			    "time after it; palisade fires them once, at the change",
			    day, zone);
		}
	}
out:
	pal_tz_close(utc);
	pal_tz_close(tz);
	pal_cron_free(c);
	return why;
}

bool pal__import_taken(const pal_import_result *r, const char *id)
{
	return g_hash_table_contains(r->ids, id);
}

bool pal__import_text_ok(const char *s, size_t len)
{
	if (!g_utf8_validate(s, (gssize)len, NULL))
		return false;
	for (size_t i = 0; i < len; i++)
		if (((unsigned char)s[i] < 0x20 && s[i] != '\t') || s[i] == 0x7f)
			return false;
	return true;
}

/* A unique id from WANT: WANT itself, else WANT-2, WANT-3, ... (owned by
 * R's id set). */
static const char *unique_id(pal_import_result *r, const char *want)
{
	char *id = g_strdup(want);

	for (int n = 2; g_hash_table_contains(r->ids, id); n++) {
		char sfx[16];
		size_t room;
		snprintf(sfx, sizeof sfx, "-%d", n);
		room = 128 - strlen(sfx);
		g_free(id);
		id = g_strdup_printf("%.*s%s", (int)MIN(strlen(want), room), want, sfx);
	}
	g_hash_table_add(r->ids, id);
	return id;
}

const char *pal__import_emit(pal_import_result *r, const pal__import_job *j,
			     const pal_import_opts *o)
{
	const char *id = unique_id(r, j->id);
	char hex[65];
	GString *url = g_string_new(NULL);
	GString *y = r->yaml;

	pal_sha256_hex(j->source, j->source_len, hex);
	for (const char *p = o->target_url; *p;) {
		if (!strncmp(p, "{job}", 5)) {
			g_string_append(url, id);
			p += 5;
		} else if (!strncmp(p, "{digest}", 8)) {
			g_string_append_len(url, hex, 16);
			p += 8;
		} else {
			g_string_append_c(url, *p++);
		}
	}

	g_string_append(y, "  - id: ");
	yaml_str(y, id);
	if (j->tenant) {
		g_string_append(y, "\n    tenant: ");
		yaml_str(y, j->tenant);
	}
	if (o->group) {
		g_string_append(y, "\n    group: ");
		yaml_str(y, o->group);
	}
	if (o->shadow)
		g_string_append(y, "\n    mode: shadow");
	if (j->description) {
		g_string_append(y, "\n    description: ");
		yaml_str(y, j->description);
	}
	if (j->n_labels)
		g_string_append(y, "\n    labels:");
	for (size_t i = 0; i < j->n_labels; i++) {
		g_string_append(y, "\n      ");
		yaml_str(y, j->labels[2 * i]);
		g_string_append(y, ": ");
		yaml_str(y, j->labels[2 * i + 1]);
	}
	g_string_append(y, "\n    schedule:\n      ");
	if (j->every_s) {
		g_string_append_printf(y, "every: %llds", (long long)j->every_s);
	} else if (j->has_at) {
		char ts[40];
		pal_fmt_rfc3339(j->at, ts, sizeof ts);
		g_string_append_printf(y, "at: %s", ts);
	} else {
		g_string_append(y, "cron: ");
		yaml_str(y, j->cron);
	}
	g_string_append(y, "\n      timezone: ");
	yaml_str(y, j->timezone);
	for (int k = 0; k < 2; k++) {
		char ts[40];
		if (!(k ? j->has_end : j->has_start))
			continue;
		pal_fmt_rfc3339(k ? j->end : j->start, ts, sizeof ts);
		g_string_append_printf(y, "\n      %s: %s", k ? "end" : "start", ts);
	}
	if (j->misfire)
		g_string_append_printf(y, "\n    misfire: %s", j->misfire);
	if (j->overlap)
		g_string_append_printf(y, "\n    overlap: %s", j->overlap);
	if (j->has_priority)
		g_string_append_printf(y, "\n    priority: %d", j->priority);
	if (j->suspend)
		g_string_append(y, "\n    suspend: true");
	g_string_append(y, "\n    target:\n      url: ");
	yaml_str(y, url->str);
	if (j->body) {
		g_string_append(y, "\n      body: ");
		yaml_str(y, j->body);
	}
	g_string_append_c(y, '\n');
	g_string_free(url, TRUE);
	r->n_jobs++;
	return id;
}

int pal_import_check_target(const char *tmpl, char *err, size_t errlen)
{
	if (!tmpl || !*tmpl) {
		snprintf(err, errlen,
			 "--target-url is required (e.g. http://runner:8080/run/{job})");
		return PAL_EINVAL;
	}
	for (const char *p = tmpl; (p = strchr(p, '{')); p++) {
		size_t n = strspn(p + 1, "abcdefghijklmnopqrstuvwxyz_0123456789");
		if (p[1 + n] != '}' || n == 0)
			continue;
		if (strncmp(p, "{job}", 5) && strncmp(p, "{digest}", 8)) {
			snprintf(err, errlen,
				 "unknown placeholder \"%.*s\" in --target-url (expected {job}, "
				 "{digest})",
				 (int)n + 2, p);
			return PAL_EINVAL;
		}
	}
	return 0;
}
