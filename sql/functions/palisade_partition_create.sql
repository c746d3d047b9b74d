-- palisade_partition_create(from, to): the partition pair of one time range
-- (triggers_pSUFFIX and attempts_pSUFFIX, SUFFIX the UTC start or
-- `history`), listed in palisade_partitions, and the range's
-- attempt_responses_pSUFFIX beside them (palisade_responses_part); returns
-- the triggers table's name.  Rows the default partitions hold in the
-- range move into the new tables first.  Storage parameters (sql/029_fire_fillfactor.sql says
-- why): fillfactor 50 for triggers, so that a trigger's claimed version
-- is written on its planned version's page, and the autovacuum settings
-- 001 gave triggers (a partitioned table has none of its own);
-- fillfactor 35 for attempts, so that the update that ends an attempt (no
-- indexed column) stays on its page as a HOT update even when a result
-- batch ends every attempt of the page in one statement.  Called by
-- palisade_retention().
CREATE OR REPLACE FUNCTION palisade_partition_create(p_from timestamp with time zone, p_to timestamp with time zone)
 RETURNS text
 LANGUAGE plpgsql
AS $function$
DECLARE
	v_sfx text := CASE WHEN p_from = '-infinity' THEN 'history'
	                   ELSE to_char(p_from AT TIME ZONE 'UTC', 'YYYYMMDD_HH24MISS') END;
	v_t text := 'triggers_p' || v_sfx;
	v_a text := 'attempts_p' || v_sfx;
	v_r text := palisade_responses_part('attempts_p' || v_sfx);
	v_moved bigint;
BEGIN
	-- The two parents first, in the order every claim and commit takes
	-- them (triggers, then attempts): attaching a partition of a table that
	-- attempts refers to also locks attempts, and took it after a claim
	-- held attempts and waited for the new partition (a deadlock; the
	-- claim was the victim).  attempt_responses last, as the result
	-- commit writes it after the other two.
	LOCK TABLE triggers, attempts, attempt_responses IN SHARE ROW EXCLUSIVE MODE;
	-- Rows the default partitions hold in this range move into the new
	-- pair (attaching over them would be refused): attempts first, so
	-- that no attempt refers to a moved trigger while neither new table is
	-- attached; attaching the attempts table then checks its foreign key.
	EXECUTE format('CREATE TABLE %I (LIKE triggers INCLUDING DEFAULTS INCLUDING CONSTRAINTS)'
		' WITH (fillfactor = 50, autovacuum_vacuum_scale_factor = 0.01,'
		' autovacuum_analyze_scale_factor = 0.02, autovacuum_vacuum_cost_delay = 0)', v_t);
	EXECUTE format('CREATE TABLE %I (LIKE attempts INCLUDING DEFAULTS INCLUDING CONSTRAINTS)'
		' WITH (fillfactor = 35)', v_a);
	EXECUTE format('CREATE TABLE %I (LIKE attempt_responses INCLUDING DEFAULTS INCLUDING CONSTRAINTS)',
		v_r);
	IF to_regclass('attempt_responses_pdefault') IS NOT NULL THEN
		EXECUTE format('WITH m AS (DELETE FROM attempt_responses_pdefault WHERE scheduled_at >= $1'
			' AND scheduled_at < $2 RETURNING *) INSERT INTO %I SELECT * FROM m', v_r)
			USING p_from, p_to;
	END IF;
	IF to_regclass('triggers_pdefault') IS NOT NULL THEN
		EXECUTE format('WITH m AS (DELETE FROM attempts_pdefault WHERE scheduled_at >= $1'
			' AND scheduled_at < $2 RETURNING *) INSERT INTO %I SELECT * FROM m', v_a)
			USING p_from, p_to;
		EXECUTE format('WITH m AS (DELETE FROM triggers_pdefault WHERE scheduled_at >= $1'
			' AND scheduled_at < $2 RETURNING *) INSERT INTO %I SELECT * FROM m', v_t)
			USING p_from, p_to;
		GET DIAGNOSTICS v_moved = ROW_COUNT;
		IF v_moved > 0 THEN
			RAISE LOG 'palisade retention: % triggers moved from the default partition into %',
				v_moved, v_t;
		END IF;
	END IF;
	EXECUTE format('ALTER TABLE triggers ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)',
		v_t, p_from, p_to);
	EXECUTE format('ALTER TABLE attempts ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)',
		v_a, p_from, p_to);
	EXECUTE format('ALTER TABLE attempt_responses ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)',
		v_r, p_from, p_to);
	INSERT INTO palisade_partitions (range_from, range_to, triggers_part, attempts_part)
	VALUES (p_from, p_to, v_t, v_a);
	RETURN v_t;
END
$function$;
