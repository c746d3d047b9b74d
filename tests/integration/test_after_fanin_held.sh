#!/usr/bin/env bash
# A fan-in whose second upstream is dependent (fp.mid after fp.c), and
# fp.c paused: fp.mid's dependency watermark stops below fp.c's held
# instant until fp.mid's own within (default 1d) passes.  fp.fan (after
# fp.a and fp.mid, within 3s on both) still decides every fp.a instant
# after the pause: upstream_late naming fp.mid once t + 3 s is past
# (docs/jobs.md, `within`); only a dependent FIRST upstream's dependency
# watermark caps the fan-in's window.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "a fan-in's within is kept when its dependent upstream is held"
badserver_cluster it_after_fanin_held 2 5s
apply_jobs "apply" <<YAML || { finish; exit 1; }
jobs:
  - {id: fp.a, schedule: {cron: "*/5 * * * * ?"}, target: $(url log/a)}
  - {id: fp.c, schedule: {cron: "*/5 * * * * ?"}, target: $(url log/c)}
  - {id: fp.mid, after: [{job: fp.c}], target: $(url log/mid)}
  - {id: fp.fan, after: [{job: fp.a, within: 3s}, {job: fp.mid, within: 3s}], target: $(url log/fan)}
YAML
lead_shards 20 p1 || { finish; exit 1; }
wait_until "fp.fan ran" 40 has "select count(*) from triggers where job_id = 'fp.fan' and state = 'succeeded'" || { finish; exit 1; }
expect_exit "pause fp.c" 0 "$PAL" pause --job fp.c --reason "hold fp.mid"
P=$(sql "select clock_timestamp()")
sleep 22
echo "  since the pause: fp.a instants $(sql "select count(*) from triggers where job_id='fp.a' and request_id is null and scheduled_at > '$P' and scheduled_at < clock_timestamp() - interval '5 seconds'"); fp.mid wm $(sql "select watermark from after_watermarks where job_id='fp.mid'"); fp.fan wm $(sql "select watermark from after_watermarks where job_id='fp.fan'")"
expect_eq "every fp.a instant since the pause (older than 5 s) decided for fp.fan (a trigger or an upstream_* misfire)" "" \
	"$(sql "select coalesce(string_agg(to_char(a.scheduled_at, 'HH24:MI:SS'), ' '), '') from triggers a
	  where a.job_id = 'fp.a' and a.request_id is null and a.scheduled_at > '$P' and a.scheduled_at < clock_timestamp() - interval '5 seconds'
	    and not exists (select 1 from triggers f where f.job_id = 'fp.fan' and f.scheduled_at = a.scheduled_at)
	    and not exists (select 1 from misfires m where m.job_id = 'fp.fan' and a.scheduled_at between m.range_from and m.range_to)")"
expect_eq "fp.fan's misfires since the pause are upstream_late naming fp.mid" "" \
	"$(sql "select coalesce(string_agg(reason || ':' || coalesce(upstream_job, '-'), ' '), '') from misfires
	  where job_id = 'fp.fan' and range_from > '$P' and not (reason = 'upstream_late' and upstream_job = 'fp.mid')")"
expect_eq "fp.fan ran at no instant since the pause" 0 \
	"$(sql "select count(*) from triggers where job_id = 'fp.fan' and scheduled_at > '$P'")"
stop_all_nodes
finish
