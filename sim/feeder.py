# The feeder of the `feeder` scenario, and the chute under its bin: parts wait in a stash out of
# the arm's reach; a while after the part on the pad has left it (picked, or pushed off), the
# next one is set down on the pad, its delay, whether it comes at all and how far off the pad's
# centre from the scenario's seeded draws. A part that comes to rest in the bin is counted and,
# when the gripper brings the next one, goes back to the stash (sim/chute.py: a bin that never
# fills, so a night of any length needs only a few parts). Part of the simulated world, not of the
# board: the board sees a part only through its own sensors when it grasps. What the feeder
# counts is ground truth, for the judge.
import math

from surepick.sim.chute import Chute, near, set_down

CHECK_MS = 20            # how often the feeder looks at the pad and the bin
LEFT_MM = 15.0           # a part this far above or beside where it was set down has left the pad


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
        self._jaw = plant.m.site("jaw_centre").id
        self.stash = dict(zip(self.names, stash_xy_mm))
        self.queue = list(self.names[1:])   # parts waiting in the stash, in the order they go out
        self.on_pad = self.names[0]          # the part set down last (None: the pad is empty)
        self.at = self._pos(self.on_pad)     # where it was set down (mm)
        self.due = None                      # when the next arrival comes (ms), once the pad is empty
        self.draw = 0
        self.next_check = 0
        self.delivered = 1                   # parts set down on the pad (the first one included)
        self.missed = 0                      # arrivals that did not come
        # the chute under the bin (sim/chute.py): a part at rest in the bin goes back to the stash
        # when the gripper brings the next one
        self.chute = Chute(plant, bin_xy_mm, bin_half_mm, bin_top_mm, self._back_to_stash)

    def _pos(self, name):
        return [float(v) * 1000.0 for v in self.plant.d.xpos[self.plant.m.body(name).id]]

    @property
    def binned(self):
        return self.chute.binned               # parts that came to rest in the bin

    def in_bin(self, p):
        return self.chute.in_bin(p)

    def step(self, now_ms):
        if now_ms < self.next_check:
            return
        self.next_check = now_ms + CHECK_MS
        self.chute.look([n for n in self.names if n not in self.queue and n != self.on_pad])
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
        if now_ms < self.due or near(self.plant, self._jaw, self.pad[0], self.pad[1], self.z_mm * 2):
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

    def _back_to_stash(self, name):
        s = self.stash[name]
        self._set_down(name, s[0], s[1], self.stash_z_mm, 0.0)
        self.queue.append(name)

    def _set_down(self, name, x_mm, y_mm, z_mm, yaw_deg):
        set_down(self.plant, name, x_mm, y_mm, z_mm, yaw_deg)

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
