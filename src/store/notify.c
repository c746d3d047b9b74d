/*
 * notify.c - the notification outbox's SQL (include/palisade/notifystore.h).
 *
 * A delivery claim is a lease, as a trigger's is, but looser: a notification
 * is delivered at least once and deduplicated by its webhook id at the
 * receiver, so a lease that expires mid-delivery only risks a second
 * delivery, never a lost one.  The claim skips rows another node holds
 * (SKIP LOCKED) and never waits.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/notifystore.h"
#include "store_int.h"

/* The claim: due rows, fresh ones (never tried) before retries, then the
 * oldest due first, at most $5 per receiver URL counting those of the URL
 * the caller still has under way ($4, one element per delivery): a receiver
 * that never answers holds at most $5 of the caller's deliveries, whatever
 * its backlog, and every other receiver's rows are claimed beside them.
 * The window cannot take FOR UPDATE, so the rows it picks are locked (and
 * their lease checked again) by the outer select. */
static const char SQL_CLAIM[] =
    "WITH busy AS (SELECT u AS url, count(*) AS n FROM unnest($4::text[]) u GROUP BY u),"
    " c AS (SELECT x.id, x.attempts, x.next_attempt_at,"
    "   row_number() OVER (PARTITION BY x.url ORDER BY x.attempts > 0, x.next_attempt_at, x.id)"
    "     + coalesce(b.n, 0) AS k"
    "   FROM notifications x LEFT JOIN busy b ON b.url = x.url WHERE x.delivered_at IS NULL"
    "   AND x.next_attempt_at <= clock_timestamp()"
    "   AND (x.lease_until IS NULL OR x.lease_until < clock_timestamp()))"
    " UPDATE notifications n SET lease_owner = $1, attempts = n.attempts + 1,"
    "   lease_until = clock_timestamp() + $2::bigint * interval '1 millisecond'"
    " FROM (SELECT x.id FROM notifications x WHERE x.id IN (SELECT c.id FROM c WHERE c.k <= $5"
    "     ORDER BY c.attempts > 0, c.next_attempt_at, c.id LIMIT $3)"
    "   AND x.delivered_at IS NULL"
    "   AND (x.lease_until IS NULL OR x.lease_until < clock_timestamp())"
    "   FOR UPDATE OF x SKIP LOCKED) d"
    " WHERE n.id = d.id"
    " RETURNING n.id, n.webhook_id, n.url, n.secret, n.payload::text, n.event, n.attempts,"
    "   coalesce((SELECT j.tenant FROM jobs j WHERE j.job_id = n.job_id), ''),"
    /* whether its url came from a group's notify rule: an inherited entry
     * (its index, the webhook id's last field, at or past the version's
     * own entries) whose url a stored rule of the version's group names */
    "   EXISTS (SELECT 1 FROM job_versions v JOIN notify_rules r ON r.scope = 'group'"
    "     AND r.name = v.resource_group AND r.url = n.url"
    "     WHERE v.job_id = n.job_id AND v.notify_own >= 0"
    "     AND v.version = (substring(n.payload -> 'data' ->> 'version' from '^[0-9]{1,9}$'))::int"
    "     AND (substring(n.webhook_id from '_([0-9]{1,9})$'))::int >= v.notify_own)";

int pal_store_notif_claim(pal_store *st, const char *node, int64_t lease_ms, int limit, int per_url,
			  const char *const *busy, size_t nbusy, pal_notif **out, size_t *n,
			  char *err, size_t errlen)
{
	*out = NULL;
	*n = 0;
	char l[24], k[16], u[16];
	snprintf(l, sizeof l, "%" PRId64, lease_ms);
	snprintf(k, sizeof k, "%d", limit);
	snprintf(u, sizeof u, "%d", per_url);
	pal_pgarr a;
	pal__pgarr_init(&a);
	for (size_t i = 0; i < nbusy; i++)
		pal__pgarr_text(&a, busy[i]);
	char *b = pal__pgarr_end(&a);
	const char *p[] = {node, l, k, b, u};
	PGresult *r = pal__store_query(st, SQL_CLAIM, 5, p, err, errlen);
	g_free(b);
	if (!r)
		return PAL_EDB;
	int rows = PQntuples(r);
	pal_notif *v = calloc(rows ? (size_t)rows : 1, sizeof *v);
	if (!v) {
		PQclear(r);
		snprintf(err, errlen, "out of memory for %d notifications", rows);
		return PAL_ENOMEM;
	}
	for (int i = 0; i < rows; i++) {
		v[i].id = strtoll(PQgetvalue(r, i, 0), NULL, 10);
		v[i].webhook_id = strdup(PQgetvalue(r, i, 1));
		v[i].url = strdup(PQgetvalue(r, i, 2));
		v[i].secret = strdup(PQgetvalue(r, i, 3));
		v[i].payload = strdup(PQgetvalue(r, i, 4));
		v[i].event = strdup(PQgetvalue(r, i, 5));
		v[i].attempts = atoi(PQgetvalue(r, i, 6));
		v[i].tenant = strdup(PQgetvalue(r, i, 7));
		v[i].group_rule = PQgetvalue(r, i, 8)[0] == 't';
		if (!v[i].webhook_id || !v[i].url || !v[i].secret || !v[i].payload || !v[i].event ||
		    !v[i].tenant) {
			PQclear(r);
			pal_notif_free(v, (size_t)i + 1);
			snprintf(err, errlen, "out of memory for %d notifications", rows);
			return PAL_ENOMEM;
		}
	}
	PQclear(r);
	*out = v;
	*n = (size_t)rows;
	return PAL_OK;
}

