-- sink_effects: one row per idempotency key, what was applied and the
-- answer to replay, in the columns of the sink's first schema, for every
-- reader (tests, drills, `palisade verify --sink-pg`, the status query of
-- src/sink/effect.c).  The rows live in sink_keys (the request target in
-- sink_targets); keys from before sql/sink/006_keys.sql not yet adopted
-- still in sink_effects_v1.  status is the stored one or, when NULL, the
-- one the sink answers (201; 200 for a chunked effect); body is NULL where
-- the sink writes the answer again from the row.
CREATE OR REPLACE VIEW sink_effects AS
 SELECT k.idempotency_key,
    k.fence,
    encode(k.digest, 'hex'::text) AS payload_digest,
    COALESCE((k.status)::integer,
        CASE
            WHEN (k.chunks_total > 1) THEN 200
            ELSE 201
        END) AS status,
    k.body,
    k.applied_at,
    COALESCE(k.updated_at, k.applied_at) AS updated_at,
    t.method,
    t.path,
    k.trigger_id,
    k.attempt,
    k.scheduled_at,
    k.chunks_done,
    k.chunks_total
   FROM (sink_keys k
     LEFT JOIN sink_targets t ON ((t.id = k.target)))
UNION ALL
 SELECT sink_effects_v1.idempotency_key,
    sink_effects_v1.fence,
    sink_effects_v1.payload_digest,
    sink_effects_v1.status,
    sink_effects_v1.body,
    sink_effects_v1.applied_at,
    sink_effects_v1.updated_at,
    sink_effects_v1.method,
    sink_effects_v1.path,
    sink_effects_v1.trigger_id,
    sink_effects_v1.attempt,
    sink_effects_v1.scheduled_at,
    sink_effects_v1.chunks_done,
    sink_effects_v1.chunks_total
   FROM sink_effects_v1;
