/*
 * shadow.c - shadow runs, cut-over steps and roll-back of a scope
 * (include/palisade/shadow.h, sql/039_shadow.sql, docs/migrating.md).
 *
 * Which instants are shadow is decided when a trigger is planned, by
 * palisade_trigger_live() over shadow_scopes and cutover_steps, on the
 * trigger's nominal instant (NOM: the one the old system fires, before
 * spread and jitter).  Each
 * change here locks both tables (ACCESS EXCLUSIVE) first: a planning
 * insert reads them, so one that read the old rules has committed before
 * the change moves the triggers already planned, and one that starts
 * later reads the new rules.  The moves of planned triggers are the edges
 * pending -> shadow (a scope goes to shadow: the instants from the
 * command on; those before it stay palisade's), shadow -> pending (a
 * cut-over makes the instant live), pending, retry_wait, paused -> shadow
 * (a roll-back, marked last_error_class 'rolled_back'), running ->
 * pausing (a roll-back or a shadow, for a trigger claimed ahead of its
 * instant) and paused -> shadow (a shadow, for such a trigger handed back
 * without a call).  A roll-back also plans, born shadow, the dependent
 * instants of the upstream calls it lists in flight (FOLLOW_INSERT).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "palisade/shadow.h"
#include "palisade/template.h"
#include "palisade/timefmt.h"
#include "ops_int.h"

#define LOCK_TIMEOUT "10s"

#define LIVE_AT(t, at)                                                                             \
	"palisade_trigger_live(" t ".job_id, " t ".tenant, " t ".resource_group, " at ")"
/* live at the trigger's nominal instant: the one the old system fires */
#define NOM(t) PAL__TRIGGER_NOMINAL(t)
#define LIVE(t) LIVE_AT(t, NOM(t))
/* live at the later of the trigger's nominal instant and now: a roll-back's
 * step (at now) covers the due ones too */
#define LIVE_NOW(t) LIVE_AT(t, "greatest(" NOM(t) ", now())")

/* Lock both tables for the transaction; PAL_ENOENT when SC names a job
 * that does not exist. */
static int lock_tables(pal_store *st, const pal_scope *sc, char *err, size_t errlen)
{
	if (pal__store_exec(st, "SET LOCAL lock_timeout = '" LOCK_TIMEOUT "'", err, errlen))
		return PAL_EDB;
	if (pal__store_exec(st, "LOCK TABLE shadow_scopes, cutover_steps IN ACCESS EXCLUSIVE MODE",
			    err, errlen)) {
		if (pal_store_lock_timeout(st)) {
			snprintf(err, errlen,
				 "cannot lock the shadow tables within " LOCK_TIMEOUT
				 ": another transaction holds them; hint: retry, and look for "
				 "long or idle-in-transaction sessions in pg_stat_activity");
			return PAL_EBUSY;
		}
		return PAL_EDB;
	}
	return sc->kind == PAL_SCOPE_JOB ? pal__ops_job_exists(st, sc->name, err, errlen) : PAL_OK;
}

/* lock_tables(), then the scope's triggers that a 0.3.0 node planned for a
 * job with spread or jitter get their nominal instant (it writes none):
 * every judge below reads NOM, the instant the old system fires.  Under
 * the lock, so no planning insert adds one meanwhile. */
static int lock_shadow(pal_store *st, const pal_scope *sc, char *err, size_t errlen)
{
	int64_t filled;
	int rc = lock_tables(st, sc, err, errlen);
	return rc ? rc
		  : pal__store_fill_nominal_scope(st, pal__ops_scope_kind(sc->kind), sc->name,
						  &filled, err, errlen);
}

static int audit(pal_store *st, const char *actor, const char *action, const char *scope,
		 const char *reason, json_t *details, char *err, size_t errlen)
{
	char *d = json_dumps(details, JSON_COMPACT);
	json_decref(details);
	if (!d) {
		snprintf(err, errlen, "out of memory");
		return PAL_ENOMEM;
	}
	const char *p[] = {actor, action, scope, reason, d};
	int rc = pal__ops_exec(st,
			       "INSERT INTO audit_log (actor, action, scope, reason, details)"
			       " VALUES ($1, $2, $3, $4, $5::jsonb)",
			       5, p, NULL, err, errlen);
	free(d);
	return rc;
}

/* The latest step of SCOPE, the last one taken: its percent and instant
 * (0, PAL_OPS_NOW: none).  The last taken, not the one of the latest
 * instant: a roll-back overrides a cut-over planned for later. */
static int latest_step(pal_store *st, const char *scope, int *percent, int64_t *at, char *err,
		       size_t errlen)
{
	const char *p[] = {scope};
	PGresult *r = pal__store_query(st,
				       "SELECT percent, floor(extract(epoch FROM at))::bigint"
				       " FROM cutover_steps WHERE scope = $1"
				       " ORDER BY id DESC LIMIT 1",
				       1, p, err, errlen);
	if (!r)
		return PAL_EDB;
	*percent = 0;
	*at = PAL_OPS_NOW;
	if (PQntuples(r)) {
		*percent = (int)pal__ops_val_i64(r, 0, 0);
		*at = pal__ops_val_i64(r, 0, 1);
	}
	PQclear(r);
	return PAL_OK;
}

#define SHADOW_PENDING_MOVE                                                                        \
	PAL__TRIGGER_MOVE_WHERE(                                                                   \
	    "(t.state = 'pending' AND t.attempt_count = 0"                                         \
	    "  OR t.state = 'paused' AND t.last_error_class = 'handed_back')"                      \
	    " AND t.source IN ('schedule', 'catchup') AND " IN_SCOPE("t") " AND NOT " LIVE("t"),   \
	    "'shadow'", "NULL")

/* The planned schedule triggers of the scope (KIND, NAME) not attempted
 * yet (pending, or handed back by their executor before their instant
 * without a call: paused) and no longer live: -> shadow (the scope went
 * to shadow), through the door; how many into *MOVED unless it is NULL. */
static int shadow_pending(pal_store *st, const char *kind, const char *name, int64_t *moved,
			  char *err, size_t errlen)
{
	const char *pk[] = {kind, name};
	int64_t n;
	int rc = pal__ops_query_i64(st, "SELECT count(*) FROM " SHADOW_PENDING_MOVE " m", 2, pk, &n,
				    err, errlen);
	if (!rc && moved)
		*moved = n;
	return rc;
}

