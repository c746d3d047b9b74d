/*
 * notify.h - delivery of the notification outbox by executor nodes
 * (src/notify/deliver.c; docs/protocol.md, "Notifications").
 *
 * A node with the executor role runs one delivery thread beside the
 * executor's loop, with a PostgreSQL connection of its own: every
 * notify.interval it claims due notifications (a lease, SKIP LOCKED),
 * POSTs each, signed as Standard Webhooks specifies, and records the
 * outcome (delivered, or due again after a backoff).  It never shares a
 * thread or a connection with the claim, call and commit path, so a dead or
 * slow receiver cannot slow a side-effect call.
 */
#ifndef PALISADE_NOTIFY_H
#define PALISADE_NOTIFY_H

#include <stddef.h>
#include <stdint.h>
#include "palisade/err.h"
#include "palisade/metrics.h"
#include "palisade/secrets.h"
#include "palisade/targethosts.h"

typedef struct pal_notifier pal_notifier;

typedef struct pal_notifier_config {
	const char *conninfo;
	const char *node_id;
	const char *proxy;	   /* "env", "" (none) or a proxy url, as executor.proxy */
	int64_t interval_ms;	   /* notify.interval */
	int64_t backoff_max_ms;	   /* notify.backoff_max */
	int64_t retention_ms;	   /* notify.retention */
	int64_t keep_delivered_ms; /* notify.keep_delivered */
	const char *console_url;   /* admin.public_url: "" or NULL, the console link
				      stays a path */
	/* which secret references a job's tenant may have resolved (borrowed:
	 * must outlive the notifier; NULL: the default policy) */
	const pal_secret_policy *secrets;
	/* the hosts a job's tenant may be notified at (borrowed: must outlive
	 * the notifier; NULL: any host) */
	const pal_target_policy *targets;
} pal_notifier_config;

/* Start the delivery thread (strings of CFG are copied; M is borrowed).
 * Returns 0, PAL_ENOMEM or PAL_EIO with ERR; free with pal_notifier_stop. */
PAL_MUST_CHECK int pal_notifier_start(const pal_notifier_config *cfg, pal_metrics *m,
				      pal_notifier **out, char *err, size_t errlen);
/* Wait for a delivery under way, stop the thread and free N (NULL: no-op). */
void pal_notifier_stop(pal_notifier *n);

/*
 * PAYLOAD (a notification's JSON body as the outbox holds it) with its
 * data.console path prefixed by BASE (admin.public_url; a trailing '/'
 * dropped), as a new compact JSON text the caller free()s; NULL when BASE
 * is NULL or "" or the payload has no such path (send it as it is).
 */
char *pal_notify_absolute_console(const char *payload, const char *base);

/*
 * The Standard Webhooks signature of one delivery: "v1," and the base64
 * HMAC-SHA256, keyed by the base64-decoded part of SECRET after "whsec_",
 * of "ID.TIMESTAMP.BODY".  Writes it into SIG (SIGLEN >= 64).  PAL_EINVAL
 * (with ERR) when SECRET is not a whsec_ secret of valid base64.
 */
PAL_MUST_CHECK int pal_webhook_sign(const char *secret, const char *id, int64_t timestamp,
				    const char *body, char *sig, size_t siglen, char *err,
				    size_t errlen);

#endif
