#!/usr/bin/env bash
# ZooKeeper coordination (src/coord, docs/election.md) against the harness's
# real ZooKeeper (tickTime 100 ms): shard elections, epoch = czxid, balance,
# handoff, failover after kill -9 and after a pause past the session timeout,
# suspension on disconnect, no herd, protected create.
#
# Each probe is tests/integration/coord_probe: one pal_coord per process,
# one stdout line per snapshot change ("t=<unix ms> ... since=.. leading=.. epochs=..").
source tests/integration/lib.sh
guarantee "G6, ZooKeeper half - at most one current leader per shard; every new leader's epoch (czxid) is larger than every earlier leader's; a paused or disconnected leader stops claiming its shards; handoff is immediate, failover bounded by the session timeout"

PROBE=${PALISADE_ITESTS:-build/itests}/coord_probe
ZK=$PALISADE_ZK
W=$PALISADE_TEST_TMP/coord
mkdir -p "$W"
RUN=$$
SESS=1500 # session timeout of the failover probes (ms)
declare -A PID FD
PROXY_PID=

cleanup() {
	for n in "${!PID[@]}"; do
		kill -CONT "${PID[$n]}" 2>/dev/null
		kill -9 "${PID[$n]}" 2>/dev/null
	done
	[ -n "$PROXY_PID" ] && kill "$PROXY_PID" 2>/dev/null
	wait 2>/dev/null
}
trap cleanup EXIT

now_ms() { date +%s%3N; }

# start NAME CLUSTER SHARDS [probe options...]: a probe reading commands from a FIFO.
start() {
	local name=$1 cluster=$2 shards=$3
	shift 3
	rm -f "$W/$name.in"
	mkfifo "$W/$name.in"
	"$PROBE" --zk "${ZKVIA:-$ZK}" --node-id "$name" --cluster "$cluster-$RUN" --shards "$shards" \
		--session-ms "$SESS" "$@" <"$W/$name.in" >"$W/$name.out" 2>"$W/$name.err" &
	PID[$name]=$!
	local fd
	exec {fd}>"$W/$name.in"
	FD[$name]=$fd
}
send() { echo "$2" >&"${FD[$1]}"; }
# finish NAME: the probe has exited or was killed; forget it.
finish_probe() {
	wait "${PID[$1]}" 2>/dev/null
	exec {FD[$1]}>&-
	unset "PID[$1]" "FD[$1]"
}
state() { grep '^t=' "$W/$1.out" | tail -1; }
field() { state "$1" | sed -n "s/.* $2=\([^ ]*\).*/\1/p"; }
# epoch_of NAME SHARD: the epoch NAME reports for SHARD in its latest view ("" when not led).
epoch_of() { state "$1" | sed 's/.* epochs=//' | tr ',' '\n' | sed -n "s/^$2://p"; }
# new_epoch NAME SHARD OLD: NAME leads SHARD with an epoch other than OLD (one read).
new_epoch() { local e; e=$(epoch_of "$1" "$2"); [ -n "$e" ] && [ "$e" != "$3" ]; }
nled() { local l; l=$(field "$1" leading); [ -z "$l" ] && echo 0 || tr ',' '\n' <<<"$l" | wc -l; }
stat_of() { grep '^stats' "$W/$1.out" | tail -1 | sed -n "s/.* $2=\([^ ]*\).*/\1/p"; }
# more_lines NAME REGEX N: NAME's output has more than N lines matching REGEX.
more_lines() { [ "$(grep -c "$2" "$W/$1.out")" -gt "$3" ]; }
stats() { # stats NAME...: ask for fresh counters, wait for the line
	local n before
	for n in "$@"; do
		before=$(grep -c '^stats' "$W/$n.out")
		send "$n" stats
		wait_until 3000 more_lines "$n" '^stats' "$before"
	done
}
sleep_ms() { sleep "$(awk -v m="$1" 'BEGIN { printf "%.3f", (m > 0 ? m : 0) / 1000 }')"; }
# wait_until MS COMMAND...: poll every 50 ms.
wait_until() {
	local deadline=$(($(now_ms) + $1))
	shift
	while ! "$@" 2>/dev/null; do
		[ "$(now_ms)" -ge "$deadline" ] && return 1
		sleep 0.05
	done
}
dump() { "$PROBE" --dump --zk "$ZK" --cluster "$1-$RUN" --shards "$2"; }

cat >"$W/analyze.py" <<'PY'
import re, sys

def pairs(text):
    return dict((int(a), int(b)) for a, b in (x.split(":") for x in text.split(",") if x))

