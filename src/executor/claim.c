/*
 * claim.c - claiming triggers and starting their calls.
 *
 * A claim is one call of palisade_claim() on the executor's claim
 * connection, sent without blocking (pal__claim_send) and read when its
 * answer is complete (pal__claim_recv); the loop keeps driving HTTP
 * meanwhile.  It asks for up to min(batch, room) triggers ready within
 * executor.claim_ahead, within this node's group limits; the database
 * applies the cluster-wide ones.  A trigger claimed ahead of its instant
 * waits in PHASE_AHEAD (lease held) and is called at the instant, so that
 * the claim's own latency does not make the effect late.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/log.h"
#include "palisade/url.h"
#include "executor_int.h"

static int group_inflight(pal_executor *ex, const char *group)
{
	int n = 0;
	for (pal__call *k = ex->calls; k; k = k->next)
		n += !strcmp(k->c.group, group);
	return n;
}

bool pal__claim_busy(const pal_executor *ex)
{
	for (int i = 0; i < ex->n_cst; i++)
		if (ex->cst[i] && pal_store_busy(ex->cst[i]))
			return true;
	return false;
}

/* Send one claim on connection I; OTHERS: claims already in flight. */
static void send_one(pal_executor *ex, int i, int room, bool others)
{
	int limit = room < ex->cfg.batch ? room : ex->cfg.batch;
	pal_claim_group *g = calloc(ex->cfg.n_groups ? ex->cfg.n_groups : 1, sizeof *g);
	pal_claim_tenant *t = calloc(ex->cfg.n_tenants ? ex->cfg.n_tenants : 1, sizeof *t);
	if (!g || !t) {
		free(g);
		free(t);
		return;
	}
	int ng = 0;
	for (size_t j = 0; j < ex->cfg.n_groups; j++) {
		const pal_group_conf *gc = &ex->cfg.groups[j];
		/* A group with a per-node limit is claimed by one claim at a
		 * time: a claim in flight may take what is left of it. */
		int nr = gc->concurrency <= 0 ? limit
			 : others	      ? 0
					      : gc->concurrency - group_inflight(ex, gc->name);
		g[ng++] = (pal_claim_group){ .group = gc->name,
					     .node_remaining = nr < 0 ? 0 : nr,
					     .cluster_limit = gc->cluster_concurrency };
	}
	for (size_t j = 0; j < ex->cfg.n_tenants; j++)
		t[j] = (pal_claim_tenant){ .tenant = ex->cfg.tenants[j].name,
					   .cap = ex->cfg.tenants[j].cap,
					   .weight = ex->cfg.tenants[j].weight };
	char **open = pal_breakers_open_hosts(ex->breakers, pal_mono_ms());
	pal_claim_req q = { .node = ex->cfg.node_id,
			    .lease_ms = ex->cfg.lease_ms,
			    .limit = limit,
			    .ahead_ms = ex->cfg.claim_ahead_ms,
			    .open_hosts = (const char *const *)open,
			    .groups = g,
			    .n_groups = ng,
			    .tenants = t,
			    .n_tenants = (int)ex->cfg.n_tenants };
	char err[1024];
	ex->claim_sent_ms[i] = pal_mono_ms();
	ex->claim_limit[i] = limit;
	int rc = pal_store_claim_send(ex->cst[i], &q, err, sizeof err);
	g_strfreev(open);
	free(g);
	free(t);
	if (rc) {
		pal_log(PAL_LOG_ERROR, "executor.claim_failed", "{s:s}", "error", err);
		pal__drop_conn(ex, &ex->cst[i]);
	}
}

void pal__claim_send(pal_executor *ex)
{
	/* Room: calls in flight or waiting, and what the claims in flight may
	 * still bring.  A second claim goes out only while there is a backlog
	 * (the last claim came back full). */
	int room = ex->cfg.max_inflight - ex->inflight, busy = 0;
	for (int i = 0; i < ex->n_cst; i++)
		if (ex->cst[i] && pal_store_busy(ex->cst[i])) {
			room -= ex->claim_limit[i];
			busy++;
		}
	for (int i = 0; i < ex->n_cst && room > 0; i++) {
		if (!ex->cst[i] || pal_store_busy(ex->cst[i]))
			continue;
		if (busy && !ex->claim_full)
			break;
		send_one(ex, i, room, busy > 0);
		if (!ex->cst[i])
			continue;
		room -= ex->claim_limit[i];
		busy++;
		if (!ex->claim_full)
			break;
	}
}

/* K's instant has come (or it was due when claimed): judge the deadline,
 * the breaker, then start the query or the call. */
