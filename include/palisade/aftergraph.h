/*
 * aftergraph.h - the dependency graph of job files (`after:`,
 * src/config/aftergraph.c): which upstreams are unknown and which jobs wait
 * for themselves through a cycle, across every file loaded together and
 * the jobs the cluster already holds.
 *
 * The job loader (jobfile.h) owns one graph and adds every valid job with
 * `after` to it; `validate` checks it against the files alone, `apply` adds
 * the stored jobs first (pal_after_graph_add_stored), so that an upstream
 * applied earlier is known and a cycle through stored jobs is found.
 */
#ifndef PALISADE_AFTERGRAPH_H
#define PALISADE_AFTERGRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include "palisade/diags.h"
#include "palisade/err.h"
#include "palisade/jobspec.h"

typedef struct pal_after_graph pal_after_graph;

/* A new empty graph (NULL on ENOMEM); free with pal_after_graph_free. */
pal_after_graph *pal_after_graph_new(void);
void pal_after_graph_free(pal_after_graph *g);

/* Job DOWN, defined in FILE, waits for UPS[0..n) (their names and
 * positions are copied).  Returns 0 or PAL_ENOMEM. */
PAL_MUST_CHECK int pal_after_graph_add_loaded(pal_after_graph *g, const char *down,
					      const pal_after *ups, size_t n, const char *file);
/* Stored live job ID waits for UPS[0..n) (n = 0: a job without `after`).
 * A job the files define again is judged by its new definition.  Returns 0
 * or PAL_ENOMEM. */
PAL_MUST_CHECK int pal_after_graph_add_stored(pal_after_graph *g, const char *id,
					      const char *const *ups, size_t n);
/* Whether any loaded job has `after`. */
bool pal_after_graph_empty(const pal_after_graph *g);
/* FN(ARG, NAME) once per distinct upstream name of the loaded jobs. */
void pal_after_graph_foreach_upstream(const pal_after_graph *g,
				      void (*fn)(void *arg, const char *name), void *arg);

/*
 * Diagnose every upstream that is neither loaded (SEEN(ARG, NAME), the
 * loader's ids) nor stored, and every loaded job that waits for itself
 * through a cycle, at the position of the upstream name in its file
 * (file:line:col).  STORED_CHECKED: the stored jobs were added (apply), so
 * the hint of an unknown upstream says so.  Returns the number of problems.
 */
size_t pal_after_graph_check(const pal_after_graph *g, bool (*seen)(void *arg, const char *id),
			     void *arg, bool stored_checked, pal_diags *diags);

#endif
