-- palisade_audit_identity(): who wrote an audit row through the API.  The
-- API sets palisade.api_role and palisade.api_client on its own connection
-- before each request, and the trigger audit_log_identity copies them
-- into every audit row the request writes, so that the operator functions
-- (which take an actor name only) need not know about the API.  Rows
-- written by the CLI or the nodes leave both NULL.  A write sent with an
-- Idempotency-Key also sets palisade.api_request ({"token_id", "key"}):
-- its rows carry it in details.api_request, which is how a retry that
-- takes over a key left without an answer learns that the first attempt
-- committed (docs/api.md, "Idempotency").  Rows whose details are not an
-- object are left as they are.
CREATE OR REPLACE FUNCTION palisade_audit_identity()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE
	v_req text := nullif(current_setting('palisade.api_request', true), '');
BEGIN
	NEW.role := coalesce(NEW.role, nullif(current_setting('palisade.api_role', true), ''));
	NEW.client := coalesce(NEW.client, nullif(current_setting('palisade.api_client', true), ''));
	IF v_req IS NOT NULL AND (NEW.details IS NULL OR jsonb_typeof(NEW.details) = 'object') THEN
		NEW.details := coalesce(NEW.details, '{}'::jsonb)
			|| jsonb_build_object('api_request', v_req::jsonb);
	END IF;
	RETURN NEW;
END
$function$;
