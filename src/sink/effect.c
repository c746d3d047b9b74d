/*
 * effect.c - the sink's transaction: check the fencing token and the
 * idempotency key atomically with the effect (G4, G5), and the status query
 * the executor uses after an unknown outcome (409 in_progress, never 404,
 * while an apply transaction for the key is open or a request for it is
 * in flight in this process).  A COMMIT whose answer was lost with the
 * connection is neither applied nor "not applied" (503): SINK_UNKNOWN.
 *
 * One apply request is one PostgreSQL transaction, in this order:
 *
 *   0. pg_try_advisory_xact_lock(hashtextextended(key)): false means another
 *      request for the key is in flight -> 409 in_progress.  This catches a
 *      duplicate of a key that has no row yet, where step 1 would find
 *      nothing to lock and step 3 would block on the other's insert.  Held,
 *      the key's rows from before sql/sink/006_keys.sql move into the new
 *      tables (sink_adopt(), one statement with the lock).
 *   1. SELECT ... FROM sink_keys WHERE idempotency_key = key FOR UPDATE
 *      NOWAIT (lock_not_available -> 409 in_progress): the key's fence (the
 *      highest token of a committed request) above our token means a newer
 *      attempt exists -> 409 stale, Palisade-Stale-Token.
 *   2. The same row: another payload digest (or chunk count) -> 422; the
 *      same payload and a chunk already applied -> replay the stored answer
 *      (the key's fence still moves, the transaction commits).
 *   3. otherwise insert (or advance) the key row, its fence with it, and
 *      append one sink_applies row per applied chunk, hold --delay-ms,
 *      COMMIT.
 *
 * A group (group.c) runs the same steps for its requests inside one call
 * of sink_apply_group() (sql/sink/functions/sink_apply_group.sql:
 * set-based for plain requests with distinct keys, else each request in a
 * subtransaction of its own), then one COMMIT: pal__sink_effect_group().
 * The refusals' answers are built by the same helpers on both paths.
 *
 * Every statement is prepared once per connection (sink_conn.prepared).
 * A pooled connection PostgreSQL dropped while idle (a server restart) is
 * reset and the request goes on, but only when its first statement failed,
 * that is before anything was done (ready()).
 * Threading: called from a request thread that owns the borrowed sink_conn
 * for the whole call; nothing here is shared.  Every PGresult is cleared on
 * every path before the function returns; the connection is left idle (a
 * failed transaction is rolled back, a broken connection is left for the
 * pool to close).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "palisade/log.h"
#include "sink_int.h"

#define SQLSTATE_LOCK_NOT_AVAILABLE "55P03"

enum stmt {
	S_KEY_LOCK,
	S_KEY_GET,
	S_KEY_SEEN,
	S_EFFECT_NEW,
	S_EFFECT_ADVANCE,
	S_EFFECT_QUERY,
	S_KEY_PEEK,
	S_GROUP,
	S_COUNT
};

static const struct {
	const char *name;
	const char *sql;
} stmts[S_COUNT] = {
    /* step 0, and the key's rows from before 006_keys.sql once it is held */
    [S_KEY_LOCK] = {"sink_key_lock",
		    "SELECT CASE WHEN pg_try_advisory_xact_lock(hashtextextended($1, 0)) "
		    "THEN sink_adopt(ARRAY[$1]) >= 0 ELSE false END"},
    [S_KEY_GET] = {"sink_key_get",
		   "SELECT highest, fence, status, body, encode(digest, 'hex'), chunks_done, "
		   "chunks_total FROM sink_keys WHERE idempotency_key = $1 FOR UPDATE NOWAIT"},
    /* a replay: $1 key $2 token */
    [S_KEY_SEEN] = {"sink_key_seen", "UPDATE sink_keys SET highest = greatest(highest, $2), "
				     "seen_at = clock_timestamp() WHERE idempotency_key = $1"},
    /* $1 key $2 token $3 digest $4 method $5 path $6 trigger $7 attempt
     * $8 scheduled_at $9 chunks_total; the status and body the sink
     * writes again (NULL) */
    [S_EFFECT_NEW] = {"sink_effect_new",
		      "WITH k AS (INSERT INTO sink_keys (fence, highest, digest, target, "
		      "trigger_id, attempt, scheduled_at, chunks_total, idempotency_key) "
		      "VALUES ($2, $2, decode($3, 'hex'), sink_target($4, $5), $6, $7, $8, $9, "
		      "$1) RETURNING id, fence) "
		      "INSERT INTO sink_applies (key_id, fence, chunk) SELECT id, fence, 1 FROM k"},
    /* $1 key $2 chunk $3 token $4 trigger $5 attempt */
    [S_EFFECT_ADVANCE] = {"sink_effect_advance",
			  "WITH k AS (UPDATE sink_keys SET chunks_done = $2, fence = $3, "
			  "highest = greatest(highest, $3), status = NULL, body = NULL, "
			  "trigger_id = $4, attempt = $5, seen_at = clock_timestamp(), "
			  "updated_at = clock_timestamp() "
			  "WHERE idempotency_key = $1 AND chunks_done = $2 - 1 "
			  "RETURNING id, chunks_done, fence) "
			  "INSERT INTO sink_applies (key_id, fence, chunk) "
			  "SELECT id, fence, chunks_done FROM k"},
    /* through the views, which show the keys not adopted yet as well */
    [S_EFFECT_QUERY] =
	{"sink_effect_query",
	 "SELECT e.fence, e.status, e.body, "
	 "to_char(e.applied_at AT TIME ZONE 'UTC', "
	 "'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'), "
	 "to_char(e.updated_at AT TIME ZONE 'UTC', "
	 "'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'), "
	 "e.chunks_done, e.chunks_total, e.method, e.path, e.trigger_id, e.attempt, "
	 "f.fence "
	 "FROM sink_effects e LEFT JOIN sink_fences f ON f.resource = e.idempotency_key "
	 "WHERE e.idempotency_key = $1"},
    /* the status query's view of step 0: false while an apply holds the key */
    [S_KEY_PEEK] = {"sink_key_peek",
		    "SELECT pg_try_advisory_xact_lock_shared(hashtextextended($1, 0))"},
    /* a group: every step above, inside sql/sink/functions/sink_apply_group.sql */
    [S_GROUP] = {"sink_group", "SELECT r_outcome, r_status, r_body, r_highest, r_done "
			       "FROM sink_apply_group($1::jsonb)"},
};