/* The scope's schedule triggers claimed ahead of their instant whose call
 * has not started (it starts when the database's clock reaches
 * next_attempt_at, else due_at), unless another scope keeps the job live:
 * running -> pausing, through the door.  An executor that sees it before
 * the instant hands it back without a call (it ends paused): told by
 * handback_notify, it renews its leases at once, and one that learns of it
 * only after the instant (the move committed within a few milliseconds of
 * it, or an executor of 0.3.0, which hears of a state at its next lease
 * renewal) calls it.  AND: more conditions. */
#define AHEAD_MOVE(live, and)                                                                      \
	PAL__TRIGGER_MOVE_WHERE(                                                                   \
	    "t.state = 'running' AND coalesce(t.next_attempt_at, t.due_at) > clock_timestamp()"    \
	    " AND t.source IN ('schedule', 'catchup') AND " IN_SCOPE("t") " AND NOT " live and,    \
	    "'pausing'", "NULL")

/* The executors holding the triggers AHEAD_MOVE asked to pause learn of
 * it at once (PAL__HANDBACK_NOTIFY), not at their next lease renewal. */
static int handback_notify(pal_store *st, char *err, size_t errlen)
{
	return pal__ops_notify(st, PAL__HANDBACK_NOTIFY, 0, NULL, err, errlen);
}

typedef struct set_ctx {
	const pal_scope *sc;
	const char *scope, *actor, *reason;
	bool already;
	int percent;
	int64_t moved, ahead, handed_back;
	int64_t since;	 /* the scope's shadow row's since, rounded up to the second */
	char *ahead_ids; /* text[] literal of the triggers asked to pause */
} set_ctx;

static int set_body(pal_store *st, void *vctx, char *err, size_t errlen)
{
	set_ctx *c = vctx;
	c->already = false;
	c->percent = 0;
	c->moved = c->ahead = 0;
	int rc = lock_shadow(st, c->sc, err, errlen);
	if (rc)
		return rc;
	int64_t at, ins = 0;
	if ((rc = latest_step(st, c->scope, &c->percent, &at, err, errlen)))
		return rc;
	const char *p[] = {c->scope, c->actor, c->reason};
	if ((rc = pal__ops_exec(st,
				"INSERT INTO shadow_scopes (scope, source, actor, reason)"
				" VALUES ($1, 'operator', $2, $3) ON CONFLICT (scope) DO NOTHING",
				3, p, &ins, err, errlen)) ||
	    (rc = pal__ops_query_i64(st,
				     "SELECT ceil(extract(epoch FROM since))::bigint"
				     " FROM shadow_scopes WHERE scope = $1",
				     1, p, &c->since, err, errlen)))
		return rc;
	if (!ins) {
		c->already = true;
		return PAL_OK;
	}
	const char *pk[] = {pal__ops_scope_kind(c->sc->kind), c->sc->name ? c->sc->name : ""};
	if ((rc = shadow_pending(st, pk[0], pk[1], &c->moved, err, errlen)))
		return rc;
	/* After the move, in a statement of its own: a claim that took a
	 * pending trigger before it has committed.  A first attempt only: a
	 * retry was attempted, and palisade finishes it.  The ones a pause
	 * gate asked to pause already are waited for too (the statement's
	 * snapshot sees the moved ones still running). */
	PGresult *r = pal__store_query(
	    st,
	    "WITH m AS (SELECT m.id FROM " AHEAD_MOVE(
		LIVE("t"), " AND t.attempt_count = 1") " m)"
					    " SELECT (SELECT count(*) FROM m), (SELECT "
					    "coalesce(array_agg(x.id), '{}')::text"
					    "  FROM (SELECT id FROM m UNION ALL SELECT t.id FROM "
					    "triggers t"
					    "   WHERE t.state = 'pausing' AND t.attempt_count = 1"
					    "    AND coalesce(t.next_attempt_at, t.due_at) > "
					    "clock_timestamp()"
					    "    AND t.source IN ('schedule', 'catchup') "
					    "AND " IN_SCOPE("t") " AND NOT " LIVE("t") ") x)",
	    2, pk, err, errlen);
	if (!r)
		return PAL_EDB;
	c->ahead = pal__ops_val_i64(r, 0, 0);
	if (c->ahead > 0 && (rc = handback_notify(st, err, errlen))) {
		PQclear(r);
		return rc;
	}
	free(c->ahead_ids);
	c->ahead_ids = strdup(PQgetvalue(r, 0, 1));
	PQclear(r);
	if (!c->ahead_ids) {
		snprintf(err, errlen, "out of memory");
		return PAL_ENOMEM;
	}
	return audit(st, c->actor, "shadow", c->scope, c->reason,
		     json_pack("{s:I, s:I}", "moved", (json_int_t)c->moved, "ahead_to_pausing",
			       (json_int_t)c->ahead),
		     err, errlen);
}

/* The claimed-ahead triggers the shadow asked to pause, handed back since
 * (paused, never called): -> shadow, through the door. */
static int set_after_body(pal_store *st, void *vctx, char *err, size_t errlen)
{
	set_ctx *c = vctx;
	int rc = lock_shadow(st, c->sc, err, errlen);
	if (rc)
		return rc;
	const char *p[] = {c->ahead_ids};
	return pal__ops_query_i64(st,
				  "SELECT count(*) FROM " PAL__TRIGGER_MOVE_WHERE(
				      "t.id = ANY ($1::bigint[]) AND t.state = 'paused'"
				      " AND NOT " LIVE("t"),
				      "'shadow'", "NULL") " m",
				  1, p, &c->handed_back, err, errlen);
}

static void fill_keys(json_t *rows);
static int kept_json(pal_store *st, const pal_scope *sc, json_t **out, char *err, size_t errlen);
/* pal_store_unfinished_json's bound for every instant: 9999-12-31T23:59:59Z */
#define EVERY_INSTANT INT64_C(253402300799)

/* How long `shadow` waits for the calls it asked to pause to reach their
 * instant (claim_ahead is at most 10 s). */
#define SHADOW_AHEAD_WAIT_MS 12000

