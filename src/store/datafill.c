/*
 * datafill.c - runs the data backfills of expand steps (datafill.h): calls
 * palisade_backfill() one batch at a time, autocommit, so that each batch
 * commits before the next starts and a stop loses at most the batch in
 * flight.  `palisade migrate` runs them to the end; a node's retention
 * worker runs up to a bounded number of batches, for a bounded time, per
 * round, and stops between batches when the node stops.
 */
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

/* The last query failed on a lock not taken within lock_timeout, or lost
 * a deadlock: it gave way, a later run tries again. */
static bool gives_way(const pal_store *st)
{
	return !strcmp(st->sqlstate, "55P03") || !strcmp(st->sqlstate, "40P01");
}

/* One query with one boolean answer in *OUT. */
static int ask(pal_store *st, const char *sql, int n, const char *const *p, bool *out, char *err,
	       size_t errlen)
{
	PGresult *r = pal__store_query(st, sql, n, p, err, errlen);
	if (!r)
		return PAL_EDB;
	*out = PQgetvalue(r, 0, 0)[0] == 't';
	PQclear(r);
	return PAL_OK;
}

/*
 * The keys the runner builds CONCURRENTLY, never a migration (whose
 * transaction would hold the table exclusively for the build's read of
 * every row), each once the step it needs has finished:
 *   jobs_ref (041) on jobs (ref), after the jobs step: unique refs;
 *   the keys on triggers.job_ref (042), after the triggers step, when
 *   every row has its ref: the plan key and the request key (unique, with
 *   the text keys' predicates) and the pending triggers of a job.
 * triggers is partitioned: the parent's index is made ON ONLY (invalid, no
 * read), each partition's built CONCURRENTLY and attached; the parent's
 * becomes valid when every partition has one attached.  A partition made
 * afterwards (retention) gets its own with the parent's.
 */
static const struct ref_key {
	const char *name, *table, *step, *suffix, *def;
	bool partitioned;
} keys[] = {
    {"jobs_ref", "jobs", "jobs.ref", NULL, "UNIQUE INDEX %s ON %s%s (ref)", false},
    {"triggers_plan_ref", "triggers", "triggers.job_ref", "plan_ref",
     "UNIQUE INDEX %s ON %s%s (job_ref, scheduled_at, partition) WHERE request_id IS NULL", true},
    {"triggers_request_ref", "triggers", "triggers.job_ref", "request_ref",
     "UNIQUE INDEX %s ON %s%s (job_ref, request_id, scheduled_at, partition)"
     " WHERE request_id IS NOT NULL",
     true},
    {"triggers_pending_ref", "triggers", "triggers.job_ref", "pending_ref",
     "INDEX %s ON %s%s (job_ref, partition) WHERE state = 'pending'", true},
};

/* CREATE [UNIQUE] INDEX [CONCURRENTLY] NAME ON [ONLY] TABLE ... of K. */
static int build(pal_store *st, const struct ref_key *k, const char *name, const char *table,
		 bool only, char *err, size_t errlen)
{
	char def[512], sql[640];
	snprintf(def, sizeof def, k->def, name, only ? "ONLY " : "", table);
	/* "UNIQUE INDEX" or "INDEX": CONCURRENTLY goes after INDEX */
	const char *idx = strstr(def, "INDEX ") + 6;
	snprintf(sql, sizeof sql, "CREATE %.*s%s%s", (int)(idx - def), def,
		 only ? "IF NOT EXISTS " : "CONCURRENTLY IF NOT EXISTS ", idx);
	return exec1(st, sql, err, errlen);
}

/* An index left invalid by an interrupted concurrent build is dropped. */
static int drop_invalid(pal_store *st, const char *name, char *err, size_t errlen)
{
	bool invalid;
	const char *p[] = {name};
	int rc = ask(st,
		     "SELECT coalesce((SELECT NOT i.indisvalid FROM pg_index i"
		     " WHERE i.indexrelid = to_regclass($1)), false)",
		     1, p, &invalid, err, errlen);
	if (rc || !invalid)
		return rc;
	char sql[160];
	snprintf(sql, sizeof sql, "DROP INDEX CONCURRENTLY IF EXISTS %s", name);
	return exec1(st, sql, err, errlen);
}

/*
 * K on every partition that has none attached yet, then attached; the
 * parent's made ON ONLY first (SHARE on the parent alone, no read: it
 * waits at most 500 ms for the lock, else *busy and a later run goes on).
 */
