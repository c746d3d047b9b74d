-- palisade_retention(interval, ahead, keep, lock_ms): one round of
-- partition maintenance, at most one at a time in the cluster (advisory
-- lock 7076/1; a second caller gets one row 'busy' and does nothing).
--   0. after a change of INTERVAL, the empty ranges at the end that have
--      not ended yet and have the old length are dropped ('reshaped'),
--      latest first, up to the first that holds a row;
--   1. ranges exist up to now + AHEAD, each INTERVAL long, aligned on
--      multiples of INTERVAL since the epoch (a gap left by a long stop
--      becomes one range up to the current interval);
--   2. a range that ended more than KEEP ago is dropped (its
--      attempt_responses partition, its attempts partition, then its
--      triggers partition: DETACH then DROP) when it
--      holds no trigger in a non-terminal state (palisade_partition_live())
--      and no trigger the dependency planner still reads: a trigger of a
--      dependent job or of one of its upstreams above that dependent job's
--      watermark (palisade_partition_readers(); the planner decides an
--      instant from them, and would otherwise lose it or record a false
--      upstream_failed); else it is kept and reported ('kept', with the
--      count of live triggers: 0 when only read), and every later round
--      looks again.
-- A round with something to do takes ACCESS EXCLUSIVE on triggers and
-- attempts (in that order) before its first DDL, waiting at most LOCK_MS
-- (lock_timeout), so that it never queues claims behind it for long; a
-- round that could not lock reports 'busy' and the next one tries again.
-- A round with nothing to drop or create takes no lock.  Rows: action
-- (created, dropped, kept, busy, reshaped), part (the triggers table of
-- the range), range_from, range_to, live (kept: live triggers), bytes
-- (dropped: what the range's tables held).
CREATE OR REPLACE FUNCTION palisade_retention(p_interval interval, p_ahead interval, p_keep interval, p_lock_ms integer)
 RETURNS TABLE(action text, part text, range_from timestamp with time zone, range_to timestamp with time zone, live bigint, bytes bigint)
 LANGUAGE plpgsql
AS $function$
#variable_conflict use_column
DECLARE
	v_hi timestamptz;
	v_now timestamptz := clock_timestamp();
	v_cur timestamptz;
	v_next timestamptz;
	r record;
	v_read record;
	v_live bigint;
	v_bytes bigint;
	v_busy boolean;
	v_work boolean;
BEGIN
	IF p_interval < interval '1 second' OR p_keep < interval '0' OR p_ahead < interval '0' THEN
		RAISE EXCEPTION 'palisade_retention: interval must be at least 1 s, keep and ahead not negative'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF NOT pg_try_advisory_xact_lock(7076, 1) THEN
		RETURN QUERY SELECT 'busy'::text, NULL::text, NULL::timestamptz, NULL::timestamptz,
			NULL::bigint, NULL::bigint;
		RETURN;
	END IF;
	PERFORM set_config('lock_timeout', p_lock_ms || 'ms', true);

	-- Anything to do?  Read without locks; then, if so, both parents are
	-- locked at once, in the order of the claims and commits (triggers,
	-- then attempts), before any DDL: taking a weaker lock for one step
	-- and a stronger one for the next deadlocked with the claims queued
	-- in between.  Liveness is checked again under the lock.
	v_cur := date_bin(p_interval, v_now, timestamptz '1970-01-01 00:00:00+00');
	SELECT max(p.range_to) INTO v_hi FROM palisade_partitions p;
	v_work := v_hi IS NULL OR v_hi < v_now + p_ahead;
	FOR r IN SELECT p.* FROM palisade_partitions p ORDER BY p.range_from DESC LOOP
		EXIT WHEN v_work;
		IF r.range_to > v_now AND r.range_to - r.range_from <> p_interval THEN
			EXECUTE format('SELECT NOT EXISTS (SELECT 1 FROM %I) AND NOT EXISTS (SELECT 1 FROM %I)',
				r.triggers_part, r.attempts_part) INTO v_work;
		ELSIF r.range_to <= v_now - p_keep THEN
			v_work := palisade_partition_live(r.triggers_part, true) = 0
				AND NOT EXISTS (SELECT 1 FROM palisade_partition_readers(r.triggers_part));
		END IF;
	END LOOP;
	IF NOT v_work THEN
		-- report the ranges kept for their live triggers or their readers,
		-- change nothing
		FOR r IN SELECT p.* FROM palisade_partitions p WHERE p.range_to <= v_now - p_keep
		    ORDER BY p.range_from LOOP
			v_live := palisade_partition_live(r.triggers_part, false);
			RETURN QUERY SELECT 'kept'::text, r.triggers_part, r.range_from, r.range_to, v_live,
				NULL::bigint;
		END LOOP;
		RETURN;
	END IF;
	BEGIN
		LOCK TABLE triggers, attempts, attempt_responses IN ACCESS EXCLUSIVE MODE;
	EXCEPTION WHEN lock_not_available THEN
		RETURN QUERY SELECT 'busy'::text, NULL::text, NULL::timestamptz, NULL::timestamptz,
			NULL::bigint, NULL::bigint;
		RETURN;
	END;

	-- 0. a new interval: the latest ranges that have not ended, hold no
	-- row and are not INTERVAL long go (latest first, so no gap opens), and
	-- step 1 makes them again with the new length.
	FOR r IN SELECT p.* FROM palisade_partitions p WHERE p.range_to > v_now
	    ORDER BY p.range_from DESC LOOP
		EXIT WHEN r.range_to - r.range_from = p_interval;
		EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I) OR EXISTS (SELECT 1 FROM %I)',
			r.triggers_part, r.attempts_part) INTO v_busy;
		EXIT WHEN v_busy;
		BEGIN
			LOCK TABLE triggers, attempts, attempt_responses IN ACCESS EXCLUSIVE MODE;
			EXECUTE format('DROP TABLE IF EXISTS %I', palisade_responses_part(r.attempts_part));
			EXECUTE format('DROP TABLE %I', r.attempts_part);
			EXECUTE format('ALTER TABLE triggers DETACH PARTITION %I', r.triggers_part);
			EXECUTE format('DROP TABLE %I', r.triggers_part);
			DELETE FROM palisade_partitions p WHERE p.range_from = r.range_from;
			RETURN QUERY SELECT 'reshaped'::text, r.triggers_part, r.range_from, r.range_to,
				NULL::bigint, NULL::bigint;
		EXCEPTION WHEN lock_not_available THEN
			RETURN QUERY SELECT 'busy'::text, r.triggers_part, r.range_from, r.range_to,
				NULL::bigint, NULL::bigint;
			EXIT;
		END;
	END LOOP;

	-- 1. ahead
	v_cur := date_bin(p_interval, v_now, timestamptz '1970-01-01 00:00:00+00');
	SELECT max(p.range_to) INTO v_hi FROM palisade_partitions p;
	IF v_hi IS NULL THEN
		v_hi := v_cur;
	ELSIF v_hi < v_cur THEN
		BEGIN
			PERFORM palisade_partition_create(v_hi, v_cur);
			RETURN QUERY SELECT 'created'::text, p.triggers_part, p.range_from, p.range_to,
				NULL::bigint, NULL::bigint FROM palisade_partitions p WHERE p.range_from = v_hi;
			v_hi := v_cur;
		EXCEPTION WHEN lock_not_available THEN
			RETURN QUERY SELECT 'busy'::text, NULL::text, v_hi, v_cur, NULL::bigint, NULL::bigint;
			v_hi := 'infinity';
		END;
	END IF;
	WHILE v_hi < v_now + p_ahead LOOP
		v_next := date_bin(p_interval, v_hi, timestamptz '1970-01-01 00:00:00+00') + p_interval;
		BEGIN
			PERFORM palisade_partition_create(v_hi, v_next);
			RETURN QUERY SELECT 'created'::text, p.triggers_part, p.range_from, p.range_to,
				NULL::bigint, NULL::bigint FROM palisade_partitions p WHERE p.range_from = v_hi;
		EXCEPTION WHEN lock_not_available THEN
			RETURN QUERY SELECT 'busy'::text, NULL::text, v_hi, v_next, NULL::bigint, NULL::bigint;
			EXIT;
		END;
		v_hi := v_next;
	END LOOP;

	-- 2. old ranges
	FOR r IN SELECT p.* FROM palisade_partitions p WHERE p.range_to <= v_now - p_keep
	    ORDER BY p.range_from LOOP
		v_live := palisade_partition_live(r.triggers_part, false);
		IF v_live > 0 THEN
			RAISE LOG 'palisade retention: % kept, % live triggers', r.triggers_part, v_live;
			RETURN QUERY SELECT 'kept'::text, r.triggers_part, r.range_from, r.range_to, v_live,
				NULL::bigint;
			CONTINUE;
		END IF;
		SELECT x.reader, x.job_id, x.lo INTO v_read FROM palisade_partition_readers(r.triggers_part) x
		 LIMIT 1;
		IF FOUND THEN
			RAISE LOG 'palisade retention: % kept, % decides the instants of % there above its watermark %',
				r.triggers_part, v_read.reader, v_read.job_id, v_read.lo;
			RETURN QUERY SELECT 'kept'::text, r.triggers_part, r.range_from, r.range_to, 0::bigint,
				NULL::bigint;
			CONTINUE;
		END IF;
		BEGIN
			v_bytes := pg_total_relation_size(r.triggers_part::regclass)
				+ pg_total_relation_size(r.attempts_part::regclass)
				+ coalesce(pg_total_relation_size(to_regclass(palisade_responses_part(r.attempts_part))), 0);
			LOCK TABLE triggers, attempts, attempt_responses IN ACCESS EXCLUSIVE MODE;
			EXECUTE format('DROP TABLE IF EXISTS %I', palisade_responses_part(r.attempts_part));
			EXECUTE format('DROP TABLE %I', r.attempts_part);
			EXECUTE format('ALTER TABLE triggers DETACH PARTITION %I', r.triggers_part);
			EXECUTE format('DROP TABLE %I', r.triggers_part);
			DELETE FROM palisade_partitions p WHERE p.range_from = r.range_from;
			RETURN QUERY SELECT 'dropped'::text, r.triggers_part, r.range_from, r.range_to,
				NULL::bigint, v_bytes;
		EXCEPTION WHEN lock_not_available THEN
			RETURN QUERY SELECT 'busy'::text, r.triggers_part, r.range_from, r.range_to,
				NULL::bigint, NULL::bigint;
		END;
	END LOOP;
END
$function$;
