/* store_int.h - what the files of src/store share and nobody else needs. */
#ifndef PALISADE_STORE_INT_H
#define PALISADE_STORE_INT_H

#include <glib.h>
#include <jansson.h>
#include <libpq-fe.h>
#include <stdint.h>
#include "palisade/jobspec.h"
#include "palisade/store.h"

struct pal_store {
	PGconn *conn;
	char sqlstate[6];  /* of the last failed query, "" when none */
	bool busy;	   /* an asynchronous statement is in flight */
	unsigned prepared; /* PAL__PREP_* bits: statements prepared on this connection */
	bool pooled;	   /* through a transaction pooler: no session state (pal_store_open) */
	/* the jobs of the last committed apply whose new version took over
	 * at the apply, until pal_store_apply_settle sweeps them again */
	struct pal__takeover *takeover;
};

/* The network side of a connection: libpq's connect_timeout (s),
 * tcp_user_timeout (ms), keepalives_idle, _interval (s) and _count, and
 * fallback_application_name; keepalives are always on. */
typedef struct pal__store_net {
	const char *connect_timeout, *tcp_user_timeout;
	const char *keepalives_idle, *keepalives_interval, *keepalives_count;
	const char *application;
} pal__store_net;
/* The one connection set-up of every pal_store: connect to CONNINFO
 * (non-empty; expanded in dbname's place, so its keys override NET's) and
 * wrap it.  The opener sets the session up after.  *OUT is freed with
 * pal_store_close(); PAL_EDB with ERR ("cannot connect to PostgreSQL: ...")
 * when the server cannot be reached. */
int pal__store_connect(const char *conninfo, const pal__store_net *net, pal_store **out, char *err,
		       size_t errlen);

/* PAL_OK, or PAL_EINVAL with ERR naming WHAT when ST is pooled. */
int pal__store_needs_session(pal_store *st, const char *what, char *err, size_t errlen);

/* Statements prepared once per connection (names "pal_claim", ...). */
enum {
	PAL__PREP_CLAIM = 1u << 0,
	PAL__PREP_COMMIT = 1u << 1,
	PAL__PREP_RENEW = 1u << 2,
	PAL__PREP_SPECS = 1u << 3,
	PAL__PREP_COMMIT_NOTIFY = 1u << 4
};
/* Prepare SQL as NAME on ST unless BIT is already set; nothing on a pooled
 * store (a named statement would live on one server connection of the
 * pooler, unknown to the next). */
int pal__store_prepare(pal_store *st, unsigned bit, const char *name, const char *sql, int nparams,
		       char *err, size_t errlen);
/* Send SQL without waiting (st->busy until the result is read): as the
 * statement NAME prepared once per connection (BIT), or unnamed, parsed
 * again each time, on a pooled store. */
int pal__store_send_stmt(pal_store *st, unsigned bit, const char *name, const char *sql,
			 int nparams, const char *const *params, char *err, size_t errlen);
/* The result of the statement in flight (blocks if it is not complete);
 * NULL with err on failure.  Clears st->busy. */
PGresult *pal__store_result(pal_store *st, char *err, size_t errlen);
/* pal__store_send_stmt, then wait for its result. */
PGresult *pal__store_query_stmt(pal_store *st, unsigned bit, const char *name, const char *sql,
				int nparams, const char *const *params, char *err, size_t errlen);

/* Run SQL (a fixed string of src/store) that returns rows; returns the
 * PGresult (PQclear) or NULL with err filled. */
PGresult *pal__store_query(pal_store *st, const char *sql, int nparams, const char *const *params,
			   char *err, size_t errlen);
/* Run SQL that returns one JSON text value (the first column of its first
 * row) and parse it into *OUT (json_decref by the caller; NULL on failure).
 * PAL_EDB with ERR when the query fails, PAL_EINVAL with ERR when it returns
 * no row, an SQL NULL or text that is not JSON. */
/* A page cursor the API gave: N integers joined by '_', each an int64; those
 * whose bit is set in US_MASK (1 << i) microseconds since the epoch within
 * PostgreSQL's range (years 1970 +- 300).  Into V; false for any other
 * text, so that a tampered cursor is a bad request, never a database error. */
#define PAL__CURSOR_US_MAX 9467280000000000LL /* 300 years of microseconds */
bool pal__store_cursor_ints(const char *cursor, int n, unsigned us_mask, long long *v);

int pal__store_query_json(pal_store *st, const char *sql, int nparams, const char *const *params,
			  json_t **out, char *err, size_t errlen);
