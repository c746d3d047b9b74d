/*
 * apply_takeover.c - a version that takes over at its apply (docs/jobs.md,
 * "Where a new version takes over"): the old version's rows it cuts, in
 * the apply (statements 4e and 4f) and after its commit
 * (pal_store_apply_settle).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/clock.h"
#include "palisade/schedule.h"
#include "palisade/store.h"
#include "store_int.h"
#include "apply_int.h"
#include "ops_int.h"

void pal__takeover_free(struct pal__takeover *t)
{
	if (!t)
		return;
	g_free(t->first);
	if (t->n) {
		g_free(pal__pgarr_end(&t->ids));
		g_free(pal__pgarr_end(&t->cuts));
		g_free(pal__pgarr_end(&t->versions));
		g_free(pal__pgarr_end(&t->retired));
	}
	free(t);
}

/* Statements 4e: where a new version takes over at its apply instead of
 * at the shard's watermark (switch_point in src/controller/planner.c):
 * one with no instant after the apply (its `end` reached or before its
 * next instant, a one-shot `at` past), and one whose schedule or whose
 * predecessor's is a one-shot `at` (docs/jobs.md, "Where a new version
 * takes over").  What the old version planned after that point, up to
 * the watermark, is not its to run: its unclaimed scheduled rows
 * (pending, paused, and shadow: a cut-over makes every shadow row at or
 * after its instant live, whatever version planned it) at or after the
 * cut are cancelled through the door, as `delete`'s sweep does, but for a
 * row at an instant the new version fires itself (it keeps the instant's
 * plan key and runs it once; a shadow one whose instant is live now goes
 * pending: TAKEOVER_LIVE_SQL).  A shadow row is dropped instead
 * (TAKEOVER_DROP_SQL), and only from the apply's next second: one before
 * it is an instant the old system has run.  The
 * cut is the new `end` where it is at or before the apply, else the
 * apply's next second.  A claimed row (running, retry_wait, ...) is left
 * to finish.  4e reads the candidates ($1 ids, $2 cuts or NULL: only when
 * the latest stored version is a one-shot, $3 the apply's next second);
 * 4f cancels the chosen ones ($1 ids, $2 instants, $3 actor, $4 reason)
 * with one `cancel` audit row per job. */
/* How the cron column of a one-shot's version reads (pal_schedule_text,
 * after a calendars prefix if any). */
#define ONE_SHOT_TEXT "@palisade;at="
#define NO_TIME_SQL "(-9223372036854775807 - 1)"
/* The jobs 4e looks at, each with its cut ($3: the apply's next second
 * where only an old one-shot makes the new version take over). */
#define TAKEOVER_JOBS_SQL                                                                          \
	"SELECT c.id, coalesce(c.cut, $3::bigint)"                                                 \
	" FROM (SELECT u.id, nullif(u.cut, " NO_TIME_SQL ") AS cut"                                \
	"  FROM unnest($1::text[], $2::bigint[]) AS u(id, cut)) c"                                 \
	" JOIN jobs j ON j.job_id = c.id"                                                          \
	" JOIN job_versions v ON v.job_id = c.id AND v.version = j.latest_version"                 \
	" WHERE c.cut IS NOT NULL OR strpos(v.cron, '" ONE_SHOT_TEXT "') > 0"
/* Their rows at or after the cut ($1 ids, $2 cuts; $3 the versions the
 * apply stored or NULL: with them, only the rows planned from an older
 * version, so that the sweep after the commit leaves a later version's;
 * $4 with them: 1 for a retired job applied again, whose rows are also
 * after the switch point its controller stored, none before it stored
 * one; $5 the apply's next second: a shadow row before it, even after a
 * past `end`, is an instant the old system has run), and whether each is
 * a shadow row. */
