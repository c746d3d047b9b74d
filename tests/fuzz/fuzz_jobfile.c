/*
 * fuzz_jobfile.c - libFuzzer target for the YAML loaders.
 *
 * Feeds the input to pal_jobfile_load_buffer() and pal_nodeconf_load_buffer()
 * and checks the invariants the rest of palisade relies on:
 *   - never a crash, leak or undefined behaviour (ASan/UBSan);
 *   - a failed load always says why (at least one diagnostic), a clean load
 *     never produces one;
 *   - every diagnostic has a message and a sane position;
 *   - every job that loads has a canonical form whose round trip through
 *     JSON text and pal_job_spec_from_canonical() keeps the digest.
 *
 * Build (tests/fuzz/run.sh does this for every fuzz_*.c):
 *   clang-14 -fsanitize=fuzzer,address,undefined -Iinclude ... \
 *     tests/fuzz/fuzz_jobfile.c src/config/\*.c src/cron/\*.c src/tz/\*.c src/util/\*.c
 * Seeds: tests/unit/fixtures/ and config/jobs/.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/jobfile.h"
#include "palisade/nodeconf.h"

static void check_diags(const pal_diags *d, int rc)
{
	if ((rc == 0) != (d->n == 0)) {
		fprintf(stderr, "rc %d with %zu diagnostics\n", rc, d->n);
		abort();
	}
	for (size_t i = 0; i < d->n; i++) {
		if (!d->v[i].msg || !d->v[i].msg[0] || d->v[i].line < 0 || d->v[i].col < 0)
			abort();
	}
}

static void check_roundtrip(const pal_job_spec *s)
{
	char a[65], b[65], err[256];
	char *ja = NULL, *jb = NULL;
	json_t *parsed;
	json_error_t je;
	pal_job_spec back;

	if (pal_job_spec_digest(s, &ja, a) != 0)
		return; /* ENOMEM */
	parsed = json_loads(ja, 0, &je);
	if (!parsed) {
		fprintf(stderr, "canonical json does not parse: %s\n%s\n", je.text, ja);
		abort();
	}
	if (pal_job_spec_from_canonical(parsed, &back, err, sizeof err) != 0) {
		fprintf(stderr, "from_canonical: %s\n%s\n", err, ja);
		abort();
	}
	if (pal_job_spec_digest(&back, &jb, b) != 0)
		abort();
	if (strcmp(a, b) != 0) {
		fprintf(stderr, "digest changed in the round trip:\n%s\n%s\n", ja, jb);
		abort();
	}
	pal_job_spec_clear(&back);
	json_decref(parsed);
	free(ja);
	free(jb);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	pal_jobset set = {0};
	pal_diags d = {0};
	pal_nodeconf conf;
	int rc;

	rc = pal_jobfile_load_buffer("fuzz.yaml", data, size, &set, &d);
	check_diags(&d, rc);
	for (size_t i = 0; i < set.n; i++)
		check_roundtrip(&set.jobs[i]);
	pal_jobset_free(&set);
	pal_diags_free(&d);

	rc = pal_nodeconf_load_buffer("fuzz.yaml", data, size, &conf, &d);
	check_diags(&d, rc);
	if (rc == 0)
		pal_nodeconf_free(&conf);
	pal_diags_free(&d);
	return 0;
}
