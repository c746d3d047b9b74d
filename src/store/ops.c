/*
 * ops.c - the SQL of the operator actions (include/palisade/ops.h): gates
 * (pause, resume), cancel, manual runs, backfills, ticket resolution and the
 * trigger and ticket listings.  docs/schema.md (state machine), docs/operations.md (pause,
 * resume, cancel act through gates and conditional updates), G7.
 *
 * Flow: each action runs in one transaction (in_tx) at READ COMMITTED.  State
 * changes are conditional UPDATEs, one per source state, ordered along the
 * state machine's forward edges (paused, retry_wait, pending, running), so a
 * trigger that a concurrent executor moves forward between two statements is
 * caught by the later one, and a trigger it finishes is matched by none: the
 * executor's commit is never overwritten, and the BEFORE UPDATE guard of
 * sql/001_init.sql rejects any edge outside §5 anyway.  The audit_log row is
 * written in the same transaction.  A deadlock or serialisation failure
 * (40P01, 40001) retries the whole transaction up to three times.
 *
 * Gate changes first take LOCK gates IN ACCESS EXCLUSIVE MODE (with a lock
 * timeout): an executor claim that reads gates in its statement holds ACCESS
 * SHARE on gates until it commits, so a pause waits for claims in flight
 * (whose triggers it then sees running and asks to pause) and claims that
 * start later wait for the pause and see its gate.
 *
 * Backfill instants are computed here from the stored versions with
 * pal_schedule_* (the same code the controller plans with) so that a
 * ticket's backfill and its resolution share one transaction.
 *
 * Every query text is a fixed string; user input travels as parameters.
 * Every PGresult is cleared on every path.
 */
#include <fcntl.h>
#include <glib.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "palisade/ops.h"
#include "palisade/misfire.h"
#include "palisade/lifecycle.h"
#include "palisade/schedule.h"
#include "palisade/template.h"
#include "palisade/timefmt.h"
#include "store_int.h"

/* RFC 3339 UTC text of a timestamptz column (NULL stays NULL). */
#define TS(col) "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"

/* Triggers (alias T) in the scope of parameters $1 (kind: global, job,
 * group, tenant) and $2 (name).  A custom plan folds the CASE to one test. */
#define IN_SCOPE(t)                                                                               \
	"(CASE $1::text WHEN 'global' THEN true"                                                  \
	" WHEN 'job' THEN " t ".job_id = $2::text"                                                \
	" WHEN 'group' THEN " t ".resource_group = $2::text"                                      \
	" WHEN 'tenant' THEN " t ".tenant = $2::text END)"

/* Trigger (alias T) covered by some paused gate. */
#define GATED(t)                                                                                  \
	"EXISTS (SELECT 1 FROM gates g WHERE g.paused AND g.scope IN ('global',"                  \
	" 'job:' || " t ".job_id, 'group:' || " t ".resource_group, 'tenant:' || " t ".tenant))"

/* Selection of cancel: trigger $1, or job $2 (the other one NULL). */
#define CANCEL_SEL "($1::bigint IS NULL OR id = $1::bigint) AND ($2::text IS NULL OR job_id = $2::text)"

#define LOCK_TIMEOUT "10s"

/* ---- helpers ----------------------------------------------------------------- */

static void i64s(char *buf, size_t len, int64_t v)
{
	snprintf(buf, len, "%" PRId64, v);
}

static int64_t val_i64(const PGresult *r, int row, int col)
{
	return strtoll(PQgetvalue(r, row, col), NULL, 10);
}

/* Run a statement that returns no rows we need; *n receives its row count
 * when N is not NULL. */
static int exec_n(pal_store *st, const char *sql, int np, const char *const *p, int64_t *n,
		  char *err, size_t errlen)
{
	PGresult *r = pal__store_query(st, sql, np, p, err, errlen);
	if (!r)
		return PAL_EDB;
	if (n)
		*n = strtoll(PQcmdTuples(r), NULL, 10);
	PQclear(r);
	return PAL_OK;
}

/* One int64 from a single-row, single-column query. */
static int query_i64(pal_store *st, const char *sql, int np, const char *const *p, int64_t *out,
		     char *err, size_t errlen)
{
	PGresult *r = pal__store_query(st, sql, np, p, err, errlen);
	if (!r)
		return PAL_EDB;
	*out = PQntuples(r) && !PQgetisnull(r, 0, 0) ? val_i64(r, 0, 0) : 0;
	PQclear(r);
	return PAL_OK;
}

/* A query returning one JSON text value, parsed into *out (json_decref):
 * the store's one helper (conn.c). */
static int query_json(pal_store *st, const char *sql, int np, const char *const *p, json_t **out,
		      char *err, size_t errlen)
{
	return pal__store_query_json(st, sql, np, p, out, err, errlen);
}

typedef int (*tx_body)(pal_store *st, void *ctx, char *err, size_t errlen);

/*
 * Run BODY inside BEGIN ... COMMIT.  BODY returns 0 to commit, or an error
 * (the transaction is rolled back).  A deadlock or serialisation failure is
 * retried up to three times; BODY must therefore reset its results first.
 */
static int in_tx(pal_store *st, tx_body body, void *ctx, char *err, size_t errlen)
{
	for (int attempt = 1;; attempt++) {
		if (pal__store_exec(st, "BEGIN", err, errlen))
			return PAL_EDB;
		int rc = body(st, ctx, err, errlen);
		if (!rc && pal__store_exec(st, "COMMIT", err, errlen))
			rc = PAL_EDB;
		if (!rc)
			return PAL_OK;
		bool retry = rc == PAL_EDB && (!strcmp(st->sqlstate, "40P01") ||
					       !strcmp(st->sqlstate, "40001"));
		pal__store_rollback(st);
		if (!retry || attempt >= 3)
			return rc;
	}
}

/* Serialise gate changes with claims (see the file comment). */
static int lock_gates(pal_store *st, char *err, size_t errlen)
{
	if (pal__store_exec(st, "SET LOCAL lock_timeout = '" LOCK_TIMEOUT "'", err, errlen))
		return PAL_EDB;
	if (pal__store_exec(st, "LOCK TABLE gates IN ACCESS EXCLUSIVE MODE", err, errlen)) {
		if (pal_store_lock_timeout(st)) {
			snprintf(err, errlen,
				 "cannot lock the gates table within " LOCK_TIMEOUT
				 ": another transaction holds it; hint: retry, and look for "
				 "long or idle-in-transaction sessions in pg_stat_activity");
			return PAL_EBUSY;
		}
		return PAL_EDB;
	}
	return PAL_OK;
}

static const char *scope_kind(pal_scope_kind k)
{
	static const char *const names[] = { "global", "job", "group", "tenant" };
	return names[k];
}

void pal_scope_format(const pal_scope *sc, char *buf, size_t len)
{
	if (sc->kind == PAL_SCOPE_GLOBAL)
		snprintf(buf, len, "global");
	else
		snprintf(buf, len, "%s:%s", scope_kind(sc->kind), sc->name ? sc->name : "");
}

static int job_exists(pal_store *st, const char *job_id, char *err, size_t errlen)
{
	const char *p[] = { job_id };
	int64_t n;
	if (query_i64(st, "SELECT count(*) FROM jobs WHERE job_id = $1", 1, p, &n, err, errlen))
		return PAL_EDB;
	if (!n) {
		snprintf(err, errlen, "no job \"%s\"; hint: `palisade jobs` lists the jobs", job_id);
		return PAL_ENOENT;
	}
	return PAL_OK;
}

static int notify(pal_store *st, const char *channel_sql, int np, const char *const *p, char *err,
		  size_t errlen)
{
	return exec_n(st, channel_sql, np, p, NULL, err, errlen);
}

/* ---- pause -------------------------------------------------------------------- */

typedef struct gate_ctx {
	const pal_scope *sc;
	const char *actor, *reason;
	char scope[300];
	void *res;
	/* "operator" (pause, resume), or "spec" for the gate of a job file's
	 * `suspend` (lifecycle.h): it closes no gate that exists and lifts
	 * only a gate of its own source */
	const char *source;
	const pal_resume_opts *opts; /* resume only */
} gate_ctx;

