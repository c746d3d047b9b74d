#!/usr/bin/env bash
# tests/bench/shapes.sh - candidate trigger-table shapes, measured the way
# `make bench` measures palisade's (docs/performance.md, "What a fire
# costs"): N due rows planted with one INSERT after a CHECKPOINT, claimed
# 100 at a time and completed, each claim and each completion a
# transaction of its own (one client); what the tables grew by, dead row
# versions included and before any VACUUM, and the server's WAL over the
# run, per fire.  A shape is a set of tables and the four statements that
# plan, claim and complete; the figures say what a column, an index or a
# split costs before anyone rewrites the executor for it.
#
#   minimal        tests/bench/minimal.sql's shape: plan key as primary key,
#                  one partial index on pending rows (non-HOT updates)
#   lean           an id, an integer job reference, the facts a first
#                  attempt needs (token, node, lease, status, error), the
#                  plan key, partial indexes for pending and running rows
#   lean-queue     the same row with no index on state (HOT claims and
#                  results) and the queue in a table of its own: a row per
#                  pending or running trigger, deleted at the result
#
# Usage: bash tests/bench/shapes.sh [SHAPE...]; BENCH_SHAPE_N (10000),
# BENCH_SHAPE_FF (fillfactor of the lean tables, 70).  Prints one line per
# shape; asserts nothing.
set -uo pipefail
cd "$(dirname "$0")/../.."
N=${BENCH_SHAPE_N:-10000}
FF=${BENCH_SHAPE_FF:-70}
SHAPES=("$@")
[ ${#SHAPES[@]} -gt 0 ] || SHAPES=(minimal lean lean-queue)

source tests/ports.sh
export PALISADE_STATE=$(mktemp -d /tmp/palisade-shapes.XXXXXX)
chmod 755 "$PALISADE_STATE"
export PALISADE_PG_PORT=$(free_port) PALISADE_ZK_PORT=$(free_port)
cleanup() {
	bash ops/devcluster.sh down >/dev/null 2>&1
	bash ops/devcluster.sh destroy >/dev/null 2>&1
	rm -rf "$PALISADE_STATE"
}
trap cleanup EXIT
eval "$(bash ops/devcluster.sh up 2>/dev/null)"
sql() { psql "$PALISADE_PG" -XAtq -v ON_ERROR_STOP=1 -c "$1"; }

LEAN_ROW="id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, job int NOT NULL,
  version int NOT NULL, scheduled_at timestamptz NOT NULL, partition smallint NOT NULL DEFAULT 0,
  due_at timestamptz NOT NULL, state \"char\" NOT NULL DEFAULT 'p', fence bigint, node int,
  lease_until timestamptz, attempts smallint NOT NULL DEFAULT 0, finished_at timestamptz,
  err smallint, status smallint"

# shape NAME -> SETUP PLAN CLAIM COMPLETE RELS
shape() {
	case $1 in
	minimal)
		SETUP="CREATE TABLE s_t (job int NOT NULL, instant timestamptz NOT NULL,
		  due_at timestamptz NOT NULL, state smallint NOT NULL DEFAULT 0,
		  lease_until timestamptz, token bigint, PRIMARY KEY (job, instant));
		  CREATE INDEX s_t_due ON s_t (due_at) WHERE state = 0"
		PLAN="INSERT INTO s_t (job, instant, due_at)
		  SELECT g, date_trunc('second', now()), now() - interval '1 s' FROM generate_series(1, $N) g"
		CLAIM="WITH c AS (SELECT job, instant FROM s_t WHERE state = 0 AND due_at <= clock_timestamp()
		  ORDER BY due_at LIMIT 100 FOR UPDATE SKIP LOCKED)
		  UPDATE s_t t SET state = 1, token = nextval('s_tok'), lease_until = clock_timestamp() + interval '30 s'
		  FROM c WHERE t.job = c.job AND t.instant = c.instant"
		DONE="UPDATE s_t SET state = 2, lease_until = NULL WHERE state = 1"
		RELS="s_t" ;;
	lean)
		SETUP="CREATE TABLE s_t ($LEAN_ROW) WITH (fillfactor = $FF);
		  CREATE UNIQUE INDEX s_t_plan ON s_t (job, scheduled_at, partition);
		  CREATE INDEX s_t_ready ON s_t (due_at) WHERE state = 'p';
		  CREATE INDEX s_t_live ON s_t (lease_until) WHERE state = 'r'"
		PLAN="INSERT INTO s_t (job, version, scheduled_at, due_at)
		  SELECT g, 1, date_trunc('second', now()), now() - interval '1 s' FROM generate_series(1, $N) g"
		CLAIM="WITH c AS (SELECT id FROM s_t WHERE state = 'p' AND due_at <= clock_timestamp()
		  ORDER BY due_at LIMIT 100 FOR UPDATE SKIP LOCKED)
		  UPDATE s_t t SET state = 'r', fence = nextval('s_tok'), node = 1,
		    lease_until = clock_timestamp() + interval '30 s', attempts = attempts + 1
		  FROM c WHERE t.id = c.id"
		DONE="UPDATE s_t SET state = 's', lease_until = NULL, finished_at = clock_timestamp(), status = 200
		  WHERE state = 'r'"
		RELS="s_t" ;;
	lean-queue)
		SETUP="CREATE TABLE s_t ($LEAN_ROW) WITH (fillfactor = $FF);
		  CREATE UNIQUE INDEX s_t_plan ON s_t (job, scheduled_at, partition);
		  CREATE TABLE s_q (trigger_id bigint PRIMARY KEY, ready_at timestamptz NOT NULL,
		    lease_until timestamptz);
		  CREATE INDEX s_q_ready ON s_q (ready_at) WHERE lease_until IS NULL;
		  CREATE INDEX s_q_lease ON s_q (lease_until) WHERE lease_until IS NOT NULL"
		PLAN="WITH i AS (INSERT INTO s_t (job, version, scheduled_at, due_at)
		    SELECT g, 1, date_trunc('second', now()), now() - interval '1 s' FROM generate_series(1, $N) g
		    RETURNING id, due_at)
		  INSERT INTO s_q (trigger_id, ready_at) SELECT id, due_at FROM i"
		CLAIM="WITH c AS (SELECT trigger_id FROM s_q WHERE lease_until IS NULL AND ready_at <= clock_timestamp()
		    ORDER BY ready_at LIMIT 100 FOR UPDATE SKIP LOCKED),
		  q AS (UPDATE s_q SET lease_until = clock_timestamp() + interval '30 s' FROM c
		    WHERE s_q.trigger_id = c.trigger_id RETURNING s_q.trigger_id)
		  UPDATE s_t t SET state = 'r', fence = nextval('s_tok'), node = 1,
		    lease_until = clock_timestamp() + interval '30 s', attempts = attempts + 1
		  FROM q WHERE t.id = q.trigger_id"
		DONE="WITH d AS (DELETE FROM s_q WHERE lease_until IS NOT NULL RETURNING trigger_id)
		  UPDATE s_t t SET state = 's', lease_until = NULL, finished_at = clock_timestamp(), status = 200
		  FROM d WHERE t.id = d.trigger_id"
		RELS="s_t,s_q" ;;
	*) echo "shapes.sh: unknown shape $1" >&2; return 1 ;;
	esac
}

