/*
 * deliver.c - the notification outbox's delivery thread (include/palisade/notify.h).
 *
 * Model: one pal_periodic thread per executor node, with its own
 * PostgreSQL connection and a libcurl multi handle (its connections kept
 * between rounds); nothing here runs on the executor's loop.  A round:
 * retention of the outbox (every RETENTION_EVERY intervals), then
 * deliver_round: up to IN_FLIGHT_MAX deliveries under way at once, at
 * most PER_URL of them to one receiver URL, claimed again as they end and
 * every interval while any is under way, so that a receiver that never
 * answers holds PER_URL deliveries for one TIMEOUT_MS each, whatever its
 * backlog, and the other receivers' notifications go out meanwhile.  The lease of a claim covers
 * its deliveries at their timeout (with a margin); should it still expire,
 * another node may deliver the same notification again, which the receiver
 * recognises by its webhook id (at least once, never lost within
 * notify.retention).
 *
 * Secrets: the row holds the job's ${NAME} reference; it is resolved from
 * this process's environment for each delivery (as target secrets are),
 * never stored or logged.
 */
#include <curl/curl.h>
#include <jansson.h>
#include <glib.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "palisade/log.h"
#include "palisade/notify.h"
#include "palisade/notifystore.h"
#include "palisade/periodic.h"
#include "palisade/template.h"
#include "palisade/url.h"

#define IN_FLIGHT_MAX 32 /* deliveries under way at once */
#define PER_URL 4	 /* of them to one receiver URL */
#define TIMEOUT_MS 5000L
#define LEASE_MS (TIMEOUT_MS + 30000)
#define RETENTION_EVERY 10
#define BACKOFF_INITIAL_MS 1000

#define M_PENDING "palisade_notify_pending"
#define M_DELIVERED "palisade_notify_delivered_total"
#define M_FAILED "palisade_notify_failed_total"
#define M_EXPIRED "palisade_notify_expired_total"
#define M_OLDEST "palisade_notify_oldest_pending_seconds"
#define M_TARGET_REFUSED "palisade_notify_target_refusals_total"

struct pal_notifier {
	pal_notifier_config cfg; /* strings owned */
	pal_metrics *m;
	pal_store *st; /* the thread's own connection, opened on first use */
	CURLM *multi;
	int64_t retained_ms;  /* monotonic time of the last retention pass (0: none) */
	atomic_bool stopping; /* set by pal_notifier_stop: a delivery under way
				 is aborted, the rest of the round handed back */
	pal_periodic *th;
};

int pal_webhook_sign(const char *secret, const char *id, int64_t timestamp, const char *body,
		     char *sig, size_t siglen, char *err, size_t errlen)
{
	static const char prefix[] = "whsec_";
	gsize klen = 0;
	guchar *key;

	if (strncmp(secret, prefix, sizeof prefix - 1) != 0 || !secret[sizeof prefix - 1]) {
		snprintf(err, errlen, "the secret is not a whsec_ secret");
		return PAL_EINVAL;
	}
	for (const char *p = secret + sizeof prefix - 1; *p; p++) {
		if (!g_ascii_isalnum(*p) && *p != '+' && *p != '/' && *p != '=') {
			snprintf(err, errlen, "the secret after whsec_ is not base64");
			return PAL_EINVAL;
		}
	}
	key = g_base64_decode(secret + sizeof prefix - 1, &klen);
	if (!key || klen == 0) {
		g_free(key);
		snprintf(err, errlen, "the secret after whsec_ is not base64");
		return PAL_EINVAL;
	}
	GHmac *h = g_hmac_new(G_CHECKSUM_SHA256, key, klen);
	char ts[24];
	guint8 mac[32];
	gsize mlen = sizeof mac;

	snprintf(ts, sizeof ts, "%" PRId64, timestamp);
	g_hmac_update(h, (const guchar *)id, (gssize)strlen(id));
	g_hmac_update(h, (const guchar *)".", 1);
	g_hmac_update(h, (const guchar *)ts, (gssize)strlen(ts));
	g_hmac_update(h, (const guchar *)".", 1);
	g_hmac_update(h, (const guchar *)body, (gssize)strlen(body));
	g_hmac_get_digest(h, mac, &mlen);
	g_hmac_unref(h);
	memset(key, 0, klen);
	g_free(key);
	gchar *b64 = g_base64_encode(mac, mlen);
	snprintf(sig, siglen, "v1,%s", b64);
	g_free(b64);
	return PAL_OK;
}

