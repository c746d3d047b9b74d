/*
 * kubernetes.c - Kubernetes CronJob manifests to palisade jobs
 * (docs/migrating.md).
 *
 * The input is one or more YAML documents ("---" lines between them); each
 * is read on its own through the job loader's safe YAML reader (no anchors,
 * no tags), with its lines numbered as in the whole file.  A CronJob of
 * batch/v1 or batch/v1beta1, also as an item of a `kind: List`, becomes one
 * job: id NAMESPACE.NAME, tenant NAMESPACE, schedule and timeZone (or a
 * CRON_TZ=/TZ= prefix in the schedule), concurrencyPolicy as overlap,
 * startingDeadlineSeconds as the misfire catch-up window (the controller
 * starts the latest missed run only: fire_once), suspend, and a call to the
 * --target-url whose JSON body carries the jobTemplate.  Everything else is
 * named in the report.
 *
 * The controller's cron parser (robfig/cron v3) reads day fields
 * otherwise than Vixie cron and palisade; day_field() writes them so that
 * both fire the same days.  Its clock handling (a fixed time a
 * spring-forward change skips is dropped, one a fall-back change repeats
 * runs twice) is not dst: auto's: dst_difference() names it.  Scalars are
 * typed as kubectl's YAML 1.1 reader types them (resolve()).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/cron.h"
#include "palisade/timefmt.h"
#include "palisade/tz.h"
#include "palisade/yamltree.h"
#include "import_int.h"

typedef struct kdoc {
	pal_import_result *r;
	const pal_import_opts *o;
	const char *name;
	int index;	 /* 1-based document number */
	const char *src; /* the text an entry's {digest} is of: its document's */
	size_t src_len;
	const char *doc; /* the document, from its line doc_line of the file */
	size_t doc_len;
	int doc_line;
} kdoc;

/* The whole lines of the document that node N spans (an item of a List
 * starts and ends on lines of its own, as `kubectl get -o yaml` prints it)
 * into *S, *LEN; false when they are not in the document. */
static bool node_lines(const kdoc *d, const pal_ynode *n, const char **s, size_t *len)
{
	int last = n->end_col > 1 ? n->end_line : n->end_line - 1;
	const char *p = d->doc, *end = d->doc + d->doc_len, *from = NULL;

	if (last < n->line)
		last = n->line;
	for (int l = d->doc_line; p < end; l++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *next = nl ? nl + 1 : end;
		if (l == n->line)
			from = p;
		if (l == last && from) {
			*s = from;
			*len = (size_t)(next - from);
			return true;
		}
		p = next;
	}
	return false;
}

static void issue(kdoc *d, const pal_ynode *n, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void issue(kdoc *d, const pal_ynode *n, const char *what, const char *fmt, ...)
{
	char where[64], *msg;
	va_list ap;

	if (n)
		snprintf(where, sizeof where, "%d: document %d", n->line, d->index);
	else
		snprintf(where, sizeof where, "document %d", d->index);
	va_start(ap, fmt);
	msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	pal__import_issue(d->r, d->name, where, what, "%s", msg);
	g_free(msg);
}

static const char *scalar(const pal_ynode *n)
{
	return n && n->kind == PAL_YNODE_SCALAR && !pal_ynode_is_null(n) ? n->str : NULL;
}

/* How Kubernetes types a scalar: kubectl reads a manifest with go-yaml v2
 * (YAML 1.1, through sigs.k8s.io/yaml) into untyped values, whose JSON the
 * API server gets.  Only a plain scalar is typed: y/yes/on/true and
 * n/no/off/false in three casings are booleans, ""/~/null in three casings
 * null; after '_' is dropped, an integer in Go's base-prefixed syntax
 * (0x, 0o, 0b, a leading 0 for octal: 0755 is 493) is an integer, and
 * [-+]?(.d+|d+(.d*)?)([eE][-+]?d+)? a float (08 is 8.0); the rest,
 * timestamps included, stays a string. */
typedef enum { KT_STR, KT_NULL, KT_BOOL, KT_INT, KT_FLOAT, KT_BAD } ktype;

/* Go's strconv.ParseInt/ParseUint(S, 0, 64) as go-yaml v2 tries them:
 * true with the value's sign and magnitude when one of them reads S;
 * *RANGE when ParseUint failed only for its size (a big integer). */
static bool go_int(const char *s, bool *neg, guint64 *mag, bool *range)
{
	bool sign = *s == '+' || *s == '-';
	int base = 10;
	guint64 v = 0;

	*neg = *s == '-';
	*range = false;
	if (sign)
		s++;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		base = 16, s += 2;
	else if (s[0] == '0' && (s[1] == 'o' || s[1] == 'O'))
		base = 8, s += 2;
	else if (s[0] == '0' && (s[1] == 'b' || s[1] == 'B'))
		base = 2, s += 2;
	else if (s[0] == '0' && s[1])
		base = 8, s++;
	if (!*s)
		return false;
	for (; *s; s++) {
		int dv = g_ascii_xdigit_value(*s);
		if (dv < 0 || dv >= base)
			return false;
		if (v > (G_MAXUINT64 - (guint64)dv) / (guint64)base) {
			*range = !sign; /* ParseUint takes no sign */
			return false;
		}
		v = v * (guint64)base + (guint64)dv;
	}
	*mag = v;
	/* ParseInt: -2^63 .. 2^63-1; ParseUint (no sign): up to 2^64-1 */
	if (*neg ? v > (guint64)G_MAXINT64 + 1 : sign && v > (guint64)G_MAXINT64) {
		*range = false;
		return false;
	}
	return true;
}

/* S matches go-yaml v2's float pattern [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? */
static bool yaml_float_text(const char *s)
{
	size_t d;

	if (*s == '+' || *s == '-')
		s++;
	if (*s == '.') {
		if (!(d = strspn(++s, "0123456789")))
			return false;
		s += d;
	} else {
		if (!(d = strspn(s, "0123456789")))
			return false;
		s += d;
		if (*s == '.')
			s += 1 + strspn(s + 1, "0123456789");
	}
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '+' || *s == '-')
			s++;
		if (!(d = strspn(s, "0123456789")))
			return false;
		s += d;
	}
	return !*s;
}

