/*
 * exec.c - the executor's SQL (see include/palisade/execstore.h).
 *
 * Claims run under one transaction-level advisory lock for the whole
 * cluster: claims are batched, so serialising them is cheap, and it makes
 * cluster-wide group limits and per-job overlap policies exact (two
 * executors cannot both take the last slot).  Time is the database's
 * clock_timestamp() everywhere; no node compares its own clock with a lease.
 */
#include <glib.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/execstore.h"
#include "store_int.h"

#define CLAIM_LOCK_KEY "7075283591402447206"

/* Triggers a claim may take: due, or running with an expired lease. */
#define CLAIMABLE(t)                                                                               \
	"((" t ".state IN ('pending', 'retry_wait', 'unknown') AND coalesce(" t ".next_attempt_at, " t \
	".due_at) <= clock_timestamp()) OR (" t ".state = 'running' AND " t                          \
	".lease_until < clock_timestamp()))"

/* Due pending triggers of `overlap: forbid` jobs whose job and partition
 * have a live run become skipped (and recorded).  Driven from the few live
 * runs through the plan-key index, not from the backlog. */
static const char SQL_SKIP_FORBIDDEN[] =
	"WITH live AS (SELECT id, job_id, partition FROM triggers"
	"   WHERE state IN ('running', 'pausing', 'cancelling', 'unknown')),"
	" sk AS (UPDATE triggers t SET state = 'skipped', finished_at = clock_timestamp(),"
	"   last_error_class = 'overlap'"
	"   FROM live l, job_versions v"
	"   WHERE t.job_id = l.job_id AND t.partition = l.partition AND t.id <> l.id"
	"   AND v.job_id = t.job_id AND v.version = t.version AND v.overlap_policy = 'forbid'"
	"   AND t.state = 'pending' AND t.request_id IS NULL AND t.due_at <= clock_timestamp()"
	"   RETURNING t.job_id, t.version, t.scheduled_at, t.partition, t.shard, t.epoch)"
	" INSERT INTO misfires (job_id, version, partition, range_from, range_to, count, policy,"
	"   reason, shard, epoch)"
	" SELECT job_id, version, partition, scheduled_at, scheduled_at, 1, 'forbid', 'overlap',"
	"   shard, epoch FROM sk";

