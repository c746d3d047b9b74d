/*
 * apistore.c - the HTTP API's own SQL (apistore.h): request identity,
 * idempotency records and the paginated lists.
 *
 * A page is read as LIMIT + 1 rows: the extra row only says that another
 * page exists, and the cursor is taken from the last row kept.  Each row
 * carries its cursor in a field "_c" that page_cut() removes.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/apistore.h"
#include "palisade/ops.h"
#include "store_int.h"

#define TS(col) "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"

int pal_apistore_identity(pal_store *st, const char *role, const char *client, const char *request,
			  char *err, size_t errlen)
{
	const char *p[] = {role ? role : "", client ? client : "", request ? request : ""};
	PGresult *r = pal__store_query(st,
				       "SELECT set_config('palisade.api_role', $1, false),"
				       " set_config('palisade.api_client', $2, false),"
				       " set_config('palisade.api_request', $3, false)",
				       3, p, err, errlen);
	if (!r)
		return PAL_EDB;
	PQclear(r);
	return PAL_OK;
}

/* The session-level advisory lock of (token $1, key $2) that the node
 * serving its request holds from its record to its answer (apistore.h). */
#define IDEM_LOCK_KEY "hashtextextended('palisade.api_request:' || $1 || '/' || $2, 0)"

int pal_apistore_idem_takeover_s(void)
{
	static int bound;
	if (!bound) {
		const char *e = getenv("PALISADE_IDEM_TAKEOVER_S");
		bound = e && atoi(e) > 0 ? atoi(e) : PAL_IDEM_TAKEOVER_S;
	}
	return bound;
}

/*
 * The record (TOKEN, KEY) in progress since CREATED: when no session holds
 * its lock (the node that served it died, or its connection broke) and it
 * is older than the take-over bound, take the lock, restamp the record
 * (only if no one else did since) and set *OUTCOME to PAL_IDEM_TAKEN_OVER.
 */
static int idem_take_over(pal_store *st, const char *token, const char *key, const char *created,
			  pal_idem_outcome *outcome, bool *locked, char *err, size_t errlen)
{
	const char *pk[] = {token, key};
	PGresult *r = pal__store_query(st, "SELECT pg_try_advisory_lock(" IDEM_LOCK_KEY ")", 2, pk,
				       err, errlen);
	if (!r)
		return PAL_EDB;
	bool got = !strcmp(PQgetvalue(r, 0, 0), "t");
	PQclear(r);
	if (!got)
		return PAL_OK; /* still being served */
	char bound[32];
	snprintf(bound, sizeof bound, "%d seconds", pal_apistore_idem_takeover_s());
	const char *p[] = {token, key, created, bound};
	r = pal__store_query(st,
			     "UPDATE api_requests SET created_at = clock_timestamp()"
			     " WHERE token_id = $1 AND key = $2 AND status IS NULL"
			     "  AND created_at = $3::timestamptz"
			     "  AND created_at < clock_timestamp() - $4::interval",
			     4, p, err, errlen);
	bool taken = r && !strcmp(PQcmdTuples(r), "1");
	PQclear(r);
	if (taken) {
		*outcome = PAL_IDEM_TAKEN_OVER;
		*locked = true;
		return PAL_OK;
	}
	PGresult *u = pal__store_query(st, "SELECT pg_advisory_unlock(" IDEM_LOCK_KEY ")", 2, pk,
				       err, errlen);
	PQclear(u);
	return r && u ? PAL_OK : PAL_EDB;
}

