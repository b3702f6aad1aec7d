# A sweep's inputs have bounds (engines/sweep.py, engines/sweep_run.py): seeds and cycles on the
# command line, and on --resume the stored plan (sweep.json) and results (results.jsonl) checked
# again as if new, with the line named: generated hostile files, each must end in a SweepError
# saying what is wrong, never a traceback, never a silent acceptance. The memory bound: a
# hostile sweep command stays under 1 GB of address space (prlimit) and says why it refuses.
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from surepick.host.engines import sweep, sweep_run
from surepick.host.engines.sweep import SweepError, make_plan

SUREPICK = [str(Path(sys.executable).parent / "surepick")]


@pytest.fixture
def stored(tmp_path):
    # a valid plan on disk, and one valid result line (what run_job writes) for it
    plan = make_plan("part_offset", ["offset_mm=0:4:2", "config.grasp_dwell_ms=250,450"], seeds=3)
    out = tmp_path / "sweep"
    out.mkdir()
    sweep_run.write_plan(str(out), plan, {"command": "surepick sim sweep ..."})
    good = {"cell": 0, "seed": 0, "fsm_outcome": "placed", "judge_outcome": "placed", "false_success": False,
            "false_failure": False, "expected": True, "attempts": 1, "fsm_fault": None, "fault_state": None,
            "judge_reason": "", "controller_restarts": 0, "sim_ms": 9000, "wall_s": 1.0, "cycle_ms": 8000,
            "probes": 0, "search_moved_mm": 0.0, "worker": "here:1"}
    return plan, out, good


def _plan_dict(out):
    return json.loads((out / "sweep.json").read_text())


def _write_plan(out, d):
    (out / "sweep.json").write_text(json.dumps(d) if not isinstance(d, (bytes, str)) else d)


def test_a_valid_stored_plan_reads_back_as_the_same_sweep(stored):
    plan, out, _ = stored
    assert sweep_run.read_plan(str(out)).differs_from(plan) is None


PLAN_TAMPERING = {
    "a list": lambda d: [d],
    "seeds 1e9": lambda d: dict(d, seeds=1000000000),
    "seeds 1.0": lambda d: dict(d, seeds=3.0),
    "seeds true": lambda d: dict(d, seeds=True),
    "a negative first seed": lambda d: dict(d, first_seed=-1),
    "an unknown key": lambda d: dict(d, evil=1),
    "an invalid config": lambda d: dict(d, config={"grasp_dwell_ms": -5}),
    "an unknown config field": lambda d: dict(d, config={"no_such_field": 1}),
    "NaN in an axis": lambda d: dict(d, axes=[dict(d["axes"][0], values=[float("nan"), 2.0])] + d["axes"][1:]),
    "-1e6 in an axis": lambda d: dict(d, axes=[dict(d["axes"][0], values=[-1e6, 2.0])] + d["axes"][1:]),
    "a string value": lambda d: dict(d, axes=[dict(d["axes"][0], values=["0", "2"])] + d["axes"][1:]),
    "an axis with an extra key": lambda d: dict(d, axes=[dict(d["axes"][0], evil=1)] + d["axes"][1:]),
    "an unknown axis kind": lambda d: dict(d, axes=[dict(d["axes"][0], kind="evil")] + d["axes"][1:]),
    "a million values": lambda d: dict(d, axes=[dict(d["axes"][0], values=list(range(1000000)))] + d["axes"][1:]),
    "another scenario name": lambda d: dict(d, scenario="../../../tmp/evil"),
    "the plant off its schema": lambda d: dict(d, plant={"rail": "x"}),
}


@pytest.mark.parametrize("what", sorted(PLAN_TAMPERING))
def test_a_tampered_plan_is_refused_on_resume(stored, what):
    _, out, _ = stored
    _write_plan(out, PLAN_TAMPERING[what](_plan_dict(out)))
    with pytest.raises(SweepError) as e:
        sweep_run.read_plan(str(out))
    assert "sweep.json" in str(e.value) and "--force starts over" in str(e.value)