static int pause_body(pal_store *st, void *vctx, char *err, size_t errlen)
{
	gate_ctx *c = vctx;
	pal_pause_result *res = c->res;
	memset(res, 0, sizeof *res);
	int rc = lock_gates(st, err, errlen);
	if (rc)
		return rc;
	if (c->sc->kind == PAL_SCOPE_JOB && (rc = job_exists(st, c->sc->name, err, errlen)))
		return rc;

	const char *ps[] = { c->scope };
	PGresult *r = pal__store_query(st, "SELECT paused, reason FROM gates WHERE scope = $1", 1, ps,
				       err, errlen);
	if (!r)
		return PAL_EDB;
	if (PQntuples(r) && !strcmp(PQgetvalue(r, 0, 0), "t")) {
		res->was_paused = true;
		snprintf(res->prev_reason, sizeof res->prev_reason, "%s", PQgetvalue(r, 0, 1));
	}
	PQclear(r);
	if (res->was_paused && !strcmp(c->source, "spec"))
		return PAL_OK; /* a gate is closed already: the job file changes nothing */

	const char *pg[] = { c->scope, c->reason, c->actor, c->source };
	/* An operator's pause over a job file's gate makes it the operator's. */
	r = pal__store_query(
		st,
		"INSERT INTO gates (scope, paused, reason, actor, since, source)"
		" VALUES ($1, true, $2, $3, clock_timestamp(), $4)"
		" ON CONFLICT (scope) DO UPDATE SET paused = true, reason = EXCLUDED.reason,"
		"  actor = EXCLUDED.actor, source = EXCLUDED.source,"
		"  since = CASE WHEN gates.paused THEN gates.since ELSE EXCLUDED.since END"
		" RETURNING " TS("since"),
		4, pg, err, errlen);
	if (!r)
		return PAL_EDB;
	snprintf(res->since, sizeof res->since, "%s", PQgetvalue(r, 0, 0));
	PQclear(r);

	const char *pk[] = { scope_kind(c->sc->kind), c->sc->name };
	/* Only 'running' is asked: pending and retry_wait wait at the claim. */
	if ((rc = exec_n(st,
			 "UPDATE triggers t SET state = 'pausing'"
			 " WHERE t.state = 'running' AND " IN_SCOPE("t"),
			 2, pk, &res->asked, err, errlen)))
		return rc;
	if ((rc = query_i64(st,
			    "SELECT count(*) FROM triggers t"
			    " WHERE t.state IN ('pending', 'retry_wait') AND " IN_SCOPE("t"),
			    2, pk, &res->held, err, errlen)))
		return rc;
	if ((rc = query_i64(st, "SELECT count(*) FROM jobs t WHERE " IN_SCOPE("t"), 2, pk, &res->jobs,
			    err, errlen)))
		return rc;

	char asked[24], held[24];
	i64s(asked, sizeof asked, res->asked);
	i64s(held, sizeof held, res->held);
	const char *pa[] = { c->actor,	c->scope, c->reason, asked,
			     held,	res->was_paused ? "true" : "false",
			     res->was_paused ? res->prev_reason : NULL, c->source };
	if ((rc = exec_n(st,
			 "INSERT INTO audit_log (actor, action, scope, reason, details)"
			 " VALUES ($1, 'pause', $2, $3, jsonb_build_object("
			 "  'running_to_pausing', $4::bigint, 'pending_held', $5::bigint,"
			 "  'was_paused', $6::boolean, 'previous_reason', $7::text, 'source', $8::text))",
			 8, pa, NULL, err, errlen)))
		return rc;
	return notify(st,
		      "SELECT pg_notify('palisade_ops',"
		      " json_build_object('action', 'pause', 'scope', $1::text)::text)",
		      1, ps, err, errlen);
}

int pal_ops_pause(pal_store *st, const pal_scope *sc, const char *actor, const char *reason,
		  pal_pause_result *res, char *err, size_t errlen)
{
	gate_ctx c = { .sc = sc, .actor = actor, .reason = reason, .res = res, .source = "operator" };
	pal_scope_format(sc, c.scope, sizeof c.scope);
	return in_tx(st, pause_body, &c, err, errlen);
}

/* ---- resume ------------------------------------------------------------------- */

/* A scheduled instant the gate held (alias T): pending, never attempted, no
 * checkpoint, older than the threshold $3 (ms), in the scope ($1, $2), no
 * other paused gate over it.  A trigger paused at its safe point (it ran)
 * and manual runs and backfills (deliberate) never match. */
#define HELD(t)                                                                                   \
	t ".state = 'pending' AND " t ".source IN ('schedule', 'catchup')"                        \
	" AND " t ".attempt_count = 0 AND " t ".checkpoint IS NULL"                               \
	" AND " t ".scheduled_at <= now() - $3::bigint * interval '1 millisecond'"                \
	" AND " IN_SCOPE(t) " AND NOT " GATED(t)

static int policy_index(const char *name)
{
	for (int i = 0; i < 4; i++)
		if (!strcmp(name, pal_misfire_policy_names[i]))
			return i;
	return -1;
}

/*
 * The instants the gate held past the threshold, through each job's
 * misfire policy: pal_misfire_decide() (the planner's split of a missed
 * run) on the held instants of each job, with the policy of the version of
 * its newest one.  The oldest instants it does not fire become 'skipped',
 * with one misfire row per job (reason 'paused', gate = the resumed scope,
 * the shard and planning epoch of the skipped triggers) and, for manual, a
 * ticket.  Counts into c->res (misfired, tickets).
 */
static int resume_held(pal_store *st, gate_ctx *c, const char *const *pk, char *err,
		       size_t errlen)
{
	pal_resume_result *res = c->res;
	char thr[24];
	i64s(thr, sizeof thr, c->opts->misfire_threshold_ms);
	const char *p[] = { pk[0], pk[1], thr };
	PGresult *r = pal__store_query(
		st,
		"WITH h AS (SELECT t.job_id, t.version, t.scheduled_at FROM triggers t"
		"   WHERE " HELD("t") "),"
		" l AS (SELECT DISTINCT ON (h.job_id) h.job_id, h.version FROM h"
		"   ORDER BY h.job_id, h.scheduled_at DESC)"
		" SELECT l.job_id, v.misfire_policy, v.max_catchup, count(DISTINCT h.scheduled_at),"
		"  count(DISTINCT h.scheduled_at) FILTER (WHERE h.scheduled_at"
		"   < now() - v.catchup_window_ms * interval '1 millisecond')"
		" FROM l JOIN job_versions v ON v.job_id = l.job_id AND v.version = l.version"
		" JOIN h ON h.job_id = l.job_id"
		" GROUP BY l.job_id, v.misfire_policy, v.max_catchup",
		3, p, err, errlen);
	if (!r)
		return PAL_EDB;
	pal_pgarr jobs, fire, pols;
	pal__pgarr_init(&jobs);
	pal__pgarr_init(&fire);
	pal__pgarr_init(&pols);
	int skipping = 0;
	for (int i = 0; i < PQntuples(r); i++) {
		int pol = policy_index(PQgetvalue(r, i, 1));
		if (pol < 0)
			continue; /* the column's CHECK allows no other */
		int64_t n = val_i64(r, i, 3);
		pal_misfire_split sp = pal_misfire_decide((pal_misfire_policy)pol, n,
							  val_i64(r, i, 4), val_i64(r, i, 2));
		if (sp.fire == n)
			continue;
		pal__pgarr_text(&jobs, PQgetvalue(r, i, 0));
		pal__pgarr_i64(&fire, sp.fire);
		pal__pgarr_text(&pols, PQgetvalue(r, i, 1));
		skipping++;
	}
	PQclear(r);
	char *aj = pal__pgarr_end(&jobs), *af = pal__pgarr_end(&fire), *ap = pal__pgarr_end(&pols);
	int rc = PAL_OK;
	if (skipping) {
		const char *ps[] = { pk[0], pk[1], thr, aj, af, ap, c->scope };
		r = pal__store_query(
			st,
			"WITH k AS (SELECT * FROM unnest($4::text[], $5::bigint[], $6::text[])"
			"   AS k(job_id, fire, policy)),"
			" d AS (SELECT DISTINCT t.job_id, t.scheduled_at FROM triggers t"
			"   JOIN k ON k.job_id = t.job_id WHERE " HELD("t") "),"
			" cut AS (SELECT d.job_id, d.scheduled_at FROM (SELECT d.*, row_number()"
			"   OVER (PARTITION BY d.job_id ORDER BY d.scheduled_at DESC) AS rn FROM d) d"
			"   JOIN k ON k.job_id = d.job_id WHERE d.rn > k.fire),"
			" sk AS (UPDATE triggers t SET state = 'skipped',"
			"   finished_at = clock_timestamp(), last_error_class = 'paused' FROM cut"
			"   WHERE t.job_id = cut.job_id AND t.scheduled_at = cut.scheduled_at"
			"   AND " HELD("t") " RETURNING t.job_id, t.version, t.scheduled_at, t.shard,"
			"   t.epoch),"
			" m AS (INSERT INTO misfires (job_id, version, range_from, range_to, count,"
			"   policy, reason, shard, epoch, gate)"
			"   SELECT sk.job_id, max(sk.version), min(sk.scheduled_at),"
			"    max(sk.scheduled_at), count(DISTINCT sk.scheduled_at), k.policy, 'paused',"
			"    min(sk.shard), max(sk.epoch), $7 FROM sk JOIN k ON k.job_id = sk.job_id"
			"   GROUP BY sk.job_id, k.policy"
			"   RETURNING job_id, version, range_from, range_to, count, policy, epoch),"
			" tk AS (INSERT INTO tickets (job_id, reason, evidence, allowed_actions)"
			"   SELECT m.job_id, 'misfire: ' || m.count || ' instants held by the pause of '"
			"    || $7 || ' (policy manual)', jsonb_build_object('version', m.version,"
			"    'range_from', m.range_from, 'range_to', m.range_to, 'count', m.count,"
			"    'epoch', m.epoch, 'gate', $7::text), ARRAY['backfill', 'abandon']"
			"   FROM m WHERE m.policy = 'manual' RETURNING 1)"
			" SELECT m.policy, sum(m.count)::bigint, (SELECT count(*) FROM tk) FROM m"
			" GROUP BY m.policy",
			7, ps, err, errlen);
		if (!r) {
			rc = PAL_EDB;
		} else {
			for (int i = 0; i < PQntuples(r); i++) {
				int pol = policy_index(PQgetvalue(r, i, 0));
				if (pol >= 0)
					res->misfired[pol] += val_i64(r, i, 1);
				res->tickets = val_i64(r, i, 2);
			}
			PQclear(r);
		}
	}
	g_free(aj);
	g_free(af);
	g_free(ap);
	return rc;
}

