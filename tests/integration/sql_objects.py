#!/usr/bin/env python3
"""sql_objects.py CONNINFO DIR [DIR...] [--skip DIR] - does the database run
the files of the DIRs?

Every function, view and trigger of the public schema (not an extension's;
not a partition's clone of its parent's trigger) must have a file DIR/NAME.sql
in one of the DIRs whose CREATE OR REPLACE statement is the object's
definition as PostgreSQL prints it (pg_get_functiondef, pg_get_triggerdef,
pg_get_viewdef), with the schema left out; and every file must name an
object that exists.  Objects named by a file of a --skip DIR (a missing one
names none) are left out: the scheduler and the sink share a database in
the tests, and each applies its own set.  Prints one line per mismatch (with
the first differing lines) and exits 1 when there is one, else prints the
count and exits 0.  docs/schema.md, "Functions, views and triggers".
"""
import difflib
import os
import re
import subprocess
import sys

conn, dirs, skip, args = sys.argv[1], [], set(), sys.argv[2:]
while args:
    a = args.pop(0)
    if a == "--skip":
        sd = args.pop(0)
        if os.path.isdir(sd):
            skip |= {f[:-4] for f in os.listdir(sd) if f.endswith(".sql")}
    else:
        dirs.append(a)
Q = r"""
SELECT 'function', p.proname, pg_get_functiondef(p.oid) FROM pg_proc p
 WHERE p.pronamespace = 'public'::regnamespace AND p.prokind IN ('f', 'p')
   AND NOT EXISTS (SELECT 1 FROM pg_depend e WHERE e.objid = p.oid AND e.deptype = 'e')
UNION ALL
SELECT 'trigger', t.tgname, pg_get_triggerdef(t.oid) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
 WHERE c.relnamespace = 'public'::regnamespace AND NOT t.tgisinternal AND t.tgparentid = 0
UNION ALL
SELECT 'view', c.relname, pg_get_viewdef(c.oid) FROM pg_class c
 WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('v', 'm')
   AND NOT EXISTS (SELECT 1 FROM pg_depend e WHERE e.objid = c.oid AND e.deptype = 'e')
"""
out = subprocess.run(["psql", conn, "-XAtq", "-v", "ON_ERROR_STOP=1", "-F", "\x01", "-R", "\x02",
                      "-c", Q], check=True, capture_output=True, text=True).stdout


def canonical(kind, name, text):
    """The definition as the file must write it."""
    if kind == "function":
        head, _, rest = text.partition("\n")
        return re.sub(r"^CREATE OR REPLACE (FUNCTION|PROCEDURE) public\.", r"CREATE OR REPLACE \1 ",
                      head) + "\n" + rest
    if kind == "trigger":
        text = text.replace("CREATE TRIGGER ", "CREATE OR REPLACE TRIGGER ", 1)
        return re.sub(r" ON public\.", " ON ", text, count=1)
    return "CREATE OR REPLACE VIEW %s AS\n%s" % (name, text)


def statement(path):
    """The file's CREATE OR REPLACE statement, to its end."""
    text = open(path).read()
    m = re.search(r"^CREATE OR REPLACE ", text, re.M)
    return text[m.start():] if m else ""


def norm(s):
    return s.rstrip().rstrip(";").rstrip()


bad = 0
seen = set()
for rec in out.split("\x02"):
    if not rec.strip("\n"):
        continue
    kind, name, text = rec.lstrip("\n").split("\x01", 2)
    if name in seen:
        print("%s %s: more than one object of this name (one file each)" % (kind, name))
        bad += 1
        continue
    seen.add(name)
    if name in skip:
        continue
    path = next((p for p in (os.path.join(d, name + ".sql") for d in dirs) if os.path.exists(p)), None)
    if not path:
        print("%s %s is in the database but has no file %s" %
              (kind, name, " or ".join(os.path.join(d, name + ".sql") for d in dirs)))
        bad += 1
        continue
    want, got = norm(statement(path)), norm(canonical(kind, name, text))
    if want != got:
        diff = list(difflib.unified_diff(want.split("\n"), got.split("\n"), path, "database", n=0, lineterm=""))
        print("%s %s: the database's body differs from %s:" % (kind, name, path))
        for line in diff[2:12]:
            print("      " + line)
        bad += 1
for d in dirs:
    for f in sorted(os.listdir(d)):
        if f.endswith(".sql") and f[:-4] not in seen:
            print("%s has no object of its name in the database" % os.path.join(d, f))
            bad += 1
if bad:
    sys.exit(1)
print("%d objects, each as its file says" % len(seen - skip))
