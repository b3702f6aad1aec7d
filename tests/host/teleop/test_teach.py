# Teaching a job (host/teleop/teach.py, `surepick teach`): marks from streams and keys, what a
# mark records and refuses, and end to end: a recorded teaching stream into the simulated arm
# gives a job file; `surepick sim run --job` with it places the part as the physics judge
# measures it, and so does `surepick job start --job --wait` on the firmware on the virtual board.
import json
import os
import pty
import subprocess
from types import SimpleNamespace

import numpy as np
import pytest

from surepick.host.teleop import jobfile
from surepick.host.teleop.sample import Buttons, Sample
from surepick.host.teleop.sources.base import SourceError
from surepick.host.teleop.sources.stream_file import read_csv, read_jsonl, write_csv, write_jsonl
from surepick.host.teleop.teach import Teacher
from tests.support.needs import NEEDS_MICROPYTHON
from tests.host.teleop.streams import teach_stream

from tests.support.cli import SUREPICK_BIN, headless_env as _env
SUREPICK = [SUREPICK_BIN]


# ---- marks in streams and keys ----

def test_marks_round_trip_through_jsonl_and_csv(tmp_path):
    s = [Sample(0.0, np.eye(4)[:3], Buttons(True, False, 0.0)),
         Sample(0.01, np.eye(4)[:3], Buttons(True, False, 0.4), mark="width"),
         Sample(0.02, None, Buttons(), mark="next")]
    write_jsonl(tmp_path / "s.jsonl", s)
    write_csv(tmp_path / "s.csv", s)
    for got in (read_jsonl(tmp_path / "s.jsonl"), read_csv(tmp_path / "s.csv")):
        assert [x.mark for x in got] == [None, "width", "next"]
    # a file without marks keeps the plain CSV header (older readers take it)
    write_csv(tmp_path / "plain.csv", s[:1])
    assert (tmp_path / "plain.csv").read_text().splitlines()[0].endswith(",grip")


def test_an_unknown_mark_is_named_with_its_line(tmp_path):
    p = tmp_path / "bad.jsonl"
    p.write_text('{"t": 0, "buttons": {}}\n{"t": 0.1, "buttons": {}, "mark": "pik"}\n')
    with pytest.raises(SourceError, match=r"bad.jsonl:2: mark must be one of pick_approach, pick, .*'pik'"):
        read_jsonl(p)


def test_keyboard_keys_mark_and_close_the_jaw_in_steps():
    from surepick.host.teleop.sources.keyboard import KeyboardSource
    master, slave = pty.openpty()
    try:
        kb = KeyboardSource(fd=slave, out=open(os.devnull, "w"), step_index=3)       # 5 mm steps
        try:
            kb.key("2")
            assert kb._sample(0.0).mark == "pick" and kb._sample(0.1).mark is None
            kb.key("n")
            assert kb._sample(0.2).mark == "next"
            kb.key("c")
            kb.key("c")
            assert kb._sample(0.3).buttons.grip == pytest.approx(10.0 / 40.0)    # 30 mm of 40
            kb.key("v")
            assert kb._sample(0.4).buttons.grip == pytest.approx(5.0 / 40.0)
        finally:
            kb.close()
    finally:
        os.close(master)
        os.close(slave)


# ---- what a mark records ----

class _Target:
    def __init__(self):
        self.pot = 30000

    def jaw_measured_um(self):
        return self.pot


def _tick(x, y, z, jaw_um, pitch=-90.0):
    return SimpleNamespace(target_mm=np.array([x, y, z]), target_pitch=pitch, jaw_um=jaw_um,
                           reach_clamped=False, reach_reason="")


def _mark(teacher, target, name, tick, t=1.0):
    res = SimpleNamespace(mark=name)
    teacher.sample(Sample(t, None), res, tick, SimpleNamespace(target=target))


