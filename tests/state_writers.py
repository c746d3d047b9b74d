#!/usr/bin/env python3
"""state_writers.py [--list] - who writes triggers.state?

Lists every statement in src/ (SQL in C string literals) and sql/functions/
that sets the state of a trigger: an UPDATE of `triggers` whose SET list
assigns `state`, or an INSERT INTO triggers that names the column.  Each is
named by its file and the C function (or file-level constant, or SQL
function file) it is written in, with the state it writes.

The rule (docs/schema.md, "The door"): a trigger changes state only
through the door, palisade_trigger_move() (sql/functions/), the one UPDATE
that sets triggers.state; src/store calls it (PAL__TRIGGER_MOVE).  A
trigger is born in an initial state (PAL_TINITIAL of
include/palisade/tstate.def): an INSERT that names the column must write
it as literals, each one an initial state.  The writers that predate the
door are listed in tests/state_writers.txt: the check fails on an UPDATE
that is neither the door nor listed there (a new statement must use the
door), on a listed writer that is gone (take it off the list, so that it
only shrinks), on a door that is gone, and on an INSERT that writes a
state that is not an initial one.  --list prints the writers found, in the
list's format.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIST = os.path.join(ROOT, "tests", "state_writers.txt")
DEF = os.path.join(ROOT, "include", "palisade", "tstate.def")
DOOR = "sql/functions/palisade_trigger_move.sql palisade_trigger_move UPDATE state = CASE"

UPDATE = re.compile(r"\bUPDATE\s+triggers\b(?:\s+(?:AS\s+)?(?!SET\b)\w+)?\s+SET\s+(.*?)(?=\bFROM\b|\bWHERE\b|\bRETURNING\b|;|$)",
                    re.I | re.S)
INSERT = re.compile(r"\bINSERT\s+INTO\s+triggers\s*\(([^)]*)\)", re.I | re.S)
SETS_STATE = re.compile(r"(?:^|[\s,(])(?:\w+\.)?state\s*=\s*('[a-z_]+'|\$\d+|[^,\s]+)", re.I)
TOPLEVEL = re.compile(r"^(?!static\s+inline)[A-Za-z_][\w\s\*]*?\b(\w+)\s*(?:\(|\[)")


def c_sql(path):
    """The C file's string literals joined into one text, and for each
    character its line number."""
    src = open(path).read()
    text, lines = [], []
    line = 1
    i = 0
    while i < len(src):
        ch = src[i]
        if ch == "\n":
            line += 1
        elif src.startswith("//", i):
            j = src.find("\n", i)
            i = len(src) if j < 0 else j
            continue
        elif src.startswith("/*", i):
            j = src.find("*/", i)
            line += src.count("\n", i, j)
            i = j + 2
            continue
        elif ch == "'" and src[i + 1:i + 2] != "\n":
            j = i + 1
            while src[j] != "'":
                j += 2 if src[j] == "\\" else 1
            i = j + 1
            continue
        elif ch == '"':
            j = i + 1
            while src[j] != '"':
                if src[j] == "\\":
                    j += 1
                text.append(src[j])
                lines.append(line)
                j += 1
            i = j + 1
            text.append(" ")
            lines.append(line)
            continue
        i += 1
    return "".join(text), lines


def enclosing(path, line):
    """The C function or file-level constant that line LINE of PATH is in."""
    name = "?"
    with open(path) as f:
        for n, l in enumerate(f, 1):
            if n > line:
                break
            m = TOPLEVEL.match(l) or re.match(r"#define\s+(\w+)", l)
            if m and not l.startswith(("return", "else")):
                name = m.group(1)
    return name


def writers():
    found = []
    for d, _, files in os.walk(os.path.join(ROOT, "src")):
        for f in sorted(files):
            if f.endswith(".c"):
                path = os.path.join(d, f)
                text, lines = c_sql(path)
                found += scan(text, lambda off, p=path: (os.path.relpath(p, ROOT), enclosing(p, lines[off])))
    fdir = os.path.join(ROOT, "sql", "functions")
    for f in sorted(os.listdir(fdir)):
        if f.endswith(".sql"):
            text = open(os.path.join(fdir, f)).read()
            found += scan(text, lambda off, f=f: ("sql/functions/" + f, f[:-4]))
    return sorted(found)


def scan(text, where):
    out = []
    for m in UPDATE.finditer(text):
        s = SETS_STATE.search(m.group(1))
        if s:
            path, fn = where(m.start())
            out.append("%s %s UPDATE state = %s" % (path, fn, s.group(1)))
    for m in INSERT.finditer(text):
        if re.search(r"(?:^|[\s,])state(?:$|[\s,])", m.group(1)):
            path, fn = where(m.start())
            end = re.compile(r"\bON\s+CONFLICT\b|\bRETURNING\b|;", re.I).search(text, m.end())
            body = text[m.end():end.start() if end else len(text)]
            states = sorted({q for q in re.findall(r"'([a-z_]+)'", body) if q in STATES})
            out.append("%s %s INSERT state %s" % (path, fn, ",".join(states) or "?"))
    return out


def def_names(macro):
    """The second (PAL_TSTATE) or only (PAL_TINITIAL) argument of each
    MACRO line of tstate.def, as the state names."""
    names = []
    for l in open(DEF):
        m = re.match(r"%s\((\w+)(?:,\s*(\w+))?" % macro, l)
        if m:
            names.append((m.group(2) or m.group(1)).lower())
    return names


STATES = set(def_names("PAL_TSTATE"))
INITIAL = set(def_names("PAL_TINITIAL"))


def main():
    got = writers()
    if "--list" in sys.argv:
        print("\n".join(got))
        return 0
    bad = 0
    if got.count(DOOR) != 1:
        print("state_writers: the door is not there, or not once: %s" % DOOR)
        bad += 1
    births = [w for w in got if " INSERT state " in w]
    for w in births:
        named = w.rsplit(" ", 1)[1]
        if named == "?" or not set(named.split(",")) <= INITIAL:
            print("state_writers: an insert that writes no initial state (%s) as literals: %s"
                  % (", ".join(sorted(INITIAL)), w))
            bad += 1
    got = [w for w in got if w != DOOR and w not in births]
    want = sorted(l.strip() for l in open(LIST) if l.strip() and not l.startswith("#"))
    for w in sorted(set(got) | set(want)):
        g, k = got.count(w), want.count(w)
        if g > k:
            print("state_writers: a new writer of triggers.state (%d more than listed): %s" % (g - k, w))
            bad += 1
        elif g < k:
            print("state_writers: listed but gone (take it off %s): %s" % (os.path.relpath(LIST, ROOT), w))
            bad += 1
    if bad:
        return 1
    print("state_writers: the door, %d inserts of initial states and %d writers listed in %s"
          % (len(births), len(got), os.path.relpath(LIST, ROOT)))
    return 0


sys.exit(main())
