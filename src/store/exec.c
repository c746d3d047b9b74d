/*
 * exec.c - the executor's SQL (see include/palisade/execstore.h).
 *
 * Claims call palisade_claim_batch() (sql/functions/): claims of
 * different executors run in parallel, each takes disjoint rows (SKIP
 * LOCKED while the candidates are read), and the cluster-wide limits
 * (group cluster_concurrency, tenant caps, max_in_flight, exclusive overlap
 * policies) stay exact through per-key transaction advisory locks that are
 * tried, never waited for.  Time is the database's clock_timestamp()
 * everywhere; no node compares its own clock with a lease.
 *
 * The claim and the result commit are prepared once per connection (sent
 * unnamed instead through a transaction pooler) and can be sent without
 * blocking (the executor's loop polls their sockets beside
 * its HTTP transfers).  Arrays go through the one encoder (pgarray.c).
 */
#include <glib.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/execstore.h"
#include "store_int.h"

/* true: a trigger's first attempt is kept in its row, without an attempts
 * row (docs/schema.md, "The attempt ledger"); the commit below ends it
 * there. */
static const char SQL_CLAIM[] =
	"SELECT * FROM palisade_claim_batch($1, $2::int, $3::int, $4::int, $5::text[], $6::text[],"
	" $7::int[], $8::int[], $9::text[], $10::int[], $11::float8[], true)";

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

int pal_store_claim_send(pal_store *st, const pal_claim_req *q, char *err, size_t errlen)
{
	pal_pgarr hosts, g, nr, cl, tn, tc, tw;
	pal__pgarr_init(&hosts);
	for (const char *const *h = q->open_hosts; h && *h; h++)
		pal__pgarr_text(&hosts, *h);
	pal__pgarr_init(&g);
	pal__pgarr_init(&nr);
	pal__pgarr_init(&cl);
	for (int i = 0; i < q->n_groups; i++) {
		pal__pgarr_text(&g, q->groups[i].group);
		pal__pgarr_i64(&nr, q->groups[i].node_remaining);
		pal__pgarr_i64(&cl, q->groups[i].cluster_limit);
	}
	pal__pgarr_init(&tn);
	pal__pgarr_init(&tc);
	pal__pgarr_init(&tw);
	GString *w = g_string_new(NULL);
	for (int i = 0; i < q->n_tenants; i++) {
		pal__pgarr_text(&tn, q->tenants[i].tenant);
		pal__pgarr_i64(&tc, q->tenants[i].cap);
		/* a number, not text: printed as one (no locale in %g here) */
		g_string_printf(w, "%.6g", q->tenants[i].weight > 0 ? q->tenants[i].weight : 1.0);
		pal__pgarr_text(&tw, w->str);
	}
	g_string_free(w, TRUE);
	char lease[24], lim[16], ahead[24];
	snprintf(lease, sizeof lease, "%" PRId64, q->lease_ms);
	snprintf(lim, sizeof lim, "%d", q->limit);
	snprintf(ahead, sizeof ahead, "%" PRId64, q->ahead_ms > 0 ? q->ahead_ms : 0);
	char *a[7] = { pal__pgarr_end(&hosts), pal__pgarr_end(&g), pal__pgarr_end(&nr),
		       pal__pgarr_end(&cl),    pal__pgarr_end(&tn), pal__pgarr_end(&tc),
		       pal__pgarr_end(&tw) };
	const char *p[] = { q->node, lease, lim, ahead, a[0], a[1], a[2], a[3], a[4], a[5], a[6] };
	int rc =
	    pal__store_send_stmt(st, PAL__PREP_CLAIM, "pal_claim", SQL_CLAIM, 11, p, err, errlen);
	for (int i = 0; i < 7; i++)
		g_free(a[i]);
	return rc;
}

int pal_store_claim_recv(pal_store *st, pal_claim_out *out, char *err, size_t errlen)
{
	*out = (pal_claim_out){ 0 };
	PGresult *r = pal__store_result(st, err, errlen);
	if (!r)
		return PAL_EDB;
	int rows = PQntuples(r);
	pal_claimed *c = calloc(rows ? (size_t)rows : 1, sizeof *c);
	if (!c) {
		PQclear(r);
		snprintf(err, errlen, "out of memory for %d claimed triggers", rows);
		return PAL_ENOMEM;
	}
	int n = 0;
	for (int i = 0; i < rows; i++) {
		if (PQgetisnull(r, i, 0)) {
			/* the summary row */
			out->skipped = PQgetisnull(r, i, 14) ? 0 : atoi(PQgetvalue(r, i, 14));
			out->next_ready_ms =
				PQgetisnull(r, i, 15) ? 0 : strtoll(PQgetvalue(r, i, 15), NULL, 10);
			continue;
		}
		pal_claimed *x = &c[n++];
		x->id = strtoll(PQgetvalue(r, i, 0), NULL, 10);
		x->fence = strtoll(PQgetvalue(r, i, 1), NULL, 10);
		copy(x->job_id, sizeof x->job_id, PQgetvalue(r, i, 2));
		x->version = atoi(PQgetvalue(r, i, 3));
		x->scheduled_at = strtoll(PQgetvalue(r, i, 4), NULL, 10);
		x->partition = atoi(PQgetvalue(r, i, 5));
		copy(x->request_id, sizeof x->request_id, PQgetvalue(r, i, 6));
		x->attempt = atoi(PQgetvalue(r, i, 7));
		if (pal_tstate_parse(PQgetvalue(r, i, 8), &x->prev_state))
			x->prev_state = PAL_TS_PENDING; /* the claim only takes known states */
		copy(x->prev_error, sizeof x->prev_error, PQgetvalue(r, i, 9));
		x->checkpoint = PQgetisnull(r, i, 10) ? NULL : strdup(PQgetvalue(r, i, 10));
		copy(x->tenant, sizeof x->tenant, PQgetvalue(r, i, 11));
		copy(x->group, sizeof x->group, PQgetvalue(r, i, 12));
		x->ready_ms = strtoll(PQgetvalue(r, i, 13), NULL, 10);
		x->unknown = PQnfields(r) > 16 && !strcmp(PQgetvalue(r, i, 16), "t");
	}
	PQclear(r);
	out->c = c;
	out->n = n;
	return PAL_OK;
}

