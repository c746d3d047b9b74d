-- 046_request_ids.sql - the request ids manual runs used, kept apart from
-- the triggers they made (docs/operations.md "trigger", docs/api.md
-- "Idempotency").
--
-- compatible_from: 10
--
-- Expand only: one new table, nothing else changed.  A repeated request
-- id of `palisade trigger` (POST /api/v1/jobs/{id}/trigger) creates
-- nothing and answers with the run it names.  The triggers of that run go
-- when retention drops their range (retention.triggers); the row here
-- keeps the answer until retention.request_ids (at least
-- retention.triggers) after its use, so a retried event makes no second
-- run within that bound.  0.3.0 nodes neither write nor read it: a run one
-- makes during a roll is remembered by its triggers only, as before.
CREATE TABLE request_ids (
	job_id text NOT NULL,
	request_id text NOT NULL,
	scheduled_at timestamptz NOT NULL,
	version integer NOT NULL,
	trigger_ids bigint[] NOT NULL,
	used_at timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (job_id, request_id)
);
CREATE INDEX request_ids_used_at ON request_ids (used_at);

-- The manual runs made before it, from their triggers still kept (rows
-- with a request id: the partial index triggers_request_key), each used
-- when its first trigger was made.
INSERT INTO request_ids (job_id, request_id, scheduled_at, version, trigger_ids, used_at)
SELECT job_id, request_id, min(scheduled_at), min(version), array_agg(id ORDER BY partition, id),
       min(created_at)
  FROM triggers
 WHERE request_id IS NOT NULL AND source = 'manual'
 GROUP BY job_id, request_id;
