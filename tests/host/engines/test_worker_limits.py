# The bounds of every process that runs a user's input (host/worker_limits.py), read back
# from the kernel (prlimit of the real process): sweep and batch workers, the virtual board's
# micropython, the emulated RP2040's node. And a task that goes past one (memory, CPU, file
# size) stops its run with one line naming the bound and the task, the results finished before
# it kept (the pool's on_done got them; the batch's cycles.jsonl holds them).
import json
import os
import sys
import pytest

from surepick.host import worker_limits
from surepick.host.engines import batch, sweep_pool

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="rlimits are read back with prlimit")

BOUNDS = {"memory": worker_limits.MEMORY_BYTES, "file": worker_limits.FILE_BYTES}


def _limits(_payload):
    return worker_limits.limits_of()


def _hostile(payload):
    # a task doing what its input asks: hold N bytes, spin, or write N bytes
    kind, n = payload
    if kind == "hold":
        return len(bytearray(n))
    if kind == "spin":
        while True:
            n += 1
    if kind == "write":
        with open(n[0], "wb") as f:
            for _ in range(n[1] >> 16):
                f.write(b"\0" * 65536)
        return n[1]
    return n


def _pool_run(tasks):
    done = []
    err = None
    try:
        sweep_pool.LocalPool(1).run(_hostile, tasks, lambda tid, out: done.append((tid, out)))
    except sweep_pool.WorkerError as e:
        err = e
    return done, err


def test_sweep_workers_run_within_the_bounds():
    got = []
    sweep_pool.LocalPool(1).run(_limits, [(1, None)], lambda tid, out: got.append(out))
    assert {k: got[0][k] for k in BOUNDS} == BOUNDS
    assert got[0]["cpu"] > 0 and got[0]["cpu"] != worker_limits.resource.RLIM_INFINITY   # per task


def test_batch_workers_run_within_the_bounds():
    from concurrent.futures import ProcessPoolExecutor
    with ProcessPoolExecutor(1, initializer=batch._start_worker) as pool:    # what run_batch starts
        got = pool.submit(_limits, None).result()
    assert {k: got[k] for k in BOUNDS} == BOUNDS


def test_the_virtual_boards_micropython_runs_within_the_bounds():
    from surepick.host.vboard.interp import Interpreter, find_micropython
    try:
        exe = find_micropython()
    except Exception:
        pytest.skip("no micropython")
    it = Interpreter([exe, "-c", "import time\ntime.sleep(30)"], dict(os.environ), ".")
    try:
        got = worker_limits.limits_of(it.pid)
    finally:
        it.proc.kill()
        it.proc.wait()
    assert {k: got[k] for k in BOUNDS} == BOUNDS


def test_the_emulated_rp2040_runs_within_the_bounds():
    from surepick.host.engines.rp2040 import chip
    try:
        c = chip.Chip()
    except chip.EmulatorError as e:
        pytest.skip(str(e))
    try:
        c.start(wait_usb=False)          # node starts and says ready within the memory bound
        got = worker_limits.limits_of(c._proc.pid)
    finally:
        c.close()
    assert {k: got[k] for k in BOUNDS} == BOUNDS


def test_a_task_past_the_memory_bound_stops_the_run_in_one_line_and_keeps_what_finished():
    done, err = _pool_run([(1, ("hold", 1000)), (2, ("hold", 2 * worker_limits.MEMORY_BYTES)), (3, ("hold", 10))])
    assert done == [(1, 1000)]
    assert isinstance(err, sweep_pool.WorkerBound), err
    assert str(err) == "task 2 stopped: it went past its bound of 1024 MiB of memory"


def test_a_task_past_its_cpu_bound_stops(monkeypatch):
    monkeypatch.setattr(worker_limits, "TASK_CPU_S", 1)      # the fork-started worker inherits it
    done, err = _pool_run([(1, ("hold", 7)), (2, ("spin", 0))])
    assert done == [(1, 7)]
    assert isinstance(err, sweep_pool.WorkerBound) and str(err) == "task 2 stopped: it went past its bound of 1 s of CPU time"


def test_a_task_past_the_file_bound_stops(monkeypatch, tmp_path):
    monkeypatch.setattr(worker_limits, "FILE_BYTES", 1 << 20)
    big = tmp_path / "big.bin"
    done, err = _pool_run([(1, ("hold", 7)), (2, ("write", (str(big), 4 << 20)))])
    assert done == [(1, 7)]
    assert isinstance(err, sweep_pool.WorkerBound), err
    assert str(err) == "task 2 stopped: it went past its bound of files of 1 MiB"
    assert big.stat().st_size == 1 << 20             # the write stopped at the bound


def _fake_cycle(item):
    # a stand-in for a batch cycle: seed 2's input asks for more memory than the bound
    name, _, seed = item[:3]
    if seed == 2:
        bytearray(2 * worker_limits.MEMORY_BYTES)
    return {"scenario": name, "seed": seed, "fsm_outcome": "placed", "judge_outcome": "placed"}


def test_a_batch_cycle_past_the_memory_bound_is_one_line_and_loses_nothing(monkeypatch, tmp_path):
    monkeypatch.setattr(batch, "_cycle", _fake_cycle)
    items = [("nominal", {}, 1, None, None, None), ("nominal", {}, 2, None, None, None)]
    with pytest.raises(worker_limits.BoundExceeded) as e:
        batch.run_batch(items, str(tmp_path), jobs=1)
    jsonl = tmp_path / batch.CYCLES_JSONL
    assert str(e.value) == ("scenario nominal seed 2 stopped: it went past its bound of 1024 MiB of memory; "
                            "the 1 cycles finished are in %s, --resume continues" % jsonl)
    assert [json.loads(line)["seed"] for line in jsonl.read_text().splitlines()] == [1]
