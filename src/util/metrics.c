/*
 * metrics.c - the metric registry and its Prometheus text rendering
 * (metrics.h; exposition format 0.0.4).
 *
 * A registry maps family names to families (type, help, samples); a family
 * maps label strings, exactly as the caller wrote them, to one double.  Both
 * maps are GLib hash tables; rendering sorts names and label strings, so the
 * output is stable and diffable.
 *
 * Threading: one mutex per registry guards everything; updates are a lookup
 * and an add under it, rendering holds it for the whole text.  Misuse (an
 * undeclared family, bad labels, a negative counter increment) is logged
 * once per distinct problem, after the mutex is released.
 *
 * Ownership: pal_metrics_new() allocates the registry, pal_metrics_free()
 * releases it with every family and sample.  Names, help and label strings
 * are copied.  pal_metrics_render() returns malloc()ed text.
 */
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <glib.h>
#include "palisade/log.h"
#include "palisade/metrics.h"

#define MAX_WARNINGS 256 /* distinct misuse reports kept; beyond, stay quiet */
#define MAX_LABELS 32	 /* label pairs per sample */

typedef struct family {
	pal_metric_type type;
	char *help;
	GHashTable *samples; /* label string -> double* (histograms: hist*) */
	int nb;              /* histograms: bucket bounds, +Inf implicit */
	double bounds[PAL_METRIC_MAX_BUCKETS];
} family;

/* One histogram sample: per-bucket counts (not cumulative; the last one is
 * +Inf), their sum and total.  g_free()d like a plain double. */
typedef struct hist {
	double sum;
	uint64_t count;
	uint64_t buckets[PAL_METRIC_MAX_BUCKETS + 1];
} hist;

const double pal_metric_latency_bounds[] = { 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
					     0.1,   0.25,   0.5,   1,    2.5,   5,
					     10,    30,     60 };
const int pal_metric_latency_nbounds =
    (int)(sizeof pal_metric_latency_bounds / sizeof pal_metric_latency_bounds[0]);

struct pal_metrics {
	pthread_mutex_t mu;
	GHashTable *families; /* name -> family* */
	GHashTable *warned;   /* problem key -> NULL: what was already logged */
};

static void family_free(gpointer p)
{
	family *f = p;
	g_hash_table_destroy(f->samples);
	g_free(f->help);
	g_free(f);
}

pal_metrics *pal_metrics_new(void)
{
	pal_metrics *m = calloc(1, sizeof *m);
	if (m == NULL)
		return NULL;
	pthread_mutex_init(&m->mu, NULL);
	m->families = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, family_free);
	m->warned = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	return m;
}

void pal_metrics_free(pal_metrics *m)
{
	if (m == NULL)
		return;
	g_hash_table_destroy(m->families);
	g_hash_table_destroy(m->warned);
	pthread_mutex_destroy(&m->mu);
	free(m);
}

int pal_metric_name_valid(const char *name)
{
	if (name == NULL || !(g_ascii_isalpha(*name) || *name == '_' || *name == ':'))
		return 0;
	for (const char *p = name + 1; *p; p++)
		if (!(g_ascii_isalnum(*p) || *p == '_' || *p == ':'))
			return 0;
	return 1;
}

int pal_metric_labels_valid(const char *labels)
{
	if (labels == NULL || *labels == '\0')
		return 1;
	if (!g_utf8_validate(labels, -1, NULL))
		return 0;
	const char *names[MAX_LABELS];
	size_t lens[MAX_LABELS];
	size_t n = 0;
	const char *p = labels;
	for (;;) {
		const char *start = p;
		if (!(g_ascii_isalpha(*p) || *p == '_'))
			return 0;
		while (g_ascii_isalnum(*p) || *p == '_')
			p++;
		if (n == MAX_LABELS)
			return 0;
		for (size_t i = 0; i < n; i++)
			if (lens[i] == (size_t)(p - start) && memcmp(names[i], start, lens[i]) == 0)
				return 0;
		names[n] = start;
		lens[n++] = (size_t)(p - start);
		if (*p++ != '=' || *p++ != '"')
			return 0;
		while (*p != '"') {
			if (*p == '\0' || *p == '\n')
				return 0;
			if (*p == '\\') {
				p++;
				if (*p != '\\' && *p != '"' && *p != 'n')
					return 0;
			}
			p++;
		}
		p++; /* closing quote */
		if (*p == '\0')
			return 1;
		if (*p++ != ',')
			return 0;
	}
}

