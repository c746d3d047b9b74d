-- 024_api_tokens.sql - identities of the HTTP API (docs/api.md): tokens
-- with a role and optional tenants, the answers kept for Idempotency-Key,
-- and who wrote each audit row through the API.
--
-- compatible_from: 1
--
-- Expand only: new tables and two nullable columns (a trigger fills
-- them); older binaries never read them.
--
-- api_tokens: one row per token.  The secret a client presents is
-- "pal_<id>_<secret>"; only the id (public, the lookup key) and
-- HMAC-SHA-256(salt, secret) are stored, so a dump of the table lets no
-- one in.  A revoked token keeps its row (the audit log names it);
-- requests check revoked_at on every call, so revoking acts at once on
-- every node.  tenants empty: every tenant.
CREATE TABLE api_tokens (
	id          text PRIMARY KEY,
	name        text NOT NULL,
	role        text NOT NULL CHECK (role IN ('viewer', 'operator', 'admin')),
	tenants     text[] NOT NULL DEFAULT '{}',
	salt        text NOT NULL,
	hash        text NOT NULL,
	created_by  text NOT NULL,
	created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
	revoked_at  timestamptz,
	revoked_by  text
);
-- One live token per name; a revoked name may be reused.
CREATE UNIQUE INDEX api_tokens_live_name ON api_tokens (name) WHERE revoked_at IS NULL;

-- api_requests: the answer to each write sent with an Idempotency-Key, per
-- token, so that a retried request is answered again instead of acted on
-- again.  status NULL: the first request is still being served.  Rows older
-- than a day are deleted by the API as it writes new ones.
CREATE TABLE api_requests (
	token_id    text NOT NULL,
	key         text NOT NULL,
	method      text NOT NULL,
	path        text NOT NULL,
	digest      text NOT NULL,  -- SHA-256 of the request body
	status      integer,
	response    text,
	created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
	PRIMARY KEY (token_id, key)
);
CREATE INDEX api_requests_created ON api_requests (created_at);

-- Who wrote an audit row through the API: filled in by the trigger
-- audit_log_identity (sql/functions/) from the API connection's settings;
-- rows written by the CLI or the nodes leave both NULL.
ALTER TABLE audit_log ADD COLUMN role text, ADD COLUMN client text;