#define TAKEOVER_ROWS_SQL                                                                          \
	"SELECT t.job_id, t.id, floor(extract(epoch FROM t.scheduled_at))::bigint,"                \
	" t.state = 'shadow'"                                                                      \
	" FROM unnest($1::text[], $2::bigint[]) WITH ORDINALITY AS c(id, cut, k)"                  \
	" JOIN triggers t ON t.job_id = c.id AND t.state IN ('pending', 'paused', 'shadow')"       \
	"  AND t.source IN ('schedule', 'catchup') AND t.scheduled_at >= to_timestamp(c.cut)"      \
	"  AND (t.state <> 'shadow' OR t.scheduled_at >= to_timestamp($5::bigint))"                \
	"  AND ($3::int[] IS NULL OR t.version < ($3::int[])[c.k])"                                \
	"  AND ($4::int[] IS NULL OR ($4::int[])[c.k] = 0 OR t.scheduled_at > (SELECT"             \
	"   v.effective_from FROM job_versions v WHERE v.job_id = c.id"                            \
	"   AND v.version = ($3::int[])[c.k]))"                                                    \
	" ORDER BY t.job_id COLLATE \"C\", t.scheduled_at"
#define TAKEOVER_CANCEL_SQL                                                                        \
	"WITH m AS (SELECT m.job_id, m.id FROM " PAL__TRIGGER_MOVE(                                \
	    "SELECT t.id, t.scheduled_at, t.state FROM triggers t JOIN unnest($1::bigint[],"       \
	    " $2::bigint[]) AS c(id, at) ON t.id = c.id AND t.scheduled_at = to_timestamp(c.at)"   \
	    " WHERE t.state IN ('pending', 'paused', 'shadow')",                                   \
	    "'cancelled'", "NULL") " m)"                                                           \
	" INSERT INTO audit_log (actor, action, scope, reason, details)"                           \
	" SELECT $3, 'cancel', 'job:' || m.job_id, $4, jsonb_build_object('cause',"                \
	"   'a version that takes over at its apply (no instant after it, a one-shot, or a"        \
	" retired job applied again) replaced the version that planned them', 'cancelled',"        \
	"   count(*),"                                                                             \
	"   'trigger_ids', jsonb_agg(m.id ORDER BY m.id))"                                         \
	" FROM m GROUP BY m.job_id"
/* A row of an instant the new version excludes, never claimed nor tried
 * ($1 ids, $2 instants, $3 actor, $4 reason), is deleted rather than
 * cancelled: a cancelled row would keep the instant's plan key, so that
 * a later version that fires the instant again (the exclusion removed)
 * could not plan it, while its tick drops the `excluded` record.  One
 * `trigger.drop` audit row per job.  A row that does not qualify (claimed
 * meanwhile, or with an attempt or ticket) is left to TAKEOVER_CANCEL_SQL.
 * A `shadow` row (the old system's instant) is dropped the same way,
 * whatever the new version does at its instant: a cancelled upstream row
 * reads as finished or failed to a live `after:` dependent
 * (palisade_plan_after), an absent one plans it nothing there.  $5 the
 * audit row's cause. */
#define TAKEOVER_DROP_EXCLUDED                                                                     \
	"an instant the version that took over at its apply excludes, planned by the version it"   \
	" replaced and never claimed"
#define TAKEOVER_DROP_SHADOW                                                                       \
	"a shadow instant of the version that a version taking over at its apply replaced (the"    \
	" old system's to run), never claimed"
#define TAKEOVER_DROP_SQL                                                                          \
	"WITH d AS (DELETE FROM triggers t USING unnest($1::bigint[], $2::bigint[]) AS c(id, at)"  \
	"   WHERE t.id = c.id AND t.scheduled_at = to_timestamp(c.at)"                             \
	"   AND t.state IN ('pending', 'paused', 'shadow') AND t.request_id IS NULL"               \
	"   AND t.attempt_count = 0"                                                               \
	"   AND NOT EXISTS (SELECT 1 FROM attempts x WHERE x.trigger_id = t.id"                     \
	"    AND x.scheduled_at = t.scheduled_at)"                                                  \
	"   AND NOT EXISTS (SELECT 1 FROM tickets k WHERE k.trigger_id = t.id)"                    \
	"   RETURNING t.id, t.job_id, t.scheduled_at)"                                             \
	" INSERT INTO audit_log (actor, action, scope, reason, details)"                           \
	" SELECT $3, 'trigger.drop', 'job:' || d.job_id, $4, jsonb_build_object('cause',"          \
	"   $5::text, 'dropped', count(*),"                                                        \
	"   'trigger_ids', jsonb_agg(d.id ORDER BY d.id),"                                         \
	"   'scheduled_at', jsonb_agg(d.scheduled_at ORDER BY d.id))"                              \
	" FROM d GROUP BY d.job_id"
