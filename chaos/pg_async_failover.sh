#!/usr/bin/env bash
# chaos/pg_async_failover.sh - drill pg-async-failover (chaos/run.sh): the
# kill -9 of the PostgreSQL primary of drill pg-failover, with asynchronous
# replication (ops/devcluster.sh --pg ha-async: Patroni synchronous_mode
# off), so that the promoted replica can lack commits the old primary had
# acknowledged.
#
# Lag: on loopback a replica is usually microseconds behind, and a kill
# then loses nothing.  To make the loss happen (and be counted), the drill
# stops the primary's walsender processes (SIGSTOP) just before the kill,
# until the replicas are PGA_LAG_BYTES behind (default 128 KiB) or for at
# most PGA_FREEZE_S (default 3 s; 0 = no stall): a replication link that
# stalls while the primary goes on acknowledging commits.  They are killed
# with the primary.
#
# The sampler: right before the kill the drill copies, from the primary
# itself, every trigger and attempt of the window (id, plan key, state,
# fence, outcome): what the primary had committed, and so had told its
# clients.  Right after the promotion it copies the same from the new
# primary.  Lost: trigger rows (a planning commit), attempt rows (a claim),
# attempt outcomes (a result commit), as rows of the first copy missing or
# different in the second.  The replication lag is read just before the
# kill from the primary (pg_stat_replication) and from Patroni (/cluster).
#
# Where the sink's store lives (PGA_SINK):
#   separate (default)  its own database on the harness's standalone
#       PostgreSQL, outside the Patroni cluster: the effects it applied
#       survive the failover while palisade's own commits about them may be
#       lost.  That is the case the idempotency key and the sink's fence
#       must cover: a lost outcome is re-executed and the sink must answer
#       it from its store (replay), not apply it again.
#   cluster  in the palisade database on the Patroni cluster (as in
#       pg-failover): the sink's own commits can be lost with palisade's;
#       the sampler copies its ledger too and counts the lost effects, which
#       are applied again, once (the sink's in-memory count of applies then
#       exceeds its ledger rows by that number: an effect outside the
#       database would have happened twice; the ledger row is the effect
#       here).
#
# Checked: every lost trigger is re-planned (its plan key exists once and
# ends succeeded), every lost outcome re-executed (the trigger ends
# succeeded), the sink's ledger has one row per key and chunk, nothing is
# missing or planned twice (palisade verify), the old primary rejoins.
source tests/integration/lib.sh
source tests/integration/cluster.sh
source chaos/lib.sh
guarantee "G1 + G2 + G5 through a PostgreSQL failover with asynchronous replication: commits the old primary acknowledged and the new one lacks are re-planned or re-executed; the idempotency key and the sink's fence keep every effect single"
declare -A FIG
FREEZE_S=${PGA_FREEZE_S:-3}
LAG_TARGET=${PGA_LAG_BYTES:-131072}
SINK_MODE=${PGA_SINK:-separate}
case "$SINK_MODE" in separate | cluster) ;; *) fail "PGA_SINK is separate or cluster"; finish; exit 1 ;; esac

command -v patroni >/dev/null || { fail "patroni is installed (apt-get install -y patroni python3-kazoo)"; finish; exit 1; }
# The sink's database: on the standalone PostgreSQL, outside the Patroni cluster.
fresh_db it_pga_sink
SINK_PG=$PALISADE_PG
HA_STATE=$PALISADE_TEST_TMP/pgha
HA_PORT=$(free_port)
dc() { PALISADE_STATE=$HA_STATE PALISADE_PG_PORT=$HA_PORT PALISADE_ZK_PORT=$PALISADE_ZK_PORT bash ops/devcluster.sh "$@"; }
FROZEN=()
trap 'for p in "${FROZEN[@]}"; do kill -CONT "$p" 2>/dev/null; done; stop_all_nodes; stop_sink; dc destroy >/dev/null 2>&1' EXIT
t=$(date +%s%3N)
env_ha=$(dc up --pg ha-async --only pg) || { fail "Patroni cluster of 3 (async) starts"; finish; exit 1; }
eval "$env_ha"
pass "Patroni cluster of 3 starts in $(($(date +%s%3N) - t)) ms: $(dc pg-roles | tr '\n' ' ')"
export PALISADE_PG # multi-host conninfo, for the nodes and the CLI
[ "$SINK_MODE" = cluster ] && SINK_PG=$PALISADE_PG
PGHA=$(cat "$HA_STATE/pgha.path")
member_pg() { echo "host=127.0.0.1 port=$(dc pg-roles | awk -v i="$1" '$1 == i { print $2 }') user=palisade dbname=palisade connect_timeout=3"; }
has_replicas() { [ "$(psql "$PALISADE_PG" -XAtqc "select count(*) from pg_stat_replication where state = 'streaming'")" = 2 ]; }
wait_until "both replicas stream from the primary" 30 has_replicas
expect_eq "asynchronous replication: no synchronous standby" "async async" \
	"$(psql "$PALISADE_PG" -XAtqc "select string_agg(sync_state, ' ') from pg_stat_replication")"

