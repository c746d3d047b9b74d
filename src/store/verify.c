/*
 * verify.c - the reads behind `palisade verify`: activated versions, planned
 * triggers and recorded misfires of a job in a time range.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/store.h"
#include "store_int.h"

int pal_store_db_now(pal_store *st, int64_t *now, char *err, size_t errlen)
{
	PGresult *r = pal__store_query(
	    st, "SELECT floor(extract(epoch FROM clock_timestamp()))::bigint", 0, NULL, err, errlen);
	if (!r)
		return PAL_EDB;
	*now = atoll(PQgetvalue(r, 0, 0));
	PQclear(r);
	return PAL_OK;
}

/* The activated versions of a job, and those stored between two activated
 * ones that no controller activated (effective_from null: passed over by a
 * controller that loaded only the activated versions and the latest;
 * verify judges them as the planner does). */
int pal_store_activated_versions(pal_store *st, const char *job_id, json_t **out, char *err,
				 size_t errlen)
{
	const char *p[] = { job_id };
	return pal__store_query_json(
	    st,
	    "SELECT coalesce(json_agg(x ORDER BY x.job_id), '[]')::text FROM ("
	    " SELECT j.job_id, (SELECT json_agg(json_build_object('version', v.version, 'spec', "
	    "v.spec,"
	    "   'effective_from', floor(extract(epoch FROM v.effective_from))::bigint,"
	    "   'created_at', floor(extract(epoch FROM v.created_at))::bigint) ORDER BY "
	    "v.version)"
	    "   FROM job_versions v WHERE v.job_id = j.job_id AND (v.effective_from IS NOT NULL"
	    "    OR (EXISTS (SELECT 1 FROM job_versions w"
	    "     WHERE w.job_id = v.job_id AND w.version < v.version AND w.effective_from IS NOT NULL)"
	    "     AND EXISTS (SELECT 1 FROM job_versions w WHERE w.job_id = v.job_id"
	    "     AND w.version > v.version AND w.effective_from IS NOT NULL)))) AS "
	    "versions"
	    " FROM jobs j WHERE $1::text IS NULL OR j.job_id = $1) x",
	    1, p, out, err, errlen);
}

/* COL of the job's version in force at the nominal instant of trigger t
 * (the latest stored by then: a move counts from its apply), else ROW (the
 * row's own column). */
#define SCOPE_THEN(col, row)                                                                       \
	"coalesce((SELECT " col " FROM job_versions w WHERE w.job_id = t.job_id"                   \
	" AND w.created_at <= " PAL__TRIGGER_NOMINAL("t") " ORDER BY w.version DESC LIMIT 1), " row ")"

