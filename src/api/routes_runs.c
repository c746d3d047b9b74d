/*
 * routes_runs.c - the HTTP API's routes of runs (api_int.h): a job's
 * trigger, backfill and cancel, a trigger's cancel and attempts, the
 * triggers and misfires of a job, the tickets and their resolution.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <glib.h>
#include "palisade/apistore.h"
#include "palisade/template.h"
#include "palisade/lifecycle.h"
#include "palisade/timefmt.h"
#include "palisade/trace.h"
#include "api_int.h"

/*
 * The request id a run takes from the Idempotency-Key header (none in the
 * body): "TOKEN:KEY", the key in the calling token's name space, as the
 * idempotency layer keeps keys per token.  Request ids are unique per job,
 * so two systems that send the same key for two events get two runs, and
 * a retried event of one system (after the day its answer is kept) finds
 * its own run.  A pair longer than a request id may be takes the key's
 * SHA-256 instead: "TOKEN::HEX", cut to fit.  Into OUT (at least
 * PAL_TPL_REQUEST_ID_MAX + 1 bytes); false when KEY is not made of a
 * request id's characters.
 */
static bool header_request_id(const call *c, const char *key, char *out)
{
	if (!pal_ops_request_id_ok(key))
		return false;
	size_t room = PAL_TPL_REQUEST_ID_MAX + 1;
	int n = snprintf(out, room, "%s:%s", c->who.name, key);
	if (n >= 0 && (size_t)n < room)
		return true;
	char *hex = g_compute_checksum_for_string(G_CHECKSUM_SHA256, key, -1);
	snprintf(out, room, "%s::%s", c->who.name, hex);
	g_free(hex);
	return true;
}

#define BACKFILL_MAX 1000 /* instants of a backfill (its --max default) */

