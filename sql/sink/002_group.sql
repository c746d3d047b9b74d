-- sql/sink/002_group.sql - group commit (docs/sink.md): one call applies a
-- group of requests inside the caller's transaction, each in a
-- subtransaction of its own, with the steps of a request applied alone
-- (src/sink/effect.c): key lock, fence lock NOWAIT and greatest() upsert,
-- the effect row, then insert or advance it with one ledger row.  What a
-- request alone would roll back (stale, 422, a bad checkpoint, any SQL
-- error) is rolled back for that request only; the others go on.  Requests
-- are taken in array order: a second request for a key the group already
-- holds sees the first (replay, 422, stale or the next chunk).
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
CREATE FUNCTION sink_apply_group(reqs jsonb)
RETURNS TABLE (r_outcome text, r_status int, r_body text, r_highest bigint, r_done int)
LANGUAGE plpgsql AS $$
DECLARE
	q record;
	v_hi bigint;
	v_e record;
	v_id bigint;
	v_ids bigint[] := '{}';
	v_at timestamptz;
BEGIN
	-- trigger, attempt and scheduled_at are read as text and converted
	-- inside the request's block, so that a value PostgreSQL refuses (a
	-- year 0000) fails that request only, as it would alone
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
		WITH l AS (UPDATE sink_ledger SET applied_at = v_at WHERE id = ANY (v_ids)
			RETURNING idempotency_key, chunk),
		g AS (SELECT idempotency_key, min(chunk) AS first FROM l GROUP BY 1)
		UPDATE sink_effects e SET updated_at = v_at,
			applied_at = CASE WHEN g.first = 1 THEN v_at ELSE e.applied_at END
		FROM g WHERE e.idempotency_key = g.idempotency_key;
	END IF;
END
$$;
