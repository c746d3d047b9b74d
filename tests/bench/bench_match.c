/*
 * bench_match.c - time the step of pal_store_commit_results()
 * (src/store/exec.c) that marks which results the UPDATE returned, as it was
 * (a scan of the results per returned row, O(n^2), kept here for the
 * comparison) and as it is (sort the results by id once, binary search per
 * row, O(n log n): the store's own pal__id_refs_sort() and
 * pal__id_refs_find(), from libpalisade.a).  The commit itself needs a
 * database; this program runs its matching loop on arrays.  Prints figures;
 * asserts nothing except that both loops mark the same results.  Built and
 * run by tests/bench/hotpath.sh.
 *
 * n results with distinct ids in a shuffled order; the "database" returns
 * every id, in another order (the UPDATE's RETURNING order is unspecified).
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../../src/store/store_int.h"

typedef struct res {
	int64_t id;
	bool committed;
	char final_state[16];
} res;

static double secs(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void mark(res *x, const char *state)
{
	x->committed = true;
	snprintf(x->final_state, sizeof x->final_state, "%s", state);
}

static void match_scan(res *r, int n, const int64_t *ret, int nret)
{
	for (int i = 0; i < n; i++)
		r[i].committed = false;
	for (int j = 0; j < nret; j++)
		for (int i = 0; i < n; i++)
			if (r[i].id == ret[j])
				mark(&r[i], "succeeded");
}

static void match_sorted(res *r, int n, const int64_t *ret, int nret, pal_id_ref *by_id)
{
	for (int i = 0; i < n; i++) {
		r[i].committed = false;
		by_id[i] = (pal_id_ref){ r[i].id, i };
	}
	pal__id_refs_sort(by_id, (size_t)n);
	for (int j = 0; j < nret; j++)
		for (size_t k = pal__id_refs_find(by_id, (size_t)n, ret[j]);
		     k < (size_t)n && by_id[k].id == ret[j]; k++)
			mark(&r[by_id[k].i], "succeeded");
}

static void shuffle(int64_t *a, int n)
{
	for (int i = n - 1; i > 0; i--) {
		int k = rand() % (i + 1);
		int64_t t = a[i];
		a[i] = a[k];
		a[k] = t;
	}
}

int main(int argc, char **argv)
{
	static const int def[] = { 64, 256, 1024, 4096, 16384 };
	int nn = argc > 1 ? argc - 1 : (int)(sizeof def / sizeof *def);
	srand(1);
	for (int a = 0; a < nn; a++) {
		int n = argc > 1 ? atoi(argv[a + 1]) : def[a];
		res *r = calloc((size_t)n, sizeof *r);
		int64_t *ids = calloc((size_t)n, sizeof *ids), *ret = calloc((size_t)n, sizeof *ret);
		pal_id_ref *by_id = calloc((size_t)n, sizeof *by_id);
		bool *was = calloc((size_t)n, sizeof *was);
		if (!r || !ids || !ret || !by_id || !was)
			return 1;
		for (int i = 0; i < n; i++)
			ids[i] = 1000000 + 7 * (int64_t)i;
		shuffle(ids, n);
		for (int i = 0; i < n; i++)
			r[i].id = ids[i];
		memcpy(ret, ids, (size_t)n * sizeof *ret);
		shuffle(ret, n);
		/* repeat small batches so that each figure spans a measurable time */
		int reps = n >= 16384 ? 1 : 16384 * 4 / n;
		double t0 = secs();
		for (int k = 0; k < reps; k++)
			match_scan(r, n, ret, n);
		double t_scan = (secs() - t0) / reps;
		for (int i = 0; i < n; i++)
			was[i] = r[i].committed;
		t0 = secs();
		for (int k = 0; k < reps; k++)
			match_sorted(r, n, ret, n, by_id);
		double t_sorted = (secs() - t0) / reps;
		for (int i = 0; i < n; i++)
			if (was[i] != r[i].committed || !r[i].committed) {
				fprintf(stderr, "bench_match: the two loops disagree at n=%d\n", n);
				return 1;
			}
		printf("commit match: %6d results  scan %10.1f us  sort+bsearch %8.1f us\n", n,
		       t_scan * 1e6, t_sorted * 1e6);
		free(r);
		free(ids);
		free(ret);
		free(by_id);
		free(was);
	}
	return 0;
}