static const char SQL_CLAIM[] =
	"WITH RECURSIVE lim AS (SELECT g, nr, cl FROM unnest($5::text[], $6::int[], $7::int[]) AS x(g, nr, cl)),"
	" run AS (SELECT resource_group AS g, count(*)::int AS n FROM triggers"
	"   WHERE state IN ('running', 'pausing', 'cancelling')"
	"   AND resource_group IN (SELECT g FROM lim WHERE cl > 0) GROUP BY 1),"
	" live AS (SELECT id, job_id, partition FROM triggers"
	"   WHERE state IN ('running', 'pausing', 'cancelling', 'unknown')),"
	/* Tenants with waiting work: a loose index scan (one probe per tenant)
	 * over triggers_tenant_ready, not a pass over the backlog. */
	" gated AS (SELECT coalesce(array_agg(substr(scope, 5)) FILTER (WHERE scope LIKE 'job:%'), '{}') AS jobs,"
	"   coalesce(array_agg(substr(scope, 7)) FILTER (WHERE scope LIKE 'group:%'), '{}') AS grps,"
	"   coalesce(array_agg(substr(scope, 8)) FILTER (WHERE scope LIKE 'tenant:%'), '{}') AS tens,"
	"   bool_or(scope = 'global') AS global FROM gates WHERE paused),"
	" ten AS (SELECT min(tenant) AS tenant FROM triggers"
	"     WHERE state IN ('pending', 'retry_wait', 'unknown')"
	"   UNION ALL SELECT (SELECT min(x.tenant) FROM triggers x"
	"     WHERE x.state IN ('pending', 'retry_wait', 'unknown') AND x.tenant > ten.tenant)"
	"   FROM ten WHERE ten.tenant IS NOT NULL),"
	/* Each tenant's oldest ready work, in index order (a flood from one
	 * tenant cannot crowd another out), plus expired leases. */
	" cand AS (SELECT c.* FROM ten, LATERAL (SELECT t.id, t.tenant, t.resource_group, t.job_id,"
	"   t.partition, v.overlap_policy AS ov, t.ready_at,"
	"   t.priority + floor(extract(epoch FROM clock_timestamp() - t.ready_at) / 10) AS eff_prio"
	/* The inner scan walks triggers_tenant_ready in order and stops after
	 * 32 batches.  Paused jobs and groups are skipped while it walks, so a
	 * paused backlog cannot fill the window and starve the tenant's other
	 * jobs (it costs a pass over that backlog instead; docs/executor.md). */
	"   FROM (SELECT x.*, coalesce(x.next_attempt_at, x.due_at) AS ready_at FROM triggers x"
	"     WHERE x.tenant = ten.tenant AND x.state IN ('pending', 'retry_wait', 'unknown')"
	"     AND coalesce(x.next_attempt_at, x.due_at) <= statement_timestamp()"
	"     AND x.job_id <> ALL ((SELECT jobs FROM gated)::text[])"
	"     AND x.resource_group <> ALL ((SELECT grps FROM gated)::text[])"
	"     ORDER BY coalesce(x.next_attempt_at, x.due_at) LIMIT 32 * $3::int) t"
	"   JOIN job_versions v ON v.job_id = t.job_id AND v.version = t.version"
	"   WHERE v.target_host <> ALL ($4::text[])"
	"   AND (v.overlap_policy IN ('allow', 'replace') OR NOT EXISTS (SELECT 1 FROM live l"
	"     WHERE l.job_id = t.job_id AND l.partition = t.partition AND l.id <> t.id))"
	"   ORDER BY t.ready_at LIMIT 4 * $3::int) c"
	"   WHERE ten.tenant IS NOT NULL AND ten.tenant <> ALL ((SELECT tens FROM gated)::text[])"
	"   AND NOT coalesce((SELECT global FROM gated), false)"
	"  UNION ALL (SELECT t.id, t.tenant, t.resource_group, t.job_id, t.partition,"
	"   v.overlap_policy, t.lease_until, t.priority"
	"   FROM triggers t JOIN job_versions v ON v.job_id = t.job_id AND v.version = t.version"
	"   WHERE t.state = 'running' AND t.lease_until < clock_timestamp()"
	"   AND NOT EXISTS (SELECT 1 FROM gates g WHERE g.paused AND g.scope IN ('global',"
	"     'job:' || t.job_id, 'group:' || t.resource_group, 'tenant:' || t.tenant))"
	"   AND v.target_host <> ALL ($4::text[]) LIMIT $3)),"
	" trun AS (SELECT tenant, count(*)::int AS n FROM triggers"
	"   WHERE state IN ('running', 'pausing', 'cancelling') GROUP BY 1),"
	" ranked AS (SELECT c.*,"
	"   row_number() OVER (PARTITION BY c.tenant ORDER BY c.eff_prio DESC, c.ready_at) AS trank,"
	"   row_number() OVER (PARTITION BY c.resource_group ORDER BY c.eff_prio DESC, c.ready_at) AS grank,"
	"   row_number() OVER (PARTITION BY c.job_id, c.partition ORDER BY c.ready_at) AS jrank"
	"   FROM cand c),"
	" pick AS (SELECT r.id FROM ranked r LEFT JOIN lim ON lim.g = r.resource_group"
	"   LEFT JOIN run ON run.g = r.resource_group LEFT JOIN trun ON trun.tenant = r.tenant"
	"   WHERE (lim.g IS NULL OR (r.grank <= lim.nr"
	"     AND (lim.cl = 0 OR r.grank <= lim.cl - coalesce(run.n, 0))))"
	"   AND (r.ov = 'allow' OR r.jrank = 1)"
	/* Fair share: a tenant's next slot ranks after the calls it already
	 * has in flight (so the idle tenant goes first), then aged priority. */
	"   ORDER BY r.trank + coalesce(trun.n, 0), r.eff_prio DESC, r.ready_at LIMIT $3),"
	" locked AS (SELECT t.id, t.state AS prev_state, coalesce(t.last_error_class, '') AS prev_err"
	"   FROM triggers t WHERE t.id IN (SELECT id FROM pick) AND " CLAIMABLE("t")
	"   FOR UPDATE SKIP LOCKED),"
	" upd AS (UPDATE triggers t SET state = 'running', fence = nextval('palisade_fence'),"
	"   lease_owner = $1, lease_until = clock_timestamp() + $2::int * interval '1 millisecond',"
	"   attempt_count = t.attempt_count + 1"
	"   FROM locked l WHERE t.id = l.id"
	"   RETURNING t.id, t.fence, t.job_id, t.version,"
	"   floor(extract(epoch FROM t.scheduled_at))::bigint AS at, t.partition,"
	"   coalesce(t.request_id, '') AS request_id, t.attempt_count, l.prev_state, l.prev_err,"
	"   t.checkpoint::text AS checkpoint, t.tenant, t.resource_group),"
	" att AS (INSERT INTO attempts (trigger_id, fence, node) SELECT id, fence, $1 FROM upd)"
	" SELECT * FROM upd ORDER BY id";