/*
 * The scope's triggers ready to run now that no gate holds them, counted
 * by policy into c->res->released.  With a ramp of D = $3 ms the k-th of n
 * (oldest instant first) becomes ready t_k after now, where r0 t + a t^2
 * have been released by t: a start rate r0 of a tenth of the even rate
 * n / D (at least one a second) rising linearly, the last released before
 * D (when n <= r0 D, at r0 throughout).  Written as next_attempt_at, which
 * the claim filters and orders by (coalesce(next_attempt_at, due_at)) and
 * whose time the executor waits for: the ramp is data, honoured by
 * whichever executor claims, across restarts and takeovers.
 */
static int resume_release(pal_store *st, gate_ctx *c, const char *const *pk, char *err,
			  size_t errlen)
{
	pal_resume_result *res = c->res;
	char ramp[24];
	i64s(ramp, sizeof ramp, c->opts->ramp_ms);
	const char *p[] = { pk[0], pk[1], ramp };
	PGresult *r = pal__store_query(
		st,
		"WITH r AS (SELECT t.id, t.scheduled_at, v.misfire_policy AS policy,"
		"   row_number() OVER (ORDER BY t.scheduled_at, t.id) - 1 AS k, count(*) OVER () AS n"
		"  FROM triggers t JOIN job_versions v ON v.job_id = t.job_id AND v.version = t.version"
		"  WHERE t.state IN ('pending', 'retry_wait')"
		"   AND coalesce(t.next_attempt_at, t.due_at) <= clock_timestamp()"
		"   AND " IN_SCOPE("t") " AND NOT " GATED("t") "),"
		" q AS (SELECT clock_timestamp() AS t0, $3::double precision / 1000 AS d,"
		"   greatest(1, (SELECT max(n) FROM r) / ($3::double precision / 1000) / 10) AS r0),"
		" o AS (SELECT r.id, r.scheduled_at, q.t0 + make_interval(secs => CASE"
		"   WHEN r.n <= q.r0 * q.d THEN r.k / q.r0"
		"   ELSE (sqrt(q.r0 * q.r0 + 4 * ((r.n - q.r0 * q.d) / (q.d * q.d)) * r.k) - q.r0)"
		"    / (2 * ((r.n - q.r0 * q.d) / (q.d * q.d))) END) AS ready"
		"   FROM r, q WHERE $3::bigint > 0),"
		" u AS (UPDATE triggers t SET next_attempt_at = o.ready FROM o"
		"   WHERE t.id = o.id AND t.scheduled_at = o.scheduled_at"
		"    AND t.state IN ('pending', 'retry_wait') RETURNING o.ready)"
		" SELECT r.policy, count(*), (SELECT " TS("max(u.ready)") " FROM u) FROM r"
		" GROUP BY r.policy",
		3, p, err, errlen);
	if (!r)
		return PAL_EDB;
	for (int i = 0; i < PQntuples(r); i++) {
		int pol = policy_index(PQgetvalue(r, i, 0));
		if (pol >= 0)
			res->released[pol] = val_i64(r, i, 1);
		if (!PQgetisnull(r, i, 2))
			snprintf(res->ramp_until, sizeof res->ramp_until, "%s", PQgetvalue(r, i, 2));
	}
	PQclear(r);
	return PAL_OK;
}

/* {"fire_all": n, ...} of the policies with a count (json_decref). */
static json_t *by_policy(const int64_t *n)
{
	json_t *o = json_object();
	for (int i = 0; i < 4; i++)
		if (n[i])
			json_object_set_new(o, pal_misfire_policy_names[i], json_integer(n[i]));
	return o;
}

/* by_policy() as JSON text (g_free). */
static char *by_policy_text(const int64_t *n)
{
	json_t *o = by_policy(n);
	char *s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	char *g = g_strdup(s ? s : "{}");
	free(s);
	return g;
}

json_t *pal_resume_result_json(const char *scope, const pal_resume_result *r)
{
	return json_pack("{s:s, s:b, s:I, s:I, s:I, s:I, s:I, s:o, s:o, s:I, s:I, s:I, s:s?}",
			 "scope", scope, "had_gate", r->had_gate, "paused_to_pending",
			 (json_int_t)r->resumed, "pausing_to_running", (json_int_t)r->continued,
			 "still_gated", (json_int_t)r->still_gated, "still_pausing",
			 (json_int_t)r->pausing, "expired_pausing_to_paused", (json_int_t)r->expired,
			 "released", by_policy(r->released), "misfired", by_policy(r->misfired),
			 "tickets", (json_int_t)r->tickets, "misfire_threshold_ms",
			 (json_int_t)r->misfire_threshold_ms, "ramp_ms", (json_int_t)r->ramp_ms,
			 "ramp_until", *r->ramp_until ? r->ramp_until : NULL);
}

