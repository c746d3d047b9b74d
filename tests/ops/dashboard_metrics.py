#!/usr/bin/env python3
"""Every query of the Grafana dashboard names a metric that exists.

The names a node and the sink can export are read from the source: the
first argument of each pal_metric_declare / pal_metric_declare_histogram
call under src/ (a string literal, or a #define or const char[] holding
one); a histogram exports NAME_bucket, NAME_sum and NAME_count.  The
recording rules are the `record:` names of ops/prometheus/*.yml, whose own
expressions are held to the same check.

    python3 tests/ops/dashboard_metrics.py [dashboard.json ...]

Exits 1 naming each panel (or rule) and the unknown metric; 0 with one line
counting the queries checked.
"""
import glob
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

DECLARE = re.compile(r'pal_metric_declare(_histogram)?\s*\(\s*[^,]+,\s*("[^"]+"|\w+)', re.S)
CONST = re.compile(r'(?:#define\s+(\w+)\s+|\b(\w+)\s*(?:\[\])?\s*=\s*)"(palisade_\w+)"')
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right",
            "offset", "bool", "and", "or", "unless", "inf", "nan", "atan2"}


def exported_names():
    """Series names the registry can render, from the declarations in src/."""
    files = glob.glob(os.path.join(ROOT, "src", "**", "*.[ch]"), recursive=True)
    texts = {f: open(f, encoding="utf-8").read() for f in files}
    consts = {}
    for text in texts.values():
        for m in CONST.finditer(text):
            consts.setdefault(m.group(1) or m.group(2), set()).add(m.group(3))
    names = set()
    for f, text in texts.items():
        if f.endswith("util/metrics.c"):
            continue
        for m in DECLARE.finditer(text):
            arg = m.group(2)
            found = {arg.strip('"')} if arg.startswith('"') else consts.get(arg, set())
            if not found:
                sys.exit(f"{f}: cannot resolve the metric name {arg}")
            for n in found:
                if m.group(1):
                    names.update(n + s for s in ("_bucket", "_sum", "_count"))
                else:
                    names.add(n)
    return names


def rules():
    """(record names, [(where, expr)]) of ops/prometheus/*.yml."""
    import yaml
    records, exprs = set(), []
    for f in sorted(glob.glob(os.path.join(ROOT, "ops", "prometheus", "*.yml"))):
        doc = yaml.safe_load(open(f, encoding="utf-8"))
        for g in (doc or {}).get("groups", []) or []:
            for r in g.get("rules", []):
                if "record" in r:
                    records.add(r["record"])
                where = f"{os.path.relpath(f, ROOT)}: {r.get('record') or r.get('alert')}"
                exprs.append((where, r["expr"]))
    return records, exprs


def metric_names(expr):
    """Metric names a PromQL expression selects (Grafana variables allowed)."""
    m = re.fullmatch(r'\s*label_values\(\s*([a-zA-Z_:][\w:]*)\s*(\{[^}]*\})?\s*,\s*\w+\s*\)\s*', expr)
    if m:
        return {m.group(1)}
    if re.fullmatch(r'\s*label_values\(\s*\w+\s*\)\s*', expr):
        return set()
    e = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`', '""', expr)
    e = re.sub(r'\{[^}]*\}', ' ', e)       # label matchers
    e = re.sub(r'\[[^\]]*\]', ' ', e)      # ranges, subqueries
    e = re.sub(r'\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)', ' ', e)
    e = re.sub(r'\$\{?\w+\}?', ' ', e)     # Grafana variables
    e = re.sub(r'\boffset\s+\S+', ' ', e)
    out = set()
    for m in re.finditer(r'(?<![\w.])([a-zA-Z_:][\w:]*)(\s*\()?', e):
        name, call = m.group(1), m.group(2)
        if call or name.lower() in KEYWORDS:
            continue
        out.add(name)
    return out


def queries(dash):
    """(where, expr) of every panel target and templating query."""
    def panels(ps):
        for p in ps or []:
            yield p
            yield from panels(p.get("panels"))
    for p in panels(dash.get("panels")):
        for t in p.get("targets", []) or []:
            if t.get("expr"):
                yield f"panel {p.get('title')!r} ({t.get('refId')})", t["expr"]
    for v in dash.get("templating", {}).get("list", []):
        if v.get("type") == "query":
            q = v.get("query")
            q = q.get("query") if isinstance(q, dict) else q
            if q:
                yield f"variable {v.get('name')!r}", q


def main(argv):
    files = argv or [os.path.join(ROOT, "ops", "grafana", "palisade.json")]
    exported = exported_names()
    records, rule_exprs = rules()
    known = exported | records
    checked, bad = 0, []
    todo = list(rule_exprs)
    for f in files:
        dash = json.load(open(f, encoding="utf-8"))
        todo += [(f"{os.path.basename(f)}: {w}", q) for w, q in queries(dash)]
    for where, q in todo:
        names = metric_names(q)
        if not names:
            bad.append(f"{where}: no metric found in {q!r}")
        for n in sorted(names - known):
            bad.append(f"{where}: {n} is neither exported (src/) nor a recording rule")
        checked += 1
    for b in bad:
        print("dashboard-metrics:", b, file=sys.stderr)
    if bad:
        return 1
    print(f"dashboard-metrics: {checked} queries (dashboard and rules) name only the "
          f"{len(exported)} exported series and {len(records)} recording rules")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
