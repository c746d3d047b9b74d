#!/usr/bin/env python3
"""check_random.py - the checker of the random drill (chaos/random.sh).

Usage: check_random.py --from T0 --to T1 --samples FILE [--json OUT]
       (PostgreSQL from $PALISADE_PG; palisade and sink tables in one database)

Reads PostgreSQL with psql, shares no code with `palisade verify`, and
checks over the window [T0, T1]:

  missing        the plan set - triggers - recorded misfires.  The plan set
                 is recomputed here from job_versions (cron, partitions,
                 effective_from) with python3-croniter: version i covers
                 (effective_from_i, effective_from_i+1]; only UTC Quartz or
                 5-field crons of plain fields (numbers, ranges, lists,
                 steps, '*', '?') are accepted, anything else is an error.
  unexpected     scheduled triggers (request_id NULL) at an instant or
                 partition outside the plan set
  planned_twice  plan keys (job, instant, partition) with more than one row
  never_active   jobs without an activated version
  effects_doubled  sink_ledger: more than one row for one key and chunk
  effects_lost   a succeeded trigger whose key has no complete sink_effects
                 row (acknowledged, never applied)
  stale_accepted (a) the sink accepted a lower fencing token after a higher
                 one for one key (ledger order); (b) the database took an
                 outcome (succeeded, retry_wait, failed, ...) from an attempt
                 after a newer attempt of the same trigger had been claimed;
                 (c) a trigger or a controller's misfire (not the
                 executor's 'overlap' ones, which carry their trigger's
                 epoch) written at an epoch of its shard older than one the
                 sampler had already seen committed before that write's
                 transaction began
  stuck          triggers scheduled in the window still non-terminal
                 (the drill waited its stated bound before calling this)
  failed/manual  triggers that ended failed / in manual (the retry budget,
                 200 attempts over 30 minutes, cannot be spent by the
                 drill's faults: either is a finding)
  watermark_regressions  a shard's sampled watermark went backwards
  epoch_regressions      a shard's sampled epoch went backwards, or its
                 leader changed while the epoch stayed the same
Prints one line per check and exits 1 when any count is not zero.
"""
import argparse
import collections
import datetime
import json
import os
import re
import subprocess
import sys
import time

import croniter

UTC = datetime.timezone.utc


def psql(query):
    out = subprocess.run(["psql", os.environ["PALISADE_PG"], "-XAtq", "-v", "ON_ERROR_STOP=1",
                          "-F", "\t", "-c", query], check=True, capture_output=True, text=True).stdout
    return [line.split("\t") for line in out.splitlines() if line]


FIELD = re.compile(r"^(\*|\?|\d+(-\d+)?)(/\d+)?(,(\*|\d+(-\d+)?)(/\d+)?)*$")


def croniter_expr(cron):
    """palisade's cron text -> croniter's form ("min hour dom mon dow [sec]")."""
    f = cron.split()
    if len(f) == 6:  # Quartz: sec min hour dom mon dow
        f = f[1:] + f[:1]
    elif len(f) != 5:
        raise ValueError("cron %r: only 5- or 6-field crons are recomputed here" % cron)
    for x in f:
        if not FIELD.match(x):
            raise ValueError("cron %r: field %r is beyond this checker" % (cron, x))
    return " ".join("*" if x == "?" else x for x in f)


