#!/usr/bin/env bash
# An after-roll step (docs/upgrades.md, "Steps applied after the roll"):
# this tree's 048_drop_attempts_fence, a contract step (compatible_from 48)
# that this tree's binary runs on both sides of.  Beside a live 0.3.0 node
# (PALISADE_OLD_TREE, default /tmp/palisade-0.3.0-build), a node of this
# tree migrates the database up to its minimum, leaves the step pending,
# leads and fires; `palisade migrate` refuses the step while the 0.3.0 node
# lives (exit 4, nothing applied) and applies it once that node has stopped,
# under load: this tree's node keeps leading and firing through it, with no
# restart (verify: nothing missing or doubled; one effect per key at the
# sink), and a 0.3.0 node started afterwards refuses to lead.
source tests/integration/lib.sh
source tests/integration/cluster.sh
source tests/integration/releases.sh
guarantee "G1 + G5 + G8 - an after-roll step: this release's node leads while it is pending beside a 0.3.0 node and through its apply; migrate refuses it while the older node lives; nothing missing or doubled, one effect per key"

old_release 0.3.0 || { finish; exit 1; }
STEP=048_drop_attempts_fence
tree_schema
schema() { sql "select max(version) from schema_migrations"; }
has_fence() { sql "select to_regclass('attempts_fence') is not null"; }
node_schema() { curl -s --noproxy '*' -m 2 "http://${NODE_ADMIN[$1]}/status" |
	python3 -c 'import json,sys; s=json.load(sys.stdin)["schema"]; print(s["min"], s["binary"], json.dumps(s.get("pending_after_roll")))' 2>/dev/null; }
live_ids() { "$PAL" status --config "$CLUSTER_CONF" --output json 2>/dev/null |
	python3 -c "import json,sys; print(' '.join(sorted(n['id'] for n in json.load(sys.stdin).get('nodes', []))))"; }
gone() { [[ " $(live_ids) " != *" $1 "* ]]; }
leads_some() { [ "$(sql "select count(*) from shards where leader = '$1'")" -ge 1 ]; }
all_led_by() { [ "$(sql "select count(*) from shards where leader = '$1'")" = "$SHARDS" ]; }

fresh_db it_migrate_after_roll
expect_exit "0.3.0 migrates the empty database" 0 "$OLD_PAL" migrate
OLD_SCHEMA=$(schema)
sink_up
SHARDS=4
write_exec_conf "$CLUSTER_CONF" "executor: {lease: 4s, heartbeat: 1s}"
gen_sink_jobs "$NODE_DIR/jobs.yaml" 20 "*/2 * * * * ?" t1 afterroll
expect_exit "0.3.0 applies 20 jobs" 0 "$OLD_PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
PAL=$OLD_PAL start_node o1
wait_until "the 0.3.0 node o1 leads every shard" 30 all_shards_led
T0=$(now_rfc3339)

# ---- this tree's node beside it: migrates up to its minimum, leads -----------------
start_node n1
wait_until "this tree's node n1 is ready" 30 node_ready n1
expect_eq "n1 migrated schema $OLD_SCHEMA -> $MIN and left $STEP pending" "$MIN t" "$(schema) $(has_fence)"
expect_eq "n1's /status: range $MIN-$BIN, $STEP pending" "$MIN $BIN [\"$STEP\"]" "$(node_schema n1)"
check "n1 logged node.schema_after_roll_pending" grep -q '"event":"node.schema_after_roll_pending".*'"$STEP" "$NODE_DIR/n1.log"
wait_until "n1 takes its share of the shards beside o1 (it leads)" 40 leads_some n1
expect_eq "palisade status shows the pending step" "$MIN [\"$STEP\"]" \
	"$("$PAL" status --config "$CLUSTER_CONF" --output json | python3 -c 'import json,sys; s=json.load(sys.stdin)["schema"]; print(s["version"], json.dumps(s["pending_after_roll"]))')"
expect_match "and its table says so" "schema: $MIN; after-roll steps pending \\(palisade migrate\\): $STEP" \
	"$("$PAL" status --config "$CLUSTER_CONF")"

