#!/usr/bin/env bash
# The audit log is tamper-evident: every row is sealed into one hash chain
# as it is inserted; `palisade audit verify` recomputes it and names the
# first row edited or the rows deleted; retention drops whole prefixes and
# records where the chain restarts, so verify stays clean after it.
source tests/integration/lib.sh
guarantee "audit chain - operator actions, concurrent ones included, are sealed into one chain; verify is clean (exit 0); an edited reason is reported at its row and a row deleted in the middle as a gap (exit 2); retention of a prefix leaves verify clean"
T0=$SECONDS

fresh_db it_audit_chain
expect_exit "migrate" 0 "$PAL" migrate
expect_exit "verify on an empty log" 0 "$PAL" audit verify
expect_match "says it is whole" "audit chain whole: 0 rows checked" "$OUT"

# the prefix retention will drop
for t in a b c; do "$PAL" pause --tenant "old-$t" --reason "old $t" >/dev/null; done
sleep 1.2
# concurrent writers: the chain stays one line
pids=()
for t in 1 2 3 4 5 6; do "$PAL" pause --tenant "t$t" --reason "freeze $t" >/dev/null & pids+=($!); done
for p in "${pids[@]}"; do wait "$p"; done
"$PAL" resume --tenant t3 --reason "thaw 3" >/dev/null
# many rows in one statement, as apply writes them (INSERT ... SELECT, COPY)
sql "INSERT INTO audit_log (actor, action) SELECT 'test', 'bulk.' || i FROM generate_series(1, 3) i" >/dev/null
printf 'test\tcopy.1\ntest\tcopy.2\n' | sql_run "COPY audit_log" "$PSQL" "$PALISADE_PG" -XAtq -v ON_ERROR_STOP=1 -c "COPY audit_log (actor, action) FROM STDIN" >/dev/null
expect_eq "15 audit rows, seq 1..15, each sealed" "15|1|15|15" \
	"$(sql "SELECT count(*), min(seq), max(seq), count(hash) FROM audit_log")"
expect_exit "verify is clean" 0 "$PAL" audit verify
expect_match "and says so" "audit chain whole: 15 rows checked \(seq 1\.\.15\)" "$OUT"
expect_exit "verify --output json" 0 "$PAL" audit verify --output json
expect_eq "json: no problem, 15 checked" "null|15" "$(echo "$OUT" | jq -r '"\(.problem)|\(.checked)"')"

# retention drops the prefix written before the pause (cutoff just after row 3)
keep=$(sql "SELECT (clock_timestamp() - at - interval '1 microsecond')::text FROM audit_log WHERE seq = 3")
expect_eq "retention deletes the three old rows" "3" \
	"$(sql "SELECT deleted FROM palisade_history_retention('audit_log', '$keep', 100)")"
expect_eq "and records where the chain restarts" "4|t" \
	"$(sql "SELECT s.seq, s.prev_hash IS NOT NULL FROM audit_chain_start s")"
expect_exit "verify is clean after retention" 0 "$PAL" audit verify
expect_match "from seq 4" "audit chain whole: 12 rows checked \(seq 4\.\.15\)" "$OUT"
"$PAL" pause --tenant t7 --reason "freeze 7" >/dev/null
expect_exit "a row written after retention chains on" 0 "$PAL" audit verify
expect_match "16 is sealed" "13 rows checked \(seq 4\.\.16\)" "$OUT"

# One seal per transaction, not per row: the first row a transaction
# seals reads the chain's tail (under the lock), the rows after it chain
# on from the one before.  Reads of audit_log (sequential and index scans,
# pg_stat_user_tables) while 500 rows are inserted in one statement:
# one, not 500.
reads() { sql "SELECT pg_stat_force_next_flush(); SELECT seq_scan + coalesce(idx_scan, 0) FROM pg_stat_user_tables WHERE relname = 'audit_log'" | tail -1; }
r0=$(reads)
sql_run "INSERT INTO audit_log: 500 rows in one statement" "$PSQL" "$PALISADE_PG" -XAtq -v ON_ERROR_STOP=1 \
	-c "INSERT INTO audit_log (actor, action) SELECT 'test', 'many.' || i FROM generate_series(1, 500) i" \
	-c "SELECT pg_stat_force_next_flush()" >/dev/null