/* V as Go's encoding/json writes a float64: the fewest digits that read
 * back as V, fixed notation from 1e-6 to below 1e21, else an exponent
 * without leading zeros ("1e+21", "1.5e-7"). */
static void json_float(GString *g, double v)
{
	char buf[400];
	double a = v < 0 ? -v : v;

	if (a != 0 && (a < 1e-6 || a >= 1e21)) {
		for (int p = 0; p <= 17; p++) {
			snprintf(buf, sizeof buf, "%.*e", p, v);
			if (g_ascii_strtod(buf, NULL) == v)
				break;
		}
		char *e = strchr(buf, 'e');
		g_string_append_len(g, buf, e - buf + 2); /* "...e+" */
		e += 2;
		while (e[0] == '0' && e[1])
			e++;
		g_string_append(g, e);
		return;
	}
	for (int p = 0; p <= 330; p++) {
		snprintf(buf, sizeof buf, "%.*f", p, v);
		if (g_ascii_strtod(buf, NULL) == v)
			break;
	}
	g_string_append(g, buf);
}

/* N's type as Kubernetes reads it, and its JSON into G (when not NULL).
 * KT_BAD: a value JSON cannot hold (.nan, .inf, an integer past 64 bits),
 * which kubectl refuses. */
static ktype resolve(const pal_ynode *n, GString *g)
{
	static const char *const yes[] = {"y",	  "Y",	  "yes", "Yes", "YES", "true",
					  "True", "TRUE", "on",	 "On",	"ON"};
	static const char *const no[] = {"n",	  "N",	   "no",  "No",	 "NO", "false",
					 "False", "FALSE", "off", "Off", "OFF"};
	static const char *const bad[] = {".nan",  ".NaN",  ".NAN",  ".inf",  ".Inf",  ".INF",
					  "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF"};
	const char *s = n->str;
	ktype t = KT_STR;
	double f = 0;
	bool neg = false, range = false;
	guint64 mag = 0;
	char *plain = NULL;

	if (n->style != PAL_YSTYLE_PLAIN)
		goto out;
	if (pal_ynode_is_null(n)) {
		t = KT_NULL;
		goto out;
	}
	for (size_t i = 0; i < G_N_ELEMENTS(yes); i++)
		if (!strcmp(s, yes[i]) || !strcmp(s, no[i])) {
			t = KT_BOOL;
			neg = !strcmp(s, no[i]);
			goto out;
		}
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++)
		if (!strcmp(s, bad[i])) {
			t = KT_BAD;
			goto out;
		}
	if (*s == '.') {
		/* strconv.ParseFloat on the text as it is */
		if (yaml_float_text(s) && isfinite(f = g_ascii_strtod(s, NULL)))
			t = KT_FLOAT;
		goto out;
	}
	if (!g_ascii_isdigit(*s) && *s != '+' && *s != '-')
		goto out;
	{
		GString *p = g_string_new(NULL);
		for (const char *c = s; *c; c++)
			if (*c != '_')
				g_string_append_c(p, *c);
		plain = g_string_free(p, FALSE);
	}
	if (go_int(plain, &neg, &mag, &range))
		t = KT_INT;
	else if (yaml_float_text(plain) && isfinite(f = g_ascii_strtod(plain, NULL)))
		t = KT_FLOAT;
	else if (range)
		t = KT_BAD; /* a big.Int, which the JSON conversion refuses */
