/*
 * history.c - the console's pictures (console_int.h): a ring of the last
 * hour of this node's own samples, and the inline SVG charts drawn from it.
 *
 * Every PAL__HISTORY_STEP_MS a periodic thread (periodic.h) renders the
 * node's metrics registry as /metrics serves it and keeps, from that text,
 * the series the Grafana dashboard plots (ops/grafana, the recording rules
 * of ops/prometheus): the count and the buckets of
 * palisade_executor_fire_lateness_seconds (one observation per fire) and
 * palisade_cluster_backlog_triggers summed over the waiting states
 * (pending, retry_wait, unknown) by group.  Reading the exposition text, not
 * the registry's internals, keeps the pictures and the dashboard on the
 * same figures.  At render time: fires per second between samples, fire
 * lateness p50 and p99 over the last PAL__HISTORY_WINDOW samples (bucket
 * deltas, interpolated within a bucket as histogram_quantile() does), and
 * the due backlog of each group.
 *
 * Memory: PAL__HISTORY_LEN samples of a few hundred bytes.  Threading: the
 * sampler thread writes the ring under MU, pages read it under MU.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/clock.h"
#include "palisade/html.h"
#include "palisade/log.h"
#include "palisade/metrics.h"
#include "palisade/periodic.h"
#include "console_int.h"

#define NB (PAL_METRIC_MAX_BUCKETS + 1) /* bounds + Inf */
#define GROUPS_MAX 8			/* groups plotted (the first seen) */

typedef struct sample {
	int64_t at_ms;	   /* wall clock */
	double fires;	   /* the lateness histogram's _count, summed */
	double bucket[NB]; /* its cumulative buckets, summed, by bound */
	double due[GROUPS_MAX];
	bool has_backlog;
} sample;

struct pal__history {
	pthread_mutex_t mu;
	pal_metrics *m; /* borrowed */
	pal_periodic *th;
	sample ring[PAL__HISTORY_LEN];
	size_t n, next;		    /* samples held, where the next goes */
	char group[GROUPS_MAX][65]; /* the groups plotted */
	size_t n_groups;
};

/* ---- sampling ------------------------------------------------------------------ */

/* The index of bucket bound LE among the latency bounds (+Inf: the last);
 * -1 when it is none of them. */
static int bound_index(const char *le)
{
	if (!strcmp(le, "+Inf"))
		return pal_metric_latency_nbounds;
	double v = strtod(le, NULL);
	for (int i = 0; i < pal_metric_latency_nbounds; i++)
		if (pal_metric_latency_bounds[i] == v)
			return i;
	return -1;
}

/* The value of label NAME in LABELS ("a=\"x\",b=\"y\"") into OUT; false
 * when absent.  Values are ours (group and state names): no escapes. */
static bool label(const char *labels, const char *name, char *out, size_t len)
{
	char key[32];
	snprintf(key, sizeof key, "%s=\"", name);
	const char *p = strstr(labels, key);
	if (!p || (p != labels && p[-1] != ',' && p[-1] != '{'))
		return false;
	p += strlen(key);
	size_t n = strcspn(p, "\"");
	if (n >= len)
		return false;
	memcpy(out, p, n);
	out[n] = '\0';
	return true;
}

/* The plotted index of GROUP, added while there is room; -1 otherwise. */
static int group_index(pal__history *h, const char *group)
{
	for (size_t i = 0; i < h->n_groups; i++)
		if (!strcmp(h->group[i], group))
			return (int)i;
	if (h->n_groups == GROUPS_MAX)
		return -1;
	g_strlcpy(h->group[h->n_groups], group, sizeof h->group[0]);
	return (int)h->n_groups++;
}

static const char LATE[] = "palisade_executor_fire_lateness_seconds";
static const char BACKLOG[] = "palisade_cluster_backlog_triggers";