/* Outcome of one statement. */
typedef struct q {
	PGresult *r;	  /* non-NULL only on success; the caller clears it */
	char sqlstate[6]; /* on failure, "" when the connection failed */
} q;

static void log_db_error(PGconn *pg, const PGresult *r, const char *what)
{
	char msg[256];
	snprintf(msg, sizeof msg, "%s", r ? PQresultErrorMessage(r) : PQerrorMessage(pg));
	msg[strcspn(msg, "\n")] = '\0';
	const char *st = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
	pal_log(PAL_LOG_WARN, "sink.db_error", "{s:s, s:s, s:s}", "statement", what, "sqlstate",
		st ? st : "", "message", msg);
}

static int prepare_all(sink_conn *c)
{
	for (int i = 0; i < S_COUNT; i++) {
		PGresult *r = PQprepare(c->pg, stmts[i].name, stmts[i].sql, 0, NULL);
		bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
		if (!ok)
			log_db_error(c->pg, r, stmts[i].name);
		PQclear(r);
		if (!ok)
			return PAL_EDB;
	}
	c->prepared = true;
	return PAL_OK;
}

/* Run prepared statement S; returns true with Q->r set when its status is
 * WANT.  On failure nothing is left to clear; LOCK_NOT_AVAILABLE is expected
 * and not logged. */
static bool run(sink_conn *c, enum stmt s, int n, const char *const *params, ExecStatusType want,
		q *out)
{
	out->r = NULL;
	out->sqlstate[0] = '\0';
	PGresult *r = PQexecPrepared(c->pg, stmts[s].name, n, params, NULL, NULL, 0);
	if (PQresultStatus(r) == want) {
		out->r = r;
		return true;
	}
	const char *st = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
	snprintf(out->sqlstate, sizeof out->sqlstate, "%s", st ? st : "");
	if (strcmp(out->sqlstate, SQLSTATE_LOCK_NOT_AVAILABLE) != 0)
		log_db_error(c->pg, r, stmts[s].name);
	PQclear(r);
	return false;
}

