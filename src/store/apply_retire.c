/*
 * apply_retire.c - retiring jobs (include/palisade/lifecycle.h): the
 * retiring version, the sweep of what it leaves, and a retired job
 * applied again (statement 4r).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/lifecycle.h"
#include "palisade/store.h"
#include "store_int.h"
#include "apply_int.h"
#include "ops_int.h"

/* The cause of what `delete` cancels after its wait (pal_store_retire_sweep)
 * and a re-apply before it (REAPPLY_SQL). */
#define SWEEP_CAUSE "job retired (planned before its retiring version took over)"

/* Statement 4r, for a chunk that applies retired jobs again, or jobs whose
 * latest version has an `end` or is a one-shot, before 4a takes the
 * retired ones' retired_at away.  A job stopped by a version that took
 * over at its apply (4e, below) and applied again: the rows of
 * instants after now that 4e cancelled before any attempt are deleted as
 * below (the version applied now takes over at its apply after such a
 * stop, and plans them).  A retired job lives again from this apply's
 * time (now(), its versions' created_at), so
 *   - what the retirement left cancellable (pending, retry_wait, paused:
 *     planned by the old version before its retiring version took over,
 *     which `delete` sweeps after its wait) at or before now is cancelled,
 *     as that sweep would (the retired period is not run);
 *   - a row of an instant after now that a retirement cancelled before any
 *     attempt (a plan-key row, named in a `cancel` audit row whose cause is
 *     the retirement, with no attempt or ticket) is deleted: it never
 *     reached the service, and it would hold the plan key, so that no
 *     controller could plan the instant.  The version applied now takes
 *     over at the apply (the retiring version took over when it was stored:
 *     switch_point in src/controller/planner.c) and plans those instants by
 *     its own schedule, target and keys.
 * One audit row per job for each: `cancel` with the ids, and
 * `job.reapply` with {cause, deleted, trigger_ids, scheduled_at}.  Rows:
 * job_id, the cancelled count, the deleted count. */
#define REAPPLY_CANCELLABLE                                                                        \
	"t.job_id IN (SELECT job_id FROM j) AND t.state IN ('pending', 'retry_wait', 'paused')"    \
	" AND t.scheduled_at <= now()"
#define REAPPLY_MOVE PAL__TRIGGER_MOVE_WHERE(REAPPLY_CANCELLABLE, "'cancelled'", "NULL")
#define REAPPLY_SQL                                                                                \
	"WITH j AS (SELECT x.job_id FROM unnest($1::text[]) AS u(id)"                              \
	"   JOIN jobs x ON x.job_id = u.id WHERE x.retired_at IS NOT NULL),"                       \
	" c AS (SELECT m.job_id, m.id FROM " REAPPLY_MOVE " m),"                                   \
	" ca AS (INSERT INTO audit_log (actor, action, scope, reason, details)"                    \
	"   SELECT $2, 'cancel', 'job:' || c.job_id, $3, jsonb_build_object('cause', "             \
	"'" SWEEP_CAUSE "',"                                                                       \
	"     'cancelled', count(*), 'trigger_ids', jsonb_agg(c.id ORDER BY c.id))"                \
	"   FROM c GROUP BY c.job_id),"                                                            \
	" jo AS (SELECT x.job_id FROM unnest($4::text[]) AS u(id)"                                 \
	"   JOIN jobs x ON x.job_id = u.id),"                                                      \
	" old AS (SELECT t.id, t.job_id, t.scheduled_at FROM triggers t JOIN jo"                   \
	"   ON t.job_id = jo.job_id"                                                               \
	"   WHERE t.request_id IS NULL AND t.state = 'cancelled' AND t.attempt_count = 0"          \
	"   AND t.scheduled_at > now()"                                                            \
	"   AND NOT EXISTS (SELECT 1 FROM attempts x WHERE x.trigger_id = t.id"                     \
	"    AND x.scheduled_at = t.scheduled_at)"                                                  \
	"   AND NOT EXISTS (SELECT 1 FROM tickets k WHERE k.trigger_id = t.id)"                    \
	"   AND EXISTS (SELECT 1 FROM audit_log a"                                                 \
	"    WHERE a.at BETWEEN t.finished_at AND t.finished_at + interval '1 minute'"             \
	"    AND a.action = 'cancel' AND a.scope = 'job:' || t.job_id"                             \
	"    AND (a.details ->> 'cause' LIKE 'job retired%'"                                       \
	"     OR a.details ->> 'cause' LIKE 'a version that takes over at its apply%')"            \
	"    AND a.details -> 'trigger_ids' @> to_jsonb(t.id))),"                                  \
	" d AS (DELETE FROM triggers t USING old WHERE t.id = old.id"                              \
	"   AND t.scheduled_at = old.scheduled_at RETURNING t.id, t.job_id, t.scheduled_at),"      \
	" da AS (INSERT INTO audit_log (actor, action, scope, reason, details)"                    \
	"   SELECT $2, 'job.reapply', 'job:' || d.job_id, $3, jsonb_build_object('cause',"         \
	"     'job applied again: rows after it that its retirement, or a version that took over"  \
	" at its apply, cancelled before any attempt',"                                            \
	"     'deleted', count(*), 'trigger_ids', jsonb_agg(d.id ORDER BY d.id),"                  \
	"     'scheduled_at', jsonb_agg(d.scheduled_at ORDER BY d.id))"                            \
	"   FROM d GROUP BY d.job_id)"                                                             \
	" SELECT j.job_id, (SELECT count(*) FROM c WHERE c.job_id = j.job_id),"                    \
	"  (SELECT count(*) FROM d WHERE d.job_id = j.job_id) FROM j"

