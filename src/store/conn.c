/*
 * conn.c - one PostgreSQL connection (pal_store) and the query helper every
 * src/store file goes through, so that each PGresult is checked and cleared
 * on every path.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "palisade/clock.h"
#include "palisade/log.h"
#include "palisade/store.h"
#include "store_int.h"

/* libpq's notices and warnings (by default printed raw on stderr) become
 * log lines; the logger rate-limits the "pg.notice" event (node.c). */
static void notice_to_log(void *arg, const char *message)
{
	(void)arg;
	const char *m = message ? message : "";
	size_t n = strlen(m);
	while (n && (m[n - 1] == '\n' || m[n - 1] == ' '))
		n--;
	char buf[1024];
	snprintf(buf, sizeof buf, "%.*s", (int)n, m);
	pal_log(strncmp(buf, "WARNING", 7) ? PAL_LOG_INFO : PAL_LOG_WARN, "pg.notice", "{s:s}",
		"message", buf);
}

/* Session timeouts every later pal_store_open() applies (a node sets them
 * from postgres.idle_in_transaction_timeout / statement_timeout). */
static int64_t session_idle_ms = 5000, session_statement_ms = 0;

void pal_store_set_session_timeouts(int64_t idle_in_transaction_ms, int64_t statement_ms)
{
	if (idle_in_transaction_ms > 0)
		session_idle_ms = idle_in_transaction_ms;
	session_statement_ms = statement_ms;
}

/* postgres.pool_mode transaction: pal_store_open() reaches a transaction
 * pooler (pal_store_set_transaction_pooling). */
static bool transaction_pooling;

void pal_store_set_transaction_pooling(bool on)
{
	transaction_pooling = on;
}

int pal__store_needs_session(pal_store *st, const char *what, char *err, size_t errlen)
{
	if (!st->pooled)
		return PAL_OK;
	snprintf(err, errlen,
		 "internal error: %s needs a session of its own, not a connection through a "
		 "transaction pooler (postgres.direct_conninfo)",
		 what);
	return PAL_EINVAL;
}

int pal__store_connect(const char *conninfo, const pal__store_net *net, pal_store **out, char *err,
		       size_t errlen)
{
	*out = NULL;
	/* Defaults first: the caller's conninfo (expanded in dbname's place)
	 * overrides them. */
	const char *keys[] = {"connect_timeout", "tcp_user_timeout",	      "keepalives",
			      "keepalives_idle", "keepalives_interval",	      "keepalives_count",
			      "dbname",		 "fallback_application_name", NULL};
	const char *vals[] = {net->connect_timeout,
			      net->tcp_user_timeout,
			      "1",
			      net->keepalives_idle,
			      net->keepalives_interval,
			      net->keepalives_count,
			      conninfo,
			      net->application,
			      NULL};
	pal_store *st = calloc(1, sizeof *st);
	if (!st)
		return PAL_ENOMEM;
	st->conn = PQconnectdbParams(keys, vals, 1);
	if (!st->conn) {
		free(st);
		return PAL_ENOMEM;
	}
	if (PQstatus(st->conn) != CONNECTION_OK) {
		pal__store_errmsg(st, NULL, "cannot connect to PostgreSQL", err, errlen);
		pal_store_close(st);
		return PAL_EDB;
	}
	*out = st;
	return PAL_OK;
}

