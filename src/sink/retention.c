/*
 * retention.c - the sink's key retention: forget the keys nobody can send
 * again (docs/sink.md, "Key retention"; docs/protocol.md, "How long to keep
 * keys").
 *
 * A key is forgotten - its sink_fences row, its sink_effects row and its
 * sink_ledger rows, together - once its last request (sink_fences.updated_at,
 * moved by every apply, replay and stale request) and its effect
 * (sink_effects.updated_at) are both older than --key-retention.  A key
 * whose fence or effect is newer is never touched, nor one an apply holds
 * right now: the slice takes the key's advisory lock of the apply path
 * (step 0 of effect.c) with a try, and locks the fence rows SKIP LOCKED, so
 * a key under way is passed over and looked at again next pass.
 *
 * Bounded: one slice is one statement, hence one short transaction, of at
 * most --retention-slice keys, found oldest first through the indexes of
 * sql/sink/003_retention.sql; a pass runs slices until one is not full.
 * Keys of effects without a fence row (none are written so; a table
 * edited by hand) go by a second statement of the same shape.
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
#include <time.h>
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

/* $1 cutoff (ms since the epoch), $2 slice.  Fence-led: every key with an
 * effect has a fence row (the apply writes the fence first). */
static const char SQL_SLICE[] =
	"WITH c AS (SELECT f.resource AS key FROM sink_fences f"
	"    WHERE f.updated_at < to_timestamp($1::bigint / 1000.0)"
	"    ORDER BY f.updated_at LIMIT $2::int),"
	"  k AS (SELECT c.key FROM c"
	"    WHERE NOT EXISTS (SELECT 1 FROM sink_effects e WHERE e.idempotency_key = c.key"
	"        AND e.updated_at >= to_timestamp($1::bigint / 1000.0))"
	"      AND pg_try_advisory_xact_lock(hashtextextended(c.key, 0))),"
	"  lf AS (SELECT f.resource FROM sink_fences f WHERE f.resource IN (SELECT key FROM k)"
	"      AND f.updated_at < to_timestamp($1::bigint / 1000.0)"
	"    FOR UPDATE SKIP LOCKED),"
	"  dl AS (DELETE FROM sink_ledger l WHERE l.idempotency_key IN (SELECT resource FROM lf)"
	"    RETURNING 1),"
	"  de AS (DELETE FROM sink_effects e WHERE e.idempotency_key IN (SELECT resource FROM lf)"
	"    RETURNING 1),"
	"  df AS (DELETE FROM sink_fences f WHERE f.resource IN (SELECT resource FROM lf)"
	"    RETURNING 1)"
	" SELECT (SELECT count(*) FROM df), (SELECT count(*) FROM de), (SELECT count(*) FROM dl),"
	"  (SELECT count(*) FROM df)";

