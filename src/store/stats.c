/*
 * stats.c - the queries behind the cluster gauges (clusterstats.h).  Each
 * reads through an index: the due backlog through triggers_tenant_ready,
 * work in progress through triggers_live, paused triggers through
 * triggers_paused, open tickets through tickets_open, and a job's latest
 * success walks the plan key backwards (palisade_job_triggers()).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/clusterstats.h"
#include "store_int.h"

static const char SQL_BACKLOG[] =
    "SELECT resource_group, state, count(*),"
    "       coalesce(extract(epoch FROM now() - min(coalesce(next_attempt_at, due_at))), 0)"
    "  FROM triggers"
    " WHERE state IN ('pending', 'retry_wait', 'unknown')"
    "   AND coalesce(next_attempt_at, due_at) <= now()"
    " GROUP BY 1, 2"
    " UNION ALL "
    "SELECT resource_group, state, count(*), 0 FROM triggers"
    " WHERE state IN ('running', 'pausing', 'cancelling') GROUP BY 1, 2"
    " UNION ALL "
    "SELECT resource_group, state, count(*), 0 FROM triggers"
    " WHERE state = 'paused' GROUP BY 1, 2";

int pal_store_backlog(pal_store *st, pal_backlog_row **rows, int *n, char *err, size_t errlen)
{
	*rows = NULL;
	*n = 0;
	PGresult *r = pal__store_query(st, SQL_BACKLOG, 0, NULL, err, errlen);
	if (!r)
		return PAL_EDB;
	int nt = PQntuples(r);
	pal_backlog_row *out = calloc(nt ? (size_t)nt : 1, sizeof *out);
	if (!out) {
		PQclear(r);
		return PAL_ENOMEM;
	}
	for (int i = 0; i < nt; i++) {
		out[i].group = strdup(PQgetvalue(r, i, 0));
		out[i].state = strdup(PQgetvalue(r, i, 1));
		out[i].count = strtoll(PQgetvalue(r, i, 2), NULL, 10);
		out[i].oldest_s = strtod(PQgetvalue(r, i, 3), NULL);
		if (!out[i].group || !out[i].state) {
			PQclear(r);
			pal_backlog_rows_free(out, i + 1);
			return PAL_ENOMEM;
		}
	}
	PQclear(r);
	*rows = out;
	*n = nt;
	return PAL_OK;
}

void pal_backlog_rows_free(pal_backlog_row *rows, int n)
{
	for (int i = 0; rows && i < n; i++) {
		free(rows[i].group);
		free(rows[i].state);
	}
	free(rows);
}

int pal_store_open_tickets(pal_store *st, int64_t *n, char *err, size_t errlen)
{
	PGresult *r = pal__store_query(st, "SELECT count(*) FROM tickets WHERE state = 'open'", 0,
				       NULL, err, errlen);
	if (!r)
		return PAL_EDB;
	*n = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
	PQclear(r);
	return PAL_OK;
}

/* The first $1 jobs by id, each looked up by key in triggers_job_at.  The
 * limit bounds the jobs examined, not the rows returned: limiting the rows
 * instead walked every job of the cluster whenever fewer than $1 had a
 * recent success (with 1,000,000 idle jobs, seconds of a core on every
 * refresh of every node). */
static const char SQL_LAST_SUCCESS[] =
    "SELECT j.job_id, extract(epoch FROM s.finished_at)"
    "  FROM (SELECT job_id FROM jobs ORDER BY job_id LIMIT $1) j"
    "  CROSS JOIN LATERAL ("
    "       SELECT t.finished_at FROM palisade_job_triggers(j.job_id, 1, 'succeeded',"
    "         now() - interval '7 days', now()) t) s"
    " ORDER BY j.job_id";

int pal_store_last_successes(pal_store *st, int limit, pal_last_success **rows, int *n, char *err,
			     size_t errlen)
{
	*rows = NULL;
	*n = 0;
	char lim[16];
	snprintf(lim, sizeof lim, "%d", limit);
	const char *p[] = { lim };
	PGresult *r = pal__store_query(st, SQL_LAST_SUCCESS, 1, p, err, errlen);
	if (!r)
		return PAL_EDB;
	int nt = PQntuples(r);
	pal_last_success *out = calloc(nt ? (size_t)nt : 1, sizeof *out);
	if (!out) {
		PQclear(r);
		return PAL_ENOMEM;
	}
	for (int i = 0; i < nt; i++) {
		out[i].job = strdup(PQgetvalue(r, i, 0));
		out[i].at = strtod(PQgetvalue(r, i, 1), NULL);
		if (!out[i].job) {
			PQclear(r);
			pal_last_successes_free(out, i + 1);
			return PAL_ENOMEM;
		}
	}
	PQclear(r);
	*rows = out;
	*n = nt;
	return PAL_OK;
}

void pal_last_successes_free(pal_last_success *rows, int n)
{
	for (int i = 0; rows && i < n; i++)
		free(rows[i].job);
	free(rows);
}
