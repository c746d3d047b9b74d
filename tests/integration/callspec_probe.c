/*
 * callspec_probe.c - reads the latest version of each job named the two
 * ways the code can: the executor's call form (pal_store_call_spec, the
 * fields the server extracts) and the canonical spec decoded whole
 * (pal_job_spec_from_canonical), and says whether they agree, for
 * tests/integration/test_call_spec.sh.
 *
 *   callspec_probe --pg CONNINFO JOB...
 *
 * One line per job: "JOB ok", "JOB differs FIELD" (or "JOB differs the
 * stored spec does not parse: ERROR" when the call form was built from a
 * spec the canonical decoder refuses), or "JOB refused RC ERROR" when the
 * call form was not built.  Exit 0 when it ran, 1 when it could not.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/execstore.h"
#include "palisade/store.h"
#include "../../src/store/store_int.h"

static bool same(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

/* The first field in which C and D differ, or NULL. */
static const char *differs(const pal_call_spec *c, const pal_job_spec *d)
{
	if (!same(c->method, d->method))
		return "method";
	if (!same(c->url, d->url))
		return "url";
	if (!same(c->body, d->body))
		return "body";
	if (!same(c->status_url, d->status_url))
		return "status_url";
	if (!same(c->idempotency_key, d->idempotency_key))
		return "idempotency_key";
	if (!same(c->timezone, d->timezone))
		return "timezone";
	if (c->timeout_ms != d->timeout_ms)
		return "timeout_ms";
	if (c->n_headers != d->n_headers)
		return "headers";
	for (size_t i = 0; i < c->n_headers; i++)
		if (!same(c->headers[i].name, d->headers[i].name) ||
		    !same(c->headers[i].value, d->headers[i].value))
			return "headers";
	if (c->retry.max_attempts != d->max_attempts)
		return "max_attempts";
	if (c->retry.backoff_initial_ms != d->backoff_initial_ms ||
	    c->retry.backoff_max_ms != d->backoff_max_ms)
		return "backoff";
	if (c->retry.backoff_multiplier != d->backoff_multiplier)
		return "multiplier";
	if (c->retry.jitter != d->jitter)
		return "jitter";
	if (c->retry.max_age_ms != d->max_age_ms)
		return "max_age_ms";
	if (c->retry.deadline_ms != d->deadline_ms)
		return "deadline_ms";
	return NULL;
}

int main(int argc, char **argv)
{
	const char *pg = NULL;
	static const struct option opts[] = { { "pg", required_argument, NULL, 'p' }, { 0 } };
	int o;
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (o != 'p') {
			fprintf(stderr, "usage: callspec_probe --pg CONNINFO JOB...\n");
			return 1;
		}
		pg = optarg;
	}
	char err[1024];
	pal_store *st;
	if (!pg || pal_store_open(pg, &st, err, sizeof err)) {
		fprintf(stderr, "callspec_probe: %s\n", pg ? err : "--pg is required");
		return 1;
	}
	for (int a = optind; a < argc; a++) {
		const char *job = argv[a];
		const char *p[] = { job };
		PGresult *r = pal__store_query(st,
					       "SELECT j.latest_version, v.spec::text FROM jobs j"
					       " JOIN job_versions v ON v.job_id = j.job_id"
					       " AND v.version = j.latest_version WHERE j.job_id = $1",
					       1, p, err, sizeof err);
		if (!r || PQntuples(r) != 1) {
			fprintf(stderr, "callspec_probe: %s: %s\n", job, r ? "no such job" : err);
			return 1;
		}
		int version = atoi(PQgetvalue(r, 0, 0));
		json_t *j = json_loads(PQgetvalue(r, 0, 1), 0, NULL);
		PQclear(r);
		pal_job_spec d;
		char serr[512] = "";
		bool spec_ok = j && !pal_job_spec_from_canonical(j, &d, serr, sizeof serr);
		json_decref(j);
		pal_call_spec *c;
		int rc = pal_store_call_spec(st, job, version, &c, err, sizeof err);
		if (rc) {
			printf("%s refused %d %s\n", job, rc, err);
		} else if (!spec_ok) {
			/* the call form read what the spec's own parser refuses */
			printf("%s differs the stored spec does not parse: %s\n", job, serr);
			free(c);
		} else {
			const char *f = differs(c, &d);
			printf("%s %s%s\n", job, f ? "differs " : "ok", f ? f : "");
			free(c);
		}
		if (spec_ok)
			pal_job_spec_clear(&d);
	}
	pal_store_close(st);
	return 0;
}
