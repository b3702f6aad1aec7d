# Marks for tests that need a tool scripts/setup.sh installs: one definition for every test file.
import pytest

from surepick.host.vboard.interp import find_micropython


def _have_micropython():
    try:
        find_micropython()
    except Exception:
        return False
    return True


NEEDS_MICROPYTHON = pytest.mark.skipif(not _have_micropython(), reason="no micropython binary")
