# Job files (host/teleop/jobfile.py, docs/job-file.md): what loads, what is refused and how the
# refusal names the pose. Reachability expectations come from the arm's geometry worked out here
# (link lengths from docs/conventions.md), not from the kinematics module under test.
import json
import math

import mujoco
import pytest

from surepick.shared_fsm import kinematics
from surepick.sim import arm_model
from surepick.host.teleop import jobfile

GOOD = {"format": "surepick-job", "version": 1,
        "pick": {"x_mm": 160.0, "y_mm": -60.0, "z_mm": 15.5, "pitch_deg": -90.0},
        "place": {"x_mm": 150.0, "y_mm": 80.0, "z_mm": 20.5, "pitch_deg": -90.0},
        "part_width_mm": 25.0}


def _with(**changes):
    d = json.loads(json.dumps(GOOD))
    for key, value in changes.items():
        if "." in key:
            a, b = key.split(".")
            if value is None:
                del d[a][b]
            else:
                d[a][b] = value
        elif value is None:
            d.pop(key, None)
        else:
            d[key] = value
    return d


def _problems(d):
    with pytest.raises(jobfile.JobFileError) as e:
        jobfile.from_dict(d, "j.json")
    return e.value.problems, str(e.value)


def test_the_reference_job_loads_and_round_trips(tmp_path):
    job = jobfile.from_dict(GOOD)
    assert job.link_job() == ((160000, -60000, 15500, -90000), (150000, 80000, 20500, -90000), 25000, None)
    assert job.config_overrides() == {}
    job.approach_height_mm = 55.0
    job.max_attempts = 4
    jobfile.save(job, tmp_path / "j.json")
    again = jobfile.load(tmp_path / "j.json")
    assert again == job and again.config_overrides() == {"approach_height_um": 55000}
    assert not list(tmp_path.glob("*.tmp"))


def test_pitch_defaults_to_pointing_down():
    job = jobfile.from_dict(_with(**{"pick.pitch_deg": None}))
    assert job.pick.pitch_deg == -90.0


def test_a_pose_out_of_reach_is_named_with_why():
    # Tool down at radius r: the wrist sits at radius r and 95 mm above the jaw centre; with the
    # shoulder 70 mm up, upper arm 105 and forearm 100 mm reach 205 mm from the shoulder.
    r = 150.0 + math.sqrt(205.0 ** 2 - (20.5 + 95.0 - 70.0) ** 2)      # just past full stretch
    probs, text = _problems(_with(**{"place.x_mm": r, "place.y_mm": 0.0}))
    assert len(probs) == 1 and probs[0].startswith("place: ") and "too far" in probs[0], probs
    assert text.startswith("j.json: place: ")


def test_the_approach_above_a_pose_must_be_reachable_too():
    # Tool down 190 mm out at z 15: the wrist 40 mm above the shoulder, 194 mm away (reachable);
    # at the default 60 mm approach above it, 100 mm above: 215 mm away (not).
    probs, _ = _problems(_with(**{"pick.x_mm": 190.0, "pick.y_mm": 0.0, "pick.z_mm": 15.0}))
    assert len(probs) == 1 and probs[0].startswith("pick: the approach 60.0 mm above it") and "too far" in probs[0]
    # a lower approach height in the file makes it reachable (10 mm: the wrist 50 mm up, 196 mm away)
    jobfile.from_dict(_with(**{"pick.x_mm": 190.0, "pick.y_mm": 0.0, "pick.z_mm": 15.0}, approach_height_mm=10.0))


def test_fingers_below_the_table_are_refused():
    probs, _ = _problems(_with(**{"pick.z_mm": 8.0}))       # tips 10 mm below the jaw centre: -2 mm
    assert len(probs) == 1 and probs[0].startswith("pick: the fingers would reach -2.0 mm"), probs
    probs, _ = _problems(_with(**{"place.z_mm": 10.5}))     # 0.5 mm: inside the 1 mm clearance
    assert probs[0].startswith("place: the fingers would reach 0.5 mm")
    jobfile.from_dict(_with(**{"pick.z_mm": 11.0}))         # 1 mm clear: fine


def test_jaw_range_attempts_and_approach_bounds():
    probs, _ = _problems(_with(part_width_mm=46.0))
    assert probs == ["part_width_mm: 46 is outside the jaw's range 0.001..45 mm"]
    probs, _ = _problems(_with(part_width_mm=0.0))
    assert probs[0].startswith("part_width_mm: 0 is outside")
    probs, _ = _problems(_with(max_attempts=10))
    assert probs == ["max_attempts: 10 is outside 1..9"]
    probs, _ = _problems(_with(max_attempts=2.5))
    assert probs[0].startswith("max_attempts: must be a whole number")
    probs, _ = _problems(_with(approach_height_mm=3.0))
    assert probs[0].startswith("approach_height_mm: 3 is outside 5..200")


def test_every_problem_is_listed_at_once():
    d = _with(**{"pick.x_mm": "far", "place.z_mm": None}, part_width_mm=None, colour="red", version=2)
    probs, _ = _problems(d)
    text = "\n".join(probs)
    for needle in ("version: this surepick reads version 1, got 2", "unknown key(s) colour",
                   "pick.x_mm: must be a finite number, got 'far'", "place.z_mm: missing",
                   "part_width_mm: missing"):
        assert needle in text, text


def test_files_that_are_not_jobs(tmp_path):
    p = tmp_path / "x.json"
    p.write_text("{not json")
    with pytest.raises(jobfile.JobFileError, match="not JSON"):
        jobfile.load(p)
    p.write_text("[1, 2]")
    with pytest.raises(jobfile.JobFileError, match="one JSON object"):
        jobfile.load(p)
    with pytest.raises(jobfile.JobFileError, match="cannot read it"):
        jobfile.load(tmp_path / "missing.json")


def test_finger_extent_matches_the_model():
    # The pads and finger plates in the reference arm's generated model, measured from the jaw centre site along the
    # gripper body's x axis (the tool axis) and its z axis (across the tool, in the arm's plane).
    m = arm_model.arm_spec(kinematics.REFERENCE).compile()
    d = mujoco.MjData(m)
    mujoco.mj_kinematics(m, d)
    site = m.site("jaw_centre").id
    centre = d.site_xpos[site]
    axes = d.site_xmat[site].reshape(3, 3)
    tip = across = 0.0
    for name in ("pad_l", "face_r", "finger_l_plate", "finger_r_plate"):
        g = m.geom(name).id
        rel = axes.T @ (d.geom_xpos[g] - centre)
        rot = axes.T @ d.geom_xmat[g].reshape(3, 3)
        half = m.geom_size[g]
        extent = abs(rot) @ half            # half extents of the box along the site's axes
        tip = max(tip, (rel[0] + extent[0]) * 1000.0)
        across = max(across, (abs(rel[2]) + extent[2]) * 1000.0)
    assert tip == pytest.approx(jobfile.FINGER_TIP_MM, abs=0.01)
    assert across == pytest.approx(jobfile.FINGER_HALF_MM, abs=0.01)