def plan_set(versions, t0, t1):
    """{(instant, partition)} of one job over [t0, t1]; versions sorted."""
    out = set()
    for i, (cron, tz, parts, eff) in enumerate(versions):
        if tz != "UTC":
            raise ValueError("timezone %s: the checker recomputes UTC jobs only" % tz)
        hi = versions[i + 1][3] if i + 1 < len(versions) else float("inf")
        lo = max(eff, t0 - 1)
        if hi <= eff or hi < t0 or eff >= t1:
            continue
        it = croniter.croniter(croniter_expr(cron), datetime.datetime.fromtimestamp(lo, UTC))
        while True:
            x = int(it.get_next(datetime.datetime).timestamp())
            if x > t1 or x > hi:
                break
            for p in range(parts):
                out.add((x, p))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--from", dest="t0", required=True)
    ap.add_argument("--to", dest="t1", required=True)
    ap.add_argument("--samples", required=True)
    ap.add_argument("--json")
    a = ap.parse_args()
    ep = lambda s: int(float(psql("select extract(epoch from '%s'::timestamptz)" % s)[0][0]))
    t0, t1 = ep(a.t0), ep(a.t1)
    R = collections.OrderedDict()
    samples = collections.defaultdict(list)
    phases, tick = [], [time.monotonic()]

    def phase(name):  # the checker's own time per part, printed at the end
        now = time.monotonic()
        phases.append("%s %.1f s" % (name, now - tick[0]))
        tick[0] = now

    # ---- plan set vs triggers vs misfires ------------------------------------------
    versions = collections.defaultdict(list)
    for job, cron, tz, parts, eff in psql(
            "select job_id, cron, timezone, partitions, floor(extract(epoch from effective_from))::bigint"
            " from job_versions where effective_from is not null order by job_id, version"):
        versions[job].append((cron, tz, int(parts), int(eff)))
    jobs = [r[0] for r in psql("select job_id from jobs order by 1")]
    R["jobs"] = len(jobs)
    R["never_active"] = sum(1 for j in jobs if j not in versions)
    trig = collections.defaultdict(collections.Counter)
    for job, at, part in psql(
            "select job_id, floor(extract(epoch from scheduled_at))::bigint, partition from trigger_jobs"
            " where request_id is null and scheduled_at between to_timestamp(%d) and to_timestamp(%d)" % (t0, t1)):
        trig[job][(int(at), int(part))] += 1
    mis = collections.defaultdict(list)
    for job, f, t, part in psql(
            "select job_id, floor(extract(epoch from range_from))::bigint, floor(extract(epoch from range_to))::bigint,"
            " coalesce(partition, -1) from misfires where range_to >= to_timestamp(%d) and range_from <= to_timestamp(%d)"
            % (t0, t1)):
        mis[job].append((int(f), int(t), int(part)))
    exp_n = missing = unexpected = twice = misfired = 0
    for job in jobs:
        exp = plan_set(versions.get(job, []), t0, t1)
        got = trig.get(job, collections.Counter())
        exp_n += len(exp)
        for k in exp - set(got):
            if any(f <= k[0] <= t and p in (-1, k[1]) for f, t, p in mis[job]):
                misfired += 1
            else:
                missing += 1
                samples["missing"].append("%s@%s/%d" % (job, datetime.datetime.fromtimestamp(k[0], UTC).isoformat(), k[1]))
        for k, n in got.items():
            if k not in exp:
                unexpected += 1
                samples["unexpected"].append("%s@%d/%d" % (job, k[0], k[1]))
            if n > 1:
                twice += n - 1
                samples["planned_twice"].append("%s@%d/%d x%d" % (job, k[0], k[1], n))
    R["triggers"] = sum(sum(c.values()) for c in trig.values())
    R["expected"] = exp_n
    R["missing"] = missing
    R["misfired"] = misfired
    R["unexpected"] = unexpected
    R["planned_twice"] = twice
    phase("plan set")

    # ---- effects at the sink ------------------------------------------------------------
    R["effects"] = int(psql("select count(*) from sink_ledger")[0][0])
    d = psql("select idempotency_key, chunk, count(*) from sink_ledger group by 1, 2 having count(*) > 1")
    R["effects_doubled"] = len(d)
    samples["effects_doubled"] += ["%s chunk %s x%s" % tuple(r) for r in d[:10]]
    lost = psql(
        "select t.id, t.job_id, k.key from trigger_jobs t"
        " cross join lateral (select a.idempotency_key as key from attempt_ledger a where a.trigger_id = t.id"
        "   and a.idempotency_key is not null order by a.fence desc limit 1) k"
        " left join sink_effects e on e.idempotency_key = k.key"
        " where t.state = 'succeeded' and t.scheduled_at between to_timestamp(%d) and to_timestamp(%d)"
        "   and (e.idempotency_key is null or e.chunks_done < e.chunks_total)" % (t0, t1))
    R["effects_lost"] = len(lost)
    samples["effects_lost"] += ["trigger %s %s key %s" % tuple(r) for r in lost[:10]]
    nokey = psql("select count(*) from triggers t where t.state = 'succeeded'"
                 " and t.scheduled_at between to_timestamp(%d) and to_timestamp(%d)"
                 " and not exists (select 1 from attempt_ledger a where a.trigger_id = t.id and a.idempotency_key is not null)"
                 % (t0, t1))
    R["succeeded_without_key"] = int(nokey[0][0])
    phase("effects")

    # ---- stale writes accepted ----------------------------------------------------------------
    sa = psql("select count(*) from (select idempotency_key, fence,"
              " max(fence) over (partition by idempotency_key order by applied_at, chunk rows between unbounded preceding and 1 preceding) prev"
              " from sink_ledger) x where fence < prev")
    R["stale_accepted_sink"] = int(sa[0][0])
    sb = psql("select a.trigger_id, a.fence, a.outcome, b.fence from attempt_ledger a join attempt_ledger b"
              " on b.trigger_id = a.trigger_id and b.fence > a.fence"
              " where a.outcome is not null and a.outcome not in ('fenced') and a.ended_at > b.claimed_at")
    R["stale_accepted_db"] = len(sb)
    samples["stale_accepted_db"] += ["trigger %s: attempt fence %s took outcome %s after fence %s was claimed" % tuple(r)
                                     for r in sb[:10]]
    # (c) and the monotonicity checks read the sampler's file
    rows = []
    for line in open(a.samples):
        f = line.rstrip("\n").split("\t")
        if len(f) == 5:
            rows.append((float(f[0]), int(f[1]), int(f[2]), f[3], float(f[4]) if f[4] else None))
    rows.sort()
    R["samples"] = len(rows)
    wm_reg = ep_reg = 0
    last = {}
    seen_epoch = collections.defaultdict(list)  # shard -> [(time, epoch)] when an epoch was first seen
    for ts, shard, epoch, leader, wm in rows:
        if shard in last:
            _, e0, l0, w0 = last[shard]
            if wm is not None and w0 is not None and wm < w0:
                wm_reg += 1
                samples["watermark_regressions"].append("shard %d at %.1f: %.3f -> %.3f" % (shard, ts, w0, wm))
            if epoch < e0 or (epoch == e0 and leader and l0 and leader != l0):
                ep_reg += 1
                samples["epoch_regressions"].append("shard %d at %.1f: %s@%d -> %s@%d" % (shard, ts, l0, e0, leader, epoch))
        if not seen_epoch[shard] or epoch > seen_epoch[shard][-1][1]:
            seen_epoch[shard].append((ts, epoch))
        last[shard] = (ts, epoch, leader, wm)
    R["watermark_regressions"] = wm_reg
    R["epoch_regressions"] = ep_reg
    R["epoch_changes"] = sum(len(v) - 1 for v in seen_epoch.values())
    stale_c = 0
    for tbl, q in (("triggers", "select shard, epoch, extract(epoch from created_at) from triggers where request_id is null"),
                   ("misfires", "select shard, epoch, extract(epoch from decided_at) from misfires where reason <> 'overlap'")):
        for shard, epoch, ts in psql(q):
            shard, epoch, ts = int(shard), int(epoch), float(ts)
            # the highest epoch of the shard seen committed before this write began
            newer = [e for t, e in seen_epoch.get(shard, []) if t < ts and e > epoch]
            if newer:
                stale_c += 1
                if len(samples["stale_accepted_epoch"]) < 10:
                    samples["stale_accepted_epoch"].append("%s of shard %d at epoch %d written at %.3f after epoch %d was seen"
                                                           % (tbl, shard, epoch, ts, max(newer)))
    R["stale_accepted_epoch"] = stale_c
    R["stale_accepted"] = R["stale_accepted_sink"] + R["stale_accepted_db"] + stale_c
    phase("stale writes and samples")

    # ---- terminal states --------------------------------------------------------------------------
    states = dict((s, int(n)) for s, n in psql(
        "select state, count(*) from triggers where scheduled_at between to_timestamp(%d) and to_timestamp(%d) group by 1"
        % (t0, t1)))
    R["states"] = states
    R["stuck"] = sum(n for s, n in states.items() if s in ("pending", "running", "retry_wait", "unknown", "pausing",
                                                          "cancelling", "paused"))
    R["failed"] = states.get("failed", 0)
    R["manual"] = states.get("manual", 0)
    if R["stuck"]:
        samples["stuck"] += ["%s %s %s %s" % tuple(r) for r in psql(
            "select id, job_id, state, scheduled_at from trigger_jobs where scheduled_at between to_timestamp(%d) and"
            " to_timestamp(%d) and state in ('pending','running','retry_wait','unknown','pausing','cancelling','paused')"
            " order by scheduled_at limit 10" % (t0, t1))]
    R["samples_of"] = dict((k, v[:10]) for k, v in samples.items() if v)
    phase("states")

    bad = [k for k in ("never_active", "missing", "unexpected", "planned_twice", "effects_doubled", "effects_lost",
                       "succeeded_without_key", "stale_accepted", "stuck", "failed", "manual",
                       "watermark_regressions", "epoch_regressions") if R[k]]
    for k, v in R.items():
        if k != "samples_of":
            print("%s%s: %s" % ("FAIL " if k in bad else "", k, json.dumps(v) if isinstance(v, dict) else v))
    for k, v in R["samples_of"].items():
        for s in v:
            print("  %s: %s" % (k, s))
    print("timing: %s" % ", ".join(phases))
    if a.json:
        json.dump(R, open(a.json, "w"))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
