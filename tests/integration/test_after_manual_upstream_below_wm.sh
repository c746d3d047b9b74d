#!/usr/bin/env bash
# trigger --at of a dependent job while its upstream's new version is
# stored but not activated yet (no live controller), at instants that only
# the new version has but that lie below the upstream shard's stored
# watermark: the controller switches to the new version at the watermark
# (the active version has no `end`), so the active version (daily) owns
# them and has none there: nobody runs the upstream there and the
# dependency planner never plans the job there.  Such an instant is not
# refused, a past one (after the apply) nor one still to come; the
# instants above the watermark are (test_after_manual_upstream_pending).
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "trigger --at of a dependent job accepts an instant of its upstream's stored version below where a controller switches to it"
MISFIRE=200s LOOKAHEAD=90s badserver_cluster it_after_manual_upstream_below_wm 1
up_jobs "0 0 0 * * ?" | apply_jobs "apply v1 (daily)" || { finish; exit 1; }
lead_shards 20 b1 || { finish; exit 1; }
wait_until "both activated" 20 has "select (count(*) = 2)::int from jobs where active_version = 1"
sleep 3
stop_all_nodes
sleep 11 # no shard row touched in the last 10 s: the apply does not wait
applied=$(date -u +%s)
up_jobs "*/10 * * * * ?" | apply_jobs "apply v2 (every 10 s), no controller running" || { finish; exit 1; }
# P: the first v2 instant after the apply, once past; T: the next one, still to come
P=$(( (applied + 10) / 10 * 10 ))
sleep $(( P - $(date -u +%s) + 1 ))
T=$(( P + 10 ))
PS=$(date -u -d "@$P" +%FT%TZ)
TS=$(date -u -d "@$T" +%FT%TZ)
WM=$(sql "select extract(epoch from max(watermark))::bigint from shards")
echo "  applied=$applied P=$PS T=$TS stored watermark=$WM"
expect_eq "P and T are below the stored watermark (v2 takes over there)" 1 "$(( P > applied && T < WM ))"
"$PAL" trigger --job up.b --at "$PS" --reason x --request-id m1 >"$NODE_DIR/tr1.out" 2>&1
rc1=$?
sed 's/^/    trigger P: /' "$NODE_DIR/tr1.out"
sent2=$(date -u +%s)
"$PAL" trigger --job up.b --at "$TS" --reason x --request-id m2 >"$NODE_DIR/tr2.out" 2>&1
rc2=$?
sed 's/^/    trigger T: /' "$NODE_DIR/tr2.out"
expect_eq "trigger up.b --at P (past, below the watermark) is accepted" 0 "$rc1"
expect_eq "trigger up.b --at T (to come, below the watermark) is accepted" 0 "$rc2"
check "... T was still to come when it was sent" test "$sent2" -lt "$T"
expect_eq "no refusal claiming the upstream runs there" 0 \
	"$(cat "$NODE_DIR/tr1.out" "$NODE_DIR/tr2.out" | grep -c "stored but not activated yet")"
lead_shards 20 b2 || { finish; exit 1; }
wait_until "up.u's v2 activated" 20 has "select count(*) from jobs where job_id = 'up.u' and active_version = 2"
echo "  up.u v2 effective_from: $(sql "select effective_from from job_versions where job_id = 'up.u' and version = 2")"
sleep $(( T - $(date -u +%s) + 8 ))
expect_eq "nobody plans up.u at P or T (v1 owns them and has neither)" 0 \
	"$(sql "select count(*) from triggers where job_id = 'up.u' and scheduled_at in ('$PS', '$TS')")"
expect_eq "nobody plans up.b at P or T but the manual runs" 0 \
	"$(sql "select count(*) from triggers where job_id = 'up.b' and scheduled_at in ('$PS', '$TS') and request_id is null")"
expect_eq "up.b has one effect at P and one at T (the manual runs)" "1 1" \
	"$(sql "select count(*) filter (where scheduled_at = '$PS') || ' ' || count(*) filter (where scheduled_at = '$TS') from triggers where job_id = 'up.b' and state in ('pending', 'running', 'succeeded')")"
stop_all_nodes
finish
