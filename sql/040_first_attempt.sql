-- 040_first_attempt.sql - a trigger's first attempt kept in its own row:
-- an attempts row only for what a retry, a deferral or a takeover adds
-- (docs/schema.md, "The attempt ledger").
--
-- compatible_from: 10
--
-- Expand only: nullable columns without a default (no rewrite; the ALTER
-- takes its lock for a moment, inside the migration's lock budget).
-- Binaries of 0.1.0 and 0.2.0 never read or write them: their claims go
-- through palisade_claim(), which still writes an attempts row for every
-- claim, and their commits end that row by trigger and token as before.
-- A 0.3.0 executor claims through palisade_claim_batch(..., true): the
-- claim's UPDATE sets first_claimed_at and first_node for a trigger's
-- first attempt, and the result commit (or the checkpoint) the rest in the
-- UPDATE that sets the state.  A later claim of the same trigger (by any
-- release) moves those facts into an attempts row of their own and clears
-- them, in the statement that claims it.  The view attempt_ledger
-- (sql/functions/) shows both kinds as one ledger.
--
--   first_claimed_at  set: the trigger's current attempt lives in this row
--                     (NULL: it has none there, or a 0.2.0 claim wrote an
--                     attempts row for it)
--   first_node        the node that claimed it
--   first_ended_at, first_outcome, first_error, first_http, first_ms,
--   first_key, first_queries
--                     what attempts.ended_at, outcome, error_class,
--                     http_status, duration_ms, idempotency_key and
--                     status_queries hold for an attempt with a row
--
-- The fence, the scheduled instant and the trigger are the row's own.
-- first_http is a smallint (an HTTP status fits): the row is written up
-- to three times per fire.
ALTER TABLE triggers
	ADD COLUMN first_claimed_at timestamptz,
	ADD COLUMN first_ended_at   timestamptz,
	ADD COLUMN first_ms         integer,
	ADD COLUMN first_http       smallint,
	ADD COLUMN first_node       text,
	ADD COLUMN first_outcome    text,
	ADD COLUMN first_error      text,
	ADD COLUMN first_key        text,
	ADD COLUMN first_queries    text[];
