#!/usr/bin/env bash
# A dependent job whose first upstream is itself dependent (docs/jobs.md
# "Chains"): the middle job's triggers are written only once its own
# upstream's instant ended, below the planning watermark of its shard, so
# the job after it must follow what is decided for the middle job (its
# dependency watermark), not that shard watermark, or every instant is
# passed before its trigger exists and the chain never runs.
#
# One job every second (ch.up) and after it: a chain of three (ch.up ->
# ch.down -> ch.chain), of four (-> ch.four), and a fan-in whose first
# upstream is the dependent one (ch.fan after ch.down and ch.up), on 4
# shards, two nodes; a kill -9 of the node leading the chain job's shard
# half-way (its shards hand over to the other) changes nothing: no instant
# planned twice, none lost, verify clean.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G1/G2 for chains of dependent jobs - every instant of a dependent upstream that ended is decided once for the job after it (a trigger, or a misfire row), across a controller handoff; verify clean"
T_START=$(date +%s)

fresh_db it_after_chain
"$PAL" migrate >/dev/null
start_sink || { fail "sink starts"; finish; exit 1; }
SHARDS=4
write_conf "$CLUSTER_CONF" "executor: {lease: 4s, heartbeat: 1s}"
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
start_node n1
start_node n2
wait_until "shards led" 20 all_shards_led || { finish; exit 1; }
tgt() { echo "{url: \"http://$SINK_ADDR/effects/$1\", timeout: 2s}"; }
cat >"$NODE_DIR/jobs.yaml" <<YAML
jobs:
  - {id: ch.up, schedule: {cron: "* * * * * ?"}, target: $(tgt up)}
  - {id: ch.down, after: [{job: ch.up}], target: $(tgt down)}
  - {id: ch.chain, after: [{job: ch.down}], target: $(tgt chain)}
  - {id: ch.four, after: [{job: ch.chain}], target: $(tgt four)}
  - {id: ch.fan, after: [{job: ch.down}, {job: ch.up}], target: $(tgt fan)}
YAML
FROM=$(date -u -d @$(($(date +%s) - 1)) +%FT%TZ)
expect_exit "apply the chains" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml" || { finish; exit 1; }
echo "  shards: $(sql "select string_agg(job_id || '=' || shard, ' ' order by job_id) from jobs")"

# The first upstream of each dependent job, and the instants that count:
# after every activation along the chain up to ch.up.
DEPS="(values ('ch.down', 'ch.up'), ('ch.chain', 'ch.down'), ('ch.four', 'ch.chain'), ('ch.fan', 'ch.down')) d(job, up)"
SINCE="(select max(effective_from) from job_versions where job_id like 'ch.%')"
ran() { sql "select count(*) from triggers where job_id = '$1' and state = 'succeeded'"; }
decided_past() { # every dependent job's watermark at least $1 s past the last activation
	has "select (count(*) = 4)::int from after_watermarks
	      where job_id in ('ch.down', 'ch.chain', 'ch.four', 'ch.fan')
	        and watermark >= $SINCE + interval '$1 seconds'"
}
wait_until "every dependent job decided 6 s past the activations" 25 decided_past 6
for j in ch.down ch.chain ch.four ch.fan; do
	wait_until "$j ran" 15 has "select count(*) from triggers where job_id = '$j' and state = 'succeeded'"
done

# A kill -9 of the node leading ch.chain's shard: its shards go to the other.
victim=$(sql "select s.leader from shards s join jobs j on j.shard = s.shard_id where j.job_id = 'ch.chain'")
other=n1; [ "$victim" = n1 ] && other=n2
kill9_node "$victim"
wait_until "$other leads every shard" 30 has "select (count(*) = $SHARDS)::int from shards where leader = '$other'"
HANDOFF=$(sql "select clock_timestamp()")
wait_until "every dependent job decided 6 s past the handoff" 25 \
	has "select (count(*) = 4)::int from after_watermarks
	      where job_id in ('ch.down', 'ch.chain', 'ch.four', 'ch.fan')
	        and watermark >= '$HANDOFF'::timestamptz + interval '6 seconds'"
for j in ch.down ch.chain ch.four ch.fan; do
	echo "  $j: $(ran "$j") succeeded"
done

# Each instant of a first upstream after the activations, up to the
# dependent job's watermark, that ended with neither a trigger of the
# dependent job nor a misfire row of it: lost.
LOST=$(sql "select coalesce(string_agg(d.job || '@' || to_char(t.scheduled_at, 'HH24:MI:SS'), ' '
                      order by d.job, t.scheduled_at), '')
  from $DEPS join after_watermarks w on w.job_id = d.job
  join triggers t on t.job_id = d.up and t.request_id is null
   and t.state in ('succeeded', 'failed', 'cancelled', 'skipped')
   and t.scheduled_at > $SINCE and t.scheduled_at <= w.watermark
 where not exists (select 1 from triggers x where x.job_id = d.job and x.scheduled_at = t.scheduled_at)
   and not exists (select 1 from misfires m where m.job_id = d.job
                    and t.scheduled_at between m.range_from and m.range_to)")
expect_eq "no instant of a dependent upstream lost by the job after it" "" "$LOST"
# ch.up succeeds every time (the sink answers 200): so does every job after
# it, once per instant, and no instant is decided twice (a trigger and a
# misfire row, or two misfire rows).
expect_eq "no misfire row of a dependent job" 0 \
	"$(sql "select count(*) from misfires where job_id in ('ch.down', 'ch.chain', 'ch.four', 'ch.fan')")"
expect_eq "each dependent job has a trigger for every instant ch.down has, up to its watermark" "" \
	"$(sql "select coalesce(string_agg(d.job || '@' || to_char(t.scheduled_at, 'HH24:MI:SS'), ' '), '')
	  from (values ('ch.chain'), ('ch.four'), ('ch.fan')) d(job) join after_watermarks w on w.job_id = d.job
	  join triggers t on t.job_id = 'ch.down' and t.state = 'succeeded' and t.scheduled_at <= w.watermark
	   and t.scheduled_at > $SINCE
	 where not exists (select 1 from triggers x where x.job_id = d.job and x.scheduled_at = t.scheduled_at)")"
check "ch.chain ran at least 10 instants" has "select (count(*) >= 10)::int from triggers where job_id = 'ch.chain' and state = 'succeeded'"
check "ch.four ran at least 10 instants" has "select (count(*) >= 10)::int from triggers where job_id = 'ch.four' and state = 'succeeded'"
check "ch.fan ran at least 10 instants" has "select (count(*) >= 10)::int from triggers where job_id = 'ch.fan' and state = 'succeeded'"
TO=$(date -u -d @$(($(date +%s) - 3)) +%FT%TZ)
out=$("$PAL" verify --config "$CLUSTER_CONF" --from "$FROM" --to "$TO" 2>&1); rc=$?
expect_eq "verify from the apply on: clean" 0 "$rc"
[ "$rc" = 0 ] || echo "$out" | head -20
echo "  took $(($(date +%s) - T_START)) s"
finish
