#!/usr/bin/env bash
# A claim stays index-driven when the statistics are stale.  The executor's
# session keeps the generic plans of palisade_claim() for as long as it
# lives; plans made while today's partition held a few hundred triggers read
# it sequentially.  When 100,000 instants of one second were then planned
# into it, every claim compared each of them with every picked id until
# autovacuum analysed the partition (a claim of 256: 300-400 ms instead of
# 10-20 ms; the bench's aligned burst ran past its 60 s).  Migration 021
# runs the claim with enable_seqscan = off.  This test makes the plans on a
# partition analysed while empty (autovacuum off for it, so the statistics
# stay stale) that holds 300 triggers, adds 20,000 due triggers, claims again in the same session and
# counts the sequential scans of the partition (pg_stat_user_tables).
# Without 021 the four claims scan it 8 times (two statements each).
source tests/integration/lib.sh
guarantee "performance - a claim whose plans were made on a nearly empty partition reads it by index after a burst of triggers lands in it (no sequential scan while the statistics are stale)"

fresh_db it_claim_stale
"$PAL" migrate >/dev/null
# The statistics of a vacuumed empty partition, then the first few hundred
# triggers.
stale_partition stale.job
sql "$(due_sql stale.job 300)" >/dev/null
claim="SELECT 'claimed', count(*) FROM palisade_claim('stale-node', 30000, 256, 0, '{}', '{}', '{}', '{}', '{}', '{}', '{}') WHERE id IS NOT NULL;"
# (the session's own counters reach the view when it goes idle after a
# forced flush: two commands, not one)
flush="SELECT pg_stat_force_next_flush()"
scans="SELECT 'scans', seq_scan FROM pg_stat_user_tables WHERE relname = '$PART'"
# One session, as the executor's: a claim makes and caches the plans on
# the small partition; then the burst lands; then three more claims.
out=$(sql_run "$claim" psql "$PALISADE_PG" -XAtq -v ON_ERROR_STOP=1 -F ' ' -c "SET jit = off" -c "$claim" \
	-c "$(due_sql stale.job 20000 300)" -c "$flush" -c "$scans" -c "$claim" -c "$claim" -c "$claim" -c "$flush" -c "$scans")
echo "    figure: $(echo $out)"
read -r s0 s1 <<<"$(awk '$1 == "scans" {printf "%s ", $2}' <<<"$out")"
expect_eq "four claims of 256 take 1,024 triggers" 1024 "$(awk '$1 == "claimed" {s += $2} END {print s}' <<<"$out")"
expect_eq "the statistics are still those of the empty partition" 0 \
	"$(sql "SELECT reltuples::bigint FROM pg_class WHERE relname = '$PART'")"
expect_eq "no sequential scan of the partition (20,300 triggers) by the claims made after the burst" 0 "$((s1 - s0))"
finish
