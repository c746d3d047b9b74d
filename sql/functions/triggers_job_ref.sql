-- triggers_job_ref: every trigger row carries its job's ref, whoever
-- inserts it.  This release's writers set job_ref in their INSERT; its
-- WHEN clause lets those rows through with one NULL test (no call, no
-- PL/pgSQL); a row of an older release (job_id only) gets the ref from
-- palisade_trigger_job_ref().  Dropped by the contract step that makes
-- job_ref NOT NULL (docs/upgrades.md).
CREATE OR REPLACE TRIGGER triggers_job_ref BEFORE INSERT ON triggers FOR EACH ROW WHEN ((new.job_ref IS NULL)) EXECUTE FUNCTION palisade_trigger_job_ref();