char *pal_metric_label_pair(const char *name, const char *value)
{
	char *v = g_utf8_make_valid(value ? value : "", -1);
	GString *g = g_string_new(name);
	g_string_append(g, "=\"");
	for (const char *p = v; *p; p++) {
		if (*p == '\\' || *p == '"')
			g_string_append_c(g, '\\');
		if (*p == '\n')
			g_string_append(g, "\\n");
		else
			g_string_append_c(g, *p);
	}
	g_string_append_c(g, '"');
	g_free(v);
	return g_string_free(g, FALSE);
}

void pal_metric_format_value(double v, char *buf, size_t len)
{
	if (isnan(v)) {
		snprintf(buf, len, "NaN");
	} else if (isinf(v)) {
		snprintf(buf, len, v > 0 ? "+Inf" : "-Inf");
	} else if (v == 0) {
		snprintf(buf, len, "0"); /* also for -0 */
	} else if (v == trunc(v) && fabs(v) <= 9007199254740992.0) {
		snprintf(buf, len, "%.0f", v);
	} else {
		/* shortest form that reads back as the same double; needs the C
		 * locale's decimal point, which the daemon never changes */
		for (int prec = 15; prec <= 17; prec++) {
			snprintf(buf, len, "%.*g", prec, v);
			if (strtod(buf, NULL) == v)
				break;
		}
	}
}

/* The problems one update can report, logged once each (warn_once). */
typedef struct warning {
	const char *event;
	const char *name;
	const char *labels;
	const char *detail;
} warning;

/* Under m->mu: whether W was not reported before (and remember it). */
static bool warn_first_time(pal_metrics *m, const warning *w)
{
	char *key = g_strdup_printf("%s|%s|%s", w->event, w->name ? w->name : "",
				    w->labels ? w->labels : "");
	if (g_hash_table_contains(m->warned, key) || g_hash_table_size(m->warned) >= MAX_WARNINGS) {
		g_free(key);
		return false;
	}
	g_hash_table_add(m->warned, key);
	return true;
}

static void log_warning(const warning *w)
{
	pal_log(PAL_LOG_WARN, w->event, "{s:s?, s:s?, s:s}", "metric", w->name, "labels", w->labels,
		"detail", w->detail);
}

/* Whether BOUNDS[0..N) can be a histogram's buckets. */
static bool bounds_valid(const double *bounds, int n)
{
	if (n < 1 || n > PAL_METRIC_MAX_BUCKETS || bounds == NULL)
		return false;
	for (int i = 0; i < n; i++)
		if (!isfinite(bounds[i]) || (i && !(bounds[i] > bounds[i - 1])))
			return false;
	return true;
}

static void declare(pal_metrics *m, const char *name, pal_metric_type type, const char *help,
		    const double *bounds, int nb)
{
	if (m == NULL)
		return;
	warning w = {.event = NULL, .name = name};
	bool report = false;
	pthread_mutex_lock(&m->mu);
	if (!pal_metric_name_valid(name)) {
		w.event = "metrics.bad_name";
		w.detail = "name must match [a-zA-Z_:][a-zA-Z0-9_:]*; family not declared";
		report = warn_first_time(m, &w);
	} else if (type == PAL_METRIC_HISTOGRAM && !bounds_valid(bounds, nb)) {
		w.event = "metrics.bad_buckets";
		w.detail = "histogram bounds must be 1..24 finite, strictly increasing values; "
			   "family not declared";
		report = warn_first_time(m, &w);
	} else {
		family *f = g_hash_table_lookup(m->families, name);
		if (f == NULL) {
			f = g_new0(family, 1);
			f->type = type;
			f->help = g_utf8_make_valid(help ? help : "", -1);
			f->samples = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
			if (type == PAL_METRIC_HISTOGRAM) {
				f->nb = nb;
				memcpy(f->bounds, bounds, (size_t)nb * sizeof *bounds);
			}
			g_hash_table_insert(m->families, g_strdup(name), f);
			if (type == PAL_METRIC_COUNTER && !g_str_has_suffix(name, "_total")) {
				w.event = "metrics.counter_name";
				w.detail = "counter names should end in _total";
				report = warn_first_time(m, &w);
			}
		} else if (f->type != type) {
			w.event = "metrics.redeclared";
			w.detail = "declared again with another type; first declaration kept";
			report = warn_first_time(m, &w);
		}
	}
	pthread_mutex_unlock(&m->mu);
	if (report)
		log_warning(&w);
}

