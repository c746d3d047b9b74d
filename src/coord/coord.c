/*
 * coord.c - ZooKeeper coordination (coord.h): the public API, the
 * coordination thread's loop, publication of the per-shard view, balance.
 *
 * Flow: pal_coord_open() starts the coordination thread, which opens the
 * session and registers the node (session.c), reports the outcome back to
 * open(), then loops: wait for an event (watcher, API request, timer), take
 * all pending events at once under mu, then without mu reconcile every dirty
 * shard (election.c), refresh nodes/ if it changed, run one balance step and
 * publish.  The protocol is described in docs/election.md.
 *
 * Threading: see coord_int.h.  API functions never call zoo_*; they read
 * the published view or post a request under mu and signal the thread.
 * pal_coord_handoff() and pal_coord_wait() block on the `changed` condvar.
 *
 * Ownership: pal_coord_open() copies the config; the pal_coord owns every
 * string, array and the ZooKeeper handle, and pal_coord_close() frees them.
 * The metrics registry is borrowed and must outlive the pal_coord.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <jansson.h>
#include "palisade/coord.h"
#include "palisade/log.h"
#include "coord_int.h"

#define RETRY_CONN_MS 100      /* re-check after a connection-class failure */
#define RETRY_LATER_MS 1000    /* back-off after any other failure */
#define BALANCE_PAUSE_MS 200   /* between two balance handoffs */
#define BALANCE_RECHECK_MS 300 /* over quota but nothing could be handed off */
#define DEFAULT_SESSION_MS 10000
#define AUTH_MAX 1024

/* Above the cluster's base (ROOT's own components, maybe shared by clusters
 * with other credentials): anyone may read and create, nobody may delete a
 * child (a cluster's base) or change the ACL. */
static struct ACL up_entries[] = {{0, {(char *)"world", (char *)"anyone"}}}; /* perms: open() */
static struct ACL_vector up_acl_auth = {1, up_entries};

/* ---- small helpers ------------------------------------------------------- */


void pal_coord__count(pal_coord *c, const char *name, const char *labels)
{
	if (c->m != NULL)
		pal_metric_inc(c->m, name, labels, 1);
}

static int led_count(const pal_coord *c)
{
	int n = 0;
	for (int i = 0; i < c->n_shards; i++)
		n += c->sh[i].leading;
	return n;
}

void pal_coord__publish(pal_coord *c)
{
	int led = 0;
	bool current;
	pthread_mutex_lock(&c->mu);
	/* Leadership is shown only if no session state change happened since
	 * this round began: a disconnect the watcher already published must not
	 * be undone by a round that started before it. */
	current = c->zk_connected && c->conn_changes == c->round_seq;
	bool changed = current != c->pub_connected;
	int64_t now = pal_wall_ms();
	for (int i = 0; i < c->n_shards; i++) {
		bool l = current && c->sh[i].leading && c->sh[i].verified;
		int64_t e = l ? c->sh[i].czxid : 0;
		if (c->pub[i].leading != l || c->pub[i].epoch != e) {
			changed = true;
			c->pub[i] = (pal_shard_lead){l, e, now};
		}
		led += l;
	}
	c->pub_connected = current;
	if (changed) {
		c->gen++;
		pthread_cond_broadcast(&c->changed);
	}
	pthread_mutex_unlock(&c->mu);
	if (c->m != NULL) {
		pal_metric_set(c->m, "palisade_coord_connected", NULL, current ? 1 : 0);
		pal_metric_set(c->m, "palisade_coord_shards_led", NULL, led);
	}
}

/* ---- balance -------------------------------------------------------------- */

/*
 * One balance step: when we lead more than ceil(shards / live controllers),
 * hand off one led shard (delete our znode, re-join at the tail), then pause
 * BALANCE_PAUSE_MS before the next, so that the successors' own decisions
 * can catch up and nothing flaps.
 *
 * "Live controllers" is the smaller of the controllers registered in nodes/
 * and the distinct candidates queued in the elections: a node that has
 * registered but not yet joined, or that is draining, takes nothing.
 *
 * Which shard: ZooKeeper gives a shard to the next in its queue, and that
 * node may itself be full and pass it on.  So we survey every election
 * (leaders are the queue heads, told apart by their uuids, which gives every
 * candidate's load) and pick the led shard whose queue reaches an
 * under-quota node soonest, then the least-loaded successor.  A shard then
 * moves straight to where it is needed when the queues allow, and otherwise
 * along the shortest chain.
 */
typedef struct {
	char uuid[PAL_COORD_UUID_HEX + 1];
	int load;
} balance_peer;

typedef struct {
	int *order; /* peer indexes of the queue after us, in queue order; owned */
	int len;
} balance_queue;

/* Index of the peer whose uuid NAME carries, added with load 0 if new.
 * PEERS has room for one more (the caller grows it per election). */
