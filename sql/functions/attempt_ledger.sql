-- attempt_ledger: every attempt of every trigger, one row each, with the
-- columns of attempts and in_row (docs/schema.md, "The attempt ledger").
-- A trigger's first attempt claimed by a 0.3.0 executor lives in the
-- trigger row (first_claimed_at set) until a later claim moves it into
-- attempts; every other attempt is an attempts row.  The claim moves and
-- clears in one statement, so an attempt is in exactly one half: no
-- duplicate, also for triggers an older node claimed (its claims write
-- attempts rows and never set first_claimed_at).  The attempt in the row
-- holds the trigger's current token (a claim that changes it moves the
-- attempt first) and has no id of its own: order attempts by fence.
-- This view is the one decoder of the row's compact form, also for the
-- claim that moves it (palisade_claim_batch reads it with in_row, which
-- leaves the attempts half out of the plan): an ended attempt whose
-- first_outcome is NULL succeeded, and first_key NULL is the job's
-- default key (palisade_default_key), '' none sent.
-- Readers filter by trigger_id: both halves then go through a key
-- (attempts_trigger, the triggers primary key).
CREATE OR REPLACE VIEW attempt_ledger AS
 SELECT a.id,
    a.trigger_id,
    a.fence,
    a.node,
    a.claimed_at,
    a.ended_at,
    a.idempotency_key,
    a.outcome,
    a.error_class,
    a.http_status,
    a.duration_ms,
    a.status_queries,
    a.scheduled_at,
    false AS in_row
   FROM attempts a
UNION ALL
 SELECT NULL::bigint AS id,
    t.id AS trigger_id,
    t.fence,
    t.first_node AS node,
    t.first_claimed_at AS claimed_at,
    t.first_ended_at AS ended_at,
        CASE
            WHEN (t.first_key = ''::text) THEN NULL::text
            WHEN (t.first_key IS NOT NULL) THEN t.first_key
            WHEN (t.first_ended_at IS NOT NULL) THEN palisade_default_key(t.job_id, t.scheduled_at, t.partition, t.request_id)
            ELSE NULL::text
        END AS idempotency_key,
        CASE
            WHEN (t.first_outcome IS NOT NULL) THEN t.first_outcome
            WHEN (t.first_ended_at IS NOT NULL) THEN 'succeeded'::text
            ELSE NULL::text
        END AS outcome,
    t.first_error AS error_class,
    (t.first_http)::integer AS http_status,
    t.first_ms AS duration_ms,
    t.first_queries AS status_queries,
    t.scheduled_at,
    true AS in_row
   FROM triggers t
  WHERE (t.first_claimed_at IS NOT NULL);
