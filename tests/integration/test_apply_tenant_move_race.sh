#!/usr/bin/env bash
# One apply moves job S from tenant t2 (in shadow) into tenant t1 (live)
# and job L the other way while a tick of their shard is in flight
# (lookahead 5 s): that tick planned from the old versions and writes its
# rows with the old tenant and the old side, after the apply's move.
# Round 1 holds the tick's insert of triggers 3 s: the apply commits before
# the tick's own check after its insert, which moves the rows.  Round 2
# holds the tick's watermark write 2 s, after that check: the tick that
# activates the new versions moves them (write_moves in src/store/plan.c).
# Either way S's rows left shadow go pending and palisade calls every
# instant of S; L's left pending go shadow and palisade calls none of them.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "a job moved between a shadow and a live tenant while a tick is in flight changes sides with every row after the apply"
it_db
sink_up
SHARDS=1
LOOKAHEAD=5s write_exec_conf "$CLUSTER_CONF" "executor: {lease: 10s, heartbeat: 2s}"
hold_inserts_setup
# the watermark write of a tick held for the seconds in it_slow_mark
sql "create table it_slow_mark (n int);
create function it_slow_mark() returns trigger language plpgsql as \$\$
begin perform pg_sleep(coalesce((select max(n) from it_slow_mark), 0)); return new; end \$\$;
create trigger it_slow_mark before update of watermark on shards for each row
 when (old.watermark is distinct from new.watermark) execute function it_slow_mark();" >/dev/null
hold_marks() { sql "delete from it_slow_mark; insert into it_slow_mark select $1 where $1 > 0" >/dev/null; }
mark_held() { [ "$(sql "select count(*) from pg_stat_activity where $OUR_SLEEP and query like 'UPDATE shards SET watermark%'")" -ge 1 ]; }
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
lead_shards 40 f1
expect_exit "tenant t2 in shadow" 0 "$PAL" shadow --config "$CLUSTER_CONF" --tenant t2 --reason s

# move_round R HOLD HELD WHAT: jobs sm<R>.job-1 (S) and lv<R>.job-1 (L)
# moved by one apply while HOLD 3 holds a tick (HELD: it is held).
move_round() {
	local R=$1 hold=$2 held=$3 what=$4 S=sm$1.job-1 L=lv$1.job-1
	gen_sink_jobs "$NODE_DIR/s$R-1.yaml" 1 "* * * * * ?" t2 sm$R
	gen_sink_jobs "$NODE_DIR/l$R-1.yaml" 1 "* * * * * ?" t1 lv$R
	expect_exit "round $R: apply S (t2, shadow) and L (t1, live)" 0 \
		"$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/s$R-1.yaml" "$NODE_DIR/l$R-1.yaml"
	sleep 8
	gen_sink_jobs "$NODE_DIR/s$R-2.yaml" 1 "* * * * * ?" t1 sm$R
	gen_sink_jobs "$NODE_DIR/l$R-2.yaml" 1 "* * * * * ?" t2 lv$R
	$hold "$5"
	wait_until "round $R: a tick's $what is held" 10 $held
	expect_exit "round $R: one apply moves S into t1 and L into t2 (tick held)" 0 \
		"$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/s$R-2.yaml" "$NODE_DIR/l$R-2.yaml"
	A=$(date +%s)
	$hold 0
	sleep 12
	rows() { sql "select string_agg(extract(epoch from scheduled_at)::bigint - $A || ':v' || version || ':' || tenant || ':' || state, ' ' order by scheduled_at) from triggers where job_id = '$1' and scheduled_at > to_timestamp($A + 1) and scheduled_at < to_timestamp($A + 10)"; }
	echo "    S rows A+2..A+9 (offset:version:tenant:state): $(rows $S)"
	echo "    L rows A+2..A+9: $(rows $L)"
	audit() { sql "select count(*) from audit_log where action = '$1' and scope = 'job:$2' and actor like 'controller:%' and details ->> 'cause' like 'its job moved to a tenant or group%by the controller%'"; }
	# rows the held tick wrote after the apply's move, moved by the controller
	expect_eq "round $R: the controller's trigger.live audit row for S, trigger.shadow for L" "1 1" \
		"$(audit trigger.live $S) $(audit trigger.shadow $L)"
	expect_eq "round $R: no S row from A+2 on is left shadow" 0 \
		"$(sql "select count(*) from triggers where job_id = '$S' and state = 'shadow' and scheduled_at > to_timestamp($A + 1)")"
	expect_eq "round $R: no L row from A+2 on is left to palisade" 0 \
		"$(sql "select count(*) from triggers where job_id = '$L' and state <> 'shadow' and scheduled_at > to_timestamp($A + 1)")"
	expect_eq "round $R: palisade calls none of L's instants from A+2 on" 0 \
		"$(sql "select count(*) from sink_effects where idempotency_key like '$L/%' and scheduled_at > to_timestamp($A + 1)")"
	expect_eq "round $R: every second of S from A+2 to A+9 called" 8 \
		"$(sql "select count(distinct scheduled_at) from sink_effects where idempotency_key like '$S/%' and scheduled_at between to_timestamp($A + 2) and to_timestamp($A + 9)")"
	"$PAL" verify --job $S --from "$(iso $((A + 2)))" --to "$(iso $((A + 9)))" >"$NODE_DIR/v.out" 2>&1
	expect_eq "round $R: verify S from A+2 to A+9: OK" 0 "$?"
	sed 's/^/    verify: /' "$NODE_DIR/v.out" | head -3
}
move_round 1 hold_inserts insert_held "insert of triggers" 3
move_round 2 hold_marks mark_held "watermark write" 2
stop_node f1
finish
