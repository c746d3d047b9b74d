#!/usr/bin/env python3
"""tests/bench/report.py - the bookkeeping of `make bench` (tests/bench/run.sh).

  report.py add FILE NAME VALUE UNIT TARGET BETTER [NOTE] [KEY=VALUE...]
      append one figure to FILE (one JSON object per line).  VALUE and TARGET
      are numbers or "null" (not measured); BETTER is "higher" or "lower".
      KEY=VALUE pairs become extra fields of the entry (numbers when they
      parse as numbers); bound=lower marks VALUE as a lower bound (the
      measurement ran out of its time budget; printed as ">VALUE").  A later line with the same NAME replaces an earlier.
  report.py render FILE JSON
      print the table (figure, value, unit, target, ratio, met) and write
      JSON: an object keyed by figure name, each entry
      {value, unit, target, ratio, met, ...extra fields}, in the order the
      figures were first added.
  report.py acquired LOG SINCE_MS SHARDS
      the latest `controller.shard_acquired` line of LOG for each shard of
      SHARDS (comma-separated) at or after SINCE_MS (epoch ms): prints the
      largest ts - SINCE_MS in ms, or nothing when a shard has no such line.
  report.py stats
      read numbers (one per line) on stdin; print "n p50 p99 max" (nearest
      rank), or "0 - - -" when there are none.

ratio = value / target for "higher is better" figures, target / value for
"lower is better" ones (1.0 when both are 0, null when undefined); met is
value >= target or value <= target.  Nothing here asserts anything.
"""
import datetime
import json
import math
import sys


def num(s):
    if s in ("", "null", "None", "-"):
        return None
    try:
        v = float(s)
    except ValueError:
        return s
    if math.isnan(v) or math.isinf(v):
        return None
    return int(v) if v.is_integer() and "." not in s and "e" not in s.lower() else v


def add(path, name, value, unit, target, better, note="", *extra):
    e = {"name": name, "value": num(value), "unit": unit, "target": num(target),
         "better": better}
    if note:
        e["note"] = note
    for kv in extra:
        k, _, v = kv.partition("=")
        e[k] = num(v) if not isinstance(num(v), str) else v
    with open(path, "a") as f:
        f.write(json.dumps(e) + "\n")


def judge(e):
    v, t, b = e.get("value"), e.get("target"), e.get("better")
    if not isinstance(v, (int, float)) or not isinstance(t, (int, float)):
        return None, None
    if b == "lower":
        met = v <= t
        if v == 0:
            ratio = 1.0 if t == 0 else None
        else:
            ratio = t / v
    else:
        met = v >= t
        ratio = v / t if t else None
    if e.get("bound") == "lower":  # the true value is larger
        met = (False if v > t else None) if b == "lower" else (True if met else None)
    return (round(ratio, 3) if ratio is not None else None), met


def fmt(v):
    if v is None:
        return "-"
    if isinstance(v, float):
        if abs(v) >= 100:
            return "%.0f" % v
        if abs(v) >= 10:
            return "%.1f" % v
        return "%.2f" % v
    return str(v)


def render(path, out):
    entries = {}
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    e = json.loads(line)
                    entries[e["name"]] = e  # later wins, first position kept
    except FileNotFoundError:
        pass
    doc = {}
    rows = []
    for name, e in entries.items():
        ratio, met = judge(e)
        d = {"value": e.get("value"), "unit": e.get("unit"), "target": e.get("target"),
             "ratio": ratio, "met": met}
        for k, v in e.items():
            if k not in ("name", "value", "unit", "target", "better"):
                d[k] = v
        doc[name] = d
        shown = fmt(d["value"])
        if e.get("bound") == "lower" and d["value"] is not None:
            shown = ">" + shown
        rows.append((name, shown, d["unit"] or "",
                     ("<= " if e.get("better") == "lower" else ">= ") + fmt(d["target"])
                     if d["target"] is not None else "-",
                     fmt(ratio), "-" if met is None else ("yes" if met else "NO"),
                     e.get("note", "")))
    with open(out, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    w = [max([len(r[i]) for r in rows] + [len(h)]) for i, h in
         enumerate(("figure", "value", "unit", "target", "ratio", "met"))]
    head = ("figure", "value", "unit", "target", "ratio", "met")
    print("| " + " | ".join(h.ljust(w[i]) for i, h in enumerate(head)) + " | note |")
    print("|" + "|".join("-" * (w[i] + 2) for i in range(6)) + "|------|")
    for r in rows:
        cells = [r[0].ljust(w[0]), r[1].rjust(w[1]), r[2].ljust(w[2]), r[3].rjust(w[3]),
                 r[4].rjust(w[4]), r[5].ljust(w[5])]
        print("| " + " | ".join(cells) + " | " + r[6] + " |")


def ts_ms(ts):
    d = datetime.datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ")
    return int(d.replace(tzinfo=datetime.timezone.utc).timestamp() * 1000 + 0.5)


def acquired(log, since, shards):
    since = int(since)
    want = {int(s) for s in shards.split(",") if s != ""}
    last = {}
    with open(log, errors="replace") as f:
        for line in f:
            if "controller.shard_acquired" not in line:
                continue
            try:
                o = json.loads(line)
                t = ts_ms(o["ts"])
            except (ValueError, KeyError):
                continue
            if o.get("event") == "controller.shard_acquired" and o.get("shard") in want \
                    and t >= since:
                last[o["shard"]] = t
    if want and all(s in last for s in want):
        print(max(last.values()) - since)


def stats():
    v = sorted(float(x) for x in sys.stdin.read().split())
    if not v:
        print("0 - - -")
        return

    def rank(p):
        return v[max(0, min(len(v) - 1, math.ceil(p * len(v)) - 1))]
    print("%d %.2f %.2f %.2f" % (len(v), rank(0.5), rank(0.99), v[-1]))


def main(argv):
    cmd = argv[1] if len(argv) > 1 else ""
    if cmd == "add" and len(argv) >= 8:
        add(*argv[2:])
    elif cmd == "render" and len(argv) == 4:
        render(argv[2], argv[3])
    elif cmd == "acquired" and len(argv) == 5:
        acquired(argv[2], argv[3], argv[4])
    elif cmd == "stats":
        stats()
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
