/*
 * notifystore.h - the SQL of the notification outbox (src/store/notify.c):
 * claim due notifications with a lease, record a delivery's outcome, and
 * the outbox's retention.  Rows are written by the state changes that
 * cause them (palisade_notify_enqueue and its callers, sql/functions/);
 * nothing here writes a new one.
 */
#ifndef PALISADE_NOTIFYSTORE_H
#define PALISADE_NOTIFYSTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "palisade/err.h"
#include "palisade/store.h"

/* A claimed notification.  Strings belong to the array (pal_notif_free). */
typedef struct pal_notif {
	int64_t id;
	char *webhook_id; /* Standard Webhooks message id, stable */
	char *url;
	char *secret;  /* the ${NAME} reference */
	char *payload; /* JSON text, the request body */
	char *event;
	char *tenant; /* the job's tenant ("" when the job is gone) */
	int attempts; /* this delivery included */
	bool group_rule; /* its url is a group's notify rule's (set by an operator) */
} pal_notif;

/* Claim up to LIMIT due, undelivered notifications whose lease is free
 * (FOR UPDATE SKIP LOCKED: never waits for another node's claim), leased
 * to NODE for LEASE_MS by the database's clock, their attempt counted:
 * never tried ones first, then the oldest due, and at most PER_URL per
 * receiver URL, counting the BUSY[0..NBUSY) URLs of the deliveries the
 * caller still has under way (one element each).  *OUT (free with
 * pal_notif_free) and *N.  PAL_EDB. */
PAL_MUST_CHECK int pal_store_notif_claim(pal_store *st, const char *node, int64_t lease_ms,
					 int limit, int per_url, const char *const *busy,
					 size_t nbusy, pal_notif **out, size_t *n, char *err,
					 size_t errlen);
void pal_notif_free(pal_notif *v, size_t n);
/* Free the strings of one notification V (not V itself) and zero it: for a
 * caller that moved an element's strings out of the claimed array. */
void pal_notif_clear(pal_notif *v);

/* Record the outcome of delivering ID under NODE's lease: delivered, or
 * due again RETRY_MS later by the database's clock, but no later than the
 * row's expiry (its event + RETENTION_MS) while that is still to come, with
 * STATUS (0: no answer) and ERROR (NULL: none).  A row whose lease went to
 * another node is left alone.  PAL_EDB. */
PAL_MUST_CHECK int pal_store_notif_done(pal_store *st, int64_t id, const char *node, bool delivered,
					int status, const char *error, int64_t retry_ms,
					int64_t retention_ms, char *err, size_t errlen);

/* Retention: delete delivered rows older than KEEP_DELIVERED_MS and
 * undelivered ones whose event is older than RETENTION_MS and whose last
 * try came at or after that (*EXPIRED: how many of those), at most 10,000
 * of each; *PENDING: undelivered rows left, *OLDEST_S: the age in seconds
 * of the oldest of them (0: none). */
PAL_MUST_CHECK int pal_store_notif_retention(pal_store *st, int64_t keep_delivered_ms,
					     int64_t retention_ms, int64_t *expired,
					     int64_t *pending, double *oldest_s, char *err,
					     size_t errlen);

#endif
