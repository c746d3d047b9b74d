/*
 * datafill.c - runs the data backfills of expand steps (datafill.h): calls
 * palisade_backfill() one batch at a time, autocommit, so that each batch
 * commits before the next starts and a stop loses at most the batch in
 * flight.  `palisade migrate` runs them to the end; a node's retention
 * worker runs up to a bounded number of batches, for a bounded time, per
 * round, and stops between batches when the node stops, or cancels the
 * jobs_ref build it is in.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/clock.h"
#include "palisade/datafill.h"
#include "palisade/log.h"
#include "store_int.h"

/* The report's entry for STEP, added when new; NULL when the report is full. */
static pal_datafill_step *entry(pal_datafill_report *rep, const char *step)
{
	for (int i = 0; i < rep->n; i++)
		if (!strcmp(rep->s[i].step, step))
			return &rep->s[i];
	if (rep->n == PAL_DATAFILL_STEPS)
		return NULL;
	snprintf(rep->s[rep->n].step, sizeof rep->s[rep->n].step, "%s", step);
	return &rep->s[rep->n++];
}

/* One statement whose result is not needed; NULL-safe PQclear. */
static int exec1(pal_store *st, const char *sql, char *err, size_t errlen)
{
	PGresult *r = pal__store_query(st, sql, 0, NULL, err, errlen);
	PQclear(r);
	return r ? PAL_OK : PAL_EDB;
}

/*
 * SQL, one statement whose result is not needed, on ST; while it runs,
 * LIM->stop (when set) is asked every PAL_DATAFILL_WAIT_STEP_MS, and once it
 * says stop the statement is cancelled (PQcancel): *STOPPED then, PAL_OK.  A
 * statement that waits (a concurrent index build waits for every older
 * transaction) thus holds up a stopping node for one step at most.  Blocks
 * until the statement has ended.
 */
static int exec_stoppable(pal_store *st, const char *sql, const pal_datafill_limits *lim,
			  bool *stopped, char *err, size_t errlen)
{
	*stopped = false;
	if (!lim->stop)
		return exec1(st, sql, err, errlen);
	if (!PQsendQuery(st->conn, sql)) {
		pal__store_errmsg(st, NULL, "query failed", err, errlen);
		return PAL_EDB;
	}
	st->busy = true;
	bool cancelled = false;
	while (PQisBusy(st->conn)) {
		if (!cancelled && lim->stop(lim->stop_arg)) {
			cancelled = true; /* asked once: a failed request is logged, not retried */
			char e[256] = "";
			PGcancel *c = PQgetCancel(st->conn);
			if (!c || !PQcancel(c, e, sizeof e))
				pal_log(PAL_LOG_WARN, "store.datafill_cancel_failed", "{s:s}", "error",
					c ? e : "no cancel handle");
			PQfreeCancel(c);
		}
		struct pollfd pfd = {.fd = PQsocket(st->conn), .events = POLLIN};
		if ((poll(&pfd, 1, PAL_DATAFILL_WAIT_STEP_MS) < 0 && errno != EINTR) ||
		    !PQconsumeInput(st->conn))
			break; /* the result below says what went wrong */
	}
	PGresult *r = pal__store_result(st, err, errlen);
	PQclear(r);
	if (!r && cancelled && !strcmp(st->sqlstate, "57014")) { /* query_canceled */
		*stopped = true;
		return PAL_OK;
	}
	return r ? PAL_OK : PAL_EDB;
}

/*
 * The unique index on jobs.ref (jobs_ref), once the jobs step has finished:
 * built CONCURRENTLY (SHARE UPDATE EXCLUSIVE: apply, shard loads and every
 * reader of jobs go on meanwhile), by one runner at a time (session
 * advisory lock 7076/42; another gets *busy).  An invalid one, left by a
 * build that was interrupted, is dropped and built again.  *built when it
 * exists and is valid afterwards.  041 leaves it out of its transaction,
 * where the read of jobs would hold jobs under ACCESS EXCLUSIVE.  The lock
 * is a session's (CREATE INDEX CONCURRENTLY runs in no transaction): ST
 * must not go through a transaction pooler, and a release that finds the
 * lock not held is an error.  With LIM->stop set, the drop and the build
 * are cancelled when it says stop (exec_stoppable): *STOPPED, and an invalid
 * index is left for the next run to drop and build again.
 */