int pal_store_shadow_set_json(pal_store *st, const pal_scope *sc, const char *actor,
			      const char *reason, json_t **out, char *err, size_t errlen)
{
	*out = NULL;
	char scope[200];
	pal_scope_format(sc, scope, sizeof scope);
	set_ctx c = {.sc = sc, .scope = scope, .actor = actor, .reason = reason};
	int rc = pal__ops_in_tx(st, set_body, &c, err, errlen);
	/* each one handed back at its instant, or called */
	bool waiting = c.ahead_ids && strcmp(c.ahead_ids, "{}");
	for (int64_t waited = 0, n = 1; !rc && waiting && n && waited < SHADOW_AHEAD_WAIT_MS;
	     waited += 100) {
		const char *p[] = {c.ahead_ids};
		if ((rc = pal__ops_query_i64(
			 st,
			 "SELECT count(*) FROM triggers t WHERE t.id = ANY ($1::bigint[])"
			 " AND t.state = 'pausing' AND coalesce(t.next_attempt_at, t.due_at)"
			 "  > clock_timestamp() - interval '1 second'",
			 1, p, &n, err, errlen)) ||
		    !n)
			break;
		usleep(100 * 1000);
	}
	if (!rc && waiting)
		rc = pal__ops_in_tx(st, set_after_body, &c, err, errlen);
	free(c.ahead_ids);
	json_t *kept = NULL;
	if (!rc)
		rc = kept_json(st, sc, &kept, err, errlen);
	if (rc)
		return rc;
	fill_keys(kept);
	char since[32];
	pal_fmt_rfc3339(c.since, since, sizeof since);
	*out =
	    json_pack("{s:s, s:b, s:i, s:s, s:I, s:I, s:o}", "scope", scope, "already", c.already,
		      "live_percent", c.percent, "since", since, "moved", (json_int_t)c.moved,
		      "handed_back", (json_int_t)c.handed_back, "in_flight", kept);
	return PAL_OK;
}

/* Of LIST (a JSON array of ids), those with no shadow row of their own,
 * appended to *OUT. */
static int spec_ignored(pal_store *st, const char *list, json_t *out, char *err, size_t errlen)
{
	json_t *ids = NULL;
	const char *p[] = {list};
	int rc = pal__store_query_json(
	    st,
	    "SELECT coalesce(json_agg(j ORDER BY j), '[]') FROM json_array_elements_text($1::json)"
	    " AS j WHERE NOT EXISTS (SELECT 1 FROM shadow_scopes s WHERE s.scope = 'job:' || j)",
	    1, p, &ids, err, errlen);
	if (!rc)
		json_array_extend(out, ids);
	json_decref(ids);
	return rc;
}

/* Of the jobs ADDED put in shadow, those a cut-over step already taken
 * makes live, and from when: moved from ADDED to COVERED. */
static int spec_covered(pal_store *st, json_t *added, json_t *covered, char *err, size_t errlen)
{
	char *list = json_dumps(added, JSON_COMPACT);
	if (!list) {
		snprintf(err, errlen, "out of memory");
		return PAL_ENOMEM;
	}
	json_t *rows = NULL;
	const char *p[] = {list};
	int rc = pal__store_query_json(
	    st,
	    "SELECT coalesce(json_agg(json_build_object('job_id', job_id, 'live_from',"
	    "  to_char(f AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), 'now', f <= now())"
	    "  ORDER BY job_id), '[]') FROM ("
	    " SELECT j.job_id, min(greatest(c.at, now())) AS f FROM jobs j"
	    " JOIN cutover_steps c ON c.scope IN ('global', 'job:' || j.job_id,"
	    "  'group:' || j.resource_group, 'tenant:' || j.tenant)"
	    " WHERE j.job_id IN (SELECT json_array_elements_text($1::json))"
	    "  AND palisade_trigger_live(j.job_id, j.tenant, j.resource_group,"
	    "   greatest(c.at, now()))"
	    " GROUP BY j.job_id) x",
	    1, p, &rows, err, errlen);
	free(list);
	size_t i;
	json_t *row;
	json_array_foreach(rows, i, row)
	{
		const char *id = json_string_value(json_object_get(row, "job_id"));
		for (size_t k = 0; k < json_array_size(added); k++)
			if (!strcmp(json_string_value(json_array_get(added, k)), id)) {
				json_array_remove(added, k);
				break;
			}
		json_array_append(covered, row);
	}
	json_decref(rows);
	return rc;
}

int pal_store_shadow_spec(pal_store *st, const json_t *ids, const json_t *live, const char *actor,
			  json_t *added, json_t *ignored, json_t *covered, char *err, size_t errlen)
{
	if (json_array_size(live)) {
		char *l = json_dumps(live, JSON_COMPACT);
		int rc = l ? spec_ignored(st, l, ignored, err, errlen) : PAL_ENOMEM;
		if (!l)
			snprintf(err, errlen, "out of memory");
		free(l);
		if (rc)
			return rc;
	}
	if (!json_array_size(ids))
		return PAL_OK;
	pal_scope any = {PAL_SCOPE_GLOBAL, NULL};
	int rc = lock_tables(st, &any, err, errlen);
	if (rc)
		return rc;
	char *list = json_dumps(ids, JSON_COMPACT);
	if (!list) {
		snprintf(err, errlen, "out of memory");
		return PAL_ENOMEM;
	}
	const char *p[] = {list, actor};
	PGresult *r = pal__store_query(
	    st,
	    "WITH n AS (INSERT INTO shadow_scopes (scope, source, actor, reason)"
	    "  SELECT 'job:' || j, 'spec', $2, 'mode: shadow in the job file'"
	    "  FROM json_array_elements_text($1::json) AS j"
	    "  ON CONFLICT (scope) DO NOTHING RETURNING substr(scope, 5) AS job_id),"
	    " a AS (INSERT INTO audit_log (actor, action, scope, reason, details)"
	    "  SELECT $2, 'shadow', 'job:' || n.job_id, 'mode: shadow in the job file',"
	    "   json_build_object('source', 'spec')::jsonb FROM n)"
	    " SELECT job_id FROM n ORDER BY job_id",
	    2, p, err, errlen);
	free(list);
	if (!r)
		return PAL_EDB;
	for (int i = 0; i < PQntuples(r); i++)
		json_array_append_new(added, json_string(PQgetvalue(r, i, 0)));
	PQclear(r);
	if (!json_array_size(added))
		return PAL_OK;
	/* statements of their own: palisade_trigger_live() sees the new rows */
	size_t i;
	json_t *id;
	json_array_foreach(added, i, id)
	{
		int64_t filled;
		if ((rc = pal__store_fill_nominal_scope(st, "job", json_string_value(id), &filled,
							err, errlen)) ||
		    (rc = shadow_pending(st, "job", json_string_value(id), NULL, err, errlen)))
			return rc;
	}
	return spec_covered(st, added, covered, err, errlen);
}

/*
 * The scopes in shadow (shadow_scopes) and those with cut-over steps but no
 * row of their own (source "steps": a group, tenant or the cluster whose
 * jobs are in shadow by their files' `mode: shadow`), by scope.  percent:
 * the scope's latest step; for a job, the greatest latest step of the
 * scopes covering it (itself, its group, its tenant, global; those taken
 * before a roll-back of the job left out, as palisade_trigger_live() reads
 * them), percent_from the scope that gave it (null: no step).
 */
