#!/usr/bin/env bash
# Mixed-version rolling upgrade (chaos/run.sh mixed-version-upgrade,
# docs/upgrades.md).  A 3-node cluster (controllers + executors) and the
# reference sink run the PREVIOUS release (built from its source archive,
# ops/releases/, in a build tree of its own), under load.  The new tree's migrations are applied
# while every node still runs the old binary, which must keep planning,
# claiming and committing against them; then each node is rolled to the new
# binary in turn (ops/rolling-upgrade.sh: drain, wait for the handoff, start
# the new binary, wait until ready and leading); the sink rolls to the new
# binary between the first node and the second, on the same address, with
# its own schema steps applied at its start.  Checks: verify clean over
# the roll window, one effect per key at the sink, every trigger succeeded,
# no database error logged by an old node under the new schema, each handoff
# (drain to the first plan of the new leader of each shard the drained node
# led) under one second.  The last node's roll ends with `palisade migrate`
# (ops/rolling-upgrade.sh --migrate), which applies this tree's after-roll
# steps under load: the new nodes keep leading, no restart, and verify and
# the sink still find nothing missing or doubled over the window, which goes
# on past it.  Then the schema range check: a node started under
# a database whose recorded compatible_from is beyond its schema (a fake
# future contract step) refuses to lead and says so in its log, /readyz,
# /status and a metric, and running nodes resign (drain, exit 70); the same
# future step declared expand-style is accepted and the node leads.
#
# Environment: PALISADE_OLD_TAG (the release rolled from, default v0.3.0, the
# previous one; v0.2.0 and v0.1.0 still work), PALISADE_OLD_ARCHIVE (default
# ops/releases/palisade-X.Y.Z.tar.xz of that tag), PALISADE_OLD_TREE (the build tree,
# default /tmp/palisade-X.Y.Z-build; kept and reused: its bin/ is the cache;
# PALISADE_OLD_CLEAN=1 removes it at the end), PALISADE_REFUSAL_BIN (the
# binary whose refusal is checked, default the new one: pointing it at the
# old one shows the check failing), PALISADE_MIXED_BREAK=claim-result (the
# drill's self-test: right after the migrations, palisade_claim is replaced
# by one returning one more column, as a migration that is not expand-style
# would; the old executors' claims must then be caught failing).
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G1 + G2 + G3 + G6 - a roll from the previous release to this tree under load, with this tree's migrations applied while old nodes run: no instant missing or doubled, one effect per key, handoffs under 1 s; a node outside its schema range does not lead"

