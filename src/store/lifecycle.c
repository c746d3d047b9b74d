/*
 * lifecycle.c - reading queries of the operator commands (attempts, gates,
 * misfires, audit, retired jobs) and the checks of retiring and re-running
 * (include/palisade/lifecycle.h).  Each is one statement that builds its
 * JSON in PostgreSQL; user input travels as parameters.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/lifecycle.h"
#include "store_int.h"

/* RFC 3339 UTC text of a timestamptz column (NULL stays NULL). */
#define TS(col) "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"

static char *id_array(const char *const *ids, size_t n)
{
	pal_pgarr a;
	pal__pgarr_init(&a);
	for (size_t i = 0; i < n; i++)
		pal__pgarr_text(&a, ids[i]);
	return pal__pgarr_end(&a);
}

int pal_store_retire_pending(pal_store *st, const char *const *ids, size_t n, int64_t *pending,
			     char *err, size_t errlen)
{
	*pending = 0;
	if (!n)
		return PAL_OK;
	char *a = id_array(ids, n);
	const char *p[] = { a };
	int rc = pal__store_query_i64(
	    st,
	    "SELECT count(*) FROM jobs j JOIN job_versions v ON v.job_id = j.job_id"
	    " AND v.version = j.latest_version WHERE j.job_id = ANY($1::text[])"
	    " AND j.retired_at IS NOT NULL AND v.activated_at IS NULL"
	    /* only where a controller plans: its ticks touch the shard row */
	    " AND EXISTS (SELECT 1 FROM shards s WHERE s.shard_id = j.shard"
	    "  AND s.leader IS NOT NULL"
	    "  AND s.updated_at > clock_timestamp() - interval '10 seconds')",
	    1, p, -1, pending, err, errlen);
	g_free(a);
	return rc;
}

int pal_store_live_job_ids(pal_store *st, json_t **out, char *err, size_t errlen)
{
	return pal__store_query_json(
	    st,
	    "SELECT coalesce(json_agg(job_id ORDER BY job_id), '[]') FROM jobs"
	    " WHERE retired_at IS NULL",
	    0, NULL, out, err, errlen);
}

int pal_store_prune_ids(pal_store *st, const char *prefix,
			bool (*defined)(void *ctx, const char *id), void *ctx, json_t *gone,
			json_t *kept, char *err, size_t errlen)
{
	char *seg = prefix ? g_strdup(prefix) : NULL;
	size_t n = seg ? strlen(seg) : 0;
	if (n && seg[n - 1] == '.')
		seg[n - 1] = '\0';
	const char *p[] = {seg};
	json_t *rows = NULL;
	int rc = pal__store_query_json(
	    st,
	    "SELECT coalesce(json_agg(json_build_array(j.job_id, $1::text IS NOT NULL AND"
	    "  EXISTS (SELECT 1 FROM shadow_scopes s WHERE s.scope IN ('global',"
	    "   'job:' || j.job_id, 'group:' || j.resource_group, 'tenant:' || j.tenant))"
	    "  AND palisade_trigger_live(j.job_id, j.tenant, j.resource_group, 'infinity'))"
	    "  ORDER BY j.job_id), '[]') FROM jobs j WHERE j.retired_at IS NULL"
	    " AND ($1::text IS NULL OR j.job_id = $1"
	    "  OR left(j.job_id, length($1) + 1) = $1 || '.')",
	    1, p, &rows, err, errlen);
	g_free(seg);
	if (rc)
		return rc;
	size_t i;
	json_t *row;
	json_array_foreach(rows, i, row)
	{
		json_t *id = json_array_get(row, 0);
		if (!defined(ctx, json_string_value(id)))
			json_array_append(json_is_true(json_array_get(row, 1)) ? kept : gone, id);
	}
	json_decref(rows);
	return PAL_OK;
}

int pal_store_job_gates(pal_store *st, json_t **out, char *err, size_t errlen)
{
	return pal__store_query_json(
	    st,
	    "SELECT coalesce(json_object_agg(substr(scope, 5), source), '{}') FROM gates"
	    " WHERE scope LIKE 'job:%' AND paused",
	    0, NULL, out, err, errlen);
}