/* A shadow row kept at an instant the new version fires ($1 ids, $2
 * instants, $3 actor, $4 reason) whose instant is live now
 * (PAL__SHADOW_LIVE: on its nominal instant, as a cut-over judges it):
 * shadow -> pending through the door, as the cut-over's move (CUT_MOVE in
 * src/store/shadow.c) would have made it, one `trigger.live` audit row per
 * job.  Such a row is one a cut-over left shadow because its job was
 * retired then: kept shadow in a live scope, it would hold the instant's
 * plan key with no one to run it.  It keeps its version and the plan key,
 * as a kept pending row does, and runs the instant once. */
#define TAKEOVER_LIVE_CAUSE                                                                        \
	"a shadow instant of the version that a version taking over at its apply replaced, at an"  \
	" instant that version fires and that a cut-over has made live since it was planned"
#define TAKEOVER_LIVE_SQL                                                                          \
	"WITH m AS (SELECT m.job_id, m.id FROM " PAL__TRIGGER_MOVE(                                \
	    "SELECT t.id, t.scheduled_at, t.state FROM triggers t JOIN unnest($1::bigint[],"       \
	    " $2::bigint[]) AS c(id, at) ON t.id = c.id AND t.scheduled_at = to_timestamp(c.at)"   \
	    " WHERE t.state = 'shadow' AND " PAL__SHADOW_LIVE("t"),                                \
	    "'pending'", "NULL") " m)"                                                             \
	" INSERT INTO audit_log (actor, action, scope, reason, details)"                           \
	" SELECT $3, 'trigger.live', 'job:' || m.job_id, $4, jsonb_build_object('cause', $5::text," \
	"   'moved', count(*), 'trigger_ids', jsonb_agg(m.id ORDER BY m.id))"                      \
	" FROM m GROUP BY m.job_id"

/* The apply's time (the transaction's, the versions' created_at), in
 * whole seconds as the planner reads it. */
static int apply_time(pal_apply *a, char *err, size_t errlen)
{
	if (a->now != PAL_NO_TIME)
		return PAL_OK;
	return pal__store_query_i64(a->st, "SELECT floor(extract(epoch FROM now()))::bigint", 0,
				    NULL, PAL_NO_TIME, &a->now, err, errlen);
}

/* Where 4e cuts the old version's rows of S (stored at NOW) when S itself
 * takes over at its apply, or PAL_NO_TIME (then only an old one-shot makes
 * it take over there). */
static int64_t takeover_cut(const pal_job_spec *s, int64_t now)
{
	pal_schedule *sc;
	char e[256];
	int64_t x;
	bool ex;
	if (!s->has_end && !s->has_at)
		return PAL_NO_TIME; /* cron and `every` go on for ever */
	if (pal_schedule_open(s, &sc, e, sizeof e))
		return PAL_NO_TIME; /* validation refuses such a spec */
	bool none = pal_schedule_next_from(sc, now, now, &x, &ex) != PAL_OK;
	pal_schedule_close(sc);
	if (none)
		return s->has_end && s->end <= now ? s->end : now + 1;
	return s->has_at ? now + 1 : PAL_NO_TIME;
}

/* What S, taking over at NOW, does with instant AT: fires it itself,
 * excludes it (S records it `excluded`, so the old row must go, and must
 * not keep its plan key), or has no such instant. */
enum at_fate { AT_NONE, AT_FIRES, AT_EXCLUDED };

static enum at_fate fires_at(const pal_job_spec *s, int64_t now, int64_t at)
{
	pal_schedule *sc;
	char e[256];
	int64_t x;
	bool ex;
	enum at_fate f = AT_NONE;
	if (at <= now || pal_schedule_open(s, &sc, e, sizeof e))
		return AT_NONE;
	if (pal_schedule_next_from(sc, now, at - 1, &x, &ex) == PAL_OK && x == at)
		f = ex ? AT_EXCLUDED : AT_FIRES;
	pal_schedule_close(sc);
	return f;
}

/* 4e's rows of the jobs IDS (cuts CUTS, literals) but those at an instant
 * their version (SPEC: id -> pal_job_spec) taking over at NOW fires itself:
 * those at an instant it excludes dropped where never claimed nor tried
 * (TAKEOVER_DROP_SQL), the others cancelled, all audited (4f); their count
 * added to *CANCELLED.  A shadow row kept at an instant the version fires
 * goes pending where its instant is live now (TAKEOVER_LIVE_SQL). */