def test_marks_record_the_commanded_pose_and_next_fills_the_gaps():
    said = []
    te, tg = Teacher(say=said.append), _Target()
    _mark(te, tg, "next", _tick(160, -60, 70.5, 40000))          # -> pick_approach
    _mark(te, tg, "next", _tick(160, -60, 15.5, 40000))          # -> pick
    tg.pot = 24100
    _mark(te, tg, "next", _tick(160, -60, 15.5, 23000))          # -> width, a light grip
    _mark(te, tg, "place", _tick(150, 80, 20.5, 0))
    _mark(te, tg, "place_approach", _tick(150, 80, 72.5, 0))
    assert [h["mark"] for h in te.history] == ["pick_approach", "pick", "width", "place", "place_approach"]
    job, problems = te.job(attempts=4, taught={"source": "test"})
    assert problems == []
    assert job.pick.as_tuple() == (160.0, -60.0, 15.5, -90.0) and job.place.as_tuple() == (150.0, 80.0, 20.5, -90.0)
    assert job.part_width_mm == 24.1
    assert job.approach_height_mm == 55.0              # the higher of 55 (pick) and 52 (place)
    assert job.max_attempts == 4 and job.taught["source"] == "test" and len(job.taught["marks"]) == 5
    _mark(te, tg, "next", _tick(0, 0, 0, 0))
    assert said[-1].startswith("teach: every mark is taken")


def test_width_needs_a_light_grip_on_something():
    said = []
    te, tg = Teacher(say=said.append), _Target()
    tg.pot = 30100
    _mark(te, tg, "width", _tick(160, -60, 15.5, 30000))         # following the command: nothing there
    assert "not gripping anything" in said[-1]
    tg.pot = 20000
    _mark(te, tg, "width", _tick(160, -60, 15.5, 0))             # squeezed: the pad gives
    assert "squeezes the part hard" in said[-1]
    assert "width" not in te.marks
    _mark(te, tg, "pick", _tick(160, -60, 15.5, 40000))
    _mark(te, tg, "place", _tick(150, 80, 20.5, 40000))
    job, problems = te.job()
    assert job is None and len(problems) == 1 and problems[0].startswith("width: not marked (the jaw squeezes")
    job, problems = te.job(width_mm=25.0)                          # --width instead
    assert problems == [] and job.part_width_mm == 25.0 and job.approach_height_mm is None


def test_a_taught_job_that_cannot_run_names_the_mark():
    te, tg = Teacher(), _Target()
    _mark(te, tg, "pick", _tick(160, -60, 5.0, 40000))            # fingers into the table
    _mark(te, tg, "pick_approach", _tick(180, -60, 60.0, 40000))  # 20 mm beside the pick
    job, problems = te.job(width_mm=25.0)
    assert job is None or problems
    text = "; ".join(problems)
    assert "place: not marked (key 5" in text
    _mark(te, tg, "place", _tick(150, 80, 20.5, 40000))
    job, problems = te.job(width_mm=25.0)
    assert any(p.startswith("pick_approach: 20.0 mm beside the pick pose") for p in problems), problems
    assert any(p.startswith("pick: the fingers would reach -5.0 mm") for p in problems), problems


# ---- end to end ----

