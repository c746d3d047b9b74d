/*
 * retention.c - one round of retention: partition maintenance of triggers
 * and attempts (palisade_retention() of sql/010_partitioning.sql), then the
 * history part, slices of misfires and audit_log
 * (palisade_history_retention() of sql/013_history_retention.sql), and the
 * retention horizon.
 *
 * The partition round is one statement, hence one transaction: the
 * function takes the cluster-wide advisory lock, creates ranges ahead,
 * drops old ones whose triggers are all terminal and reports what it did,
 * one row per action.  Its DDL waits at most lock_ms for a lock, so a round
 * never queues the executors' claims behind it for long.  Each history
 * slice is a statement of its own (autocommit): row locks of at most
 * `slice` rows, held for milliseconds.
 *
 * A node's round then runs the data backfills of expand steps (datafill.h)
 * for up to PAL_DATAFILL_ROUND_BATCHES batches of `slice` rows, until they
 * are done; `palisade migrate` may have finished them first.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "palisade/datafill.h"
#include "palisade/log.h"
#include "palisade/metrics.h"
#include "palisade/periodic.h"
#include "palisade/retention.h"
#include "palisade/timefmt.h"
#include "store_int.h"

int pal_retention_check(const pal_retention_conf *c, char *err, size_t errlen)
{
	if (c->interval_ms < 1000) {
		snprintf(err, errlen, "retention.partition_interval must be at least 1s");
		return PAL_EINVAL;
	}
	if (c->keep_ms < c->interval_ms) {
		snprintf(err, errlen, "retention.triggers (%lld ms) must be at least "
			 "retention.partition_interval (%lld ms)", (long long)c->keep_ms,
			 (long long)c->interval_ms);
		return PAL_EINVAL;
	}
	if (c->ahead_ms < c->interval_ms) {
		snprintf(err, errlen, "retention.ahead (%lld ms) must be at least "
			 "retention.partition_interval (%lld ms)", (long long)c->ahead_ms,
			 (long long)c->interval_ms);
		return PAL_EINVAL;
	}
	if (c->misfires_ms > 0 && c->misfires_ms < c->keep_ms) {
		snprintf(err, errlen, "retention.misfires (%lld ms) must be at least "
			 "retention.triggers (%lld ms): verify needs the misfire record of every "
			 "instant whose trigger is kept", (long long)c->misfires_ms,
			 (long long)c->keep_ms);
		return PAL_EINVAL;
	}
	return PAL_OK;
}

static void line(pal_retention_report *rep, const char *fmt, const char *a, const char *b,
		 const char *c, const char *d)
{
	size_t n = strlen(rep->lines);
	if (n < sizeof rep->lines - 1)
		snprintf(rep->lines + n, sizeof rep->lines - n, fmt, a, b, c, d);
}

int pal_store_retention(pal_store *st, const pal_retention_conf *c, pal_retention_report *rep,
			char *err, size_t errlen)
{
	memset(rep, 0, sizeof *rep);
	if (pal_retention_check(c, err, errlen))
		return PAL_EINVAL;
	char iv[32], ah[32], kp[32], lk[32];
	snprintf(iv, sizeof iv, "%lld", (long long)c->interval_ms);
	snprintf(ah, sizeof ah, "%lld", (long long)c->ahead_ms);
	snprintf(kp, sizeof kp, "%lld", (long long)c->keep_ms);
	snprintf(lk, sizeof lk, "%lld", (long long)(c->lock_ms > 0 ? c->lock_ms : PAL_RETENTION_LOCK_MS));
	const char *p[] = { iv, ah, kp, lk };
	PGresult *r = pal__store_query(st,
		"SELECT action, coalesce(part, ''), coalesce(to_char(range_from AT TIME ZONE 'UTC',"
		"  'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), '-infinity'),"
		" coalesce(to_char(range_to AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), ''),"
		" coalesce(live, 0), coalesce(bytes, 0),"
		/* a kept range a dependent job reads: which, and above what */
		" CASE WHEN action = 'kept' THEN (SELECT x.reader || ' decides the instants of '"
		"  || x.job_id || ' here above its watermark ' || to_char(x.lo AT TIME ZONE 'UTC',"
		"  'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') FROM palisade_partition_readers(part) x LIMIT 1) END"
		" FROM palisade_retention($1::bigint * interval '1 ms', $2::bigint * interval '1 ms',"
		"  $3::bigint * interval '1 ms', $4::int)", 4, p, err, errlen);
	if (!r)
		return PAL_EDB;
	for (int i = 0; i < PQntuples(r); i++) {
		const char *act = PQgetvalue(r, i, 0), *part = PQgetvalue(r, i, 1);
		const char *from = PQgetvalue(r, i, 2), *to = PQgetvalue(r, i, 3);
		const char *live = PQgetvalue(r, i, 4), *bytes = PQgetvalue(r, i, 5);
		const char *reader = PQgetvalue(r, i, 6);
		if (!strcmp(act, "created")) {
			rep->created++;
			line(rep, "created %s [%s, %s)%s\n", part, from, to, "");
		} else if (!strcmp(act, "dropped")) {
			rep->dropped++;
			rep->dropped_bytes += atoll(bytes);
			line(rep, "dropped %s [%s, %s) %s bytes\n", part, from, to, bytes);
		} else if (!strcmp(act, "reshaped")) {
			rep->reshaped++;
			line(rep, "reshaped %s [%s, %s): empty, another interval%s\n", part, from, to, "");
		} else if (!strcmp(act, "kept")) {
			rep->kept++;
			rep->kept_live += atoll(live);
			if (!rep->first_kept[0])
				snprintf(rep->first_kept, sizeof rep->first_kept, "%s", part);
			char what[320];
			if (reader[0]) {
				rep->kept_read++;
				if (!rep->first_reader[0])
					snprintf(rep->first_reader, sizeof rep->first_reader, "%s",
						 reader);
			}
			snprintf(what, sizeof what, "%s live triggers%s%s", live, reader[0] ? "; " : "",
				 reader);
			line(rep, "kept %s [%s, %s): %s\n", part, from, to, what);
		} else {
			rep->busy++;
			line(rep, "busy %s%s%s%s\n", part[0] ? part : "(another round holds the lock)",
			     "", "", "");
		}
	}
	PQclear(r);
	return PAL_OK;
}