t0=$SECONDS
NEW_PAL=$PAL
OLD_TAG=${PALISADE_OLD_TAG:-v0.3.0}
OLD_ARCHIVE=${PALISADE_OLD_ARCHIVE:-ops/releases/palisade-${OLD_TAG#v}.tar.xz}
OLD_TREE=${PALISADE_OLD_TREE:-/tmp/palisade-${OLD_TAG#v}-build}
REFUSAL_PAL=${PALISADE_REFUSAL_BIN:-$NEW_PAL}

# ---- the previous release's binaries (cached in the build tree's bin/) ----------
# build_release (releases.sh): from the release's source archive, not from git.
source tests/integration/releases.sh
build_old() { build_release "$OLD_TAG" "$OLD_ARCHIVE" "$OLD_TREE"; }
t=$(date +%s)
build_old || { fail "the previous release $OLD_TAG builds from $OLD_ARCHIVE in $OLD_TREE"; finish; exit 1; }
echo "    figure: old binaries $OLD_TAG ready in $(($(date +%s) - t)) s (cached after the first run)"
OLD_PAL=$OLD_TREE/bin/palisade

fresh_db it_mixed
expect_exit "the old binary migrates an empty database" 0 "$OLD_PAL" migrate
OLD_SCHEMA=$(sql "select max(version) from schema_migrations")
PALISADE_BIN=$OLD_TREE/bin start_sink || { fail "old sink starts"; finish; exit 1; }
SHARDS=8 write_conf "$CLUSTER_CONF" "executor: {lease: 4s, heartbeat: 1s}"
SHARDS=8
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
gen_sink_jobs "$NODE_DIR/jobs.yaml" 60 "*/2 * * * * ?" t1 mixed
expect_exit "old CLI applies 60 jobs" 0 "$OLD_PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
for n in r1 r2 r3; do PAL=$OLD_PAL start_node "$n"; done
wait_until "all shards led by old nodes" 30 all_shards_led
T0=$(now_rfc3339)
# the roll window holds load from before the migration: the old executors
# have run instants of it
ran_old() { [ "$(sql "select count(*) from triggers where scheduled_at >= '$T0' and state = 'succeeded'")" -gt 0 ]; }
wait_until "old executors ran the window's first instants" 20 ran_old

# ---- the new tree's migrations while every node runs the old binary --------------
mig_ts=$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)
expect_exit "new binary's plain migrate refuses its after-roll steps while old nodes run" 4 \
	"$NEW_PAL" migrate --config "$CLUSTER_CONF"
expect_match "naming the step and --before-roll" "refusing contract step 048_drop_attempts_fence.*--before-roll" "$OUT"
expect_exit "new binary applies this tree's migrations beside the old nodes (--before-roll)" 0 \
	"$NEW_PAL" migrate --before-roll
echo "    | $(grep -v '"event":"store' <<<"$OUT")"
expect_match "and says which after-roll steps it left" "after-roll step left pending: 048_drop_attempts_fence" "$OUT"
# (the old sink's functions, in the same database, are the old sink's
# until it rolls)
expect_exit "and replaces the old release's functions and triggers by sql/functions/ exactly" 0 \
	python3 tests/integration/sql_objects.py "$PALISADE_PG" sql/functions --skip "$OLD_TREE/sql/sink/functions"
if [ "${PALISADE_MIXED_BREAK:-}" = claim-result ]; then
	psql "$PALISADE_PG" -XAtq -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
DO $do$
DECLARE p oid; args text; ident text; res text; pos text;
BEGIN
	SELECT oid, pg_get_function_arguments(oid), pg_get_function_identity_arguments(oid),
	       pg_get_function_result(oid), (SELECT string_agg('$' || i, ', ') FROM generate_series(1, pronargs) i)
	  INTO p, args, ident, res, pos FROM pg_proc WHERE proname = 'palisade_claim';
	EXECUTE format('ALTER FUNCTION palisade_claim(%s) RENAME TO palisade_claim_drill', ident);
	EXECUTE format('CREATE FUNCTION palisade_claim(%s) RETURNS %s LANGUAGE sql AS %L', args,
	               regexp_replace(res, '\)$', ', drill_extra bigint)'),
	               format('SELECT c.*, 0::bigint FROM palisade_claim_drill(%s) c', pos));
END
$do$;
SQL
	echo "    | self-test: palisade_claim now returns one more column"
fi
NEW_SCHEMA=$(sql "select max(version) from schema_migrations")
DB_CF=$(sql "select max(coalesce(compatible_from, version)) from schema_migrations where version > $OLD_SCHEMA")
echo "    figure: schema $OLD_SCHEMA -> $NEW_SCHEMA; new migrations: $(sql "select string_agg(name || ' (compatible_from ' || coalesce(compatible_from::text, 'none') || ')', ', ' order by version) from schema_migrations where version > $OLD_SCHEMA")"
check "every migration after $OLD_SCHEMA declares itself compatible with schema $OLD_SCHEMA (expand style: compatible_from <= $OLD_SCHEMA; is ${DB_CF:-none})" \
	[ -z "$DB_CF" -o "${DB_CF:-0}" -le "$OLD_SCHEMA" ]
# The old nodes run under the new schema until an old executor has committed
# an attempt and an old controller has planned rows since it was in place:
# each old path has then met it once (the two checks below).
schema_in=$(sql "select clock_timestamp()")
old_ran_since() {
	[ "$(sql "select count(*) > 0 from attempt_ledger where ended_at > '$schema_in' and outcome = 'succeeded'")" = t ] &&
		[ "$(sql "select count(*) > 0 from triggers where created_at > '$schema_in'")" = t ]
}
wait_until "an old executor committed an attempt, and rows were planned, under the new schema" 30 old_ran_since
# What an old node logged as a database error since the migration.
old_errors() {
	python3 - "$mig_ts" "$NODE_DIR"/r?.log <<'PY'
import json, sys
since, bad = sys.argv[1], {"executor.claim_failed", "executor.commit_failed", "executor.checkpoint_failed",
    "executor.db_lost", "controller.tick_failed", "controller.db_error", "controller.claim_rejected",
    "executor.spec_missing", "executor.render_failed"}
seen = {}
for f in sys.argv[2:]:
    for line in open(f, errors="replace"):
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if e.get("ts", "") >= since and e.get("event") in bad:
            k = (f.rsplit("/", 1)[-1][:-4], e["event"])
            seen.setdefault(k, [0, e.get("error", "")])[0] += 1
for (n, ev), (c, err) in sorted(seen.items()):
    print(f"{n} {ev} x{c}: {err[:300]}")
PY
}
ERRS=$(old_errors)
[ -n "$ERRS" ] && echo "$ERRS" | sed 's/^/    | old node under the new schema: /'
expect_eq "old nodes log no database error under the new schema" "" "$ERRS"
after=$(sql "select count(*) from attempt_ledger where ended_at > '$mig_ts' and outcome = 'succeeded'")
check "old executors committed successful attempts after the migration ($after)" [ "${after:-0}" -gt 0 ]
# The job reference (041): 0.3.0 controllers send it with each row; 0.2.0
# (and 0.1.0) ones insert job_id alone and the fill trigger gives their rows
# the ref; migrate's backfill gave it to the rows of before.
old_rows=$(sql "select count(*) || ' ' || count(*) filter (where t.job_ref is distinct from j.ref)
                from triggers t join jobs j using (job_id) where t.created_at > '$mig_ts'")
check "old controllers' rows since the migration carry their job's ref (rows, wrong: $old_rows)" \
	[ "${old_rows% *}" -gt 0 -a "${old_rows#* }" = 0 ]

# The advertisement, as the new CLI reads it: a node of 0.1.0 advertises
# no range ("unknown"); one of a later release its own, up to its schema.
ranges() {
	"$NEW_PAL" status --config "$CLUSTER_CONF" --output json 2>/dev/null | python3 -c '
import json, sys
s = json.load(sys.stdin)
for n in sorted(s.get("nodes", []), key=lambda n: n["id"]):
    r = n.get("schema_range")
    print(n["id"], n.get("version"), r if isinstance(r, str) else "%d-%d/cf%d" % (r["min"], r["max"], r["compatible_from"]))
'
}
R=$(ranges)
echo "$R" | sed 's/^/    | before the roll: /'
if [ "$OLD_TAG" = v0.1.0 ]; then
	expect_eq "the new CLI reads every old node's schema range as unknown" 3 "$(echo "$R" | grep -c ' unknown$')"
else
	expect_eq "the new CLI reads every old node's schema range, up to schema $OLD_SCHEMA" 3 \
		"$(echo "$R" | grep -c " ${OLD_TAG#v} [0-9]*-$OLD_SCHEMA/cf[0-9]*$")"
fi

# ---- the roll: one node at a time, old -> new --------------------------------------
cat >"$NODE_DIR/restart.sh" <<SH
#!/usr/bin/env bash
id=\$1
case \$id in
r1) admin=${NODE_ADMIN[r1]} ;; r2) admin=${NODE_ADMIN[r2]} ;; r3) admin=${NODE_ADMIN[r3]} ;;
*) exit 1 ;;
esac
setsid "$NEW_PAL" node --config "$CLUSTER_CONF" --node-id "\$id" --admin "\$admin" >>"$NODE_DIR/\$id.log" 2>&1 </dev/null &
echo \$! >"$NODE_DIR/\$id.pid"
SH
# handoff NODE SINCE SHARDS: ms from NODE's node.draining (after SINCE) to
# the first controller.shard_planned of each shard in SHARDS on another node.
handoff() {
	python3 - "$1" "$2" "$3" "$NODE_DIR" <<'PY'
import json, sys, glob, datetime
node, since, shards, d = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
want = [int(x) for x in shards.split(",") if x]
ts = lambda s: datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()
def events(f):
    for line in open(f, errors="replace"):
        try:
            yield json.loads(line)
        except ValueError:
            pass
drain = min((e["ts"] for e in events(f"{d}/{node}.log") if e.get("event") == "node.draining" and e["ts"] >= since), default=None)
if drain is None:
    print("nodrain"); sys.exit()
first = {}
for f in glob.glob(f"{d}/r?.log"):
    if f.endswith(f"/{node}.log"):
        continue
    for e in events(f):
        if e.get("event") == "controller.shard_planned" and e["ts"] > drain and e.get("shard") in want:
            s = e["shard"]
            if s not in first or e["ts"] < first[s]:
                first[s] = e["ts"]
out = []
for s in want:
    out.append(f"{s}:{round((ts(first[s]) - ts(drain)) * 1000) if s in first else 'none'}")
print(" ".join(out))
PY
}
# roll_sink: the reference sink from the old binary to this tree's, on the
# same address, while old and new nodes call it: SIGTERM (it finishes the
# requests it has), the new binary applies the sink schema's new steps at
# start and serves the keys the old one recorded.  Calls made in the gap
# find no listener (not sent: retried).
roll_sink() {
	local old=$SINK_PID t0 t1 v0
	v0=$(sql "select max(version) from sink_schema_migrations")
	t0=$(date +%s%3N)
	kill -TERM "$old" 2>/dev/null
	wait "$old" 2>/dev/null
	"$PALISADE_BIN/palisade-sink" --listen "$SINK_ADDR" --admin "$SINK_ADMIN" >>"$NODE_DIR/sink.log" 2>&1 &
	SINK_PID=$!
	for _ in $(seq 1 100); do
		curl -sf --noproxy '*' "http://$SINK_ADMIN/healthz" >/dev/null 2>&1 && break
		kill -0 "$SINK_PID" 2>/dev/null || break
		sleep 0.1
	done
	t1=$(date +%s%3N)
	check "the new sink serves on the old sink's address" curl -sf -o /dev/null --noproxy '*' "http://$SINK_ADMIN/healthz"
	check "the sink runs this tree's binary" [ "$(readlink -f /proc/$SINK_PID/exe)" = "$(readlink -f "$PALISADE_BIN/palisade-sink")" ]
	local v1
	v1=$(sql "select max(version) from sink_schema_migrations")
	echo "    figure: sink rolled in $((t1 - t0)) ms (stop to healthy), sink schema $v0 -> $v1"
	expect_eq "the new sink applied its schema steps" "$(ls sql/sink/*.sql | wc -l)" "$v1"
}
old_pids="${NODE_PID[r1]} ${NODE_PID[r2]} ${NODE_PID[r3]}"
HANDOFFS=()
for n in r1 r2 r3; do
	# The sink rolls between the first and the second node: old and new
	# nodes call the old sink, then the new one.
	[ "$n" = r2 ] && roll_sink
	led=$(shards_of "$n")
	since=$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)
	# the last one ends with the final migrate (--migrate)
	OUT=$(bash ops/rolling-upgrade.sh --config "$CLUSTER_CONF" --palisade "$NEW_PAL" --timeout 60 \
		--restart "bash $NODE_DIR/restart.sh {node}" $([ "$n" = r3 ] && echo --migrate) "$n" 2>&1)
	rc=$?
	echo "$OUT" | grep -v '^rolling-upgrade: nodes:' | sed 's/^/    | /'
	[ -f "$NODE_DIR/$n.pid" ] && NODE_PID[$n]=$(cat "$NODE_DIR/$n.pid")
	expect_eq "roll of $n to the new binary (exit)" 0 "$rc"
	h=$(handoff "$n" "$since" "$led")
	echo "    figure: handoff $n (led ${led:-none}): shard:ms $h"
	for x in $h; do HANDOFFS+=("$n/$x"); done
