/*
 * gates.c - pause, resume, suspend and unsuspend (include/palisade/ops.h,
 * palisade/lifecycle.h): a gate row per scope, and the moves through the
 * door of the trigger state machine (PAL__TRIGGER_MOVE) that hold, release
 * or pause the triggers it covers.  Runs in the
 * transaction of ops.c; docs/operations.md.
 *
 * Gate changes first take LOCK gates IN ACCESS EXCLUSIVE MODE (with a lock
 * timeout): an executor claim that reads gates in its statement holds ACCESS
 * SHARE on gates until it commits, so a pause waits for claims in flight
 * (whose triggers it then sees running and asks to pause) and claims that
 * start later wait for the pause and see its gate.
 */
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/ops.h"
#include "palisade/lifecycle.h"
#include "palisade/misfire.h"
#include "ops_int.h"

/* Trigger (alias T) covered by some paused gate. */
#define GATED(t)                                                                                  \
	"EXISTS (SELECT 1 FROM gates g WHERE g.paused AND g.scope IN ('global',"                  \
	" 'job:' || " t ".job_id, 'group:' || " t ".resource_group, 'tenant:' || " t ".tenant))"

/* Schedule trigger (alias T) whose instant is shadow (docs/migrating.md),
 * which a roll-back or `shadow` asked to pause before its instant: it
 * was handed back without a call (paused, last_error_class 'handed_back'),
 * or it is still claimed ahead (pausing, its call not started), and its
 * instant is the old system's now, so no resume may wake it (it stays
 * paused, or pausing for its executor's hand-back, until a roll-back moves
 * it to shadow).  palisade_trigger_live() is asked only when a scope is in
 * shadow. */
#define SHADOW_HELD(t)                                                                             \
	"(" t ".source IN ('schedule', 'catchup') AND EXISTS (SELECT 1 FROM shadow_scopes)"        \
	" AND (" t ".state = 'paused' AND " t ".last_error_class = 'handed_back'"                 \
	"  OR " t ".state = 'pausing' AND coalesce(" t ".next_attempt_at, " t ".due_at)"           \
	"   > clock_timestamp())"                                                                  \
	" AND NOT palisade_trigger_live(" t ".job_id, " t ".tenant, " t ".resource_group, "       \
	PAL__TRIGGER_NOMINAL(t) "))"

/* The statement that moves the triggers (alias t) in WHERE to state TO
 * through the door of the state machine (PAL__TRIGGER_MOVE); its row: how
 * many moved. */
#define GATE_MOVE(where, to) "SELECT count(*) FROM " PAL__TRIGGER_MOVE_WHERE(where, to, "NULL") " m"
/* GATE_MOVE of the rows no other transaction holds, WHERE rechecked on
 * each as it is locked (PAL__TRIGGER_MOVE_LOCKED). */
#define GATE_MOVE_LOCKED(where, to)                                                                \
	"SELECT count(*) FROM " PAL__TRIGGER_MOVE_LOCKED(where, to, "NULL") " m"

#define LOCK_TIMEOUT "10s"

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