static size_t discard(char *p, size_t size, size_t n, void *ud)
{
	(void)p;
	(void)ud;
	return size * n;
}

/* libcurl's progress callback: non-zero aborts the transfer, so a stop
 * does not wait for a slow receiver's timeout. */
static int abort_on_stop(void *ud, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
	(void)a;
	(void)b;
	(void)c;
	(void)d;
	return atomic_load(&((struct pal_notifier *)ud)->stopping) ? 1 : 0;
}

char *pal_notify_absolute_console(const char *payload, const char *base)
{
	if (!base || !*base)
		return NULL;
	json_t *j = json_loads(payload, 0, NULL);
	json_t *d = json_object_get(j, "data");
	const char *path = json_string_value(json_object_get(d, "console"));
	char *out = NULL;
	if (path && path[0] == '/') {
		size_t n = strlen(base);
		while (n > 0 && base[n - 1] == '/')
			n--;
		char *link = g_strdup_printf("%.*s%s", (int)n, base, path);
		json_object_set_new(d, "console", json_string(link));
		g_free(link);
		out = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
	}
	json_decref(j);
	return out;
}

/* One delivery of a round: its notification, its request, then its
 * outcome. */
struct delivery {
	pal_notif v; /* the claimed row (its strings owned) */
	CURL *e;     /* NULL: not sent (why says so) */
	struct curl_slist *h;
	char *body; /* the body signed and sent: the link made absolute */
	int status; /* the HTTP status (0: none) */
	bool ok;    /* the receiver answered 2xx */
	char why[512];
};

/* Prepare D, the POST of notification V: its signed headers and body; false
 * (D->why set) when it cannot be sent. */
static bool prepare(struct pal_notifier *w, const pal_notif *v, struct delivery *d)
{
	pal_tpl_vars none = {.secrets = w->cfg.secrets, .tenant = v->tenant};
	char *secret = NULL, sig[128], terr[256];

	/* executor.target_hosts, as the executor checks a call's url: a url
	 * stored without the apply check is not sent; the delivery fails and
	 * is retried with backoff, so a node whose setting gives the host (a
	 * roll) may still deliver it.  A group's notify rule is the operator's
	 * channel (only a token without a tenant limit sets one, and no tenant
	 * changes its url): its deliveries are not judged by the job's
	 * tenant. */
	if (!v->group_rule && !pal_target_granted(w->cfg.targets, v->tenant, v->url)) {
		char shown[300], why[512];
		pal_url_redact(v->url, shown, sizeof shown);
		snprintf(d->why, sizeof d->why, "url %s: %s", shown,
			 pal_target_refusal(v->tenant, v->url, why, sizeof why));
		pal_log(PAL_LOG_WARN, "notify.target_refused", "{s:s, s:s, s:s, s:s}", "webhook_id",
			v->webhook_id, "event", v->event, "tenant", v->tenant ? v->tenant : "",
			"error", d->why);
		pal_metric_inc(w->m, M_TARGET_REFUSED, NULL, 1);
		return false;
	}
	if (pal_tpl_render(v->secret, &none, PAL_TPL_SECRETS, &secret, terr, sizeof terr)) {
		snprintf(d->why, sizeof d->why, "secret %s: %s", v->secret, terr);
		return false;
	}
	char *abs = pal_notify_absolute_console(v->payload, w->cfg.console_url);
	d->body = abs ? abs : strdup(v->payload);
	int64_t now = (int64_t)time(NULL);
	int rc = d->body ? pal_webhook_sign(secret, v->webhook_id, now, d->body, sig, sizeof sig,
					    terr, sizeof terr)
			 : PAL_ENOMEM;
	free(secret);
	if (rc) {
		snprintf(d->why, sizeof d->why, "secret %s: %s", v->secret,
			 d->body ? terr : "out of memory");
		return false;
	}
	char *lines[] = {
	    g_strdup_printf("webhook-id: %s", v->webhook_id),
	    g_strdup_printf("webhook-timestamp: %" PRId64, now),
	    g_strdup_printf("webhook-signature: %s", sig),
	    g_strdup_printf("Idempotency-Key: %s", v->webhook_id),
	    g_strdup("Content-Type: application/json"),
	    g_strdup("User-Agent: palisade-notify"),
	};
	for (size_t i = 0; i < G_N_ELEMENTS(lines); i++) {
		d->h = curl_slist_append(d->h, lines[i]);
		g_free(lines[i]);
	}
	CURL *e = curl_easy_init();
	if (!e) {
		snprintf(d->why, sizeof d->why, "out of memory");
		return false;
	}
	curl_easy_setopt(e, CURLOPT_URL, v->url);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, d->h);
	curl_easy_setopt(e, CURLOPT_POSTFIELDS, d->body);
	curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)strlen(d->body));
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, abort_on_stop);
	curl_easy_setopt(e, CURLOPT_XFERINFODATA, w);
	curl_easy_setopt(e, CURLOPT_PRIVATE, d);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, TIMEOUT_MS);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, TIMEOUT_MS);
	/* as the side-effect calls: a proxy only when executor.proxy says so */
	if (strcmp(w->cfg.proxy, "env") != 0)
		curl_easy_setopt(e, CURLOPT_PROXY, w->cfg.proxy);
	d->e = e;
	return true;
}