static const char SQL_REPLACE[] =
	"UPDATE triggers t SET state = 'cancelling', last_error_class = 'replaced'"
	" FROM job_versions v WHERE v.job_id = t.job_id AND v.version = t.version"
	" AND v.overlap_policy = 'replace' AND t.state = 'running'"
	" AND (t.job_id, t.partition) IN (SELECT u.j, u.p FROM unnest($1::text[], $2::int[]) AS u(j, p))"
	" AND t.id <> ALL ($3::bigint[])";

static void copy(char *dst, size_t len, const char *src)
{
	snprintf(dst, len, "%s", src ? src : "");
}

void pal_claimed_free(pal_claimed *c, int n)
{
	if (!c)
		return;
	for (int i = 0; i < n; i++)
		free(c[i].checkpoint);
	free(c);
}

int pal_store_claim(pal_store *st, const pal_claim_req *q, pal_claimed **out, int *n, int *skipped,
		    char *err, size_t errlen)
{
	*out = NULL;
	*n = 0;
	*skipped = 0;
	if (pal__store_exec(st, "BEGIN", err, errlen))
		return PAL_EDB;
	PGresult *r = pal__store_query(st, "SELECT pg_advisory_xact_lock(" CLAIM_LOCK_KEY ")", 0,
				       NULL, err, errlen);
	if (!r)
		goto fail;
	PQclear(r);
	r = pal__store_query(st, SQL_SKIP_FORBIDDEN, 0, NULL, err, errlen);
	if (!r)
		goto fail;
	*skipped = atoi(PQcmdTuples(r));
	PQclear(r);

	GString *g = g_string_new("{"), *nr = g_string_new("{"), *cl = g_string_new("{");
	for (int i = 0; i < q->n_groups; i++) {
		const char *sep = i ? "," : "";
		g_string_append_printf(g, "%s\"%s\"", sep, q->groups[i].group);
		g_string_append_printf(nr, "%s%d", sep, q->groups[i].node_remaining);
		g_string_append_printf(cl, "%s%d", sep, q->groups[i].cluster_limit);
	}
	g_string_append_c(g, '}');
	g_string_append_c(nr, '}');
	g_string_append_c(cl, '}');
	char lease[24], lim[16];
	snprintf(lease, sizeof lease, "%" PRId64, q->lease_ms);
	snprintf(lim, sizeof lim, "%d", q->limit);
	const char *p[] = { q->node, lease, lim, q->open_hosts ? q->open_hosts : "{}", g->str,
			    nr->str, cl->str };
	r = pal__store_query(st, SQL_CLAIM, 7, p, err, errlen);
	g_string_free(g, TRUE);
	g_string_free(nr, TRUE);
	g_string_free(cl, TRUE);
	if (!r)
		goto fail;
	int rows = PQntuples(r);
	pal_claimed *c = calloc(rows ? (size_t)rows : 1, sizeof *c);
	if (!c) {
		PQclear(r);
		pal__store_rollback(st);
		return PAL_ENOMEM;
	}
	GString *rj = g_string_new("{"), *rp = g_string_new("{"), *ids = g_string_new("{");
	for (int i = 0; i < rows; i++) {
		c[i].id = strtoll(PQgetvalue(r, i, 0), NULL, 10);
		c[i].fence = strtoll(PQgetvalue(r, i, 1), NULL, 10);
		copy(c[i].job_id, sizeof c[i].job_id, PQgetvalue(r, i, 2));
		c[i].version = atoi(PQgetvalue(r, i, 3));
		c[i].scheduled_at = strtoll(PQgetvalue(r, i, 4), NULL, 10);
		c[i].partition = atoi(PQgetvalue(r, i, 5));
		copy(c[i].request_id, sizeof c[i].request_id, PQgetvalue(r, i, 6));
		c[i].attempt = atoi(PQgetvalue(r, i, 7));
		copy(c[i].prev_state, sizeof c[i].prev_state, PQgetvalue(r, i, 8));
		copy(c[i].prev_error, sizeof c[i].prev_error, PQgetvalue(r, i, 9));
		c[i].checkpoint = PQgetisnull(r, i, 10) ? NULL : strdup(PQgetvalue(r, i, 10));
		copy(c[i].tenant, sizeof c[i].tenant, PQgetvalue(r, i, 11));
		copy(c[i].group, sizeof c[i].group, PQgetvalue(r, i, 12));
		const char *sep = i ? "," : "";
		g_string_append_printf(rj, "%s%s", sep, c[i].job_id);
		g_string_append_printf(rp, "%s%d", sep, c[i].partition);
		g_string_append_printf(ids, "%s%" PRId64, sep, c[i].id);
	}
	PQclear(r);
	g_string_append_c(rj, '}');
	g_string_append_c(rp, '}');
	g_string_append_c(ids, '}');
	int rc = PAL_OK;
	if (rows) {
		const char *p2[] = { rj->str, rp->str, ids->str };
		r = pal__store_query(st, SQL_REPLACE, 3, p2, err, errlen);
		if (!r)
			rc = PAL_EDB;
		PQclear(r);
	}
	g_string_free(rj, TRUE);
	g_string_free(rp, TRUE);
	g_string_free(ids, TRUE);
	if (!rc && pal__store_exec(st, "COMMIT", err, errlen))
		rc = PAL_EDB;
	if (rc) {
		pal__store_rollback(st);
		pal_claimed_free(c, rows);
		return rc;
	}
	*out = c;
	*n = rows;
	return PAL_OK;
fail:
	pal__store_rollback(st);
	return PAL_EDB;
}

