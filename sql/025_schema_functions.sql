-- 025_schema_functions.sql - which bodies of the functions, views and
-- triggers of sql/functions/ the database has.
--
-- compatible_from: 1
--
-- The functions, views and triggers live whole in sql/functions/, one
-- CREATE OR REPLACE per file, and are applied after the numbered steps by
-- the binary that has just brought the schema up to its own version
-- (docs/schema.md, "Functions, views and triggers").  This one row says
-- which set it applied: the binary's schema version and the SHA-256 of the
-- files (ops/embed-sql.sh).  A binary applies its set again only when the
-- row names an older version, or its own version with other files; a
-- binary older than the row never does, so an older node that restarts in
-- the middle of a roll does not put its own bodies back.
--
-- Expand style: a new table that binaries of earlier schemas never read.
CREATE TABLE schema_functions (
	id          integer PRIMARY KEY DEFAULT 1 CHECK (id = 1),
	version     integer NOT NULL,
	digest      text NOT NULL,
	applied_at  timestamptz NOT NULL DEFAULT now()
);
