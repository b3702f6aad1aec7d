# Every preset's analytic kinematics (shared_fsm/arm.py, what the board runs):
#   IK o FK is the identity within 0.01 mm / 0.01 deg over the workspace (hypothesis, CPython;
#   the same check under MicroPython is tests/host/arms/test_kinematics_mpy.py);
#   the generated MuJoCo model's sites (jaw centre, wrist point, finger tips) equal the firmware's
#   FK at 1,000 random joint configurations within 0.1 mm, MuJoCo's kinematics as the oracle.
import math
import random

import mujoco
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from surepick.host.arms import presets
from surepick.shared_fsm import arm as arm_mod
from surepick.sim import arm_model

from tests.support.arm_joints import set_arm_joints



def nowrist_description():
    # No preset has the third kind (a serial arm without a wrist servo): the AL5D with its tool
    # fixed at -45 deg to the forearm stands in for one.
    d = presets.get("al5d_mg996r")
    d["name"], d["kind"] = "al5d_nowrist", "serial_nowrist"
    d["geometry"]["wrist_fixed_deg"] = -45.0
    del d["joints"]["wrist"], d["servos"]["wrist"], d["bench"]["home_wrist_deg"]
    return d


DESCRIPTIONS = {name: presets.get(name) for name in presets.names()}
DESCRIPTIONS["al5d_nowrist"] = nowrist_description()
PRESETS = sorted(DESCRIPTIONS)
ARMS = {name: arm_mod.validate(d) for name, d in DESCRIPTIONS.items()}


def random_q(arm, draw):
    # Joint angles inside the (coupled) limits: each joint drawn in its range given the earlier
    # ones; kinds without a wrist servo keep slot 3 at 0.
    q = [0.0, 0.0, 0.0, 0.0]
    for j in range(len(arm.joint_names)):
        ci = arm.coupled_index(j)
        lo, hi = arm.limit(j, q[ci] if ci >= 0 else 0.0)
        if lo >= hi:
            return None
        q[j] = lo + (hi - lo) * draw()
    return q


def in_workspace(arm, q):
    # The IK's own checks (table, base column) and its one branch: the elbow bent down, the jaw
    # in front of the base axis (reaching over the back is the same pose with the base turned
    # by 180 deg, which the IK reports instead).
    x, y, z, _ = arm.forward(q)
    yaw = math.radians(q[0])
    r_signed = x * math.cos(yaw) + y * math.sin(yaw)
    if r_signed < arm.min_radius_mm + 1e-6 or z < arm.min_z_mm + 1e-6:
        return False
    rel = q[2] - q[1] if arm.kind == "parallel" else q[2] + (math.degrees(arm.phi) if arm.kind == "serial_nowrist" else 0.0)
    return -179.9 < rel < -0.1


@pytest.mark.parametrize("name", PRESETS)
# (the workspace is a fraction of the joint box: most draws are filtered, on purpose)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much])
@given(u=st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=4, max_size=4))
def test_ik_of_fk_is_the_identity(name, u):
    arm = ARMS[name]
    it = iter(u)
    q = random_q(arm, lambda: next(it))
    assume(q is not None and in_workspace(arm, q))
    pose = arm.forward(q)
    q2 = arm.inverse(*pose)
    for j in range(len(arm.joint_names)):
        assert abs(q2[j] - q[j]) < 0.01, (name, q, q2)
    back = arm.forward(q2)
    for i in range(3):
        assert abs(back[i] - pose[i]) < 0.01, (name, pose, back)
    assert abs(back[3] - pose[3]) < 0.01


def _set_qpos(m, d, arm, q, jaw_mm):
    set_arm_joints(m, d, arm, q)
    for f in ("finger_l", "finger_r"):
        d.qpos[m.jnt_qposadr[m.joint(f).id]] = jaw_mm / 2000.0