/* Simple-protocol command without rows (BEGIN, COMMIT, ROLLBACK). */
static bool command(sink_conn *c, const char *sql)
{
	PGresult *r = PQexec(c->pg, sql);
	bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
	if (!ok)
		log_db_error(c->pg, r, sql);
	PQclear(r);
	return ok;
}

/* Make C ready for a request: on a connection PostgreSQL dropped while it
 * sat in the pool (a server restart) the first statement fails before
 * anything was done, so reconnecting once and going on is safe.  With
 * BEGIN set, also opens the transaction (that is the first statement);
 * without, the first statement is the caller's, which may commit, so a
 * dropped connection is found before it: the server's end of the socket
 * is closed, which reading what is there (without blocking) shows.
 * Returns false when that fails. */
static bool ready(sink_conn *c, bool begin)
{
	for (int tries = 0; tries < 2; tries++) {
		if (tries > 0) {
			if (PQstatus(c->pg) == CONNECTION_OK)
				return false; /* a real error, not a dropped connection */
			PQreset(c->pg);
			c->prepared = false;
			if (PQstatus(c->pg) != CONNECTION_OK)
				return false;
			pal_log(PAL_LOG_INFO, "sink.db_reconnected", NULL);
		}
		if (!begin && (!PQconsumeInput(c->pg) || PQstatus(c->pg) != CONNECTION_OK))
			continue;
		if (!c->prepared && prepare_all(c) != PAL_OK)
			continue;
		if (!begin || command(c, "BEGIN"))
			return true;
	}
	return false;
}

static void rollback(sink_conn *c)
{
	if (PQstatus(c->pg) == CONNECTION_OK && PQtransactionStatus(c->pg) != PQTRANS_IDLE)
		command(c, "ROLLBACK");
}

static void reply(sink_reply *out, sink_outcome o, unsigned status, char *body)
{
	out->outcome = o;
	out->status = status;
	out->body = body;
}

static void reply_db_error(sink_reply *out)
{
	reply(out, SINK_DB_ERROR, 503, pal__sink_body_error("db_unavailable", NULL));
}

/* After a COMMIT (or a call that commits) failed: PostgreSQL said no and
 * the session goes on - the transaction rolled back, "not applied" is the
 * truth (503) - or the connection is gone, and with it the word on the
 * COMMIT: it may have committed (SINK_UNKNOWN, answered by closing the
 * HTTP connection without an answer, the protocol's "unknown").  A server
 * error that arrives as the connection closes (a terminated backend) is
 * not a "no": the backend may have committed before it was told to go. */
static void reply_commit_failed(sink_conn *c, sink_reply *out)
{
	if (PQstatus(c->pg) == CONNECTION_OK && PQtransactionStatus(c->pg) == PQTRANS_IDLE) {
		reply_db_error(out);
		return;
	}
	reply(out, SINK_UNKNOWN, 0, NULL);
}

/* The refusals, shared by a request alone and a group. */
static void reply_in_progress(sink_reply *out)
{
	reply(out, SINK_IN_PROGRESS, 409, pal__sink_body_error("in_progress", NULL));
}

static void reply_stale(sink_reply *out, int64_t highest)
{
	out->highest = highest;
	reply(out, SINK_STALE, 409, pal__sink_body_error("stale_token", NULL));
}

static void reply_mismatch(sink_reply *out, bool same_digest)
{
	reply(out, SINK_MISMATCH, 422,
	      pal__sink_body_error("payload_mismatch",
				   same_digest ? "the chunk count differs" : NULL));
}

static void reply_bad_checkpoint(sink_reply *out, bool started)
{
	reply(out, SINK_BAD_CHECKPOINT, 400,
	      pal__sink_body_error("bad_checkpoint",
				   started ? "the checkpoint is ahead of the stored progress"
					   : "a checkpoint for an effect never started"));
}