int pal_store_claim(pal_store *st, const pal_claim_req *q, pal_claim_out *out, char *err,
		    size_t errlen)
{
	*out = (pal_claim_out){ 0 };
	if (pal_store_claim_send(st, q, err, errlen))
		return PAL_EDB;
	return pal_store_claim_recv(st, out, err, errlen);
}

/* What a call needs of a version, in the order of PAL_CF_* (callspec.h):
 * the spec's target and retry objects and format, and the columns apply
 * writes beside the spec (idempotency_key, timezone, deadline_ms),
 * extracted by the server.  Not the whole spec: its text was parsed on the
 * executor's loop, 14-16 us a version, 100,000 times in an aligned burst of
 * distinct jobs.  target and retry are read from the spec, not from the
 * columns of the same name: those are copies that apply still writes for
 * 0.1.0 nodes and that a contract step of the next release drops
 * (docs/schema.md); the paths cost ~0.4 us a row more. */
static const char SQL_CALLS[] =
	"SELECT u.i, v.spec->>'format', v.spec#>>'{target,method}', v.spec#>>'{target,url}',"
	" v.spec#>>'{target,body}', v.spec#>>'{target,status_url}',"
	" (v.spec#>'{target,headers}')::text, v.spec#>>'{target,timeout_ms}', v.idempotency_key,"
	" v.timezone, v.deadline_ms, v.spec#>>'{retry,max_attempts}',"
	" v.spec#>>'{retry,max_age_ms}', v.spec#>>'{retry,backoff,initial_ms}',"
	" v.spec#>>'{retry,backoff,max_ms}', v.spec#>>'{retry,backoff,multiplier}',"
	" v.spec#>>'{retry,backoff,jitter}', v.spec#>>'{target,tracestate}',"
	" (v.spec ? 'notify')::text, v.spec#>>'{target,keep_body}',"
	" (v.spec#>'{target,keep_headers}')::text"
	" FROM unnest($1::text[], $2::int[]) WITH ORDINALITY AS u(job_id, version, i)"
	" JOIN job_versions v ON v.job_id = u.job_id AND v.version = u.version";

int pal_store_call_specs_send(pal_store *st, int n, const char *const *job_ids,
			      const int *versions, char *err, size_t errlen)
{
	pal_pgarr aj, av;
	pal__pgarr_init(&aj);
	pal__pgarr_init(&av);
	for (int i = 0; i < n; i++) {
		pal__pgarr_text(&aj, job_ids[i]);
		pal__pgarr_i64(&av, versions[i]);
	}
	char *js = pal__pgarr_end(&aj), *vs = pal__pgarr_end(&av);
	const char *p[] = { js, vs };
	int rc =
	    pal__store_send_stmt(st, PAL__PREP_SPECS, "pal_calls", SQL_CALLS, 2, p, err, errlen);
	g_free(js);
	g_free(vs);
	return rc;
}

/* CALLS[i] from the rows of R; the first row that does not build says why
 * in ERR (returns PAL_EINVAL), and the others are still built. */
static int build_calls(PGresult *r, int n, pal_call_spec **calls, char *err, size_t errlen)
{
	int rc = PAL_OK;
	for (int k = 0; k < PQntuples(r); k++) {
		long i = strtol(PQgetvalue(r, k, 0), NULL, 10) - 1;
		if (i < 0 || i >= n || calls[i])
			continue;
		const char *f[PAL_CF_N];
		for (int c = 0; c < PAL_CF_N; c++)
			f[c] = PQgetisnull(r, k, c + 1) ? NULL : PQgetvalue(r, k, c + 1);
		char why[256];
		calls[i] = pal_call_spec_new(f, why, sizeof why);
		if (!calls[i] && !rc) {
			snprintf(err, errlen, "%s", why);
			rc = PAL_EINVAL;
		}
	}
	return rc;
}

int pal_store_call_specs_recv(pal_store *st, int n, pal_call_spec **calls, char *err,
			      size_t errlen)
{
	for (int i = 0; i < n; i++)
		calls[i] = NULL;
	PGresult *r = pal__store_result(st, err, errlen);
	if (!r)
		return PAL_EDB;
	char why[256];
	(void)build_calls(r, n, calls, why, sizeof why);
	PQclear(r);
	return PAL_OK;
}

int pal_store_call_spec(pal_store *st, const char *job_id, int version, pal_call_spec **call,
			char *err, size_t errlen)
{
	*call = NULL;
	if (pal_store_call_specs_send(st, 1, &job_id, &version, err, errlen))
		return PAL_EDB;
	PGresult *r = pal__store_result(st, err, errlen);
	if (!r)
		return PAL_EDB;
	if (!PQntuples(r)) {
		PQclear(r);
		snprintf(err, errlen, "job %s has no version %d", job_id, version);
		return PAL_ENOENT;
	}
	char why[256];
	int rc = build_calls(r, 1, call, why, sizeof why);
	PQclear(r);
	if (rc)
		snprintf(err, errlen, "job %s v%d: %s", job_id, version, why);
	return rc;
}

/* The renewal reads which of the leases are still ours (`mine`, no lock),
 * locks those no other transaction holds (SKIP LOCKED: it never waits) and
 * extends them; a lease still ours whose row another transaction holds (a
 * result commit finishing it, an operator's pause) is returned busy, not
 * renewed.  When the renewal waited for row locks, taken in the order of its
 * array, and the node's result commit took the same rows in the order of its
 * join, the server found a cycle now and then and aborted one of the two
 * (`deadlock detected`; tests/integration/test_lock_order.sh).  Every lease
 * it extends ends at the same time, the statement's start plus the lease:
 * after the lease thread sent it, from which the executor counts its own
 * deadline, and one key for all of them in triggers_live (deduplicated). */
static const char SQL_RENEW[] =
	"WITH mine AS MATERIALIZED (SELECT t.id, t.state FROM triggers t"
	"   JOIN unnest($1::bigint[], $2::bigint[]) AS u(id, fence) ON t.id = u.id AND t.fence = u.fence"
	"   WHERE t.lease_owner = $4 AND t.state IN ('running', 'pausing', 'cancelling')),"
	" lk AS MATERIALIZED (SELECT t.id FROM triggers t WHERE t.id IN (SELECT id FROM mine)"
	"   FOR UPDATE OF t SKIP LOCKED),"
	" upd AS (UPDATE triggers t SET lease_until = statement_timestamp() + $3::int * interval '1 millisecond'"
	"   FROM lk JOIN unnest($1::bigint[], $2::bigint[]) AS u(id, fence) ON u.id = lk.id"
	"   WHERE t.id = lk.id AND t.fence = u.fence AND t.lease_owner = $4"
	"   AND t.state IN ('running', 'pausing', 'cancelling')"
	"   RETURNING t.id, t.state)"
	" SELECT id, state, false FROM upd"
	" UNION ALL SELECT id, state, true FROM mine WHERE id NOT IN (SELECT id FROM lk)";

