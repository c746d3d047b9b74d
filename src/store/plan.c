/*
 * plan.c - the controller's SQL: shard claim, shard job loading, and the
 * fenced planning transaction (DESIGN.md §3, §7; guarantees G1, G2, G6).
 *
 * Every write of a controller happens inside a transaction whose first
 * statement locks the shard row *and* checks the epoch:
 *   UPDATE shards SET updated_at = clock_timestamp()
 *    WHERE shard_id = $1 AND epoch = $2 RETURNING ...
 * Zero rows means a newer leader claimed the shard: the transaction is
 * rolled back and PAL_ESTALE returned.  Because the row stays locked until
 * COMMIT, a newer leader's claim waits for us and we cannot interleave with
 * it.  Triggers are inserted in one statement from arrays (unnest) with
 * ON CONFLICT DO NOTHING on the plan key (G2), and the watermark moves in the
 * same transaction (G1: it never passes instants whose rows are not
 * committed).
 */
#include <glib.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/store.h"
#include "store_int.h"

static int64_t val_i64(PGresult *r, int row, int col)
{
	return PQgetisnull(r, row, col) ? PAL_NO_TIME : strtoll(PQgetvalue(r, row, col), NULL, 10);
}

int pal_store_shard_claim(pal_store *st, int shard, int64_t epoch, const char *node,
			  int64_t *watermark, char *err, size_t errlen)
{
	char s[16], e[24];
	snprintf(s, sizeof s, "%d", shard);
	snprintf(e, sizeof e, "%" PRId64, epoch);
	const char *p[] = { s, e, node };
	PGresult *r = pal__store_query(
		st,
		"UPDATE shards SET epoch = $2, leader = $3, updated_at = clock_timestamp()"
		" WHERE shard_id = $1 AND (epoch < $2 OR (epoch = $2 AND leader = $3))"
		" RETURNING floor(extract(epoch FROM watermark))::bigint",
		3, p, err, errlen);
	if (!r)
		return PAL_EDB;
	if (PQntuples(r) == 0) {
		PQclear(r);
		r = pal__store_query(st, "SELECT epoch, coalesce(leader, '') FROM shards WHERE shard_id = $1",
				     1, p, err, errlen);
		if (!r)
			return PAL_EDB;
		if (PQntuples(r) == 0)
			snprintf(err, errlen, "shard %d does not exist in the database", shard);
		else
			snprintf(err, errlen,
				 "shard %d is held at epoch %s by %s, not older than our epoch %s",
				 shard, PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 1), e);
		PQclear(r);
		return PAL_ESTALE;
	}
	*watermark = val_i64(r, 0, 0);
	PQclear(r);
	return PAL_OK;
}

int pal_store_shard_jobs(pal_store *st, int shard, const char *job_id, int64_t cutoff,
			 bool with_specs, json_t **out, char *err, size_t errlen)
{
	char s[16], c[24];
	snprintf(s, sizeof s, "%d", shard);
	snprintf(c, sizeof c, "%" PRId64, cutoff == PAL_NO_TIME ? (int64_t)0 : cutoff);
	const char *p[] = { s, job_id, c, with_specs ? "t" : "f" };
	/* Versions still relevant: the latest one activated at or before the
	 * cutoff, every later activated one, and the latest (maybe pending). */
	PGresult *r = pal__store_query(
		st,
		"SELECT coalesce(json_agg(x), '[]')::text FROM ("
		" SELECT j.job_id, j.latest_version,"
		"  (SELECT json_agg(json_build_object('version', v.version,"
		"     'spec', CASE WHEN $4::bool THEN v.spec END,"
		"     'effective_from', floor(extract(epoch FROM v.effective_from))::bigint)"
		"     ORDER BY v.version)"
		"   FROM job_versions v WHERE v.job_id = j.job_id AND ("
		"     v.version = j.latest_version OR (v.effective_from IS NOT NULL AND v.version >= coalesce("
		"       (SELECT max(w.version) FROM job_versions w WHERE w.job_id = j.job_id"
		"         AND w.effective_from <= to_timestamp($3::bigint)), 0)))) AS versions"
		" FROM jobs j WHERE j.shard = $1 AND ($2::text IS NULL OR j.job_id = $2)) x",
		4, p, err, errlen);
	if (!r)
		return PAL_EDB;
	json_error_t je;
	*out = json_loads(PQgetvalue(r, 0, 0), 0, &je);
	PQclear(r);
	if (!*out) {
		snprintf(err, errlen, "cannot parse shard jobs: %s", je.text);
		return PAL_EINVAL;
	}
	return PAL_OK;
}