/* Step 0: claim the key (and adopt its rows from before 006_keys.sql).
 * Returns true to go on; false when OUT holds the answer (the transaction
 * is still open). */
static bool claim(sink_conn *c, const sink_apply_req *rq, sink_reply *out)
{
	q res;
	const char *p1[] = {rq->key};
	if (!run(c, S_KEY_LOCK, 1, p1, PGRES_TUPLES_OK, &res)) {
		reply_db_error(out);
		return false;
	}
	bool got = PQgetvalue(res.r, 0, 0)[0] == 't';
	PQclear(res.r);
	if (!got)
		reply_in_progress(out);
	return got;
}

/* The answer for chunk K of a chunked effect, or of a plain one applied
 * with token FENCE. */
static char *body_for(const sink_apply_req *rq, int k, int64_t fence)
{
	return rq->chunks > 1 ? pal__sink_body_chunk(rq->key, k, rq->chunks)
			      : pal__sink_body_applied(rq->key, fence);
}

/* A replay of chunk rq->chunk, DONE chunks being stored, the last applied
 * with token FENCE: the last chunk's answer is the stored one (STATUS,
 * STORED: taken) where the row keeps one, else the one its apply wrote
 * (STATUS 0, STORED NULL), written again; earlier chunks' are written
 * again. */
static void reply_replay(sink_reply *out, const sink_apply_req *rq, int done, int64_t fence,
			 unsigned status, char *stored)
{
	if (rq->chunk != done || stored == NULL) {
		free(stored);
		stored = body_for(rq, rq->chunk, fence);
	}
	if (rq->chunk != done || status == 0)
		status = rq->chunks > 1 ? 200 : 201;
	reply(out, SINK_REPLAYED, status, stored);
}

/* Steps 1 to 3.  Returns true when the transaction should commit. */
static bool apply_or_replay(sink_conn *c, const sink_apply_req *rq, const char *tok,
			    sink_reply *out)
{
	q res;
	const char *p1[] = {rq->key};
	if (!run(c, S_KEY_GET, 1, p1, PGRES_TUPLES_OK, &res)) {
		if (strcmp(res.sqlstate, SQLSTATE_LOCK_NOT_AVAILABLE) == 0)
			reply_in_progress(out);
		else
			reply_db_error(out);
		return false;
	}
	bool found = PQntuples(res.r) > 0;
	if (found) {
		int64_t highest = strtoll(PQgetvalue(res.r, 0, 0), NULL, 10);
		int64_t fence = strtoll(PQgetvalue(res.r, 0, 1), NULL, 10);
		unsigned status = (unsigned)atoi(PQgetvalue(res.r, 0, 2)); /* NULL: 0 */
		bool same = strcmp(PQgetvalue(res.r, 0, 4), rq->digest) == 0;
		int done = atoi(PQgetvalue(res.r, 0, 5));
		int total = atoi(PQgetvalue(res.r, 0, 6));
		char *stored = PQgetisnull(res.r, 0, 3) ? NULL : strdup(PQgetvalue(res.r, 0, 3));
		PQclear(res.r);

		if (highest > rq->token) {
			free(stored);
			reply_stale(out, highest);
			return false;
		}
		if (!same || total != rq->chunks) {
			free(stored);
			reply_mismatch(out, same);
			return false;
		}
		if (rq->chunk <= done) {
			/* a replay commits: the key's fence moves */
			const char *p2[] = {rq->key, tok};
			if (!run(c, S_KEY_SEEN, 2, p2, PGRES_COMMAND_OK, &res)) {
				free(stored);
				reply_db_error(out);
				return false;
			}
			PQclear(res.r);
			reply_replay(out, rq, done, fence, status, stored);
			return true;
		}
		free(stored);
		if (rq->chunk > done + 1) {
			reply_bad_checkpoint(out, true);
			return false;
		}
	} else {
		PQclear(res.r);
		if (rq->chunk != 1) {
			reply_bad_checkpoint(out, false);
			return false;
		}
	}

	/* apply: chunk 1 creates the row, later chunks advance it */
	char *body = body_for(rq, rq->chunk, rq->token);
	if (body == NULL) {
		reply(out, SINK_DB_ERROR, 500, NULL);
		return false;
	}
	char chunk[16], total[16];
	snprintf(chunk, sizeof chunk, "%d", rq->chunk);
	snprintf(total, sizeof total, "%d", rq->chunks);
	bool ok;
	if (!found) {
		const char *p[] = {rq->key,	rq->digest,  rq->method,       rq->target,
				   rq->trigger, rq->attempt, rq->scheduled_at, total};
		const char *pp[] = {p[0], tok, p[1], p[2], p[3], p[4], p[5], p[6], p[7]};
		ok = run(c, S_EFFECT_NEW, 9, pp, PGRES_COMMAND_OK, &res);
	} else {
		const char *p[] = {rq->key, chunk, tok, rq->trigger, rq->attempt};
		ok = run(c, S_EFFECT_ADVANCE, 5, p, PGRES_COMMAND_OK, &res);
	}
	/* exactly one ledger row, or the effect row moved under us: never commit */
	if (ok && strcmp(PQcmdTuples(res.r), "1") != 0) {
		pal_log(PAL_LOG_ERROR, "sink.ledger_mismatch", "{s:s, s:s}", "key", rq->key, "rows",
			PQcmdTuples(res.r));
		ok = false;
	}
	PQclear(res.r);
	if (!ok) {
		free(body);
		reply_db_error(out);
		return false;
	}
	reply(out, SINK_APPLIED, rq->chunks > 1 ? 200 : 201, body);
	return true;
}

