#!/usr/bin/env bash
# What a claim looks up beside its candidates, counted by PostgreSQL
# (pg_stat_user_indexes.idx_scan: one per index descent, so one per key of
# an array): a claim of first attempts, with no gate paused, must look up
# no gate scope (the pick probed four per candidate) and no attempt in the
# rows it claims (it probed the primary key of every partition of triggers
# for every claimed trigger, to find attempts that rows of first claims do
# not hold).  What is left are its read of the claimed rows (a descent
# per claimed trigger, in the partitions its candidates' instants span: it
# probed every partition once per claimed trigger, 18 of them under the
# default retention) and the door's update, by key (one descent per
# claimed trigger, in its own partition).  Then, with some gate
# paused, the scopes are looked up again, and a paused job claims nothing.  docs/performance.md, "Steps in the
# database's work".
source tests/integration/lib.sh
guarantee "performance - a claim of first attempts with no gate paused looks up no gate scope and no attempt of the rows it claims, and reads and updates them by key: two primary-key descents per claimed trigger whatever the number of partitions, not one more per partition; a paused gate still stops its job"
t0=$SECONDS

it_db || { echo "  migrate failed"; exit 1; }
f=$PALISADE_TEST_TMP/probes.yaml
printf 'jobs:\n  - {id: probe.job, schedule: {cron: "0 0 0 1 1 ? 2099"}, target: {url: "http://127.0.0.1:9/e"}}\n' >"$f"
"$PAL" apply "$f" >/dev/null || { echo "  apply failed"; exit 1; }
sql "UPDATE job_versions SET effective_from = now(), activated_at = now(), activated_epoch = 0" >/dev/null
sql "INSERT INTO triggers (job_id, version, scheduled_at, partition, source, tenant, resource_group, due_at, shard)
     SELECT 'probe.job', 1, t, 0, 'schedule', 'default', 'default', t, 0
     FROM (SELECT now() - interval '1 minute' + g * interval '1 millisecond' AS t
           FROM generate_series(1, 600) g) x" >/dev/null
sql "ANALYZE triggers" >/dev/null
P=$(sql "SELECT count(*) FROM pg_partition_tree('triggers') WHERE isleaf")
# the partitions the due instants fall in (two when they straddle midnight)
Q=$(sql "SELECT count(DISTINCT tableoid) FROM triggers")

# descents WHERE: index descents so far of the indexes WHERE selects (the
# claims ran in sessions that ended, which flushed their counts).
descents() {
	sql "SELECT pg_stat_force_next_flush(); SELECT coalesce(sum(idx_scan), 0) FROM pg_stat_user_indexes WHERE $1" | tail -1
}
claim() { # LIMIT -> triggers claimed, as an executor's claim (generic plans: the second of two calls)
	sql_run "claim(): palisade_claim_batch twice, LIMIT $1" psql "$PALISADE_PG" -XAtq -v ON_ERROR_STOP=1 -c "SET jit = off" \
		-c "SELECT count(*) FROM palisade_claim_batch('probe-node', 30000, 1, 0, '{}', '{}', '{}', '{}', '{}', '{}', '{}', true) WHERE id IS NOT NULL" \
		-c "SELECT count(*) FROM palisade_claim_batch('probe-node', 30000, $1, 0, '{}', '{}', '{}', '{}', '{}', '{}', '{}', true) WHERE id IS NOT NULL" |
		tail -1
}
GATES="relname = 'gates'"
PKEYS="relname LIKE 'triggers\\_p%' AND indexrelname LIKE '%\\_pkey'"

g0=$(descents "$GATES") k0=$(descents "$PKEYS")
n=$(claim 256)
g1=$(descents "$GATES") k1=$(descents "$PKEYS")
expect_eq "the claim takes 256 of the 600 due triggers (and 1 before it)" 256 "$n"
expect_eq "no gate scope looked up while no gate is paused" 0 "$((g1 - g0))"
k=$((k1 - k0))
echo "    figure: $k primary-key descents of $P partitions for 257 claimed triggers"
check "at most one descent per claimed trigger for the read, in the $Q partition(s) of the instants, and one for the door's update by key ($(((Q + 1) * 257)), not $(((P + 1) * 257)))" [ "$k" -le $(((Q + 1) * 257)) ]

# Another job's gate paused: the pick looks up each candidate's scopes
# again (a pause committed after the candidates were read stops them there).
sql "INSERT INTO gates (scope, paused, reason, actor) VALUES ('job:other.job', true, 'test', 'test')" >/dev/null
expect_eq "with another job paused the claim still takes its 50" 50 "$(claim 50)"
check "... and looks up the scopes of its candidates" [ "$(descents "$GATES")" -gt "$g1" ]
sql "INSERT INTO gates (scope, paused, reason, actor) VALUES ('job:probe.job', true, 'test', 'test')" >/dev/null
expect_eq "a paused gate of the job stops every candidate" 0 "$(claim 50)"

echo "  ($((SECONDS - t0)) s)"
finish
