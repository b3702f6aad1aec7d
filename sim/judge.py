# Ground-truth judge: decides from the physics alone (never from the machine's sensors) what
# happened to the part in one cycle, and compares that with what the machine believed. It also
# measures what the arm did: how long any servo sat at stall (the servo model's torque at its
# limit, shaft still), and after each controller restart how far the part moved and how fast any
# joint turned in the RESTART_WINDOW_MS that followed.
import math

PLACE_SPEED_MPS = 0.02   # resting: slower than this...
PLACE_HOLD_MS = 1000     # ...with no finger contact, inside the bin, for this long
PICK_RISE_MM = 5.0       # part this far above where it started, off its support: picked
LIFT_TOLERANCE_MM = 5.0
RESTART_WINDOW_MS = 5000  # after a controller restart: nothing may move until an operator acts
N_SERVOS = 5


class Judge:
    def __init__(self, lift_height_mm):
        self.lift_height_mm = lift_height_mm
        self.start = None        # where the part was at the first sample (mm)
        self.max_rise = 0.0
        self.picked = False
        self.picked_ms = None
        self.dropped_at = None
        self.earlier_drops = []  # drops the part was picked up again after (a failed attempt's)
        self.rest_since = None
        self.rest_ok_ms = 0
        self.last = None
        self.release_ms = None   # when the machine opened to place (set by the runner)
        self._back_down = False  # a dropped part is back down (on its support) since
        self.stall_since = [None] * N_SERVOS
        self.longest_stall_ms = [0] * N_SERVOS
        self.restarts = []       # one dict per controller restart (note_restart)
        self._windows = []       # the restarts whose window is still open
        self._last_q = None      # (t_ms, joint angles) of the previous sample
        self.estop = None        # what the world measured around an e-stop press
        # Before any grasp: how far the part moved across its support (x, y), and the longest
        # stall, while the board said APPROACH (where a part search probes:
        # docs/find-the-part.md). Physics only.
        self.approach = False
        self._approach_from = None
        self.approach_moved_mm = 0.0
        self.approach_stall_ms = 0

    def note_state(self, t_ms, state):
        # The board's machine state as it reported it (a name), when it changes.
        self.approach = state == "APPROACH"
        self._approach_from = None
    def note_restart(self, t_ms):
        # The controller boots again now: watch the part and the joints for RESTART_WINDOW_MS.
        w = {"t_ms": t_ms, "part_moved_mm": 0.0, "max_joint_speed_dps": 0.0, "window_ms": 0,
             "_from": None}
        if self.last is not None and self.last["part_pos_mm"] is not None:
            w["_from"] = [float(v) for v in self.last["part_pos_mm"]]
        self.restarts.append(w)
        self._windows.append(w)

    def _arm(self, t_ms, truth):
        # Stall stretches per servo, and the restart windows.
        stall = truth.get("servos_at_stall")
        if stall is not None:
            for i in range(N_SERVOS):
                if stall[i]:
                    if self.stall_since[i] is None:
                        self.stall_since[i] = t_ms
                    d = t_ms - self.stall_since[i]
                    if d > self.longest_stall_ms[i]:
                        self.longest_stall_ms[i] = d
                else:
                    self.stall_since[i] = None
        q = truth.get("joint_angles_deg")
        speed = max(abs(v) for v in truth["joint_speeds_dps"]) if "joint_speeds_dps" in truth else 0.0
        if q is not None and self._last_q is not None and t_ms > self._last_q[0]:
            dt = (t_ms - self._last_q[0]) / 1000.0
            speed = max([speed] + [abs(a - b) / dt for a, b in zip(q, self._last_q[1])])
        if q is not None:
            self._last_q = (t_ms, list(q))
        pos = truth["part_pos_mm"]
        for w in list(self._windows):
            since = t_ms - w["t_ms"]
            if since > RESTART_WINDOW_MS:
                self._windows.remove(w)
                continue
            w["window_ms"] = since
            if speed > w["max_joint_speed_dps"]:
                w["max_joint_speed_dps"] = speed
            if pos is not None:
                if w["_from"] is None:
                    w["_from"] = [float(v) for v in pos]
                d = math.sqrt(sum((a - b) ** 2 for a, b in zip(pos, w["_from"])))
                if d > w["part_moved_mm"]:
                    w["part_moved_mm"] = d

    def _approach(self, t_ms, truth):
        # While the board says APPROACH: the part's travel across its support (x, y) from where
        # it was when the state began, and the longest stall so far (after _arm's bookkeeping).
        if truth.get("servos_at_stall") is not None:
            d = max([0] + [t_ms - s for s in self.stall_since if s is not None])
            if d > self.approach_stall_ms:
                self.approach_stall_ms = d
        pos = truth["part_pos_mm"]
        if pos is not None:
            if self._approach_from is None:
                self._approach_from = [float(v) for v in pos]
            d = math.hypot(pos[0] - self._approach_from[0], pos[1] - self._approach_from[1])
            if d > self.approach_moved_mm:
                self.approach_moved_mm = d

    def sample(self, t_ms, truth):
        # Called every few ms with plant.truth().
        self._arm(t_ms, truth)
        if self.approach:
            self._approach(t_ms, truth)
        self.last = truth
        pos = truth["part_pos_mm"]
        if pos is None:
            return
        if self.start is None:
            self.start = [float(v) for v in pos]
        rise = pos[2] - self.start[2]
        if rise > self.max_rise:
            self.max_rise = rise
        if not self.picked and rise > PICK_RISE_MM and truth["finger_contact"] and not truth["support_contact"]:
            self.picked = True
            self.picked_ms = t_ms
        elif (self.dropped_at is not None and rise > PICK_RISE_MM and truth["finger_contact"]
              and not truth["support_contact"] and self._back_down):
            # A retry picked it up again after it fell back where it was: judge this pick. (A part
            # lifted a little by a failed attempt and dropped back is not the cycle's drop.)
            self.earlier_drops.append(self.dropped_at)
            self.dropped_at = None
            self.picked_ms = t_ms
        self._back_down = self.dropped_at is not None and (rise < PICK_RISE_MM or truth["support_contact"])
        # a drop: picked, no finger contact any more, before the machine let go on purpose
        if (self.picked and self.dropped_at is None and not truth["finger_contact"]
                and (self.release_ms is None or t_ms < self.release_ms)):
            self.dropped_at = (t_ms, [round(v, 1) for v in pos])
        resting = (truth["in_bin"] and not truth["finger_contact"] and truth["part_speed_mps"] < PLACE_SPEED_MPS)
        if resting:
            if self.rest_since is None:
                self.rest_since = t_ms
            self.rest_ok_ms = t_ms - self.rest_since
        else:
            self.rest_since = None
            self.rest_ok_ms = 0

    def verdict(self):
        # (outcome, reason, details): outcome is "placed" only for a measured placement.
        d = {"picked": self.picked, "lifted_mm": round(self.max_rise, 1),
             "dropped_at": self.dropped_at, "earlier_drops": list(self.earlier_drops),
             "final_part_pos_mm": None if self.last is None or self.last["part_pos_mm"] is None
             else [round(v, 1) for v in self.last["part_pos_mm"]],
             "rest_ms": self.rest_ok_ms,
             "longest_stall_ms": list(self.longest_stall_ms),
             "restarts": [{"t_ms": w["t_ms"], "window_ms": w["window_ms"],
                           "part_moved_mm": round(w["part_moved_mm"], 2),
                           "max_joint_speed_dps": round(w["max_joint_speed_dps"], 2)} for w in self.restarts],
             "estop": self.estop,
             "approach": {"part_moved_mm": round(self.approach_moved_mm, 2),
                          "longest_stall_ms": self.approach_stall_ms}}
        if self.last is None or self.last["part_pos_mm"] is None:
            return "no_part", "there was no part", d
        lifted = self.max_rise >= self.lift_height_mm - LIFT_TOLERANCE_MM
        if self.rest_ok_ms >= PLACE_HOLD_MS and self.picked and lifted and self.dropped_at is None:
            return "placed", "in the bin, resting by itself for %d ms" % self.rest_ok_ms, d
        if not self.picked:
            moved = ((self.last["part_pos_mm"][0] - self.start[0]) ** 2
                     + (self.last["part_pos_mm"][1] - self.start[1]) ** 2) ** 0.5
            if moved < 5.0:
                return "not_picked", "the part never left its support", d
            # never lifted clear, yet not where it was: pushed, dragged or carried low
            return "not_picked", ("the part never rose %.0f mm clear of a support (at most %.1f mm) but moved "
                                  "%.0f mm across it" % (PICK_RISE_MM, self.max_rise, moved)), d
        if self.dropped_at is not None:
            return "dropped", "dropped at t=%d ms at %s mm" % (self.dropped_at[0], self.dropped_at[1]), d
        if not lifted:
            return "not_lifted", "rose only %.1f mm (lift height %.0f mm)" % (self.max_rise, self.lift_height_mm), d
        last = self.last
        if last["finger_contact"]:
            return "held", "still between the fingers", d
        if not last["in_bin"]:
            return "outside_bin", "came to rest outside the bin at %s mm" % d["final_part_pos_mm"], d
        return "not_resting", "in the bin but not at rest for %d ms" % PLACE_HOLD_MS, d