size() { sql "SELECT sum(pg_table_size(r) + pg_indexes_size(r)) FROM unnest('{$RELS}'::regclass[]) r"; }
for s in "${SHAPES[@]}"; do
	shape "$s" || exit 2
	sql "SET client_min_messages = warning; DROP TABLE IF EXISTS s_t, s_q; DROP SEQUENCE IF EXISTS s_tok; CREATE SEQUENCE s_tok; $SETUP" >/dev/null || exit 1
	f=$PALISADE_STATE/$s.sql
	for ((i = 0; i < N / 100; i++)); do printf '%s;\n%s;\n' "$CLAIM" "$DONE"; done >"$f"
	sql "CHECKPOINT" >/dev/null
	b0=$(size) l0=$(sql "SELECT pg_current_wal_lsn()")
	sql "$PLAN" >/dev/null && psql "$PALISADE_PG" -XAtq -v ON_ERROR_STOP=1 -f "$f" >/dev/null || exit 1
	l1=$(sql "SELECT pg_current_wal_lsn()") b1=$(size)
	by=$(sql "SELECT string_agg(r::text || ' ' || pg_table_size(r) / $N || '+' || pg_indexes_size(r) / $N, ', ')
	  FROM unnest('{$RELS}'::regclass[]) r")
	hot=$(sql "SELECT sum(n_tup_hot_upd) || ' of ' || sum(n_tup_upd) FROM pg_stat_user_tables
	  WHERE relname = ANY ('{$RELS}')")
	echo "shape $s: bytes per fire $(((b1 - b0) / N)) (heap+indexes: $by), WAL per fire $(($(sql "SELECT pg_wal_lsn_diff('$l1', '$l0')::bigint") / N)) B, updates HOT $hot"
done
