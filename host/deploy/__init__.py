# Deploy: put the firmware on a board (a Pico or the virtual board) over mpremote's raw REPL.
#   artifacts.py what goes to the board: manifest files, compiled by the matching mpy-cross, cached
#   target.py    the board end: raw-REPL snippets that report, hash, write and rename files
#   install.py   the deploy itself: compare hashes, copy what differs, swap atomically, reset
# The names other layers and tests use, importable from the package:
from surepick.host.deploy.artifacts import (BuildStats, build, default_cache_dir, find_mpy_cross,  # noqa: F401
                                            install_compiled, mpy_cross_version, shipped, source_root)
from surepick.host.deploy.errors import DeployError  # noqa: F401
from surepick.host.deploy.install import MANIFEST, TEMP_SUFFIX, Result, deploy  # noqa: F401
from surepick.host.deploy.raw_repl import RawReplBoard, MicropythonInfo  # noqa: F401