int pal_store_version_spec(pal_store *st, const char *job_id, int version, json_t **spec,
			   char *err, size_t errlen)
{
	char v[16];
	snprintf(v, sizeof v, "%d", version);
	const char *p[] = { job_id, v };
	PGresult *r = pal__store_query(st,
				       "SELECT spec::text FROM job_versions WHERE job_id = $1 AND version = $2",
				       2, p, err, errlen);
	if (!r)
		return PAL_EDB;
	if (!PQntuples(r)) {
		PQclear(r);
		snprintf(err, errlen, "job %s has no version %d", job_id, version);
		return PAL_ENOENT;
	}
	json_error_t je;
	*spec = json_loads(PQgetvalue(r, 0, 0), 0, &je);
	PQclear(r);
	if (!*spec) {
		snprintf(err, errlen, "job %s v%d: bad spec JSON: %s", job_id, version, je.text);
		return PAL_EINVAL;
	}
	return PAL_OK;
}

int pal_store_renew(pal_store *st, const char *node, int64_t lease_ms, const pal_lease_ref *refs,
		    int n, pal_lease_state *out, int *n_out, char *err, size_t errlen)
{
	*n_out = 0;
	if (!n)
		return PAL_OK;
	GString *ids = g_string_new("{"), *fs = g_string_new("{");
	for (int i = 0; i < n; i++) {
		g_string_append_printf(ids, "%s%" PRId64, i ? "," : "", refs[i].id);
		g_string_append_printf(fs, "%s%" PRId64, i ? "," : "", refs[i].fence);
	}
	g_string_append_c(ids, '}');
	g_string_append_c(fs, '}');
	char lease[24];
	snprintf(lease, sizeof lease, "%" PRId64, lease_ms);
	const char *p[] = { ids->str, fs->str, lease, node };
	PGresult *r = pal__store_query(
		st,
		"UPDATE triggers t SET lease_until = clock_timestamp() + $3::int * interval '1 millisecond'"
		" FROM unnest($1::bigint[], $2::bigint[]) AS u(id, fence)"
		" WHERE t.id = u.id AND t.fence = u.fence AND t.lease_owner = $4"
		" AND t.state IN ('running', 'pausing', 'cancelling')"
		" RETURNING t.id, t.state",
		4, p, err, errlen);
	g_string_free(ids, TRUE);
	g_string_free(fs, TRUE);
	if (!r)
		return PAL_EDB;
	int rows = PQntuples(r);
	for (int i = 0; i < rows && i < n; i++) {
		out[i].id = strtoll(PQgetvalue(r, i, 0), NULL, 10);
		copy(out[i].state, sizeof out[i].state, PQgetvalue(r, i, 1));
	}
	*n_out = rows < n ? rows : n;
	PQclear(r);
	return PAL_OK;
}

