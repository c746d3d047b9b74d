/*
 * migrate.c - schema migrations under pg_advisory_lock (G8).
 *
 * Every caller takes the same session-level advisory lock, creates
 * schema_migrations if absent, and applies the compiled-in migrations the
 * database lacks, each in its own transaction together with its
 * schema_migrations row.  Concurrent callers therefore queue on the lock and
 * the later ones find nothing left to do.
 *
 * Schema range (docs/upgrades.md): every migration declares, in a header
 * line "-- compatible_from: N", the oldest binary schema that still works
 * against a database with it applied (expand style: the previous release's
 * schema; no line: its own version, i.e. a contract step).  The row of
 * schema_migrations records it, so that a binary can judge versions it does
 * not know.  A binary of schema S supports a database when, once its own
 * migrations are applied, the largest compatible_from recorded is <= S; a
 * newer schema made in expand style is therefore run against, a contract
 * step beyond S is refused (PAL_ESCHEMA): an old binary must not write to a
 * schema it does not understand.
 *
 * After-roll steps: a migration whose header has the line "-- applied: after
 * the roll" declares that the binary carrying it works with or without it
 * applied.  The run of such steps at the end of the list is the binary's
 * tail; one followed by any later step (a later release's) is a plain
 * contract step for this binary.  Its range is then min = the highest
 * migration before the tail, binary = the highest: a node migrates up to
 * min (and installs the functions, which serve both sides), leaves the tail
 * to `palisade migrate`, and leads; an empty database gets the tail too.
 *
 * Contract steps and live nodes (pal_store_pending_contract): a migration
 * whose compatible_from is above the database's is a contract step for the
 * nodes running on it now (each of them runs a schema >= the database's
 * compatible_from, or it refuses to lead); `palisade migrate` looks those
 * steps up before applying anything and refuses them while a live node
 * advertises an older schema (src/cli/cmd_migrate.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "palisade/clock.h"
#include "palisade/log.h"
#include "palisade/store.h"
#include "store_int.h"

/*
 * Lock waits (docs/upgrades.md, "Migrations beside live nodes").  A
 * migration that alters a table nodes are using queues for an exclusive
 * lock, and while it waits every later statement on that table queues
 * behind it; when it already holds one table and waits for another that a
 * node's transaction holds while it wants the first (a claim updates
 * triggers, then inserts into attempts), the two deadlock.  So each try
 * of a migration waits at most MIGRATE_LOCK_TIMEOUT for any one lock,
 * below PostgreSQL's default deadlock_timeout (1 s), so that the migration
 * gives way before a node's transaction is chosen as the deadlock's
 * victim; a try that times out (55P03) or is chosen all the same (40P01)
 * is rolled back whole and tried again after a short pause, for up to
 * MIGRATE_LOCK_BUDGET_MS in all per run.  The budget stays inside the
 * node's start-up stall allowance (it migrates too).
 */
#define MIGRATE_LOCK_TIMEOUT "500ms"
enum { MIGRATE_LOCK_BUDGET_MS = 15000, MIGRATE_PAUSE_MAX_MS = 1000 };

static const char SQL_CREATE_TABLE[] = "CREATE TABLE IF NOT EXISTS schema_migrations ("
				       " version integer PRIMARY KEY, name text NOT NULL,"
				       " applied_at timestamptz NOT NULL DEFAULT now())";
/* Added in place (not by a numbered migration): the column must exist before
 * the first migration that declares a compatible_from is recorded.  A binary
 * of v0.1.0 inserts (version, name) only, which leaves it NULL: NULL reads as
 * the row's own version. */
static const char SQL_ADD_COMPAT[] =
    "ALTER TABLE schema_migrations ADD COLUMN IF NOT EXISTS compatible_from integer";
static const char SQL_RANGE[] =
    "SELECT coalesce(max(version), 0), coalesce(max(coalesce(compatible_from, version)), 0),"
    " (SELECT version FROM schema_migrations"
    "   ORDER BY coalesce(compatible_from, version) DESC, version DESC LIMIT 1)"
    " FROM schema_migrations";

/* The first line of M's leading comment block that starts with KEY, or
 * NULL: the header ends at the first line that is not a comment. */
static const char *header_line(const pal_migration *m, const char *key)
{
	size_t len = strlen(key);
	for (const char *l = m->sql; l && *l;) {
		if (!strncmp(l, key, len))
			return l;
		if (strncmp(l, "--", 2))
			break;
		const char *nl = strchr(l, '\n');
		l = nl ? nl + 1 : NULL;
	}
	return NULL;
}