PAL_API_ACCEPTS(job_trigger, "reason at request_id new_effect", "");
void pal_api__h_job_trigger(call *c)
{
	if (!pal_api__job_visible(c, true))
		return;
	const char *why, *at_s, *rid;
	if (!pal_api__reason(c, false, &why) || !pal_api__body_str(c, "at", &at_s) ||
	    !pal_api__body_str(c, "request_id", &rid))
		return;
	json_t *ne = json_object_get(c->body, "new_effect");
	if (ne && !json_is_boolean(ne)) {
		pal_api__problem(c, 422, "invalid", "Invalid request",
				 "field \"new_effect\" must be a boolean");
		return;
	}
	int64_t at = PAL_OPS_NOW;
	if (at_s && pal_parse_rfc3339(at_s, &at)) {
		pal_api__problem(c, 422, "invalid", "Invalid request",
				 "at \"%.40s\": expected RFC 3339 (2026-01-01T00:00:00Z)", at_s);
		return;
	}
	if (at_s && pal_rfc3339_has_fraction(at_s)) {
		pal_api__problem(c, 422, "invalid", "Invalid request",
				 "at \"%.40s\": instants are whole seconds; a fraction would be "
				 "cut off and name another instant",
				 at_s);
		return;
	}
	char from_key[PAL_TPL_REQUEST_ID_MAX + 1];
	const char *key = pal_api__header(c, "Idempotency-Key");
	if (!rid && key) {
		if (!header_request_id(c, key, from_key)) {
			pal_api__problem(
			    c, 422, "invalid", "Invalid request",
			    "Idempotency-Key \"%.40s\" as the run's request id: expected "
			    "characters of A-Z a-z 0-9 . _ : -, or a request_id",
			    key);
			return;
		}
		rid = from_key;
	}
	char uuid[37];
	if (!rid) {
		if (pal_ops_uuid4(uuid)) {
			pal_api__problem(c, 500, "internal", "Internal error",
					 "no random request id");
			return;
		}
		rid = uuid;
	}
	if (!pal_ops_request_id_ok(rid)) {
		pal_api__problem(
		    c, 422, "invalid", "Invalid request",
		    "request_id \"%.40s\": expected 1-128 characters of A-Z a-z 0-9 . _ : -", rid);
		return;
	}
	char err[1024];
	const char *job = c->arg[0];
	bool retired;
	int rc = pal_store_job_retired(c->api->st, job, &retired, err, sizeof err);
	if (rc) {
		pal_api__problem_rc(c, rc, err);
		return;
	}
	if (retired) {
		pal_api__problem(c, 409, "job-retired", "The job is retired",
				 "job %s is retired; apply it again to run it", job);
		return;
	}
	/* An earlier attempt at that instant whose outcome is unknown: a run
	 * with a new key could make its effect twice (as `palisade trigger`). */
	if (at != PAL_OPS_NOW && !json_is_true(ne)) {
		json_t *unk = NULL;
		if ((rc = pal_store_unknown_at(c->api->st, job, at, &unk, err, sizeof err))) {
			pal_api__problem_rc(c, rc, err);
			return;
		}
		size_t i, n = 0;
		json_t *t;
		json_array_foreach(unk, i, t)
		{
			const char *r = json_string_value(json_object_get(t, "request_id"));
			n += !(r && !strcmp(r, rid));
		}
		json_decref(unk);
		if (n) {
			pal_api__problem(
			    c, 409, "unknown-outcome",
			    "An earlier attempt at that instant has an unknown outcome",
			    "job %s at %s already had %zu trigger(s) whose effect may have "
			    "happened; resolve its ticket, or send \"new_effect\": true",
			    job, at_s, n);
			return;
		}
	}
	pal_run_result r = {0};
	rc = pal_ops_trigger(c->api->st, job, at, rid, json_is_true(ne), c->who.name, why, &r, err,
			     sizeof err);
	if (rc == PAL_ESTALE && r.refused[0]) {
		if (!strcmp(r.refused, "job-retired"))
			pal_api__problem(c, 409, "job-retired", "The job is retired", "%s", err);
		else if (!strcmp(r.refused, "unknown-outcome"))
			pal_api__problem(
			    c, 409, "unknown-outcome",
			    "An earlier attempt at that instant has an unknown outcome", "%s", err);
		else
			pal_api__problem(c, 409, "scheduled-instant",
					 r.waits_upstream
					     ? "The dependency planner runs the instant once its "
					       "upstreams end"
					     : "The instant is still to come in the job's schedule",
					 "%s", err);
		pal_run_result_clear(&r);
		return;
	}
	if (rc) {
		pal_api__problem_rc(c, rc, err);
		pal_run_result_clear(&r);
		return;
	}
	/* the pauses that hold the run until their resume (written already:
	 * a failed read of them leaves the field out) */
	json_t *held = NULL;
	if (pal_store_job_held_json(c->api->st, r.ids, &held, err, sizeof err))
		held = NULL;
	char ts[32];
	pal_fmt_rfc3339(r.at, ts, sizeof ts);
	pal_api__ok(c, r.existed ? 200 : 201,
		    json_pack("{s:s, s:s, s:b, s:i, s:s, s:O, s:o*}", "job_id", job, "request_id",
			      rid, "existed", r.existed, "version", r.version, "scheduled_at", ts,
			      "trigger_ids", r.ids, "held_by", held));
	pal_run_result_clear(&r);
}

static json_t *cancel_json(const pal_cancel_result *r)
{
	return json_pack(
	    "{s:I, s:I, s:I, s:I, s:I, s:o, s:s?}", "pending_to_cancelled",
	    (json_int_t)r->from_pending, "retry_wait_to_cancelled", (json_int_t)r->from_retry_wait,
	    "paused_to_cancelled", (json_int_t)r->from_paused, "running_to_cancelling",
	    (json_int_t)r->to_cancelling, "expired", (json_int_t)r->expired, "left",
	    r->left ? json_incref(r->left) : json_object(), "state", r->state[0] ? r->state : NULL);
}

static void cancel(call *c, int64_t trigger, const char *job)
{
	const char *why;
	if (!pal_api__reason(c, false, &why))
		return;
	pal_cancel_result r = {0};
	char err[1024];
	int rc = pal_ops_cancel(c->api->st, trigger, job, c->who.name, why, &r, err, sizeof err);
	if (rc)
		pal_api__problem_rc(c, rc, err);
	else
		pal_api__ok(c, 200, cancel_json(&r));
	pal_cancel_result_clear(&r);
}

