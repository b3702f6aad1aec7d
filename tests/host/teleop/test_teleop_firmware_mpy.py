# The firmware's teleop mode (firmware/teleop_mode.py) under the real `micropython` binary, through
# the App's loop and link handlers with the stand-in HAL (tests/mpy/fw_teleop.py does the work and
# prints FAIL lines and RESULT figures).
import pytest

from tests.support import mpy as host_helpers

pytestmark = pytest.mark.skipif(host_helpers.micropython() is None, reason="no micropython")


def test_teleop_mode_follows_holds_refuses_and_ends(tmp_path):
    proc = host_helpers.run("fw_teleop.py", tmp_path, timeout=300)
    text = proc.stdout.decode() + proc.stderr.decode()
    failed = [line for line in text.splitlines() if line.startswith("FAIL ")]
    assert proc.returncode == 0 and not failed and "Traceback" not in text, text[-4000:]
    res = host_helpers.results(text)
    assert res["fails"] == 0
    # the deadman froze every pulse 200 ms (+ at most one 2 ms tick) after the last setpoint
    assert 180 <= res["deadman_hold_ms"] <= 202
    # a 60 degree jump in the stream went at the servo's own limit (240 deg/s by default)
    assert res["jump_speed_mdeg_s"] <= 240000
    assert res["heap_locked_teleop_ticks_failed"] == 0
