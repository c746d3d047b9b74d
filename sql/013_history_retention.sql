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

-- palisade_history_retention(table, keep, slice): delete at most SLICE rows
-- of TABLE ('misfires' or 'audit_log') older than now - KEEP (see above), in
-- the caller's transaction.  At most one such slice runs at a time per table
-- in the cluster (advisory lock 7076/2 or 7076/3; a second caller deletes
-- nothing and gets busy = true).  Returns the rows deleted, whether the
-- slice was full (more may be left) and the cutoff.
CREATE FUNCTION palisade_history_retention(p_table text, p_keep interval, p_slice integer)
RETURNS TABLE (deleted bigint, more boolean, busy boolean, cutoff timestamptz)
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
	v_cut timestamptz := clock_timestamp() - p_keep;
	v_n bigint;
BEGIN
	IF p_keep < interval '1 second' OR p_slice < 1 THEN
		RAISE EXCEPTION 'palisade_history_retention: keep must be at least 1 s, slice at least 1'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF p_table NOT IN ('misfires', 'audit_log') THEN
		RAISE EXCEPTION 'palisade_history_retention: unknown table %', p_table
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF NOT pg_try_advisory_xact_lock(7076, CASE p_table WHEN 'misfires' THEN 2 ELSE 3 END) THEN
		RETURN QUERY SELECT 0::bigint, false, true, v_cut;
		RETURN;
	END IF;
	IF p_table = 'misfires' THEN
		DELETE FROM misfires m WHERE m.id = ANY (ARRAY(
			SELECT x.id FROM misfires x WHERE x.range_to < v_cut
			 ORDER BY x.range_to LIMIT p_slice FOR UPDATE SKIP LOCKED));
	ELSE
		DELETE FROM audit_log a WHERE a.id = ANY (ARRAY(
			SELECT x.id FROM audit_log x WHERE x.at < v_cut
			 ORDER BY x.at LIMIT p_slice FOR UPDATE SKIP LOCKED));
	END IF;
	GET DIAGNOSTICS v_n = ROW_COUNT;
	IF v_n > 0 THEN
		-- the horizon moves in the transaction that deletes the rows
		INSERT INTO palisade_retention_state AS s (name, horizon, deleted)
		VALUES (p_table, v_cut, v_n)
		ON CONFLICT (name) DO UPDATE SET horizon = greatest(s.horizon, excluded.horizon),
			deleted = s.deleted + excluded.deleted, updated_at = clock_timestamp();
	END IF;
	RETURN QUERY SELECT v_n, v_n >= p_slice, false, v_cut;
END
$fn$;

-- The retention horizon (010's, widened): instants before it may have lost
-- their trigger (a dropped partition) or their misfire record (a deleted
-- slice).  NULL while neither happened.
CREATE OR REPLACE FUNCTION palisade_retention_horizon() RETURNS timestamptz
LANGUAGE sql STABLE AS $$
	SELECT CASE WHEN p.h IS NULL THEN m.h WHEN m.h IS NULL THEN p.h ELSE greatest(p.h, m.h) END
	  FROM (SELECT CASE WHEN min(range_from) = '-infinity' THEN NULL ELSE min(range_from) END AS h
	          FROM palisade_partitions) p,
	       (SELECT max(horizon) AS h FROM palisade_retention_state WHERE name = 'misfires') m
$$;
