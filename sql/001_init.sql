-- 001_init.sql - palisade core schema (docs/schema.md).
--
-- The table names and the columns named in docs/schema.md are a public
-- contract: operators query them.  Migrations are forward-only; each runs in
-- its own transaction under pg_advisory_lock (palisade migrate).

CREATE SEQUENCE palisade_fence AS bigint START 1;

-- Cluster-wide settings fixed at creation (e.g. the shard count).
CREATE TABLE cluster_settings (
	name        text PRIMARY KEY,
	value       text NOT NULL,
	created_at  timestamptz NOT NULL DEFAULT now()
);

-- Job identity.  latest_version is what `apply` stored last; active_version
-- is what a controller plans with (moved only by a fenced controller, G6).
CREATE TABLE jobs (
	job_id          text PRIMARY KEY CHECK (job_id ~ '^[a-z0-9._-]+$'),
	tenant          text NOT NULL,
	resource_group  text NOT NULL,
	shard           integer NOT NULL CHECK (shard >= 0),
	latest_version  integer NOT NULL,
	active_version  integer,
	created_at      timestamptz NOT NULL DEFAULT now(),
	updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX jobs_shard ON jobs (shard);

-- Immutable plan versions.  Never updated except the activation columns,
-- which a fenced controller sets once when it starts planning with the
-- version: instants strictly after effective_from (and up to the next
-- version's effective_from) are planned from this version.
CREATE TABLE job_versions (
	job_id             text NOT NULL REFERENCES jobs (job_id),
	version            integer NOT NULL CHECK (version >= 1),
	spec               jsonb NOT NULL,
	digest             text NOT NULL,
	cron               text NOT NULL,
	timezone           text NOT NULL,
	misfire_policy     text NOT NULL CHECK (misfire_policy IN ('fire_all', 'fire_once', 'skip', 'manual')),
	catchup_window_ms  bigint NOT NULL,
	max_catchup        integer NOT NULL,
	overlap_policy     text NOT NULL CHECK (overlap_policy IN ('allow', 'forbid', 'queue', 'replace')),
	priority           integer NOT NULL,
	deadline_ms        bigint NOT NULL,
	max_in_flight      integer NOT NULL,
	idempotency_key    text NOT NULL,
	retry              jsonb NOT NULL,
	resource_group     text NOT NULL,
	target             jsonb NOT NULL,
	target_host        text NOT NULL DEFAULT '',  -- host of target.url, for per-host circuit breakers
	partitions         integer NOT NULL CHECK (partitions >= 1),
	created_by         text NOT NULL,
	created_at         timestamptz NOT NULL DEFAULT now(),
	activated_at       timestamptz,
	activated_epoch    bigint,
	effective_from     timestamptz,
	PRIMARY KEY (job_id, version)
);

-- Shard leadership and planning progress.  epoch is the czxid of the leading
-- controller's election znode; watermark is the latest instant whose triggers
-- are committed.
CREATE TABLE shards (
	shard_id    integer PRIMARY KEY CHECK (shard_id >= 0),
	epoch       bigint NOT NULL DEFAULT 0,
	leader      text,
	watermark   timestamptz,
	updated_at  timestamptz NOT NULL DEFAULT now()
);

-- One row per planned execution intent (docs/schema.md).
CREATE TABLE triggers (
	id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	job_id           text NOT NULL,   -- a job_versions row; no FK: see below
	version          integer NOT NULL,
	scheduled_at     timestamptz NOT NULL,
	partition        integer NOT NULL DEFAULT 0 CHECK (partition >= 0),
	source           text NOT NULL CHECK (source IN ('schedule', 'catchup', 'manual', 'backfill')),
	request_id       text,
	tenant           text NOT NULL,
	resource_group   text NOT NULL,
	state            text NOT NULL DEFAULT 'pending' CHECK (state IN (
	                     'pending', 'running', 'succeeded', 'retry_wait', 'failed', 'unknown',
	                     'pausing', 'paused', 'cancelling', 'cancelled', 'manual', 'skipped')),
	priority         integer NOT NULL DEFAULT 0,
	due_at           timestamptz NOT NULL,
	fence            bigint,
	lease_owner      text,
	lease_until      timestamptz,
	attempt_count    integer NOT NULL DEFAULT 0,
	next_attempt_at  timestamptz,
	checkpoint       jsonb,
	last_error_class text,
	shard            integer NOT NULL,
	epoch            bigint NOT NULL DEFAULT 0,
	created_at       timestamptz NOT NULL DEFAULT now(),
	updated_at       timestamptz NOT NULL DEFAULT now(),
	finished_at      timestamptz,
	CHECK ((source IN ('schedule', 'catchup')) = (request_id IS NULL))
	-- No foreign key to job_versions: PostgreSQL checks one row at a time,
	-- which doubled the cost of a planning insert (measured: 15 000 rows
	-- 570 ms with it, 250 ms without).  Versions are never deleted, and only
	-- controllers (from loaded versions) and the operator commands (from
	-- the job's own version) insert triggers.
) WITH (fillfactor = 80, autovacuum_vacuum_scale_factor = 0.01,
        autovacuum_analyze_scale_factor = 0.02, autovacuum_vacuum_cost_delay = 0);

-- G2: at most one trigger per plan key.
CREATE UNIQUE INDEX triggers_plan_key ON triggers (job_id, scheduled_at, partition)
	WHERE request_id IS NULL;
CREATE UNIQUE INDEX triggers_request_key ON triggers (job_id, request_id, scheduled_at, partition)
	WHERE request_id IS NOT NULL;
CREATE INDEX triggers_live ON triggers (lease_until) WHERE state IN ('running', 'pausing', 'cancelling', 'unknown');

-- G7: every state change is a legal edge of the state machine (docs/schema.md),
-- checked by the triggers_state_edges trigger with palisade_trigger_edge_ok()
-- (sql/functions/).

-- One row per claim; never overwritten by later attempts.
CREATE TABLE attempts (
	id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	trigger_id    bigint NOT NULL REFERENCES triggers (id),
	fence         bigint NOT NULL UNIQUE,
	node          text NOT NULL,
	claimed_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
	ended_at      timestamptz,
	idempotency_key text,             -- the key this attempt sent (stable per trigger, G5)
	outcome       text,
	error_class   text,
	http_status   integer,
	duration_ms   integer
);
CREATE INDEX attempts_trigger ON attempts (trigger_id);

-- Recorded decisions for instants not fired (G1): job, range, count, policy, epoch.
CREATE TABLE misfires (
	id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	job_id        text NOT NULL REFERENCES jobs (job_id),
	version       integer NOT NULL,
	partition     integer,            -- NULL: every partition
	range_from    timestamptz NOT NULL,
	range_to      timestamptz NOT NULL,
	count         integer NOT NULL CHECK (count >= 0),
	policy        text NOT NULL,
	reason        text NOT NULL,      -- missed, excluded, overlap, ...
	shard         integer NOT NULL,
	epoch         bigint NOT NULL,
	decided_at    timestamptz NOT NULL DEFAULT now(),
	CHECK (range_from <= range_to)
);
CREATE INDEX misfires_job ON misfires (job_id, range_from);

-- Persistent pause state by scope: 'global', 'group:G', 'tenant:T', 'job:J'.
CREATE TABLE gates (
	scope       text PRIMARY KEY CHECK (scope = 'global' OR scope ~ '^(group|tenant|job):.+$'),
	paused      boolean NOT NULL,
	reason      text NOT NULL,
	actor       text NOT NULL,
	since       timestamptz NOT NULL DEFAULT now()
);

-- Manual-intervention cases.
CREATE TABLE tickets (
	id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	trigger_id       bigint REFERENCES triggers (id),
	job_id           text REFERENCES jobs (job_id),
	reason           text NOT NULL,
	evidence         jsonb,
	allowed_actions  text[] NOT NULL DEFAULT ARRAY['retry', 'mark_succeeded', 'abandon'],
	state            text NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'resolved')),
	resolution       text,
	actor            text,
	created_at       timestamptz NOT NULL DEFAULT now(),
	resolved_at      timestamptz
);
CREATE INDEX tickets_open ON tickets (created_at) WHERE state = 'open';

-- Every operator action and every automatic decision worth explaining.
CREATE TABLE audit_log (
	id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	at       timestamptz NOT NULL DEFAULT clock_timestamp(),
	actor    text NOT NULL,
	action   text NOT NULL,
	scope    text,
	reason   text,
	details  jsonb
);
CREATE INDEX audit_log_at ON audit_log (at);
