#!/usr/bin/env bash
# chaos/zk_cutoff.sh - drill zk-cutoff (chaos/run.sh): two of four nodes run
# in their own network namespace, reaching PostgreSQL, ZooKeeper and the
# sink over a veth link (forwarders on the host side, as in
# tests/integration/test_partition.sh).  Under load, while both lead shards,
# an iptables DROP inside the namespace cuts them off from ZooKeeper only:
# PostgreSQL and the sink stay reachable (the case where a stale leader
# could still write).  Node `cut` is an ordinary node; node `cutx` runs with
# the drill switch PALISADE_FAULT_IGNORE_ZK_LOSS=1 (it goes on planning its
# shards after ZooKeeper is gone) so that the PostgreSQL epoch fence alone
# has to stop it.  After CUT_S seconds (default 20) the rule is removed.
#
# Measured per shard the cut-off nodes led, from the database: the gap
# between the last trigger written under the old epoch and the first one
# under the new leader's epoch (triggers.created_at).  Checked: every gap is
# positive (the old leader's planning stopped before the new one's began,
# for `cutx` because its late writes were refused); `cutx`'s late writes
# were fenced (controller.fenced, palisade_controller_fenced_total); `cut`
# suspended on its own; after the heal nothing is missing, planned twice or
# applied twice.  Needs root (network namespaces, iptables).
source tests/integration/lib.sh
source tests/integration/cluster.sh
source chaos/lib.sh
guarantee "G6 + G1 + G2 with a node cut off from ZooKeeper only (still reaching PostgreSQL): its planning stops before the new leader's starts, the epoch fence refuses a late write, nothing missed or doubled after the heal"
declare -A FIG
CUT_S=${CUT_S:-20}

command -v iptables >/dev/null || { fail "iptables is installed (apt-get install -y iptables)"; finish; exit 1; }
RULE=
trap 'stop_all_nodes; stop_sink; [ -n "$RULE" ] && ip netns exec "$NS" iptables -D OUTPUT $RULE 2>/dev/null; netns_down' EXIT
netns_up zkc || { finish; exit 1; }

fresh_db it_zk_cutoff
"$PAL" migrate >/dev/null
sink_port=$(free_port)
SINK_ADDR=$HIP:$sink_port
SINK_ADMIN=127.0.0.1:$(free_port)
"$PALISADE_BIN/palisade-sink" --listen "$SINK_ADDR" --admin "$SINK_ADMIN" >>"$NODE_DIR/sink.log" 2>&1 &
SINK_PID=$!
wait_until "sink up on $SINK_ADDR" 10 curl -sf "http://$SINK_ADMIN/healthz"
netns_forward_cluster
fpg=$FWD_PG_PORT fzk=$FWD_ZK_PORT

SHARDS=8
ZK_SESSION=4s write_conf "$CLUSTER_CONF" "executor: {lease: 4s, heartbeat: 1s}"
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
gen_sink_jobs "$NODE_DIR/jobs.yaml" 64 "*/2 * * * * ?" t1 zkc
expect_exit "apply 64 jobs" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
start_node a1
start_node a2
start_ns_node() { # start_ns_node ID [env...]: a node inside the namespace
	local id=$1 port; shift
	port=$(free_port)
	NODE_ADMIN[$id]=$NIP:$port
	env "$@" PALISADE_PG="$NS_PG" PALISADE_ZK="$NS_ZK" ip netns exec "$NS" "$PAL" node --config "$CLUSTER_CONF" \
		--node-id "$id" --admin "$NIP:$port" >>"$NODE_DIR/$id.log" 2>&1 &
	NODE_PID[$id]=$!
}
start_ns_node cut
start_ns_node cutx PALISADE_FAULT_IGNORE_ZK_LOSS=1
wait_until "all shards led" 30 all_shards_led
both_lead() { [ -n "$(shards_of cut)" ] && [ -n "$(shards_of cutx)" ]; }
wait_until "both namespaced nodes lead shards (balance)" 60 both_lead
T0=$(now_rfc3339)
sleep 6
sql "select shard_id, epoch, leader from shards where leader in ('cut', 'cutx') order by shard_id" >"$NODE_DIR/old_epochs"
echo "    cut leads shards $(shards_of cut), cutx leads $(shards_of cutx) (epochs: $(awk -F'|' '{ printf "%s:%s ", $1, $2 }' "$NODE_DIR/old_epochs"))"

# ---- the cut: ZooKeeper only ---------------------------------------------------------
RULE="-p tcp -d $HIP --dport $fzk -j DROP"
t_cut=$(date +%s%3N)
cut_ts=$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)
ip netns exec "$NS" iptables -A OUTPUT $RULE
pass "iptables DROP of ZooKeeper ($HIP:$fzk) inside the namespace; PostgreSQL ($HIP:$fpg) and the sink stay reachable"
taken() { [ -z "$(shards_of cut)" ] && [ -z "$(shards_of cutx)" ] && all_shards_led; }
wait_until "the outside nodes lead every shard the cut-off nodes led" 30 taken
FIG[takeover_ms]=$(($(date +%s%3N) - t_cut))
check "the cut-off nodes still reach PostgreSQL (executor_nodes seen after the cut)" \
	[ "$(sql "select count(*) from executor_nodes where node in ('cut', 'cutx') and seen_at > '$cut_ts'")" -ge 1 ]