int pal_migration_compatible_from(const pal_migration *m)
{
	static const char key[] = "-- compatible_from:";
	const char *l = header_line(m, key);
	if (!l)
		return m->version;
	char *end;
	long v = strtol(l + sizeof key - 1, &end, 10);
	if (end != l + sizeof key - 1 && v > 0 && v <= m->version)
		return (int)v;
	return m->version; /* malformed or above itself: contract */
}

bool pal_migration_after_roll(const pal_migration *m)
{
	static const char key[] = "-- applied: after the roll";
	const char *l = header_line(m, key);
	/* the whole line: nothing but blanks after it */
	for (l = l ? l + sizeof key - 1 : NULL; l && *l && *l != '\n'; l++)
		if (*l != ' ' && *l != '\t' && *l != '\r')
			return false;
	return l != NULL;
}

int pal_migrations_check(const pal_migration *ms, int n, char *err, size_t errlen)
{
	/* schema_migrations records a step by its number alone: of two steps of
	 * one number, the second would read as applied and be skipped */
	for (int i = 0; i < n; i++) {
		if (ms[i].version > 0 && (i == 0 || ms[i].version > ms[i - 1].version))
			continue;
		if (ms[i].version <= 0)
			snprintf(err, errlen,
				 "migration %s has no version number (want NNN_name.sql)",
				 ms[i].name);
		else
			snprintf(err, errlen,
				 "migrations %s and %s: the numbers of the migrations must rise "
				 "from one to the next, and these do not (%d, then %d): renumber "
				 "the newer one",
				 ms[i - 1].name, ms[i].name, ms[i - 1].version, ms[i].version);
		return PAL_EINVAL;
	}
	return PAL_OK;
}

/* The index of the first step of the tail of MS (its last steps, each
 * applied after the roll), N when there is none. */
static int tail_start(const pal_migration *ms, int n)
{
	int t = n;
	while (t > 0 && pal_migration_after_roll(&ms[t - 1]))
		t--;
	return t;
}

void pal_schema_range_of(const pal_migration *ms, int n, pal_schema_range *r)
{
	*r = (pal_schema_range){0};
	int t = tail_start(ms, n);
	for (int i = 0; i < n; i++) {
		if (ms[i].version >= r->binary) {
			r->binary = ms[i].version;
			r->compatible_from = pal_migration_compatible_from(&ms[i]);
		}
		if (i < t && ms[i].version > r->min)
			r->min = ms[i].version;
	}
}

void pal_store_binary_schema(pal_schema_range *r)
{
	pal_schema_range_of(pal_migrations, pal_n_migrations, r);
}

#define SQL_HAS_COMPAT                                                                             \
	"EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('schema_migrations')"     \
	" AND attname = 'compatible_from' AND attnum > 0 AND NOT attisdropped)"

/* Does schema_migrations have its compatible_from column yet?  Read from
 * the catalog: information_schema.columns cost 7-9 ms of backend CPU on
 * every connection of every CLI command. */
static int has_compat_column(pal_store *st, bool *yes, char *err, size_t errlen)
{
	PGresult *q = pal__store_query(st, "SELECT " SQL_HAS_COMPAT, 0, NULL, err, errlen);
	if (!q)
		return PAL_EDB;
	*yes = PQgetvalue(q, 0, 0)[0] == 't';
	PQclear(q);
	return PAL_OK;
}

/* The database's side of R: highest applied version and the largest
 * compatible_from recorded (0 and 0 when schema_migrations is absent or
 * empty), and the version that declares it. */
static int db_range(pal_store *st, pal_schema_range *r, char *err, size_t errlen)
{
	/* Does schema_migrations exist, and has it its compatible_from column
	 * yet?  One round trip, on every connection. */
	PGresult *q = pal__store_query(
	    st, "SELECT to_regclass('schema_migrations') IS NOT NULL, " SQL_HAS_COMPAT, 0, NULL,
	    err, errlen);
	if (!q)
		return PAL_EDB;
	bool exists = PQgetvalue(q, 0, 0)[0] == 't';
	/* Before the column exists (a database of v0.1.0 not yet migrated by
	 * this binary) every row reads as compatible from its own version. */
	bool has_col = PQgetvalue(q, 0, 1)[0] == 't';
	PQclear(q);
	r->db_version = r->db_compatible_from = r->db_compatible_by = 0;
	if (!exists)
		return PAL_OK;
	q = pal__store_query(st,
			     has_col
				 ? SQL_RANGE
				 : "SELECT coalesce(max(version), 0), coalesce(max(version), 0),"
				   " max(version) FROM schema_migrations",
			     0, NULL, err, errlen);
	if (!q)
		return PAL_EDB;
	r->db_version = atoi(PQgetvalue(q, 0, 0));
	r->db_compatible_from = atoi(PQgetvalue(q, 0, 1));
	r->db_compatible_by = PQgetisnull(q, 0, 2) ? 0 : atoi(PQgetvalue(q, 0, 2));
	PQclear(q);
	return PAL_OK;
}