int pal_store_renew(pal_store *st, const char *node, int64_t lease_ms, const pal_lease_ref *refs,
		    int n, pal_lease_state *out, int *n_out, char *err, size_t errlen)
{
	*n_out = 0;
	if (!n)
		return PAL_OK;
	pal_pgarr ids, fs;
	pal__pgarr_init(&ids);
	pal__pgarr_init(&fs);
	for (int i = 0; i < n; i++) {
		pal__pgarr_i64(&ids, refs[i].id);
		pal__pgarr_i64(&fs, refs[i].fence);
	}
	char *ia = pal__pgarr_end(&ids), *fa = pal__pgarr_end(&fs);
	char lease[24];
	snprintf(lease, sizeof lease, "%" PRId64, lease_ms);
	const char *p[] = { ia, fa, lease, node };
	PGresult *r =
	    pal__store_query_stmt(st, PAL__PREP_RENEW, "pal_renew", SQL_RENEW, 4, p, err, errlen);
	g_free(ia);
	g_free(fa);
	if (!r)
		return PAL_EDB;
	int rows = PQntuples(r);
	for (int i = 0; i < rows && i < n; i++) {
		out[i].id = strtoll(PQgetvalue(r, i, 0), NULL, 10);
		if (pal_tstate_parse(PQgetvalue(r, i, 1), &out[i].state))
			out[i].state = PAL_TS_RUNNING;
		out[i].busy = PQgetvalue(r, i, 2)[0] == 't';
	}
	*n_out = rows < n ? rows : n;
	PQclear(r);
	return PAL_OK;
}

/*
 * A 'cancelling' trigger (replaced by a newer run of its job, or cancelled by
 * an operator while running) whose lease expired before its executor reached
 * a safe point: no claim takes it back (only expired 'running' leases are
 * re-claimed), so nobody would ever move it.  It ends 'cancelled' here, the
 * same step `palisade cancel` takes for it; its holder, if still alive, is
 * fenced by the state (renewal and commit require the token and a live
 * state).  Rows another transaction holds are left for the next round.
 */
static const char SQL_REAP_CANCELLING[] = "SELECT count(*) FROM " PAL__TRIGGER_MOVE(
    "SELECT x.id, x.scheduled_at, x.state FROM triggers x WHERE x.state = 'cancelling'"
    " AND x.lease_until < clock_timestamp() LIMIT 1000 FOR UPDATE OF x SKIP LOCKED",
    "'cancelled'", "NULL") " m";

/* *N: the first column of the one row of SQL (no parameters). */
static int query_count(pal_store *st, const char *sql, int64_t *n, char *err, size_t errlen)
{
	*n = 0;
	PGresult *r = pal__store_query(st, sql, 0, NULL, err, errlen);
	if (!r)
		return PAL_EDB;
	*n = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
	PQclear(r);
	return PAL_OK;
}

int pal_store_reap_cancelling(pal_store *st, int64_t *n, char *err, size_t errlen)
{
	return query_count(st, SQL_REAP_CANCELLING, n, err, errlen);
}

/* An executor node (alias N of executor_nodes) is live while it was seen
 * in the last minute - its claims write seen_at, and so does its lease
 * thread every 2 s whatever the claims do, from its start until it drains
 * (pal_store_executor_seen) - or while it holds an unexpired lease: a 0.3.0
 * node writes seen_at at its claims only, and sends none while it is at its
 * in-flight limit, yet renews the leases of its calls. */
#define PAL_EXECUTOR_LIVE_SQL(n)                                                              \
	"(" n ".seen_at > clock_timestamp() - interval '1 minute' OR EXISTS (SELECT 1"           \
	" FROM triggers l WHERE l.state IN ('running', 'pausing', 'cancelling')"                 \
	" AND l.lease_until > clock_timestamp() AND l.lease_owner = " n ".node))"
/* Render skip S (an alias of render_skips) counts for a trigger of job
 * version V: it was recorded against V, or by a 0.3.0 node (version NULL,
 * every version; 047). */
#define PAL_SKIP_COUNTS_SQL(s, v) "(" s ".version IS NULL OR " s ".version = " v ")"
/* The reason of the ticket of a trigger no live executor node can send. */
#define PAL_NOWHERE_REASON_SQL "'no live executor node can render the request: '"

static const char SQL_EXECUTOR_SEEN[] =
	"INSERT INTO executor_nodes AS n (node, seen_at) VALUES ($1, clock_timestamp())"
	" ON CONFLICT (node) DO UPDATE SET seen_at = excluded.seen_at"
	" WHERE n.seen_at < excluded.seen_at - interval '2 s'";
/* At start: the node's own skips go too (the settings a render is judged by,
 * executor.secrets, executor.target_hosts and the environment, change only
 * with a restart), then it is seen. */
static const char SQL_EXECUTOR_START[] =
	"WITH d AS (DELETE FROM render_skips WHERE node = $1)"
	" INSERT INTO executor_nodes (node, seen_at) VALUES ($1, clock_timestamp())"
	" ON CONFLICT (node) DO UPDATE SET seen_at = excluded.seen_at";

int pal_store_executor_seen(pal_store *st, const char *node, bool start, char *err, size_t errlen)
{
	const char *p[] = { node };
	PGresult *r = pal__store_query(st, start ? SQL_EXECUTOR_START : SQL_EXECUTOR_SEEN, 1, p,
				       err, errlen);
	if (!r)
		return PAL_EDB;
	PQclear(r);
	return PAL_OK;
}