done
t_migrated=$(date +%s)
expect_match "the final migrate of the roll applied the after-roll step under load" \
	"rolling-upgrade: migrate: applied after-roll step: 048_drop_attempts_fence" "$OUT"
expect_eq "attempts_fence is gone" "t" "$(sql "select to_regclass('attempts_fence') is null")"
for p in $old_pids; do
	check "old process $p has exited" bash -c "! kill -0 $p 2>/dev/null"
done
R=$(ranges)
echo "$R" | sed 's/^/    | after the roll: /'
expect_eq "every node advertises its schema range after the roll" 0 "$(echo "$R" | grep -c ' unknown$')"
worst=0 over=0 none=0
for x in "${HANDOFFS[@]}"; do
	ms=${x##*:}
	case $ms in none) none=$((none + 1)); continue ;; esac
	[ "$ms" -gt "$worst" ] && worst=$ms
	[ "$ms" -ge 1000 ] && over=$((over + 1))
done
echo "    figure: handoffs ${#HANDOFFS[@]}, max ${worst} ms, >= 1 s: $over, not measured: $none (load average $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores)"
check "at least one handoff per controller measured" [ "${#HANDOFFS[@]}" -ge 3 ]
expect_eq "every shard a drained node led was planned by its new leader" 0 "$none"
expect_eq "every handoff under one second" 0 "$over"

