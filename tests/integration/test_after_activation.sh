#!/usr/bin/env bash
# A dependent job and its brand-new upstream applied together (docs/controller.md
# "Dependencies"): each is activated by its own shard's controller at that
# tick's now, below the shard's watermark.  When the dependent job's shard
# plans first, the upstream is stored but not active yet; the dependent job
# must wait for it rather than take the upstream shard's watermark as done,
# or the upstream's first instants (between its activation and that
# watermark) are never decided for the dependent job.
#
# Eight pairs up.N (every second) / down.N on 4 shards, one node, one
# apply: the pairs whose dependent job has the lower shard number are the
# ones one node plans in that order (at least one pair must be such).
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G1/G2 for a dependent job applied with its upstream - every upstream instant after both activations has exactly one trigger of the dependent job, whichever shard plans first; verify clean"
T_START=$(date +%s)

it_db
sink_up
SHARDS=4
write_exec_conf "$CLUSTER_CONF" "executor: {lease: 4s, heartbeat: 1s}"
lead_shards 20 n1 || { finish; exit 1; }
{
	echo "jobs:"
	for i in 1 2 3 4 5 6 7 8; do
		echo "  - {id: up.$i, schedule: {cron: \"* * * * * ?\"}, target: {url: \"http://$SINK_ADDR/effects/u\", timeout: 2s}}"
		echo "  - {id: down.$i, after: [{job: up.$i}], target: {url: \"http://$SINK_ADDR/effects/d\", timeout: 2s}}"
	done
} >"$NODE_DIR/jobs.yaml"
FROM=$(date -u -d @$(($(date +%s) - 1)) +%FT%TZ)
expect_exit "apply the eight pairs at once" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml" || { finish; exit 1; }
check "at least one dependent job has a lower shard than its upstream" \
	has "select count(*) from jobs d join jobs u on u.job_id = 'up.' || substr(d.job_id, 6)
	      where d.job_id like 'down.%' and d.shard < u.shard"
wait_until "every dependent job decided 6 s past both activations" 20 \
	has "select (count(*) = 8)::int from jobs d join jobs u on u.job_id = 'up.' || substr(d.job_id, 6)
	       join job_versions dv on dv.job_id = d.job_id and dv.version = d.active_version
	       join job_versions uv on uv.job_id = u.job_id and uv.version = u.active_version
	       join after_watermarks w on w.job_id = d.job_id
	      where w.watermark >= greatest(dv.effective_from, uv.effective_from) + interval '6 seconds'"

# Each upstream instant after both activations, up to the dependent job's
# watermark, that succeeded and has neither a trigger of the dependent job
# nor a misfire row of it.
LOST=$(sql "select coalesce(string_agg(d.job_id || '@' || to_char(t.scheduled_at, 'HH24:MI:SS'), ' '
                      order by d.job_id, t.scheduled_at), '')
  from jobs d join jobs u on u.job_id = 'up.' || substr(d.job_id, 6)
  join job_versions dv on dv.job_id = d.job_id and dv.version = d.active_version
  join job_versions uv on uv.job_id = u.job_id and uv.version = u.active_version
  join after_watermarks w on w.job_id = d.job_id
  join triggers t on t.job_id = u.job_id and t.request_id is null and t.state = 'succeeded'
   and t.scheduled_at > greatest(dv.effective_from, uv.effective_from) and t.scheduled_at <= w.watermark
 where d.job_id like 'down.%'
   and not exists (select 1 from triggers x where x.job_id = d.job_id and x.scheduled_at = t.scheduled_at)
   and not exists (select 1 from misfires m where m.job_id = d.job_id
                    and t.scheduled_at between m.range_from and m.range_to)")
expect_eq "no upstream instant lost by its dependent job" "" "$LOST"
TO=$(date -u -d @$(($(date +%s) - 2)) +%FT%TZ)
expect_exit "verify from the apply on" 0 "$PAL" verify --config "$CLUSTER_CONF" --from "$FROM" --to "$TO"
echo "  took $(($(date +%s) - T_START)) s"
finish
