# Import layout of the board for the firmware runners: firmware files as top-level modules (the
# board's root), shared_fsm as a package (the board's /lib), this folder for the stand-in HAL.
# The repo root comes from SUREPICK_ROOT or this file's location.
import sys

try:
    import os
    _root = os.getenv("SUREPICK_ROOT")
except (ImportError, AttributeError):
    _root = None
if not _root:
    _here = __file__.rsplit("/", 1)[0] if "/" in __file__ else "."
    _root = _here + "/../.."
for _p in (_root + "/tests/mpy", _root, _root + "/firmware"):
    if _p not in sys.path:
        sys.path.insert(0, _p)
ROOT = _root
