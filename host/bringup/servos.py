"""What bring-up knows of each servo before it moves it: its slot, how a person tells its + way,
and the marks the person draws on the bench (docs/bringup.md):

    mid    the rest pose of the description's bench (base forward, upper arm up, forearm level,
           hand down); the gripper: half its widest opening
    low, high   RANGE_MARKS_DEG from mid; the wrist's either side of the hand level with the
                forearm raised; the gripper: JAW_MARK_MM either side
"""
from surepick.firmware.teleop_check import clearance
from surepick.host.bringup.servo_fit import NOMINAL_SPAN_US
from surepick.shared_fsm import payload, servo_cal
from surepick.shared_fsm.arm import Unreachable

# The range marks of an arm servo, degrees from its rest pose (slot -> (low, high)). The elbow's
# both raise the forearm: lowering it from level brings a hand pointing down towards the base
# column, where the board's clearance check (rightly) refuses to go.
RANGE_MARKS_DEG = {0: (-30.0, 30.0), 1: (-20.0, 20.0), 2: (20.0, 40.0)}
RANGE_MARK_DEG = 20.0         # any other: this either side
JAW_MARK_MM = 12.5          # the jaw's marks: mid -/+ this (10 and 35 mm on a 45 mm gripper)
# A serial arm's wrist carries the hand: at rest (hand down) gravity pulls it back towards down
# from either side, which a hobby servo's proportional band turns into a sag that shrinks the
# range seen. Its range marks sit either side of the hand level, where the pull is the same at
# both: the forearm is raised this far (by the elbow, calibrated by then) to leave room for them.
WRIST_LIFT_DEG = 40.0
# An arm's own limits can leave no room for those marks (EEZYbot's base turns +-30 deg, MeArm's
# forearm rises 45 deg at most): a mark is then moved towards rest until the servo's sweep to it
# stays inside every joint limit by MARK_MARGIN_DEG, plus MARK_RANGE_SHARE of its distance from
# rest as the board sees it (its angle there is a guess from the nominal pulse range, which a
# servo misses by some per cent; the search steps 2 deg past a mark), and the hand MARK_CLEAR_MM off
# the table and the base column (the board's teleop checks, firmware/teleop_check.py). Checked
# both ways: as the board sees the joint, and as it is.
MARK_MARGIN_DEG = 3.0
MARK_RANGE_SHARE = 0.05
MARK_CLEAR_MM = 5.0
MIN_MARK_SPAN_DEG = 10.0      # two range marks closer than this give too coarse a pulse range

PLUS_TEXT = {
    "base": "counter-clockwise seen from above",
    "shoulder": "the upper arm tilting back, away from the front",
    "elbow": "the forearm rising",
    "wrist": "the hand tilting up",
    "gripper": "the jaw opening",
}


class Mark:
    def __init__(self, key, deg, text):
        self.key = key
        self.deg = deg            # what the person sees there: joint deg (gripper: servo deg)
        self.text = text


class Servo:
    def __init__(self, arm, name, slot):
        self.name = name
        self.slot = slot
        self.is_gripper = slot == servo_cal.GRIPPER
        self.label = "gripper" if self.is_gripper else name + " servo"
        self.plus_text = PLUS_TEXT.get(name, "its joint's + way")
        entry = arm.servo(slot)
        self.gear = 1.0 if self.is_gripper else entry["gear"]
        self.travel_deg = float(entry["travel_deg"])   # servo deg over min_us..max_us (180, 270, ...)
        self.deg_per_mm = float(arm.gripper["servo_deg_per_mm"])
        self.range_pose = {}      # other joints moved (deg) for the range marks, then put back
        if self.is_gripper:
            mid_mm = arm.gripper["jaw_max_mm"] / 2.0
            self.marks = {k: Mark(k, mm * self.deg_per_mm, "at %.1f mm of opening on a caliper" % mm)
                          for k, mm in (("mid", mid_mm), ("low", mid_mm - JAW_MARK_MM), ("high", mid_mm + JAW_MARK_MM))}
        else:
            mid = arm.home_deg()[slot]
            lo, hi = RANGE_MARKS_DEG.get(slot, (-RANGE_MARK_DEG, RANGE_MARK_DEG))
            a = RANGE_MARK_DEG
            self.marks = {k: Mark(k, v, "at %+.0f deg (%s)" % (v, what))
                          for k, v, what in (("mid", mid, "its rest pose"), ("low", mid + lo, "rest %+.0f" % lo),
                                             ("high", mid + hi, "rest %+.0f" % hi))}
            if arm.kind == "serial" and slot == 3:
                home = arm.home_deg()
                # the shoulder at its rest mark, the elbow raised: both where the person sees them
                self.range_pose = {1: home[1], 2: home[2] + WRIST_LIFT_DEG}
                level = -(home[1] + home[2] + WRIST_LIFT_DEG)        # the hand level
                for k, v in (("low", level - a), ("high", level + a)):
                    self.marks[k] = Mark(k, v, "at %+.0f deg (the hand %+.0f deg from level, the forearm "
                                               "raised %.0f deg)" % (v, v - level, WRIST_LIFT_DEG))

    def cmd_per_deg(self):
        # board command units per degree seen, were the calibration right (joint mdeg; jaw um)
        return 1000.0 / self.deg_per_mm if self.is_gripper else 1000.0


