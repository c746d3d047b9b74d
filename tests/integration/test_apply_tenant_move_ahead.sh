#!/usr/bin/env bash
# A job moved from a live tenant into a shadow one while an executor holds
# one of its instants claimed ahead (claim_ahead 7 s, its call not
# started): the apply asks that row to pause (running -> pausing, as the
# shadow command does), the executor hands it back at its instant without
# a call, and the old system, which owns the instant from the apply on,
# runs it alone.  The executor learns of the pause at once (NOTIFY
# palisade_handback: it renews its leases), not at its next heartbeat.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "a job moved into a shadow tenant: palisade calls none of its instants after the apply, one claimed ahead included"
it_db
sink_up
SHARDS=1
# The apply must commit before the claimed instant: claimed as far ahead
# as the default lease (30 s) allows the executor (a quarter of it), the
# instant picked 5 s or more ahead leaves the apply (a process, ZooKeeper,
# a transaction) seconds on a loaded box (the lookahead past it, so that
# the instant is planned to be claimed; the instant before it may be
# claimed ahead too, and moved with it).  The default heartbeat (10 s):
# the executor hears of the pause from the apply's NOTIFY, not from a
# renewal due in time.
LOOKAHEAD=15s write_exec_conf "$CLUSTER_CONF" "executor: {claim_ahead: 7s}"
lead_shards 40 f1
expect_exit "tenant t2 in shadow" 0 "$PAL" shadow --config "$CLUSTER_CONF" --tenant t2 --reason s
L=lv.job-1
gen_sink_jobs "$NODE_DIR/l1.yaml" 1 "*/5 * * * * ?" t1 lv
expect_exit "apply L (tenant t1, live), every 5 s" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/l1.yaml"
sleep 6
ahead() { [ "$(sql "select count(*) from triggers where job_id = '$L' and state = 'running' and scheduled_at > clock_timestamp() + interval '6 s'")" -ge 1 ]; }
wait_until "an instant of L claimed ahead" 20 ahead
I=$(sql "select extract(epoch from scheduled_at)::bigint from triggers where job_id = '$L' and state = 'running' and scheduled_at > clock_timestamp() + interval '5 s' order by scheduled_at limit 1")
gen_sink_jobs "$NODE_DIR/l2.yaml" 1 "*/5 * * * * ?" t2 lv
expect_exit "apply L into t2 (shadow) before that instant" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/l2.yaml"
A=$(date +%s.%N)
echo "    claimed instant I = now + $(( I - ${A%.*} )) s; its row: $(sql "select state || ' ' || tenant from triggers where job_id = '$L' and scheduled_at = to_timestamp($I)")"
expect_eq "palisade's own view: I is shadow (the old system's)" 0 \
	"$(sql "select palisade_trigger_live('$L', 't2', 'default', to_timestamp($I))::int")"
sleep $(( I + 4 - ${A%.*} ))
echo "    row of I now: $(sql "select state || ' ' || tenant from triggers where job_id = '$L' and scheduled_at = to_timestamp($I)")"
expect_eq "palisade did not call I (claimed ahead before the move)" 0 \
	"$(sql "select count(*) from sink_effects where idempotency_key like '$L/%' and scheduled_at = to_timestamp($I)")"
expect_eq "its row handed back (paused), and the apply's trigger.shadow audit row names it" "paused 1" \
	"$(sql "select t.state || ' ' || (select count(*) from audit_log a where a.action = 'trigger.shadow' and a.scope = 'job:$L' and (a.details ->> 'ahead_to_pausing')::int >= 1 and a.details -> 'trigger_ids' @> to_jsonb(t.id)) from triggers t where t.job_id = '$L' and t.scheduled_at = to_timestamp($I)")"
stop_node f1
finish