/*
 * The later instants of a job version that no live executor node can send.
 * A render hand-back skips the job version on its node for a while (rs, in
 * the result commit below), so no claim of that node takes its other
 * triggers, and the commit's rule (a hand-back none of the live nodes could
 * take goes `manual` with a ticket) never sees them: they would wait, past
 * due and ticketless, until the skips expire.  Here the due `pending`
 * triggers of a job version that every live executor node skips (at least
 * one node live) go `manual` through the door, each with the commit's ticket
 * and, for a job with `notify:`, its `manual` notification.  A version one
 * live node does not skip is left to that node's claims (a roll: one node
 * refusing, one granting; a new version that renders).  The live skips are
 * read once (sk): which versions move and each ticket's reason come from
 * the same rows, so a skip expiring meanwhile cannot move a trigger without
 * its ticket.  Triggers are read by job (triggers_pending_job) and by key,
 * from the few skipped jobs and moved rows, never scanned whole (DISTINCT
 * and LIMIT keep the planner from flattening those lookups into joins that
 * scan every pending trigger).  Rows
 * another transaction holds (a claim) are left out, never
 * waited for: the lease thread runs this.  It is sent only while a skip is
 * live (SQL_SKIP_LIVE); without a skip of a due trigger's job nothing else
 * is read and the door is not called (one-time filters).  Rows: how many
 * moved.
 */
/* clang-format off */
static const char SQL_NOWHERE[] =
    "WITH sk AS MATERIALIZED (SELECT s.node, s.job_id, s.version, s.error, s.at"
    "   FROM render_skips s WHERE s.until > clock_timestamp()),"
    " live AS MATERIALIZED (SELECT n.node FROM executor_nodes n"
    "   WHERE EXISTS (SELECT 1 FROM sk) AND " PAL_EXECUTOR_LIVE_SQL("n") "),"
    " j AS MATERIALIZED (SELECT v.job_id, v.version FROM (SELECT sj.job_id, t.version"
    "     FROM (SELECT DISTINCT sk.job_id FROM sk) sj CROSS JOIN LATERAL (SELECT DISTINCT t.version"
    "       FROM triggers t WHERE t.job_id = sj.job_id AND t.state = 'pending'"
    "         AND coalesce(t.next_attempt_at, t.due_at) <= clock_timestamp()) t) v"
    "   WHERE EXISTS (SELECT 1 FROM live) AND NOT EXISTS (SELECT 1 FROM live o"
    "     WHERE NOT EXISTS (SELECT 1 FROM sk k WHERE k.node = o.node AND k.job_id = v.job_id"
    "       AND " PAL_SKIP_COUNTS_SQL("k", "v.version") "))),"
    " m AS (SELECT m.id, m.scheduled_at, m.job_id, m.version, m.fence FROM " PAL__TRIGGER_MOVE(
	"SELECT t.id, t.scheduled_at, t.state FROM j CROSS JOIN LATERAL (SELECT t.id,"
	" t.scheduled_at, t.state FROM triggers t WHERE t.job_id = j.job_id"
	" AND t.version = j.version AND t.state = 'pending'"
	" AND coalesce(t.next_attempt_at, t.due_at) <= clock_timestamp()"
	" LIMIT 1000 FOR UPDATE OF t SKIP LOCKED) t LIMIT 1000",
	"'manual'", "NULL") " m WHERE EXISTS (SELECT 1 FROM j)),"
    " e AS (SELECT j.job_id, j.version, (array_agg(k.error ORDER BY k.at DESC))[1] AS error,"
    "   jsonb_agg(k.node ORDER BY k.node) AS nodes FROM j JOIN sk k ON k.job_id = j.job_id"
    "     AND " PAL_SKIP_COUNTS_SQL("k", "j.version") " GROUP BY j.job_id, j.version),"
    " tk AS (INSERT INTO tickets (trigger_id, job_id, reason, evidence, allowed_actions)"
    "   SELECT m.id, m.job_id, " PAL_NOWHERE_REASON_SQL
    "     || coalesce(e.error, 'every live executor node skips the job'),"
    "     jsonb_build_object('error_class', t.last_error_class, 'fence', m.fence,"
    "       'render_error', e.error, 'nodes_that_cannot_render', coalesce(e.nodes, '[]')),"
    "     ARRAY['retry', 'mark_succeeded', 'abandon']"
    "   FROM m LEFT JOIN e ON e.job_id = m.job_id AND e.version = m.version"
    "   CROSS JOIN LATERAL (SELECT t.last_error_class FROM triggers t"
    "     WHERE t.id = m.id AND t.scheduled_at = m.scheduled_at LIMIT 1) t RETURNING 1),"
    " nt AS MATERIALIZED (SELECT palisade_notify_result(x.job_id, x.version, x.id,"
    "   coalesce(x.fence, 0), x.scheduled_at, x.partition, 'manual', x.last_error_class,"
    "   x.attempt_count) AS n FROM (SELECT m.*, t.partition, t.last_error_class, t.attempt_count"
    "     FROM m CROSS JOIN LATERAL (SELECT t.partition, t.last_error_class, t.attempt_count"
    "       FROM triggers t WHERE t.id = m.id AND t.scheduled_at = m.scheduled_at LIMIT 1) t"
    "     ORDER BY m.job_id, m.id OFFSET 0) x)"
    " SELECT (SELECT count(*) FROM m), (SELECT count(*) FROM tk), (SELECT count(*) FROM nt)";
/* clang-format on */

/* Whether a render skip is live: SQL_NOWHERE costs its planning (over every
 * partition of triggers) however little it reads, so it is sent only then. */
static const char SQL_SKIP_LIVE[] =
	"SELECT count(*) FROM (SELECT 1 FROM render_skips WHERE until > clock_timestamp() LIMIT 1) s";

int pal_store_nowhere_manual(pal_store *st, int64_t *n, char *err, size_t errlen)
{
	int rc = query_count(st, SQL_SKIP_LIVE, n, err, errlen);
	if (rc || !*n)
		return rc;
	return query_count(st, SQL_NOWHERE, n, err, errlen);
}

static int id_ref_cmp(const void *a, const void *b)
{
	const pal_id_ref *x = a, *y = b;
	return (x->id > y->id) - (x->id < y->id);
}

void pal__id_refs_sort(pal_id_ref *refs, size_t n)
{
	qsort(refs, n, sizeof *refs, id_ref_cmp);
}

