-- attempts_route: an attempt inserted without scheduled_at (by hand, or by
-- a tool written before attempts were partitioned; the claim always writes
-- it) lands in the default partition, and palisade_attempt_route() inserts
-- it again with its trigger's scheduled_at into the right one.
CREATE OR REPLACE TRIGGER attempts_route BEFORE INSERT ON attempts_pdefault FOR EACH ROW EXECUTE FUNCTION palisade_attempt_route();