int pal__store_shadow_query(pal_store *st, const char *after, int limit, json_t **out, char *err,
			    size_t errlen)
{
	char l[16];
	snprintf(l, sizeof l, "%d", limit);
	const char *p[] = {after, limit > 0 ? l : NULL};
	return pal__store_query_json(
	    st,
	    "SELECT coalesce(json_agg(json_build_object('scope', s.scope, 'source', s.source,"
	    "  'actor', s.actor, 'reason', s.reason, '_c', s.scope, 'since', " TS("s.since") ","
	    "  'percent', coalesce(pc.percent, 0), 'percent_from', pc.scope,"
	    "  'steps', coalesce((SELECT json_agg(json_build_object('at', " TS("c.at") ","
	    "    'percent', c.percent, 'actor', c.actor, 'reason', c.reason) ORDER BY c.id)"
	    "    FROM cutover_steps c WHERE c.scope = s.scope), '[]'))"
	    "  ORDER BY s.scope), '[]')::text"
	    " FROM (SELECT * FROM (SELECT scope, source, actor, reason, since FROM shadow_scopes"
	    "   UNION ALL (SELECT DISTINCT ON (c.scope) c.scope, 'steps', c.actor, c.reason,"
	    "    min(c.at) OVER (PARTITION BY c.scope) FROM cutover_steps c"
	    "    WHERE NOT EXISTS (SELECT 1 FROM shadow_scopes w WHERE w.scope = c.scope)"
	    "    ORDER BY c.scope, c.id DESC)) u"
	    "  WHERE $1::text IS NULL OR scope > $1 ORDER BY scope LIMIT $2::int) s"
	    " LEFT JOIN jobs j ON s.scope = 'job:' || j.job_id"
	    " LEFT JOIN LATERAL (SELECT c.scope, c.percent FROM (SELECT DISTINCT ON (c.scope)"
	    "    c.scope, c.id, c.percent FROM cutover_steps c WHERE c.scope = s.scope"
	    "    OR (j.job_id IS NOT NULL AND c.scope IN ('global', 'group:' || j.resource_group,"
	    "     'tenant:' || j.tenant)) ORDER BY c.scope, c.id DESC) c"
	    "   WHERE c.id >= coalesce((SELECT max(r.id) FROM cutover_steps r"
	    "    WHERE j.job_id IS NOT NULL AND r.scope = s.scope AND r.percent = 0), 0)"
	    "   ORDER BY c.percent DESC, c.scope = s.scope DESC LIMIT 1) pc ON true",
	    2, p, out, err, errlen);
}

int pal_store_shadow_list_json(pal_store *st, json_t **out, char *err, size_t errlen)
{
	return pal__store_whole_list(pal__store_shadow_query(st, NULL, 0, out, err, errlen), out);
}

int pal_store_stoplines_json(pal_store *st, const pal_scope *sc, json_t **out, char *err,
			     size_t errlen)
{
	char scope[200];
	pal_scope_format(sc, scope, sizeof scope);
	const char *p[] = {pal__ops_scope_kind(sc->kind), sc->name ? sc->name : "", scope};
	/* since: the scope's latest step; the baseline: as long before it */
	return pal__store_query_json(
	    st,
	    "WITH s AS (SELECT coalesce((SELECT c.at FROM cutover_steps c WHERE c.scope = $3"
	    "   ORDER BY c.id DESC LIMIT 1), now()) AS since)"
	    " SELECT json_build_object('since', " TS(
		"s.since") ","
			   "  'open_tickets', (SELECT count(*) FROM tickets k JOIN jobs t ON "
			   "t.job_id = k.job_id"
			   "    WHERE k.state = 'open' AND " IN_SCOPE(
			       "t") "),"
				    "  'oldest_pending_s', (SELECT coalesce(floor(extract(epoch "
				    "FROM now() - min(t.due_at))),"
				    "    0)::bigint FROM triggers t WHERE t.state = 'pending' AND "
				    "t.due_at < now()"
				    "    AND " IN_SCOPE(
					"t") "),"
					     "  'fenced', (SELECT count(*) FROM attempt_ledger a "
					     "JOIN "
					     "triggers t ON t.id = a.trigger_id"
					     "    AND t.scheduled_at = a.scheduled_at WHERE "
					     "a.outcome = 'fenced'"
					     "    AND a.claimed_at >= s.since AND " IN_SCOPE(
						 "t") "),"
						      "  'fenced_baseline', (SELECT count(*) FROM "
						      "attempt_ledger a JOIN triggers t"
						      "    ON t.id = a.trigger_id AND "
						      "t.scheduled_at = a.scheduled_at"
						      "    WHERE a.outcome = 'fenced' AND "
						      "a.claimed_at >= s.since - (now() - s.since)"
						      "    AND a.claimed_at < s.since "
						      "AND " IN_SCOPE("t") "))::text FROM s",
	    3, p, out, err, errlen);
}

/* The shadow triggers of the scope ($1, $2) whose nominal instant is $3
 * (epoch s) or later that the step makes live: shadow -> pending, through
 * the door (one moved by spread or jitter from before $3 to after it is
 * the old system's, which fires it before the step).  A
 * retired job's instants planned ahead stay shadow: the retirement
 * cancelled its live ones. */
#define CUT_MOVE                                                                                   \
	PAL__TRIGGER_MOVE_WHERE(                                                                   \
	    "t.state = 'shadow' AND " NOM("t") " >= to_timestamp($3::bigint)"                     \
	    " AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.job_id = t.job_id"                      \
	    " AND j.retired_at IS NOT NULL) AND " IN_SCOPE("t") " AND " LIVE("t"),                 \
	    "'pending'", "NULL")

/* The chains with a job in the scope ($1, $2) whose dependent job and
 * upstream are on two sides at $3, one live and one shadow
 * (docs/migrating.md, "Chains of jobs"), with both jobs' tenants (the API
 * leaves out the chains a token limited to tenants does not see). */