static int64_t backoff_ms(const struct pal_notifier *w, int attempts)
{
	int64_t d = BACKOFF_INITIAL_MS;
	for (int i = 1; i < attempts && d < w->cfg.backoff_max_ms; i++)
		d *= 2;
	return d < w->cfg.backoff_max_ms ? d : w->cfg.backoff_max_ms;
}

static void drop_conn(struct pal_notifier *w, const char *err)
{
	pal_log(PAL_LOG_WARN, "notify.db_failed", "{s:s}", "error", err);
	pal_store_close(w->st);
	w->st = NULL;
}

/* Record the outcome of delivery D in the outbox; false when the database
 * failed (the connection is dropped, and what the round has not recorded
 * yet goes back at its lease's expiry). */
static bool record(struct pal_notifier *w, struct delivery *d)
{
	const pal_notif *v = &d->v;
	char err[1024] = "";
	/* stopping: hand it back at once rather than at lease expiry */
	if (atomic_load(&w->stopping) && !d->ok) {
		if (pal_store_notif_done(w->st, v->id, w->cfg.node_id, false, d->status,
					 "not delivered: the node stopped", 0, w->cfg.retention_ms,
					 err, sizeof err)) {
			drop_conn(w, err);
			return false;
		}
		return true;
	}
	int64_t retry = d->ok ? 0 : backoff_ms(w, v->attempts);
	pal_metric_inc(w->m, d->ok ? M_DELIVERED : M_FAILED, NULL, 1);
	pal_log(d->ok ? PAL_LOG_DEBUG : PAL_LOG_INFO,
		d->ok ? "notify.delivered" : "notify.delivery_failed",
		"{s:s, s:s, s:i, s:i, s:s, s:I}", "webhook_id", v->webhook_id, "event", v->event,
		"attempt", v->attempts, "status", d->status, "error", d->why, "retry_ms",
		(json_int_t)retry);
	if (pal_store_notif_done(w->st, v->id, w->cfg.node_id, d->ok, d->status,
				 d->ok ? NULL : d->why, retry, w->cfg.retention_ms, err,
				 sizeof err)) {
		drop_conn(w, err);
		return false;
	}
	return true;
}

static void delivery_free(struct delivery *d)
{
	if (d->e)
		curl_easy_cleanup(d->e);
	curl_slist_free_all(d->h);
	free(d->body);
	pal_notif_clear(&d->v);
	free(d);
}

/* Claim up to IN_FLIGHT_MAX - LIVE->len due notifications (at most PER_URL
 * per receiver, counting those under way in LIVE), prepare each and start
 * those that can be sent; those that cannot are recorded at once.  The
 * number claimed, or -1 when the database failed (the connection is
 * dropped). */
static int claim_more(struct pal_notifier *w, GPtrArray *live)
{
	char err[1024] = "";
	const char **busy = g_new0(const char *, live->len + 1);
	for (guint i = 0; i < live->len; i++)
		busy[i] = ((struct delivery *)live->pdata[i])->v.url;
	pal_notif *v;
	size_t n;
	int rc =
	    pal_store_notif_claim(w->st, w->cfg.node_id, LEASE_MS, IN_FLIGHT_MAX - (int)live->len,
				  PER_URL, busy, live->len, &v, &n, err, sizeof err);
	g_free(busy);
	if (rc) {
		drop_conn(w, err);
		return -1;
	}
	bool db = true;
	for (size_t i = 0; i < n; i++) {
		struct delivery *d = calloc(1, sizeof *d);
		if (!d) { /* the rest is handed back at lease expiry */
			for (size_t j = i; j < n; j++)
				pal_notif_clear(&v[j]);
			break;
		}
		d->v = v[i]; /* its strings move to the delivery */
		if (!atomic_load(&w->stopping) && prepare(w, &d->v, d) &&
		    curl_multi_add_handle(w->multi, d->e) == CURLM_OK) {
			g_ptr_array_add(live, d);
			continue;
		}
		if (d->e && !d->why[0])
			snprintf(d->why, sizeof d->why, "cannot start the request");
		if (atomic_load(&w->stopping) && !d->why[0])
			snprintf(d->why, sizeof d->why, "not delivered: the node stopped");
		db = db && record(w, d);
		delivery_free(d);
	}
	free(v); /* the strings went to the deliveries */
	return db ? (int)n : -1;
}

