/*
 * retention.c - the sink's key retention: forget the keys nobody can send
 * again (docs/sink.md, "Key retention"; docs/protocol.md, "How long to keep
 * keys").
 *
 * A key is forgotten - its sink_keys row and its sink_applies rows,
 * together - once its last request (sink_keys.seen_at, moved by every
 * apply and replay) and its effect (applied_at, updated_at) are older than
 * --key-retention.  A key with a newer request or effect is never touched,
 * nor one an apply holds right now: the slice takes the key's advisory
 * lock of the apply path (step 0 of effect.c) with a try, and locks the
 * key rows SKIP LOCKED, so a key under way is passed over and looked at
 * again next pass.
 *
 * Bounded: one slice is one statement, hence one short transaction, of at
 * most --retention-slice keys, found oldest first through sink_keys_seen_at
 * (sql/sink/006_keys.sql); a pass runs slices until one is not full.
 * Before them, a pass moves the keys still in the tables of before
 * 006_keys.sql into the new ones (sink_adopt_batch(), slices of the same
 * size): an upgraded sink drains its old tables in the background, for the
 * contract step that drops them.
 *
 * Threading: the periodic pass is one thread (pal_periodic) with a
 * PostgreSQL connection of its own (never one of the request pool's),
 * woken early only to stop.
 * Ownership: pal__sink_retention_start returns the thread's handle, freed
 * by pal__sink_retention_stop.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include <libpq-fe.h>
#include "palisade/log.h"
#include "palisade/periodic.h"
#include "palisade/timefmt.h"
#include "retention.h"
#include "sink_int.h"

#define M_DELETED "palisade_sink_retention_deleted_total"
#define M_PASSES "palisade_sink_retention_passes_total"
#define M_KEEP "palisade_sink_key_retention_seconds"
#define M_ADOPTED "palisade_sink_retention_adopted_total"

/* $1 --key-retention in ms, $2 slice.  The cutoff is taken from the
 * database's clock, the one that wrote seen_at, applied_at and updated_at
 * (clock_timestamp()), once per statement: a sink host whose clock is
 * ahead must not forget keys early by its skew.  A key's last request
 * (seen_at) is never older than its effect's applied_at or updated_at
 * (every apply is a request); both are checked all the same, for a row
 * edited by hand.  Keys still in the tables of before 006_keys.sql are
 * adopted first (adopt() below), then forgotten here. */
static const char SQL_SLICE[] =
    "WITH t AS MATERIALIZED (SELECT clock_timestamp() - $1::bigint * interval '1 millisecond'"
    "    AS cut),"
    "  c AS (SELECT k.idempotency_key AS key FROM sink_keys k"
    "    WHERE k.seen_at < (SELECT cut FROM t)"
    "    ORDER BY k.seen_at LIMIT $2::int),"
    "  lk AS (SELECT k.id, k.idempotency_key AS key FROM sink_keys k"
    "    WHERE k.idempotency_key IN (SELECT key FROM c)"
    "      AND k.seen_at < (SELECT cut FROM t)"
    "      AND coalesce(k.updated_at, k.applied_at) < (SELECT cut FROM t)"
    "      AND pg_try_advisory_xact_lock(hashtextextended(k.idempotency_key, 0))"
    "    FOR UPDATE SKIP LOCKED),"
    "  dl AS (DELETE FROM sink_applies a WHERE a.key_id IN (SELECT id FROM lk) RETURNING 1),"
    "  dk AS (DELETE FROM sink_keys k WHERE k.idempotency_key IN (SELECT key FROM lk)"
    "    RETURNING 1)"
    " SELECT (SELECT count(*) FROM dk), (SELECT count(*) FROM dl), (SELECT count(*) FROM dk)";

void pal__sink_retention_defaults(sink_retention_opts *o)
{
	memset(o, 0, sizeof *o);
	if (pal_parse_duration_ms(SINK_KEY_RETENTION_DEFAULT, &o->keep_ms))
		o->keep_ms = SINK_KEY_RETENTION_MIN_MS * 7;
	o->interval_ms = 60000;
	o->slice = 1000;
}

