/*
 * lock_probe.c - races the executor's lease renewal against its result
 * commit on the same running triggers, for tests/integration/test_lock_order.sh.
 *
 *   lock_probe --pg CONNINFO --job JOB --rounds R --rows N
 *
 * Each round plans N new triggers of JOB (pending, then running under the
 * lease of node "lock-probe" with a token each), then two threads, each with
 * a connection of its own, start together: one renews the N leases (pal_store_renew,
 * the ids in descending order, as the lease table may hand them over), the
 * other commits them succeeded (pal_store_commit_results, as the result
 * connection does).  Both lock the same rows; locked in different orders
 * they deadlock and the server aborts one of them.  Prints one line:
 *   rounds=R deadlocks=D other_errors=E committed=C
 * and the first error of each kind on stderr.  Exit 0 when it ran (the test
 * judges the counts), 1 when it could not.
 */
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/execstore.h"
#include "palisade/store.h"
#include "../../src/store/store_int.h"

typedef struct race {
	pthread_barrier_t go;
	pal_store *renew_st, *commit_st;
	pal_lease_ref *refs;
	pal_result *res;
	int n;
	char renew_err[1024], commit_err[1024];
	int renew_rc, commit_rc;
} race;

static void *renew_side(void *p)
{
	race *x = p;
	pal_lease_state *out = calloc((size_t)x->n, sizeof *out);
	int n_out = 0;
	pthread_barrier_wait(&x->go);
	x->renew_rc = pal_store_renew(x->renew_st, "lock-probe", 60000, x->refs, x->n, out, &n_out,
				      x->renew_err, sizeof x->renew_err);
	free(out);
	return NULL;
}

static void *commit_side(void *p)
{
	race *x = p;
	pthread_barrier_wait(&x->go);
	x->commit_rc = pal_store_commit_results(x->commit_st, x->res, x->n, x->commit_err,
						sizeof x->commit_err);
	return NULL;
}

static int setup_round(pal_store *st, const char *job, int round, int n, race *x)
{
	char sql[2048], err[1024];
	/* Instants of today, a minute back, distinct per round and row. */
	snprintf(sql, sizeof sql,
		 "WITH ins AS (INSERT INTO triggers (job_id, version, scheduled_at, partition, source,"
		 "   tenant, resource_group, due_at, shard)"
		 " SELECT '%s', 1, t, 0, 'schedule', 'default', 'default', t, 0 FROM ("
		 "   SELECT greatest(date_trunc('day', now()), now() - interval '1 minute')"
		 "     + (%d * %d + g) * interval '1 microsecond' AS t FROM generate_series(1, %d) g) s"
		 " RETURNING id)"
		 " SELECT count(*) FROM ins",
		 job, round, n, n);
	PGresult *r = pal__store_query(st, sql, 0, NULL, err, sizeof err);
	if (!r) {
		fprintf(stderr, "lock_probe: plan round %d: %s\n", round, err);
		return -1;
	}
	PQclear(r);
	snprintf(sql, sizeof sql,
		 "UPDATE triggers SET state = 'running', lease_owner = 'lock-probe',"
		 " lease_until = clock_timestamp() + interval '10 minutes',"
		 " fence = nextval('palisade_fence'), attempt_count = 1"
		 " WHERE job_ref = (SELECT ref FROM jobs WHERE job_id = '%s') AND state = 'pending'"
		 " RETURNING id, fence, floor(extract(epoch FROM scheduled_at))::bigint",
		 job);
	r = pal__store_query(st, sql, 0, NULL, err, sizeof err);
	if (!r) {
		fprintf(stderr, "lock_probe: lease round %d: %s\n", round, err);
		return -1;
	}
	int rows = PQntuples(r);
	x->n = rows;
	for (int i = 0; i < rows; i++) {
		int64_t id = strtoll(PQgetvalue(r, i, 0), NULL, 10);
		int64_t fence = strtoll(PQgetvalue(r, i, 1), NULL, 10);
		x->res[i] = (pal_result){ .id = id, .fence = fence, .state = PAL_TS_SUCCEEDED,
					  .error_class = "", .next_delay_ms = PAL_NEXT_NONE,
					  .idempotency_key = "", .ticket_reason = "",
					  .at = strtoll(PQgetvalue(r, i, 2), NULL, 10) };
		x->refs[i] = (pal_lease_ref){ id, fence };
	}
	PQclear(r);
	/* Renewal: the ids in descending order. */
	for (int i = 0, j = rows - 1; i < j; i++, j--) {
		pal_lease_ref t = x->refs[i];
		x->refs[i] = x->refs[j];
		x->refs[j] = t;
	}
	if (rows != n) {
		fprintf(stderr, "lock_probe: round %d: %d of %d triggers leased\n", round, rows, n);
		return -1;
	}
	return 0;
}

