# The run record carries the arm description (docs/run-record.md, "The arm"): run.json's
# arm_description is the whole description that ran; replay, compare and fit read it; an older
# record without it still reads, with a note; compare refuses two different arms.
import json
import shutil
import subprocess

import pytest

from surepick.host.arms import files
from surepick.host.records import runrecord
from tests.support.cli import SUREPICK_BIN


def _cli(args, timeout=900):
    return subprocess.run([SUREPICK_BIN] + [str(a) for a in args], capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("armruns")
    out = {}
    for name, arm in (("mearm", "mearm"), ("mearm2", "mearm"), ("reference", None)):
        d = root / name
        extra = ["--arm", arm] if arm else []
        r = _cli(["sim", "run", "--scenario", "nominal", "--seed", "3", "--no-plots", "--out", d] + extra)
        assert r.returncode == 0, r.stdout + r.stderr
        out[name] = d
    return out


def _meta(run):
    return json.loads((run / "run.json").read_text())


def _edit(src, dst, change):
    shutil.copytree(src, dst)
    meta = _meta(dst)
    change(meta)
    (dst / "run.json").write_text(json.dumps(meta))
    return dst


def test_the_record_holds_the_whole_description_that_ran(runs):
    meta = _meta(runs["mearm"])
    assert meta["arm"] == "mearm"
    assert meta["arm_description"] == files.load("mearm")[0].to_dict()     # every default filled in
    ref = _meta(runs["reference"])
    assert "arm" not in ref and ref["arm_description"]["name"] == "reference"
    assert ref["arm_description"]["geometry"]["upper_arm_mm"] == 105.0


def test_a_bad_description_in_run_json_is_named(runs, tmp_path):
    bad = _edit(runs["mearm"], tmp_path / "bad", lambda m: m["arm_description"]["geometry"].update(forearm_mm=-3))
    with pytest.raises(runrecord.RunRecordError) as e:
        runrecord.load(str(bad), ticks=False)
    assert "arm_description" in str(e.value) and "geometry.forearm_mm" in str(e.value), str(e.value)
    other = _edit(runs["mearm"], tmp_path / "other", lambda m: m.update(arm="eezybot_mk2"))
    with pytest.raises(runrecord.RunRecordError) as e:
        runrecord.load(str(other), ticks=False)
    assert "the name of arm_description ('mearm')" in str(e.value), str(e.value)


def test_compare_refuses_two_different_arms_naming_the_fields(runs, tmp_path):
    r = _cli(["compare", runs["mearm"], runs["reference"], "--out", tmp_path / "cmp"])
    assert r.returncode == 2, r.stdout + r.stderr
    assert "the runs are of different arms" in r.stderr and "'mearm'" in r.stderr and "'reference'" in r.stderr
    assert "kind" in r.stderr and "geometry." in r.stderr, r.stderr


def test_compare_notes_the_same_arm_described_differently(runs, tmp_path):
    fitted = _edit(runs["mearm2"], tmp_path / "fitted",
                   lambda m: m["arm_description"]["servo_models"]["MG90S"].update(band_deg=9.5))
    r = _cli(["compare", runs["mearm"], fitted, "--out", tmp_path / "cmp"])
    assert r.returncode == 0, r.stdout + r.stderr
    assert "note: the same arm, described differently (mearm vs mearm): servo_models.MG90S.band_deg differ" in r.stdout
    moved = _edit(runs["mearm2"], tmp_path / "moved",
                  lambda m: m["arm_description"]["geometry"].update(upper_arm_mm=82.0))
    r = _cli(["compare", runs["mearm"], moved, "--out", tmp_path / "cmp2"])
    assert r.returncode == 2 and "differ in geometry.upper_arm_mm" in r.stderr, r.stdout + r.stderr


def test_an_older_record_without_the_description_still_reads_with_a_note(runs, tmp_path):
    old = _edit(runs["mearm2"], tmp_path / "old", lambda m: m.pop("arm_description"))
    r = _cli(["compare", runs["mearm"], old, "--out", tmp_path / "cmp"])
    assert r.returncode == 0, r.stdout + r.stderr
    assert ("note: B (%s): the record holds no arm description (written before runs kept it): read as the preset "
            "'mearm' as this version describes it" % old) in r.stdout, r.stdout
    old_ref = _edit(runs["reference"], tmp_path / "old_ref", lambda m: m.pop("arm_description"))
    r = _cli(["compare", old, old_ref, "--out", tmp_path / "cmp2"])
    assert r.returncode == 2 and "the runs are of different arms" in r.stderr, r.stdout + r.stderr
    r = _cli(["replay", old])
    assert r.returncode == 0, r.stdout + r.stderr


def test_replay_runs_the_records_arm(tmp_path):
    # The MeArm with the 100 g part: its machine latches LIFT_SHORT at the lift's end, a check
    # worked out from the arm's kinematics (docs/arm-description.md). Replayed with the record's
    # arm it is the run, tick for tick; a machine without it (as replay had it) never latches.
    from surepick.host.records import replay
    from surepick.shared_fsm.config import Config
    run = tmp_path / "heavy"
    r = _cli(["sim", "run", "--scenario", "heavy", "--seed", "1", "--arm", "mearm", "--no-plots", "--out", run])
    assert "LIFT_SHORT" in r.stdout + r.stderr, r.stdout + r.stderr
    r = _cli(["replay", run])
    assert r.returncode == 0 and "1 of 1 cycle(s) reproduced exactly" in r.stdout, r.stdout + r.stderr
    rec = runrecord.load(str(run))
    without = replay.replay_cycle(rec, rec.cycles[0], Config(rec.meta["config"]), None)
    assert not without.identical()


def test_fit_reads_an_arm_that_is_no_preset_from_the_record(runs, tmp_path):
    def rename(m):
        m["arm"] = "my_mearm"
        m["arm_description"]["name"] = "my_mearm"
    mine = _edit(runs["mearm"], tmp_path / "mine", rename)
    r = _cli(["fit", mine, "--out", tmp_path / "plant.json", "--arm-out", tmp_path / "fitted.toml", "--max-evals", "4",
              "--cycles", "1"])
    assert r.returncode == 0, r.stdout + r.stderr
    assert "arm description my_mearm written to" in r.stdout, r.stdout
    gone = _edit(mine, tmp_path / "gone", lambda m: m.pop("arm_description"))
    r = _cli(["fit", gone, "--out", tmp_path / "plant2.json", "--max-evals", "4", "--cycles", "1"])
    assert r.returncode == 2 and "names the arm 'my_mearm', which is no preset" in r.stderr, r.stdout + r.stderr