out:
	if (g) {
		if (t == KT_NULL)
			g_string_append(g, "null");
		else if (t == KT_BOOL)
			g_string_append(g, neg ? "false" : "true");
		else if (t == KT_INT)
			g_string_append_printf(g, "%s%" G_GUINT64_FORMAT, neg && mag ? "-" : "",
					       mag);
		else if (t == KT_FLOAT)
			json_float(g, f);
		else
			pal__import_json_str(g, n->str);
	}
	g_free(plain);
	return t;
}

/* N as JSON, its scalars typed as Kubernetes types them (resolve()), its
 * keys as sigs.k8s.io/yaml writes them (a boolean or integer key as its
 * text), every string escaped for a template.  Returns NULL, or the first
 * node kubectl could not write as JSON (KT_BAD; a key that is null, a
 * float or past int64). */
static const pal_ynode *to_json(GString *g, const pal_ynode *n)
{
	if (n->kind == PAL_YNODE_MAP || n->kind == PAL_YNODE_SEQ) {
		bool map = n->kind == PAL_YNODE_MAP;
		const pal_ynode *bad = NULL;
		g_string_append_c(g, map ? '{' : '[');
		for (size_t i = 0; i < n->n && !bad; i++) {
			if (i)
				g_string_append(g, ", ");
			if (map) {
				GString *k = g_string_new(NULL);
				ktype t = resolve(n->keys[i], k);
				if (t == KT_STR)
					pal__import_json_str(g, n->keys[i]->str);
				else if ((t == KT_BOOL ||
					  (t == KT_INT &&
					   (k->str[0] == '-' ||
					    g_ascii_strtoull(k->str, NULL, 10) <= G_MAXINT64))))
					pal__import_json_str(g, k->str);
				else
					bad = n->keys[i];
				g_string_free(k, TRUE);
				g_string_append(g, ": ");
			}
			if (!bad)
				bad = to_json(g, n->vals[i]);
		}
		g_string_append_c(g, map ? '}' : ']');
		return bad;
	}
	return resolve(n, g) == KT_BAD ? n : NULL;
}

/* The interval of "@every D" as the controller's parser (robfig/cron)
 * reads it: D a Go duration (time.ParseDuration: an optional sign, then
 * number-unit groups, units ns us µs ms s m h, or "0"), then its Every():
 * below 1s it is 1s, else cut to whole seconds.  -1 when D is no Go
 * duration (the API server refuses such a CronJob), -2 past 2^63 ns. */
static int64_t every_seconds(const char *t)
{
	static const struct {
		const char *u;
		long double ns;
	} units[] = {{"ns", 1}, {"us", 1e3}, {"\xc2\xb5s", 1e3}, {"\xce\xbcs", 1e3},
		     {"ms", 1e6},	{"s", 1e9},   {"m", 60e9},	    {"h", 3600e9}};
	long double total = 0;
	bool neg = *t == '-';

	if (*t == '-' || *t == '+')
		t++;
	if (!strcmp(t, "0"))
		return 1;
	if (!*t)
		return -1;
	while (*t) {
		const char *p = t;
		long double v = 0, scale = 1;
		bool digits = false;
		for (; g_ascii_isdigit(*p); p++, digits = true)
			v = v * 10 + (*p - '0');
		if (*p == '.')
			for (p++; g_ascii_isdigit(*p); p++, digits = true)
				v += (*p - '0') * (scale /= 10);
		if (!digits)
			return -1;
		size_t k, best = 0, len = 0;
		for (k = 0; k < G_N_ELEMENTS(units); k++) {
			size_t l = strlen(units[k].u);
			if (!strncmp(p, units[k].u, l) && l > len) {
				best = k;
				len = l;
			}
		}
		/* "m" is a prefix of "ms": the longest unit that matches */
		if (!len)
			return -1;
		total += v * units[best].ns;
		t = p + len;
	}
	if (total >= 9223372036854775808.0L)
		return -2;
	if (neg || total < 1e9L)
		return 1;
	return (int64_t)(total / 1e9L);
}

/* Day field F (NF 2: day of month, 4: day of week) of a CronJob's
 * schedule into G, written so that palisade reads the days the
 * controller's parser (robfig/cron v3, getRange) reads:
 *  - robfig counts a field as unrestricted for the day-of-month/day-of-week
 *    rule (its star bit) when any comma item is "*" or "?" with no step
 *    over 1 ("1,*", "*\/1"); Vixie cron and palisade look at the field's
 *    first character only.  Such a field stands for every day: "*".
 *  - "*\/n" or "?/n" (n > 1) is restricted for robfig and not for palisade:
 *    the range it stands for, "1-31/n" or "0-6/n".
 *  - a single value with a step, "N/step", is N up to the field's maximum,
 *    which for the day of week is 6 in robfig and 7 (Sunday again) in
 *    palisade: "N-6/step" ("mon/2" is 1-6/2, Mon, Wed, Fri). */
