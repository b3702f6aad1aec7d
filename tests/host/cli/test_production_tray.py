# A tray run on the virtual board: the `tray` scenario's 12 slots of 15 mm cubes, two of them
# empty (which ones: the scenario's seeded draw), run into the bin by `surepick job run`. The
# expected numbers come from the plant: the slots the scenario left empty, the parts its chute
# counted at rest in the bin (sim/chute.py: each is set on a shelf out of reach when the next one
# comes, so the bin never piles up) and where every other part lies (ground truth the board never
# reads).
import json
import math
import os
import subprocess
import time

import pytest

from surepick.host.engines.vboard_world import board_in_world
from surepick.sim import scenarios
from surepick.firmware import settings
from surepick.shared_fsm import link
from tests.support.cli import SUREPICK_BIN
from tests.support.held_plant import held_at, hold_for_lines
from tests.support.vboard import deploy_firmware

SEED = 3
RUN_AT_MS = 4000     # the RUN is read at this virtual time (the plant holds there for it)


# The CLI opens the board's port itself (no link hub): the plant holds for exactly the lines
# `job run` sends (a hub sends requests of its own)
DIRECT = dict(os.environ, SUREPICK_HUB="off")


def sp(*args, timeout=900):
    return subprocess.run([SUREPICK_BIN, *map(str, args)], capture_output=True, text=True, timeout=timeout,
                          env=DIRECT)


def still_in_slot(p, start):
    # a part the run never picked: on the tray where the scenario set it (not pushed off, not carried)
    return math.dist(p, start) < 5.0


def parts_mm(ps):
    return [ps.plant.truth()["part_pos_mm"]] + ps.plant.others_pos_mm()


def port_of(board):
    a = board.address
    return a if isinstance(a, str) else "socket://%s:%d" % tuple(a)


@pytest.mark.parametrize("policy", ["skip", "stop"])
def test_a_tray_with_two_empty_slots(tmp_path, policy):
    flash = tmp_path / "flash"
    deploy_firmware(flash)
    # The board's settings as `surepick config set` leaves them, there from boot: the jaw opens
    # 6 mm wider than the part, not 18, so the open fingers stay clear of the neighbouring slots
    # (scenarios.TRAY_OPEN_MARGIN_UM); the job file's approach height; the policy. So the host
    # sends nothing before the run but `job run`'s two lines (it finds the approach height set,
    # then the RUN), read at fixed ticks from RUN_AT_MS on: the run's course depends on the
    # scenario and seed only, not on when the host got there.
    job = scenarios.tray_job()
    approach_um = int(round(job["approach_height_mm"] * 1000))
    machine = {"open_margin_um": scenarios.TRAY_OPEN_MARGIN_UM, "approach_height_um": approach_um}
    if policy == "stop":
        machine["run_on_fail"] = 1
    (flash / "config.json").write_text(json.dumps({"version": settings.VERSION, "board": {}, "machine": machine}))
    board = board_in_world(flash, "tray", SEED)
    ps = board.world_service
    # (the RUN, last: read from its hold on, whatever its length)
    hold_for_lines(ps, RUN_AT_MS, [link.request(link.T_CONFIG_GET, 1, ("approach_height_um",)), b"RUN"])
    empty = ps.setup["tray_empty"]
    chute = ps.world.tray_chute
    start = parts_mm(ps)
    assert len(empty) == 2 and len(start) == 10
    jf = tmp_path / "tray.json"
    jf.write_text(json.dumps(job))
    with board:
        port = port_of(board)
        assert held_at(ps, RUN_AT_MS), "virtual time never reached the run's hold"
        r = sp("job", "run", "--until-stopped", "--job", jf, "--wait", "--port", port)
        rep = sp("job", "report", "--port", port).stdout
        placed = 10 if policy == "skip" else empty[0]
        deadline = time.monotonic() + 120     # the last part placed comes to rest in the bin
        while chute.binned < placed and time.monotonic() < deadline:
            time.sleep(0.2)
        with ps.lock:
            where = parts_mm(ps)
            counted = list(chute.shelved) + list(chute.chute.counted)    # the last one is still in the bin
    names = ["part"] + ["part%d" % (i + 2) for i in range(9)]
    # every part is either counted at rest in the bin or untouched in its slot: none anywhere else
    # (0 false successes)
    left = [(n, p) for n, p, s0 in zip(names, where, start) if n not in counted and not still_in_slot(p, s0)]
    assert left == [], left
    out = r.stdout + r.stderr
    if policy == "skip":
        # every part in the bin, the two empty slots named as skipped, a normal end
        assert r.returncode == 0, out
        assert chute.binned == 10 and len(set(counted)) == 10, (chute.binned, counted)
        assert "12 cycles, 10 placed" in rep and "faults: GRASP_FAILED 2" in rep, rep
        assert "slots skipped: %d, %d" % tuple(empty) in rep and "stopped: picks_done" in rep, rep
    else:
        # the run ends at the first empty slot: the parts before it are in the bin, none after
        assert r.returncode == 1, out
        first = empty[0]
        assert chute.binned == first and len(set(counted)) == first, (chute.binned, counted)
        assert "%d cycles, %d placed" % (first + 1, first) in rep and "stopped: failed_part" in rep, rep
        assert "run cycle %d slot %d: GRASP_FAILED" % (first + 1, first) in out, out
