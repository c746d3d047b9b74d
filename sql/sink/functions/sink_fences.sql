-- sink_fences: the highest fencing token seen per idempotency key (the
-- resource) and when its last request committed, in the columns of the
-- sink's first schema: sink_keys.highest and seen_at, and the keys still
-- in sink_fences_v1 (sql/sink/006_keys.sql).
CREATE OR REPLACE VIEW sink_fences AS
 SELECT sink_keys.idempotency_key AS resource,
    sink_keys.highest AS fence,
    sink_keys.seen_at AS updated_at
   FROM sink_keys
UNION ALL
 SELECT sink_fences_v1.resource,
    sink_fences_v1.fence,
    sink_fences_v1.updated_at
   FROM sink_fences_v1;