#define SPLIT_CHAINS_SQL                                                                           \
	"SELECT coalesce(json_agg(json_build_object('job', t.job_id, 'upstream', u.job_id,"        \
	"  'job_live', t.live, 'job_tenant', t.tenant, 'upstream_tenant', u.tenant)"               \
	"  ORDER BY t.job_id, u.job_id), '[]')::text"                                              \
	" FROM (SELECT j.job_id, j.tenant, j.resource_group, v.spec -> 'after' AS deps,"           \
	"   " LIVE_AT(                                                                             \
	    "j",                                                                                   \
	    "to_timestamp($3::bigint)") " AS live"                                                 \
					"   FROM jobs j JOIN job_versions v ON v.job_id = "        \
					"j.job_id"                                                 \
					"    AND v.version = coalesce(j.active_version, "          \
					"j.latest_version)"                                        \
					"  WHERE v.spec ? 'after' AND j.retired_at IS NULL) t"     \
					" CROSS JOIN jsonb_array_elements(t.deps) d(x)"            \
					" JOIN jobs u ON u.job_id = d.x ->> 'job' AND "            \
					"u.retired_at IS NULL"                                     \
					" WHERE (" IN_SCOPE("t") " OR " IN_SCOPE(                  \
					    "u") ")"                                               \
						 "  AND t.live <> " LIVE_AT(                       \
						     "u", "to_timestamp($3::bigint)")

typedef struct cut_ctx {
	const pal_scope *sc;
	const char *scope, *actor, *reason;
	int percent;
	int64_t at;
	pal_cutover_result *res;
} cut_ctx;

static int cut_body(pal_store *st, void *vctx, char *err, size_t errlen)
{
	cut_ctx *c = vctx;
	pal_cutover_result *res = c->res;
	json_decref(res->split); /* a retried transaction's */
	json_decref(res->made_live);
	memset(res, 0, sizeof *res);
	int rc = lock_shadow(st, c->sc, err, errlen);
	if (rc)
		return rc;
	const char *pk[] = {pal__ops_scope_kind(c->sc->kind), c->sc->name ? c->sc->name : ""};
	int64_t shadowed;
	if ((rc = pal__ops_query_i64(
		 st,
		 "SELECT count(*) FROM jobs t WHERE " IN_SCOPE(
		     "t") " AND EXISTS (SELECT 1 FROM shadow_scopes s WHERE s.scope IN"
			  "  ('global', 'job:' || t.job_id, 'group:' || t.resource_group,"
			  "   'tenant:' || t.tenant))",
		 2, pk, &shadowed, err, errlen)))
		return rc;
	if (!shadowed) {
		snprintf(err, errlen,
			 "no job of %s is in shadow: a cut-over moves jobs from shadow to live; "
			 "hint: palisade shadow --%s first, or it is live already",
			 c->scope, pal__ops_scope_kind(c->sc->kind));
		return PAL_ENOENT;
	}
	if ((rc =
		 latest_step(st, c->scope, &res->previous_percent, &res->previous_at, err, errlen)))
		return rc;
	if (c->percent <= res->previous_percent) {
		snprintf(err, errlen,
			 "%s is cut over to %d %% already: a step only widens; hint: a higher "
			 "--percent, or palisade rollback to go back",
			 c->scope, res->previous_percent);
		return PAL_EINVAL;
	}
	char at[24], pc[8];
	pal__ops_i64s(at, sizeof at, c->at);
	snprintf(pc, sizeof pc, "%d", c->percent);
	/* a step before the latest one would be overridden by it from its
	 * instant on (a narrowing then), and after a roll-back it would make
	 * live again the instants the roll-back handed back */
	const char *pb[] = {c->scope, at};
	int64_t before;
	if ((rc = pal__ops_query_i64(st,
				     "SELECT count(*) FROM (SELECT at FROM cutover_steps"
				     "  WHERE scope = $1 ORDER BY id DESC LIMIT 1) l"
				     " WHERE l.at > to_timestamp($2::bigint)",
				     2, pb, &before, err, errlen)))
		return rc;
	if (before) {
		char prev[32];
		pal_fmt_rfc3339(res->previous_at, prev, sizeof prev);
		snprintf(err, errlen,
			 "--at is before the latest step of %s (%d %% from %s, within its "
			 "second): a step takes effect from its instant on, never before the "
			 "one it follows; hint: an --at after it",
			 c->scope, res->previous_percent, prev);
		return PAL_EINVAL;
	}
	/* the active jobs of the scope that are shadow at AT before the step:
	 * those of them live after it are the ones it makes live */
	const char *pm[] = {pk[0], pk[1], at};
	PGresult *r = pal__store_query(
	    st,
	    "SELECT coalesce(array_agg(t.job_id ORDER BY t.job_id), '{}')::text FROM jobs t"
	    " WHERE " IN_SCOPE("t") " AND t.retired_at IS NULL"
				    "  AND NOT palisade_trigger_live(t.job_id, t.tenant,"
				    "   t.resource_group, to_timestamp($3::bigint))",
	    3, pm, err, errlen);
	if (!r)
		return PAL_EDB;
	char *shadow_before = strdup(PQgetvalue(r, 0, 0));
	PQclear(r);
	if (!shadow_before) {
		snprintf(err, errlen, "out of memory");
		return PAL_ENOMEM;
	}
	const char *ps[] = {c->scope, at, pc, c->actor, c->reason};
	if ((rc = pal__ops_exec(st,
				"INSERT INTO cutover_steps (scope, at, percent, actor, reason)"
				" VALUES ($1, to_timestamp($2::bigint), $3::int, $4, $5)",
				5, ps, NULL, err, errlen))) {
		free(shadow_before);
		return rc;
	}
	const char *pl[] = {shadow_before, at};
	rc = pal__store_query_json(
	    st,
	    "SELECT coalesce(json_agg(t.job_id ORDER BY t.job_id), '[]')"
	    " FROM unnest($1::text[]) b(job_id)"
	    " JOIN jobs t ON t.job_id = b.job_id"
	    " WHERE palisade_trigger_live(t.job_id, t.tenant, t.resource_group,"
	    "  to_timestamp($2::bigint))",
	    2, pl, &res->made_live, err, errlen);
	free(shadow_before);
	if (rc)
		return rc;
	if ((rc = pal__ops_query_i64(st, "SELECT count(*) FROM " CUT_MOVE " m", 3, pm, &res->moved,
				     err, errlen)))
		return rc;
	if ((rc = pal__ops_query_i64(st, "SELECT count(*) FROM jobs t WHERE " IN_SCOPE("t"), 2, pk,
				     &res->jobs, err, errlen)) ||
	    (rc = pal__ops_query_i64(st,
				     "SELECT count(*) FROM jobs t WHERE " IN_SCOPE(
					 "t") " AND palisade_trigger_live(t.job_id, t.tenant,"
					      "  t.resource_group, to_timestamp($3::bigint))",
				     3, pm, &res->live_jobs, err, errlen)) ||
	    (rc = pal__store_query_json(st, SPLIT_CHAINS_SQL, 3, pm, &res->split, err, errlen)))
		return rc;
	return audit(st, c->actor, "cutover", c->scope, c->reason,
		     json_pack("{s:i, s:I, s:i, s:I, s:I, s:I}", "percent", c->percent, "at",
			       (json_int_t)c->at, "previous_percent", res->previous_percent, "jobs",
			       (json_int_t)res->jobs, "live_jobs", (json_int_t)res->live_jobs,
			       "moved", (json_int_t)res->moved),
		     err, errlen);
}

