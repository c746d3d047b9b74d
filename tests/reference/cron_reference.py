#!/usr/bin/env python3
"""cron_reference.py - check `palisade cron next` against independent references.

Usage: python3 tests/reference/cron_reference.py --bin bin/palisade [--seed N] [--scale F]

Generates a deterministic (seeded) set of cases - expression x zone x start
instant x DST policy - runs them all through `palisade cron batch` (one
process per --jobs chunk, one line per case) and compares the instants with
one of three references that share no code with the C engine.  Every error
case and every 50th other one also runs as `palisade cron next EXPR --tz ZONE
--from START --count N --dst POLICY`, its own process, which must give the
same exit code and instants as the batch.  The references:

  croniter  python3-croniter (Debian 12 ships 1.3.5) for 5-field expressions.
            Compared only where its semantics are the Vixie semantics palisade
            implements (see "Where croniter differs" below).
  zdump     the zone's transitions as printed by `zdump -v` (tzcode, reads the
            TZif files itself).  Fixed-time and wall-clock jobs placed inside
            spring-forward gaps and fall-back overlaps of many zones, expected
            instants derived from the transition table alone, for each policy.
  brute     a brute-force reference written here: walks local calendar days,
            matches days with its own reading of the Quartz/Vixie day rules
            (L, L-n, nW, LW, nL, n#k, year, the Vixie dom/dow OR rule), walks
            the matching wall times of each day and maps each to UTC with the
            stdlib zoneinfo module (fold=0/1 round trips), then applies the DST
            policy.  Covers what croniter cannot: Quartz specials, years,
            seconds, '?', macros, wrapping ranges, DST policies.

Where croniter differs (and is therefore not consulted):
  * day-of-month/day-of-week OR rule: croniter ORs the two fields when their
    *expanded value sets* are both restricted; Vixie cron (and palisade) ORs
    when neither field *text* starts with '*'.  They disagree on e.g. dom
    "*/2" (croniter: restricted -> OR; Vixie: starts with '*' -> AND) and dom
    "1-31" (croniter: full set -> AND; Vixie: OR).  Such cases go to brute.
  * DST: croniter does wall-clock arithmetic on aware datetimes and then
    patches the result with an offset "lag" heuristic; a time in a
    spring-forward gap comes out one offset-difference late (02:30 CET ->
    03:30 CEST) instead of at the transition or skipped, and repeated times
    are not fired in both passes.  Cases whose window [start - 2 days,
    last instant + 2 days] contains a transition (per zdump) go to brute.
  * croniter's 6-field form is "min hour dom month dow SECOND", not Quartz;
    it knows no W, no '?', no year: never used for 6/7-field expressions.
  * croniter gives up after 50 years without a match; palisade searches to
    2099-12-31.  Only instants croniter found are compared.
  * croniter bug: a day-of-month list with a day past the end of the current
    month overshoots into the next month and skips its early days
    ('0 0 31,1 * *' after 2026-02-27 gives Mar 31, not Mar 1).  Lists with a
    day >= 29 and more than one value go to brute.

Prints the first mismatches and a summary line
  reference: N cases, M mismatches (croniter a, zdump b, brute c, errors d)
and exits 1 on any mismatch.
"""

import argparse
import bisect
import calendar
import datetime as dt
import os
import random
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

try:
    from croniter import croniter
except ImportError:
    import debian_python
    debian_python.reexec("cron_reference", "python3-croniter")
from zoneinfo import ZoneInfo

UTC = dt.timezone.utc
ARGV_EVERY = 50  # every 50th case also through `palisade cron next` (its own process)
EPOCH = dt.datetime(1970, 1, 1)
LOCAL_END = int((dt.datetime(2100, 1, 1) - EPOCH).total_seconds())  # local seconds

ZONES = [
    "UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "America/Sao_Paulo",
    "Pacific/Apia", "Europe/Moscow", "Asia/Kolkata", "Europe/London", "Australia/Sydney",
    "America/Santiago", "Asia/Tehran", "Africa/Casablanca", "Europe/Dublin", "America/St_Johns",
    "Antarctica/Troll", "Pacific/Chatham", "America/Havana", "America/Nuuk", "Asia/Gaza",
]