/* Run SQL that returns one integer (the first column of its first row)
 * into *OUT: NONE when it returns no row or an SQL NULL.  PAL_EDB with ERR
 * when the query fails. */
int pal__store_query_i64(pal_store *st, const char *sql, int nparams, const char *const *params,
			 int64_t none, int64_t *out, char *err, size_t errlen);
/* The door of the trigger state machine (palisade_trigger_move,
 * sql/functions/palisade_trigger_move.sql; docs/schema.md): a FROM item
 * that moves to state TO (SQL text: a quoted state or a parameter) the
 * triggers SEL selects (SQL text: a query of their id, scheduled_at and
 * state, in that order) that are still in the state it read, writing
 * last_error_class CLASS (SQL text; NULL keeps it), and yields the rows
 * moved: id, scheduled_at, from_state, job_id, version, shard, epoch, fence.
 * Follow it with an alias.  The only way src/store changes triggers.state
 * (tests/state_writers.py). */
#define PAL__TRIGGER_MOVE(sel, to, class)                                                          \
	"(SELECT array_agg(s.id) AS ids, array_agg(s.scheduled_at) AS ats,"                        \
	" array_agg(s.state) AS froms FROM (" sel ") s) door,"                                     \
	" palisade_trigger_move(door.ids, door.ats, door.froms, " to ", " class ")"
/* The nominal instant of trigger T (an alias): its scheduled_at, unless
 * spread or jitter moved it (045, nominal_at).  The boundaries of a shadow
 * scope are judged on it (palisade_trigger_live, docs/migrating.md). */
#define PAL__TRIGGER_NOMINAL(t) "coalesce(" t ".nominal_at, " t ".scheduled_at)"
/* Whether the `shadow` trigger T (an alias) is at an instant its scope
 * makes live now: palisade_trigger_live on its nominal instant, or for one
 * a roll-back handed back (last_error_class 'rolled_back', its step
 * covering the due ones too: LIVE_NOW in src/store/shadow.c) on the later
 * of that and the hand-back (the door's updated_at).  Such a row is one no
 * one calls: palisade's was made live, the old system's was cut over. */
#define PAL__SHADOW_LIVE(t)                                                                        \
	"palisade_trigger_live(" t ".job_id, " t ".tenant, " t ".resource_group, CASE WHEN "       \
	t ".last_error_class = 'rolled_back' THEN greatest(" PAL__TRIGGER_NOMINAL(t) ", " t        \
	".updated_at) ELSE " PAL__TRIGGER_NOMINAL(t) " END)"
/* PAL__TRIGGER_MOVE of the triggers (alias t) that match WHERE. */
#define PAL__TRIGGER_MOVE_WHERE(where, to, class)                                                  \
	PAL__TRIGGER_MOVE("SELECT t.id, t.scheduled_at, t.state FROM triggers t WHERE " where, to, \
			  class)
/*
 * A job moved to another tenant or group (the apply's move_triggers, and
 * a tick that wrote rows of it with the old scope: write_moves in
 * src/store/plan.c): the job's unfinished triggers take its new scope, but a finished one keeps
 * the scope it ran under and one a gate holds (paused, pausing) the scope
 * of that gate, so that the resume lifting the gate finds it.
 */
#define PAL__MOVE_KEEPS_SCOPE "('succeeded', 'failed', 'cancelled', 'skipped', 'paused', 'pausing')"
/* Then the moved rows of the jobs $1 (text[]) whose instant, from the
 * apply that moved the job on (FROM: SQL of that instant for the row t),
 * their new scope judges otherwise than their state says go through the
 * door, as the cut-over and the shadow command move a scope's rows: a
 * `shadow` row the scope makes live (PAL__SHADOW_LIVE) -> pending, one
 * `trigger.live` audit row per job; a `pending` one never attempted that
 * the scope holds in shadow -> shadow, one `trigger.shadow` audit row per
 * job.  Instants before the apply keep their state, as a cut-over leaves
 * those before its step: the system that owned the instant then runs it.
 * A retired job's rows are left to the takeover, as the cut-over leaves
 * them.  ACTOR and REASON: SQL of the audit rows' actor and reason; BY:
 * text appended to their cause; MORE: more pairs of their details. */
#define PAL__MOVE_SIDE_WHERE(state, from)                                                          \
	"t.job_id = ANY ($1::text[]) AND t.state = '" state "'"                                    \
	" AND " PAL__TRIGGER_NOMINAL("t") " >= " from                                              \
	" AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.job_id = t.job_id"                          \
	"  AND j.retired_at IS NOT NULL) AND "
