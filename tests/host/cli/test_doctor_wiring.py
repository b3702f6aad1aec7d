# `surepick doctor`'s wiring checks against the real firmware on the virtual board, the faults put
# into the bench's wiring through the plant (an e-stop contact open, the beam blocked, the pot's
# wiper on a rail, the current sense's zero moved, a rail divider of another ratio or none): each
# is named with its pin and fix, and a healthy bench gets none of them. Only what the readings
# show; the doctor reads over the link only (--no-repl).
import os

import pytest

from surepick.host.engines.world_service import WorldService
from surepick.host.engines.vboard_world import wire
from surepick.sim.params import PlantParams
from surepick.host.vboard import VirtualBoard

from tests.support.bench import short_runtime_dir
from tests.support.cli import surepick
from tests.support.doctor import findings
from tests.support.needs import NEEDS_MICROPYTHON
from tests.support.vboard import deploy_firmware

pytestmark = NEEDS_MICROPYTHON


class _Board:
    def __init__(self, tmp_path, plant_params=None):
        flash = tmp_path / "flash"
        flash.mkdir()
        deploy_firmware(flash)
        self.env = dict(os.environ, XDG_RUNTIME_DIR=short_runtime_dir())
        self.ps = WorldService("nominal", 0, plant_params=plant_params, realtime=True)
        self.board = wire(VirtualBoard(flash, world_service=self.ps, scenario="nominal", seed=0, control=False),
                          self.ps)
        self.board.start()

    def doctor(self):
        r = surepick("doctor", "--port", self.board.address, "--no-repl", env=self.env, timeout=120)
        return r, findings(r.stdout)

    def close(self):
        self.board.close()


@pytest.fixture
def bench(tmp_path):
    b = _Board(tmp_path)
    try:
        yield b
    finally:
        b.close()


def _ready(b):
    r, got = b.doctor()
    assert got.get("running", [None])[0] == "OK", r.stdout + r.stderr
    return r, got


def test_healthy_then_each_wiring_fault_named_with_its_fix(bench):
    r, got = _ready(bench)
    assert got["wiring"][0] == "OK", r.stdout
    for topic in ("estop", "pot", "rail", "beam", "current"):
        assert topic not in got, r.stdout

    bench.ps.inject("beam_blocked", on=True)
    r, got = bench.doctor()
    assert got["beam"][0] == "WARN" and "GP15 reads broken in every reading with the jaw empty" in got["beam"][1], r.stdout
    assert "emitter" in got["beam"][2]
    bench.ps.inject("clear")

    bench.ps.inject("current_offset", counts=3000)     # +3000 counts at 19859 counts/A: about +151 mA
    r, got = bench.doctor()
    assert got["current"][0] == "WARN" and "drifted" in got["current"][1], r.stdout
    assert "surepick calibrate current --port %s" % bench.board.address in got["current"][2]
    bench.ps.inject("clear")

    bench.ps.inject("pot_broken", rail=1)
    r, got = bench.doctor()
    assert got["pot"][0] == "FAIL" and "stuck at the 3.3 V rail" in got["pot"][1], r.stdout
    assert "GP26" in got["pot"][2]
    bench.ps.inject("clear")

    bench.ps.inject("estop", on=True)
    r, got = bench.doctor()
    assert r.returncode == 1
    assert got["estop"][0] == "FAIL" and "GP13 reads open (STOP)" in got["estop"][1], r.stdout
    assert "normally-closed contact" in got["estop"][2]


@pytest.mark.slow
@pytest.mark.parametrize("divider,level,words", [
    (1.0, "FAIL", "the ADC's full scale: the divider is missing"),   # the rail straight on the pin
    (6.0, "WARN", "does not match rail_divider_milli 3000"),          # a 5:1 divider on a 3:1 setting
])
def test_a_rail_divider_that_reads_implausibly(tmp_path, divider, level, words):
    p = PlantParams()
    p.rail.divider = divider
    b = _Board(tmp_path, plant_params=p)
    try:
        r, got = _ready(b)
    finally:
        b.close()
    assert got["rail"][0] == level and words in got["rail"][1], r.stdout
    assert "GP28" in got["rail"][1]