/* Slices of one table until one is not full; adds to *N, sets *BUSY. */
static int history_table(pal_store *st, const char *table, int64_t keep_ms, int32_t slice,
			 int64_t *n, bool *busy, bool *more, char *cutoff, size_t cutlen, char *err,
			 size_t errlen)
{
	char kp[32], sl[16];
	snprintf(kp, sizeof kp, "%lld", (long long)keep_ms);
	snprintf(sl, sizeof sl, "%d", slice > 0 ? slice : 5000);
	const char *p[] = { table, kp, sl };
	*busy = *more = false;
	for (int i = 0; i < PAL_HISTORY_SLICES_MAX; i++) {
		PGresult *r = pal__store_query(st,
			"SELECT deleted, more, busy, to_char(cutoff AT TIME ZONE 'UTC',"
			"  'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"
			" FROM palisade_history_retention($1, $2::bigint * interval '1 ms', $3::int)",
			3, p, err, errlen);
		if (!r)
			return PAL_EDB;
		*n += atoll(PQgetvalue(r, 0, 0));
		*more = PQgetvalue(r, 0, 1)[0] == 't';
		*busy = PQgetvalue(r, 0, 2)[0] == 't';
		snprintf(cutoff, cutlen, "%s", PQgetvalue(r, 0, 3));
		PQclear(r);
		if (!*more)
			break;
	}
	return PAL_OK;
}

/* The request ids manual runs used more than KEEP_MS ago (sql/046), SLICE
 * rows per statement, until a slice is not full or HISTORY_SLICES_MAX. */
static int request_ids_trim(pal_store *st, int64_t keep_ms, int32_t slice, int64_t *n,
			    bool *more, char *err, size_t errlen)
{
	char kp[32], sl[16];
	snprintf(kp, sizeof kp, "%lld", (long long)keep_ms);
	snprintf(sl, sizeof sl, "%d", slice > 0 ? slice : 5000);
	const char *p[] = { kp, sl };
	*more = false;
	for (int i = 0; i < PAL_HISTORY_SLICES_MAX; i++) {
		PGresult *r = pal__store_query(st,
			"DELETE FROM request_ids WHERE ctid = ANY (ARRAY(SELECT ctid FROM request_ids"
			"  WHERE used_at < now() - $1::bigint * interval '1 ms' LIMIT $2::int))",
			2, p, err, errlen);
		if (!r)
			return PAL_EDB;
		int64_t k = atoll(PQcmdTuples(r));
		PQclear(r);
		*n += k;
		*more = k >= atoll(sl);
		if (!*more)
			break;
	}
	return PAL_OK;
}