size_t pal__id_refs_find(const pal_id_ref *refs, size_t n, int64_t id)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (refs[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The commit joins the batch (unnest) with triggers and attempts through
 * their keys (the ANY conditions give the index scans).  The connection that
 * sends it runs with enable_nestloop off (see pal_store_prepare_commits):
 * statistics of a queue table are always stale, and the planner, believing
 * one live trigger, nested a 1 024-row batch against a CTE scan per row
 * (1.2-3 s per commit, measured with auto_explain). */
/* How long a node that could not render a job's request passes the job
 * over (docs/executor.md). */
#define PAL_RENDER_SKIP_SQL "interval '5 minutes'"
#define NCOMMIT 20
/* The instants of the batch's triggers lie in [$14, $15) (epoch seconds;
 * -Infinity/Infinity when one is unknown): a bound on the partition key,
 * so that the statement reads and starts up only the partitions that can
 * hold them (pruned at executor start-up, also in the generic plan) - not
 * one index probe per id in every partition. */
#define PART_T " AND t.scheduled_at >= to_timestamp($14::float8) AND t.scheduled_at < to_timestamp($15::float8)"
#define PART_A " AND a.scheduled_at >= to_timestamp($14::float8) AND a.scheduled_at < to_timestamp($15::float8)"

/* The end of an attempt the trigger row holds (first_claimed_at set: the
 * claim of a first attempt, docs/schema.md "The attempt ledger"), written
 * by the UPDATE that sets the state; the columns att writes for an
 * attempts row, in the row's compact form (attempt_ledger decodes it): a
 * success leaves first_outcome NULL, the job's default key leaves
 * first_key NULL ('' when none was sent).  For any other attempt they
 * stay NULL. */
#define FIRST_SET(OUTCOME) \
	"   first_ended_at = CASE WHEN t.first_claimed_at IS NOT NULL THEN clock_timestamp() END," \
	"   first_outcome = CASE WHEN t.first_claimed_at IS NOT NULL" \
	"     THEN nullif(" OUTCOME ", 'succeeded') END," \
	"   first_error = CASE WHEN t.first_claimed_at IS NOT NULL THEN nullif(u.err, '') END," \
	"   first_http = CASE WHEN t.first_claimed_at IS NOT NULL THEN nullif(u.http, 0) END," \
	"   first_ms = CASE WHEN t.first_claimed_at IS NOT NULL THEN u.dur END," \
	"   first_key = CASE WHEN t.first_claimed_at IS NOT NULL THEN nullif(u.ikey," \
	"     palisade_default_key(t.job_id, t.scheduled_at, t.partition, t.request_id)) END," \
	"   first_queries = CASE WHEN t.first_claimed_at IS NOT NULL" \
	"     THEN string_to_array(nullif(u.sq, ''), ',') END"
#define FIRST_ENDS FIRST_SET("CASE WHEN u.st = 'pending' THEN 'deferred' ELSE u.st END")
#define FIRST_ENDS_FENCED FIRST_SET("'fenced'")

/* The statement's CTEs up to fl; RET: what upd returns (nt, below,
 * needs more of the trigger than the final SELECT). */
/* tests/integration/test_after.sh finds this statement waiting in
 * pg_stat_activity by the alias list of u (the first 1 KiB of its text). */
#define COMMIT_CTES(RET) \
	"WITH u AS (SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::text[]," \
	"   $5::int[], $6::bigint[], $7::int[], $8::text[], $9::text[], $10::boolean[]," \
	"   $11::text[], $12::text[])" \
	"   AS u(id, fence, st, err, http, nxt, dur, ikey, tr, unk, sq, rnode))," \
	/* a render hand-back whose job version no other live executor can \
	 * render either (each has a live skip that counts for it): manual, \
	 * with a ticket */ \
	" nowhere AS (SELECT u.id FROM u JOIN triggers t ON t.id = u.id" \
	"   WHERE u.rnode <> '' AND t.id = ANY ($1::bigint[])" PART_T " AND NOT EXISTS (" \
	"     SELECT 1 FROM executor_nodes n WHERE n.node <> u.rnode" \
	"       AND " PAL_EXECUTOR_LIVE_SQL("n") \
	"       AND NOT EXISTS (SELECT 1 FROM render_skips s WHERE s.node = n.node" \
	"         AND s.job_id = t.job_id AND " PAL_SKIP_COUNTS_SQL("s", "t.version") \
	"         AND s.until > clock_timestamp())))," \
	" upd AS (UPDATE triggers t SET" \
	"   state = CASE" \
	"     WHEN t.state = 'cancelling' AND u.st <> 'succeeded' THEN 'cancelled'" \
	"     WHEN t.state = 'pausing' AND u.st NOT IN ('succeeded', 'failed', 'manual') THEN 'paused'" \
	"     WHEN u.id IN (SELECT id FROM nowhere) THEN 'manual'" \
	"     ELSE u.st END," \
	"   last_error_class = nullif(u.err, '')," \
	"   attempt_count = t.attempt_count - (u.st = 'pending')::int," \
	"   next_attempt_at = CASE WHEN u.nxt >= 0" \
	"     THEN clock_timestamp() + u.nxt * interval '1 millisecond' END," \
	"   outcome_unknown = u.unk," \
	"   lease_owner = NULL, lease_until = NULL, updated_at = clock_timestamp()," \
	"   finished_at = CASE WHEN u.st IN ('succeeded', 'failed')" \
	"     OR t.state = 'cancelling' THEN clock_timestamp() END," \
	FIRST_ENDS \
	"   FROM u WHERE t.id = u.id AND t.fence = u.fence AND t.id = ANY ($1::bigint[])" PART_T \
	/* IS TRUE: the state test must not let the planner read the batch's \
	 * rows through triggers_live (whose predicate a bare IN implies).  The \
	 * generic plan, made while the statistics saw no live trigger, did: \
	 * every live trigger of the cluster compared with every id of the \
	 * batch (ScalarArrayOp as a filter), live x batch per commit - with \
	 * three nodes, 3,072 x up to 1,024 (docs/performance.md, "Plans on \
	 * queue tables").  The key finds them by the primary key. */ \
	"   AND (t.state IN ('running', 'pausing', 'cancelling')) IS TRUE" \
	RET ")," \
	/* a join, not a NOT EXISTS per row: that was quadratic in the batch \
	 * (a 9 728-result batch ran past the 30 s statement timeout).  The \
	 * attempt is found through its trigger (attempts_trigger), not its \
	 * token alone: attempts_fence was there only for 0.2.0 binaries, whose \
	 * commit read it; 048 drops it after the roll (docs/upgrades.md). */ \
	/* a result refused for its state, of an attempt its trigger row holds \
	 * (token still its own): ended there as fenced, as att ends a row; \
	 * disjoint from upd (a state upd requires is not true here), so only \
	 * the ids upd did not take are looked up (an array computed once: a \
	 * batch upd took whole probes no partition here) */ \
	" fen AS (UPDATE triggers t SET" FIRST_ENDS_FENCED \
	"   FROM u WHERE t.id = u.id AND t.fence = u.fence" \
	"   AND t.id = ANY (ARRAY(SELECT r.id FROM u r WHERE r.id NOT IN (SELECT upd.id FROM upd)))" \
	PART_T \
	"   AND t.first_claimed_at IS NOT NULL AND t.first_ended_at IS NULL" \
	"   AND (t.state IN ('running', 'pausing', 'cancelling')) IS NOT TRUE)," \
	" att AS (UPDATE attempts a SET ended_at = clock_timestamp()," \
	"   outcome = CASE WHEN upd.id IS NULL" \
	"     THEN 'fenced' WHEN u.st = 'pending' THEN 'deferred' ELSE u.st END," \
	"   error_class = nullif(u.err, ''), http_status = nullif(u.http, 0)," \
	"   duration_ms = u.dur, idempotency_key = nullif(u.ikey, '')," \
	"   status_queries = string_to_array(nullif(u.sq, ''), ',')" \
	"   FROM u LEFT JOIN upd ON upd.fence = u.fence" \
	"   WHERE a.trigger_id = u.id AND a.fence = u.fence AND a.trigger_id = ANY ($1::bigint[])" \
	/* a refused result ends only an open attempt, as fen does: one sent \
	 * again after its commit (a lost answer, or the second sending of a \
	 * refused one) leaves what was written */ \
	"   AND (upd.id IS NOT NULL OR a.ended_at IS NULL)" \
	PART_A ")," \
	/* What the attempts keep of the answers ($16-$20: only the results \
	 * with something to keep, often none), for results this statement \
	 * accepts: a fenced executor writes nothing here either. */ \
	" rsp AS (INSERT INTO attempt_responses AS x (fence, scheduled_at, trigger_id, headers," \
	"   content_type, body, truncated)" \
	"   SELECT r.fence, upd.scheduled_at, upd.id, r.hdr::jsonb, nullif(r.ct, '')," \
	"     decode(r.body, 'hex'), r.trunc" \
	"   FROM unnest($16::bigint[], $17::text[], $18::text[], $19::text[], $20::boolean[])" \
	"     AS r(fence, hdr, ct, body, trunc) JOIN upd ON upd.fence = r.fence" \
	"   ON CONFLICT (fence, scheduled_at) DO NOTHING)," \
	/* the node that could not render stops claiming the job version for a \
	 * while (the newest of the batch, when it holds two of a job) */ \
	" rs AS (INSERT INTO render_skips AS s (node, job_id, until, error, version)" \
	"   SELECT DISTINCT ON (u.rnode, t.job_id) u.rnode, t.job_id," \
	"     clock_timestamp() + " PAL_RENDER_SKIP_SQL ", u.tr, t.version" \
	"   FROM u JOIN triggers t ON t.id = u.id WHERE u.rnode <> '' AND t.id = ANY ($1::bigint[])" \
	PART_T \
	"   ORDER BY u.rnode, t.job_id, t.version DESC" \
	"   ON CONFLICT (node, job_id) DO UPDATE SET until = excluded.until, error = excluded.error," \
	"     version = excluded.version, at = clock_timestamp())," \
	/* Evidence: what the executor knew.  An unknown outcome's ticket lists \
	 * every attempt of the trigger (this one from the batch: the UPDATE \
	 * above is not visible to this statement) with its status queries; a \
	 * render ticket, the nodes that could not render the job. */ \
	" tk AS (INSERT INTO tickets (trigger_id, job_id, reason, evidence, allowed_actions)" \
	"   SELECT upd.id, upd.job_id," \
	"     CASE WHEN u.rnode <> '' THEN " PAL_NOWHERE_REASON_SQL " || u.tr" \
	"       ELSE u.tr END," \
	"     jsonb_build_object('error_class', u.err," \
	"     'http_status', u.http, 'fence', u.fence, 'idempotency_key', u.ikey," \
	"     'outcome_unknown', u.unk)" \
	"     || CASE WHEN u.unk THEN jsonb_build_object('attempts', (SELECT jsonb_agg(" \
	"       jsonb_build_object('attempt', a.n, 'fence', a.fence, 'node', a.node," \
	"       'claimed_at', a.claimed_at," \
	"       'outcome', CASE WHEN a.fence = u.fence THEN 'manual' ELSE a.outcome END," \
	"       'error_class', CASE WHEN a.fence = u.fence THEN nullif(u.err, '') ELSE a.error_class END," \
	"       'http_status', CASE WHEN a.fence = u.fence THEN nullif(u.http, 0) ELSE a.http_status END," \
	"       'status_queries', to_jsonb(CASE WHEN a.fence = u.fence" \
	"         THEN string_to_array(nullif(u.sq, ''), ',') ELSE a.status_queries END))" \
	"       ORDER BY a.fence) FROM (SELECT x.*, row_number() OVER (ORDER BY x.fence) AS n" \
	"       FROM attempt_ledger x WHERE x.trigger_id = upd.id) a)) ELSE '{}'::jsonb END" \
	"     || CASE WHEN u.rnode <> '' THEN jsonb_build_object('render_error', u.tr," \
	"       'nodes_that_cannot_render', (SELECT jsonb_agg(DISTINCT s.node) FROM (" \
	"         SELECT s.node FROM render_skips s WHERE s.job_id = upd.job_id" \
	"           AND " PAL_SKIP_COUNTS_SQL("s", "upd.version") \
	"           AND s.until > clock_timestamp() UNION SELECT u.rnode) s))" \
	"       ELSE '{}'::jsonb END," \
	/* never "run with a new key": retry keeps the trigger, hence the key */ \
	"     ARRAY['retry', 'mark_succeeded', 'abandon']" \
	"   FROM upd JOIN u ON u.id = upd.id WHERE upd.state = 'manual')," \
	/* The highest token a service refused a call of the batch with ($13, \
	 * 0: none): the sequence is moved past it by nextval, never by setval \
	 * (a setval racing another claim's nextval could hand out a token \
	 * twice), at most 100,000 values per commit.  Referenced below so that \
	 * it runs; its row (id -1) matches no result. */ \
	" fl AS (SELECT count(nextval('palisade_fence')) AS n FROM generate_series(1," \
	"   least(100000, $13::bigint - (SELECT last_value FROM palisade_fence))))"

#define COMMIT_RET                                                                                 \
	" RETURNING t.id, t.fence, t.state, t.job_id, t.scheduled_at,"                             \
	" t.version, t.partition, t.attempt_count, t.last_error_class"
#define COMMIT_SELECT " SELECT id, state FROM upd UNION ALL SELECT -1, NULL FROM fl WHERE fl.n > 0"

/* nt: the notifications of the batch's results, queued in the same
 * transaction by palisade_notify_result(), in job order (its notify_state
 * rows are locked in one order by every commit); referenced by the final
 * SELECT so that it runs, no row of it returned.  WHICH selects the
 * results from upd.  A result whose trigger's version has `notify:` ($21
 * in SQL_COMMIT_NOTIFY) is always asked for.  One whose version has none
 * is asked for when it is failed or manual and the job's latest version,
 * another one (an apply gave the job entries while the trigger ran or
 * waited), has `notify:`: the receivers are the latest version's
 * (palisade_notify_enqueue), so a failure that ends after the apply
 * reaches them.  A succeeded one is asked for when the job is marked
 * failing (notify_state): such a failure may have set the mark, and a
 * later instant's success (or the same trigger's, retried) clears it and
 * sends `recovered` by the usual rule.  That costs two lookups by key per
 * failed or manual result of a job without notify and one per succeeded
 * one (notify_state, usually empty or small), in subplans (the result
 * connection has enable_nestloop off: a join would read all of jobs)
 * (docs/protocol.md, "Notifications"). */
#define NOTIFY_LATEST                                                                              \
	"CASE WHEN upd.state IN ('failed', 'manual') THEN (SELECT v.spec ? 'notify'"               \
	"   FROM job_versions v WHERE v.job_id = upd.job_id AND v.version <> upd.version"          \
	"   AND v.version = (SELECT j.latest_version FROM jobs j WHERE j.job_id = upd.job_id))"    \
	" WHEN upd.state = 'succeeded' THEN EXISTS (SELECT 1 FROM notify_state s"                  \
	"   WHERE s.job_id = upd.job_id AND s.failed_since IS NOT NULL)"                           \
	" END IS TRUE"
#define COMMIT_NT(WHICH)                                                                           \
	", nt AS MATERIALIZED (SELECT palisade_notify_result(x.job_id, x.version, x.id, x.fence,"  \
	"   x.scheduled_at, x.partition, x.state, x.last_error_class, x.attempt_count) AS n"       \
	"   FROM (SELECT upd.* FROM " WHICH                                                        \
	" ORDER BY upd.job_id, upd.id OFFSET 0) x)" COMMIT_SELECT                                  \
	" UNION ALL SELECT -2, NULL FROM nt WHERE nt.n < 0"

static const char SQL_COMMIT[] = COMMIT_CTES(COMMIT_RET) COMMIT_NT("upd WHERE " NOTIFY_LATEST);

/* The same commit for a batch with results of jobs that have `notify:`
 * ($21: per result, whether its trigger's version has). */
static const char SQL_COMMIT_NOTIFY[] = COMMIT_CTES(COMMIT_RET)
    COMMIT_NT("upd JOIN unnest($2::bigint[], $21::boolean[]) AS f(fence, ntf)"
	      " ON f.fence = upd.fence WHERE f.ntf OR " NOTIFY_LATEST);

int pal_store_prepare_commits(pal_store *st, char *err, size_t errlen)
{
	if (pal__store_needs_session(st, "the result connection (enable_nestloop off)", err,
				     errlen))
		return PAL_EINVAL;
	if (pal__store_exec(st, "SET enable_nestloop = off", err, errlen))
		return PAL_EDB;
	if (pal__store_prepare(st, PAL__PREP_COMMIT, "pal_commit", SQL_COMMIT, NCOMMIT, err, errlen))
		return PAL_EDB;
	return pal__store_prepare(st, PAL__PREP_COMMIT_NOTIFY, "pal_commit_notify",
				  SQL_COMMIT_NOTIFY, NCOMMIT + 1, err, errlen);
}

int pal_store_commit_send(pal_store *st, const pal_result *res, int n, char *err, size_t errlen)
{
	pal_pgarr a[NCOMMIT + 1];
	enum { NARR = 12, RARR = 15, NRESP = 5 };
	for (int k = 0; k < NARR; k++)
		pal__pgarr_init(&a[k]);
	for (int k = RARR; k < RARR + NRESP; k++)
		pal__pgarr_init(&a[k]);
	GString *hex = g_string_new(NULL);
	bool notify = false;
	for (int i = 0; i < n && !notify; i++)
		notify = res[i].notify;
	if (notify)
		pal__pgarr_init(&a[NCOMMIT]);
	int64_t stale = 0, lo = INT64_MAX, hi = INT64_MIN;
	for (int i = 0; i < n; i++) {
		const pal_result *x = &res[i];
		if (notify)
			pal__pgarr_text(&a[NCOMMIT], x->notify ? "t" : "f");
		if (x->stale_token > stale)
			stale = x->stale_token;
		if (x->at < lo)
			lo = x->at;
		if (x->at > hi)
			hi = x->at;
		pal__pgarr_i64(&a[0], x->id);
		pal__pgarr_i64(&a[1], x->fence);
		pal__pgarr_text(&a[2], pal_tstate_name(x->state));
		pal__pgarr_text(&a[3], x->error_class ? x->error_class : "");
		pal__pgarr_i64(&a[4], x->http_status);
		pal__pgarr_i64(&a[5], x->next_delay_ms);
		pal__pgarr_i64(&a[6], x->duration_ms);
		pal__pgarr_text(&a[7], x->idempotency_key ? x->idempotency_key : "");
		pal__pgarr_text(&a[8], x->ticket_reason ? x->ticket_reason : "");
		pal__pgarr_text(&a[9], x->unknown ? "t" : "f");
		pal__pgarr_text(&a[10], x->status_queries ? x->status_queries : "");
		pal__pgarr_text(&a[11], x->render_node ? x->render_node : "");
		if (!x->resp_keep)
			continue;
		g_string_truncate(hex, 0);
		for (size_t b = 0; b < x->resp_body_len; b++)
			g_string_append_printf(hex, "%02x", (unsigned char)x->resp_body[b]);
		pal__pgarr_i64(&a[RARR], x->fence);
		pal__pgarr_text(&a[RARR + 1], x->resp_headers ? x->resp_headers : "{}");
		pal__pgarr_text(&a[RARR + 2], x->resp_ctype ? x->resp_ctype : "");
		pal__pgarr_text(&a[RARR + 3], hex->str);
		pal__pgarr_text(&a[RARR + 4], x->resp_truncated ? "t" : "f");
	}
	g_string_free(hex, TRUE);
	char *lit[NCOMMIT + 1];
	const char *p[NCOMMIT + 1];
	for (int k = 0; k < NARR; k++)
		p[k] = lit[k] = pal__pgarr_end(&a[k]);
	for (int k = RARR; k < RARR + NRESP; k++)
		p[k] = lit[k] = pal__pgarr_end(&a[k]);
	char st13[24], lo14[24] = "-Infinity", hi15[24] = "Infinity";
	snprintf(st13, sizeof st13, "%" PRId64, stale);
	if (n && lo > 0) { /* 0: an instant the caller did not give */
		snprintf(lo14, sizeof lo14, "%" PRId64, lo);
		snprintf(hi15, sizeof hi15, "%" PRId64, hi + 1);
	}
	p[12] = st13;
	p[13] = lo14;
	p[14] = hi15;
	int rc;
	if (notify) {
		p[NCOMMIT] = lit[NCOMMIT] = pal__pgarr_end(&a[NCOMMIT]);
		rc = pal__store_send_stmt(st, PAL__PREP_COMMIT_NOTIFY, "pal_commit_notify",
					  SQL_COMMIT_NOTIFY, NCOMMIT + 1, p, err, errlen);
		g_free(lit[NCOMMIT]);
	} else {
		rc = pal__store_send_stmt(st, PAL__PREP_COMMIT, "pal_commit", SQL_COMMIT, NCOMMIT,
					  p, err, errlen);
	}
	for (int k = 0; k < NARR; k++)
		g_free(lit[k]);
	for (int k = RARR; k < RARR + NRESP; k++)
		g_free(lit[k]);
	return rc;
}

int pal_store_commit_recv(pal_store *st, pal_result *res, int n, char *err, size_t errlen)
{
	/* Allocated before reading: once the statement has run, nothing may
	 * fail but the connection. */
	pal_id_ref *by_id = malloc((size_t)(n ? n : 1) * sizeof *by_id);
	PGresult *r = pal__store_result(st, err, errlen);
	if (!r) {
		free(by_id);
		return PAL_EDB;
	}
	if (!by_id) {
		PQclear(r);
		snprintf(err, errlen, "out of memory for %d results", n);
		return PAL_ENOMEM;
	}
	/* Match the returned ids through a sorted index of RES, not a scan of
	 * RES per row: O(n log n) per batch.  Equal ids (one trigger twice in a
	 * batch) sit side by side and are all marked, as before. */
	for (int i = 0; i < n; i++) {
		res[i].committed = false;
		by_id[i] = (pal_id_ref){ res[i].id, i };
	}
	pal__id_refs_sort(by_id, (size_t)n);
	for (int j = 0; j < PQntuples(r); j++) {
		int64_t id = strtoll(PQgetvalue(r, j, 0), NULL, 10);
		for (size_t k = pal__id_refs_find(by_id, (size_t)n, id);
		     k < (size_t)n && by_id[k].id == id; k++) {
			pal_result *x = &res[by_id[k].i];
			x->committed = true;
			if (pal_tstate_parse(PQgetvalue(r, j, 1), &x->final_state))
				x->final_state = x->state;
		}
	}
	free(by_id);
	PQclear(r);
	return PAL_OK;
}

int pal_store_commit_results(pal_store *st, pal_result *res, int n, char *err, size_t errlen)
{
	if (!n)
		return PAL_OK;
	if (pal_store_commit_send(st, res, n, err, errlen))
		return PAL_EDB;
	int rc = pal_store_commit_recv(st, res, n, err, errlen);
	if (rc)
		return rc;
	/* the refused ones once more, with a fresh snapshot (pal_result.resent) */
	int m = 0;
	for (int i = 0; i < n; i++)
		m += !res[i].committed && !res[i].resent;
	if (!m)
		return PAL_OK;
	pal_result *again = malloc((size_t)m * sizeof *again);
	int *from = malloc((size_t)m * sizeof *from);
	if (!again || !from) {
		free(again);
		free(from);
		snprintf(err, errlen, "out of memory for %d refused results", m);
		return PAL_ENOMEM;
	}
	m = 0;
	for (int i = 0; i < n; i++)
		if (!res[i].committed && !res[i].resent) {
			again[m] = res[i];
			again[m].resent = true;
			from[m++] = i;
		}
	rc = pal_store_commit_send(st, again, m, err, errlen)
		 ? PAL_EDB
		 : pal_store_commit_recv(st, again, m, err, errlen);
	for (int j = 0; !rc && j < m; j++) {
		res[from[j]].committed = again[j].committed;
		res[from[j]].final_state = again[j].final_state;
	}
	free(again);
	free(from);
	return rc;
}

/* One statement: palisade_trigger_checkpoint (sql/functions/) stores the
 * checkpoint and moves a trigger asked to stop through the door. */
int pal_store_checkpoint(pal_store *st, int64_t id, int64_t fence, const char *checkpoint,
			 pal_tstate *state, char *err, size_t errlen)
{
	char i[24], f[24];
	snprintf(i, sizeof i, "%" PRId64, id);
	snprintf(f, sizeof f, "%" PRId64, fence);
	const char *p[] = { i, f, checkpoint };
	PGresult *r = pal__store_query(
	    st, "SELECT palisade_trigger_checkpoint($1::bigint, $2::bigint, $3::jsonb)", 3, p, err,
	    errlen);
	if (!r)
		return PAL_EDB;
	if (PQgetisnull(r, 0, 0)) {
		PQclear(r);
		snprintf(err, errlen, "trigger %s: checkpoint rejected, token %s no longer holds it", i, f);
		return PAL_ESTALE;
	}
	if (pal_tstate_parse(PQgetvalue(r, 0, 0), state))
		*state = PAL_TS_RUNNING;
	PQclear(r);
	return PAL_OK;
}