static int peer_of(balance_peer *peers, int *n, const char *name)
{
	const char *u = name + 3; /* "_c_" */
	for (int i = 0; i < *n; i++)
		if (strncmp(peers[i].uuid, u, PAL_COORD_UUID_HEX) == 0)
			return i;
	balance_peer *p = &peers[*n];
	memcpy(p->uuid, u, PAL_COORD_UUID_HEX);
	p->uuid[PAL_COORD_UUID_HEX] = '\0';
	p->load = 0;
	return (*n)++;
}

static coord_step balance_step(pal_coord *c)
{
	if (!c->balance || !c->controller || c->draining)
		return COORD_DONE;
	int led = led_count(c);
	int live = c->live_controllers > 0 ? c->live_controllers : 1;
	int64_t now = pal_mono_ms();
	if (led <= (c->n_shards + live - 1) / live) {
		c->balance_at_ms = 0;
		return COORD_DONE;
	}
	if (c->balance_at_ms != 0 && now < c->balance_at_ms)
		return COORD_DONE;

	/* Survey every election: who leads what, and who queues behind us. */
	int cap = 0, npeers = 0;
	balance_peer *peers = NULL;
	balance_queue *qs = calloc((size_t)c->n_shards, sizeof *qs);
	coord_step ret = COORD_DONE;
	if (qs == NULL)
		return COORD_LATER;
	for (int i = 0; i < c->n_shards; i++) {
		char dir[PAL_COORD_PATH_MAX];
		struct String_vector kids = {0, NULL};
		pal_coord__election_path(c, i, dir, sizeof dir);
		int zrc = zoo_get_children(c->zh, dir, 0, &kids);
		if (zrc == ZNONODE)
			continue;
		if (zrc != ZOK) {
			ret = pal_coord__classify(zrc);
			goto out;
		}
		if (npeers + kids.count > cap) {
			int ncap = (npeers + kids.count) * 2 + 8;
			balance_peer *np = realloc(peers, (size_t)ncap * sizeof *np);
			if (np == NULL) {
				deallocate_String_vector(&kids);
				ret = COORD_LATER;
				goto out;
			}
			peers = np;
			cap = ncap;
		}
		int valid = pal_coord__sort_queue(kids.data, kids.count);
		/* Foreign znodes found by the shard's election are no candidates. */
		int kept = 0;
		for (int j = 0; j < valid; j++) {
			if (pal_coord__is_foreign(&c->sh[i], kids.data[j])) {
				free(kids.data[j]);
				continue;
			}
			kids.data[kept++] = kids.data[j];
		}
		for (int j = valid; j < kids.count; j++)
			kids.data[kept + j - valid] = kids.data[j];
		kids.count -= valid - kept;
		valid = kept;
		for (int j = 0; j < valid; j++)
			(void)peer_of(peers, &npeers, kids.data[j]);
		if (valid > 0)
			peers[peer_of(peers, &npeers, kids.data[0])].load++;
		if (valid > 1 && c->sh[i].leading && !c->sh[i].dirty &&
		    pal_coord__name_has_uuid(kids.data[0], c->uuid)) {
			qs[i].order = malloc((size_t)(valid - 1) * sizeof *qs[i].order);
			for (int j = 1; qs[i].order != NULL && j < valid; j++)
				qs[i].order[qs[i].len++] = peer_of(peers, &npeers, kids.data[j]);
		}
		deallocate_String_vector(&kids);
	}
	int eff = npeers < live ? npeers : live;
	int quota = eff > 0 ? (c->n_shards + eff - 1) / eff : c->n_shards;
	int best = -1, best_hops = 0, best_load = 0;
	for (int i = c->n_shards - 1; i >= 0 && led > quota; i--) {
		if (qs[i].len == 0)
			continue;
		int hops = qs[i].len + 1; /* nobody under quota behind us */
		for (int j = 0; j < qs[i].len && hops > qs[i].len; j++)
			if (peers[qs[i].order[j]].load < quota &&
			    strcmp(peers[qs[i].order[j]].uuid, c->uuid) != 0)
				hops = j + 1;
		int load = peers[qs[i].order[0]].load;
		if (best < 0 || hops < best_hops || (hops == best_hops && load < best_load)) {
			best = i;
			best_hops = hops;
			best_load = load;
		}
	}
	if (best < 0) {
		/* Within quota for the candidates actually queued, or nobody
		 * queues behind us yet: look again shortly (joins take a moment). */
		c->balance_at_ms = now + BALANCE_RECHECK_MS;
		goto out;
	}
	coord_shard *s = &c->sh[best];
	pal_log(PAL_LOG_INFO, "coord.balance", "{s:i, s:i, s:i, s:i, s:I, s:i, s:i}", "led", led,
		"quota", quota, "controllers", eff, "shard", best, "epoch", (json_int_t)s->czxid,
		"hops", best_hops, "successor_leads", best_load);
	s->rejoin = HANDOFF_BALANCE;
	ret = pal_coord__reconcile(c, s);
	s->dirty = ret != COORD_DONE;
	c->balance_at_ms = now + BALANCE_PAUSE_MS;
out:
	if (ret != COORD_DONE && c->balance_at_ms <= now)
		c->balance_at_ms = now + RETRY_CONN_MS;
	for (int i = 0; i < c->n_shards; i++)
		free(qs[i].order);
	free(qs);
	free(peers);
	return ret;
}