# The roll window goes on past the roll: until a new node has ended a call
# of an instant that fell due after the last roll.
t_rolled=$(sql "select clock_timestamp()")
rolled_work() { [ "$(sql "select count(*) from attempt_ledger a join triggers t on t.id = a.trigger_id where a.outcome = 'succeeded' and t.scheduled_at > '$t_rolled'")" -gt 0 ]; }
wait_until "a new node ends a call of an instant due after the roll" 30 rolled_work
# The window goes on past the nodes' 10 s schema re-check since the final
# migrate: they keep leading under the after-roll step, with no restart.
while [ $(($(date +%s) - t_migrated)) -lt 12 ]; do sleep 1; done
for n in r1 r2 r3; do
	check "$n (this tree) still runs after the final migrate, no restart" node_alive "$n"
	expect_eq "$n's /status: no after-roll step pending" "[]" \
		"$(curl -s --noproxy '*' -m 2 "http://${NODE_ADMIN[$n]}/status" | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["schema"].get("pending_after_roll")))' 2>/dev/null)"
done
check "each logged node.schema_after_roll_applied" \
	[ "$(grep -l '"event":"node.schema_after_roll_applied"' "$NODE_DIR"/r?.log | wc -l)" = 3 ]
T1=$(rfc3339_ago 0)
settled() { [ "$(sql "select count(*) from triggers where scheduled_at between '$T0' and '$T1' and state <> 'succeeded'")" = 0 ]; }
wait_until "every trigger planned in the roll window ends succeeded" 60 settled
echo "    figure: $(sql "select count(*) from triggers where scheduled_at between '$T0' and '$T1'") triggers in the roll window $T0 .. $T1"
expect_exit "verify: no instant missing or doubled across the mixed-version roll" 0 "$NEW_PAL" verify --from "$T0" --to "$T1"
echo "    verify: $(echo "$OUT" | tail -1)"
expect_eq "no idempotency key has more than one effect at the sink" 0 \
	"$(sql "select count(*) from (select idempotency_key from sink_ledger group by 1 having count(*) > 1) d")"
