-- 009_lifecycle.sql - retired jobs, job metadata, gates set by job files.
--
-- jobs.retired_at   when `palisade delete` or `apply --prune` retired the
--                   job (NULL: live).  A retired job keeps its rows: its
--                   versions, triggers, attempts, misfires and audit rows
--                   stay.  Retiring stores version n+1, a copy of the latest
--                   spec whose schedule ends at the retirement instant, so
--                   a controller plans nothing after it; re-applying the id
--                   later stores version n+2 and clears retired_at.
-- jobs.owner, jobs.description
--                   free text from the job file (`owner`, `description`).
--                   They describe the job, not its plan: they are not part
--                   of the canonical spec or its digest (changing them never
--                   makes a version); apply updates them in place and
--                   audits the change (action job.meta, old and new values).
-- gates.source      who closed the gate: 'operator' (`palisade pause`) or
--                   'spec' (`suspend: true` in a job file, closed by apply).
--                   apply lifts only gates whose source is 'spec'; a pause
--                   by an operator over a spec gate makes it 'operator'.
ALTER TABLE jobs
	ADD COLUMN retired_at timestamptz,
	ADD COLUMN owner text NOT NULL DEFAULT '',
	ADD COLUMN description text NOT NULL DEFAULT '';
CREATE INDEX jobs_retired ON jobs (retired_at) WHERE retired_at IS NOT NULL;

ALTER TABLE gates
	ADD COLUMN source text NOT NULL DEFAULT 'operator' CHECK (source IN ('operator', 'spec'));

-- `palisade audit --since` and `palisade misfires --from/--to` read these.
CREATE INDEX misfires_range ON misfires (range_from);
