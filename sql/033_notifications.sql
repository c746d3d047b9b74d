-- 033_notifications.sql - the notification outbox (docs/jobs.md, "notify";
-- docs/protocol.md, "Notifications").
--
-- compatible_from: 1
--
-- Expand only: two new tables and the triggers (sql/functions/) that fill
-- the outbox when a misfire or a quarantine row of a job with `notify:` is
-- inserted.  Older binaries never read the tables; their misfire and
-- quarantine inserts get the same notifications, and a job version they
-- cannot read (one with notify) they refuse as before.

-- notifications: one row per event to deliver, written in the transaction
-- of the state change that causes it.  webhook_id is the Standard Webhooks
-- message id, stable across redeliveries (and the Idempotency-Key).
-- secret is the job's ${NAME} reference, never the secret's value.
CREATE TABLE notifications (
	id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	webhook_id       text NOT NULL UNIQUE,
	job_id           text NOT NULL,
	event            text NOT NULL CHECK (event IN (
	                     'failed', 'manual', 'misfire', 'quarantined', 'recovered')),
	url              text NOT NULL,
	secret           text NOT NULL,
	payload          jsonb NOT NULL,
	created_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
	attempts         integer NOT NULL DEFAULT 0,
	next_attempt_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
	lease_owner      text,
	lease_until      timestamptz,
	delivered_at     timestamptz,
	last_status      integer,
	last_error       text
);
-- the delivery claim: due rows not delivered, oldest first
CREATE INDEX notifications_due ON notifications (next_attempt_at) WHERE delivered_at IS NULL;
-- retention of delivered rows
CREATE INDEX notifications_delivered ON notifications (delivered_at) WHERE delivered_at IS NOT NULL;

-- notify_state: per job, whether a failure was notified since its last
-- success, so that `recovered` is sent once after it.
CREATE TABLE notify_state (
	job_id        text PRIMARY KEY,
	failed_since  timestamptz,        -- NULL: no notified failure pending
	updated_at    timestamptz NOT NULL DEFAULT clock_timestamp()
);