int pal_store_tick_begin(pal_store *st, int shard, int64_t epoch, int64_t *watermark, int64_t *now,
			 char *err, size_t errlen)
{
	if (pal__store_exec(st, "BEGIN", err, errlen))
		return PAL_EDB;
	char s[16], e[24];
	snprintf(s, sizeof s, "%d", shard);
	snprintf(e, sizeof e, "%" PRId64, epoch);
	const char *p[] = { s, e };
	PGresult *r = pal__store_query(
		st,
		"UPDATE shards SET updated_at = clock_timestamp() WHERE shard_id = $1 AND epoch = $2"
		" RETURNING floor(extract(epoch FROM watermark))::bigint,"
		" floor(extract(epoch FROM clock_timestamp()))::bigint",
		2, p, err, errlen);
	if (!r) {
		pal__store_rollback(st);
		return PAL_EDB;
	}
	if (PQntuples(r) == 0) {
		PQclear(r);
		pal__store_rollback(st);
		snprintf(err, errlen,
			 "shard %d: fenced, epoch %s is no longer current (0 rows); a newer leader holds it",
			 shard, e);
		return PAL_ESTALE;
	}
	*watermark = val_i64(r, 0, 0);
	*now = val_i64(r, 0, 1);
	PQclear(r);
	return PAL_OK;
}

void pal_store_tick_abort(pal_store *st)
{
	pal__store_rollback(st);
}

/* Append "{a,b,...}" array literals; values are plain tokens (ids match
 * [a-z0-9._-], numbers, fixed words) so no quoting is needed. */
static void arr_open(GString *g)
{
	g_string_assign(g, "{");
}

static void arr_sep(GString *g)
{
	if (g->len > 1)
		g_string_append_c(g, ',');
}

static void arr_close(GString *g)
{
	g_string_append_c(g, '}');
}

static int write_triggers(pal_store *st, int shard, int64_t epoch, const pal_plan_batch *b,
			  int64_t *inserted, char *err, size_t errlen)
{
	*inserted = 0;
	if (!b->n_trig)
		return PAL_OK;
	GString *a[8];
	for (int i = 0; i < 8; i++) {
		a[i] = g_string_sized_new(b->n_trig * 12);
		arr_open(a[i]);
	}
	for (size_t i = 0; i < b->n_trig; i++) {
		const pal_plan_trigger *t = &b->trig[i];
		for (int k = 0; k < 8; k++)
			arr_sep(a[k]);
		g_string_append(a[0], t->job_id);
		g_string_append_printf(a[1], "%d", t->version);
		g_string_append_printf(a[2], "%" PRId64, t->at);
		g_string_append_printf(a[3], "%d", t->partition);
		g_string_append(a[4], t->source == PAL_SOURCE_CATCHUP ? "catchup" : "schedule");
		g_string_append_printf(a[5], "%d", t->priority);
		g_string_append(a[6], t->tenant);
		g_string_append(a[7], t->group);
	}
	for (int i = 0; i < 8; i++)
		arr_close(a[i]);
	char s[16], e[24];
	snprintf(s, sizeof s, "%d", shard);
	snprintf(e, sizeof e, "%" PRId64, epoch);
	const char *p[] = { a[0]->str, a[1]->str, a[2]->str, a[3]->str, a[4]->str,
			    a[5]->str, s,	  e,	     a[6]->str, a[7]->str };
	PGresult *r = pal__store_query(
		st,
		"INSERT INTO triggers (job_id, version, scheduled_at, partition, source, priority,"
		" due_at, shard, epoch, tenant, resource_group)"
		" SELECT u.j, u.v, to_timestamp(u.a), u.p, u.s, u.pr, to_timestamp(u.a), $7, $8, u.te, u.g"
		" FROM unnest($1::text[], $2::int[], $3::bigint[], $4::int[], $5::text[], $6::int[],"
		"   $9::text[], $10::text[]) AS u(j, v, a, p, s, pr, te, g)"
		" ON CONFLICT (job_id, scheduled_at, partition) WHERE request_id IS NULL DO NOTHING",
		10, p, err, errlen);
	for (int i = 0; i < 8; i++)
		g_string_free(a[i], TRUE);
	if (!r)
		return PAL_EDB;
	*inserted = strtoll(PQcmdTuples(r), NULL, 10);
	PQclear(r);
	return PAL_OK;
}

