#!/usr/bin/env bash
# Two overlapping gates over a job, lifted one after the other: the resume
# that lifts the last one decides by misfire policy every instant the gates
# held past the threshold, counted from the first gate that held it, not
# from the last gate's own start.  Tenant ta: the tenant paused at G1, the
# job ta.skip at G2, the tenant resumed (the job gate still holds), then the
# job.  Tenant tb the other way round: the job tb.skip paused at G1, the
# tenant at G2, the job resumed (the tenant gate still holds), then the
# tenant.  tb.late, in tenant tb but under no gate before G2, shows that
# the tenant gate's resume counts from G1 only for what G1 held: its
# backlog due before G2 is released as it was.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G1 - an instant held by overlapping pauses past the threshold follows the misfire policy, whichever gate lifts last"

it_db
sink_up
# a controller only: no executor runs, the instants wait
misfire_cluster c1 <<YAML
jobs:
  - {id: ta.skip, tenant: ta, schedule: {cron: "* * * * * ?"}, misfire: {policy: skip}, target: {url: "http://$SINK_ADDR/effects/ta"}}
  - {id: tb.skip, tenant: tb, schedule: {cron: "* * * * * ?"}, misfire: {policy: skip}, target: {url: "http://$SINK_ADDR/effects/tb"}}
  - {id: tb.late, tenant: tb, schedule: {cron: "* * * * * ?"}, misfire: {policy: skip}, target: {url: "http://$SINK_ADDR/effects/late"}}
YAML
gate_since() { sql "select extract(epoch from since) from gates where scope = '$1'"; }
expect_exit "pause tenant ta (G1)" 0 "$PAL" pause --tenant ta --reason "first"
expect_exit "pause job tb.skip (G1)" 0 "$PAL" pause --job tb.skip --reason "first"
A1=$(gate_since tenant:ta)
B1=$(gate_since job:tb.skip)
sleep 10
expect_exit "pause job ta.skip (G2)" 0 "$PAL" pause --job ta.skip --reason "second"
expect_exit "pause tenant tb (G2)" 0 "$PAL" pause --tenant tb --reason "second"
A2=$(gate_since job:ta.skip)
B2=$(gate_since tenant:tb)
expect_exit "resume tenant ta (the job gate still holds ta.skip)" 0 \
	"$PAL" resume --tenant ta --reason "first over" --config "$CLUSTER_CONF"
expect_exit "resume job tb.skip (the tenant gate still holds it)" 0 \
	"$PAL" resume --job tb.skip --reason "first over" --config "$CLUSTER_CONF"
expect_eq "the first resumes skip nothing" 0 \
	"$(sql "select count(*) from trigger_jobs where state = 'skipped'")"
sleep 5
for s in "--job ta.skip" "--tenant tb"; do
	# shellcheck disable=SC2086
	out=$("$PAL" resume $s --reason "second over" --config "$CLUSTER_CONF" --output json)
	echo "    resume $s: $(echo "$out" | jq -c '{released, misfired}')"
done

# instants of job J held from G1 (one second after it) to the threshold before G2
held() { echo "job_id = '$1' and scheduled_at > to_timestamp($2) + interval '1 s' and scheduled_at < to_timestamp($3) - interval '4 s'"; }
for j in "ta.skip $A1 $A2" "tb.skip $B1 $B2"; do
	set -- $j
	IN=$(held "$1" "$2" "$3")
	N=$(sql "select count(*) from trigger_jobs where $IN")
	echo "    figure: $1: $N instants held from G1, due before G2 - threshold; states:" \
		"$(sql "select string_agg(state || ':' || n, ' ') from (select state, count(*) n from trigger_jobs where $IN group by state) s")"
	check "$1: at least 4 such instants ($N)" [ "$N" -ge 4 ]
	expect_eq "$1: each instant the gates held past the threshold is skipped (policy skip)" "$N" \
		"$(sql "select count(*) from trigger_jobs where $IN and state = 'skipped'")"
done
expect_eq "ta.skip: one misfire row, reason paused, by the gate lifted last" "1 job:ta.skip" \
	"$(sql "select count(*) || ' ' || max(gate) from misfires where job_id = 'ta.skip' and reason = 'paused'")"
expect_eq "tb.skip: one misfire row, reason paused, by the gate lifted last" "1 tenant:tb" \
	"$(sql "select count(*) || ' ' || max(gate) from misfires where job_id = 'tb.skip' and reason = 'paused'")"
IN=$(held tb.late "$B1" "$B2")
N=$(sql "select count(*) from trigger_jobs where $IN")
echo "    figure: tb.late: $N instants due between G1 and G2 - threshold, under no gate before G2"
check "tb.late: at least 4 such instants ($N)" [ "$N" -ge 4 ]
expect_eq "tb.late: none of them skipped (a backlog before its gate, released as it was)" 0 \
	"$(sql "select count(*) from trigger_jobs where $IN and state = 'skipped'")"
finish
