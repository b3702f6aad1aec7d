# The proof without hardware: a hardware stand-in -- the firmware on the virtual board running
# against the plant with hidden perturbed parameters chosen by seed (`fit --stand-in SEED`,
# `sim run --engine vboard --plant hidden.json`) -- differs from the host sim; fit on the
# stand-in's run recovers the plant; then compare between the fitted sim and the stand-in passes.
import json
import subprocess
import time

import numpy as np
import pytest

from surepick.host.records import fit
from surepick.shared_fsm.config import Config
from surepick.host.records import runrecord

from tests.support.needs import NEEDS_MICROPYTHON
from tests.support.cli import SUREPICK_BIN


SUREPICK = [SUREPICK_BIN]
SEED = 11


def _cli(args, timeout=600):
    return subprocess.run(SUREPICK + args, capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
@NEEDS_MICROPYTHON
def test_stand_in_differs_then_fit_recovers_it_and_compare_passes(tmp_path):
    t0 = time.perf_counter()
    hidden = tmp_path / "hidden.json"
    assert _cli(["fit", "--stand-in", str(SEED), "--out", str(hidden)]).returncode == 0
    host, stand, fitted = tmp_path / "host", tmp_path / "stand_in", tmp_path / "fitted"
    base = ["sim", "run", "--scenario", "nominal", "--seed", str(SEED), "--cycles", "2", "--out"]
    r = _cli(base + [str(host), "--no-plots"])
    assert r.returncode == 0, r.stderr
    r = _cli(base + [str(stand), "--engine", "vboard", "--plant", str(hidden)])       # the stand-in
    assert r.returncode == 0, r.stdout + r.stderr
    assert runrecord.load(str(stand)).meta["kind"] == "virtual-board"
    r = _cli(["compare", str(host), str(stand), "--out", str(tmp_path / "c1")])
    assert r.returncode == 1
    for phase in ("VERIFY", "GRASP", "LIFT+TRANSFER", "CALIBRATION"):
        assert phase in r.stdout.split("FAIL:")[1]
    plant = tmp_path / "plant.json"
    t1 = time.perf_counter()
    r = _cli(["fit", str(stand), "--out", str(plant)])
    assert r.returncode == 0, r.stderr
    print("\n" + r.stdout)
    t2 = time.perf_counter()
    got = fit.named_values(json.loads(plant.read_text()))
    want = fit.named_values(json.loads(hidden.read_text()))
    # Recovered within the 10%:
    for name in ("gripper_speed_s_per_60deg", "base_speed_s_per_60deg", "shoulder_speed_s_per_60deg",
                 "elbow_speed_s_per_60deg", "current_offset_counts"):
        assert abs(got[name] - want[name]) <= 0.10 * abs(want[name]), (name, got[name], want[name])
    # Not within 10% (measured: pad stiffness +10.5%, pot zero -28%: the zero at 0 mm is an
    # extrapolation from readings at 20..45 mm), so they are held to the alternative, a
    # stated bound on the residual of the signals they shape: pot and current RMS after the fit.
    res = {l.split()[0]: l.split() for l in r.stdout.splitlines() if len(l.split()) == 3}
    assert float(res["pot_counts"][2]) < 40.0, res     # counts; noise floor about 13, before: 584
    assert float(res["current_ma"][2]) < 10.0, res     # mA; noise floor about 2, before: 54
    assert abs(got["pad_stiffness_n_per_m"] - want["pad_stiffness_n_per_m"]) <= 0.25 * want["pad_stiffness_n_per_m"]
    r = _cli(["sim", "run", "--scenario", "nominal", "--seed", str(SEED), "--cycles", "2", "--out", str(fitted),
              "--no-plots", "--plant", str(plant)])
    assert r.returncode == 0
    r = _cli(["compare", str(stand), str(fitted), "--out", str(tmp_path / "c2")])
    assert r.returncode == 0, r.stdout
    print("runs + compare %.1f s, fit %.1f s, total %.1f s" % (t1 - t0, t2 - t1, time.perf_counter() - t0))


@NEEDS_MICROPYTHON
def test_the_virtual_board_stand_in_is_the_host_sim_on_the_hidden_plant(tmp_path):
    # The stand-in's run (firmware, virtual board) equals the host sim on the same hidden plant,
    # tick for tick: what fit sees is the firmware's behaviour on that plant.
    hidden = tmp_path / "hidden.json"
    hidden.write_text(json.dumps(fit.stand_in_params(SEED)))
    base = ["sim", "run", "--scenario", "nominal", "--seed", str(SEED), "--plant", str(hidden), "--out"]
    for out, extra in (("vb", ["--engine", "vboard"]), ("sim", ["--no-plots"])):
        r = _cli(base + [str(tmp_path / out)] + extra)
        assert r.returncode == 0, r.stdout + r.stderr
    a, b = runrecord.load(str(tmp_path / "sim")), runrecord.load(str(tmp_path / "vb"))
    assert a.meta["plant_params"] == b.meta["plant_params"] and a.meta["model_hash"] == b.meta["model_hash"]
    assert a.events == b.events
    # Every column the firmware's behaviour fills (inputs, outputs, state, pulses) equal. loop_us is
    # not behaviour but the board's clock: the host sim measures none (-1), the virtual board
    # reports its virtual clock, which must show the lockstep period at every tick but a cycle's
    # first (docs/run-record.md).
    loop = runrecord.TICK_INDEX["loop_us"]
    assert a.ticks.shape == b.ticks.shape
    assert np.array_equal(np.delete(a.ticks, loop, axis=1), np.delete(b.ticks, loop, axis=1))
    assert (a.ticks[:, loop] == -1).all()
    period_us = Config().loop_period_ms * 1000
    assert b.ticks[0, loop] == -1 and (b.ticks[1:, loop] == period_us).all(), np.unique(b.ticks[:, loop])


def test_fit_refuses_a_scenario_with_injected_faults(tmp_path):
    out = tmp_path / "bo"
    _cli(["sim", "run", "--scenario", "pot_wire_broken", "--out", str(out), "--no-plots"])
    r = _cli(["fit", str(out), "--out", str(tmp_path / "p.json")])
    assert r.returncode == 2 and "injects faults" in r.stderr and "Traceback" not in r.stderr