/* Open CONNINFO; POOLED: through a transaction pooler, no session state. */
static int store_open(const char *conninfo, bool pooled, pal_store **out, char *err, size_t errlen)
{
	*out = NULL;
	if (!conninfo || !*conninfo) {
		snprintf(err, errlen,
			 "no PostgreSQL connection string: pass --pg, set postgres.conninfo in the "
			 "config file, or export PALISADE_PG");
		return PAL_EINVAL;
	}
	/* On a network partition the packets vanish and a statement would wait
	 * out TCP's retransmissions (about 15 minutes); keepalives and
	 * tcp_user_timeout turn that into an error within ~10 s, so the node
	 * reports the database unavailable and retries. */
	static const pal__store_net net = {.connect_timeout = "5",
					   .tcp_user_timeout = "10000",
					   .keepalives_idle = "5",
					   .keepalives_interval = "2",
					   .keepalives_count = "3",
					   .application = "palisade"};
	pal_store *st;
	int rc = pal__store_connect(conninfo, &net, &st, err, errlen);
	if (rc)
		return rc;
	PGconn *c = st->conn;
	PQsetNoticeProcessor(c, notice_to_log, NULL);
	st->pooled = pooled;
	if (pooled) {
		/* A SET would stay on the one server connection that ran it,
		 * reaching whichever client the pooler hands it to next and
		 * missing from the others: the pooler sets these on its server
		 * connections instead (docs/operations.md, "Behind PgBouncer"). */
		*out = st;
		return PAL_OK;
	}
	/* Every palisade statement is short OLTP: JIT compilation (PostgreSQL
	 * turns it on above jit_above_cost) would cost more than the statement,
	 * ~50 ms per claim on the bench box. */
	PGresult *r = PQexec(c, "SET jit = off");
	PQclear(r);
	/* A session that vanishes inside a transaction (a partition, a
	 * SIGSTOP) would keep its locks until the server's TCP keepalive
	 * notices, two hours by default: the executors' claim lock would stall
	 * every claim in the cluster.  The server ends such a session after
	 * 5 s instead (no palisade transaction waits on anything but the
	 * database).  Callers may set it lower. */
	char set[96];
	snprintf(set, sizeof set, "SET idle_in_transaction_session_timeout = %" PRId64,
		 session_idle_ms);
	PQclear(PQexec(c, set));
	if (session_statement_ms > 0) {
		snprintf(set, sizeof set, "SET statement_timeout = %" PRId64, session_statement_ms);
		PQclear(PQexec(c, set));
	}
	*out = st;
	return PAL_OK;
}

int pal_store_open(const char *conninfo, pal_store **out, char *err, size_t errlen)
{
	return store_open(conninfo, transaction_pooling, out, err, errlen);
}

int pal_store_open_session(const char *conninfo, pal_store **out, char *err, size_t errlen)
{
	return store_open(conninfo, false, out, err, errlen);
}

bool pal_store_pooled(const pal_store *st)
{
	return st->pooled;
}

int pal_store_behind_pooler(pal_store *st, bool *behind, char *err, size_t errlen)
{
	*behind = false;
	PGresult *r = pal__store_query(st, "SELECT pg_backend_pid()", 0, NULL, err, errlen);
	if (!r)
		return PAL_EDB;
	*behind = atoi(PQgetvalue(r, 0, 0)) != PQbackendPID(st->conn);
	PQclear(r);
	return PAL_OK;
}

void pal_store_close(pal_store *st)
{
	if (!st)
		return;
	PQfinish(st->conn);
	pal__takeover_free(st->takeover);
	free(st);
}

PGresult *pal__store_checked(pal_store *st, PGresult *r, const char *what, char *err,
			     size_t errlen)
{
	ExecStatusType s = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
	if (s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK) {
		st->sqlstate[0] = '\0';
		return r;
	}
	const char *code = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
	snprintf(st->sqlstate, sizeof st->sqlstate, "%s", code ? code : "");
	pal__store_errmsg(st, r, what, err, errlen);
	PQclear(r);
	return NULL;
}

int pal_store_socket(pal_store *st)
{
	return PQsocket(st->conn);
}

bool pal_store_busy(const pal_store *st)
{
	return st->busy;
}

int pal_store_consume(pal_store *st, bool *done, char *err, size_t errlen)
{
	*done = false;
	if (!PQconsumeInput(st->conn)) {
		pal__store_errmsg(st, NULL, "connection lost", err, errlen);
		return PAL_EDB;
	}
	*done = !st->busy || !PQisBusy(st->conn);
	return PAL_OK;
}

int pal__store_prepare(pal_store *st, unsigned bit, const char *name, const char *sql, int nparams,
		       char *err, size_t errlen)
{
	if (st->pooled || (st->prepared & bit))
		return PAL_OK;
	PGresult *r = PQprepare(st->conn, name, sql, nparams, NULL);
	if (!r || PQresultStatus(r) != PGRES_COMMAND_OK) {
		pal__store_errmsg(st, r, "prepare failed", err, errlen);
		PQclear(r);
		return PAL_EDB;
	}
	PQclear(r);
	st->prepared |= bit;
	return PAL_OK;
}