/* The jobs among IT whose latest version before this apply has an `end`
 * or is a one-shot (a version that may have taken over at its apply, 4e):
 * added to *ALL, their count to *M. */
static int after_takeover(pal_apply *a, struct item *it, size_t n, pal_pgarr *all, size_t *m,
			  char *err, size_t errlen)
{
	pal_pgarr ids, vers;
	size_t k = 0;
	pal__pgarr_init(&ids);
	pal__pgarr_init(&vers);
	for (size_t i = 0; i < n; i++) {
		if (it[i].fresh || it[i].retired || !it[i].latest ||
		    it[i].res->outcome == PAL_APPLY_UNCHANGED)
			continue;
		pal__pgarr_text(&ids, it[i].s->id);
		pal__pgarr_i64(&vers, it[i].latest);
		k++;
	}
	char *a1 = pal__pgarr_end(&ids), *a2 = pal__pgarr_end(&vers);
	const char *p[] = {a1, a2};
	int rc = PAL_OK;
	PGresult *r = NULL;
	if (k && !(r = pal__store_query(
			a->st,
			"SELECT u.id FROM unnest($1::text[], $2::int[]) AS u(id, ver)"
			" JOIN job_versions pv ON pv.job_id = u.id AND pv.version = u.ver"
			" WHERE pv.spec -> 'schedule' ->> 'end' IS NOT NULL"
			" OR pv.spec -> 'schedule' ? 'at'",
			2, p, err, errlen)))
		rc = PAL_EDB;
	for (int row = 0; r && row < PQntuples(r); row++) {
		pal__pgarr_text(all, PQgetvalue(r, row, 0));
		(*m)++;
	}
	PQclear(r);
	g_free(a1);
	g_free(a2);
	return rc;
}

int pal__apply_reapply_retired(pal_apply *a, struct item *it, size_t n, char *err, size_t errlen)
{
	pal_pgarr ids, all;
	size_t m = 0;
	pal__pgarr_init(&ids);
	pal__pgarr_init(&all);
	for (size_t i = 0; i < n; i++)
		if (it[i].retired && it[i].res->outcome != PAL_APPLY_UNCHANGED) {
			pal__pgarr_text(&ids, it[i].s->id);
			pal__pgarr_text(&all, it[i].s->id);
			m++;
		}
	int rc = after_takeover(a, it, n, &all, &m, err, errlen);
	char *a1 = pal__pgarr_end(&ids), *a4 = pal__pgarr_end(&all);
	const char *p[] = {a1, a->actor, a->reason, a4};
	if (m && !rc) {
		PGresult *r = pal__store_query(a->st, REAPPLY_SQL, 4, p, err, errlen);
		if (!r)
			rc = PAL_EDB;
		PQclear(r);
	}
	g_free(a1);
	g_free(a4);
	return rc;
}