static int takeover_cancel(pal_store *st, const char *ids, const char *cuts, const char *vers,
			   const char *retired, GHashTable *spec, int64_t now, const char *actor,
			   const char *reason, int64_t *cancelled, char *err, size_t errlen)
{
	char nx[24];
	snprintf(nx, sizeof nx, "%" PRId64, now + 1);
	const char *p[] = {ids, cuts, vers, retired, nx};
	PGresult *r = pal__store_query(st, TAKEOVER_ROWS_SQL, 5, p, err, errlen);
	if (!r)
		return PAL_EDB;
	pal_pgarr tid, tat, xid, xat, sid, sat, lid, lat;
	pal__pgarr_init(&lid);
	pal__pgarr_init(&lat);
	pal__pgarr_init(&tid);
	pal__pgarr_init(&tat);
	pal__pgarr_init(&xid);
	pal__pgarr_init(&xat);
	pal__pgarr_init(&sid);
	pal__pgarr_init(&sat);
	size_t k = 0, kx = 0, ks = 0, kl = 0;
	for (int row = 0; row < PQntuples(r); row++) {
		const pal_job_spec *s = g_hash_table_lookup(spec, PQgetvalue(r, row, 0));
		int64_t at = strtoll(PQgetvalue(r, row, 2), NULL, 10);
		int64_t id = strtoll(PQgetvalue(r, row, 1), NULL, 10);
		enum at_fate f = s ? fires_at(s, now, at) : AT_FIRES;
		if (f == AT_FIRES) {
			if (PQgetvalue(r, row, 3)[0] == 't') {
				pal__pgarr_i64(&lid, id);
				pal__pgarr_i64(&lat, at);
				kl++;
			}
			continue;
		}
		if (PQgetvalue(r, row, 3)[0] == 't') {
			pal__pgarr_i64(&sid, id);
			pal__pgarr_i64(&sat, at);
			ks++;
		} else if (f == AT_EXCLUDED) {
			pal__pgarr_i64(&xid, id);
			pal__pgarr_i64(&xat, at);
			kx++;
		}
		pal__pgarr_i64(&tid, id);
		pal__pgarr_i64(&tat, at);
		k++;
	}
	PQclear(r);
	char *p1 = pal__pgarr_end(&tid), *p2 = pal__pgarr_end(&tat);
	char *x1 = pal__pgarr_end(&xid), *x2 = pal__pgarr_end(&xat);
	char *s1 = pal__pgarr_end(&sid), *s2 = pal__pgarr_end(&sat);
	char *l1 = pal__pgarr_end(&lid), *l2 = pal__pgarr_end(&lat);
	const char *q[] = {p1, p2, actor, reason};
	const char *ql[] = {l1, l2, actor, reason, TAKEOVER_LIVE_CAUSE};
	const char *qx[] = {x1, x2, actor, reason, TAKEOVER_DROP_EXCLUDED};
	const char *qs[] = {s1, s2, actor, reason, TAKEOVER_DROP_SHADOW};
	int rc = PAL_OK;
	/* the drops first: what they leave (claimed meanwhile, tried) the
	 * cancel takes as any other row (every row a drop is given is in
	 * tid too) */
	if (kx) {
		r = pal__store_query(st, TAKEOVER_DROP_SQL, 5, qx, err, errlen);
		if (!r)
			rc = PAL_EDB;
		PQclear(r);
	}
	if (!rc && ks) {
		r = pal__store_query(st, TAKEOVER_DROP_SQL, 5, qs, err, errlen);
		if (!r)
			rc = PAL_EDB;
		PQclear(r);
	}
	if (!rc && k) {
		r = pal__store_query(st, TAKEOVER_CANCEL_SQL, 4, q, err, errlen);
		if (!r)
			rc = PAL_EDB;
		PQclear(r);
	}
	if (!rc && kl) {
		r = pal__store_query(st, TAKEOVER_LIVE_SQL, 5, ql, err, errlen);
		if (!r)
			rc = PAL_EDB;
		PQclear(r);
	}
	if (!rc)
		*cancelled += (int64_t)k;
	g_free(l1);
	g_free(l2);
	g_free(p1);
	g_free(p2);
	g_free(x1);
	g_free(x2);
	g_free(s1);
	g_free(s2);
	return rc;
}

