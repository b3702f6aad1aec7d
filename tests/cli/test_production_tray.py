# A tray run on the virtual board: the `tray` scenario's 12 slots of 15 mm cubes, two of them
# empty (which ones: the scenario's seeded draw), run into the bin by `surepick job run`. The
# expected numbers come from the plant: the slots the scenario left empty and the parts its
# physics finds in the bin at the end (ground truth the board never reads).
import json
import subprocess

import pytest

from surepick.engines.vboard_plant import plant_board
from surepick.sim import scenarios
from surepick.sim.plant import BIN_INNER_HALF_MM, BIN_WALL_TOP_MM, BIN_XY_MM, PART_HEIGHT_MM
from tests.support.cli import SUREPICK_BIN
from tests.support.vboard import deploy_firmware

SEED = 3


def sp(*args, timeout=900):
    return subprocess.run([SUREPICK_BIN, *map(str, args)], capture_output=True, text=True, timeout=timeout)


def in_bin(p):
    # inside the bin's walls: its centre within the inner footprint, no higher than a part
    # resting on the others already there (ten parts dropped at one spot pile up)
    return (abs(p[0] - BIN_XY_MM[0]) < BIN_INNER_HALF_MM and abs(p[1] - BIN_XY_MM[1]) < BIN_INNER_HALF_MM
            and p[2] < BIN_WALL_TOP_MM + PART_HEIGHT_MM[scenarios.TRAY_PART])


def parts_mm(ps):
    return [ps.plant.truth()["part_pos_mm"]] + ps.plant.others_pos_mm()


def port_of(board):
    a = board.address
    return a if isinstance(a, str) else "socket://%s:%d" % tuple(a)


@pytest.mark.parametrize("policy", ["skip", "stop"])
def test_a_tray_with_two_empty_slots(tmp_path, policy):
    flash = tmp_path / "flash"
    deploy_firmware(flash)
    board = plant_board(flash, "tray", SEED)
    ps = board.plant_service
    empty = ps.setup["tray_empty"]
    assert len(empty) == 2 and len(parts_mm(ps)) == 10
    jf = tmp_path / "tray.json"
    jf.write_text(json.dumps(scenarios.tray_job()))
    with board:
        port = port_of(board)
        # the jaw opens 6 mm wider than the part, not 18: the open fingers stay clear of the
        # neighbouring slots (scenarios.TRAY_OPEN_MARGIN_UM)
        assert sp("config", "set", "open_margin_um", scenarios.TRAY_OPEN_MARGIN_UM, "--port", port).returncode == 0
        if policy == "stop":
            assert sp("config", "set", "run_on_fail", 1, "--port", port).returncode == 0
        r = sp("job", "run", "--until-stopped", "--job", jf, "--wait", "--port", port)
        rep = sp("job", "report", "--port", port).stdout
        where = parts_mm(ps)
    out = r.stdout + r.stderr
    if policy == "skip":
        # every part in the bin, the two empty slots named as skipped, a normal end
        assert r.returncode == 0, out
        assert sum(1 for p in where if in_bin(p)) == 10, where
        assert all(in_bin(p) for p in where), where
        assert "12 cycles, 10 placed" in rep and "faults: GRASP_FAILED 2" in rep, rep
        assert "slots skipped: %d, %d" % tuple(empty) in rep and "stopped: picks_done" in rep, rep
    else:
        # the run ends at the first empty slot: the parts before it are in the bin, none after
        assert r.returncode == 1, out
        first = empty[0]
        assert sum(1 for p in where if in_bin(p)) == first, where
        assert "%d cycles, %d placed" % (first + 1, first) in rep and "stopped: failed_part" in rep, rep
        assert "run cycle %d slot %d: GRASP_FAILED" % (first + 1, first) in out, out
