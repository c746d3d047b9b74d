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
 * The controller's cron parser (robfig/cron) treats a day field "*\/n"
 * (n > 1) as restricted, where Vixie cron and palisade treat any field
 * starting with '*' as unrestricted for the day-of-month/day-of-week OR
 * rule; such a field is written as the range it stands for ("1-31/n",
 * "0-6/n"), which both read alike.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/timefmt.h"
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

/* N as JSON, plain scalars typed the way Kubernetes' YAML reader types
 * them (null, booleans, numbers), every string escaped for a template. */
static void to_json(GString *g, const pal_ynode *n)
{
	if (n->kind == PAL_YNODE_MAP || n->kind == PAL_YNODE_SEQ) {
		bool map = n->kind == PAL_YNODE_MAP;
		g_string_append_c(g, map ? '{' : '[');
		for (size_t i = 0; i < n->n; i++) {
			if (i)
				g_string_append(g, ", ");
			if (map) {
				pal__import_json_str(g, n->keys[i]->str);
				g_string_append(g, ": ");
			}
			to_json(g, n->vals[i]);
		}
		g_string_append_c(g, map ? '}' : ']');
		return;
	}
	if (n->style == PAL_YSTYLE_PLAIN) {
		char *end;
		if (pal_ynode_is_null(n)) {
			g_string_append(g, "null");
			return;
		}
		if (!strcmp(n->str, "true") || !strcmp(n->str, "false")) {
			g_string_append(g, n->str);
			return;
		}
		if (!strcmp(n->str, "True") || !strcmp(n->str, "False")) {
			g_string_append(g, n->str[0] == 'T' ? "true" : "false");
			return;
		}
		strtod(n->str, &end);
		if (*n->str && !*end && strspn(n->str, "0123456789+-.eE") == strlen(n->str) &&
		    !(n->str[0] == '0' && n->len > 1 && g_ascii_isdigit(n->str[1]))) {
			g_string_append(g, n->str[0] == '+' ? n->str + 1 : n->str);
			return;
		}
	}
	pal__import_json_str(g, n->str);
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

/* The schedule in palisade's form: macros kept, day fields "*\/n" written
 * as ranges.  NULL (reported) when it has no palisade meaning. */
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
		if ((nf == 2 || nf == 4) && (*p)[0] == '*' && (*p)[1] == '/' && strcmp(*p + 2, "1"))
			g_string_append_printf(g, " %s%s", nf == 2 ? "1-31" : "0-6", *p + 1);
		else
			g_string_append_printf(g, "%s%s", nf ? " " : "", *p);
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

	if (!ns)
		ns = "default";
	if (!name || !spec || spec->kind != PAL_YNODE_MAP || !scalar(sched)) {
		issue(d, meta ? meta : doc, "not translated",
		      "CronJob without metadata.name or spec.schedule");
		goto out;
	}
	/* NAMESPACE.NAME is the CronJob's own key, which a cluster holds once:
	 * a suffix for a second one would depend on the order of the inputs,
	 * and swap the two jobs when that changes */
	g_string_printf(id, "%s.%s", ns, name);
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
		if (!strcmp(v, "Forbid"))
			overlap = "forbid";
		else if (!strcmp(v, "Replace"))
			overlap = "replace";
		else if (strcmp(v, "Allow"))
			issue(d, n, "not translated",
			      "spec.concurrencyPolicy \"%s\" (expected Allow, Forbid, Replace)", v);
	}
	if ((n = pal_ynode_get(spec, "startingDeadlineSeconds")) && (v = scalar(n))) {
		char *end;
		long long s = strtoll(v, &end, 10);
		if (*end || s < 0) {
			issue(d, n, "not translated", "spec.startingDeadlineSeconds \"%s\"", v);
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
	if ((n = pal_ynode_get(spec, "suspend")) && (v = scalar(n))) {
		if (!strcmp(v, "true"))
			suspend = true;
		else if (strcmp(v, "false"))
			issue(d, n, "not translated", "spec.suspend \"%s\"", v);
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
	if ((n = pal_ynode_get(spec, "jobTemplate")))
		to_json(body, n);
	else
		g_string_append(body, "null");
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