int pal_apistore_idem_begin(pal_store *st, const char *token, const char *key, const char *method,
			    const char *path, const char *digest, pal_idem_outcome *outcome,
			    bool *locked, int *status, char **response, char *err, size_t errlen)
{
	*outcome = PAL_IDEM_NEW;
	*locked = false;
	*status = 0;
	*response = NULL;
	const char *p[] = {token, key, method, path, digest};
	/* The insert wins or the row exists; either way one row comes back:
	 * new (inserted, its lock taken), or the earlier request's. */
	PGresult *r = pal__store_query(
	    st,
	    "WITH old AS (DELETE FROM api_requests WHERE created_at < clock_timestamp() - interval "
	    "'1 day'),"
	    " ins AS (INSERT INTO api_requests (token_id, key, method, path, digest)"
	    "  VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING RETURNING 1)"
	    " SELECT true, NULL, NULL, NULL, NULL, NULL, NULL,"
	    "  pg_try_advisory_lock(" IDEM_LOCK_KEY ") FROM ins"
	    " UNION ALL"
	    " SELECT false, method, path, digest, status, response, created_at::text, NULL"
	    "  FROM api_requests"
	    "  WHERE token_id = $1 AND key = $2 AND NOT EXISTS (SELECT 1 FROM ins)",
	    5, p, err, errlen);
	if (!r)
		return PAL_EDB;
	if (PQntuples(r) != 1) {
		/* inserted and deleted by a concurrent finish of a 5xx: act anew */
		PQclear(r);
		return PAL_OK;
	}
	if (!strcmp(PQgetvalue(r, 0, 0), "t")) {
		*locked = !strcmp(PQgetvalue(r, 0, 7), "t");
		PQclear(r);
		return PAL_OK;
	}
	if (strcmp(PQgetvalue(r, 0, 1), method) || strcmp(PQgetvalue(r, 0, 2), path) ||
	    strcmp(PQgetvalue(r, 0, 3), digest))
		*outcome = PAL_IDEM_MISMATCH;
	else if (PQgetisnull(r, 0, 4)) {
		*outcome = PAL_IDEM_IN_PROGRESS;
		int rc = idem_take_over(st, token, key, PQgetvalue(r, 0, 6), outcome, locked, err,
					errlen);
		if (rc) {
			PQclear(r);
			return rc;
		}
	} else {
		*outcome = PAL_IDEM_REPLAY;
		*status = atoi(PQgetvalue(r, 0, 4));
		*response = strdup(PQgetvalue(r, 0, 5));
	}
	PQclear(r);
	return PAL_OK;
}

int pal_apistore_idem_known(pal_store *st, const char *token, const char *key, const char *method,
			    const char *path, const char *digest, bool *known, char *err,
			    size_t errlen)
{
	*known = false;
	const char *p[] = {token, key, method, path, digest};
	PGresult *r = pal__store_query(
	    st,
	    "SELECT EXISTS (SELECT 1 FROM api_requests WHERE token_id = $1 AND key = $2"
	    "  AND method = $3 AND path = $4 AND digest = $5"
	    "  AND created_at >= clock_timestamp() - interval '1 day')",
	    5, p, err, errlen);
	if (!r)
		return PAL_EDB;
	*known = !strcmp(PQgetvalue(r, 0, 0), "t");
	PQclear(r);
	return PAL_OK;
}

/* The audit rows that attempts of (token $1, key $2) committed, within the
 * day its record is kept (idem_begin deletes older ones; the bound lets a
 * scan use audit_log_at): pal_apistore_identity stamps them. */
#define IDEM_AUDIT_WHERE                                                                           \
	"at > clock_timestamp() - interval '1 day 1 hour'"                                         \
	"  AND details->'api_request' = jsonb_build_object('token_id', $1::text, 'key', $2::text)"

int pal_apistore_idem_finish(pal_store *st, const char *token, const char *key, int status,
			     const char *response, bool locked, char *err, size_t errlen)
{
	char s[16], bound[32];
	snprintf(s, sizeof s, "%d", status);
	int takeover_s = pal_apistore_idem_takeover_s();
	snprintf(bound, sizeof bound, "%d seconds",
		 1 + (takeover_s > PAL_IDEM_TAKEOVER_S ? takeover_s : PAL_IDEM_TAKEOVER_S));
	const char *p[] = {token, key, s, response, locked ? "t" : "f", bound};
	/* the answer kept and the lock released in one statement; a 5xx is
	 * not kept: the record is deleted when no audit row names the key (no
	 * attempt committed), or else left in progress, dated back past every
	 * take-over bound, for the next retry to take over at once */
	PGresult *r = pal__store_query(
	    st,
	    status >= 500 ? "WITH c AS (SELECT EXISTS (SELECT 1 FROM audit_log WHERE " IDEM_AUDIT_WHERE
			    ") AS done),"
			    " d AS (DELETE FROM api_requests WHERE token_id = $1 AND key = $2"
			    "  AND NOT (SELECT done FROM c)"
			    "  AND $3::int IS NOT NULL AND $4::text IS NOT NULL RETURNING 1),"
			    " u AS (UPDATE api_requests"
			    "  SET created_at = clock_timestamp() - $6::interval"
			    "  WHERE token_id = $1 AND key = $2 AND status IS NULL"
			    "  AND (SELECT done FROM c) RETURNING 1)"
			    " SELECT (SELECT count(*) FROM d) + (SELECT count(*) FROM u),"
			    " CASE WHEN $5::boolean THEN pg_advisory_unlock(" IDEM_LOCK_KEY ") END"
			  : "WITH w AS (UPDATE api_requests SET status = $3::int, response = $4"
			    " WHERE token_id = $1 AND key = $2 RETURNING 1)"
			    " SELECT (SELECT count(*) FROM w), CASE WHEN $5::boolean"
			    " THEN pg_advisory_unlock(" IDEM_LOCK_KEY ") END",
	    status >= 500 ? 6 : 5, p, err, errlen);
	if (!r)
		return PAL_EDB;
	PQclear(r);
	return PAL_OK;
}