static int resume_body(pal_store *st, void *vctx, char *err, size_t errlen)
{
	gate_ctx *c = vctx;
	pal_resume_result *res = c->res;
	memset(res, 0, sizeof *res);
	res->misfire_threshold_ms = c->opts->misfire_threshold_ms;
	res->ramp_ms = c->opts->ramp_ms;
	int rc = lock_gates(st, err, errlen);
	if (rc)
		return rc;
	if (c->sc->kind == PAL_SCOPE_JOB && (rc = job_exists(st, c->sc->name, err, errlen)))
		return rc;
	const char *ps[] = { c->scope };
	int64_t n;
	/* The gate row is deleted (not kept with paused = false): the audit log
	 * keeps the history, and a claim's gate test stays one EXISTS. */
	const char *pd[] = { c->scope, c->source };
	if ((rc = exec_n(st, "DELETE FROM gates WHERE scope = $1 AND ($2 = 'operator' OR source = $2)",
			 2, pd, &n, err, errlen)))
		return rc;
	res->had_gate = n > 0;
	if (!res->had_gate && !strcmp(c->source, "spec"))
		return PAL_OK; /* the gate is an operator's (or gone): the job file lifts nothing */

	const char *pk[] = { scope_kind(c->sc->kind), c->sc->name };
	/* What the gate held past the threshold goes through the misfire
	 * policies first, before the moves below make more triggers pending
	 * (only never-attempted instants qualify anyway); a scope without a
	 * gate held nothing. */
	if (res->had_gate && (rc = resume_held(st, c, pk, err, errlen)))
		return rc;
	/* A pausing trigger whose lease expired lost its executor before the
	 * safe point: nobody else would ever move it, so it is paused here
	 * (its holder, if alive, is fenced by the state from then on). */
	if ((rc = exec_n(st,
			 "UPDATE triggers t SET state = 'paused', lease_owner = NULL, lease_until = NULL"
			 " WHERE t.state = 'pausing' AND t.lease_until < clock_timestamp() AND "
			 IN_SCOPE("t"),
			 2, pk, &res->expired, err, errlen)))
		return rc;
	/* A live pausing trigger whose pause no gate asks for any more goes back
	 * to running (edge of sql/004): its executor keeps lease and token and
	 * carries on.  Left pausing, it would reach 'paused' at its safe point
	 * after this resume and stay there until the next one.  A lease that
	 * expired since the statement above leaves a running trigger with an
	 * expired lease, which the next claim retakes (from its checkpoint).
	 * This runs before the paused -> pending sweep: a trigger its executor
	 * pauses meanwhile is then caught by the sweep's fresh snapshot. */
	if ((rc = exec_n(st,
			 "UPDATE triggers t SET state = 'running'"
			 " WHERE t.state = 'pausing' AND " IN_SCOPE("t") " AND NOT " GATED("t"),
			 2, pk, &res->continued, err, errlen)))
		return rc;
	if ((rc = exec_n(st,
			 "UPDATE triggers t SET state = 'pending', lease_owner = NULL,"
			 " lease_until = NULL, next_attempt_at = NULL"
			 " WHERE t.state = 'paused' AND " IN_SCOPE("t") " AND NOT " GATED("t"),
			 2, pk, &res->resumed, err, errlen)))
		return rc;
	if (res->had_gate && (rc = resume_release(st, c, pk, err, errlen)))
		return rc;
	if ((rc = query_i64(st,
			    "SELECT count(*) FROM triggers t WHERE t.state = 'paused' AND " IN_SCOPE("t"),
			    2, pk, &res->still_gated, err, errlen)))
		return rc;
	if ((rc = query_i64(st,
			    "SELECT count(*) FROM triggers t WHERE t.state = 'pausing' AND " IN_SCOPE("t"),
			    2, pk, &res->pausing, err, errlen)))
		return rc;

	char resumed[24], gated[24], pausing[24], expired[24], running[24], thr[24], ramp[24],
		tickets[24];
	i64s(resumed, sizeof resumed, res->resumed);
	i64s(gated, sizeof gated, res->still_gated);
	i64s(pausing, sizeof pausing, res->pausing);
	i64s(expired, sizeof expired, res->expired);
	i64s(running, sizeof running, res->continued);
	i64s(thr, sizeof thr, c->opts->misfire_threshold_ms);
	i64s(ramp, sizeof ramp, c->opts->ramp_ms);
	i64s(tickets, sizeof tickets, res->tickets);
	char *rel = by_policy_text(res->released), *mis = by_policy_text(res->misfired);
	const char *pa[] = { c->actor, c->scope, c->reason, resumed, gated, pausing,
			     res->had_gate ? "true" : "false", expired, running, c->source,
			     rel, mis, tickets, thr, ramp };
	rc = exec_n(st,
		    "INSERT INTO audit_log (actor, action, scope, reason, details)"
		    " VALUES ($1, 'resume', $2, $3, jsonb_build_object("
		    "  'paused_to_pending', $4::bigint, 'still_gated', $5::bigint,"
		    "  'still_pausing', $6::bigint, 'had_gate', $7::boolean,"
		    "  'expired_pausing_to_paused', $8::bigint, 'pausing_to_running', $9::bigint,"
		    "  'source', $10::text, 'released', $11::jsonb, 'misfired', $12::jsonb,"
		    "  'tickets', $13::bigint, 'misfire_threshold_ms', $14::bigint,"
		    "  'ramp_ms', $15::bigint))",
		    15, pa, NULL, err, errlen);
	g_free(rel);
	g_free(mis);
	if (rc)
		return rc;
	if ((rc = notify(st,
			 "SELECT pg_notify('palisade_ops',"
			 " json_build_object('action', 'resume', 'scope', $1::text)::text)",
			 1, ps, err, errlen)))
		return rc;
	int64_t released = 0;
	for (int i = 0; i < 4; i++)
		released += res->released[i];
	return res->resumed || released ? notify(st, "NOTIFY palisade_triggers", 0, NULL, err, errlen)
					: PAL_OK;
}

int pal_ops_resume(pal_store *st, const pal_scope *sc, const char *actor, const char *reason,
		   const pal_resume_opts *opts, pal_resume_result *res, char *err, size_t errlen)
{
	gate_ctx c = { .sc = sc, .actor = actor, .reason = reason ? reason : "", .res = res,
		       .source = "operator", .opts = opts };
	pal_scope_format(sc, c.scope, sizeof c.scope);
	return in_tx(st, resume_body, &c, err, errlen);
}

int pal_ops_suspend(pal_store *st, const char *job_id, const char *actor, const char *reason,
		    pal_pause_result *res, char *err, size_t errlen)
{
	pal_scope sc = { PAL_SCOPE_JOB, job_id };
	gate_ctx c = { .sc = &sc, .actor = actor, .reason = reason, .res = res, .source = "spec" };
	pal_scope_format(&sc, c.scope, sizeof c.scope);
	return pause_body(st, &c, err, errlen); /* in the caller's transaction */
}

int pal_ops_unsuspend(pal_store *st, const char *job_id, const char *actor, const char *reason,
		      const pal_resume_opts *opts, pal_resume_result *res, char *err,
		      size_t errlen)
{
	pal_scope sc = { PAL_SCOPE_JOB, job_id };
	gate_ctx c = { .sc = &sc, .actor = actor, .reason = reason ? reason : "", .res = res,
		       .source = "spec", .opts = opts };
	pal_scope_format(&sc, c.scope, sizeof c.scope);
	return resume_body(st, &c, err, errlen); /* in the caller's transaction */
}

/* ---- cancel ------------------------------------------------------------------- */

typedef struct cancel_ctx {
	int64_t trigger_id;
	const char *job_id, *actor, *reason;
	pal_cancel_result *res;
} cancel_ctx;

void pal_cancel_result_clear(pal_cancel_result *r)
{
	json_decref(r->left);
	r->left = NULL;
}

static bool terminal(const char *state)
{
	return !strcmp(state, "succeeded") || !strcmp(state, "failed") ||
	       !strcmp(state, "cancelled") || !strcmp(state, "skipped");
}