/* One exposition line into S. */
static void take_line(pal__history *h, const char *line, sample *s)
{
	size_t nl = strcspn(line, "{ ");
	const char *labels = line[nl] == '{' ? line + nl : "";
	const char *val = strrchr(line, ' ');
	if (!val || line[0] == '#')
		return;
	double v = strtod(val + 1, NULL);
	size_t ll = strlen(LATE);
	if (nl > ll && !strncmp(line, LATE, ll)) {
		char le[32];
		if (!strncmp(line + ll, "_count", nl - ll) && nl - ll == 6) {
			s->fires += v;
		} else if (nl - ll == 7 && !strncmp(line + ll, "_bucket", 7) &&
			   label(labels, "le", le, sizeof le)) {
			int i = bound_index(le);
			if (i >= 0)
				s->bucket[i] += v;
		}
	} else if (nl == strlen(BACKLOG) && !strncmp(line, BACKLOG, nl)) {
		char group[65], state[32];
		if (!label(labels, "group", group, sizeof group) ||
		    !label(labels, "state", state, sizeof state))
			return;
		if (strcmp(state, "pending") && strcmp(state, "retry_wait") &&
		    strcmp(state, "unknown"))
			return;
		int g = group_index(h, group);
		if (g >= 0)
			s->due[g] += v;
		s->has_backlog = true;
	}
}

static void take_sample(void *arg)
{
	pal__history *h = arg;
	char *text = pal_metrics_render(h->m);
	if (!text)
		return;
	sample s = {.at_ms = pal_wall_ms()};
	pthread_mutex_lock(&h->mu);
	for (char *line = text, *end; line && *line; line = end ? end + 1 : NULL) {
		end = strchr(line, '\n');
		if (end)
			*end = '\0';
		take_line(h, line, &s);
	}
	h->ring[h->next] = s;
	h->next = (h->next + 1) % PAL__HISTORY_LEN;
	if (h->n < PAL__HISTORY_LEN)
		h->n++;
	pthread_mutex_unlock(&h->mu);
	free(text);
}

pal__history *pal__history_start(pal_metrics *m)
{
	if (!m)
		return NULL;
	pal__history *h = g_new0(pal__history, 1);
	pthread_mutex_init(&h->mu, NULL);
	h->m = m;
	if (pal_periodic_start(take_sample, h, PAL__HISTORY_STEP_MS, &h->th)) {
		pal_log(PAL_LOG_WARN, "console.history_failed", "{s:s}", "error",
			"no thread: the console shows no charts");
		pthread_mutex_destroy(&h->mu);
		g_free(h);
		return NULL;
	}
	return h;
}

void pal__history_stop(pal__history *h)
{
	if (!h)
		return;
	pal_periodic_stop(h->th);
	pthread_mutex_destroy(&h->mu);
	g_free(h);
}

/* ---- the series ------------------------------------------------------------------- */

/* Quantile Q of the observations between cumulative buckets A (earlier)
 * and B, interpolated linearly within its bucket; NAN when none. */
static double quantile(double q, const double *a, const double *b)
{
	int nb = pal_metric_latency_nbounds;
	double total = b[nb] - a[nb];
	if (total <= 0)
		return NAN;
	double rank = q * total, prev = 0, lower = 0;
	for (int i = 0; i <= nb; i++) {
		double c = b[i] - a[i];
		if (c >= rank) {
			if (i == nb) /* beyond the last bound: the bound */
				return pal_metric_latency_bounds[nb - 1];
			double upper = pal_metric_latency_bounds[i];
			return c > prev ? lower + (upper - lower) * (rank - prev) / (c - prev)
					: upper;
		}
		prev = c;
		lower = i < nb ? pal_metric_latency_bounds[i] : lower;
	}
	return NAN;
}

static json_t *num_or_null(double v)
{
	return isfinite(v) ? json_real(round(v * 1000) / 1000) : json_null();
}