/* ---- retiring (include/palisade/lifecycle.h) --------------------------------- */

/* The not-yet-claimed triggers (pending, retry_wait, paused) of the
 * retired jobs among $1 (or of all of them with $5 set). */
#define RETIRE_CANCELLABLE_SQL                                                                     \
	"SELECT t.id, t.scheduled_at, t.state FROM triggers t WHERE t.job_id = ANY($1::text[])"    \
	" AND t.state IN ('pending', 'retry_wait', 'paused')"                                      \
	" AND ($5::bigint IS NOT NULL OR t.job_id IN (SELECT job_id FROM jobs"                     \
	"  WHERE job_id = ANY($1::text[]) AND retired_at IS NOT NULL))"

#define RETIRE_MOVE PAL__TRIGGER_MOVE(RETIRE_CANCELLABLE_SQL, "'cancelled'", "NULL")

/* Cancel those (RETIRE_MOVE), one trigger.cancel audit row per
 * job with the ids; with $5 set, first mark the jobs retired at $5 (epoch
 * seconds).  Rows: job_id, count. */
#define RETIRE_CANCEL_SQL                                                                          \
	"WITH r AS (UPDATE jobs SET retired_at = to_timestamp($5::bigint), updated_at = now()"     \
	"   WHERE $5::bigint IS NOT NULL AND job_id = ANY($1::text[]) RETURNING job_id),"          \
	" c AS (SELECT m.job_id, m.id FROM " RETIRE_MOVE " m),"                                    \
	" aud AS (INSERT INTO audit_log (actor, action, scope, reason, details)"                   \
	"   SELECT $2, 'cancel', 'job:' || c.job_id, $3, jsonb_build_object('cause', $4::text,"    \
	"     'cancelled', count(*), 'trigger_ids', jsonb_agg(c.id ORDER BY c.id))"                \
	"   FROM c GROUP BY c.job_id)"                                                             \
	" SELECT c.job_id, count(*) FROM c GROUP BY c.job_id"

static int cancel_retired(pal_store *st, const char *ids, const char *actor, const char *reason,
			  const char *cause, const char *at, GHashTable *counts, int64_t *total,
			  char *err, size_t errlen)
{
	const char *p[] = {ids, actor, reason, cause, at};
	PGresult *r = pal__store_query(st, RETIRE_CANCEL_SQL, 5, p, err, errlen);
	if (!r)
		return PAL_EDB;
	for (int row = 0; row < PQntuples(r); row++) {
		int64_t k = strtoll(PQgetvalue(r, row, 1), NULL, 10);
		*total += k;
		if (counts)
			g_hash_table_insert(counts, g_strdup(PQgetvalue(r, row, 0)),
					    GINT_TO_POINTER((int)k));
	}
	PQclear(r);
	return PAL_OK;
}

/* The spec of job ID from the canonical TEXT of its stored version. */
int pal__apply_stored_spec(const char *text, const char *id, pal_job_spec *out, char *err,
			   size_t errlen)
{
	json_error_t je;
	json_t *j = json_loads(text, 0, &je);
	int rc = PAL_OK;
	if (!j) {
		snprintf(err, errlen, "job %s: stored spec is not JSON", id);
		rc = PAL_EINVAL;
	} else if (pal_job_spec_from_canonical(j, out, err, errlen)) {
		rc = PAL_EINVAL;
	}
	json_decref(j);
	return rc;
}

/* The not-yet-claimed triggers of the jobs among $1, locked so that no
 * executor claims one (a claim passes locked rows over) before the cancel
 * below takes them; then the clock, and the end of the retirement (the
 * clock rounded up to the second). */
