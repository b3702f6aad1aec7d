# Sweeps with real cycles (MuJoCo physics, the firmware's controller, the judge): the local pool
# and a Dask LocalCluster of 2 worker processes write the same cells.csv and the same per-cycle
# results; a worker killed mid-sweep costs only the chunk it held (the sweep finishes, every
# (cell, seed) once, nothing lost); Ctrl-C keeps finished cycles and --resume runs only what is
# missing, ending with the undisturbed run's table; a failing cell's drill-down re-runs the same
# cycle. The quick tier uses a cheap scenario (a pot wire that breaks at 0 or 2 s: SENSOR_FAULT in
# different states) with one cycle per chunk; the slow tier has the issue's 3 x 2 cells x 4 seeds
# of part_offset on both backends and the killed Dask worker.
import json
import os
import signal
import subprocess
import time

import pytest

from surepick.host.engines import sweep_run
from surepick.host.engines.sweep import make_plan
from surepick.host.engines.sweep_dask import DaskBackend
from surepick.host.engines.sweep_pool import LocalPool
from surepick.host.records import envelope
from tests.support.cli import SUREPICK_BIN, surepick

VARIES = ("worker", "wall_s")       # which process ran a cycle and how long it took: not physics


CHEAP = ["--scenario", "pot_wire_broken", "--param", "at_ms=0,2000", "--seeds", "2", "--chunk", "1", "--jobs", "2"]


def _plan():
    # the plan CHEAP describes
    return make_plan("pot_wire_broken", ["at_ms=0,2000"], seeds=2, chunk=1)


def _comparable(results):
    return {k: {f: v for f, v in r.items() if f not in VARIES} for k, r in results.items()}


def _cells_csv(out, plan, run):
    envelope.write_cells(str(out), plan, envelope.build_cells(plan, run.results))
    return (out / "cells.csv").read_bytes()


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    # The plan run once, undisturbed, on the local pool: what every other run must reproduce.
    out = tmp_path_factory.mktemp("reference")
    plan = _plan()
    run = sweep_run.run_sweep(plan, str(out), LocalPool(2))
    assert not run.interrupted and len(run.results) == 4
    return {"results": _comparable(run.results), "csv": _cells_csv(out, plan, run), "run": run}


@pytest.fixture(scope="module")
def dask_cluster():
    backend = DaskBackend(None, workers=2)
    yield backend
    backend.close()


def test_the_reference_is_real_physics(reference):
    # at_ms=0: the broken wire is seen before the job; at 2 s, during it: SENSOR_FAULT, never placed
    rs = reference["results"]
    assert {r["fsm_fault"] for r in rs.values()} == {"SENSOR_FAULT"}
    assert all(r["judge_outcome"] != "placed" and not r["false_success"] for r in rs.values())
    assert rs[(0, 0)]["sim_ms"] < rs[(1, 0)]["sim_ms"]       # the later break ends the cycle later
    assert len({r["worker"] for r in reference["run"].results.values()}) == 2   # both workers took part


def test_dask_local_cluster_writes_the_same_cells_csv(reference, dask_cluster, tmp_path):
    plan = _plan()
    run = sweep_run.run_sweep(plan, str(tmp_path), dask_cluster)
    assert dask_cluster.workers == 2
    assert _comparable(run.results) == reference["results"]
    assert _cells_csv(tmp_path, plan, run) == reference["csv"]


def test_a_killed_local_worker_costs_only_its_chunk(reference, tmp_path):
    plan = _plan()
    pool = LocalPool(2)
    killed = []

    def progress(state):
        # after the first chunk is back, kill the worker still busy with another one
        if state["ran"] >= 1 and not killed:
            busy = pool.busy_pids()
            assert busy, "no worker was busy to kill"
            os.kill(busy[0], signal.SIGKILL)
            killed.append(busy[0])
    run = sweep_run.run_sweep(plan, str(tmp_path), pool, progress)
    assert killed and not run.interrupted
    assert pool.lost == 1                      # one worker died holding a chunk ...
    assert pool.sent == len(plan.chunks()) + 1  # ... and only that chunk was handed out again
    lines = (tmp_path / "results.jsonl").read_text().splitlines()
    assert len(lines) == 4                     # nothing counted twice, nothing lost
    assert _comparable(run.results) == reference["results"]
    assert _cells_csv(tmp_path, plan, run) == reference["csv"]


@pytest.mark.slow
def test_a_killed_dask_worker_costs_only_its_chunk(reference, dask_cluster, tmp_path):
    plan = _plan()
    client = dask_cluster.client
    killed = []

    def progress(state):
        if state["ran"] >= 1 and not killed:
            busy = [w for w, keys in client.processing().items() if keys]
            assert busy, "no Dask worker was busy to kill"
            pid = client.run(os.getpid, workers=[busy[0]])[busy[0]]
            os.kill(pid, signal.SIGKILL)        # its nanny starts a new one; the scheduler re-runs the chunk
            killed.append(pid)
    run = sweep_run.run_sweep(plan, str(tmp_path), dask_cluster, progress)
    assert killed and not run.interrupted
    assert len((tmp_path / "results.jsonl").read_text().splitlines()) == 4
    assert _comparable(run.results) == reference["results"]
    assert _cells_csv(tmp_path, plan, run) == reference["csv"]


