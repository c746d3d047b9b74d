-- sink_apply_group(reqs): group commit (docs/sink.md, "Group commit").  One
-- call applies a group of requests inside the caller's transaction.
--
-- The loop path: each request in a subtransaction of its own, with the
-- steps of a request applied alone (src/sink/effect.c): key lock, fence
-- lock NOWAIT and greatest() upsert, the effect row, then insert or
-- advance it with one ledger row.  What a request alone would roll back
-- (stale, 422, a bad checkpoint, any SQL error) is rolled back for that
-- request only; the others go on.  Requests are taken in array order: a
-- second request for a key the group already holds sees the first
-- (replay, 422, stale or the next chunk).
--
-- REQS is a JSON array of {"k": key, "t": token, "d": digest, "m": method,
-- "p": request-target, "tr": trigger, "at": attempt, "s": scheduled_at,
-- "n": chunks, "c": chunk, "st": status and "b": body to store when
-- applied}.  One row per request, in order: r_outcome is applied,
-- replayed, stale (r_highest), in_progress, mismatch (r_done 1 when only
-- the chunk count differs), ahead (a checkpoint past the progress), unstarted
-- (a checkpoint for an effect never started) or error (r_body: SQLSTATE and
-- message); r_status, r_body and r_done are the stored answer and progress
-- of a replay.  Last, the group's ledger rows and effect rows take one time,
-- clock_timestamp() after every request ran: applied_at and updated_at say
-- when the group reached its COMMIT, not when its first statement ran.
--
-- The set path: when every request of REQS asks for chunk 1 and no key
-- appears twice, the requests cannot see each other, so applying them one
-- after the other and applying them together give the same answers.  In
-- one subtransaction for the whole group, three statements: the key locks
-- of step 0 (array order); then, in a later statement (so a snapshot taken
-- after the locks), the fence rows locked NOWAIT and, with the effect rows,
-- read to classify each request (in progress, stale, mismatch, replayed or
-- applied); last, the writes: the fences of the applied and replayed
-- requests, the effect and ledger rows of the applied ones, all stamped
-- with one clock_timestamp() taken after the reads.  Any SQL error on the
-- way (a fence row locked by someone else, a value PostgreSQL refuses, a
-- row inserted behind the sink's back) rolls the whole set path back and
-- the group is applied by the loop below, request by request:
-- every refusal and error stays that request's own.
--
-- The loop path serves duplicate keys, chunked work and a failed set path.
-- The statement that stamps the group's applied_at is two updates by key
-- (ledger ids, effect keys), not a join: planned once per connection while
-- the tables were small, the join kept sequential scans of both tables
-- for good.
--
-- SET enable_seqscan = off: plpgsql keeps one generic plan per statement
-- and connection, chosen while the tables may still be tiny, when a
-- sequential scan is cheapest; every lookup here is by key and must stay
-- an index scan whatever the size of the tables later.  SET
-- plan_cache_mode = force_generic_plan: every statement is bounded by its
-- keys (= ANY of the group's keys, by index), so one plan serves any group
-- size, and planning each call anew (custom plans) cost more than a small
-- group's whole apply.
CREATE OR REPLACE FUNCTION sink_apply_group(reqs jsonb)
 RETURNS TABLE(r_outcome text, r_status integer, r_body text, r_highest bigint, r_done integer)
 LANGUAGE plpgsql
 SET enable_seqscan TO 'off'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
DECLARE
	q record;
	v_set bool;
	v_got bool[];
	v_keys text[];
	v_out text[];
	v_st int[];
	v_b text[];
	v_his bigint[];
	v_dn int[];
	v_applied int;
	v_rows bigint;
	v_hi bigint;
	v_e record;
	v_id bigint;
	v_ids bigint[] := '{}';
	v_akeys text[] := '{}';
	v_first text[] := '{}';
	v_at timestamptz;
BEGIN
	BEGIN
		-- step 0 for every request, when the group can take the set path
		-- (OFFSET 0: one lock try per row)
		SELECT bool_and(l.ok), coalesce(array_agg(l.g ORDER BY l.o), '{}'),
		       coalesce(array_agg(l.k) FILTER (WHERE l.g), '{}')
		INTO v_set, v_got, v_keys
		FROM (SELECT x.o, x.k, s.ok,
			     CASE WHEN s.ok THEN pg_try_advisory_xact_lock(hashtextextended(x.k, 0))
			     END AS g
		      FROM ROWS FROM (jsonb_to_recordset(reqs) AS (k text)) WITH ORDINALITY AS x(k, o),
			   (SELECT count(DISTINCT y.k) = count(*) AND coalesce(bool_and(y.c = 1), true)
				   AS ok
			    FROM jsonb_to_recordset(reqs) AS y(k text, c int)) s
		      OFFSET 0) l;
		IF v_set THEN
			-- steps 1a, 1b and 2, read: the fence rows locked (NOWAIT:
			-- lock_not_available sends the group to the loop path), each
			-- request's outcome and the row it returns
			SELECT array_agg(c.outcome ORDER BY c.o), array_agg(c.st ORDER BY c.o),
			       array_agg(c.b ORDER BY c.o), array_agg(c.hi ORDER BY c.o),
			       array_agg(c.dn ORDER BY c.o), count(*) FILTER (WHERE c.outcome = 'applied')
			INTO v_out, v_st, v_b, v_his, v_dn, v_applied
			FROM (SELECT x.o, y.outcome,
				     CASE WHEN y.outcome = 'replayed' THEN e.status END AS st,
				     CASE WHEN y.outcome = 'replayed' THEN e.body END AS b,
				     CASE WHEN y.outcome = 'stale' THEN f.fence END AS hi,
				     CASE y.outcome WHEN 'replayed' THEN e.chunks_done
					  WHEN 'mismatch' THEN (e.payload_digest = x.d)::int END AS dn
			      FROM ROWS FROM (jsonb_to_recordset(reqs) AS (k text, t bigint, d text, n int))
				   WITH ORDINALITY AS x(k, t, d, n, o)
			      LEFT JOIN (SELECT resource, fence FROM sink_fences
					 WHERE resource = ANY (v_keys) FOR UPDATE NOWAIT) f
				ON f.resource = x.k
			      LEFT JOIN (SELECT idempotency_key, status, body, payload_digest, chunks_done,
						chunks_total FROM sink_effects
					 WHERE idempotency_key = ANY (v_keys)) e ON e.idempotency_key = x.k
			      CROSS JOIN LATERAL (SELECT CASE
					WHEN NOT v_got[x.o] THEN 'in_progress'
					WHEN f.fence > x.t THEN 'stale'
					WHEN e.idempotency_key IS NULL THEN 'applied'
					WHEN e.payload_digest <> x.d OR e.chunks_total <> x.n THEN 'mismatch'
					ELSE 'replayed' END AS outcome) y) c;
			-- steps 1b and 3, write: the fences of the applied and replayed
			-- requests (a replay commits: its fence moves, as alone), the
			-- effect and ledger rows of the applied ones; one time for all
			v_at := clock_timestamp();
			WITH r AS (SELECT x.*, v_out[x.o] AS outcome
				FROM ROWS FROM (jsonb_to_recordset(reqs) AS (k text, t bigint, d text,
					m text, p text, tr text, at text, s text, n int, st int, b text))
				     WITH ORDINALITY AS x(k, t, d, m, p, tr, at, s, n, st, b, o)
				WHERE v_out[x.o] IN ('applied', 'replayed')),
			f AS (INSERT INTO sink_fences (resource, fence, updated_at)
				SELECT r.k, r.t, v_at FROM r ORDER BY r.o
				ON CONFLICT (resource) DO UPDATE
				SET fence = greatest(sink_fences.fence, excluded.fence),
				    updated_at = excluded.updated_at),
			e AS (INSERT INTO sink_effects (idempotency_key, fence, payload_digest,
				status, body, method, path, trigger_id, attempt, scheduled_at,
				chunks_done, chunks_total, applied_at, updated_at)
				SELECT r.k, r.t, r.d, r.st, r.b, r.m, r.p, r.tr::bigint, r.at::int,
				       r.s::timestamptz, 1, r.n, v_at, v_at
				FROM r WHERE r.outcome = 'applied' ORDER BY r.o
				RETURNING idempotency_key, fence, trigger_id, attempt)
			INSERT INTO sink_ledger (idempotency_key, chunk, fence, trigger_id, attempt,
				applied_at)
			SELECT idempotency_key, 1, fence, trigger_id, attempt, v_at FROM e;
			GET DIAGNOSTICS v_rows = ROW_COUNT;
			IF v_rows <> v_applied THEN
				RAISE EXCEPTION 'ledger mismatch: % ledger rows for % effects', v_rows,
					v_applied;
			END IF;
		END IF;
	EXCEPTION
		WHEN OTHERS THEN
			v_set := false; -- everything above is undone: the loop path
	END;
	IF v_set THEN
		RETURN QUERY SELECT * FROM unnest(v_out, v_st, v_b, v_his, v_dn);
		RETURN;
	END IF;

	-- the loop path: 002_group.sql, request by request
	FOR q IN SELECT * FROM jsonb_to_recordset(reqs) AS x(k text, t bigint, d text, m text,
		p text, tr text, at text, s text, n int, c int, st int, b text)
	LOOP
		r_outcome := NULL; r_status := NULL; r_body := NULL; r_highest := NULL;
		r_done := NULL; v_id := NULL;
		BEGIN
			IF NOT pg_try_advisory_xact_lock(hashtextextended(q.k, 0)) THEN
				r_outcome := 'in_progress';
				RAISE SQLSTATE 'SK000';
			END IF;
			PERFORM 1 FROM sink_fences WHERE resource = q.k FOR UPDATE NOWAIT;
			INSERT INTO sink_fences (resource, fence) VALUES (q.k, q.t)
			ON CONFLICT (resource) DO UPDATE
			SET fence = greatest(sink_fences.fence, excluded.fence),
			    updated_at = clock_timestamp()
			RETURNING fence INTO v_hi;
			IF v_hi > q.t THEN
				r_outcome := 'stale';
				r_highest := v_hi;
				RAISE SQLSTATE 'SK000';
			END IF;
			SELECT status, payload_digest, body, chunks_done, chunks_total INTO v_e
			FROM sink_effects WHERE idempotency_key = q.k;
			IF FOUND THEN
				IF v_e.payload_digest <> q.d OR v_e.chunks_total <> q.n THEN
					r_outcome := 'mismatch';
					r_done := CASE WHEN v_e.payload_digest = q.d THEN 1 ELSE 0 END;
					RAISE SQLSTATE 'SK000';
				END IF;
				IF q.c <= v_e.chunks_done THEN
					-- a replay commits: the fence row moved
					r_outcome := 'replayed';
					r_status := v_e.status;
					r_body := v_e.body;
					r_done := v_e.chunks_done;
				ELSIF q.c > v_e.chunks_done + 1 THEN
					r_outcome := 'ahead';
					RAISE SQLSTATE 'SK000';
				ELSE
					WITH e AS (UPDATE sink_effects SET chunks_done = q.c, fence = q.t,
						status = q.st, body = q.b, trigger_id = q.tr::bigint, attempt = q.at::int,
						updated_at = clock_timestamp()
						WHERE idempotency_key = q.k AND chunks_done = q.c - 1
						RETURNING idempotency_key, chunks_done, fence, trigger_id, attempt)
					INSERT INTO sink_ledger (idempotency_key, chunk, fence, trigger_id,
						attempt)
					SELECT idempotency_key, chunks_done, fence, trigger_id, attempt FROM e
					RETURNING id INTO v_id;
				END IF;
			ELSIF q.c <> 1 THEN
				r_outcome := 'unstarted';
				RAISE SQLSTATE 'SK000';
			ELSE
				WITH e AS (INSERT INTO sink_effects (idempotency_key, fence,
					payload_digest, status, body, method, path, trigger_id, attempt,
					scheduled_at, chunks_done, chunks_total)
					VALUES (q.k, q.t, q.d, q.st, q.b, q.m, q.p, q.tr::bigint, q.at::int,
						q.s::timestamptz, 1, q.n)
					RETURNING idempotency_key, fence, trigger_id, attempt)
				INSERT INTO sink_ledger (idempotency_key, chunk, fence, trigger_id, attempt)
				SELECT idempotency_key, 1, fence, trigger_id, attempt FROM e
				RETURNING id INTO v_id;
			END IF;
			IF r_outcome IS NULL THEN
				IF v_id IS NULL THEN
					-- no ledger row: the effect row moved under us; never commit it
					RAISE EXCEPTION 'ledger mismatch for key %', q.k;
				END IF;
				r_outcome := 'applied';
				v_ids := v_ids || v_id;
				v_akeys := v_akeys || q.k;
				IF q.c = 1 THEN
					v_first := v_first || q.k;
				END IF;
			END IF;
		EXCEPTION
			WHEN SQLSTATE 'SK000' THEN
				NULL; -- the refusal set above; the request's changes are undone
			WHEN lock_not_available THEN
				r_outcome := 'in_progress';
			WHEN OTHERS THEN
				r_outcome := 'error';
				r_body := SQLSTATE || ' ' || SQLERRM;
		END;
		RETURN NEXT;
	END LOOP;
	IF cardinality(v_ids) > 0 THEN
		v_at := clock_timestamp();
		UPDATE sink_ledger SET applied_at = v_at WHERE id = ANY (v_ids);
		UPDATE sink_effects SET updated_at = v_at,
			applied_at = CASE WHEN idempotency_key = ANY (v_first) THEN v_at ELSE applied_at END
		WHERE idempotency_key = ANY (v_akeys);
	END IF;
END
$function$;