def lines(path, with_since=False):
    out = []
    for l in open(path):
        m = re.match(r"t=(\d+) gen=\d+ connected=(\d) since=(\S*) leading=(\S*) epochs=(\S*)", l)
        if m:
            ep = pairs(m.group(5))
            row = (int(m.group(1)), m.group(2) == "1", ep)
            out.append(row + (pairs(m.group(3)),) if with_since else row)
    return out

def name(p):
    return p.rsplit("/", 1)[-1].split(".")[0].split(":")[0]

cmd = sys.argv[1]
if cmd == "cover":
    # ms from T0 until the probes' latest views together lead every shard in SHARDS
    t0, shards, files = int(sys.argv[2]), set(int(x) for x in sys.argv[3].split(",") if x), sys.argv[4:]
    cur, ev = {}, []
    for f in files:
        for t, c, ep in lines(f):
            if t < t0:
                cur[f] = set(ep)
            else:
                ev.append((t, f, set(ep)))
    for t, f, s in sorted(ev, key=lambda e: e[0]):
        cur[f] = s
        if shards <= set().union(*cur.values()):
            print(t - t0)
            sys.exit(0)
    print(-1)
elif cmd == "epochs":
    # every (shard, epoch) is claimed by one node only, and successive leaders
    # of a shard (ordered by when they first claimed it) have increasing epochs
    owner, acq, bad = {}, {}, []
    for f in sys.argv[2:]:
        for t, c, ep in lines(f):
            for s, e in ep.items():
                o = owner.setdefault((s, e), name(f))
                if o != name(f):
                    bad.append("shard %d epoch %d claimed by %s and %s" % (s, e, o, name(f)))
                acq.setdefault(s, {}).setdefault(e, t)
    n = 0
    for s, m in acq.items():
        seq = sorted(m.items(), key=lambda kv: kv[1])
        n += len(seq)
        for (e1, t1), (e2, t2) in zip(seq, seq[1:]):
            if e2 <= e1:
                bad.append("shard %d: epoch %d (t=%d) after epoch %d (t=%d)" % (s, e2, t2, e1, t1))
    print("ok %d leaderships" % n if not bad else "; ".join(bad[:5]))
elif cmd == "overlap":
    # largest number of probes claiming one shard at the same time, from the
    # lines of each probe up to UNTIL (a killed probe's claims end at FILE:END).
    # A claim or release counts from when the module published it (since=),
    # not from when the probe got round to printing it; a shard whose epoch
    # changed between two lines was released and claimed again.
    until, files = int(sys.argv[2]), sys.argv[3:]
    ev = []
    for spec in files:
        f, _, end = spec.partition(":")
        prev = {}
        for t, c, ep, since in lines(f, True):
            if t > until:
                break
            for s in set(ep) | set(prev):
                if ep.get(s) == prev.get(s):
                    continue
                at = since.get(s, t)
                if s in prev:
                    ev.append((at, -1, s, name(f)))
                if s in ep:
                    ev.append((at, 1, s, name(f)))
            prev = ep
        stop = int(end) if end else until
        for s in prev:
            ev.append((stop, -1, s, name(f)))
    cnt, worst = {}, (0, None, None)
    for t, d, s, who in sorted(ev, key=lambda e: (e[0], e[1])):  # releases first at equal t
        cnt[s] = cnt.get(s, 0) + d
        if cnt[s] > worst[0]:
            worst = (cnt[s], s, t)
    if worst[0] <= 1:
        print(worst[0])
    else:
        # the shard's claims and releases around the overlap, to tell a
        # real second leader from a late report
        near = ["%s%s@%d" % (who, "+" if d > 0 else "-", t - worst[2])
                for t, d, s, who in sorted(ev, key=lambda e: (e[0], e[1]))
                if s == worst[1] and abs(t - worst[2]) <= 3000]
        print("%d (shard %s at t=%s; ms from it: %s)" % (worst + (" ".join(near),)))
elif cmd == "regained":
    # (node, shard) pairs a probe led, gave up and led again with a new
    # epoch between T0 and UNTIL: a shard handed off and won back
    t0, until, files = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
    out = []
    for f in files:
        held, lost = {}, {}
        for t, c, ep in lines(f):
            if t > until:
                break
            for s in list(held):
                if ep.get(s) != held[s]:
                    if t >= t0:
                        lost[s] = held[s]
                    del held[s]
            for s, e in ep.items():
                if s not in held:
                    if s in lost and lost[s] != e and t >= t0:
                        out.append("%s:%d" % (name(f), s))
                    held[s] = e
    print(" ".join(out) if out else "none")