int pal__store_send_stmt(pal_store *st, unsigned bit, const char *name, const char *sql,
			 int nparams, const char *const *params, char *err, size_t errlen)
{
	if (st->busy) {
		snprintf(err, errlen, "internal error: a statement is already in flight");
		return PAL_EINVAL;
	}
	if (pal__store_prepare(st, bit, name, sql, nparams, err, errlen))
		return PAL_EDB;
	int sent = st->pooled
		       ? PQsendQueryParams(st->conn, sql, nparams, NULL, params, NULL, NULL, 0)
		       : PQsendQueryPrepared(st->conn, name, nparams, params, NULL, NULL, 0);
	if (!sent) {
		pal__store_errmsg(st, NULL, "send failed", err, errlen);
		return PAL_EDB;
	}
	st->busy = true;
	return PAL_OK;
}

PGresult *pal__store_result(pal_store *st, char *err, size_t errlen)
{
	PGresult *res = NULL, *r;
	/* Read to the end (NULL) so the connection is ready for the next one;
	 * keep the first result, or the first error. */
	while ((r = PQgetResult(st->conn))) {
		if (!res)
			res = r;
		else if (PQresultStatus(r) == PGRES_FATAL_ERROR &&
			 PQresultStatus(res) != PGRES_FATAL_ERROR) {
			PQclear(res);
			res = r;
		} else
			PQclear(r);
	}
	st->busy = false;
	return pal__store_checked(st, res, "query failed", err, errlen);
}

PGresult *pal__store_query_stmt(pal_store *st, unsigned bit, const char *name, const char *sql,
				int nparams, const char *const *params, char *err, size_t errlen)
{
	if (pal__store_send_stmt(st, bit, name, sql, nparams, params, err, errlen))
		return NULL;
	return pal__store_result(st, err, errlen);
}

bool pal_store_lock_timeout(const pal_store *st)
{
	return !strcmp(st->sqlstate, "55P03");
}

bool pal_store_deadlock(const pal_store *st)
{
	return !strcmp(st->sqlstate, "40P01");
}


void pal__store_errmsg(pal_store *st, const PGresult *r, const char *what, char *err, size_t errlen)
{
	const char *m = r ? PQresultErrorMessage(r) : PQerrorMessage(st->conn);
	if (!m || !*m)
		m = PQerrorMessage(st->conn);
	size_t n = strlen(m);
	while (n && (m[n - 1] == '\n' || m[n - 1] == ' '))
		n--;
	snprintf(err, errlen, "%s: %.*s", what, (int)n, m);
}

PGresult *pal__store_query(pal_store *st, const char *sql, int nparams, const char *const *params,
			   char *err, size_t errlen)
{
	return pal__store_checked(st,
				  PQexecParams(st->conn, sql, nparams, NULL, params, NULL, NULL, 0),
				  "query failed", err, errlen);
}

int pal__store_query_json(pal_store *st, const char *sql, int nparams, const char *const *params,
			  json_t **out, char *err, size_t errlen)
{
	*out = NULL;
	PGresult *r = pal__store_query(st, sql, nparams, params, err, errlen);
	if (!r)
		return PAL_EDB;
	json_error_t je = {.text = "no value"};
	if (PQntuples(r) && !PQgetisnull(r, 0, 0))
		*out = json_loads(PQgetvalue(r, 0, 0), JSON_DECODE_ANY, &je);
	PQclear(r);
	if (!*out) {
		snprintf(err, errlen, "cannot parse a result of the database as JSON: %s", je.text);
		return PAL_EINVAL;
	}
	return PAL_OK;
}

int pal__store_query_i64(pal_store *st, const char *sql, int nparams, const char *const *params,
			 int64_t none, int64_t *out, char *err, size_t errlen)
{
	PGresult *r = pal__store_query(st, sql, nparams, params, err, errlen);
	if (!r)
		return PAL_EDB;
	*out = PQntuples(r) && !PQgetisnull(r, 0, 0) ? strtoll(PQgetvalue(r, 0, 0), NULL, 10) : none;
	PQclear(r);
	return PAL_OK;
}

int pal__store_whole_list(int rc, json_t **rows)
{
	size_t i;
	json_t *row;
	json_array_foreach(rc ? NULL : *rows, i, row) json_object_del(row, "_c");
	return rc;
}

int pal__store_exec(pal_store *st, const char *sql, char *err, size_t errlen)
{
	PGresult *r = pal__store_query(st, sql, 0, NULL, err, errlen);
	if (!r)
		return PAL_EDB;
	PQclear(r);
	return PAL_OK;
}