void pal__call_due(pal_executor *ex, pal__call *k)
{
	const pal_call_spec *s = k->spec->call;
	int64_t age = pal__db_ms(ex) - k->c.scheduled_at * 1000;
	if (s->retry.deadline_ms > 0 && age > s->retry.deadline_ms) {
		/* `failed`, or `manual` with a ticket while an earlier outcome
		 * is unknown */
		pal__spent(ex, k, "deadline", 0, "deadline");
		return;
	}
	pal__phase start = k->unknown && s->status_url ? PHASE_QUERY : PHASE_CALL;
	int64_t now = pal_mono_ms();
	if (!pal_breaker_allow(ex->breakers, k->host, now)) {
		if (pal_breaker_state_of(ex->breakers, k->host, now) == PAL_BREAKER_HALF_OPEN &&
		    pal_breaker_parked_count(ex->breakers, k->host) < PAL__PARK_PER_HOST) {
			/* The probe is in flight: wait for its verdict here rather
			 * than hand the trigger back and claim it again.  While
			 * calls are parked, claims leave the host alone. */
			pal__phase_park(ex, k, start);
			k->parked_ms = now;
			k->resume_at_ms = now + 100;
			return;
		}
		/* Back to pending without spending an attempt: the call never
		 * started (the commit gives the attempt back). */
		pal__queue_result(ex, k, PAL_TS_PENDING, "breaker_open", 0, 1000, NULL);
		return;
	}
	pal__phase_set(ex, k, start);
	pal__start_or_defer(ex, k);
}

static void begin_call(pal_executor *ex, pal_claimed *c, int64_t sent)
{
	pal__call *k = calloc(1, sizeof *k);
	if (!k)
		return; /* the lease expires; another claim takes it */
	k->ex = ex;
	k->c = *c;
	c->checkpoint = NULL; /* moved */
	k->retry_after_ms = -1;
	/* An earlier attempt sent its request and nobody knows its fate: the
	 * stored flag (cleared only by a status query's 404 or 2xx), an
	 * `unknown` state, or a lease lost while running (nothing was written:
	 * the request may have been sent). */
	k->unknown = k->c.unknown || k->c.prev_state == PAL_TS_UNKNOWN ||
		     k->c.prev_state == PAL_TS_RUNNING;
	char err[512] = "";
	bool transient = true;
	if (ex->spec_read_faults > 0) {
		ex->spec_read_faults--;
		snprintf(err, sizeof err, "fault injection: PALISADE_FAULT_SPEC_READ");
	} else if (ex->st) {
		k->spec = pal__spec_get(&ex->specs, ex->st, k->c.job_id, k->c.version, err, sizeof err,
					&transient);
	} else {
		snprintf(err, sizeof err, "no database connection to read the job version");
	}
	k->next = ex->calls;
	if (k->next)
		k->next->pprev = &k->next;
	k->pprev = &ex->calls;
	ex->calls = k;
	ex->inflight++;
	pal__leases_add(&ex->leases, k->c.id, k->c.fence, sent);
	atomic_fetch_add(&ex->claimed, 1);
	if (!k->spec && transient) {
		/* The version could not be read (a connection lost, a query
		 * that failed): nothing is wrong with the trigger.  It is given
		 * back, ready again in a second; if the database is gone, the
		 * lease expires and another claim takes it. */
		pal_log(PAL_LOG_WARN, "executor.spec_unavailable", "{s:s, s:i, s:s}", "job",
			k->c.job_id, "version", k->c.version, "error", err);
		pal__minc(ex, "palisade_executor_spec_unavailable_total", NULL, 1);
		pal__queue_result(ex, k, PAL_TS_PENDING, "spec_unavailable", 0, 1000,
				  NULL);
		return;
	}
	if (!k->spec) {
		pal_log(PAL_LOG_ERROR, "executor.spec_missing", "{s:s, s:i, s:s}", "job", k->c.job_id,
			"version", k->c.version, "error", err);
		pal__spent(ex, k, "bad_spec", 0, NULL);
		return;
	}
	pal_url_host(k->spec->call->url, k->host, sizeof k->host);
	int64_t wait = k->c.ready_ms - pal__db_ms(ex);
	if (wait > 0) {
		pal__phase_set(ex, k, PHASE_AHEAD);
		k->resume_at_ms = pal_mono_ms() + wait;
		return;
	}
	pal__call_due(ex, k);
}

/* Start the calls of the claimed batch O (taken over and emptied): their
 * versions are cached, or pal__spec_get reads each alone. */
static void start_batch(pal_executor *ex, int i, pal_claim_out *o)
{
	for (int j = 0; j < o->n; j++)
		begin_call(ex, &o->c[j], ex->claim_sent_ms[i]);
	pal_claimed_free(o->c, o->n);
	*o = (pal_claim_out){ 0 };
}