static void day_field(GString *g, const char *f, guint nf)
{
	char **items = g_strsplit(f, ",", -1);
	bool star = false;

	for (char **it = items; *it; it++) {
		const char *slash = strchr(*it, '/');
		size_t low = strcspn(*it, "-/");
		if (low == 1 && (**it == '*' || **it == '?') &&
		    (!slash || (slash[1] && strspn(slash + 1, "0123456789") == strlen(slash + 1) &&
				strtoul(slash + 1, NULL, 10) <= 1)))
			star = true;
	}
	if (star) {
		g_string_append_c(g, '*');
		g_strfreev(items);
		return;
	}
	for (char **it = items; *it; it++) {
		const char *slash = strchr(*it, '/');
		size_t low = strcspn(*it, "-/");
		if (it != items)
			g_string_append_c(g, ',');
		if (slash && low == 1 && (**it == '*' || **it == '?')) {
			g_string_append_printf(g, "%s%s", nf == 2 ? "1-31" : "0-6", slash);
		} else if (slash && nf == 4 && *it + low == slash) {
			static const char *const dows[] = {"sun", "mon", "tue", "wed",
							   "thu", "fri", "sat"};
			char *n = g_strndup(*it, low);
			int v = -1;
			for (int k = 0; k < 7; k++)
				if (!g_ascii_strcasecmp(n, dows[k]))
					v = k;
			if (v < 0 && *n && strspn(n, "0123456789") == low)
				v = atoi(n);
			if (v >= 0 && v <= 6)
				g_string_append_printf(g, "%d-6%s", v, slash);
			else
				g_string_append(g, *it); /* palisade or the API server refuses it */
			g_free(n);
		} else {
			g_string_append(g, *it);
		}
	}
	g_strfreev(items);
}

/* The schedule in palisade's form: macros kept, day fields as day_field()
 * writes them.  NULL (reported) when it has no palisade meaning. */
static char *schedule(kdoc *d, const pal_ynode *n, const char *text)
{
	char **f;
	GString *g;
	guint nf;

	if (text[0] == '@')
		return g_strdup(text);
	f = g_strsplit_set(text, " \t", -1);
	g = g_string_new(NULL);
	nf = 0;
	for (char **p = f; *p; p++) {
		if (!**p)
			continue;
		if (nf)
			g_string_append_c(g, ' ');
		if (nf == 2 || nf == 4)
			day_field(g, *p, nf);
		else
			g_string_append(g, *p);
		nf++;
	}
	g_strfreev(f);
	if (nf != 5) {
		issue(d, n, "not translated", "spec.schedule \"%s\": %u fields (expected 5)", text,
		      nf);
		g_string_free(g, TRUE);
		return NULL;
	}
	return g_string_free(g, FALSE);
}

/* NULL, or how the controller's runs of the fixed-time CRON in ZONE differ
 * from palisade's at the first clock changes in [FROM, TO) that concern
 * it (g_free()).  robfig/cron walks absolute time and matches each instant's
 * wall clock: a wall time a spring-forward change skips never comes, so
 * that run is dropped; one a fall-back change repeats comes in both passes,
 * so it runs twice.  palisade's dst: auto fires the first once at the
 * change and the second once (docs/jobs.md, `dst`).  A schedule that
 * follows the wall clock (minute or hour field starting with '*') is read
 * alike by both. */
static char *dst_difference(const char *cron, const char *zone, int64_t from, int64_t to)
{
	char err[256], day[16];
	GString *why = g_string_new(NULL);
	pal_cron *c = NULL;
	pal_tz *tz = NULL, *utc = NULL;
	bool seen[2] = {false, false}; /* [0] forward, [1] back */

	if (pal_cron_parse(cron, &c, err, sizeof err, NULL))
		goto out;
	if (pal_cron_follows_wall_clock(c) || pal_tz_open(zone, &tz, err, sizeof err) ||
	    pal_tz_open("UTC", &utc, err, sizeof err))
		goto out;
	for (int64_t t = from; t < to && !(seen[0] && seen[1]); t += 3600) {
		int32_t o1 = pal_tz_offset_at(tz, t), o2 = pal_tz_offset_at(tz, t + 3600);
		int back = o2 < o1;
		int64_t a = t + (back ? o2 : o1) - 1, end = t + 3600 + (back ? o1 : o2), at[2];
		if (o1 == o2 || seen[back])
			continue;
		/* the schedule's wall times around the change (read in UTC,
		 * which has no change): one that the change skips or repeats */
		while (!seen[back] && !pal_cron_next(c, utc, PAL_DST_AUTO, a, &a) && a < end)
			seen[back] = pal_tz_resolve(tz, a, at, NULL) == (back ? 2 : 0);
		if (!seen[back])
			continue;
		pal_fmt_date(a / 86400, day, sizeof day);
		g_string_append_printf(
		    why, "%son %s, when %s %s, the controller %s; palisade %s",
		    why->len ? "; " : "", day, zone,
		    back ? "sets its clock back" : "skips its clock forward",
		    back ? "runs this schedule's time in the repeated hour twice, once in each "
			   "pass"
			 : "skips this schedule's time in the skipped span (its parser never "
			   "meets that wall time)",
		    back ? "fires it once (dst: auto)" : "fires it at the change (dst: auto)");
	}
out:
	pal_tz_close(utc);
	pal_tz_close(tz);
	pal_cron_free(c);
	return g_string_free(why, !why->len);
}