int pal_store_apply_spec_gates(pal_apply *ap, pal_store *st, const json_t *suspended,
			       bool (*defined)(void *ctx, const char *id), void *ctx,
			       const char *actor, const pal_resume_opts *resume, json_t *closed,
			       json_t *lifted, char *err, size_t errlen)
{
	json_t *gates = NULL;
	int rc = pal_store_apply_sync(ap, err, errlen);
	if (!rc)
		rc = pal_store_job_gates(st, &gates, err, errlen);
	json_t *susp = json_object(); /* the suspended ids as a set */
	size_t i;
	json_t *v;
	json_array_foreach(suspended, i, v)
	{
		json_object_set(susp, json_string_value(v), json_true());
		if (!rc && !json_object_get(gates, json_string_value(v)))
			json_array_append(closed, v);
	}
	const char *job;
	json_object_foreach(gates, job, v)
	{
		if (!rc && !strcmp(json_string_value(v), "spec") && defined(ctx, job) &&
		    !json_object_get(susp, job))
			json_array_append_new(lifted, json_string(job));
	}
	json_decref(susp);
	json_decref(gates);
	/* The gates lock, which claims wait for, is held from here to the
	 * commit: milliseconds. */
	json_array_foreach(closed, i, v)
	{
		pal_pause_result pr;
		if (!rc)
			rc = pal_ops_suspend(st, json_string_value(v), actor,
					     "suspend: true in the job file", &pr, err, errlen);
	}
	json_array_foreach(lifted, i, v)
	{
		pal_resume_result rr;
		if (!rc)
			rc = pal_ops_unsuspend(st, json_string_value(v), actor,
					       "suspend no longer set in the job file", resume, &rr,
					       err, errlen);
	}
	if (rc)
		pal_store_apply_abort(ap);
	return rc;
}

int pal_store_attempts_json(pal_store *st, int64_t trigger_id, json_t **out, char *err,
			    size_t errlen)
{
	char id[24];
	snprintf(id, sizeof id, "%" PRId64, trigger_id);
	const char *p[] = { id };
	int64_t n;
	int rc = pal__store_query_i64(st, "SELECT count(*) FROM triggers WHERE id = $1::bigint", 1,
				      p, -1, &n, err, errlen);
	if (rc)
		return rc;
	if (n <= 0) {
		*out = NULL;
		snprintf(err, errlen,
			 "no trigger %s; hint: `palisade triggers --job JOB` lists them", id);
		return PAL_ENOENT;
	}
	return pal__store_whole_list(
	    pal__store_attempts_query(st, trigger_id, NULL, 0, out, err, errlen), out);
}

int pal__store_attempts_query(pal_store *st, int64_t trigger_id, const char *after, int limit,
			      json_t **out, char *err, size_t errlen)
{
	char id[24], l[16], f[24] = "0", us[24] = "0";
	long long cv[2], fence = 0, at = 0;
	if (after && !pal__store_cursor_ints(after, 2, 2u, cv)) {
		snprintf(err, errlen, "cursor \"%.40s\" is not one this API gave", after);
		return PAL_EINVAL;
	}
	if (after) {
		fence = cv[0], at = cv[1];
		snprintf(f, sizeof f, "%lld", fence);
		snprintf(us, sizeof us, "%lld", at);
	}
	snprintf(id, sizeof id, "%" PRId64, trigger_id);
	snprintf(l, sizeof l, "%d", limit);
	const char *p[] = {id, after ? f : NULL, us, limit > 0 ? l : NULL};
	/* by fence, then claim time: the cursor is both */
	int rc = pal__store_query_json(
	    st,
	    "SELECT coalesce(json_agg(json_build_object('id', a.id, 'fence', a.fence,"
	    " 'node', a.node, 'claimed_at', " TS("a.claimed_at") ", 'ended_at', " TS(
		"a.ended_at") ","
			      " 'idempotency_key', a.idempotency_key, 'outcome', a.outcome,"
			      " 'error_class', a.error_class, 'http_status', a.http_status,"
			      " 'duration_ms', a.duration_ms, 'response', " PAL__RESPONSE_JSON(
				  "a") ","
				       " '_c', a.fence || '_' || (extract(epoch FROM a.claimed_at)"
				       "  * 1000000)::bigint)"
				       " ORDER BY a.fence, a.claimed_at), '[]')"
				       " FROM (SELECT * FROM attempt_ledger l WHERE l.trigger_id = "
				       "$1::bigint AND ($2::bigint IS NULL OR (l.fence, "
				       "l.claimed_at)"
				       "  > ($2::bigint, 'epoch'::timestamptz + $3::bigint * "
				       "interval '1 microsecond'))"
				       "  ORDER BY l.fence, l.claimed_at LIMIT $4::int) a",
	    4, p, out, err, errlen);
	if (!rc)
		pal__store_show_bodies(*out);
	return rc;
}