elif cmd == "log":
    # number of JSON log lines of EVENT whose fields match every key=value
    import json
    want = dict(kv.split("=", 1) for kv in sys.argv[4:])
    n = 0
    for l in open(sys.argv[2]):
        try:
            j = json.loads(l)
        except ValueError:
            continue
        if j.get("event") == sys.argv[3] and all(str(j.get(k)) == v for k, v in want.items()):
            n += 1
    print(n)
elif cmd == "expiries":
    # the sessions whose expiry the JSON log FILE records from its line
    # FIRST on, in order; "?" after one for which the ZooKeeper client had
    # not logged the server's word ("sessionId=... has expired.") before
    import json
    first, said, out = int(sys.argv[3]), set(), []
    for i, l in enumerate(open(sys.argv[2]), 1):
        try:
            j = json.loads(l)
        except ValueError:
            continue
        if j.get("event") == "zk.client":
            m = re.search(r"sessionId=(0x[0-9a-f]+) has expired", j.get("message", ""))
            if m:
                said.add(m.group(1))
        elif j.get("event") == "coord.session.expired" and i >= first:
            out.append(j["session"] + ("" if j["session"] in said else "?"))
    print(" ".join(out))
PY
ana() { python3 "$W/analyze.py" "$@"; }
# logged FILE EVENT [key=value...]: the JSON log has such a line.
logged() { [ "$(ana log "$@")" -gt 0 ]; }

