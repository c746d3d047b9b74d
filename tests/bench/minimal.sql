-- tests/bench/minimal.sql - the least a scheduler must store per fire, for
-- the minimal-shape ceilings of `make bench` (tests/bench/run.sh): a
-- triggers table with an integer job reference, the instant, the due time,
-- a state, a lease, a token, one unique plan key and one partial index on
-- the due time of pending rows.  No attempts table, no state guard, no
-- foreign key, no partitions.  palisade's own tables (ceiling.sql copies
-- them) are judged against this shape: the same-shape ceilings say what the
-- C code costs, these what the tables cost.
DROP TABLE IF EXISTS min_triggers;
DROP SEQUENCE IF EXISTS min_token, min_tick;
CREATE SEQUENCE min_token AS bigint;
CREATE SEQUENCE min_tick START 1700000000;
CREATE TABLE min_triggers (
	job int NOT NULL,
	instant timestamptz NOT NULL,
	due_at timestamptz NOT NULL,
	state smallint NOT NULL DEFAULT 0, -- 0 pending, 1 running, 2 done
	lease_until timestamptz,
	token bigint,
	PRIMARY KEY (job, instant)
);
CREATE INDEX min_triggers_due ON min_triggers (due_at) WHERE state = 0;
