-- 043_notify_rules.sql - notify rules of groups and tenants (docs/jobs.md
-- "Notify rules").
--
-- compatible_from: 1
--
-- Expand only: a new table and a nullable column.  Older binaries never
-- read them: a job version carries its effective notify (its own entries,
-- then those its group's and its tenant's rules add) in its spec, which is
-- all the outbox writers and executors of every release read.
--
--   notify_rules             one row per live rule: its scope (a group or a
--                            tenant), url, events and secret reference.
--                            `apply` inserts, updates and deletes them (an
--                            audit_log row notify_rule.create, .update or
--                            .delete each) and gives the live jobs in the
--                            scope new versions in the same transaction.
--   job_versions.notify_own  how many of the version's notify entries are
--                            the job's own (the first ones; the others came
--                            from rules); -1 for `notify: []` (none, nothing
--                            inherited).  NULL for a version written by a
--                            binary without rules: every entry is its own.
CREATE TABLE notify_rules (
	scope       text NOT NULL CHECK (scope IN ('group', 'tenant')),
	name        text NOT NULL,
	url         text NOT NULL,
	events      text[] NOT NULL,
	secret      text NOT NULL,
	updated_by  text NOT NULL,
	updated_at  timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (scope, name, url)
);

ALTER TABLE job_versions ADD COLUMN notify_own integer;