/* The same for effects without a fence row. */
static const char SQL_SLICE_ORPHANS[] =
	"WITH c AS (SELECT e.idempotency_key AS key FROM sink_effects e"
	"    WHERE e.updated_at < to_timestamp($1::bigint / 1000.0)"
	"      AND NOT EXISTS (SELECT 1 FROM sink_fences f WHERE f.resource = e.idempotency_key)"
	"    ORDER BY e.updated_at LIMIT $2::int),"
	"  le AS (SELECT e.idempotency_key AS key FROM sink_effects e"
	"    WHERE e.idempotency_key IN (SELECT key FROM c)"
	"      AND pg_try_advisory_xact_lock(hashtextextended(e.idempotency_key, 0))"
	"    FOR UPDATE SKIP LOCKED),"
	"  dl AS (DELETE FROM sink_ledger l WHERE l.idempotency_key IN (SELECT key FROM le)"
	"    RETURNING 1),"
	"  de AS (DELETE FROM sink_effects e WHERE e.idempotency_key IN (SELECT key FROM le)"
	"    RETURNING 1)"
	" SELECT 0::bigint, (SELECT count(*) FROM de), (SELECT count(*) FROM dl),"
	"  (SELECT count(*) FROM de)";

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
			fprintf(stderr,
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
			fprintf(stderr, "palisade-sink: --retention-interval \"%s\": expected a "
					"duration from 1s to 1d\n", arg);
			return -1;
		}
		o->interval_ms = v;
		return 0;
	case SINK_OPT_RETENTION_SLICE:
		if (pal__sink_parse_int(arg, 1, 100000, &v) != PAL_OK) {
			fprintf(stderr, "palisade-sink: --retention-slice \"%s\": expected an "
					"integer in 1..100000\n", arg);
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

/* Slices of SQL on PG until one deletes fewer keys than a slice (its
 * fourth column: keys deleted; a key passed over - under way, or newer
 * than its fence - ends the pass, so a pass never spins on it); adds to
 * the counts. */
static int slices(PGconn *pg, const char *sql, const sink_retention_opts *o, int64_t *keys,
		  int64_t *effects, int64_t *ledger, char *err, size_t errlen)
{
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	char cut[32], sl[16];
	snprintf(cut, sizeof cut, "%lld",
		 (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000 - (long long)o->keep_ms);
	snprintf(sl, sizeof sl, "%d", o->slice);
	const char *params[] = {cut, sl};
	for (;;) {
		PGresult *r = PQexecParams(pg, sql, 2, NULL, params, NULL, NULL, 0);
		if (PQresultStatus(r) != PGRES_TUPLES_OK) {
			snprintf(err, errlen, "key retention: %s",
				 r ? PQresultErrorMessage(r) : PQerrorMessage(pg));
			err[strcspn(err, "\n")] = '\0';
			PQclear(r);
			return PAL_EDB;
		}
		*keys += atoll(PQgetvalue(r, 0, 0));
		*effects += atoll(PQgetvalue(r, 0, 1));
		*ledger += atoll(PQgetvalue(r, 0, 2));
		long long done = atoll(PQgetvalue(r, 0, 3));
		PQclear(r);
		if (done < o->slice)
			return PAL_OK;
	}
}

static int pass_on(PGconn *pg, const sink_retention_opts *o, int64_t *keys, int64_t *effects,
		   int64_t *ledger, char *err, size_t errlen)
{
	*keys = *effects = *ledger = 0;
	int rc = slices(pg, SQL_SLICE, o, keys, effects, ledger, err, errlen);
	if (rc == PAL_OK)
		rc = slices(pg, SQL_SLICE_ORPHANS, o, keys, effects, ledger, err, errlen);
	return rc;
}

int pal__sink_retention_pass(const char *conninfo, const sink_retention_opts *o, int64_t *keys,
			     int64_t *effects, int64_t *ledger, char *err, size_t errlen)
{
	*keys = *effects = *ledger = 0;
	if (o->keep_ms <= 0)
		return PAL_OK;
	PGconn *pg;
	int rc = pal__sink_connect(conninfo, &pg, err, errlen);
	if (rc != PAL_OK)
		return rc;
	rc = pass_on(pg, o, keys, effects, ledger, err, errlen);
	PQfinish(pg);
	return rc;
}

int pal__sink_retention_once(const char *conninfo, const sink_retention_opts *o)
{
	char err[512];
	int64_t k, e, l;
	if (pal__sink_retention_pass(conninfo, o, &k, &e, &l, err, sizeof err) != PAL_OK) {
		pal_log(PAL_LOG_ERROR, "sink.retention_failed", "{s:s}", "message", err);
		fprintf(stderr, "palisade-sink: %s\n", err);
		return PAL_EXIT_UNAVAIL;
	}
	pal_log(PAL_LOG_INFO, "sink.retention", "{s:I, s:I, s:I, s:I}", "keys", (json_int_t)k,
		"effects", (json_int_t)e, "ledger_rows", (json_int_t)l, "key_retention_ms",
		(json_int_t)o->keep_ms);
	printf("retention: %lld keys forgotten (%lld effects, %lld ledger rows)%s\n",
	       (long long)k, (long long)e, (long long)l,
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
	int64_t k, e, l;
	if (pass_on(r->pg, &r->o, &k, &e, &l, err, sizeof err) != PAL_OK) {
		pal_log(PAL_LOG_WARN, "sink.retention_failed", "{s:s}", "message", err);
		pal_metric_inc(r->m, M_PASSES, "result=\"failed\"", 1);
		PQfinish(r->pg);
		r->pg = NULL;
		return;
	}
	pal_metric_inc(r->m, M_PASSES, "result=\"done\"", 1);
	pal_metric_inc(r->m, M_DELETED, "table=\"sink_fences\"", (double)k);
	pal_metric_inc(r->m, M_DELETED, "table=\"sink_effects\"", (double)e);
	pal_metric_inc(r->m, M_DELETED, "table=\"sink_ledger\"", (double)l);
	if (k || e || l)
		pal_log(PAL_LOG_INFO, "sink.retention", "{s:I, s:I, s:I}", "keys", (json_int_t)k,
			"effects", (json_int_t)e, "ledger_rows", (json_int_t)l);
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
	pal_metric_inc(m, M_DELETED, "table=\"sink_fences\"", 0);
	pal_metric_inc(m, M_DELETED, "table=\"sink_effects\"", 0);
	pal_metric_inc(m, M_DELETED, "table=\"sink_ledger\"", 0);
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