int pal_store_planned(pal_store *st, const char *job_id, int64_t from, int64_t to,
		      json_t **triggers, json_t **misfires, char *err, size_t errlen)
{
	char f[24], t[24];
	snprintf(f, sizeof f, "%" PRId64, from);
	snprintf(t, sizeof t, "%" PRId64, to);
	const char *p[] = { job_id, f, t };
	/* [at, partition, rows] per plan key of scheduled sources.  A row of
	 * an instant after a retired job was applied again that the
	 * retirement cancelled before any attempt is no decision (the apply
	 * deletes such rows: docs/operations.md, "Retiring a job"): without a
	 * row of the new version the instant is missing.  A row of an older
	 * version after the end of a version that took over before it (a
	 * retired job, a version applied with its `end` reached) or after a
	 * version that took over at its apply as a one-shot or after one,
	 * before the job was applied again, is not counted when it was cancelled before
	 * any attempt (by the retirement or that apply) or claimed before
	 * that version was stored and left to finish (an executor claims up
	 * to claim_ahead early); one claimed later ran outside every
	 * version's range and is counted (unexpected).  A version that no
	 * controller activated before a later one (passed over), or one with
	 * an `end` not activated yet, counts as taking over when it was
	 * stored, as verify judges it.  A shadow row of a past instant that
	 * its scope makes live (PAL__SHADOW_LIVE) is not counted: no one
	 * called it (palisade plans such an instant pending, a cut-over moves
	 * it, and the old system was cut over), so the instant is missing.
	 * One whose scope is still shadow there is the old system's and is
	 * counted.  The scope is the job's at the instant (SCOPE_THEN), not
	 * the row's: a move takes a job's unfinished rows along, past shadow
	 * ones too, but changes the side of those from the apply on only, so
	 * a shadow row before a move into a live scope is the old system's,
	 * and one after a move that a tick left in the old scope (planned
	 * from the version before the move and not moved after it) is
	 * judged by the new scope: where it is live no one called it. */
	int rc = pal__store_query_json(
	    st,
	    "SELECT coalesce(json_agg(json_build_array(a, p, n) ORDER BY a, p), '[]')::text FROM ("
	    " SELECT floor(extract(epoch FROM t.scheduled_at))::bigint AS a, t.partition AS p, "
	    "count(*) AS n"
	    " FROM triggers t WHERE t.job_id = $1"
	    " AND t.scheduled_at BETWEEN to_timestamp($2::bigint) AND to_timestamp($3::bigint)"
	    " AND t.request_id IS NULL"
	    " AND NOT (t.state = 'shadow' AND t.scheduled_at <= clock_timestamp()"
	    "  AND palisade_trigger_live(t.job_id, " SCOPE_THEN("coalesce(w.plan_tenant, 'default')",
							   "t.tenant") ", "
	    SCOPE_THEN("w.resource_group", "t.resource_group") ", CASE WHEN"
	    "  t.last_error_class = 'rolled_back' THEN greatest(" PAL__TRIGGER_NOMINAL("t") ","
	    "  t.updated_at) ELSE " PAL__TRIGGER_NOMINAL("t") " END))"
	    " AND NOT (t.state = 'cancelled' AND t.attempt_count = 0 AND EXISTS ("
	    "   SELECT 1 FROM job_versions rv JOIN job_versions nv ON nv.job_id = rv.job_id"
	    "    AND nv.version > rv.version"
	    "   WHERE rv.job_id = t.job_id AND rv.version > t.version"
	    "    AND (rv.spec -> 'schedule' ->> 'end')::timestamptz <= nv.created_at"
	    "    AND nv.created_at < t.scheduled_at))"
	    " AND NOT EXISTS ("
	    "  SELECT 1 FROM job_versions rv WHERE rv.job_id = t.job_id"
	    "  AND rv.version > t.version"
	    "  AND coalesce(rv.effective_from, CASE WHEN rv.spec -> 'schedule' ->> 'end' IS NOT NULL"
	    "   OR EXISTS (SELECT 1 FROM job_versions av WHERE av.job_id = rv.job_id"
	    "    AND av.version > rv.version AND av.effective_from IS NOT NULL)"
	    "   THEN rv.created_at END) < t.scheduled_at"
	    "  AND (rv.spec -> 'schedule' ? 'at' OR EXISTS (SELECT 1 FROM job_versions ov"
	    "   WHERE ov.job_id = rv.job_id AND ov.version = rv.version - 1"
	    "   AND ov.spec -> 'schedule' ? 'at')"
	    "   OR (rv.spec -> 'schedule' ->> 'end')::timestamptz <= t.scheduled_at)"
	    "  AND ((t.state = 'cancelled' AND t.attempt_count = 0)"
	    "   OR least(t.first_claimed_at, (SELECT min(x.claimed_at) FROM attempts x"
	    "    WHERE x.trigger_id = t.id AND x.scheduled_at = t.scheduled_at)) < rv.created_at)"
	    "  AND NOT EXISTS (SELECT 1 FROM job_versions nv WHERE nv.job_id = rv.job_id"
	    "   AND nv.version > rv.version AND nv.created_at < t.scheduled_at))"
	    " GROUP BY 1, 2) x",
	    3, p, triggers, err, errlen);
	if (rc)
		return rc;
	rc = pal__store_query_json(
	    st,
	    "SELECT coalesce(json_agg(json_build_array(floor(extract(epoch FROM "
	    "range_from))::bigint,"
	    " floor(extract(epoch FROM range_to))::bigint, partition, reason) ORDER BY "
	    "range_from), '[]')::text"
	    " FROM misfires WHERE job_id = $1 AND range_to >= to_timestamp($2::bigint)"
	    " AND range_from <= to_timestamp($3::bigint)",
	    3, p, misfires, err, errlen);
	if (rc) {
		json_decref(*triggers);
		*triggers = NULL;
	}
	return rc;
}
