#!/usr/bin/env python3
"""import_reference.py - check `palisade import` against the source files.

Usage: python3 tests/reference/import_reference.py --bin bin/palisade

For every fixture of tests/fixtures/import/ (README.md there says where each
comes from) it runs `palisade import`, and checks:

  * the job file on stdout passes `palisade validate`;
  * the exit status is 2 when the report on stderr names something, else 0;
  * every job's labels are those of its source, read from the source: a
    system crontab entry's user as the label "user", a CronJob's
    metadata.labels as they are (none otherwise);
  * the report names exactly the expected elements (line or document and a
    word of the reason, listed below), and every entry of the source that
    became no job is among them (found here by reading the source itself);
  * every job's fire instants over 30 days, from `palisade cron batch` with
    the job's cron and zone, equal the runs cron's own rules give for the
    source entry, read here from the source file (not from the job file):
      - a simulation of Debian's cron daemon (Vixie cron 3.0, cron.c), minute
        by minute in real time, with its handling of clock changes: when the
        wall clock jumps forward it runs wildcard entries once for the new
        minute and fixed-time entries once for every skipped minute; when it
        jumps back it runs wildcard entries only, until it has caught up;
        days as Vixie reads them (the day-of-month/day-of-week OR rule when
        neither field starts with '*');
      - for Kubernetes, the CronJob controller's parser (robfig/cron v3):
        its fields (day of week 0-6, "N/step" up to the field's maximum),
        its day rule (a day field is unrestricted when any item is "*" or
        "?" without a step over 1) and its clock: every instant whose wall
        time matches, so a time a spring-forward change skips never runs
        and one a fall-back change repeats runs twice;
      - croniter (python3-croniter) as a second opinion, in the window with
        no clock change and for entries whose day rule it reads as cron does.
    Three windows: one over the European spring-forward, one over the
    European and American fall-back, one with no change at all.  An entry
    the report calls approximated may differ from cron's runs only in runs
    doubled at one instant (the clock-change case the importer names); a
    CronJob the report names for a clock change only in what palisade's
    dst: auto does there (a skipped time fired at the change, a repeated
    time fired once).
  * for Kubernetes, each job's suspend, overlap and the body's jobTemplate
    against the CronJob's spec.suspend, concurrencyPolicy (Forbid is queue)
    and jobTemplate as kubectl reads them (go-yaml v2, YAML 1.1: yes/no/on/
    off booleans, 0755 octal, 1_000, 08 a float).

Prints one line per problem and a summary; exit 0 when clean, 1 otherwise.
"""
import argparse
import datetime as dt
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
import zoneinfo

try:
    import yaml
    from croniter import croniter
except ImportError:
    import debian_python
    debian_python.reexec("import_reference", "python3-yaml python3-croniter")

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(HERE, "..", "fixtures", "import")
URL = "http://runner.example:8080/run/{job}?source={digest}"
WINDOWS = [dt.datetime(2026, 3, 15, tzinfo=dt.timezone.utc),
           dt.datetime(2026, 10, 10, tzinfo=dt.timezone.utc),
           dt.datetime(2026, 6, 1, tzinfo=dt.timezone.utc)]
DAYS = 30

