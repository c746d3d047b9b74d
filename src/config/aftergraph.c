/*
 * aftergraph.c - the dependency graph of job files (see aftergraph.h).
 *
 * Loaded jobs carry the positions of their upstream names, for
 * file:line:col; stored jobs only their names.  A job both loaded and
 * stored is judged by its loaded definition (the one being applied).  The
 * cycle check runs a depth-first search from each loaded dependent job
 * and reports the job when the search comes back to it; graphs are small
 * (a handful of dependent jobs among many), so the search per job costs
 * nothing that matters beside parsing the files.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <glib.h>
#include "palisade/aftergraph.h"

/* One upstream of a loaded job. */
struct up {
	char *name;
	const char *file; /* the graph's copy */
	int line, col;
};

struct pal_after_graph {
	GHashTable *loaded; /* down (owned) -> GArray of struct up */
	GHashTable *stored; /* id (owned) -> GPtrArray of upstream names (owned) */
	GHashTable *files;  /* interned file names */
};

static void ups_free(gpointer p)
{
	GArray *a = p;

	for (guint i = 0; i < a->len; i++)
		g_free(g_array_index(a, struct up, i).name);
	g_array_free(a, TRUE);
}

pal_after_graph *pal_after_graph_new(void)
{
	pal_after_graph *g = calloc(1, sizeof *g);

	if (!g)
		return NULL;
	g->loaded = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, ups_free);
	g->stored = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
					  (GDestroyNotify)g_ptr_array_unref);
	g->files = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	return g;
}

void pal_after_graph_free(pal_after_graph *g)
{
	if (!g)
		return;
	g_hash_table_destroy(g->loaded);
	g_hash_table_destroy(g->stored);
	g_hash_table_destroy(g->files);
	free(g);
}

static const char *intern(pal_after_graph *g, const char *file)
{
	char *f = g_hash_table_lookup(g->files, file);

	if (!f) {
		f = g_strdup(file);
		g_hash_table_add(g->files, f);
	}
	return f;
}

int pal_after_graph_add_loaded(pal_after_graph *g, const char *down, const pal_after *ups, size_t n,
			       const char *file)
{
	GArray *a = g_array_sized_new(FALSE, FALSE, sizeof(struct up), (guint)n);

	for (size_t i = 0; i < n; i++) {
		struct up u = {g_strdup(ups[i].job), intern(g, file ? file : "?"), ups[i].line,
			       ups[i].col};
		g_array_append_val(a, u);
	}
	g_hash_table_replace(g->loaded, g_strdup(down), a);
	return PAL_OK;
}

int pal_after_graph_add_stored(pal_after_graph *g, const char *id, const char *const *ups, size_t n)
{
	GPtrArray *a = g_ptr_array_new_with_free_func(g_free);

	for (size_t i = 0; i < n; i++)
		g_ptr_array_add(a, g_strdup(ups[i]));
	g_hash_table_replace(g->stored, g_strdup(id), a);
	return PAL_OK;
}

bool pal_after_graph_empty(const pal_after_graph *g)
{
	return g_hash_table_size(g->loaded) == 0;
}

void pal_after_graph_foreach_upstream(const pal_after_graph *g,
				      void (*fn)(void *arg, const char *name), void *arg)
{
	GHashTable *done = g_hash_table_new(g_str_hash, g_str_equal);
	GHashTableIter it;
	gpointer k, v;

	g_hash_table_iter_init(&it, g->loaded);
	while (g_hash_table_iter_next(&it, &k, &v)) {
		GArray *a = v;

		for (guint i = 0; i < a->len; i++) {
			char *name = g_array_index(a, struct up, i).name;

			if (g_hash_table_add(done, name))
				fn(arg, name);
		}
	}
	g_hash_table_destroy(done);
}

/* The upstream names of job ID into OUT (borrowed), by its loaded
 * definition when it has one.  Returns false for a job that is neither. */
static void upstreams(const pal_after_graph *g, const char *id, GPtrArray *out)
{
	GArray *a = g_hash_table_lookup(g->loaded, id);
	GPtrArray *s;

	g_ptr_array_set_size(out, 0);
	if (a) {
		for (guint i = 0; i < a->len; i++)
			g_ptr_array_add(out, g_array_index(a, struct up, i).name);
	} else if ((s = g_hash_table_lookup(g->stored, id))) {
		for (guint i = 0; i < s->len; i++)
			g_ptr_array_add(out, s->pdata[i]);
	}
}

/* Depth-first from AT looking for TARGET; PATH holds the names walked
 * (borrowed).  True when found: PATH then ends with TARGET. */
static bool reaches(const pal_after_graph *g, const char *at, const char *target,
		    GHashTable *visited, GPtrArray *path)
{
	GPtrArray *ups = g_ptr_array_new();
	bool found = false;

	g_ptr_array_add(path, (gpointer)at);
	if (!strcmp(at, target) && path->len > 1) {
		g_ptr_array_free(ups, TRUE);
		return true;
	}
	if (g_hash_table_add(visited, (gpointer)at)) {
		upstreams(g, at, ups);
		for (guint i = 0; !found && i < ups->len; i++)
			found = reaches(g, ups->pdata[i], target, visited, path);
	}
	g_ptr_array_free(ups, TRUE);
	if (!found)
		g_ptr_array_remove_index(path, path->len - 1);
	return found;
}

size_t pal_after_graph_check(const pal_after_graph *g, bool (*seen)(void *arg, const char *id),
			     void *arg, bool stored_checked, pal_diags *diags)
{
	GHashTableIter it;
	gpointer k, v;
	size_t problems = 0;

	g_hash_table_iter_init(&it, g->loaded);
	while (g_hash_table_iter_next(&it, &k, &v)) {
		const char *down = k;
		GArray *a = v;

		for (guint i = 0; i < a->len; i++) {
			const struct up *u = &g_array_index(a, struct up, i);
			GHashTable *visited;
			GPtrArray *path;

			if (!seen(arg, u->name) && !g_hash_table_contains(g->stored, u->name)) {
				pal_diags_addf(diags, u->file, u->line, u->col,
					       "after.job: unknown job \"%s\"; hint: an upstream "
					       "must be defined in the files given%s",
					       u->name,
					       stored_checked ? " or applied already"
							      : " (apply also accepts a job "
								"applied already)");
				problems++;
				continue;
			}
			visited = g_hash_table_new(g_str_hash, g_str_equal);
			path = g_ptr_array_new();
			g_ptr_array_add(path, (gpointer)down);
			if (reaches(g, u->name, down, visited, path)) {
				GString *s = g_string_new(NULL);

				for (guint p = 0; p < path->len; p++)
					g_string_append_printf(s, "%s%s", p ? " -> " : "",
							       (const char *)path->pdata[p]);
				pal_diags_addf(diags, u->file, u->line, u->col,
					       "after: job \"%s\" waits for itself (%s); hint: "
					       "dependencies must not form a cycle",
					       down, s->str);
				g_string_free(s, TRUE);
				problems++;
			}
			g_hash_table_destroy(visited);
			g_ptr_array_free(path, TRUE);
		}
	}
	return problems;
}
