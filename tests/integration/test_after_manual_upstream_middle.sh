#!/usr/bin/env bash
# An upstream (up.u) whose active version is a one-shot that ran gets two
# versions while no controller runs: v2 (every 10 s), then v3 (the same
# instants spelled otherwise).  The controller back activates v2 where it
# was stored (a version after a one-shot), below the stored watermark, and
# v3 at the watermark, so v2 runs its instants in between.  trigger --at of
# the dependent up.b at such an instant T is refused (the dependency
# planner runs up.b there), and up.b has one effect at T.  (Judged by v3
# and the version before it only, v2 was left out and T looked like
# nobody's instant: the manual run was accepted, a second effect at T.)
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "trigger --at of a dependent job refuses an instant that a middle version of its upstream, not activated yet, will run"
MISFIRE=200s LOOKAHEAD=90s badserver_cluster it_after_manual_upstream_middle 1
iso() { date -u -d "@$1" +%FT%TZ; }
oneshot_up || { finish; exit 1; }
stop_all_nodes
A2=$(date -u +%s)
up_jobs "*/10 * * * * ?" | apply_jobs "apply v2 (every 10 s), no controller" || { finish; exit 1; }
up_jobs "0/10 * * * * ?" | apply_jobs "apply v3 (the same instants), no controller" || { finish; exit 1; }
WM=$(sql "select extract(epoch from watermark)::bigint from shards")
T=$(( ($(date -u +%s) + 20) / 10 * 10 ))
expect_eq "T is after v2's apply and below the stored watermark" 1 "$(( T > A2 && T < WM ))"
expect_exit "trigger up.b --at T: refused" 4 "$PAL" trigger --job up.b --at "$(iso $T)" --reason x --request-id m1
lead_shards 20 b2 || { finish; exit 1; }
wait_until "up.b ran at T" $(( T - $(date -u +%s) + 40 )) has \
	"select count(*) from triggers where job_id = 'up.b' and scheduled_at = to_timestamp($T) and state = 'succeeded'"
expect_eq "up.b has one effect at T" 1 \
	"$(sql "select count(*) from triggers where job_id = 'up.b' and scheduled_at = to_timestamp($T) and state in ('pending', 'running', 'succeeded')")"
stop_all_nodes
finish