json_t *pal__history_json(pal__history *h)
{
	if (!h)
		return json_null();
	json_t *t = json_array(), *fires = json_array(), *p50 = json_array(), *p99 = json_array();
	json_t *backlog = json_object();
	pthread_mutex_lock(&h->mu);
	size_t first = (h->next + PAL__HISTORY_LEN - h->n) % PAL__HISTORY_LEN;
	json_t *due[GROUPS_MAX] = {0};
	for (size_t g = 0; g < h->n_groups; g++) {
		due[g] = json_array();
		json_object_set_new(backlog, h->group[g], due[g]);
	}
	for (size_t k = 1; k < h->n; k++) {
		const sample *s = &h->ring[(first + k) % PAL__HISTORY_LEN];
		const sample *p = &h->ring[(first + k - 1) % PAL__HISTORY_LEN];
		size_t w = k < PAL__HISTORY_WINDOW ? k : PAL__HISTORY_WINDOW;
		const sample *o = &h->ring[(first + k - w) % PAL__HISTORY_LEN];
		double dt = (double)(s->at_ms - p->at_ms) / 1000.0;
		json_array_append_new(t, json_integer(s->at_ms / 1000));
		json_array_append_new(
		    fires,
		    num_or_null(dt > 0 && s->fires >= p->fires ? (s->fires - p->fires) / dt : NAN));
		json_array_append_new(p50, num_or_null(quantile(0.5, o->bucket, s->bucket)));
		json_array_append_new(p99, num_or_null(quantile(0.99, o->bucket, s->bucket)));
		for (size_t g = 0; g < h->n_groups; g++)
			json_array_append_new(due[g],
					      s->has_backlog ? json_real(s->due[g]) : json_null());
	}
	pthread_mutex_unlock(&h->mu);
	return json_pack(
	    "{s:i, s:i, s:o, s:o, s:o, s:o, s:o}", "step_s", PAL__HISTORY_STEP_MS / 1000,
	    "window_s", PAL__HISTORY_STEP_MS * PAL__HISTORY_WINDOW / 1000, "t", t, "fires_per_s",
	    fires, "lateness_p50_s", p50, "lateness_p99_s", p99, "backlog_due", backlog);
}

/* ---- the pictures ---------------------------------------------------------------------- */

#define W 560
#define H 130
#define PAD_L 46
#define PAD_B 18

static const char *const colours[] = {"#1750b8", "#d9534f", "#2e8b57", "#b8860b",
				      "#6a3d9a", "#e07b00", "#008b8b", "#8b4513"};

/* One chart: ID, TITLE, the series NAMES[i] of VALUES[i] (json arrays of
 * numbers or nulls, one per time of T), UNIT after the axis figures. */