void pal_scope_format(const pal_scope *sc, char *buf, size_t len)
{
	if (sc->kind == PAL_SCOPE_GLOBAL)
		snprintf(buf, len, "global");
	else
		snprintf(buf, len, "%s:%s", pal__ops_scope_kind(sc->kind),
			 sc->name ? sc->name : "");
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
	if (c->sc->kind == PAL_SCOPE_JOB &&
	    (rc = pal__ops_job_exists(st, c->sc->name, err, errlen)))
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

	const char *pk[] = {pal__ops_scope_kind(c->sc->kind), c->sc->name};
	/* Only 'running' is asked: pending and retry_wait wait at the claim. */
	if ((rc = pal__ops_query_i64(
		 st, GATE_MOVE("t.state = 'running' AND " IN_SCOPE("t"), "'pausing'"), 2, pk,
		 &res->asked, err, errlen)))
		return rc;
	/* A trigger claimed ahead of its instant (running, its call not made
	 * yet) learns of the pause now, not at its executor's next renewal,
	 * which may come after the instant: it is handed back without a call. */
	if (res->asked && (rc = pal__ops_notify(st, PAL__HANDBACK_NOTIFY, 0, NULL, err, errlen)))
		return rc;
	if ((rc = pal__ops_query_i64(
		 st,
		 "SELECT count(*) FROM triggers t"
		 " WHERE t.state IN ('pending', 'retry_wait') AND " IN_SCOPE("t"),
		 2, pk, &res->held, err, errlen)))
		return rc;
	if ((rc = pal__ops_query_i64(st, "SELECT count(*) FROM jobs t WHERE " IN_SCOPE("t"), 2, pk,
				     &res->jobs, err, errlen)))
		return rc;

	char asked[24], held[24];
	pal__ops_i64s(asked, sizeof asked, res->asked);
	pal__ops_i64s(held, sizeof held, res->held);
	const char *pa[] = { c->actor,	c->scope, c->reason, asked,
			     held,	res->was_paused ? "true" : "false",
			     res->was_paused ? res->prev_reason : NULL, c->source };
	if ((rc = pal__ops_exec(
		 st,
		 "INSERT INTO audit_log (actor, action, scope, reason, details)"
		 " VALUES ($1, 'pause', $2, $3, jsonb_build_object("
		 "  'running_to_pausing', $4::bigint, 'pending_held', $5::bigint,"
		 "  'was_paused', $6::boolean, 'previous_reason', $7::text, 'source', $8::text))",
		 8, pa, NULL, err, errlen)))
		return rc;
	return pal__ops_notify(st,
			       "SELECT pg_notify('palisade_ops',"
			       " json_build_object('action', 'pause', 'scope', $1::text)::text)",
			       1, ps, err, errlen);
}

int pal_ops_pause(pal_store *st, const pal_scope *sc, const char *actor, const char *reason,
		  pal_pause_result *res, char *err, size_t errlen)
{
	gate_ctx c = { .sc = sc, .actor = actor, .reason = reason, .res = res, .source = "operator" };
	pal_scope_format(sc, c.scope, sizeof c.scope);
	return pal__ops_in_tx(st, pause_body, &c, err, errlen);
}

/* ---- resume ------------------------------------------------------------------- */

/* A scheduled instant the resume may decide (alias T): pending, never
 * attempted, no checkpoint, older than the threshold $3 (ms), in the scope
 * ($1, $2), no other paused gate over it.  A trigger paused at its safe
 * point (it ran) and manual runs and backfills (deliberate) never match. */
#define UNGATED_HELD(t)                                                                           \
	t ".state = 'pending' AND " t ".source IN ('schedule', 'catchup')"                        \
	" AND " t ".attempt_count = 0 AND " t ".checkpoint IS NULL"                               \
	" AND " t ".scheduled_at <= now() - $3::bigint * interval '1 millisecond'"                \
	" AND " IN_SCOPE(t) " AND NOT " GATED(t)

/*
 * The head of a WITH that gives hs(job_id, rg, tenant, since): for each
 * job, group and tenant of an UNGATED_HELD trigger, since when gates held
 * it without a break.  That is the start $4 of the gate being lifted, or
 * earlier when gates over it overlapped: a gate lifted earlier, while
 * another still covered the trigger, left it held, and its resume row in
 * the audit log (details.gate_since, at) tells over which span it held.
 * Each such row over the trigger's job, group, tenant or globally, lifted
 * at or after the start found so far and begun before it, moves the start
 * back to its own.  Rows lifted before the oldest candidate instant cannot
 * move the start below that instant, where it no longer changes HELD, and
 * are not read (audit_log_at).  Gate rows are left as they are: `since`
 * stays when that gate closed.
 */
