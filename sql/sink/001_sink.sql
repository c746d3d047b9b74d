-- sql/sink/001_sink.sql - the schema of palisade-sink, the reference
-- side-effect service (docs/sink.md).  NOT one of palisade's migrations:
-- palisade-sink applies the files of sql/sink/ itself at start-up, each in
-- one transaction with its row in sink_schema_migrations, under its own
-- advisory lock.  These rows are durable and outlive every retry.

-- The highest fencing token seen per resource.  The resource is the
-- idempotency key: a request whose token is lower than the highest token
-- seen for its key is stale (409 with Palisade-Stale-Token).
CREATE TABLE sink_fences (
	resource text PRIMARY KEY,
	fence bigint NOT NULL CHECK (fence >= 0),
	updated_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- One row per idempotency key: what was applied and the answer to replay.
-- A chunked effect (Palisade-Test-Chunks) records its progress here.
CREATE TABLE sink_effects (
	idempotency_key text PRIMARY KEY,
	fence bigint NOT NULL,               -- token of the request that last advanced it
	payload_digest text NOT NULL,        -- sha256(method \n target \n body), hex
	status int NOT NULL,                 -- the stored answer, replayed verbatim
	body text,
	applied_at timestamptz NOT NULL DEFAULT clock_timestamp(),
	updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
	method text,
	path text,
	trigger_id bigint,
	attempt int,
	scheduled_at timestamptz,
	chunks_done int NOT NULL DEFAULT 1,
	chunks_total int NOT NULL DEFAULT 1,
	CHECK (chunks_total >= 1 AND chunks_done BETWEEN 1 AND chunks_total)
);

-- The effect itself: one row per (key, chunk) applied, never for a replay.
-- Deliberately without a unique constraint: the tests count these rows to
-- prove "one effect per key", so a duplicate must be able to show up here.
CREATE TABLE sink_ledger (
	id bigserial PRIMARY KEY,
	idempotency_key text NOT NULL,
	chunk int NOT NULL,
	fence bigint NOT NULL,
	trigger_id bigint,
	attempt int,
	applied_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX sink_ledger_key ON sink_ledger (idempotency_key, chunk);
