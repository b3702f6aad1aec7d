# Unit quaternions with the component order in every name, because two orders meet here:
# MuJoCo stores (w, x, y, z); scipy and many VR/robotics libraries use (x, y, z, w). Everything in
# surepick.host.teleop is wxyz; the two converters below are the only place the order changes.
import math

import numpy as np


def wxyz_to_xyzw(q_wxyz):
    q = np.asarray(q_wxyz, dtype=float)
    return np.array([q[1], q[2], q[3], q[0]])


def xyzw_to_wxyz(q_xyzw):
    q = np.asarray(q_xyzw, dtype=float)
    return np.array([q[3], q[0], q[1], q[2]])


def normalize_wxyz(q_wxyz):
    q = np.asarray(q_wxyz, dtype=float)
    n = math.sqrt(float(q @ q))
    if not n > 0.0:
        raise ValueError("quaternion of zero length")
    return q / n


def canonical_wxyz(q_wxyz):
    # q and -q are the same rotation; pick w >= 0 so comparisons and logs are stable.
    q = normalize_wxyz(q_wxyz)
    return -q if q[0] < 0.0 else q


def mul_wxyz(a, b):
    # Hamilton product a * b (apply b, then a, when both rotate vectors as q v q*).
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return np.array([
        aw * bw - ax * bx - ay * by - az * bz,
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
    ])


def conj_wxyz(q):
    return np.array([q[0], -q[1], -q[2], -q[3]], dtype=float)


def from_axis_angle_wxyz(axis, angle_rad):
    a = np.asarray(axis, dtype=float)
    a = a / math.sqrt(float(a @ a))
    h = angle_rad / 2.0
    return np.concatenate(([math.cos(h)], math.sin(h) * a))


def mat_to_wxyz(r):
    # Rotation matrix -> unit quaternion (Shepperd's method: branch on the largest of w, x, y, z
    # so the square root never sees a small, cancellation-prone argument).
    r = np.asarray(r, dtype=float)
    tr = r[0, 0] + r[1, 1] + r[2, 2]
    if tr > 0.0:
        s = 2.0 * math.sqrt(1.0 + tr)
        q = [0.25 * s, (r[2, 1] - r[1, 2]) / s, (r[0, 2] - r[2, 0]) / s, (r[1, 0] - r[0, 1]) / s]
    elif r[0, 0] > r[1, 1] and r[0, 0] > r[2, 2]:
        s = 2.0 * math.sqrt(1.0 + r[0, 0] - r[1, 1] - r[2, 2])
        q = [(r[2, 1] - r[1, 2]) / s, 0.25 * s, (r[0, 1] + r[1, 0]) / s, (r[0, 2] + r[2, 0]) / s]
    elif r[1, 1] > r[2, 2]:
        s = 2.0 * math.sqrt(1.0 + r[1, 1] - r[0, 0] - r[2, 2])
        q = [(r[0, 2] - r[2, 0]) / s, (r[0, 1] + r[1, 0]) / s, 0.25 * s, (r[1, 2] + r[2, 1]) / s]
    else:
        s = 2.0 * math.sqrt(1.0 + r[2, 2] - r[0, 0] - r[1, 1])
        q = [(r[1, 0] - r[0, 1]) / s, (r[0, 2] + r[2, 0]) / s, (r[1, 2] + r[2, 1]) / s, 0.25 * s]
    return canonical_wxyz(q)


def wxyz_to_mat(q_wxyz):
    w, x, y, z = normalize_wxyz(q_wxyz)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def nlerp_wxyz(a, b, alpha):
    # Normalised linear interpolation from a towards b by alpha (0..1), along the short way
    # (b is flipped into a's hemisphere first). Cheap, and for the small per-tick steps of a
    # filter indistinguishable from slerp.
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if float(a @ b) < 0.0:
        b = -b
    return normalize_wxyz((1.0 - alpha) * a + alpha * b)


def angle_between_wxyz(a, b):
    # Rotation angle (rad) that takes a to b.
    d = abs(float(normalize_wxyz(a) @ normalize_wxyz(b)))
    return 2.0 * math.acos(min(1.0, d))