int pal__sink_retention_opt(sink_retention_opts *o, int opt, const char *arg)
{
	int64_t v;
	switch (opt) {
	case SINK_OPT_KEY_RETENTION:
		if (!strcmp(arg, "0")) {
			o->keep_ms = 0;
			return 0;
		}
		if (pal_parse_duration_ms(arg, &v) || v < SINK_KEY_RETENTION_MIN_MS) {
			fprintf(
			    stderr,
			    "palisade-sink: --key-retention \"%s\": expected a duration of at "
			    "least 1d, or 0 (keep every key): a key forgotten earlier than the "
			    "longest retry or catch-up horizon of a job applies its effect twice\n",
			    arg);
			return -1;
		}
		o->keep_ms = v;
		return 0;
	case SINK_OPT_RETENTION_INTERVAL:
		if (pal_parse_duration_ms(arg, &v) || v < 1000 || v > 24LL * 3600 * 1000) {
			fprintf(stderr,
				"palisade-sink: --retention-interval \"%s\": expected a "
				"duration from 1s to 1d\n",
				arg);
			return -1;
		}
		o->interval_ms = v;
		return 0;
	case SINK_OPT_RETENTION_SLICE:
		if (pal__sink_parse_int(arg, 1, 100000, &v) != PAL_OK) {
			fprintf(stderr,
				"palisade-sink: --retention-slice \"%s\": expected an "
				"integer in 1..100000\n",
				arg);
			return -1;
		}
		o->slice = (int)v;
		return 0;
	case SINK_OPT_RETENTION_ONCE:
		o->once = true;
		return 0;
	default:
		return 1;
	}
}

/* Slices of SQL_SLICE on PG until one deletes fewer keys than a slice (a
 * key passed over - under way, or with an effect newer than its last
 * request - ends the pass, so a pass never spins on it); adds to the
 * counts of keys and ledger rows. */
static int slices(PGconn *pg, const sink_retention_opts *o, int64_t *keys, int64_t *ledger,
		  char *err, size_t errlen)
{
	char keep[32], sl[16];
	snprintf(keep, sizeof keep, "%lld", (long long)o->keep_ms);
	snprintf(sl, sizeof sl, "%d", o->slice);
	const char *params[] = {keep, sl};
	for (;;) {
		PGresult *r = PQexecParams(pg, SQL_SLICE, 2, NULL, params, NULL, NULL, 0);
		if (PQresultStatus(r) != PGRES_TUPLES_OK) {
			snprintf(err, errlen, "key retention: %s",
				 r ? PQresultErrorMessage(r) : PQerrorMessage(pg));
			err[strcspn(err, "\n")] = '\0';
			PQclear(r);
			return PAL_EDB;
		}
		*keys += atoll(PQgetvalue(r, 0, 0));
		*ledger += atoll(PQgetvalue(r, 0, 1));
		long long done = atoll(PQgetvalue(r, 0, 2));
		PQclear(r);
		if (done < o->slice)
			return PAL_OK;
	}
}

/* Adopts the keys still in the tables of before 006_keys.sql, SLICE keys
 * per statement (sink_adopt_batch(), each its own short transaction), until
 * none is left or a statement moved none of the keys it found (each held by
 * an apply, which adopts it); adds to *ADOPTED. */
static int adopt(PGconn *pg, int slice, int64_t *adopted, char *err, size_t errlen)
{
	char sl[16];
	snprintf(sl, sizeof sl, "%d", slice);
	const char *params[] = {sl};
	for (;;) {
		PGresult *r =
		    PQexecParams(pg, "SELECT keys_found, keys_moved FROM sink_adopt_batch($1::int)",
				 1, NULL, params, NULL, NULL, 0);
		if (PQresultStatus(r) != PGRES_TUPLES_OK) {
			snprintf(err, errlen, "adopting the keys of the old tables: %s",
				 r ? PQresultErrorMessage(r) : PQerrorMessage(pg));
			err[strcspn(err, "\n")] = '\0';
			PQclear(r);
			return PAL_EDB;
		}
		long long found = atoll(PQgetvalue(r, 0, 0)), moved = atoll(PQgetvalue(r, 0, 1));
		PQclear(r);
		*adopted += moved;
		if (found == 0 || moved == 0)
			return PAL_OK;
	}
}

/* One pass: the old tables' keys adopted, then the slices of SQL_SLICE. */
static int pass_on(PGconn *pg, const sink_retention_opts *o, int64_t *keys, int64_t *adopted,
		   int64_t *ledger, char *err, size_t errlen)
{
	*keys = *adopted = *ledger = 0;
	int rc = adopt(pg, o->slice, adopted, err, errlen);
	if (rc == PAL_OK && o->keep_ms > 0)
		rc = slices(pg, o, keys, ledger, err, errlen);
	return rc;
}

int pal__sink_retention_pass(const char *conninfo, const sink_retention_opts *o, int64_t *keys,
			     int64_t *adopted, int64_t *ledger, char *err, size_t errlen)
{
	*keys = *adopted = *ledger = 0;
	PGconn *pg;
	int rc = pal__sink_connect(conninfo, &pg, err, errlen);
	if (rc != PAL_OK)
		return rc;
	rc = pass_on(pg, o, keys, adopted, ledger, err, errlen);
	PQfinish(pg);
	return rc;
}

