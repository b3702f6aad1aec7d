# A simulated night with a feeder: the `feeder` scenario sets a part on the pad a while after
# each pick (seeded delays, some arrivals missing, each a little off the pad's centre); the
# board runs `surepick job run --count N` with a part-ready check at the pad. The judge is the
# plant: every part the feeder handed out, where it ended (ground truth the board never reads).
import json
import os
import subprocess
import time

import pytest

from surepick.host.engines.vboard_world import board_in_world
from tests.support.cli import SUREPICK_BIN
from tests.support.held_plant import held_at
from tests.support.long_run import LONG_RUN
from tests.support.vboard import deploy_firmware

RUN_AT_MS = 4000     # the RUN is read at this virtual time (the plant holds there for it)


# The CLI opens the board's port itself (no link hub): the plant holds for exactly the lines
# `job run` sends (a hub sends requests of its own)
DIRECT = dict(os.environ, SUREPICK_HUB="off")


def sp(*args, timeout=1800):
    return subprocess.run([SUREPICK_BIN, *map(str, args)], capture_output=True, text=True, timeout=timeout,
                          env=DIRECT)


def night(tmp_path, seed, count, away_after=None, wall_s=1800):
    # away_after: the host crashes (its `job run --wait` killed) once it has seen that many cycles,
    # and comes back only once the judge has counted every part in the bin: `job report` then
    # reads what the board did alone. wall_s: a hang guard only (the night's pace is the host's)
    flash = tmp_path / "flash"
    deploy_firmware(flash)
    board = board_in_world(flash, "feeder", seed)
    ps = board.world_service
    feeder = ps.world.feeder
    # the host sends nothing before the run but its RUN (the job needs no setting), read at
    # RUN_AT_MS: the night's course depends on the scenario and seed only, not on the host
    ps.hold_for_line_at(RUN_AT_MS)
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
        assert held_at(ps, RUN_AT_MS), "virtual time never reached the run's hold"
        cmd = [SUREPICK_BIN, "job", "run", "--count", str(count), "--job", str(jf), "--wait", "--port", port,
               "--timeout", str(wall_s)]
        if away_after is None:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=wall_s + 60, env=DIRECT)
            out, code = r.stdout + r.stderr, r.returncode
        else:
            p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=DIRECT)
            out = ""
            for line in p.stdout:
                out += line
                if "run cycle %d slot" % away_after in line:
                    break
            p.kill()                               # the host is gone mid-run, no goodbye
            p.wait(timeout=60)
            code = None
            assert "run cycle %d slot" % away_after in out, out
        deadline = time.monotonic() + (wall_s if away_after is not None else 120)
        while feeder.binned < count and time.monotonic() < deadline:
            time.sleep(0.2)     # the last part placed comes to rest in the bin
        rep = ""
        deadline = time.monotonic() + 120
        while "stopped:" not in rep and time.monotonic() < deadline:
            rep = sp("job", "report", "--port", port).stdout     # the STOP record reaches flash at rest
        with ps.lock:
            counted = {"binned": feeder.binned, "lost": feeder.lost(), "missed": feeder.missed,
                       "delivered": feeder.delivered}
    return code, out, rep, counted


@pytest.mark.parametrize("seed", [1])
def test_a_feeder_night_places_every_part_it_reports(tmp_path, seed):
    count = 12
    code, out, rep, judge = night(tmp_path, seed, count)
    assert code == 0, out
    # every cycle the board called placed is a part at rest in the bin (0 false successes), and
    # no part ended anywhere else
    assert judge["binned"] == count and judge["lost"] == [], judge
    assert "%d cycles, %d placed" % (count, judge["binned"]) in rep and "faults: none" in rep, rep
    assert "stopped: count_done" in rep, rep


def test_a_host_away_mid_night_loses_nothing(tmp_path):
    # the host crashes after cycle 3 and is back only after the night: the board ran the rest by
    # itself, and the morning report (from its flash log) equals the judge
    count = 8
    code, out, rep, judge = night(tmp_path, 1, count, away_after=3)
    assert judge["binned"] == count and judge["lost"] == [], judge
    assert "%d cycles, %d placed" % (count, judge["binned"]) in rep and "faults: none" in rep, rep
    assert "stopped: count_done" in rep, rep


@pytest.mark.slow
@LONG_RUN                        # 200 cycles: a long run's deadline, not the suite's
def test_a_long_feeder_night(tmp_path):
    code, out, rep, judge = night(tmp_path, 7, 200, wall_s=4 * 3600)
    assert code == 0, out
    assert judge["binned"] == 200 and judge["lost"] == [], judge
    assert "200 cycles, 200 placed" in rep and "faults: none" in rep, rep
