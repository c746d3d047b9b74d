#!/usr/bin/env bash
# tests/bench/shapes.sh - candidate trigger-table shapes, measured the way
# `make bench` measures palisade's (docs/performance.md, "What a fire
# costs"): N due rows planted with one INSERT after a CHECKPOINT, claimed
# BATCH at a time and completed, each claim and each completion a
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
# Variants of lean, one change each:
#   lean-noid      no id: the plan key is the primary key (the claim and
#                  the result name a row by it)
#   lean-tenant    a tenant number in the row, the pending index keyed
#                  (tenant, due_at) and the claim per tenant
#   lean-tenantfilter  the tenant number in the row, the pending index
#                  (due_at) and the tenant a filter
#   lean-onepart   one partial index for pending and running rows keyed
#                  (state, coalesce(lease_until, due_at)) for the two
#   lean-ffNN      the table's fillfactor NN
#   lean-order     the same columns, the 8-byte ones first
#   lean-hotclaim  the claim touches no indexed column (state stays
#                  pending, a lease marks it claimed) so it can be HOT;
#                  there is no index of running rows: expired leases and
#                  live runs are found through the pending index
#
#   full           the row a fire of every feature needs and an index for
#                  every access path palisade has (full_row and full
#                  below), the plan key (with `seq`) as primary key
#   full-id        the same with an id primary key and the plan key unique
#   full+MOD+...   full with changes applied in order (full_mod below:
#                  ffNN, noforbidx, slim, side, nonull, onetime,
#                  tenantfilter, ixff100, updated, lease1, keyorder)
#   contract       the shape of the contract release (docs/performance.md,
#                  "The contract shape of the trigger row"):
#                  full+slim+side+keyorder+noforbidx+lease1+nonull+onetime+ff50
#
# Usage: bash tests/bench/shapes.sh [SHAPE...]; BENCH_SHAPE_N (10000),
# BENCH_SHAPE_FF (fillfactor of the lean and full tables, 70),
# BENCH_SHAPE_BATCH (triggers per claim, 100), BENCH_SHAPE_SPREAD (1: every
# trigger due at an instant of its own; 0, all at one).  Prints one line per shape
# (the indexes: each one's size per fire, those of 1 B and more; the
# ended row: its width with its header, pg_column_size); asserts nothing.
# The figures repeat to the byte from run to run (one client, a fresh
# table); WAL moves by a byte or two.
set -uo pipefail
cd "$(dirname "$0")/../.."
N=${BENCH_SHAPE_N:-10000}
FF=${BENCH_SHAPE_FF:-70}
BATCH=${BENCH_SHAPE_BATCH:-100}
# every trigger due at one instant (many jobs on one cron instant: the
# pending index deduplicates them), or with BENCH_SHAPE_SPREAD=1 each at
# its own (a microsecond apart, in the order of the plant)
DUE_AT="now() - interval '1 s'"
[ "${BENCH_SHAPE_SPREAD:-0}" = 0 ] || DUE_AT="now() - interval '1 s' + g * interval '1 microsecond'"
SHAPES=("$@")
[ ${#SHAPES[@]} -gt 0 ] || SHAPES=(minimal lean lean-queue contract)

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

# The ordered row: the same columns, the 8-byte ones first, so that no
# value waits for alignment.
LEAN_ORDERED="id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, scheduled_at timestamptz NOT NULL,
  due_at timestamptz NOT NULL, fence bigint, lease_until timestamptz, finished_at timestamptz,
  job int NOT NULL, version int NOT NULL, node int, partition smallint NOT NULL DEFAULT 0,
  attempts smallint NOT NULL DEFAULT 0, err smallint, status smallint, state \"char\" NOT NULL DEFAULT 'p'"

# lean [ROW]: the lean shape's parts, which a variant changes one at a time
# before compose puts them together: ROW, SFF (fillfactor), IDX, KEY (how
# the claim names a row), CW and CO (the claim's WHERE and ORDER BY), CS
# and DS (what the claim and the result set), DW (the result's WHERE).
lean() {
	LEANISH=1 ROW=${1:-$LEAN_ROW} SFF=$FF KEY=id CO=due_at DUE=due_at PCOLS= PVALS= SIDE= REQIDX=
	IDX="CREATE UNIQUE INDEX s_t_plan ON s_t (job, scheduled_at, partition);
	  CREATE INDEX s_t_ready ON s_t (due_at) WHERE state = 'p';
	  CREATE INDEX s_t_live ON s_t (lease_until) WHERE state = 'r'"
	CW="state = 'p' AND due_at <= clock_timestamp()"
	CS="state = 'r', fence = nextval('s_tok'), node = 1,
	  lease_until = clock_timestamp() + interval '30 s', attempts = attempts + 1"
	DS="state = 's', lease_until = NULL, finished_at = clock_timestamp(), status = 200"
	DW="state = 'r'"
}
# The full row: the lean row and what else a fire of any feature needs
# in it (docs/performance.md, "The contract shape"): the tenant's number
# (the claim's order per tenant), the planner's epoch, the first
# attempt's claim time and duration; NULL unless a rare edge needs them
# (no bytes but the null bitmap's): the next attempt's time, the request,
# the source, the checkpoint, the first attempt's outcome, key and status
# queries.  Priority, shard, group and target are the job version's.
# With `seq` (0 for planned instants, a manual run's number) the plan key
# is unique across planned and requested triggers and can be the primary
# key; without it, an id is.
FULL_RARE="request_id text, ikey text, queries text[], checkpoint jsonb, outcome smallint,
  source \"char\""
full_row() { # ID|NOID
	local r="scheduled_at timestamptz NOT NULL, due_at timestamptz NOT NULL, fence bigint,
	  lease_until timestamptz, claimed_at timestamptz, finished_at timestamptz, ready_at timestamptz,
	  job int NOT NULL, version int NOT NULL, tenant int NOT NULL, epoch int NOT NULL, node int, ms int,
	  partition smallint NOT NULL DEFAULT 0, attempts smallint NOT NULL DEFAULT 0, err smallint,
	  status smallint, state \"char\" NOT NULL DEFAULT 'p'"
	if [ "$1" = ID ]; then
		echo "id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, $r, $FULL_RARE"
	else
		echo "$r, seq smallint NOT NULL DEFAULT 0, $FULL_RARE"
	fi
}
# full ID|NOID: the full row with an index for every access path
# (docs/performance.md lists them); a variant drops or changes one.
full() {
	lean "$(full_row "$1")"
	local key="job, scheduled_at, partition" where=" WHERE request_id IS NULL"
	[ "$1" = ID ] || { key+=", seq" where=""; KEY=$key; }
	IDX="CREATE INDEX s_t_ready ON s_t (tenant, (coalesce(ready_at, due_at)))
	    WHERE state IN ('p', 'w', 'u');
	  CREATE INDEX s_t_pending_job ON s_t (job, partition) WHERE state = 'p';
	  CREATE INDEX s_t_live ON s_t (lease_until) WHERE state IN ('r', 'P', 'C', 'u');
	  CREATE INDEX s_t_paused ON s_t (scheduled_at) WHERE state = 'Z';
	  CREATE INDEX s_t_rare ON s_t (scheduled_at) WHERE state IN ('w', 'u', 'P', 'Z', 'C', 'm')"
	REQIDX="CREATE UNIQUE INDEX s_t_request ON s_t (job, request_id, scheduled_at, partition)
	    WHERE request_id IS NOT NULL"
	[ "$1" = ID ] && IDX+="; CREATE UNIQUE INDEX s_t_plan ON s_t ($key)$where"
	[ "$1" = ID ] || ROW+=", PRIMARY KEY ($key)"
	PCOLS=", tenant, epoch" PVALS=", 1, 7"
	CW="tenant = 1 AND state IN ('p', 'w', 'u') AND coalesce(ready_at, due_at) <= clock_timestamp()"
	CO="coalesce(ready_at, due_at)"
	CS+=", claimed_at = clock_timestamp()"
	DS+=", ms = 5"
}

# full_mod MOD: one change to the full shape; `full+A+B` applies A, then B.
#   ffNN       fillfactor NN (70 otherwise)
#   noforbidx  no index of pending triggers by job and partition: the
#              claim skips an `overlap: forbid` instant when it meets it
#   slim       one ready time (due_at and the next attempt's time folded
#              into ready_at: a planned instant is due at scheduled_at),
#              no finished_at (claimed_at + ms says when the call ended)
#   side       the NULL columns of rare edges (request, key, status
#              queries, checkpoint, outcome, source) in a row of their own
#              keyed by the trigger's key, written by those edges only; a
#              result sets every column it may (err 0, lease kept), so
#              its version has no NULLs and no null bitmap
#   nonull     no NULL in a claimed or ended version, so neither has a
#              null bitmap (8 B of header each): the claim writes ms and
#              status 0, the error class of a failure goes to the side
#              row, the node is a smallint (alignment: only the three
#              together shrink the versions); needs side
#   onetime    one timestamp for the ready time and the lease (ready_at:
#              when a pending trigger is due, when a live one's lease
#              ends; the live index keyed by it); needs slim
#   tenantfilter  the pending index keyed by ready time alone, the tenant
#              a filter (the claim no longer reads each tenant's oldest
#              in index order)
#   ixff100    every index at fillfactor 100 (the plan key and partial
#              indexes: what it gains depends on keys arriving in order)
#   updated    an updated_at written by the plan, the claim and the result
#   lease1     one lease per claim (the statement's start plus the lease),
#              not one per row: a claim's entries in the live index share
#              a key and are deduplicated
#   keyorder   the plan key ordered (job, partition, seq, scheduled_at):
#              no alignment gap in its entries; a job's listing by time
#              merges its partitions' ranges
full_mod() {
	case $1 in
	ff*) SFF=${1#ff} ;;
	noforbidx) IDX=${IDX/"CREATE INDEX s_t_pending_job ON s_t (job, partition) WHERE state = 'p';"/} ;;
	slim)
		ROW=${ROW/"due_at timestamptz NOT NULL, "/}
		ROW=${ROW/"finished_at timestamptz, "/}
		ROW=${ROW/"ready_at timestamptz,"/"ready_at timestamptz NOT NULL,"}
		IDX=${IDX//"(coalesce(ready_at, due_at))"/ready_at}
		CW=${CW//"coalesce(ready_at, due_at)"/ready_at} CO=ready_at DUE=ready_at
		DS=${DS/"finished_at = clock_timestamp(), "/} ;;
	side)
		[ "$KEY" != id ] || { echo "shapes.sh: side needs the key without id" >&2; return 1; }
		[ -z "$REQIDX" ] || { ROW=${ROW/", $FULL_RARE"/} REQIDX=; }
		SIDE="CREATE TABLE s_r (job int NOT NULL, scheduled_at timestamptz NOT NULL,
		  partition smallint NOT NULL, seq smallint NOT NULL, $FULL_RARE,
		  PRIMARY KEY (job, scheduled_at, partition, seq));
		  CREATE UNIQUE INDEX s_r_request ON s_r (job, request_id, scheduled_at, partition)
		    WHERE request_id IS NOT NULL"
		DS=${DS/"lease_until = NULL, "/}
		DS+=", err = 0" ;;
	nonull)
		[ -n "$SIDE" ] || { echo "shapes.sh: nonull needs side" >&2; return 1; }
		ROW=${ROW/"node int, "/}
		ROW=${ROW/"partition smallint"/"node smallint, partition smallint"}
		ROW=${ROW/"err smallint,
	  "/}
		ROW=${ROW/"err smallint, "/}
		SIDE=${SIDE/"outcome smallint,"/"outcome smallint, err smallint,"}
		CS+=", ms = 0, status = 0"
		DS=${DS/", err = 0"/} ;;
	onetime)
		[ "$DUE" = ready_at ] || { echo "shapes.sh: onetime needs slim" >&2; return 1; }
		ROW=${ROW/"lease_until timestamptz, "/}
		IDX=${IDX/"s_t_live ON s_t (lease_until)"/"s_t_live ON s_t (ready_at)"}
		CS=${CS/"lease_until = "/"ready_at = "}
		DS=${DS/"lease_until = NULL, "/} ;;
	tenantfilter) IDX=${IDX/"s_t_ready ON s_t (tenant, ready_at)"/"s_t_ready ON s_t (ready_at)"}
		IDX=${IDX/"s_t_ready ON s_t (tenant, (coalesce(ready_at, due_at)))"/"s_t_ready ON s_t ((coalesce(ready_at, due_at)))"} ;;
	ixff100)
		IDX=${IDX//$'\n\t    WHERE '/" WHERE "}
		IDX=${IDX//" WHERE "/" WITH (fillfactor = 100) WHERE "}
		ROW=${ROW/"PRIMARY KEY (job, partition, seq, scheduled_at)"/"PRIMARY KEY (job, partition, seq, scheduled_at) WITH (fillfactor = 100)"}
		ROW=${ROW/"PRIMARY KEY (job, scheduled_at, partition, seq)"/"PRIMARY KEY (job, scheduled_at, partition, seq) WITH (fillfactor = 100)"} ;;
	updated)
		ROW=${ROW/"fence bigint,"/"updated_at timestamptz NOT NULL DEFAULT now(), fence bigint,"}
		CS+=", updated_at = clock_timestamp()" DS+=", updated_at = clock_timestamp()" ;;
	lease1) CS=${CS/"= clock_timestamp() + interval '30 s'"/"= statement_timestamp() + interval '30 s'"} ;;
	keyorder)
		ROW=${ROW/"PRIMARY KEY (job, scheduled_at, partition, seq)"/"PRIMARY KEY (job, partition, seq, scheduled_at)"} ;;
	*) echo "shapes.sh: unknown change $1 of the full shape" >&2; return 1 ;;
	esac
}

