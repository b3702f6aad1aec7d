# A simulated night with a feeder: the `feeder` scenario sets a part on the pad a while after
# each pick (seeded delays, some arrivals missing, each a little off the pad's centre); the
# board runs `surepick job run --count N` with a part-ready check at the pad. The judge is the
# plant: every part the feeder handed out, where it ended (ground truth the board never reads).
import json
import subprocess
import time

import pytest

from surepick.engines.vboard_plant import plant_board
from tests.support.cli import SUREPICK_BIN
from tests.support.vboard import deploy_firmware


def sp(*args, timeout=1800):
    return subprocess.run([SUREPICK_BIN, *map(str, args)], capture_output=True, text=True, timeout=timeout)


def night(tmp_path, seed, count):
    flash = tmp_path / "flash"
    deploy_firmware(flash)
    board = plant_board(flash, "feeder", seed)
    feeder = board.plant_service.world.feeder
    jf = tmp_path / "feeder.json"
    jf.write_text(json.dumps({
        "format": "surepick-job", "version": 1,
        "pick": {"x_mm": 160.0, "y_mm": -60.0, "z_mm": 15.5, "pitch_deg": -90.0},
        "place": {"x_mm": 150.0, "y_mm": 80.0, "z_mm": 20.5, "pitch_deg": -90.0},
        "part_width_mm": 25.0, "max_attempts": 1,
        "part_ready": {"mode": "check", "wait_ms": 500}}))
    with board:
        a = board.address
        port = a if isinstance(a, str) else "socket://%s:%d" % tuple(a)
        r = sp("job", "run", "--count", count, "--job", jf, "--wait", "--port", port)
        rep = sp("job", "report", "--port", port).stdout
        deadline = time.monotonic() + 30      # the last part placed comes to rest in the bin
        while feeder.binned < count and time.monotonic() < deadline:
            time.sleep(0.2)
        counted = {"binned": feeder.binned, "lost": feeder.lost(), "missed": feeder.missed,
                   "delivered": feeder.delivered}
    return r, rep, counted


@pytest.mark.parametrize("seed", [1])
def test_a_feeder_night_places_every_part_it_reports(tmp_path, seed):
    count = 12
    r, rep, judge = night(tmp_path, seed, count)
    assert r.returncode == 0, r.stdout + r.stderr
    # every cycle the board called placed is a part at rest in the bin (0 false successes), and
    # no part ended anywhere else
    assert judge["binned"] == count and judge["lost"] == [], judge
    assert "%d cycles, %d placed" % (count, judge["binned"]) in rep and "faults: none" in rep, rep
    assert "stopped: count_done" in rep, rep


@pytest.mark.slow
def test_a_long_feeder_night(tmp_path):
    r, rep, judge = night(tmp_path, 7, 200)
    assert r.returncode == 0, r.stdout + r.stderr
    assert judge["binned"] == 200 and judge["lost"] == [], judge
    assert "200 cycles, 200 placed" in rep and "faults: none" in rep, rep