bool pal_schema_supported(const pal_schema_range *r)
{
	return r->db_version >= r->min && r->db_compatible_from <= r->binary;
}

/* The refusal of a database beyond R's binary: PAL_ESCHEMA with ERR. */
static int refuse_newer(const pal_schema_range *r, char *err, size_t errlen)
{
	snprintf(err, errlen,
		 "database schema is at version %d but this binary knows only up to %d, and "
		 "migration %d is compatible only from schema %d on (contract step); upgrade "
		 "palisade before running it against this database",
		 r->db_version, r->binary, r->db_compatible_by, r->db_compatible_from);
	return PAL_ESCHEMA;
}

static int is_applied(pal_store *st, int version, bool *yes, char *err, size_t errlen)
{
	char v[16];
	snprintf(v, sizeof v, "%d", version);
	const char *p[] = {v};
	PGresult *r = pal__store_query(st, "SELECT 1 FROM schema_migrations WHERE version = $1", 1,
				       p, err, errlen);
	if (!r)
		return PAL_EDB;
	*yes = PQntuples(r) > 0;
	PQclear(r);
	return PAL_OK;
}

/* A numbered migration M, or (M NULL) the functions, views and triggers
 * of sql/functions/ (pal_objects): what apply_one() runs and records. */
typedef struct step {
	const pal_migration *m;
	const char *name; /* in messages */
	int version;	  /* the binary's, recorded with the objects */
} step;

/* Runs SQL, one text of one or more statements (the simple protocol runs
 * them all), in the open transaction; a text of comments only (a migration
 * kept for its number) is nothing to run. */
static int exec_text(pal_store *st, const char *sql, const char *name, char *err, size_t errlen)
{
	char what[160];
	snprintf(what, sizeof what, "migration %s failed", name);
	PGresult *r = PQexec(st->conn, sql);
	if (r && PQresultStatus(r) == PGRES_EMPTY_QUERY) {
		PQclear(r);
		return PAL_OK;
	}
	r = pal__store_checked(st, r, what, err, errlen);
	if (!r)
		return PAL_EDB;
	PQclear(r);
	return PAL_OK;
}

/* Records S in the open transaction: M's schema_migrations row, or the
 * objects' version and digest in schema_functions. */
static int record(pal_store *st, const step *s, char *err, size_t errlen)
{
	char v[16];
	char cf[16];
	snprintf(v, sizeof v, "%d", s->m ? s->m->version : s->version);
	PGresult *r;
	if (s->m) {
		snprintf(cf, sizeof cf, "%d", pal_migration_compatible_from(s->m));
		const char *p[] = {v, s->m->name, cf};
		r = pal__store_query(
		    st,
		    "INSERT INTO schema_migrations (version, name, compatible_from)"
		    " VALUES ($1, $2, $3)",
		    3, p, err, errlen);
	} else {
		const char *p[] = {v, pal_objects_digest};
		r = pal__store_query(
		    st,
		    "INSERT INTO schema_functions (id, version, digest) VALUES (1, $1, $2)"
		    " ON CONFLICT (id) DO UPDATE SET version = excluded.version,"
		    " digest = excluded.digest, applied_at = now()",
		    2, p, err, errlen);
	}
	if (!r)
		return PAL_EDB;
	PQclear(r);
	return PAL_OK;
}

/* One try of S in a transaction of its own, with its record.  The objects
 * are created with check_function_bodies off, as pg_dump restores them:
 * a SQL function may name one that comes later in the set.  PAL_EBUSY
 * when it could not take a lock in time or was chosen as a deadlock's
 * victim (rolled back: nothing of it applied), ST's sqlstate saying
 * which. */
