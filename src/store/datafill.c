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
	char b[16];
	snprintf(b, sizeof b, "%d", lim->batch);
	const char *p[] = {b};
	int64_t until = lim->max_ms > 0 ? pal_mono_ms() + lim->max_ms : 0;
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
			break;
		}
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
	return PAL_OK;
}