/* One result's id and its index in the caller's array, sorted by id. */
typedef struct result_ref {
	int64_t id;
	int i;
} result_ref;

static int result_ref_cmp(const void *a, const void *b)
{
	const result_ref *x = a, *y = b;
	return (x->id > y->id) - (x->id < y->id);
}

int pal_store_commit_results(pal_store *st, pal_result *res, int n, char *err, size_t errlen)
{
	if (!n)
		return PAL_OK;
	/* Allocated before the statement: once it has run, nothing may fail. */
	result_ref *by_id = malloc((size_t)n * sizeof *by_id);
	if (!by_id) {
		snprintf(err, errlen, "out of memory for %d results", n);
		return PAL_ENOMEM;
	}
	GString *a[9];
	for (int k = 0; k < 9; k++)
		a[k] = g_string_new("{");
	for (int i = 0; i < n; i++) {
		const pal_result *x = &res[i];
		const char *sep = i ? "," : "";
		g_string_append_printf(a[0], "%s%" PRId64, sep, x->id);
		g_string_append_printf(a[1], "%s%" PRId64, sep, x->fence);
		g_string_append_printf(a[2], "%s%s", sep, x->state);
		g_string_append_printf(a[3], "%s\"%s\"", sep, x->error_class ? x->error_class : "");
		g_string_append_printf(a[4], "%s%d", sep, x->http_status);
		g_string_append_printf(a[5], "%s%" PRId64, sep, x->next_attempt_ms);
		g_string_append_printf(a[6], "%s%d", sep, x->duration_ms);
		g_string_append(a[7], sep);
		g_string_append_c(a[7], '"');
		for (const char *q = x->idempotency_key ? x->idempotency_key : ""; *q; q++) {
			if (*q == '"' || *q == '\\')
				g_string_append_c(a[7], '\\');
			g_string_append_c(a[7], *q);
		}
		g_string_append_c(a[7], '"');
		g_string_append(a[8], sep);
		g_string_append_c(a[8], '"');
		for (const char *q = x->ticket_reason ? x->ticket_reason : ""; *q; q++) {
			if (*q == '"' || *q == '\\')
				g_string_append_c(a[8], '\\');
			g_string_append_c(a[8], *q);
		}
		g_string_append_c(a[8], '"');
	}
	for (int k = 0; k < 9; k++)
		g_string_append_c(a[k], '}');
	const char *p[9];
	for (int k = 0; k < 9; k++)
		p[k] = a[k]->str;
	PGresult *r = pal__store_query(
		st,
		"WITH u AS (SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::text[],"
		"   $5::int[], $6::bigint[], $7::int[], $8::text[], $9::text[])"
		"   AS u(id, fence, st, err, http, nxt, dur, ikey, tr)),"
		" upd AS (UPDATE triggers t SET"
		"   state = CASE"
		"     WHEN t.state = 'cancelling' AND u.st <> 'succeeded' THEN 'cancelled'"
		"     WHEN t.state = 'pausing' AND u.st NOT IN ('succeeded', 'failed', 'manual') THEN 'paused'"
		"     ELSE u.st END,"
		"   last_error_class = nullif(u.err, ''),"
		"   attempt_count = t.attempt_count - (u.st = 'pending')::int,"
		"   next_attempt_at = CASE WHEN u.nxt > 0 THEN to_timestamp(u.nxt / 1000.0) END,"
		"   lease_owner = NULL, lease_until = NULL,"
		"   finished_at = CASE WHEN u.st IN ('succeeded', 'failed')"
		"     OR t.state = 'cancelling' THEN clock_timestamp() END"
		"   FROM u WHERE t.id = u.id AND t.fence = u.fence"
		"   AND t.state IN ('running', 'pausing', 'cancelling')"
		"   RETURNING t.id, t.fence, t.state, t.job_id),"
		" att AS (UPDATE attempts a SET ended_at = clock_timestamp(),"
		"   outcome = CASE WHEN NOT EXISTS (SELECT 1 FROM upd WHERE upd.fence = u.fence)"
		"     THEN 'fenced' WHEN u.st = 'pending' THEN 'deferred' ELSE u.st END,"
		"   error_class = nullif(u.err, ''), http_status = nullif(u.http, 0),"
		"   duration_ms = u.dur, idempotency_key = nullif(u.ikey, '')"
		"   FROM u WHERE a.fence = u.fence),"
		" tk AS (INSERT INTO tickets (trigger_id, job_id, reason, evidence, allowed_actions)"
		"   SELECT upd.id, upd.job_id, u.tr, jsonb_build_object('error_class', u.err,"
		"     'http_status', u.http, 'fence', u.fence, 'idempotency_key', u.ikey),"
		"     ARRAY['retry', 'mark_succeeded', 'abandon']"
		"   FROM upd JOIN u ON u.id = upd.id WHERE upd.state = 'manual')"
		" SELECT id, state FROM upd",
		9, p, err, errlen);
	for (int k = 0; k < 9; k++)
		g_string_free(a[k], TRUE);
	if (!r) {
		free(by_id);
		return PAL_EDB;
	}
	/* Match the returned ids through a sorted index of RES, not a scan of
	 * RES per row: O(n log n) per batch.  Equal ids (one trigger twice in a
	 * batch) sit side by side and are all marked, as before. */
	for (int i = 0; i < n; i++) {
		res[i].committed = false;
		by_id[i] = (result_ref){ res[i].id, i };
	}
	qsort(by_id, (size_t)n, sizeof *by_id, result_ref_cmp);
	for (int j = 0; j < PQntuples(r); j++) {
		int64_t id = strtoll(PQgetvalue(r, j, 0), NULL, 10);
		size_t lo = 0, hi = (size_t)n; /* first entry with an id >= ID */
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (by_id[mid].id < id)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (; lo < (size_t)n && by_id[lo].id == id; lo++) {
			pal_result *x = &res[by_id[lo].i];
			x->committed = true;
			copy(x->final_state, sizeof x->final_state, PQgetvalue(r, j, 1));
		}
	}
	free(by_id);
	PQclear(r);
	return PAL_OK;
}

