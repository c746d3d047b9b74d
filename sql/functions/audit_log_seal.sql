-- audit_log_seal: every audit row is sealed into the chain as it is
-- inserted (palisade_audit_seal()).  Row triggers fire in name order, so
-- this one runs after audit_log_identity and seals the role and client
-- that trigger filled in.
CREATE OR REPLACE TRIGGER audit_log_seal BEFORE INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION palisade_audit_seal();
