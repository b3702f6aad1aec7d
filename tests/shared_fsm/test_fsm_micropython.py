# The shared machine under the real `micropython` binary: identical traces to CPython, no heap
# allocation in step(), and every shared file compiles for the RP2040 (armv6m).
import subprocess

from tests.conftest import REPO
from tests.support import mpy as host_helpers
from surepick.shared_fsm import fake_scenarios
from surepick.shared_fsm import trace_text

START = (1 << 30) - 3000


def _cpython_text():
    out = []
    for name in fake_scenarios.names():
        events, m, hal = fake_scenarios.run(name, start_ms=START)
        out.append(trace_text.scenario_text(name, events, m))
    out.append("END")
    return "\n".join(out) + "\n"


def _run_mpy(*extra):
    r = host_helpers.run("run_fsm_scenarios.py", *extra, timeout=120)
    out, err = r.stdout.decode(), r.stderr.decode()
    assert r.returncode == 0, out[-2000:] + err[-2000:]
    return out


def test_traces_identical_under_micropython_and_cpython():
    mpy = _run_mpy()
    cpy = _cpython_text()
    assert mpy.count("== ") == len(fake_scenarios.names())
    assert mpy == cpy


def test_step_allocates_nothing_under_heap_lock():
    # The runner wraps every Machine.step in micropython.heap_lock(); an allocation raises
    # MemoryError, which the runner reports with exit code 3.
    out = _run_mpy("heaplock")
    assert out == _cpython_text()
    # the suite visits all nine states, so every state's step ran under the lock
    visited = set()
    for line in out.splitlines():
        if ">" in line and not line.startswith("=="):
            a, b = line.split()[3].split(">")
            visited.update((a, b))
    assert visited == {"IDLE", "APPROACH", "DESCEND", "GRASP", "VERIFY", "LIFT", "TRANSFER", "PLACE", "RECOVER"}


def test_heap_lock_really_catches_allocation(micropython_bin, tmp_path):
    # Guard: this binary's heap_lock must make an allocation fail, or the test above proves nothing.
    probe = tmp_path / "probe.py"
    probe.write_text("import micropython\nmicropython.heap_lock()\ntry:\n    x = [1, 2, 3]\n"
                     "    r = 'allocated'\nexcept MemoryError:\n    r = 'blocked'\n"
                     "micropython.heap_unlock()\nprint(r)\n")
    r = subprocess.run([micropython_bin, str(probe)], capture_output=True, text=True, timeout=30)
    assert r.stdout.strip() == "blocked"


def test_every_shared_file_compiles_for_rp2040(mpy_cross_bin, tmp_path):
    files = sorted((REPO / "shared_fsm").glob("*.py"))
    assert len(files) >= 8
    for f in files:
        out = tmp_path / (f.stem + ".mpy")
        r = subprocess.run([mpy_cross_bin, "-march=armv6m", "-o", str(out), str(f)],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, (f.name, r.stderr)
        assert out.stat().st_size > 0


def test_motion_tick_allocates_nothing_under_heap_lock():
    r = host_helpers.run("run_motion_heaplock.py", timeout=120, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith("OK ticks=")
    assert int(r.stdout.split("ticks=")[1].split()[0]) > 500


def test_error_classes_work_under_micropython():
    r = host_helpers.run("run_error_classes.py", timeout=60, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("ok 1 pose unreachable (too far)")
    assert lines[1].startswith("ok grasp_dwell_ms config field 'grasp_dwell_ms'")
    assert lines[2] == "ok motion error_seq=1 pose unreachable (too fa"
