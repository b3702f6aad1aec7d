"""What bring-up knows of each servo before it moves it: its slot, how a person tells its + way,
and the marks the person draws on the bench (docs/bringup.md):

    mid    the rest pose of the description's bench (base forward, upper arm up, forearm level,
           hand down); the gripper: half its widest opening
    low, high   RANGE_MARKS_DEG from mid; the wrist's either side of the hand level with the
                forearm raised; the gripper: JAW_MARK_MM either side
"""
from surepick.shared_fsm import servo_cal

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
