/*
 * ops.c - what the operator actions (include/palisade/ops.h) share: the
 * transaction they run in, small query helpers, the job check, the
 * notification and the per-request lock.  The actions live one concern per
 * file beside it: gates.c (pause, resume, suspend), cancel.c, manual.c,
 * backfill.c, tickets.c and listings.c.  docs/schema.md (state machine),
 * docs/operations.md (pause, resume, cancel act through gates and
 * conditional updates), G7.
 *
 * Flow: each action runs in one transaction (pal__ops_in_tx) at READ
 * COMMITTED.  State changes are conditional UPDATEs, one per source state,
 * ordered along the state machine's forward edges (paused, retry_wait,
 * pending, running), so a trigger that a concurrent executor moves forward
 * between two statements is caught by the later one, and a trigger it
 * finishes is matched by none: the executor's commit is never overwritten,
 * and the state guard rejects any edge outside the state machine
 * (include/palisade/tstate.def) anyway.  The audit_log row
 * is written in the same transaction.  A deadlock or serialisation failure
 * (40P01, 40001) retries the whole transaction up to three times.
 *
 * Every query text is a fixed string; user input travels as parameters.
 * Every PGresult is cleared on every path.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/ops.h"
#include "ops_int.h"

void pal__ops_i64s(char *buf, size_t len, int64_t v)
{
	snprintf(buf, len, "%" PRId64, v);
}

int64_t pal__ops_val_i64(const PGresult *r, int row, int col)
{
	return strtoll(PQgetvalue(r, row, col), NULL, 10);
}

/* Run a statement that returns no rows we need; *n receives its row count
 * when N is not NULL. */
int pal__ops_exec(pal_store *st, const char *sql, int np, const char *const *p, int64_t *n,
		  char *err, size_t errlen)
{
	PGresult *r = pal__store_query(st, sql, np, p, err, errlen);
	if (!r)
		return PAL_EDB;
	if (n)
		*n = strtoll(PQcmdTuples(r), NULL, 10);
	PQclear(r);
	return PAL_OK;
}

/* One int64 from a single-row, single-column query. */
int pal__ops_query_i64(pal_store *st, const char *sql, int np, const char *const *p, int64_t *out,
		       char *err, size_t errlen)
{
	return pal__store_query_i64(st, sql, np, p, 0, out, err, errlen);
}

/*
 * Run BODY inside BEGIN ... COMMIT.  BODY returns 0 to commit, or an error
 * (the transaction is rolled back).  A deadlock or serialisation failure is
 * retried up to three times; BODY must therefore reset its results first.
 */
int pal__ops_in_tx(pal_store *st, pal__ops_tx_body body, void *ctx, char *err, size_t errlen)
{
	for (int attempt = 1;; attempt++) {
		if (pal__store_exec(st, "BEGIN", err, errlen))
			return PAL_EDB;
		int rc = body(st, ctx, err, errlen);
		if (!rc && pal__store_exec(st, "COMMIT", err, errlen))
			rc = PAL_EDB;
		if (!rc)
			return PAL_OK;
		bool retry = rc == PAL_EDB &&
			     (!strcmp(st->sqlstate, "40P01") || !strcmp(st->sqlstate, "40001"));
		pal__store_rollback(st);
		if (!retry || attempt >= 3)
			return rc;
	}
}

int pal__ops_job_exists(pal_store *st, const char *job_id, char *err, size_t errlen)
{
	const char *p[] = {job_id};
	int64_t n;
	if (pal__ops_query_i64(st, "SELECT count(*) FROM jobs WHERE job_id = $1", 1, p, &n, err,
			       errlen))
		return PAL_EDB;
	if (!n) {
		snprintf(err, errlen, "no job \"%s\"; hint: `palisade jobs` lists the jobs",
			 job_id);
		return PAL_ENOENT;
	}
	return PAL_OK;
}

int pal__ops_notify(pal_store *st, const char *channel_sql, int np, const char *const *p, char *err,
		    size_t errlen)
{
	return pal__ops_exec(st, channel_sql, np, p, NULL, err, errlen);
}

/* Serialise requests of one (job, request id): two concurrent identical
 * manual runs without --at would otherwise pick two different instants. */
int pal__ops_lock_request(pal_store *st, const char *job_id, const char *request_id, char *err,
			  size_t errlen)
{
	const char *p[] = {job_id, request_id};
	return pal__ops_exec(
	    st, "SELECT pg_advisory_xact_lock(hashtextextended($1 || '/' || $2, 7340))", 2, p, NULL,
	    err, errlen);
}

int pal__ops_horizon(pal_store *st, int64_t *h, char *err, size_t errlen)
{
	return pal__store_query_i64(
	    st, "SELECT floor(extract(epoch FROM palisade_retention_horizon()))::bigint", 0, NULL,
	    INT64_MIN, h, err, errlen);
}

const char *pal__ops_scope_kind(pal_scope_kind k)
{
	static const char *const names[] = {"global", "job", "group", "tenant"};
	return (unsigned)k < sizeof names / sizeof *names ? names[k] : "global";
}

const char *pal_scope_kind_name(pal_scope_kind k)
{
	return pal__ops_scope_kind(k);
}