static int cancel_body(pal_store *st, void *vctx, char *err, size_t errlen)
{
	cancel_ctx *c = vctx;
	pal_cancel_result *res = c->res;
	pal_cancel_result_clear(res);
	memset(res, 0, sizeof *res);
	char tid[24] = "";
	if (c->trigger_id)
		i64s(tid, sizeof tid, c->trigger_id);
	const char *p[] = { c->trigger_id ? tid : NULL, c->trigger_id ? NULL : c->job_id };
	int rc;
	char from[16] = "";
	if (c->trigger_id) {
		PGresult *r = pal__store_query(st, "SELECT job_id, state FROM triggers WHERE id = $1",
					       1, p, err, errlen);
		if (!r)
			return PAL_EDB;
		if (!PQntuples(r)) {
			PQclear(r);
			snprintf(err, errlen, "no trigger %s; hint: `palisade triggers --job JOB` lists them",
				 tid);
			return PAL_ENOENT;
		}
		snprintf(res->job_id, sizeof res->job_id, "%s", PQgetvalue(r, 0, 0));
		snprintf(from, sizeof from, "%s", PQgetvalue(r, 0, 1));
		PQclear(r);
	} else if ((rc = job_exists(st, c->job_id, err, errlen))) {
		return rc;
	}

	/* Forward order along the state machine: a trigger moved by an executor
	 * between two statements is caught by a later one.  A few passes catch
	 * one moved backwards (running -> retry_wait) meanwhile. */
	for (int pass = 0; pass < 5; pass++) {
		/* Lease expired before the executor reached its safe point: finish
		 * the step for it (legal edges; its holder is fenced by state). */
		int64_t n;
		if ((rc = exec_n(st,
				 "UPDATE triggers SET state = 'paused', lease_owner = NULL,"
				 " lease_until = NULL WHERE " CANCEL_SEL " AND state = 'pausing'"
				 " AND lease_until < clock_timestamp()",
				 2, p, NULL, err, errlen)))
			return rc;
		if ((rc = exec_n(st,
				 "UPDATE triggers SET state = 'cancelled', finished_at = clock_timestamp(),"
				 " lease_owner = NULL, lease_until = NULL WHERE " CANCEL_SEL
				 " AND state = 'cancelling' AND lease_until < clock_timestamp()",
				 2, p, &n, err, errlen)))
			return rc;
		res->expired += n;
		static const char *const from_states[] = { "paused", "retry_wait", "pending" };
		int64_t *counts[] = { &res->from_paused, &res->from_retry_wait, &res->from_pending };
		for (int i = 0; i < 3; i++) {
			const char *pc[] = { p[0], p[1], from_states[i] };
			if ((rc = exec_n(st,
					 "UPDATE triggers SET state = 'cancelled',"
					 " finished_at = clock_timestamp(), lease_owner = NULL,"
					 " lease_until = NULL, next_attempt_at = NULL"
					 " WHERE " CANCEL_SEL " AND state = $3",
					 3, pc, &n, err, errlen)))
				return rc;
			*counts[i] += n;
		}
		if ((rc = exec_n(st,
				 "UPDATE triggers SET state = 'cancelling'"
				 " WHERE " CANCEL_SEL " AND state = 'running'",
				 2, p, &n, err, errlen)))
			return rc;
		res->to_cancelling += n;
		if ((rc = query_i64(st,
				    "SELECT count(*) FROM triggers WHERE " CANCEL_SEL
				    " AND state IN ('paused', 'retry_wait', 'pending', 'running')",
				    2, p, &n, err, errlen)))
			return rc;
		if (!n)
			break;
	}
	if ((rc = query_json(st,
			     "SELECT coalesce(json_object_agg(state, n), '{}')::text FROM ("
			     " SELECT state, count(*) AS n FROM triggers WHERE " CANCEL_SEL
			     " AND state NOT IN ('succeeded', 'failed', 'cancelled', 'skipped')"
			     " GROUP BY state) x",
			     2, p, &res->left, err, errlen)))
		return rc;
	int64_t moved = res->from_pending + res->from_retry_wait + res->from_paused +
			res->to_cancelling + res->expired;
	if (c->trigger_id) {
		PGresult *r = pal__store_query(st, "SELECT state FROM triggers WHERE id = $1", 1, p, err,
					       errlen);
		if (!r)
			return PAL_EDB;
		snprintf(res->state, sizeof res->state, "%s", PQgetvalue(r, 0, 0));
		PQclear(r);
		if (!moved) {
			if (!strcmp(res->state, "cancelling"))
				return PAL_OK; /* already under way; nothing to write */
			if (terminal(res->state))
				snprintf(err, errlen,
					 "trigger %s already finished (%s); a finished trigger is never "
					 "re-opened",
					 tid, res->state);
			else if (!strcmp(res->state, "unknown"))
				snprintf(err, errlen,
					 "trigger %s is unknown (outcome being resolved by query); it "
					 "cannot be cancelled until it is resolved; hint: retry later, "
					 "or resolve its ticket",
					 tid);
			else if (!strcmp(res->state, "pausing"))
				snprintf(err, errlen,
					 "trigger %s is pausing; cancel it once it is paused (at the "
					 "executor's next safe point)",
					 tid);
			else if (!strcmp(res->state, "manual"))
				snprintf(err, errlen,
					 "trigger %s waits for an operator (state manual); hint: "
					 "`palisade tickets list` and resolve its ticket with abandon",
					 tid);
			else
				snprintf(err, errlen, "trigger %s is %s and cannot be cancelled", tid,
					 res->state);
			return PAL_ESTALE;
		}
	}
	char *left = json_dumps(res->left, JSON_COMPACT);
	char np[24], nr[24], nw[24], nc[24], ne[24];
	i64s(ne, sizeof ne, res->expired);
	i64s(np, sizeof np, res->from_pending);
	i64s(nr, sizeof nr, res->from_retry_wait);
	i64s(nw, sizeof nw, res->from_paused);
	i64s(nc, sizeof nc, res->to_cancelling);
	const char *pa[] = { c->actor, c->trigger_id ? res->job_id : c->job_id,
			     c->reason, p[0],
			     from[0] ? from : NULL, np,
			     nr,	   nw,
			     nc,	   left ? left : "{}",
			     ne };
	rc = exec_n(st,
		    "INSERT INTO audit_log (actor, action, scope, reason, details)"
		    " VALUES ($1, 'cancel', 'job:' || $2, $3, jsonb_strip_nulls(jsonb_build_object("
		    "  'trigger', $4::bigint, 'from_state', $5::text,"
		    "  'pending_to_cancelled', $6::bigint, 'retry_wait_to_cancelled', $7::bigint,"
		    "  'paused_to_cancelled', $8::bigint, 'running_to_cancelling', $9::bigint,"
		    "  'not_cancellable', $10::jsonb, 'expired_cancelling_to_cancelled', $11::bigint)))",
		    11, pa, NULL, err, errlen);
	free(left);
	if (rc)
		return rc;
	if (res->to_cancelling) {
		const char *pj[] = { pa[1] };
		rc = notify(st,
			    "SELECT pg_notify('palisade_ops',"
			    " json_build_object('action', 'cancel', 'scope', 'job:' || $1)::text)",
			    1, pj, err, errlen);
	}
	return rc;
}

int pal_ops_cancel(pal_store *st, int64_t trigger_id, const char *job_id, const char *actor,
		   const char *reason, pal_cancel_result *res, char *err, size_t errlen)
{
	memset(res, 0, sizeof *res);
	if (!trigger_id && !job_id) {
		snprintf(err, errlen, "cancel needs a trigger id or a job");
		return PAL_EINVAL;
	}
	cancel_ctx c = { trigger_id, job_id, actor, reason, res };
	return in_tx(st, cancel_body, &c, err, errlen);
}

/* ---- manual runs -------------------------------------------------------------- */