/* Job ID (its cut, the version stored) into the jobs the sweep after the
 * commit looks at (pal_store_apply_settle). */
static int takeover_add(pal_apply *a, const char *id, int64_t cut, int version, bool retired,
			char *err, size_t errlen)
{
	if (!a->tk)
		a->tk = calloc(1, sizeof *a->tk);
	if (!a->tk) {
		snprintf(err, errlen, "out of memory");
		return PAL_ENOMEM;
	}
	if (!a->tk->first)
		a->tk->first = g_strdup(id);
	if (!a->tk->n) {
		pal__pgarr_init(&a->tk->ids);
		pal__pgarr_init(&a->tk->cuts);
		pal__pgarr_init(&a->tk->versions);
		pal__pgarr_init(&a->tk->retired);
	}
	pal__pgarr_text(&a->tk->ids, id);
	pal__pgarr_i64(&a->tk->cuts, cut);
	pal__pgarr_i64(&a->tk->versions, version);
	pal__pgarr_i64(&a->tk->retired, retired);
	a->tk->n++;
	a->tk->now = a->now;
	return PAL_OK;
}

/* The unclaimed scheduled rows at or after the cut of the jobs $1 (cuts
 * $2), locked: an executor passes a locked row over, so that none is
 * claimed between here and the cancel (4f); then the clock.  A row claimed
 * before (up to claim_ahead early, since the apply began) is left to
 * finish, and the version is stored at that clock
 * (pal__apply_takeover_stored): such a run is one claimed before its
 * version was stored, as verify judges it, not a run outside every
 * version's range. */
#define TAKEOVER_LOCK_SQL                                                                          \
	"SELECT 1 FROM unnest($1::text[], $2::bigint[]) AS c(id, cut)"                             \
	" JOIN triggers t ON t.job_id = c.id AND t.state IN ('pending', 'paused', 'shadow')"       \
	"  AND t.source IN ('schedule', 'catchup') AND t.scheduled_at >= to_timestamp(c.cut)"      \
	" FOR UPDATE OF t"
#define TAKEOVER_STORED_SQL                                                                        \
	"UPDATE job_versions v SET created_at = u.at"                                              \
	" FROM unnest($1::text[], $2::int[], $3::timestamptz[]) AS u(id, ver, at)"                 \
	" WHERE v.job_id = u.id AND v.version = u.ver"

static int takeover_lock(pal_apply *a, const char *ids, const char *cuts, GPtrArray *jobs,
			 GArray *vers, char *err, size_t errlen)
{
	const char *p[] = {ids, cuts};
	PGresult *r;
	if (pal__ops_exec(a->st, TAKEOVER_LOCK_SQL, 2, p, NULL, err, errlen))
		return PAL_EDB;
	if (!(r = pal__store_query(a->st, "SELECT clock_timestamp()::text", 0, NULL, err, errlen)))
		return PAL_EDB;
	if (!a->n_stored) {
		pal__pgarr_init(&a->stored_ids);
		pal__pgarr_init(&a->stored_vers);
		pal__pgarr_init(&a->stored_ats);
	}
	for (guint i = 0; i < jobs->len; i++) {
		pal__pgarr_text(&a->stored_ids, g_ptr_array_index(jobs, i));
		pal__pgarr_i64(&a->stored_vers, g_array_index(vers, int, i));
		pal__pgarr_text(&a->stored_ats, PQgetvalue(r, 0, 0));
		a->n_stored++;
	}
	PQclear(r);
	return PAL_OK;
}

int pal__apply_takeover_stored(pal_apply *a, char *err, size_t errlen)
{
	if (!a->n_stored)
		return PAL_OK;
	char *p1 = pal__pgarr_end(&a->stored_ids), *p2 = pal__pgarr_end(&a->stored_vers),
	     *p3 = pal__pgarr_end(&a->stored_ats);
	a->n_stored = 0;
	const char *p[] = {p1, p2, p3};
	int rc = pal__ops_exec(a->st, TAKEOVER_STORED_SQL, 3, p, NULL, err, errlen);
	g_free(p1);
	g_free(p2);
	g_free(p3);
	return rc;
}

