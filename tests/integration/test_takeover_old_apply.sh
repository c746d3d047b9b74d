#!/usr/bin/env bash
# During a roll from 0.3.0, a one-shot `at` moved (or a job changed to a
# one-shot) by an apply of 0.3.0 (its CLI, or POST /api/v1/apply of a 0.3.0
# node) while a controller of this release leads the shard.  The 0.3.0
# apply cancels nothing; this release's controller activates the new
# version at the apply (switch_point, src/controller/planner.c), so it
# cancels itself, through the door, the rows the old version planned after
# that point at instants the new version does not fire
# (write_takeovers, src/store/plan.c).  Checked: the moved one-shot has one
# pending row, at its new instant, the old one cancelled and audited by the
# controller; a cron job changed to a one-shot keeps no cron row after the
# apply, only its `at`; a one-shot moved while its job is in shadow keeps
# no shadow row at its old instant (a cut-over would make it live).
#
# Environment: PALISADE_OLD_TREE (default /tmp/palisade-0.3.0-build: the
# build tree of 0.3.0 from ops/releases/, kept as the cache).
source tests/integration/lib.sh
source tests/integration/cluster.sh
source tests/integration/releases.sh
guarantee "G1 + G2 during a roll from 0.3.0: a one-shot moved by a 0.3.0 apply beside this release's controller fires once, at its new instant"
T_START=$(date +%s)
db_from_030 it_takeover_old_apply || { finish; exit 1; }
SHARDS=1 LOOKAHEAD=60s MISFIRE=2m
write_conf "$CLUSTER_CONF"
T1=$(($(date +%s) + 45))
T2=$((T1 - 10))
T3=$((T1 / 5 * 5 + 7)) # not an instant of ta.c's cron
url='{url: "http://127.0.0.1:9/x"}'
at_job() { printf 'jobs:\n  - {id: %s, schedule: {at: "%s"}, target: %s}\n' "$1" "$(iso "$2")" "$url"; }
shadow_job() { printf '  - {id: ta.s, mode: shadow, schedule: {at: "%s"}, target: %s}\n' "$(iso "$1")" "$url"; }
{ at_job ta.a "$T1"; shadow_job "$T1"; } >"$NODE_DIR/a1.yaml"
{ at_job ta.a "$T2"; shadow_job "$T2"; } >"$NODE_DIR/a2.yaml"
printf 'jobs:\n  - {id: ta.c, schedule: {cron: "*/5 * * * * ?"}, target: %s}\n' "$url" >"$NODE_DIR/c1.yaml"
at_job ta.c "$T3" >"$NODE_DIR/c2.yaml"
expect_exit "ta.a and ta.s (in shadow) at T1 = $(hms "$T1") and ta.c every 5 s applied (0.3.0 CLI)" 0 \
	"$OLD_PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/a1.yaml" "$NODE_DIR/c1.yaml"
start_node n1 --roles controller
wait_until "this release's controller plans T1" 20 \
	has "select count(*) from triggers where job_id = 'ta.a' and scheduled_at = '$(iso "$T1")'" ||
	{ finish; exit 1; }
wait_until "... and T1 of ta.s, in shadow" 10 \
	has "select count(*) from triggers where job_id = 'ta.s' and scheduled_at = '$(iso "$T1")' and state = 'shadow'"
expect_exit "ta.a and ta.s moved to T2 = $(hms "$T2"), ta.c changed to a one-shot at T3 = $(hms "$T3") (0.3.0 CLI)" 0 \
	"$OLD_PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/a2.yaml" "$NODE_DIR/c2.yaml"
APPLIED=$(date +%s)
rows() { sql "select string_agg(to_char(scheduled_at at time zone 'UTC', 'HH24:MI:SS') || ' v' || version || ' ' || state, ', ' order by scheduled_at) from triggers where job_id = '$1'"; }
pending() { sql "select count(*) || ' ' || coalesce(string_agg(to_char(scheduled_at at time zone 'UTC', 'HH24:MI:SS'), ',' order by scheduled_at), '') from triggers where job_id = '$1' and state = 'pending' and scheduled_at > to_timestamp($APPLIED)"; }
activated() { has "select count(*) from job_versions where job_id = 'ta.c' and version = 2 and effective_from is not null" &&
	has "select count(*) from job_versions where job_id = 'ta.a' and version = 2 and effective_from is not null" &&
	has "select count(*) from job_versions where job_id = 'ta.s' and version = 2 and effective_from is not null"; }
wait_until "the controller activates the three new versions" 10 activated
sleep 2
echo "    | ta.a rows: $(rows ta.a)"
echo "    | ta.c rows after the apply: $(sql "select string_agg(to_char(scheduled_at at time zone 'UTC', 'HH24:MI:SS') || ' v' || version || ' ' || state, ', ' order by scheduled_at) from triggers where job_id = 'ta.c' and scheduled_at > to_timestamp($APPLIED)")"
expect_eq "ta.a: one pending row, at T2 (not T1 besides)" "1 $(hms "$T2")" "$(pending ta.a)"
expect_eq "... T1's row cancelled" cancelled \
	"$(sql "select state from triggers where job_id = 'ta.a' and scheduled_at = '$(iso "$T1")'")"
expect_eq "... by the controller, audited" 1 \
	"$(sql "select count(*) from audit_log where action = 'cancel' and scope = 'job:ta.a' and actor = 'controller:n1'")"
expect_eq "ta.c: after the apply only its one-shot is pending" "1 $(hms "$T3")" "$(pending ta.c)"
expect_eq "... of the new version" 2 "$(sql "select max(version) from triggers where job_id = 'ta.c' and state = 'pending'")"
expect_eq "... every cron row after the apply that had not begun cancelled" 0 \
	"$(sql "select count(*) from triggers where job_id = 'ta.c' and version = 1 and scheduled_at > to_timestamp($APPLIED + 1) and state in ('pending', 'paused')")"
# a shadow row of the replaced version would be made live by a cut-over
# (every shadow row from its instant on), whatever version planned it
echo "    | ta.s rows: $(rows ta.s)"
expect_eq "ta.s (in shadow): T1's shadow row dropped, not left for a cut-over to make live" 0 \
	"$(sql "select count(*) from triggers where job_id = 'ta.s' and scheduled_at = '$(iso "$T1")'")"
expect_eq "... by the controller, audited (trigger.drop)" 1 \
	"$(sql "select count(*) from audit_log where action = 'trigger.drop' and scope = 'job:ta.s' and actor = 'controller:n1'")"
expect_eq "... its only shadow row is T2's, of the new version" "1 $(hms "$T2") v2" \
	"$(sql "select count(*) || ' ' || string_agg(to_char(scheduled_at at time zone 'UTC', 'HH24:MI:SS') || ' v' || version, ',') from triggers where job_id = 'ta.s' and state = 'shadow'")"
stop_all_nodes
echo "    figure: test took $(($(date +%s) - T_START)) s"
finish
