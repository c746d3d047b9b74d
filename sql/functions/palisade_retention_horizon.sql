-- palisade_retention_horizon(): instants before it may have lost their
-- trigger (a dropped partition) or their misfire record (a deleted slice);
-- NULL while neither happened.  `palisade verify` refuses a range that
-- starts before it; `palisade retention --horizon` prints it.
--
-- The ranges of triggers are contiguous when made (palisade_retention()
-- extends them from the end of the latest one), so the only way a range
-- goes missing between two others is a drop: a round drops every old
-- range whose triggers all ended and keeps an older one that holds a live
-- trigger.  The list of ranges left is the record of what was dropped,
-- written in the transaction that drops: the horizon is the start of the
-- latest range with no range ending at its start (the start of the oldest
-- range when nothing is missing between them; the end of the latest hole
-- otherwise, so that a range kept below a hole never lets verify reach
-- into it).  The migration's history range (-infinity, ...) drops nothing
-- below it: with no hole above it, no range lost a trigger.
CREATE OR REPLACE FUNCTION palisade_retention_horizon()
 RETURNS timestamp with time zone
 LANGUAGE sql
 STABLE
AS $function$
	SELECT CASE WHEN p.h IS NULL THEN m.h WHEN m.h IS NULL THEN p.h ELSE greatest(p.h, m.h) END
	  FROM (SELECT CASE WHEN max(x.range_from) = '-infinity' THEN NULL ELSE max(x.range_from) END AS h
	          FROM (SELECT r.range_from, lag(r.range_to) OVER (ORDER BY r.range_from) AS prev_to
	                  FROM palisade_partitions r) x
	         WHERE x.prev_to IS DISTINCT FROM x.range_from) p,
	       (SELECT max(horizon) AS h FROM palisade_retention_state WHERE name = 'misfires') m
$function$;