int pal_store_history_retention(pal_store *st, const pal_retention_conf *c,
				pal_retention_report *rep, char *err, size_t errlen)
{
	static const char *const names[] = { "misfires", "audit_log" };
	const int64_t keep[] = { c->misfires_ms, c->audit_ms };
	int64_t *count[] = { &rep->misfires_deleted, &rep->audit_deleted };
	for (int t = 0; t < 2; t++) {
		if (keep[t] <= 0)
			continue;
		int64_t n = 0;
		bool busy, more;
		char cut[40] = "", num[32];
		int rc = history_table(st, names[t], keep[t], c->slice, &n, &busy, &more, cut,
				       sizeof cut, err, errlen);
		if (rc)
			return rc;
		*count[t] += n;
		rep->history_busy += busy;
		rep->history_more = rep->history_more || more;
		snprintf(num, sizeof num, "%lld", (long long)n);
		if (busy)
			line(rep, "busy %s (another round holds its slice)%s%s%s\n", names[t], "", "",
			     "");
		else
			line(rep, "deleted %s %s rows before %s%s\n", num, names[t], cut,
			     more ? " (slice limit reached: more next round)" : "");
	}
	if (c->request_ids_ms > 0) {
		int64_t kr = c->request_ids_ms > c->keep_ms ? c->request_ids_ms : c->keep_ms, n = 0;
		bool more;
		char num[32], age[32];
		int rc = request_ids_trim(st, kr, c->slice, &n, &more, err, errlen);
		if (rc)
			return rc;
		rep->request_ids_deleted += n;
		rep->history_more = rep->history_more || more;
		snprintf(num, sizeof num, "%lld", (long long)n);
		line(rep, "deleted %s request_ids rows used more than %s ago%s%s\n", num,
		     pal_fmt_duration(kr, age, sizeof age),
		     more ? " (slice limit reached: more next round)" : "", "");
	}
	return PAL_OK;
}

int pal_store_retention_horizon(pal_store *st, bool *have, int64_t *at_ms, char *err,
				size_t errlen)
{
	*have = false;
	*at_ms = 0;
	PGresult *r = pal__store_query(st,
		"SELECT floor(extract(epoch FROM palisade_retention_horizon()) * 1000)::bigint",
		0, NULL, err, errlen);
	if (!r)
		return PAL_EDB;
	if (PQntuples(r) == 1 && !PQgetisnull(r, 0, 0)) {
		*have = true;
		*at_ms = atoll(PQgetvalue(r, 0, 0));
	}
	PQclear(r);
	return PAL_OK;
}

/* ---- the node's worker: one round every check_ms on its own connection ---- */

struct pal_retention_worker {
	char *conninfo;
	char *direct; /* conf.direct_conninfo, owned (NULL: none) */
	pal_retention_conf conf;
	pal_metrics *m;
	pal_store *st;	   /* the thread's own connection, opened on first use */
	pal_periodic *th; /* calls worker_round every check_ms */
	bool filled;	  /* the data backfills were seen done: not asked again */
	atomic_bool stopping; /* the node stops: a round's backfill ends at its next batch */
};

/* What a round's part of the data backfills does at most: batches of
 * min(retention.delete_slice, PAL_DATAFILL_BATCH_MAX) rows, this many, for
 * this long (a batch under way is let finish), so that a round, and a node
 * stopping while one is under way, wait for a few seconds at most.  The
 * jobs_ref build after them waits for every older transaction: it holds up
 * the round as long, but a stopping node cancels it (worker_stopping). */
#define PAL_DATAFILL_ROUND_BATCHES 100
#define PAL_DATAFILL_ROUND_MS 2000

static bool worker_stopping(void *arg)
{
	struct pal_retention_worker *w = arg;
	return atomic_load(&w->stopping);
}

