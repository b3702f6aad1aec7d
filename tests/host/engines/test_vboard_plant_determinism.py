# The virtual board with a world attached (engines/vboard_world.py + engines/world_service.py):
# lockstep virtual time makes a run a function of scenario and seed only; a brownout in the plant
# and a scheduled power cut reset the controller (flash kept, boot again) at an exact plant time;
# scenario state triggers fire from the state the firmware reports; `surepick board` wires it.
import contextlib
import subprocess
import sys
import time
from pathlib import Path

from tests.support.vboard import Console, deploy_firmware, run_scenario
from surepick.firmware.flashlog import R_BOOT
from surepick.shared_fsm import codes
from surepick.shared_fsm import link
from surepick.shared_fsm import states

from tests.support.needs import NEEDS_MICROPYTHON
from tests.support.period import PERIOD_MS, PERIOD_US

pytestmark = NEEDS_MICROPYTHON

BOOT_SENSE_MS = (60 // PERIOD_MS + 1) * PERIOD_MS     # 62 at 2 ms, 64 at 4 ms


def _on_grid(ms):
    return -(-ms // PERIOD_MS) * PERIOD_MS

SUREPICK = str(Path(sys.executable).parent / "surepick")


def _transitions(events):
    return [(e[2], states.name(e[3]), states.name(e[4]), codes.name(e[5]), e[6]) for e in events]


def test_same_scenario_and_seed_give_identical_event_frames(tmp_path):
    a, ps_a, _, wall_a, _ = run_scenario(tmp_path / "a", "part_offset", 4)
    b, ps_b, _, wall_b, _ = run_scenario(tmp_path / "b", "part_offset", 4)
    print("\nrun a %.1f s wall, %d exchanges; run b %.1f s, %d exchanges"
          % (wall_a, ps_a.exchanges, wall_b, ps_b.exchanges))
    assert a == b                      # every field: seq, t_ms, kind, states, readings
    assert a[-1][4] == states.IDLE and a[-1][5] == codes.R_PLACED, _transitions(a)


def test_brownout_mid_lift_sags_the_rail_then_resets_the_controller_which_boots_into_interrupted(tmp_path):
    flash = tmp_path / "flash"
    # the cycle ends at RAIL_LOW; the tail covers the sag, the time down and the boot
    events, ps, frames, _, boots = run_scenario(flash, "brownout_mid_lift", 1, tail_ms=1500)
    lift = [e for e in events if e[4] == states.LIFT]
    assert len(lift) == 1, _transitions(events)
    (trigger, fault, kw), = ps.setup["injections"]
    assert trigger[:2] == ("state", "LIFT") and fault == "brownout"
    # The state trigger ("N ms into LIFT", N from the seed) fires from the state the firmware
    # reported: the plant notes LIFT at the exchange after the transition tick, as the
    # in-process engine notes it. The rail sags from there; the reset comes at its bottom. Both
    # land on the first exchange at or after their time (exchanges are one loop period apart).
    t_sag = lift[0][1] + PERIOD_MS + _on_grid(trigger[2])
    t_cut, why = ps.resets[0]
    assert why == "brownout" and t_cut == t_sag + _on_grid(kw["sag_ms"]), (ps.resets, trigger, kw)
    # RAIL_LOW latched during the sag, before the reset (the controller ran and saw the rail)
    low = [e for e in events if e[2] == codes.K_FAULT and e[5] == codes.F_RAIL_LOW]
    assert len(low) == 1 and t_sag < low[0][1] < t_cut, (_transitions(events), t_sag, t_cut)
    assert boots == 2
    hellos = [f.fields for f in frames if f.ftype == link.T_HELLO]
    assert len(hellos) == 2 and hellos[1][3] == 1 and hellos[1][4] == 2   # power-on, boot 2 (flash kept)
    last = events[-1]
    assert last[2] == codes.K_FAULT and last[5] == codes.F_INTERRUPTED, _transitions(events)
    # Down for the brownout (300 ms) + the controller's restart (sim.world.BOOT_MS), then the
    # firmware's boot senses its inputs (boot_sense_ms 60, a read each period and one more).
    assert last[1] == t_cut + 300 + 250 + BOOT_SENSE_MS
    assert (flash / "job.json").exists()   # the interrupted cycle's marker survived the cut
    # after the restart: the arm servos unpowered (PWM 0 on all four), nothing moved
    assert ps.plant.servos.pulses[:4] == [0, 0, 0, 0]


def test_power_cut_at_a_virtual_time(tmp_path):
    flash = tmp_path / "flash"
    events, ps, frames, _, boots = run_scenario(flash, "nominal", 2, tail_ms=200, power_cut_at_ms=3000)
    assert ps.resets == [(3000, "power_cut")]
    assert boots == 2
    before = [e for e in events if e[1] < 3000]
    assert [s for _, _, s, _, _ in _transitions(before)] == ["APPROACH", "DESCEND", "GRASP"]
    last = events[-1]
    assert last[2] == codes.K_FAULT and last[5] == codes.F_INTERRUPTED and last[1] == 3000 + 250 + BOOT_SENSE_MS


@contextlib.contextmanager
def _served_board(tmp_path, *args):
    # `surepick board` on a freshly deployed flash, with a console on its socket; after the
    # block: stopped by SIGTERM, exit 0, its stderr in the yielded dict's "err".
    flash = tmp_path / "flash"
    flash.mkdir()
    deploy_firmware(flash)
    proc = subprocess.Popen([SUREPICK, "board", "--flash", str(flash), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    said = {}
    try:
        line = proc.stdout.readline()
        assert line.startswith("surepick-board: serving on socket://"), line
        con = Console(line.split()[-1])
        try:
            said["con"] = con
            yield said
        finally:
            con.close()
    finally:
        proc.terminate()
        _, said["err"] = proc.communicate(timeout=30)
    assert proc.returncode == 0, said["err"]


def test_surepick_board_serves_the_plant_and_rejects_unknown_scenarios(tmp_path):
    bad = subprocess.run([SUREPICK, "board", "--scenario", "no_such"], capture_output=True, text=True,
                         timeout=60)
    assert bad.returncode == 2
    assert "unknown scenario 'no_such'" in bad.stderr and "nominal" in bad.stderr and "brownout_mid_lift" in bad.stderr
    with _served_board(tmp_path, "--scenario", "nominal", "--seed", "3", "--power-cut-random", "7") as said:
        con = said["con"]
        # the firmware booted at power-on: its boot record says so (its HELLO may have gone out
        # before this console connected: a console nobody has open drops it, as a USB port does)
        con.send(link.request(link.T_LOG_SINCE, 1, (0,)))
        r = con.wait(lambda f: f.ftype == link.T_REPLY and f.fields[0] == 1, 30)
        assert r is not None and r.fields[1] == link.OK, con.tail()
        boots = [f.fields for f in con.frames if f.ftype == link.T_LOG and f.fields[1] == R_BOOT]
        assert boots and boots[0][2 + 2] == 1, boots          # the record's reset cause: 1, power-on
        # lockstep with the plant: telemetry time runs on (virtual ms)
        tel = con.wait(lambda f: f.ftype == link.T_TELEMETRY and f.fields[0] > 1000, 30)
        assert tel is not None and tel.fields[14] == PERIOD_US
    assert "plant: scenario nominal, seed 3" in said["err"] and "power cut at " in said["err"]


def test_surepick_board_realtime_keeps_virtual_time_behind_the_wall_clock(tmp_path):
    bad = subprocess.run([SUREPICK, "board", "--realtime"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "--realtime paces the plant: give --scenario too" in bad.stderr
    with _served_board(tmp_path, "--scenario", "nominal", "--realtime") as said:
        con = said["con"]
        first = con.wait(lambda f: f.ftype == link.T_TELEMETRY, 30)
        assert first is not None
        wall0 = time.monotonic()
        last = con.wait(lambda f: f.ftype == link.T_TELEMETRY and f.fields[0] >= first.fields[0] + 2000, 30)
        wall = time.monotonic() - wall0
        assert last is not None
        virtual = (last.fields[0] - first.fields[0]) / 1000.0
        # paced: 2 s of plant time take at least about 2 s of wall time (one frame's slack)
        assert wall >= virtual - 0.25, (virtual, wall)
    assert "paced by the wall clock" in said["err"]
