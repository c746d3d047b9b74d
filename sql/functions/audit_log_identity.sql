-- audit_log_identity: every audit row written on a connection of the HTTP
-- API names the API's role and client (palisade_audit_identity()).
CREATE OR REPLACE TRIGGER audit_log_identity BEFORE INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION palisade_audit_identity();