/* ---- the coordination thread ---------------------------------------------- */

static void reset_shards_after_expiry(pal_coord *c)
{
	for (int i = 0; i < c->n_shards; i++) {
		coord_shard *s = &c->sh[i];
		free(s->node);
		free(s->watched);
		free(s->checked_pred);
		s->node = s->watched = s->checked_pred = NULL;
		s->czxid = 0;
		s->leading = s->verified = s->uncertain = s->counted_lost = false;
		s->rejoin = HANDOFF_NONE;
		s->dirty = true;
	}
}

/* The session is gone: every ephemeral of ours is deleted by the server.
 * Drop everything, open a new session with a new uuid, re-register. */
static void handle_expiry(pal_coord *c)
{
	char sid[24];
	snprintf(sid, sizeof sid, "0x%llx", (unsigned long long)c->session_id);
	pal_log(PAL_LOG_WARN, "coord.session.expired", "{s:s, s:s, s:i}", "session", sid, "uuid",
		c->uuid, "led", led_count(c));
	pal_coord__count(c, "palisade_coord_session_expiries_total", NULL);
	reset_shards_after_expiry(c);
	c->suspended = false;
	pal_coord__session_close(c);
	for (;;) {
		char err[256];
		if (pal_coord__session_open(c, false, -1, err, sizeof err) == 0)
			break;
		pthread_mutex_lock(&c->mu);
		bool stop = c->stop;
		pthread_mutex_unlock(&c->mu);
		if (stop)
			return;
		pal_log(PAL_LOG_WARN, "coord.session.reopen_failed", "{s:s}", "error", err);
		struct timespec ts = pal_mono_deadline(RETRY_LATER_MS);
		pthread_mutex_lock(&c->mu);
		while (!c->stop && pthread_cond_timedwait(&c->wake, &c->mu, &ts) == 0)
			;
		pthread_mutex_unlock(&c->mu);
	}
	c->nodes_dirty = true;
}

/* Nothing to wait for: some shard is dirty and no back-off is pending. */
static bool work_pending(const pal_coord *c)
{
	if (c->retry_at_ms != 0)
		return false;
	if (c->nodes_dirty || c->info_dirty)
		return true;
	for (int i = 0; i < c->n_shards; i++)
		if (c->sh[i].dirty)
			return true;
	return false;
}

typedef struct {
	bool stop, expired, disconnected, reconnected, handoff, connected;
} coord_events;

/* Wait for something to do and take every pending event (under mu). */
static coord_events take_events(pal_coord *c)
{
	coord_events ev = {0};
	int64_t due = 0;
	if (c->retry_at_ms != 0)
		due = c->retry_at_ms;
	if (c->balance_at_ms != 0 && (due == 0 || c->balance_at_ms < due))
		due = c->balance_at_ms;
	pthread_mutex_lock(&c->mu);
	for (;;) {
		bool any = c->stop || c->ev_connected || c->ev_disconnected || c->ev_expired ||
			   c->ev_nodes || c->req_handoff || c->drop_create_replies > 0 ||
			   c->info_next != NULL;
		for (int i = 0; i < c->n_shards && !any; i++)
			any = c->ev_watch[i] || c->req_resign[i];
		int64_t now = pal_mono_ms();
		/* Timers and pending work matter only while connected; while
		 * disconnected only an event can make progress. */
		bool timed = c->zk_connected && due != 0;
		if (any || (timed && now >= due) || (c->zk_connected && work_pending(c)))
			break;
		struct timespec ts = pal_mono_deadline(timed ? due - now : 60000);
		pthread_cond_timedwait(&c->wake, &c->mu, &ts);
	}
	ev.stop = c->stop;
	ev.expired = c->ev_expired;
	ev.disconnected = c->ev_disconnected;
	ev.reconnected = c->ev_connected;
	ev.handoff = c->req_handoff;
	ev.connected = c->zk_connected;
	c->ev_expired = c->ev_disconnected = c->ev_connected = c->req_handoff = false;
	if (c->ev_nodes)
		c->nodes_dirty = true;
	c->ev_nodes = false;
	if (c->info_next != NULL) {
		free(c->node_info);
		c->node_info = c->info_next; /* a new session registers with it too */
		c->info_next = NULL;
		c->info_dirty = true;
	}
	c->drop_creates += c->drop_create_replies;
	c->drop_create_replies = 0;
	for (int i = 0; i < c->n_shards; i++) {
		coord_shard *s = &c->sh[i];
		if (c->ev_watch[i]) {
			/* The watch is one-shot: whatever fired, re-arm on evaluation. */
			free(s->watched);
			s->watched = NULL;
			s->dirty = true;
			pal_coord__count(c, "palisade_coord_watch_events_total", NULL);
		}
		if (c->req_resign[i] && s->want && !c->draining) {
			s->rejoin = HANDOFF_RESIGN;
			s->dirty = true;
		}
		c->ev_watch[i] = c->req_resign[i] = false;
	}
	c->round_seq = c->conn_changes;
	pthread_mutex_unlock(&c->mu);
	return ev;
}