# ---- migrate: refused while the 0.3.0 node lives ------------------------------------
expect_exit "migrate refuses $STEP while the 0.3.0 node o1 is live" 4 "$PAL" migrate --config "$CLUSTER_CONF"
expect_match "naming the step and o1" "refusing contract step $STEP \\(compatible_from $BIN.*o1 \\(0\\.3\\.0, schema $OLD_SCHEMA\\)" "$OUT"
expect_eq "nothing applied: schema $MIN, attempts_fence there" "$MIN t" "$(schema) $(has_fence)"
expect_exit "--before-roll applies nothing more and leaves it, asking no ZooKeeper" 0 \
	env -u PALISADE_ZK "$PAL" migrate --before-roll
expect_match "saying so" "after-roll step left pending: $STEP" "$OUT"

stop_node o1
wait_wall "o1 has left ZooKeeper" 20 gone o1
wait_until "n1 leads every shard" 30 all_led_by n1
done_before=$(sql "select count(*) from attempt_ledger where outcome = 'succeeded'")

# ---- migrate applies it under load; n1 keeps leading -----------------------------
t_mig=$(date +%s)
expect_exit "with no older node live, migrate applies $STEP" 0 "$PAL" migrate --config "$CLUSTER_CONF"
expect_match "and says so" "migrate: applied 1 migration; schema at version $BIN.*applied after-roll step: $STEP" "$(tr '\n' ' ' <<<"$OUT")"
expect_eq "schema $BIN, attempts_fence gone" "$BIN f" "$(schema) $(has_fence)"
expect_eq "nothing forced" 0 "$(sql "select count(*) from audit_log where action = 'schema.contract_forced'")"
wait_wall "n1 notices within its 10 s re-check (node.schema_after_roll_applied)" 20 \
	grep -q '"event":"node.schema_after_roll_applied"' "$NODE_DIR/n1.log"
while [ $(($(date +%s) - t_mig)) -lt 12 ]; do sleep 1; done
check "n1 still runs (no resign, no restart)" node_alive n1
check "n1 logged no node.schema_refused" bash -c "! grep -q '\"event\":\"node.schema_refused\"' '$NODE_DIR/n1.log'"
expect_eq "n1 still leads every shard" "$SHARDS" "$(sql "select count(*) from shards where leader = 'n1'")"
expect_eq "n1's /status: nothing pending" "$MIN $BIN []" "$(node_schema n1)"
fired_after() { [ "$(sql "select count(*) from attempt_ledger a join triggers t on t.id = a.trigger_id
	where a.outcome = 'succeeded' and t.scheduled_at > to_timestamp($t_mig + 2)")" -gt 0 ]; }
wait_until "n1 fires instants due after the migrate" 20 fired_after
T1=$(rfc3339_ago 0)
settled() { [ "$(sql "select count(*) from triggers where scheduled_at between '$T0' and '$T1' and state <> 'succeeded'")" = 0 ]; }
wait_until "every trigger of the window $T0 .. $T1 ends succeeded" 60 settled
echo "    figure: $(sql "select count(*) from triggers where scheduled_at between '$T0' and '$T1'") triggers in the window, $(( $(sql "select count(*) from attempt_ledger where outcome = 'succeeded'") - done_before )) succeeded after o1 stopped"
expect_exit "verify: no instant missing or doubled across the step" 0 "$PAL" verify --from "$T0" --to "$T1"
echo "    verify: $(echo "$OUT" | tail -1)"
expect_eq "no idempotency key has more than one effect at the sink" 0 \
	"$(sql "select count(*) from (select idempotency_key from sink_ledger group by 1 having count(*) > 1) d")"

# ---- a 0.3.0 node started after it refuses ------------------------------------------
PAL=$OLD_PAL start_node o2
refusing() { [ "$(curl -s -o /dev/null -w '%{http_code}' --noproxy '*' -m 2 "http://${NODE_ADMIN[o2]}/readyz")" = 503 ] &&
	curl -s --noproxy '*' -m 2 "http://${NODE_ADMIN[o2]}/readyz" | grep -q "refusing to lead"; }
wait_until "a 0.3.0 node started now answers /readyz 503, refusing to lead" 30 refusing
expect_match "naming the step's compatible_from" "compatible only from schema $BIN" \
	"$(curl -s --noproxy '*' -m 2 "http://${NODE_ADMIN[o2]}/readyz")"
expect_eq "n1 still leads every shard" "$SHARDS" "$(sql "select count(*) from shards where leader = 'n1'")"
expect_exit "a second migrate finds nothing pending and asks no ZooKeeper" 0 env -u PALISADE_ZK "$PAL" migrate
expect_match "applies nothing" "applied 0 migrations; schema at version $BIN" "$OUT"
stop_node o2
stop_node n1
finish