bool pal_ops_request_id_ok(const char *s)
{
	size_t n = strlen(s);
	if (n < 1 || n > PAL_TPL_REQUEST_ID_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:-", s[i]))
			return false;
	return true;
}

int pal_ops_uuid4(char out[37])
{
	unsigned char b[16];
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return PAL_EIO;
	size_t got = 0;
	while (got < sizeof b) {
		ssize_t n = read(fd, b + got, sizeof b - got);
		if (n <= 0) {
			close(fd);
			return PAL_EIO;
		}
		got += (size_t)n;
	}
	close(fd);
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 */
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* variant 10 */
	snprintf(out, 37,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
		 b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
		 b[15]);
	return PAL_OK;
}

void pal_run_result_clear(pal_run_result *r)
{
	json_decref(r->ids);
	r->ids = NULL;
}

/* Serialise requests of one (job, request id): two concurrent identical
 * manual runs without --at would otherwise pick two different instants. */
static int lock_request(pal_store *st, const char *job_id, const char *request_id, char *err,
			size_t errlen)
{
	const char *p[] = { job_id, request_id };
	return exec_n(st,
		      "SELECT pg_advisory_xact_lock(hashtextextended($1 || '/' || $2, 7340))", 2, p,
		      NULL, err, errlen);
}

typedef struct run_ctx {
	const char *job_id, *request_id, *actor, *reason;
	int64_t at;
	pal_run_result *res;
} run_ctx;

static int trigger_body(pal_store *st, void *vctx, char *err, size_t errlen)
{
	run_ctx *c = vctx;
	pal_run_result *res = c->res;
	pal_run_result_clear(res);
	memset(res, 0, sizeof *res);
	res->ids = json_array();
	int rc = lock_request(st, c->job_id, c->request_id, err, errlen);
	if (rc)
		return rc;
	char at[24];
	i64s(at, sizeof at, c->at);
	const char *p[] = { c->job_id, c->request_id, c->at == PAL_OPS_NOW ? NULL : at };

	PGresult *r = pal__store_query(
		st,
		"SELECT id, source, floor(extract(epoch FROM scheduled_at))::bigint, version"
		" FROM triggers WHERE job_id = $1 AND request_id = $2 ORDER BY partition, id",
		2, p, err, errlen);
	if (!r)
		return PAL_EDB;
	int n = PQntuples(r);
	if (n) {
		int64_t was = val_i64(r, 0, 2);
		bool backfill = strcmp(PQgetvalue(r, 0, 1), "manual") != 0;
		if (backfill || (c->at != PAL_OPS_NOW && c->at != was)) {
			char ts[32];
			pal_fmt_rfc3339(was, ts, sizeof ts);
			snprintf(err, errlen,
				 "request id \"%s\" of job %s was already used by a %s at %s; a "
				 "request id names one request; hint: choose another --request-id",
				 c->request_id, c->job_id, backfill ? "backfill" : "manual run", ts);
			PQclear(r);
			return PAL_EINVAL;
		}
		res->existed = true;
		res->at = was;
		res->version = atoi(PQgetvalue(r, 0, 3));
		for (int i = 0; i < n; i++)
			json_array_append_new(res->ids, json_integer(val_i64(r, i, 0)));
		PQclear(r);
		return PAL_OK;
	}
	PQclear(r);

	r = pal__store_query(
		st,
		"INSERT INTO triggers (job_id, version, scheduled_at, partition, source, request_id,"
		" tenant, resource_group, priority, due_at, shard)"
		" SELECT j.job_id, v.version, a.t, p, 'manual', $2, coalesce(v.spec->>'tenant', j.tenant),"
		"  v.resource_group, v.priority, a.t, j.shard"
		" FROM jobs j JOIN job_versions v ON v.job_id = j.job_id"
		"  AND v.version = coalesce(j.active_version, j.latest_version)"
		" CROSS JOIN (SELECT coalesce(to_timestamp($3::bigint),"
		"   date_trunc('second', clock_timestamp())) AS t) a"
		" CROSS JOIN generate_series(0, v.partitions - 1) p"
		" WHERE j.job_id = $1"
		" ON CONFLICT (job_id, request_id, scheduled_at, partition) WHERE request_id IS NOT NULL"
		" DO NOTHING"
		" RETURNING id, version, floor(extract(epoch FROM scheduled_at))::bigint",
		3, p, err, errlen);
	if (!r)
		return PAL_EDB;
	n = PQntuples(r);
	if (!n) {
		PQclear(r);
		if ((rc = job_exists(st, c->job_id, err, errlen)))
			return rc;
		snprintf(err, errlen,
			 "job %s: no trigger inserted: its version has no row to plan, or request id "
			 "\"%s\" conflicts with existing triggers; hint: `palisade triggers --job %s`",
			 c->job_id, c->request_id, c->job_id);
		return PAL_EINVAL;
	}
	res->version = atoi(PQgetvalue(r, 0, 1));
	res->at = val_i64(r, 0, 2);
	for (int i = 0; i < n; i++)
		json_array_append_new(res->ids, json_integer(val_i64(r, i, 0)));
	PQclear(r);

	char *ids = json_dumps(res->ids, JSON_COMPACT);
	char ver[16], ts[24];
	snprintf(ver, sizeof ver, "%d", res->version);
	i64s(ts, sizeof ts, res->at);
	const char *pa[] = { c->actor, c->job_id, c->reason, c->request_id, ver, ts, ids ? ids : "[]" };
	rc = exec_n(st,
		    "INSERT INTO audit_log (actor, action, scope, reason, details)"
		    " VALUES ($1, 'trigger', 'job:' || $2, $3, jsonb_build_object("
		    "  'request_id', $4::text, 'version', $5::int,"
		    "  'scheduled_at', to_timestamp($6::bigint), 'triggers', $7::jsonb))",
		    7, pa, NULL, err, errlen);
	free(ids);
	if (rc)
		return rc;
	return notify(st, "NOTIFY palisade_triggers", 0, NULL, err, errlen);
}

int pal_ops_trigger(pal_store *st, const char *job_id, int64_t at, const char *request_id,
		    const char *actor, const char *reason, pal_run_result *res, char *err,
		    size_t errlen)
{
	memset(res, 0, sizeof *res);
	run_ctx c = { job_id, request_id, actor, reason, at, res };
	return in_tx(st, trigger_body, &c, err, errlen);
}

/* ---- backfill ----------------------------------------------------------------- */

typedef struct bf_inst {
	int64_t at;
	int version;
	int partitions;
} bf_inst;

typedef struct bf_plan {
	bf_inst *v;
	size_t n, cap;
	int64_t excluded;
} bf_plan;

/* Instants of VER's schedule in (lo, hi] intersected with [from, to]. */
static int bf_segment(json_t *ver, int64_t lo, int64_t hi, int64_t from, int64_t to, int64_t max,
		      bf_plan *pl, char *err, size_t errlen)
{
	pal_job_spec spec;
	int rc = pal_job_spec_from_canonical(json_object_get(ver, "spec"), &spec, err, errlen);
	if (rc)
		return rc;
	pal_schedule *sc;
	if ((rc = pal_schedule_open(&spec, &sc, err, errlen))) {
		pal_job_spec_clear(&spec);
		return rc;
	}
	int version = (int)json_integer_value(json_object_get(ver, "version"));
	int64_t t = lo > from - 1 ? lo : from - 1, x;
	bool excl;
	while (pal_schedule_next(sc, t, &x, &excl) == PAL_OK && x <= to && x <= hi) {
		t = x;
		if (excl) {
			pl->excluded++;
			continue;
		}
		if ((int64_t)pl->n >= max) {
			rc = PAL_ETOOBIG;
			break;
		}
		if (pl->n == pl->cap) {
			size_t cap = pl->cap ? pl->cap * 2 : 256;
			bf_inst *nv = realloc(pl->v, cap * sizeof *nv);
			if (!nv) {
				rc = PAL_ENOMEM;
				break;
			}
			pl->v = nv;
			pl->cap = cap;
		}
		pl->v[pl->n++] = (bf_inst){ x, version, spec.partitions };
	}
	pal_schedule_close(sc);
	pal_job_spec_clear(&spec);
	return rc;
}

/*
 * Every instant of a job in [FROM, TO] from VERSIONS ([{version, spec,
 * effective_from|null}] ascending): an activated version owns the instants
 * after its effective_from up to the next activated one's (inclusive), as
 * the planner assigns them; before the first effective_from, and when none
 * is activated, the latest version.  PAL_ETOOBIG beyond MAX instants.
 */
static int bf_compute(json_t *versions, int64_t from, int64_t to, int64_t max, bf_plan *pl,
		      char *err, size_t errlen)
{
	size_t nv = json_array_size(versions), i;
	json_t *latest = json_array_get(versions, nv - 1), *v;
	json_t *act = json_array();
	json_array_foreach(versions, i, v)
	{
		if (json_is_integer(json_object_get(v, "effective_from")))
			json_array_append(act, v);
	}
	size_t na = json_array_size(act);
	int rc;
	int64_t first = na ? json_integer_value(json_object_get(json_array_get(act, 0),
								"effective_from"))
			   : INT64_MAX;
	rc = bf_segment(latest, INT64_MIN, first, from, to, max, pl, err, errlen);
	for (size_t k = 0; k < na && !rc; k++) {
		json_t *a = json_array_get(act, k);
		int64_t lo = json_integer_value(json_object_get(a, "effective_from"));
		int64_t hi = k + 1 < na ? json_integer_value(json_object_get(json_array_get(act, k + 1),
									     "effective_from"))
					: INT64_MAX;
		if (hi > lo)
			rc = bf_segment(a, lo, hi, from, to, max, pl, err, errlen);
	}
	json_decref(act);
	return rc;
}

/* Insert a backfill of JOB_ID in the open transaction (no audit). */
static int backfill_in_tx(pal_store *st, const char *job_id, int64_t from, int64_t to, int64_t max,
			  const char *request_id, pal_backfill_result *res, char *err,
			  size_t errlen)
{
	memset(res, 0, sizeof *res);
	const char *p[] = { job_id, request_id };
	PGresult *r = pal__store_query(
		st,
		"SELECT coalesce(json_agg(json_build_object('version', v.version, 'spec', v.spec,"
		"  'effective_from', floor(extract(epoch FROM v.effective_from))::bigint)"
		"  ORDER BY v.version), '[]')::text"
		" FROM jobs j JOIN job_versions v ON v.job_id = j.job_id WHERE j.job_id = $1",
		1, p, err, errlen);
	if (!r)
		return PAL_EDB;
	json_error_t je;
	json_t *versions = json_loads(PQgetvalue(r, 0, 0), 0, &je);
	PQclear(r);
	if (!versions) {
		snprintf(err, errlen, "cannot parse the stored versions of job %s: %s", job_id,
			 je.text);
		return PAL_EINVAL;
	}
	if (!json_array_size(versions)) {
		json_decref(versions);
		snprintf(err, errlen, "no job \"%s\"; hint: `palisade jobs` lists the jobs", job_id);
		return PAL_ENOENT;
	}
	bf_plan pl = { 0 };
	int rc = bf_compute(versions, from, to, max, &pl, err, errlen);
	json_decref(versions);
	if (rc == PAL_ETOOBIG) {
		char f[32], t[32];
		pal_fmt_rfc3339(from, f, sizeof f);
		pal_fmt_rfc3339(to, t, sizeof t);
		snprintf(err, errlen,
			 "backfill of job %s from %s to %s has more than %" PRId64
			 " instants; nothing was written; hint: narrow the range or raise --max",
			 job_id, f, t, max);
	}
	if (rc) {
		free(pl.v);
		return rc;
	}
	res->instants = (int64_t)pl.n;
	res->excluded = pl.excluded;

	/* Another request kind under the same id would mix two requests. */
	int64_t manual;
	if ((rc = query_i64(st,
			    "SELECT count(*) FROM triggers WHERE job_id = $1 AND request_id = $2"
			    " AND source <> 'backfill'",
			    2, p, &manual, err, errlen))) {
		free(pl.v);
		return rc;
	}
	if (manual) {
		free(pl.v);
		snprintf(err, errlen,
			 "request id \"%s\" of job %s was already used by a manual run; hint: "
			 "choose another --request-id",
			 request_id, job_id);
		return PAL_EINVAL;
	}
	pal_pgarr vs, as, ps;
	pal__pgarr_init(&vs);
	pal__pgarr_init(&as);
	pal__pgarr_init(&ps);
	for (size_t i = 0; i < pl.n; i++) {
		for (int k = 0; k < pl.v[i].partitions; k++) {
			pal__pgarr_i64(&vs, pl.v[i].version);
			pal__pgarr_i64(&as, pl.v[i].at);
			pal__pgarr_i64(&ps, k);
			res->rows++;
		}
	}
	free(pl.v);
	char *va = pal__pgarr_end(&vs), *aa = pal__pgarr_end(&as), *pa = pal__pgarr_end(&ps);
	const char *pi[] = { job_id, request_id, va, aa, pa };
	rc = exec_n(st,
		    "INSERT INTO triggers (job_id, version, scheduled_at, partition, source, request_id,"
		    " tenant, resource_group, priority, due_at, shard)"
		    " SELECT j.job_id, v.version, to_timestamp(u.a), u.p, 'backfill', $2,"
		    "  coalesce(v.spec->>'tenant', j.tenant), v.resource_group, v.priority,"
		    "  to_timestamp(u.a), j.shard"
		    " FROM unnest($3::int[], $4::bigint[], $5::int[]) AS u(v, a, p)"
		    " JOIN jobs j ON j.job_id = $1"
		    " JOIN job_versions v ON v.job_id = j.job_id AND v.version = u.v"
		    " ON CONFLICT (job_id, request_id, scheduled_at, partition)"
		    " WHERE request_id IS NOT NULL DO NOTHING",
		    5, pi, &res->inserted, err, errlen);
	g_free(va);
	g_free(aa);
	g_free(pa);
	if (!rc && res->inserted)
		rc = notify(st, "NOTIFY palisade_triggers", 0, NULL, err, errlen);
	return rc;
}

typedef struct backfill_ctx {
	const char *job_id, *request_id, *actor, *reason;
	int64_t from, to, max;
	pal_backfill_result *res;
} backfill_ctx;

static int backfill_body(pal_store *st, void *vctx, char *err, size_t errlen)
{
	backfill_ctx *c = vctx;
	int rc = lock_request(st, c->job_id, c->request_id, err, errlen);
	if (!rc)
		rc = backfill_in_tx(st, c->job_id, c->from, c->to, c->max, c->request_id, c->res, err,
				    errlen);
	if (rc)
		return rc;
	char f[24], t[24], n[24], ex[24], rows[24], ins[24];
	i64s(f, sizeof f, c->from);
	i64s(t, sizeof t, c->to);
	i64s(n, sizeof n, c->res->instants);
	i64s(ex, sizeof ex, c->res->excluded);
	i64s(rows, sizeof rows, c->res->rows);
	i64s(ins, sizeof ins, c->res->inserted);
	const char *pa[] = { c->actor, c->job_id, c->reason, c->request_id, f, t, n, ex, rows, ins };
	return exec_n(st,
		      "INSERT INTO audit_log (actor, action, scope, reason, details)"
		      " VALUES ($1, 'backfill', 'job:' || $2, $3, jsonb_build_object("
		      "  'request_id', $4::text, 'from', to_timestamp($5::bigint),"
		      "  'to', to_timestamp($6::bigint), 'instants', $7::bigint,"
		      "  'excluded', $8::bigint, 'rows', $9::bigint, 'inserted', $10::bigint))",
		      10, pa, NULL, err, errlen);
}

int pal_ops_backfill(pal_store *st, const char *job_id, int64_t from, int64_t to, int64_t max,
		     const char *request_id, const char *actor, const char *reason,
		     pal_backfill_result *res, char *err, size_t errlen)
{
	memset(res, 0, sizeof *res);
	if (to < from) {
		snprintf(err, errlen, "backfill range is empty: --to is before --from");
		return PAL_EINVAL;
	}
	backfill_ctx c = { job_id, request_id, actor, reason, from, to, max, res };
	return in_tx(st, backfill_body, &c, err, errlen);
}

/* ---- tickets ------------------------------------------------------------------ */

#define TICKET_FIELDS                                                                              \
	"json_build_object('id', t.id, 'state', t.state,"                                         \
	" 'job_id', coalesce(t.job_id, tr.job_id), 'trigger_id', t.trigger_id,"                   \
	" 'trigger_state', tr.state, 'reason', t.reason, 'evidence', t.evidence,"                 \
	" 'allowed_actions', t.allowed_actions, 'resolution', t.resolution, 'actor', t.actor,"    \
	" 'created_at', " TS("t.created_at") ", 'resolved_at', " TS("t.resolved_at") ")"

int pal_ops_tickets_json(pal_store *st, bool all, json_t **out, char *err, size_t errlen)
{
	const char *p[] = { all ? "true" : "false" };
	return query_json(st,
			  "SELECT coalesce(json_agg(" TICKET_FIELDS " ORDER BY t.id DESC), '[]')::text"
			  " FROM tickets t LEFT JOIN triggers tr ON tr.id = t.trigger_id"
			  " WHERE $1::boolean OR t.state = 'open'",
			  1, p, out, err, errlen);
}

int pal_ops_ticket_json(pal_store *st, int64_t id, json_t **out, char *err, size_t errlen)
{
	char s[24];
	i64s(s, sizeof s, id);
	const char *p[] = { s };
	int rc = query_json(st,
			    "SELECT coalesce((SELECT " TICKET_FIELDS
			    " FROM tickets t LEFT JOIN triggers tr ON tr.id = t.trigger_id"
			    " WHERE t.id = $1), 'null')::text",
			    1, p, out, err, errlen);
	if (rc)
		return rc;
	if (json_is_null(*out)) {
		json_decref(*out);
		*out = NULL;
		snprintf(err, errlen, "no ticket %s; hint: `palisade tickets list --all` lists them", s);
		return PAL_ENOENT;
	}
	return PAL_OK;
}

typedef struct resolve_ctx {
	int64_t id, max;
	const char *action, *evidence, *actor, *reason;
	pal_resolve_result *res;
} resolve_ctx;

/* Target trigger state of a resolve action on a trigger ticket. */
static const char *resolve_target(const char *action)
{
	if (!strcmp(action, "retry"))
		return "pending";
	if (!strcmp(action, "mark_succeeded"))
		return "succeeded";
	if (!strcmp(action, "abandon"))
		return "failed";
	return NULL;
}

static int resolve_body(pal_store *st, void *vctx, char *err, size_t errlen)
{
	resolve_ctx *c = vctx;
	pal_resolve_result *res = c->res;
	memset(res, 0, sizeof *res);
	char id[24];
	i64s(id, sizeof id, c->id);
	const char *p[] = { id, c->action };
	PGresult *r = pal__store_query(
		st,
		"SELECT t.state, t.trigger_id, coalesce(t.job_id, tr.job_id),"
		" array_to_string(t.allowed_actions, ', '), $2 = ANY (t.allowed_actions),"
		" t.evidence->>'range_from', t.evidence->>'range_to',"
		" coalesce(t.resolution, ''), coalesce(t.actor, '')"
		" FROM tickets t LEFT JOIN triggers tr ON tr.id = t.trigger_id"
		" WHERE t.id = $1 FOR UPDATE OF t",
		2, p, err, errlen);
	if (!r)
		return PAL_EDB;
	if (!PQntuples(r)) {
		PQclear(r);
		snprintf(err, errlen, "no ticket %s; hint: `palisade tickets list --all` lists them", id);
		return PAL_ENOENT;
	}
	bool resolved = strcmp(PQgetvalue(r, 0, 0), "open") != 0;
	bool has_trigger = !PQgetisnull(r, 0, 1);
	char trig[24], job[128], rfrom[64], rto[64];
	snprintf(trig, sizeof trig, "%s", PQgetvalue(r, 0, 1));
	snprintf(job, sizeof job, "%s", PQgetvalue(r, 0, 2));
	snprintf(res->allowed, sizeof res->allowed, "%s", PQgetvalue(r, 0, 3));
	bool allowed = !strcmp(PQgetvalue(r, 0, 4), "t");
	bool has_range = !PQgetisnull(r, 0, 5) && !PQgetisnull(r, 0, 6);
	snprintf(rfrom, sizeof rfrom, "%s", PQgetvalue(r, 0, 5));
	snprintf(rto, sizeof rto, "%s", PQgetvalue(r, 0, 6));
	if (resolved)
		snprintf(err, errlen, "ticket %s is already resolved (%s by %s)", id,
			 PQgetvalue(r, 0, 7), PQgetvalue(r, 0, 8));
	PQclear(r);
	if (resolved) {
		snprintf(res->state, sizeof res->state, "resolved");
		return PAL_ESTALE;
	}
	if (!allowed) {
		snprintf(err, errlen, "action %s is not allowed for ticket %s; allowed: %s", c->action,
			 id, res->allowed);
		return PAL_EINVAL;
	}

	int rc = PAL_OK;
	const char *target = resolve_target(c->action);
	if (has_trigger && target) {
		const char *pt[] = { trig, target };
		r = pal__store_query(st,
				     "UPDATE triggers SET state = $2,"
				     " finished_at = CASE WHEN $2 IN ('succeeded', 'failed')"
				     "  THEN clock_timestamp() END,"
				     " next_attempt_at = NULL, lease_owner = NULL, lease_until = NULL"
				     " WHERE id = $1 AND state = 'manual' RETURNING state",
				     2, pt, err, errlen);
		if (!r)
			return PAL_EDB;
		int n = PQntuples(r);
		PQclear(r);
		if (!n) {
			r = pal__store_query(st, "SELECT state FROM triggers WHERE id = $1", 1, pt, err,
					     errlen);
			if (!r)
				return PAL_EDB;
			snprintf(res->state, sizeof res->state, "%s",
				 PQntuples(r) ? PQgetvalue(r, 0, 0) : "missing");
			PQclear(r);
			snprintf(err, errlen,
				 "trigger %s of ticket %s is %s, not manual; the ticket stays open; "
				 "hint: `palisade triggers --job %s` shows it",
				 trig, id, res->state, job);
			return PAL_ESTALE;
		}
		snprintf(res->trigger_state, sizeof res->trigger_state, "%s", target);
	} else if (has_trigger) {
		snprintf(err, errlen,
			 "action %s needs a misfire ticket (a job and an evidence range); ticket %s "
			 "is about trigger %s; hint: use retry",
			 c->action, id, trig);
		return PAL_EINVAL;
	} else if (!strcmp(c->action, "backfill")) {
		int64_t f, t;
		if (!has_range || pal_parse_rfc3339(rfrom, &f) || pal_parse_rfc3339(rto, &t)) {
			snprintf(err, errlen,
				 "ticket %s has no evidence range (range_from, range_to) to backfill",
				 id);
			return PAL_EINVAL;
		}
		char rid[40];
		snprintf(rid, sizeof rid, "ticket-%s", id);
		if ((rc = lock_request(st, job, rid, err, errlen)) ||
		    (rc = backfill_in_tx(st, job, f, t, c->max, rid, &res->backfill, err, errlen)))
			return rc;
	} else if (strcmp(c->action, "abandon") != 0) {
		snprintf(err, errlen,
			 "action %s needs a trigger, and ticket %s has none; allowed: %s", c->action,
			 id, res->allowed);
		return PAL_EINVAL;
	}

	const char *pr[] = { id, c->action, c->actor, c->reason, c->evidence };
	int64_t n;
	if ((rc = exec_n(st,
			 "UPDATE tickets SET state = 'resolved', resolution = $2, actor = $3,"
			 " resolved_at = clock_timestamp(),"
			 " evidence = CASE WHEN jsonb_typeof(evidence) = 'object' THEN evidence"
			 "  WHEN evidence IS NULL THEN '{}'::jsonb"
			 "  ELSE jsonb_build_object('original', evidence) END"
			 "  || jsonb_build_object('resolution', jsonb_build_object('action', $2::text,"
			 "   'reason', $4::text, 'actor', $3::text, 'evidence', $5::jsonb))"
			 " WHERE id = $1 AND state = 'open'",
			 5, pr, &n, err, errlen)))
		return rc;
	if (n != 1) {
		snprintf(err, errlen, "ticket %s changed while it was resolved; hint: retry", id);
		return PAL_ESTALE;
	}
	char bi[24], bn[24];
	i64s(bi, sizeof bi, res->backfill.instants);
	i64s(bn, sizeof bn, res->backfill.inserted);
	const char *pa[] = { c->actor,
			     job[0] ? job : NULL,
			     c->reason,
			     id,
			     c->action,
			     has_trigger ? trig : NULL,
			     res->trigger_state[0] ? res->trigger_state : NULL,
			     !strcmp(c->action, "backfill") ? bi : NULL,
			     !strcmp(c->action, "backfill") ? bn : NULL };
	if ((rc = exec_n(st,
			 "INSERT INTO audit_log (actor, action, scope, reason, details)"
			 " VALUES ($1, 'ticket.resolve', 'job:' || $2, $3, jsonb_strip_nulls("
			 "  jsonb_build_object('ticket', $4::bigint, 'action', $5::text,"
			 "  'trigger', $6::bigint, 'trigger_state', $7::text,"
			 "  'backfill_instants', $8::bigint, 'backfill_inserted', $9::bigint)))",
			 9, pa, NULL, err, errlen)))
		return rc;
	if (!strcmp(c->action, "retry"))
		return notify(st, "NOTIFY palisade_triggers", 0, NULL, err, errlen);
	return PAL_OK;
}

int pal_ops_ticket_resolve(pal_store *st, int64_t id, const char *action, const char *evidence,
			   int64_t max, const char *actor, const char *reason,
			   pal_resolve_result *res, char *err, size_t errlen)
{
	memset(res, 0, sizeof *res);
	if (evidence) {
		json_error_t je;
		json_t *j = json_loads(evidence, JSON_DECODE_ANY, &je);
		if (!j) {
			snprintf(err, errlen, "--evidence is not JSON: %s at column %d", je.text,
				 je.column);
			return PAL_EINVAL;
		}
		json_decref(j);
	}
	resolve_ctx c = { id, max, action, evidence, actor, reason, res };
	return in_tx(st, resolve_body, &c, err, errlen);
}

/* ---- trigger listing ----------------------------------------------------------- */

int pal_ops_triggers_json(pal_store *st, const char *job_id, const char *state, int64_t since,
			  int64_t trigger_id, int limit, json_t **out, char *err, size_t errlen)
{
	char s[24], l[16], t[24];
	i64s(s, sizeof s, since);
	snprintf(l, sizeof l, "%d", limit);
	i64s(t, sizeof t, trigger_id);
	const char *p[] = { job_id, state, since == PAL_OPS_NOW ? NULL : s, l,
			    trigger_id > 0 ? t : NULL };
#define TRIGGERS_JSON                                                                              \
	"SELECT coalesce(json_agg(json_build_object('id', id, 'job_id', job_id,"                  \
	"  'version', version, 'scheduled_at', " TS("scheduled_at") ", 'partition', partition,"   \
	"  'source', source, 'request_id', request_id, 'state', state, 'fence', fence,"           \
	"  'lease_owner', lease_owner, 'lease_until', " TS("lease_until") ","                      \
	"  'attempt_count', attempt_count, 'last_error_class', last_error_class)"                 \
	"  ORDER BY scheduled_at DESC, partition, id DESC), '[]')::text"
	/* one job's: through its plan and request keys (sql/020) */
	int rc = query_json(st,
			    job_id ? TRIGGERS_JSON " FROM palisade_job_triggers($1::text, $4::int,"
					    " $2::text, to_timestamp($3::bigint)) t"
				   : TRIGGERS_JSON " FROM (SELECT * FROM triggers"
					    "  WHERE $1::text IS NULL AND ($2::text IS NULL OR state = $2::text)"
					    "  AND ($3::bigint IS NULL OR scheduled_at >= to_timestamp($3::bigint))"
					    "  AND ($5::bigint IS NULL OR id = $5::bigint)"
					    "  ORDER BY scheduled_at DESC, partition, id DESC LIMIT $4::int) t",
			    job_id ? 4 : 5, p, out, err, errlen);
#undef TRIGGERS_JSON
	if (rc || !job_id || json_array_size(*out))
		return rc;
	if ((rc = job_exists(st, job_id, err, errlen))) {
		json_decref(*out);
		*out = NULL;
	}
	return rc;
}