/* The versions a batch waits for, read on claim connection I. */
static void recv_specs(pal_executor *ex, int i)
{
	char err[1024];
	bool done;
	spec_want *w = &ex->spec_want[i];
	int rc = pal_store_consume(ex->cst[i], &done, err, sizeof err);
	if (!rc && !done)
		return;
	int64_t t0 = pal_mono_us();
	if (!rc && ex->spec_batch_faults > 0) {
		ex->spec_batch_faults--;
		snprintf(err, sizeof err, "fault injection: PALISADE_FAULT_SPEC_BATCH");
		rc = PAL_EDB;
	}
	if (!rc) {
		pal_call_spec **calls = calloc((size_t)w->n, sizeof *calls);
		rc = pal_store_call_specs_recv(ex->cst[i], calls ? w->n : 0, calls, err,
					       sizeof err);
		if (!rc && calls)
			pal__spec_fill(&ex->specs, w, calls);
		free(calls);
	}
	ex->specs.read_us += pal_mono_us() - t0;
	if (rc) {
		/* Each call reads its version alone (or hands its trigger back). */
		pal_log(PAL_LOG_WARN, "executor.spec_read_failed", "{s:i, s:s}", "versions", w->n,
			"error", err);
		pal__drop_conn(ex, &ex->cst[i]);
	}
	pal__spec_want_free(w);
	start_batch(ex, i, &ex->spec_wait[i]);
}

static void recv_one(pal_executor *ex, int i)
{
	char err[1024];
	bool done;
	if (pal_store_consume(ex->cst[i], &done, err, sizeof err)) {
		pal_log(PAL_LOG_ERROR, "executor.claim_failed", "{s:s}", "error", err);
		pal__drop_conn(ex, &ex->cst[i]);
		return;
	}
	if (!done)
		return;
	pal_claim_out o;
	if (pal_store_claim_recv(ex->cst[i], &o, err, sizeof err)) {
		pal_log(PAL_LOG_ERROR, "executor.claim_failed", "{s:s}", "error", err);
		pal__drop_conn(ex, &ex->cst[i]);
		return;
	}
	if (o.skipped)
		pal__minc(ex, "palisade_executor_skipped_total", NULL, o.skipped);
	if (o.n)
		pal__minc(ex, "palisade_executor_claimed_total", NULL, o.n);
	/* A full batch (half of what was asked, allowing for rows a
	 * concurrent claim took) means more is waiting: claim again at once.
	 * Otherwise sleep until the next trigger becomes ready (less the
	 * claim-ahead window), at most the poll interval; NOTIFY wakes the
	 * loop earlier. */
	int64_t now = pal_mono_ms();
	int64_t next = now + ex->cfg.poll_ms;
	ex->claim_full = o.n > 0 && o.n >= ex->claim_limit[i] / 2;
	if (ex->claim_full)
		next = now;
	else if (o.next_ready_ms > 0) {
		int64_t at = now + (o.next_ready_ms - ex->cfg.claim_ahead_ms - pal__db_ms(ex));
		if (at < next)
			next = at > now ? at : now;
	}
	ex->next_claim_ms = next;
	/* The versions of a batch in one statement, not one each (100,000
	 * jobs due on one second are 100,000 versions no call has read yet),
	 * sent on this connection and read without blocking: read in the
	 * loop, they held it 5.1-5.7 s of a 100,000-job burst of 11.5-14.6 s,
	 * during which no HTTP moved.  The calls start when they arrive. */
	spec_want w;
	if (!ex->spec_read_faults && pal__spec_missing(&ex->specs, o.c, o.n, &w) > 0) {
		if (!pal_store_call_specs_send(ex->cst[i], w.n, w.jobs, w.vers, err, sizeof err)) {
			ex->spec_wait[i] = o;
			ex->spec_want[i] = w;
			return;
		}
		pal_log(PAL_LOG_WARN, "executor.spec_read_failed", "{s:i, s:s}", "versions", w.n,
			"error", err);
		pal__spec_want_free(&w);
		pal__drop_conn(ex, &ex->cst[i]);
	}
	start_batch(ex, i, &o);
}

void pal__claim_recv(pal_executor *ex)
{
	for (int i = 0; i < ex->n_cst; i++) {
		if (!ex->cst[i] || !pal_store_busy(ex->cst[i]))
			continue;
		if (ex->spec_want[i].n)
			recv_specs(ex, i);
		else
			recv_one(ex, i);
	}
}

/* A parked call after the probe: start it if the breaker lets it (closed,
 * or it is the next probe), keep waiting while a probe is in flight, hand
 * it back (pending, attempt not spent) when the breaker opened again, the
 * node drains, or it waited PAL__PARK_MAX_MS. */
void pal__unpark(pal_executor *ex, pal__call *k, int64_t now, bool draining)
{
	if (!draining && now - k->parked_ms < PAL__PARK_MAX_MS) {
		if (!pal__leases_gate_open(&ex->leases)) {
			k->resume_at_ms = now + 100; /* no new side effects while closed */
			return;
		}
		if (pal_breaker_allow(ex->breakers, k->host, now)) {
			pal__phase_unpark(ex, k);
			pal__start_or_defer(ex, k);
			return;
		}
		if (pal_breaker_state_of(ex->breakers, k->host, now) == PAL_BREAKER_HALF_OPEN) {
			k->resume_at_ms = now + 100;
			return;
		}
	}
	pal__queue_result(ex, k, PAL_TS_PENDING, "breaker_open", 0, 1000, NULL);
}