static int write_misfires(pal_store *st, int shard, int64_t epoch, const pal_plan_batch *b,
			  char *err, size_t errlen)
{
	if (!b->n_mis)
		return PAL_OK;
	GString *a[7];
	for (int i = 0; i < 7; i++) {
		a[i] = g_string_sized_new(b->n_mis * 12);
		arr_open(a[i]);
	}
	for (size_t i = 0; i < b->n_mis; i++) {
		const pal_plan_misfire *m = &b->mis[i];
		for (int k = 0; k < 7; k++)
			arr_sep(a[k]);
		g_string_append(a[0], m->job_id);
		g_string_append_printf(a[1], "%d", m->version);
		g_string_append_printf(a[2], "%" PRId64, m->from);
		g_string_append_printf(a[3], "%" PRId64, m->to);
		g_string_append_printf(a[4], "%d", m->count);
		g_string_append(a[5], m->policy);
		g_string_append(a[6], m->reason);
	}
	for (int i = 0; i < 7; i++)
		arr_close(a[i]);
	char s[16], e[24];
	snprintf(s, sizeof s, "%d", shard);
	snprintf(e, sizeof e, "%" PRId64, epoch);
	const char *p[] = { a[0]->str, a[1]->str, a[2]->str, a[3]->str, a[4]->str,
			    a[5]->str, a[6]->str, s, e };
	PGresult *r = pal__store_query(
		st,
		"INSERT INTO misfires (job_id, version, range_from, range_to, count, policy, reason,"
		" shard, epoch)"
		" SELECT u.j, u.v, to_timestamp(u.f), to_timestamp(u.t), u.c, u.po, u.re, $8, $9"
		" FROM unnest($1::text[], $2::int[], $3::bigint[], $4::bigint[], $5::int[],"
		"   $6::text[], $7::text[]) AS u(j, v, f, t, c, po, re)",
		9, p, err, errlen);
	for (int i = 0; i < 7; i++)
		g_string_free(a[i], TRUE);
	if (!r)
		return PAL_EDB;
	PQclear(r);
	return PAL_OK;
}

static int write_activations(pal_store *st, int64_t epoch, const char *node,
			     const pal_plan_batch *b, char *err, size_t errlen)
{
	char e[24];
	snprintf(e, sizeof e, "%" PRId64, epoch);
	for (size_t i = 0; i < b->n_act; i++) {
		const pal_plan_activation *a = &b->act[i];
		char v[16], f[24];
		snprintf(v, sizeof v, "%d", a->version);
		snprintf(f, sizeof f, "%" PRId64, a->effective_from);
		const char *p[] = { a->job_id, v, f, e, node };
		PGresult *r = pal__store_query(
			st,
			"WITH act AS (UPDATE job_versions SET activated_at = clock_timestamp(),"
			"   activated_epoch = $4, effective_from = to_timestamp($3::bigint)"
			"   WHERE job_id = $1 AND version = $2 AND effective_from IS NULL RETURNING version),"
			" j AS (UPDATE jobs SET active_version = $2, updated_at = now()"
			"   WHERE job_id = $1 AND coalesce(active_version, 0) < $2 AND EXISTS (SELECT 1 FROM act)"
			"   RETURNING job_id),"
			" au AS (INSERT INTO audit_log (actor, action, scope, details)"
			"   SELECT 'controller:' || $5, 'job.activate', 'job:' || $1,"
			"   jsonb_build_object('version', $2::int, 'epoch', $4::bigint,"
			"     'effective_from', to_timestamp($3::bigint)) FROM act)"
			" SELECT count(*) FROM act",
			5, p, err, errlen);
		if (!r)
			return PAL_EDB;
		bool done = atoi(PQgetvalue(r, 0, 0)) == 1;
		PQclear(r);
		if (!done) {
			snprintf(err, errlen, "job %s v%d was activated by someone else; reloading",
				 a->job_id, a->version);
			return PAL_ESTALE;
		}
	}
	return PAL_OK;
}

