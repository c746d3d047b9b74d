#!/usr/bin/env python3
"""state_writers.py [--list] - who writes triggers.state?

Lists every statement in src/ (SQL in C string literals) and sql/functions/
that sets the state of a trigger: an UPDATE of `triggers` whose SET list
assigns `state`, or an INSERT INTO triggers that names the column.  Each is
named by its file and the C function (or file-level constant, or SQL
function file) it is written in, with the state it writes.

The rule (STYLE.md: one door per state machine): a trigger changes state
only through the door.  Until every writer goes through it, the writers
that predate it are listed in tests/state_writers.txt: the check fails on a
writer that is not in that list (a new statement must use the door, or be
added there with a reason in review), and on a listed writer that is gone
(take it off the list, so the list only shrinks).  --list prints the
writers found, in the list's format.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIST = os.path.join(ROOT, "tests", "state_writers.txt")

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
            out.append("%s %s INSERT state" % (path, fn))
    return out


def main():
    got = writers()
    if "--list" in sys.argv:
        print("\n".join(got))
        return 0
    want = sorted(l.strip() for l in open(LIST) if l.strip() and not l.startswith("#"))
    bad = 0
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
    print("state_writers: %d writers of triggers.state, each listed in %s" % (len(got), os.path.relpath(LIST, ROOT)))
    return 0


sys.exit(main())
