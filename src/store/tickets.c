/*
 * tickets.c - misfire tickets: their listing and their resolution
 * (pal_ops_ticket_resolve), which moves the ticket's trigger or backfills
 * its window in the same transaction.  docs/operations.md.
 */
#include <stdio.h>
#include <string.h>
#include "palisade/ops.h"
#include "palisade/timefmt.h"
#include "ops_int.h"

/* ---- tickets ------------------------------------------------------------------ */

#define TICKET_KEYS                                                                                \
	"'id', t.id, 'state', t.state,"                                                            \
	" 'job_id', coalesce(t.job_id, tr.job_id), 'trigger_id', t.trigger_id,"                    \
	" 'trigger_state', tr.state, 'reason', t.reason, 'evidence', t.evidence,"                  \
	" 'allowed_actions', t.allowed_actions, 'resolution', t.resolution, 'actor', t.actor,"     \
	" 'created_at', " TS("t.created_at") ", 'resolved_at', " TS("t.resolved_at")
#define TICKET_FIELDS "json_build_object(" TICKET_KEYS ")"

int pal__store_tickets_query(pal_store *st, bool all, const char *tenants, const char *job,
			     const char *tenant, const char *after, int limit, json_t **out,
			     char *err, size_t errlen)
{
	char l[16];
	if (after &&
	    (!*after || strspn(after, "0123456789") != strlen(after) || strlen(after) > 18)) {
		snprintf(err, errlen, "cursor \"%.40s\" is not one this API gave", after);
		return PAL_EINVAL;
	}
	snprintf(l, sizeof l, "%d", limit);
	const char *p[] = {all ? "true" : "false", tenants, after, limit > 0 ? l : NULL, job, tenant};
	/* a ticket is its job's tenant's; one without a job is no tenant's */
	return pal__store_query_json(
	    st,
	    "SELECT coalesce(json_agg(json_build_object(" TICKET_KEYS ", '_c', t.id::text)"
	    " ORDER BY t.id DESC), '[]')::text"
	    " FROM (SELECT k.* FROM tickets k CROSS JOIN LATERAL (SELECT coalesce(k.job_id,"
	    "   (SELECT kt.job_id FROM triggers kt WHERE kt.id = k.trigger_id)) AS job_id) kj"
	    "  WHERE ($1::boolean OR k.state = 'open')"
	    "  AND ($3::bigint IS NULL OR k.id < $3::bigint)"
	    "  AND ($5::text IS NULL OR kj.job_id = $5)"
	    "  AND ($2::text[] IS NULL OR EXISTS (SELECT 1 FROM jobs j WHERE j.job_id = kj.job_id"
	    "   AND j.tenant = ANY ($2::text[])))"
	    "  AND ($6::text IS NULL OR EXISTS (SELECT 1 FROM jobs j WHERE j.job_id = kj.job_id"
	    "   AND j.tenant = $6))"
	    "  ORDER BY k.id DESC LIMIT $4::int) t"
	    " LEFT JOIN triggers tr ON tr.id = t.trigger_id",
	    6, p, out, err, errlen);
}

int pal_ops_tickets_json(pal_store *st, bool all, json_t **out, char *err, size_t errlen)
{
	return pal__store_whole_list(
	    pal__store_tickets_query(st, all, NULL, NULL, NULL, NULL, 0, out, err, errlen), out);
}

int pal_ops_ticket_json(pal_store *st, int64_t id, json_t **out, char *err, size_t errlen)
{
	char s[24];
	pal__ops_i64s(s, sizeof s, id);
	const char *p[] = {s};
	int rc =
	    pal__store_query_json(st,
				  "SELECT coalesce((SELECT " TICKET_FIELDS
				  " FROM tickets t LEFT JOIN triggers tr ON tr.id = t.trigger_id"
				  " WHERE t.id = $1), 'null')::text",
				  1, p, out, err, errlen);
	if (rc)
		return rc;
	if (json_is_null(*out)) {
		json_decref(*out);
		*out = NULL;
		snprintf(err, errlen,
			 "no ticket %s; hint: `palisade tickets list --all` lists them", s);
		return PAL_ENOENT;
	}
	return PAL_OK;
}

typedef struct resolve_ctx {
	int64_t id, max;
	const char *action, *evidence, *actor, *reason;
	pal_resolve_result *res;
} resolve_ctx;

/* Target trigger state of a resolve action on a trigger ticket. */
static const char *resolve_target(const char *action)
{
	if (!strcmp(action, "retry"))
		return "pending";
	if (!strcmp(action, "mark_succeeded"))
		return "succeeded";
	if (!strcmp(action, "abandon"))
		return "failed";
	return NULL;
}