/* Part of a round: some batches of the data backfills, logged. */
static void worker_fill(struct pal_retention_worker *w)
{
	char err[1024] = "";
	pal_datafill_report fr;
	int slice = w->conf.slice > 0 ? w->conf.slice : PAL_DATAFILL_BATCH_MAX;
	pal_datafill_limits lim = { .batch = slice < PAL_DATAFILL_BATCH_MAX ? slice
									 : PAL_DATAFILL_BATCH_MAX,
				    .max_batches = PAL_DATAFILL_ROUND_BATCHES,
				    .max_ms = PAL_DATAFILL_ROUND_MS,
				    .wait_ms = PAL_DATAFILL_ROUND_MS,
				    .stop = worker_stopping,
				    .stop_arg = w };
	/* Through a transaction pooler the jobs_ref build's session lock would
	 * stay on one server connection: the backfills run on a direct
	 * connection of the round's own, until they are done. */
	pal_store *st = w->st, *direct = NULL;
	if (pal_store_pooled(w->st) && w->direct) {
		if (pal_store_open_session(w->direct, &direct, err, sizeof err)) {
			pal_log(PAL_LOG_WARN, "retention.backfill_failed", "{s:s}", "error", err);
			return;
		}
		st = direct;
	}
	int rc = pal_store_datafill(st, &lim, &fr, err, sizeof err);
	pal_store_close(direct);
	if (rc) {
		pal_log(PAL_LOG_WARN, "retention.backfill_failed", "{s:s}", "error", err);
		return;
	}
	w->filled = fr.done;
	for (int i = 0; i < fr.n; i++)
		pal_log(PAL_LOG_INFO, "retention.backfill", "{s:s, s:I, s:i, s:i, s:s, s:b, s:b}",
			"step", fr.s[i].step, "filled", (json_int_t)fr.s[i].filled, "batches",
			fr.s[i].batches, "batch", lim.batch, "cursor", fr.s[i].cursor, "finished",
			fr.s[i].finished, "waiting", fr.waiting && !fr.s[i].finished);
}

#define F_ROUNDS "palisade_retention_rounds_total"
#define F_DROPPED "palisade_retention_dropped_partitions_total"
#define F_DROPPED_BYTES "palisade_retention_dropped_bytes_total"
#define F_KEPT "palisade_retention_kept_partitions"
#define F_KEPT_LIVE "palisade_retention_kept_live_triggers"
#define F_HISTORY "palisade_retention_deleted_rows_total"

static void worker_round(void *arg)
{
	struct pal_retention_worker *w = arg;
	char err[1024] = "";
	if (!w->st && pal_store_open(w->conninfo, &w->st, err, sizeof err)) {
		pal_log(PAL_LOG_WARN, "retention.failed", "{s:s}", "error", err);
		pal_metric_inc(w->m, F_ROUNDS, "result=\"failed\"", 1);
		return;
	}
	pal_retention_report rep;
	if (pal_store_retention(w->st, &w->conf, &rep, err, sizeof err)) {
		pal_log(PAL_LOG_WARN, "retention.failed", "{s:s}", "error", err);
		pal_metric_inc(w->m, F_ROUNDS, "result=\"failed\"", 1);
		pal_store_close(w->st);
		w->st = NULL;
		return;
	}
	if (pal_store_history_retention(w->st, &w->conf, &rep, err, sizeof err)) {
		pal_log(PAL_LOG_WARN, "retention.failed", "{s:s}", "error", err);
		pal_metric_inc(w->m, F_ROUNDS, "result=\"failed\"", 1);
		pal_store_close(w->st);
		w->st = NULL;
		return;
	}
	pal_metric_inc(w->m, F_HISTORY, "table=\"misfires\"", (double)rep.misfires_deleted);
	pal_metric_inc(w->m, F_HISTORY, "table=\"audit_log\"", (double)rep.audit_deleted);
	pal_metric_inc(w->m, F_HISTORY, "table=\"request_ids\"", (double)rep.request_ids_deleted);
	if (!w->filled)
		worker_fill(w);
	bool busy_only = rep.busy && !rep.created && !rep.dropped && !rep.kept && !rep.reshaped &&
			 !rep.misfires_deleted && !rep.audit_deleted && !rep.request_ids_deleted;
	pal_metric_inc(w->m, F_ROUNDS, busy_only ? "result=\"busy\"" : "result=\"done\"", 1);
	if (busy_only)
		return;
	pal_metric_inc(w->m, F_DROPPED, NULL, rep.dropped);
	pal_metric_inc(w->m, F_DROPPED_BYTES, NULL, (double)rep.dropped_bytes);
	pal_metric_set(w->m, F_KEPT, NULL, rep.kept);
	pal_metric_set(w->m, F_KEPT_LIVE, NULL, (double)rep.kept_live);
	if (rep.created || rep.dropped || rep.busy || rep.reshaped || rep.misfires_deleted ||
	    rep.audit_deleted || rep.request_ids_deleted)
		pal_log(PAL_LOG_INFO, "retention.round",
			"{s:i, s:i, s:I, s:i, s:i, s:i, s:I, s:I, s:s}", "created", rep.created,
			"dropped", rep.dropped, "dropped_bytes", (json_int_t)rep.dropped_bytes, "kept",
			rep.kept, "busy", rep.busy, "reshaped", rep.reshaped, "misfires_deleted",
			(json_int_t)rep.misfires_deleted, "audit_deleted",
			(json_int_t)rep.audit_deleted, "actions", rep.lines);
	if (rep.kept)
		pal_log(PAL_LOG_WARN, "retention.kept", "{s:i, s:I, s:i, s:s, s:s}", "partitions",
			rep.kept, "live_triggers", (json_int_t)rep.kept_live, "read_after",
			rep.kept_read, "oldest", rep.first_kept, "reader", rep.first_reader);
}