void pal_notif_clear(pal_notif *v)
{
	free(v->webhook_id);
	free(v->url);
	free(v->secret);
	free(v->payload);
	free(v->event);
	free(v->tenant);
	*v = (pal_notif){0};
}

void pal_notif_free(pal_notif *v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++)
		pal_notif_clear(&v[i]);
	free(v);
}

/* A retry is due RETRY_MS from now, but never after the row's expiry
 * (created_at + $7) while that is still to come: the row then has its last
 * try at the expiry, and the retention deletes only a row whose last try
 * failed at or after it (next_attempt_at past the expiry). */
int pal_store_notif_done(pal_store *st, int64_t id, const char *node, bool delivered, int status,
			 const char *error, int64_t retry_ms, int64_t retention_ms, char *err,
			 size_t errlen)
{
	char i[24], s[16], d[24], rt[24];
	snprintf(i, sizeof i, "%" PRId64, id);
	snprintf(s, sizeof s, "%d", status);
	snprintf(d, sizeof d, "%" PRId64, retry_ms);
	snprintf(rt, sizeof rt, "%" PRId64, retention_ms);
	const char *p[] = {i, node, delivered ? "t" : "f", s, error, d, rt};
	PGresult *r = pal__store_query(
	    st,
	    "UPDATE notifications SET lease_owner = NULL, lease_until = NULL,"
	    "   delivered_at = CASE WHEN $3::boolean THEN clock_timestamp() END,"
	    "   last_status = nullif($4::int, 0), last_error = $5,"
	    "   next_attempt_at = CASE WHEN $3::boolean THEN next_attempt_at"
	    "     WHEN clock_timestamp() < created_at + $7::bigint * interval '1 millisecond'"
	    "     THEN least(clock_timestamp() + $6::bigint * interval '1 millisecond',"
	    "       created_at + $7::bigint * interval '1 millisecond')"
	    "     ELSE clock_timestamp() + $6::bigint * interval '1 millisecond' END"
	    " WHERE id = $1 AND lease_owner = $2 AND delivered_at IS NULL",
	    7, p, err, errlen);
	if (!r)
		return PAL_EDB;
	PQclear(r);
	return PAL_OK;
}

int pal_store_notif_retention(pal_store *st, int64_t keep_delivered_ms, int64_t retention_ms,
			      int64_t *expired, int64_t *pending, double *oldest_s, char *err,
			      size_t errlen)
{
	*expired = 0;
	*pending = 0;
	*oldest_s = 0;
	char k[24], rt[24];
	snprintf(k, sizeof k, "%" PRId64, keep_delivered_ms);
	snprintf(rt, sizeof rt, "%" PRId64, retention_ms);
	const char *p[] = {k, rt};
	/* An undelivered row expires once its event is older than the retention
	 * and its last try came at or after that (next_attempt_at past the
	 * expiry: pal_store_notif_done): a row never tried, or whose retry is
	 * still due at the expiry, gets that try first.  The oldest pending
	 * event's age is read by the same statement: the rows it deletes are
	 * still in its snapshot, so they are left out by the same condition. */
	PGresult *r = pal__store_query(
	    st,
	    "WITH dd AS (DELETE FROM notifications WHERE id IN (SELECT id FROM notifications"
	    "   WHERE delivered_at < clock_timestamp() - $1::bigint * interval '1 millisecond'"
	    "   LIMIT 10000)),"
	    " de AS (DELETE FROM notifications WHERE id IN (SELECT id FROM notifications"
	    "   WHERE delivered_at IS NULL"
	    "   AND created_at < clock_timestamp() - $2::bigint * interval '1 millisecond'"
	    "   AND next_attempt_at > created_at + $2::bigint * interval '1 millisecond'"
	    "   AND (lease_until IS NULL OR lease_until < clock_timestamp()) LIMIT 10000)"
	    "   RETURNING id, created_at),"
	    " pe AS (SELECT count(*) AS n, min(created_at) AS oldest FROM notifications"
	    "   WHERE delivered_at IS NULL AND id NOT IN (SELECT id FROM de))"
	    " SELECT (SELECT count(*) FROM de), pe.n,"
	    "   coalesce(extract(epoch FROM clock_timestamp() - pe.oldest), 0) FROM pe",
	    2, p, err, errlen);
	if (!r)
		return PAL_EDB;
	*expired = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
	*pending = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
	*oldest_s = strtod(PQgetvalue(r, 0, 2), NULL);
	PQclear(r);
	return PAL_OK;
}
