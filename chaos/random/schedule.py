#!/usr/bin/env python3
"""schedule.py - the nemesis schedule of the random drill (chaos/random.sh).

Usage: schedule.py --seed S --seconds N [--pg-ha]

Prints one event a line, in time order, drawn from a PRNG seeded with S
only (the same seed and length give the same schedule on any machine):

    T start ID KIND TARGET DURATION     (T: seconds after the load started)
    T heal  ID KIND TARGET

A fault starts every 5-20 s.  Each fault holds resources (a node, a
ZooKeeper server, the namespaced node's link, the skewed node's clock, a
gate, the sink's fault settings); a fault is drawn among those whose
resources are free, so two faults may overlap (a node paused while a
ZooKeeper server is down) but never fight over one thing.  A rolling restart
takes every resource: it starts only when nothing else is active.  Every
fault heals before N; the drill heals everything again at the end anyway.

The menu (node ids: n1 n2 plain, n3 in its own network namespace, n4 under
libfaketime; ZooKeeper session 4 s, executor lease 30 s):
  kill9-short / kill9-long   kill -9 of a node, restarted after 1-3 s / 31-40 s
  pause-short / pause-mid / pause-long
                             SIGSTOP of a node for 1-3 s (within the session
                             and the lease) / 5-20 s (past the session, within
                             the lease) / 31-40 s (past both)
  partition                  n3's veth link down for 5-20 s
  zk-kill                    kill -9 of one ZooKeeper server for 5-20 s
  zk-quorum                  kill -9 of two of the three servers for 5-20 s
  clock-jump                 n4's wall clock jumps (+30s, -90s, +10m, -10m,
                             +1h) for 10-30 s, then back
  rolling-restart            ops/rolling-upgrade.sh over two of the nodes
  op-pause                   palisade pause of a tenant or group for 5-15 s,
                             then palisade resume
  op-cancel                  palisade cancel --job of one job (instant)
  sink-slow                  the sink holds each transaction 2.5 s (past the
                             2 s call timeout: outcomes unknown) for 3-8 s
  sink-errors                the sink answers 50% 503 for 5-15 s
  pg-failover                (--pg-ha only) kill -9 of the Patroni primary,
                             restarted after 20-40 s
"""
import argparse
import random

NODES = ["n1", "n2", "n3", "n4"]
ZK = ["1", "2", "3"]
GATES = ["tenant:t1", "tenant:t2", "tenant:t3", "tenant:t4", "group:g1", "group:g2", "group:g3"]
JUMPS = ["+30s", "-90s", "+10m", "-10m", "+1h"]


def menu(pg_ha):
    # kind -> (weight, targets, resources-of-target, duration range)
    m = {
        "kill9-short": (3, NODES, lambda t: ["node:" + t], (1, 3)),
        "kill9-long": (3, NODES, lambda t: ["node:" + t], (31, 40)),
        "pause-short": (3, NODES, lambda t: ["node:" + t], (1, 3)),
        "pause-mid": (2, NODES, lambda t: ["node:" + t], (5, 20)),
        "pause-long": (3, NODES, lambda t: ["node:" + t], (31, 40)),
        "partition": (3, ["n3"], lambda t: ["node:n3", "net:n3"], (5, 20)),
        "zk-kill": (2, ZK, lambda t: ["zk:" + t], (5, 20)),
        "zk-quorum": (2, ["1,2", "1,3", "2,3"], lambda t: ["zk:" + s for s in t.split(",")], (5, 20)),
        "clock-jump": (2, JUMPS, lambda t: ["clock:n4"], (10, 30)),
        "rolling-restart": (1, ["n1,n2", "n1,n3", "n2,n4", "n3,n4"], None, (40, 40)),
        "op-pause": (2, GATES, lambda t: ["gate:" + t], (5, 15)),
        "op-cancel": (1, ["job"], lambda t: [], (0, 0)),
        "sink-slow": (2, ["sink"], lambda t: ["sink"], (3, 8)),
        "sink-errors": (2, ["sink"], lambda t: ["sink"], (5, 15)),
    }
    if pg_ha:
        m["pg-failover"] = (2, ["primary"], lambda t: ["pg"], (20, 40))
    return m


def generate(seed, seconds, pg_ha=False):
    rng = random.Random(seed)
    m = menu(pg_ha)
    kinds = sorted(m)
    weights = [m[k][0] for k in kinds]
    active = []  # (heal_t, id, kind, target, resources)
    events = []
    t = rng.uniform(5, 20)
    fid = 0
    while t < seconds - 25:
        # heal what is due before this start
        for a in sorted(x for x in active if x[0] <= t):
            events.append((a[0], "heal", a[1], a[2], a[3], 0))
            active.remove(a)
        busy = set(r for a in active for r in a[4])
        chosen = None
        for _ in range(8):
            kind = rng.choices(kinds, weights)[0]
            _, targets, res, (dlo, dhi) = m[kind]
            target = rng.choice(targets)
            if kind == "op-cancel":
                target = "job-%d" % rng.randint(1, 10**6)  # mapped onto a job id by the drill
            d = rng.randint(dlo, dhi)
            if kind == "rolling-restart":
                if active:
                    continue
                r = ["*"]
            else:
                r = res(target)
                if "*" in busy or busy & set(r):
                    continue
            if t + d > seconds - 20:
                continue
            chosen = (kind, target, d, r)
            break
        if chosen:
            fid += 1
            kind, target, d, r = chosen
            events.append((t, "start", fid, kind, target, d))
            if d > 0:
                active.append((t + d, fid, kind, target, r))
        t += rng.uniform(5, 20)
    for a in sorted(active):
        events.append((a[0], "heal", a[1], a[2], a[3], 0))
    events.sort(key=lambda e: (e[0], 0 if e[1] == "heal" else 1, e[2]))
    return events


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--seconds", type=int, required=True)
    ap.add_argument("--pg-ha", action="store_true")
    a = ap.parse_args()
    for t, what, fid, kind, target, d in generate(a.seed, a.seconds, a.pg_ha):
        if what == "start":
            print("%.1f start %d %s %s %d" % (t, fid, kind, target, d))
        else:
            print("%.1f heal %d %s %s" % (t, fid, kind, target))


if __name__ == "__main__":
    main()