void pal__sink_effect_apply(sink_ctx *ctx, sink_conn *c, const sink_apply_req *rq, sink_reply *out)
{
	memset(out, 0, sizeof *out);
	char tok[24];
	snprintf(tok, sizeof tok, "%lld", (long long)rq->token);
	if (!ready(c, true)) {
		reply_db_error(out);
		return;
	}
	if (!claim(c, rq, out) || !apply_or_replay(c, rq, tok, out)) {
		rollback(c);
		return;
	}
	/* the injected slowness of the service, inside the transaction: a
	 * concurrent duplicate meanwhile sees 409 in_progress */
	pal__sink_sleep_ms(ctx, rq->delay_ms);
	if (!command(c, "COMMIT")) {
		free(out->body);
		memset(out, 0, sizeof *out);
		reply_commit_failed(c, out);
		rollback(c);
		return;
	}
	out->committed = true;
}

/* The group's requests as the JSON array sink_apply_group() reads, with
 * the answer each gets when applied (BODIES[i], malloc()ed, NULL on
 * ENOMEM).  Returns a malloc()ed text or NULL on ENOMEM. */
static char *group_json(const sink_apply_req *const *rqs, char **bodies, int n)
{
	json_t *a = json_array();
	bool ok = a != NULL;
	for (int i = 0; ok && i < n; i++) {
		const sink_apply_req *rq = rqs[i];
		bodies[i] = body_for(rq, rq->chunk, rq->token);
		json_t *o =
		    json_pack("{s:s, s:I, s:s, s:s, s:s, s:s?, s:s?, s:s?, s:i, s:i}", "k", rq->key,
			      "t", (json_int_t)rq->token, "d", rq->digest, "m", rq->method, "p",
			      rq->target, "tr", rq->trigger, "at", rq->attempt, "s",
			      rq->scheduled_at, "n", rq->chunks, "c", rq->chunk);
		ok = bodies[i] != NULL && o != NULL && json_array_append_new(a, o) == 0;
	}
	char *text = ok ? json_dumps(a, JSON_COMPACT) : NULL;
	json_decref(a);
	return text;
}

/* Every request of a group gets one answer when its call failed or its
 * rows cannot be trusted: 503 db_unavailable when nothing was sent
 * (SENT false) or PostgreSQL refused the call and the session goes on,
 * else SINK_UNKNOWN (reply_commit_failed()). */
static void group_failed(sink_conn *c, bool sent, sink_reply *outs, int n)
{
	for (int i = 0; i < n; i++) {
		free(outs[i].body);
		memset(&outs[i], 0, sizeof outs[i]);
		if (sent)
			reply_commit_failed(c, &outs[i]);
		else
			reply_db_error(&outs[i]);
	}
	rollback(c);
}

