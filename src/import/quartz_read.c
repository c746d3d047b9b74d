/*
 * quartz_read.c - read the triggers of a Quartz 2.x JDBC job store from
 * PostgreSQL, for pal_import_quartz() (quartz.c).
 *
 * The store is another application's schema (Quartz's tables_postgres.sql:
 * qrtz_triggers, qrtz_cron_triggers, qrtz_simple_triggers, qrtz_job_details,
 * qrtz_paused_trigger_grps), not palisade's, so its one query lives here
 * beside its only reader rather than in the store module.  Read-only, in
 * one REPEATABLE READ transaction so every table is seen at one instant;
 * blocks on the connection; nothing kept after pal_quartz_read() returns
 * but the rows.
 */
#include <glib.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/importer.h"

struct pal_quartz_rows {
	PGresult *res;
	pal_quartz_trigger *rows;
	char *sched;
};

static const char q_scheds[] = "SELECT DISTINCT sched_name FROM qrtz_triggers ORDER BY 1";

/* Paused groups: a row per group, and '_$_ALL_GROUPS_PAUSED_$_' when
 * pauseAll() paused every group (StdJDBCConstants.ALL_GROUPS_PAUSED). */
static const char q_triggers[] =
    "SELECT t.trigger_group, t.trigger_name, t.job_group, t.job_name, j.job_class_name,"
    " j.description, t.trigger_type, t.trigger_state, c.cron_expression, c.time_zone_id,"
    " t.calendar_name, t.start_time, coalesce(t.end_time, 0), coalesce(t.misfire_instr, 0),"
    " coalesce(t.priority, 5), j.is_nonconcurrent,"
    " EXISTS (SELECT 1 FROM qrtz_paused_trigger_grps p WHERE p.sched_name = t.sched_name"
    "   AND p.trigger_group IN (t.trigger_group, '_$_ALL_GROUPS_PAUSED_$_')),"
    " coalesce(length(j.job_data), 0) > 0, coalesce(length(t.job_data), 0) > 0,"
    " coalesce(s.repeat_count, 0), coalesce(s.repeat_interval, 0)"
    " FROM qrtz_triggers t"
    " JOIN qrtz_job_details j ON j.sched_name = t.sched_name AND j.job_name = t.job_name"
    "   AND j.job_group = t.job_group"
    " LEFT JOIN qrtz_cron_triggers c ON c.sched_name = t.sched_name"
    "   AND c.trigger_name = t.trigger_name AND c.trigger_group = t.trigger_group"
    " LEFT JOIN qrtz_simple_triggers s ON s.sched_name = t.sched_name"
    "   AND s.trigger_name = t.trigger_name AND s.trigger_group = t.trigger_group"
    " WHERE t.sched_name = $1 ORDER BY t.trigger_group, t.trigger_name";

static const char *val(PGresult *r, int i, int c)
{
	return PQgetisnull(r, i, c) ? NULL : PQgetvalue(r, i, c);
}

void pal_quartz_free(pal_quartz_rows *o)
{
	if (!o)
		return;
	PQclear(o->res);
	free(o->rows);
	free(o->sched);
	free(o);
}

int pal_quartz_read(const char *conninfo, const char *sched, pal_quartz_rows **owner,
		    const pal_quartz_trigger **rows, size_t *n, const char **sched_out, char *err,
		    size_t errlen)
{
	PGconn *c = PQconnectdb(conninfo);
	PGresult *r = NULL;
	pal_quartz_rows *o = calloc(1, sizeof *o);
	const char *params[1];
	int rc = PAL_EDB;

	*owner = NULL;
	*rows = NULL;
	*n = 0;
	if (!o) {
		PQfinish(c);
		return PAL_ENOMEM;
	}
	if (PQstatus(c) != CONNECTION_OK) {
		snprintf(err, errlen, "cannot connect to the Quartz store: %s", PQerrorMessage(c));
		goto out;
	}
	PQclear(PQexec(c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"));
	r = PQexec(c, q_scheds);
	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		snprintf(err, errlen, "cannot read qrtz_triggers: %s", PQerrorMessage(c));
		goto out;
	}
	if (!sched) {
		if (PQntuples(r) > 1) {
			GString *names = g_string_new(NULL);
			for (int i = 0; i < PQntuples(r); i++)
				g_string_append_printf(names, "%s%s", i ? ", " : "",
						       PQgetvalue(r, i, 0));
			snprintf(err, errlen,
				 "the store holds several schedulers (%s); hint: name one with "
				 "--sched-name",
				 names->str);
			g_string_free(names, TRUE);
			rc = PAL_EINVAL;
			goto out;
		}
		if (PQntuples(r) == 0) {
			rc = 0;
			*owner = o;
			o = NULL;
			goto out;
		}
		sched = PQgetvalue(r, 0, 0);
	}
	o->sched = strdup(sched);
	PQclear(r);
	params[0] = o->sched;
	r = PQexecParams(c, q_triggers, 1, NULL, params, NULL, NULL, 0);
	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		snprintf(err, errlen, "cannot read the Quartz tables: %s", PQerrorMessage(c));
		goto out;
	}
	o->rows = calloc((size_t)PQntuples(r) + 1, sizeof *o->rows);
	for (int i = 0; i < PQntuples(r); i++) {
		pal_quartz_trigger *t = &o->rows[i];
		t->trigger_group = val(r, i, 0);
		t->trigger_name = val(r, i, 1);
		t->job_group = val(r, i, 2);
		t->job_name = val(r, i, 3);
		t->job_class = val(r, i, 4);
		t->job_description = val(r, i, 5);
		t->type = val(r, i, 6);
		t->state = val(r, i, 7);
		t->cron = val(r, i, 8);
		t->time_zone = val(r, i, 9);
		t->calendar = val(r, i, 10);
		t->start_ms = strtoll(PQgetvalue(r, i, 11), NULL, 10);
		t->end_ms = strtoll(PQgetvalue(r, i, 12), NULL, 10);
		t->misfire_instr = atoi(PQgetvalue(r, i, 13));
		t->priority = atoi(PQgetvalue(r, i, 14));
		t->nonconcurrent = PQgetvalue(r, i, 15)[0] == 't';
		t->group_paused = PQgetvalue(r, i, 16)[0] == 't';
		t->job_data = PQgetvalue(r, i, 17)[0] == 't';
		t->trigger_data = PQgetvalue(r, i, 18)[0] == 't';
		t->repeat_count = strtoll(PQgetvalue(r, i, 19), NULL, 10);
		t->repeat_interval_ms = strtoll(PQgetvalue(r, i, 20), NULL, 10);
	}
	*n = (size_t)PQntuples(r);
	o->res = r;
	r = NULL;
	*rows = o->rows;
	*sched_out = o->sched;
	*owner = o;
	o = NULL;
	rc = 0;
out:
	PQclear(r);
	PQfinish(c);
	pal_quartz_free(o);
	return rc;
}