PAL_API_ACCEPTS(job_cancel, "reason", "");
void pal_api__h_job_cancel(call *c)
{
	if (pal_api__job_visible(c, true))
		cancel(c, 0, c->arg[0]);
}

/* Trigger {id} of the path: its id, visible to the token (as job_visible). */
static bool trigger_visible(call *c, bool write, int64_t *id)
{
	char *end, job[129], tenant[65], err[512];
	long long v = strtoll(c->arg[0], &end, 10);
	if (*end || v <= 0) {
		pal_api__problem(c, 404, "not-found", "Not found", "no trigger \"%.40s\"",
				 c->arg[0]);
		return false;
	}
	*id = v;
	int rc = pal_apistore_trigger_job(c->api->st, v, job, tenant, err, sizeof err);
	if (rc) {
		pal_api__problem_rc(c, rc, err);
		return false;
	}
	return pal_api__tenant_allowed(c, tenant, write, "trigger", c->arg[0]);
}

PAL_API_ACCEPTS(trigger_cancel, "reason", "");
void pal_api__h_trigger_cancel(call *c)
{
	int64_t id;
	if (trigger_visible(c, true, &id))
		cancel(c, id, NULL);
}

PAL_API_ACCEPTS(trigger_attempts, "", "limit cursor");
void pal_api__h_trigger_attempts(call *c)
{
	int64_t id;
	int limit;
	json_t *rows;
	char *next, err[1024];
	if (!trigger_visible(c, false, &id) || !pal_api__page_limit(c, &limit))
		return;
	int rc = pal_apistore_attempts_page(c->api->st, id, pal_api__query(c, "cursor"), limit,
					    &rows, &next, err, sizeof err);
	pal_api__page_answer(c, rc, rows, next, err);
}

/* A backfill refused in the current state (res->refused): 409 of that
 * type, as `trigger`'s refusals; false when RC is another answer. */
static bool backfill_refused(call *c, int rc, const pal_backfill_result *r, const char *err)
{
	if (rc != PAL_ESTALE || !r->refused[0])
		return false;
	if (!strcmp(r->refused, "job-retired"))
		pal_api__problem(c, 409, "job-retired", "The job is retired", "%s", err);
	else if (!strcmp(r->refused, "scheduled-instant"))
		pal_api__problem(c, 409, "scheduled-instant",
				 "The scheduler runs an instant of the range", "%s", err);
	else
		pal_api__problem(c, 409, "unknown-outcome",
				 "An earlier attempt at an instant has an unknown outcome", "%s", err);
	return true;
}

PAL_API_ACCEPTS(job_backfill, "reason from to request_id max new_effect", "");
void pal_api__h_job_backfill(call *c)
{
	const char *why, *rid;
	int64_t from, to;
	if (!pal_api__job_visible(c, true) || !pal_api__reason(c, false, &why) ||
	    !pal_api__body_time(c, "from", true, &from) ||
	    !pal_api__body_time(c, "to", true, &to) || !pal_api__body_str(c, "request_id", &rid))
		return;
	json_t *mx = json_object_get(c->body, "max");
	if (mx && (!json_is_integer(mx) || json_integer_value(mx) < 1)) {
		pal_api__problem(c, 422, "invalid", "Invalid request",
				 "\"max\" must be a positive integer");
		return;
	}
	json_t *ne = json_object_get(c->body, "new_effect");
	if (ne && !json_is_boolean(ne)) {
		pal_api__problem(c, 422, "invalid", "Invalid request",
				 "field \"new_effect\" must be a boolean");
		return;
	}
	char from_key[PAL_TPL_REQUEST_ID_MAX + 1];
	const char *key = pal_api__header(c, "Idempotency-Key");
	if (!rid && key && header_request_id(c, key, from_key))
		rid = from_key;
	else if (!rid && key)
		rid = key; /* refused just below, as a request_id is */
	char uuid[37], err[1024];
	if (!rid && pal_ops_uuid4(uuid) == 0)
		rid = uuid;
	if (!rid || !pal_ops_request_id_ok(rid)) {
		pal_api__problem(c, 422, "invalid", "Invalid request",
				 "request_id: expected 1-128 characters of A-Z a-z 0-9 . _ : -");
		return;
	}
	pal_backfill_result r;
	int rc = pal_ops_backfill(c->api->st, c->arg[0], from, to,
				  mx ? json_integer_value(mx) : BACKFILL_MAX, rid, json_is_true(ne),
				  c->who.name, why, &r, err, sizeof err);
	if (backfill_refused(c, rc, &r, err))
		return;
	if (rc)
		pal_api__problem_rc(c, rc, err);
	else
		pal_api__ok(c, 200,
			    json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:I}", "job_id", c->arg[0],
				      "request_id", rid, "instants", (json_int_t)r.instants,
				      "excluded", (json_int_t)r.excluded, "rows",
				      (json_int_t)r.rows, "inserted", (json_int_t)r.inserted,
				      "new_effect_instants", (json_int_t)r.unknown));
}

