# `--arm` on teleop and teach: the session's kinematics, reach, joint limits, simulated arm and
# job-file checks are the description's. A parallel arm (MeArm: the hand kept level) cannot follow
# the hand's pitch, and neither the DLS solver nor the feedforward model its linkage: the session
# follows position with the arm's own IK and says so; --ik dls is refused. The oracles: the
# stream's own displacement (written by hand below), MuJoCo's physics for where the jaw went, the
# MeArm bench's poses as the simulator's world lays them out.
import csv
import json
import subprocess

import numpy as np

from surepick.host.arms import files
from surepick.host.teleop import jobfile, reach
from surepick.host.teleop.sources.stream_file import write_jsonl
from surepick.shared_fsm import kinematics as kin
from surepick.sim.world import World
from tests.host.teleop.streams import HOME_MM, path_stream, smooth_step
from tests.host.teleop.test_teleop_cli import SUREPICK, _env

MOVE_MM = np.array([30.0, 20.0, 25.0])


def test_teleop_drives_a_parallel_arm_by_position_with_its_own_kinematics(tmp_path):
    write_jsonl(tmp_path / "s.jsonl", path_stream(lambda t: HOME_MM + MOVE_MM * smooth_step((t - 0.2) / 1.5), 2.5))
    out = tmp_path / "run"
    r = subprocess.run(SUREPICK + ["teleop", "--source", str(tmp_path / "s.jsonl"), "--target", "sim", "--arm",
                                   "mearm", "--part", "none", "--out", str(out)],
                       capture_output=True, text=True, env=_env(), timeout=300)
    assert r.returncode == 0, r.stderr
    assert "mearm is a parallel arm" in r.stderr and "position only" in r.stderr, r.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["ik"] == "analytic" and summary["feedforward"] is False and summary["reach_clamped_ticks"] == 0
    with open(out / "teleop.csv") as f:
        rows = list(csv.DictReader(f))
    xyz = ("x_mm", "y_mm", "z_mm")
    first = np.array([float(rows[0]["target_" + k]) for k in xyz])
    last = np.array([float(rows[-1]["target_" + k]) for k in xyz])
    assert np.allclose(last - first, MOVE_MM, atol=0.5), last - first       # the hand's move, scaled
    mearm = files.load("mearm")[0]
    assert np.allclose(first, mearm.forward(list(mearm.home_deg()))[:3], atol=0.5)   # it started at its rest
    for row in rows:       # the MeArm's joints, never a wrist
        q = [float(row["cmd_q%d_deg" % i]) for i in range(4)]
        assert q[3] == 0.0
        mearm.check_limits(q)
    # the physics: the jaw (MuJoCo's plant) ends near the target, in the MeArm's servo bands
    meas = np.array([float(rows[-1]["meas_" + k]) for k in xyz])
    assert np.linalg.norm(meas - last) < 6.0, (meas, last)


def test_teleop_refuses_dls_on_an_arm_without_a_free_wrist(tmp_path):
    write_jsonl(tmp_path / "s.jsonl", path_stream(lambda t: HOME_MM, 0.3))
    r = subprocess.run(SUREPICK + ["teleop", "--source", str(tmp_path / "s.jsonl"), "--arm", "mearm", "--ik", "dls",
                                   "--part", "none"], capture_output=True, text=True, env=_env(), timeout=300)
    assert r.returncode == 2 and "--ik dls: mearm is a parallel arm" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    r = subprocess.run(SUREPICK + ["teleop", "--source", str(tmp_path / "s.jsonl"), "--arm", "no_such_arm"],
                       capture_output=True, text=True, env=_env(), timeout=300)
    assert r.returncode == 2 and "no_such_arm" in r.stderr and "Traceback" not in r.stderr, r.stderr


def _job(pick_um, place_um, width_um, pitch=None):
    def pose(p):
        return jobfile.Pose(p[0] / 1000.0, p[1] / 1000.0, p[2] / 1000.0, p[3] / 1000.0 if pitch is None else pitch)
    return jobfile.Job(pose(pick_um), pose(place_um), width_um / 1000.0, None, None, {})


def test_a_taught_job_is_checked_against_the_arm_it_is_for():
    mearm = files.load("mearm")[0]
    pick, place, width = World("nominal", seed=0, arm=mearm).job_um()            # the MeArm bench
    assert jobfile.check(_job(pick, place, width), arm=mearm) == []
    # the same job for the reference arm: the MeArm's pad is not where the reference reaches
    # with a level hand, or its checks say why; for the MeArm a tool pointing down cannot be held
    problems = jobfile.check(_job(pick, place, width, pitch=-90.0), arm=mearm)
    assert len(problems) == 2 and problems[0].startswith("pick: pitch -90.0 deg, but mearm is a parallel arm"), problems
    # a reference job on the MeArm: its pad is out of the MeArm's reach, named
    rpick, rplace, rwidth = World("nominal", seed=0).job_um()
    problems = jobfile.check(_job(rpick, rplace, rwidth), arm=mearm)
    assert problems and problems[0].startswith("pick: "), problems
    assert jobfile.check(_job(rpick, rplace, rwidth)) == []                         # the reference's own


def test_the_reach_clamp_is_the_arms_own():
    # 360 mm out, 100 mm up, the tool 30 deg down: past the reference's links laid straight (105 +
    # 100 + 95 = 300 mm) and inside the AL5D's (2 + 146.79 + 177.51 + 77.19 = 403.5 mm).
    al5d = files.load("al5d_mg996r")[0]
    pos, pitch, q, clamped, _ = reach.nearest_reachable([360.0, 0.0, 100.0], -30.0, None, arm=al5d)
    assert not clamped and np.allclose(al5d.forward(q)[:3], [360.0, 0.0, 100.0], atol=0.01)
    ref_ok = ([200.0, 0.0, 100.0], -30.0)
    pos, pitch, q, clamped, reason = reach.nearest_reachable([360.0, 0.0, 100.0], -30.0, ref_ok)
    assert clamped and np.linalg.norm(pos) < 300.0 + 1.0 and reason, (pos, reason)
    assert kin.REFERENCE.forward(q)[0] < 300.0