def servos_of(arm):
    out = [Servo(arm, arm.servo_names[i], i) for i in range(len(arm.joint_names))]
    out.append(Servo(arm, "gripper", servo_cal.GRIPPER))
    return out


def _inside(arm, q, slot, below, above):
    # q (deg) inside the arm's (coupled) joint limits for any angle of `slot` from q[slot] - below
    # to q[slot] + above (the joints coupled to it see their limits move with it)
    for a in (q[slot] - below, q[slot] + above):
        p = list(q)
        p[slot] = a
        try:
            arm.check_limits(p)
        except Unreachable:
            return False
    return True


def mark_fits(arm, servo, q_board, board_deg, deg):
    """Can `servo` be driven to show `deg` (joint deg, as it is) from rest, with the other joints
    where the board holds them (q_board, deg)? board_deg(deg): the joint's angle as the board
    sees it there. The margins lie on the side it moves towards (module comment)."""
    slot = servo.slot
    seen = list(q_board)
    seen[slot] = board_deg(deg)
    real = list(q_board)
    real[slot] = deg
    guess = MARK_RANGE_SHARE * abs(seen[slot] - q_board[slot])
    up = deg >= servo.marks["mid"].deg
    ahead = MARK_MARGIN_DEG + guess
    if not _inside(arm, seen, slot, guess if up else ahead, ahead if up else guess):
        return False
    if not _inside(arm, real, slot, 0.0 if up else MARK_MARGIN_DEG, MARK_MARGIN_DEG if up else 0.0):
        return False
    for q in (seen, real):
        table, column = clearance(arm, q)
        if table < MARK_CLEAR_MM or column < MARK_CLEAR_MM:
            return False
    return True


def _farthest(arm, servo, q_board, board_deg, want):
    # The whole degree farthest from rest towards `want` whose sweep from rest fits.
    mid = servo.marks["mid"].deg
    step = 1.0 if want >= mid else -1.0
    d = mid
    while abs(want - d) >= 1.0 and mark_fits(arm, servo, q_board, board_deg, d + step):
        d += step
    if d != want and abs(want - d) < 1.0 and mark_fits(arm, servo, q_board, board_deg, want):
        return want
    return d


def range_marks(arm, servo, q_board, board_deg):
    """-> (low, high): the degrees of the servo's range marks this arm leaves room for (module
    comment): its own marks where their sweeps fit, else the widest of them, mirrored about
    rest, or RANGE_MARK_DEG either side of rest, each moved towards rest until it fits."""
    lo, hi = servo.marks["low"].deg, servo.marks["high"].deg
    if all(_farthest(arm, servo, q_board, board_deg, d) == d for d in (lo, hi)):
        return lo, hi
    if servo.range_pose:
        # marks about a centre of their own (the wrist's hand level, where gravity pulls alike at
        # both): kept about it, nearer together
        c = (lo + hi) / 2.0
        h = (hi - lo) / 2.0
        while h > 1.0:
            h -= 1.0
            if all(_farthest(arm, servo, q_board, board_deg, d) == d for d in (c - h, c + h)):
                return c - h, c + h
        return c, c
    mid = servo.marks["mid"].deg
    best = (mid, mid)
    for a, b in ((lo, hi), (2 * mid - hi, 2 * mid - lo), (mid - RANGE_MARK_DEG, mid + RANGE_MARK_DEG)):
        pair = (_farthest(arm, servo, q_board, board_deg, a), _farthest(arm, servo, q_board, board_deg, b))
        # a mark left at rest because not one step from it fits is no mark (rest itself may not)
        if (pair[1] - pair[0] > best[1] - best[0]
                and all(mark_fits(arm, servo, q_board, board_deg, d) for d in pair)):
            best = pair
    return best


# Under this share of its stall torque a servo holds no weight to speak of (a hand hanging
# straight down, an upper arm upright): its shaft stays where it came to rest inside the deadband.
SAG_LOAD_SHARE = 0.01


def sag_deg(arm, servo, deg, q_deg):
    """How far (joint deg) an arm servo's joint sits past its command, held still at `deg` with
    the others at q_deg, gravity on the arm (no part): its deadband (the amplifier is off inside
    it, so gravity takes the shaft to its far edge) and its band's lag at the static torque it
    gives (shared_fsm/payload.holding_nm, band_lag_deg), the way gravity turns it; 0 where it
    holds next to no weight (SAG_LOAD_SHARE; the base none). The law sim/servo_model.py models."""
    q = list(q_deg)
    q[servo.slot] = deg
    need = payload.holding_nm(arm, q, 0.0, signed=1)[servo.slot]
    entry = arm.servo(servo.slot)
    model = arm.servo_models[entry["model"]]
    if abs(need) < SAG_LOAD_SHARE * model["stall_torque_nm_4v8"]:
        return 0.0
    sag = (model["deadband_us"] * entry["travel_deg"] / NOMINAL_SPAN_US / entry["gear"]
           + payload.band_lag_deg(arm, servo.slot, abs(need)))
    return -sag if need > 0 else sag


def commanded(arm, servo, point, q_deg):
    """A mark's (pulse us, joint deg seen) -> (pulse us, joint deg the pulse commands): the seen
    angle less the sag there (the gripper's as it is)."""
    if servo.is_gripper:
        return point
    return point[0], point[1] - sag_deg(arm, servo, point[1], q_deg)
