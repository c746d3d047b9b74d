/*
 * apistore.h - what the HTTP API (api.h) reads and writes in PostgreSQL
 * beyond the operator functions (ops.h, lifecycle.h): the identity a
 * request's audit rows carry, the answers kept for Idempotency-Key, and
 * the paginated lists.  The SQL is in src/store/apistore.c.
 *
 * Lists are pages: at most LIMIT rows after an opaque cursor (NULL: the
 * first page); *next receives the cursor of the next page, or NULL when
 * this page is the last (g_free).  TENANTS ("{}" or a text[] literal of
 * the token's tenants; NULL: every tenant) limits every list to those
 * tenants' jobs.
 */
#ifndef PALISADE_APISTORE_H
#define PALISADE_APISTORE_H

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>
#include "palisade/err.h"
#include "palisade/store.h"

/* Stamp the audit rows this connection writes from now on with ROLE and
 * CLIENT (sql/024: the audit_log trigger reads them), and with REQUEST, the
 * JSON object {"token_id", "key"} of a write sent with an Idempotency-Key
 * (the trigger puts it in details.api_request); NULLs clear them. */
PAL_MUST_CHECK int pal_apistore_identity(pal_store *st, const char *role, const char *client,
					 const char *request, char *err, size_t errlen);

typedef enum {
	PAL_IDEM_NEW,	      /* first time: act, then pal_apistore_idem_finish */
	PAL_IDEM_TAKEN_OVER,  /* left without an answer, taken over: as NEW, but an
				 earlier attempt may have committed (idem_committed) */
	PAL_IDEM_REPLAY,      /* answered before: *status and *response hold it */
	PAL_IDEM_IN_PROGRESS, /* the first request is still being served */
	PAL_IDEM_MISMATCH,    /* the key was used for another request */
} pal_idem_outcome;

/* A request still in progress is served by a node that holds a
 * session-level advisory lock on its (token, key) from its record to its
 * answer: while that session lives, a retry answers in progress, however
 * long the request takes.  A record whose lock no session holds (the node
 * died, or its database connection broke; PostgreSQL ended the session)
 * is taken over by the next retry once it is older than this many seconds
 * (PALISADE_IDEM_TAKEOVER_S in the environment sets another bound, for
 * tests): the bound keeps a request that a node without the lock (0.3.0,
 * during a roll) is serving from being taken over at once. */
#define PAL_IDEM_TAKEOVER_S 60

/* The longest [since, until) of a list of every job's triggers (seconds):
 * one default partition interval, so that a page meets at most two. */
#define PAL_API_TRIGGERS_SPAN 86400

/* The take-over bound in seconds: PAL_IDEM_TAKEOVER_S, or
 * PALISADE_IDEM_TAKEOVER_S when set to a positive number. */
int pal_apistore_idem_takeover_s(void);

/* Record (TOKEN, KEY) for METHOD PATH with body DIGEST, or find its earlier
 * answer (*response malloc()ed, free()).  A record still in progress whose
 * lock is free after the take-over bound is taken over (PAL_IDEM_TAKEN_OVER)
 * by one conditional UPDATE, so one retry acts.  With PAL_IDEM_NEW or
 * PAL_IDEM_TAKEN_OVER, *LOCKED says the lock is held by this session: pass
 * it to pal_apistore_idem_finish, which releases it.  Records older than a
 * day are deleted on the way. */
PAL_MUST_CHECK int pal_apistore_idem_begin(pal_store *st, const char *token, const char *key,
					   const char *method, const char *path, const char *digest,
					   pal_idem_outcome *outcome, bool *locked, int *status,
					   char **response, char *err, size_t errlen);
/* *KNOWN: (TOKEN, KEY) has a record of METHOD PATH with body DIGEST (within
 * the day records are kept), answered or not.  Reads only: a request that
 * will not act looks up its earlier attempt without making a record. */
PAL_MUST_CHECK int pal_apistore_idem_known(pal_store *st, const char *token, const char *key,
					   const char *method, const char *path, const char *digest,
					   bool *known, char *err, size_t errlen);
