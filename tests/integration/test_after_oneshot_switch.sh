#!/usr/bin/env bash
# A one-shot upstream (up.u) that ran is applied again as a recurring job
# (every 10 s) while its controller runs.  Its new version takes over at
# its apply, below the shard's watermark (a version after a one-shot), and
# its instants from there are planned in the activating tick.  Its
# dependent up.b (after: up.u) and up.c (after: up.b, a chain) had their
# dependency watermarks moved up to the shard's watermark while up.u had
# no instant left: that tick moves them back down to the activation, so
# every instant up.u runs after the apply has up.b's and up.c's trigger or
# misfire, and verify is clean.  (Left above, up.b got nothing for up.u's
# instants up to the old watermark, and verify reported them missing.)
# A lookahead of 30 s puts three of up.u's instants between the apply and
# the watermark; the test waits for the watermark and 25 s more.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G1 a dependent job's instants where its one-shot upstream turns recurring below the watermark: each has a trigger or a misfire"
MISFIRE=200s LOOKAHEAD=30s badserver_cluster it_after_oneshot_switch 1
iso() { date -u -d "@$1" +%FT%TZ; }
C="  - {id: up.c, after: [{job: up.b, within: 1h}], target: $(url log/c)}"
oneshot_up "$C" || { finish; exit 1; }
wait_until "up.c ran after up.b" 60 has "select count(*) from triggers where job_id = 'up.c' and state = 'succeeded'"
A2=$(date -u +%s)
up_jobs "*/10 * * * * ?" "$C" | apply_jobs "apply up.u every 10 s" || { finish; exit 1; }
WM=$(sql "select extract(epoch from watermark)::bigint from shards")
wait_until "up.u's second version activated" 20 has "select count(*) from jobs where job_id = 'up.u' and active_version = 2"
echo "    up.u v2 from apply + $(( $(sql "select extract(epoch from effective_from)::bigint from job_versions where job_id = 'up.u' and version = 2") - A2 )) s, the watermark at apply + $((WM - A2)) s"
sleep $(( WM - $(date -u +%s) + 25 ))
# the instants 10 s old or more: up.u keeps running every 10 s, and one
# that has just succeeded may not have its dependent's trigger yet
OLD=$(( $(date -u +%s) - 10 ))
for d in up.b up.c; do
	up=$([ $d = up.b ] && echo up.u || echo up.b)
	expect_eq "every $up instant run after the apply (to 10 s ago) has $d's trigger or misfire" 0 \
		"$(sql "select count(*) from triggers u where u.job_id = '$up' and u.state = 'succeeded' and u.scheduled_at > to_timestamp($A2)
		         and u.scheduled_at <= to_timestamp($OLD)
		         and not exists (select 1 from triggers b where b.job_id = '$d' and b.scheduled_at = u.scheduled_at)
		         and not exists (select 1 from misfires m where m.job_id = '$d' and u.scheduled_at between m.range_from and m.range_to)")"
done
expect_exit "verify from the apply on: clean" 0 "$PAL" verify --from "$(iso $A2)" --to "$(iso $(( $(date -u +%s) - 5 )))"
stop_all_nodes
finish