static int apply_one(pal_store *st, const step *s, char *err, size_t errlen)
{
	if (pal__store_exec(st, "BEGIN", err, errlen))
		return PAL_EDB;
	int rc = PAL_OK;
	if (pal__store_exec(st, "SET LOCAL lock_timeout = '" MIGRATE_LOCK_TIMEOUT "'", err,
			    errlen) ||
	    (!s->m && pal__store_exec(st, "SET LOCAL check_function_bodies = off", err, errlen)))
		rc = PAL_EDB;
	if (!rc && s->m)
		rc = exec_text(st, s->m->sql, s->name, err, errlen);
	for (int i = 0; !rc && !s->m && i < pal_n_objects; i++) {
		char name[160];
		snprintf(name, sizeof name, "%s (sql/functions/%s.sql)", s->name,
			 pal_objects[i].name);
		rc = exec_text(st, pal_objects[i].sql, name, err, errlen);
	}
	if (rc) {
		pal__store_rollback(st);
		return pal_store_lock_timeout(st) || !strcmp(st->sqlstate, "40P01") ? PAL_EBUSY
										    : PAL_EDB;
	}
	if (record(st, s, err, errlen)) {
		pal__store_rollback(st);
		return PAL_EDB;
	}
	return pal__store_exec(st, "COMMIT", err, errlen) ? PAL_EDB : PAL_OK;
}

/* S applied by apply_one(), tried again while it gives way to the locks of
 * other transactions (above); each retry is logged
 * (store.migrate_lock_retry) and its pause added to *WAITED, the run's
 * time spent giving way.  PAL_EBUSY once that would pass
 * MIGRATE_LOCK_BUDGET_MS, nothing of S applied. */
static int apply_retrying(pal_store *st, const step *s, int64_t *waited, char *err, size_t errlen)
{
	for (int tries = 1;; tries++) {
		int64_t t0 = pal_mono_ms();
		int rc = apply_one(st, s, err, errlen);
		if (rc != PAL_EBUSY)
			return rc;
		/* 100, 200, 400, 800, 1000 ms ..., with up to a quarter more at
		 * random, so that two migrating processes do not meet again. */
		int pause = 100 << (tries < 5 ? tries - 1 : 4);
		if (pause > MIGRATE_PAUSE_MAX_MS)
			pause = MIGRATE_PAUSE_MAX_MS;
		pause += (int)(pal_mono_us() % (pause / 4 + 1));
		*waited += pal_mono_ms() - t0; /* the try's own lock wait */
		int64_t spent = *waited;
		if (spent + pause > MIGRATE_LOCK_BUDGET_MS) {
			char last[512];
			snprintf(last, sizeof last, "%s", err);
			snprintf(err, errlen,
				 "migration %s could not take its locks in %d tries (%lld ms "
				 "giving way in all) (each waits at most %s; other transactions "
				 "hold the tables it alters); nothing of it was applied: run "
				 "migrate again, when the cluster is less busy if this repeats; "
				 "last try: %s",
				 s->name, tries, (long long)spent, MIGRATE_LOCK_TIMEOUT, last);
			return PAL_EBUSY;
		}
		pal_log(PAL_LOG_WARN, "store.migrate_lock_retry", "{s:s, s:i, s:s, s:i, s:I}",
			"migration", s->name, "try", tries, "sqlstate", st->sqlstate, "pause_ms",
			pause, "spent_ms", (json_int_t)spent);
		pal_sleep_ms(pause);
		*waited += pause;
	}
}

/* PC from the database's side of R: the migrations not yet applied (up to
 * UPTO, 0: all of them) whose compatible_from is above the database's.
 * None on an empty database: every node migrates to its own minimum before
 * it registers, so no node runs on it. */
static int pending_contract(pal_store *st, const pal_schema_range *r, int upto,
			    pal_pending_contract *pc, char *err, size_t errlen)
{
	*pc = (pal_pending_contract){.db_version = r->db_version,
				     .db_compatible_from = r->db_compatible_from};
	if (r->db_version == 0)
		return PAL_OK;
	for (int i = 0; i < pal_n_migrations; i++) {
		const pal_migration *m = &pal_migrations[i];
		int cf = pal_migration_compatible_from(m);
		if (upto > 0 && m->version > upto)
			continue;
		if (cf <= r->db_compatible_from)
			continue; /* every live node already runs a schema that demands as much */
		bool done = false;
		int rc = is_applied(st, m->version, &done, err, errlen);
		if (rc)
			return rc;
		if (done)
			continue;
		pc->steps++;
		if (cf > pc->compatible_from) {
			pc->compatible_from = cf;
			pc->version = m->version;
			pc->name = m->name;
		}
	}
	return PAL_OK;
}

