"""qmm_requires: one clear line, not a traceback, when a script's Python package is missing.

    sys.path.insert(0, ".../python")   # where this file is
    import qmm_requires
    qmm_requires.modules("numpy", "onnx")

Every Python script of the tree that needs more than the standard library calls this before
importing its packages. When one cannot be imported it prints, on stderr, one line naming the
module, the interpreter and how to install the pinned versions (requirements.txt, through
scripts/pydeps.sh), and exits 2, the status the tree's tools use for "cannot run as asked".
"""

import importlib
import os
import sys

INSTALL = ("run scripts/pydeps.sh (then use .venv/bin/python) "
           "or pip install -r requirements.txt")


def modules(*names, how=INSTALL):
    """Imports each module by name; exits 2 with one line at the first that fails, ending
    with `how` (the repository's way of installing them by default)."""
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            script = sys.argv[0] if sys.argv and sys.argv[0] else "python"
            # the reason on the same line: a module present but broken names what it lacks
            reason = " ".join(str(exc).split())
            sys.stderr.write("%s: needs the Python module '%s', which %s cannot import (%s): %s\n"
                             % (script, name, sys.executable or "python", reason, how))
            sys.exit(2)


def script(doc, *names, main=True, how=INSTALL):
    """A script's start: with -h or --help, prints `doc` and exits 0 before asking for any
    package (so that help works where they are missing); then modules(*names, how=how). `main`
    is the script's `__name__ == "__main__"`: imported as a module, it never prints help."""
    if main and ("-h" in sys.argv or "--help" in sys.argv):
        print(doc)
        sys.exit(0)
    modules(*names, how=how)


def outputs(parser, *options):
    """Refuses, before any work, an output path a script could not write at its end: each
    option is (name, path, existing) — path None: not given; existing: a hint when the file must
    already exist (a section of it is replaced). parser.error: one line, exit 2."""
    for name, path, existing in options:
        if not path:
            continue
        if os.path.isdir(path):
            parser.error(f"{name} {path}: a folder, not a file")
        if existing and not (os.path.isfile(path) and os.access(path, os.R_OK)):
            parser.error(f"{name} {path}: no such readable file ({existing})")
        if os.path.exists(path) and not os.access(path, os.W_OK):
            parser.error(f"{name} {path}: not writable")
        folder = os.path.dirname(os.path.abspath(path))
        if not (os.path.isdir(folder) and os.access(folder, os.W_OK)):
            parser.error(f"{name} {path}: cannot write in {folder}")
