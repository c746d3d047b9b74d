/*
 * metrics.h - counters and gauges rendered in the Prometheus text exposition
 * format (no maintained C client exists; this is ours, small on purpose).
 *
 * Families are declared once (name, type, help); samples are addressed by
 * family name plus a label string in exposition syntax, e.g.
 *   pal_metric_inc(m, "palisade_elections_total", "shard=\"3\",outcome=\"won\"", 1);
 * LABELS may be NULL or "" for none.  Thread-safe; updates of an existing
 * sample take a mutex and a hash lookup (cheap, but keep them off per-row
 * loops: count in a local and add once per batch).
 */
#ifndef PALISADE_METRICS_H
#define PALISADE_METRICS_H

#include "palisade/err.h"

typedef struct pal_metrics pal_metrics;

typedef enum { PAL_METRIC_COUNTER, PAL_METRIC_GAUGE, PAL_METRIC_HISTOGRAM } pal_metric_type;

/* Most bucket bounds a histogram family may have (+Inf is implicit). */
#define PAL_METRIC_MAX_BUCKETS 24

/* New empty registry; free with pal_metrics_free(). NULL on ENOMEM. */
pal_metrics *pal_metrics_new(void);
void pal_metrics_free(pal_metrics *m);

/* Declare a family.  Re-declaring the same name is a no-op.  NAME must match
 * [a-zA-Z_:][a-zA-Z0-9_:]*; counters should end in _total. */
void pal_metric_declare(pal_metrics *m, const char *name, pal_metric_type type, const char *help);

/* Declare a histogram family with N upper bounds BOUNDS (strictly
 * increasing, finite, N <= PAL_METRIC_MAX_BUCKETS; +Inf is added).  Every
 * sample of the family (one per label string) has these buckets.  Bad
 * bounds leave the family undeclared (logged once at warn).  Declaring it
 * with pal_metric_declare(..., PAL_METRIC_HISTOGRAM, ...) is refused. */
void pal_metric_declare_histogram(pal_metrics *m, const char *name, const char *help,
				  const double *bounds, int n);
/* Record one observation V in the histogram NAME{LABELS}: the count of
 * every bucket whose bound is >= V, _sum += V, _count += 1.  LABELS must
 * not contain "le".  NaN is ignored (logged once). */
void pal_metric_observe(pal_metrics *m, const char *name, const char *labels, double v);
/* The bounds most latency histograms here use, in seconds: 1 ms .. 60 s. */
extern const double pal_metric_latency_bounds[];
extern const int pal_metric_latency_nbounds;

/* Counter += V (V >= 0).  The family must be declared (else ignored and
 * logged once at warn).  On a gauge, adds V of either sign.  A negative or
 * NaN increment of a counter, and LABELS that are not valid exposition
 * syntax (name="value" pairs, comma-separated, values escaped with \\, \"
 * and \n, UTF-8, no duplicate names), are ignored and logged once at warn.
 * The label string is the sample's identity: write the pairs of one family
 * in a fixed order.  M NULL is a no-op (modules accept a NULL registry). */
void pal_metric_inc(pal_metrics *m, const char *name, const char *labels, double v);
/* Gauge = V.  Setting a counter is refused (logged once at warn). */
void pal_metric_set(pal_metrics *m, const char *name, const char *labels, double v);
/* Current value of a sample (0 when absent); for tests and status JSON.
 * On a histogram: its _count. */
double pal_metric_get(pal_metrics *m, const char *name, const char *labels);

/* The whole registry in text format 0.0.4, families sorted by name, samples
 * sorted by labels.  Caller frees with free().  NULL on ENOMEM.
 * A family without samples renders its # HELP and # TYPE lines only.
 * A histogram sample renders as NAME_bucket{LABELS,le="B"} (cumulative,
 * ending with le="+Inf"), NAME_sum{LABELS} and NAME_count{LABELS}.
 * Values: integers up to 2^53 without exponent, other finite values in the
 * shortest form that reads back exactly (at most 17 digits, like the Go
 * client's FormatFloat(v, 'g', -1)), +Inf, -Inf, NaN. */
char *pal_metrics_render(pal_metrics *m);

/* NAME="VALUE" with VALUE escaped as the exposition wants (\\, \", \n);
 * invalid UTF-8 is replaced.  Caller frees with g_free(); NULL on ENOMEM. */
char *pal_metric_label_pair(const char *name, const char *value);

/* Whether NAME matches [a-zA-Z_:][a-zA-Z0-9_:]*. */
int pal_metric_name_valid(const char *name);
/* Whether LABELS (NULL or "" allowed) is valid label syntax, as above. */
int pal_metric_labels_valid(const char *labels);
/* Write V as the exposition spells it into BUF (32 bytes is always enough). */
void pal_metric_format_value(double v, char *buf, size_t len);

#endif