# fixture, importer, options, expected report: (line or document, word)
CASES = [
    ("crontab/etc-crontab", "crontab", ["--system", "--timezone", "Europe/Berlin"], []),
    ("crontab/cron.d-anacron", "crontab", ["--system", "--timezone", "America/New_York"], []),
    ("crontab/cron.d-certbot", "crontab", ["--system"], [("17", "approximated")]),
    ("crontab/cron.d-e2scrub_all", "crontab", ["--system", "--timezone", "Europe/Berlin"], []),
    ("crontab/cron.d-php", "crontab", ["--system", "--timezone", "Asia/Kolkata"], []),
    ("crontab/cron.d-sysstat", "crontab", ["--system", "--timezone", "Europe/Berlin"], []),
    ("crontab/sysstat-example-user", "crontab", ["--timezone", "UTC"], []),
    ("crontab/crontab.5-example", "crontab", ["--timezone", "America/New_York"],
     [("4", "MAILTO")]),
    ("crontab/edge-cases", "crontab", [],
     [("2", "MAILTO"), ("4", "as cronie reads it"), ("6", "skips its clock"), ("7", "skips its clock"),
      ("17", "@reboot"), ("18", "as cronie reads it"), ("19", "id:"), ("21", "id:"),
      ("22", "step after a single value"), ("24", "as cronie reads it"), ("25", "Mars/Olympus"),
      ("26", "out of range"), ("27", "day-of-week"), ("28", "neither")]),
    ("crontab/edge-cases", "crontab", ["--cron", "cronie"],
     [("2", "MAILTO"), ("6", "skips its clock"), ("7", "skips its clock"),
      ("17", "@reboot"), ("19", "id:"), ("21", "id:"), ("22", "step after a single value"), ("25", "Mars/Olympus"),
      ("26", "out of range"), ("27", "day-of-week"), ("28", "neither")]),
    # Debian's cron: CRON_TZ moves nothing, every entry is in the host's zone
    ("crontab/edge-cases", "crontab", ["--cron", "debian", "--timezone", "Europe/Berlin"],
     [("2", "MAILTO"), ("6", "skips its clock"), ("7", "skips its clock"),
      ("17", "@reboot"), ("19", "id:"), ("21", "id:"), ("22", "step after a single value"),
      ("26", "out of range"), ("27", "day-of-week"), ("28", "neither")]),
    ("kubernetes/docs-cronjob.yaml", "kubernetes", [],
     [("document 1", "spec.timeZone"), ("document 1", "startingDeadlineSeconds"),
      ("document 1", "metadata.namespace")]),
    ("kubernetes/docs-cronjob-v1beta1.yaml", "kubernetes", ["--timezone", "Europe/Berlin"],
     [("document 1", "startingDeadlineSeconds"), ("document 1", "metadata.namespace")]),
    ("kubernetes/edge-cases.yaml", "kubernetes", [],
     [("document 1", "Deployment web"), ("document 2", "successfulJobsHistoryLimit"),
      ("document 2", "failedJobsHistoryLimit"), ("document 2", "skips its clock forward"),
      ("document 2", "concurrencyPolicy Forbid"),
      ("document 5", "creationTimestamp"), ("document 5", "startingDeadlineSeconds"),
      ("document 6", "ConfigMap"), ("document 7", "startingDeadlineSeconds")]),
    ("kubernetes/controller-parser.yaml", "kubernetes", [],
     [("document 4", "metadata.namespace"), ("document 5", "concurrencyPolicy Forbid"),
      ("document 7", "sets its clock back"), ("document 8", "spec.suspend"),
      ("document 9", "no JSON form")]),
]

MONTHS = "jan feb mar apr may jun jul aug sep oct nov dec".split()
DOWS = "sun mon tue wed thu fri sat".split()
MACROS = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
          "@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *",
          "@hourly": "0 * * * *"}

problems = []


def problem(msg):
    problems.append(msg)
    print("  FAIL " + msg)


# ---- cron's reading of an entry ----------------------------------------------

def field_values(text, lo, hi, names=None, robfig=False):
    """The values of a field; ROBFIG: robfig/cron's getRange, where a single
    value with a step, "N/step", runs up to the field's maximum."""
    def num(s):
        s = s.lower()
        if names and s in names:
            return names.index(s) + (lo if names is MONTHS else 0)
        return int(s)
    vals = set()
    for item in text.split(","):
        step, slash = 1, "/" in item
        if slash:
            item, s = item.split("/")
            step = int(s)
        if item in ("*", "?"):
            a, b = lo, hi
        elif "-" in item:
            a, b = (num(x) for x in item.split("-"))
        else:
            a = b = num(item)
            if robfig and slash:
                b = hi
        vals.update(range(a, b + 1, step))
    return vals