int pal_retention_start(const char *conninfo, const pal_retention_conf *conf, int64_t check_ms,
			pal_metrics *m, pal_retention_worker **out, char *err, size_t errlen)
{
	*out = NULL;
	if (pal_retention_check(conf, err, errlen))
		return PAL_EINVAL;
	struct pal_retention_worker *w = calloc(1, sizeof *w);
	if (!w || !(w->conninfo = strdup(conninfo ? conninfo : ""))) {
		free(w);
		return PAL_ENOMEM;
	}
	w->conf = *conf;
	w->conf.direct_conninfo = NULL;
	if (conf->direct_conninfo && *conf->direct_conninfo &&
	    !(w->direct = strdup(conf->direct_conninfo))) {
		free(w->conninfo);
		free(w);
		return PAL_ENOMEM;
	}
	w->m = m;
	pal_metric_declare(m, F_ROUNDS, PAL_METRIC_COUNTER,
			   "partition maintenance rounds by result (done, busy: another node's "
			   "round held the lock, failed)");
	pal_metric_declare(m, F_DROPPED, PAL_METRIC_COUNTER,
			   "time ranges of triggers and attempts dropped by this node");
	pal_metric_declare(m, F_DROPPED_BYTES, PAL_METRIC_COUNTER,
			   "bytes the partitions dropped by this node held");
	pal_metric_declare(m, F_KEPT, PAL_METRIC_GAUGE,
			   "ranges past retention kept at the last round because they hold a live "
			   "trigger or a trigger a dependent job still reads (after:)");
	pal_metric_declare(m, F_KEPT_LIVE, PAL_METRIC_GAUGE,
			   "live triggers in those kept ranges at the last round");
	pal_metric_declare(m, F_HISTORY, PAL_METRIC_COUNTER,
			   "rows of misfires and audit_log deleted by this node's rounds (past "
			   "retention.misfires, retention.audit)");
	pal_metric_inc(m, F_HISTORY, "table=\"misfires\"", 0);
	pal_metric_inc(m, F_HISTORY, "table=\"audit_log\"", 0);
	pal_metric_inc(m, F_ROUNDS, "result=\"done\"", 0);
	pal_metric_inc(m, F_ROUNDS, "result=\"busy\"", 0);
	pal_metric_inc(m, F_ROUNDS, "result=\"failed\"", 0);
	pal_metric_inc(m, F_DROPPED, NULL, 0);
	pal_metric_inc(m, F_DROPPED_BYTES, NULL, 0);
	pal_metric_set(m, F_KEPT, NULL, 0);
	pal_metric_set(m, F_KEPT_LIVE, NULL, 0);
	if (pal_periodic_start(worker_round, w, check_ms > 0 ? check_ms : 60000, &w->th)) {
		snprintf(err, errlen, "cannot start the retention thread");
		pal_retention_stop(w);
		return PAL_EIO;
	}
	*out = w;
	return PAL_OK;
}

void pal_retention_stop(pal_retention_worker *w)
{
	if (!w)
		return;
	atomic_store(&w->stopping, true);
	pal_periodic_stop(w->th);
	pal_store_close(w->st);
	free(w->conninfo);
	free(w->direct);
	free(w);
}