int pal_store_cutover(pal_store *st, const pal_scope *sc, int percent, int64_t at,
		      const char *actor, const char *reason, bool dry_run, pal_cutover_result *res,
		      char *err, size_t errlen)
{
	char scope[200];
	pal_scope_format(sc, scope, sizeof scope);
	*res = (pal_cutover_result){0}; /* defined on every return, an error's too */
	cut_ctx c = {sc, scope, actor, reason, percent, at, res};
	if (!dry_run)
		return pal__ops_in_tx(st, cut_body, &c, err, errlen);
	if (pal__store_exec(st, "BEGIN", err, errlen))
		return PAL_EDB;
	int rc = cut_body(st, &c, err, errlen);
	pal__store_rollback(st);
	return rc;
}

/* Every waiting schedule trigger of the scope ($1, $2), the due ones too
 * (they were live instants, and the old system takes them over), unless
 * another scope keeps its job live, and that also matches AND: -> shadow
 * with the error class 'rolled_back', through the door. */
#define BACK_MOVE(and)                                                                             \
	PAL__TRIGGER_MOVE_WHERE(                                                                   \
	    "t.state IN ('pending', 'retry_wait', 'paused')"                                       \
	    " AND t.source IN ('schedule', 'catchup') AND " IN_SCOPE("t") " AND NOT " LIVE_NOW("t") and, \
	    "'shadow'", "'rolled_back'")

/* The scope's calls in flight, but of jobs another scope keeps live. */
#define FLYING_WHERE                                                                               \
	" t.state IN ('running', 'pausing', 'cancelling') AND " IN_SCOPE("t") " AND NOT " LIVE_NOW("t")

typedef struct back_ctx {
	const pal_scope *sc;
	const char *scope, *actor, *reason;
	int64_t handed_back, later, at, ahead, flying;
} back_ctx;

/*
 * The roll-back's transaction.  The waiting triggers are locked first: a
 * claim that took one meanwhile has committed when that statement ends,
 * and none can take one after it.  Then the calls in flight are final:
 * AT is the later of now and the last of their nominal instants, so every
 * nominal instant up to AT is either palisade's (finished) or listed, and
 * none after it is ever called by palisade: the old system's, even when
 * spread or jitter moved one from before AT to after it.
 */
static int back_body(pal_store *st, void *vctx, char *err, size_t errlen)
{
	back_ctx *c = vctx;
	c->handed_back = c->later = c->ahead = c->flying = 0;
	int rc = lock_shadow(st, c->sc, err, errlen);
	if (rc)
		return rc;
	const char *p[] = {c->scope, c->actor, c->reason};
	if ((rc = pal__ops_exec(st,
				"INSERT INTO shadow_scopes (scope, source, actor, reason)"
				" VALUES ($1, 'operator', $2, $3) ON CONFLICT (scope) DO NOTHING",
				3, p, NULL, err, errlen)) ||
	    (rc = pal__ops_exec(st,
				"INSERT INTO cutover_steps (scope, at, percent, actor, reason)"
				" VALUES ($1, now(), 0, $2, $3)",
				3, p, NULL, err, errlen)))
		return rc;
	const char *pk[] = {pal__ops_scope_kind(c->sc->kind), c->sc->name ? c->sc->name : ""};
	int64_t locked;
	if ((rc = pal__ops_query_i64(st,
				     "SELECT count(*) FROM (SELECT 1 FROM triggers t"
				     " WHERE t.state IN ('pending', 'retry_wait', 'paused')"
				     "  AND t.source IN ('schedule', 'catchup') AND " IN_SCOPE(
					 "t") " FOR UPDATE OF t) l",
				     2, pk, &locked, err, errlen)) ||
	    (rc = pal__ops_query_i64(st, "SELECT count(*) FROM " AHEAD_MOVE(LIVE_NOW("t"), "") " m", 2, pk,
				     &c->ahead, err, errlen)) ||
	    (c->ahead > 0 && (rc = handback_notify(st, err, errlen))))
		return rc;
	PGresult *r = pal__store_query(st,
				       "SELECT greatest(floor(extract(epoch FROM now())),"
				       " ceil(extract(epoch FROM max(" NOM("t") "))))::bigint,"
				       " count(*) FROM triggers t WHERE" FLYING_WHERE,
				       2, pk, err, errlen);
	if (!r)
		return PAL_EDB;
	c->at = pal__ops_val_i64(r, 0, 0);
	c->flying = pal__ops_val_i64(r, 0, 1);
	PQclear(r);
	char at[24];
	pal__ops_i64s(at, sizeof at, c->at);
	const char *pa[] = {pk[0], pk[1], at};
	if (!(r = pal__store_query(
		  st,
		  "WITH m AS (SELECT coalesce(o.nominal_at, x.scheduled_at)"
		  "  <= to_timestamp($3::bigint) AS due FROM " BACK_MOVE("") " x"
		  /* the row as the statement began: its nominal_at (the door
		   * answers the scheduled_at) */
		  "  LEFT JOIN triggers o ON o.id = x.id AND o.scheduled_at = x.scheduled_at)"
		  " SELECT count(*) FILTER (WHERE due),"
					 " count(*) FILTER (WHERE NOT due) FROM m",
		  3, pa, err, errlen)))
		return PAL_EDB;
	c->handed_back = pal__ops_val_i64(r, 0, 0);
	c->later = pal__ops_val_i64(r, 0, 1);
	PQclear(r);
	return audit(st, c->actor, "rollback", c->scope, c->reason,
		     json_pack("{s:I, s:I, s:I, s:I}", "handed_back", (json_int_t)c->handed_back,
			       "later", (json_int_t)c->later, "at", (json_int_t)c->at,
			       "ahead_to_pausing", (json_int_t)c->ahead),
		     err, errlen);
}

/* After the wait: what the calls in flight at the roll-back left waiting
 * up to its instant (a claimed-ahead call handed back, paused; a failed
 * one in retry_wait) goes to shadow as the roll-back moved the rest. */
