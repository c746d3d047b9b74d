-- 002_operator.sql - indexes for the operator actions (docs/operations.md).
--
-- `palisade triggers --job J`, `cancel --job J` and job-scoped pause/resume
-- select a job's triggers of every source; the two plan-key indexes of 001
-- are partial (request_id NULL / NOT NULL) and cannot serve that alone.
-- Neither column is ever updated, so executor updates stay HOT-eligible as
-- far as this index is concerned.
CREATE INDEX triggers_job_at ON triggers (job_id, scheduled_at);

-- `resume` of a group, tenant or everything looks for paused triggers; they
-- are few, and without this index the lookup would scan the hot table while
-- holding the gates lock that claims wait for.
CREATE INDEX triggers_paused ON triggers (id) WHERE state = 'paused';
