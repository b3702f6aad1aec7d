# `surepick sim sweep`'s refusals: bad axes and options refused before any work with the bad value
# named and nothing written; a missing Dask gives one line naming the extra. (Runs, Ctrl-C and
# --resume: test_sweep_runs.py.)
import subprocess

import pytest

from tests.support.cli import SUREPICK_BIN, surepick

CHEAP = ["--scenario", "pot_wire_broken", "--param", "at_ms=0,2000", "--seeds", "2", "--chunk", "1", "--jobs", "2"]


@pytest.mark.parametrize("args,needle", [
    (["--param", "offset_mm=0:30:10"], "axis offset_mm value 30: parameter 'offset_mm' = 30 is outside 0..25"),
    (["--axis", "config.grasp_dwell_ms=100:9000:4000"], "value 8100: config field 'grasp_dwell_ms': 8100 outside 0..5000"),
    (["--axis", "plant.pad.stiff=1,2"], "plant.pad.stiff: no parameter 'stiff' at pad (there: damping_ns_per_m"),
    (["--param", "offset_mm=0:4:2", "--config", "squeeze_um=abc"], "--config squeeze_um: config fields are integers"),
    (["--param", "offset_mm=0:4:2", "--scheduler", "tcp://127.0.0.1:8786"], "--scheduler needs --backend dask"),
    (["--param", "offset_mm=0:4:2", "--seeds", "0"], "--seeds must be 1..10000"),
    (["--param", "offset_mm=0:4:2", "--seeds", "1000000000"], "--seeds must be 1..10000"),
    (["--param", "offset_mm=0:4:2", "--seeds", "10000", "--axis", "config.grasp_dwell_ms=100:400:10"],
     "cycles (at most 200000 per sweep)"),
])
def test_bad_input_is_named_before_any_work(tmp_path, args, needle):
    out = tmp_path / "sweep"
    r = surepick("sim", "sweep", "--scenario", "part_offset", "--out", out, *args, timeout=120)
    assert r.returncode == 2, r.stdout + r.stderr
    assert needle in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert not (out / "results.jsonl").exists() and not (out / "sweep.json").exists()


def test_missing_dask_is_one_line_naming_the_extra(tmp_path):
    # a `distributed` that cannot be imported, as on a machine without the extra
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "distributed.py").write_text("raise ImportError('No module named distributed')\n")
    env = {"PYTHONPATH": str(shim), "PATH": "/usr/bin:/bin"}
    r = subprocess.run([SUREPICK_BIN, "sim", "sweep", *CHEAP, "--backend", "dask", "--out", str(tmp_path / "s")],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.strip() == ("surepick sim sweep: --backend dask needs Dask's distributed scheduler: pip install "
                                "'surepick[dask]' (dask and distributed, pinned in requirements.lock)")
    assert not (tmp_path / "s" / "results.jsonl").exists()


def test_resume_refuses_a_directory_without_a_plan_or_made_by_other_code(tmp_path):
    import json
    from surepick.host.engines import sweep_run
    from surepick.host.engines.sweep import make_plan
    out = tmp_path / "sweep"
    r = surepick("sim", "sweep", "--out", out, "--resume")
    assert r.returncode == 2 and "holds no sweep to resume (no sweep.json)" in r.stderr, r.stderr
    out.mkdir()
    sweep_run.write_plan(str(out), make_plan("pot_wire_broken", ["at_ms=0,2000"], seeds=2))
    plan = json.loads((out / "sweep.json").read_text())
    plan["code"]["mujoco"] = "0.0.1"               # as if the cycles so far came from another MuJoCo
    (out / "sweep.json").write_text(json.dumps(plan))
    r = surepick("sim", "sweep", "--out", out, "--resume")
    assert r.returncode == 2 and "were made by other code" in r.stderr and "'mujoco': '0.0.1'" in r.stderr, r.stderr
    assert not (out / "results.jsonl").exists()
