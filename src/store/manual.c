/*
 * manual.c - manual runs (pal_ops_trigger): one trigger of kind manual per
 * (job, request id), at an instant the operator names or now, and the
 * request-id and UUID helpers they use.  docs/operations.md.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "palisade/backfill.h"
#include "palisade/lifecycle.h"
#include "palisade/ops.h"
#include "palisade/template.h"
#include "palisade/timefmt.h"
#include "ops_int.h"

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

typedef struct run_ctx {
	const char *job_id, *request_id, *actor, *reason;
	int64_t at;
	bool new_effect;
	pal_run_result *res;
} run_ctx;

/* Whether AT is an instant of VERSIONS, whose first upstreams' versions
 * are UPS (*IN: it); an error computing them counts as no instant. */
static bool instant_by(json_t *versions, json_t *ups, int64_t at, pal_backfill_inst *in)
{
	pal_backfill_plan pl = { 0 };
	char e[256];
	int rc = pal_backfill_instants_after(versions, ups, at, at, 1, &pl, e, sizeof e);
	bool found = rc == PAL_OK && pl.n > 0;
	if (found)
		*in = pl.v[0];
	pal_backfill_plan_clear(&pl);
	return found;
}

/*
 * Whether C->at is an instant of the job that its controller has still to
 * run: one still to come, by the versions as stored, or, when the latest is
 * stored and no controller has taken it over yet, by it alone (it plans
 * what is not planned yet).  A version with `after` has its first
 * upstream's instants (pal_backfill_instants_after, as the dependency
 * planner decides them), by the upstreams' activated versions, or as they
 * will be once an upstream's latest version stored and not activated yet
 * is (its controller fires its instants after where it switches to it: a
 * roll, an outage, a retired upstream applied again; *PENDING_UP when only
 * that version has C->at); for one of those, a past instant too while the dependency planner
 * has not decided it (pal__ops_after_undecided, the predicate a backfill
 * checks too): it plans the job's trigger there once its upstreams end
 * (*WAITS_UPSTREAM).
 */
static int coming_instant(pal_store *st, const run_ctx *c, int64_t now, bool *scheduled,
			  bool *waits_upstream, bool *pending_up, char *err, size_t errlen)
{
	json_t *versions, *ups = NULL, *pend;
	int rc = pal__ops_job_versions(st, c->job_id, &versions, err, errlen);
	if (rc)
		return rc;
	json_t *latest = json_array_get(versions, json_array_size(versions) - 1);
	if (!json_is_integer(json_object_get(latest, "effective_from"))) {
		json_t *alone = json_pack("[O]", latest);
		json_decref(versions);
		versions = alone;
	}
	bool subst = false;
	rc = pal__ops_upstream_versions(st, versions, true, &pend, &subst, err, errlen);
	if (!rc && subst)
		rc = pal__ops_upstream_versions(st, versions, false, &ups, NULL, err, errlen);
	else if (!rc)
		ups = json_incref(pend);
	if (rc) {
		json_decref(pend);
		json_decref(versions);
		return rc;
	}
	pal_backfill_inst in = { 0 };
	bool inst = instant_by(versions, ups, c->at, &in);
	if (!inst && subst)
		inst = *pending_up = instant_by(versions, pend, c->at, &in);
	json_decref(versions);
	json_decref(ups);
	json_decref(pend);
	*scheduled = inst && c->at > now;
	if (*scheduled || !inst || !in.after)
		return PAL_OK;
	char ats[32], ps[16];
	snprintf(ats, sizeof ats, "{%lld}", (long long)c->at);
	snprintf(ps, sizeof ps, "{%d}", in.partitions);
	int64_t undecided, first;
	if ((rc = pal__ops_after_undecided(st, c->job_id, ats, ps, &undecided, &first, err,
					   errlen)))
		return rc;
	*scheduled = *waits_upstream = undecided > 0;
	return PAL_OK;
}

/*
 * In the run's transaction, before its insert, the job's row held FOR
 * SHARE (a concurrent delete waits or is seen): refuse a retired job, and
 * unless new_effect, an instant whose earlier triggers have an unknown
 * outcome (the callers warn about those before; this closes the window
 * between their read and the insert) and an instant still to come that the
 * job's schedule has, or for a job with `after` its upstream's, or one of
 * those the dependency planner has not decided yet (the scheduler runs it
 * under its own key).
 */
