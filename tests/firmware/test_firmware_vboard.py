# End to end on the virtual board: the firmware and shared_fsm deployed into a flash directory,
# run by the real unix `micropython` under tools/vboard with the virtual HAL (tools/vhal) in
# lockstep with the MuJoCo plant (tools/plant_service.py). A JOB goes over the link; the board
# must report PLACED and the plant's ground truth must show the part resting in the bin.
import time

import pytest

from tests.conftest import REPO

vboard = pytest.importorskip("surepick.vboard")
from surepick.shared_fsm import link, states, codes  # noqa: E402
from surepick.engines.plant_service import PlantService  # noqa: E402
from surepick.host.deploy import install_source  # noqa: E402
from surepick.engines.vboard import BoardConsole as Console  # noqa: E402,F401  (shared with other tests)



def deploy_source(flash):
    # What host/deploy.py installs, as source: firmware in the root, shared_fsm in /lib.
    install_source(flash)


def _is(ftype):
    return lambda f: f.ftype == ftype


# ---- a deterministic scripted run: what the fw-vs-sim and determinism tests share ----

JOB_HOLD_MS = 600        # the JOB is read in the ticks after this (after the calibration ends)
TAIL_MS = 1300           # keep running after the cycle ends (sim.runner's JUDGE_TAIL_MS)


def _is_reply(rid):
    return lambda f: f.ftype == link.T_REPLY and f.fields[0] == rid


def _cycle_end(f):
    # The cycle is over: back in IDLE (PLACED), or any fault (also one latched at a boot
    # after an interrupted cycle, which goes IDLE -> IDLE).
    return f.ftype == link.T_EVENT and (f.fields[2] == codes.K_FAULT
                                        or (f.fields[4] == states.IDLE and f.fields[3] != states.IDLE))


def run_scenario(flash, scenario, seed, tail_ms=TAIL_MS, timeout=90, **plant_kw):
    """Deploy the firmware into `flash`, boot it on a virtual board with the scenario's plant,
    and do what the host simulator does (sim.runner): calibrate the current offset in the tick at
    sim.world.CAL_AT_MS, then send the scenario's job; both requests travel over the console and
    are read while virtual time holds, so the run is deterministic. Returns (EVENT fields list,
    the PlantService, all frames, wall seconds, boots)."""
    from surepick.sim.world import CAL_AT_MS
    from surepick.engines.vboard_plant import plant_board
    deploy_source(flash)
    board = plant_board(flash, scenario, seed, **plant_kw)
    ps = board.plant_service
    ps.hold_for_line_at(CAL_AT_MS)
    ps.hold_for_line_at(JOB_HOLD_MS)
    pick, place, width = ps.job_um()
    t0 = time.monotonic()
    with board:
        con = Console(board.address)
        try:
            assert ps.wait_holding(30), "the board never reached the calibration hold"
            con.send(link.request(link.T_CALIBRATE, 1, (link.CAL_CURRENT,)))
            r = con.wait(_is_reply(1), 20)
            assert r is not None and r.fields[1] == link.OK, (r, bytes(con.text[-2000:]))
            assert ps.wait_holding(20), "the board never reached the job hold"
            con.send(link.job(2, pick, place, width))
            r = con.wait(_is_reply(2), 20)
            assert r is not None and r.fields[1] == link.OK, (r, bytes(con.text[-2000:]))
            end = con.wait(_cycle_end, timeout)
            assert end is not None, bytes(con.text[-2000:])
            deadline = time.monotonic() + 30
            while ps.now_ms < end.fields[1] + tail_ms and time.monotonic() < deadline:
                con.pump(0.02)
            con.pump(0.05)
            boots = board.boot_count
        finally:
            con.close()
    events = [list(f.fields) for f in con.frames if f.ftype == link.T_EVENT]
    return events, ps, con.frames, time.monotonic() - t0, boots


def test_job_over_the_link_places_the_part_in_the_bin(tmp_path):
    deploy_source(tmp_path)
    ps = PlantService("nominal", seed=1)
    pick, place, width = ps.job_um()
    t0 = time.monotonic()
    with vboard.VirtualBoard(tmp_path, plant_service=ps) as board:   # main.py picks hal.virtual
        con = Console(board.address)
        try:
            hello = con.wait(_is(link.T_HELLO), 20)
            assert hello is not None, bytes(con.text[-2000:])
            con.send(link.job(11, pick, place, width))
            reply = con.wait(lambda f: f.ftype == link.T_REPLY and f.fields[0] == 11, 10)
            assert reply is not None and reply.fields[1] == link.OK, (reply, bytes(con.text[-2000:]))
            end = con.wait(lambda f: f.ftype == link.T_EVENT and f.fields[4] == states.IDLE, 60)
            assert end is not None, bytes(con.text[-2000:])
            events = [f.fields for f in con.frames if f.ftype == link.T_EVENT]
            trace = ["%s>%s %s" % (states.name(e[3]), states.name(e[4]), codes.name(e[5])) for e in events]
            assert end.fields[2] == codes.K_TRANSITION and end.fields[5] == codes.R_PLACED, trace
            # sim/judge.py, fed by the plant service as sim.runner feeds it: in the bin, not
            # touched by the fingers, still, for a second, after a real pick and lift
            deadline = time.monotonic() + 30
            verdict = ps.verdict()
            while verdict[0] != "placed" and time.monotonic() < deadline:
                con.pump(0.05)
                verdict = ps.verdict()
            assert verdict[0] == "placed", (verdict, ps.truth())
            # a telemetry frame from after the placing transition (the judge may be satisfied
            # before one arrives: the part can have rested its second while PLACE retreated)
            after = con.wait(lambda f: f.ftype == link.T_TELEMETRY and f.fields[0] >= end.fields[1], 10)
            assert after is not None, "no telemetry after the cycle ended"
            tel = [f.fields for f in con.frames if f.ftype == link.T_TELEMETRY]
            last = tel[-1]
            assert last[4] >= 1                     # cycles_ok, persisted counter
            assert last[14] == 2000                 # loop period in virtual time: exactly 2 ms
            assert last[15] > 0                     # worst step measured (real CPU time)
            print("\ntrace:", trace, "judge:", verdict[1])
            print("virtual ms %d, wall %.1f s, exchanges %d, telemetry frames %d, last %s"
                  % (ps.now_ms, time.monotonic() - t0, ps.exchanges, len(tel), last))
        finally:
            con.close()
    # the board wrote its rest pose and cleared the job marker at rest
    assert (tmp_path / "rest.json").exists()
    assert not (tmp_path / "job.json").exists()
