/*
 * commit_probe.c - commits claimed triggers as succeeded through the
 * executor's own commit statement (pal_store_prepare_commits, then
 * pal_store_commit_results), in batches, on one connection, as an
 * executor's commit connection does; for tests/integration/test_commit_plan.sh.
 *
 *   commit_probe --pg CONNINFO --batch N < "ID FENCE AT [STATE ERR HTTP KEY BODY]" lines
 *
 * AT is the trigger's instant in epoch seconds.  Without the rest a line
 * is a success; with it, STATE is the result's state (a retry_wait or a
 * deferral is due again at once), ERR its error class, HTTP its status,
 * KEY the idempotency key it sent, BODY the answer's body kept as its
 * excerpt; "-" for none (tests/integration/test_attempt_ledger.sh).
 * Prints "committed N" (the results the database took).  Exit 0 when
 * every batch ran, 1 when not.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/execstore.h"
#include "palisade/store.h"

int main(int argc, char **argv)
{
	const char *pg = NULL;
	int batch = 64, o;
	static const struct option opts[] = {
	    {"pg", required_argument, NULL, 'p'}, {"batch", required_argument, NULL, 'b'}, {0}};
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
	/* the text fields of the batch's results, one row per result */
	char(*f)[4][256] = calloc((size_t)batch, sizeof *f);
	int n = 0, rc = 0;
	long done = 0;
	int64_t id, fence, at;
	char line[1200];
	for (;;) {
		int got = 0, http = 0;
		char *ln = fgets(line, sizeof line, stdin);
		char sn[32] = "succeeded", (*x)[256] = f[n];
		strcpy(x[0], "-");
		strcpy(x[1], "-");
		strcpy(x[2], "-");
		if (ln)
			got = sscanf(
			    ln, "%" SCNd64 " %" SCNd64 " %" SCNd64 " %31s %255s %d %255s %255s",
			    &id, &fence, &at, sn, x[0], &http, x[1], x[2]);
		if (ln && got < 3)
			continue;
		pal_tstate state = PAL_TS_SUCCEEDED;
		if (got >= 3 && pal_tstate_parse(sn, &state)) {
			fprintf(stderr, "commit_probe: unknown state %s\n", sn);
			rc = 1;
			break;
		}
		for (int k = 0; k < 3; k++)
			if (!strcmp(x[k], "-"))
				x[k][0] = '\0';
		if (got >= 3)
			r[n++] = (pal_result){.id = id,
					      .fence = fence,
					      .state = state,
					      .error_class = x[0],
					      .http_status = http,
					      .next_delay_ms =
						  state == PAL_TS_SUCCEEDED ? PAL_NEXT_NONE : 0,
					      .idempotency_key = x[1],
					      .at = at,
					      .resp_keep = x[2][0] != '\0',
					      .resp_headers = "{}",
					      .resp_body = x[2],
					      .resp_body_len = strlen(x[2])};
		if (got < 3)
			got = 0;
		else
			got = 3;
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
	free(f);
	free(r);
	pal_store_close(st);
	return rc;
}