static int back_after_body(pal_store *st, void *vctx, char *err, size_t errlen)
{
	back_ctx *c = vctx;
	int rc = lock_shadow(st, c->sc, err, errlen);
	if (rc)
		return rc;
	char at[24];
	pal__ops_i64s(at, sizeof at, c->at);
	const char *pa[] = {pal__ops_scope_kind(c->sc->kind), c->sc->name ? c->sc->name : "", at};
	int64_t n;
	if ((rc = pal__ops_query_i64(st,
				     "SELECT count(*) FROM " BACK_MOVE(
					 " AND " NOM("t") " <= to_timestamp($3::bigint)") " m",
				     3, pa, &n, err, errlen)))
		return rc;
	c->handed_back += n;
	return PAL_OK;
}

/* The dependent instants of the calls in flight the answer lists: for
 * each upstream call of the scope still in flight up to $3 (epoch s), the
 * instant of every job whose version in force then waits for it (`after`),
 * each partition it waits on, is planned now, shadow, handed back
 * ('rolled_back').  The old system takes the upstream instant over, and in
 * its chain that run starts the dependent one; palisade, finishing the call,
 * finds the dependent instant decided and plans nothing.  An instant
 * palisade decided already is left as it is and not listed: one planned
 * (its upstream had ended, so the call is not listed), or one given up, an
 * upstream_late or upstream_failed misfire (the row that covers it, as
 * palisade_plan_after finds it): palisade never runs that one.  A
 * mark on the upstream trigger would not do: the result commit writes its
 * error class, a 0.3.0 node's too.  Run before the answer's rows are read,
 * so an upstream call listed in flight has its dependent instants
 * listed (with the upstream's nominal instant: listed by it as the
 * upstream is). */
#define FOLLOW_INSERT                                                                              \
	"WITH up AS (SELECT DISTINCT t.job_id, t.scheduled_at, t.nominal_at, t.partition,"         \
	"  uv.partitions"                                                                           \
	"  FROM triggers t JOIN job_versions uv ON uv.job_id = t.job_id AND uv.version = t.version" \
	"  WHERE t.request_id IS NULL AND " NOM("t") " <= to_timestamp($3::bigint) AND"           \
	FLYING_WHERE "), ins AS ("                                                                 \
	"INSERT INTO triggers (job_id, version, scheduled_at, partition, source, priority, due_at," \
	" shard, tenant, resource_group, job_ref, state, last_error_class, nominal_at)"             \
	" SELECT DISTINCT j.job_id, v.version, u.scheduled_at, p, 'schedule', v.priority,"         \
	"  u.scheduled_at, j.shard, j.tenant, j.resource_group, j.ref, 'shadow', 'rolled_back',"   \
	"  u.nominal_at"                                                                            \
	" FROM up u CROSS JOIN jobs j"                                                              \
	" CROSS JOIN LATERAL (SELECT x.version, x.partitions, x.priority, x.spec FROM job_versions x" \
	"   WHERE x.job_id = j.job_id AND x.effective_from <= u.scheduled_at"                      \
	"   ORDER BY x.version DESC LIMIT 1) v"                                                     \
	" CROSS JOIN generate_series(0, v.partitions - 1) p"                                        \
	" WHERE j.retired_at IS NULL"                                                               \
	"  AND v.spec -> 'after' @> jsonb_build_array(jsonb_build_object('job', u.job_id))"        \
	"  AND (u.partitions IS DISTINCT FROM v.partitions OR p = u.partition)"                     \
	"  AND NOT EXISTS (SELECT 1 FROM (SELECT m.range_to FROM misfires m"                        \
	"   WHERE m.job_id = j.job_id AND m.range_from <= u.scheduled_at"                          \
	"    AND m.reason IN ('upstream_failed', 'upstream_late')"                                  \
	"    AND (m.partition IS NULL OR m.partition = p)"                                          \
	"   ORDER BY m.range_from DESC LIMIT 1) m WHERE m.range_to >= u.scheduled_at)"             \
	" ON CONFLICT (job_id, scheduled_at, partition) WHERE request_id IS NULL DO NOTHING"        \
	" RETURNING 1) SELECT count(*) FROM ins"

int pal_store_rollback(pal_store *st, const pal_scope *sc, const char *actor, const char *reason,
		       int64_t *handed_back, int64_t *later, int64_t *at, char *err, size_t errlen)
{
	char scope[200];
	pal_scope_format(sc, scope, sizeof scope);
	back_ctx c = {sc, scope, actor, reason, 0, 0, 0, 0, 0};
	int rc = pal__ops_in_tx(st, back_body, &c, err, errlen);
	*handed_back = c.handed_back;
	*later = c.later;
	*at = c.at;
	return rc;
}

int pal_store_scope_in_flight(pal_store *st, const pal_scope *sc, int64_t *n, char *err,
			      size_t errlen)
{
	const char *pk[] = {pal__ops_scope_kind(sc->kind), sc->name ? sc->name : ""};
	return pal__ops_query_i64(st,
				  "SELECT count(*) FROM triggers t"
				  " WHERE t.state IN ('running', 'pausing', 'cancelling')"
				  "  AND " IN_SCOPE("t"),
				  2, pk, n, err, errlen);
}

/* The unfinished triggers of SC up to BEFORE (epoch s) in a state STATES
 * (an SQL condition on t), but of jobs another scope keeps live, as
 * pal_store_unfinished_json()'s rows. */
#define UNFINISHED_SQL(states)                                                                     \
	"SELECT coalesce(json_agg(json_build_object('id', t.id, 'job_id', t.job_id,"               \
	"  'scheduled_at', " TS(                                                                   \
	    "t.scheduled_at") ", 'nominal_at', " TS("t.nominal_at") ", 'partition', t.partition,"   \
			      "  'state', t.state, 'version', t.version, 'request_id', "           \
			      "t.request_id,"                                                      \
			      "  'idempotency_key', la.idempotency_key,"                           \
			      "  'key_template', v.idempotency_key, 'timezone', v.timezone,"       \
			      "  'scheduled_date', to_char(t.scheduled_at AT TIME ZONE "           \
			      "v.timezone, 'YYYY-MM-DD'),"                                         \
			      "  'last_outcome', CASE WHEN la.fence IS NOT NULL THEN "             \
			      "json_build_object("                                                 \
			      "    'outcome', la.outcome, 'error_class', la.error_class,"          \
			      "    'http_status', la.http_status) END,"                            \
			      "  'unknown_outcome', t.outcome_unknown OR t.state = 'unknown',"     \
			      "  'in_flight', t.state IN ('running', 'pausing', 'cancelling'),"    \
			      "  'attempts', t.attempt_count) ORDER BY t.scheduled_at, t.job_id, " \
			      "t.partition),"                                                      \
			      "  '[]')::text"                                                      \
			      " FROM triggers t JOIN job_versions v ON v.job_id = t.job_id AND "   \
			      "v.version = t.version"                                              \
			      " LEFT JOIN LATERAL (SELECT a.fence, a.idempotency_key, a.outcome, " \
			      "a.error_class,"                                                     \
			      "   a.http_status FROM attempt_ledger a WHERE a.trigger_id = t.id"   \
			      "   AND a.scheduled_at = t.scheduled_at ORDER BY a.fence DESC "      \
			      "LIMIT 1) la ON true"                                                \
			      " WHERE " NOM("t") " <= to_timestamp($3::bigint) AND " IN_SCOPE(  \
				  "t") " AND (" states ")"                                         \
				       "  AND NOT " LIVE_NOW("t")