@pytest.mark.parametrize("data, needle", [
    (b"\xff\xfe not utf-8", "not UTF-8"),
    (b"[" * 100000, "nests too deep"),
    (b"{", "not JSON"),
    (b"x" * (2 << 20), "larger than"),
])
def test_a_plan_file_that_is_not_one_is_refused(stored, data, needle):
    _, out, _ = stored
    (out / "sweep.json").write_bytes(data)
    with pytest.raises(SweepError, match=needle):
        sweep_run.read_plan(str(out))


RESULT_TAMPERING = {
    "cell a list": (lambda g: [dict(g, cell=[0])], 1),
    "cell null": (lambda g: [dict(g, cell=None)], 1),
    "a missing field": (lambda g: [{k: v for k, v in g.items() if k != "judge_outcome"}], 1),
    "a forged false success": (lambda g: [dict(g, false_success=True)], 1),
    "a forged success": (lambda g: [dict(g, judge_outcome="dropped")], 1),
    "a seed outside the plan": (lambda g: [dict(g, seed=99)], 1),
    "a cell outside the plan": (lambda g: [dict(g, cell=-1)], 1),
    "one cycle twice with other outcomes": (lambda g: [g, dict(g, seed=1), dict(g, fsm_outcome="faulted",
                                                                                   judge_outcome="faulted")], 3),
    "a list line": (lambda g: [[g]], 1),
}


@pytest.mark.parametrize("what", sorted(RESULT_TAMPERING))
def test_tampered_results_are_refused_with_their_line(stored, what):
    plan, out, good = stored
    make, line = RESULT_TAMPERING[what]
    (out / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in make(good)))
    with pytest.raises(SweepError) as e:
        sweep_run.read_results(str(out), plan)
    assert "results.jsonl line %d" % line in str(e.value), str(e.value)


def test_results_not_utf8_or_nested_are_refused_with_their_line(stored):
    plan, out, good = stored
    for bad, needle in ((b"\xff\xfe\n", "not UTF-8"), (b"[" * 60000 + b"\n", "nests too deep"),
                        (b"[" * 70000 + b"\n", "longer than")):
        (out / "results.jsonl").write_bytes((json.dumps(good) + "\n").encode() + bad)
        with pytest.raises(SweepError, match="line 2 .*%s|line 2 is %s" % (needle, needle)):
            sweep_run.read_results(str(out), plan)


def test_good_results_and_a_repeat_of_the_same_cycle_read_back(stored):
    plan, out, good = stored
    lines = [good, dict(good, seed=1), dict(good, worker="elsewhere:2", wall_s=3.0)]
    (out / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    got = sweep_run.read_results(str(out), plan)
    assert sorted(got) == [(0, 0), (0, 1)]


def test_a_resume_of_a_tampered_plan_is_one_line_under_a_memory_bound(stored):
    # the command, in 1 GB of address space (the bound docs/safety-hostile-input.md states for
    # `sim sweep`): a plan of 10^9 seeds is refused in words, not grown into
    _, out, _ = stored
    _write_plan(out, dict(_plan_dict(out), seeds=1000000000))
    r = subprocess.run(["prlimit", "--as=%d" % (1 << 30)] + SUREPICK + ["sim", "sweep", "--resume", "--out", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr and "seeds must be 1..10000" in r.stderr, r.stderr
    r = subprocess.run(["prlimit", "--as=%d" % (1 << 30)] + SUREPICK + [
        "sim", "sweep", "--scenario", "part_offset", "--param", "offset_mm=0:4:2", "--seeds", "1000000000",
        "--out", str(out.parent / "fresh")], capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "Traceback" not in r.stderr and "seeds must be 1..10000" in r.stderr, r.stderr
    assert math.isfinite(sweep.MAX_CYCLES) and sweep.MAX_CYCLES <= 200000
