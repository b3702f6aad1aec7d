# The feeder of the `feeder` scenario, and the chute under its bin: parts wait in a stash out of
# the arm's reach; a while after the part on the pad has left it (picked, or pushed off), the
# next one is set down on the pad, its delay, whether it comes at all and how far off the pad's
# centre from the scenario's seeded draws. A part that comes to rest in the bin is counted and
# goes back to the stash (the chute: a bin that never fills, so a night of any length needs only
# a few parts), except the first one, the part the judge follows, which stays where it lies. Part of the simulated world, not of the board: the board sees a part only through
# its own sensors when it grasps. What the feeder counts is ground truth, for the judge.
import math

import mujoco

from surepick.sim import arm_model

CHECK_MS = 20            # how often the feeder looks at the pad and the bin
LEFT_MM = 15.0           # a part this far above or beside where it was set down has left the pad
CLEAR_MM = 80.0          # nothing is set down or taken away while the jaw centre is this near,
ABOVE_MM = 30.0          # ... and less than this above the pad's part or the bin's wall
REST_MM = 0.2            # a part that moved less than this between two looks is at rest


class Feeder:
    def __init__(self, plant, names, stash_xy_mm, draws, pad_xy_mm, pad_top_mm, height_mm, bin_xy_mm,
                 bin_half_mm, bin_top_mm):
        # names: the bodies the feeder hands out (the first starts on the pad, the others wait in
        # the stash where they were built); stash_xy_mm: each one's place in the stash; draws:
        # [(delay_ms, arrives, dx_mm, dy_mm, yaw_deg)] for the arrivals after the first
        self.plant = plant
        self.names = list(names)
        self.draws = list(draws)
        self.pad = pad_xy_mm
        self.z_mm = pad_top_mm + height_mm / 2.0
        self.stash_z_mm = height_mm / 2.0   # the stash stands on the table
        self.bin = (bin_xy_mm[0], bin_xy_mm[1], bin_half_mm, bin_top_mm)
        self._jaw = plant.m.site("jaw_centre").id
        self.stash = dict(zip(self.names, stash_xy_mm))
        self.queue = list(self.names[1:])   # parts waiting in the stash, in the order they go out
        self.on_pad = self.names[0]          # the part set down last (None: the pad is empty)
        self.at = self._pos(self.on_pad)     # where it was set down (mm)
        self.due = None                      # when the next arrival comes (ms), once the pad is empty
        self.draw = 0
        self.next_check = 0
        self.last = {}                       # each part's position at the last look
        self.delivered = 1                   # parts set down on the pad (the first one included)
        self.missed = 0                      # arrivals that did not come
        self.binned = 0                      # parts that came to rest in the bin
        self.kept = False                    # the first part is in the bin (it stays: the judge's)

    def _pos(self, name):
        return [float(v) * 1000.0 for v in self.plant.d.xpos[self.plant.m.body(name).id]]

    def _near(self, x_mm, y_mm, top_mm):
        j = self.plant.d.site_xpos[self._jaw] * 1000.0
        return math.hypot(j[0] - x_mm, j[1] - y_mm) < CLEAR_MM and j[2] < top_mm + ABOVE_MM

    def in_bin(self, p):
        bx, by, half, top = self.bin
        return abs(p[0] - bx) < half and abs(p[1] - by) < half and p[2] < top

    def step(self, now_ms):
        if now_ms < self.next_check:
            return
        self.next_check = now_ms + CHECK_MS
        self._chute()
        if self.on_pad is not None:
            p = self._pos(self.on_pad)
            if math.hypot(p[0] - self.at[0], p[1] - self.at[1]) < LEFT_MM and abs(p[2] - self.at[2]) < LEFT_MM:
                return
            self.on_pad = None   # it left the pad: the next arrival is on its way
        if self.draw >= len(self.draws) or not self.queue:
            return
        delay, arrives, dx, dy, yaw = self.draws[self.draw]
        if self.due is None:
            self.due = now_ms + delay
            return
        if now_ms < self.due or self._near(self.pad[0], self.pad[1], self.z_mm * 2):
            return               # (a part set down into the fingers' way would be a collision)
        self.draw += 1
        self.due = None
        if not arrives:
            self.missed += 1     # nothing came: the next arrival is on its way
            return
        x, y = self.pad[0] + dx, self.pad[1] + dy
        name = self.queue.pop(0)
        self._set_down(name, x, y, self.z_mm, math.degrees(math.atan2(y, x)) + yaw)
        self.on_pad = name
        self.delivered += 1
        self.at = self._pos(name)

    def _chute(self):
        # A part at rest in the bin, the gripper away from it: counted, and back to the stash.
        if self._near(self.bin[0], self.bin[1], self.bin[3]):
            self.last = {}
            return
        for name in self.names:
            if name in self.queue or name == self.on_pad or (self.kept and name == self.names[0]):
                continue
            p = self._pos(name)
            q = self.last.get(name)
            self.last[name] = p
            if q is None or not self.in_bin(p) or math.dist(p, q) > REST_MM:
                continue
            self.binned += 1
            if name == self.names[0]:
                self.kept = True  # the part the judge follows stays where it came to rest
                continue
            s = self.stash[name]
            self._set_down(name, s[0], s[1], self.stash_z_mm, 0.0)
            self.queue.append(name)
            self.last.pop(name, None)

    def _set_down(self, name, x_mm, y_mm, z_mm, yaw_deg):
        m, d = self.plant.m, self.plant.d
        j = m.joint(name + "_free")
        a, v = m.jnt_qposadr[j.id], m.jnt_dofadr[j.id]
        d.qpos[a:a + 3] = [x_mm / 1000.0, y_mm / 1000.0, z_mm / 1000.0]
        d.qpos[a + 3:a + 7] = arm_model.quat_yaw(yaw_deg)
        d.qvel[v:v + 6] = 0.0
        mujoco.mj_forward(m, d)

    def lost(self):
        # parts neither waiting, on the pad, in the bin, nor in the gripper's hands: where they are
        out = []
        for name in self.names:
            if name in self.queue or name == self.on_pad:
                continue
            p = self._pos(name)
            if not self.in_bin(p):
                out.append((name, p))
        return out