/* The database's clock_timestamp() as text into BUF; -1 on failure
 * (printed). */
static int db_now(pal_store *st, char *buf, size_t len)
{
	char err[1024];
	PGresult *r = pal__store_query(st, "SELECT clock_timestamp()", 0, NULL, err, sizeof err);
	if (!r) {
		fprintf(stderr, "lock_probe: clock: %s\n", err);
		return -1;
	}
	snprintf(buf, len, "%s", PQgetvalue(r, 0, 0));
	PQclear(r);
	return 0;
}

int main(int argc, char **argv)
{
	const char *pg = NULL, *job = NULL;
	int rounds = 20, rows = 2000;
	static const struct option opts[] = {
		{ "pg", required_argument, NULL, 'p' },
		{ "job", required_argument, NULL, 'j' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "rows", required_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 },
	};
	int o;
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'p': pg = optarg; break;
		case 'j': job = optarg; break;
		case 'r': rounds = atoi(optarg); break;
		case 'n': rows = atoi(optarg); break;
		default: return 1;
		}
	}
	if (!pg || !job || rounds < 1 || rows < 2) {
		fprintf(stderr, "usage: lock_probe --pg CONNINFO --job JOB [--rounds R] [--rows N]\n");
		return 1;
	}
	char err[1024];
	pal_store *setup = NULL;
	race x = { 0 };
	if (pal_store_open(pg, &setup, err, sizeof err) ||
	    pal_store_open(pg, &x.renew_st, err, sizeof err) ||
	    pal_store_open(pg, &x.commit_st, err, sizeof err) ||
	    pal_store_prepare_commits(x.commit_st, err, sizeof err) ||
	    /* the busy check holds its transaction open while the renewal runs
	     * on another session: on a loaded machine longer than the 5 s a
	     * store session may idle in a transaction (conn.c) */
	    pal__store_exec(setup, "SET idle_in_transaction_session_timeout = 0", err,
			    sizeof err)) {
		fprintf(stderr, "lock_probe: %s\n", err);
		return 1;
	}
	x.refs = calloc((size_t)rows, sizeof *x.refs);
	x.res = calloc((size_t)rows, sizeof *x.res);
	int deadlocks = 0, other = 0;
	long committed = 0;
	bool shown_dl = false, shown_other = false;
	for (int round = 0; round < rounds; round++) {
		if (setup_round(setup, job, round, rows, &x))
			return 1;
		pthread_t a, b;
		pthread_barrier_init(&x.go, NULL, 2);
		x.renew_err[0] = x.commit_err[0] = '\0';
		pthread_create(&a, NULL, renew_side, &x);
		pthread_create(&b, NULL, commit_side, &x);
		pthread_join(a, NULL);
		pthread_join(b, NULL);
		pthread_barrier_destroy(&x.go);
		const char *errs[2] = { x.renew_rc ? x.renew_err : NULL,
					x.commit_rc ? x.commit_err : NULL };
		for (int k = 0; k < 2; k++) {
			if (!errs[k])
				continue;
			bool dl = strstr(errs[k], "deadlock") != NULL;
			deadlocks += dl;
			other += !dl;
			bool *shown = dl ? &shown_dl : &shown_other;
			if (!*shown) {
				fprintf(stderr, "lock_probe: round %d, %s: %s\n", round,
					k ? "commit" : "renew", errs[k]);
				*shown = true;
			}
		}
		/* A commit the server aborted leaves its triggers running: the
		 * next rounds plan new ones; finish these for the count. */
		if (x.commit_rc) {
			if (pal_store_commit_results(x.commit_st, x.res, x.n, err, sizeof err)) {
				fprintf(stderr, "lock_probe: commit again: %s\n", err);
				return 1;
			}
		}
		for (int i = 0; i < x.n; i++)
			committed += x.res[i].committed;
	}
	printf("rounds=%d deadlocks=%d other_errors=%d committed=%ld\n", rounds, deadlocks, other,
	       committed);
	/* Busy rows: another transaction holds the lock of every other row
	 * (as a commit finishing them would); the renewal must not wait for
	 * it, must report those rows held but busy, and must not move their
	 * lease_until. */
	if (setup_round(setup, job, rounds, rows, &x))
		return 1;
	char sql[512];
	snprintf(sql, sizeof sql,
		 "SELECT count(*) FROM (SELECT id FROM triggers"
		 " WHERE job_ref = (SELECT ref FROM jobs WHERE job_id = '%s') AND state = 'running'"
		 " AND id %% 2 = 0 FOR UPDATE) l",
		 job);
	PGresult *r;
	/* The database's time before the renewal was sent and after its
	 * answer, read outside the open transaction (which the server ends
	 * after 5 s idle): the lease ends it writes lie between the two, plus
	 * the lease. */
	char before[64], after[64];
	if (db_now(x.renew_st, before, sizeof before))
		return 1;
	if (pal__store_exec(setup, "BEGIN", err, sizeof err) ||
	    !(r = pal__store_query(setup, sql, 0, NULL, err, sizeof err))) {
		fprintf(stderr, "lock_probe: busy check: %s\n", err);
		return 1;
	}
	long locked = strtol(PQgetvalue(r, 0, 0), NULL, 10);
	PQclear(r);
	/* A renewal that waits for the locks would wait for this thread: a
	 * lock timeout turns that into an error instead of a hang. */
	if (pal__store_exec(x.renew_st, "SET lock_timeout = '5s'", err, sizeof err)) {
		fprintf(stderr, "lock_probe: lock_timeout: %s\n", err);
		return 1;
	}
	pal_lease_state *out = calloc((size_t)x.n, sizeof *out);
	int n_out = 0;
	if (pal_store_renew(x.renew_st, "lock-probe", 600000, x.refs, x.n, out, &n_out, err,
			    sizeof err)) {
		fprintf(stderr, "lock_probe: busy renewal: %s\n", err);
		return 1;
	}
	if (pal__store_exec(setup, "ROLLBACK", err, sizeof err)) {
		fprintf(stderr, "lock_probe: rollback: %s\n", err);
		return 1;
	}
	if (db_now(x.renew_st, after, sizeof after))
		return 1;
	int renewed = 0, busy = 0, busy_odd = 0;
	for (int i = 0; i < n_out; i++) {
		busy += out[i].busy;
		renewed += !out[i].busy;
		busy_odd += out[i].busy && out[i].id % 2 != 0;
	}
	free(out);
	/* Renewed to 10 minutes: rows leased for 10 minutes at set-up moved
	 * on; the busy ones did not.  The renewed ones share one end, from
	 * the statement's start: not before the renewal was sent, not after
	 * its answer. */
	snprintf(sql, sizeof sql,
		 "SELECT count(*) FILTER (WHERE id %% 2 = 0 AND lease_until > clock_timestamp() + interval '10 minutes'),"
		 " count(*) FILTER (WHERE id %% 2 = 1 AND lease_until > clock_timestamp() + interval '9 minutes'),"
		 " count(DISTINCT lease_until) FILTER (WHERE id %% 2 = 1),"
		 " count(*) FILTER (WHERE id %% 2 = 1 AND (lease_until < $1::timestamptz + interval '10 minutes'"
		 "   OR lease_until > $2::timestamptz + interval '10 minutes'))"
		 " FROM trigger_jobs WHERE job_id = '%s' AND state = 'running'",
		 job);
	const char *span[] = { before, after };
	if (!(r = pal__store_query(setup, sql, 2, span, err, sizeof err))) {
		fprintf(stderr, "lock_probe: lease check: %s\n", err);
		return 1;
	}
	printf("busy_check rows=%d locked=%ld renewed=%d busy=%d busy_unlocked=%d lost=%d"
	       " busy_extended=%s unlocked_extended=%s renewed_ends=%s renewed_outside=%s\n",
	       x.n, locked, renewed, busy, busy_odd, x.n - n_out, PQgetvalue(r, 0, 0),
	       PQgetvalue(r, 0, 1), PQgetvalue(r, 0, 2), PQgetvalue(r, 0, 3));
	PQclear(r);
	pal_store_close(setup);
	pal_store_close(x.renew_st);
	pal_store_close(x.commit_st);
	free(x.refs);
	free(x.res);
	return 0;
}