#define HOLD_SINCE_WITH                                                                            \
	"WITH RECURSIVE c AS (SELECT t.job_id, t.resource_group, t.tenant, t.scheduled_at"        \
	"   FROM triggers t WHERE " UNGATED_HELD("t") "),"                                         \
	" a AS (SELECT a.scope, (a.details ->> 'gate_since')::timestamptz AS s, a.at AS r"        \
	"   FROM audit_log a WHERE a.action = 'resume' AND a.details ->> 'gate_since' IS NOT NULL" \
	"    AND a.at >= (SELECT min(c.scheduled_at) FROM c)),"                                   \
	" ch AS (SELECT DISTINCT c.job_id, c.resource_group AS rg, c.tenant, $4::timestamptz AS s" \
	"   FROM c UNION SELECT ch.job_id, ch.rg, ch.tenant, a.s FROM ch JOIN a ON a.scope IN"      \
	"   ('global', 'job:' || ch.job_id, 'group:' || ch.rg, 'tenant:' || ch.tenant)"           \
	"   AND a.r >= ch.s AND a.s < ch.s),"                                                      \
	" hs AS (SELECT ch.job_id, ch.rg, ch.tenant, min(ch.s) AS since FROM ch"                 \
	"   GROUP BY ch.job_id, ch.rg, ch.tenant),"

/* A scheduled instant the gates held past the threshold (alias T, in a
 * statement that starts with HOLD_SINCE_WITH): UNGATED_HELD, and held
 * since hs.since (S) for at least the threshold $3 (ms), counted from the
 * later of its time and S, while it was not already past the threshold
 * when S began:
 *   greatest(scheduled_at, S) <= now() - $3 AND scheduled_at > S - $3,
 * the first written as two tests (UNGATED_HELD has the one on its time).
 * A backlog that was overdue past the threshold before the first gate
 * (executors down or saturated) is released as it was, and a hold younger
 * than the threshold decides nothing. */
#define HELD(t)                                                                                   \
	UNGATED_HELD(t) " AND EXISTS (SELECT 1 FROM hs WHERE hs.job_id = " t ".job_id"            \
	" AND hs.rg IS NOT DISTINCT FROM " t ".resource_group"                                    \
	" AND hs.tenant IS NOT DISTINCT FROM " t ".tenant"                                        \
	" AND " t ".scheduled_at > hs.since - $3::bigint * interval '1 millisecond'"              \
	" AND hs.since <= now() - $3::bigint * interval '1 millisecond')"

/* The held instants of cut (a CTE of job_id, scheduled_at) still held,
 * moved to skipped with the error class 'paused' through the door. */
#define HELD_CUT                                                                                   \
	"SELECT t.id, t.scheduled_at, t.state FROM triggers t JOIN cut ON t.job_id = cut.job_id"   \
	" AND t.scheduled_at = cut.scheduled_at WHERE " HELD("t")