int pal__sink_retention_once(const char *conninfo, const sink_retention_opts *o)
{
	char err[512];
	int64_t k, a, l;
	if (pal__sink_retention_pass(conninfo, o, &k, &a, &l, err, sizeof err) != PAL_OK) {
		pal_log(PAL_LOG_ERROR, "sink.retention_failed", "{s:s}", "message", err);
		fprintf(stderr, "palisade-sink: %s\n", err);
		return PAL_EXIT_UNAVAIL;
	}
	pal_log(PAL_LOG_INFO, "sink.retention", "{s:I, s:I, s:I, s:I}", "keys", (json_int_t)k,
		"ledger_rows", (json_int_t)l, "adopted", (json_int_t)a, "key_retention_ms",
		(json_int_t)o->keep_ms);
	printf("retention: %lld keys forgotten (%lld ledger rows), %lld adopted from the old "
	       "tables%s\n",
	       (long long)k, (long long)l, (long long)a,
	       o->keep_ms ? "" : "; --key-retention 0 keeps every key");
	return PAL_EXIT_OK;
}

/* ---- the periodic pass ---- */

struct sink_retention {
	char *conninfo;
	sink_retention_opts o;
	pal_metrics *m;
	PGconn *pg;	  /* the thread's own connection, opened on first use */
	pal_periodic *th; /* calls one_pass every interval_ms */
};

static void one_pass(void *arg)
{
	sink_retention *r = arg;
	char err[512];
	if (r->pg == NULL && pal__sink_connect(r->conninfo, &r->pg, err, sizeof err) != PAL_OK) {
		pal_log(PAL_LOG_WARN, "sink.retention_failed", "{s:s}", "message", err);
		pal_metric_inc(r->m, M_PASSES, "result=\"failed\"", 1);
		return;
	}
	int64_t k, a, l;
	if (pass_on(r->pg, &r->o, &k, &a, &l, err, sizeof err) != PAL_OK) {
		pal_log(PAL_LOG_WARN, "sink.retention_failed", "{s:s}", "message", err);
		pal_metric_inc(r->m, M_PASSES, "result=\"failed\"", 1);
		PQfinish(r->pg);
		r->pg = NULL;
		return;
	}
	pal_metric_inc(r->m, M_PASSES, "result=\"done\"", 1);
	pal_metric_inc(r->m, M_DELETED, "table=\"sink_keys\"", (double)k);
	pal_metric_inc(r->m, M_DELETED, "table=\"sink_applies\"", (double)l);
	pal_metric_inc(r->m, M_ADOPTED, NULL, (double)a);
	if (k || a || l)
		pal_log(PAL_LOG_INFO, "sink.retention", "{s:I, s:I, s:I}", "keys", (json_int_t)k,
			"ledger_rows", (json_int_t)l, "adopted", (json_int_t)a);
}

int pal__sink_retention_start(const char *conninfo, const sink_retention_opts *o, pal_metrics *m,
			      sink_retention **out)
{
	*out = NULL;
	pal_metric_declare(m, M_KEEP, PAL_METRIC_GAUGE,
			   "--key-retention: keys whose last request is older are forgotten "
			   "(0: kept forever).");
	pal_metric_set(m, M_KEEP, NULL, (double)o->keep_ms / 1000.0);
	if (o->keep_ms <= 0)
		return PAL_OK;
	pal_metric_declare(m, M_DELETED, PAL_METRIC_COUNTER,
			   "Rows deleted by the key retention, by table.");
	pal_metric_declare(m, M_PASSES, PAL_METRIC_COUNTER,
			   "Key retention passes by result (done, failed).");
	pal_metric_declare(m, M_ADOPTED, PAL_METRIC_COUNTER,
			   "Keys moved from the tables of before sink schema 6 by the retention "
			   "passes.");
	pal_metric_inc(m, M_DELETED, "table=\"sink_keys\"", 0);
	pal_metric_inc(m, M_DELETED, "table=\"sink_applies\"", 0);
	pal_metric_inc(m, M_ADOPTED, NULL, 0);
	pal_metric_inc(m, M_PASSES, "result=\"done\"", 0);
	pal_metric_inc(m, M_PASSES, "result=\"failed\"", 0);
	sink_retention *r = calloc(1, sizeof *r);
	if (r == NULL || (r->conninfo = strdup(conninfo)) == NULL) {
		free(r);
		return PAL_ENOMEM;
	}
	r->o = *o;
	r->m = m;
	if (pal_periodic_start(one_pass, r, o->interval_ms, &r->th) != PAL_OK) {
		pal__sink_retention_stop(r);
		return PAL_EIO;
	}
	*out = r;
	return PAL_OK;
}

void pal__sink_retention_stop(sink_retention *r)
{
	if (r == NULL)
		return;
	pal_periodic_stop(r->th);
	if (r->pg)
		PQfinish(r->pg);
	free(r->conninfo);
	free(r);
}