@pytest.mark.parametrize("name", PRESETS)
def test_generated_model_sites_equal_the_firmware_fk(name):
    arm = ARMS[name]
    m = arm_model.arm_spec(arm).compile()
    d = mujoco.MjData(m)
    rng = random.Random(20)
    sites = {s: m.site(s).id for s in ("jaw_centre", "wrist_point", "tip_l", "tip_r")}
    worst = 0.0
    n = 0
    while n < 1000:
        q = random_q(arm, rng.random)
        if q is None:
            continue
        jaw = rng.uniform(0.0, arm.gripper["jaw_max_mm"])
        _set_qpos(m, d, arm, q, jaw)
        mujoco.mj_fwdPosition(m, d)
        wrist, centre, tool, left = arm.frame(q)
        x, y, z, pitch = arm.forward(q)
        tip_l, tip_r = arm.finger_tips(q, jaw)
        for site, want in (("jaw_centre", (x, y, z)), ("wrist_point", wrist), ("tip_l", tip_l), ("tip_r", tip_r)):
            got = d.site_xpos[sites[site]] * 1000.0
            err = float(np.max(np.abs(got - np.array(want))))
            worst = max(worst, err)
            assert err < 0.1, (name, site, q, got, want)
        # the tool's x axis in MuJoCo is the FK's tool direction (the pitch)
        got_dir = d.site_xmat[sites["jaw_centre"]].reshape(3, 3)[:, 0]
        assert np.max(np.abs(got_dir - np.array(tool))) < 1e-6
        if arm.kind == "parallel":
            # the hand-level tendon, MuJoCo's own length, is the pitch the description says
            t = m.tendon("hand_level").id
            assert abs(math.degrees(d.ten_length[t]) - arm.geo["hand_pitch_deg"]) < 1e-6
            # the elbow servo's tendon is the forearm's absolute angle (the servo's joint slot)
            assert abs(math.degrees(d.actuator_length[m.actuator("elbow").id]) - q[2]) < 1e-6
        n += 1
    assert worst < 0.1


def test_unreachable_poses_name_the_reason():
    arm = ARMS["reference"]
    with pytest.raises(arm_mod.Unreachable, match="too far"):
        arm.inverse(500.0, 0.0, 50.0, -90.0)
    with pytest.raises(arm_mod.Unreachable, match="below the table"):
        arm.inverse(150.0, 0.0, -5.0, -90.0)
    with pytest.raises(arm_mod.Unreachable, match="too close"):
        arm.inverse(30.0, 0.0, 50.0, -90.0)
    with pytest.raises(arm_mod.Unreachable, match="joint limit.*base"):
        arm.inverse(-150.0, 10.0, 50.0, -90.0)


def test_coupled_limit_refuses_what_the_linkage_cannot_do():
    # EEZYbot MK2: at shoulder 39 deg the forearm may go down to 0.3245 * 39 - 70.768 = -58.1 deg
    # (easyEEZYbotARM's q3 limit, made absolute); at 120 deg only to -31.8 deg.
    arm = ARMS["eezybot_mk2"]
    lo39, hi39 = arm.limit(2, 39.0)
    lo120, hi120 = arm.limit(2, 120.0)
    assert abs(lo39 - (-58.1125)) < 1e-3 and abs(hi39 - (-2.0875)) < 1e-3
    assert abs(lo120 - (-31.828)) < 1e-3 and abs(hi120 - 20.876) < 1e-3
    arm.check_limits([0.0, 120.0, -30.0, 0.0])
    with pytest.raises(arm_mod.Unreachable, match="elbow"):
        arm.check_limits([0.0, 120.0, -40.0, 0.0])


def test_reference_kinematics_by_hand():
    # Hand calculation (docs/conventions.md): shoulder up, elbow -90, wrist -90: the jaw
    # centre sits 100 mm out at 70 + 105 - 95 = 80 mm, pointing straight down.
    arm = ARMS["reference"]
    x, y, z, p = arm.forward([0.0, 90.0, -90.0, -90.0])
    assert abs(x - 100.0) < 1e-9 and abs(y) < 1e-9 and abs(z - 80.0) < 1e-9 and abs(p + 90.0) < 1e-9
    wrist, centre, tool, left = arm.frame([30.0, 90.0, -90.0, -90.0])
    assert np.allclose(wrist, (100 * math.cos(math.radians(30)), 100 * math.sin(math.radians(30)), 175.0))
    assert np.allclose(tool, (0.0, 0.0, -1.0), atol=1e-12)
    tl, tr = arm.finger_tips([0.0, 90.0, -90.0, -90.0], 30.0)
    assert np.allclose(tl, (100.0, 15.0, 70.0)) and np.allclose(tr, (100.0, -15.0, 70.0))
