# A full flash (ENOSPC) under firmware/flashlog.py, in the real `micropython`
# (tests/mpy/flashlog_enospc.py): a commit that fails after every possible number of bytes, at
# every file operation, while the RAM ring overflows, and segment generations across the end of
# their 8-digit names. After each: no seq gap, no duplicate, every committed record intact, a
# reboot serves exactly what the live log served, and once space is back everything appended is
# written once, in order.
import pytest

from tests.support import mpy as host_helpers
from tests.support.needs import NEEDS_MICROPYTHON

pytestmark = NEEDS_MICROPYTHON


@pytest.mark.parametrize("mode", ["bytes", "ops", "ring", "wrap"])
def test_full_flash(tmp_path, mode):
    proc = host_helpers.run("flashlog_enospc.py", mode, tmp_path, timeout=300)
    out = proc.stdout.decode()
    res = host_helpers.results(out)
    assert proc.returncode == 0 and res.get("fails") == 0, proc.stderr.decode()[-3000:] + out[-3000:]
    if mode in ("bytes", "ops"):
        # every failure point of the commit was tried, and all but the last one failed it
        assert res[mode + "_points"] == res[mode + "_failed_commits"] + 1
        assert res[mode + "_points"] > (500 if mode == "bytes" else 6)
    if mode == "ring":
        assert res["ring_dropped"] == 4
    if mode == "wrap":
        assert res["wrap_generations"] >= 10
