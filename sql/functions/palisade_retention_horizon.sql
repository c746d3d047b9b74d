-- palisade_retention_horizon(): instants before it may have lost their
-- trigger (a dropped partition) or their misfire record (a deleted slice);
-- NULL while neither happened.  `palisade verify` refuses a range that
-- starts before it; `palisade retention --horizon` prints it.
CREATE OR REPLACE FUNCTION palisade_retention_horizon()
 RETURNS timestamp with time zone
 LANGUAGE sql
 STABLE
AS $function$
	SELECT CASE WHEN p.h IS NULL THEN m.h WHEN m.h IS NULL THEN p.h ELSE greatest(p.h, m.h) END
	  FROM (SELECT CASE WHEN min(range_from) = '-infinity' THEN NULL ELSE min(range_from) END AS h
	          FROM palisade_partitions) p,
	       (SELECT max(horizon) AS h FROM palisade_retention_state WHERE name = 'misfires') m
$function$;