/* Row I of sink_apply_group()'s result into OUT; BODY (taken) is the
 * answer of an applied request. */
static void group_row(const PGresult *r, int i, const sink_apply_req *rq, char *body,
		      sink_reply *out)
{
	const char *o = PQgetvalue(r, i, 0);
	if (strcmp(o, "applied") == 0) {
		reply(out, SINK_APPLIED, rq->chunks > 1 ? 200 : 201, body);
		return;
	}
	if (strcmp(o, "replayed") == 0) {
		/* r_highest: the token that applied it */
		char *stored = PQgetisnull(r, i, 2) ? NULL : strdup(PQgetvalue(r, i, 2));
		reply_replay(out, rq, atoi(PQgetvalue(r, i, 4)),
			     strtoll(PQgetvalue(r, i, 3), NULL, 10),
			     (unsigned)atoi(PQgetvalue(r, i, 1)), stored);
	} else if (strcmp(o, "stale") == 0) {
		reply_stale(out, strtoll(PQgetvalue(r, i, 3), NULL, 10));
	} else if (strcmp(o, "in_progress") == 0) {
		reply_in_progress(out);
	} else if (strcmp(o, "mismatch") == 0) {
		reply_mismatch(out, atoi(PQgetvalue(r, i, 4)) == 1);
	} else if (strcmp(o, "ahead") == 0 || strcmp(o, "unstarted") == 0) {
		reply_bad_checkpoint(out, o[0] == 'a');
	} else {
		/* an SQL error inside the request's subtransaction: nothing of
		 * it is kept, and the other requests of the group go on */
		pal_log(PAL_LOG_WARN, "sink.db_error", "{s:s, s:s, s:s}", "statement",
			stmts[S_GROUP].name, "key", rq->key, "message", PQgetvalue(r, i, 2));
		reply_db_error(out);
	}
	free(body);
}

void pal__sink_effect_group(sink_conn *c, const sink_apply_req *const *rqs, sink_reply *outs, int n)
{
	memset(outs, 0, (size_t)n * sizeof *outs);
	char **bodies = calloc((size_t)n, sizeof *bodies);
	char *text = bodies ? group_json(rqs, bodies, n) : NULL;
	q res = {0};
	bool ok = text != NULL && ready(c, false);
	bool sent = ok;
	if (ok) {
		/* The call is a transaction of its own (no BEGIN, no COMMIT: two
		 * round trips fewer per group).  libpq returns its rows once the
		 * ReadyForQuery that follows its COMMIT arrived; a COMMIT that
		 * failed (a deferred constraint) is the result instead.  Only a
		 * connection still up and idle proves that ReadyForQuery came:
		 * lost on the way, the COMMIT's fate is unknown. */
		const char *p[] = {text};
		ok = run(c, S_GROUP, 1, p, PGRES_TUPLES_OK, &res);
		if (ok && (PQstatus(c->pg) != CONNECTION_OK ||
			   PQtransactionStatus(c->pg) != PQTRANS_IDLE)) {
			pal_log(PAL_LOG_WARN, "sink.db_error", "{s:s, s:s}", "statement",
				stmts[S_GROUP].name, "message",
				"connection lost before the COMMIT was confirmed");
			PQclear(res.r);
			res.r = NULL;
			ok = false;
		}
	}
	free(text);
	/* committed already: a short answer can only be "unknown" for all */
	bool short_answer = ok && PQntuples(res.r) != n;
	if (short_answer) {
		pal_log(PAL_LOG_ERROR, "sink.group_mismatch", "{s:i, s:i}", "requests", n, "rows",
			PQntuples(res.r));
		ok = false;
	}
	for (int i = 0; ok && i < n; i++) {
		group_row(res.r, i, rqs[i], bodies[i], &outs[i]);
		bodies[i] = NULL;
	}
	PQclear(res.r);
	for (int i = 0; bodies != NULL && i < n; i++)
		free(bodies[i]);
	free(bodies);
	/* every answer waited for the COMMIT: a 2xx only for a durable effect */
	if (short_answer) {
		for (int i = 0; i < n; i++) {
			free(outs[i].body);
			memset(&outs[i], 0, sizeof outs[i]);
			reply(&outs[i], SINK_UNKNOWN, 0, NULL);
		}
		return;
	}
	if (!ok) {
		group_failed(c, sent, outs, n);
		return;
	}
	for (int i = 0; i < n; i++)
		outs[i].committed =
		    outs[i].outcome == SINK_APPLIED || outs[i].outcome == SINK_REPLAYED;
}

