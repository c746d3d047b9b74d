-- 028_audit_chain.sql - the audit log is tamper-evident: every row carries
-- its place in one chain (seq) and a SHA-256 chained over the row before it
-- (docs/schema.md, "audit_log chain").
--
-- compatible_from: 1
--
-- Expand only: two nullable columns that the trigger audit_log_seal
-- (sql/functions/) fills on every insert, older binaries' inserts
-- included, and one table that says where the chain starts once
-- retention has dropped a prefix.  Older binaries never read them.
ALTER TABLE audit_log ADD COLUMN seq bigint, ADD COLUMN hash bytea;
CREATE UNIQUE INDEX audit_log_seq ON audit_log (seq);

-- audit_chain_start: the first seq the chain still holds and the hash of
-- the row before it (the last one retention deleted).  No row: the chain
-- starts at seq 1 after the empty hash.
CREATE TABLE audit_chain_start (
	id          integer PRIMARY KEY DEFAULT 1 CHECK (id = 1),
	seq         bigint NOT NULL,
	prev_hash   bytea NOT NULL,
	updated_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- The rows already there are sealed in id order, from seq 1 after the
-- empty hash.  The row text is the one palisade_audit_link
-- (sql/functions/) hashes; that function does not exist yet while the
-- numbered steps run, so the same text is spelled out here.
DO $$
DECLARE
	r record;
	v_prev bytea := ''::bytea;
	v_seq bigint := 0;
BEGIN
	LOCK TABLE audit_log IN SHARE ROW EXCLUSIVE MODE;
	FOR r IN SELECT * FROM audit_log ORDER BY id LOOP
		v_seq := v_seq + 1;
		v_prev := sha256(v_prev || convert_to(format('%s|%s|%s|%L|%L|%L|%L|%L|%L|%L',
			v_seq, r.id, (extract(epoch FROM r.at) * 1000000)::bigint, r.actor,
			r.action, r.scope, r.reason, r.details::text, r.role, r.client), 'UTF8'));
		UPDATE audit_log SET seq = v_seq, hash = v_prev WHERE id = r.id;
	END LOOP;
END
$$;