static void finish_handoff_if_done(pal_coord *c)
{
	if (!c->draining)
		return;
	for (int i = 0; i < c->n_shards; i++)
		if (c->sh[i].node != NULL || c->sh[i].uncertain)
			return;
	pthread_mutex_lock(&c->mu);
	if (!c->handoff_done) {
		c->handoff_done = true;
		pthread_cond_broadcast(&c->changed);
	}
	pthread_mutex_unlock(&c->mu);
}

/*
 * The order in which the shards are reconciled: shard order, except that a
 * drain withdraws the candidacies it does not lead first and the led ones
 * (rejoin HANDOFF_DRAIN) after them.  In shard order, a peer that won our
 * first led shard led one over its quota while we still queued behind it
 * in its own shards; its balance step then handed one of them to us, we
 * withdrew and it won the shard back with a new epoch (with 12,500 jobs a
 * shard: a drop and a whole reload, 200-400 ms on every graceful handoff of
 * the bench's 200,000 jobs).  A peer gains one of our shards only after the
 * last of our other candidacies is gone.  Used by a round and by the close.
 *
 * *K is the cursor, 0 to start; NULL after the last shard.
 */
static coord_shard *next_in_order(pal_coord *c, int *k)
{
	int n = c->n_shards, passes = c->draining ? 2 : 1;
	while (*k < passes * n) {
		coord_shard *s = &c->sh[*k % n];
		bool led_pass = *k / n == 1;
		(*k)++;
		if (!c->draining || (s->rejoin == HANDOFF_DRAIN) == led_pass)
			return s;
	}
	return NULL;
}

/* Write node_info to nodes/<node-id>.  Gone (the session expired): the
 * next session registers with it. */
static coord_step publish_info(pal_coord *c)
{
	int zrc = zoo_set(c->zh, c->self_path, c->node_info, (int)strlen(c->node_info), -1);
	return zrc == ZOK || zrc == ZNONODE ? COORD_DONE : pal_coord__classify(zrc);
}

static void run_round(pal_coord *c)
{
	int64_t now = pal_mono_ms();
	if (c->retry_at_ms != 0 && now >= c->retry_at_ms)
		c->retry_at_ms = 0;
	/* first: a drain's "draining" shows while its candidacies go */
	if (c->info_dirty) {
		coord_step st = publish_info(c);
		if (st == COORD_DONE)
			c->info_dirty = false;
		else
			c->retry_at_ms = now + (st == COORD_CONN ? RETRY_CONN_MS : RETRY_LATER_MS);
	}
	int k = 0;
	for (coord_shard *s; (s = next_in_order(c, &k));) {
		if (!s->dirty)
			continue;
		if (c->draining && c->fault_drain_ms > 0)
			usleep((useconds_t)c->fault_drain_ms * 1000);
		coord_step st = pal_coord__reconcile(c, s);
		if (st == COORD_DONE) {
			s->dirty = false;
		} else if (st == COORD_CONN) {
			c->retry_at_ms = now + RETRY_CONN_MS;
			break; /* the other shards would fail the same way */
		} else {
			c->retry_at_ms = now + RETRY_LATER_MS;
		}
	}
	if (c->nodes_dirty) {
		coord_step st = pal_coord__refresh_nodes(c);
		if (st == COORD_DONE)
			c->nodes_dirty = false;
		else if (c->retry_at_ms == 0)
			c->retry_at_ms = now + (st == COORD_CONN ? RETRY_CONN_MS : RETRY_LATER_MS);
	}
	if (balance_step(c) == COORD_CONN && c->retry_at_ms == 0)
		c->retry_at_ms = now + RETRY_CONN_MS;
	pal_coord__publish(c);
	bool clean = true;
	for (int i = 0; i < c->n_shards && clean; i++)
		clean = !c->sh[i].dirty;
	if (c->suspended && clean) {
		c->suspended = false;
		pal_log(PAL_LOG_INFO, "coord.resumed", "{s:i}", "led", led_count(c));
	}
	finish_handoff_if_done(c);
}

static int open_wait_ms(const pal_coord *c)
{
	int ms = 2 * c->session_timeout_ms;
	return ms < 5000 ? 5000 : ms > 30000 ? 30000 : ms;
}

