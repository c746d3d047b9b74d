/*
 * schema.c - the sink's own schema, applied by the sink at start-up.
 *
 * The text of sql/sink/NNN_name.sql is compiled in below (the table is a
 * verbatim copy; tests/integration/test_sink.sh compares it with the files
 * through `palisade-sink --print-schema`, so the two cannot drift).  These
 * are not palisade migrations: they are recorded in sink_schema_migrations,
 * under an advisory lock of their own, so the sink can share a database
 * with palisade or live in one of its own.
 *
 * Concurrency: every starting sink takes the same session-level advisory
 * lock (the two-key form, which never collides with palisade's one-key
 * migration lock), so several sinks started at once apply each file once.
 * A database that records a version this binary lacks is refused.
 *
 * Ownership: works on a borrowed PGconn; every PGresult is cleared here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sink_int.h"

/* pg_advisory_lock(classid, objid): "sink" as four bytes, then 1 = schema */
#define SCHEMA_LOCK "1936289387, 1"

static const struct sink_migration {
	int version;
	const char *name;
	const char *sql;
} migrations[] = {
    {1, "001_sink",
     "-- sql/sink/001_sink.sql - the schema of palisade-sink, the reference\n"
     "-- side-effect service (docs/sink.md).  NOT one of palisade's migrations:\n"
     "-- palisade-sink applies the files of sql/sink/ itself at start-up, each in\n"
     "-- one transaction with its row in sink_schema_migrations, under its own\n"
     "-- advisory lock.  These rows are durable and outlive every retry.\n"
     "\n"
     "-- The highest fencing token seen per resource.  The resource is the\n"
     "-- idempotency key: a request whose token is lower than the highest token\n"
     "-- seen for its key is stale (409 with Palisade-Stale-Token).\n"
     "CREATE TABLE sink_fences (\n"
     "	resource text PRIMARY KEY,\n"
     "	fence bigint NOT NULL CHECK (fence >= 0),\n"
     "	updated_at timestamptz NOT NULL DEFAULT clock_timestamp()\n"
     ");\n"
     "\n"
     "-- One row per idempotency key: what was applied and the answer to replay.\n"
     "-- A chunked effect (Palisade-Test-Chunks) records its progress here.\n"
     "CREATE TABLE sink_effects (\n"
     "	idempotency_key text PRIMARY KEY,\n"
     "	fence bigint NOT NULL,               -- token of the request that last advanced it\n"
     "	payload_digest text NOT NULL,        -- sha256(method \\n target \\n body), hex\n"
     "	status int NOT NULL,                 -- the stored answer, replayed verbatim\n"
     "	body text,\n"
     "	applied_at timestamptz NOT NULL DEFAULT clock_timestamp(),\n"
     "	updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),\n"
     "	method text,\n"
     "	path text,\n"
     "	trigger_id bigint,\n"
     "	attempt int,\n"
     "	scheduled_at timestamptz,\n"
     "	chunks_done int NOT NULL DEFAULT 1,\n"
     "	chunks_total int NOT NULL DEFAULT 1,\n"
     "	CHECK (chunks_total >= 1 AND chunks_done BETWEEN 1 AND chunks_total)\n"
     ");\n"
     "\n"
     "-- The effect itself: one row per (key, chunk) applied, never for a replay.\n"
     "-- Deliberately without a unique constraint: the tests count these rows to\n"
     "-- prove \"one effect per key\", so a duplicate must be able to show up here.\n"
     "CREATE TABLE sink_ledger (\n"
     "	id bigserial PRIMARY KEY,\n"
     "	idempotency_key text NOT NULL,\n"
     "	chunk int NOT NULL,\n"
     "	fence bigint NOT NULL,\n"
     "	trigger_id bigint,\n"
     "	attempt int,\n"
     "	applied_at timestamptz NOT NULL DEFAULT clock_timestamp()\n"
     ");\n"
     "CREATE INDEX sink_ledger_key ON sink_ledger (idempotency_key, chunk);\n"},
    {2, "002_group",
     "-- sql/sink/002_group.sql - group commit (docs/sink.md): one call applies a\n"
     "-- group of requests inside the caller's transaction, each in a\n"
     "-- subtransaction of its own, with the steps of a request applied alone\n"
     "-- (src/sink/effect.c): key lock, fence lock NOWAIT and greatest() upsert,\n"
     "-- the effect row, then insert or advance it with one ledger row.  What a\n"
     "-- request alone would roll back (stale, 422, a bad checkpoint, any SQL\n"
     "-- error) is rolled back for that request only; the others go on.  Requests\n"
     "-- are taken in array order: a second request for a key the group already\n"
     "-- holds sees the first (replay, 422, stale or the next chunk).\n"
     "--\n"
     "-- REQS is a JSON array of {\"k\": key, \"t\": token, \"d\": digest, \"m\": method,\n"
     "-- \"p\": request-target, \"tr\": trigger, \"at\": attempt, \"s\": scheduled_at,\n"
     "-- \"n\": chunks, \"c\": chunk, \"st\": status and \"b\": body to store when\n"
     "-- applied}.  One row per request, in order: r_outcome is applied,\n"
     "-- replayed, stale (r_highest), in_progress, mismatch (r_done 1 when only\n"
     "-- the chunk count differs), ahead (a checkpoint past the progress), unstarted\n"
     "-- (a checkpoint for an effect never started) or error (r_body: SQLSTATE and\n"
     "-- message); r_status, r_body and r_done are the stored answer and progress\n"
     "-- of a replay.  Last, the group's ledger rows and effect rows take one time,\n"
     "-- clock_timestamp() after every request ran: applied_at and updated_at say\n"
     "-- when the group reached its COMMIT, not when its first statement ran.\n"
     "CREATE FUNCTION sink_apply_group(reqs jsonb)\n"
     "RETURNS TABLE (r_outcome text, r_status int, r_body text, r_highest bigint, r_done int)\n"
     "LANGUAGE plpgsql AS $$\n"
     "DECLARE\n"
     "	q record;\n"
     "	v_hi bigint;\n"
     "	v_e record;\n"
     "	v_id bigint;\n"
     "	v_ids bigint[] := '{}';\n"
     "	v_at timestamptz;\n"
     "BEGIN\n"
     "	-- trigger, attempt and scheduled_at are read as text and converted\n"
     "	-- inside the request's block, so that a value PostgreSQL refuses (a\n"
     "	-- year 0000) fails that request only, as it would alone\n"
     "	FOR q IN SELECT * FROM jsonb_to_recordset(reqs) AS x(k text, t bigint, d text, m text,\n"
     "		p text, tr text, at text, s text, n int, c int, st int, b text)\n"
     "	LOOP\n"
     "		r_outcome := NULL; r_status := NULL; r_body := NULL; r_highest := NULL;\n"
     "		r_done := NULL; v_id := NULL;\n"
     "		BEGIN\n"
     "			IF NOT pg_try_advisory_xact_lock(hashtextextended(q.k, 0)) THEN\n"
     "				r_outcome := 'in_progress';\n"
     "				RAISE SQLSTATE 'SK000';\n"
     "			END IF;\n"
     "			PERFORM 1 FROM sink_fences WHERE resource = q.k FOR UPDATE NOWAIT;\n"
     "			INSERT INTO sink_fences (resource, fence) VALUES (q.k, q.t)\n"
     "			ON CONFLICT (resource) DO UPDATE\n"
     "			SET fence = greatest(sink_fences.fence, excluded.fence),\n"
     "			    updated_at = clock_timestamp()\n"
     "			RETURNING fence INTO v_hi;\n"
     "			IF v_hi > q.t THEN\n"
     "				r_outcome := 'stale';\n"
     "				r_highest := v_hi;\n"
     "				RAISE SQLSTATE 'SK000';\n"
     "			END IF;\n"
     "			SELECT status, payload_digest, body, chunks_done, chunks_total INTO v_e\n"
     "			FROM sink_effects WHERE idempotency_key = q.k;\n"
     "			IF FOUND THEN\n"
     "				IF v_e.payload_digest <> q.d OR v_e.chunks_total <> q.n THEN\n"
     "					r_outcome := 'mismatch';\n"
     "					r_done := CASE WHEN v_e.payload_digest = q.d THEN 1 ELSE 0 END;\n"
     "					RAISE SQLSTATE 'SK000';\n"
     "				END IF;\n"
     "				IF q.c <= v_e.chunks_done THEN\n"
     "					-- a replay commits: the fence row moved\n"
     "					r_outcome := 'replayed';\n"
     "					r_status := v_e.status;\n"
     "					r_body := v_e.body;\n"
     "					r_done := v_e.chunks_done;\n"
     "				ELSIF q.c > v_e.chunks_done + 1 THEN\n"
     "					r_outcome := 'ahead';\n"
     "					RAISE SQLSTATE 'SK000';\n"
     "				ELSE\n"
     "					WITH e AS (UPDATE sink_effects SET chunks_done = q.c, fence = q.t,\n"
     "						status = q.st, body = q.b, trigger_id = q.tr::bigint, attempt = q.at::int,\n"
     "						updated_at = clock_timestamp()\n"
     "						WHERE idempotency_key = q.k AND chunks_done = q.c - 1\n"
     "						RETURNING idempotency_key, chunks_done, fence, trigger_id, attempt)\n"
     "					INSERT INTO sink_ledger (idempotency_key, chunk, fence, trigger_id,\n"
     "						attempt)\n"
     "					SELECT idempotency_key, chunks_done, fence, trigger_id, attempt FROM e\n"
     "					RETURNING id INTO v_id;\n"
     "				END IF;\n"
     "			ELSIF q.c <> 1 THEN\n"
     "				r_outcome := 'unstarted';\n"
     "				RAISE SQLSTATE 'SK000';\n"
     "			ELSE\n"
     "				WITH e AS (INSERT INTO sink_effects (idempotency_key, fence,\n"
     "					payload_digest, status, body, method, path, trigger_id, attempt,\n"
     "					scheduled_at, chunks_done, chunks_total)\n"
     "					VALUES (q.k, q.t, q.d, q.st, q.b, q.m, q.p, q.tr::bigint, q.at::int,\n"
     "						q.s::timestamptz, 1, q.n)\n"
     "					RETURNING idempotency_key, fence, trigger_id, attempt)\n"
     "				INSERT INTO sink_ledger (idempotency_key, chunk, fence, trigger_id, attempt)\n"
     "				SELECT idempotency_key, 1, fence, trigger_id, attempt FROM e\n"
     "				RETURNING id INTO v_id;\n"
     "			END IF;\n"
     "			IF r_outcome IS NULL THEN\n"
     "				IF v_id IS NULL THEN\n"
     "					-- no ledger row: the effect row moved under us; never commit it\n"
     "					RAISE EXCEPTION 'ledger mismatch for key %', q.k;\n"
     "				END IF;\n"
     "				r_outcome := 'applied';\n"
     "				v_ids := v_ids || v_id;\n"
     "			END IF;\n"
     "		EXCEPTION\n"
     "			WHEN SQLSTATE 'SK000' THEN\n"
     "				NULL; -- the refusal set above; the request's changes are undone\n"
     "			WHEN lock_not_available THEN\n"
     "				r_outcome := 'in_progress';\n"
     "			WHEN OTHERS THEN\n"
     "				r_outcome := 'error';\n"
     "				r_body := SQLSTATE || ' ' || SQLERRM;\n"
     "		END;\n"
     "		RETURN NEXT;\n"
     "	END LOOP;\n"
     "	IF cardinality(v_ids) > 0 THEN\n"
     "		v_at := clock_timestamp();\n"
     "		WITH l AS (UPDATE sink_ledger SET applied_at = v_at WHERE id = ANY (v_ids)\n"
     "			RETURNING idempotency_key, chunk),\n"
     "		g AS (SELECT idempotency_key, min(chunk) AS first FROM l GROUP BY 1)\n"
     "		UPDATE sink_effects e SET updated_at = v_at,\n"
     "			applied_at = CASE WHEN g.first = 1 THEN v_at ELSE e.applied_at END\n"
     "		FROM g WHERE e.idempotency_key = g.idempotency_key;\n"
     "	END IF;\n"
     "END\n"
     "$$;\n"},
    {3, "003_retention",
     "-- sql/sink/003_retention.sql - what the sink's key retention reads\n"
     "-- (src/sink/retention.c, docs/sink.md \"Key retention\").\n"
     "--\n"
     "-- A key is forgotten once its last request (sink_fences.updated_at: every\n"
     "-- apply, replay or stale request moves it) and its effect\n"
     "-- (sink_effects.updated_at) are both older than --key-retention: its fence,\n"
     "-- its effect and its ledger rows go together.  These indexes find the\n"
     "-- oldest keys without scanning the tables.\n"
     "CREATE INDEX sink_fences_updated_at ON sink_fences (updated_at);\n"
     "CREATE INDEX sink_effects_updated_at ON sink_effects (updated_at);\n"},
    {4, "004_group_set",
     "-- sql/sink/004_group_set.sql - sink_apply_group() (002_group.sql) applies a\n"
     "-- group of plain requests for distinct keys in a few set-based statements\n"
     "-- instead of a subtransaction and six statements per request\n"
     "-- (docs/sink.md \"Group commit\").\n"
     "--\n"
     "-- The set path: when every request of REQS asks for chunk 1 and no key\n"
     "-- appears twice, the requests cannot see each other, so applying them one\n"
     "-- after the other and applying them together give the same answers.  In\n"
     "-- one subtransaction for the whole group, three statements: the key locks\n"
     "-- of step 0 (array order); then, in a later statement (so a snapshot taken\n"
     "-- after the locks), the fence rows locked NOWAIT and, with the effect rows,\n"
     "-- read to classify each request (in progress, stale, mismatch, replayed or\n"
     "-- applied); last, the writes: the fences of the applied and replayed\n"
     "-- requests, the effect and ledger rows of the applied ones, all stamped\n"
     "-- with one clock_timestamp() taken after the reads.  Any SQL error on the\n"
     "-- way (a fence row locked by someone else, a value PostgreSQL refuses, a\n"
     "-- row inserted behind the sink's back) rolls the whole set path back and\n"
     "-- the group is applied by the loop below, request by request, as before:\n"
     "-- every refusal and error stays that request's own.\n"
     "--\n"
     "-- The loop path (duplicate keys, chunked work, a failed set path) is the\n"
     "-- body of 002_group.sql, except that its last statement, which stamps the\n"
     "-- group's applied_at, is two updates by key (ledger ids, effect keys)\n"
     "-- instead of a join: planned once per connection while the tables were\n"
     "-- small, the join kept sequential scans of both tables for good.\n"
     "--\n"
     "-- SET enable_seqscan = off: plpgsql keeps one generic plan per statement\n"
     "-- and connection, chosen while the tables may still be tiny, when a\n"
     "-- sequential scan is cheapest; every lookup here is by key and must stay\n"
     "-- an index scan whatever the size of the tables later.  SET\n"
     "-- plan_cache_mode = force_generic_plan: every statement is bounded by its\n"
     "-- keys (= ANY of the group's keys, by index), so one plan serves any group\n"
     "-- size, and planning each call anew (custom plans) cost more than a small\n"
     "-- group's whole apply.\n"
     "CREATE OR REPLACE FUNCTION sink_apply_group(reqs jsonb)\n"
     "RETURNS TABLE (r_outcome text, r_status int, r_body text, r_highest bigint, r_done int)\n"
     "LANGUAGE plpgsql\n"
     "SET enable_seqscan = off\n"
     "SET plan_cache_mode = force_generic_plan\n"
     "AS $$\n"
     "DECLARE\n"
     "	q record;\n"
     "	v_set bool;\n"
     "	v_got bool[];\n"
     "	v_keys text[];\n"
     "	v_out text[];\n"
     "	v_st int[];\n"
     "	v_b text[];\n"
     "	v_his bigint[];\n"
     "	v_dn int[];\n"
     "	v_applied int;\n"
     "	v_rows bigint;\n"
     "	v_hi bigint;\n"
     "	v_e record;\n"
     "	v_id bigint;\n"
     "	v_ids bigint[] := '{}';\n"
     "	v_akeys text[] := '{}';\n"
     "	v_first text[] := '{}';\n"
     "	v_at timestamptz;\n"
     "BEGIN\n"
     "	BEGIN\n"
     "		-- step 0 for every request, when the group can take the set path\n"
     "		-- (OFFSET 0: one lock try per row)\n"
     "		SELECT bool_and(l.ok), coalesce(array_agg(l.g ORDER BY l.o), '{}'),\n"
     "		       coalesce(array_agg(l.k) FILTER (WHERE l.g), '{}')\n"
     "		INTO v_set, v_got, v_keys\n"
     "		FROM (SELECT x.o, x.k, s.ok,\n"
     "			     CASE WHEN s.ok THEN pg_try_advisory_xact_lock(hashtextextended(x.k, 0))\n"
     "			     END AS g\n"
     "		      FROM ROWS FROM (jsonb_to_recordset(reqs) AS (k text)) WITH ORDINALITY AS x(k, o),\n"
     "			   (SELECT count(DISTINCT y.k) = count(*) AND coalesce(bool_and(y.c = 1), true)\n"
     "				   AS ok\n"
     "			    FROM jsonb_to_recordset(reqs) AS y(k text, c int)) s\n"
     "		      OFFSET 0) l;\n"
     "		IF v_set THEN\n"
     "			-- steps 1a, 1b and 2, read: the fence rows locked (NOWAIT:\n"
     "			-- lock_not_available sends the group to the loop path), each\n"
     "			-- request's outcome and the row it returns\n"
     "			SELECT array_agg(c.outcome ORDER BY c.o), array_agg(c.st ORDER BY c.o),\n"
     "			       array_agg(c.b ORDER BY c.o), array_agg(c.hi ORDER BY c.o),\n"
     "			       array_agg(c.dn ORDER BY c.o), count(*) FILTER (WHERE c.outcome = 'applied')\n"
     "			INTO v_out, v_st, v_b, v_his, v_dn, v_applied\n"
     "			FROM (SELECT x.o, y.outcome,\n"
     "				     CASE WHEN y.outcome = 'replayed' THEN e.status END AS st,\n"
     "				     CASE WHEN y.outcome = 'replayed' THEN e.body END AS b,\n"
     "				     CASE WHEN y.outcome = 'stale' THEN f.fence END AS hi,\n"
     "				     CASE y.outcome WHEN 'replayed' THEN e.chunks_done\n"
     "					  WHEN 'mismatch' THEN (e.payload_digest = x.d)::int END AS dn\n"
     "			      FROM ROWS FROM (jsonb_to_recordset(reqs) AS (k text, t bigint, d text, n int))\n"
     "				   WITH ORDINALITY AS x(k, t, d, n, o)\n"
     "			      LEFT JOIN (SELECT resource, fence FROM sink_fences\n"
     "					 WHERE resource = ANY (v_keys) FOR UPDATE NOWAIT) f\n"
     "				ON f.resource = x.k\n"
     "			      LEFT JOIN (SELECT idempotency_key, status, body, payload_digest, chunks_done,\n"
     "						chunks_total FROM sink_effects\n"
     "					 WHERE idempotency_key = ANY (v_keys)) e ON e.idempotency_key = x.k\n"
     "			      CROSS JOIN LATERAL (SELECT CASE\n"
     "					WHEN NOT v_got[x.o] THEN 'in_progress'\n"
     "					WHEN f.fence > x.t THEN 'stale'\n"
     "					WHEN e.idempotency_key IS NULL THEN 'applied'\n"
     "					WHEN e.payload_digest <> x.d OR e.chunks_total <> x.n THEN 'mismatch'\n"
     "					ELSE 'replayed' END AS outcome) y) c;\n"
     "			-- steps 1b and 3, write: the fences of the applied and replayed\n"
     "			-- requests (a replay commits: its fence moves, as alone), the\n"
     "			-- effect and ledger rows of the applied ones; one time for all\n"
     "			v_at := clock_timestamp();\n"
     "			WITH r AS (SELECT x.*, v_out[x.o] AS outcome\n"
     "				FROM ROWS FROM (jsonb_to_recordset(reqs) AS (k text, t bigint, d text,\n"
     "					m text, p text, tr text, at text, s text, n int, st int, b text))\n"
     "				     WITH ORDINALITY AS x(k, t, d, m, p, tr, at, s, n, st, b, o)\n"
     "				WHERE v_out[x.o] IN ('applied', 'replayed')),\n"
     "			f AS (INSERT INTO sink_fences (resource, fence, updated_at)\n"
     "				SELECT r.k, r.t, v_at FROM r ORDER BY r.o\n"
     "				ON CONFLICT (resource) DO UPDATE\n"
     "				SET fence = greatest(sink_fences.fence, excluded.fence),\n"
     "				    updated_at = excluded.updated_at),\n"
     "			e AS (INSERT INTO sink_effects (idempotency_key, fence, payload_digest,\n"
     "				status, body, method, path, trigger_id, attempt, scheduled_at,\n"
     "				chunks_done, chunks_total, applied_at, updated_at)\n"
     "				SELECT r.k, r.t, r.d, r.st, r.b, r.m, r.p, r.tr::bigint, r.at::int,\n"
     "				       r.s::timestamptz, 1, r.n, v_at, v_at\n"
     "				FROM r WHERE r.outcome = 'applied' ORDER BY r.o\n"
     "				RETURNING idempotency_key, fence, trigger_id, attempt)\n"
     "			INSERT INTO sink_ledger (idempotency_key, chunk, fence, trigger_id, attempt,\n"
     "				applied_at)\n"
     "			SELECT idempotency_key, 1, fence, trigger_id, attempt, v_at FROM e;\n"
     "			GET DIAGNOSTICS v_rows = ROW_COUNT;\n"
     "			IF v_rows <> v_applied THEN\n"
     "				RAISE EXCEPTION 'ledger mismatch: % ledger rows for % effects', v_rows,\n"
     "					v_applied;\n"
     "			END IF;\n"
     "		END IF;\n"
     "	EXCEPTION\n"
     "		WHEN OTHERS THEN\n"
     "			v_set := false; -- everything above is undone: the loop path\n"
     "	END;\n"
     "	IF v_set THEN\n"
     "		RETURN QUERY SELECT * FROM unnest(v_out, v_st, v_b, v_his, v_dn);\n"
     "		RETURN;\n"
     "	END IF;\n"
     "\n"
     "	-- the loop path: 002_group.sql, request by request\n"
     "	FOR q IN SELECT * FROM jsonb_to_recordset(reqs) AS x(k text, t bigint, d text, m text,\n"
     "		p text, tr text, at text, s text, n int, c int, st int, b text)\n"
     "	LOOP\n"
     "		r_outcome := NULL; r_status := NULL; r_body := NULL; r_highest := NULL;\n"
     "		r_done := NULL; v_id := NULL;\n"
     "		BEGIN\n"
     "			IF NOT pg_try_advisory_xact_lock(hashtextextended(q.k, 0)) THEN\n"
     "				r_outcome := 'in_progress';\n"
     "				RAISE SQLSTATE 'SK000';\n"
     "			END IF;\n"
     "			PERFORM 1 FROM sink_fences WHERE resource = q.k FOR UPDATE NOWAIT;\n"
     "			INSERT INTO sink_fences (resource, fence) VALUES (q.k, q.t)\n"
     "			ON CONFLICT (resource) DO UPDATE\n"
     "			SET fence = greatest(sink_fences.fence, excluded.fence),\n"
     "			    updated_at = clock_timestamp()\n"
     "			RETURNING fence INTO v_hi;\n"
     "			IF v_hi > q.t THEN\n"
     "				r_outcome := 'stale';\n"
     "				r_highest := v_hi;\n"
     "				RAISE SQLSTATE 'SK000';\n"
     "			END IF;\n"
     "			SELECT status, payload_digest, body, chunks_done, chunks_total INTO v_e\n"
     "			FROM sink_effects WHERE idempotency_key = q.k;\n"
     "			IF FOUND THEN\n"
     "				IF v_e.payload_digest <> q.d OR v_e.chunks_total <> q.n THEN\n"
     "					r_outcome := 'mismatch';\n"
     "					r_done := CASE WHEN v_e.payload_digest = q.d THEN 1 ELSE 0 END;\n"
     "					RAISE SQLSTATE 'SK000';\n"
     "				END IF;\n"
     "				IF q.c <= v_e.chunks_done THEN\n"
     "					-- a replay commits: the fence row moved\n"
     "					r_outcome := 'replayed';\n"
     "					r_status := v_e.status;\n"
     "					r_body := v_e.body;\n"
     "					r_done := v_e.chunks_done;\n"
     "				ELSIF q.c > v_e.chunks_done + 1 THEN\n"
     "					r_outcome := 'ahead';\n"
     "					RAISE SQLSTATE 'SK000';\n"
     "				ELSE\n"
     "					WITH e AS (UPDATE sink_effects SET chunks_done = q.c, fence = q.t,\n"
     "						status = q.st, body = q.b, trigger_id = q.tr::bigint, attempt = q.at::int,\n"
     "						updated_at = clock_timestamp()\n"
     "						WHERE idempotency_key = q.k AND chunks_done = q.c - 1\n"
     "						RETURNING idempotency_key, chunks_done, fence, trigger_id, attempt)\n"
     "					INSERT INTO sink_ledger (idempotency_key, chunk, fence, trigger_id,\n"
     "						attempt)\n"
     "					SELECT idempotency_key, chunks_done, fence, trigger_id, attempt FROM e\n"
     "					RETURNING id INTO v_id;\n"
     "				END IF;\n"
     "			ELSIF q.c <> 1 THEN\n"
     "				r_outcome := 'unstarted';\n"
     "				RAISE SQLSTATE 'SK000';\n"
     "			ELSE\n"
     "				WITH e AS (INSERT INTO sink_effects (idempotency_key, fence,\n"
     "					payload_digest, status, body, method, path, trigger_id, attempt,\n"
     "					scheduled_at, chunks_done, chunks_total)\n"
     "					VALUES (q.k, q.t, q.d, q.st, q.b, q.m, q.p, q.tr::bigint, q.at::int,\n"
     "						q.s::timestamptz, 1, q.n)\n"
     "					RETURNING idempotency_key, fence, trigger_id, attempt)\n"
     "				INSERT INTO sink_ledger (idempotency_key, chunk, fence, trigger_id, attempt)\n"
     "				SELECT idempotency_key, 1, fence, trigger_id, attempt FROM e\n"
     "				RETURNING id INTO v_id;\n"
     "			END IF;\n"
     "			IF r_outcome IS NULL THEN\n"
     "				IF v_id IS NULL THEN\n"
     "					-- no ledger row: the effect row moved under us; never commit it\n"
     "					RAISE EXCEPTION 'ledger mismatch for key %', q.k;\n"
     "				END IF;\n"
     "				r_outcome := 'applied';\n"
     "				v_ids := v_ids || v_id;\n"
     "				v_akeys := v_akeys || q.k;\n"
     "				IF q.c = 1 THEN\n"
     "					v_first := v_first || q.k;\n"
     "				END IF;\n"
     "			END IF;\n"
     "		EXCEPTION\n"
     "			WHEN SQLSTATE 'SK000' THEN\n"
     "				NULL; -- the refusal set above; the request's changes are undone\n"
     "			WHEN lock_not_available THEN\n"
     "				r_outcome := 'in_progress';\n"
     "			WHEN OTHERS THEN\n"
     "				r_outcome := 'error';\n"
     "				r_body := SQLSTATE || ' ' || SQLERRM;\n"
     "		END;\n"
     "		RETURN NEXT;\n"
     "	END LOOP;\n"
     "	IF cardinality(v_ids) > 0 THEN\n"
     "		v_at := clock_timestamp();\n"
     "		UPDATE sink_ledger SET applied_at = v_at WHERE id = ANY (v_ids);\n"
     "		UPDATE sink_effects SET updated_at = v_at,\n"
     "			applied_at = CASE WHEN idempotency_key = ANY (v_first) THEN v_at ELSE applied_at END\n"
     "		WHERE idempotency_key = ANY (v_akeys);\n"
     "	END IF;\n"
     "END\n"
     "$$;\n"},

};

