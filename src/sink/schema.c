/*
 * schema.c - the sink's own schema, applied by the sink at start-up.
 *
 * The files are compiled in by the generator of palisade's own schema
 * (ops/embed-sql.sh, from sql/sink/NNN_name.sql and sql/sink/functions/,
 * as pal_sink_migrations and pal_sink_objects; `palisade-sink
 * --print-schema` prints them).  The numbered steps change tables, indexes
 * and data; a function, view or trigger lives whole in a file of
 * sql/sink/functions/ (sink_apply_group(), the group commit) and is
 * applied after them, as palisade's are (docs/schema.md, "Functions,
 * views and triggers").  These are not
 * palisade migrations: they are recorded in sink_schema_migrations, under
 * an advisory lock of their own, so the sink can share a database with
 * palisade or live in one of its own.
 *
 * Concurrency: every starting sink takes the same session-level advisory
 * lock (the two-key form, which never collides with palisade's one-key
 * migration lock), so several sinks started at once apply each file once.
 * A database that records a version this binary lacks is refused.
 *
 * Ownership: works on a borrowed PGconn; every PGresult is cleared here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sink_int.h"

/* pg_advisory_lock(classid, objid): "sink" as four bytes, then 1 = schema */
#define SCHEMA_LOCK "1936289387, 1"

static const char SQL_CREATE_TABLE[] =
    "CREATE TABLE IF NOT EXISTS sink_schema_migrations ("
    " version integer PRIMARY KEY, name text NOT NULL,"
    " applied_at timestamptz NOT NULL DEFAULT clock_timestamp())";

/* Run SQL (no rows expected, no parameters; a text of comments only, a
 * step kept for its number, is nothing to run); PAL_EDB with ERR filled. */
static int exec(PGconn *pg, const char *sql, const char *what, char *err, size_t errlen)
{
	PGresult *r = PQexec(pg, sql);
	ExecStatusType st = PQresultStatus(r);
	if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK || st == PGRES_EMPTY_QUERY) {
		PQclear(r);
		return PAL_OK;
	}
	char msg[256];
	snprintf(msg, sizeof msg, "%s", r ? PQresultErrorMessage(r) : PQerrorMessage(pg));
	msg[strcspn(msg, "\n")] = '\0';
	snprintf(err, errlen, "%s: %s", what, msg);
	PQclear(r);
	return PAL_EDB;
}

/* One value of a one-row query with parameter P1 (may be NULL for none),
 * copied into OUT; "" when there is no row. */
static int value(PGconn *pg, const char *sql, const char *p1, char *out, size_t outlen, char *err,
		 size_t errlen)
{
	const char *params[] = {p1};
	PGresult *r = PQexecParams(pg, sql, p1 ? 1 : 0, NULL, p1 ? params : NULL, NULL, NULL, 0);
	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		char msg[256];
		snprintf(msg, sizeof msg, "%s", r ? PQresultErrorMessage(r) : PQerrorMessage(pg));
		msg[strcspn(msg, "\n")] = '\0';
		snprintf(err, errlen, "reading the sink schema version: %s", msg);
		PQclear(r);
		return PAL_EDB;
	}
	snprintf(out, outlen, "%s", PQntuples(r) > 0 ? PQgetvalue(r, 0, 0) : "");
	PQclear(r);
	return PAL_OK;
}

static int apply_one(PGconn *pg, const pal_migration *m, char *err, size_t errlen)
{
	char what[96];
	snprintf(what, sizeof what, "sink schema %s", m->name);
	int rc = exec(pg, "BEGIN", what, err, errlen);
	if (rc == PAL_OK)
		rc = exec(pg, m->sql, what, err, errlen); /* multi-statement: simple protocol */
	if (rc == PAL_OK) {
		char v[16];
		snprintf(v, sizeof v, "%d", m->version);
		const char *params[] = {v, m->name};
		PGresult *r = PQexecParams(pg,
					   "INSERT INTO sink_schema_migrations (version, name) "
					   "VALUES ($1, $2)",
					   2, NULL, params, NULL, NULL, 0);
		if (PQresultStatus(r) != PGRES_COMMAND_OK) {
			snprintf(err, errlen, "%s: recording the version: %s", what,
				 PQerrorMessage(pg));
			err[strcspn(err, "\n")] = '\0';
			rc = PAL_EDB;
		}
		PQclear(r);
	}
	if (rc == PAL_OK)
		return exec(pg, "COMMIT", what, err, errlen);
	PQclear(PQexec(pg, "ROLLBACK"));
	return rc;
}

/* The functions, views and triggers of sql/sink/functions/, all in one
 * transaction after the numbered steps, with their record in
 * sink_schema_functions (KNOWN: this binary's sink schema, which the
 * database is at now: a newer one is refused before), when that row names
 * an older version or other files: a restart replaces nothing it need not
 * (every session of every sink would plan its statements again). */
