# `sim batch --resume` onto a batch folder whose files were damaged (hand edits, another tool,
# a bad disk): a cycles.jsonl line that is JSON but not a cycle record a batch wrote, a batch.json
# whose plan is not a table. Each is one line naming the file, exit 2, no traceback, before any
# cycle runs, and the folder's files are left as they were.
import json

import pytest

from tests.support.cli import surepick

ARGS = ["sim", "batch", "--scenario", "nominal", "--seed", "0", "--jobs", "1"]


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    out = tmp_path_factory.mktemp("batch") / "b"
    r = surepick(*ARGS, "--count", "1", "--out", out, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return out


def _copy(batch, tmp_path):
    import shutil
    out = tmp_path / "b"
    shutil.copytree(batch, out)
    return out


def _snapshot(out):
    return {p.name: p.read_bytes() for p in out.iterdir() if p.is_file() and not p.name.startswith(".")}


LINES = {
    "scenario a list": {"scenario": ["nominal"], "seed": 1},
    "no outcomes": {"scenario": "nominal", "seed": 1},
    "outcomes of the wrong type": {"scenario": "nominal", "seed": 1, "fsm_outcome": 5, "judge_outcome": [1],
                                   "fsm_fault": None, "agree": True, "false_success": False,
                                   "false_failure": False, "expected": True},
    "seed true": {"scenario": "nominal", "seed": True},
}


def _refused(out, needle):
    before = _snapshot(out)
    r = surepick(*ARGS, "--count", "2", "--out", out, "--resume", timeout=300)
    err = r.stderr.strip().splitlines()
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr and len(err) == 1, r.stderr
    assert needle in err[0] and "cannot resume" in err[0], err
    assert _snapshot(out) == before


@pytest.mark.parametrize("what", sorted(LINES))
def test_a_line_that_is_not_a_cycle_record_is_one_line(batch, tmp_path, what):
    out = _copy(batch, tmp_path)
    with open(out / "cycles.jsonl", "a") as f:
        f.write(json.dumps(LINES[what]) + "\n")
    _refused(out, "cycles.jsonl line 2 is not a cycle record")


@pytest.mark.parametrize("plan", [[], "nominal", 5])
def test_a_plan_that_is_not_a_table_is_one_line(batch, tmp_path, plan):
    out = _copy(batch, tmp_path)
    (out / "batch.json").write_text(json.dumps({"scenarios": plan}))
    _refused(out, "batch.json is unreadable")


class _KilledWriting:
    # A file whose first write is where the process dies (a power cut, a kill -9).
    def __init__(self, f):
        self.f = f

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.f.close()

    def write(self, data):
        raise KeyboardInterrupt("killed mid-write")


def test_dropping_a_torn_last_line_killed_midway_keeps_the_finished_cycles(batch, tmp_path, monkeypatch):
    # resume() drops the fragment a crash left; a kill while it does must not cost the cycles
    # before it (once it rewrote the file whole: truncated to nothing, then written).
    import builtins
    from surepick.host.engines import batch as batch_mod
    out = _copy(batch, tmp_path)
    jsonl = out / "cycles.jsonl"
    finished = jsonl.read_bytes()
    jsonl.write_bytes(finished + b'{"scenario": "nominal", "se')
    real_open = builtins.open

    def dying_open(path, mode="r", *a, **kw):
        f = real_open(path, mode, *a, **kw)
        return _KilledWriting(f) if str(path) == str(jsonl) and "w" in mode else f
    monkeypatch.setattr(builtins, "open", dying_open)
    items = batch_mod.plan(["nominal"], 2, 0)
    try:
        done = batch_mod.resume(items, str(out))
    except KeyboardInterrupt:
        done = None
    monkeypatch.undo()
    assert jsonl.read_bytes() in (finished, finished + b'{"scenario": "nominal", "se')
    if done is not None:
        assert [r["seed"] for r in done] == [0] and jsonl.read_bytes() == finished