static const char *const known_spec[] = {
    "schedule",
    "timeZone",
    "concurrencyPolicy",
    "startingDeadlineSeconds",
    "suspend",
    "successfulJobsHistoryLimit",
    "failedJobsHistoryLimit",
    "jobTemplate",
};

static void cronjob(kdoc *d, const pal_ynode *doc)
{
	const pal_ynode *meta = pal_ynode_get(doc, "metadata"), *spec = pal_ynode_get(doc, "spec");
	const pal_ynode *sched = pal_ynode_get(spec, "schedule"), *n;
	const char *name = scalar(pal_ynode_get(meta, "name"));
	const char *ns = scalar(pal_ynode_get(meta, "namespace"));
	const char *zone = NULL, *text, *overlap = NULL, *v;
	char *cron = NULL, *why = NULL, *misfire = NULL, *tzpre = NULL;
	GString *id = g_string_new(NULL), *body = g_string_new(NULL), *desc = g_string_new(NULL);
	bool suspend = false, has_start = false;
	int64_t every_s = 0, created, start = 0;
	const char *labels[2 * PAL_LABELS_MAX];
	size_t n_labels = 0;

	if (!name || !spec || spec->kind != PAL_YNODE_MAP || !scalar(sched)) {
		issue(d, meta ? meta : doc, "not translated",
		      "CronJob without metadata.name or spec.schedule");
		goto out;
	}
	if (!ns) {
		/* kubectl puts it in the namespace of -n or of its context */
		ns = "default";
		issue(d, meta, "approximated",
		      "CronJob %s has no metadata.namespace: taken as \"default\" (the id, the "
		      "tenant and the body's cronjob.namespace), where kubectl puts it in the "
		      "namespace of -n or of its context; hint: set metadata.namespace",
		      name);
	}
	/* NAMESPACE.NAME is the CronJob's own key, which a cluster holds once:
	 * a suffix for a second one would depend on the order of the inputs,
	 * and swap the two jobs when that changes; --prefix (the cluster)
	 * before it tells two clusters' CronJobs of one key apart */
	g_string_printf(id, "%s%s%s.%s", d->o->prefix ? d->o->prefix : "", d->o->prefix ? "." : "",
			ns, name);
	if (pal__import_taken(d->r, id->str)) {
		issue(d, meta, "not translated",
		      "CronJob %s/%s again: an earlier document has its namespace and name, and "
		      "the id %s; hint: import one cluster at a time (a second cluster's "
		      "CronJob of this key needs an id of its own, by hand)",
		      ns, name, id->str);
		goto out;
	}
	text = scalar(sched);
	if (!strncmp(text, "CRON_TZ=", 8) || !strncmp(text, "TZ=", 3)) {
		const char *z = strchr(text, '=') + 1, *sp = z + strcspn(z, " \t");
		tzpre = g_strndup(z, (gsize)(sp - z));
		text = sp + strspn(sp, " \t");
	}
	if ((v = scalar(pal_ynode_get(spec, "timeZone")))) {
		if (tzpre) {
			issue(d, sched, "not translated",
			      "both spec.timeZone and a time zone in spec.schedule (Kubernetes "
			      "refuses this CronJob)");
			goto out;
		}
		zone = v;
	} else if (tzpre) {
		zone = tzpre;
	} else if (d->o->timezone) {
		zone = d->o->timezone;
	} else {
		zone = "UTC";
	}
	if (!strncmp(text, "@every ", 7)) {
		/* a fixed interval: the controller counts it from the CronJob's
		 * creation (the first run one interval after it, each next one
		 * an interval after the last), in no zone */
		every_s = every_seconds(text + 7);
		if (every_s < 1 || every_s > 366LL * 86400) {
			issue(d, sched, "not translated", "spec.schedule \"%s\": %s", text,
			      every_s == -1 ? "not a Go duration (the API server refuses it)"
					    : "an interval over palisade's 366d");
			goto out;
		}
		/* the zone only places exclusion dates, but the job file names it */
		if ((why = pal__import_check_schedule("* * * * *", zone, d->o->now))) {
			issue(d, sched, "not translated", "%s", why);
			goto out;
		}
		v = scalar(pal_ynode_get(meta, "creationTimestamp"));
		if (v && !pal_parse_rfc3339(v, &created)) {
			has_start = true;
			start = created + every_s;
		} else {
			issue(d, sched, "approximated",
			      "spec.schedule \"%s\": the controller counts the interval from the "
			      "CronJob's metadata.creationTimestamp, %s; palisade counts it from "
			      "the job's activation (give `start`: the creation plus one interval)",
			      text, v ? "which is not an RFC 3339 time" : "which this manifest lacks");
		}
		if (pal_ynode_get(spec, "startingDeadlineSeconds"))
			issue(d, sched, "approximated",
			      "spec.schedule \"%s\" with spec.startingDeadlineSeconds: when its "
			      "last run is older than the deadline, the controller counts the "
			      "interval from the deadline's start instead, so its runs leave the "
			      "count from the creation that palisade keeps",
			      text);
	} else {
		if (!(cron = schedule(d, sched, text)))
			goto out;
		if (!tzpre && !scalar(pal_ynode_get(spec, "timeZone")) && !d->o->timezone)
			issue(d, sched, "approximated",
			      "%s/%s has no spec.timeZone: the controller manager reads the "
			      "schedule in its own local zone; taken as UTC",
			      ns, name);
		if ((why = pal__import_check_schedule(cron, zone, d->o->now))) {
			issue(d, sched, "not translated", "%s", why);
			goto out;
		}
		if ((why = dst_difference(cron, zone, d->o->now, d->o->now + 10 * 366 * 86400LL)))
			issue(d, sched, "approximated", "spec.schedule \"%s\": %s", text, why);
	}

	for (size_t i = 0; i < spec->n; i++) {
		bool known = false;
		for (size_t k = 0; k < G_N_ELEMENTS(known_spec); k++)
			known = known || !strcmp(spec->keys[i]->str, known_spec[k]);
		if (!known)
			issue(d, spec->keys[i], "not translated", "spec.%s: unknown field",
			      spec->keys[i]->str);
	}
	if ((n = pal_ynode_get(spec, "concurrencyPolicy")) && (v = scalar(n))) {
		if (!strcmp(v, "Forbid")) {
			/* the controller does not record a time it skips for an
			 * active Job: when that Job ends, the next sync starts the
			 * latest such time, within startingDeadlineSeconds */
			overlap = "queue";
			issue(d, n, "approximated",
			      "spec.concurrencyPolicy Forbid: overlap queue.  The controller "
			      "starts a time that came while a Job ran once that Job ends, but "
			      "only the latest such time, and only within "
			      "spec.startingDeadlineSeconds when it is set; palisade's queue runs "
			      "every such instant after the previous run (`overlap: forbid` "
			      "would skip them all)");
		} else if (!strcmp(v, "Replace"))
			overlap = "replace";
		else if (strcmp(v, "Allow"))
			issue(d, n, "not translated",
			      "spec.concurrencyPolicy \"%s\" (expected Allow, Forbid, Replace)", v);
	}
	if ((n = pal_ynode_get(spec, "startingDeadlineSeconds")) && scalar(n)) {
		GString *num = g_string_new(NULL);
		ktype t = resolve(n, num);
		/* a float that is a whole number is one in the JSON kubectl sends */
		bool whole = t == KT_INT ||
			     (t == KT_FLOAT && strspn(num->str, "-0123456789") == num->len);
		long long s = whole ? g_ascii_strtoll(num->str, NULL, 10) : -1;
		g_string_free(num, TRUE);
		if (!whole || s < 0) {
			issue(d, n, "not translated", "spec.startingDeadlineSeconds \"%s\"",
			      n->str);
		} else {
			if (s < 1 || s > 90LL * 86400)
				issue(
				    d, n, "approximated",
				    "spec.startingDeadlineSeconds %lld: palisade's catch-up window "
				    "is 1s to 90d; %s taken",
				    s, s < 1 ? "1s" : "90d");
			s = s < 1 ? 1 : s > 90LL * 86400 ? 90LL * 86400 : s;
			misfire = g_strdup_printf("{policy: fire_once, catchup_window: %llds}", s);
		}
	} else {
		issue(
		    d, sched, "approximated",
		    "no spec.startingDeadlineSeconds: the controller starts the latest missed run "
		    "however late; palisade catches up within its default window (1h)");
	}
	if ((n = pal_ynode_get(spec, "suspend")) && scalar(n)) {
		/* a YAML 1.1 boolean (True, yes, on, ...); anything else is no
		 * boolean, which the API server refuses: no job rather than a
		 * live one */
		GString *b = g_string_new(NULL);
		ktype t = resolve(n, b);
		suspend = t == KT_BOOL && !strcmp(b->str, "true");
		g_string_free(b, TRUE);
		if (t != KT_BOOL) {
			issue(d, n, "not translated",
			      "spec.suspend \"%s\": not a boolean (the API server refuses it)",
			      n->str);
			goto out;
		}
	}
	if ((n = pal_ynode_get(spec, "successfulJobsHistoryLimit")) ||
	    (n = pal_ynode_get(spec, "failedJobsHistoryLimit")))
		for (int k = 0; k < 2; k++) {
			const char *key =
			    k ? "failedJobsHistoryLimit" : "successfulJobsHistoryLimit";
			if ((n = pal_ynode_get(spec, key)))
				issue(
				    d, n, "not translated",
				    "spec.%s %s: palisade keeps every trigger and attempt until "
				    "`palisade retention` drops its partition, not a count per job",
				    key, scalar(n) ? scalar(n) : "?");
		}
	/* metadata.labels become the job's labels, as they are (Kubernetes and
	 * palisade check them by the same rule); one that is not a valid label
	 * anyway, or past the 64 a job holds, and every annotation (free text
	 * a label could not hold) are kept in the description */
	for (int k = 0; k < 2; k++) {
		const char *key = k ? "annotations" : "labels";
		const pal_ynode *m = pal_ynode_get(meta, key);
		if (!m || m->kind != PAL_YNODE_MAP || !m->n)
			continue;
		GString *kv = g_string_new(NULL);
		for (size_t i = 0; i < m->n; i++) {
			const char *val = scalar(m->vals[i]);
			if (!k && val && !pal_label_key_problem(m->keys[i]->str) &&
			    !pal_label_value_problem(val) && n_labels < PAL_LABELS_MAX) {
				labels[2 * n_labels] = m->keys[i]->str;
				labels[2 * n_labels++ + 1] = val;
				continue;
			}
			g_string_append_printf(kv, "%s%s=%s", kv->len ? ", " : "",
					       m->keys[i]->str, val ? val : "");
		}
		if (!kv->len) {
			g_string_free(kv, TRUE);
			continue;
		}
		if (k)
			issue(d, m, "not translated",
			      "metadata.annotations (%s): palisade jobs have no annotations; "
			      "kept in the description",
			      kv->str);
		else
			issue(d, m, "not translated",
			      "metadata.labels (%s): not valid labels, or past the %d a job "
			      "holds; kept in the description",
			      kv->str, PAL_LABELS_MAX);
		g_string_append_printf(desc, "\n%s: %s", key, kv->str);
		g_string_free(kv, TRUE);
	}
	{
		char *head = g_strdup_printf("Kubernetes CronJob %s/%s (%s, document %d)", ns, name,
					     d->name, d->index);
		g_string_prepend(desc, head);
		g_free(head);
	}
	if (desc->len > 4000)
		g_string_truncate(desc, 4000);

	g_string_append(body, "{\"cronjob\": {\"namespace\": ");
	pal__import_json_str(body, ns);
	g_string_append(body, ", \"name\": ");
	pal__import_json_str(body, name);
	g_string_append(body, "}, \"jobTemplate\": ");
	if ((n = pal_ynode_get(spec, "jobTemplate"))) {
		const pal_ynode *bad = to_json(body, n);
		if (bad) {
			issue(d, bad, "not translated",
			      "spec.jobTemplate: \"%s\" has no JSON form (kubectl reads it as "
			      "NaN, an infinity or an integer past 64 bits, or as a map key "
			      "that is null, a float or past int64) and refuses this CronJob",
			      bad->str);
			goto out;
		}
	} else {
		g_string_append(body, "null");
	}
	g_string_append(body, ", \"scheduled_at\": \"{scheduled_at}\"}");
	if (body->len > 64 * 1024) {
		issue(d, n, "not translated",
		      "spec.jobTemplate: %zu bytes as JSON, over the 64 KiB of a request body",
		      body->len);
		goto out;
	}

	if (id->len > 128 || !pal__import_text_ok(id->str, id->len) ||
	    strspn(id->str, "abcdefghijklmnopqrstuvwxyz0123456789.-") != id->len) {
		issue(d, meta, "not translated",
		      "metadata \"%s\": not a valid Kubernetes name, no palisade id derived",
		      id->str);
		goto out;
	}
	pal__import_job j = {
	    .id = id->str,
	    .tenant = ns,
	    .cron = cron,
	    .every_s = every_s,
	    .has_start = has_start,
	    .start = start,
	    .timezone = zone,
	    .misfire = misfire,
	    .overlap = overlap,
	    .suspend = suspend,
	    .description = desc->str,
	    .labels = labels,
	    .n_labels = n_labels,
	    .body = body->str,
	    .source = d->src,
	    .source_len = d->src_len,
	};
	pal__import_emit(d->r, &j, d->o);
out:
	g_free(cron);
	g_free(why);
	g_free(misfire);
	g_free(tzpre);
	g_string_free(id, TRUE);
	g_string_free(body, TRUE);
	g_string_free(desc, TRUE);
}