static int apply_objects(PGconn *pg, int known, char *err, size_t errlen)
{
	if (pal_sink_n_objects == 0)
		return PAL_OK;
	char had[160] = "";
	int rc = value(pg, "SELECT version || ' ' || digest FROM sink_schema_functions", NULL, had,
		       sizeof had, err, errlen);
	char want[160];
	snprintf(want, sizeof want, "%d %s", known, pal_sink_objects_digest);
	if (rc != PAL_OK || !strcmp(had, want))
		return rc;
	rc = exec(pg, "BEGIN", "sink schema functions", err, errlen);
	if (rc == PAL_OK)
		rc = exec(pg, "SET LOCAL check_function_bodies = off", "sink schema functions", err,
			  errlen);
	for (int i = 0; rc == PAL_OK && i < pal_sink_n_objects; i++) {
		char what[128];
		snprintf(what, sizeof what, "sink schema sql/sink/functions/%s.sql",
			 pal_sink_objects[i].name);
		rc = exec(pg, pal_sink_objects[i].sql, what, err, errlen);
	}
	if (rc == PAL_OK) {
		char v[16];
		snprintf(v, sizeof v, "%d", known);
		const char *params[] = {v, pal_sink_objects_digest};
		PGresult *r = PQexecParams(
		    pg,
		    "INSERT INTO sink_schema_functions (id, version, digest) VALUES (1, $1, $2)"
		    " ON CONFLICT (id) DO UPDATE SET version = excluded.version,"
		    " digest = excluded.digest, applied_at = clock_timestamp()",
		    2, NULL, params, NULL, NULL, 0);
		if (PQresultStatus(r) != PGRES_COMMAND_OK) {
			snprintf(err, errlen, "sink schema functions: recording them: %s",
				 PQerrorMessage(pg));
			err[strcspn(err, "\n")] = '\0';
			rc = PAL_EDB;
		}
		PQclear(r);
	}
	if (rc == PAL_OK)
		return exec(pg, "COMMIT", "sink schema functions", err, errlen);
	PQclear(PQexec(pg, "ROLLBACK"));
	return rc;
}

int pal__sink_schema_apply(PGconn *pg, int *applied, char *err, size_t errlen)
{
	const int n = pal_sink_n_migrations;
	const pal_migration *migrations = pal_sink_migrations;
	int known = 0;
	for (int i = 0; i < n; i++)
		if (migrations[i].version > known)
			known = migrations[i].version;

	*applied = 0;
	int rc =
	    exec(pg, "SELECT pg_advisory_lock(" SCHEMA_LOCK ")", "sink schema lock", err, errlen);
	if (rc != PAL_OK)
		return rc;
	/* quiet the NOTICE "relation already exists, skipping" */
	rc = exec(pg, "SET client_min_messages = warning", "sink schema", err, errlen);
	if (rc == PAL_OK)
		rc = exec(pg, SQL_CREATE_TABLE, "sink schema", err, errlen);
	char have[32] = "";
	if (rc == PAL_OK)
		rc = value(pg, "SELECT coalesce(max(version), 0) FROM sink_schema_migrations", NULL,
			   have, sizeof have, err, errlen);
	if (rc == PAL_OK && atoi(have) > known) {
		snprintf(err, errlen,
			 "the sink schema is at version %s but this palisade-sink knows only up "
			 "to %d; upgrade palisade-sink before running it against this database",
			 have, known);
		rc = PAL_ESCHEMA;
	}
	for (int i = 0; rc == PAL_OK && i < n; i++) {
		char v[16], found[8];
		snprintf(v, sizeof v, "%d", migrations[i].version);
		rc = value(pg, "SELECT 1 FROM sink_schema_migrations WHERE version = $1", v, found,
			   sizeof found, err, errlen);
		if (rc == PAL_OK && found[0] == '\0') {
			rc = apply_one(pg, &migrations[i], err, errlen);
			if (rc == PAL_OK)
				(*applied)++;
		}
	}
	if (rc == PAL_OK)
		rc = apply_objects(pg, known, err, errlen);
	char uerr[256];
	int urc = exec(pg, "SELECT pg_advisory_unlock(" SCHEMA_LOCK ")", "sink schema unlock", uerr,
		       sizeof uerr);
	if (urc != PAL_OK && rc == PAL_OK) {
		snprintf(err, errlen, "%s", uerr);
		rc = urc;
	}
	return rc;
}

void pal__sink_schema_print(void)
{
	for (int i = 0; i < pal_sink_n_migrations; i++)
		fputs(pal_sink_migrations[i].sql, stdout);
	for (int i = 0; i < pal_sink_n_objects; i++)
		fputs(pal_sink_objects[i].sql, stdout);
}