/* The outbox's retention, every RETENTION_EVERY intervals; false when the
 * database failed (the connection is dropped). */
static bool retain(struct pal_notifier *w)
{
	char err[1024] = "";
	int64_t now = g_get_monotonic_time() / 1000;
	if (w->retained_ms && now - w->retained_ms < RETENTION_EVERY * w->cfg.interval_ms)
		return true;
	w->retained_ms = now;
	int64_t expired, pending;
	double oldest;
	if (pal_store_notif_retention(w->st, w->cfg.keep_delivered_ms, w->cfg.retention_ms,
				      &expired, &pending, &oldest, err, sizeof err)) {
		drop_conn(w, err);
		return false;
	}
	pal_metric_set(w->m, M_PENDING, NULL, (double)pending);
	pal_metric_set(w->m, M_OLDEST, NULL, oldest);
	if (expired) {
		pal_metric_inc(w->m, M_EXPIRED, NULL, (double)expired);
		pal_log(PAL_LOG_WARN, "notify.expired", "{s:I}", "notifications",
			(json_int_t)expired);
	}
	return true;
}

/*
 * A round: claim due notifications and send them at once, record each
 * outcome as it comes (each ends by its TIMEOUT_MS at the latest, or at
 * once when the node stops), and claim again whenever a delivery ends and
 * every notify.interval, for as long as any is under way (the retention
 * runs on its own schedule meanwhile).  So a receiver that never answers
 * holds at most PER_URL of the IN_FLIGHT_MAX deliveries, each for one
 * timeout, while every other receiver's notifications, older or newer than
 * its backlog, go out beside them within an interval; and a backlog to
 * receivers that answer is delivered as fast as they answer.  The round
 * ends when nothing is under way and nothing was due.
 */
static void deliver_round(struct pal_notifier *w)
{
	GPtrArray *live = g_ptr_array_new();
	int64_t claimed = 0; /* monotonic time of the last claim */
	bool db = true, again = true;
	for (;;) {
		int64_t now = g_get_monotonic_time() / 1000;
		bool stopping = atomic_load(&w->stopping);
		if (db && !stopping && live->len && !retain(w))
			db = false;
		if (db && !stopping && live->len < IN_FLIGHT_MAX &&
		    (again || now - claimed >= w->cfg.interval_ms)) {
			int got = claim_more(w, live);
			db = got >= 0;
			claimed = now;
			again = false;
			if (got <= 0 && live->len == 0)
				break;
		}
		if (live->len == 0 && (!again || !db || stopping))
			break;
		int running = 0;
		if (curl_multi_perform(w->multi, &running) != CURLM_OK)
			break;
		CURLMsg *msg;
		int left;
		bool ended = false;
		while ((msg = curl_multi_info_read(w->multi, &left))) {
			struct delivery *x = NULL;
			if (msg->msg != CURLMSG_DONE ||
			    curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&x) ||
			    !x)
				continue;
			if (msg->data.result != CURLE_OK) {
				snprintf(x->why, sizeof x->why, "%s",
					 curl_easy_strerror(msg->data.result));
			} else {
				long code = 0;
				curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &code);
				x->status = (int)code;
				x->ok = code >= 200 && code < 300;
				if (!x->ok)
					snprintf(x->why, sizeof x->why, "HTTP %ld", code);
			}
			curl_multi_remove_handle(w->multi, x->e);
			curl_easy_cleanup(x->e);
			x->e = NULL;
			g_ptr_array_remove_fast(live, x);
			db = db && record(w, x);
			delivery_free(x);
			again = ended = true;
		}
		if (live->len && !ended)
			curl_multi_poll(w->multi, NULL, 0, 100, NULL);
	}
	for (guint i = 0; i < live->len; i++) { /* never finished: the multi handle failed */
		struct delivery *d = live->pdata[i];
		curl_multi_remove_handle(w->multi, d->e);
		curl_easy_cleanup(d->e);
		d->e = NULL;
		snprintf(d->why, sizeof d->why, "no answer");
		db = db && record(w, d);
		delivery_free(d);
	}
	g_ptr_array_free(live, TRUE);
}

