# The run record written by `surepick sim run`, read back; bad directories are clear errors.
import shutil
import subprocess

import pytest

from surepick.host.records import runrecord
from tests.support.cli import SUREPICK_BIN
from tests.support.period import PERIOD_MS, PERIOD_US

SUREPICK = [SUREPICK_BIN]


def _cli(args):
    return subprocess.run(SUREPICK + args, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("rr") / "nominal"
    r = _cli(["sim", "run", "--scenario", "nominal", "--seed", "2", "--cycles", "2", "--out", str(out), "--no-plots"])
    assert r.returncode == 0, r.stdout + r.stderr
    return out


def test_sim_run_writes_a_complete_run_record(run_dir):
    rec = runrecord.load(str(run_dir))
    m = rec.meta
    assert m["kind"] == "host-sim" and m["scenario"] == "nominal" and m["seed"] == 2 and m["cycles"] == 2
    assert m["config"]["grasp_dwell_ms"] == 350 and m["loop_period_ms"] == PERIOD_MS
    assert len(m["model_hash"]) == 64 and "mujoco" in m["versions"] and "pot" in m["plant_params"]
    for c in rec.cycles:
        assert c["outcome"] == "placed" and c["job"]["part_width_um"] == 25000
        rows = rec.cycle_ticks(c["cycle"])
        t = rec.col(rows, "t_ms")
        assert len(rows) > 8000 // PERIOD_MS and set((t[1:] - t[:-1]).tolist()) == {PERIOD_MS}   # every tick
        assert rec.col(rows, "pulse4_us").min() > 0
        kinds = [e[2] for e in rec.events[c["cycle"]]]
        assert len(kinds) >= 8
    # issue 3's files are still there
    assert (run_dir / "report.json").exists() and (run_dir / "trajectory.csv").exists()


def _copy(run_dir, tmp_path):
    d = tmp_path / "copy"
    shutil.copytree(run_dir, d)
    return d


@pytest.mark.parametrize("damage,needle", [
    ("rm_ticks", "missing ticks.csv"),
    ("drop_column", "missing column switch_pressed"),
    ("bad_json", "run.json is not valid JSON"),
    ("cut_ticks", "truncated"),
    ("cut_cycles", "truncated"),
])
def test_a_damaged_run_is_a_clear_error(run_dir, tmp_path, damage, needle):
    d = _copy(run_dir, tmp_path)
    if damage == "rm_ticks":
        (d / "ticks.csv").unlink()
    elif damage == "drop_column":
        lines = (d / "ticks.csv").read_text().splitlines()
        i = lines[0].split(",").index("switch_pressed")
        (d / "ticks.csv").write_text("\n".join(",".join(x for k, x in enumerate(l.split(",")) if k != i)
                                               for l in lines) + "\n")
    elif damage == "bad_json":
        (d / "run.json").write_text((d / "run.json").read_text()[:-40])
    elif damage == "cut_ticks":
        data = (d / "ticks.csv").read_bytes()
        (d / "ticks.csv").write_bytes(data[:len(data) // 2 + 7])
    elif damage == "cut_cycles":
        (d / "cycles.jsonl").write_text((d / "cycles.jsonl").read_text().splitlines()[0] + "\n")
    with pytest.raises(runrecord.RunRecordError) as e:
        runrecord.load(str(d))
    assert needle in str(e.value)
    for verb in (["replay", str(d)], ["compare", str(run_dir), str(d), "--out", str(tmp_path / "c")],
                 ["fit", str(d), "--out", str(tmp_path / "p.json")]):
        r = _cli(verb)
        assert r.returncode == 2 and needle in r.stderr and "Traceback" not in r.stderr, (verb, r.stderr)


def test_not_a_directory(tmp_path):
    r = _cli(["replay", str(tmp_path / "nope")])
    assert r.returncode == 2 and "not a run directory" in r.stderr and "Traceback" not in r.stderr
