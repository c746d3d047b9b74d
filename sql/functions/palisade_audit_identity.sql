-- palisade_audit_identity(): who wrote an audit row through the API.  The
-- API sets palisade.api_role and palisade.api_client on its own connection
-- before each request, and the trigger audit_log_identity copies them
-- into every audit row the request writes, so that the operator functions
-- (which take an actor name only) need not know about the API.  Rows
-- written by the CLI or the nodes leave both NULL.
CREATE OR REPLACE FUNCTION palisade_audit_identity()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
	NEW.role := coalesce(NEW.role, nullif(current_setting('palisade.api_role', true), ''));
	NEW.client := coalesce(NEW.client, nullif(current_setting('palisade.api_client', true), ''));
	RETURN NEW;
END
$function$;