class Entry:
    """One cron schedule as the source system reads it."""

    def __init__(self, expr, robfig=False):
        expr = MACROS.get(expr.lower(), expr)
        f = expr.split()
        assert len(f) == 5, expr
        self.expr = expr
        self.minute = field_values(f[0], 0, 59)
        self.hour = field_values(f[1], 0, 23)
        self.dom = field_values(f[2], 1, 31)
        self.month = field_values(f[3], 1, 12, MONTHS)
        if robfig:  # robfig/cron: the day of week is 0-6
            self.dom = field_values(f[2], 1, 31, robfig=True)
            self.dow = field_values(f[4], 0, 6, DOWS, robfig=True)
        else:
            self.dow = {d % 7 for d in field_values(f[4], 0, 7, DOWS)}
        if robfig:  # robfig/cron: any item "*" or "?" sets the star bit,
            def star(t):  # a step over 1 clears that item's
                return any(i.split("/")[0] in ("*", "?") and
                           not ("/" in i and int(i.split("/")[1]) > 1) for i in t.split(","))
        else:       # Vixie: the text starts with '*'
            def star(t):
                return t[0] == "*"
        self.dom_star, self.dow_star = star(f[2]), star(f[4])
        self.wild = f[0][0] == "*" or f[1][0] == "*"   # MIN_STAR or HR_STAR
        self.raw_dom_star = f[2][0] == "*"
        self.raw_dow_star = f[4][0] == "*"
        # croniter reads neither a "*" item after the first nor "N/step"
        # in the day of week as robfig does: no second opinion for those
        self.croniter_ok = not robfig or (
            self.dom_star == self.raw_dom_star and self.dow_star == self.raw_dow_star and
            not re.search(r"(^|,)[^*?,/-]+/", f[4]))
        self.dom_full = self.dom == set(range(1, 32))
        self.dow_full = self.dow == set(range(7))

    def matches(self, naive_min):
        day, mod = divmod(naive_min, 1440)
        if mod % 60 not in self.minute or mod // 60 not in self.hour:
            return False
        month, mday, wday = civil(day)
        if month not in self.month:
            return False
        dom_ok = mday in self.dom
        dow_ok = wday in self.dow
        if self.dom_star or self.dow_star:
            return dom_ok and dow_ok
        return dom_ok or dow_ok

    def croniter_agrees(self):
        # croniter ORs when both expanded sets are restricted: the same as
        # cron only when "starts with '*'" and "is the full set" coincide
        return (self.croniter_ok and (self.dom_star == self.dom_full) and
                (self.dow_star == self.dow_full))


_civil = {}


def civil(day):
    """(month, day of month, weekday with Sunday 0) of day DAY since 1970."""
    c = _civil.get(day)
    if c is None:
        d = dt.date(1970, 1, 1) + dt.timedelta(days=day)
        c = _civil[day] = (d.month, d.day, d.isoweekday() % 7)
    return c


_offsets = {}


