-- 039_shadow.sql - shadow runs and staged cut-over (docs/migrating.md).
--
-- compatible_from: 10
--
-- A job in shadow is planned exactly like a live one, into triggers in the
-- state 'shadow', which no claim ever takes: no call leaves palisade for
-- it.  Which instants are shadow is decided when a trigger is planned, by
-- palisade_trigger_live() (sql/functions/), from two small tables:
--
--   shadow_scopes   a scope ('global', 'job:J', 'group:G', 'tenant:T') in
--                   shadow: `palisade shadow`, or a job's `mode: shadow`
--                   (source 'spec', kept by apply as `suspend` keeps its
--                   gate);
--   cutover_steps   `palisade cutover` and `palisade rollback`: from `at`
--                   on, the jobs of `scope` whose bucket (a hash of the job
--                   id, 0-99) is below `percent` are live; a roll-back is a
--                   step of 0 %.  Steps are never updated or deleted: they
--                   are the record of the move.
--
-- The state machine gains 'shadow' (include/palisade/tstate.def): shadow ->
-- pending when a cut-over makes a planned instant live, pending,
-- retry_wait and paused -> shadow when a scope goes (back) to shadow.  The
-- CHECK of triggers.state is widened without a rewrite: the new one is
-- added NOT VALID and validated afterwards, which reads every partition
-- under a lock that lets claims, commits and planning go on.  0.2.0 nodes
-- never write or read the new state: an expand step.
CREATE TABLE IF NOT EXISTS shadow_scopes (
	scope   text PRIMARY KEY CHECK (scope = 'global' OR scope ~ '^(job|group|tenant):.+$'),
	source  text NOT NULL DEFAULT 'operator' CHECK (source IN ('operator', 'spec')),
	actor   text NOT NULL,
	reason  text NOT NULL DEFAULT '',
	since   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS cutover_steps (
	id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	scope       text NOT NULL CHECK (scope = 'global' OR scope ~ '^(job|group|tenant):.+$'),
	at          timestamptz NOT NULL,
	percent     integer NOT NULL CHECK (percent BETWEEN 0 AND 100),
	actor       text NOT NULL,
	reason      text NOT NULL DEFAULT '',
	created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS cutover_steps_scope ON cutover_steps (scope, at DESC, id DESC);

DO $$
DECLARE
	c text;
BEGIN
	SELECT conname INTO c FROM pg_constraint
	 WHERE conrelid = 'triggers'::regclass AND contype = 'c'
	   AND pg_get_constraintdef(oid) LIKE '%state%' AND pg_get_constraintdef(oid) LIKE '%pending%';
	IF c IS NOT NULL AND NOT pg_get_constraintdef((SELECT oid FROM pg_constraint
	     WHERE conrelid = 'triggers'::regclass AND conname = c)) LIKE '%shadow%' THEN
		EXECUTE format('ALTER TABLE triggers DROP CONSTRAINT %I', c);
	END IF;
END $$;
-- the CHECK of triggers.state from here on (tests/unit/test_tstate.c reads it)
ALTER TABLE triggers ADD CONSTRAINT triggers_state_check CHECK (state IN (
	'pending', 'running', 'succeeded', 'retry_wait', 'failed', 'unknown',
	'pausing', 'paused', 'cancelling', 'cancelled', 'manual', 'skipped', 'shadow')) NOT VALID;
ALTER TABLE triggers VALIDATE CONSTRAINT triggers_state_check;