#define PAL__MOVE_SIDE_SQL(from, actor, reason, by, more)                                          \
	"WITH l AS (SELECT l.job_id, l.id FROM " PAL__TRIGGER_MOVE_WHERE(                          \
	    PAL__MOVE_SIDE_WHERE("shadow", from) PAL__SHADOW_LIVE("t"), "'pending'", "NULL") " l)," \
	" s AS (SELECT s.job_id, s.id FROM " PAL__TRIGGER_MOVE_WHERE(                              \
	    PAL__MOVE_SIDE_WHERE("pending", from) "t.attempt_count = 0"                            \
	    " AND t.source IN ('schedule', 'catchup')"                                             \
	    " AND NOT palisade_trigger_live(t.job_id, t.tenant, t.resource_group, "                \
	    PAL__TRIGGER_NOMINAL("t") ")", "'shadow'", "NULL") " s)"                               \
	" INSERT INTO audit_log (actor, action, scope, reason, details)"                           \
	" SELECT " actor ", 'trigger.live', 'job:' || l.job_id, " reason ", jsonb_build_object("   \
	"   'cause', 'its job moved to a tenant or group that is live at the instant" by "',"      \
	"   'moved', count(*), 'trigger_ids', jsonb_agg(l.id ORDER BY l.id)" more ")"              \
	" FROM l GROUP BY l.job_id"                                                                \
	" UNION ALL"                                                                               \
	" SELECT " actor ", 'trigger.shadow', 'job:' || s.job_id, " reason ", jsonb_build_object(" \
	"   'cause', 'its job moved to a tenant or group that is in shadow at the instant" by "'," \
	"   'moved', count(*), 'trigger_ids', jsonb_agg(s.id ORDER BY s.id)" more ")"              \
	" FROM s GROUP BY s.job_id"
/* After PAL__MOVE_SIDE_SQL, in a statement of its own (a claim that took
 * a pending row before that statement has committed): a first attempt of
 * a schedule row of the jobs $1 claimed ahead of its instant, its call
 * not started, that the new scope holds in shadow -> pausing, as the
 * shadow command asks (AHEAD_MOVE in src/store/shadow.c): the executor
 * hands it back without a call at its instant (it ends paused, and no
 * resume wakes it: SHADOW_HELD in src/store/gates.c).  One
 * `trigger.shadow` audit row per job, details {cause, ahead_to_pausing,
 * trigger_ids}.  The caller then sends PAL__HANDBACK_NOTIFY when it asked
 * any. */
#define PAL__MOVE_AHEAD_SQL(from, actor, reason, by, more)                                         \
	"WITH a AS (SELECT a.job_id, a.id FROM " PAL__TRIGGER_MOVE_WHERE(                          \
	    PAL__MOVE_SIDE_WHERE("running", from) "t.attempt_count = 1"                            \
	    " AND coalesce(t.next_attempt_at, t.due_at) > clock_timestamp()"                       \
	    " AND t.source IN ('schedule', 'catchup')"                                             \
	    " AND NOT palisade_trigger_live(t.job_id, t.tenant, t.resource_group, "                \
	    PAL__TRIGGER_NOMINAL("t") ")", "'pausing'", "NULL") " a)"                              \
	" INSERT INTO audit_log (actor, action, scope, reason, details)"                           \
	" SELECT " actor ", 'trigger.shadow', 'job:' || a.job_id, " reason ", jsonb_build_object(" \
	"   'cause', 'its job moved to a tenant or group that is in shadow at the instant, claimed" \
	" ahead and not called yet: asked to pause, its executor hands it back" by "',"            \
	"   'ahead_to_pausing', count(*), 'trigger_ids', jsonb_agg(a.id ORDER BY a.id)" more ")"   \
	" FROM a GROUP BY a.job_id"
/* Sent by whoever asks triggers claimed ahead to pause (the moves above,
 * the shadow and roll-back commands): on it an executor renews its leases
 * at once, and so learns of the state before the instants it holds
 * (executor.c, drain_notifies), not at its next heartbeat, which comes
 * after them most of the time (claim_ahead 500 ms, heartbeat 10 s). */