static int check_run(pal_store *st, const run_ctx *c, char *err, size_t errlen)
{
	pal_run_result *res = c->res;
	int64_t now;
	int rc = pal__ops_hold_job(st, c->job_id, res->refused, &now, err, errlen);
	if (rc)
		return rc;
	if (c->at == PAL_OPS_NOW || c->new_effect)
		return PAL_OK;
	char ts[32];
	pal_fmt_rfc3339(c->at, ts, sizeof ts);
	/* first the unknown outcomes palisade still has: the refusal names
	 * them, whatever the horizon */
	json_t *unk = NULL;
	rc = pal_store_unknown_at(st, c->job_id, c->at, &unk, err, errlen);
	if (rc)
		return rc;
	size_t i, n = 0;
	json_t *t;
	json_array_foreach(unk, i, t)
	{
		const char *rid = json_string_value(json_object_get(t, "request_id"));
		n += !rid || strcmp(rid, c->request_id);
	}
	json_decref(unk);
	if (n) {
		snprintf(res->refused, sizeof res->refused, "unknown-outcome");
		snprintf(err, errlen,
			 "job %s at %s: %zu earlier trigger(s) with an unknown outcome; nothing was "
			 "written; hint: resolve the ticket (retry keeps the key), or --new-effect",
			 c->job_id, ts, n);
		return PAL_ESTALE;
	}
	/* before the retention horizon the instant's triggers may have gone
	 * with their range: an unknown outcome there can no longer be seen
	 * (one still kept is named above, with its ticket) */
	int64_t h;
	if ((rc = pal__ops_horizon(st, &h, err, errlen)))
		return rc;
	if (c->at < h) {
		char hs[32];
		pal_fmt_rfc3339(h, hs, sizeof hs);
		snprintf(res->refused, sizeof res->refused, "unknown-outcome");
		snprintf(err, errlen,
			 "job %s at %s: the instant is before the retention horizon %s (the "
			 "triggers before it may have been dropped), so an earlier trigger's "
			 "unknown outcome cannot be ruled out; nothing was written; hint: "
			 "--new-effect (API \"new_effect\": true) to run it knowing it may be a "
			 "second effect",
			 c->job_id, ts, hs);
		return PAL_ESTALE;
	}
	/* the scheduler's own trigger at that instant, not run yet: it will be
	 * (a past instant waiting for an executor, one planned ahead) */
	char at[24];
	pal__ops_i64s(at, sizeof at, c->at);
	const char *pw[] = { c->job_id, at };
	PGresult *r = pal__store_query(st,
			     "SELECT state FROM triggers WHERE job_id = $1"
			     " AND scheduled_at = to_timestamp($2::bigint) AND request_id IS NULL"
			     " AND state IN ('pending', 'retry_wait', 'paused', 'running', 'pausing')"
			     " LIMIT 1",
			     2, pw, err, errlen);
	if (!r)
		return PAL_EDB;
	char waiting[16] = "";
	if (PQntuples(r))
		snprintf(waiting, sizeof waiting, "%s", PQgetvalue(r, 0, 0));
	PQclear(r);
	bool scheduled = waiting[0], upstream = false, pending = false;
	if (!scheduled &&
	    (rc = coming_instant(st, c, now, &scheduled, &upstream, &pending, err, errlen)))
		return rc;
	if (scheduled) {
		snprintf(res->refused, sizeof res->refused, "scheduled-instant");
		res->waits_upstream = !waiting[0] && upstream;
		if (waiting[0])
			snprintf(err, errlen,
				 "job %s at %s: the scheduler's trigger for that instant has not run "
				 "yet (%s), and a manual run would make a second effect; nothing was "
				 "written; hint: --new-effect (API \"new_effect\": true) to run it "
				 "twice on purpose",
				 c->job_id, ts, waiting);
		else if (pending)
			snprintf(err, errlen,
				 "job %s at %s: an instant of a version of its upstream (after:) "
				 "stored but not activated yet (no controller has taken it over): "
				 "once one does, the upstream runs there (a missed instant by its "
				 "misfire policy) and the dependency planner "
				 "runs the job after it under its own key, so a manual run would make "
				 "a second effect; nothing was written; hint: --new-effect (API "
				 "\"new_effect\": true) to run it twice on purpose",
				 c->job_id, ts);
		else if (upstream)
			snprintf(err, errlen,
				 "job %s at %s: an instant of its upstream (after:) that the "
				 "dependency planner has not decided yet: it runs the job there under "
				 "its own key once the upstream ends, and a manual run would make a "
				 "second effect; nothing was written; hint: --new-effect (API "
				 "\"new_effect\": true) to run it twice on purpose",
				 c->job_id, ts);
		else
			snprintf(err, errlen,
				 "job %s is scheduled at %s, still to come: the scheduler runs it under "
				 "its own key, and a manual run would make a second effect; nothing was "
				 "written; hint: --new-effect (API \"new_effect\": true) to run it "
				 "twice on purpose",
				 c->job_id, ts);
		return PAL_ESTALE;
	}
	return PAL_OK;
}

