# `surepick compare`: same plant passes, different scenarios are a usage error, the report is written.
import json
import subprocess

import pytest

from tests.support.cli import SUREPICK_BIN

SUREPICK = [SUREPICK_BIN]


def _cli(args):
    return subprocess.run(SUREPICK + args, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("cmp")
    out = {}
    for name, scenario, seed in (("a", "nominal", 1), ("b", "nominal", 2), ("off", "part_offset", 1)):
        out[name] = base / name
        r = _cli(["sim", "run", "--scenario", scenario, "--seed", str(seed), "--cycles", "2", "--out",
                  str(out[name]), "--no-plots"])
        assert r.returncode == 0, r.stderr
    return out


def test_two_seeds_of_the_same_plant_pass_and_the_report_is_written(runs, tmp_path):
    r = _cli(["compare", str(runs["a"]), str(runs["b"]), "--out", str(tmp_path / "rep")])
    assert r.returncode == 0, r.stdout + r.stderr
    assert "PASS" in r.stdout
    html = (tmp_path / "rep" / "report.html").read_text()
    for png in ("timeline.png", "sensors.png", "dwell.png"):
        assert png in html and (tmp_path / "rep" / png).read_bytes()[:4] == b"\x89PNG"
    md = (tmp_path / "rep" / "summary.md").read_text()
    for phase in ("CYCLE", "APPROACH", "GRASP", "VERIFY", "LIFT+TRANSFER", "CALIBRATION", "LOOP"):
        assert "| %s |" % phase in md


def test_runs_of_different_scenarios_are_a_usage_error(runs, tmp_path):
    r = _cli(["compare", str(runs["a"]), str(runs["off"]), "--out", str(tmp_path / "x")])
    assert r.returncode == 2 and "different scenarios" in r.stderr and "Traceback" not in r.stderr


def test_a_tighter_tolerance_file_makes_it_fail_and_a_bad_one_is_a_usage_error(runs, tmp_path):
    tol = tmp_path / "tol.json"
    tol.write_text(json.dumps({"verify_pot_counts": 0, "cal_current_counts": 0}))
    r = _cli(["compare", str(runs["a"]), str(runs["b"]), "--tolerances", str(tol), "--out", str(tmp_path / "t")])
    assert r.returncode == 1 and "FAIL" in r.stdout
    tol.write_text(json.dumps({"no_such": 1}))
    r = _cli(["compare", str(runs["a"]), str(runs["b"]), "--tolerances", str(tol), "--out", str(tmp_path / "t")])
    assert r.returncode == 2 and "unknown tolerance 'no_such'" in r.stderr