int pal__store_gates_query(pal_store *st, const char *after, int limit, json_t **out, char *err,
			   size_t errlen)
{
	char l[16];
	snprintf(l, sizeof l, "%d", limit);
	const char *p[] = {after, limit > 0 ? l : NULL};
	return pal__store_query_json(
	    st,
	    "SELECT coalesce(json_agg(json_build_object('scope', scope, 'paused', paused,"
	    " 'reason', reason, 'actor', actor, 'since', " TS(
		"since") ","
			 " 'source', source, '_c', scope) ORDER BY scope), '[]')"
			 " FROM (SELECT * FROM gates WHERE $1::text IS NULL OR scope > $1"
			 "  ORDER BY scope LIMIT $2::int) g",
	    2, p, out, err, errlen);
}

int pal_store_gates_json(pal_store *st, json_t **out, char *err, size_t errlen)
{
	return pal__store_whole_list(pal__store_gates_query(st, NULL, 0, out, err, errlen), out);
}

/* A rule's cursor is "SCOPE:NAME:URL" (a name has no ':'), compared as the
 * rows are ordered: by scope (group first), name, url. */
int pal__store_notify_rules_query(pal_store *st, const char *tenants, const char *after,
				  int limit, json_t **out, char *err, size_t errlen)
{
	char l[16];
	snprintf(l, sizeof l, "%d", limit);
	const char *p[] = {tenants, after, limit > 0 ? l : NULL};
	/* a token limited to TENANTS: its tenants' rules, and a group's when
	 * the group has jobs and every one of them (live or retired) is of
	 * those tenants */
	return pal__store_query_json(
	    st,
	    "SELECT coalesce(json_agg(json_build_object('scope', scope, 'name', name, 'url', url,"
	    " 'events', to_json(events), 'secret', secret, 'updated_by', updated_by,"
	    " 'updated_at', " TS("updated_at") ", '_c', scope || ':' || name || ':' || url)"
	    " ORDER BY scope, name COLLATE \"C\", url COLLATE \"C\"), '[]')"
	    " FROM (SELECT * FROM notify_rules r"
	    "  WHERE ($1::text[] IS NULL"
	    "   OR (scope = 'tenant' AND name = ANY ($1::text[]))"
	    "   OR (scope = 'group'"
	    "    AND EXISTS (SELECT 1 FROM jobs WHERE resource_group = r.name)"
	    "    AND NOT EXISTS (SELECT 1 FROM jobs WHERE resource_group = r.name"
	    "     AND NOT coalesce(tenant = ANY ($1::text[]), false))))"
	    "  AND ($2::text IS NULL OR (scope, name COLLATE \"C\", url COLLATE \"C\") >"
	    "   (split_part($2, ':', 1), split_part($2, ':', 2),"
	    "    substr($2, length(split_part($2, ':', 1)) + length(split_part($2, ':', 2)) + 3)))"
	    "  ORDER BY scope, name COLLATE \"C\", url COLLATE \"C\" LIMIT $3::int) g",
	    3, p, out, err, errlen);
}

int pal_store_notify_rules_json(pal_store *st, json_t **out, char *err, size_t errlen)
{
	return pal__store_whole_list(
	    pal__store_notify_rules_query(st, NULL, NULL, 0, out, err, errlen), out);
}

static int job_exists(pal_store *st, const char *job_id, char *err, size_t errlen)
{
	const char *p[] = { job_id };
	int64_t n;
	int rc = pal__store_query_i64(st, "SELECT count(*) FROM jobs WHERE job_id = $1", 1, p, -1,
				      &n, err, errlen);
	if (rc)
		return rc;
	if (n <= 0) {
		snprintf(err, errlen, "no job \"%s\"; hint: `palisade jobs` lists the jobs", job_id);
		return PAL_ENOENT;
	}
	return PAL_OK;
}

int pal_store_misfires_json(pal_store *st, const char *job_id, int64_t from, int64_t to,
			    int limit, json_t **out, char *err, size_t errlen)
{
	return pal__store_whole_list(
	    pal__store_misfires_query(st, job_id, from, to, NULL, limit, out, err, errlen), out);
}