void pal_metric_declare(pal_metrics *m, const char *name, pal_metric_type type, const char *help)
{
	if (type == PAL_METRIC_HISTOGRAM) {
		warning w = {.event = "metrics.bad_buckets",
			     .name = name,
			     .detail = "a histogram is declared with pal_metric_declare_histogram"};
		bool report = false;
		if (m) {
			pthread_mutex_lock(&m->mu);
			report = warn_first_time(m, &w);
			pthread_mutex_unlock(&m->mu);
		}
		if (report)
			log_warning(&w);
		return;
	}
	declare(m, name, type, help, NULL, 0);
}

void pal_metric_declare_histogram(pal_metrics *m, const char *name, const char *help,
				  const double *bounds, int n)
{
	declare(m, name, PAL_METRIC_HISTOGRAM, help, bounds, n);
}

/* Whether LABELS names a label "le" (reserved for a histogram's buckets). */
static bool has_le(const char *labels)
{
	for (const char *p = labels; (p = strstr(p, "le=\"")) != NULL; p++)
		if (p == labels || p[-1] == ',')
			return true;
	return false;
}

/* The one door for sample updates: SET replaces, otherwise V is added. */
static void update(pal_metrics *m, const char *name, const char *labels, double v, bool set)
{
	if (m == NULL)
		return;
	if (labels == NULL)
		labels = "";
	warning w = {.event = NULL, .name = name, .labels = labels};
	bool report = false;
	pthread_mutex_lock(&m->mu);
	family *f = name ? g_hash_table_lookup(m->families, name) : NULL;
	if (f == NULL) {
		w.event = "metrics.unknown_family";
		w.detail = "update of an undeclared metric ignored";
		w.labels = NULL;
	} else if (f->type == PAL_METRIC_HISTOGRAM) {
		w.event = "metrics.histogram_update";
		w.detail = "a histogram takes observations (pal_metric_observe), not inc or set";
		w.labels = NULL;
	} else if (set && f->type == PAL_METRIC_COUNTER) {
		w.event = "metrics.counter_set";
		w.detail = "a counter cannot be set, only increased; ignored";
		w.labels = NULL;
	} else if (!set && f->type == PAL_METRIC_COUNTER && !(v >= 0)) {
		w.event = "metrics.counter_decrease";
		w.detail = "counter increments must be >= 0; ignored";
		w.labels = NULL;
	} else {
		double *val = g_hash_table_lookup(f->samples, labels);
		if (val == NULL) {
			if (!pal_metric_labels_valid(labels)) {
				w.event = "metrics.bad_labels";
				w.detail =
				    "labels must be name=\"value\" pairs separated by commas";
			} else {
				val = g_new0(double, 1);
				g_hash_table_insert(f->samples, g_strdup(labels), val);
			}
		}
		if (val != NULL)
			*val = set ? v : *val + v;
	}
	if (w.event != NULL)
		report = warn_first_time(m, &w);
	pthread_mutex_unlock(&m->mu);
	if (report)
		log_warning(&w);
}

void pal_metric_observe(pal_metrics *m, const char *name, const char *labels, double v)
{
	if (m == NULL)
		return;
	if (labels == NULL)
		labels = "";
	warning w = {.event = NULL, .name = name, .labels = labels};
	bool report = false;
	pthread_mutex_lock(&m->mu);
	family *f = name ? g_hash_table_lookup(m->families, name) : NULL;
	if (f == NULL || f->type != PAL_METRIC_HISTOGRAM) {
		w.event = f ? "metrics.not_histogram" : "metrics.unknown_family";
		w.detail = "observation of a metric that is not a declared histogram ignored";
		w.labels = NULL;
	} else if (isnan(v)) {
		w.event = "metrics.nan_observation";
		w.detail = "NaN observation ignored";
		w.labels = NULL;
	} else {
		hist *h = g_hash_table_lookup(f->samples, labels);
		if (h == NULL) {
			if (!pal_metric_labels_valid(labels) || has_le(labels)) {
				w.event = "metrics.bad_labels";
				w.detail = "labels must be name=\"value\" pairs separated by "
					   "commas, without le";
			} else {
				h = g_new0(hist, 1);
				g_hash_table_insert(f->samples, g_strdup(labels), h);
			}
		}
		if (h != NULL) {
			int b = 0;
			while (b < f->nb && v > f->bounds[b])
				b++;
			h->buckets[b]++;
			h->count++;
			h->sum += v;
		}
	}
	if (w.event != NULL)
		report = warn_first_time(m, &w);
	pthread_mutex_unlock(&m->mu);
	if (report)
		log_warning(&w);
}