#define PAL__HANDBACK_NOTIFY "NOTIFY palisade_handback"
/* PAL__TRIGGER_MOVE_WHERE of the triggers that match WHERE and that no
 * other transaction holds: each row is locked as it is read (FOR UPDATE
 * SKIP LOCKED), WHERE rechecked on its newest version, so the whole of
 * WHERE still holds when the door moves it; the door itself rechecks only
 * the state.  For a WHERE that reads what a row's holder changes without
 * changing the state (the lease an executor renews).  A row another
 * transaction holds is left out: the caller says who takes it. */
#define PAL__TRIGGER_MOVE_LOCKED(where, to, class)                                                 \
	PAL__TRIGGER_MOVE("SELECT t.id, t.scheduled_at, t.state FROM triggers t WHERE " where      \
			  " FOR UPDATE OF t SKIP LOCKED",                                          \
			  to, class)

/* Where job J's latest version V counts an `every` without `start` from,
 * in epoch seconds, as the controller takes it over (planner.c, plan_due
 * and switch_point): its effective_from once activated; while it awaits
 * activation, the watermark of the job's shard S (now before the shard's
 * first tick), now after a latest version that has ended (a retired job),
 * when V was stored where V or the version before it is a one-shot (`at`;
 * switch_between's one-shot rule, whatever the watermark), never before an
 * older version's own start; now for a job none of whose versions was
 * activated yet.  For `plan diff`'s next version, after an activated V: the
 * watermark, or now after a one-shot V (the next apply).  `jobs --next`,
 * `plan diff` and the console read it. */
#define PAL__TAKEOVER_SQL(j, v, s)                                                                 \
	"floor(extract(epoch FROM greatest(CASE WHEN (" v ".spec -> 'schedule' ->> 'end')"           \
	"  ::timestamptz <= clock_timestamp() THEN clock_timestamp()"                              \
	"  WHEN " v ".effective_from IS NULL AND ((" v ".spec -> 'schedule' ->> 'at') IS NOT NULL"  \
	"  OR EXISTS (SELECT 1 FROM job_versions o WHERE o.job_id = " v ".job_id"                  \
	"  AND o.version = " v ".version - 1 AND (o.spec -> 'schedule' ->> 'at') IS NOT NULL))"      \
	"  THEN " v ".created_at"                                                                   \
	"  WHEN (" v ".spec -> 'schedule' ->> 'at') IS NOT NULL THEN clock_timestamp()"            \
	"  ELSE coalesce(" s ".watermark, clock_timestamp()) END,"                                 \
	"  (SELECT max(w.effective_from) FROM job_versions w WHERE w.job_id = " j ".job_id))))::bigint"
#define PAL__ACTIVATED_SQL(j)                                                                      \
	"EXISTS (SELECT 1 FROM job_versions w WHERE w.job_id = " j ".job_id"                       \
	" AND w.effective_from IS NOT NULL)"
#define PAL__ANCHOR_SQL(j, v, s)                                                                   \
	"coalesce(floor(extract(epoch FROM " v ".effective_from))::bigint, CASE WHEN "             \
	PAL__ACTIVATED_SQL(j) " THEN " PAL__TAKEOVER_SQL(j, v, s) " ELSE"                          \
	" floor(extract(epoch FROM clock_timestamp()))::bigint END)"

/* What attempt A (an alias of attempts in the statement) kept of the
 * service's answer, as a JSON expression: {status, headers, content_type,
 * body_base64, bytes, truncated, headers_truncated} from attempt_responses
 * (034; the headers without PAL_KEEP_HEADERS_CUT_KEY, which sets
 * headers_truncated), the status
 * alone when the attempt kept nothing else, null without an answer.
 * pal__store_show_bodies then adds the body shown escaped. */
#define PAL__RESPONSE_JSON(a)                                                                      \
	"coalesce((SELECT json_build_object('status', " a ".http_status, 'headers',"               \
	" r.headers - '" PAL_KEEP_HEADERS_CUT_KEY "', 'headers_truncated',"                        \
	" r.headers ? '" PAL_KEEP_HEADERS_CUT_KEY "',"                                             \
	" 'content_type', r.content_type, 'body_base64', translate(encode(r.body, 'base64'),"      \
	" E'\\n', ''), 'bytes', length(r.body), 'truncated', r.truncated)"                         \
	" FROM attempt_responses r WHERE r.fence = " a ".fence"                                    \
	" AND r.scheduled_at = " a ".scheduled_at),"                                               \
	" CASE WHEN " a ".http_status IS NOT NULL THEN json_build_object('status', " a             \
	".http_status, 'headers', '{}'::json, 'headers_truncated', false,"                         \
	" 'content_type', NULL, 'body_base64', '',"                                                \
	" 'bytes', 0, 'truncated', false) END)"