static const char SQL_CREATE_TABLE[] =
    "CREATE TABLE IF NOT EXISTS sink_schema_migrations ("
    " version integer PRIMARY KEY, name text NOT NULL,"
    " applied_at timestamptz NOT NULL DEFAULT clock_timestamp())";

/* Run SQL (no rows expected, no parameters); PAL_EDB with ERR filled. */
static int exec(PGconn *pg, const char *sql, const char *what, char *err, size_t errlen)
{
	PGresult *r = PQexec(pg, sql);
	ExecStatusType st = PQresultStatus(r);
	if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
		PQclear(r);
		return PAL_OK;
	}
	char msg[256];
	snprintf(msg, sizeof msg, "%s", r ? PQresultErrorMessage(r) : PQerrorMessage(pg));
	msg[strcspn(msg, "\n")] = '\0';
	snprintf(err, errlen, "%s: %s", what, msg);
	PQclear(r);
	return PAL_EDB;
}

/* One value of a one-row query with parameter P1 (may be NULL for none),
 * copied into OUT; "" when there is no row. */
static int value(PGconn *pg, const char *sql, const char *p1, char *out, size_t outlen, char *err,
		 size_t errlen)
{
	const char *params[] = {p1};
	PGresult *r = PQexecParams(pg, sql, p1 ? 1 : 0, NULL, p1 ? params : NULL, NULL, NULL, 0);
	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		char msg[256];
		snprintf(msg, sizeof msg, "%s", r ? PQresultErrorMessage(r) : PQerrorMessage(pg));
		msg[strcspn(msg, "\n")] = '\0';
		snprintf(err, errlen, "reading the sink schema version: %s", msg);
		PQclear(r);
		return PAL_EDB;
	}
	snprintf(out, outlen, "%s", PQntuples(r) > 0 ? PQgetvalue(r, 0, 0) : "");
	PQclear(r);
	return PAL_OK;
}

