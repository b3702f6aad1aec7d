# Frames. A tracked pose arrives as OpenVR gives it: a 3x4 row-major matrix [R | t] in OpenVR's
# tracking space, right-handed, Y up, metres. MuJoCo and the arm use Z up. The change of frame
# is a rotation about X by +90 degrees (Y -> Z, -Z -> Y), applied to the rotation matrix and to
# the position; quaternions are only made from the converted matrix afterwards (quat.py), never
# rotated directly (the reference design lost a night to doing that with the wrong order).
import math

import numpy as np

# Rotation about +X by +90 degrees: (x, y, z) in Y-up -> (x, -z, y) in Z-up.
R_YUP_TO_ZUP = np.array([[1.0, 0.0, 0.0],
                         [0.0, 0.0, -1.0],
                         [0.0, 1.0, 0.0]])
R_ZUP_TO_YUP = R_YUP_TO_ZUP.T

# An OpenVR controller points along its own -Z axis; +X is its right.
CONTROLLER_FORWARD = np.array([0.0, 0.0, -1.0])
CONTROLLER_RIGHT = np.array([1.0, 0.0, 0.0])
# The arm's tool points along the jaw_centre site's +X axis; +Y is its left (sim/arm_model.py).
TOOL_FORWARD = np.array([1.0, 0.0, 0.0])
TOOL_RIGHT = np.array([0.0, -1.0, 0.0])
_UP = np.array([0.0, 0.0, 1.0])

ORTHONORMAL_TOL = 1e-3


class PoseError(ValueError):
    pass


def pose_from_list(values):
    # 12 numbers, row-major 3x4 -> (R 3x3, t 3). NaN is allowed here; valid_pose() judges it.
    a = np.asarray(values, dtype=float)
    if a.shape != (12,) and a.shape != (3, 4):
        raise PoseError("a pose is 12 numbers (3x4 row-major), got shape %s" % (a.shape,))
    a = a.reshape(3, 4)
    return a[:, :3].copy(), a[:, 3].copy()


def pose_to_list(r, t):
    return np.hstack([np.asarray(r, dtype=float), np.asarray(t, dtype=float).reshape(3, 1)]).reshape(12).tolist()


def valid_pose(r, t):
    # Finite, and R a proper rotation (orthonormal, det +1) within a tracking system's rounding.
    if r is None or t is None:
        return False
    if not (np.all(np.isfinite(r)) and np.all(np.isfinite(t))):
        return False
    if np.max(np.abs(r @ r.T - np.eye(3))) > ORTHONORMAL_TOL:
        return False
    return abs(np.linalg.det(r) - 1.0) <= ORTHONORMAL_TOL


def yup_to_zup(r, t):
    # Pose in OpenVR's Y-up frame -> the same physical pose in a Z-up frame. The controller's
    # own axes are kept: only the world the pose is expressed in changes (left-multiplication).
    return R_YUP_TO_ZUP @ r, R_YUP_TO_ZUP @ t


def zup_to_yup(r, t):
    return R_ZUP_TO_YUP @ r, R_ZUP_TO_YUP @ t


def rot_z(angle_deg):
    c, s = math.cos(math.radians(angle_deg)), math.sin(math.radians(angle_deg))
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def apply_heading(r, t, heading_deg):
    # Where the operator faces, relative to the arm: a turn about the vertical. OpenVR's forward
    # (-Z) becomes +Y in Z-up; heading -90 turns it onto the arm's forward (+X).
    h = rot_z(heading_deg)
    return h @ r, h @ t


def pitch_of(r, forward, right):
    # Pitch (deg) of the body axis `forward` about the body's `right` axis, measured from the
    # horizontal direction straight ahead (up x right): the tool pitch of docs/conventions.md
    # (0 = horizontal, -90 = straight down, -120 = tipped back past vertical). Measuring in the
    # plane the pitch turns in, rather than as an elevation, keeps it continuous through +-90,
    # where the tool usually is. Unaffected by yaw.
    r = np.asarray(r, dtype=float)
    f = r @ forward
    ahead = np.cross(_UP, r @ right)
    n = math.hypot(ahead[0], ahead[1])
    if n < 1e-9:        # right axis vertical (rolled 90 degrees): fall back to the elevation
        return math.degrees(math.atan2(f[2], math.hypot(f[0], f[1])))
    return math.degrees(math.atan2(f[2], (f[0] * ahead[0] + f[1] * ahead[1]) / n))


def tool_rotation(yaw_deg, pitch_deg):
    # The tool frame of the arm at base yaw and tool pitch: yaw about +Z, then pitch about the
    # arm's lateral axis, where positive pitch tips +X up (the joints turn about -Y in the arm's model, sim/arm_model.py).
    cp, sp = math.cos(math.radians(pitch_deg)), math.sin(math.radians(pitch_deg))
    pitch = np.array([[cp, 0.0, -sp], [0.0, 1.0, 0.0], [sp, 0.0, cp]])
    return rot_z(yaw_deg) @ pitch


def arm_to_openvr(r, t, heading_deg):
    # A pose in the arm's frame -> the OpenVR-frame pose that the pipeline (Y-up -> Z-up, then
    # the heading) turns back into it. Jog sources (keyboard, SpaceMouse) speak the stream's frame
    # this way, so every source feeds the same pipeline.
    h = rot_z(-heading_deg)
    return zup_to_yup(h @ r, h @ t)


def controller_rotation_arm(pitch_deg):
    # A controller held level, pointing along the arm's +x, tipped up by pitch (deg): its body
    # axes (X right, Y up, Z back) in the arm's frame.
    p = math.radians(pitch_deg)
    forward = np.array([math.cos(p), 0.0, math.sin(p)])
    right = np.array([0.0, -1.0, 0.0])
    z = -forward
    y = np.cross(z, right)
    return np.column_stack([right, y, z])
