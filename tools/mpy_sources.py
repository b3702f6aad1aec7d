"""Run a script under the unix `micropython` with surepick's board code importable as a board has
it (`from surepick.firmware import app`, `from surepick.shared_fsm import link`).

    python tools/mpy_sources.py SCRIPT [ARGS ...]

The checkout's firmware/ and shared_fsm/ are reached through a folder holding a `surepick` link to
the checkout (host/source_tree.py import_root); the MicroPython binary is the venv's, else the
one on PATH. Exit status: the script's.
"""
import os
import shutil
import sys
from pathlib import Path

from surepick.host.source_tree import import_root


def micropython():
    here = Path(sys.executable).parent / "micropython"
    return str(here) if here.exists() else shutil.which("micropython")


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv else 2
    exe = micropython()
    if exe is None:
        print("mpy_sources: no `micropython` binary: run `bash scripts/setup.sh` (it installs one "
              "into .venv)", file=sys.stderr)
        return 2
    paths = [".frozen", str(import_root()), str(Path(argv[0]).resolve().parent)]
    env = dict(os.environ, MICROPYPATH=":".join(paths))
    os.execve(exe, [exe, *argv], env)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
