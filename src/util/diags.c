/* diags.c - diagnostics of the loaders (include/palisade/diags.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/diags.h"

void pal_diags_addf(pal_diags *d, const char *file, int line, int col, const char *fmt, ...)
{
	char buf[1024];
	pal_diag *v;
	va_list ap;

	if (!d || d->n >= PAL_DIAGS_MAX)
		return;
	if (d->n == PAL_DIAGS_MAX - 1) {
		snprintf(buf, sizeof buf,
			 "too many problems; the remaining diagnostics are "
			 "suppressed");
		line = col = 0;
	} else {
		va_start(ap, fmt);
		vsnprintf(buf, sizeof buf, fmt, ap);
		va_end(ap);
	}
	v = realloc(d->v, (d->n + 1) * sizeof *v);
	if (!v)
		return;
	d->v = v;
	v[d->n].file = file ? strdup(file) : NULL;
	v[d->n].msg = strdup(buf);
	v[d->n].line = line;
	v[d->n].col = col;
	if (!v[d->n].msg || (file && !v[d->n].file)) {
		free(v[d->n].file);
		free(v[d->n].msg);
		return;
	}
	d->n++;
}

void pal_diags_free(pal_diags *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n; i++) {
		free(d->v[i].file);
		free(d->v[i].msg);
	}
	free(d->v);
	d->v = NULL;
	d->n = 0;
}

void pal_diags_print(const pal_diags *d, FILE *fp)
{
	for (size_t i = 0; i < d->n; i++) {
		const pal_diag *g = &d->v[i];
		const char *file = g->file ? g->file : "<input>";

		if (g->line > 0)
			fprintf(fp, "%s:%d:%d: error: %s\n", file, g->line, g->col, g->msg);
		else
			fprintf(fp, "%s: error: %s\n", file, g->msg);
	}
}