/* To each attempt of the array ATTEMPTS with a "response" object (from
 * PAL__RESPONSE_JSON), add "body": its bytes shown escaped as text
 * (excerpt.h), secrets already masked when it was written. */
void pal__store_show_bodies(json_t *attempts);
/* Execute SQL returning no rows; PAL_EDB with err filled on failure. */
int pal__store_exec(pal_store *st, const char *sql, char *err, size_t errlen);
/* Best-effort ROLLBACK after a failure. */
void pal__store_rollback(pal_store *st);
/* Fill err with "WHAT: <server message>". */
void pal__store_errmsg(pal_store *st, const PGresult *r, const char *what, char *err,
		       size_t errlen);
/* R if it succeeded (ST's last SQLSTATE cleared); otherwise NULL, R
 * cleared, its SQLSTATE kept in ST and ERR filled, prefixed with WHAT. */
PGresult *pal__store_checked(pal_store *st, PGresult *r, const char *what, char *err,
			     size_t errlen);

/* An array parameter being built (pgarray.c): init, add elements, end.
 * Text elements are always quoted, so every value round-trips; a NULL
 * pointer is an SQL NULL.  pal__pgarr_end returns the literal ("{...}"),
 * g_free'd by the caller, and leaves A empty. */
typedef struct pal_pgarr {
	GString *s;
	int n;
} pal_pgarr;
void pal__pgarr_init(pal_pgarr *a);

/* What an apply's takeover sweep (src/store/apply_takeover.c) cut: N jobs
 * as the literals IDS, CUTS (the first instant cancelled) and VERSIONS
 * (the one the apply stored), at the apply's time NOW. */
struct pal__takeover {
	/* retired: 1 for a retired job applied again (swept only after the
	 * commit, past the switch point its controller stored) */
	pal_pgarr ids, cuts, versions, retired;
	size_t n;
	char *first; /* the first job's id (pal_store_apply_takeover_job) */
	int64_t now;
};
void pal__takeover_free(struct pal__takeover *t);
void pal__pgarr_text(pal_pgarr *a, const char *v);
void pal__pgarr_i64(pal_pgarr *a, int64_t v);
char *pal__pgarr_end(pal_pgarr *a);
/* The text array of V[0..n), or NULL when N is 0 (a scope of "every
 * tenant" as an SQL NULL); g_free. */
char *pal__pgarr_scope(const char *const *v, size_t n);
/* The integer array of V[0..n) ("{}" when N is 0); g_free. */
char *pal__pgarr_ints(const int *v, size_t n);

/* An id and its index in the caller's array (exec.c).  The commit matches
 * the rows its statement returns to its results through an array of these
 * sorted by id (pal__id_refs_sort), one binary search a row
 * (pal__id_refs_find): O(n log n) a batch, not a scan of the batch a row. */
typedef struct pal_id_ref {
	int64_t id;
	int i;
} pal_id_ref;
void pal__id_refs_sort(pal_id_ref *refs, size_t n);
/* The first of REFS[0..n) (sorted) whose id is >= ID, N when none: the
 * entries with ID, when there are any, stand from there side by side. */
size_t pal__id_refs_find(const pal_id_ref *refs, size_t n, int64_t id);

/* Calendar C's version (calendars.c): the latest when its digest is
 * unchanged, else the next, inserted (with its audit row) when WRITE, in
 * the caller's transaction.  Sets c->version and *CREATED. */
int pal__store_calendar_version(pal_store *st, pal_calendar *c, bool write, const char *actor,
				const char *reason, bool *created, char *err, size_t errlen);

/* The calendars at their latest version as a JSON array (calendars.c:
 * pal_store_calendars_json's rows, each with its cursor "_c"): only NAME
 * (NULL: all), only those the live jobs of TENANTS name with only those
 * jobs (a text[] literal; NULL: every tenant), after the name AFTER (NULL:
 * from the first), at most LIMIT (0: all); each with its jobs after the id
 * JOBS_AFTER (NULL: from the first), at most JOBS_LIMIT of them (0: all). */
int pal__store_calendars_query(pal_store *st, const char *name, const char *tenants,
			       const char *after, int limit, const char *jobs_after, int jobs_limit,
			       json_t **out, char *err, size_t errlen);

/* The live jobs whose latest version carries a copy of one of CALS[0..n)
 * at another version than theirs (calendars.c): rows (job_id, spec as
 * text), by job id; locked FOR UPDATE when LOCK (the order apply locks in).
 * NULL with ERR on a database error; PQclear. */