static void *coord_main(void *arg)
{
	pal_coord *c = arg;
	char err[256] = "";
	int rc = pal_coord__session_open(c, true, open_wait_ms(c), err, sizeof err);
	pthread_mutex_lock(&c->mu);
	c->open_rc = rc;
	snprintf(c->open_err, sizeof c->open_err, "%s", err);
	c->open_done = true;
	pthread_cond_broadcast(&c->changed);
	pthread_mutex_unlock(&c->mu);
	if (rc != 0)
		return NULL;
	for (int i = 0; i < c->n_shards; i++) {
		c->sh[i].want = c->controller;
		c->sh[i].dirty = true;
	}
	c->nodes_dirty = true;

	for (;;) {
		coord_events ev = take_events(c);
		if (ev.stop)
			break;
		if (ev.handoff && !c->draining) {
			c->draining = true;
			pal_log(PAL_LOG_INFO, "coord.handoff", "{s:i}", "led", led_count(c));
			for (int i = 0; i < c->n_shards; i++) {
				c->sh[i].want = false;
				c->sh[i].dirty = true;
			}
		}
		if (ev.handoff) {
			/* Step down everywhere before the first delete is visible. */
			bool any = false;
			for (int i = 0; i < c->n_shards; i++) {
				coord_shard *s = &c->sh[i];
				if (s->leading && s->rejoin == HANDOFF_NONE)
					s->rejoin = HANDOFF_DRAIN;
				any |= s->leading;
				s->leading = false;
			}
			if (any)
				pal_coord__publish(c);
			finish_handoff_if_done(c);
		}
		if (ev.expired) {
			handle_expiry(c);
			finish_handoff_if_done(c);
			continue;
		}
		if (ev.disconnected && !c->suspended) {
			/* The watcher has already cleared the published view. */
			c->suspended = true;
			pal_log(PAL_LOG_WARN, "coord.suspended", "{s:i}", "led", led_count(c));
			pal_coord__count(c, "palisade_coord_suspensions_total", NULL);
		}
		if (ev.disconnected || ev.reconnected) {
			for (int i = 0; i < c->n_shards; i++) {
				c->sh[i].verified = false; /* until re-read in this connection */
				c->sh[i].dirty = true;
			}
			c->nodes_dirty = true;
		}
		if (!ev.connected)
			continue;
		run_round(c);
	}

	/* Shutdown: delete our znodes so successors need not wait for the
	 * session to close, then close it (which removes the rest anyway). */
	c->draining = true;
	bool connected;
	pthread_mutex_lock(&c->mu);
	connected = c->zk_connected;
	pthread_mutex_unlock(&c->mu);
	for (int i = 0; i < c->n_shards; i++) {
		coord_shard *s = &c->sh[i];
		s->want = false;
		if (s->node != NULL && s->rejoin == HANDOFF_NONE && s->leading)
			s->rejoin = HANDOFF_DRAIN;
	}
	int k = 0;
	for (coord_shard *s; connected && (s = next_in_order(c, &k));)
		if (pal_coord__reconcile(c, s) == COORD_CONN)
			connected = false;
	for (int i = 0; i < c->n_shards; i++)
		c->sh[i].leading = false;
	pal_coord__session_close(c);
	pthread_mutex_lock(&c->mu);
	int64_t now = pal_wall_ms();
	for (int i = 0; i < c->n_shards; i++)
		if (c->pub[i].leading)
			c->pub[i] = (pal_shard_lead){false, 0, now};
	c->pub_connected = false;
	c->gen++;
	c->handoff_done = true;
	pthread_cond_broadcast(&c->changed);
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

/* ---- public API ------------------------------------------------------------- */

static void coord_free(pal_coord *c)
{
	if (c == NULL)
		return;
	if (c->sh != NULL) {
		for (int i = 0; i < c->n_shards; i++) {
			free(c->sh[i].node);
			free(c->sh[i].watched);
			free(c->sh[i].checked_pred);
			for (int j = 0; j < c->sh[i].n_foreign; j++)
				free(c->sh[i].foreign[j]);
			free(c->sh[i].foreign);
		}
	}
	free(c->sh);
	free(c->pub);
	free(c->ev_watch);
	free(c->req_resign);
	pal_coord_free_list(c->nodes_cache);
	free(c->connect);
	if (c->auth != NULL)
		memset(c->auth, 0, strlen(c->auth));
	free(c->auth);
	free(c->ident);
	free(c->node_id);
	free(c->node_info);
	free(c->info_next);
	free(c->base);
	free(c->nodes_path);
	free(c->self_path);
	pthread_mutex_destroy(&c->mu);
	pthread_cond_destroy(&c->wake);
	pthread_cond_destroy(&c->changed);
	free(c);
}

static bool valid_name(const char *s)
{
	if (s == NULL || *s == '\0' || strcmp(s, ".") == 0 || strcmp(s, "..") == 0 ||
	    strlen(s) > 128)
		return false;
	for (; *s; s++)
		if (*s == '/' || (unsigned char)*s < 0x20)
			return false;
	return true;
}

static void declare_metrics(pal_metrics *m)
{
	if (m == NULL)
		return;
	pal_metric_declare(m, "palisade_coord_elections_total", PAL_METRIC_COUNTER,
			   "Shard elections by outcome: won (became leader) or lost (queued behind "
			   "a predecessor).");
	pal_metric_declare(
	    m, "palisade_coord_handoffs_total", PAL_METRIC_COUNTER,
	    "Shards this node stopped leading on purpose, by reason (balance, resign, drain).");
	pal_metric_declare(
	    m, "palisade_coord_suspensions_total", PAL_METRIC_COUNTER,
	    "ZooKeeper disconnects; all leadership is suspended until the session is re-checked.");
	pal_metric_declare(
	    m, "palisade_coord_session_expiries_total", PAL_METRIC_COUNTER,
	    "ZooKeeper session expiries; all shards were dropped and re-joined in a new session.");
	pal_metric_declare(m, "palisade_coord_connected", PAL_METRIC_GAUGE,
			   "1 while the ZooKeeper session is connected and the view is current.");
	pal_metric_declare(m, "palisade_coord_shards_led", PAL_METRIC_GAUGE,
			   "Shards this node currently leads.");
	pal_metric_declare(
	    m, "palisade_coord_watches_total", PAL_METRIC_COUNTER,
	    "Watches set on an election predecessor (one per predecessor change: no herd).");
	pal_metric_declare(m, "palisade_coord_watch_events_total", PAL_METRIC_COUNTER,
			   "Predecessor watches that fired and woke this node.");
	pal_metric_declare(m, "palisade_coord_foreign_znodes_total", PAL_METRIC_COUNTER,
			   "Election znodes ignored as foreign (not a registered palisade node's, "
			   "wrong ACL, persistent or badly named), by shard and reason.");
	pal_metric_declare(
	    m, "palisade_coord_create_recoveries_total", PAL_METRIC_COUNTER,
	    "Election znodes found again by uuid after a create whose reply was lost.");
	/* Counters start at 0, so that increase() and absent() see them
	 * before the first event. */
	static const char *const zero[][2] = {
		{ "palisade_coord_handoffs_total", "reason=\"balance\"" },
		{ "palisade_coord_handoffs_total", "reason=\"resign\"" },
		{ "palisade_coord_handoffs_total", "reason=\"drain\"" },
		{ "palisade_coord_suspensions_total", NULL },
		{ "palisade_coord_session_expiries_total", NULL },
		{ "palisade_coord_watches_total", NULL },
		{ "palisade_coord_watch_events_total", NULL },
		{ "palisade_coord_create_recoveries_total", NULL },
	};
	for (size_t i = 0; i < sizeof zero / sizeof zero[0]; i++)
		pal_metric_inc(m, zero[i][0], zero[i][1], 0);
}

int pal_coord_auth_load(const char *file, const char *env, char **out, char *err, size_t errlen)
{
	*out = NULL;
	char buf[AUTH_MAX + 2];
	const char *src;
	if (file != NULL && *file != '\0') {
		FILE *f = fopen(file, "r");
		if (f == NULL) {
			snprintf(err, errlen, "cannot read ZooKeeper credentials from %s: %s", file,
				 strerror(errno));
			return PAL_EINVAL;
		}
		if (fgets(buf, sizeof buf, f) == NULL)
			buf[0] = '\0';
		fclose(f);
		buf[strcspn(buf, "\r\n")] = '\0';
		src = file;
	} else {
		const char *name = env != NULL ? env : "PALISADE_ZK_AUTH";
		const char *v = *name != '\0' ? getenv(name) : NULL;
		if (v == NULL || *v == '\0')
			return 0;
		if (strlen(v) > AUTH_MAX) {
			snprintf(err, errlen, "$%s: credentials longer than %d bytes", name, AUTH_MAX);
			return PAL_EINVAL;
		}
		snprintf(buf, sizeof buf, "%s", v);
		src = name;
	}
	const char *colon = strchr(buf, ':');
	if (colon == NULL || colon == buf || strlen(buf) > AUTH_MAX) {
		snprintf(err, errlen,
			 "%s: ZooKeeper credentials must be user:password on one line (at most %d "
			 "bytes)",
			 src, AUTH_MAX);
		memset(buf, 0, sizeof buf);
		return PAL_EINVAL;
	}
	*out = strdup(buf);
	memset(buf, 0, sizeof buf);
	if (*out == NULL) {
		snprintf(err, errlen, "out of memory");
		return PAL_ENOMEM;
	}
	return 0;
}

static char *dup_or(const char *s, const char *dflt)
{
	return strdup(s != NULL && *s != '\0' ? s : dflt);
}

int pal_coord_open(const pal_coord_config *cfg, pal_metrics *m, pal_coord **out, char *err,
		   size_t errlen)
{
	*out = NULL;
	const char *root = cfg->root && *cfg->root ? cfg->root : "/palisade";
	const char *cluster = cfg->cluster && *cfg->cluster ? cfg->cluster : "default";
	if (cfg->connect == NULL || *cfg->connect == '\0') {
		snprintf(err, errlen,
			 "no ZooKeeper connect string (expected host:port[,host:port...])");
		return PAL_EINVAL;
	}
	if (!valid_name(cfg->node_id)) {
		snprintf(err, errlen,
			 "invalid node id \"%s\" (expected 1-128 characters without '/')",
			 cfg->node_id ? cfg->node_id : "");
		return PAL_EINVAL;
	}
	if (root[0] != '/' || (strlen(root) > 1 && root[strlen(root) - 1] == '/') ||
	    strlen(root) > 200) {
		snprintf(err, errlen,
			 "invalid ZooKeeper root \"%s\" (expected an absolute path like /palisade)",
			 root);
		return PAL_EINVAL;
	}
	if (!valid_name(cluster)) {
		snprintf(err, errlen,
			 "invalid cluster name \"%s\" (expected 1-128 characters without '/')",
			 cluster);
		return PAL_EINVAL;
	}
	if (cfg->n_shards < 1 || cfg->n_shards > PAL_COORD_MAX_SHARDS) {
		snprintf(err, errlen, "invalid shard count %d (expected 1..%d)", cfg->n_shards,
			 PAL_COORD_MAX_SHARDS);
		return PAL_EINVAL;
	}
	if (cfg->session_timeout_ms < 0) {
		snprintf(err, errlen, "invalid session timeout %d ms", cfg->session_timeout_ms);
		return PAL_EINVAL;
	}

	pal_coord *c = calloc(1, sizeof *c);
	if (c == NULL)
		goto nomem;
	pthread_mutex_init(&c->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->wake, &ca);
	pthread_cond_init(&c->changed, &ca);
	pthread_condattr_destroy(&ca);
	c->n_shards = cfg->n_shards;
	c->session_timeout_ms =
	    cfg->session_timeout_ms > 0 ? cfg->session_timeout_ms : DEFAULT_SESSION_MS;
	c->controller = cfg->controller;
	c->balance = cfg->balance;
	const char *fd = getenv("PALISADE_FAULT_SLOW_DRAIN_MS"); /* drills only */
	c->fault_drain_ms = fd ? atoi(fd) : 0;
	if (c->fault_drain_ms > 0)
		pal_log(PAL_LOG_WARN, "coord.fault_injection", "{s:s, s:i}", "fault",
			"each candidacy a drain withdraws takes longer", "ms", c->fault_drain_ms);
	c->m = m;
	c->connect = strdup(cfg->connect); /* passed to the client as given: host:port,... */
	c->acl = &ZOO_OPEN_ACL_UNSAFE;
	c->up_acl = &ZOO_OPEN_ACL_UNSAFE;
	if (cfg->auth != NULL && *cfg->auth != '\0') {
		if ((c->auth = strdup(cfg->auth)) == NULL)
			goto nomem;
		c->acl = &ZOO_CREATOR_ALL_ACL;
		up_entries[0].perms = ZOO_PERM_READ | ZOO_PERM_CREATE; /* the library's constants */
		c->up_acl = &up_acl_auth;
	}
	c->node_id = strdup(cfg->node_id);
	c->node_info = dup_or(cfg->node_info, "{}");
	c->sh = calloc((size_t)c->n_shards, sizeof *c->sh);
	c->pub = calloc((size_t)c->n_shards, sizeof *c->pub);
	c->ev_watch = calloc((size_t)c->n_shards, sizeof *c->ev_watch);
	c->req_resign = calloc((size_t)c->n_shards, sizeof *c->req_resign);
	c->nodes_cache = calloc(1, sizeof *c->nodes_cache);
	if (asprintf(&c->base, "%s/%s", strcmp(root, "/") == 0 ? "" : root, cluster) < 0)
		c->base = NULL;
	if (c->base && asprintf(&c->nodes_path, "%s/nodes", c->base) < 0)
		c->nodes_path = NULL;
	if (c->nodes_path && asprintf(&c->self_path, "%s/%s", c->nodes_path, c->node_id) < 0)
		c->self_path = NULL;
	if (!c->connect || !c->node_id || !c->node_info || !c->sh || !c->pub || !c->ev_watch ||
	    !c->req_resign || !c->nodes_cache || !c->self_path)
		goto nomem;
	for (int i = 0; i < c->n_shards; i++) {
		c->sh[i].c = c;
		c->sh[i].idx = i;
	}
	declare_metrics(m);
	/* Process-wide setting of the client library: warnings and errors only,
	 * delivered through zk_log (session.c) as structured log lines. */
	zoo_set_debug_level(ZOO_LOG_LEVEL_WARN);

	int prc = pthread_create(&c->thread, NULL, coord_main, c);
	if (prc != 0) {
		snprintf(err, errlen, "cannot start the coordination thread: %s", strerror(prc));
		coord_free(c);
		return PAL_ENOMEM;
	}
	pthread_mutex_lock(&c->mu);
	while (!c->open_done)
		pthread_cond_wait(&c->changed, &c->mu);
	int rc = c->open_rc;
	pthread_mutex_unlock(&c->mu);
	if (rc != 0) {
		snprintf(err, errlen, "%s", c->open_err);
		pthread_join(c->thread, NULL);
		coord_free(c);
		return rc;
	}
	*out = c;
	return 0;
nomem:
	snprintf(err, errlen, "out of memory");
	coord_free(c);
	return PAL_ENOMEM;
}

uint64_t pal_coord_snapshot(pal_coord *c, pal_shard_lead *out, bool *connected)
{
	pthread_mutex_lock(&c->mu);
	memcpy(out, c->pub, (size_t)c->n_shards * sizeof *out);
	if (connected != NULL)
		*connected = c->pub_connected;
	uint64_t gen = c->gen;
	pthread_mutex_unlock(&c->mu);
	return gen;
}

uint64_t pal_coord_wait(pal_coord *c, uint64_t gen, int timeout_ms)
{
	struct timespec ts = pal_mono_deadline(timeout_ms > 0 ? timeout_ms : 0);
	pthread_mutex_lock(&c->mu);
	uint64_t kicks = c->kicks;
	while (c->gen == gen && c->kicks == kicks && timeout_ms > 0) {
		if (pthread_cond_timedwait(&c->changed, &c->mu, &ts) == ETIMEDOUT)
			break;
	}
	uint64_t now = c->gen;
	pthread_mutex_unlock(&c->mu);
	return now;
}

void pal_coord_wake(pal_coord *c)
{
	pthread_mutex_lock(&c->mu);
	c->kicks++;
	pthread_cond_broadcast(&c->changed);
	pthread_mutex_unlock(&c->mu);
}

void pal_coord_set_info(pal_coord *c, const char *info)
{
	char *copy = strdup(info);
	if (copy == NULL)
		return; /* the registration keeps its older data */
	pthread_mutex_lock(&c->mu);
	free(c->info_next);
	c->info_next = copy;
	pthread_cond_signal(&c->wake);
	pthread_mutex_unlock(&c->mu);
}

void pal_coord_resign(pal_coord *c, int shard)
{
	if (shard < 0 || shard >= c->n_shards) {
		pal_log(PAL_LOG_WARN, "coord.resign_ignored", "{s:i, s:s}", "shard", shard,
			"reason", "no such shard");
		return;
	}
	pthread_mutex_lock(&c->mu);
	c->req_resign[shard] = true;
	pthread_cond_signal(&c->wake);
	pthread_mutex_unlock(&c->mu);
}

/* Returns 0 when every election znode of ours is deleted (or we never had
 * any), PAL_EBUSY when TIMEOUT_MS passed first (typically: disconnected;
 * the deletes continue in the background and the session's end removes the
 * rest).  Leadership is published as given up before the first delete. */
int pal_coord_handoff(pal_coord *c, int timeout_ms)
{
	struct timespec ts = pal_mono_deadline(timeout_ms > 0 ? timeout_ms : 0);
	pthread_mutex_lock(&c->mu);
	if (!c->handoff_done) {
		c->req_handoff = true;
		pthread_cond_signal(&c->wake);
	}
	while (!c->handoff_done) {
		if (pthread_cond_timedwait(&c->changed, &c->mu, &ts) == ETIMEDOUT)
			break;
	}
	int rc = c->handoff_done ? 0 : PAL_EBUSY;
	pthread_mutex_unlock(&c->mu);
	return rc;
}

char **pal_coord_nodes(pal_coord *c)
{
	pthread_mutex_lock(&c->mu);
	size_t n = 0;
	while (c->nodes_cache && c->nodes_cache[n])
		n++;
	char **list = calloc(n + 1, sizeof *list);
	for (size_t i = 0; list != NULL && i < n; i++) {
		if ((list[i] = strdup(c->nodes_cache[i])) == NULL) {
			pal_coord_free_list(list);
			list = NULL;
		}
	}
	pthread_mutex_unlock(&c->mu);
	return list;
}

void pal_coord_free_list(char **list)
{
	if (list == NULL)
		return;
	for (char **p = list; *p; p++)
		free(*p);
	free(list);
}

void pal_coord_debug_drop_create_replies(pal_coord *c, int n)
{
	pthread_mutex_lock(&c->mu);
	c->drop_create_replies += n > 0 ? n : 0;
	pthread_cond_signal(&c->wake);
	pthread_mutex_unlock(&c->mu);
}

void pal_coord_close(pal_coord *c)
{
	if (c == NULL)
		return;
	pthread_mutex_lock(&c->mu);
	c->stop = true;
	pthread_cond_signal(&c->wake);
	pthread_mutex_unlock(&c->mu);
	pthread_join(c->thread, NULL);
	coord_free(c);
}
