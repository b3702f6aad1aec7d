# Outlier rejection on the hand's position, before any scaling. Tracking loss shows up as a pose
# that is missing, carries NaN, is not a rotation, or leaps: a sample further than `jump_m` from
# the last good one is dropped and the last good one kept (reference design: 5 cm). A dropped
# sample is counted, never passed on.
#
# A leap that persists is the hand itself, found again after a loss: once `reacquire` valid
# samples in a row agree with each other (each within jump_m of the one before) the new place
# is accepted as REANCHOR, and the caller re-zeroes the clutch there, so the arm does not jump.
import numpy as np

from surepick.host.teleop.coord_frames import valid_pose

ACCEPT = "ok"
DROP_LOST = "drop_lost"        # no pose: tracking lost
DROP_INVALID = "drop_invalid"  # NaN/inf, or not a proper rotation
DROP_JUMP = "drop_jump"        # moved more than jump_m since the last good sample
REANCHOR = "reanchor"          # a persistent leap accepted as the new place of the hand
DROPS = (DROP_LOST, DROP_INVALID, DROP_JUMP)


class OutlierGate:
    def __init__(self, jump_m=0.05, reacquire=3):
        if not jump_m > 0:
            raise ValueError("jump_m must be > 0, got %r" % (jump_m,))
        if reacquire < 1:
            raise ValueError("reacquire must be >= 1, got %r" % (reacquire,))
        self.jump_m = float(jump_m)
        self.reacquire = int(reacquire)
        self.last_good = None
        self._candidates = []
        self.counts = {k: 0 for k in DROPS + (REANCHOR,)}

    @property
    def dropped(self):
        return sum(self.counts[k] for k in DROPS)

    def check(self, r, t):
        # -> ACCEPT, REANCHOR or one of DROPS for this sample (r: 3x3, t: 3, Z-up metres).
        if r is None or t is None:
            return self._count(DROP_LOST)
        if not valid_pose(r, t):
            return self._count(DROP_INVALID)
        p = np.asarray(t, dtype=float)
        if self.last_good is None or np.linalg.norm(p - self.last_good) <= self.jump_m:
            self.last_good = p.copy()
            self._candidates = []
            return ACCEPT
        if self._candidates and np.linalg.norm(p - self._candidates[-1]) <= self.jump_m:
            self._candidates.append(p.copy())
        else:
            self._candidates = [p.copy()]
        if len(self._candidates) >= self.reacquire:
            self.last_good = p.copy()
            self._candidates = []
            return self._count(REANCHOR)
        return self._count(DROP_JUMP)

    def _count(self, verdict):
        self.counts[verdict] += 1
        return verdict