#define RETIRE_LOCK_SQL                                                                            \
	"SELECT 1 FROM triggers t WHERE t.job_id = ANY($1::text[])"                                \
	" AND t.state IN ('pending', 'retry_wait', 'paused') FOR UPDATE OF t"
#define RETIRE_CLOCK_SQL                                                                           \
	"SELECT c::text, ceil(extract(epoch FROM c))::bigint FROM clock_timestamp() c"

/* Set the created_at of the retiring versions $2 of jobs $1 (arrays) to
 * $3 (RETIRE_CLOCK_SQL). */
#define RETIRE_STORED_SQL                                                                          \
	"UPDATE job_versions v SET created_at = $3::timestamptz"                                   \
	" FROM unnest($1::text[], $2::int[]) AS u(id, ver)"                                        \
	" WHERE v.job_id = u.id AND v.version = u.ver"

/* The retiring versions are stored when their jobs' triggers were locked
 * (*STORED), not when the transaction began: a trigger that an executor
 * claimed between the two (up to claim_ahead early) runs, and is one
 * claimed before its retiring version was stored, as verify judges it
 * (left to finish), not one run outside every version's range.  Two
 * statements: the clock is read after the lock has waited for a claim. */
static int retire_clock(pal_store *st, const char *ids, char *stored, size_t len, int64_t *at,
			char *err, size_t errlen)
{
	const char *p[] = {ids};
	int rc = pal__ops_exec(st, RETIRE_LOCK_SQL, 1, p, NULL, err, errlen);
	PGresult *r = NULL;
	if (!rc && !(r = pal__store_query(st, RETIRE_CLOCK_SQL, 0, NULL, err, errlen)))
		rc = PAL_EDB;
	if (rc)
		return rc;
	snprintf(stored, len, "%s", PQgetvalue(r, 0, 0));
	*at = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
	PQclear(r);
	return PAL_OK;
}

/* pal_store_apply_retire for at most CHUNK ids (their specs are read at
 * once). */