static int jobs_ref_index(pal_store *st, const pal_datafill_limits *lim, bool *built, bool *busy,
			  bool *stopped, char *err, size_t errlen)
{
	*built = *busy = *stopped = false;
	PGresult *r = pal__store_query(
	    st,
	    "SELECT (SELECT f.finished_at IS NOT NULL FROM palisade_backfills f"
	    "         WHERE f.step = 'jobs.ref'),"
	    " (SELECT i.indisvalid FROM pg_index i WHERE i.indexrelid = to_regclass('jobs_ref'))",
	    0, NULL, err, errlen);
	if (!r)
		return PAL_EDB;
	bool jobs_done = PQgetvalue(r, 0, 0)[0] == 't';
	bool exists = !PQgetisnull(r, 0, 1), valid = PQgetvalue(r, 0, 1)[0] == 't';
	PQclear(r);
	if (valid || !jobs_done) {
		*built = valid;
		return PAL_OK;
	}
	int rc = pal__store_needs_session(st, "the jobs_ref build's advisory lock", err, errlen);
	if (rc)
		return rc;
	if (!(r = pal__store_query(st, "SELECT pg_try_advisory_lock(7076, 42)", 0, NULL, err,
				   errlen)))
		return PAL_EDB;
	bool mine = PQgetvalue(r, 0, 0)[0] == 't';
	PQclear(r);
	if (!mine) {
		*busy = true;
		return PAL_OK;
	}
	rc = exists ? exec_stoppable(st, "DROP INDEX CONCURRENTLY IF EXISTS jobs_ref", lim, stopped,
				     err, errlen)
		    : PAL_OK;
	if (!rc && !*stopped)
		rc = exec_stoppable(
		    st, "CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS jobs_ref ON jobs (ref)", lim,
		    stopped, err, errlen);
	char e2[256];
	r = pal__store_query(st, "SELECT pg_advisory_unlock(7076, 42)", 0, NULL, e2, sizeof e2);
	bool released = r && PQgetvalue(r, 0, 0)[0] == 't';
	PQclear(r);
	if (rc)
		return rc;
	if (!r) {
		snprintf(err, errlen, "%s", e2);
		return PAL_EDB;
	}
	if (!released) {
		snprintf(err, errlen,
			 "the jobs_ref build's advisory lock (7076, 42) was not held "
			 "by this session when released: the connection goes through "
			 "a transaction pooler");
		return PAL_EINVAL;
	}
	if (*stopped) {
		pal_log(PAL_LOG_INFO, "store.datafill_index_stopped", "{s:s}", "index", "jobs_ref");
		return PAL_OK;
	}
	*built = true;
	pal_log(PAL_LOG_INFO, "store.datafill_index_built", "{s:s}", "index", "jobs_ref");
	return PAL_OK;
}

/* When a wait that began at *FROM began, *FROM set to now if none has. */
static int64_t waited_from(int64_t *from)
{
	if (!*from)
		*from = pal_mono_ms();
	return *from;
}

int pal_store_datafill(pal_store *st, const pal_datafill_limits *lim, pal_datafill_report *rep,
		       char *err, size_t errlen)
{
	memset(rep, 0, sizeof *rep);
	if (lim->batch < 1 || lim->batch > PAL_DATAFILL_BATCH_MAX) {
		snprintf(err, errlen, "backfill batch %d: want 1 to %d rows", lim->batch,
			 PAL_DATAFILL_BATCH_MAX);
		return PAL_EINVAL;
	}
	PGresult *r = pal__store_query(st, "SELECT to_regclass('palisade_backfills') IS NULL", 0,
				       NULL, err, errlen);
	if (!r)
		return PAL_EDB;
	rep->done = PQgetvalue(r, 0, 0)[0] == 't';
	PQclear(r);
	if (rep->done)
		return PAL_OK;
	char b[16];
	snprintf(b, sizeof b, "%d", lim->batch);
	const char *p[] = {b};
	int64_t until = lim->max_ms > 0 ? pal_mono_ms() + lim->max_ms : 0;
	int64_t wait0 = 0; /* when the current wait for older transactions began */
	while (!rep->done && (!lim->max_batches || rep->batches < lim->max_batches)) {
		if ((until && pal_mono_ms() >= until) || (lim->stop && lim->stop(lim->stop_arg))) {
			rep->stopped = true;
			break;
		}
		r = pal__store_query(st,
				     "SELECT step, filled, cursor, finished, done, busy, checked"
				     " FROM palisade_backfill($1::int)",
				     1, p, err, errlen);
		if (!r) {
			/* a row lock not taken within the function's lock_timeout,
			 * or a deadlock it lost: the batch rolled back; later */
			if (!strcmp(st->sqlstate, "55P03") || !strcmp(st->sqlstate, "40P01")) {
				rep->busy = true;
				return PAL_OK;
			}
			return PAL_EDB;
		}
		rep->done = PQgetvalue(r, 0, 4)[0] == 't';
		rep->busy = PQgetvalue(r, 0, 5)[0] == 't';
		/* busy with a step named: its check waits for older transactions */
		rep->waiting = rep->busy && !PQgetisnull(r, 0, 0);
		bool checked = PQgetvalue(r, 0, 6)[0] == 't';
		if (rep->busy || PQgetisnull(r, 0, 0)) {
			PQclear(r);
			if (rep->waiting && pal_mono_ms() - waited_from(&wait0) < lim->wait_ms) {
				pal_sleep_ms(PAL_DATAFILL_WAIT_STEP_MS);
				continue;
			}
			break;
		}
		wait0 = 0;
		rep->batches += !checked;
		pal_datafill_step *e = entry(rep, PQgetvalue(r, 0, 0));
		if (e) {
			e->filled += strtoll(PQgetvalue(r, 0, 1), NULL, 10);
			if (checked)
				e->checks++;
			else
				e->batches++;
			snprintf(e->cursor, sizeof e->cursor, "%s", PQgetvalue(r, 0, 2));
			if (PQgetvalue(r, 0, 3)[0] == 't') {
				e->finished = true;
				pal_log(PAL_LOG_INFO, "store.datafill_finished", "{s:s, s:I, s:i}",
					"step", e->step, "filled", (json_int_t)e->filled, "batches",
					e->batches);
			}
		}
		PQclear(r);
	}
	/* once the jobs step is finished, whatever else this run did, unless
	 * it was told to stop: a stop waits for one batch at most */
	if (lim->stop && lim->stop(lim->stop_arg)) {
		rep->stopped = true;
		rep->done = false;
		return PAL_OK;
	}
	bool built, busy, stopped;
	int rc = jobs_ref_index(st, lim, &built, &busy, &stopped, err, errlen);
	if (rc)
		return rc;
	rep->busy |= busy;
	rep->stopped |= stopped;
	rep->done &= built;
	return PAL_OK;
}