"$PAL" migrate >/dev/null
start_sink --pg "$SINK_PG" || { fail "sink starts"; finish; exit 1; }
ssql() { sql_run "$1" psql "$SINK_PG" -XAtq -v ON_ERROR_STOP=1 -c "$1"; } # records a failure as sql does
SHARDS=4
ZK_SESSION=4s write_conf "$CLUSTER_CONF" "executor: {lease: 10s, heartbeat: 2s}"
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
gen_sink_jobs "$NODE_DIR/jobs.yaml" 60 "*/2 * * * * ?" t1 pga
expect_exit "apply 60 jobs" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
start_node p1
start_node p2
wait_until "all shards led over the multi-host conninfo" 30 all_shards_led
T0=$(rfc3339_ago -1)
sleep 12

old=$(dc pg-roles | awk '$3 == "primary" { print $1 }')
OLD_PG=$(member_pg "$old")
# Stall replication: SIGSTOP of the primary's walsenders (by PID).  Stopping
# the replicas' walreceivers instead is not enough: the WAL already sits in
# the loopback socket buffers and reaches them when they continue (a first
# version of this drill lost nothing that way, with 145 kB of reported lag).
pm_old=$(head -1 "$PGHA/m$old/data/postmaster.pid")
if [ "$FREEZE_S" != 0 ]; then
	for p in $(ps --ppid "$pm_old" -o pid=,args= | awk '/walsender/ { print $1 }'); do
		kill -STOP "$p" && FROZEN+=("$p")
	done
	expect_eq "the primary's two walsenders stopped" 2 "${#FROZEN[@]}"
	# Until the replicas are LAG_TARGET bytes behind, at most FREEZE_S: Patroni
	# promotes no replica more than maximum_lag_on_failover (1 MiB) behind
	# the last position the primary published, and on a loaded machine 2 s
	# of load wrote more than that (no failover at all: the cluster stays
	# without a primary until the old one returns).
	behind() { psql "$OLD_PG" -XAtqc "select coalesce(min(pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn)), 0)::bigint >= $LAG_TARGET from pg_stat_replication" | grep -q t; }
	ts=$(date +%s%3N)
	while ! behind && [ $(($(date +%s%3N) - ts)) -lt $((FREEZE_S * 1000)) ]; do sleep 0.1; done
	FIG[stall_ms]=$(($(date +%s%3N) - ts))
fi
# The lag as the primary and Patroni see it, then the sampler's copy, then the kill.
FIG[lag_bytes]=$(psql "$OLD_PG" -XAtqc "select coalesce(max(pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn)), 0)::bigint from pg_stat_replication")
FIG[patroni_lag_bytes]=$(curl -s --max-time 2 "http://127.0.0.1:$(awk -v i="$old" '$1 == i { print $3 }' "$HA_STATE/pgha.ports")/cluster" |
	python3 -c 'import json,sys; print(max([m.get("lag", 0) if isinstance(m.get("lag", 0), int) else 0 for m in json.load(sys.stdin)["members"]] or [0]))' 2>/dev/null || echo null)