def local_minute(t, zone):
    """The wall clock's minute (minutes since 1970 read as UTC) at UTC second
    T; offsets change on quarter hours, so one lookup per quarter hour."""
    key = (zone.key, t // 900)
    off = _offsets.get(key)
    if off is None:
        off = _offsets[key] = int(dt.datetime.fromtimestamp(t, zone).utcoffset().total_seconds())
    return (t + off) // 60


def cron_daemon_runs(entries, zone, start, end):
    """Debian cron's runs (UTC seconds) of each entry in (start, end)."""
    runs = [[] for _ in entries]
    by_minute = [[i for i, e in enumerate(entries) if m in e.minute] for m in range(60)]
    virtual = local_minute(start, zone)
    for t in range(start + 60, end, 60):
        running = local_minute(t, zone)
        diff = running - virtual
        todo = []                       # (virtual minute, wildcard?, fixed?)
        if diff == 1:
            virtual = running
            todo.append((virtual, True, True))
        elif 0 < diff <= 5:             # woke up late: catch up every minute
            while virtual < running:
                virtual += 1
                todo.append((virtual, True, True))
        elif 5 < diff <= 180:           # clock forward (DST)
            todo.append((running, True, False))
            while virtual < running:
                virtual += 1
                todo.append((virtual, False, True))
        elif -180 < diff <= 0:          # clock back: wildcard entries only
            todo.append((running, True, False))
        else:
            virtual = running
            todo.append((running, True, True))
        for vm, wild, fixed in todo:
            for i in by_minute[vm % 60]:
                e = entries[i]
                if (wild if e.wild else fixed) and e.matches(vm):
                    runs[i].append(t)
    return runs


def robfig_runs(entries, zone, start, end):
    """The Kubernetes CronJob controller's runs (UTC seconds) of each entry
    in (start, end): its parser (robfig/cron v3, SpecSchedule.Next) steps
    through absolute time and takes every instant whose wall clock matches,
    so a wall time a spring-forward change skips never runs and one a
    fall-back change repeats runs in both passes."""
    runs = [[] for _ in entries]
    by_minute = [[i for i, e in enumerate(entries) if m in e.minute] for m in range(60)]
    for t in range(start + 60, end, 60):
        vm = local_minute(t, zone)
        for i in by_minute[vm % 60]:
            if entries[i].matches(vm):
                runs[i].append(t)
    return runs


def dst_only(pal, ref, zone):
    """PAL and REF differ only as palisade's dst: auto and the controller do
    at clock changes: palisade's extra instants are spring-forward changes
    (a skipped time fired at the change), the controller's extra ones are
    the second pass of a repeated wall time palisade fired once."""
    off = lambda t: dt.datetime.fromtimestamp(t, zone).utcoffset()
    pal_wall = {local_minute(t, zone) for t in pal}
    return (all(off(t - 1) < off(t) for t in set(pal) - set(ref)) and
            all(local_minute(t, zone) in pal_wall for t in set(ref) - set(pal)))


def croniter_runs(entry, zone, start, end, limit):
    """croniter's first LIMIT instants in (start, end) (it is slow: the
    dense entries are compared over their first instants only)."""
    it = croniter(entry.expr, dt.datetime.fromtimestamp(start, zone))
    out = []
    while len(out) < limit:
        n = it.get_next(dt.datetime)
        ts = int(n.timestamp())
        if ts >= end:
            return out
        out.append(ts)
    return out


def has_change(zone, start, end):
    offs = {dt.datetime.fromtimestamp(t, zone).utcoffset() for t in range(start, end + 1, 3600)}
    return len(offs) > 1


# ---- the sources, read here ---------------------------------------------------

def crontab_sources(path, system, default_zone, read_tz=True):
    """{line: (schedule text, zone, user or None)} of every entry, and the
    entry lines, and the MAILTO lines, as cron reads the file: cronie
    (READ_TZ) reads the entries after a CRON_TZ line in its zone, Debian's
    cron (Vixie cron 3.0) does not read CRON_TZ at all."""
    out, entries, mailto = {}, [], []
    cron_tz = None
    for n, line in enumerate(open(path, encoding="utf-8", errors="replace"), 1):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        if s[0].isdigit() or s[0] in "*@":
            entries.append(n)
            parts = s.split()
            sched = parts[0] if s[0] == "@" else " ".join(parts[:5])
            nf = 1 if s[0] == "@" else 5
            user = parts[nf] if system and len(parts) > nf else None
            out[n] = (sched, cron_tz or default_zone, user)
            continue
        m = re.match(r'\s*([^=\s]+)\s*=\s*(.*)$', s)
        if m:
            name, val = m.group(1), m.group(2).strip().strip("\"'")
            if name == "CRON_TZ" and read_tz:
                cron_tz = val or None
            if name == "MAILTO" and val:
                mailto.append(n)
    return out, entries, mailto


GO_BOOLS = dict([(w, True) for w in "y Y yes Yes YES true True TRUE on On ON".split()] +
                [(w, False) for w in "n N no No NO false False FALSE off Off OFF".split()])
GO_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?\Z")
GO_INT = re.compile(r"([-+]?)(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)\Z")


def go_yaml_scalar(text):
    """A plain scalar as kubectl's YAML reader (go-yaml v2's resolve(), YAML
    1.1) types it for the JSON the API server gets."""
    if text in GO_BOOLS:
        return GO_BOOLS[text]
    if text in ("", "~", "null", "Null", "NULL"):
        return None
    if text[:1] == "." and GO_FLOAT.match(text) and math.isfinite(float(text)):
        return float(text)
    if text[:1] not in tuple("+-0123456789"):
        return text
    plain = text.replace("_", "")
    m = GO_INT.match(plain)
    if m:
        sign, body = m.groups()
        base = {"x": 16, "o": 8, "b": 2}.get(body[1:2].lower(), 8 if len(body) > 1 and
                                             body[0] == "0" else 10)
        v = int(body[2:] if base != 10 and body[1:2].isalpha() else body, base)
        v = -v if sign == "-" else v
        if -2**63 <= v < 2**63 or (not sign and v < 2**64):
            return v
    if GO_FLOAT.match(plain) and math.isfinite(float(plain)):
        return float(plain)
    return text


def go_yaml_value(node):
    """NODE (yaml.compose) as the JSON kubectl sends: plain scalars typed,
    a boolean or integer map key as its text."""
    if isinstance(node, yaml.MappingNode):
        out = {}
        for k, v in node.value:
            key = go_yaml_scalar(k.value) if k.style is None else k.value
            out[str(key).lower() if isinstance(key, bool) else str(key)] = go_yaml_value(v)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [go_yaml_value(v) for v in node.value]
    return go_yaml_scalar(node.value) if node.style is None else node.value


def node_get(node, key):
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if k.value == key:
                return v
    return None


def kubernetes_sources(path, default_zone):
    """{(document index, id): (schedule, zone, creation time, labels)} of
    every CronJob, its spec as nodes {(document index, id): node}, and the
    kinds of every document."""
    out, kinds, specs = {}, {}, {}
    docs = [d for d in yaml.safe_load_all(open(path)) if d is not None]
    nodes = [n for n in yaml.compose_all(open(path)) if n is not None]
    for i, (d, dn) in enumerate(zip(docs, nodes), 1):
        items, item_nodes = [d], [dn]
        if d.get("kind") == "List":
            items, item_nodes = d.get("items", []), node_get(dn, "items").value
        for obj, on in zip(items, item_nodes):
            kinds.setdefault(i, []).append(obj.get("kind"))
            if obj.get("kind") != "CronJob":
                continue
            spec = obj["spec"]
            sched = spec["schedule"]
            zone = spec.get("timeZone")
            m = re.match(r"(CRON_TZ|TZ)=(\S+)\s+(.*)", sched)
            if m:
                zone, sched = m.group(2), m.group(3)
            ns = obj["metadata"].get("namespace", "default")
            specs[(i, ns + "." + obj["metadata"]["name"])] = node_get(on, "spec")
            out[(i, ns + "." + obj["metadata"]["name"])] = (
                sched, zone or default_zone, obj["metadata"].get("creationTimestamp"),
                {str(k): str(v) for k, v in (obj["metadata"].get("labels") or {}).items()})
    return out, kinds, specs


def spec_checks(name, job, spec, label):
    """A CronJob's suspend, concurrencyPolicy and jobTemplate as the job
    holds them, each read from the source as Kubernetes reads it."""
    v = lambda key: go_yaml_value(node_get(spec, key)) if node_get(spec, key) else None
    if job.get("suspend", False) is not (v("suspend") is True):
        problem("%s: %s: suspend %r, the CronJob's spec.suspend %r"
                % (name, label, job.get("suspend"), v("suspend")))
    want = {None: "allow", "Allow": "allow", "Forbid": "queue", "Replace": "replace"}
    if job.get("overlap", "allow") != want.get(v("concurrencyPolicy")):
        problem("%s: %s: overlap %r, the CronJob's concurrencyPolicy %r"
                % (name, label, job.get("overlap"), v("concurrencyPolicy")))
    def canon(x):  # JSON text, 1.0 and 1 alike, true and 1 not
        if isinstance(x, dict):
            return {k: canon(y) for k, y in x.items()}
        if isinstance(x, list):
            return [canon(y) for y in x]
        return int(x) if isinstance(x, float) and x.is_integer() else x
    try:
        body = json.loads(job["target"]["body"])["jobTemplate"]
    except ValueError as e:
        problem("%s: %s: the body is no JSON (%s): %s" % (name, label, e, job["target"]["body"]))
        return
    if json.dumps(canon(body), sort_keys=True) != json.dumps(canon(v("jobTemplate")),
                                                              sort_keys=True):
        problem("%s: %s: the body's jobTemplate %s, as kubectl reads the source %s"
                % (name, label, json.dumps(body), json.dumps(v("jobTemplate"))))


# ---- the checks -------------------------------------------------------------

def palisade_instants(binary, jobs, counts, start, end):
    """Each job's instants in (start, end), asking for COUNTS[k] of them (two
    more than the reference has: a surplus shows as a longer list)."""
    lines = []
    frm = dt.datetime.fromtimestamp(start, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    for j, c in zip(jobs, counts):
        lines.append("%s\t%s\t%s\t%d\tauto" % (j["schedule"]["cron"], j["schedule"]["timezone"],
                                               frm, c))
    out = subprocess.run([binary, "cron", "batch"], input="\n".join(lines) + "\n",
                         capture_output=True, text=True, check=True).stdout.splitlines()
    res = []
    for line in out:
        f = line.split()
        assert f[0] == "0", line
        ts = [int(dt.datetime.fromisoformat(x[:-1] + "+00:00").timestamp()) for x in f[1:]]
        res.append([t for t in ts if t < end])
    return res


def compare(name, job, entry_src, pal, ref, approximated, what, zone=None):
    if pal == ref:
        return
    if approximated and sorted(set(ref)) == pal:
        return
    if approximated and zone is not None and dst_only(pal, ref, zone):
        return
    extra = sorted(set(pal) - set(ref))[:3]
    missing = sorted(set(ref) - set(pal))[:3]
    fmt = lambda ts: [dt.datetime.fromtimestamp(t, dt.timezone.utc).isoformat() for t in ts]
    problem("%s: job %s (%s): palisade %d instants, %s %d; palisade only %s, %s only %s"
            % (name, job["id"], entry_src, len(pal), what, len(ref), fmt(extra), what,
               fmt(missing)))


GO_UNITS = {"ns": 1, "us": 1e3, "\u00b5s": 1e3, "\u03bcs": 1e3, "ms": 1e6, "s": 1e9,
            "m": 60e9, "h": 3600e9}


def every_runs(name, job, sched, created, label):
    """A CronJob's "@every D": the controller's parser (robfig/cron) reads D
    as Go's time.ParseDuration does and cuts it to whole seconds (1s at
    least); its runs are the creation time plus k intervals, k >= 1.  The
    job's runs are palisade's `every` from its `start` (docs/jobs.md:
    start, start + every, ...).  Without a creation time the anchor is
    unknown (the report names it): only the interval is compared."""
    ns = 0.0
    for num, unit in re.findall(r"([0-9.]+)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)", sched[7:]):
        ns += float(num) * GO_UNITS[unit]
    want = max(1, int(ns // 1e9))
    got = job["schedule"].get("every")
    if got != "%ds" % want:
        problem("%s: job %s (%s): every %s, the controller's interval %ds"
                % (name, job["id"], label, got, want))
        return
    if created is None:
        if "start" in job["schedule"]:
            problem("%s: job %s (%s): a start without a creation time" % (name, job["id"], label))
        return
    anchor = int(dt.datetime.fromisoformat(created.replace("Z", "+00:00")).timestamp())
    start = int(dt.datetime.fromisoformat(
        str(job["schedule"].get("start", "")).replace("Z", "+00:00") or "1970-01-01T00:00:00+00:00"
    ).timestamp())
    for w in WINDOWS:
        lo, hi = int(w.timestamp()), int(w.timestamp()) + DAYS * 86400
        ref = [anchor + k * want for k in range(1, (hi - anchor) // want + 2)
               if lo < anchor + k * want < hi]
        pal = [start + k * want for k in range(0, (hi - start) // want + 2)
               if lo < start + k * want < hi]
        if pal != ref:
            problem("%s: job %s (%s): palisade %d runs from %s, the controller %d"
                    % (name, job["id"], label, len(pal), job["schedule"].get("start"), len(ref)))


def prefix(kind, name):
    """`import crontab` needs --prefix: the file's name as a name."""
    if kind != "crontab":
        return []
    return ["--prefix", re.sub(r"[^a-z0-9]+", "-", os.path.basename(name).lower()).strip("-")]


def run_case(binary, fixture, kind, opts, expected):
    path = os.path.join(FIX, fixture)
    name = os.path.relpath(path)
    cmd = [binary, "import", kind, "--target-url", URL] + prefix(kind, name) + opts + [name]
    p = subprocess.run(cmd, capture_output=True, text=True)
    report = [l for l in p.stderr.splitlines() if not l.startswith("palisade import")]
    want_rc = 2 if expected else 0
    if p.returncode != want_rc:
        problem("%s: exit %d, expected %d\n%s" % (name, p.returncode, want_rc, p.stderr))
        return 0
    # the report: exactly the expected elements, each once
    left = list(report)
    for where, word in expected:
        hit = [l for l in left if (l.startswith(name + ":" + where + ":") or
                                   (": %s:" % where) in l) and word in l]
        if not hit:
            problem("%s: the report does not name %s (%s):\n%s" % (name, where, word, p.stderr))
        else:
            left.remove(hit[0])
    for l in left:
        problem("%s: unexpected report line: %s" % (name, l))
    # where the old system's record of its fires comes from, for shadow diff
    hint = "palisade import %s: for `palisade shadow diff --against FILE`" % kind
    if p.stdout.strip() and not any(l.startswith(hint) for l in p.stderr.splitlines()):
        problem("%s: the report does not say where the fire record for shadow diff comes from:\n%s"
                % (name, p.stderr))
    # the job file validates
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(p.stdout)
    v = subprocess.run([binary, "validate", f.name], capture_output=True, text=True)
    os.unlink(f.name)
    if v.returncode != 0:
        problem("%s: palisade validate refuses the output:\n%s" % (name, v.stderr))
    jobs = yaml.safe_load(p.stdout)["jobs"] or []

    # each job's source entry, read from the source
    zone_opt = opts[opts.index("--timezone") + 1] if "--timezone" in opts else "UTC"
    pairs = []   # (job, Entry, zone, label, approximated)
    if kind == "crontab":
        system = "--system" in opts
        debian = "--cron" in opts and opts[opts.index("--cron") + 1] == "debian"
        src, entry_lines, mailto = crontab_sources(path, system, zone_opt, not debian)
        named = set()
        for l in report:
            m = re.match(re.escape(name) + r":([\d, ]+):", l)
            if m:
                named.update(int(x) for x in m.group(1).split(","))
        for j in jobs:
            n = int(re.search(r" line (\d+)", j["description"]).group(1))
            sched, zone, user = src[n]
            want = {"user": user} if user else {}
            if j.get("labels", {}) != want:
                problem("%s: line %d: labels %r, expected %r" % (name, n, j.get("labels"), want))
            approx = any(l.startswith("%s:%d: approximated" % (name, n)) for l in report)
            pairs.append((j, Entry(sched), zone, "line %d" % n, approx))
        done = {int(re.search(r" line (\d+)", j["description"]).group(1)) for j in jobs}
        for n in entry_lines + mailto:
            if n not in done and n not in named:
                problem("%s: line %d became no job and the report does not name it" % (name, n))
    else:
        src, kinds, spec_nodes = kubernetes_sources(path, zone_opt)
        for j in jobs:
            i = int(re.search(r"document (\d+)", j["description"]).group(1))
            sched, zone, created, want = src[(i, j["id"])]
            if j.get("labels", {}) != want:
                problem("%s: document %d: labels %r, expected %r"
                        % (name, i, j.get("labels"), want))
            if sched.startswith("@every "):
                every_runs(name, j, sched, created, "document %d" % i)
                continue
            # the report names a clock change the controller and dst: auto
            # read differently
            approx = any(re.match(re.escape(name) + r":\d+: document %d: approximated: "
                                  r".*(skips its clock forward|sets its clock back)" % i, l)
                         for l in report)
            pairs.append((j, Entry(sched, robfig=True), zone, "document %d" % i, approx))
            spec_checks(name, j, spec_nodes[(i, j["id"])], "document %d" % i)
        done = {int(re.search(r"document (\d+)", j["description"]).group(1)) for j in jobs}
        for i, ks in kinds.items():
            if i not in done and not any("document %d:" % i in l for l in report):
                problem("%s: document %d (%s) became no job and the report does not name it"
                        % (name, i, ks))

    # fire instants over 30 days, in each window
    for w in WINDOWS:
        start = int(w.timestamp())
        end = start + DAYS * 86400
        by_zone, refs = {}, [None] * len(pairs)
        for k, (j, e, zone, label, approx) in enumerate(pairs):
            by_zone.setdefault(zone, []).append(k)
        runs = cron_daemon_runs if kind == "crontab" else robfig_runs
        for zone, ks in by_zone.items():
            for k, r in zip(ks, runs([pairs[k][1] for k in ks], zoneinfo.ZoneInfo(zone),
                                     start, end)):
                refs[k] = r
        pal = palisade_instants(binary, [p[0] for p in pairs], [len(r) + 2 for r in refs],
                                start, end)
        for k, (j, e, zone, label, approx) in enumerate(pairs):
            compare(name, j, label, pal[k], refs[k], approx,
                    "cron" if kind == "crontab" else "the controller",
                    zoneinfo.ZoneInfo(zone) if kind == "kubernetes" else None)
            z = zoneinfo.ZoneInfo(zone)
            if e.croniter_agrees() and not has_change(z, start - 86400,
                                                                   end + 86400):
                n = min(len(pal[k]), 500)
                compare(name, j, label, pal[k][:n], croniter_runs(e, z, start, end, n), False,
                        "croniter")
    return len(jobs)


def unreadable(binary):
    """Input it cannot read: exit 65, no job file, the place named."""
    with tempfile.TemporaryDirectory() as d:
        for kind, text, where in (("crontab", b"0 1 * * * a\nb\0c\n", ":2: unreadable"),
                                  ("kubernetes", b"kind: CronJob\n---\nspec: [\n",
                                   ":4:1: unreadable: document 2")):
            path = os.path.join(d, kind)
            with open(path, "wb") as f:
                f.write(text)
            p = subprocess.run([binary, "import", kind, "--target-url", URL] + prefix(kind, path) + [path],
                               capture_output=True, text=True)
            if p.returncode != 65 or p.stdout or where not in p.stderr:
                problem("unreadable %s: exit %d (expected 65), stdout %r, stderr %r"
                        % (kind, p.returncode, p.stdout[:80], p.stderr))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="bin/palisade")
    a = ap.parse_args()
    t0 = time.time()
    n_jobs = 0
    for fixture, kind, opts, expected in CASES:
        n_jobs += run_case(os.path.abspath(a.bin), fixture, kind, opts, expected)
    unreadable(os.path.abspath(a.bin))
    print("import reference: %d fixtures, %d jobs x %d windows of %d days, %d problems "
          "(%.1f s)" % (len(CASES), n_jobs, len(WINDOWS), DAYS, len(problems),
                          time.time() - t0))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
