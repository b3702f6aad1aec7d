# The live device sources' polling loop (sources/pacing.py), on a fake clock: readings due on
# the start's grid, a slow one caught up, the loop ending once the source is closed.
import types

import numpy as np
import pytest

from surepick.host.teleop.sources import openvr_source, pacing, spacemouse


class FakeClock:
    def __init__(self):
        self.now = 100.0
        self.slept = []

    def monotonic(self):
        return self.now

    def sleep(self, s):
        self.slept.append(s)
        self.now += s


@pytest.fixture
def clock(monkeypatch):
    c = FakeClock()
    for mod in (pacing, openvr_source, spacemouse):
        monkeypatch.setattr(mod, "time", c)
    return c


def test_readings_are_due_on_the_grid_and_a_slow_one_is_caught_up(clock):
    pace = pacing.Pacer(10.0)
    for took in (0.03, 0.25, 0.01, 0.01):
        clock.now += took
        pace.wait()
    # 0.07 to the first due time; none after the slow reading nor the next (still late); then on time
    assert clock.slept == pytest.approx([0.07, 0.03])
    assert clock.now == pytest.approx(100.4)


def test_openvr_reads_at_its_rate_until_closed(clock):
    src = object.__new__(openvr_source.OpenVRSource)
    src.rate_hz, src._closed = 10.0, False
    src.read = lambda t: t
    it = iter(src)
    assert [next(it), next(it), next(it)] == pytest.approx([0.0, 0.1, 0.2])
    src._closed = True
    assert list(it) == []


def test_spacemouse_integrates_over_the_time_between_readings(clock):
    src = object.__new__(spacemouse.SpaceMouseSource)
    src.rate_hz, src._closed = 10.0, False
    src.heading_deg, src.pitch_deg, src.pos_mm, src.grip, src.mark = -90.0, 0.0, np.zeros(3), 0.0, None
    dts = []
    src.step = lambda state, dt: dts.append(dt) or False

    def read():
        clock.now += 0.02                      # a HID read takes a while
        return types.SimpleNamespace()
    src.device = types.SimpleNamespace(read=read)
    it = iter(src)
    assert [next(it).t for _ in range(3)] == pytest.approx([0.02, 0.12, 0.22])
    assert dts == pytest.approx([0.02, 0.1, 0.1])
    src._closed = True
    assert list(it) == []