static void object(kdoc *d, const pal_ynode *doc)
{
	const char *api = scalar(pal_ynode_get(doc, "apiVersion"));
	const char *kind = scalar(pal_ynode_get(doc, "kind"));
	const char *name = scalar(pal_ynode_get(pal_ynode_get(doc, "metadata"), "name"));
	const pal_ynode *items;

	if (doc->kind != PAL_YNODE_MAP) {
		issue(d, doc, "skipped", "not a Kubernetes object (%s)", pal_ynode_describe(doc));
		return;
	}
	if (kind && !strcmp(kind, "List") && (items = pal_ynode_get(doc, "items")) &&
	    items->kind == PAL_YNODE_SEQ) {
		/* each entry's {digest} is of its own item, so that an edit of
		 * one CronJob changes no other job's */
		const char *src = d->src;
		size_t src_len = d->src_len;
		for (size_t i = 0; i < items->n; i++) {
			if (!node_lines(d, items->vals[i], &d->src, &d->src_len)) {
				d->src = src;
				d->src_len = src_len;
			}
			object(d, items->vals[i]);
		}
		d->src = src;
		d->src_len = src_len;
		return;
	}
	if (!kind || strcmp(kind, "CronJob")) {
		issue(d, doc, "skipped", "%s %s is not a CronJob", kind ? kind : "(no kind)",
		      name ? name : "(no name)");
		return;
	}
	if (!api || (strcmp(api, "batch/v1") && strcmp(api, "batch/v1beta1"))) {
		issue(d, doc, "not translated",
		      "CronJob %s of apiVersion %s (expected batch/v1 or "
		      "batch/v1beta1)",
		      name ? name : "(no name)", api ? api : "(none)");
		return;
	}
	cronjob(d, doc);
}

