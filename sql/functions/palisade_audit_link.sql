-- palisade_audit_link(prev, row): the hash of audit row ROW in the chain,
-- SHA-256 over the previous row's hash PREV and the row's canonical text:
-- seq, id, at in microseconds since the epoch and every other column
-- quoted as a literal (NULL stays NULL), so no two rows share a text and
-- the session's time zone or date style changes nothing.  Migration 028
-- spells out the same text to seal the rows it found.  STABLE, as format()
-- and convert_to() are: so PostgreSQL inlines it into the statement that
-- calls it (the seal trigger, palisade_audit_verify) instead of running a
-- function call per row.
CREATE OR REPLACE FUNCTION palisade_audit_link(p_prev bytea, r audit_log)
 RETURNS bytea
 LANGUAGE sql
 STABLE
AS $function$
	SELECT sha256(p_prev || convert_to(format('%s|%s|%s|%L|%L|%L|%L|%L|%L|%L',
		r.seq, r.id, (extract(epoch FROM r.at) * 1000000)::bigint, r.actor,
		r.action, r.scope, r.reason, r.details::text, r.role, r.client), 'UTF8'))
$function$;