/* The functions, views and triggers (pal_objects), applied after the
 * numbered steps when this run has brought the database to the binary's
 * minimum at least (R: the database's side as it was before them; UPTO:
 * the run's limit, 0 none; the set serves both sides of the after-roll
 * tail) and the database has not these bodies yet:
 * schema_functions names an older version, or this one with another
 * digest.  A binary older than the database, or than the version recorded
 * there, leaves them alone: the newer binary's bodies serve the schema
 * (they must keep serving the older binaries it is compatible with, as
 * any expand step must).  *DONE set when it applied them; DONE NULL: logs
 * store.functions_applied instead. */
static int apply_objects(pal_store *st, const pal_schema_range *r, int upto, int64_t *waited,
			 bool *done, char *err, size_t errlen)
{
	if (pal_n_objects == 0 || r->db_version > r->binary || (upto > 0 && upto < r->min))
		return PAL_OK;
	PGresult *q = pal__store_query(st, "SELECT version, digest FROM schema_functions", 0, NULL,
				       err, errlen);
	if (!q)
		return PAL_EDB;
	int had = PQntuples(q) ? atoi(PQgetvalue(q, 0, 0)) : 0;
	bool same = PQntuples(q) && !strcmp(PQgetvalue(q, 0, 1), pal_objects_digest);
	PQclear(q);
	if (had > r->binary || (had == r->binary && same))
		return PAL_OK;
	step objs = {.name = "functions", .version = r->binary};
	int rc = apply_retrying(st, &objs, waited, err, errlen);
	if (!rc && done)
		*done = true;
	else if (!rc)
		pal_log(PAL_LOG_INFO, "store.functions_applied", "{s:i, s:i, s:i, s:s}", "objects",
			pal_n_objects, "version", r->binary, "replaced_version", had, "digest",
			pal_objects_digest);
	return rc;
}

/*
 * Take (LOCK) or release the migrations' session advisory lock.  A release
 * that finds the lock not held by this session is an error, not a warning
 * to pass over: the lock was taken on another server connection (the
 * connection goes through a transaction pooler) and stays held there,
 * which blocks every later migration until that connection ends.
 */
static int migrate_lock(pal_store *st, bool lock, char *err, size_t errlen)
{
	PGresult *r = pal__store_query(
	    st,
	    lock ? "SELECT pg_advisory_lock(" PAL_MIGRATE_LOCK_KEY "), pg_backend_pid()"
		 : "SELECT pg_advisory_unlock(" PAL_MIGRATE_LOCK_KEY "), pg_backend_pid()",
	    0, NULL, err, errlen);
	if (!r)
		return PAL_EDB;
	bool released = lock || PQgetvalue(r, 0, 0)[0] == 't';
	int pid = atoi(PQgetvalue(r, 0, 1));
	PQclear(r);
	if (released)
		return PAL_OK;
	snprintf(err, errlen,
		 "the migration lock was not held by this session when released (server "
		 "process %d answered the release): the connection goes through a transaction "
		 "pooler, which ran the lock on another server connection, where it stays held "
		 "until that connection ends; run migrate on a direct connection to PostgreSQL",
		 pid);
	return PAL_EINVAL;
}