static void round_(void *arg)
{
	struct pal_notifier *w = arg;
	char err[1024] = "";

	if (!w->st && pal_store_open(w->cfg.conninfo, &w->st, err, sizeof err)) {
		drop_conn(w, err);
		return;
	}
	if (retain(w))
		deliver_round(w);
}

static void config_free(pal_notifier_config *c)
{
	free((void *)c->console_url);
	free((void *)c->conninfo);
	free((void *)c->node_id);
	free((void *)c->proxy);
}

int pal_notifier_start(const pal_notifier_config *cfg, pal_metrics *m, pal_notifier **out,
		       char *err, size_t errlen)
{
	*out = NULL;
	struct pal_notifier *w = calloc(1, sizeof *w);
	if (!w)
		return PAL_ENOMEM;
	w->cfg = *cfg;
	if (w->cfg.interval_ms <= 0)
		w->cfg.interval_ms = 1000;
	w->cfg.conninfo = strdup(cfg->conninfo ? cfg->conninfo : "");
	w->cfg.node_id = strdup(cfg->node_id ? cfg->node_id : "");
	w->cfg.proxy = strdup(cfg->proxy ? cfg->proxy : "");
	w->cfg.console_url = strdup(cfg->console_url ? cfg->console_url : "");
	w->m = m;
	w->multi = curl_multi_init();
	if (!w->cfg.conninfo || !w->cfg.node_id || !w->cfg.proxy || !w->cfg.console_url ||
	    !w->multi) {
		snprintf(err, errlen, "out of memory for the notification thread");
		pal_notifier_stop(w);
		return PAL_ENOMEM;
	}
	pal_metric_declare(m, M_PENDING, PAL_METRIC_GAUGE,
			   "notifications in the outbox not delivered yet (cluster-wide, at this "
			   "node's last retention pass)");
	pal_metric_declare(m, M_DELIVERED, PAL_METRIC_COUNTER,
			   "notifications this node delivered (the receiver answered 2xx)");
	pal_metric_declare(m, M_FAILED, PAL_METRIC_COUNTER,
			   "deliveries of notifications by this node that failed (no answer, not "
			   "2xx, or the secret missing); each is retried with backoff");
	pal_metric_declare(m, M_TARGET_REFUSED, PAL_METRIC_COUNTER,
			   "deliveries this node did not send because executor.target_hosts does "
			   "not give the url's host to the job's tenant (each also counts as a "
			   "failed delivery and is retried with backoff)");
	pal_metric_declare(m, M_EXPIRED, PAL_METRIC_COUNTER,
			   "undelivered notifications deleted past notify.retention by this node: "
			   "events lost to a receiver that stayed down");
	pal_metric_declare(
	    m, M_OLDEST, PAL_METRIC_GAUGE,
	    "age in seconds of the oldest notification in the outbox not delivered "
	    "yet, 0 when none is (cluster-wide, at this node's last retention pass): "
	    "grows while any one receiver is down");
	pal_metric_set(m, M_PENDING, NULL, 0);
	pal_metric_set(m, M_OLDEST, NULL, 0);
	pal_metric_inc(m, M_DELIVERED, NULL, 0);
	pal_metric_inc(m, M_FAILED, NULL, 0);
	pal_metric_inc(m, M_TARGET_REFUSED, NULL, 0);
	pal_metric_inc(m, M_EXPIRED, NULL, 0);
	if (pal_periodic_start(round_, w, w->cfg.interval_ms, &w->th)) {
		snprintf(err, errlen, "cannot start the notification thread");
		pal_notifier_stop(w);
		return PAL_EIO;
	}
	*out = w;
	return PAL_OK;
}

void pal_notifier_stop(pal_notifier *w)
{
	if (!w)
		return;
	atomic_store(&w->stopping, true);
	pal_periodic_stop(w->th);
	pal_store_close(w->st);
	if (w->multi)
		curl_multi_cleanup(w->multi);
	config_free(&w->cfg);
	free(w);
}