int pal__apply_takeover_sweep(pal_apply *a, struct item *it, size_t n, char *err, size_t errlen)
{
	if (a->retiring)
		return PAL_OK; /* retire_chunk cancels them all */
	pal_pgarr ids, cuts;
	size_t m = 0;
	int rc = PAL_OK;
	GHashTable *spec = g_hash_table_new(g_str_hash, g_str_equal);
	GHashTable *ver = g_hash_table_new(g_str_hash, g_str_equal);
	pal__pgarr_init(&ids);
	pal__pgarr_init(&cuts);
	for (size_t i = 0; !rc && i < n; i++) {
		if (it[i].fresh || it[i].res->outcome == PAL_APPLY_UNCHANGED)
			continue;
		if ((rc = apply_time(a, err, errlen)))
			break;
		/* A retired job applied again lives from the apply on: what an
		 * older version planned after the apply that the retirement's
		 * sweep did not reach (a tick in flight, `delete` that did not
		 * wait) is not its to run (REAPPLY_SQL cancelled the rows up to
		 * the apply).  Swept after the commit only, past the switch
		 * point its controller stores: at the apply when the controller
		 * had taken the retiring version in, at its watermark when it
		 * went from the old version straight to this one (the old
		 * version keeps its instants up to it, as for any new version). */
		if (it[i].retired) {
			if ((rc = takeover_add(a, it[i].s->id, a->now + 1, it[i].res->version,
					       true, err, errlen)))
				break;
			continue;
		}
		int64_t cut = takeover_cut(it[i].s, a->now);
		pal__pgarr_text(&ids, it[i].s->id);
		pal__pgarr_i64(&cuts, cut); /* PAL_NO_TIME: NULL (nullif below) */
		g_hash_table_insert(spec, (gpointer)it[i].s->id, (gpointer)it[i].s);
		g_hash_table_insert(ver, (gpointer)it[i].s->id,
				    GINT_TO_POINTER(it[i].res->version));
		m++;
	}
	char *p1 = pal__pgarr_end(&ids), *p2 = pal__pgarr_end(&cuts), nx[24];
	snprintf(nx, sizeof nx, "%" PRId64, a->now + 1);
	const char *p[] = {p1, p2, nx};
	PGresult *r = NULL;
	if (!rc && m && !(r = pal__store_query(a->st, TAKEOVER_JOBS_SQL, 3, p, err, errlen)))
		rc = PAL_EDB;
	g_free(p1);
	g_free(p2);
	/* the jobs and their cuts, for this sweep and, kept in the apply, for
	 * the one after its commit (pal_store_apply_settle) */
	GPtrArray *jobs = g_ptr_array_new_with_free_func(g_free);
	GArray *vers = g_array_new(FALSE, FALSE, sizeof(int));
	pal__pgarr_init(&ids);
	pal__pgarr_init(&cuts);
	for (int row = 0; r && row < PQntuples(r); row++) {
		const char *id = PQgetvalue(r, row, 0), *cut = PQgetvalue(r, row, 1);
		int v = GPOINTER_TO_INT(g_hash_table_lookup(ver, id));
		pal__pgarr_text(&ids, id);
		pal__pgarr_i64(&cuts, strtoll(cut, NULL, 10));
		g_ptr_array_add(jobs, g_strdup(id));
		g_array_append_val(vers, v);
		if ((rc = takeover_add(a, id, strtoll(cut, NULL, 10), v, false, err, errlen)))
			break;
	}
	int64_t k = 0;
	bool any = r && PQntuples(r) > 0;
	PQclear(r);
	p1 = pal__pgarr_end(&ids);
	p2 = pal__pgarr_end(&cuts);
	if (!rc && any)
		rc = takeover_lock(a, p1, p2, jobs, vers, err, errlen);
	g_ptr_array_free(jobs, TRUE);
	g_array_free(vers, TRUE);
	if (!rc && any)
		rc = takeover_cancel(a->st, p1, p2, NULL, NULL, spec, a->now, a->actor, a->reason,
				     &k, err, errlen);
	g_free(p1);
	g_free(p2);
	g_hash_table_destroy(spec);
	g_hash_table_destroy(ver);
	return rc;
}

/* How many of the jobs of T have a latest version no controller planning
 * their shard took in yet: TAKEOVER_WAIT_SQL counts those of a shard whose
 * controller is alive (the signal pal_store_retire_pending reads, what the
 * wait is for), TAKEOVER_PENDING_SQL those of a shard with a leader at all,
 * stale or not (what is reported as not taken in). */