int pal_apistore_idem_committed(pal_store *st, const char *token, const char *key, json_t **out,
				char *err, size_t errlen)
{
	const char *p[] = {token, key};
	return pal__store_query_json(
	    st,
	    "SELECT coalesce(json_agg(json_build_object('id', id, 'action', action, 'scope', scope,"
	    " 'at', to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'))"
	    " ORDER BY id), '[]')::text FROM audit_log WHERE " IDEM_AUDIT_WHERE,
	    2, p, out, err, errlen);
}

int pal_apistore_job_tenant(pal_store *st, const char *job_id, char tenant[65], char *err,
			    size_t errlen)
{
	const char *p[] = {job_id};
	PGresult *r =
	    pal__store_query(st, "SELECT tenant FROM jobs WHERE job_id = $1", 1, p, err, errlen);
	if (!r)
		return PAL_EDB;
	int n = PQntuples(r);
	if (n)
		snprintf(tenant, 65, "%s", PQgetvalue(r, 0, 0));
	PQclear(r);
	if (!n) {
		snprintf(err, errlen, "no job \"%s\"", job_id);
		return PAL_ENOENT;
	}
	return PAL_OK;
}

int pal_apistore_trigger_job(pal_store *st, int64_t id, char job[129], char tenant[65], char *err,
			     size_t errlen)
{
	char s[24];
	snprintf(s, sizeof s, "%lld", (long long)id);
	const char *p[] = {s};
	PGresult *r =
	    pal__store_query(st,
			     "SELECT j.job_id, j.tenant FROM triggers t"
			     " JOIN jobs j ON j.job_id = t.job_id WHERE t.id = $1::bigint",
			     1, p, err, errlen);
	if (!r)
		return PAL_EDB;
	int n = PQntuples(r);
	if (n) {
		snprintf(job, 129, "%s", PQgetvalue(r, 0, 0));
		snprintf(tenant, 65, "%s", PQgetvalue(r, 0, 1));
	}
	PQclear(r);
	if (!n) {
		snprintf(err, errlen, "no trigger %s", s);
		return PAL_ENOENT;
	}
	return PAL_OK;
}

/* ROWS holds up to LIMIT + 1 rows: keep LIMIT, set *next from the last
 * kept row's "_c" when there was one more, and drop "_c" from each. */
static void page_cut(json_t *rows, int limit, char **next)
{
	*next = NULL;
	bool more = json_array_size(rows) > (size_t)limit;
	if (more)
		json_array_remove(rows, (size_t)limit);
	size_t i;
	json_t *row;
	json_array_foreach(rows, i, row)
	{
		if (more && i + 1 == json_array_size(rows))
			*next = g_strdup(json_string_value(json_object_get(row, "_c")));
		json_object_del(row, "_c");
	}
}

/* RC of the read of LIMIT + 1 rows into *OUT: cut to a page when 0. */
static int cut(int rc, json_t **out, int limit, char **next)
{
	*next = NULL;
	if (!rc)
		page_cut(*out, limit, next);
	return rc;
}

static int page(pal_store *st, const char *sql, int np, const char *const *p, int limit,
		json_t **out, char **next, char *err, size_t errlen)
{
	return cut(pal__store_query_json(st, sql, np, p, out, err, errlen), out, limit, next);
}

