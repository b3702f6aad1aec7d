# The firmware's teleop mode under hostile SETPOINT streams (tests/mpy/fw_teleop_hostile.py does
# the work under the real `micropython`: every tick's pulses through the shared forward
# kinematics, crafted reproducers and 40 seeded random streams).
import pytest

from tests.support import mpy as host_helpers

pytestmark = pytest.mark.skipif(host_helpers.micropython() is None, reason="no micropython")


def test_teleop_keeps_the_hand_clear_at_every_tick_under_hostile_streams(tmp_path):
    proc = host_helpers.run("fw_teleop_hostile.py", tmp_path, 40, timeout=600)
    text = proc.stdout.decode() + proc.stderr.decode()
    failed = [line for line in text.splitlines() if line.startswith("FAIL ")]
    assert proc.returncode == 0 and not failed and "Traceback" not in text, text[-4000:]
    res = host_helpers.results(text)
    assert res["fails"] == 0
    assert res["unsafe_ticks"] == 0
    assert res["worst_clearance_um"] > 0
    # the crafted path whose end is clear was refused for its path, not its end
    assert res["path_refused"] == 1
    # 400 queued setpoints drained at several a tick (one a tick before)
    assert res["backlog_ticks"] <= 200
    # the random streams did hit the checks (a stream that was never refused tested nothing)
    assert res["random_refused"] > 0
