"""debian_python.py - the reference checks need Debian's python3 packages
(python3-croniter, python3-yaml); a python3 first on PATH (pyenv & co.)
does not see Debian's dist-packages.  reexec() runs the script again under
/usr/bin/python3, once, or exits naming the missing packages."""
import os
import sys


def reexec(name, packages):
    if os.path.exists("/usr/bin/python3") and not os.environ.get("PAL_REF_REEXEC"):
        os.environ["PAL_REF_REEXEC"] = "1"
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    sys.exit("%s: %s missing (apt-get install %s)" % (name, packages, packages))