int pal_apistore_jobs_page(pal_store *st, const char *tenants, const char *tenant,
			   const char *group, const char *label_key, const char *label_value,
			   bool retired, const char *after, int limit, json_t **out, char **next,
			   char *err, size_t errlen)
{
	char l[16];
	snprintf(l, sizeof l, "%d", limit + 1);
	const char *p[] = {tenants,  tenant, group, retired ? "t" : "f", after, l, label_key,
			   label_value};
	/* labels: those of the latest version's stored spec, and the label
	 * filter on them (a primary-key lookup per job of the scan); latest:
	 * that version's schedule (its upstreams for a dependent), which
	 * `palisade jobs --server` prints */
	return page(
	    st,
	    "SELECT coalesce(json_agg(json_build_object('job_id', job_id, 'tenant', tenant,"
	    " 'group', resource_group, 'shard', shard, 'latest_version', latest_version,"
	    " 'active_version', active_version, 'created_at', " TS("created_at") ","
	    " 'updated_at', " TS("updated_at") ", 'retired_at', " TS("retired_at") ","
	    " 'owner', owner, 'description', description,"
	    " 'labels', " PAL__LABELS_JSON("spec") ","
	    " 'latest', json_build_object('version', latest_version, 'cron', v_cron,"
	    "  'timezone', v_timezone, 'after', " PAL__AFTER_JSON("spec") "),"
	    " '_c', job_id) ORDER BY job_id), '[]')"
	    " FROM (SELECT jobs.*, v.spec, v.cron AS v_cron, v.timezone AS v_timezone FROM jobs"
	    "  LEFT JOIN job_versions v ON v.job_id = jobs.job_id"
	    "   AND v.version = jobs.latest_version"
	    "  WHERE ($1::text[] IS NULL OR jobs.tenant = ANY ($1::text[]))"
	    "  AND ($2::text IS NULL OR jobs.tenant = $2)"
	    "  AND ($3::text IS NULL OR jobs.resource_group = $3)"
	    "  AND (jobs.retired_at IS NOT NULL) = $4::boolean"
	    "  AND ($5::text IS NULL OR jobs.job_id > $5)"
	    "  AND ($7::text IS NULL OR v.spec -> 'labels' ->> $7::text = $8::text)"
	    "  ORDER BY jobs.job_id LIMIT $6::int) j",
	    8, p, limit, out, next, err, errlen);
}

int pal_apistore_calendars_page(pal_store *st, const char *tenants, const char *name,
				const char *after, int limit, const char *jobs_after,
				int jobs_limit, json_t **out, char **next, char *err, size_t errlen)
{
	int rc = cut(pal__store_calendars_query(st, name, tenants, after, name ? 0 : limit + 1,
						jobs_after, jobs_limit + 1, out, err, errlen),
		     out, name ? 1 : limit, next);
	size_t i;
	json_t *cal;
	/* each calendar's jobs: a page of JOBS_LIMIT, the next one's cursor */
	json_array_foreach(rc ? NULL : *out, i, cal)
	{
		json_t *jobs = json_object_get(cal, "jobs");
		const char *last = NULL;
		if (json_array_size(jobs) > (size_t)jobs_limit) {
			json_array_remove(jobs, (size_t)jobs_limit);
			last = json_string_value(
			    json_object_get(json_array_get(jobs, (size_t)jobs_limit - 1), "job"));
		}
		json_object_set_new(cal, "jobs_next_cursor",
				    last ? json_string(last) : json_null());
	}
	return rc;
}