int pal_store_checkpoint(pal_store *st, int64_t id, int64_t fence, const char *checkpoint,
			 char state[16], char *err, size_t errlen)
{
	char i[24], f[24];
	snprintf(i, sizeof i, "%" PRId64, id);
	snprintf(f, sizeof f, "%" PRId64, fence);
	const char *p[] = { i, f, checkpoint };
	PGresult *r = pal__store_query(
		st,
		"WITH upd AS (UPDATE triggers SET checkpoint = $3::jsonb,"
		"   state = CASE state WHEN 'pausing' THEN 'paused' WHEN 'cancelling' THEN 'cancelled'"
		"     ELSE state END,"
		"   lease_owner = CASE WHEN state = 'running' THEN lease_owner END,"
		"   lease_until = CASE WHEN state = 'running' THEN lease_until END,"
		"   finished_at = CASE WHEN state = 'cancelling' THEN clock_timestamp() END"
		"   WHERE id = $1 AND fence = $2 AND state IN ('running', 'pausing', 'cancelling')"
		"   RETURNING state),"
		" att AS (UPDATE attempts SET ended_at = clock_timestamp(), outcome = (SELECT state FROM upd)"
		"   WHERE fence = $2 AND (SELECT state FROM upd) IN ('paused', 'cancelled'))"
		" SELECT state FROM upd",
		3, p, err, errlen);
	if (!r)
		return PAL_EDB;
	if (!PQntuples(r)) {
		PQclear(r);
		snprintf(err, errlen, "trigger %s: checkpoint rejected, token %s no longer holds it", i, f);
		return PAL_ESTALE;
	}
	copy(state, 16, PQgetvalue(r, 0, 0));
	PQclear(r);
	return PAL_OK;
}