# settled N NAME...: the probes are connected and together lead shards 0..N-1
# exactly once each.
settled() {
	local n=$1 all="" name
	shift
	for name in "$@"; do
		[ "$(field "$name" connected)" = 1 ] || return 1
		all="$all,$(field "$name" leading)"
	done
	[ "$(tr ',' '\n' <<<"$all" | grep -c .)" -eq "$n" ] && [ "$(tr ',' '\n' <<<"$all" | grep . | sort -u | wc -l)" -eq "$n" ]
}
max_led() { local m=0 n; for n in "$@"; do [ "$(nled "$n")" -gt $m ] && m=$(nled "$n"); done; echo $m; }
balanced() { settled 16 "$@" && [ "$(max_led "$@")" -le $(((16 + $# - 1) / $#)) ]; }
balanced2() { settled 2 a b && [ "$(nled a)" = 1 ] && [ "$(nled b)" = 1 ]; }
# stable NAME...: balanced, and nobody's view changes for 600 ms (three
# balance pauses): the cluster has converged, not just passed through.
stable() {
	balanced "$@" || return 1
	local n before=""
	for n in "$@"; do before="$before $(field "$n" leading)"; done
	sleep 0.6
	local after=""
	for n in "$@"; do after="$after $(field "$n" leading)"; done
	[ "$before" = "$after" ] && balanced "$@"
}
# epochs_match_dump CLUSTER N NAME...: every led shard's epoch is the czxid of
# the lowest election znode, whose data is the leader's node id (independent read).
epochs_match_dump() {
	local cluster=$1 n=$2 name s e
	shift 2
	local d
	d=$(dump "$cluster" "$n")
	for name in "$@"; do
		for se in $(field "$name" epochs | tr ',' ' '); do
			s=${se%%:*} e=${se#*:}
			grep -q "^znode shard=$s rank=0 name=[^ ]* czxid=$e owner=[^ ]* data=$name\$" <<<"$d" || {
				echo "shard $s: $name claims epoch $e; dump: $(grep "^znode shard=$s " <<<"$d" | head -2)"
				return 1
			}
		done
	done
}

echo "  -- pure helpers"
expect_exit "find-own-znode-by-uuid and predecessor logic (coord_probe --selftest)" 0 "$PROBE" --selftest
expect_match "all helper checks pass" "checks, 0 failed" "$OUT"

# The overlap analysis on made-up views: a release printed late but
# published before the successor's claim is one leader at a time; a claim
# published while the old leader still led is two.
printf 't=1100 gen=1 connected=1 since=7:1000 leading=7 epochs=7:5\nt=1300 gen=2 connected=1 since=7:1200 leading= epochs=\n' >"$W/syn-a.out"
printf 't=1250 gen=1 connected=1 since=7:1210 leading=7 epochs=7:9\n' >"$W/syn-b.out"
expect_eq "overlap analysis: a step-down printed after the successor's claim is not an overlap" 1 \
	"$(ana overlap 2000 "$W/syn-a.out" "$W/syn-b.out")"
printf 't=1250 gen=1 connected=1 since=7:1190 leading=7 epochs=7:9\n' >"$W/syn-b.out"
expect_match "overlap analysis: a claim published before the step-down is" '^2 \(shard 7 at t=1190' \
	"$(ana overlap 2000 "$W/syn-a.out" "$W/syn-b.out")"

# The expiry analysis on made-up logs: the session the server announced
# as expired, and one it did not.
printf '%s\n' '{"event":"zk.client","message":"ZOO_ERROR@check_events@3048: sessionId=0xa1 has expired."}' \
	'{"event":"coord.session.expired","session":"0xa1"}' '{"event":"coord.session.expired","session":"0xb2"}' >"$W/syn.err"
expect_eq "expiry analysis: an expiry the server did not announce is marked" "0xa1 0xb2?" "$(ana expiries "$W/syn.err" 1)"

echo "  -- one node"
start a solo 16
check "a single node leads all 16 shards" wait_until 5000 settled 16 a
expect_eq "epochs are distinct per shard" 16 "$(field a epochs | tr ',' '\n' | cut -d: -f2 | sort -u | wc -l)"
OUTD=$(epochs_match_dump solo 16 a)
expect_eq "each epoch is the czxid of the node's own election znode (independent read)" "" "$OUTD"
expect_eq "one znode per shard election" 16 "$(dump solo 16 | grep -c '^znode')"
expect_exit "a second process with the same node id is refused (node id busy)" 3 \
	"$PROBE" --zk "$ZK" --node-id a --cluster "solo-$RUN" --shards 16 --session-ms $SESS
expect_match "with a message naming the id" "node id a is already in use by a live node" "$OUT"
e5=$(epoch_of a 5)
send a "resign 5"
check "resign: the node re-joins shard 5 at the tail and, alone, wins again" wait_until 3000 new_epoch a 5 "$e5"
e5b=$(epoch_of a 5)
check "with a larger epoch ($e5 -> $e5b)" test "${e5b:-0}" -gt "$e5"
e7=$(epoch_of a 7)
send a "dropcreate 1"
send a "resign 7"
check "protected create: after a lost create reply the node leads shard 7 again" wait_until 3000 new_epoch a 7 "$e7"
check "the lost reply was simulated" logged "$W/a.err" election.test_drop_reply shard=7
check "the znode was found again by uuid" logged "$W/a.err" election.create_recovered shard=7
expect_eq "and no duplicate znode was created (shard 7 has one znode)" 1 "$(dump solo 16 | grep -c '^znode shard=7 ')"
OUTD=$(epochs_match_dump solo 16 a)
expect_eq "the adopted znode's czxid is the epoch" "" "$OUTD"
stats a
expect_eq "recoveries counted" 1 "$(stat_of a recoveries)"
send a quit
finish_probe a

echo "  -- three nodes, balance"
# Each candidacy a drain withdraws takes 20 ms longer (drill switch): the
# window in which a loaded draining node still queues behind its peers.
export PALISADE_FAULT_SLOW_DRAIN_MS=20
start a trio 16
wait_until 5000 settled 16 a
start b trio 16
check "two nodes settle 8/8" wait_until 8000 stable a b
t_join=$(now_ms)
start c trio 16
unset PALISADE_FAULT_SLOW_DRAIN_MS
check "a third node joins; 16 shards spread so that nobody leads more than 6" wait_until 8000 stable a b c
echo "    FIGURE balance: stable $(($(now_ms) - t_join)) ms after the third node started (incl. 600 ms of stability): a=$(nled a) b=$(nled b) c=$(nled c)"
OUTD=$(epochs_match_dump trio 16 a b c)
expect_eq "each shard's leader holds its lowest znode and reports its czxid" "" "$OUTD"
stats a b c
check "the joining node got its share ($(nled c) shards)" test "$(nled c)" -ge 4
check "by handoff (balance handoffs a=$(stat_of a handoffs_balance) b=$(stat_of b handoffs_balance))" \
	test $(($(stat_of a handoffs_balance) + $(stat_of b handoffs_balance))) -gt 0
expect_eq "not by session expiry" "0 0 0" "$(stat_of a expiries) $(stat_of b expiries) $(stat_of c expiries)"
check "no flapping once balanced (unchanged over another 600 ms)" stable a b c

echo "  -- graceful handoff (SIGTERM)"
big=a
for n in b c; do [ "$(nled $n)" -gt "$(nled $big)" ] && big=$n; done
rest=$(echo a b c | tr ' ' '\n' | grep -vx $big | tr '\n' ' ')
shards_big=$(field $big leading)
t0=$(now_ms)
kill -TERM "${PID[$big]}"
files=""
for n in $rest; do files="$files $W/$n.out"; done
check "the others take over $big's shards ($shards_big)" wait_until 3000 settled 16 $rest
ms=$(ana cover "$t0" "$shards_big" $files)
echo "    FIGURE graceful handoff: successors led all of $big's shards ${ms} ms after SIGTERM"
check "within 1 s (${ms} ms)" test "$ms" -ge 0 -a "$ms" -lt 1000
# A survivor that wins one of the draining node's shards leads more than its
# quota while the draining node is still registered; it must not hand one
# of its own shards to the draining node (still queued behind it until its
# candidacies are withdrawn) and win it back with a new epoch - with many
# jobs per shard that cost the survivor a drop and a whole reload.
expect_eq "no survivor hands a shard to the draining node and wins it back" none \
	"$(ana regained "$t0" $((t0 + ms + 300)) $files)"
check "$big's handoff completed" grep -q '^handoff rc=0' "$W/$big.out"
finish_probe $big
expect_eq "$big's znodes are gone" 0 "$(dump trio 16 | grep -c "data=$big\$")"
set -- $rest
x=$1 y=$2
check "the two remaining nodes rebalance to 8/8" wait_until 8000 stable $x $y

echo "  -- kill -9 of a leader"
shards_x=$(field $x leading)
t_kill=$(now_ms)
{
	kill -9 "${PID[$x]}"
	finish_probe $x
} 2>/dev/null # no "Killed" job notice
check "$y takes over $x's shards after $x's session expires" wait_until $((SESS * 4)) settled 16 $y
ms=$(ana cover "$t_kill" "$shards_x" "$W/$y.out")
echo "    FIGURE kill -9 failover: $y led all of $x's shards ${ms} ms after the kill (session timeout ${SESS} ms)"
check "within session timeout + 1 s (${ms} ms)" test "$ms" -ge 0 -a "$ms" -lt $((SESS + 1000))
specs=""
for n in a b c; do
	if [ $n = $x ]; then specs="$specs $W/$n.out:$t_kill"; else specs="$specs $W/$n.out"; fi
done
OV=$(ana overlap "$(now_ms)" $specs)
expect_eq "one leader per shard at a time across joins, balance, handoff and kill -9" 1 "$OV"

echo "  -- pause (SIGSTOP) past the session timeout"
PALISADE_FAULT_SLOW_DRAIN_MS=20 start d trio 16
check "a new node joins and the pair rebalances" wait_until 8000 stable $y d
shards_y=$(field $y leading)
epochs_y=$(field $y epochs)
stats $y
exp_before=$(stat_of $y expiries)
sess_y=$(grep '"coord.session.started"' "$W/$y.err" | tail -1 | sed 's/.*"session":"\([^"]*\)".*/\1/')
log_from=$(($(wc -l <"$W/$y.err") + 1))
t_stop=$(now_ms)
kill -STOP "${PID[$y]}"
check "while $y is stopped, d takes over its shards" wait_until $((SESS * 4)) settled 16 d
ms=$(ana cover "$t_stop" "$shards_y" "$W/d.out")
echo "    FIGURE pause failover: d led all of $y's shards ${ms} ms after SIGSTOP"
bigger=1
for se in $(tr ',' ' ' <<<"$epochs_y"); do
	s=${se%%:*} e=${se#*:}
	ne=$(epoch_of d "$s")
	[ "${ne:-0}" -gt "$e" ] || { bigger=0; echo "    shard $s: d epoch $ne <= $y epoch $e"; }
done
expect_eq "with larger epochs than $y's" 1 "$bigger"
sleep_ms $((SESS * 2 - ($(now_ms) - t_stop)))
lines_before=$(grep -c '^t=' "$W/$y.out")
kill -CONT "${PID[$y]}"
check "after SIGCONT (stopped $(($(now_ms) - t_stop)) ms), $y publishes a new view" wait_until 3000 more_lines $y '^t=' "$lines_before"
first=$(grep '^t=' "$W/$y.out" | sed -n "$((lines_before + 1))p")
expect_match "and its first view after resuming claims no shard" "leading= epochs=$" "$first"
check "$y observes the expiry, opens a new session and re-joins" wait_until 8000 stable $y d
stats $y d
# Each expiry counted is a session the server expired (the client library
# logs the server's answer), each once.  On a loaded box a later session of
# $y may expire too (its ZooKeeper client starved past the 1.5 s timeout:
# "Exceeded deadline" lines): a real expiry, counted as such.
EXP=$(ana expiries "$W/$y.err" "$log_from")
expect_eq "$y counted the expiry of the session it had when stopped ($sess_y), once" 1 \
	"$(tr ' ' '\n' <<<"$EXP" | grep -cx "$sess_y")"
expect_eq "every expiry $y counted is another session the server expired ($EXP)" \
	"$(($(stat_of $y expiries) - exp_before))" "$(tr ' ' '\n' <<<"$EXP" | grep -v '?$' | grep . | sort -u | wc -l)"
[ "$(wc -w <<<"$EXP")" -gt 1 ] &&
	echo "    NOTE $y lost later sessions too ($EXP): $(grep -c 'Exceeded deadline' "$W/$y.err") 'Exceeded deadline' lines of its ZooKeeper client"
expect_eq "d counted none" 0 "$(stat_of d expiries)"
check "$y's new leaderships carry epochs larger than d's takeover" bash -c "
	for se in \$(grep '^t=' '$W/$y.out' | tail -1 | sed 's/.*epochs=//' | tr ',' ' '); do
		s=\${se%%:*} e=\${se#*:}
		for de in \$(grep '^t=' '$W/d.out' | sed 's/.*epochs=//' | tr ',' '\n' | sed -n \"s/^\$s://p\"); do
			[ \$e -gt \$de ] || exit 1
		done
	done"
OUTD=$(epochs_match_dump trio 16 $y d)
expect_eq "and they are the czxids of the new session's znodes" "" "$OUTD"
EP=$(ana epochs "$W"/a.out "$W"/b.out "$W"/c.out "$W"/d.out)
expect_match "epochs of successive leaders strictly increase and no epoch is claimed twice ($EP)" "^ok " "$EP"

echo "  -- graceful handoff between two balanced nodes"
# The node leading shard 0 drains: in shard order its first withdrawn
# candidacy would be a led one, won at once by the other node, which then
# leads 9 of 16 while the draining node (still queued behind it in its own
# shards, its withdrawals slowed by the drill switch) looks under quota.
drainer=$y other=d
[ -n "$(epoch_of d 0)" ] && drainer=d other=$y
t0=$(now_ms)
kill -TERM "${PID[$drainer]}"
check "$other takes over all 16 shards" wait_until 5000 settled 16 $other
sleep 1
expect_eq "$other hands no shard to the draining $drainer only to win it back" none \
	"$(ana regained "$t0" "$(now_ms)" "$W/$other.out")"
finish_probe $drainer
send $other quit
finish_probe $other

echo "  -- no herd: each waiter watches only its predecessor"
SESS=4000
start h1 herd 4 --no-balance --log-level debug
wait_until 5000 settled 4 h1
start h2 herd 4 --no-balance --log-level debug
wait_until 3000 logged "$W/h2.err" election.lost shard=3
start h3 herd 4 --no-balance --log-level debug
wait_until 3000 logged "$W/h3.err" election.lost shard=3
stats h1 h2 h3
expect_eq "watches set: leader 0, second 4, third 4 (one per shard)" "0 4 4" \
	"$(stat_of h1 watches) $(stat_of h2 watches) $(stat_of h3 watches)"
D=$(dump herd 4)
ok=1
for s in 0 1 2 3; do
	r0=$(sed -n "s/^znode shard=$s rank=0 name=\([^ ]*\) .*data=h1$/\1/p" <<<"$D")
	r1=$(sed -n "s/^znode shard=$s rank=1 name=\([^ ]*\) .*data=h2$/\1/p" <<<"$D")
	logged "$W/h2.err" election.watch shard=$s predecessor="$r0" || ok=0
	logged "$W/h3.err" election.watch shard=$s predecessor="$r1" || ok=0
	[ -n "$r0" ] && [ -n "$r1" ] || ok=0
done
expect_eq "h2 watches h1's znode and h3 watches h2's, in every shard (not the leader's)" 1 "$ok"
t0=$(now_ms)
send h1 handoff
check "after h1 hands off, h2 leads all 4 shards" wait_until 3000 settled 4 h2
ms=$(ana cover "$t0" 0,1,2,3 "$W/h2.out")
echo "    FIGURE handoff command: h2 led all 4 shards ${ms} ms after 'handoff' was sent"
stats h2 h3
expect_eq "only the direct successor was woken: watch events h2=4, h3=0" "4 0" \
	"$(stat_of h2 watch_events) $(stat_of h3 watch_events)"
expect_eq "h3 set no new watch (still 4)" 4 "$(stat_of h3 watches)"
for n in h1 h2 h3; do send $n quit; finish_probe $n; done

echo "  -- disconnect without expiry: suspend at once, resume with the same epochs"
PORT_FILE=$W/proxy.port
cat >"$W/zkproxy.py" <<'PY'
# TCP proxy to ZooKeeper; SIGUSR1 drops every connection and refuses new
# ones for CUT seconds (a network cut that the client sees at once).
import signal, socket, sys, threading, time
target = (sys.argv[1].split(":")[0], int(sys.argv[1].split(":")[1]))
cut = float(sys.argv[2])
live, lock, state = set(), threading.Lock(), {"until": 0.0}
def pump(a, b):
    try:
        while True:
            d = a.recv(65536)
            if not d:
                break
            b.sendall(d)
    except OSError:
        pass
    for s in (a, b):
        try: s.shutdown(socket.SHUT_RDWR)
        except OSError: pass
def on_usr1(sig, frm):
    state["until"] = time.time() + cut
    with lock:
        for s in list(live):
            try: s.shutdown(socket.SHUT_RDWR)
            except OSError: pass
signal.signal(signal.SIGUSR1, on_usr1)
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 0)); srv.listen(16); srv.settimeout(0.05)
open(sys.argv[3], "w").write(str(srv.getsockname()[1]))
while True:
    try:
        cl, _ = srv.accept()
    except (socket.timeout, InterruptedError):
        continue
    if time.time() < state["until"]:
        cl.close(); continue
    try:
        up = socket.create_connection(target)
    except OSError:
        cl.close(); continue
    with lock:
        live.update((cl, up))
    threading.Thread(target=pump, args=(cl, up), daemon=True).start()
    threading.Thread(target=pump, args=(up, cl), daemon=True).start()
PY
python3 "$W/zkproxy.py" "$ZK" 1.0 "$PORT_FILE" &
PROXY_PID=$!
# python's start takes seconds on a loaded box
check "the proxy listens" wait_until 15000 test -s "$PORT_FILE"
SESS=5000
ZKVIA=127.0.0.1:$(cat "$PORT_FILE") start p net 4
check "a node behind the proxy leads all 4 shards" wait_until 5000 settled 4 p
epochs_p=$(field p epochs)
lines_before=$(grep -c '^t=' "$W/p.out")
t_cut=$(now_ms)
kill -USR1 $PROXY_PID
check "on the cut it publishes 'not connected, nothing led'" \
	wait_until 3000 bash -c "grep '^t=' '$W/p.out' | sed -n '$((lines_before + 1)),\$p' | grep -q 'connected=0 since=[^ ]* leading= '"
t_susp=$(grep '^t=' "$W/p.out" | sed -n "$((lines_before + 1)),\$p" | grep -m1 'connected=0 since=[^ ]* leading= ' | sed 's/^t=\([0-9]*\).*/\1/')
echo "    FIGURE suspension: nothing led ${t_susp:+$((t_susp - t_cut))} ms after the connection was cut"
check "after reconnecting with the same session it leads again" wait_until $((SESS + 3000)) settled 4 p
expect_eq "with the same epochs (same znodes, nothing was re-elected)" "$epochs_p" "$(field p epochs)"
stats p
expect_eq "one suspension, no expiry" "1 0" "$(stat_of p suspensions) $(stat_of p expiries)"
check "suspension and resume were logged" logged "$W/p.err" coord.suspended
check "resume was logged" logged "$W/p.err" coord.resumed
send p quit
finish_probe p
kill $PROXY_PID 2>/dev/null
wait $PROXY_PID 2>/dev/null
PROXY_PID=
echo "  -- access control: digest credentials, ACLs, foreign election znodes"
# The tree is first created without credentials (a cluster from before
# access control), and someone plants election znodes in it: a persistent
# one (shard 0) and an ephemeral one whose session registered no node
# (shard 1), both lower than any candidate's.
SESS=1500
AUTH=pal:s3cret-$RUN
BASE=/palisade/acl-$RUN
intrude() { "$PROBE" --intrude "$1" --path "$2" --zk "$ZK" "${@:3}"; }
start o acl 2 --no-balance
check "a node without credentials creates the tree (open ACL)" wait_until 5000 settled 2 o
send o quit
finish_probe o
plant0=$(intrude plant-persistent "$BASE/shards/0000/election")
expect_match "a persistent election znode planted in shard 0 (no credentials)" 'rc=0 ' "$plant0"
rm -f "$W/ghost.in"
mkfifo "$W/ghost.in"
"$PROBE" --intrude plant-ephemeral --path "$BASE/shards/0001/election" --zk "$ZK" \
	<"$W/ghost.in" >"$W/ghost.out" 2>&1 &
PID[ghost]=$!
exec {gfd}>"$W/ghost.in"
check "an ephemeral one in shard 1, by a session that registered no node" \
	wait_until 5000 grep -q 'rc=0 ' "$W/ghost.out"
# and one by a process that has the credentials but is no registered node
rm -f "$W/ghost2.in"
mkfifo "$W/ghost2.in"
"$PROBE" --intrude plant-ephemeral --path "$BASE/shards/0001/election" --zk "$ZK" --auth "$AUTH" \
	<"$W/ghost2.in" >"$W/ghost2.out" 2>&1 &
PID[ghost2]=$!
exec {gfd2}>"$W/ghost2.in"
check "another in shard 1, with the credentials, by a session that registered no node" \
	wait_until 5000 grep -q 'rc=0 ' "$W/ghost2.out"
start a acl 2 --auth "$AUTH"
check "a node with credentials leads both shards despite the planted znodes" wait_until 8000 settled 2 a
check "it took the old open tree over (coord.acl_taken_over)" logged "$W/a.err" coord.acl_taken_over path="$BASE"
check "the persistent znode was reported foreign" logged "$W/a.err" election.foreign_znode shard=0 reason=persistent
check "the one without our ACL was reported foreign" logged "$W/a.err" election.foreign_znode shard=1 reason=acl
check "the one of no registered node was reported foreign" logged "$W/a.err" election.foreign_znode shard=1 reason=owner
stats a
expect_eq "palisade_coord_foreign_znodes_total counts all three" 3 "$(stat_of a foreign)"
D=$("$PROBE" --dump --zk "$ZK" --cluster "acl-$RUN" --shards 2 --auth "$AUTH")
lead1=$(sed -n 's/^znode shard=1 rank=[0-9]* name=\([^ ]*\) .*data=a$/\1/p' <<<"$D" | head -1)
check "its own election znode is found with the credentials" test -n "$lead1"
for who in none other; do
	[ $who = none ] && cred=() || cred=(--auth "intruder:guess")
	out="$(intrude children "$BASE/nodes" "${cred[@]}")"
	out+=" $(intrude create "$BASE/intruder" "${cred[@]}")"
	out+=" $(intrude create "$BASE/shards/0000/election/_c_00000000000000000000000000000000-n_0000000000" "${cred[@]}")"
	out+=" $(intrude delete "$BASE/shards/0001/election/$lead1" "${cred[@]}")"
	out+=" $(intrude delete "$BASE/nodes/a" "${cred[@]}")"
	out+=" $(intrude plant-persistent "$BASE/shards/0001/election" "${cred[@]}")"
	expect_eq "credentials $who: list, create, plant and delete under the cluster root are all refused" \
		"6 0" "$(grep -o 'rc=-102 ' <<<"$out" | wc -l) $(grep -c 'rc=0 ' <<<"$out")"
done
expect_match "nobody can delete the cluster root itself" 'rc=-102 |rc=-111 ' "$(intrude delete "$BASE")"
"$PROBE" --zk "$ZK" --node-id w --cluster "acl-$RUN" --shards 2 --auth intruder:guess --session-ms "$SESS" \
	</dev/null >"$W/w.out" 2>"$W/w.err"
expect_match "a node with other credentials cannot join (open fails)" '^open failed' "$(cat "$W/w.out")"
check "and says why" grep -q "other ZooKeeper credentials" "$W/w.err"
echo "nocolon" >"$W/bad.auth"
"$PROBE" --zk "$ZK" --node-id v --cluster "acl-$RUN" --shards 2 --auth-file "$W/bad.auth" \
	</dev/null >"$W/v.out" 2>"$W/v.err"
check "a credentials file without user: is refused with its reason" grep -q "must be user:password" "$W/v.err"
(umask 077; echo "$AUTH" >"$W/good.auth")
start b acl 2 --auth-file "$W/good.auth"
check "a second node with the credentials (read from a file) joins; the two balance" wait_until 8000 balanced2
t0=$(now_ms)
kill -9 "${PID[a]}"
finish_probe a
check "after kill -9 of a, b leads both shards: the foreign znodes below it block nothing" \
	wait_until $((SESS * 4 + 3000)) settled 2 b
echo "    FIGURE foreign znodes: b led both shards $(ana cover "$t0" 0,1 "$W/b.out") ms after a's kill -9 (session ${SESS} ms)"
check "b reported the foreign znodes too" logged "$W/b.err" election.foreign_znode shard=0 reason=persistent
send b quit
finish_probe b
exec {gfd}>&- {gfd2}>&-
wait "${PID[ghost]}" "${PID[ghost2]}" 2>/dev/null
unset "PID[ghost]" "PID[ghost2]"
finish