static int build_partitioned(pal_store *st, const struct ref_key *k, bool *busy, char *err,
			     size_t errlen)
{
	int rc = exec1(st, "SET lock_timeout = '500ms'", err, errlen);
	if (!rc)
		rc = build(st, k, k->name, k->table, true, err, errlen);
	bool gave_way = rc && gives_way(st);
	char e2[256];
	int rrc = exec1(st, "RESET lock_timeout", e2, sizeof e2); /* clears st->sqlstate */
	if (gave_way) {
		*busy = true;
		return PAL_OK;
	}
	if (rc)
		return rc;
	if (rrc) {
		snprintf(err, errlen, "%s", e2);
		return rrc;
	}
	const char *p[] = {k->table, k->name};
	PGresult *r = pal__store_query(
	    st,
	    "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
	    " WHERE i.inhparent = $1::regclass AND NOT EXISTS ("
	    "  SELECT 1 FROM pg_inherits x JOIN pg_index ix ON ix.indexrelid = x.inhrelid"
	    "   WHERE x.inhparent = $2::regclass AND ix.indrelid = c.oid)"
	    " ORDER BY c.relname",
	    2, p, err, errlen);
	if (!r)
		return PAL_EDB;
	for (int i = 0; !rc && i < PQntuples(r); i++) {
		const char *part = PQgetvalue(r, i, 0);
		char name[64], sql[256];
		snprintf(name, sizeof name, "%.*s_%s", (int)(62 - strlen(k->suffix)), part,
			 k->suffix);
		rc = drop_invalid(st, name, err, errlen);
		if (!rc)
			rc = build(st, k, name, part, false, err, errlen);
		snprintf(sql, sizeof sql, "ALTER INDEX %s ATTACH PARTITION %s", k->name, name);
		if (!rc)
			rc = exec1(st, sql, err, errlen);
	}
	PQclear(r);
	return rc;
}

/* *VALID: index NAME exists and is valid (on a partitioned table: every
 * partition has its own attached). */
static int key_valid(pal_store *st, const char *name, bool *valid, char *err, size_t errlen)
{
	const char *p[] = {name};
	return ask(st,
		   "SELECT coalesce((SELECT i.indisvalid FROM pg_index i"
		   " WHERE i.indexrelid = to_regclass($1)), false)",
		   1, p, valid, err, errlen);
}

/*
 * Each key of keys[] whose step has finished and that is not valid yet,
 * by one runner at a time (session advisory lock 7076/42; another gets
 * *busy).  *built when every key is valid afterwards.  Logs
 * store.datafill_index_built per key it made valid.
 */
static int ref_keys(pal_store *st, bool *built, bool *busy, char *err, size_t errlen)
{
	*built = true;
	*busy = false;
	bool mine = false;
	int rc = PAL_OK;
	for (size_t i = 0; !rc && !*busy && i < sizeof keys / sizeof keys[0]; i++) {
		const struct ref_key *k = &keys[i];
		const char *p[] = {k->step};
		bool ready, valid;
		if ((rc = key_valid(st, k->name, &valid, err, errlen)) || valid)
			continue;
		if ((rc = ask(st,
			      "SELECT coalesce((SELECT f.finished_at IS NOT NULL FROM "
			      "palisade_backfills f"
			      " WHERE f.step = $1), false)",
			      1, p, &ready, err, errlen)))
			break;
		if (ready && !mine &&
		    !(rc = ask(st, "SELECT pg_try_advisory_lock(7076, 42)", 0, NULL, &mine, err,
			       errlen)))
			*busy = !mine;
		if (rc || !ready || *busy) {
			*built = false;
			continue;
		}
		if (k->partitioned)
			rc = build_partitioned(st, k, busy, err, errlen);
		else if (!(rc = drop_invalid(st, k->name, err, errlen)))
			rc = build(st, k, k->name, k->table, false, err, errlen);
		if (!rc && !(rc = key_valid(st, k->name, &valid, err, errlen)) && valid)
			pal_log(PAL_LOG_INFO, "store.datafill_index_built", "{s:s}", "index",
				k->name);
		*built &= valid;
	}
	if (mine) {
		char e2[256];
		int urc = exec1(st, "SELECT pg_advisory_unlock(7076, 42)", e2, sizeof e2);
		if (!rc && urc) {
			snprintf(err, errlen, "%s", e2);
			rc = urc;
		}
	}
	if (rc || *busy)
		*built = false;
	return rc;
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
			if (gives_way(st)) {
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
	/* each key once its step is finished, whatever else this run did */
	bool built, busy;
	int rc = ref_keys(st, &built, &busy, err, errlen);
	if (rc)
		return rc;
	rep->busy |= busy;
	rep->done &= built;
	return PAL_OK;
}