/* A per-job list's ?job= (required, visible to the token: into arg 0) and
 * ?limit=; false (problem set) otherwise. */
static bool job_query(call *c, const char *what, int *limit)
{
	const char *job = pal_api__query(c, "job");
	if (!job) {
		pal_api__problem(c, 400, "bad-parameter", "Bad parameter",
				 "job is required: %s are listed per job (?job=ID)", what);
		return false;
	}
	if (!pal_api__page_limit(c, limit))
		return false;
	snprintf(c->argbuf[0], sizeof c->argbuf[0], "%s", job);
	c->arg[0] = c->argbuf[0];
	return pal_api__job_visible(c, false);
}

/* `palisade misfires --job`: ?from and ?to keep the decisions whose range
 * meets [from, to], as --from and --to do. */
PAL_API_ACCEPTS(misfires, "", "job from to limit cursor");
void pal_api__h_misfires(call *c)
{
	int limit;
	int64_t from = PAL_OPS_NOW, to = PAL_OPS_NOW;
	if (!job_query(c, "misfires", &limit) ||
	    (pal_api__query(c, "from") && !pal_api__query_time(c, "from", &from)) ||
	    (pal_api__query(c, "to") && !pal_api__query_time(c, "to", &to)))
		return;
	if (from != PAL_OPS_NOW && to != PAL_OPS_NOW && to < from) {
		pal_api__problem(c, 400, "bad-parameter", "Bad parameter", "to is before from");
		return;
	}
	json_t *rows;
	char *next, err[1024];
	int rc =
	    pal_apistore_misfires_page(c->api->st, c->arg[0], from, to, pal_api__query(c, "cursor"),
				       limit, &rows, &next, err, sizeof err);
	pal_api__page_answer(c, rc, rows, next, err);
}

/* ?trace_id= (docs/protocol.md, "Trace context"): the trigger it names into
 * *TRIGGER; false with a 400 answered for one not of this cluster. */
static bool trace_trigger(call *c, const char *trace, int64_t *trigger)
{
	uint64_t prefix;
	char err[512];
	if (pal_trace_id_parse(trace, &prefix, trigger, err, sizeof err)) {
		pal_api__problem(c, 400, "bad-parameter", "Bad parameter", "trace_id: %s", err);
		return false;
	}
	if (prefix != c->api->trace_prefix) {
		pal_api__problem(
		    c, 400, "bad-parameter", "Bad parameter",
		    "trace_id: not a trace id of this cluster (its ids begin with %016llx)",
		    (unsigned long long)c->api->trace_prefix);
		return false;
	}
	return true;
}

/* Without ?job= or ?trace_id=: every job's triggers, which needs ?since=
 * and ?until= at most PAL_API_TRIGGERS_SPAN apart (the bound of the read),
 * or neither with ?state= one of the rare open states (few rows, their
 * own index); false with a 400 answered otherwise. */