expect_eq "no trigger row lacks its job's ref after the roll" 0 \
	"$(sql "select count(*) from triggers t join jobs j using (job_id) where t.job_ref is distinct from j.ref")"
expect_exit "after the roll the database runs this tree's functions, the scheduler's and the sink's" 0 \
	python3 tests/integration/sql_objects.py "$PALISADE_PG" sql/functions sql/sink/functions

# ---- the schema range: a future contract step is refused, an expand step run -------
BIN_SCHEMA=$(sql "select max(version) from schema_migrations") # the tail applied: this binary's
# Running nodes: a contract step applied beside them (beyond their schema)
# makes each resign within its re-check interval: drain, exit 70.
t=$(date +%s%3N)
sql "insert into schema_migrations (version, name, compatible_from) values (9999, '9999_future_contract', 9999)"
# (its own loop variable: bash's dynamic scope would hand wait_until's
# poll counter `n` to a loop over `n`)
gone() { local x; for x in r1 r2 r3; do kill -0 "${NODE_PID[$x]}" 2>/dev/null && return 1; done; return 0; }
wait_until "every running node resigns under a future contract step (drains and exits)" 40 gone &&
	echo "    figure: all three resigned $(($(date +%s%3N) - t)) ms after the contract step was recorded (re-check every 10 s)"
