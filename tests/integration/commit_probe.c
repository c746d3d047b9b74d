/*
 * commit_probe.c - commits claimed triggers as succeeded through the
 * executor's own commit statement (pal_store_prepare_commits, then
 * pal_store_commit_results), in batches, on one connection, as an
 * executor's commit connection does; for tests/integration/test_commit_plan.sh.
 *
 *   commit_probe --pg CONNINFO --batch N < "ID FENCE AT" lines
 *
 * AT is the trigger's instant in epoch seconds.  Prints "committed N" (the
 * results the database took).  Exit 0 when every batch ran, 1 when not.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include "palisade/execstore.h"
#include "palisade/store.h"

int main(int argc, char **argv)
{
	const char *pg = NULL;
	int batch = 64, o;
	static const struct option opts[] = { { "pg", required_argument, NULL, 'p' },
					      { "batch", required_argument, NULL, 'b' },
					      { 0 } };
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (o == 'p')
			pg = optarg;
		else if (o == 'b')
			batch = atoi(optarg);
		else
			return 1;
	}
	char err[1024];
	pal_store *st = NULL;
	if (!pg || batch < 1 || pal_store_open(pg, &st, err, sizeof err)) {
		fprintf(stderr, "commit_probe: %s\n", pg ? err : "--pg CONNINFO is required");
		return 1;
	}
	if (pal_store_prepare_commits(st, err, sizeof err)) {
		fprintf(stderr, "commit_probe: %s\n", err);
		pal_store_close(st);
		return 1;
	}
	pal_result *r = calloc((size_t)batch, sizeof *r);
	int n = 0, rc = 0;
	long done = 0;
	int64_t id, fence, at;
	for (;;) {
		int got = scanf("%" SCNd64 " %" SCNd64 " %" SCNd64, &id, &fence, &at);
		if (got == 3)
			r[n++] = (pal_result){ .id = id,
					       .fence = fence,
					       .state = PAL_TS_SUCCEEDED,
					       .error_class = "",
					       .next_delay_ms = PAL_NEXT_NONE,
					       .idempotency_key = "",
					       .at = at };
		if (n && (n == batch || got != 3)) {
			if (pal_store_commit_results(st, r, n, err, sizeof err)) {
				fprintf(stderr, "commit_probe: %s\n", err);
				rc = 1;
				break;
			}
			for (int i = 0; i < n; i++)
				done += r[i].committed;
			n = 0;
		}
		if (got != 3)
			break;
	}
	printf("committed %ld\n", done);
	free(r);
	pal_store_close(st);
	return rc;
}