static int migrate(pal_store *st, bool contract, int upto, int *applied, bool *functions, char *err,
		   size_t errlen)
{
	*applied = 0;
	if (functions)
		*functions = false;
	pal_schema_range r;
	pal_store_binary_schema(&r);
	int rc = pal_migrations_check(pal_migrations, pal_n_migrations, err, errlen);
	if (rc)
		return rc;
	/* The lock is a session's: through a transaction pooler it would stay
	 * on one server connection while the steps ran on others. */
	rc = pal__store_needs_session(st, "the migration lock", err, errlen);
	if (rc)
		return rc;
	rc = migrate_lock(st, true, err, errlen);
	if (rc)
		return rc;
	/* Quiet the NOTICE "relation already exists, skipping". */
	rc = pal__store_exec(st, "SET client_min_messages = warning", err, errlen);
	if (!rc)
		rc = pal__store_exec(st, SQL_CREATE_TABLE, err, errlen);
	/* Only when missing: ALTER TABLE takes an exclusive lock even when the
	 * column is there, and every start passes here. */
	bool has_col = false;
	if (!rc)
		rc = has_compat_column(st, &has_col, err, errlen);
	if (!rc && !has_col)
		rc = pal__store_exec(st, SQL_ADD_COMPAT, err, errlen);
	if (!rc)
		rc = db_range(st, &r, err, errlen);
	/* Checked before applying anything: a binary must not add its
	 * migrations under a contract step it does not know. */
	if (!rc && r.db_compatible_from > r.binary)
		rc = refuse_newer(&r, err, errlen);
	/* A node leaves the after-roll tail to `palisade migrate`, except on
	 * an empty database, on which no node runs yet. */
	if (!contract && r.db_version > 0 && r.min < r.binary && (upto == 0 || upto > r.min))
		upto = r.min;
	pal_pending_contract pc;
	if (!rc && !contract && !(rc = pending_contract(st, &r, upto, &pc, err, errlen)) &&
	    pc.steps > 0) {
		snprintf(err, errlen,
			 "migration %s is a contract step (compatible_from %d, above the "
			 "database's %d) and is not applied by a node: apply it with 'palisade "
			 "migrate' of this release, which checks first that no older node is live "
			 "(docs/upgrades.md)",
			 pc.name, pc.compatible_from, pc.db_compatible_from);
		rc = PAL_ESCHEMA;
	}
	int64_t waited = 0;
	for (int i = 0; !rc && i < pal_n_migrations; i++) {
		bool done = false;
		if (upto > 0 && pal_migrations[i].version > upto)
			continue;
		rc = is_applied(st, pal_migrations[i].version, &done, err, errlen);
		if (!rc && !done) {
			step m = {.m = &pal_migrations[i], .name = pal_migrations[i].name};
			rc = apply_retrying(st, &m, &waited, err, errlen);
			if (!rc)
				(*applied)++;
		}
	}
	if (!rc)
		rc = apply_objects(st, &r, upto, &waited, functions, err, errlen);
	char uerr[512];
	int urc = migrate_lock(st, false, uerr, sizeof uerr);
	if (urc && !rc) {
		snprintf(err, errlen, "%s", uerr);
		rc = urc;
	}
	return rc;
}

int pal_store_pending_after_roll(pal_store *st, const char **names, int max, int *n, char *err,
				 size_t errlen)
{
	*n = 0;
	pal_schema_range r;
	pal_store_binary_schema(&r);
	if (r.min == r.binary)
		return PAL_OK;
	int rc = db_range(st, &r, err, errlen);
	for (int i = 0; !rc && i < pal_n_migrations; i++) {
		if (pal_migrations[i].version <= r.min)
			continue;
		bool done = false; /* an empty database lacks them all */
		if (r.db_version > 0)
			rc = is_applied(st, pal_migrations[i].version, &done, err, errlen);
		if (!rc && !done && (*n)++ < max && names)
			names[*n - 1] = pal_migrations[i].name;
	}
	return rc;
}

int pal_store_pending_contract(pal_store *st, int upto, pal_pending_contract *pc, char *err,
			       size_t errlen)
{
	*pc = (pal_pending_contract){0};
	pal_schema_range r;
	pal_store_binary_schema(&r);
	int rc = db_range(st, &r, err, errlen);
	return rc ? rc : pending_contract(st, &r, upto, pc, err, errlen);
}

int pal_store_migrate(pal_store *st, int *applied, char *err, size_t errlen)
{
	return migrate(st, false, 0, applied, NULL, err, errlen);
}

int pal_store_migrate_lock(pal_store *st, bool lock, char *err, size_t errlen)
{
	/* Session-level advisory locks nest: migrate() takes and releases the
	 * same lock once more inside. */
	return migrate_lock(st, lock, err, errlen);
}

int pal_store_migrate_all(pal_store *st, int upto, int *applied, bool *functions, char *err,
			  size_t errlen)
{
	return migrate(st, true, upto, applied, functions, err, errlen);
}

int pal_store_schema_range(pal_store *st, pal_schema_range *r, char *err, size_t errlen)
{
	pal_store_binary_schema(r);
	return db_range(st, r, err, errlen);
}

int pal_store_schema_check(pal_store *st, int *version, char *err, size_t errlen)
{
	pal_schema_range r;
	int rc = pal_store_schema_range(st, &r, err, errlen);
	*version = r.db_version;
	if (rc)
		return rc;
	if (r.db_compatible_from > r.binary)
		return refuse_newer(&r, err, errlen);
	if (r.db_version < r.min) {
		snprintf(err, errlen,
			 "database schema is at version %d, this binary needs %d; run 'palisade "
			 "migrate'",
			 r.db_version, r.min);
		return PAL_EINVAL;
	}
	return PAL_OK;
}