int pal_apistore_job_page(pal_store *st, const char *job_id, const char *after, int limit,
			  json_t **out, char **next, char *err, size_t errlen)
{
	*out = NULL;
	*next = NULL;
	char *end = NULL;
	long v = after ? strtol(after, &end, 10) : 0;
	if (after && (*end || v < 1 || v > INT32_MAX)) {
		snprintf(err, errlen, "cursor \"%.40s\" is not one this API gave", after);
		return PAL_EINVAL;
	}
	json_t *jobs;
	int rc = pal__store_jobs_query(st, job_id, (int)v, limit + 1, &jobs, err, errlen);
	if (rc)
		return rc;
	json_t *j = json_incref(json_array_get(jobs, 0));
	json_decref(jobs);
	if (!j) {
		snprintf(err, errlen, "no job \"%s\"", job_id);
		return PAL_ENOENT;
	}
	json_t *vs = json_object_get(j, "versions");
	if (!json_is_array(vs))
		json_object_set_new(j, "versions", vs = json_array());
	if (json_array_size(vs) > (size_t)limit) {
		json_array_remove(vs, (size_t)limit);
		*next =
		    g_strdup_printf("%lld", (long long)json_integer_value(json_object_get(
						json_array_get(vs, (size_t)limit - 1), "version")));
	}
	*out = j;
	return PAL_OK;
}

int pal_apistore_misfires_page(pal_store *st, const char *job_id, int64_t from, int64_t to,
			       const char *after, int limit, json_t **out, char **next, char *err,
			       size_t errlen)
{
	return cut(
	    pal__store_misfires_query(st, job_id, from, to, after, limit + 1, out, err, errlen),
	    out, limit, next);
}

int pal_apistore_shadow_page(pal_store *st, const char *after, int limit, json_t **out, char **next,
			     char *err, size_t errlen)
{
	return cut(pal__store_shadow_query(st, after, limit + 1, out, err, errlen), out, limit,
		   next);
}

int pal_apistore_gates_page(pal_store *st, const char *after, int limit, json_t **out, char **next,
			    char *err, size_t errlen)
{
	return cut(pal__store_gates_query(st, after, limit + 1, out, err, errlen), out, limit,
		   next);
}

int pal_apistore_notify_rules_page(pal_store *st, const char *tenants, const char *after,
				   int limit, json_t **out, char **next, char *err, size_t errlen)
{
	return cut(pal__store_notify_rules_query(st, tenants, after, limit + 1, out, err, errlen),
		   out, limit, next);
}

int pal_apistore_attempts_page(pal_store *st, int64_t trigger_id, const char *after, int limit,
			       json_t **out, char **next, char *err, size_t errlen)
{
	return cut(pal__store_attempts_query(st, trigger_id, after, limit + 1, out, err, errlen),
		   out, limit, next);
}

int pal_apistore_tickets_page(pal_store *st, bool all, const char *tenants, const char *job,
			      const char *tenant, const char *after, int limit, json_t **out,
			      char **next, char *err, size_t errlen)
{
	return cut(pal__store_tickets_query(st, all, tenants, job, tenant, after, limit + 1, out,
					    err, errlen),
		   out, limit, next);
}

int pal_apistore_tokens_page(pal_store *st, const char *after, int limit, json_t **out, char **next,
			     char *err, size_t errlen)
{
	return cut(pal__store_tokens_query(st, after, limit + 1, out, err, errlen), out, limit,
		   next);
}

/* Plan and request keys apart, as palisade_job_triggers() (sql/020): each
 * branch walks one index of (job_id, scheduled_at, ...) backwards. */
#define TRIGGERS_AFTER                                                                             \
	" AND ($2::text IS NULL OR state = $2) AND ($7::bigint IS NULL OR id = $7) AND"            \
	" ($8::bigint IS NULL OR scheduled_at >= to_timestamp($8::bigint)) AND"                    \
	" ($9::bigint IS NULL OR scheduled_at < to_timestamp($9::bigint)) AND"                     \
	" ($3::bigint IS NULL OR"                                                                  \
	" (scheduled_at, partition, id) < ('epoch'::timestamptz + $3::bigint * interval '1"        \
	" microsecond', $4::int, $5::bigint))"                                                     \
	" ORDER BY scheduled_at DESC, partition DESC, id DESC LIMIT $6::int)"
#define TRIGGERS_KEYS(JOB)                                                                         \
	"(SELECT * FROM triggers WHERE job_id = " JOB " AND request_id IS NULL" TRIGGERS_AFTER    \
	" UNION ALL (SELECT * FROM triggers WHERE job_id = " JOB                                   \
	" AND request_id IS NOT NULL" TRIGGERS_AFTER
