/*
 * schema.c - the sink's own schema, applied by the sink at start-up.
 *
 * The text of sql/sink/NNN_name.sql is compiled in below (the table is a
 * verbatim copy; tests/integration/test_sink.sh compares it with the files
 * through `palisade-sink --print-schema`, so the two cannot drift).  These
 * are not palisade migrations: they are recorded in sink_schema_migrations,
 * under an advisory lock of their own, so the sink can share a database
 * with palisade or live in one of its own.
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

static const struct sink_migration {
	int version;
	const char *name;
	const char *sql;
} migrations[] = {
    {1, "001_sink",
     "-- sql/sink/001_sink.sql - the schema of palisade-sink, the reference\n"
     "-- side-effect service (docs/sink.md).  NOT one of palisade's migrations:\n"
     "-- palisade-sink applies the files of sql/sink/ itself at start-up, each in\n"
     "-- one transaction with its row in sink_schema_migrations, under its own\n"
     "-- advisory lock.  These rows are durable and outlive every retry.\n"
     "\n"
     "-- The highest fencing token seen per resource.  The resource is the\n"
     "-- idempotency key: a request whose token is lower than the highest token\n"
     "-- seen for its key is stale (409 with Palisade-Stale-Token).\n"
     "CREATE TABLE sink_fences (\n"
     "	resource text PRIMARY KEY,\n"
     "	fence bigint NOT NULL CHECK (fence >= 0),\n"
     "	updated_at timestamptz NOT NULL DEFAULT clock_timestamp()\n"
     ");\n"
     "\n"
     "-- One row per idempotency key: what was applied and the answer to replay.\n"
     "-- A chunked effect (Palisade-Test-Chunks) records its progress here.\n"
     "CREATE TABLE sink_effects (\n"
     "	idempotency_key text PRIMARY KEY,\n"
     "	fence bigint NOT NULL,               -- token of the request that last advanced it\n"
     "	payload_digest text NOT NULL,        -- sha256(method \\n target \\n body), hex\n"
     "	status int NOT NULL,                 -- the stored answer, replayed verbatim\n"
     "	body text,\n"
     "	applied_at timestamptz NOT NULL DEFAULT clock_timestamp(),\n"
     "	updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),\n"
     "	method text,\n"
     "	path text,\n"
     "	trigger_id bigint,\n"
     "	attempt int,\n"
     "	scheduled_at timestamptz,\n"
     "	chunks_done int NOT NULL DEFAULT 1,\n"
     "	chunks_total int NOT NULL DEFAULT 1,\n"
     "	CHECK (chunks_total >= 1 AND chunks_done BETWEEN 1 AND chunks_total)\n"
     ");\n"
     "\n"
     "-- The effect itself: one row per (key, chunk) applied, never for a replay.\n"
     "-- Deliberately without a unique constraint: the tests count these rows to\n"
     "-- prove \"one effect per key\", so a duplicate must be able to show up here.\n"
     "CREATE TABLE sink_ledger (\n"
     "	id bigserial PRIMARY KEY,\n"
     "	idempotency_key text NOT NULL,\n"
     "	chunk int NOT NULL,\n"
     "	fence bigint NOT NULL,\n"
     "	trigger_id bigint,\n"
     "	attempt int,\n"
     "	applied_at timestamptz NOT NULL DEFAULT clock_timestamp()\n"
     ");\n"
     "CREATE INDEX sink_ledger_key ON sink_ledger (idempotency_key, chunk);\n"},
};

static const char SQL_CREATE_TABLE[] =
    "CREATE TABLE IF NOT EXISTS sink_schema_migrations ("
    " version integer PRIMARY KEY, name text NOT NULL,"
    " applied_at timestamptz NOT NULL DEFAULT clock_timestamp())";

/* Run SQL (no rows expected, no parameters); PAL_EDB with ERR filled. */
static int exec(PGconn *pg, const char *sql, const char *what, char *err, size_t errlen)
{
	PGresult *r = PQexec(pg, sql);
	ExecStatusType st = PQresultStatus(r);
	if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
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

static int apply_one(PGconn *pg, const struct sink_migration *m, char *err, size_t errlen)
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

int pal__sink_schema_apply(PGconn *pg, int *applied, char *err, size_t errlen)
{
	const int n = (int)(sizeof migrations / sizeof migrations[0]);
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
	for (size_t i = 0; i < sizeof migrations / sizeof migrations[0]; i++)
		fputs(migrations[i].sql, stdout);
}