static int retire_chunk(pal_apply *a, const char *const *ids, size_t n, pal_retire_result *res,
			char *err, size_t errlen)
{
	for (size_t i = 0; i < n; i++)
		res[i] = (pal_retire_result){.outcome = PAL_RETIRE_NOT_FOUND};
	int rc = pal__apply_collect(a, err, errlen);
	if (rc || !n)
		return rc;
	pal_pgarr arr;
	pal__pgarr_init(&arr);
	for (size_t i = 0; i < n; i++)
		pal__pgarr_text(&arr, ids[i]);
	char *all = pal__pgarr_end(&arr);
	/* Lock in job-id order, as apply does. */
	const char *p[] = {all};
	PGresult *r = pal__store_query(
	    a->st,
	    "SELECT j.job_id, j.retired_at IS NOT NULL, j.latest_version, v.spec::text,"
	    " v.notify_own"
	    " FROM jobs j JOIN job_versions v ON v.job_id = j.job_id AND v.version = "
	    "j.latest_version"
	    " WHERE j.job_id = ANY($1::text[]) ORDER BY j.job_id COLLATE \"C\" FOR UPDATE OF j",
	    1, p, err, errlen);
	if (!r) {
		g_free(all);
		return PAL_EDB;
	}
	GHashTable *index = g_hash_table_new(g_str_hash, g_str_equal);
	for (size_t i = 0; i < n; i++)
		g_hash_table_insert(index, (gpointer)ids[i], GSIZE_TO_POINTER(i + 1));
	int nr = PQntuples(r);
	pal_job_spec *specs = calloc(nr ? (size_t)nr : 1, sizeof *specs);
	pal_apply_result *ar = calloc(nr ? (size_t)nr : 1, sizeof *ar);
	size_t *of = calloc(nr ? (size_t)nr : 1, sizeof *of);
	size_t m = 0;
	int64_t at = 0;
	char stored[64] = "";
	if (!specs || !ar || !of) {
		snprintf(err, errlen, "out of memory");
		rc = PAL_ENOMEM;
	} else if (nr) {
		rc = retire_clock(a->st, all, stored, sizeof stored, &at, err, errlen);
	}
	for (int row = 0; !rc && row < nr; row++) {
		size_t i = GPOINTER_TO_SIZE(g_hash_table_lookup(index, PQgetvalue(r, row, 0)));
		if (!i)
			continue;
		i--;
		res[i].version = atoi(PQgetvalue(r, row, 2));
		if (!strcmp(PQgetvalue(r, row, 1), "t")) {
			res[i].outcome = PAL_RETIRE_ALREADY;
			continue;
		}
		if ((rc = pal__apply_stored_spec(PQgetvalue(r, row, 3), ids[i], &specs[m], err,
						 errlen)))
			break;
		/* The retiring version: the latest spec, its schedule ending now
		 * (end is exclusive; never before its start); its notify as it
		 * was, inherited entries included. */
		pal_job_spec *s = &specs[m];
		pal_job_spec_stored_notify_own(s, PQgetvalue(r, row, 4));
		int64_t end = s->has_end && s->end < at ? s->end : at;
		if (s->has_start && end < s->start)
			end = s->start;
		s->has_end = true;
		s->end = end;
		res[i].outcome = PAL_RETIRE_RETIRED;
		res[i].end = end;
		of[m++] = i;
	}
	PQclear(r);
	g_hash_table_destroy(index);
	if (!rc && m) {
		a->retiring = a->stored_specs = true;
		rc = pal_store_apply_add(a, specs, m, ar, err, errlen);
		a->retiring = a->stored_specs = false;
		if (!rc)
			rc = pal__apply_collect(a, err, errlen);
	}
	for (size_t k = 0; !rc && k < m; k++)
		res[of[k]].version = ar[k].version;
	if (!rc && m) {
		pal_pgarr ret, vers;
		pal__pgarr_init(&ret);
		pal__pgarr_init(&vers);
		for (size_t k = 0; k < m; k++) {
			pal__pgarr_text(&ret, ids[of[k]]);
			pal__pgarr_i64(&vers, ar[k].version);
		}
		char *rids = pal__pgarr_end(&ret), *rvers = pal__pgarr_end(&vers);
		const char *sp[] = {rids, rvers, stored};
		rc = pal__ops_exec(a->st, RETIRE_STORED_SQL, 3, sp, NULL, err, errlen);
		g_free(rvers);
		char ats[24];
		snprintf(ats, sizeof ats, "%lld", (long long)at);
		GHashTable *counts = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
		int64_t total = 0;
		if (!rc)
			rc = cancel_retired(a->st, rids, a->actor, a->reason, "job retired", ats,
					    counts, &total, err, errlen);
		for (size_t k = 0; !rc && k < m; k++)
			res[of[k]].cancelled =
			    GPOINTER_TO_INT(g_hash_table_lookup(counts, ids[of[k]]));
		g_hash_table_destroy(counts);
		g_free(rids);
	}
	for (size_t k = 0; k < m; k++)
		pal_job_spec_clear(&specs[k]);
	free(specs);
	free(ar);
	free(of);
	g_free(all);
	return rc;
}

int pal_store_retire_sweep(pal_store *st, const char *const *ids, size_t n, const char *actor,
			   const char *reason, int64_t *cancelled, char *err, size_t errlen)
{
	*cancelled = 0;
	if (!n)
		return PAL_OK;
	pal_pgarr arr;
	pal__pgarr_init(&arr);
	for (size_t i = 0; i < n; i++)
		pal__pgarr_text(&arr, ids[i]);
	char *all = pal__pgarr_end(&arr);
	int rc = cancel_retired(st, all, actor, reason ? reason : "", SWEEP_CAUSE, NULL, NULL,
				cancelled, err, errlen);
	g_free(all);
	return rc;
}

int pal_store_apply_retire(pal_apply *a, const char *const *ids, size_t n, pal_retire_result *res,
			   char *err, size_t errlen)
{
	int rc = PAL_OK;
	for (size_t off = 0; !rc && (off < n || !n); off += CHUNK) {
		rc = retire_chunk(a, ids + off, n - off < CHUNK ? n - off : CHUNK, res + off, err,
				  errlen);
		if (!n)
			break;
	}
	return rc;
}