@pytest.fixture(scope="module")
def taught(tmp_path_factory):
    d = tmp_path_factory.mktemp("teach")
    write_jsonl(d / "teach.jsonl", teach_stream())
    r = subprocess.run(SUREPICK + ["teach", "--source", str(d / "teach.jsonl"), "--target", "sim",
                                   "--out", str(d / "job.json"), "--log", str(d / "log")],
                       capture_output=True, text=True, env=_env(), timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    return d, r


def test_teaching_in_the_sim_writes_the_job_it_was_shown(taught):
    d, r = taught
    job = jobfile.load(d / "job.json")
    # where the stream took the tool (tests/host/teleop/streams.py: the reference pad and bin)
    assert np.allclose(job.pick.as_tuple(), (160.0, -60.0, 15.5, -90.0), atol=0.5)
    assert np.allclose(job.place.as_tuple(), (150.0, 80.0, 20.5, -90.0), atol=0.5)
    assert job.approach_height_mm == pytest.approx(55.0, abs=0.5)
    # the width from the pot with the jaw commanded 2 mm into the 25 mm cube: within 1.5 mm
    assert 23.5 <= job.part_width_mm <= 25.0, job.part_width_mm
    marks = [m["mark"] for m in json.loads((d / "job.json").read_text())["taught"]["marks"]]
    assert marks == ["pick_approach", "pick", "width", "place_approach", "place"]
    assert (d / "log" / "teleop.csv").exists() and "wrote " in r.stdout


def test_the_taught_job_places_the_part_in_the_sim(taught, tmp_path):
    d, _ = taught
    r = subprocess.run(SUREPICK + ["sim", "run", "--job", str(d / "job.json"), "--out", str(tmp_path / "run"),
                                   "--no-plots"], capture_output=True, text=True, env=_env(), timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    rep = json.loads((tmp_path / "run" / "report.json").read_text())
    c = rep["cycles"][0]
    assert c["fsm_outcome"] == "placed" and c["judge_outcome"] == "placed", c["judge_reason"]
    job = jobfile.load(d / "job.json")
    assert c["job"]["pick_um"] == list(job.pick.um()) and c["job"]["part_width_um"] == round(job.part_width_mm * 1000)
    assert c["judge"]["lifted_mm"] >= job.approach_height_mm - 5.0


@NEEDS_MICROPYTHON
def test_the_taught_job_places_the_part_on_the_virtual_board(taught, tmp_path):
    from surepick.host.engines.vboard_world import board_in_world
    from tests.support.vboard import Console, deploy_firmware
    from surepick.shared_fsm import link
    d, _ = taught
    job = jobfile.load(d / "job.json")
    flash = tmp_path / "flash"
    deploy_firmware(flash)
    b = board_in_world(flash, "nominal", 3)
    ps = b.world_service
    ps.judge.lift_height_mm = job.approach_height_mm      # the job's lift, as the board will do it
    with b:
        con = Console(b.address)
        ok = con.wait(lambda f: f.ftype == link.T_TELEMETRY, 60)
        con.close()
        assert ok is not None
        r = subprocess.run(SUREPICK + ["job", "start", "--job", str(d / "job.json"), "--port", b.address, "--wait"],
                           capture_output=True, text=True, env=_env(), timeout=300)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "approach_height_um: %d (from " % round(job.approach_height_mm * 1000) in r.stdout
        assert r.stdout.strip().endswith("cycle ended: placed")
        # the physics judge's view: resting in the bin for its hold time
        deadline = ps.now_ms + 3000
        import time
        t_end = time.monotonic() + 60
        while ps.now_ms < deadline and time.monotonic() < t_end:
            time.sleep(0.1)
        outcome, reason, details = ps.verdict()
    assert outcome == "placed", (reason, details)


# ---- bad input: named, and nothing runs ----

def _run(args, timeout=300):
    return subprocess.run(SUREPICK + args, capture_output=True, text=True, env=_env(), timeout=timeout)


def test_job_files_refused_before_anything_moves(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "surepick-job", "version": 1,
                               "pick": {"x_mm": 160.0, "y_mm": -60.0, "z_mm": 5.0},
                               "place": {"x_mm": 400.0, "y_mm": 0.0, "z_mm": 20.5}, "part_width_mm": 25.0}))
    # a port where nothing listens: had the command got that far, it would say so instead
    for args in (["job", "start", "--job", str(bad), "--port", "socket://127.0.0.1:9"],
                 ["sim", "run", "--job", str(bad), "--out", str(tmp_path / "run")]):
        r = _run(args)
        assert r.returncode == 2, r.stderr
        assert "pick: the fingers would reach -5.0 mm" in r.stderr and "place: pose unreachable (too far)" in r.stderr
    assert not (tmp_path / "run").exists()
    good = tmp_path / "good.json"
    jobfile.save(jobfile.from_dict({"format": "surepick-job", "version": 1,
                                    "pick": {"x_mm": 160.0, "y_mm": -60.0, "z_mm": 15.5},
                                    "place": {"x_mm": 150.0, "y_mm": 80.0, "z_mm": 20.5}, "part_width_mm": 25.0}), good)
    r = _run(["job", "start", "--job", str(good), "--width", "20", "--port", "socket://127.0.0.1:9"])
    assert r.returncode == 2 and "--job gives the poses, width and attempts: drop --width" in r.stderr
    r = _run(["sim", "run", "--out", str(tmp_path / "run")])
    assert r.returncode == 2 and "--scenario" in r.stderr


def test_teaching_without_the_marks_names_what_is_missing(tmp_path):
    from tests.host.teleop.streams import HOME_MM, waypoint_stream
    # only a pick is marked: the place and the width are missing; the marks are kept
    stream = waypoint_stream([(HOME_MM + [20.0, 0.0, -20.0], 1.0, 0.0, "pick")])
    write_jsonl(tmp_path / "s.jsonl", stream)
    out = tmp_path / "job.json"
    r = _run(["teach", "--source", str(tmp_path / "s.jsonl"), "--out", str(out), "--part", "none"])
    assert r.returncode == 1, r.stderr
    assert "place: not marked (key 5" in r.stderr and "width: not marked" in r.stderr
    assert not out.exists()
    kept = json.loads((tmp_path / "job.json.partial").read_text())
    assert [m["mark"] for m in kept["marks"]] == ["pick"] and len(kept["problems"]) == 2
