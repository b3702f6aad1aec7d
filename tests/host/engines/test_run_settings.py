# A run's settings reach every engine: a loop period other than the default, given to the run, is
# the period the board ticks at in the in-process simulator, the virtual board, hardware in the loop
# against the virtual board, the emulated RP2040 (slow tier) and teleop's simulated board, and
# every run record says so (run.json, the config in it, the ticks' spacing, the firmware's own
# measured period). The oracle is the number given; each engine's figure comes from its board.
import json
import subprocess
import sys

import numpy as np
import pytest

from surepick.firmware import settings as fw_settings
from surepick.host.records import runrecord
from surepick.shared_fsm.config import Config

from tests.support.needs import NEEDS_MICROPYTHON

PERIOD_MS = 5
CFG = {"loop_period_ms": PERIOD_MS}
SUREPICK = [sys.executable, "-m", "surepick.host.cli.main"]


def test_the_period_is_not_the_default():
    assert Config().loop_period_ms != PERIOD_MS


def _config_file(tmp_path):
    path = tmp_path / "cfg.json"
    path.write_text(json.dumps(CFG))
    return str(path)


def _check_record(path, kind, every_period=True):
    # every_period: a tick in every period. On the chip a flash write at rest stalls the loop and
    # the periods it overran are skipped (firmware/app.py run): the ticks stay on the period's grid.
    r = runrecord.load(str(path))
    assert r.meta["kind"] == kind
    assert r.meta["loop_period_ms"] == PERIOD_MS and r.meta["config"]["loop_period_ms"] == PERIOD_MS
    gaps = np.diff(r.cycle_ticks(0)[:, runrecord.TICK_INDEX["t_ms"]])
    assert len(gaps) > 1000 and np.median(gaps) == PERIOD_MS
    assert set(gaps.tolist()) == {PERIOD_MS} if every_period else not (gaps % PERIOD_MS).any(), sorted(set(gaps))
    return r


def _sim_run(args, tmp_path, timeout):
    out = tmp_path / "run"
    p = subprocess.run(SUREPICK + ["sim", "run", "--scenario", "nominal", "--seed", "3", "--config",
                                   _config_file(tmp_path), "--out", str(out), "--no-plots"] + args,
                       capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, p.stdout + p.stderr          # 0: verified placed
    return out


def test_in_process_simulator(tmp_path):
    out = _sim_run([], tmp_path, 300)
    _check_record(out, "host-sim")
    report = json.loads((out / "report.json").read_text())
    assert report["cycles"][0]["loop"]["period_us"] == PERIOD_MS * 1000      # the controller's LoopStats


@NEEDS_MICROPYTHON
def test_virtual_board(tmp_path):
    r = _check_record(_sim_run(["--engine", "vboard"], tmp_path, 600), "virtual-board")
    assert r.cycles[0]["reconstruction"]["events_equal"] and r.cycles[0]["reconstruction"]["pulse_mismatches"] == 0
    assert r.cycles[0]["loop"]["period_us"] == PERIOD_MS * 1000       # the firmware's TELEMETRY


@NEEDS_MICROPYTHON
def test_hil_against_the_virtual_board(tmp_path):
    # The board's settings are on its flash; HIL reads them from the board over the link.
    from surepick.host.engines.hil import HilCycle, record
    from surepick.host.vboard import VirtualBoard
    from tests.support.vboard import deploy_firmware
    flash = tmp_path / "flash"
    deploy_firmware(flash)
    fw_settings.Settings(machine=CFG).save(str(flash) + fw_settings.PATH)
    with VirtualBoard(flash) as board:
        s = HilCycle(board.address, "nominal", 3, "lockstep")
        try:
            rec = s.run(clear_fault=True)
        finally:
            s.client.close()
    assert rec["success"], rec
    runrecord.write(tmp_path / "hil", *record(s, rec))
    r = _check_record(tmp_path / "hil", "hil")
    assert r.meta["board_settings"]["link_rx_bytes"] == fw_settings.board_defaults()["link_rx_bytes"]


@pytest.mark.slow
def test_emulated_rp2040(tmp_path):
    from surepick.host.engines.rp2040 import cycle
    from tests.support.rp2040 import chip_image
    uf2 = chip_image()
    meta, recs, evs, tks = cycle.run("nominal", 3, 1, workdir=str(tmp_path), uf2=uf2, cfg_overrides=CFG)
    runrecord.write(str(tmp_path / "chip"), meta, recs, evs, tks)
    r = _check_record(tmp_path / "chip", "rp2040", every_period=False)
    assert r.cycles[0]["fsm_outcome"] == "placed" and r.cycles[0]["judge_outcome"] == "placed"
    # the firmware's mean period on the chip: the skipped periods of its flash writes count in it
    loop = r.cycles[0]["loop"]
    assert PERIOD_MS * 1000 <= loop["period_us"] < (PERIOD_MS + 1) * 1000 and loop["overruns"] == 0, loop


def test_teleop_sim_target_ticks_at_the_period():
    from surepick.host.teleop.pipeline import Settings
    from surepick.host.teleop.runner import TeleopSession, run_recorded
    from surepick.host.teleop.session_log import SessionLog
    from surepick.host.teleop.sim_target import SimTarget
    from tests.host.teleop.streams import FOLLOWED_MM_S, move_then_circle, path_stream
    target = SimTarget(part=None, cfg_overrides=CFG)
    ticks = []
    tick = target.ctl.tick

    def watched(now):
        ticks.append(now)
        tick(now)
    target.ctl.tick = watched
    path, duration = move_then_circle(centre_mm=(135.0, -20.0, 65.0), radius_mm=30.0, speed_mm_s=FOLLOWED_MM_S,
                                      laps=0.25)
    session = TeleopSession(Settings(), target, SessionLog(None))
    summary = run_recorded(session, path_stream(path, duration))
    assert summary["board_period_ms"] == PERIOD_MS
    assert len(ticks) > 200 and set(np.diff(ticks).tolist()) == {PERIOD_MS}
    # the setpoints went through the firmware's teleop mode and were followed
    assert target.ctl.teleop.applied == target.seq and summary["board_refused"] == {}
    assert summary["tracking_rms_mm"] <= 2.0