snap() { # snap CONNINFO PREFIX: the window's triggers and attempts, as the member has them
	psql "$1" -XAtq -F' ' -c "select id, job_id, to_char(scheduled_at at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'), partition, state, coalesce(fence, 0), (extract(epoch from created_at) * 1000000)::bigint from trigger_jobs where scheduled_at >= '$T0' order by id" >"$NODE_DIR/$2.triggers"
	psql "$1" -XAtq -F' ' -c "select a.fence, a.trigger_id, coalesce(a.outcome, '-'), (extract(epoch from a.claimed_at) * 1000000)::bigint from attempt_ledger a join triggers t on t.id = a.trigger_id where t.scheduled_at >= '$T0' order by a.fence" >"$NODE_DIR/$2.attempts"
}
snap "$OLD_PG" before
[ "$SINK_MODE" = cluster ] && psql "$OLD_PG" -XAtq -F' ' -c "select idempotency_key, chunk, (extract(epoch from applied_at) * 1000000)::bigint from sink_ledger" | sort >"$NODE_DIR/before.ledger"
kill_ts=$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)
t=$(date +%s%3N)
dc pg-kill "$old" 2>/dev/null
# The machine is gone: its stopped walsenders die with it, unsent WAL and all.
for p in "${FROZEN[@]}"; do kill -9 "$p" 2>/dev/null; done
FROZEN=()
echo "    kill -9 of primary m$old; lag just before: ${FIG[lag_bytes]} B (pg_stat_replication), ${FIG[patroni_lag_bytes]} B (Patroni); the sampler saw $(wc -l <"$NODE_DIR/before.triggers") triggers, $(wc -l <"$NODE_DIR/before.attempts") attempts"
new_primary() { dc pg-roles | awk -v o="$old" '$3 == "primary" && $1 != o' | grep -q .; }
if ! wait_until "Patroni promotes a replica (asynchronous)" 90 new_primary; then
	echo "    Patroni promoted nobody: $(patronictl -c "$PGHA/m1/patroni.yml" list 2>&1 | grep -E '^\| m' | tr -s ' ' | paste -sd' ') (maximum_lag_on_failover 1 MiB)"
	write_report pg-async-failover "replication=\"asynchronous\"" "promoted=false"
	finish
	exit 1
fi
FIG[promoted_ms]=$(($(date +%s%3N) - t))
FIG[new_primary]=$(dc pg-roles | awk '$3 == "primary" { print $1 }')
snap "$(member_pg "${FIG[new_primary]}")" after
FIG[lost_effects]=0
if [ "$SINK_MODE" = cluster ]; then
	psql "$(member_pg "${FIG[new_primary]}")" -XAtq -F' ' -c "select idempotency_key, chunk, (extract(epoch from applied_at) * 1000000)::bigint from sink_ledger" | sort >"$NODE_DIR/after.ledger"
	FIG[lost_effects]=$(comm -23 "$NODE_DIR/before.ledger" "$NODE_DIR/after.ledger" | wc -l)
fi

# ---- what the new primary lacks ---------------------------------------------------
# A trigger row (id + plan key + created_at) of the first copy missing in
# the second: a lost planning commit.  An attempt (fence + trigger +
# claimed_at) missing: a lost claim.  An attempt present with another
# outcome: a lost result commit.  The timestamps tell a lost row from the
# same values written again: the new primary can hand out the same ids and
# tokens again (its sequences resume from the last WAL it received) and
# re-plans the same plan keys, and a re-applied effect has the same key.
awk '{ print $1, $2, $3, $4, $7 }' "$NODE_DIR/before.triggers" | sort >"$NODE_DIR/b.tk"
awk '{ print $1, $2, $3, $4, $7 }' "$NODE_DIR/after.triggers" | sort >"$NODE_DIR/a.tk"
comm -23 "$NODE_DIR/b.tk" "$NODE_DIR/a.tk" >"$NODE_DIR/lost.triggers"
awk '{ print $1, $2, $4 }' "$NODE_DIR/before.attempts" | sort >"$NODE_DIR/b.ak"
awk '{ print $1, $2, $4 }' "$NODE_DIR/after.attempts" | sort >"$NODE_DIR/a.ak"
comm -23 "$NODE_DIR/b.ak" "$NODE_DIR/a.ak" >"$NODE_DIR/lost.attempts"
sort "$NODE_DIR/before.attempts" >"$NODE_DIR/b.ao"
sort "$NODE_DIR/after.attempts" >"$NODE_DIR/a.ao"
# outcomes: present in both, differing
join -j1 <(awk '{ print $1 "/" $2 "/" $4, $3 }' "$NODE_DIR/b.ao" | sort) <(awk '{ print $1 "/" $2 "/" $4, $3 }' "$NODE_DIR/a.ao" | sort) |
	awk '$2 != $3 && $2 != "-"' >"$NODE_DIR/lost.outcomes"
