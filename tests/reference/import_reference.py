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
        neither field starts with '*'); for Kubernetes, the CronJob
        controller's parser's day rule (a "*/n" day field counts as
        restricted) and the same clock-change rules;
      - croniter (python3-croniter) as a second opinion, in the window with
        no clock change and for entries whose day rule it reads as cron does.
    Three windows: one over the European spring-forward, one over the
    European and American fall-back, one with no change at all.  An entry
    the report calls approximated may differ from cron's runs only in runs
    doubled at one instant (the clock-change case the importer names).

Prints one line per problem and a summary; exit 0 when clean, 1 otherwise.
"""
import argparse
import datetime as dt
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
     [("2", "MAILTO"), ("6", "skips its clock"), ("7", "skips its clock"),
      ("17", "@reboot"), ("22", "step after a single value"), ("25", "Mars/Olympus"),
      ("26", "out of range"), ("27", "day-of-week"), ("28", "neither")]),
    ("kubernetes/docs-cronjob.yaml", "kubernetes", [],
     [("document 1", "spec.timeZone"), ("document 1", "startingDeadlineSeconds")]),
    ("kubernetes/docs-cronjob-v1beta1.yaml", "kubernetes", ["--timezone", "Europe/Berlin"],
     [("document 1", "startingDeadlineSeconds")]),
    ("kubernetes/edge-cases.yaml", "kubernetes", [],
     [("document 1", "Deployment web"), ("document 2", "successfulJobsHistoryLimit"),
      ("document 2", "failedJobsHistoryLimit"),
      ("document 5", "creationTimestamp"), ("document 5", "startingDeadlineSeconds"),
      ("document 6", "ConfigMap"), ("document 7", "startingDeadlineSeconds")]),
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

def field_values(text, lo, hi, names=None):
    def num(s):
        s = s.lower()
        if names and s in names:
            return names.index(s) + (lo if names is MONTHS else 0)
        return int(s)
    vals = set()
    for item in text.split(","):
        step = 1
        if "/" in item:
            item, s = item.split("/")
            step = int(s)
        if item in ("*", "?"):
            a, b = lo, hi
        elif "-" in item:
            a, b = (num(x) for x in item.split("-"))
        else:
            a = b = num(item)
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
        self.dow = {d % 7 for d in field_values(f[4], 0, 7, DOWS)}
        if robfig:  # robfig/cron: "*" or "?", a step over 1 clears it
            def star(t):
                return t[0] in "*?" and not ("/" in t and int(t.split("/")[1]) > 1)
        else:       # Vixie: the text starts with '*'
            def star(t):
                return t[0] == "*"
        self.dom_star, self.dow_star = star(f[2]), star(f[4])
        self.wild = f[0][0] == "*" or f[1][0] == "*"   # MIN_STAR or HR_STAR
        self.raw_dom_star = f[2][0] == "*"
        self.raw_dow_star = f[4][0] == "*"
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
        return (self.dom_star == self.dom_full) and (self.dow_star == self.dow_full)


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

def crontab_sources(path, system, default_zone):
    """{line: (schedule text, zone, user or None)} of every entry, and the
    entry lines, and the MAILTO lines, as cron reads the file."""
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
            if name == "CRON_TZ":
                cron_tz = val or None
            if name == "MAILTO" and val:
                mailto.append(n)
    return out, entries, mailto


def kubernetes_sources(path, default_zone):
    """{(document index, id): (schedule, zone, creation time, labels)} of
    every CronJob."""
    out, kinds = {}, {}
    docs = [d for d in yaml.safe_load_all(open(path)) if d is not None]
    for i, d in enumerate(docs, 1):
        items = d.get("items", []) if d.get("kind") == "List" else [d]
        for obj in items:
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
            out[(i, ns + "." + obj["metadata"]["name"])] = (
                sched, zone or default_zone, obj["metadata"].get("creationTimestamp"),
                {str(k): str(v) for k, v in (obj["metadata"].get("labels") or {}).items()})
    return out, kinds


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


def compare(name, job, entry_src, pal, ref, approximated, what):
    if pal == ref:
        return
    if approximated and sorted(set(ref)) == pal:
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


def run_case(binary, fixture, kind, opts, expected):
    path = os.path.join(FIX, fixture)
    name = os.path.relpath(path)
    cmd = [binary, "import", kind, "--target-url", URL] + opts + [name]
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
        src, entry_lines, mailto = crontab_sources(path, system, zone_opt)
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
        src, kinds = kubernetes_sources(path, zone_opt)
        for j in jobs:
            i = int(re.search(r"document (\d+)", j["description"]).group(1))
            sched, zone, created, want = src[(i, j["id"])]
            if j.get("labels", {}) != want:
                problem("%s: document %d: labels %r, expected %r"
                        % (name, i, j.get("labels"), want))
            if sched.startswith("@every "):
                every_runs(name, j, sched, created, "document %d" % i)
                continue
            pairs.append((j, Entry(sched, robfig=True), zone, "document %d" % i, False))
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
        for zone, ks in by_zone.items():
            for k, r in zip(ks, cron_daemon_runs([pairs[k][1] for k in ks],
                                                 zoneinfo.ZoneInfo(zone), start, end)):
                refs[k] = r
        pal = palisade_instants(binary, [p[0] for p in pairs], [len(r) + 2 for r in refs],
                                start, end)
        for k, (j, e, zone, label, approx) in enumerate(pairs):
            compare(name, j, label, pal[k], refs[k], approx, "cron")
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
            p = subprocess.run([binary, "import", kind, "--target-url", URL, path],
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