/* Keep STATUS and RESPONSE for (TOKEN, KEY).  A 5xx answer is not kept:
 * when no audit row names the key (no attempt committed an action) the
 * record is deleted, so a retry acts; when one does (the action committed,
 * then the handler failed), the record is left in progress, dated back past
 * every take-over bound, so the next retry takes it over at once and goes
 * the way of a node that died before its answer (idem_committed).  With
 * LOCKED, the key's lock is released in the same statement.  On failure
 * the caller closes the connection (the session's end releases the lock). */
PAL_MUST_CHECK int pal_apistore_idem_finish(pal_store *st, const char *token, const char *key,
					    int status, const char *response, bool locked,
					    char *err, size_t errlen);

/* The audit rows that earlier attempts of (TOKEN, KEY) wrote (their
 * details.api_request names them; pal_apistore_identity) within the day its
 * record is kept, into *OUT: a JSON array of {id, at, action, scope}, empty
 * when none committed.  Read under the key's lock after a take-over: the
 * sessions of those attempts have ended, so what they committed is all
 * they ever will. */
PAL_MUST_CHECK int pal_apistore_idem_committed(pal_store *st, const char *token, const char *key,
					       json_t **out, char *err, size_t errlen);

/* The tenant of job JOB_ID into TENANT (65 bytes); PAL_ENOENT when none. */
PAL_MUST_CHECK int pal_apistore_job_tenant(pal_store *st, const char *job_id, char tenant[65],
					   char *err, size_t errlen);

/* The job of trigger ID into JOB (129 bytes) and its tenant into TENANT
 * (65 bytes); PAL_ENOENT when there is no such trigger. */
PAL_MUST_CHECK int pal_apistore_trigger_job(pal_store *st, int64_t id, char job[129],
					    char tenant[65], char *err, size_t errlen);

/* Shared calendars at their latest version, by name, after cursor AFTER,
 * at most LIMIT (*next the cursor of the next page, NULL at the end;
 * g_free), or only NAME: [{name latest_version digest rules created_by
 * created_at jobs[{job version calendar_version}] jobs_next_cursor}].
 * TENANTS (a text[] literal; NULL: every tenant): only the calendars the
 * live jobs of those tenants name, each with only those jobs.  Each
 * calendar's jobs by id, after the id JOBS_AFTER (NULL: from the first), at
 * most JOBS_LIMIT; jobs_next_cursor the id to ask the next ones after,
 * null at the last. */
PAL_MUST_CHECK int pal_apistore_calendars_page(pal_store *st, const char *tenants, const char *name,
					       const char *after, int limit, const char *jobs_after,
					       int jobs_limit, json_t **out, char **next, char *err,
					       size_t errlen);

/* The short lists of the API a page at a time, after cursor AFTER (NULL:
 * from the first), at most LIMIT (*next the cursor of the next page, NULL
 * at the end; g_free); PAL_EINVAL for a cursor this API did not give.
 * The rows are those of the whole lists the CLI reads: the scopes in shadow
 * by scope (pal_store_shadow_list_json), the gates by scope
 * (pal_store_gates_json), the attempts of trigger TRIGGER_ID by fence
 * (pal_store_attempts_json, without its PAL_ENOENT), the tickets newest
 * first (pal_ops_tickets_json; open ones unless ALL, only the jobs of
 * TENANTS, a text[] literal or NULL for every ticket), the tokens live ones
 * first, newest first (pal_token_list_json). */
/* pal_store_misfires_json()'s rows a page at a time, after cursor AFTER. */
PAL_MUST_CHECK int pal_apistore_misfires_page(pal_store *st, const char *job_id, int64_t from,
					      int64_t to, const char *after, int limit,
					      json_t **out, char **next, char *err, size_t errlen);
PAL_MUST_CHECK int pal_apistore_shadow_page(pal_store *st, const char *after, int limit,
					    json_t **out, char **next, char *err, size_t errlen);
PAL_MUST_CHECK int pal_apistore_gates_page(pal_store *st, const char *after, int limit,
					   json_t **out, char **next, char *err, size_t errlen);
/* The notify rules (pal_store_notify_rules_json's rows) a page at a time.
 * TENANTS (a text[] literal; NULL: all): only the rules of those tenants,
 * and a group's rules when the group has jobs and all of them (live or
 * retired) are of those tenants. */
