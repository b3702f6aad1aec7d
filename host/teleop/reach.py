# Reachability clamp on the shared analytic kinematics (the arm description's Arm, the board's
# own IK; None: the reference arm): a target the arm cannot reach is replaced by the nearest
# reachable pose, and the caller is told so; it never jumps.
#   1. reachable as asked: done;
#   2. else, keeping the tool pitch and base yaw, pull the wrist point radially onto the ring
#      the upper arm and forearm can reach (the nearest point for a too-far / too-close target;
#      a serial arm with a free wrist and the tool on its axis, the only kind that has that ring);
#   3. else (a joint limit, the table, the base column) the farthest reachable point on the
#      straight line from the last reachable target towards the asked one (bisection).
# A margin keeps the elbow bent: a fully stretched arm is singular and slow to steer.
import math

import numpy as np

from surepick.shared_fsm import kinematics as kin

REACH_MARGIN_MM = 2.0
_BISECT_STEPS = 20


class NotReachable(ValueError):
    pass


def _ring(arm):
    # (upper arm, forearm, tool, base height, shoulder forward) of an arm whose wrist point lies on
    # the tool axis behind a free wrist (a serial arm, tool_drop_mm 0); None for the others.
    if arm.kind != "serial" or arm.D != 0.0:
        return None
    return arm.U, arm.F, arm.T, arm.H, arm.S


def solve(pos_mm, pitch_deg, margin_mm=REACH_MARGIN_MM, arm=None):
    # Joint angles (deg) for the pose, or raise kinematics.Unreachable. Also refuses a wrist point
    # within margin_mm of full stretch.
    arm = arm or kin.REFERENCE
    x, y, z = (float(v) for v in pos_mm)
    q = arm.inverse(x, y, z, float(pitch_deg))
    ring = _ring(arm)
    if ring is not None:
        L1, L2, L3, H, S = ring
        p = math.radians(pitch_deg)
        rw = math.hypot(x, y) - S - L3 * math.cos(p)
        zw = z - L3 * math.sin(p) - H
        if math.hypot(rw, zw) > L1 + L2 - margin_mm:
            raise kin.Unreachable(kin.TOO_FAR, "within %.1f mm of full stretch" % margin_mm)
    return q


def _try(pos_mm, pitch_deg, arm):
    try:
        return solve(pos_mm, pitch_deg, arm=arm)
    except kin.Unreachable:
        return None


def _radial(pos_mm, pitch_deg, arm):
    ring = _ring(arm)
    if ring is None:
        return None
    L1, L2, L3, H, S = ring
    x, y, z = (float(v) for v in pos_mm)
    yaw = math.atan2(y, x)
    p = math.radians(pitch_deg)
    rw = math.hypot(x, y) - S - L3 * math.cos(p)
    zw = z - L3 * math.sin(p) - H
    d = math.hypot(rw, zw)
    d_max = L1 + L2 - REACH_MARGIN_MM - 0.01
    d_min = abs(L1 - L2) + 0.01
    if d_min <= d <= d_max or d == 0.0:
        return None
    k = (d_max if d > d_max else d_min) / d
    r2 = rw * k + S + L3 * math.cos(p)
    z2 = zw * k + L3 * math.sin(p) + H
    return np.array([r2 * math.cos(yaw), r2 * math.sin(yaw), z2])


def nearest_reachable(pos_mm, pitch_deg, last_ok, arm=None):
    # -> (pos_mm, pitch_deg, q_deg, clamped, reason). last_ok: (pos_mm, pitch_deg) known reachable.
    arm = arm or kin.REFERENCE
    pos_mm = np.asarray(pos_mm, dtype=float)
    try:
        return pos_mm, float(pitch_deg), solve(pos_mm, pitch_deg, arm=arm), False, ""
    except kin.Unreachable as e:
        reason = kin.REASON_NAMES[e.code]
    radial = _radial(pos_mm, pitch_deg, arm)
    if radial is not None:
        q = _try(radial, pitch_deg, arm)
        if q is not None:
            return radial, float(pitch_deg), q, True, reason
    if last_ok is None:
        raise NotReachable("no reachable pose to fall back on (%s)" % reason)
    a_pos, a_pitch = np.asarray(last_ok[0], dtype=float), float(last_ok[1])
    q_lo = _try(a_pos, a_pitch, arm)
    if q_lo is None:
        raise NotReachable("the last reachable pose is not reachable any more")
    lo, hi = 0.0, 1.0
    for _ in range(_BISECT_STEPS):
        mid = 0.5 * (lo + hi)
        q = _try(a_pos + mid * (pos_mm - a_pos), a_pitch + mid * (pitch_deg - a_pitch), arm)
        if q is None:
            hi = mid
        else:
            lo, q_lo = mid, q
    return a_pos + lo * (pos_mm - a_pos), a_pitch + lo * (pitch_deg - a_pitch), q_lo, True, reason