static int write_tickets(pal_store *st, int64_t epoch, const pal_plan_batch *b, char *err,
			 size_t errlen)
{
	char e[24];
	snprintf(e, sizeof e, "%" PRId64, epoch);
	for (size_t i = 0; i < b->n_tick; i++) {
		const pal_plan_ticket *t = &b->tick[i];
		char v[16], f[24], to[24], c[16];
		snprintf(v, sizeof v, "%d", t->version);
		snprintf(f, sizeof f, "%" PRId64, t->from);
		snprintf(to, sizeof to, "%" PRId64, t->to);
		snprintf(c, sizeof c, "%d", t->count);
		const char *p[] = { t->job_id, v, f, to, c, e };
		PGresult *r = pal__store_query(
			st,
			"INSERT INTO tickets (job_id, reason, evidence, allowed_actions)"
			" VALUES ($1, 'misfire: ' || $5 || ' instants missed (policy manual)',"
			"  jsonb_build_object('version', $2::int, 'range_from', to_timestamp($3::bigint),"
			"   'range_to', to_timestamp($4::bigint), 'count', $5::int, 'epoch', $6::bigint),"
			"  ARRAY['backfill', 'abandon'])",
			6, p, err, errlen);
		if (!r)
			return PAL_EDB;
		PQclear(r);
	}
	return PAL_OK;
}

int pal_store_tick_commit(pal_store *st, int shard, int64_t epoch, const char *node,
			  const pal_plan_batch *b, int64_t *inserted, char *err, size_t errlen)
{
	int rc = write_activations(st, epoch, node, b, err, errlen);
	if (!rc)
		rc = write_triggers(st, shard, epoch, b, inserted, err, errlen);
	if (!rc)
		rc = write_misfires(st, shard, epoch, b, err, errlen);
	if (!rc)
		rc = write_tickets(st, epoch, b, err, errlen);
	if (!rc) {
		char s[16], e[24], w[24];
		snprintf(s, sizeof s, "%d", shard);
		snprintf(e, sizeof e, "%" PRId64, epoch);
		snprintf(w, sizeof w, "%" PRId64, b->watermark);
		const char *p[] = { s, e, w };
		PGresult *r = pal__store_query(
			st,
			"UPDATE shards SET watermark = to_timestamp($3::bigint)"
			" WHERE shard_id = $1 AND epoch = $2"
			" AND (watermark IS NULL OR watermark <= to_timestamp($3::bigint))",
			3, p, err, errlen);
		if (!r) {
			rc = PAL_EDB;
		} else {
			if (strcmp(PQcmdTuples(r), "1")) {
				snprintf(err, errlen,
					 "shard %d: watermark write rejected (0 rows) at epoch %s", shard, e);
				rc = PAL_ESTALE;
			}
			PQclear(r);
		}
	}
	if (!rc && *inserted > 0) {
		PGresult *r = pal__store_query(st, "NOTIFY palisade_triggers", 0, NULL, err, errlen);
		if (!r)
			rc = PAL_EDB;
		PQclear(r);
	}
	if (rc) {
		pal__store_rollback(st);
		return rc;
	}
	if (pal__store_exec(st, "COMMIT", err, errlen)) {
		pal__store_rollback(st);
		return PAL_EDB;
	}
	return PAL_OK;
}
