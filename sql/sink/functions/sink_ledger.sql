-- sink_ledger: one row per applied chunk of a key, in the columns of the
-- sink's first schema: sink_applies with its key by sink_keys.id (the
-- trigger and attempt are those of the key's last applied chunk), and the
-- rows still in sink_ledger_v1 (sql/sink/006_keys.sql).  Counting these
-- rows per key and chunk is how the tests and drills prove one effect per
-- key.
CREATE OR REPLACE VIEW sink_ledger AS
 SELECT k.idempotency_key,
    a.chunk,
    a.fence,
    k.trigger_id,
    k.attempt,
    a.applied_at
   FROM (sink_applies a
     JOIN sink_keys k ON ((k.id = a.key_id)))
UNION ALL
 SELECT sink_ledger_v1.idempotency_key,
    sink_ledger_v1.chunk,
    sink_ledger_v1.fence,
    sink_ledger_v1.trigger_id,
    sink_ledger_v1.attempt,
    sink_ledger_v1.applied_at
   FROM sink_ledger_v1;
