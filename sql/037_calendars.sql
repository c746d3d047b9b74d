-- 037_calendars.sql - shared named calendars (docs/jobs.md "Calendars")
-- and the calendar a misfire of reason 'excluded' names.
--
-- compatible_from: 1
--
-- Expand only: a new table and two nullable columns.  Binaries of 0.1.0
-- and 0.2.0 never read them and their inserts into misfires leave them
-- NULL.  A job
-- version that names a calendar carries the calendar's rules in its own
-- spec (schedule.calendars), so the planner never reads this table: it is
-- the calendars' history (`palisade calendars`), and what apply compares a
-- calendar's digest with to decide whether it is a new version.
--
--   calendar_versions  one row per version of a calendar: the canonical
--                      rules (spec, without the version), their SHA-256
--                      hex digest, who applied it and when.  Never updated.
--   misfires.calendar, .calendar_version
--                      for reason 'excluded': the calendar (name, version)
--                      that excluded the instants; NULL for a job's own
--                      `exclude:` dates and for every other reason.
CREATE TABLE calendar_versions (
	name        text NOT NULL,
	version     integer NOT NULL CHECK (version > 0),
	digest      text NOT NULL,
	spec        jsonb NOT NULL,
	created_by  text NOT NULL,
	created_at  timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (name, version)
);

ALTER TABLE misfires ADD COLUMN calendar text, ADD COLUMN calendar_version integer;