PGresult *pal__store_calendar_followers(pal_store *st, const pal_calendar *const *cals, size_t n,
					bool lock, char *err, size_t errlen);

/*
 * The short lists read whole by the CLI and a page at a time by the API
 * (apistore.c): each row carries its cursor in "_c", after the cursor
 * AFTER (NULL: from the first), at most LIMIT rows (0: all).
 * pal__store_whole_list(RC, ROWS) of such a read of a whole list (LIMIT 0)
 * removes "_c" from its rows when RC is 0, and returns RC.
 *   shadow.c: the scopes in shadow, by scope (pal_store_shadow_list_json's rows)
 *   lifecycle.c: the gates, by scope (pal_store_gates_json's); the attempts
 *     of trigger ID by fence (pal_store_attempts_json's; no PAL_ENOENT here)
 *   tickets.c: the tickets newest first, open ones or ALL, of the live or
 *     retired jobs of TENANTS only (a text[] literal; NULL: all tickets)
 *   tokens.c: the tokens, live ones first, newest first
 */
int pal__store_shadow_query(pal_store *st, const char *after, int limit, json_t **out, char *err,
			    size_t errlen);
int pal__store_gates_query(pal_store *st, const char *after, int limit, json_t **out, char *err,
			   size_t errlen);
/* The notify rules by scope (group first), name and url; TENANTS (a text[]
 * literal, NULL: all) as pal_apistore_notify_rules_page's. */
int pal__store_notify_rules_query(pal_store *st, const char *tenants, const char *after,
				  int limit, json_t **out, char *err, size_t errlen);
int pal__store_attempts_query(pal_store *st, int64_t trigger_id, const char *after, int limit,
			      json_t **out, char *err, size_t errlen);
/* JOB, TENANT: only the tickets of that job, of that tenant's jobs (NULL:
 * any). */
int pal__store_tickets_query(pal_store *st, bool all, const char *tenants, const char *job,
			     const char *tenant, const char *after, int limit, json_t **out,
			     char *err, size_t errlen);
int pal__store_tokens_query(pal_store *st, const char *after, int limit, json_t **out, char *err,
			    size_t errlen);
int pal__store_whole_list(int rc, json_t **rows);
/* pal_store_misfires_json()'s rows after the cursor AFTER (NULL: from the
 * newest), each with its cursor "_c" (lifecycle.c). */
int pal__store_misfires_query(pal_store *st, const char *job_id, int64_t from, int64_t to,
			      const char *after, int limit, json_t **out, char *err, size_t errlen);
/* pal_store_jobs_json()'s jobs with only the versions after AFTER_VERSION
 * (0: from the first), at most LIMIT of them (0: all); a job with none of
 * those has "versions": null (jobs.c). */
int pal__store_jobs_query(pal_store *st, const char *job_id, int after_version, int limit,
			  json_t **out, char *err, size_t errlen);

/* pg_advisory_lock key of the migration lock ("palisade" as 8 bytes). */
/* The labels of the stored spec SPEC (a jsonb expression, may be NULL) as a
 * json object sorted by key in byte order, as the canonical form has them
 * (jsonb would order them by length first); {} when it has none. */
#define PAL__LABELS_JSON(spec)                                                                     \
	"coalesce((SELECT json_object_agg(lb.key, lb.value ORDER BY lb.key COLLATE \"C\")"          \
	" FROM jsonb_each_text((" spec ") -> 'labels') lb), '{}'::json)"

/* A dependent job's upstreams (its spec's `after:`, in order) as a JSON
 * array of job ids, NULL for a job with a schedule; and the schedule as
 * listings print it: "after: a, b" for a dependent (whose stored cron is
 * the never-firing PAL_AFTER_CRON), else CRON. */
#define PAL__AFTER_FROM(spec)                                                                      \
	" FROM jsonb_array_elements((" spec ") -> 'after') WITH ORDINALITY af(e, n))"
#define PAL__AFTER_JSON(spec) "(SELECT json_agg(af.e ->> 'job' ORDER BY af.n)" PAL__AFTER_FROM(spec)
#define PAL__SCHEDULE_TEXT(spec, cron)                                                             \
	"coalesce('after: ' || (SELECT string_agg(af.e ->> 'job', ', ' ORDER BY af.n)"              \
	PAL__AFTER_FROM(spec) ", " cron ")"

#define PAL_MIGRATE_LOCK_KEY "7075283591402447205"

#endif