#define TAKEOVER_COUNT_SQL(alive)                                                                  \
	"SELECT count(*) FROM jobs j JOIN job_versions v ON v.job_id = j.job_id"                   \
	" AND v.version = j.latest_version WHERE j.job_id = ANY($1::text[])"                       \
	" AND v.activated_at IS NULL AND EXISTS (SELECT 1 FROM shards s"                           \
	"  WHERE s.shard_id = j.shard AND s.leader IS NOT NULL" alive ")"
#define TAKEOVER_WAIT_SQL                                                                          \
	TAKEOVER_COUNT_SQL(" AND s.updated_at > clock_timestamp() - interval '10 seconds'")
#define TAKEOVER_PENDING_SQL TAKEOVER_COUNT_SQL("")
/* The versions the apply stored that are still the latest, to tell the
 * instants they fire (a job a later apply stored a version of meanwhile is
 * left to that apply, which swept with its own). */
#define TAKEOVER_SPECS_SQL                                                                         \
	"SELECT v.job_id, v.spec::text FROM unnest($1::text[], $2::int[]) AS u(id, ver)"           \
	" JOIN jobs j ON j.job_id = u.id AND j.latest_version = u.ver"                             \
	" JOIN job_versions v ON v.job_id = u.id AND v.version = u.ver"

bool pal_store_apply_took_over(const pal_store *st)
{
	return st->takeover != NULL;
}

const char *pal_store_apply_takeover_job(const pal_apply *a)
{
	return a && a->tk && a->tk->n ? a->tk->first : NULL;
}

int pal_store_apply_settle(pal_store *st, const char *actor, const char *reason, int64_t wait_ms,
			   int64_t *cancelled, int64_t *pending, char *err, size_t errlen)
{
	*cancelled = *pending = 0;
	struct pal__takeover *t = st->takeover;
	st->takeover = NULL;
	if (!t)
		return PAL_OK;
	char *ids = pal__pgarr_end(&t->ids), *cuts = pal__pgarr_end(&t->cuts),
	     *vers = pal__pgarr_end(&t->versions), *ret = pal__pgarr_end(&t->retired);
	t->n = 0; /* the literals are ours now */
	const char *p[] = {ids, vers};
	int rc = PAL_OK;
	for (int64_t waited = 0;; waited += 200) {
		if ((rc = pal__store_query_i64(st, TAKEOVER_WAIT_SQL, 1, p, -1, pending, err,
					       errlen)))
			break;
		if (!*pending || waited >= wait_ms)
			break;
		pal_sleep_ms(200);
	}
	/* a shard whose controller went stale during the wait did not take
	 * its jobs in either */
	if (!rc)
		rc = pal__store_query_i64(st, TAKEOVER_PENDING_SQL, 1, p, -1, pending, err, errlen);
	PGresult *r = NULL;
	if (!rc && !(r = pal__store_query(st, TAKEOVER_SPECS_SQL, 2, p, err, errlen)))
		rc = PAL_EDB;
	int nr = r ? PQntuples(r) : 0;
	pal_job_spec *specs = calloc(nr ? (size_t)nr : 1, sizeof *specs);
	GHashTable *spec = g_hash_table_new(g_str_hash, g_str_equal);
	int m = 0;
	if (!rc && !specs) {
		snprintf(err, errlen, "out of memory");
		rc = PAL_ENOMEM;
	}
	for (int row = 0; !rc && row < nr; row++) {
		if ((rc = pal__apply_stored_spec(PQgetvalue(r, row, 1), PQgetvalue(r, row, 0),
						 &specs[m], err, errlen)))
			break;
		g_hash_table_insert(spec, (gpointer)specs[m].id, &specs[m]);
		m++;
	}
	PQclear(r);
	if (!rc)
		rc = takeover_cancel(st, ids, cuts, vers, ret, spec, t->now, actor ? actor : "",
				     reason ? reason : "", cancelled, err, errlen);
	g_hash_table_destroy(spec);
	for (int k = 0; k < m; k++)
		pal_job_spec_clear(&specs[k]);
	free(specs);
	g_free(ids);
	g_free(cuts);
	g_free(vers);
	g_free(ret);
	pal__takeover_free(t); /* its literals taken above */
	return rc;
}