static bool all_jobs_range(call *c, int64_t *since, int64_t *until)
{
	if (!pal_api__query(c, "since") && !pal_api__query(c, "until") &&
	    pal_apistore_state_open_rare(pal_api__query(c, "state")))
		return true;
	if (!pal_api__query(c, "since") || !pal_api__query(c, "until")) {
		pal_api__problem(c, 400, "bad-parameter", "Bad parameter",
				 "job, trace_id, since and until (at most %d s apart), or a state "
				 "of retry_wait, unknown, pausing, paused, cancelling, manual are "
				 "required: every job's triggers are listed over a bounded range",
				 PAL_API_TRIGGERS_SPAN);
		return false;
	}
	if (!pal_api__query_time(c, "since", since) || !pal_api__query_time(c, "until", until))
		return false;
	if (*until <= *since || *until - *since > PAL_API_TRIGGERS_SPAN) {
		pal_api__problem(c, 400, "bad-parameter", "Bad parameter",
				 "until must be after since and at most %d s later (every job's "
				 "triggers are listed over a bounded range)",
				 PAL_API_TRIGGERS_SPAN);
		return false;
	}
	return true;
}

/* GET /api/v1/triggers: a job's (?job=), or with ?trace_id= alone the one
 * trigger whose calls carried that trace id, whatever its job (an empty
 * page when it names none, or another tenant's), or with neither every
 * job's over [since, until), of the token's tenants (?tenant=: one). */
PAL_API_ACCEPTS(triggers, "", "job trace_id tenant state since until limit cursor");
void pal_api__h_triggers(call *c)
{
	int limit;
	int64_t since = PAL_OPS_NOW, until = PAL_OPS_NOW, trigger = 0;
	const char *trace = pal_api__query(c, "trace_id");
	char *next = NULL, *tl = NULL, err[1024];
	const char *job = pal_api__query(c, "job");
	if (trace && !trace_trigger(c, trace, &trigger))
		return;
	if (!trace && !job) {
		if (!pal_api__page_limit(c, &limit) || !all_jobs_range(c, &since, &until))
			return;
		c->arg[0] = NULL;
		tl = pal_api__tenants_literal(&c->who);
	} else if (trace && !job) {
		char tenant[65];
		int rc = pal_apistore_trigger_job(c->api->st, trigger, c->argbuf[0], tenant, err,
						  sizeof err);
		if (rc == PAL_ENOENT || (!rc && !pal_token_sees_tenant(&c->who, tenant))) {
			if (pal_api__page_limit(c, &limit))
				pal_api__ok(c, 200, pal_api__page_json(json_array(), NULL));
			return;
		}
		if (rc) {
			pal_api__problem_rc(c, rc, err);
			return;
		}
		c->arg[0] = c->argbuf[0];
		if (!pal_api__page_limit(c, &limit))
			return;
	} else if (!job_query(c, "triggers", &limit)) {
		return;
	}
	if (c->arg[0] &&
	    ((pal_api__query(c, "since") && !pal_api__query_time(c, "since", &since)) ||
	     (pal_api__query(c, "until") && !pal_api__query_time(c, "until", &until))))
		return;
	json_t *rows;
	int rc = pal_apistore_triggers_page(c->api->st, c->arg[0], tl, pal_api__query(c, "tenant"),
					    pal_api__query(c, "state"), since, until, trigger,
					    pal_api__query(c, "cursor"), limit, &rows, &next, err,
					    sizeof err);
	g_free(tl);
	if (!rc)
		pal_trace_ids_json(rows, c->api->trace_prefix);
	pal_api__page_answer(c, rc, rows, next, err);
}

/* A ticket's job is visible (tickets without a job: unscoped tokens only). */
static bool ticket_visible(call *c, const json_t *t, bool write)
{
	const char *job = json_string_value(json_object_get(t, "job_id"));
	if (c->who.n_tenants == 0)
		return true;
	if (!job)
		return write ? pal_api__unscoped(c)
			     : (pal_api__problem(c, 404, "not-found", "Not found", "no ticket"),
				false);
	char tenant[65], err[512];
	if (pal_apistore_job_tenant(c->api->st, job, tenant, err, sizeof err) ||
	    !pal_token_sees_tenant(&c->who, tenant)) {
		if (write)
			pal_api__problem(c, 403, "forbidden-tenant", "Not your tenant",
					 "token %s may not act on this ticket's tenant",
					 c->who.name);
		else
			pal_api__problem(c, 404, "not-found", "Not found", "no ticket");
		return false;
	}
	return true;
}

