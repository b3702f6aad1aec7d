# The `surepick` console script of the venv running the tests: CLI tests run it as a user
# does (a subprocess of the installed entry point), never `python -m` a module.
import os
import subprocess
import sys
from pathlib import Path

SUREPICK_BIN = str(Path(sys.executable).parent / "surepick")


def surepick(*args, timeout=120, **kw):
    # -> CompletedProcess with text stdout/stderr.
    if not Path(SUREPICK_BIN).exists():
        raise FileNotFoundError("%s is missing: run `bash scripts/setup.sh` (it installs the package "
                                "and its console script)" % SUREPICK_BIN)
    return subprocess.run([SUREPICK_BIN, *map(str, args)], capture_output=True, text=True, timeout=timeout, **kw)


def headless_env():
    # A person's environment with no screen: nothing the CLI runs may reach for a display.
    env = dict(os.environ)
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    return env