int pal__store_misfires_query(pal_store *st, const char *job_id, int64_t from, int64_t to,
			      const char *after, int limit, json_t **out, char *err, size_t errlen)
{
	*out = NULL;
	int rc;
	long long us = 0, id = 0, cv[2];
	if (after && !pal__store_cursor_ints(after, 2, 1u, cv)) {
		snprintf(err, errlen, "cursor \"%.40s\" is not one this API gave", after);
		return PAL_EINVAL;
	}
	if (after)
		us = cv[0], id = cv[1];
	if (job_id && (rc = job_exists(st, job_id, err, errlen)))
		return rc;
	char f[24], t[24], l[16], u[24], n[24];
	snprintf(f, sizeof f, "%" PRId64, from);
	snprintf(t, sizeof t, "%" PRId64, to);
	snprintf(l, sizeof l, "%d", limit);
	snprintf(u, sizeof u, "%lld", us);
	snprintf(n, sizeof n, "%lld", id);
	const char *p[] = {job_id,
			   from == PAL_OPS_NOW ? NULL : f,
			   to == PAL_OPS_NOW ? NULL : t,
			   l,
			   after ? u : NULL,
			   n};
	/* newest first; the cursor is (range_from, id) of the last row */
	return pal__store_query_json(
	    st,
	    "SELECT coalesce(json_agg(json_build_object('id', id, 'job_id', job_id,"
	    " 'version', version, 'partition', partition, 'range_from', " TS(
		"range_from") ","
			      " 'range_to', " TS(
				  "range_to") ", 'count', count, 'policy', policy,"
					      " 'reason', reason, 'calendar', calendar, "
					      "'calendar_version', calendar_version,"
					      " 'decided_at', " TS(
						  "decided_at") ", '_c', (extract(epoch FROM "
								"range_from)"
								"  * 1000000)::bigint || '_' || "
								"id) ORDER BY range_from DESC, id "
								"DESC), '[]')"
								" FROM (SELECT * FROM misfires "
								"WHERE ($1::text IS NULL OR job_id "
								"= $1)"
								"  AND ($2::bigint IS NULL OR "
								"range_to >= "
								"to_timestamp($2::bigint))"
								"  AND ($3::bigint IS NULL OR "
								"range_from <= "
								"to_timestamp($3::bigint))"
								"  AND ($5::bigint IS NULL OR "
								"(range_from, id) < "
								"('epoch'::timestamptz"
								"   + $5::bigint * interval '1 "
								"microsecond', $6::bigint))"
								"  ORDER BY range_from DESC, id "
								"DESC LIMIT $4::int) m",
	    6, p, out, err, errlen);
}

int pal_store_audit_json(pal_store *st, int64_t since, int64_t until, const char *actor,
			 const char *action, const char *scope, int limit, json_t **out, char *err,
			 size_t errlen)
{
	char s[24], u[24], l[16];
	snprintf(s, sizeof s, "%" PRId64, since);
	snprintf(u, sizeof u, "%" PRId64, until);
	snprintf(l, sizeof l, "%d", limit);
	const char *p[] = { since == PAL_OPS_NOW ? NULL : s, l, actor, action, scope,
			    until == PAL_OPS_NOW ? NULL : u };
	return pal__store_query_json(
	    st,
	    "SELECT coalesce(json_agg(json_build_object('id', id, 'at', " TS(
		"at") ","
		      " 'actor', actor, 'role', role, 'client', client, 'action', action,"
		      " 'scope', scope, 'reason', reason,"
		      " 'details', details) ORDER BY id DESC), '[]')"
		      " FROM (SELECT * FROM audit_log WHERE ($1::bigint IS NULL OR at >= "
		      "to_timestamp($1::bigint)) AND ($3::text IS NULL OR actor = $3)"
		      "  AND ($4::text IS NULL OR action = $4) AND ($5::text IS NULL OR scope = $5)"
		      "  AND ($6::bigint IS NULL OR at < to_timestamp($6::bigint))"
		      "  ORDER BY id DESC LIMIT $2::int) a",
	    6, p, out, err, errlen);
}

int pal_store_audit_verify_json(pal_store *st, json_t **out, char *err, size_t errlen)
{
	return pal__store_query_json(st, "SELECT row_to_json(v) FROM palisade_audit_verify() v", 0,
				     NULL, out, err, errlen);
}

int pal_store_retired_json(pal_store *st, json_t **out, char *err, size_t errlen)
{
	return pal__store_query_json(
	    st,
	    "SELECT coalesce(json_agg(json_build_object('job_id', job_id, 'tenant', tenant,"
	    " 'group', resource_group, 'latest_version', latest_version,"
	    " 'retired_at', " TS(
		"retired_at") ", 'owner', owner, 'description', description)"
			      " ORDER BY job_id), '[]') FROM jobs WHERE retired_at IS NOT NULL",
	    0, NULL, out, err, errlen);
}

int pal_store_job_meta_json(pal_store *st, const char *job_id, json_t **out, char *err,
			    size_t errlen)
{
	const char *p[] = { job_id };
	return pal__store_query_json(
	    st,
	    "SELECT coalesce(json_object_agg(job_id, json_build_object('owner', owner,"
	    " 'description', description, 'retired_at', " TS(
		"retired_at") ")), '{}')"
			      " FROM jobs WHERE $1::text IS NULL OR job_id = $1",
	    1, p, out, err, errlen);
}