void pal__store_rollback(pal_store *st)
{
	PQclear(PQexec(st->conn, "ROLLBACK"));
}

int pal_store_audit(pal_store *st, const char *actor, const char *action, const char *scope,
		    const char *reason, const char *details_json, char *err, size_t errlen)
{
	const char *p[] = { actor, action, scope, reason, details_json };
	PGresult *r = pal__store_query(st,
				       "INSERT INTO audit_log (actor, action, scope, reason, details)"
				       " VALUES ($1, $2, $3, $4, $5::jsonb)",
				       5, p, err, errlen);
	if (!r)
		return PAL_EDB;
	PQclear(r);
	return PAL_OK;
}

int pal_store_ping(pal_store *st, char *err, size_t errlen)
{
	return pal__store_exec(st, "SELECT 1", err, errlen) ? PAL_EDB : PAL_OK;
}

static int set_ms(pal_store *st, const char *name, int64_t ms, char *err, size_t errlen)
{
	if (st->pooled)
		return PAL_OK; /* the pooler's bound applies (pal_store_open) */
	char v[32];
	snprintf(v, sizeof v, "%lld", (long long)(ms > 0 ? ms : 0));
	const char *p[] = { name, v };
	PGresult *r = pal__store_query(st, "SELECT set_config($1, $2, false)", 2, p, err, errlen);
	if (!r)
		return PAL_EDB;
	PQclear(r);
	return PAL_OK;
}

int pal_store_set_statement_timeout(pal_store *st, int64_t ms, char *err, size_t errlen)
{
	return set_ms(st, "statement_timeout", ms, err, errlen);
}

int pal_store_set_lock_timeout(pal_store *st, int64_t ms, char *err, size_t errlen)
{
	return set_ms(st, "lock_timeout", ms, err, errlen);
}

int pal_store_listen(pal_store *st, const char *channel, char *err, size_t errlen)
{
	if (pal__store_needs_session(st, "LISTEN", err, errlen))
		return PAL_EINVAL;
	char *id = PQescapeIdentifier(st->conn, channel, strlen(channel));
	if (!id) {
		pal__store_errmsg(st, NULL, "LISTEN failed", err, errlen);
		return PAL_EDB;
	}
	char sql[256];
	snprintf(sql, sizeof sql, "LISTEN %s", id);
	PQfreemem(id);
	return pal__store_exec(st, sql, err, errlen);
}

int pal_store_notifications(pal_store *st, pal_notify_fn fn, void *ctx, int *n, char *err,
			    size_t errlen)
{
	*n = 0;
	if (!PQconsumeInput(st->conn)) {
		pal__store_errmsg(st, NULL, "connection lost", err, errlen);
		return PAL_EDB;
	}
	PGnotify *nt;
	while ((nt = PQnotifies(st->conn))) {
		(*n)++;
		if (fn)
			fn(ctx, nt->relname, nt->extra ? nt->extra : "");
		PQfreemem(nt);
	}
	return PAL_OK;
}

int pal_store_db_clock_offsets(pal_store *st, int64_t *minus_mono_ms, int64_t *minus_wall_ms,
			       char *err, size_t errlen)
{
	int64_t m0 = pal_mono_ms(), w0 = pal_wall_ms();
	PGresult *r = pal__store_query(
		st, "SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint", 0, NULL, err,
		errlen);
	int64_t w1 = pal_wall_ms(), m1 = pal_mono_ms();
	if (!r)
		return PAL_EDB;
	int64_t db = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
	PQclear(r);
	*minus_mono_ms = db - (m0 + m1) / 2;
	*minus_wall_ms = db - (w0 + w1) / 2;
	return PAL_OK;
}

bool pal__store_cursor_ints(const char *cursor, int n, unsigned us_mask, long long *v)
{
	const char *p = cursor;
	for (int i = 0; i < n; i++) {
		char *end;
		if (!p || !(*p == '-' || (*p >= '0' && *p <= '9')))
			return false;
		errno = 0;
		v[i] = strtoll(p, &end, 10);
		if (errno || end == p || *end != (i + 1 < n ? '_' : '\0'))
			return false;
		bool us = us_mask & (1u << i);
		if (us && (v[i] > PAL__CURSOR_US_MAX || v[i] < -PAL__CURSOR_US_MAX))
			return false;
		p = end + 1;
	}
	return true;
}