compose() {
	local k on=""
	for k in ${KEY//,/ }; do on+="${on:+ AND }t.$k = c.$k"; done
	SETUP="CREATE TABLE s_t ($ROW) WITH (fillfactor = $SFF); $IDX"
	PLAN="INSERT INTO s_t (job, version, scheduled_at, $DUE$PCOLS)
	  SELECT g, 1, date_trunc('second', now()), $DUE_AT$PVALS FROM generate_series(1, $N) g"
	CLAIM="WITH c AS (SELECT $KEY FROM s_t WHERE $CW ORDER BY $CO LIMIT $BATCH FOR UPDATE SKIP LOCKED)
	  UPDATE s_t t SET $CS FROM c WHERE $on"
	DONE="UPDATE s_t SET $DS WHERE $DW"
	RELS="s_t"
	[ -z "$REQIDX" ] || SETUP+="; $REQIDX"
	[ -z "$SIDE" ] || { SETUP+="; $SIDE" RELS+=",s_r"; }
}

# shape NAME -> SETUP PLAN CLAIM COMPLETE RELS
shape() {
	LEANISH=
	case $1 in
	minimal)
		SETUP="CREATE TABLE s_t (job int NOT NULL, instant timestamptz NOT NULL,
		  due_at timestamptz NOT NULL, state smallint NOT NULL DEFAULT 0,
		  lease_until timestamptz, token bigint, PRIMARY KEY (job, instant));
		  CREATE INDEX s_t_due ON s_t (due_at) WHERE state = 0"
		PLAN="INSERT INTO s_t (job, instant, due_at)
		  SELECT g, date_trunc('second', now()), $DUE_AT FROM generate_series(1, $N) g"
		CLAIM="WITH c AS (SELECT job, instant FROM s_t WHERE state = 0 AND due_at <= clock_timestamp()
		  ORDER BY due_at LIMIT $BATCH FOR UPDATE SKIP LOCKED)
		  UPDATE s_t t SET state = 1, token = nextval('s_tok'), lease_until = clock_timestamp() + interval '30 s'
		  FROM c WHERE t.job = c.job AND t.instant = c.instant"
		DONE="UPDATE s_t SET state = 2, lease_until = NULL WHERE state = 1"
		RELS="s_t" ;;
	lean) lean ;;
	lean-noid)
		lean "${LEAN_ROW#*IDENTITY PRIMARY KEY, }, PRIMARY KEY (job, scheduled_at, partition)"
		IDX="CREATE INDEX s_t_ready ON s_t (due_at) WHERE state = 'p';
		  CREATE INDEX s_t_live ON s_t (lease_until) WHERE state = 'r'"
		KEY="job, scheduled_at, partition" ;;
	lean-tenant)
		lean "$LEAN_ROW, tenant int NOT NULL DEFAULT 1"
		IDX=${IDX/"s_t (due_at) WHERE"/"s_t (tenant, due_at) WHERE"}
		CW="tenant = 1 AND $CW" ;;
	lean-tenantfilter)
		lean "$LEAN_ROW, tenant int NOT NULL DEFAULT 1"
		CW="tenant = 1 AND $CW" ;;
	lean-onepart)
		lean
		IDX="CREATE UNIQUE INDEX s_t_plan ON s_t (job, scheduled_at, partition);
		  CREATE INDEX s_t_open ON s_t (state, (coalesce(lease_until, due_at))) WHERE state IN ('p', 'r')"
		CW="state = 'p' AND coalesce(lease_until, due_at) <= clock_timestamp()"
		CO="coalesce(lease_until, due_at)" ;;
	lean-ff*) lean; SFF=${1#lean-ff} ;;
	lean-order) lean "$LEAN_ORDERED" ;;
	contract) shape full+slim+side+keyorder+noforbidx+lease1+nonull+onetime+ff50 ;;
	full | full-id | full+* | full-id+*)
		local m mods=${1#full}
		mods=${mods#-id}
		[ "${1#full-id}" = "$1" ] && full NOID || full ID
		for m in ${mods//+/ }; do full_mod "$m" || return 1; done ;;
	lean-hotclaim)
		lean
		IDX="CREATE UNIQUE INDEX s_t_plan ON s_t (job, scheduled_at, partition);
		  CREATE INDEX s_t_open ON s_t (due_at) WHERE state = 'p'"
		CW="state = 'p' AND due_at <= clock_timestamp() AND (lease_until IS NULL OR lease_until < clock_timestamp())"
		CS=${CS/"state = 'r', "/}
		DW="state = 'p' AND lease_until IS NOT NULL" ;;
	lean-queue)
		SETUP="CREATE TABLE s_t ($LEAN_ROW) WITH (fillfactor = $FF);
		  CREATE UNIQUE INDEX s_t_plan ON s_t (job, scheduled_at, partition);
		  CREATE TABLE s_q (trigger_id bigint PRIMARY KEY, ready_at timestamptz NOT NULL,
		    lease_until timestamptz);
		  CREATE INDEX s_q_ready ON s_q (ready_at) WHERE lease_until IS NULL;
		  CREATE INDEX s_q_lease ON s_q (lease_until) WHERE lease_until IS NOT NULL"
		PLAN="WITH i AS (INSERT INTO s_t (job, version, scheduled_at, due_at)
		    SELECT g, 1, date_trunc('second', now()), $DUE_AT FROM generate_series(1, $N) g
		    RETURNING id, due_at)
		  INSERT INTO s_q (trigger_id, ready_at) SELECT id, due_at FROM i"
		CLAIM="WITH c AS (SELECT trigger_id FROM s_q WHERE lease_until IS NULL AND ready_at <= clock_timestamp()
		    ORDER BY ready_at LIMIT $BATCH FOR UPDATE SKIP LOCKED),
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
	[ -z "$LEANISH" ] || compose
}