int pal_store_unknown_in(pal_store *st, const char *job_id, int64_t from, int64_t to,
			 json_t **out, char *err, size_t errlen)
{
	char f[24], t[24];
	snprintf(f, sizeof f, "%" PRId64, from);
	snprintf(t, sizeof t, "%" PRId64, to);
	const char *p[] = { job_id, f, t };
	return pal__store_query_json(
	    st,
	    "SELECT coalesce(json_agg(json_build_object('trigger_id', t.id,"
	    " 'at', floor(extract(epoch FROM t.scheduled_at))::bigint, 'partition', t.partition,"
	    " 'state', t.state,"
	    " 'source', t.source, 'request_id', t.request_id, 'outcome_unknown', t.outcome_unknown,"
	    " 'attempts', (SELECT"
	    " coalesce(json_agg(json_build_object('fence', a.fence, 'outcome', a.outcome,"
	    "  'error_class', a.error_class) ORDER BY a.fence), '[]')"
	    "  FROM attempt_ledger a WHERE a.trigger_id = t.id)) ORDER BY t.scheduled_at, t.id), '[]')"
	    " FROM palisade_job_triggers($1, NULL, NULL, to_timestamp($2::bigint),"
	    "  to_timestamp($3::bigint)) t"
	    " WHERE t.state IN ('unknown', 'manual', 'running', 'pausing', 'cancelling')"
	    "  OR t.outcome_unknown OR EXISTS (SELECT 1 FROM attempt_ledger a"
	    "  WHERE a.trigger_id = t.id AND (a.outcome IN ('unknown', 'manual') OR a.error_class IN"
	    "  ('timeout_after_send', 'reset_after_send', 'empty_reply', 'garbage_reply',"
	    "   'in_progress')"
	    /* left open by a holder that lost its lease: taken over (another
	     * token holds the trigger now), or its lease ran out and nothing
	     * stopped it yet */
	    "  OR (a.ended_at IS NULL AND (a.fence <> t.fence"
	    "   OR t.lease_until IS NULL OR t.lease_until < clock_timestamp()))))",
	    3, p, out, err, errlen);
}

int pal_store_unknown_at(pal_store *st, const char *job_id, int64_t at, json_t **out, char *err,
			 size_t errlen)
{
	return pal_store_unknown_in(st, job_id, at, at, out, err, errlen);
}

int pal_store_job_held_json(pal_store *st, const json_t *trigger_ids, json_t **out, char *err,
			    size_t errlen)
{
	/* the claim's own gate test, on the group and tenant each trigger row
	 * was written with (the active version's: an applied move to another
	 * group or tenant counts from its activation), for the rows still to be
	 * claimed (the claim's states, and 'paused': a resume makes it pending);
	 * a run that ended, or one running, waits for no resume */
	char *ids = json_dumps(trigger_ids, JSON_COMPACT | JSON_ENCODE_ANY);
	if (!ids) {
		snprintf(err, errlen, "out of memory");
		return PAL_ENOMEM;
	}
	const char *p[] = { ids };
	int rc = pal__store_query_json(
	    st,
	    "SELECT coalesce(json_agg(json_build_object('scope', g.scope, 'since', " TS("g.since") ","
	    "  'reason', g.reason) ORDER BY g.scope), '[]')::text"
	    " FROM gates g WHERE g.paused AND EXISTS (SELECT 1 FROM triggers t"
	    "  WHERE t.id IN (SELECT value::bigint FROM json_array_elements_text($1::json))"
	    "  AND t.state IN ('pending', 'retry_wait', 'unknown', 'paused')"
	    "  AND g.scope IN ('global', 'job:' || t.job_id, 'group:' || t.resource_group,"
	    "   'tenant:' || t.tenant))",
	    1, p, out, err, errlen);
	free(ids);
	return rc;
}

int pal_store_job_retired(pal_store *st, const char *job_id, bool *retired, char *err,
			  size_t errlen)
{
	const char *p[] = { job_id };
	int64_t n;
	int rc = pal__store_query_i64(
	    st, "SELECT (retired_at IS NOT NULL)::int FROM jobs WHERE job_id = $1", 1, p, -1, &n,
	    err, errlen);
	if (rc)
		return rc;
	if (n < 0) {
		snprintf(err, errlen, "no job \"%s\"; hint: `palisade jobs` lists the jobs", job_id);
		return PAL_ENOENT;
	}
	*retired = n == 1;
	return PAL_OK;
}
