/*
 * migrate.c - schema migrations under pg_advisory_lock (G8).
 *
 * Every caller takes the same session-level advisory lock, creates
 * schema_migrations if absent, and applies the compiled-in migrations the
 * database lacks, each in its own transaction together with its
 * schema_migrations row.  Concurrent callers therefore queue on the lock and
 * the later ones find nothing left to do.  A database that records a version
 * this binary does not know is refused: an old binary must not write to a
 * schema it does not understand.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/store.h"
#include "store_int.h"

static const char SQL_CREATE_TABLE[] =
	"CREATE TABLE IF NOT EXISTS schema_migrations ("
	" version integer PRIMARY KEY, name text NOT NULL,"
	" applied_at timestamptz NOT NULL DEFAULT now())";

static int max_known(void)
{
	int m = 0;
	for (int i = 0; i < pal_n_migrations; i++)
		if (pal_migrations[i].version > m)
			m = pal_migrations[i].version;
	return m;
}

/* Highest applied version, or 0 when schema_migrations is absent or empty. */
static int applied_version(pal_store *st, int *version, char *err, size_t errlen)
{
	PGresult *r = pal__store_query(st, "SELECT to_regclass('schema_migrations') IS NOT NULL", 0,
				       NULL, err, errlen);
	if (!r)
		return PAL_EDB;
	bool exists = PQgetvalue(r, 0, 0)[0] == 't';
	PQclear(r);
	*version = 0;
	if (!exists)
		return PAL_OK;
	r = pal__store_query(st, "SELECT coalesce(max(version), 0) FROM schema_migrations", 0, NULL,
			     err, errlen);
	if (!r)
		return PAL_EDB;
	*version = atoi(PQgetvalue(r, 0, 0));
	PQclear(r);
	return PAL_OK;
}

static int is_applied(pal_store *st, int version, bool *yes, char *err, size_t errlen)
{
	char v[16];
	snprintf(v, sizeof v, "%d", version);
	const char *p[] = { v };
	PGresult *r = pal__store_query(st, "SELECT 1 FROM schema_migrations WHERE version = $1", 1,
				       p, err, errlen);
	if (!r)
		return PAL_EDB;
	*yes = PQntuples(r) > 0;
	PQclear(r);
	return PAL_OK;
}

static int apply_one(pal_store *st, const pal_migration *m, char *err, size_t errlen)
{
	char what[160];
	if (pal__store_exec(st, "BEGIN", err, errlen))
		return PAL_EDB;
	/* Multi-statement text: PQexec (simple protocol) is the way to run it. */
	PGresult *r = PQexec(st->conn, m->sql);
	if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK) {
		snprintf(what, sizeof what, "migration %s failed", m->name);
		pal__store_errmsg(st, r, what, err, errlen);
		PQclear(r);
		pal__store_rollback(st);
		return PAL_EDB;
	}
	PQclear(r);
	char v[16];
	snprintf(v, sizeof v, "%d", m->version);
	const char *p[] = { v, m->name };
	r = pal__store_query(st, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
			     2, p, err, errlen);
	if (!r) {
		pal__store_rollback(st);
		return PAL_EDB;
	}
	PQclear(r);
	return pal__store_exec(st, "COMMIT", err, errlen) ? PAL_EDB : PAL_OK;
}

int pal_store_migrate(pal_store *st, int *applied, char *err, size_t errlen)
{
	*applied = 0;
	int rc = pal__store_exec(st, "SELECT pg_advisory_lock(" PAL_MIGRATE_LOCK_KEY ")", err,
				 errlen);
	if (rc)
		return rc;
	/* Quiet the NOTICE "relation already exists, skipping". */
	rc = pal__store_exec(st, "SET client_min_messages = warning", err, errlen);
	if (!rc)
		rc = pal__store_exec(st, SQL_CREATE_TABLE, err, errlen);
	int have = 0;
	if (!rc)
		rc = applied_version(st, &have, err, errlen);
	if (!rc && have > max_known()) {
		snprintf(err, errlen,
			 "database schema is at version %d but this binary knows only up to %d; "
			 "upgrade palisade before running it against this database",
			 have, max_known());
		rc = PAL_ESCHEMA;
	}
	for (int i = 0; !rc && i < pal_n_migrations; i++) {
		bool done = false;
		rc = is_applied(st, pal_migrations[i].version, &done, err, errlen);
		if (!rc && !done) {
			rc = apply_one(st, &pal_migrations[i], err, errlen);
			if (!rc)
				(*applied)++;
		}
	}
	char uerr[256];
	if (pal__store_exec(st, "SELECT pg_advisory_unlock(" PAL_MIGRATE_LOCK_KEY ")", uerr,
			    sizeof uerr) && !rc) {
		snprintf(err, errlen, "%s", uerr);
		rc = PAL_EDB;
	}
	return rc;
}

int pal_store_schema_check(pal_store *st, int *version, char *err, size_t errlen)
{
	int rc = applied_version(st, version, err, errlen);
	if (rc)
		return rc;
	if (*version > max_known()) {
		snprintf(err, errlen,
			 "database schema is at version %d but this binary knows only up to %d; "
			 "upgrade palisade before running it against this database",
			 *version, max_known());
		return PAL_ESCHEMA;
	}
	if (*version < max_known()) {
		snprintf(err, errlen,
			 "database schema is at version %d, this binary needs %d; run 'palisade migrate'",
			 *version, max_known());
		return PAL_EINVAL;
	}
	return PAL_OK;
}
