-- palisade_default_key(job, scheduled_at, partition, request_id): the
-- idempotency key of the default template, {job}/{scheduled_at}/{partition},
-- with "/" and the request id appended for a manual run or a backfill, as
-- the executor renders it (src/util/template.c; the instant in RFC 3339
-- UTC to the second).  The attempt ledger keeps a first attempt's key in
-- its trigger row only when it differs from this one (first_key NULL: this
-- one; docs/schema.md, "The attempt ledger"): most jobs use the default,
-- and the row is written up to three times per fire.  A key this function
-- would render differently is simply stored.
CREATE OR REPLACE FUNCTION palisade_default_key(p_job text, p_at timestamp with time zone, p_partition integer, p_request text)
 RETURNS text
 LANGUAGE sql
 STABLE
AS $function$
	SELECT p_job || '/' || to_char(p_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') || '/'
	  || p_partition || coalesce('/' || p_request, '')
$function$;
