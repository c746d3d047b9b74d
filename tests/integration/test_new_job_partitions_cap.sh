#!/usr/bin/env bash
# Brand-new partitioned jobs applied with a long lookahead: a job's rows are
# its instants x its partitions, and the tick activating brand-new jobs
# plans their rows up to the watermark whole.  The count that keeps a
# large apply from making one huge tick counts those rows, not instants:
# 12 every-second jobs with 1024 partitions and a 60 s lookahead are
# ~61 000 rows each, more than the row cap (50 000) alone, so each is
# activated alone in its tick.  (Counted as instants, all 12 went into one
# tick of ~750 000 rows, whose insert outlasted the statement timeout (3 s
# here, standing for the 30 s default against a larger apply): the tick
# was retried whole forever and the shard planned nothing more, its other
# jobs included.)
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "a large apply of partitioned jobs is planned in ticks bounded by the row cap (a job alone over it in a tick of its own); the shard keeps planning"
it_db
sink_up
SHARDS=1
LOOKAHEAD=60s MISFIRE=2m write_conf "$CLUSTER_CONF" "postgres: {statement_timeout: 3s}"
gen_sink_jobs "$NODE_DIR/o.yaml" 1 "* * * * * ?" t1 other
expect_exit "apply an ordinary job" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/o.yaml"
lead_shards 40 f1
wm_ahead() { [ "$(sql "select (watermark > now() + interval '50 s')::int from shards")" = 1 ]; }
wait_until "the watermark is ~60 s ahead" 40 wm_ahead
gen_sink_jobs "$NODE_DIR/p.yaml" 12 "* * * * * ?" t1 part "partitions: 1024"
expect_exit "apply 12 every-second jobs with partitions 1024" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/p.yaml"
W1=$(sql "select extract(epoch from watermark)::bigint from shards")
n_act() { sql "select count(*) from job_versions where job_id like 'part.%' and effective_from is not null"; }
all_active() { [ "$(n_act)" = 12 ]; }
wait_wall "the 12 jobs activated" 60 all_active
W2=$(sql "select extract(epoch from watermark)::bigint from shards")
sleep 5
W3=$(sql "select extract(epoch from watermark)::bigint from shards")
echo "    watermark moved $((W2 - W1)) s while activating, $((W3 - W2)) s in the 5 s after; db errors: $(grep -c '"controller.db_error"' "$NODE_DIR/f1.log")"
grep '"controller.db_error"' "$NODE_DIR/f1.log" | head -2 | cut -c1-400 | sed 's/^/    | /'
expect_eq "the shard's watermark keeps moving (>= 3 s in 5 s)" 1 "$([ $((W3 - W2)) -ge 3 ] && echo 1 || echo 0)"
expect_eq "no tick failed (controller.db_error, shard dropped)" "0 0" "$(grep -c '"controller.db_error"' "$NODE_DIR/f1.log") $(grep -c '"controller.shard_dropped".*"reason":"[^c]' "$NODE_DIR/f1.log")"
expect_eq "all activated as of the tick that first saw them" 1 \
	"$(sql "select count(distinct effective_from) from job_versions where job_id like 'part.%'")"
# each activating tick rewrites its jobs' job_versions rows in one transaction
expect_eq "one activation a tick (each job's rows up to the watermark are over the row cap alone)" 12 \
	"$(sql "select count(distinct xmin::text) from job_versions where job_id like 'part.%'")"
expect_eq "every partition of every instant from each activation to the watermark planned" 0 \
	"$(sql "select count(*) from (select v.job_id, g from job_versions v cross join lateral
	         generate_series(extract(epoch from v.effective_from)::bigint + 1, (select extract(epoch from watermark)::bigint from shards)) g
	        where v.job_id like 'part.%') e
	      left join (select job_id, extract(epoch from scheduled_at)::bigint s, count(*) n from trigger_jobs
	                  where job_id like 'part.%' group by 1, 2) t on t.job_id = e.job_id and t.s = e.g
	      where coalesce(t.n, 0) <> 1024")"
other_planned() { [ "$(sql "select count(*) from triggers where job_id = 'other.job-1' and scheduled_at = to_timestamp($W1 + 20)")" = 1 ]; }
wait_until "the ordinary job is planned 20 s past the watermark of the apply" 20 other_planned
stop_node f1
finish