/* Tickets newest first, a page at a time: a tenant-scoped token's only
 * those of its tenants' jobs (as ticket_visible). */
PAL_API_ACCEPTS(tickets, "", "all job tenant limit cursor");
void pal_api__h_tickets(call *c)
{
	const char *all = pal_api__query(c, "all");
	int limit;
	json_t *rows;
	char *next, err[1024];
	if (!pal_api__page_limit(c, &limit))
		return;
	char *tl = pal_api__tenants_literal(&c->who);
	int rc = pal_apistore_tickets_page(
	    c->api->st, all && !strcmp(all, "true"), tl, pal_api__query(c, "job"),
	    pal_api__query(c, "tenant"), pal_api__query(c, "cursor"), limit, &rows, &next, err,
	    sizeof err);
	g_free(tl);
	pal_api__page_answer(c, rc, rows, next, err);
}

static bool ticket_id(call *c, int64_t *id)
{
	char *end;
	long long v = strtoll(c->arg[0], &end, 10);
	if (*end || v <= 0) {
		pal_api__problem(c, 404, "not-found", "Not found", "no ticket \"%.40s\"",
				 c->arg[0]);
		return false;
	}
	*id = v;
	return true;
}

PAL_API_ACCEPTS(ticket, "", "");
void pal_api__h_ticket(call *c)
{
	int64_t id;
	json_t *t;
	char err[1024];
	if (!ticket_id(c, &id))
		return;
	int rc = pal_ops_ticket_json(c->api->st, id, &t, err, sizeof err);
	if (rc) {
		pal_api__problem_rc(c, rc, err);
		return;
	}
	if (ticket_visible(c, t, false))
		pal_api__ok(c, 200, t);
	else
		json_decref(t);
}

PAL_API_ACCEPTS(ticket_resolve, "reason action evidence max", "");
void pal_api__h_ticket_resolve(call *c)
{
	int64_t id;
	json_t *t;
	const char *why, *action;
	char err[1024];
	if (!ticket_id(c, &id) || !pal_api__reason(c, false, &why) ||
	    !pal_api__body_str(c, "action", &action))
		return;
	if (!action) {
		pal_api__problem(
		    c, 422, "invalid", "Invalid request",
		    "\"action\" is required (retry, mark_succeeded, abandon, backfill)");
		return;
	}
	int rc = pal_ops_ticket_json(c->api->st, id, &t, err, sizeof err);
	if (rc) {
		pal_api__problem_rc(c, rc, err);
		return;
	}
	bool visible = ticket_visible(c, t, true);
	json_decref(t);
	if (!visible)
		return;
	pal_resolve_result r = {0};
	json_t *ev = json_object_get(c->body, "evidence"), *mx = json_object_get(c->body, "max");
	if (mx && (!json_is_integer(mx) || json_integer_value(mx) < 1)) {
		pal_api__problem(c, 422, "invalid", "Invalid request",
				 "\"max\" must be a positive integer");
		return;
	}
	char *evt = ev ? json_dumps(ev, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	rc = pal_ops_ticket_resolve(c->api->st, id, action, evt,
				    mx ? json_integer_value(mx) : BACKFILL_MAX, c->who.name, why,
				    &r, err, sizeof err);
	free(evt);
	if (backfill_refused(c, rc, &r.backfill, err))
		return;
	if (rc == PAL_EINVAL && r.allowed[0])
		pal_api__problem(c, 422, "action-not-allowed", "Action not allowed",
				 "ticket %lld allows: %s", (long long)id, r.allowed);
	else if (rc)
		pal_api__problem_rc(c, rc, err);
	else
		pal_api__ok(c, 200,
			    json_pack("{s:I, s:s, s:s}", "ticket_id", (json_int_t)id, "action",
				      action, "trigger_state", r.trigger_state));
}
