-- sink_apply_group(reqs): group commit (docs/sink.md, "Group commit").  One
-- call applies a group of requests inside the caller's transaction.
--
-- The loop path: each request in a subtransaction of its own, with the
-- steps of a request applied alone (src/sink/effect.c): key lock, the
-- key's rows from before sql/sink/006_keys.sql adopted, the key row locked
-- NOWAIT and its fence compared, then insert or advance it (its ledger
-- row is written at the end, with the group's time).  What a request alone
-- would roll back (stale, 422, a bad checkpoint, any SQL error) is rolled
-- back for that request only; the others go on.  Requests are taken in
-- array order: a second request for a key the group already holds sees the
-- first (replay, 422, stale or the next chunk).
--
-- REQS is a JSON array of {"k": key, "t": token, "d": digest (hex), "m":
-- method, "p": request-target, "tr": trigger, "at": attempt, "s":
-- scheduled_at, "n": chunks, "c": chunk}.  One row per request, in order:
-- r_outcome is applied, replayed, stale (r_highest), in_progress, mismatch
-- (r_done 1 when only the chunk count differs), ahead (a checkpoint past
-- the progress), unstarted (a checkpoint for an effect never started) or
-- error (r_body: SQLSTATE and message); a replay returns the stored
-- status and body (NULL: the ones the sink writes again from the key, the
-- progress r_done and the token that applied it, r_highest).  Last, the
-- group's ledger rows and key rows take one time, clock_timestamp() after
-- every request ran: applied_at, updated_at and seen_at say when the group
-- reached its COMMIT, not when its first statement ran.
--
-- The set path: when every request of REQS asks for chunk 1 and no key
-- appears twice, the requests cannot see each other, so applying them one
-- after the other and applying them together give the same answers.  In
-- one subtransaction for the whole group: the key locks of step 0 (array
-- order) and the adoption of the held keys; then, in a later statement (so
-- a snapshot taken after the locks), the key rows locked NOWAIT and read
-- to classify each request (in progress, stale, mismatch, replayed or
-- applied); the group's request targets inserted when new; last, the
-- writes: the fences of the replayed keys, the key and ledger rows of the
-- applied ones, all stamped with one clock_timestamp() taken after the
-- reads.  Any SQL error on the way (a key row locked by someone else, a
-- value PostgreSQL refuses, a row inserted behind the sink's back) rolls
-- the whole set path back and the group is applied by the loop below,
-- request by request: every refusal and error stays that request's own.
--
-- The loop path serves duplicate keys, chunked work and a failed set path.
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
	v_e record;
	v_id bigint;
	v_kids bigint[] := '{}';
	v_fences bigint[] := '{}';
	v_chunks int[] := '{}';
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
			-- the held keys' rows from before sql/sink/006_keys.sql, if any
			PERFORM sink_adopt(v_keys);
			-- steps 1 and 2, read: the key rows locked (NOWAIT:
			-- lock_not_available sends the group to the loop path), each
			-- request's outcome and the row it returns (a replay: the
			-- stored status and body, NULL for the ones the sink writes
			-- again, and in r_highest the token that applied it)
			SELECT array_agg(c.outcome ORDER BY c.o), array_agg(c.st ORDER BY c.o),
			       array_agg(c.b ORDER BY c.o), array_agg(c.hi ORDER BY c.o),
			       array_agg(c.dn ORDER BY c.o), count(*) FILTER (WHERE c.outcome = 'applied')
			INTO v_out, v_st, v_b, v_his, v_dn, v_applied
			FROM (SELECT x.o, y.outcome,
				     CASE WHEN y.outcome = 'replayed' THEN e.status END AS st,
				     CASE WHEN y.outcome = 'replayed' THEN e.body END AS b,
				     CASE y.outcome WHEN 'stale' THEN e.highest
					  WHEN 'replayed' THEN e.fence END AS hi,
				     CASE y.outcome WHEN 'replayed' THEN e.chunks_done
					  WHEN 'mismatch' THEN (e.digest = decode(x.d, 'hex'))::int END AS dn
			      FROM ROWS FROM (jsonb_to_recordset(reqs) AS (k text, t bigint, d text, n int))
				   WITH ORDINALITY AS x(k, t, d, n, o)
			      LEFT JOIN (SELECT idempotency_key, fence, highest, status, body, digest,
						chunks_done, chunks_total FROM sink_keys
					 WHERE idempotency_key = ANY (v_keys) FOR UPDATE NOWAIT) e
				ON e.idempotency_key = x.k
			      CROSS JOIN LATERAL (SELECT CASE
					WHEN NOT v_got[x.o] THEN 'in_progress'
					WHEN e.highest > x.t THEN 'stale'
					WHEN e.idempotency_key IS NULL THEN 'applied'
					WHEN e.digest <> decode(x.d, 'hex') OR e.chunks_total <> x.n
					THEN 'mismatch'
					ELSE 'replayed' END AS outcome) y) c;
			IF v_applied > 0 THEN
				-- the targets of the group, once each (a later statement
				-- reads them)
				INSERT INTO sink_targets (method, path)
				SELECT DISTINCT x.m, x.p FROM jsonb_to_recordset(reqs) AS x(m text, p text)
				WHERE NOT EXISTS (SELECT 1 FROM sink_targets t
						  WHERE t.method = x.m AND t.path = x.p)
				ON CONFLICT DO NOTHING;
			END IF;
			-- step 3, write: the replayed keys' fences move (as alone);
			-- the applied ones get their row and one ledger row; one time
			-- for all
			v_at := clock_timestamp();
			WITH r AS (SELECT x.*, v_out[x.o] AS outcome
				FROM ROWS FROM (jsonb_to_recordset(reqs) AS (k text, t bigint, d text,
					m text, p text, tr text, at text, s text, n int))
				     WITH ORDINALITY AS x(k, t, d, m, p, tr, at, s, n, o)
				WHERE v_out[x.o] IN ('applied', 'replayed')),
			f AS (UPDATE sink_keys k SET highest = greatest(k.highest, r.t), seen_at = v_at
				FROM r WHERE r.outcome = 'replayed' AND k.idempotency_key = r.k),
			e AS (INSERT INTO sink_keys (fence, highest, seen_at, applied_at, scheduled_at,
				trigger_id, attempt, target, chunks_total, digest, idempotency_key)
				SELECT r.t, r.t, v_at, v_at, r.s::timestamptz, r.tr::bigint, r.at::int,
				       (SELECT t.id FROM sink_targets t
					WHERE t.method = r.m AND t.path = r.p),
				       r.n, decode(r.d, 'hex'), r.k
				FROM r WHERE r.outcome = 'applied' ORDER BY r.o
				RETURNING id, fence)
			INSERT INTO sink_applies (key_id, fence, applied_at, chunk)
			SELECT id, fence, v_at, 1 FROM e;
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

	-- the loop path, request by request
	FOR q IN SELECT * FROM jsonb_to_recordset(reqs) AS x(k text, t bigint, d text, m text,
		p text, tr text, at text, s text, n int, c int)
	LOOP
		r_outcome := NULL; r_status := NULL; r_body := NULL; r_highest := NULL;
		r_done := NULL; v_id := NULL;
		BEGIN
			IF NOT pg_try_advisory_xact_lock(hashtextextended(q.k, 0)) THEN
				r_outcome := 'in_progress';
				RAISE SQLSTATE 'SK000';
			END IF;
			PERFORM sink_adopt(ARRAY[q.k]);
			SELECT fence, highest, status, body, digest, chunks_done, chunks_total INTO v_e
			FROM sink_keys WHERE idempotency_key = q.k FOR UPDATE NOWAIT;
			IF FOUND THEN
				IF v_e.highest > q.t THEN
					r_outcome := 'stale';
					r_highest := v_e.highest;
					RAISE SQLSTATE 'SK000';
				END IF;
				IF v_e.digest <> decode(q.d, 'hex') OR v_e.chunks_total <> q.n THEN
					r_outcome := 'mismatch';
					r_done := CASE WHEN v_e.digest = decode(q.d, 'hex') THEN 1 ELSE 0 END;
					RAISE SQLSTATE 'SK000';
				END IF;
				IF q.c <= v_e.chunks_done THEN
					-- a replay commits: the key's fence moves
					UPDATE sink_keys SET highest = greatest(highest, q.t),
						seen_at = clock_timestamp()
					WHERE idempotency_key = q.k;
					r_outcome := 'replayed';
					r_status := v_e.status;
					r_body := v_e.body;
					r_highest := v_e.fence;
					r_done := v_e.chunks_done;
				ELSIF q.c > v_e.chunks_done + 1 THEN
					r_outcome := 'ahead';
					RAISE SQLSTATE 'SK000';
				ELSE
					UPDATE sink_keys SET chunks_done = q.c, fence = q.t,
						highest = greatest(highest, q.t), status = NULL, body = NULL,
						trigger_id = q.tr::bigint, attempt = q.at::int,
						seen_at = clock_timestamp(), updated_at = clock_timestamp()
					WHERE idempotency_key = q.k AND chunks_done = q.c - 1
					RETURNING id INTO v_id;
				END IF;
			ELSIF q.c <> 1 THEN
				r_outcome := 'unstarted';
				RAISE SQLSTATE 'SK000';
			ELSE
				INSERT INTO sink_keys (fence, highest, scheduled_at, trigger_id, attempt,
					target, chunks_total, digest, idempotency_key)
				VALUES (q.t, q.t, q.s::timestamptz, q.tr::bigint, q.at::int,
					sink_target(q.m, q.p), q.n, decode(q.d, 'hex'), q.k)
				RETURNING id INTO v_id;
			END IF;
			IF r_outcome IS NULL THEN
				IF v_id IS NULL THEN
					-- the effect row moved under us: never commit it
					RAISE EXCEPTION 'ledger mismatch for key %', q.k;
				END IF;
				r_outcome := 'applied';
				v_kids := v_kids || v_id;
				v_fences := v_fences || q.t;
				v_chunks := v_chunks || q.c;
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
	IF cardinality(v_kids) > 0 THEN
		v_at := clock_timestamp();
		INSERT INTO sink_applies (key_id, fence, applied_at, chunk)
		SELECT u.kid, u.f, v_at, u.c FROM unnest(v_kids, v_fences, v_chunks) AS u(kid, f, c);
		UPDATE sink_keys SET seen_at = v_at,
			applied_at = CASE WHEN idempotency_key = ANY (v_first) THEN v_at ELSE applied_at END,
			updated_at = CASE WHEN chunks_done > 1 THEN v_at END
		WHERE idempotency_key = ANY (v_akeys);
	END IF;
END
$function$;
