#!/usr/bin/env bash
# Migration 020 removed two indexes of `triggers` that every claim and every
# result wrote to (triggers_job_at, and triggers_open over all non-terminal
# states) and reads what they served through other indexes:
# palisade_partition_live() (is a range still live? the maintenance never
# drops one that is) and palisade_job_triggers() (a job's latest triggers:
# the console, `palisade triggers --job`, the exporter, `palisade
# trigger`'s check of an instant).  Both must answer exactly what the plain
# scans answered, for every state and for scheduled and manual triggers
# mixed; and the dropped indexes must stay dropped.
source tests/integration/lib.sh
guarantee "schema - a range's liveness and a job's latest triggers read through the remaining indexes answer exactly what full scans answer, for every trigger state and for scheduled and manual triggers mixed"

fresh_db it_trigger_reads
"$PAL" migrate >/dev/null
ins() { # JOB AT_SQL STATE [REQUEST_ID]
	local src=schedule req=NULL
	[ -n "${4:-}" ] && src=manual req="'$4'"
	sql "INSERT INTO triggers (job_id, version, scheduled_at, partition, source, request_id, tenant,
	       resource_group, due_at, shard, state)
	     VALUES ('$1', 1, $2, 0, '$src', $req, 'default', 'default', $2, 0, '$3')"
}

# Liveness, one state at a time, in the history range (before today).
hist=$(sql "SELECT triggers_part FROM palisade_partitions ORDER BY range_from LIMIT 1")
bad=""
for s in pending running succeeded retry_wait failed unknown pausing paused cancelling cancelled manual skipped; do
	sql "DELETE FROM $hist"
	ins live.one "now() - interval '3 days'" "$s"
	want=$(sql "SELECT count(*) FROM $hist WHERE state NOT IN ('succeeded', 'failed', 'cancelled', 'skipped')")
	got=$(sql "SELECT palisade_partition_live('$hist', true) || '/' || palisade_partition_live('$hist', false)")
	[ "$got" = "$want/$want" ] || bad="$bad $s:$got(want $want)"
done
expect_eq "a range holding one trigger is live exactly when its state is not terminal, for all 12 states" "" "$bad"
sql "DELETE FROM $hist"

# Counts over a mix in today's range.
sql "INSERT INTO triggers (job_id, version, scheduled_at, partition, source, tenant, resource_group, due_at, shard, state)
     SELECT 'mix.' || (g % 7), 1, now() - g * interval '1 s', g % 3, 'schedule', 'default', 'default', now(), 0,
       (ARRAY['pending', 'running', 'succeeded', 'retry_wait', 'failed', 'unknown', 'pausing', 'paused',
              'cancelling', 'cancelled', 'manual', 'skipped'])[1 + g % 12]
     FROM generate_series(1, 3000) g"
today=$(sql "SELECT triggers_part FROM palisade_partitions WHERE range_from <= now() AND range_to > now()")
want=$(sql "SELECT count(*) FROM $today WHERE state NOT IN ('succeeded', 'failed', 'cancelled', 'skipped')")
expect_eq "the live count of a mixed range equals a full count of its non-terminal triggers" "$want" \
	"$(sql "SELECT palisade_partition_live('$today', false)")"

# A job's latest triggers: scheduled and manual interleaved, ties across
# partitions, against the plain ordered scan; times from one fixed base.
B="'$(sql "SELECT date_trunc('second', now())")'::timestamptz"
for i in $(seq 1 40); do
	ins job.a "$B - interval '$((i * 10)) s'" succeeded
	[ $((i % 5)) = 0 ] && ins job.a "$B - interval '$((i * 10 + 5)) s'" failed "req-$i"
	[ $((i % 7)) = 0 ] && ins job.a "$B - interval '$((i * 10)) s'" pending "tie-$i"
done
ins job.b "now()" pending
bad=""
for lim in 1 3 10 47 100; do
	want=$(sql "SELECT string_agg(id::text, ',') FROM (SELECT id FROM triggers WHERE job_id = 'job.a'
	             ORDER BY scheduled_at DESC, partition, id LIMIT $lim) x")
	got=$(sql "SELECT string_agg(id::text, ',') FROM palisade_job_triggers('job.a', $lim)")
	[ "$got" = "$want" ] || bad="$bad limit=$lim"
	want=$(sql "SELECT string_agg(id::text, ',') FROM (SELECT id FROM triggers WHERE job_id = 'job.a'
	             AND state = 'failed' AND scheduled_at >= $B - interval '300 s'
	             AND scheduled_at <= $B - interval '60 s'
	             ORDER BY scheduled_at DESC, partition, id LIMIT $lim) x")
	got=$(sql "SELECT string_agg(id::text, ',') FROM palisade_job_triggers('job.a', $lim, 'failed',
	             $B - interval '300 s', $B - interval '60 s')")
	[ "$got" = "$want" ] || bad="$bad limit=$lim/failed/window"
done
expect_eq "palisade_job_triggers returns what the ordered scan returns (limits 1-100, with state and window)" "" "$bad"
expect_eq "with no limit it returns every trigger of the job and no other" \
	"$(sql "SELECT count(*) FROM triggers WHERE job_id = 'job.a'")" \
	"$(sql "SELECT count(*) FROM palisade_job_triggers('job.a', NULL) WHERE job_id = 'job.a'")"
expect_eq "palisade triggers --job lists the job's latest, manual ones included" \
	"$(sql "SELECT string_agg(id::text, ',') FROM (SELECT id FROM triggers WHERE job_id = 'job.a'
	          ORDER BY scheduled_at DESC, partition, id DESC LIMIT 12) x")" \
	"$("$PAL" triggers --job job.a --limit 12 --output json 2>/dev/null | python3 -c '
import json, sys; print(",".join(str(t["id"]) for t in json.load(sys.stdin)))')"

# The indexes every claim and result used to write stay gone, and no
# attempt row is checked against its trigger any more.
expect_eq "triggers_job_at and the wide triggers_open are gone" "0" \
	"$(sql "SELECT count(*) FROM pg_indexes WHERE indexname IN ('triggers_job_at', 'triggers_open')")"
expect_eq "attempts has no foreign key to triggers" "0" \
	"$(sql "SELECT count(*) FROM pg_constraint WHERE conrelid = 'attempts'::regclass AND contype = 'f'")"
finish
