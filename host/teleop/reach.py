# Reachability clamp on the shared analytic kinematics (shared_fsm/kinematics.py, the board's
# own IK): a target the arm cannot reach is replaced by the nearest reachable pose, and the
# caller is told so; it never jumps.
#   1. reachable as asked: done;
#   2. else, keeping the tool pitch and base yaw, pull the wrist point radially onto the ring
#      the upper arm and forearm can reach (the nearest point for a too-far / too-close target);
#   3. else (a joint limit, the table, the base column) the farthest reachable point on the
#      straight line from the last reachable target towards the asked one (bisection).
# A margin keeps the elbow bent: a fully stretched arm is singular and slow to steer.
import math

import numpy as np

from surepick.shared_fsm import kinematics as kin

L1, L2, L3, H = kin.UPPER_ARM_MM, kin.FOREARM_MM, kin.WRIST_TO_JAW_MM, kin.BASE_HEIGHT_MM
REACH_MARGIN_MM = 2.0
_BISECT_STEPS = 20


class NotReachable(ValueError):
    pass


def solve(pos_mm, pitch_deg, margin_mm=REACH_MARGIN_MM):
    # Joint angles (deg) for the pose, or raise kinematics.Unreachable. Also refuses a wrist point
    # within margin_mm of full stretch.
    x, y, z = (float(v) for v in pos_mm)
    q = kin.inverse(x, y, z, float(pitch_deg))
    p = math.radians(pitch_deg)
    rw = math.hypot(x, y) - L3 * math.cos(p)
    zw = z - L3 * math.sin(p) - H
    if math.hypot(rw, zw) > L1 + L2 - margin_mm:
        raise kin.Unreachable(kin.TOO_FAR, "within %.1f mm of full stretch" % margin_mm)
    return q


def _try(pos_mm, pitch_deg):
    try:
        return solve(pos_mm, pitch_deg)
    except kin.Unreachable:
        return None


def _radial(pos_mm, pitch_deg):
    x, y, z = (float(v) for v in pos_mm)
    yaw = math.atan2(y, x)
    p = math.radians(pitch_deg)
    rw = math.hypot(x, y) - L3 * math.cos(p)
    zw = z - L3 * math.sin(p) - H
    d = math.hypot(rw, zw)
    d_max = L1 + L2 - REACH_MARGIN_MM - 0.01
    d_min = abs(L1 - L2) + 0.01
    if d_min <= d <= d_max or d == 0.0:
        return None
    k = (d_max if d > d_max else d_min) / d
    r2 = rw * k + L3 * math.cos(p)
    z2 = zw * k + L3 * math.sin(p) + H
    return np.array([r2 * math.cos(yaw), r2 * math.sin(yaw), z2])


def nearest_reachable(pos_mm, pitch_deg, last_ok):
    # -> (pos_mm, pitch_deg, q_deg, clamped, reason). last_ok: (pos_mm, pitch_deg) known reachable.
    pos_mm = np.asarray(pos_mm, dtype=float)
    try:
        return pos_mm, float(pitch_deg), solve(pos_mm, pitch_deg), False, ""
    except kin.Unreachable as e:
        reason = kin.REASON_NAMES[e.code]
    radial = _radial(pos_mm, pitch_deg)
    if radial is not None:
        q = _try(radial, pitch_deg)
        if q is not None:
            return radial, float(pitch_deg), q, True, reason
    if last_ok is None:
        raise NotReachable("no reachable pose to fall back on (%s)" % reason)
    a_pos, a_pitch = np.asarray(last_ok[0], dtype=float), float(last_ok[1])
    q_lo = _try(a_pos, a_pitch)
    if q_lo is None:
        raise NotReachable("the last reachable pose is not reachable any more")
    lo, hi = 0.0, 1.0
    for _ in range(_BISECT_STEPS):
        mid = 0.5 * (lo + hi)
        q = _try(a_pos + mid * (pos_mm - a_pos), a_pitch + mid * (pitch_deg - a_pitch))
        if q is None:
            hi = mid
        else:
            lo, q_lo = mid, q
    return a_pos + lo * (pos_mm - a_pos), a_pitch + lo * (pitch_deg - a_pitch), q_lo, True, reason
