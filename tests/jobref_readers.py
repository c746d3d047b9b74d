#!/usr/bin/env python3
"""jobref_readers.py CONNINFO [--list] - who reads triggers.job_id or
triggers.resource_group?

A trigger row names its job by job_ref (docs/schema.md, "The job
reference"); the text copies job_id and resource_group are for older
nodes only, and the contract step drops them.  Every reader of this
release reads job_ref (and the job's id or group from jobs by ref).  This
check looks for readers of the text in what the database runs and what
the binary sends:

  * every function and view of the public schema of CONNINFO (a migrated
    database): pg_get_functiondef (the body only) and pg_get_viewdef;
  * every SQL string of src/: each .c file run through the preprocessor
    (so that the store's macros are expanded where they are used, an
    alias passed as a macro argument included), each run of adjacent
    string literals one text.

Each text is cut into statements at ';'.  In a statement, the names bound
to triggers (`FROM triggers t`, `JOIN triggers AS t`, `UPDATE triggers t`,
`, triggers t`) are its aliases; a read is `alias.job_id`,
`alias.resource_group`, `triggers.job_id`, ..., or a bare `job_id` /
`resource_group` in a statement whose only table is triggers, unaliased;
in a trigger on triggers (its WHEN clause) and the function it runs,
`NEW.job_id`, `OLD.resource_group`, ... too.
The column lists and conflict targets of INSERT INTO triggers are writers
(not looked at here).  A read is named `WHERE ALIAS.COLUMN`, WHERE the
function or view, or the .c file.

The readers still waiting for their move are listed in
tests/jobref_readers.txt: the check fails on a read that is not listed
(a new reader must use job_ref).  A listed one that is gone is named (take
it off the list, so that it only shrinks), a failure only with --strict:
the readers move in pieces, each landing without this check's list in
mind.  --list prints the reads found, in the list's format; --db-only
looks at the database alone.  tests/integration/test_jobref_readers.sh
runs it.
"""
import concurrent.futures
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIST = os.path.join(ROOT, "tests", "jobref_readers.txt")
COLS = ("job_id", "resource_group")
KEYWORDS = {
    "where", "join", "on", "set", "left", "right", "full", "inner", "cross", "natural", "group",
    "order", "limit", "offset", "for", "using", "returning", "window", "union", "having", "and",
    "or", "tablesample", "lateral", "except", "intersect", "fetch", "default", "values", "select",
}
BIND = re.compile(r"(?:\bFROM|\bJOIN|\bUPDATE|\bUSING|,)\s+(?:ONLY\s+)?(?:public\.)?triggers\b"
                  r"(?!\s*\()(?:\s+(?:AS\s+)?(\w+))?", re.I)
# functions whose rows are trigger rows (RETURNS SETOF triggers)
ROWS_OF = re.compile(r"\b(?:palisade_job_triggers)\s*\(", re.I)
# relations that have no job_id of their own
NO_JOB = {"(", "triggers", "palisade_job_triggers", "unnest", "generate_series", "lateral"}
TABLES = re.compile(r"(?:\bFROM|\bJOIN)\s+(?:ONLY\s+)?(?:LATERAL\s+)?([\w.]+|\()", re.I)


def reads(stmt):
    """The ALIAS.COLUMN reads of the trigger row's text in one statement."""
    aliases, bare = set(), False
    for m in BIND.finditer(stmt):
        a = m.group(1)
        if a and a.lower() not in KEYWORDS:
            aliases.add(a)
        else:
            bare = True
    for m in ROWS_OF.finditer(stmt):
        a = re.match(r"\s+(?:AS\s+)?(\w+)", stmt[close_paren(stmt, m.end() - 1):])
        if a and a.group(1).lower() not in KEYWORDS:
            aliases.add(a.group(1))
        else:
            bare = True
    if not aliases and not bare:
        return []
    out = []
    for q in aliases | {"triggers"}:
        for m in re.finditer(r"(?<![\w.])%s\.(%s)\b" % (re.escape(q), "|".join(COLS)), stmt):
            out.append("%s.%s" % (q, m.group(1)))
    if bare and all(t.lower() in NO_JOB for t in TABLES.findall(stmt)):
        body = INSERT_COLS.sub(" ", stmt)
        for m in re.finditer(r"(?<![\w.])(%s)\b(?!\s*\()" % "|".join(COLS), body):
            if not re.search(r"\bAS\s+$", body[:m.start()], re.I):
                out.append("triggers.%s" % m.group(1))
    return out


def close_paren(text, i):
    """The index just past the parenthesis that closes the one at I."""
    depth = 0
    for j in range(i, len(text)):
        depth += {"(": 1, ")": -1}.get(text[j], 0)
        if depth == 0:
            return j + 1
    return len(text)


INSERT_COLS = re.compile(r"\bINSERT\s+INTO\s+\w+\s*\([^)]*\)|\bON\s+CONFLICT\s*\([^)]*\)", re.I)


def statements(text):
    return [s for s in re.sub(r"--[^\n]*", " ", text).split(";") if s.strip()]


