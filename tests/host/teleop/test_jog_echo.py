# The keyboard jog's echo prints the pose after a key only once the control stage has used the
# sample carrying that key: a control loop that runs many ticks before the reader thread hands the
# sample over (catching up after a stall, a slow or loaded machine) must not print the pose from
# before the key.
import io
import os
import pty
from types import SimpleNamespace

from surepick.host.teleop.sources.keyboard import JogEcho, KeyboardSource

TICK_MS = 10


def _ctrl(base_deg):
    # What the echo reads of the control stage's result; the joints are given, not computed.
    return SimpleNamespace(target_mm=[100.0, 0.0, 80.0], target_pitch=-90.0, jaw_um=40000,
                           q_ik_deg=[base_deg, 87.2, -84.3, -92.9])


def _ticks(echo, start_ms, n, ctrl):
    for i in range(n):
        echo(start_ms + i * TICK_MS, ctrl)
    return start_ms + n * TICK_MS


def test_the_echo_waits_for_the_sample_carrying_the_key():
    master, slave = pty.openpty()
    out = io.StringIO()
    try:
        kb = KeyboardSource(fd=slave, out=io.StringIO(), step_index=3)        # 5 degree steps
        try:
            echo = JogEcho(kb, out=out)
            t = _ticks(echo, 0, 5, _ctrl(0.0))
            assert out.getvalue().count("start x=") == 1
            kb.key("m")                                   # joint mode: moves nothing
            used_m = kb._sample(t / 1000.0)
            echo.sample(used_m, None, None, None)
            t = _ticks(echo, t, 60, _ctrl(0.0))           # 600 ms: the "moved nothing" echo
            assert out.getvalue().count("tool x=") == 1, out.getvalue()
            kb.key("q")                                   # base +5 deg, read but not yet used
            t = _ticks(echo, t, 200, _ctrl(0.0))          # two seconds of ticks before the sample arrives
            assert out.getvalue().count("tool x=") == 1, out.getvalue()
            echo.sample(kb._sample(t / 1000.0), None, None, None)
            _ticks(echo, t, 10, _ctrl(5.0))
            lines = [ln.strip() for ln in out.getvalue().splitlines() if "tool x=" in ln]
            assert len(lines) == 2, out.getvalue()
            assert lines[0].endswith("joints 0.0 87.2 -84.3 -92.9 deg"), lines
            assert lines[1].endswith("joints 5.0 87.2 -84.3 -92.9 deg"), lines
        finally:
            kb.close()
    finally:
        os.close(master)
        os.close(slave)