@pytest.mark.slow
def test_the_issues_3x2x4_sweep_is_identical_on_both_backends(tmp_path):
    args = ["sim", "sweep", "--scenario", "part_offset", "--param", "offset_mm=4:12:4", "--param", "yaw_deg=0,20",
            "--seeds", "4", "--jobs", "2", "--drill", "0", "--no-plots"]
    local = surepick(*args, "--out", tmp_path / "local", timeout=1800)
    assert local.returncode == 0, local.stdout + local.stderr
    dask = surepick(*args, "--backend", "dask", "--out", tmp_path / "dask", timeout=1800)
    assert dask.returncode == 0, dask.stdout + dask.stderr
    a = (tmp_path / "local" / "cells.csv").read_text()
    assert a == (tmp_path / "dask" / "cells.csv").read_text()
    assert len(a.splitlines()) == 1 + 6 and a.startswith("offset_mm,yaw_deg,runs,placed,")
    summ = envelope.read_cells(str(tmp_path / "dask"))[1]
    assert all(r["runs"] == "4" and r["false_success"] == "0" for r in summ)


def _lines(path):
    return path.read_text().splitlines() if path.exists() else []


def test_ctrl_c_keeps_results_and_resume_runs_only_what_is_missing(reference, tmp_path):
    out = tmp_path / "sweep"
    proc = subprocess.Popen([SUREPICK_BIN, "sim", "sweep", *CHEAP, "--out", str(out), "--drill", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300
        while not _lines(out / "results.jsonl") and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stdout + stderr
    before = _lines(out / "results.jsonl")
    assert 1 <= len(before) < 4, "the interrupt came too late to test a resume: %d of 4 done" % len(before)
    summ = json.loads((out / "summary.json").read_text())
    assert summ["interrupted"] and summ["cycles_done"] == len(before)

    again = surepick("sim", "sweep", *CHEAP, "--out", out)           # neither --resume nor --force
    assert again.returncode == 2 and "--resume continues it, --force starts over" in again.stderr

    other = surepick("sim", "sweep", *CHEAP[:3], "at_ms=0,3000", *CHEAP[4:], "--out", out, "--resume")
    assert other.returncode == 2 and "this is not the sweep in" in other.stderr, other.stderr

    r = surepick("sim", "sweep", "--out", out, "--resume", "--jobs", "2", "--drill", "1", timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    after = _lines(out / "results.jsonl")
    assert after[:len(before)] == before                    # what finished was kept as it was
    keys = [(json.loads(x)["cell"], json.loads(x)["seed"]) for x in after]
    assert sorted(keys) == [(0, 0), (0, 1), (1, 0), (1, 1)]  # each once
    summ = json.loads((out / "summary.json").read_text())
    assert summ["cycles_run_now"] == 4 - len(before) and not summ["interrupted"]

    # the same cycles and the same table as the undisturbed run of the same plan
    assert _comparable({(json.loads(x)["cell"], json.loads(x)["seed"]): json.loads(x) for x in after}) \
        == reference["results"]
    assert (out / "cells.csv").read_bytes() == reference["csv"]

    # the drill-down: cell 0's failing cycle re-run with its trajectory, the same ending, linked
    drill = summ["drill"]["0"]
    assert drill["same"] and drill["rerun"]["fsm_fault"] == "SENSOR_FAULT"
    report = json.loads((out / drill["dir"] / "report.json").read_text())
    assert report["cycles"][0]["seed"] == drill["seed"] and report["params"]["at_ms"] == 0.0
    assert (out / drill["dir"] / "cycle_000.png").read_bytes()[:4] == b"\x89PNG"
    assert (out / drill["dir"] / "trajectory.csv").stat().st_size > 1000
    page = (out / "envelope.html").read_text()
    assert 'href="%s/cycle_000.png"' % drill["dir"] in page


@pytest.mark.slow
def test_a_sweep_on_a_scheduler_started_with_the_dask_command(reference, tmp_path):
    # As docs/sweeps.md's cluster recipe does it: `dask scheduler` and `dask worker` processes (here both on
    # this machine), the sweep given the scheduler's tcp:// address; the same table as the local pool.
    bin_ = os.path.dirname(SUREPICK_BIN)
    info = tmp_path / "scheduler.json"
    procs = [subprocess.Popen([os.path.join(bin_, "dask"), "scheduler", "--port", "0", "--no-dashboard",
                               "--scheduler-file", str(info)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        deadline = time.monotonic() + 120
        while not info.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        address = json.loads(info.read_text())["address"]
        assert address.startswith("tcp://")
        procs.append(subprocess.Popen([os.path.join(bin_, "dask"), "worker", address, "--nworkers", "2",
                                       "--nthreads", "1", "--no-dashboard"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        r = surepick("sim", "sweep", *CHEAP, "--backend", "dask", "--scheduler", address, "--out", tmp_path / "s",
                     "--drill", "0", "--no-plots", timeout=900)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "backend dask at %s" % address in r.stdout
        assert (tmp_path / "s" / "cells.csv").read_bytes() == reference["csv"]
        summ = json.loads((tmp_path / "s" / "summary.json").read_text())
        assert summ["backend"]["scheduler"] == address and summ["backend"]["workers"] >= 1
    finally:
        for p in reversed(procs):
            p.terminate()
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