for n in r1 r2 r3; do
	check "$n logged node.schema_refused and exited 70 after its drain" \
		grep -q '"event":"node.stopped","exit":70' "$NODE_DIR/$n.log"
	node_alive "$n" || unset "NODE_PID[$n]" # a node still running is stopped at the end
done
# What PostgreSQL says of the shards (leader, epoch, watermark): it only
# changes when someone plans or claims a shard.
shard_snap() { sql "select string_agg(shard_id || ':' || coalesce(leader, '-') || ':' || epoch || ':' || coalesce(watermark::text, '-'), ' ' order by shard_id) from shards"; }
SNAP=$(shard_snap)
# An r3 that failed to resign is stopped now: starting another r3 over its
# pid would leave it running after the test (it did, for 75 minutes, when a
# stale binary failed the check).
stop_node r3
PAL=$REFUSAL_PAL start_node r3
A=${NODE_ADMIN[r3]}
refusing() { curl -s --noproxy '*' -m 2 "http://$A/readyz" | grep -q "refusing to lead"; }
wait_until "r3 answers /readyz with the refusal" 20 refusing
body=$(curl -s --noproxy '*' -m 2 "http://$A/readyz")
echo "    | /readyz: $body"
check "r3 keeps running under the out-of-range schema" node_alive r3
expect_match "/readyz names the range" "compatible only from schema 9999" "$body"
st=$(curl -s --noproxy '*' -m 2 "http://$A/status")
expect_eq "/status: schema.supported false, refused names the cause" "false 1" \
	"$(echo "$st" | python3 -c 'import json,sys; s=json.load(sys.stdin)["schema"]; print(str(s.get("supported")).lower(), int("9999" in s.get("refused", "")))' 2>/dev/null)"
expect_eq "metric palisade_node_schema_refused is 1" 1 "$(curl -s --noproxy '*' "http://$A/metrics" | awk '$1 == "palisade_node_schema_refused" {print $2}')"
check "the log says so (node.schema_refused)" grep -q '"event":"node.schema_refused"' "$NODE_DIR/r3.log"
sleep 3
expect_eq "nobody claims or plans a shard while r3 refuses (shards unchanged)" "$SNAP" "$(shard_snap)"
# No ZooKeeper session yet (the CLI, refusing the schema too, cannot list
# the nodes): /status has no elected_shards without one.
expect_eq "r3 is no candidate: no ZooKeeper session, no election" "absent" \
	"$(curl -s --noproxy '*' -m 2 "http://$A/status" | python3 -c 'import json,sys; print("elected_shards" in json.load(sys.stdin) and "present" or "absent")' 2>/dev/null)"
# The same future step declared expand-style (compatible from this binary's
# schema): the node accepts it and takes its share.
sql "update schema_migrations set name = '9999_future_expand', compatible_from = $BIN_SCHEMA where version = 9999"
ready3() { curl -sf --noproxy '*' -m 2 "http://$A/readyz" >/dev/null; }
wait_until "r3 accepts a newer schema of expand steps and becomes ready" 30 ready3
leads3() { [ "$(shard_snap)" != "$SNAP" ] && curl -s --noproxy '*' -m 2 "http://$A/status" |
	python3 -c 'import json,sys; sys.exit(0 if json.load(sys.stdin).get("elected_shards") else 1)' 2>/dev/null; }
wait_until "r3 is elected and claims shards in PostgreSQL again" 30 leads3
check "the log names the newer schema (node.schema_newer)" grep -q '"event":"node.schema_newer"' "$NODE_DIR/r3.log"
expect_eq "metric palisade_node_schema_refused back to 0" 0 "$(curl -s --noproxy '*' "http://$A/metrics" | awk '$1 == "palisade_node_schema_refused" {print $2}')"
sql "delete from schema_migrations where version = 9999"
if [ "${PALISADE_OLD_CLEAN:-0}" = 1 ]; then
	rm -rf "$OLD_TREE" "$OLD_TREE.lock" "$OLD_TREE.build.log"
fi
echo "    figure: test took $((SECONDS - t0)) s (from $OLD_TAG)"
finish
