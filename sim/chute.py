# The chute under the bin of the simulated nights (the feeder and tray scenarios): a part that
# has come to rest inside the bin, the gripper away from it, is counted; when the gripper next
# comes down to the bin (the next part on its way) the counted parts are taken out of it (where
# to: the caller's take(name)), so the bin never fills and a part let go never lands on another.
# The last part of a night, and the one part of a single cycle the judge follows, stay where they
# lie. Why: the reference bin's reachable floor holds six drop spots (scenarios.TRAY_DROPS); ten
# parts let go there piled a second layer above its 35 mm wall, and the fingers opening at the next
# spot pushed a part of that layer over the wall (a part the board had counted placed, found on the
# table). What the chute counts is ground truth, for the judge: the board never reads it.
import math

import mujoco

from surepick.sim import arm_model

CHECK_MS = 20            # how often the chute looks at the bin
CLEAR_MM = 80.0          # nothing is taken away while the jaw centre is this near the bin's centre,
ABOVE_MM = 30.0          # ... and less than this above its wall
REST_MM = 0.2            # a part that moved less than this between two looks is at rest


def near(plant, jaw_site, x_mm, y_mm, top_mm):
    # The jaw centre within CLEAR_MM of (x, y) and less than ABOVE_MM above top_mm.
    j = plant.d.site_xpos[jaw_site] * 1000.0
    return math.hypot(j[0] - x_mm, j[1] - y_mm) < CLEAR_MM and j[2] < top_mm + ABOVE_MM


class Chute:
    def __init__(self, plant, bin_xy_mm, bin_half_mm, bin_top_mm, take):
        # take(name): moves a counted part out of the bin
        self.plant = plant
        self.bin = (bin_xy_mm[0], bin_xy_mm[1], bin_half_mm, bin_top_mm)
        self.take = take
        self.binned = 0                      # parts that came to rest in the bin
        self.counted = []                    # those still in it, taken when the gripper comes back
        self.last = {}                       # each part's position at the last look
        self._jaw = plant.m.site("jaw_centre").id

    def pos(self, name):
        return [float(v) * 1000.0 for v in self.plant.d.xpos[self.plant.m.body(name).id]]

    def in_bin(self, p):
        bx, by, half, top = self.bin
        return abs(p[0] - bx) < half and abs(p[1] - by) < half and p[2] < top

    def look(self, names):
        # One look at the parts in `names` (those that may be in the bin).
        if near(self.plant, self._jaw, self.bin[0], self.bin[1], self.bin[3]):
            self.last = {}       # the gripper is at the bin: rest is judged afresh once it left
            taken, self.counted = self.counted, []
            for name in taken:
                self.take(name)
            return
        for name in names:
            if name in self.counted:
                continue
            p = self.pos(name)
            q = self.last.get(name)
            self.last[name] = p
            if q is None or not self.in_bin(p) or math.dist(p, q) > REST_MM:
                continue
            self.binned += 1
            self.counted.append(name)
            self.last.pop(name, None)


def set_down(plant, name, x_mm, y_mm, z_mm, yaw_deg):
    # Puts part `name` at rest at (x, y, z) turned yaw_deg (ground truth moved by the world).
    m, d = plant.m, plant.d
    j = m.joint(name + "_free")
    a, v = m.jnt_qposadr[j.id], m.jnt_dofadr[j.id]
    d.qpos[a:a + 3] = [x_mm / 1000.0, y_mm / 1000.0, z_mm / 1000.0]
    d.qpos[a + 3:a + 7] = arm_model.quat_yaw(yaw_deg)
    d.qvel[v:v + 6] = 0.0
    mujoco.mj_forward(m, d)


class TrayChute:
    # The tray scenario's chute: every part at rest in the bin is counted, and set on a shelf out
    # of the arm's reach (shelf_xy_mm, one spot each, in the order they go) when the next comes.
    def __init__(self, plant, names, bin_xy_mm, bin_half_mm, bin_top_mm, shelf_xy_mm, z_mm):
        self.names = list(names)
        self.shelf = list(shelf_xy_mm)
        self.z_mm = z_mm
        self.shelved = []                    # the parts taken, in order
        self.chute = Chute(plant, bin_xy_mm, bin_half_mm, bin_top_mm, self._take)
        self.plant = plant
        self.next_check = 0

    @property
    def binned(self):
        return self.chute.binned

    def _take(self, name):
        x, y = self.shelf[len(self.shelved)]
        set_down(self.plant, name, x, y, self.z_mm, 0.0)
        self.shelved.append(name)

    def step(self, now_ms):
        if now_ms < self.next_check:
            return
        self.next_check = now_ms + CHECK_MS
        self.chute.look([n for n in self.names if n not in self.shelved])
