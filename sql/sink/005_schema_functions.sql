-- sql/sink/005_schema_functions.sql - which set of sql/sink/functions/ the
-- database runs: the sink schema version of the palisade-sink that applied
-- it and the SHA-256 of its files (ops/embed-sql.sh).  A starting sink
-- applies its set only when the row names an older version or its own with
-- other files, so a restart replaces no function it need not.
CREATE TABLE sink_schema_functions (
	id          integer PRIMARY KEY DEFAULT 1 CHECK (id = 1),
	version     integer NOT NULL,
	digest      text NOT NULL,
	applied_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);
