-- tests/bench/sink_group.sql - pgbench script: one call of the sink's group
-- commit, sink_apply_group() (sql/sink/functions/), with a group of :n
-- plain requests, each a new key, as wrk's (tests/bench/post.lua) arrive;
-- the database CPU of a group without HTTP (docs/performance.md, "The
-- reference sink").  On a database `palisade-sink --migrate-only` made:
--   PGOPTIONS='-c synchronous_commit=off' pgbench -n -M prepared -c 1 -T 5 \
--     -D n=16 -f tests/bench/sink_group.sql DB
-- (synchronous_commit on: the same with the flush waited for).
SELECT count(*) FROM sink_apply_group((
	SELECT jsonb_agg(jsonb_build_object('k', 'bench.group/' || gen_random_uuid(), 't', 7,
		'd', '1f3870be274f6c49b3e31a0c6728957f1f3870be274f6c49b3e31a0c6728957f',
		'm', 'POST', 'p', '/effects/bench.group', 'tr', '123456789', 'at', '1',
		's', '2026-12-01T10:00:00Z', 'n', 1, 'c', 1))
	FROM generate_series(1, :n)));