FIG[lost_triggers]=$(wc -l <"$NODE_DIR/lost.triggers")
FIG[lost_attempts]=$(wc -l <"$NODE_DIR/lost.attempts")
FIG[lost_outcomes]=$(wc -l <"$NODE_DIR/lost.outcomes")
# Triggers that were succeeded on the old primary and are not, under the
# same token, on the new one (back to running/pending, or already
# re-executed by the time of the second copy: a newer token).
join -j1 <(awk '$5 == "succeeded" { print $1 "/" $2 "/" $3 "/" $4 "/" $7, $5, $6 }' "$NODE_DIR/before.triggers" | sort) \
	<(awk '{ print $1 "/" $2 "/" $3 "/" $4 "/" $7, $5, $6 }' "$NODE_DIR/after.triggers" | sort) |
	awk '$4 != "succeeded" || $5 != $3' >"$NODE_DIR/lost.succeeded"
FIG[lost_successes]=$(wc -l <"$NODE_DIR/lost.succeeded")
FIG[lost_commits]=$((FIG[lost_triggers] + FIG[lost_attempts] + FIG[lost_outcomes]))
echo "    figure: lost ${FIG[lost_commits]} acknowledged rows (${FIG[lost_triggers]} plans, ${FIG[lost_attempts]} claims, ${FIG[lost_outcomes]} outcomes; ${FIG[lost_successes]} successes), lag ${FIG[lag_bytes]} B (Patroni ${FIG[patroni_lag_bytes]} B) after a ${FIG[stall_ms]:-0} ms walsender stall"
if [ "${FIG[lost_commits]}" = 0 ] && [ "${FIG[lost_successes]}" = 0 ]; then
	echo "    note: nothing was lost in this run (the promoted replica had every acknowledged commit)"
fi
q() { psql "$PALISADE_PG connect_timeout=2" -XAtq -c "$1" 2>/dev/null; }
planned_again() { [ "$(q "select count(*) from triggers where created_at > '$kill_ts'")" -gt 0 ]; }
applied_again() { [ "$(PALISADE_PG=$SINK_PG q "select count(*) from sink_ledger where applied_at > '$kill_ts'")" -gt 0 ]; }
wait_until "planning resumes on the new primary" 90 planned_again
wait_until "execution resumes (effects applied at the sink)" 60 applied_again
# From the database, not from when this script noticed (on a loaded box the
# copies above take seconds): the first trigger created and the first
# effect applied after the kill.
FIG[planning_resumed_ms]=$(sql "select round(extract(epoch from min(created_at) - '$kill_ts'::timestamptz) * 1000) from triggers where created_at > '$kill_ts'")
FIG[execution_resumed_ms]=$(ssql "select round(extract(epoch from min(applied_at) - '$kill_ts'::timestamptz) * 1000) from sink_ledger where applied_at > '$kill_ts'")
echo "    figure: promotion noticed ${FIG[promoted_ms]} ms, planning resumed ${FIG[planning_resumed_ms]} ms, execution ${FIG[execution_resumed_ms]} ms after the kill (database times)"
dc pg-start "$old" 2>/dev/null
rejoined() { [ "$(dc pg-roles | awk -v o="$old" '$1 == o { print $3 }')" = replica ]; }
wait_until "the old primary rejoins as a replica (pg_rewind drops its unreplicated commits)" 120 rejoined

sleep 8
T1=$(rfc3339_ago 4)
SINK_SQL=ssql check_window "$T0" "$T1"

