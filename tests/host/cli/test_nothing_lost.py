# Item 5 of the bench-day issue: work is never lost and runs never mix. `surepick sim run` and
# `sim batch` as a user runs them: a bad --out is found before any simulation, Ctrl-C keeps every
# finished cycle (exit 130) and --resume continues by cycle index, an --out holding another run is
# refused (naming what is there) unless --resume or --force, --force leaves no stale PNG, and a
# batch run again into its --out appends to an interrupted cycles.jsonl instead of rewriting it.
import json
import os
import signal
import subprocess
import time

import pytest

from surepick.host.records import runrecord
from tests.support.cli import SUREPICK_BIN, surepick


def _start(args):
    return subprocess.Popen([SUREPICK_BIN, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def _interrupt_after_line(p, needle, timeout=240):
    # SIGINT to our own child (by its pid) once it printed a line containing `needle`.
    deadline = time.time() + timeout
    seen = []
    while time.time() < deadline:
        line = p.stdout.readline()
        if not line:
            break
        seen.append(line)
        if needle in line:
            p.send_signal(signal.SIGINT)
            break
    out, err = p.communicate(timeout=120)
    return "".join(seen) + out, err, p.returncode


@pytest.mark.parametrize("verb", [("sim", "run", "--scenario", "nominal"),
                                  ("sim", "batch", "--scenario", "nominal", "--count", "2")], ids=" ".join)
def test_an_out_that_is_a_file_is_found_at_once(tmp_path, verb):
    f = tmp_path / "a_file"
    f.write_text("x")
    r = surepick(*verb, "--out", f)
    assert r.returncode == 2 and "it is a file, not a directory" in r.stderr, r.stderr
    assert "cycle" not in r.stdout + r.stderr       # refused before any cycle ran (each says so)
    assert f.read_text() == "x"


def test_ctrl_c_keeps_finished_cycles_and_resume_runs_only_the_rest(tmp_path):
    out = tmp_path / "run"
    p = _start(["sim", "run", "--scenario", "nominal", "--seed", "5", "--cycles", "3", "--out", out, "--no-plots"])
    stdout, stderr, code = _interrupt_after_line(p, "cycle 0:")
    assert code == 130, (stdout, stderr)
    assert "interrupted: 1 of 3 cycle(s) finished and kept in %s; continue with --resume" % out in stderr
    rec = runrecord.load(str(out))                     # a valid run record of what finished
    assert rec.meta["cycles"] == len(rec.cycles) == 1 and rec.cycles[0]["cycle"] == 0
    report = json.loads((out / "report.json").read_text())
    assert [c["cycle"] for c in report["cycles"]] == [0] and report["summary"]["cycles"] == 1
    # the same command again is refused, naming what is there
    r = surepick("sim", "run", "--scenario", "nominal", "--seed", "5", "--cycles", "3", "--out", out)
    assert r.returncode == 2 and "already holds a host-sim run of nominal, seed 5, 1 cycle(s)" in r.stderr, r.stderr
    # --resume of another seed is refused; of the same run it runs cycles 1 and 2 only
    r = surepick("sim", "run", "--scenario", "nominal", "--seed", "6", "--cycles", "3", "--out", out, "--resume")
    assert r.returncode == 2 and "its seed is 5, this run's is 6" in r.stderr, r.stderr
    r = surepick("sim", "run", "--scenario", "nominal", "--seed", "5", "--cycles", "3", "--out", out, "--resume",
                 "--no-plots", timeout=400)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "resuming %s: cycles 0..0 finished, running 1..2" % out in r.stdout
    ran = [line for line in r.stdout.splitlines() if line.startswith("cycle ") and "simulated in" in line]
    assert len(ran) == 3                                        # cycle 0 re-shown, 1 and 2 run
    rec = runrecord.load(str(out))
    assert [c["cycle"] for c in rec.cycles] == [0, 1, 2] and rec.meta["cycles"] == 3
    # the resumed cycles are the ones an uninterrupted run gives: seeded (seed, cycle index)
    whole = tmp_path / "whole"
    r = surepick("sim", "run", "--scenario", "nominal", "--seed", "5", "--cycles", "3", "--out", whole,
                 "--no-plots", timeout=400)
    assert r.returncode == 0
    ref = runrecord.load(str(whole))
    assert (rec.ticks == ref.ticks).all() and rec.events == ref.events


def test_force_clears_the_earlier_run_so_no_stale_plot_remains(tmp_path):
    out = tmp_path / "run"
    assert surepick("sim", "run", "--scenario", "nominal", "--cycles", "2", "--out", out, timeout=400).returncode == 0
    assert sorted(n for n in os.listdir(out) if n.endswith(".png")) == ["cycle_000.png", "cycle_001.png"]
    (out / "notes.txt").write_text("mine")           # not a run file: left alone
    r = surepick("sim", "run", "--scenario", "part_missing", "--cycles", "1", "--out", out, "--force", timeout=400)
    assert r.returncode == 1, r.stderr                # part_missing is not placed
    assert sorted(n for n in os.listdir(out) if n.endswith(".png")) == ["cycle_000.png"]
    assert (out / "notes.txt").read_text() == "mine"
    report = json.loads((out / "report.json").read_text())
    assert report["scenario"] == "part_missing" and len(report["cycles"]) == 1


def test_an_interrupted_batch_is_appended_to_never_rewritten(tmp_path):
    out = tmp_path / "batch"
    p = _start(["sim", "batch", "--scenario", "part_missing", "--count", "6", "--jobs", "1", "--out", out])
    deadline = time.time() + 240
    jsonl = out / "cycles.jsonl"
    while time.time() < deadline and not (jsonl.exists() and jsonl.read_text().count("\n") >= 2):
        time.sleep(0.2)
    p.send_signal(signal.SIGINT)
    stdout, stderr = p.communicate(timeout=120)
    assert p.returncode == 130, stdout + stderr
    kept = jsonl.read_bytes()
    n = kept.count(b"\n")
    assert 2 <= n < 6 and "continue with --resume" in stderr
    r = surepick("sim", "batch", "--scenario", "part_missing", "--count", "6", "--jobs", "1", "--out", out)
    assert r.returncode == 2 and "already holds" in r.stderr and jsonl.read_bytes() == kept
    r = surepick("sim", "batch", "--scenario", "part_missing", "--count", "6", "--jobs", "2", "--out", out,
                 "--resume", timeout=400)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "resuming %s: %d of 6 cycles already in cycles.jsonl" % (out, n) in r.stdout
    data = jsonl.read_bytes()
    assert data.startswith(kept)                                  # appended, not rewritten
    seeds = sorted(json.loads(line)["seed"] for line in data.decode().splitlines())
    assert seeds == [0, 1, 2, 3, 4, 5]                            # each seed once
    summary = json.loads((out / "summary.json").read_text())
    assert summary["count"] == 6 and summary["per_scenario"]["part_missing"]["faults"] == {"GRASP_FAILED": 6}


class _CtrlCWhileConverted(float):
    # A site size whose conversion, inside MuJoCo's pybind11 binding, is where the person's Ctrl-C
    # arrives: the binding turns the KeyboardInterrupt into "incompatible function arguments".
    def __float__(self):
        signal.raise_signal(signal.SIGINT)
        return float(self.real)


def test_ctrl_c_inside_a_mujoco_call_is_still_an_interrupt(tmp_path, monkeypatch, capsys):
    import mujoco
    from surepick.host.cli import main as cli
    from surepick.sim import arm_model
    # the binding's behaviour this guards against, shown on MuJoCo itself
    site = mujoco.MjSpec().worldbody.add_site()
    seen = {}

    def ctrl_c(signum, frame):
        seen["ctrl_c"] = True
        raise KeyboardInterrupt
    old = signal.signal(signal.SIGINT, ctrl_c)
    try:
        with pytest.raises(TypeError, match="incompatible function arguments"):
            site.size = [_CtrlCWhileConverted(0.001), 0.0, 0.0]
    finally:
        signal.signal(signal.SIGINT, old)
    assert seen == {"ctrl_c": True}
    # sim run: cycle 0 finishes; Ctrl-C lands in cycle 1's model build, inside a site's size
    from surepick.sim.plant import Plant
    site_of = arm_model._site
    built = []
    monkeypatch.setattr(arm_model, "_site", lambda *a: built.append(a[1]) or site_of(*a))
    Plant()
    per_build = len(built)                 # the sites one model build adds
    built.clear()

    def site_with_ctrl_c(body, name, pos, size, rgba):
        # the first build (cycle 0's) as it was; a site of the second carries the Ctrl-C
        built.append(name)
        late = len(built) > per_build
        return site_of(body, name, pos, _CtrlCWhileConverted(size) if late else size, rgba)
    monkeypatch.setattr(arm_model, "_site", site_with_ctrl_c)
    out = tmp_path / "run"
    rc = cli.main(["sim", "run", "--scenario", "nominal", "--seed", "5", "--cycles", "3", "--out", str(out),
                   "--no-plots"])
    err = capsys.readouterr().err
    assert rc == 130, err
    assert "interrupted: 1 of 3 cycle(s) finished and kept in %s; continue with --resume" % out in err
    assert "Traceback" not in err and "incompatible" not in err
    assert len(runrecord.load(str(out)).cycles) == 1
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler     # the handler is given back
