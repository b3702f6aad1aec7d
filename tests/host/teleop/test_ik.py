# The two IK solvers against each other and against MuJoCo's forward kinematics of the generated reference model (sim/arm_model.py)
# (the independent oracle for the shared analytic kinematics).
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from surepick.shared_fsm import kinematics as kin
from surepick.host.teleop import reach
from surepick.host.teleop.ik import ArmModel, DlsIK, analytic


_ARM = ArmModel()


def _angle_diff(a, b):
    return abs((a - b + 180.0) % 360.0 - 180.0)


@pytest.fixture(scope="module")
def arm():
    return ArmModel()


joint_angles = st.tuples(st.floats(-90, 90), st.floats(0, 180), st.floats(-180, 0), st.floats(-180, 0))


@settings(max_examples=200)
@given(joint_angles)
def test_analytic_forward_matches_mujoco(q):
    mj = _ARM.fk(q)
    an = kin.forward(list(q))
    assert np.allclose(mj[:3], an[:3], atol=1e-6)
    assert _angle_diff(mj[3], an[3]) < 1e-6


def reachable_poses(elbow_margin_deg=0.0):
    # Poses built from joint angles inside the limits that the analytic IK accepts; optionally
    # with the elbow kept away from fully folded (-180) and fully stretched (0), where the arm is
    # singular and joint angles are not determined to a hundredth of a degree by the pose.
    def ok(q):
        if not -180.0 + elbow_margin_deg <= q[2] <= -elbow_margin_deg:
            return False
        p = kin.forward(list(q))
        try:
            reach.solve(p[:3], p[3])
            return True
        except kin.Unreachable:
            return False
    return joint_angles.filter(ok).map(lambda q: kin.forward(list(q)))


@settings(max_examples=150)
@given(reachable_poses())
def test_analytic_inverse_lands_on_the_pose_in_mujoco(pose):
    q = analytic(pose[:3], pose[3])
    mj = _ARM.fk(q)
    assert np.allclose(mj[:3], pose[:3], atol=1e-6)
    assert _angle_diff(mj[3], pose[3]) < 1e-6


@settings(max_examples=100)
@given(reachable_poses(elbow_margin_deg=15.0), st.tuples(*[st.floats(-8.0, 8.0)] * 4))
def test_dls_agrees_with_analytic_from_a_nearby_seed(pose, noise):
    q_an = np.array(analytic(pose[:3], pose[3]))
    ik = DlsIK(_ARM)
    seed = np.clip(q_an + np.array(noise), [-90, 0, -180, -180], [90, 180, 0, 0])
    q, iters, resid_mm, resid_deg = ik.solve(pose[:3], pose[3], seed)
    assert resid_mm < 0.02 and resid_deg < 0.02
    assert np.allclose(_ARM.fk(q)[:3], pose[:3], atol=0.02)
    # The same solution as the analytic IK, not another branch: DLS stops within its residual
    # (0.02 mm, 0.02 deg), which allows the joints up to ~0.05 deg from the target's analytic
    # solution (the wrist takes the pitch error plus the shoulder's and elbow's), so compare
    # with the analytic solution of the pose DLS actually reached, to numerical precision.
    reached = _ARM.fk(q)
    pitch = pose[3] + (reached[3] - pose[3] + 180.0) % 360.0 - 180.0    # the same turn as the target's
    q_reached = np.array(analytic(reached[:3], pitch))
    assert np.max(np.abs(q - q_reached)) < 1e-3, (q, q_reached)
    assert np.max(np.abs(q - q_an)) < 0.1, (q, q_an)


def test_dls_is_kinematics_only(arm):
    # mj_forward inside the iterations, never mj_step: model time does not advance, nothing moves.
    ik = DlsIK(arm)
    t0 = float(arm.d.time)
    q, iters, resid, _ = ik.solve([150.0, 20.0, 60.0], -90.0, [0, 90, -90, -90])
    assert iters > 0 and resid < 0.02
    assert float(arm.d.time) == t0
    assert not np.any(arm.d.qvel)


def test_dls_warm_start_converges_in_a_few_iterations(arm):
    ik = DlsIK(arm)
    q = np.array([0.0, 90.0, -90.0, -90.0])
    iters = []
    for k in range(50):        # a 0.2 m/s stream at 100 Hz: 2 mm per solve
        target = [100.0 + 2.0 * k * 0.7, 2.0 * k * 0.7, 80.0 - k * 0.5]
        q, n, resid, _ = ik.solve(target, -90.0, q)
        iters.append(n)
        assert resid < 0.02
    assert max(iters) <= 5
