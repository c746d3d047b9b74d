-- 013_history_retention.sql - bounded storage for the two tables 010 left
-- unbounded: misfires and audit_log (docs/schema.md, "Retention").
--
-- Deleted in bounded slices, not dropped by partition.  Why: both grow with
-- decisions, not with fires.  audit_log gets a row per operator action and
-- per automatic decision worth explaining (tens a day); misfires one row per
-- recorded range (a whole outage is one row per job and shard) except the
-- overlap skips of `forbid` jobs, one row per skipped instant - at most the
-- rate of the triggers it stands beside, usually far less.  Converting them
-- to partitioned tables would rewrite both, change their primary keys and
-- add ranges to maintain, for tables that are small next to triggers; a
-- slice of a few thousand rows found through an index and deleted in its
-- own short transaction costs milliseconds and never takes more than row
-- locks.  Partition them if an installation ever writes misfires at the
-- rate of fires (docs/operations.md says how to tell).
--
-- Which rows: an audit row goes when its `at` is older than the audit
-- retention.  A misfire row goes when its whole range ended before the
-- misfire retention's cutoff (range_to < cutoff): a range that overlaps the
-- cutoff is kept whole, never trimmed - its count covers the whole range
-- and cannot be split without the job's plan, and `palisade verify` needs
-- the row for every instant after the cutoff.
--
-- The horizon.  verify counts a misfire row as the record of an instant
-- that did not fire; once misfire rows before a cutoff are gone, verify
-- must refuse ranges before that cutoff, as it refuses ranges before the
-- oldest partition of triggers.  palisade_retention_state remembers the
-- latest cutoff that deleted a misfire, and palisade_retention_horizon()
-- becomes the later of the two.
--
-- compatible_from: 10
-- (new objects only: a binary of schema 10 to 12 never calls them.)

CREATE TABLE palisade_retention_state (
	name     text PRIMARY KEY CHECK (name IN ('misfires', 'audit_log')),
	horizon  timestamptz NOT NULL,  -- rows before it may have been deleted
	deleted  bigint NOT NULL DEFAULT 0,
	updated_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- The misfire slice is found through range_to; 009's misfires_range is on
-- range_from, which would leave every long range in each scan.
CREATE INDEX misfires_range_to ON misfires (range_to);

-- palisade_history_retention() and the widened palisade_retention_horizon()
-- are in sql/functions/.