/* SQL (UNFINISHED_SQL) for the scope SC up to BEFORE */
static int unfinished_rows(pal_store *st, const pal_scope *sc, int64_t before, const char *sql,
			   json_t **out, char *err, size_t errlen)
{
	char b[24];
	pal__ops_i64s(b, sizeof b, before);
	const char *p[] = {pal__ops_scope_kind(sc->kind), sc->name ? sc->name : "", b};
	return pal__store_query_json(st, sql, 3, p, out, err, errlen);
}

int pal_store_unfinished_json(pal_store *st, const pal_scope *sc, int64_t before, json_t **out,
			      char *err, size_t errlen)
{
	return unfinished_rows(
	    st, sc, before,
	    UNFINISHED_SQL("t.state IN ('running', 'pausing', 'cancelling', 'unknown', 'manual')"
			   " OR (t.state = 'shadow' AND t.last_error_class = 'rolled_back')"),
	    out, err, errlen);
}

/* What `shadow` leaves to palisade: every unfinished trigger of SC that is
 * not shadow (a call in flight, a retry, a paused one, a due instant from
 * before the command still waiting, one of unknown outcome or waiting for
 * a person), as pal_store_unfinished_json()'s rows. */
static int kept_json(pal_store *st, const pal_scope *sc, json_t **out, char *err, size_t errlen)
{
	return unfinished_rows(
	    st, sc, EVERY_INSTANT,
	    UNFINISHED_SQL("t.state IN ('pending', 'retry_wait', 'paused', 'running', 'pausing',"
			   " 'cancelling', 'unknown', 'manual')"),
	    out, err, errlen);
}

int pal_store_scope_jobs_json(pal_store *st, const pal_scope *sc, json_t **out, char *err,
			      size_t errlen)
{
	const char *pk[] = {pal__ops_scope_kind(sc->kind), sc->name ? sc->name : ""};
	return pal__store_query_json(
	    st,
	    "SELECT coalesce(json_agg(t.job_id ORDER BY t.job_id), '[]')::text"
	    " FROM jobs t WHERE " IN_SCOPE("t"),
	    2, pk, out, err, errlen);
}

/* The key each unfinished trigger's calls send: its last attempt's, else
 * rendered from its version's template as the executor would. */
static void fill_keys(json_t *rows)
{
	size_t i;
	json_t *r;
	json_array_foreach(rows, i, r)
	{
		if (json_is_string(json_object_get(r, "idempotency_key")))
			goto drop;
		int64_t at;
		if (pal_parse_rfc3339(json_string_value(json_object_get(r, "scheduled_at")), &at))
			goto drop;
		const char *rid = json_string_value(json_object_get(r, "request_id"));
		pal_tpl_vars v = {
		    .job = json_string_value(json_object_get(r, "job_id")),
		    .scheduled_at = at,
		    .scheduled_date = json_string_value(json_object_get(r, "scheduled_date")),
		    .partition = (int)json_integer_value(json_object_get(r, "partition")),
		    .trigger = json_integer_value(json_object_get(r, "id")),
		    .request_id = rid ? rid : "",
		};
		char *key = NULL, err[256];
		if (!pal_tpl_render_key(json_string_value(json_object_get(r, "key_template")), &v,
					&key, err, sizeof err))
			json_object_set_new(r, "idempotency_key", json_string(key));
		free(key);
	drop:
		if (json_is_null(json_object_get(r, "nominal_at")))
			json_object_del(r, "nominal_at"); /* not moved: its scheduled_at */
		json_object_del(r, "key_template");
		json_object_del(r, "scheduled_date");
		json_object_del(r, "timezone");
	}
}

int pal_store_rollback_json(pal_store *st, const pal_scope *sc, const char *actor,
			    const char *reason, int64_t wait_ms, json_t **out, char *err,
			    size_t errlen)
{
	*out = NULL;
	char scope[200], ts[32];
	pal_scope_format(sc, scope, sizeof scope);
	back_ctx c = {sc, scope, actor, reason, 0, 0, 0, 0, 0};
	int64_t flying = 0;
	int rc = pal__ops_in_tx(st, back_body, &c, err, errlen);
	/* running calls finish or reach a safe point */
	for (int64_t waited = 0; !rc; waited += 200) {
		if ((rc = pal_store_scope_in_flight(st, sc, &flying, err, errlen)) || !flying ||
		    waited >= wait_ms)
			break;
		usleep(200 * 1000);
	}
	if (!rc && c.flying)
		rc = pal__ops_in_tx(st, back_after_body, &c, err, errlen);
	if (!rc && flying) {
		char at[24];
		pal__ops_i64s(at, sizeof at, c.at);
		const char *pa[] = {pal__ops_scope_kind(sc->kind), sc->name ? sc->name : "", at};
		int64_t followed = 0;
		rc = pal__ops_query_i64(st, FOLLOW_INSERT, 3, pa, &followed, err, errlen);
		c.handed_back += followed;
	}
	json_t *rows = NULL;
	if (!rc)
		rc = pal_store_unfinished_json(st, sc, c.at, &rows, err, errlen);
	if (rc)
		return rc;
	fill_keys(rows);
	pal_fmt_rfc3339(c.at, ts, sizeof ts);
	*out = json_pack("{s:s, s:s, s:I, s:I, s:I, s:o}", "scope", scope, "at", ts, "handed_back",
			 (json_int_t)c.handed_back, "later", (json_int_t)c.later, "in_flight",
			 (json_int_t)flying, "unfinished", rows);
	return PAL_OK;
}