/* True for a line "---" (perhaps followed by blanks or a comment). */
static bool doc_start(const char *l, size_t n)
{
	if (n < 3 || strncmp(l, "---", 3))
		return false;
	for (size_t i = 3; i < n; i++) {
		if (l[i] == '#')
			return l[i - 1] == ' ' || l[i - 1] == '\t';
		if (l[i] != ' ' && l[i] != '\t' && l[i] != '\r')
			return false;
	}
	return true;
}

/* One document: lines [first_line, ...) at BUF[0..len).  Read with as many
 * blank lines before it as it had lines before it, so positions are the
 * file's. */
static int document(kdoc *d, int first_line, const char *buf, size_t len)
{
	GString *g;
	pal_ydoc ydoc = {0};
	pal_diags diags = {0};
	bool content = false;
	int rc;

	for (size_t at = 0; at < len && !content;) {
		const char *nl = memchr(buf + at, '\n', len - at);
		size_t n = nl ? (size_t)(nl - (buf + at)) : len - at;
		size_t s = strspn(buf + at, " \t\r");
		content = s < n && buf[at + s] != '#' && !(n >= 3 && !strncmp(buf + at, "...", 3));
		at += n + 1;
	}
	if (!content)
		return 0;
	d->index++;
	g = g_string_new(NULL);
	for (int i = 1; i < first_line; i++)
		g_string_append_c(g, '\n');
	g_string_append_len(g, buf, (gssize)len);
	d->src = d->doc = buf;
	d->src_len = d->doc_len = len;
	d->doc_line = first_line;
	rc = pal_ydoc_load_buffer(d->name, g->str, g->len, &ydoc, &diags);
	if (rc) {
		for (size_t i = 0; i < diags.n; i++) {
			char where[32];
			snprintf(where, sizeof where, "%d:%d", diags.v[i].line, diags.v[i].col);
			pal__import_issue(d->r, d->name, where, "unreadable", "document %d: %s",
					  d->index, diags.v[i].msg);
		}
		rc = PAL_EINVAL;
	} else {
		object(d, ydoc.root);
	}
	pal_ydoc_free(&ydoc);
	pal_diags_free(&diags);
	g_string_free(g, TRUE);
	return rc;
}

int pal_import_kubernetes(pal_import_result *r, const char *name, const char *buf, size_t len,
			  const pal_import_opts *o)
{
	kdoc d = {.r = r, .o = o, .name = name, .index = 0};
	size_t start = 0;
	int lineno = 0, first = 1, rc = 0;

	for (size_t at = 0; at <= len;) {
		const char *nl = at < len ? memchr(buf + at, '\n', len - at) : NULL;
		size_t n = nl ? (size_t)(nl - (buf + at)) : len - at;
		lineno++;
		if (at == len || doc_start(buf + at, n)) {
			if (document(&d, first, buf + start, at - start))
				rc = PAL_EINVAL;
			start = at + n + (nl ? 1 : 0);
			first = lineno + 1;
			if (at == len)
				break;
		}
		at += n + 1;
		if (at > len)
			at = len;
	}
	return rc;
}
