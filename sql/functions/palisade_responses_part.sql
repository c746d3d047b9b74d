-- palisade_responses_part(attempts_part): the name of the attempt_responses
-- partition of the range whose attempts partition is ATTEMPTS_PART
-- (attempts_pSUFFIX -> attempt_responses_pSUFFIX; 034).  One home for the
-- name, read by palisade_partition_create and palisade_retention.
CREATE OR REPLACE FUNCTION palisade_responses_part(p_attempts_part text)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE
AS $function$
	SELECT 'attempt_responses_p' || substr(p_attempts_part, length('attempts_p') + 1)
$function$;
