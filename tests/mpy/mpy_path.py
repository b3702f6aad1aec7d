# Puts the repo root on sys.path so `shared_fsm` and `firmware` import as they do on the
# board (/lib/shared_fsm). Works on both interpreters; scripts here run with cwd = repo root
# or get the root as SUREPICK_ROOT.
import sys

try:
    import os
    _root = os.getenv("SUREPICK_ROOT")
except (ImportError, AttributeError):
    _root = None
if not _root:
    _here = __file__.rsplit("/", 1)[0] if "/" in __file__ else "."
    _root = _here + "/../.."
if _root not in sys.path:
    sys.path.insert(0, _root)