POLICIES = ["auto", "gap=shift,overlap=first", "gap=skip,overlap=first", "gap=shift,overlap=last",
            "gap=skip,overlap=last", "gap=shift,overlap=both", "gap=skip,overlap=both",
            "gap=skip", "overlap=both"]


def fmt(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


# ------------------------------------------------------------------ zdump

class ZdumpZone:
    """A zone's offsets as zdump prints them: transitions (T, before, after)."""

    def __init__(self, name):
        out = subprocess.run(["zdump", "-v", "-c", "1800,2101", name], capture_output=True,
                             text=True, check=True).stdout
        pts = []
        for line in out.splitlines():
            if " UT = " not in line:
                continue
            left, right = line.split(" UT = ")
            stamp = " ".join(left.split()[-4:])  # "Mar 29 00:59:59 2026"
            t = calendar.timegm(time.strptime(stamp, "%b %d %H:%M:%S %Y"))
            pts.append((t, int(right.rsplit("gmtoff=", 1)[1])))
        self.trans = []
        for (t1, o1), (t2, o2) in zip(pts[0::2], pts[1::2]):
            assert t2 == t1 + 1, (name, t1, t2)
            if o1 != o2:
                self.trans.append((t2, o1, o2))
        self.ts = [t for t, _, _ in self.trans]
        self.base = self.trans[0][1] if self.trans else 0

    def offset_at(self, t):
        i = bisect.bisect_right(self.ts, t) - 1
        return self.trans[i][2] if i >= 0 else self.base

    def offsets_between(self, t0, t1):
        offs = {self.offset_at(t0)}
        for i in range(bisect.bisect_right(self.ts, t0), bisect.bisect_right(self.ts, t1)):
            offs.add(self.trans[i][2])
        return offs

    def has_transition(self, t0, t1):
        return bisect.bisect_right(self.ts, t1) > bisect.bisect_right(self.ts, t0)

    def resolve(self, local):
        """UTC instants whose wall clock reads LOCAL, or ([], transition)."""
        offs = self.offsets_between(local - 30 * 3600, local + 30 * 3600)
        res = sorted(local - o for o in offs if self.offset_at(local - o) == o)
        if res:
            return res, None
        for t, ob, oa in self.trans:
            if t + ob <= local < t + oa:
                return [], t
        raise AssertionError("no gap found")

    def gaps_and_overlaps(self, y0=1970, y1=2099):
        lo = calendar.timegm((y0, 1, 1, 0, 0, 0))
        hi = calendar.timegm((y1, 12, 31, 0, 0, 0))
        return [(t, ob, oa) for t, ob, oa in self.trans if lo <= t <= hi]


def apply_policy(instants, gap_end, gap, overlap, after, out):
    """Adds the fire instants of one wall time to set OUT (only those > after)."""
    if not instants:
        chosen = [gap_end] if gap == "shift" else []
    elif len(instants) == 1:
        chosen = instants
    else:
        chosen = {"first": instants[:1], "last": instants[-1:], "both": instants}[overlap]
    for u in chosen:
        if u > after:
            out.add(u)


def parse_policy(p, wall):
    if p == "auto":
        return ("skip", "both") if wall else ("shift", "first")
    gap, overlap = "shift", "first"
    for kv in p.split(","):
        k, v = kv.split("=")
        if k == "gap":
            gap = v
        else:
            overlap = v
    return gap, overlap


# ------------------------------------------------------------------ expressions

DOW_NAMES = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"]
MON_NAMES = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]


class Spec:
    """What an expression means, built alongside its text by the generator."""

    def __init__(self):
        self.quartz = False
        self.secs = [0]
        self.mins = self.hours = None
        self.months = None
        self.years = None  # None: all
        self.dom = ("any",)
        self.dow = ("any",)
        self.dom_star = self.dow_star = True
        self.wall = False
        self.text = ""


def name_case(rng, s):
    return rng.choice([s, s.lower(), s.title()])


