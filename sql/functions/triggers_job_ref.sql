-- triggers_job_ref: every trigger row names its job both ways while
-- nodes of 0.2.0 and of this release run side by side.  A row of this
-- release carries job_ref alone and gets job_id and resource_group (which
-- 0.2.0 reads) from jobs; a row of 0.2.0 carries job_id alone and gets
-- job_ref.  Its WHEN clause calls palisade_trigger_job_ref() only for a
-- row that lacks one side (no call, no PL/pgSQL for a row that has both).
-- Dropped by the contract step that drops the text columns
-- (docs/upgrades.md).
CREATE OR REPLACE TRIGGER triggers_job_ref BEFORE INSERT ON triggers FOR EACH ROW WHEN (((new.job_ref IS NULL) OR (new.job_id IS NULL))) EXECUTE FUNCTION palisade_trigger_job_ref();
