-- quarantine_notify: a quarantined job with `notify:` queues its
-- notification (palisade_notify_quarantine()).
CREATE OR REPLACE TRIGGER quarantine_notify AFTER INSERT ON quarantine FOR EACH ROW EXECUTE FUNCTION palisade_notify_quarantine();