void pal_metric_inc(pal_metrics *m, const char *name, const char *labels, double v)
{
	update(m, name, labels, v, false);
}

void pal_metric_set(pal_metrics *m, const char *name, const char *labels, double v)
{
	update(m, name, labels, v, true);
}

double pal_metric_get(pal_metrics *m, const char *name, const char *labels)
{
	if (m == NULL || name == NULL)
		return 0;
	double v = 0;
	pthread_mutex_lock(&m->mu);
	family *f = g_hash_table_lookup(m->families, name);
	void *val = f ? g_hash_table_lookup(f->samples, labels ? labels : "") : NULL;
	if (val != NULL)
		v = f->type == PAL_METRIC_HISTOGRAM ? (double)((hist *)val)->count : *(double *)val;
	pthread_mutex_unlock(&m->mu);
	return v;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Keys of H, sorted bytewise; free the array (not the keys) with g_free(). */
static const char **sorted_keys(GHashTable *h, guint *n)
{
	const char **keys = (const char **)g_hash_table_get_keys_as_array(h, n);
	qsort(keys, *n, sizeof *keys, cmp_str);
	return keys;
}

/* HELP text escaping of format 0.0.4: backslash and line feed only. */
static void put_help(FILE *out, const char *help)
{
	for (const char *p = help; *p; p++) {
		if (*p == '\\')
			fputs("\\\\", out);
		else if (*p == '\n')
			fputs("\\n", out);
		else
			fputc(*p, out);
	}
}

/* One histogram sample: cumulative buckets, +Inf, _sum, _count. */
static void render_hist(FILE *out, const char *name, const family *f, const char *l,
			const hist *h)
{
	const char *sep = l[0] ? "," : "";
	uint64_t cum = 0;
	char b[32];
	for (int k = 0; k < f->nb; k++) {
		cum += h->buckets[k];
		pal_metric_format_value(f->bounds[k], b, sizeof b);
		fprintf(out, "%s_bucket{%s%sle=\"%s\"} %" PRIu64 "\n", name, l, sep, b, cum);
	}
	cum += h->buckets[f->nb];
	fprintf(out, "%s_bucket{%s%sle=\"+Inf\"} %" PRIu64 "\n", name, l, sep, cum);
	pal_metric_format_value(h->sum, b, sizeof b);
	if (l[0]) {
		fprintf(out, "%s_sum{%s} %s\n", name, l, b);
		fprintf(out, "%s_count{%s} %" PRIu64 "\n", name, l, h->count);
	} else {
		fprintf(out, "%s_sum %s\n%s_count %" PRIu64 "\n", name, b, name, h->count);
	}
}

char *pal_metrics_render(pal_metrics *m)
{
	char *text = NULL;
	size_t size = 0;
	FILE *out = open_memstream(&text, &size);
	if (out == NULL)
		return NULL;
	if (m != NULL) {
		pthread_mutex_lock(&m->mu);
		guint nf;
		const char **names = sorted_keys(m->families, &nf);
		for (guint i = 0; i < nf; i++) {
			const family *f = g_hash_table_lookup(m->families, names[i]);
			if (f->help[0] != '\0') {
				fprintf(out, "# HELP %s ", names[i]);
				put_help(out, f->help);
				fputc('\n', out);
			}
			static const char *const type_names[] = { "counter", "gauge", "histogram" };
			fprintf(out, "# TYPE %s %s\n", names[i], type_names[f->type]);
			guint ns;
			const char **labels = sorted_keys(f->samples, &ns);
			for (guint j = 0; j < ns; j++) {
				const char *l = labels[j];
				if (f->type == PAL_METRIC_HISTOGRAM) {
					render_hist(out, names[i], f, l,
						    g_hash_table_lookup(f->samples, l));
					continue;
				}
				char val[32];
				pal_metric_format_value(*(double *)g_hash_table_lookup(f->samples, l),
							val, sizeof val);
				if (l[0] != '\0')
					fprintf(out, "%s{%s} %s\n", names[i], l, val);
				else
					fprintf(out, "%s %s\n", names[i], val);
			}
			g_free(labels);
		}
		g_free(names);
		pthread_mutex_unlock(&m->mu);
	}
	if (ferror(out)) {
		fclose(out);
		free(text);
		return NULL;
	}
	if (fclose(out) != 0) {
		free(text);
		return NULL;
	}
	return text;
}