#define TRIGGERS_ROWS                                                                              \
	"SELECT coalesce(json_agg(json_build_object('id', id, 'job_id', job_id,"                  \
	" 'version', version, 'scheduled_at', " TS("scheduled_at") ", 'partition', partition,"    \
	" 'source', source, 'request_id', request_id, 'state', state, 'fence', fence,"            \
	" 'lease_owner', lease_owner, 'lease_until', " TS("lease_until") ","                       \
	" 'attempt_count', attempt_count, 'last_error_class', last_error_class,"                   \
	" '_c', (extract(epoch FROM scheduled_at) * 1000000)::bigint || '_' || partition"         \
	"  || '_' || id) ORDER BY scheduled_at DESC, partition DESC, id DESC), '[]')"

/* The states of triggers_open_rare (sql/020), written as its predicate so
 * that the planner sees the index serve a listing by one of them. */
#define OPEN_RARE "('retry_wait', 'unknown', 'pausing', 'paused', 'cancelling', 'manual')"

bool pal_apistore_state_open_rare(const char *state)
{
	static const char *const rare[] = {"retry_wait", "unknown",    "pausing",
					   "paused",	 "cancelling", "manual"};
	for (size_t i = 0; state && i < sizeof rare / sizeof *rare; i++)
		if (!strcmp(state, rare[i]))
			return true;
	return false;
}

/* The first window of every job's triggers (s); each next one is WIDEN
 * times the one before, back to since. */
#define ALL_JOBS_WINDOW 60
#define ALL_JOBS_WIDEN 4

int pal_apistore_triggers_page(pal_store *st, const char *job_id, const char *tenants,
			       const char *tenant, const char *state, int64_t since, int64_t until,
			       int64_t trigger_id, const char *cursor, int limit, json_t **out,
			       char **next, char *err, size_t errlen)
{
	long long us = 0, part = 0, id = 0;
	char c1[24], c2[24], c3[24], l[16], t[24], s[24], u[24];
	long long cv[3];
	*out = NULL;
	*next = NULL;
	if (cursor && !pal__store_cursor_ints(cursor, 3, 1u, cv)) {
		snprintf(err, errlen, "cursor \"%.40s\" is not one this API gave", cursor);
		return PAL_EINVAL;
	}
	if (cursor)
		us = cv[0], part = cv[1], id = cv[2];
	snprintf(c1, sizeof c1, "%lld", us);
	snprintf(c2, sizeof c2, "%lld", part);
	snprintf(c3, sizeof c3, "%lld", id);
	snprintf(l, sizeof l, "%d", limit + 1);
	snprintf(t, sizeof t, "%lld", (long long)trigger_id);
	snprintf(s, sizeof s, "%" PRId64, since);
	snprintf(u, sizeof u, "%" PRId64, until);
	const char *p[] = {job_id,
			   state,
			   cursor ? c1 : NULL,
			   c2,
			   c3,
			   l,
			   trigger_id > 0 ? t : NULL,
			   since == PAL_OPS_NOW ? NULL : s,
			   until == PAL_OPS_NOW ? NULL : u,
			   tenants,
			   tenant};
	if (job_id)
		return page(st,
			    TRIGGERS_ROWS " FROM (" TRIGGERS_KEYS("$1") " ORDER BY scheduled_at DESC,"
								       " partition DESC, id DESC"
								       " LIMIT $6::int) t",
			    9, p, limit, out, next, err, errlen);
	/*
	 * Every job's in one of the rare open states, whatever their instant
	 * (no SINCE or UNTIL): few rows, along their partial index backwards,
	 * each partition's merged.
	 */
	if (since == PAL_OPS_NOW && until == PAL_OPS_NOW && pal_apistore_state_open_rare(state))
		return page(st,
			    TRIGGERS_ROWS " FROM (SELECT * FROM triggers"
					  " WHERE $1::text IS NULL AND state IN " OPEN_RARE
					  " AND state = $2::text AND ($7::bigint IS NULL OR id = $7)"
					  " AND $8::bigint IS NULL AND $9::bigint IS NULL"
					  " AND ($3::bigint IS NULL OR (scheduled_at, partition, id) <"
					  "  ('epoch'::timestamptz + $3::bigint * interval '1 microsecond',"
					  "   $4::int, $5::bigint))"
					  " AND ($10::text[] IS NULL OR job_id IN (SELECT job_id FROM jobs"
					  "  WHERE tenant = ANY ($10::text[])))"
					  " AND ($11::text IS NULL OR job_id IN (SELECT job_id FROM jobs"
					  "  WHERE tenant = $11))"
					  " ORDER BY scheduled_at DESC, partition DESC, id DESC"
					  " LIMIT $6::int) t",
			    11, p, limit, out, next, err, errlen);
	/*
	 * Every job's (SINCE and UNTIL given): the two walks for each job of
	 * the tenants (a lateral join over jobs), each cut at what the page
	 * still needs, merged.  Over windows of the range from its end (after
	 * the cursor, its instant), each WIDEN times the one before, so that
	 * a page reads about its own rows and a few index descents per job
	 * and window, however many rows each job has in the range.
	 */
	json_t *all = json_array();
	int64_t hi = until, w = ALL_JOBS_WINDOW;
	if (cursor && us / 1000000 + 1 < hi)
		hi = us / 1000000 + 1;
	int rc = PAL_OK;
	while (hi > since && json_array_size(all) < (size_t)limit + 1) {
		int64_t lo = hi - w > since ? hi - w : since;
		snprintf(l, sizeof l, "%d", limit + 1 - (int)json_array_size(all));
		snprintf(s, sizeof s, "%" PRId64, lo);
		snprintf(u, sizeof u, "%" PRId64, hi);
		json_t *rows;
		rc = pal__store_query_json(
		    st,
		    TRIGGERS_ROWS " FROM (SELECT k.* FROM jobs j CROSS JOIN LATERAL (" TRIGGERS_KEYS(
			"j.job_id") ") k WHERE $1::text IS NULL"
				    " AND ($10::text[] IS NULL OR j.tenant = ANY ($10::text[]))"
				    " AND ($11::text IS NULL OR j.tenant = $11)"
				    " ORDER BY scheduled_at DESC, partition DESC, id DESC"
				    " LIMIT $6::int) t",
		    11, p, &rows, err, errlen);
		if (rc)
			break;
		json_array_extend(all, rows);
		json_decref(rows);
		hi = lo;
		w *= ALL_JOBS_WIDEN;
	}
	if (rc) {
		json_decref(all);
		return rc;
	}
	*out = all;
	return cut(PAL_OK, out, limit, next);
}
#undef TRIGGERS_ROWS
#undef TRIGGERS_KEYS
#undef TRIGGERS_AFTER
#undef OPEN_RARE