def db_texts(conn):
    """(name, text, row) of every function body, view and trigger of
    CONNINFO; row: the text sees a trigger row as NEW or OLD (a trigger on
    triggers, or the function it runs)."""
    q = r"""
SELECT p.proname, EXISTS (SELECT 1 FROM pg_trigger t WHERE t.tgfoid = p.oid
         AND t.tgrelid = 'triggers'::regclass), pg_get_functiondef(p.oid) FROM pg_proc p
 WHERE p.pronamespace = 'public'::regnamespace AND p.prokind IN ('f', 'p')
   AND NOT EXISTS (SELECT 1 FROM pg_depend e WHERE e.objid = p.oid AND e.deptype = 'e')
UNION ALL
SELECT c.relname, false, pg_get_viewdef(c.oid) FROM pg_class c
 WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('v', 'm')
   AND NOT EXISTS (SELECT 1 FROM pg_depend e WHERE e.objid = c.oid AND e.deptype = 'e')
UNION ALL
SELECT t.tgname, true, pg_get_triggerdef(t.oid) FROM pg_trigger t
 WHERE t.tgrelid = 'triggers'::regclass AND NOT t.tgisinternal
"""
    out = subprocess.run(["psql", conn, "-XAtq", "-v", "ON_ERROR_STOP=1", "-F", "\x01", "-R", "\x02",
                          "-c", q], check=True, capture_output=True, text=True).stdout
    for rec in out.split("\x02"):
        if rec.strip("\n"):
            name, row, text = rec.lstrip("\n").split("\x01", 2)
            m = re.search(r"AS (\$\w*\$)(.*)\1", text, re.S)
            yield name, m.group(2) if m else text, row == "t"


def cpp_flags():
    pkgs = "glib-2.0 libpq yaml-0.1 libcurl jansson libmicrohttpd libsystemd".split()
    r = subprocess.run(["pkg-config", "--cflags"] + pkgs, capture_output=True, text=True)
    return ["-I" + os.path.join(ROOT, "include"), "-I/usr/include/zookeeper",
            "-I/usr/include/postgresql", "-DTHREADED", "-D_GNU_SOURCE"] + r.stdout.split()


def literal_runs(pre):
    """Each run of adjacent string literals of preprocessed C PRE that
    comes from a file of the tree, joined."""
    runs, cur, mine, i, n = [], None, False, 0, len(pre)
    while i < n:
        ch = pre[i]
        if ch == "#" and (i == 0 or pre[i - 1] == "\n"):
            j = pre.find("\n", i)
            m = re.match(r'#\s*\d+\s+"([^"]*)"', pre[i:j])
            if m:
                mine = os.path.abspath(m.group(1)).startswith(ROOT + os.sep)
            i = n if j < 0 else j
            continue
        if ch.isspace():
            i += 1
            continue
        if ch == '"':
            j, buf = i + 1, []
            while pre[j] != '"':
                if pre[j] == "\\":
                    buf.append({"n": "\n", "t": "\t"}.get(pre[j + 1], pre[j + 1]))
                    j += 2
                    continue
                buf.append(pre[j])
                j += 1
            if mine:
                cur = (cur or "") + "".join(buf)
            i = j + 1
            continue
        if ch == "'":
            j = i + 1
            while pre[j] != "'":
                j += 2 if pre[j] == "\\" else 1
            i = j + 1
        else:
            i += 1
        if cur is not None:
            runs.append(cur)
            cur = None
    if cur is not None:
        runs.append(cur)
    return runs


def has_sql(path):
    """Is the file one whose strings can be SQL: the store's (whose
    headers' macros build statements), or one with a literal that says
    SELECT, UPDATE, INSERT, DELETE, FROM or JOIN?  Only those are run
    through the preprocessor."""
    if os.path.relpath(path, ROOT).startswith("src/store/"):
        return True
    return re.search(r'"[^"\n]*\b(?:SELECT|UPDATE|INSERT|DELETE|FROM|JOIN)\b', open(path).read()) is not None


def c_texts():
    flags = cpp_flags()
    paths = [os.path.join(d, f) for d, _, files in sorted(os.walk(os.path.join(ROOT, "src")))
             for f in sorted(files) if f.endswith(".c")]
    paths = [p for p in paths if has_sql(p)]
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        pres = pool.map(lambda p: subprocess.run(["cc", "-E"] + flags + [p], check=True,
                                                 capture_output=True, text=True, cwd=ROOT).stdout,
                        paths)
        for path, pre in zip(paths, pres):
            for run in literal_runs(pre):
                yield os.path.relpath(path, ROOT), run, False


def found(conn, c=True):
    got = set()
    for name, text, row in list(db_texts(conn)) + (list(c_texts()) if c else []):
        for s in statements(text):
            for r in reads(s):
                got.add("%s %s" % (name, r))
        if row:
            for m in re.finditer(r"\b(NEW|OLD)\.(%s)\b" % "|".join(COLS), text, re.I):
                got.add("%s %s.%s" % (name, m.group(1).upper(), m.group(2)))
    return sorted(got)


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip().splitlines()[0])
        return 2
    db_only = "--db-only" in sys.argv
    got = found(sys.argv[1], not db_only)
    if "--list" in sys.argv:
        print("\n".join(got))
        return 0
    want = sorted({l.strip() for l in open(LIST) if l.strip() and not l.startswith("#")})
    bad = 0
    for r in got:
        if r not in want:
            print("jobref_readers: a reader of the trigger row's text (read job_ref): %s" % r)
            bad += 1
    for r in want:
        if r not in got and not (db_only and r.startswith("src/")):
            print("jobref_readers: listed but gone (take it off %s): %s" % (os.path.relpath(LIST, ROOT), r))
            bad += "--strict" in sys.argv
    if bad:
        return 1
    print("jobref_readers: no reader of triggers.job_id or resource_group but the %d listed in %s"
          % (len(want), os.path.relpath(LIST, ROOT)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
