# The link, flash log and command parser as the board runs them: `micropython` produces the
# very same frame bytes as CPython, and mpy-cross compiles the board modules for the RP2040.
import subprocess
import sys
from pathlib import Path

import pytest

from surepick.shared_fsm import link

from tests.support import mpy as host_helpers  # noqa: E402

host_helpers.use_vectors()
import link_vectors  # noqa: E402

pytestmark = pytest.mark.skipif(host_helpers.micropython() is None, reason="no micropython")


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_micropython_encodes_and_decodes_exactly_like_cpython(seed):
    count = 500
    proc = host_helpers.run("link_vectors.py", seed, count)
    assert proc.returncode == 0, proc.stderr.decode()
    mpy_lines = proc.stdout.decode().splitlines()
    cpy_lines = [link_vectors.describe(link, t, f)
                 for t, f in link_vectors.vectors(link, seed, count)]
    assert len(mpy_lines) == count
    assert mpy_lines == cpy_lines
    frames = [line for line in cpy_lines if not line.endswith(" None")]
    kinds = {int(line.split()[0]) for line in frames}
    assert kinds == set(link.SCHEMA)  # every frame type was compared
    assert len(frames) > 400


MODULES = ["shared_fsm/link.py", "firmware/flashlog.py", "firmware/cmdparse.py"]


@pytest.mark.skipif(host_helpers.mpy_cross() is None, reason="no mpy-cross")
@pytest.mark.parametrize("module", MODULES)
def test_mpy_cross_compiles_for_the_rp2040(module, tmp_path):
    out = tmp_path / (Path(module).stem + ".mpy")
    proc = subprocess.run([host_helpers.mpy_cross(), "-march=armv6m", "-o", str(out),
                           str(host_helpers.ROOT / module)], capture_output=True)
    assert proc.returncode == 0, proc.stderr.decode()
    assert out.stat().st_size > 200
