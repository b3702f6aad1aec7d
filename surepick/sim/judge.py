# Ground-truth judge: decides from the physics alone (never from the machine's sensors) what
# happened to the part in one cycle, and compares that with what the machine believed.
PLACE_SPEED_MPS = 0.02   # resting: slower than this...
PLACE_HOLD_MS = 1000     # ...with no finger contact, inside the bin, for this long
PICK_RISE_MM = 5.0       # part this far above where it started, off its support: picked
LIFT_TOLERANCE_MM = 5.0


class Judge:
    def __init__(self, lift_height_mm):
        self.lift_height_mm = lift_height_mm
        self.start = None        # where the part was at the first sample (mm)
        self.max_rise = 0.0
        self.picked = False
        self.picked_ms = None
        self.dropped_at = None
        self.rest_since = None
        self.rest_ok_ms = 0
        self.last = None
        self.release_ms = None   # when the machine opened to place (set by the runner)

    def sample(self, t_ms, truth):
        # Called every few ms with plant.truth().
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
             "dropped_at": self.dropped_at,
             "final_part_pos_mm": None if self.last is None or self.last["part_pos_mm"] is None
             else [round(v, 1) for v in self.last["part_pos_mm"]],
             "rest_ms": self.rest_ok_ms}
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