void pal__sink_effect_query(sink_conn *c, const char *key, bool inflight, sink_reply *out)
{
	memset(out, 0, sizeof *out);
	if (!ready(c, true)) {
		reply_db_error(out);
		return;
	}
	/* The key's lock first, shared: while an apply transaction holds it
	 * (step 0) its effect may still commit, so "nothing committed" would
	 * be a guess.  Taken, it keeps applies out until this read is done,
	 * and the read below (a later statement, hence a later snapshot at
	 * READ COMMITTED) sees everything committed before it: the answer is
	 * exact.  Not taken: a complete record still answers 200; anything
	 * else is 409 in_progress.  INFLIGHT, a request of this process not
	 * in a transaction yet (paused, queued, waiting for a connection),
	 * counts as a lock not taken: it may commit after this read. */
	q res;
	const char *p[] = {key};
	if (!run(c, S_KEY_PEEK, 1, p, PGRES_TUPLES_OK, &res)) {
		rollback(c);
		reply_db_error(out);
		return;
	}
	bool free_key = PQgetvalue(res.r, 0, 0)[0] == 't';
	PQclear(res.r);
	bool ok = run(c, S_EFFECT_QUERY, 1, p, PGRES_TUPLES_OK, &res);
	rollback(c); /* read only: ends the transaction and releases the lock */
	if (!ok) {
		reply_db_error(out);
		return;
	}
	bool complete =
	    PQntuples(res.r) > 0 && atoi(PQgetvalue(res.r, 0, 5)) >= atoi(PQgetvalue(res.r, 0, 6));
	if ((!free_key || inflight) && !complete) {
		PQclear(res.r);
		reply_in_progress(out);
		return;
	}
	if (PQntuples(res.r) == 0) {
		PQclear(res.r);
		reply(out, SINK_APPLIED, 404, pal__sink_body_error("not_found", NULL));
		return;
	}
	PGresult *r = res.r;
#define V(i) (PQgetisnull(r, 0, (i)) ? NULL : PQgetvalue(r, 0, (i)))
#define I(i) (json_int_t) strtoll(PQgetvalue(r, 0, (i)), NULL, 10)
	int done = atoi(PQgetvalue(r, 0, 5)), total = atoi(PQgetvalue(r, 0, 6));
	/* no stored body: the one the apply answered, written again */
	char *again = V(2)	  ? NULL
		      : total > 1 ? pal__sink_body_chunk(key, done, total)
				  : pal__sink_body_applied(key, I(0));
	json_t *j = json_pack("{s:s, s:I, s:i, s:s?, s:s, s:s, s:{s:i, s:i}, s:s?, s:s?}", "key",
			      key, "fence", I(0), "status", atoi(PQgetvalue(r, 0, 1)), "body",
			      V(2) ? V(2) : again, "applied_at", PQgetvalue(r, 0, 3), "updated_at",
			      PQgetvalue(r, 0, 4), "progress", "done", done, "of", total, "method",
			      V(7), "path", V(8));
	if (j != NULL) {
		json_object_set_new(j, "trigger", V(9) ? json_integer(I(9)) : json_null());
		json_object_set_new(j, "attempt", V(10) ? json_integer(I(10)) : json_null());
		json_object_set_new(j, "highest_fence", V(11) ? json_integer(I(11)) : json_null());
		if (done < total) {
			/* a chunked effect still under way is not "applied" yet */
			json_object_set_new(j, "error", json_string("incomplete"));
		}
	}
#undef V
#undef I
	PQclear(r);
	free(again);
	char *body = j ? json_dumps(j, JSON_COMPACT) : NULL;
	unsigned status = done < total ? 404 : 200;
	json_decref(j);
	reply(out, SINK_APPLIED, status, body);
}
