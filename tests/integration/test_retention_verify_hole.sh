#!/usr/bin/env bash
# A retention round drops every old range whose triggers all ended and keeps
# one that still holds a live trigger.  When the range kept is older than a
# range dropped, the list of ranges has a hole: the retention horizon must
# lie at the end of the hole, not at the start of the oldest range left, or
# `palisade verify` over the hole is accepted and reports the instants
# retention dropped as missing (a false alarm, and a real loss there could
# not be told from it).  The same with the migration's history range
# (-infinity, ...) kept below the hole.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "verify never counts an instant retention dropped as missing: the retention horizon is the end of the latest range dropped, also when an older range (or the history range) is kept for a live trigger"

# fmt TS: TS as verify and `retention --horizon` write it
fmt() { sql "select to_char('$1'::timestamptz at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"; }

# layout NAME FIRST: a fresh database NAME whose ranges are, from FIRST
# (-infinity, or D minus an interval) on, contiguous: [FIRST, D-2d), [D-2d, D-1d), [D-1d, M), then
# the round's hourly ranges from M (the current hour) on, D today's
# midnight (UTC).  The migration's ranges are replaced by a round with no
# keep (nothing is in them yet); the older ones are made by hand, as an
# installation that had them from the start.  Applies job vh.job (hourly),
# active since before FIRST.
layout() {
	fresh_db "$1"
	expect_exit "migrate" 0 "$PAL" migrate
	old_ranges "$2"
	cat >"$NODE_DIR/j.yaml" <<'YAML'
jobs:
  - id: vh.job
    tenant: t
    group: g
    schedule: {cron: "0 0 * * * ?"}
    target: {url: http://127.0.0.1:9/x}
YAML
	expect_exit "apply an hourly job" 0 "$PAL" apply "$NODE_DIR/j.yaml"
	sql "update job_versions set activated_at = '$D'::timestamptz - interval '9 days', activated_epoch = 1,
	            effective_from = '$D'::timestamptz - interval '9 days' - interval '1 second'" >/dev/null
}
# fires FROM TO LIVE: one trigger per hour of vh.job in [FROM, TO), all
# succeeded but the one at LIVE, which waits to retry
fires() {
	sql "insert into triggers (job_id, version, scheduled_at, source, tenant, resource_group, state, due_at, shard, finished_at)
	     select job_id, 1, g, 'schedule', tenant, resource_group,
	            case when g = '$3'::timestamptz then 'retry_wait' else 'succeeded' end,
	            g, shard, case when g = '$3'::timestamptz then null else g + interval '1 minute' end
	     from jobs, generate_series('$1'::timestamptz, '$2'::timestamptz - interval '1 hour', interval '1 hour') g
	     where job_id = 'vh.job'" >/dev/null
}

# -- an older range kept, a later one dropped
layout it_retention_hole "3 days"
R1=$F
fires "$R1" "$(sql "select '$R3'::timestamptz + interval '2 hours'")" "$(sql "select '$R1'::timestamptz + interval '5 hours'")"
FROM=$(fmt "$R1")
TO=$(fmt "$(sql "select '$R3'::timestamptz - interval '1 second'")")
expect_eq "before the round the horizon is the oldest range's start" "$FROM" "$("$PAL" retention --horizon)"
expect_exit "verify over both days before the round" 0 "$PAL" verify --from "$FROM" --to "$TO" --job vh.job --stuck-after 0
expect_match "finds every instant" "^verify: OK .*expected=48 triggered=48 .*missing=0 " "$OUT"

expect_exit "a round keeping two hours" 0 "$PAL" retention --interval 1h --ahead 1d --keep 2h
expect_match "keeps the older range, which holds a live trigger" \
	"kept triggers_p$(date -u -d "$FROM" +%Y%m%d)_000000 .*: 1 live triggers" "$OUT"
expect_match "drops the later one" "dropped triggers_p$(date -u -d "$R2" +%Y%m%d)_000000 " "$OUT"
H=$("$PAL" retention --horizon)
expect_eq "the horizon is the end of the range dropped, not the start of the older one kept" \
	"$(fmt "$R3")" "$H"
expect_exit "verify over the same two days is refused" 4 \
	"$PAL" verify --from "$FROM" --to "$TO" --job vh.job --stuck-after 0
expect_match "with the horizon and where to start" \
	"is before the retention horizon $H: the triggers of earlier instants may have been dropped .*verify from $H on" "$OUT"
if grep -q "missing" <<<"$OUT"; then fail "and counts nothing missing: $OUT"; else pass "and counts nothing missing"; fi
expect_exit "verify over the kept range alone is refused too (it lies below the hole)" 4 \
	"$PAL" verify --from "$FROM" --to "$(fmt "$(sql "select '$R2'::timestamptz - interval '1 second'")")" --job vh.job
expect_exit "verify from the horizon on is accepted" 0 \
	"$PAL" verify --from "$H" --to "$(fmt "$(sql "select '$R3'::timestamptz + interval '1 hour'")")" --job vh.job --stuck-after 0
expect_exit "a second round changes nothing" 0 "$PAL" retention --interval 1h --ahead 1d --keep 2h
expect_eq "the horizon stays" "$H" "$("$PAL" retention --horizon)"
sql "update triggers set state = 'failed', finished_at = now() where state = 'retry_wait'" >/dev/null
expect_exit "a round after the live trigger ended" 0 "$PAL" retention --interval 1h --ahead 1d --keep 2h
expect_match "drops the older range" "dropped triggers_p$(date -u -d "$FROM" +%Y%m%d)_000000 " "$OUT"
expect_eq "the horizon is still the end of the hole (now the oldest range's start)" "$H" "$("$PAL" retention --horizon)"

# -- the migration's history range kept, a later range dropped
layout it_retention_hole_hist -infinity
fires "$R2" "$R3" -infinity
fires "$(sql "select '$D'::timestamptz - interval '4 days'")" "$(sql "select '$D'::timestamptz - interval '3 days'")" \
	"$(sql "select '$D'::timestamptz - interval '4 days' + interval '5 hours'")"
expect_eq "with the history range oldest and no hole, nothing was dropped" "none (nothing dropped yet)" \
	"$("$PAL" retention --horizon)"
FROM=$(fmt "$R2")
TO=$(fmt "$(sql "select '$R3'::timestamptz - interval '1 second'")")
expect_exit "verify over the day after the history range" 0 "$PAL" verify --from "$FROM" --to "$TO" --job vh.job --stuck-after 0
expect_match "finds every instant" "^verify: OK .*expected=24 triggered=24 .*missing=0 " "$OUT"
expect_exit "a round keeping two hours" 0 "$PAL" retention --interval 1h --ahead 1d --keep 2h
expect_match "keeps the history range, which holds a live trigger" "kept triggers_phistory .*: 1 live triggers" "$OUT"
expect_match "drops the day after it" "dropped triggers_p$(date -u -d "$R2" +%Y%m%d)_000000 " "$OUT"
H=$("$PAL" retention --horizon)
expect_eq "the horizon is the end of the day dropped (not none)" "$(fmt "$R3")" "$H"
expect_exit "verify over that day is refused" 4 "$PAL" verify --from "$FROM" --to "$TO" --job vh.job --stuck-after 0
expect_match "naming the horizon" "is before the retention horizon $H" "$OUT"
finish
