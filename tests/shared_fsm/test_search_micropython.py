# The part search under the real `micropython` binary (tests/mpy/run_search.py): the same
# search steps as CPython for the same bench, and no heap allocation in any step but those in
# which it decides where to probe next (they end in a MOVE_PLAN, planned at rest).
import runpy
import sys

from tests.support import mpy as host_helpers


def _cpython_text(capsys):
    host_helpers.use_vectors()
    argv = sys.argv
    sys.argv = ["run_search.py"]
    try:
        runpy.run_path(str(host_helpers.HERE / "run_search.py"), run_name="__main__")
    finally:
        sys.argv = argv
    return capsys.readouterr().out


def _run_mpy(*extra):
    r = host_helpers.run("run_search.py", *extra, timeout=120)
    out, err = r.stdout.decode(), r.stderr.decode()
    assert r.returncode == 0, out[-2000:] + err[-2000:]
    return out


def test_search_steps_identical_under_micropython_and_cpython(capsys):
    cpy = _cpython_text(capsys)
    assert cpy.count("== ") == 5 and "FOUND" in cpy and "NOT_FOUND" in cpy
    assert _run_mpy() == cpy


def test_search_steps_allocate_only_when_deciding_at_rest(capsys):
    assert _run_mpy("heaplock") == _cpython_text(capsys)