r1=$(reads)
echo "    figure: reads of audit_log while 500 rows were sealed in one statement: $((r1 - r0))"
check "500 rows in one statement read the chain's tail once (read $((r1 - r0)) times)" [ $((r1 - r0)) -le 2 ]
# Several statements of one transaction chain on; rows of a subtransaction
# rolled back take their seqs with them; a tail set in the session (not
# by the seal, in this transaction) is not believed.
sql_run "one transaction's statements, a savepoint rolled back" "$PSQL" "$PALISADE_PG" -XAtq -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
SET palisade.audit_tail = '1:1:00';
BEGIN;
INSERT INTO audit_log (actor, action) VALUES ('test', 'tx.1');
SAVEPOINT s;
INSERT INTO audit_log (actor, action) SELECT 'test', 'tx.gone.' || i FROM generate_series(1, 3) i;
ROLLBACK TO SAVEPOINT s;
INSERT INTO audit_log (actor, action) SELECT 'test', 'tx.' || i FROM generate_series(2, 3) i;
COMMIT;
INSERT INTO audit_log (actor, action) VALUES ('test', 'tx.4');
SQL
expect_eq "a transaction's statements after a rolled-back savepoint take seq 517.. in order" \
	"tx.1:517 tx.2:518 tx.3:519 tx.4:520" \
	"$(sql "SELECT string_agg(action || ':' || seq, ' ' ORDER BY seq) FROM audit_log WHERE action LIKE 'tx.%'")"
expect_exit "and the chain is whole" 0 "$PAL" audit verify
expect_match "through seq 520" "517 rows checked \(seq 4\.\.520\)" "$OUT"

# an edited reason
id6=$(sql "SELECT id FROM audit_log WHERE seq = 6")
orig=$(sql "SELECT reason FROM audit_log WHERE seq = 6")
sql "UPDATE audit_log SET reason = 'nothing to see' WHERE seq = 6" >/dev/null
expect_exit "verify reports an edited row" 2 "$PAL" audit verify
expect_match "at its id" "row id $id6 \(seq 6\) edited; 2 rows verified before" "$OUT"
expect_exit "json too" 2 "$PAL" audit verify --output json
expect_eq "json: edited, its id" "edited|$id6|6" "$(echo "$OUT" | jq -r '"\(.problem)|\(.id)|\(.seq)"')"
sql "UPDATE audit_log SET reason = '$orig' WHERE seq = 6" >/dev/null
expect_exit "put back, the chain is whole again" 0 "$PAL" audit verify

# a row deleted in the middle
id9=$(sql "SELECT id FROM audit_log WHERE seq = 9")
sql "DELETE FROM audit_log WHERE seq = 8" >/dev/null
expect_exit "verify reports a deleted row" 2 "$PAL" audit verify
expect_match "as a gap before the next row" "rows seq 8\.\.8 missing before id $id9 \(seq 9\)" "$OUT"
# and the first row kept by retention
sql "DELETE FROM audit_log WHERE seq = 4" >/dev/null
expect_exit "deleting the first row is seen too" 2 "$PAL" audit verify --output json
expect_eq "json: missing 4..4" "missing|4|4" "$(echo "$OUT" | jq -r '"\(.problem)|\(.missing_from)|\(.missing_to)"')"

# rows written before 028 are sealed by it, in id order
fresh_db it_audit_chain_old
expect_exit "migrate to 25 (no chain yet)" 0 "$PAL" migrate --to 25
sql "INSERT INTO audit_log (actor, action, reason, details) VALUES ('old', 'pause', 'r1', '{\"a\": 1}'), ('old', 'resume', NULL, NULL), ('old', 'pause', 'r''3', '{}')" >/dev/null
sql "DELETE FROM audit_log WHERE reason = 'r1'" >/dev/null
expect_exit "migrate to the end" 0 "$PAL" migrate
expect_eq "the two rows left are sealed as seq 1 and 2" "2|1|2|2" "$(sql "SELECT count(*), min(seq), max(seq), count(hash) FROM audit_log")"
expect_exit "verify is clean" 0 "$PAL" audit verify
expect_match "both checked" "audit chain whole: 2 rows checked \(seq 1\.\.2\)" "$OUT"
"$PAL" pause --all --reason "after 028" >/dev/null
expect_exit "and the next row chains on" 0 "$PAL" audit verify
expect_match "as seq 3" "3 rows checked \(seq 1\.\.3\)" "$OUT"

expect_exit "audit verify --server is a usage error" 64 "$PAL" audit verify --server http://127.0.0.1:1
echo "  took $((SECONDS - T0)) s"
finish