# ---- every lost commit redone once ---------------------------------------------------
# Plan keys of the lost triggers and of the lost outcomes: each exists once
# now, succeeded, and its key has exactly one ledger row at the sink.
{
	awk '{ print $2, $3, $4 }' "$NODE_DIR/lost.triggers"
	while read -r fk _; do
		tid=${fk#*/}
		tid=${tid%%/*}
		awk -v id="$tid" '$1 == id { print $2, $3, $4 }' "$NODE_DIR/before.triggers"
	done <"$NODE_DIR/lost.outcomes"
	awk '{ split($1, k, "/"); print k[2], k[3], k[4] }' "$NODE_DIR/lost.succeeded"
} | sort -u >"$NODE_DIR/redo.keys"
# One query per side: the triggers of those plan keys now, and the sink's
# ledger rows per key.
vals=$(awk '{ printf "%s(%s, %s::timestamptz, %s)", (NR > 1 ? "," : ""), "\x27" $1 "\x27", "\x27" $2 "\x27", $3 }' "$NODE_DIR/redo.keys")
: >"$NODE_DIR/redo.now"
[ -n "$vals" ] && sql "select k.job, k.at, k.part, count(t.id), coalesce(min(t.state), '-'),
		coalesce((select min(a.idempotency_key) from attempt_ledger a where a.trigger_id = min(t.id) and a.idempotency_key is not null), '-')
	from (values $vals) k(job, at, part)
	left join trigger_jobs t on t.job_id = k.job and t.scheduled_at = k.at and t.partition = k.part and t.request_id is null
	group by 1, 2, 3" >"$NODE_DIR/redo.now"
ssql "select idempotency_key, count(*) from sink_ledger group by 1" >"$NODE_DIR/ledger.counts"
awk -F'|' 'NR == FNR { led[$1] = $2; next }
	{ n = led[$6] + 0; if ($4 == 1 && $5 == "succeeded" && n == 1) ok++; else { bad++; print "    lost commit not redone once: " $1 " " $2 "/" $3 ": " $4 " trigger(s), state " $5 ", ledger rows " n } }
	END { print "redone " ok + 0 " " bad + 0 > "/dev/stderr" }' "$NODE_DIR/ledger.counts" "$NODE_DIR/redo.now" 2>"$NODE_DIR/redo.sum"
read -r _ ok bad <"$NODE_DIR/redo.sum"
FIG[redone]=$ok
FIG[redone_bad]=$bad
# Fencing tokens of lost claims handed out again by the new primary (its
# sequence resumes from the last WAL record it received).
FIG[tokens_reissued]=0
lf=$(awk '{ printf "%s%s", (NR > 1 ? "," : ""), $1 }' "$NODE_DIR/lost.attempts")
[ -n "$lf" ] && FIG[tokens_reissued]=$(sql "select count(*) from attempt_ledger where fence in ($lf)")
FIG[replayed]=$(sink_stat replayed)
# Applies the sink made (in memory, survives the failover) against its
# ledger rows: more applies than rows are effects applied again after the
# database lost them (sink store on the cluster only).
# Both read with the sink idle: the nodes stopped first (the load runs on).
check "both nodes still run" bash -c "kill -0 ${NODE_PID[p1]} && kill -0 ${NODE_PID[p2]}"
stop_node p1
stop_node p2
FIG[sink_applied]=$(sink_stat applied)
FIG[ledger_rows]=$(ssql "select count(*) from sink_ledger")
FIG[reapplied]=$((FIG[sink_applied] - FIG[ledger_rows]))
if [ "$SINK_MODE" = separate ]; then
	expect_eq "the sink's store survived: every apply is one ledger row (applies ${FIG[sink_applied]})" 0 "${FIG[reapplied]}"
else
	ssql "select idempotency_key || ' ' || chunk || ' ' || count(*) from sink_ledger group by idempotency_key, chunk" | sort >"$NODE_DIR/ledger.now"
	again=$(comm -23 "$NODE_DIR/before.ledger" "$NODE_DIR/after.ledger" | awk '{ print $1, $2 }' | sort -u | join -j1 - "$NODE_DIR/ledger.now" | awk '$2 == $3 && $4 == 1' | wc -l)
	expect_eq "every effect lost with the sink's commits is in the ledger again, once (lost ${FIG[lost_effects]}, re-applied ${FIG[reapplied]})" \
		"${FIG[lost_effects]}" "$again"
fi
FIG[stale_at_sink]=$(sink_stat stale)
expect_eq "every lost plan or outcome redone: one trigger, succeeded, one ledger row (of $(wc -l <"$NODE_DIR/redo.keys"))" 0 "${FIG[redone_bad]}"
echo "    figure: ${FIG[redone]} lost plans/successes redone once, ${FIG[redone_bad]} not; sink replays ${FIG[replayed]}, stale refused ${FIG[stale_at_sink]}, lost tokens reissued ${FIG[tokens_reissued]}; sink store: $SINK_MODE (lost effects ${FIG[lost_effects]}, re-applied ${FIG[reapplied]})"
write_report pg-async-failover "replication=\"asynchronous\"" "lag_target_bytes=$LAG_TARGET" "sink_store=\"$SINK_MODE\""
finish