#define HELD_SKIP PAL__TRIGGER_MOVE(HELD_CUT, "'skipped'", "'paused'")

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
static int resume_held(pal_store *st, gate_ctx *c, const char *const *pk, const char *since,
		       char *err, size_t errlen)
{
	pal_resume_result *res = c->res;
	char thr[24];
	pal__ops_i64s(thr, sizeof thr, c->opts->misfire_threshold_ms);
	const char *p[] = { pk[0], pk[1], thr, since };
	PGresult *r = pal__store_query(
		st,
		HOLD_SINCE_WITH
		" h AS (SELECT t.job_id, t.version, t.scheduled_at FROM triggers t"
		"   WHERE " HELD("t") "),"
		" l AS (SELECT DISTINCT ON (h.job_id) h.job_id, h.version FROM h"
		"   ORDER BY h.job_id, h.scheduled_at DESC)"
		" SELECT l.job_id, v.misfire_policy, v.max_catchup, count(DISTINCT h.scheduled_at),"
		"  count(DISTINCT h.scheduled_at) FILTER (WHERE h.scheduled_at"
		"   < now() - v.catchup_window_ms * interval '1 millisecond')"
		" FROM l JOIN job_versions v ON v.job_id = l.job_id AND v.version = l.version"
		" JOIN h ON h.job_id = l.job_id"
		" GROUP BY l.job_id, v.misfire_policy, v.max_catchup",
		4, p, err, errlen);
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
		int64_t n = pal__ops_val_i64(r, i, 3);
		pal_misfire_split sp =
		    pal_misfire_decide((pal_misfire_policy)pol, n, pal__ops_val_i64(r, i, 4),
				       pal__ops_val_i64(r, i, 2));
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
		const char *ps[] = { pk[0], pk[1], thr, since, aj, af, ap, c->scope };
		/* a layout clang-format cannot keep: macros among the literals */
		/* clang-format off */
		r = pal__store_query(
			st,
			HOLD_SINCE_WITH
			" k AS (SELECT * FROM unnest($5::text[], $6::bigint[], $7::text[])"
			"   AS k(job_id, fire, policy)),"
			" d AS (SELECT DISTINCT t.job_id, t.scheduled_at FROM triggers t"
			"   JOIN k ON k.job_id = t.job_id WHERE " HELD("t") "),"
			" cut AS (SELECT d.job_id, d.scheduled_at FROM (SELECT d.*, row_number()"
			"   OVER (PARTITION BY d.job_id ORDER BY d.scheduled_at DESC) AS rn FROM d) d"
			"   JOIN k ON k.job_id = d.job_id WHERE d.rn > k.fire),"
			" sk AS (SELECT x.job_id, x.version, x.scheduled_at, x.shard, x.epoch"
			"   FROM " HELD_SKIP " x),"
			" m AS (INSERT INTO misfires (job_id, version, range_from, range_to, count,"
			"   policy, reason, shard, epoch, gate)"
			"   SELECT sk.job_id, max(sk.version), min(sk.scheduled_at),"
			"    max(sk.scheduled_at), count(DISTINCT sk.scheduled_at), k.policy, 'paused',"
			"    min(sk.shard), max(sk.epoch), $8 FROM sk JOIN k ON k.job_id = sk.job_id"
			"   GROUP BY sk.job_id, k.policy"
			"   RETURNING job_id, version, range_from, range_to, count, policy, epoch),"
			" tk AS (INSERT INTO tickets (job_id, reason, evidence, allowed_actions)"
			"   SELECT m.job_id, 'misfire: ' || m.count || ' instants held by the pause of '"
			"    || $8 || ' (policy manual)', jsonb_build_object('version', m.version,"
			"    'range_from', m.range_from, 'range_to', m.range_to, 'count', m.count,"
			"    'epoch', m.epoch, 'gate', $8::text), ARRAY['backfill', 'abandon']"
			"   FROM m WHERE m.policy = 'manual' RETURNING 1)"
			" SELECT m.policy, sum(m.count)::bigint, (SELECT count(*) FROM tk) FROM m"
			" GROUP BY m.policy",
			8, ps, err, errlen);
		/* clang-format on */
		if (!r) {
			rc = PAL_EDB;
		} else {
			for (int i = 0; i < PQntuples(r); i++) {
				int pol = policy_index(PQgetvalue(r, i, 0));
				if (pol >= 0)
					res->misfired[pol] += pal__ops_val_i64(r, i, 1);
				res->tickets = pal__ops_val_i64(r, i, 2);
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
	pal__ops_i64s(ramp, sizeof ramp, c->opts->ramp_ms);
	const char *p[] = { pk[0], pk[1], ramp };
	PGresult *r = pal__store_query(
		st,
		"WITH r AS (SELECT t.id, t.scheduled_at, v.misfire_policy AS policy,"
		"   row_number() OVER (ORDER BY t.scheduled_at, t.id) - 1 AS k, count(*) OVER () AS n"
		"  FROM triggers t JOIN job_versions v ON v.job_id = t.job_id AND v.version = t.version"
		"  WHERE t.state IN ('pending', 'retry_wait')"
		"   AND (coalesce(t.next_attempt_at, t.due_at) <= clock_timestamp()"
		/* a pending trigger's time still to come is an earlier resume's ramp
		 * (the paused -> pending door clears it): this resume's own ramp, or
		 * none, takes its place */
		"    OR (t.state = 'pending' AND t.next_attempt_at > clock_timestamp()))"
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
		"    AND t.state IN ('pending', 'retry_wait') RETURNING o.ready),"
		" z AS (UPDATE triggers t SET next_attempt_at = NULL FROM r"
		"   WHERE $3::bigint = 0 AND t.id = r.id AND t.scheduled_at = r.scheduled_at"
		"    AND t.state = 'pending' AND t.next_attempt_at > clock_timestamp())"
		" SELECT r.policy, count(*), (SELECT " TS("max(u.ready)") " FROM u) FROM r"
		" GROUP BY r.policy",
		3, p, err, errlen);
	if (!r)
		return PAL_EDB;
	for (int i = 0; i < PQntuples(r); i++) {
		int pol = policy_index(PQgetvalue(r, i, 0));
		if (pol >= 0)
			res->released[pol] = pal__ops_val_i64(r, i, 1);
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
	if (c->sc->kind == PAL_SCOPE_JOB &&
	    (rc = pal__ops_job_exists(st, c->sc->name, err, errlen)))
		return rc;
	const char *ps[] = { c->scope };
	/* The gate row is deleted (not kept with paused = false): the audit log
	 * keeps the history, and a claim's gate test stays one EXISTS. */
	const char *pd[] = { c->scope, c->source };
	PGresult *r = pal__store_query(
		st,
		"DELETE FROM gates WHERE scope = $1 AND ($2 = 'operator' OR source = $2)"
		" RETURNING since::text",
		2, pd, err, errlen);
	if (!r)
		return PAL_EDB;
	res->had_gate = PQntuples(r) > 0;
	/* when the gate closed: what it held is counted from there (HELD) */
	char since[64] = "";
	if (res->had_gate)
		snprintf(since, sizeof since, "%s", PQgetvalue(r, 0, 0));
	PQclear(r);
	if (!res->had_gate && !strcmp(c->source, "spec"))
		return PAL_OK; /* the gate is an operator's (or gone): the job file lifts nothing */

	const char *pk[] = {pal__ops_scope_kind(c->sc->kind), c->sc->name};
	/* What the gate held past the threshold goes through the misfire
	 * policies first, before the moves below make more triggers pending
	 * (only never-attempted instants qualify anyway); a scope without a
	 * gate held nothing. */
	if (res->had_gate && (rc = resume_held(st, c, pk, since, err, errlen)))
		return rc;
	/* A pausing trigger whose lease expired lost its executor before the
	 * safe point: nobody else would ever move it, so it is paused here
	 * (its holder, if alive, is fenced by the state from then on).  Each
	 * row is locked as it is read and its lease rechecked: a holder that
	 * renews meanwhile is alive and keeps it (the door rechecks only the
	 * state).  A row another transaction holds (its holder renewing or
	 * committing, a cancel) is left out: with no gate over it any more the
	 * next statement waits for it and sends a still pausing one back to
	 * running; under another gate it stays pausing (still_pausing) for its
	 * holder's safe point or the next resume. */
	if ((rc = pal__ops_query_i64(
		 st,
		 GATE_MOVE_LOCKED("t.state = 'pausing' AND t.lease_until < clock_timestamp()"
				  " AND " IN_SCOPE("t"),
				  "'paused'"),
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
	if ((rc = pal__ops_query_i64(
		 st,
		 GATE_MOVE("t.state = 'pausing' AND " IN_SCOPE("t") " AND NOT " GATED("t")
			   " AND NOT " SHADOW_HELD("t"),
			   "'running'"),
		 2, pk, &res->continued, err, errlen)))
		return rc;
	/* the door clears the lease and the retry time of paused -> pending */
	if ((rc = pal__ops_query_i64(
		 st,
		 GATE_MOVE("t.state = 'paused' AND " IN_SCOPE("t") " AND NOT " GATED("t")
			   " AND NOT " SHADOW_HELD("t"),
			   "'pending'"),
		 2, pk, &res->resumed, err, errlen)))
		return rc;
	if (res->had_gate && (rc = resume_release(st, c, pk, err, errlen)))
		return rc;
	if ((rc = pal__ops_query_i64(
		 st, "SELECT count(*) FROM triggers t WHERE t.state = 'paused' AND " IN_SCOPE("t"),
		 2, pk, &res->still_gated, err, errlen)))
		return rc;
	if ((rc = pal__ops_query_i64(
		 st, "SELECT count(*) FROM triggers t WHERE t.state = 'pausing' AND " IN_SCOPE("t"),
		 2, pk, &res->pausing, err, errlen)))
		return rc;

	char resumed[24], gated[24], pausing[24], expired[24], running[24], thr[24], ramp[24],
		tickets[24];
	pal__ops_i64s(resumed, sizeof resumed, res->resumed);
	pal__ops_i64s(gated, sizeof gated, res->still_gated);
	pal__ops_i64s(pausing, sizeof pausing, res->pausing);
	pal__ops_i64s(expired, sizeof expired, res->expired);
	pal__ops_i64s(running, sizeof running, res->continued);
	pal__ops_i64s(thr, sizeof thr, c->opts->misfire_threshold_ms);
	pal__ops_i64s(ramp, sizeof ramp, c->opts->ramp_ms);
	pal__ops_i64s(tickets, sizeof tickets, res->tickets);
	char *rel = by_policy_text(res->released), *mis = by_policy_text(res->misfired);
	const char *pa[] = { c->actor, c->scope, c->reason, resumed, gated, pausing,
			     res->had_gate ? "true" : "false", expired, running, c->source,
			     rel, mis, tickets, thr, ramp, res->had_gate ? since : NULL };
	rc = pal__ops_exec(
	    st,
	    "INSERT INTO audit_log (actor, action, scope, reason, details)"
	    " VALUES ($1, 'resume', $2, $3, jsonb_build_object("
	    "  'paused_to_pending', $4::bigint, 'still_gated', $5::bigint,"
	    "  'still_pausing', $6::bigint, 'had_gate', $7::boolean,"
	    "  'expired_pausing_to_paused', $8::bigint, 'pausing_to_running', $9::bigint,"
	    "  'source', $10::text, 'released', $11::jsonb, 'misfired', $12::jsonb,"
	    "  'tickets', $13::bigint, 'misfire_threshold_ms', $14::bigint,"
	    "  'held_before', now() - $14::bigint * interval '1 millisecond',"
	    "  'ramp_ms', $15::bigint, 'gate_since', $16::timestamptz))",
	    16, pa, NULL, err, errlen);
	g_free(rel);
	g_free(mis);
	if (rc)
		return rc;
	if ((rc =
		 pal__ops_notify(st,
				 "SELECT pg_notify('palisade_ops',"
				 " json_build_object('action', 'resume', 'scope', $1::text)::text)",
				 1, ps, err, errlen)))
		return rc;
	int64_t released = 0;
	for (int i = 0; i < 4; i++)
		released += res->released[i];
	return res->resumed || released
		   ? pal__ops_notify(st, "NOTIFY palisade_triggers", 0, NULL, err, errlen)
		   : PAL_OK;
}

int pal_ops_resume(pal_store *st, const pal_scope *sc, const char *actor, const char *reason,
		   const pal_resume_opts *opts, pal_resume_result *res, char *err, size_t errlen)
{
	gate_ctx c = { .sc = sc, .actor = actor, .reason = reason ? reason : "", .res = res,
		       .source = "operator", .opts = opts };
	pal_scope_format(sc, c.scope, sizeof c.scope);
	return pal__ops_in_tx(st, resume_body, &c, err, errlen);
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
