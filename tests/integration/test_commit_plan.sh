#!/usr/bin/env bash
# A result commit finds its batch's triggers by their key, whatever the
# statistics say.  The executor's commit connection keeps the generic plan
# of its prepared commit for its life.  Made while the statistics of the
# day's partition counted no live trigger, that plan read the batch's rows
# through triggers_live (the partial index of live triggers, whose
# predicate the commit's state test implied) and compared every live
# trigger of the cluster with every id of the batch: live x batch per
# commit, the server's CPU per trigger up by half with three executor
# nodes (docs/performance.md, "Plans on queue tables").  This
# test makes the plan on a partition analysed while empty (autovacuum off
# for it, so the statistics stay stale), with 3,000 triggers running for
# another node, then commits 512 claimed triggers in 8 batches on one
# connection (the generic plan is used from the sixth) and counts the
# entries of the partition's triggers_live index read meanwhile
# (pg_stat_user_indexes).  Without the fix: 3,500 per commit.
source tests/integration/lib.sh
guarantee "performance - a result commit whose plan was made while no trigger was live reads its batch by key, not every live trigger of the cluster"

PROBE=${PALISADE_ITESTS:-build/itests}/commit_probe
fresh_db it_commit_plan
"$PAL" migrate >/dev/null
stale_partition plan.job
claim() { # NODE LIMIT: id fence at of the claimed triggers
	sql "SELECT id, fence, at FROM palisade_claim('$1', 300000, $2, 0, '{}', '{}', '{}', '{}', '{}', '{}', '{}')
	     WHERE id IS NOT NULL" | tr '|' ' '
}
sql "$(due_sql plan.job 3000)" >/dev/null
for i in 1 2 3; do claim other-node 1000 >/dev/null; done
sql "$(due_sql plan.job 512 10000)" >/dev/null
{ claim probe-node 256; claim probe-node 256; } >"$PALISADE_TEST_TMP/claimed.txt"
expect_eq "3,512 triggers running" 3512 "$(sql "SELECT count(*) FROM triggers WHERE state = 'running'")"
expect_eq "the statistics still count no trigger in the partition" 0 \
	"$(sql "SELECT reltuples::bigint FROM pg_class WHERE relname = '$PART'")"
live_read() {
	sql "SELECT coalesce(sum(idx_tup_read), 0) FROM pg_stat_user_indexes
	     WHERE relname = '$PART' AND indexrelname LIKE '%lease_until%'"
}
r0=$(live_read)
out=$("$PROBE" --pg "$PALISADE_PG" --batch 64 <"$PALISADE_TEST_TMP/claimed.txt")
r1=""
for i in $(seq 1 20); do # the probe's counters reach the view when its session ends
	r1=$(live_read)
	[ "$r1" != "$r0" ] && break
	sleep 0.1
done
echo "    figure: $out; triggers_live entries read by 8 commits: $((r1 - r0))"
expect_eq "the 512 results are committed" "committed 512" "$out"
expect_eq "512 triggers succeeded" 512 "$(sql "SELECT count(*) FROM triggers WHERE state = 'succeeded'")"
check "the commits read fewer than 3,000 triggers_live entries in all (not every live trigger per commit)" \
	[ "$((r1 - r0))" -lt 3000 ]
finish