static int apply_one(PGconn *pg, const struct sink_migration *m, char *err, size_t errlen)
{
	char what[96];
	snprintf(what, sizeof what, "sink schema %s", m->name);
	int rc = exec(pg, "BEGIN", what, err, errlen);
	if (rc == PAL_OK)
		rc = exec(pg, m->sql, what, err, errlen); /* multi-statement: simple protocol */
	if (rc == PAL_OK) {
		char v[16];
		snprintf(v, sizeof v, "%d", m->version);
		const char *params[] = {v, m->name};
		PGresult *r = PQexecParams(pg,
					   "INSERT INTO sink_schema_migrations (version, name) "
					   "VALUES ($1, $2)",
					   2, NULL, params, NULL, NULL, 0);
		if (PQresultStatus(r) != PGRES_COMMAND_OK) {
			snprintf(err, errlen, "%s: recording the version: %s", what,
				 PQerrorMessage(pg));
			err[strcspn(err, "\n")] = '\0';
			rc = PAL_EDB;
		}
		PQclear(r);
	}
	if (rc == PAL_OK)
		return exec(pg, "COMMIT", what, err, errlen);
	PQclear(PQexec(pg, "ROLLBACK"));
	return rc;
}

int pal__sink_schema_apply(PGconn *pg, int *applied, char *err, size_t errlen)
{
	const int n = (int)(sizeof migrations / sizeof migrations[0]);
	int known = 0;
	for (int i = 0; i < n; i++)
		if (migrations[i].version > known)
			known = migrations[i].version;

	*applied = 0;
	int rc =
	    exec(pg, "SELECT pg_advisory_lock(" SCHEMA_LOCK ")", "sink schema lock", err, errlen);
	if (rc != PAL_OK)
		return rc;
	/* quiet the NOTICE "relation already exists, skipping" */
	rc = exec(pg, "SET client_min_messages = warning", "sink schema", err, errlen);
	if (rc == PAL_OK)
		rc = exec(pg, SQL_CREATE_TABLE, "sink schema", err, errlen);
	char have[32] = "";
	if (rc == PAL_OK)
		rc = value(pg, "SELECT coalesce(max(version), 0) FROM sink_schema_migrations", NULL,
			   have, sizeof have, err, errlen);
	if (rc == PAL_OK && atoi(have) > known) {
		snprintf(err, errlen,
			 "the sink schema is at version %s but this palisade-sink knows only up "
			 "to %d; upgrade palisade-sink before running it against this database",
			 have, known);
		rc = PAL_ESCHEMA;
	}
	for (int i = 0; rc == PAL_OK && i < n; i++) {
		char v[16], found[8];
		snprintf(v, sizeof v, "%d", migrations[i].version);
		rc = value(pg, "SELECT 1 FROM sink_schema_migrations WHERE version = $1", v, found,
			   sizeof found, err, errlen);
		if (rc == PAL_OK && found[0] == '\0') {
			rc = apply_one(pg, &migrations[i], err, errlen);
			if (rc == PAL_OK)
				(*applied)++;
		}
	}
	char uerr[256];
	int urc = exec(pg, "SELECT pg_advisory_unlock(" SCHEMA_LOCK ")", "sink schema unlock", uerr,
		       sizeof uerr);
	if (urc != PAL_OK && rc == PAL_OK) {
		snprintf(err, errlen, "%s", uerr);
		rc = urc;
	}
	return rc;
}

void pal__sink_schema_print(void)
{
	for (size_t i = 0; i < sizeof migrations / sizeof migrations[0]; i++)
		fputs(migrations[i].sql, stdout);
}