static int trigger_body(pal_store *st, void *vctx, char *err, size_t errlen)
{
	run_ctx *c = vctx;
	pal_run_result *res = c->res;
	pal_run_result_clear(res);
	memset(res, 0, sizeof *res);
	res->ids = json_array();
	int rc = pal__ops_lock_request(st, c->job_id, c->request_id, err, errlen);
	if (rc)
		return rc;
	char at[24];
	pal__ops_i64s(at, sizeof at, c->at);
	const char *p[] = { c->job_id, c->request_id, c->at == PAL_OPS_NOW ? NULL : at };

	/* its triggers, or once retention dropped them, what request_ids kept
	 * of them (sql/046; retention.request_ids; version 0: a backfill's) */
	PGresult *r = pal__store_query(
		st,
		"SELECT id, source, floor(extract(epoch FROM scheduled_at))::bigint, version"
		" FROM triggers WHERE job_id = $1 AND request_id = $2"
		" UNION ALL (SELECT unnest(u.trigger_ids),"
		"  CASE WHEN u.version = 0 THEN 'backfill' ELSE 'manual' END,"
		"  floor(extract(epoch FROM u.scheduled_at))::bigint, u.version FROM request_ids u"
		"  WHERE u.job_id = $1 AND u.request_id = $2 AND NOT EXISTS (SELECT 1 FROM triggers t"
		"   WHERE t.job_id = $1 AND t.request_id = $2))"
		" ORDER BY 1",
		2, p, err, errlen);
	if (!r)
		return PAL_EDB;
	int n = PQntuples(r);
	if (n) {
		int64_t was = pal__ops_val_i64(r, 0, 2);
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
			json_array_append_new(res->ids, json_integer(pal__ops_val_i64(r, i, 0)));
		PQclear(r);
		return PAL_OK;
	}
	PQclear(r);
	if ((rc = check_run(st, c, err, errlen)))
		return rc;

	r = pal__store_query(
		st,
		"INSERT INTO triggers (job_id, version, scheduled_at, partition, source, request_id,"
		" tenant, resource_group, priority, due_at, shard, job_ref)"
		" SELECT j.job_id, v.version, a.t, p, 'manual', $2, coalesce(v.spec->>'tenant', j.tenant),"
		"  v.resource_group, v.priority, a.t, j.shard, j.ref"
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
		if ((rc = pal__ops_job_exists(st, c->job_id, err, errlen)))
			return rc;
		snprintf(err, errlen,
			 "job %s: no trigger inserted: its version has no row to plan, or request id "
			 "\"%s\" conflicts with existing triggers; hint: `palisade triggers --job %s`",
			 c->job_id, c->request_id, c->job_id);
		return PAL_EINVAL;
	}
	res->version = atoi(PQgetvalue(r, 0, 1));
	res->at = pal__ops_val_i64(r, 0, 2);
	for (int i = 0; i < n; i++)
		json_array_append_new(res->ids, json_integer(pal__ops_val_i64(r, i, 0)));
	PQclear(r);

	char *ids = json_dumps(res->ids, JSON_COMPACT);
	char ver[16], ts[24];
	snprintf(ver, sizeof ver, "%d", res->version);
	pal__ops_i64s(ts, sizeof ts, res->at);
	const char *pa[] = { c->actor, c->job_id, c->reason, c->request_id, ver, ts, ids ? ids : "[]" };
	rc = pal__ops_exec(st,
			   "INSERT INTO audit_log (actor, action, scope, reason, details)"
			   " VALUES ($1, 'trigger', 'job:' || $2, $3, jsonb_build_object("
			   "  'request_id', $4::text, 'version', $5::int,"
			   "  'scheduled_at', to_timestamp($6::bigint), 'triggers', $7::jsonb))",
			   7, pa, NULL, err, errlen);
	/* the id outlives the triggers (their range dropped by retention) */
	const char *pu[] = { c->job_id, c->request_id, ts, ver, ids ? ids : "[]" };
	if (!rc)
		rc = pal__ops_exec(st,
				   "INSERT INTO request_ids (job_id, request_id, scheduled_at, version,"
				   " trigger_ids) SELECT $1, $2, to_timestamp($3::bigint), $4::int,"
				   " ARRAY(SELECT jsonb_array_elements_text($5::jsonb)::bigint)"
				   " ON CONFLICT (job_id, request_id) DO NOTHING",
				   5, pu, NULL, err, errlen);
	free(ids);
	if (rc)
		return rc;
	return pal__ops_notify(st, "NOTIFY palisade_triggers", 0, NULL, err, errlen);
}

int pal_ops_trigger(pal_store *st, const char *job_id, int64_t at, const char *request_id,
		    bool new_effect, const char *actor, const char *reason, pal_run_result *res,
		    char *err, size_t errlen)
{
	memset(res, 0, sizeof *res);
	run_ctx c = { job_id, request_id, actor, reason, at, new_effect, res };
	return pal__ops_in_tx(st, trigger_body, &c, err, errlen);
}