static int resolve_body(pal_store *st, void *vctx, char *err, size_t errlen)
{
	resolve_ctx *c = vctx;
	pal_resolve_result *res = c->res;
	memset(res, 0, sizeof *res);
	char id[24];
	pal__ops_i64s(id, sizeof id, c->id);
	const char *p[] = {id, c->action};
	PGresult *r = pal__store_query(
	    st,
	    "SELECT t.state, t.trigger_id, coalesce(t.job_id, tr.job_id),"
	    " array_to_string(t.allowed_actions, ', '), $2 = ANY (t.allowed_actions),"
	    " t.evidence->>'range_from', t.evidence->>'range_to',"
	    " coalesce(t.resolution, ''), coalesce(t.actor, '')"
	    " FROM tickets t LEFT JOIN triggers tr ON tr.id = t.trigger_id"
	    " WHERE t.id = $1 FOR UPDATE OF t",
	    2, p, err, errlen);
	if (!r)
		return PAL_EDB;
	if (!PQntuples(r)) {
		PQclear(r);
		snprintf(err, errlen,
			 "no ticket %s; hint: `palisade tickets list --all` lists them", id);
		return PAL_ENOENT;
	}
	bool resolved = strcmp(PQgetvalue(r, 0, 0), "open") != 0;
	bool has_trigger = !PQgetisnull(r, 0, 1);
	char trig[24], job[128], rfrom[64], rto[64];
	snprintf(trig, sizeof trig, "%s", PQgetvalue(r, 0, 1));
	snprintf(job, sizeof job, "%s", PQgetvalue(r, 0, 2));
	snprintf(res->allowed, sizeof res->allowed, "%s", PQgetvalue(r, 0, 3));
	bool allowed = !strcmp(PQgetvalue(r, 0, 4), "t");
	bool has_range = !PQgetisnull(r, 0, 5) && !PQgetisnull(r, 0, 6);
	snprintf(rfrom, sizeof rfrom, "%s", PQgetvalue(r, 0, 5));
	snprintf(rto, sizeof rto, "%s", PQgetvalue(r, 0, 6));
	if (resolved)
		snprintf(err, errlen, "ticket %s is already resolved (%s by %s)", id,
			 PQgetvalue(r, 0, 7), PQgetvalue(r, 0, 8));
	PQclear(r);
	if (resolved) {
		snprintf(res->state, sizeof res->state, "resolved");
		return PAL_ESTALE;
	}
	if (!allowed) {
		snprintf(err, errlen, "action %s is not allowed for ticket %s; allowed: %s",
			 c->action, id, res->allowed);
		return PAL_EINVAL;
	}

	int rc = PAL_OK;
	const char *target = resolve_target(c->action);
	if (has_trigger && target) {
		const char *pt[] = {trig, target};
		/* the door clears the lease and the retry time, and sets
		 * finished_at on succeeded and failed */
		r = pal__store_query(
		    st,
		    "SELECT m.id FROM " PAL__TRIGGER_MOVE(
			"SELECT id, scheduled_at, state FROM triggers WHERE id = $1::bigint"
			" AND state = 'manual'",
			"$2::text", "NULL") " m",
		    2, pt, err, errlen);
		if (!r)
			return PAL_EDB;
		int n = PQntuples(r);
		PQclear(r);
		if (!n) {
			r = pal__store_query(st, "SELECT state FROM triggers WHERE id = $1", 1, pt,
					     err, errlen);
			if (!r)
				return PAL_EDB;
			snprintf(res->state, sizeof res->state, "%s",
				 PQntuples(r) ? PQgetvalue(r, 0, 0) : "missing");
			PQclear(r);
			snprintf(
			    err, errlen,
			    "trigger %s of ticket %s is %s, not manual; the ticket stays open; "
			    "hint: `palisade triggers --job %s` shows it",
			    trig, id, res->state, job);
			return PAL_ESTALE;
		}
		snprintf(res->trigger_state, sizeof res->trigger_state, "%s", target);
	} else if (has_trigger) {
		snprintf(
		    err, errlen,
		    "action %s needs a misfire ticket (a job and an evidence range); ticket %s "
		    "is about trigger %s; hint: use retry",
		    c->action, id, trig);
		return PAL_EINVAL;
	} else if (!strcmp(c->action, "backfill")) {
		int64_t f, t;
		if (!has_range || pal_parse_rfc3339(rfrom, &f) || pal_parse_rfc3339(rto, &t)) {
			snprintf(
			    err, errlen,
			    "ticket %s has no evidence range (range_from, range_to) to backfill",
			    id);
			return PAL_EINVAL;
		}
		char rid[40];
		snprintf(rid, sizeof rid, "ticket-%s", id);
		if ((rc = pal__ops_lock_request(st, job, rid, err, errlen)) ||
		    (rc = pal__ops_backfill_in_tx(st, job, f, t, c->max, rid, false, true,
						  &res->backfill, err, errlen)))
			return rc;
	} else if (!strcmp(c->action, "release")) {
		/* a quarantine ticket: the job's quarantine of this ticket ends, as
		 * `palisade release` ends it (audited, the controllers told); none
		 * left (released meanwhile) resolves the ticket alone */
		const char *pq[] = {job, id, c->actor, c->reason};
		if ((rc = pal__ops_exec(
			 st,
			 "WITH q AS (DELETE FROM quarantine WHERE job_id = $1 AND ticket_id = "
			 "$2::bigint"
			 "   RETURNING *),"
			 " a AS (INSERT INTO audit_log (actor, action, scope, reason, details)"
			 "   SELECT $3, 'job.release', 'job:' || q.job_id, $4, jsonb_build_object("
			 "   'version', q.version, 'since', q.since, 'error', q.error, 'ticket',"
			 "   q.ticket_id) FROM q)"
			 " SELECT count(pg_notify('palisade_apply', q.job_id)) FROM q",
			 4, pq, NULL, err, errlen)))
			return rc;
	} else if (strcmp(c->action, "abandon") != 0) {
		snprintf(err, errlen,
			 "action %s needs a trigger, and ticket %s has none; allowed: %s",
			 c->action, id, res->allowed);
		return PAL_EINVAL;
	}

	const char *pr[] = {id, c->action, c->actor, c->reason, c->evidence};
	int64_t n;
	if ((rc = pal__ops_exec(
		 st,
		 "UPDATE tickets SET state = 'resolved', resolution = $2, actor = $3,"
		 " resolved_at = clock_timestamp(),"
		 " evidence = CASE WHEN jsonb_typeof(evidence) = 'object' THEN evidence"
		 "  WHEN evidence IS NULL THEN '{}'::jsonb"
		 "  ELSE jsonb_build_object('original', evidence) END"
		 "  || jsonb_build_object('resolution', jsonb_build_object('action', $2::text,"
		 "   'reason', $4::text, 'actor', $3::text, 'evidence', $5::jsonb))"
		 " WHERE id = $1 AND state = 'open'",
		 5, pr, &n, err, errlen)))
		return rc;
	if (n != 1) {
		snprintf(err, errlen, "ticket %s changed while it was resolved; hint: retry", id);
		return PAL_ESTALE;
	}
	char bi[24], bn[24], br[24];
	pal__ops_i64s(bi, sizeof bi, res->backfill.instants);
	pal__ops_i64s(bn, sizeof bn, res->backfill.inserted);
	pal__ops_i64s(br, sizeof br, res->backfill.ran);
	const char *pa[] = {c->actor,
			    job[0] ? job : NULL,
			    c->reason,
			    id,
			    c->action,
			    has_trigger ? trig : NULL,
			    res->trigger_state[0] ? res->trigger_state : NULL,
			    !strcmp(c->action, "backfill") ? bi : NULL,
			    !strcmp(c->action, "backfill") ? bn : NULL,
			    !strcmp(c->action, "backfill") ? br : NULL};
	if ((rc = pal__ops_exec(
		 st,
		 "INSERT INTO audit_log (actor, action, scope, reason, details)"
		 " VALUES ($1, 'ticket.resolve', 'job:' || $2, $3, jsonb_strip_nulls("
		 "  jsonb_build_object('ticket', $4::bigint, 'action', $5::text,"
		 "  'trigger', $6::bigint, 'trigger_state', $7::text,"
		 "  'backfill_instants', $8::bigint, 'backfill_inserted', $9::bigint,"
		 "  'backfill_ran', $10::bigint)))",
		 10, pa, NULL, err, errlen)))
		return rc;
	if (!strcmp(c->action, "retry"))
		return pal__ops_notify(st, "NOTIFY palisade_triggers", 0, NULL, err, errlen);
	return PAL_OK;
}

int pal_ops_ticket_resolve(pal_store *st, int64_t id, const char *action, const char *evidence,
			   int64_t max, const char *actor, const char *reason,
			   pal_resolve_result *res, char *err, size_t errlen)
{
	memset(res, 0, sizeof *res);
	if (evidence) {
		json_error_t je;
		json_t *j = json_loads(evidence, JSON_DECODE_ANY, &je);
		if (!j) {
			snprintf(err, errlen, "--evidence is not JSON: %s at column %d", je.text,
				 je.column);
			return PAL_EINVAL;
		}
		json_decref(j);
	}
	resolve_ctx c = {id, max, action, evidence, actor, reason, res};
	return pal__ops_in_tx(st, resolve_body, &c, err, errlen);
}