static void chart(GString *o, const char *id, const char *title, size_t n, const char *const *names,
		  json_t *const *values, const json_t *t, const char *unit)
{
	size_t len = json_array_size(t);
	double max = 0;
	for (size_t s = 0; s < n; s++)
		for (size_t i = 0; i < len; i++)
			max = fmax(max, json_number_value(json_array_get(values[s], i)));
	double top = max > 0 ? max * 1.1 : 1;
	int64_t t1 = json_integer_value(json_array_get(t, len ? len - 1 : 0));
	int64_t t0 = t1 - PAL__HISTORY_LEN * PAL__HISTORY_STEP_MS / 1000;
	g_string_append_printf(o, "<figure class=\"chart\" id=\"%s\"><figcaption>", id);
	pal_html_text(o, title);
	g_string_append_printf(o,
			       "</figcaption><svg xmlns=\"http://www.w3.org/2000/svg\" "
			       "viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\">",
			       W, H, W, H);
	g_string_append_printf(
	    o,
	    "<rect x=\"%d\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#fff\" "
	    "stroke=\"#d8dce3\"/>"
	    "<text x=\"%d\" y=\"10\" font-size=\"10\" text-anchor=\"end\">%.3g%s</text>"
	    "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"end\">0</text>"
	    "<text x=\"%d\" y=\"%d\" font-size=\"10\">&#8722;60 min</text>"
	    "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"end\">now</text>",
	    PAD_L, W - PAD_L, H - PAD_B, PAD_L - 3, top, unit, PAD_L - 3, H - PAD_B, PAD_L, H - 4,
	    W, H - 4);
	if (len == 0)
		g_string_append_printf(o,
				       "<text x=\"%d\" y=\"%d\" font-size=\"11\" fill=\"#5a6272\">"
				       "no samples yet</text>",
				       PAD_L + 8, (H - PAD_B) / 2);
	for (size_t s = 0; s < n; s++) {
		bool open = false;
		for (size_t i = 0; i < len; i++) {
			json_t *v = json_array_get(values[s], i);
			if (!json_is_number(v)) { /* a gap ends the line */
				if (open)
					g_string_append(o, "\"/>");
				open = false;
				continue;
			}
			double x =
			    PAD_L + (double)(W - PAD_L) *
					(double)(json_integer_value(json_array_get(t, i)) - t0) /
					(double)(t1 - t0 ? t1 - t0 : 1);
			double y = (H - PAD_B) * (1 - json_number_value(v) / top);
			if (!open)
				g_string_append_printf(
				    o,
				    "<polyline class=\"series\" fill=\"none\" "
				    "stroke=\"%s\" stroke-width=\"1.5\" points=\"",
				    colours[s % G_N_ELEMENTS(colours)]);
			g_string_append_printf(o, "%s%.1f,%.1f", open ? " " : "", x, y);
			open = true;
		}
		if (open)
			g_string_append(o, "\"/>");
	}
	g_string_append(o, "</svg><p class=\"legend\">");
	for (size_t s = 0; s < n; s++) {
		g_string_append_printf(o, "<span style=\"color:%s\">&#9632;</span> ",
				       colours[s % G_N_ELEMENTS(colours)]);
		pal_html_text(o, names[s]);
		g_string_append(o, " ");
	}
	g_string_append(o, "</p></figure>\n");
}

void pal__history_svg(GString *o, const json_t *hist)
{
	if (json_is_null(hist)) {
		g_string_append(o, "<p class=\"none\" id=\"charts-withheld\">this node's charts: "
				   "every tenant's fires and backlog, not shown to a token limited "
				   "to tenants</p>\n");
		return;
	}
	if (!json_is_object(hist)) {
		g_string_append(o, "<p class=\"none\">no charts on this node (no metrics)</p>\n");
		return;
	}
	const json_t *t = json_object_get(hist, "t");
	const char *fn[] = {"fires per second"};
	json_t *fv[] = {json_object_get(hist, "fires_per_s")};
	chart(o, "chart-fires", "Fires per second (this node's executor)", 1, fn, fv, t, "/s");
	const char *ln[] = {"p50", "p99"};
	json_t *lv[] = {json_object_get(hist, "lateness_p50_s"),
			json_object_get(hist, "lateness_p99_s")};
	chart(o, "chart-lateness", "Fire lateness (start minus the scheduled instant)", 2, ln, lv,
	      t, " s");
	json_t *bl = json_object_get(hist, "backlog_due");
	if (!bl) {
		g_string_append(o, "<p class=\"none\" id=\"chart-backlog\">due backlog by group: "
				   "every tenant's, not shown to a token limited to tenants</p>\n");
		return;
	}
	const char *bn[GROUPS_MAX];
	json_t *bv[GROUPS_MAX];
	size_t n = 0;
	const char *k;
	json_t *v;
	json_object_foreach(bl, k, v)
	{
		if (n < GROUPS_MAX) {
			bn[n] = k;
			bv[n++] = v;
		}
	}
	chart(o, "chart-backlog", "Due backlog by group (cluster-wide, as this node read it)", n,
	      bn, bv, t, "");
}
