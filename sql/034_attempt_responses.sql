-- 034_attempt_responses.sql - what the service answered: a bounded excerpt
-- of an attempt's response (the headers the job names in
-- target.keep_headers, the first target.keep_body bytes of the body, its
-- content type), written by the result commit beside the attempt, in the
-- same statement (docs/schema.md, "attempt_responses").
--
-- compatible_from: 1
--
-- Expand only: a new table that older binaries never read or write.  It
-- is partitioned by the same ranges as attempts (its partitions are
-- attempt_responses_pSUFFIX beside attempts_pSUFFIX), so that retention
-- drops a range's excerpts with its attempts (palisade_partition_create
-- and palisade_retention, sql/functions/).  A row exists only for an
-- attempt with something to keep: the status alone is attempts.http_status.
-- No foreign key to attempts: rows are written only for attempts the same
-- commit ends, and a key would make every DDL of a range take one more
-- table's lock for nothing.
CREATE TABLE attempt_responses (
	fence         bigint NOT NULL,
	scheduled_at  timestamptz NOT NULL,
	trigger_id    bigint NOT NULL,
	headers       jsonb NOT NULL DEFAULT '{}',
	content_type  text,
	body          bytea NOT NULL DEFAULT '',
	truncated     boolean NOT NULL DEFAULT false,
	PRIMARY KEY (fence, scheduled_at)
) PARTITION BY RANGE (scheduled_at);
CREATE TABLE attempt_responses_pdefault PARTITION OF attempt_responses DEFAULT;

-- One partition per existing range (the tables are empty: created as
-- partitions directly); palisade_partition_create makes the later ones.
DO $$
DECLARE
	r record;
BEGIN
	FOR r IN SELECT p.range_from, p.range_to, p.attempts_part FROM palisade_partitions p LOOP
		EXECUTE format('CREATE TABLE %I PARTITION OF attempt_responses FOR VALUES FROM (%L) TO (%L)',
			'attempt_responses_p' || substr(r.attempts_part, length('attempts_p') + 1),
			r.range_from, r.range_to);
	END LOOP;
END
$$;
