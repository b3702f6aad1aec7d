# `surepick fit --arm-out`: the fit's result as an arm description. On a MeArm run (parallel, no
# wrist servo, four MG90S sharing one model): the description written must carry exactly the
# fitted plant (the oracle: a run on `--arm fitted.toml` is the same run as on `--arm mearm
# --plant plant.json`, trace for trace), keep the arm's geometry, joints, bench and servo pins,
# and pass `surepick arm check`.
import json
import subprocess

import pytest

from surepick.host.arms import files
from tests.support.cli import SUREPICK_BIN


def _cli(args, timeout=900):
    return subprocess.run([SUREPICK_BIN] + [str(a) for a in args], capture_output=True, text=True, timeout=timeout)


def test_fit_writes_a_description_that_is_the_fitted_plant(tmp_path):
    run = tmp_path / "run"
    r = _cli(["sim", "run", "--arm", "mearm", "--scenario", "nominal", "--seed", "3", "--out", run, "--no-plots"])
    assert r.returncode == 0, r.stdout + r.stderr
    plant, desc = tmp_path / "plant.json", tmp_path / "mearm_fit.toml"
    r = _cli(["fit", run, "--out", plant, "--arm-out", desc, "--max-evals", "6"])
    assert r.returncode == 0, r.stdout + r.stderr
    assert "arm description mearm written to" in r.stdout and "(0 fields fitted" not in r.stdout, r.stdout
    assert _cli(["arm", "check", desc, "--no-map"]).returncode == 0
    fitted, _ = files.load(str(desc))
    mearm, _ = files.load("mearm")
    d, m = fitted.to_dict(), mearm.to_dict()            # every default filled in
    for sec in ("geometry", "joints", "bench", "gripper", "links"):
        assert d[sec] == m[sec], sec
    for name in m["servos"]:
        for k in ("gpio", "min_us", "max_us", "trim_us", "direction", "zero_deg", "gear"):
            assert d["servos"][name][k] == m["servos"][name][k], (name, k)
    p = json.loads(plant.read_text())
    assert d["sensors"]["pot"]["closed_counts"] == pytest.approx(p["pot"]["closed_counts"], rel=1e-9)
    assert d["sensors"]["current"]["offset_counts"] == pytest.approx(p["current"]["offset_counts"], rel=1e-9)
    slots = {"base": 0, "shoulder": 1, "elbow": 2, "gripper": 4}
    for name, slot in slots.items():
        model = d["servo_models"][d["servos"][name]["model"]]
        assert model["speed_s_per_60deg_4v8"] == pytest.approx(p["servos"][slot]["speed_s_per_60deg_4v8"], rel=1e-9)
    # the oracle: the description's plant is the fitted plant
    a, b = tmp_path / "a", tmp_path / "b"
    base = ["sim", "run", "--scenario", "nominal", "--seed", "4", "--no-plots", "--out"]
    assert _cli(base + [a, "--arm", desc]).returncode in (0, 1)
    assert _cli(base + [b, "--arm", "mearm", "--plant", plant]).returncode in (0, 1)
    assert (a / "trajectory.csv").read_text() == (b / "trajectory.csv").read_text()