PAL_MUST_CHECK int pal_apistore_notify_rules_page(pal_store *st, const char *tenants,
						  const char *after, int limit, json_t **out,
						  char **next, char *err, size_t errlen);
PAL_MUST_CHECK int pal_apistore_attempts_page(pal_store *st, int64_t trigger_id, const char *after,
					      int limit, json_t **out, char **next, char *err,
					      size_t errlen);
/* JOB, TENANT: only the tickets of that job, of that tenant's jobs (NULL:
 * any). */
PAL_MUST_CHECK int pal_apistore_tickets_page(pal_store *st, bool all, const char *tenants,
					     const char *job, const char *tenant,
					     const char *after, int limit, json_t **out,
					     char **next, char *err, size_t errlen);
PAL_MUST_CHECK int pal_apistore_tokens_page(pal_store *st, const char *after, int limit,
					    json_t **out, char **next, char *err, size_t errlen);

/* Job JOB_ID as pal_store_jobs_json() has it, with a page of its versions
 * (by version, after the version of cursor AFTER, at most LIMIT; *next the
 * cursor of the next page or NULL, g_free): PAL_ENOENT when there is no such
 * job, PAL_EINVAL for a cursor this API did not give. */
PAL_MUST_CHECK int pal_apistore_job_page(pal_store *st, const char *job_id, const char *after,
					 int limit, json_t **out, char **next, char *err,
					 size_t errlen);

/* Jobs ordered by id, after cursor AFTER, filtered by TENANT and GROUP
 * (NULL: any), by the label LABEL_KEY of value LABEL_VALUE in the latest
 * version's spec (LABEL_KEY NULL: any) and RETIRED (false: live jobs only):
 * [{job_id tenant group shard latest_version active_version created_at
 * updated_at retired_at owner description labels}]. */
PAL_MUST_CHECK int pal_apistore_jobs_page(pal_store *st, const char *tenants, const char *tenant,
					  const char *group, const char *label_key,
					  const char *label_value, bool retired, const char *after,
					  int limit, json_t **out, char **next, char *err,
					  size_t errlen);

/* Triggers of JOB_ID, newest instant first, optionally in STATE, at or
 * after SINCE and before UNTIL (Unix seconds; PAL_OPS_NOW: any instant;
 * SINCE as `palisade triggers --since`) and only the one of id TRIGGER_ID
 * when it is above 0: [{id job_id version scheduled_at partition source
 * request_id state fence lease_owner lease_until attempt_count
 * last_error_class}].  JOB_ID NULL: the triggers of every job whose
 * tenant is in TENANTS (a text[] literal; NULL: every tenant) and is
 * TENANT (NULL: any) over [SINCE, UNTIL), both given: the caller bounds
 * that range (PAL_API_TRIGGERS_SPAN); read from UNTIL back in widening
 * windows, each job's along its plan and request keys.  Or neither SINCE
 * nor UNTIL with STATE one of the rare open states
 * (pal_apistore_state_open_rare()): every job's in it, whatever the
 * instant, along the partial index of those states. */
/* retry_wait, unknown, pausing, paused, cancelling, manual: the states
 * of the partial index triggers_open_rare, few rows at any time, so a
 * listing of every job's triggers in one needs no range. */
bool pal_apistore_state_open_rare(const char *state);
PAL_MUST_CHECK int pal_apistore_triggers_page(pal_store *st, const char *job_id, const char *tenants,
					      const char *tenant, const char *state,
					      int64_t since, int64_t until, int64_t trigger_id,
					      const char *cursor,
					      int limit, json_t **out, char **next, char *err,
					      size_t errlen);

/* Audit rows, newest first, filtered by ACTOR, ACTION and SCOPE (NULL:
 * any), at or after SINCE and before UNTIL (Unix seconds; PAL_OPS_NOW: any
 * time; SINCE as `palisade audit --since`): [{id at actor role client
 * action scope reason details}]. */
PAL_MUST_CHECK int pal_apistore_audit_page(pal_store *st, const char *actor, const char *action,
					   const char *scope, int64_t since, int64_t until,
					   const char *cursor,
					   int limit, json_t **out, char **next, char *err,
					   size_t errlen);

#endif