def gen_list_field(rng, lo, hi, names=None, name_of=None, wrap=False, dense=0.3, norm=None):
    """Random list field over lo..hi.  Returns (text, set of values)."""
    norm = norm or (lambda v: v)

    def show(v):
        if names and rng.random() < 0.35:
            n = name_of(v)
            if n:
                return name_case(rng, n)
        return str(v)

    size = hi - lo + 1
    kind = rng.choices(["star", "val", "list", "range", "rstep", "sstep", "astep", "wrap"],
                       [dense, 1, 0.8, 0.6, 0.4, 0.5, 0.3, 0.4 if wrap else 0])[0]
    if kind == "star":
        return "*", {norm(v) for v in range(lo, hi + 1)}
    if kind == "val":
        v = rng.randint(lo, hi)
        return show(v), {norm(v)}
    if kind == "list":
        parts, vals = [], set()
        for _ in range(rng.randint(2, 4)):
            if rng.random() < 0.3:
                a = rng.randint(lo, hi)
                b = rng.randint(a, hi)
                parts.append(f"{show(a)}-{show(b)}")
                vals |= {norm(v) for v in range(a, b + 1)}
            else:
                v = rng.randint(lo, hi)
                parts.append(show(v))
                vals.add(norm(v))
        return ",".join(parts), vals
    if kind == "range":
        a = rng.randint(lo, hi)
        b = rng.randint(a, hi)
        return f"{show(a)}-{show(b)}", {norm(v) for v in range(a, b + 1)}
    if kind == "rstep":
        a = rng.randint(lo, hi)
        b = rng.randint(a, hi)
        s = rng.randint(1, max(1, size // 2))
        return f"{show(a)}-{show(b)}/{s}", {norm(v) for v in range(a, b + 1, s)}
    if kind == "sstep":
        s = rng.randint(1, max(1, size // 2))
        return f"*/{s}", {norm(v) for v in range(lo, hi + 1, s)}
    if kind == "astep":
        a = rng.randint(lo, hi)
        s = rng.randint(1, max(1, size // 2))
        return f"{show(a)}/{s}", {norm(v) for v in range(a, hi + 1, s)}
    # wrap (Quartz): a..hi then lo..b, stepping across the end
    a = rng.randint(lo + 1, hi)
    b = rng.randint(lo, a - 1)
    s = rng.choice([1, 1, 2, 3])
    vals, v = set(), a
    seq_len = (hi - a + 1) + (b - lo + 1)
    for k in range(0, seq_len, s):
        v = a + k
        if v > hi:
            v -= size
        vals.add(norm(v))
    text = f"{show(a)}-{show(b)}" + (f"/{s}" if s > 1 else "")
    return text, vals


def gen_vixie(rng, for_croniter=False):
    sp = Spec()
    mt, sp.mins = gen_list_field(rng, 0, 59, dense=0.15)
    ht, sp.hours = gen_list_field(rng, 0, 23, dense=0.5)
    dt_, dom = gen_list_field(rng, 1, 31, dense=1.5)
    mo, sp.months = gen_list_field(rng, 1, 12, names=True,
                                   name_of=lambda v: MON_NAMES[v - 1], dense=1.5)
    wt, dow = gen_list_field(rng, 0, 7, names=True,
                             name_of=lambda v: DOW_NAMES[v] if v < 7 else None, dense=1.5,
                             norm=lambda v: v % 7)
    if not for_croniter and dt_ == "*" and rng.random() < 0.2:
        dt_ = "?"
    if not for_croniter and wt == "*" and rng.random() < 0.2:
        wt = "?"
    sp.dom, sp.dow = ("set", dom), ("set", dow)
    sp.dom_star, sp.dow_star = dt_[0] in "*?", wt[0] in "*?"
    sp.wall = mt[0] == "*" or ht[0] == "*"
    sp.text = " ".join([mt, ht, dt_, mo, wt])
    return sp


MACROS = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
          "@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *",
          "@hourly": "0 * * * *"}


def macro_spec(name):
    mins, hours, dom, mon, dow = MACROS[name].split()
    sp = Spec()
    sp.mins = {0}
    sp.hours = set(range(24)) if hours == "*" else {0}
    sp.months = set(range(1, 13)) if mon == "*" else {1}
    sp.dom = ("set", set(range(1, 32)) if dom == "*" else {1})
    sp.dow = ("set", set(range(7)) if dow == "*" else {0})
    sp.dom_star, sp.dow_star = dom == "*", dow == "*"
    sp.wall = hours == "*"
    sp.text = name
    return sp


def gen_quartz(rng, start_year):
    sp = Spec()
    sp.quartz = True
    r = rng.random()
    if r < 0.55:
        st, secs = "0", {0}
    elif r < 0.65:
        st, secs = "*", set(range(60))
    else:
        st, secs = gen_list_field(rng, 0, 59, wrap=True, dense=0.05)
    sp.secs = secs
    mt, sp.mins = gen_list_field(rng, 0, 59, wrap=True, dense=0.15)
    ht, sp.hours = gen_list_field(rng, 0, 23, wrap=True, dense=0.4)
    mo, sp.months = gen_list_field(rng, 1, 12, names=True, name_of=lambda v: MON_NAMES[v - 1],
                                   wrap=True, dense=1.5)
    if rng.random() < 0.5:  # day-of-month carries the day rule
        wt = "?"
        sp.dow = ("any",)
        r = rng.random()
        if r < 0.12:
            dt_, sp.dom = "L", ("last", 0)
        elif r < 0.24:
            n = rng.choice([1, 2, 3, 5, 10, 27, 28, 29, 30])
            dt_, sp.dom = f"L-{n}", ("last", n)
        elif r < 0.42:
            n = rng.choice([1, 1, 2, 15, 28, 29, 30, 31, rng.randint(1, 31)])
            dt_, sp.dom = f"{n}W", ("W", n)
        elif r < 0.52:
            dt_, sp.dom = "LW", ("LW",)
        else:
            dt_, vals = gen_list_field(rng, 1, 31, wrap=True, dense=0.6)
            sp.dom = ("set", vals)
    else:
        dt_ = "?"
        sp.dom = ("any",)
        r = rng.random()
        if r < 0.15:
            w = rng.randint(1, 7)
            wt, sp.dow = f"{w}L", ("lastwd", w - 1)
        elif r < 0.35:
            w, k = rng.randint(1, 7), rng.randint(1, 5)
            ws = name_case(rng, DOW_NAMES[w - 1]) if rng.random() < 0.3 else str(w)
            wt, sp.dow = f"{ws}#{k}", ("nth", w - 1, k)
        elif r < 0.42:
            wt, sp.dow = "L", ("set", {6})
        else:
            wt, vals = gen_list_field(rng, 1, 7, names=True,
                                      name_of=lambda v: DOW_NAMES[v - 1], wrap=True, dense=0.6,
                                      norm=lambda v: v - 1)
            sp.dow = ("set", vals)
    fields = [st, mt, ht, dt_, mo, wt]
    r = rng.random()
    if r < 0.25:
        fields.append("*")
    elif r < 0.5:
        y0 = min(2099, max(1970, start_year + rng.randint(-1, 3)))
        kind = rng.random()
        if kind < 0.4:
            fields.append(str(y0))
            sp.years = {y0}
        elif kind < 0.7:
            y1 = min(2099, y0 + rng.randint(0, 5))
            fields.append(f"{y0}-{y1}")
            sp.years = set(range(y0, y1 + 1))
        else:
            s = rng.randint(2, 4)
            fields.append(f"{y0}/{s}")
            sp.years = set(range(y0, 2100, s))
    sp.wall = st[0] == "*" or mt[0] == "*" or ht[0] == "*"
    sp.text = " ".join(fields)
    return sp


# ------------------------------------------------------------------ brute force

def weekday_sun0(y, m, d):
    return (dt.date(y, m, d).weekday() + 1) % 7


def day_matches(sp, y, m, d):
    ndays = calendar.monthrange(y, m)[1]
    wd = weekday_sun0(y, m, d)

    def dom_ok():
        k = sp.dom[0]
        if k == "any":
            return True
        if k == "set":
            return d in sp.dom[1]
        if k == "last":
            return d == ndays - sp.dom[1]
        weekdays = [x for x in range(1, ndays + 1) if weekday_sun0(y, m, x) not in (0, 6)]
        if k == "LW":
            return d == weekdays[-1]
        n = sp.dom[1]  # nW: the weekday of this month closest to day n
        if n > ndays:
            return False
        return d == min(weekdays, key=lambda x: abs(x - n))

    def dow_ok():
        k = sp.dow[0]
        if k == "any":
            return True
        if k == "set":
            return wd in sp.dow[1]
        same = [x for x in range(1, ndays + 1) if weekday_sun0(y, m, x) == sp.dow[1]]
        if k == "lastwd":
            return d == same[-1]
        return len(same) >= sp.dow[2] and d == same[sp.dow[2] - 1]

    if sp.quartz:
        return dow_ok() if sp.dom[0] == "any" else dom_ok()
    if sp.dom_star or sp.dow_star:
        return dom_ok() and dow_ok()
    return dom_ok() or dow_ok()


class ZoneinfoMapper:
    """Local wall time -> UTC instants with the stdlib zoneinfo module."""

    def __init__(self, name, zd):
        self.zi = ZoneInfo(name)
        self.zd = zd  # only used to know where the slow path is needed

    def offset(self, t):
        return int(dt.datetime.fromtimestamp(t, self.zi).utcoffset().total_seconds())

    def resolve(self, local):
        naive = EPOCH + dt.timedelta(seconds=local)
        res = set()
        for fold in (0, 1):
            u = int(naive.replace(tzinfo=self.zi, fold=fold).timestamp())
            back = dt.datetime.fromtimestamp(u, self.zi).replace(tzinfo=None)
            if back == naive:
                res.add(u)
        if res:
            return sorted(res), None
        a = int(naive.replace(tzinfo=self.zi, fold=0).timestamp())
        b = int(naive.replace(tzinfo=self.zi, fold=1).timestamp())
        lo, hi = min(a, b), max(a, b)
        off_lo = self.offset(lo)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.offset(mid) == off_lo:
                lo = mid
            else:
                hi = mid
        return [], hi


def brute_next(sp, mapper, zd, policy, after, count, horizon_years=12):
    """First COUNT fire instants > after, or fewer when none up to the horizon.
    Returns (instants, complete): complete is False when the scan stopped at
    the horizon before 2099 with fewer than COUNT instants."""
    gap, overlap = parse_policy(policy, sp.wall)
    lowest = min(zd.offsets_between(after, after + 3 * 86400))
    local = max(0, after + 1 + lowest)
    day = local // 86400
    first_tod = local - day * 86400
    end_day = min(LOCAL_END // 86400, day + int(horizon_years * 366))
    hours, mins, secs = sorted(sp.hours), sorted(sp.mins), sorted(sp.secs)
    found = set()
    limit = None  # once COUNT are found: wall times past this cannot beat them
    while day < end_day:
        if limit is not None and day * 86400 > limit:
            break
        y, m, d = dt.date.fromordinal(day + 719163).timetuple()[:3]
        if (sp.years is None or y in sp.years) and m in sp.months and day_matches(sp, y, m, d):
            base = day * 86400
            quiet = not zd.has_transition(base - 2 * 86400, base + 3 * 86400)
            off = mapper.offset(base) if quiet else None
            stop = False
            for h in hours:
                if stop:
                    break
                for mi in mins:
                    if stop:
                        break
                    for s in secs:
                        tod = h * 3600 + mi * 60 + s
                        if tod < first_tod:
                            continue
                        L = base + tod
                        if limit is not None and L > limit:
                            stop = True
                            break
                        if quiet:
                            inst, ge = [L - off], None
                        else:
                            inst, ge = mapper.resolve(L)
                        n_before = len(found)
                        apply_policy(inst, ge, gap, overlap, after, found)
                        if len(found) != n_before and len(found) >= count:
                            # keep the COUNT smallest; re-derive the wall-time limit
                            found = set(sorted(found)[:count])
                            nth = max(found)
                            limit = nth + max(zd.offsets_between(after, nth))
        day += 1
        first_tod = 0
    res = sorted(found)[:count]
    complete = len(res) == count or end_day >= LOCAL_END // 86400
    return res, complete


# ------------------------------------------------------------------ running

class Case:
    def __init__(self, family, expr, zone, after, count, policy="auto"):
        self.family, self.expr, self.zone = family, expr, zone
        self.after, self.count, self.policy = after, count, policy
        self.expected = None   # list of instants
        self.prefix_only = False  # expected is a prefix (reference stopped early)
        self.expect_rc = 0
        self.got = None
        self.rc = None
        self.stderr = ""

    def argv(self, binary):
        return [binary, "cron", "next", self.expr, "--tz", self.zone, "--from", fmt(self.after),
                "--count", str(self.count), "--dst", self.policy]

    def describe(self):
        return (f"[{self.family}] palisade cron next '{self.expr}' --tz {self.zone} --from "
                f"{fmt(self.after)} --count {self.count} --dst {self.policy}")


def run_case(binary, case):
    """One case through `palisade cron next` (its own process): (rc, got, stderr)."""
    p = subprocess.run(case.argv(binary), capture_output=True, text=True, timeout=60)
    got = [calendar.timegm(time.strptime(line, "%Y-%m-%dT%H:%M:%SZ")) for line in p.stdout.split()]
    return p.returncode, got, p.stderr


def run_batch(binary, cases):
    """Many cases through one `palisade cron batch`: sets rc, got, stderr of each."""
    lines = "".join(f"{c.expr}\t{c.zone}\t{fmt(c.after)}\t{c.count}\t{c.policy}\n" for c in cases)
    p = subprocess.run([binary, "cron", "batch"], input=lines, capture_output=True, text=True,
                       timeout=600)
    out = p.stdout.splitlines()
    if p.returncode != 0 or len(out) != len(cases):
        sys.exit(f"cron_reference: palisade cron batch exited {p.returncode} with {len(out)} lines "
                 f"for {len(cases)} cases: {p.stderr.strip()[:300]}")
    for c, line in zip(cases, out):
        code, _, rest = line.partition(" ")
        c.rc = int(code)
        if c.rc == 0:
            c.got = [calendar.timegm(time.strptime(w, "%Y-%m-%dT%H:%M:%SZ")) for w in rest.split()]
        else:
            c.got, c.stderr = [], rest


def check(case):
    if case.rc != case.expect_rc:
        return f"exit {case.rc}, expected {case.expect_rc}: {case.stderr.strip()}"
    if case.expect_rc != 0:
        return None
    exp, got = case.expected, case.got
    if case.prefix_only:
        if got[:len(exp)] != exp:
            return "prefix differs"
        return None
    if got != exp:
        return "instants differ"
    return None


def random_instant(rng, y0=1970, y1=2099):
    lo = calendar.timegm((y0, 1, 1, 0, 0, 0))
    hi = calendar.timegm((y1, 12, 31, 23, 59, 59))
    return rng.randint(lo, hi)


def near_transition(rng, zd):
    trans = zd.gaps_and_overlaps()
    if not trans:
        return random_instant(rng)
    t = rng.choice(trans)[0]
    return t + rng.randint(-36 * 3600, 2 * 3600)


def croniter_case(rng, zones, zds, mappers, cases):
    zone = "UTC" if rng.random() < 0.4 else rng.choice(zones)
    zd = zds[zone]
    sp = gen_vixie(rng, for_croniter=True)
    after = random_instant(rng, 1970, 2095) if rng.random() < 0.8 else near_transition(rng, zd)
    count = rng.randint(3, 10)
    # croniter decides the dom/dow OR rule on expanded sets, Vixie on the text.
    cron_or = sp.dom[1] != set(range(1, 32)) and sp.dow[1] != set(range(7))
    vixie_or = not sp.dom_star and not sp.dow_star
    fam = "croniter"
    exp = None
    # croniter 1.3.5 overshoots into the next month when a listed day is past
    # the end of the current one: '0 0 31,1 * *' after Feb 27 skips Mar 1.
    dom_set = sp.dom[1]
    long_days_ok = dom_set == set(range(1, 32)) or max(dom_set) <= 28 or len(dom_set) == 1
    partial = False
    if cron_or == vixie_or and long_days_ok:
        exp = []
        try:
            it = croniter(sp.text, dt.datetime.fromtimestamp(after, ZoneInfo(zone)))
            for _ in range(count):
                u = int(it.get_next(float))
                if local_year(u, zd) > 2099:
                    break
                exp.append(u)
        except Exception:  # croniter gives up after 50 years without a match
            partial = True
        last = exp[-1] if exp else after
        if zd.has_transition(after - 2 * 86400, last + 2 * 86400) or (partial and not exp):
            exp = None  # croniter's DST heuristic: not comparable
    case = Case(fam, sp.text, zone, after, count)
    if exp is not None:
        case.expected = exp
        case.prefix_only = partial
    else:
        case.family = "brute"
        case.expected, complete = brute_next(sp, mappers[zone], zd, "auto", after, count)
        case.prefix_only = not complete
    cases.append(case)


def local_year(u, zd):
    return time.gmtime(u + zd.offset_at(u)).tm_year


def brute_case(rng, zones, zds, mappers, cases):
    zone = rng.choice(zones)
    zd = zds[zone]
    after = near_transition(rng, zd) if rng.random() < 0.6 else random_instant(rng, 1970, 2099)
    if rng.random() < 0.05:
        after = random_instant(rng, 2099, 2099)
    start_year = time.gmtime(after).tm_year
    r = rng.random()
    if r < 0.6:
        sp = gen_quartz(rng, start_year)
    elif r < 0.95:
        sp = gen_vixie(rng)
    else:
        sp = macro_spec(rng.choice(sorted(MACROS)))
    policy = "auto" if rng.random() < 0.5 else rng.choice(POLICIES)
    count = rng.randint(2, 8)
    case = Case("brute", sp.text, zone, after, count, policy)
    case.expected, complete = brute_next(sp, mappers[zone], zd, policy, after, count)
    case.prefix_only = not complete
    cases.append(case)


def zdump_cases(rng, zones, zds, per_zone, cases):
    """Jobs placed in gaps and overlaps; expectations from zdump's table only."""
    for zone in zones:
        zd = zds[zone]
        trans = zd.gaps_and_overlaps()
        if not trans:
            continue
        for t, ob, oa in rng.sample(trans, min(per_zone, len(trans))):
            lo_local, hi_local = sorted((t + ob, t + oa))  # the gap or the overlap
            width = hi_local - lo_local
            L = lo_local + rng.randrange(0, width // 60) * 60
            hh, mm = L % 86400 // 3600, L % 3600 // 60
            jobs = [(f"{mm} {hh} * * *", {hh}, {mm}, False),
                    (f"{mm} * * * *", set(range(24)), {mm}, True),
                    ("*/15 * * * *", set(range(24)), {0, 15, 30, 45}, True)]
            for expr, hours, mins, wall in jobs:
                policy = rng.choice(POLICIES)
                after = t - rng.randint(1, 30) * 3600 - rng.randint(0, 3599)
                if rng.random() < 0.3:  # start inside the window itself
                    after = t + rng.randint(-width, width)
                count = 6 if wall else 3
                gap, overlap = parse_policy(policy, wall)
                found = set()
                local0 = (after + min(ob, oa)) // 60 * 60 - 60
                for k in range(0, 6 * 1440):
                    loc = local0 + k * 60
                    if loc % 3600 // 60 in mins and loc % 86400 // 3600 in hours:
                        inst, ge = zd.resolve(loc)
                        apply_policy(inst, ge, gap, overlap, after, found)
                exp = sorted(found)[:count]
                c = Case("zdump", expr, zone, after, count, policy)
                c.expected = exp
                cases.append(c)


def error_cases(cases):
    bad = ["0 0 25 * * ?", "61 * * * *", "* * * *", "0 0 0 ? * ?", "0 0 0 1 * MON",
           "0 0 0 L * ? 2100", "@reboot", "0 0 0 32W * ?", "0 0 0 ? * 8#1", "0 0 0 ? * 2#6",
           "*/0 * * * *", "0 0 * * 8", "0 0 L * *", "5-1 * * * *", "0 0 0 1-31/0 * ?"]
    for e in bad:
        c = Case("errors", e, "UTC", 0, 1)
        c.expect_rc = 65
        cases.append(c)
    c = Case("errors", "@daily", "Mars/Olympus_Mons", 0, 1)
    c.expect_rc = 65
    cases.append(c)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default="bin/palisade")
    ap.add_argument("--seed", type=int, default=20260329)
    ap.add_argument("--scale", type=float, default=1.0, help="multiply the case counts")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args = ap.parse_args()
    if not os.access(args.bin, os.X_OK):
        sys.exit(f"cron_reference: {args.bin} is not an executable (build it first)")

    rng = random.Random(args.seed)
    t0 = time.time()
    zds = {z: ZdumpZone(z) for z in ZONES}
    mappers = {z: ZoneinfoMapper(z, zds[z]) for z in ZONES}
    cases = []
    for _ in range(int(3500 * args.scale)):
        croniter_case(rng, ZONES, zds, mappers, cases)
    for _ in range(int(2500 * args.scale)):
        brute_case(rng, ZONES, zds, mappers, cases)
    zdump_cases(rng, ZONES, zds, max(1, int(12 * args.scale)), cases)
    error_cases(cases)
    t1 = time.time()

    # Every case through `palisade cron batch` (one process per --jobs
    # chunk: a process per case cost ~30 s of process starts), and a sample
    # through `palisade cron next` itself: every error case and every
    # ARGV_EVERY-th other one must give the same exit code and instants.
    chunks = [cases[i::args.jobs] for i in range(args.jobs)]
    with ThreadPoolExecutor(max_workers=args.jobs) as ex:
        list(ex.map(lambda ch: run_batch(args.bin, ch), chunks))
    sample = [c for i, c in enumerate(cases) if c.family == "errors" or i % ARGV_EVERY == 0]
    with ThreadPoolExecutor(max_workers=args.jobs) as ex:
        single = list(ex.map(lambda c: run_case(args.bin, c), sample))
    t2 = time.time()
    argv_bad = [(c, rc, got) for c, (rc, got, _) in zip(sample, single)
                if rc != c.rc or (rc == 0 and got != c.got)]

    fams = {"croniter": 0, "zdump": 0, "brute": 0, "errors": 0}
    bad = []
    for c in cases:
        fams[c.family] += 1
        why = check(c)
        if why:
            bad.append((c, why))
    for c, why in bad[:15]:
        print(f"MISMATCH {why}: {c.describe()}")
        print(f"   expected{' (prefix)' if c.prefix_only else ''}: "
              f"{' '.join(fmt(u) for u in (c.expected or []))}")
        print(f"   got:      {' '.join(fmt(u) for u in (c.got or []))}")
    for c, rc, got in argv_bad[:15]:
        print(f"ARGV DIFFERS from cron batch: {c.describe()}")
        print(f"   batch: exit {c.rc}: {' '.join(fmt(u) for u in (c.got or []))}")
        print(f"   next:  exit {rc}: {' '.join(fmt(u) for u in got)}")
    print(f"(references {t1 - t0:.1f}s, binary {t2 - t1:.1f}s)", file=sys.stderr)
    print(f"reference: {len(cases)} cases, {len(bad)} mismatches ("
          + ", ".join(f"{k} {v}" for k, v in fams.items()) + f"); {len(sample)} of them also "
          f"through cron next, {len(argv_bad)} differ")
    return 1 if bad or argv_bad else 0


if __name__ == "__main__":
    sys.exit(main())