int pal_apistore_audit_page(pal_store *st, const char *actor, const char *action, const char *scope,
			    int64_t since, int64_t until, const char *cursor, int limit, json_t **out,
			    char **next, char *err, size_t errlen)
{
	char l[16], s[24], u[24];
	snprintf(l, sizeof l, "%d", limit + 1);
	snprintf(s, sizeof s, "%" PRId64, since);
	snprintf(u, sizeof u, "%" PRId64, until);
	long long cv;
	if (cursor && (strspn(cursor, "0123456789") != strlen(cursor) ||
		       !pal__store_cursor_ints(cursor, 1, 0, &cv))) {
		snprintf(err, errlen, "cursor \"%.40s\" is not one this API gave", cursor);
		return PAL_EINVAL;
	}
	const char *p[] = {actor, action, scope, cursor, l, since == PAL_OPS_NOW ? NULL : s,
			   until == PAL_OPS_NOW ? NULL : u};
	return page(
	    st,
	    "SELECT coalesce(json_agg(json_build_object('id', id, 'at', " TS(
		"at") ","
		      " 'actor', actor, 'role', role, 'client', client, 'action', action,"
		      " 'scope', scope, 'reason', reason, 'details', details, '_c', id::text)"
		      " ORDER BY id DESC), '[]')"
		      " FROM (SELECT * FROM audit_log WHERE ($1::text IS NULL OR actor = $1)"
		      "  AND ($2::text IS NULL OR action = $2) AND ($3::text IS NULL OR scope = $3)"
		      "  AND ($4::bigint IS NULL OR id < $4::bigint)"
		      "  AND ($6::bigint IS NULL OR at >= to_timestamp($6::bigint))"
		      "  AND ($7::bigint IS NULL OR at < to_timestamp($7::bigint))"
		      "  ORDER BY id DESC LIMIT $5::int) a",
	    7, p, limit, out, next, err, errlen);
}
