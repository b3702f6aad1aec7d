# Frame conversion and quaternion helpers, checked against MuJoCo's own quaternion functions
# (mju_mat2Quat, mju_quat2Mat, mju_mulQuat) as the independent oracle.
import math

import mujoco
import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from surepick.host.teleop import coord_frames, quat

finite = st.floats(-1.0, 1.0, allow_nan=False)
quats = st.tuples(finite, finite, finite, finite).filter(lambda q: sum(v * v for v in q) > 1e-3)
positions = st.tuples(*[st.floats(-3.0, 3.0, allow_nan=False)] * 3)


def mj_mat(q_wxyz):
    out = np.zeros(9)
    mujoco.mju_quat2Mat(out, np.asarray(q_wxyz, dtype=float) / np.linalg.norm(q_wxyz))
    return out.reshape(3, 3)


def mj_quat(r):
    out = np.zeros(4)
    mujoco.mju_mat2Quat(out, np.asarray(r, dtype=float).reshape(9))
    return out


def same_rotation(a, b, tol=1e-9):
    return abs(abs(float(np.dot(a, b))) - 1.0) < tol


@given(quats, positions)
def test_converted_pose_is_a_proper_rotation(q, t):
    r = mj_mat(q)
    r2, t2 = coord_frames.yup_to_zup(r, np.array(t))
    assert np.allclose(r2 @ r2.T, np.eye(3), atol=1e-12)
    assert abs(np.linalg.det(r2) - 1.0) < 1e-12
    assert np.allclose(t2, [t[0], -t[2], t[1]])     # rotation about X by +90: (x, y, z) -> (x, -z, y)
    r3, t3 = coord_frames.zup_to_yup(r2, t2)
    assert np.allclose(r3, r) and np.allclose(t3, t)


def test_up_maps_to_up_and_forward_to_the_arm():
    assert np.allclose(coord_frames.R_YUP_TO_ZUP @ [0, 1, 0], [0, 0, 1])
    # a controller held upright: its +Y (up) axis stays up after the conversion and the heading
    r, _ = coord_frames.yup_to_zup(np.eye(3), np.zeros(3))
    r, _ = coord_frames.apply_heading(r, np.zeros(3), -90.0)
    assert np.allclose(r @ [0, 1, 0], [0, 0, 1])
    # OpenVR forward (-Z) is the arm's +x for an operator at heading -90, right (+X) is -y
    assert np.allclose(r @ [0, 0, -1], [1, 0, 0])
    assert np.allclose(r @ [1, 0, 0], [0, -1, 0])


@given(quats)
def test_converting_the_pose_and_its_quaternion_agree(q):
    r = mj_mat(q)
    r2, _ = coord_frames.yup_to_zup(r, np.zeros(3))
    # the rotation of the frame change as a quaternion (about X by +90 deg), composed by MuJoCo
    q_conv = np.array([math.cos(math.pi / 4), math.sin(math.pi / 4), 0.0, 0.0])
    composed = np.zeros(4)
    mujoco.mju_mulQuat(composed, q_conv, mj_quat(r))
    assert same_rotation(quat.mat_to_wxyz(r2), composed)
    assert same_rotation(quat.mul_wxyz(q_conv, quat.mat_to_wxyz(r)), composed)


@given(quats)
def test_mat_quat_conversions_match_mujoco(q):
    r = mj_mat(q)
    assert same_rotation(quat.mat_to_wxyz(r), mj_quat(r))
    assert quat.mat_to_wxyz(r)[0] >= 0.0
    assert np.allclose(quat.wxyz_to_mat(q), r, atol=1e-12)


@given(quats)
def test_wxyz_xyzw_round_trips(q):
    q = np.asarray(q, dtype=float)
    xyzw = quat.wxyz_to_xyzw(q)
    assert xyzw[3] == q[0] and list(xyzw[:3]) == list(q[1:])
    assert np.array_equal(quat.xyzw_to_wxyz(xyzw), q)
    assert np.array_equal(quat.wxyz_to_xyzw(quat.xyzw_to_wxyz(q)), q)


def test_identity_in_both_orders():
    assert list(quat.wxyz_to_xyzw([1, 0, 0, 0])) == [0, 0, 0, 1]
    assert list(quat.xyzw_to_wxyz([0, 0, 0, 1])) == [1, 0, 0, 0]


@given(quats, quats, st.floats(0.0, 1.0))
def test_nlerp_is_unit_and_goes_the_short_way(a, b, alpha):
    a = quat.normalize_wxyz(a)
    b = quat.normalize_wxyz(b)
    m = quat.nlerp_wxyz(a, b, alpha)
    assert abs(np.linalg.norm(m) - 1.0) < 1e-12
    assert quat.angle_between_wxyz(a, m) <= quat.angle_between_wxyz(a, b) + 1e-9
    assert same_rotation(quat.nlerp_wxyz(a, b, 0.0), a)
    assert same_rotation(quat.nlerp_wxyz(a, b, 1.0), b)


@given(st.floats(-90.0, 90.0), st.floats(-175.0, 175.0))
def test_pitch_is_continuous_through_straight_down(yaw, pitch):
    r = coord_frames.tool_rotation(yaw, pitch)
    assert abs(coord_frames.pitch_of(r, coord_frames.TOOL_FORWARD, coord_frames.TOOL_RIGHT) - pitch) < 1e-9
    hand = coord_frames.controller_rotation_arm(pitch)
    assert abs(coord_frames.pitch_of(hand, coord_frames.CONTROLLER_FORWARD, coord_frames.CONTROLLER_RIGHT) - pitch) < 1e-9


def test_valid_pose_refuses_nan_and_non_rotations():
    assert coord_frames.valid_pose(np.eye(3), np.zeros(3))
    assert not coord_frames.valid_pose(np.eye(3), np.array([0.0, math.nan, 0.0]))
    assert not coord_frames.valid_pose(np.diag([1.0, 1.0, -1.0]), np.zeros(3))     # a mirror, det -1
    assert not coord_frames.valid_pose(2.0 * np.eye(3), np.zeros(3))
