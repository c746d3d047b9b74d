-- trigger_jobs: every trigger row with its job's id and resource group
-- read from jobs by job_ref, for the queries of operators and tests that
-- name triggers by job (docs/schema.md, "The job reference").  The trigger
-- row keeps the job only as job_ref (the text columns job_id and
-- resource_group go with the job reference's contract step); tenant stays
-- in the row (the claim's fair pick keys on it).  A LEFT JOIN: every
-- trigger row is here, a row not yet given its ref (before the backfill
-- reached it) with job_id NULL, and a query that reads no column of the
-- job skips jobs altogether (jobs_ref is unique, so PostgreSQL removes the
-- join).  The columns are named one by one, never t.*, so that the view
-- keeps the same columns on either side of the contract step; a column
-- added to triggers is added here at the end (nominal_at, 045).  A job
-- moved to another resource group shows its triggers in the new one.
CREATE OR REPLACE VIEW trigger_jobs AS
 SELECT t.id,
    j.job_id,
    t.version,
    t.scheduled_at,
    t.partition,
    t.source,
    t.request_id,
    t.tenant,
    j.resource_group,
    t.state,
    t.priority,
    t.due_at,
    t.fence,
    t.lease_owner,
    t.lease_until,
    t.attempt_count,
    t.next_attempt_at,
    t.checkpoint,
    t.last_error_class,
    t.shard,
    t.epoch,
    t.created_at,
    t.updated_at,
    t.finished_at,
    t.outcome_unknown,
    t.first_claimed_at,
    t.first_ended_at,
    t.first_ms,
    t.first_http,
    t.first_node,
    t.first_outcome,
    t.first_error,
    t.first_key,
    t.first_queries,
    t.job_ref,
    t.nominal_at
   FROM (triggers t
     LEFT JOIN jobs j ON ((j.ref = t.job_ref)));
