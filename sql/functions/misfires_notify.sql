-- misfires_notify: every misfire row of a job with `notify:` queues its
-- notification (palisade_notify_misfire()).  A row trigger: it fires only
-- for rows inserted, so a statement that inserts none (the claim's overlap
-- skips, most of the time) pays nothing.
CREATE OR REPLACE TRIGGER misfires_notify AFTER INSERT ON misfires FOR EACH ROW EXECUTE FUNCTION palisade_notify_misfire();
