/*
 * joblabels.c - a job's `labels:`: string keys and values about the job,
 * checked as Kubernetes checks labels, never read by planning or calls.
 */
#include <stdlib.h>
#include <string.h>
#include "jobfile_int.h"

static int cmp_label(const void *a, const void *b)
{
	return strcmp(((const pal_label *)a)->key, ((const pal_label *)b)->key);
}

/* `labels: {KEY: VALUE, ...}`: 1 to PAL_LABELS_MAX pairs, each key and value
 * by Kubernetes' rule (pal_label_key_problem); kept sorted by key. */
void pal__job_key_labels(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	pal_label *out;
	size_t n = 0;
	int before = c->errors;

	if (pal_yexpect_map(c->doc, v, "labels", c->diags) != 0) {
		c->errors++;
		return;
	}
	if (v->n == 0 || v->n > PAL_LABELS_MAX) {
		pal__job_diag(c, v,
			      "labels: expected 1 to %d labels, got %zu; hint: leave the key out "
			      "for none",
			      PAL_LABELS_MAX, v->n);
		return;
	}
	out = calloc(v->n, sizeof *out);
	if (!out) {
		pal__job_diag(c, v, "labels: out of memory");
		return;
	}
	for (size_t i = 0; i < v->n; i++) {
		const pal_ynode *kn = v->keys[i];
		const char *why = pal_label_key_problem(kn->str);
		char *val;

		if (why) {
			pal__job_diag(c, kn,
				      "labels: key \"%.64s\" %s; hint: [prefix/]name, the name of "
				      "at most 63 letters, digits, '-', '_' and '.'",
				      kn->str, why);
			continue;
		}
		val = pal__job_str(c, v->vals[i], "labels: value", 63);
		if (!val)
			continue;
		why = pal_label_value_problem(val);
		if (why) {
			pal__job_diag(c, v->vals[i], "labels: value \"%.64s\" of \"%.64s\" %s", val,
				      kn->str, why);
			free(val);
			continue;
		}
		out[n].key = strdup(kn->str);
		out[n].value = val;
		if (!out[n].key) {
			free(val);
			pal__job_diag(c, kn, "labels: out of memory");
			continue;
		}
		n++;
	}
	if (c->errors != before) {
		for (size_t i = 0; i < n; i++) {
			free(out[i].key);
			free(out[i].value);
		}
		free(out);
		return;
	}
	qsort(out, n, sizeof *out, cmp_label);
	for (size_t i = 0; i < s->n_labels; i++) {
		free(s->labels[i].key);
		free(s->labels[i].value);
	}
	free(s->labels);
	s->labels = out;
	s->n_labels = n;
}
