# The workspace clamp: a coarse, always-convex-in-cylinder-coordinates envelope the arm's target
# must stay inside (radius from the base axis, height above the table, base yaw, tool pitch).
# It keeps targets off the base column and the table before the finer reachability clamp
# (reach.py) looks at them. Millimetres and degrees.
import math

import numpy as np


class Workspace:
    def __init__(self, r_min_mm=80.0, r_max_mm=290.0, z_min_mm=5.0, z_max_mm=260.0,
                 yaw_max_deg=88.0, pitch_min_deg=-90.0, pitch_max_deg=0.0):
        if not (0 < r_min_mm < r_max_mm and z_min_mm < z_max_mm and 0 < yaw_max_deg <= 90
                and pitch_min_deg <= pitch_max_deg):
            raise ValueError("workspace limits are inconsistent")
        self.r_min_mm, self.r_max_mm = float(r_min_mm), float(r_max_mm)
        self.z_min_mm, self.z_max_mm = float(z_min_mm), float(z_max_mm)
        self.yaw_max_deg = float(yaw_max_deg)
        self.pitch_min_deg, self.pitch_max_deg = float(pitch_min_deg), float(pitch_max_deg)

    @classmethod
    def for_arm(cls, arm):
        # An arm description's envelope: from its minimum radius to its links laid out straight,
        # from its lowest jaw height (5 mm above it) to its links pointing up; the pitch wherever
        # the kind lets the tool be (a tool the arm sets itself is left to its own IK).
        reach = arm.S + arm.U + arm.F + arm.T
        pitch = (-90.0, 0.0) if arm.free_pitch else (-180.0, 180.0)
        return cls(r_min_mm=max(arm.min_radius_mm, 1.0), r_max_mm=reach, z_min_mm=arm.min_z_mm + 5.0,
                   z_max_mm=arm.H + arm.U + arm.F + arm.T, pitch_min_deg=pitch[0], pitch_max_deg=pitch[1])

    def clamp(self, pos_mm, pitch_deg):
        # -> (pos_mm, pitch_deg, clamped)
        x, y, z = (float(v) for v in pos_mm)
        r = math.hypot(x, y)
        yaw = math.degrees(math.atan2(y, x)) if r > 1e-9 else 0.0
        r2 = min(max(r, self.r_min_mm), self.r_max_mm)
        yaw2 = min(max(yaw, -self.yaw_max_deg), self.yaw_max_deg)
        z2 = min(max(z, self.z_min_mm), self.z_max_mm)
        p2 = min(max(float(pitch_deg), self.pitch_min_deg), self.pitch_max_deg)
        if r2 == r and yaw2 == yaw and z2 == z and p2 == pitch_deg:
            return np.array([x, y, z]), float(pitch_deg), False
        a = math.radians(yaw2)
        return np.array([r2 * math.cos(a), r2 * math.sin(a), z2]), p2, True