fenced() { grep -q '"event":"controller.fenced"' "$NODE_DIR/cutx.log"; }
wait_until "cutx (ignoring the ZooKeeper loss) has a late write refused by the epoch fence" 20 fenced
sleep $((CUT_S - FIG[takeover_ms] / 1000 > 0 ? CUT_S - FIG[takeover_ms] / 1000 : 0))
ip netns exec "$NS" iptables -D OUTPUT $RULE
RULE=
FIG[cut_s]=$((($(date +%s%3N) - t_cut) / 1000))
echo "    ZooKeeper cut off for ${FIG[cut_s]} s; shards led elsewhere ${FIG[takeover_ms]} ms after the cut"

# ---- per shard: the old leader's last write, the new leader's first ----------------------
FIG[gap_min_ms]=
FIG[gap_max_ms]=
FIG[overlaps]=0
gaps=()
stops=()
while IFS='|' read -r s e who; do
	g=$(sql "select round(extract(epoch from (select min(created_at) from triggers where shard = $s and epoch > $e)
		- (select max(created_at) from triggers where shard = $s and epoch = $e)) * 1000)")
	# How long after the cut the old leader's last planning write began.
	st=$(sql "select round(extract(epoch from (select max(created_at) from triggers where shard = $s and epoch = $e) - '$cut_ts'::timestamptz) * 1000)")
	gaps+=("$s($who):${g:-?}")
	stops+=("$s($who):${st:-?}")
	[ -n "$g" ] || { FIG[overlaps]=$((FIG[overlaps] + 1)); continue; }
	[ "$g" -gt 0 ] || FIG[overlaps]=$((FIG[overlaps] + 1))
	[ -z "${FIG[gap_min_ms]}" ] || [ "$g" -lt "${FIG[gap_min_ms]}" ] && FIG[gap_min_ms]=$g
	[ -z "${FIG[gap_max_ms]}" ] || [ "$g" -gt "${FIG[gap_max_ms]}" ] && FIG[gap_max_ms]=$g
done <"$NODE_DIR/old_epochs"
echo "    per-shard gap old leader's last trigger -> new leader's first, ms: ${gaps[*]}"
echo "    per-shard old leader's last trigger, ms after the cut: ${stops[*]} (ZooKeeper session 4 s)"
expect_eq "on every shard the old leader's planning stopped before the new leader's began (gap > 0)" 0 "${FIG[overlaps]}"
FIG[fenced_cutx]=$(metric cutx palisade_controller_fenced_total | cut -d. -f1)
FIG[fenced_cut]=$(metric cut palisade_controller_fenced_total | cut -d. -f1)
check "palisade_controller_fenced_total > 0 on cutx (${FIG[fenced_cutx]})" [ "${FIG[fenced_cutx]:-0}" -ge 1 ]
expect_match "cutx's log says its late write got 0 rows" "0 rows" "$(grep '"event":"controller.fenced"' "$NODE_DIR/cutx.log" | head -1)"
check "cut suspended on its own (coord.suspended) and dropped its shards" grep -q '"event":"coord.suspended"' "$NODE_DIR/cut.log"
# No trigger at an old epoch was written after the new leader's claim.
FIG[late_accepted]=0
while IFS='|' read -r s e _; do
	n=$(sql "select count(*) from triggers where shard = $s and epoch = $e and created_at > (select min(created_at) from triggers where shard = $s and epoch > $e)")
	FIG[late_accepted]=$((FIG[late_accepted] + n))
done <"$NODE_DIR/old_epochs"
expect_eq "no write at an old epoch accepted after the new leader's first" 0 "${FIG[late_accepted]}"

# ---- after the heal --------------------------------------------------------------------
back() { [ "$(metric cut palisade_coord_connected)" = 1 ] && [ "$(metric cutx palisade_coord_connected)" = 1 ]; }
wait_until "both cut-off nodes reconnect to ZooKeeper" 40 back
sleep 8
T1=$(rfc3339_ago 4)
check_window "$T0" "$T1"
check "every node survived" bash -c "kill -0 ${NODE_PID[cut]} && kill -0 ${NODE_PID[cutx]} && kill -0 ${NODE_PID[a1]} && kill -0 ${NODE_PID[a2]}"
echo "    figure: ZooKeeper-only cut of 2 of 4 nodes for ${FIG[cut_s]} s: takeover ${FIG[takeover_ms]} ms; per-shard gap old->new leader ${FIG[gap_min_ms]:-?}..${FIG[gap_max_ms]:-?} ms, overlaps ${FIG[overlaps]}; late writes fenced: cutx ${FIG[fenced_cutx]} (switch on), cut ${FIG[fenced_cut]}; late writes accepted ${FIG[late_accepted]}"
write_report zk-cutoff "cut_nodes=[\"cut\", \"cutx\"]" "gaps_ms=\"${gaps[*]}\"" "last_old_write_after_cut_ms=\"${stops[*]}\""
finish