size() { sql "SELECT sum(pg_table_size(r) + pg_indexes_size(r)) FROM unnest('{$RELS}'::regclass[]) r"; }
for s in "${SHAPES[@]}"; do
	shape "$s" || exit 2
	sql "SET client_min_messages = warning; DROP TABLE IF EXISTS s_t, s_q, s_r; DROP SEQUENCE IF EXISTS s_tok; CREATE SEQUENCE s_tok; $SETUP" >/dev/null || exit 1
	f=$PALISADE_STATE/$s.sql
	for ((i = 0; i < (N + BATCH - 1) / BATCH; i++)); do printf '%s;\n%s;\n' "$CLAIM" "$DONE"; done >"$f"
	sql "CHECKPOINT" >/dev/null
	b0=$(size) l0=$(sql "SELECT pg_current_wal_lsn()")
	sql "$PLAN" >/dev/null && psql "$PALISADE_PG" -XAtq -v ON_ERROR_STOP=1 -f "$f" >/dev/null || exit 1
	l1=$(sql "SELECT pg_current_wal_lsn()") b1=$(size)
	by=$(sql "SELECT string_agg(r::text || ' ' || pg_table_size(r) / $N || '+' || pg_indexes_size(r) / $N, ', ')
	  FROM unnest('{$RELS}'::regclass[]) r")
	idx=$(sql "SELECT string_agg(c.relname || ' ' || pg_relation_size(c.oid) / $N, ', ' ORDER BY c.relname)
	  FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
	  WHERE i.indrelid = ANY ('{$RELS}'::regclass[]) AND pg_relation_size(c.oid) >= $N")
	hot=$(sql "SELECT sum(n_tup_hot_upd) || ' of ' || sum(n_tup_upd) FROM pg_stat_user_tables
	  WHERE relname = ANY ('{$RELS}')")
	wide=$(sql "SELECT round(avg(pg_column_size(s_t.*))) FROM s_t")
	echo "shape $s: bytes per fire $(((b1 - b0) / N)) (heap+indexes: $by; indexes: $idx), WAL per fire $(($(sql "SELECT pg_wal_lsn_diff('$l1', '$l0')::bigint") / N)) B, updates HOT $hot, ended row $wide B"
done
