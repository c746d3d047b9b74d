-- 005_parallel_claim.sql - claims without a cluster-wide lock.
--
-- Before this migration every claim in the cluster took one advisory lock,
-- so claims of different executors ran one at a time and one executor cut
-- off mid-claim stalled all of them.  palisade_claim() (sql/functions/) lets claims run
-- in parallel and still keeps every cluster-wide limit exact:
--
--  1. forbid-skips (due triggers of `overlap: forbid` jobs whose job and
--     partition have a live run become `skipped` and are recorded);
--  2. candidates: each tenant's oldest ready triggers in index order, locked
--     FOR UPDATE SKIP LOCKED while they are read, so concurrent claims take
--     disjoint rows instead of all reaching for the same head of the queue;
--  3. for the candidates that a cluster-wide limit covers (a group with
--     cluster_concurrency, a tenant with a cap, a job with an exclusive
--     overlap policy or max_in_flight) a transaction-level advisory lock per
--     group, tenant or job, taken with pg_try_advisory_xact_lock: never
--     waited for; a claim that cannot have a key leaves its candidates to
--     the claim that holds it;
--  4. the claim itself, in a statement of its own and so with a snapshot
--     taken after the keys were acquired: counts of live runs per group,
--     tenant and job (the previous holder of a key has committed, so its
--     runs are counted), ranks, the limits, the update with a new token and
--     lease, the attempt rows, and `overlap: replace` cancellations.
--
-- A function is one round trip, so the executor sends it without blocking
-- its HTTP loop.  It is VOLATILE: in READ COMMITTED each statement in it
-- takes a fresh snapshot, which step 4 relies on.  Gates are re-read in step
-- 4, after step 2 took the ACCESS SHARE lock on gates that a pause waits for
-- (src/store/ops.c): a pause either committed before step 4's snapshot or
-- waits for this claim to commit and then sees its triggers running.
--
-- The state-machine guard (G7) becomes one statement-level check over the
-- transition tables instead of a PL/pgSQL call per row: a 256-row claim
-- update took 14-17 ms with the row trigger and 8-9 ms with this one (no
-- guard at all: 8-10 ms; psql on the bench box, docs/performance.md).
-- updated_at is now written by the statements that change a trigger
-- (claims, results, checkpoints), not by the guard.
--
-- Rows returned: one per claimed trigger, ordered by id, then one summary
-- row with id NULL carrying the forbid-skip count and the earliest ready
-- instant after the claim horizon (ms since the epoch, NULL when none), so
-- that the executor can sleep until then.

-- The row guard that 001 of earlier releases created goes, where it exists;
-- the statement-level check that replaces it, palisade_trigger_edges_check()
-- and its trigger triggers_state_edges, are in sql/functions/.
DROP TRIGGER IF EXISTS triggers_state_guard ON triggers;
DROP FUNCTION IF EXISTS palisade_trigger_state_guard();

CREATE TYPE palisade_claim_cand AS (
	id             bigint,
	tenant         text,
	resource_group text,
	job_id         text,
	part           integer,
	ov             text,
	mif            integer,
	ready_at       timestamptz,
	eff_prio       double precision,
	running        boolean   -- an expired lease being re-claimed
);

-- palisade_claim() itself: sql/functions/palisade_claim.sql.
