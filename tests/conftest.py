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

# No test sees a person's boards, hubs or settings, and nothing a test starts is seen by the
# person: the runtime directory (the board registry, the link hubs' sockets) and the config, state
# and data directories are private. The whole session gets its own (session fixtures, collection);
# each test module gets its own again (private_dirs below). $SUREPICK_PORT / $SUREPICK_HUB would
# point a test at the person's board: they are dropped.
_PRIVATE_XDG = ("XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME")
_PERSONAL_ENV = ("SUREPICK_PORT", "SUREPICK_HUB")


def _private_env(prefix):
    # -> {name: value or None to unset}; the runtime dir is short (Unix socket paths have a
    # length limit: pytest's tmp_path is too deep).
    import tempfile
    root = tempfile.mkdtemp(prefix=prefix, dir="/tmp")
    env = {name: os.path.join(root, name.split("_")[1].lower()) for name in _PRIVATE_XDG}
    for d in env.values():
        os.mkdir(d, 0o700)
    env.update({name: None for name in _PERSONAL_ENV})
    return root, env


def _apply(mp, env):
    for name, value in env.items():
        if value is None:
            mp.delenv(name, raising=False)
        else:
            mp.setenv(name, value)


_SESSION_ROOT, _SESSION_ENV = _private_env("sp-s-")
for _name, _value in _SESSION_ENV.items():
    if _value is None:
        os.environ.pop(_name, None)
    else:
        os.environ[_name] = _value


@pytest.fixture(scope="module", autouse=True)
def private_dirs():
    # Per module, not per test: a module's shared board (a module fixture) is reached through a
    # link hub that the module's tests must all find in one runtime directory.
    root, env = _private_env("sp-m-")
    with pytest.MonkeyPatch.context() as mp:
        _apply(mp, env)
        yield env
    shutil.rmtree(root, ignore_errors=True)


def pytest_unconfigure(config):
    shutil.rmtree(_SESSION_ROOT, ignore_errors=True)


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
