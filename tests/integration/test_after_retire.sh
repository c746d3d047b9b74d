#!/usr/bin/env bash
# A dependent job deleted and applied again later has no instant in the
# time it was retired: the re-applied version starts after its own
# activation, not from the watermark the job had before its deletion
# (which would plan, and run at once, every upstream instant of the
# retired time).  verify agrees: those instants are nobody's.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G1/G7 across a dependent job's retirement: no trigger for the upstream instants while it was retired, planned again after the re-apply, verify clean over it all"

it_db
sink_up
trap 'stop_all_nodes; stop_sink' EXIT
SHARDS=2
LOOKAHEAD=1s MISFIRE=3s write_exec_conf "$CLUSTER_CONF" "executor: {lease: 5s, heartbeat: 1s}"
apply_jobs apply <<YAML || { finish; exit 1; }
jobs:
  - {id: rt.u, schedule: {cron: "* * * * * ?"}, target: {url: "http://$SINK_ADDR/effects/u"}}
  - {id: rt.b, after: [{job: rt.u, within: 1h}], target: {url: "http://$SINK_ADDR/effects/b"}}
YAML
from=$(date -u +%Y-%m-%dT%H:%M:%SZ)
lead_shards 20 h1 &&
	wait_until "rt.b runs after rt.u" 20 has "select count(*) - 2 from trigger_jobs where job_id = 'rt.b'" ||
	{ finish; exit 1; }
expect_exit "delete rt.b" 0 "$PAL" delete --config "$CLUSTER_CONF" --reason "retire it" rt.b
END=$(sql "select extract(epoch from retired_at)::bigint from jobs where job_id = 'rt.b'")
# rt.u goes on succeeding while rt.b is retired
wait_until "rt.u ran 4 instants after the retirement" 15 \
	has "select count(*) - 3 from trigger_jobs where job_id = 'rt.u' and state = 'succeeded' and scheduled_at >= to_timestamp($END)"
expect_exit "re-apply rt.b" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
V=$(sql "select latest_version from jobs where job_id = 'rt.b'")
wait_until "rt.b runs again, from v$V" 20 \
	has "select count(*) - 1 from trigger_jobs where job_id = 'rt.b' and version = $V and state = 'succeeded'"
BACK=$(sql "select extract(epoch from effective_from)::bigint from job_versions where job_id = 'rt.b' and version = $V")
echo "    figure: retired at $END, re-activated at $BACK ($((BACK - END)) s of rt.u instants in between)"
expect_eq "no trigger of rt.b for an instant while it was retired" 0 \
	"$(sql "select count(*) from trigger_jobs where job_id = 'rt.b' and scheduled_at >= to_timestamp($END) and scheduled_at <= to_timestamp($BACK) and state <> 'cancelled'")"
expect_eq "nor a misfire row" 0 \
	"$(sql "select count(*) from misfires where job_id = 'rt.b' and range_to >= to_timestamp($END) and range_from <= to_timestamp($BACK)")"
sleep 2
expect_exit "verify over the retirement and after it" 0 \
	"$PAL" verify --config "$CLUSTER_CONF" --from "$from" --to "$(date -u -d @$(($(date +%s) - 2)) +%Y-%m-%dT%H:%M:%SZ)"
echo "    figure: test took $SECONDS s"
finish
