-- palisade_attempt_route(): the body of the attempts_route trigger.  An
-- attempt that reaches the default partition without scheduled_at gets its
-- trigger's and is inserted again, into its range's partition; one whose
-- trigger does not exist is refused (foreign_key_violation).
CREATE OR REPLACE FUNCTION palisade_attempt_route()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
	IF NEW.scheduled_at IS NOT NULL THEN
		RETURN NEW;
	END IF;
	NEW.scheduled_at := (SELECT t.scheduled_at FROM triggers t WHERE t.id = NEW.trigger_id);
	IF NEW.scheduled_at IS NULL THEN
		RAISE EXCEPTION 'attempt of trigger %: no such trigger', NEW.trigger_id
			USING ERRCODE = 'foreign_key_violation';
	END IF;
	INSERT INTO attempts OVERRIDING SYSTEM VALUE SELECT NEW.*;
	RETURN NULL;
END
$function$;
