"""The person at the bench, as bring-up asks them things.

TerminalOperator asks a person at the terminal. SimOperator is the stand-in for tests and for
`--operator sim` on a virtual board: it answers from what a person at the bench sees, through the
virtual board's control channel (vboard/control.py): where the arm physically is ("look": the
joint angles and the jaw's opening, as an eye reads them off the marks drawn on the arm and a
caliper), its multimeter on the rail, its hand on the e-stop. It never sees a servo's calibration.

Every question has a fixed set of answers (the tokens below); a person's typo is asked again."""
import time

# Where a joint is against a mark: it must turn further its + way, it went past, it is on it.
SHORT, PAST, AT = "short", "past", "at"
# Which way a servo turned when moved a little its + way: with its joint, against it, not at all.
WITH, AGAINST, STILL = "+", "-", "0"

EYE_DEG = 0.2             # a person reads a joint against a drawn mark to this (deg)
CALIPER_MM = 0.05         # ... and the jaw's opening on a caliper to this (mm)
MOVED_DEG = 0.5           # less than this the person says it did not move
SETTLE_S = 20.0           # wall seconds the stand-in waits for the arm to come to rest
STILL_DEG = 0.02          # two looks this close, STILL_MS of plant time apart: at rest
STILL_MS = 150


class TerminalOperator:
    """A person at the terminal (input/print)."""

    def __init__(self, ask=input, say=print):
        self._ask = ask
        self.say = say

    def _choose(self, question, answers):
        while True:
            a = self._ask("%s [%s] " % (question, "/".join(answers))).strip().lower()
            if a in answers:
                return a
            self.say("please answer one of: %s" % ", ".join(answers))

    def watch(self, servo):
        self._ask("Watch the %s: it will move a little. Press Enter when you are watching. " % servo.label)

    def which_way(self, servo):
        return self._choose("Did the %s turn the + way (%s), the other way, or not at all?"
                            % (servo.label, servo.plus_text), (WITH, AGAINST, STILL))

    def against_mark(self, servo, mark):
        return self._choose("Where is the %s against its mark %s: short of it (it must go further the + way, "
                            "%s), past it, or at it?" % (servo.label, mark.text, servo.plus_text),
                            (SHORT, PAST, AT))

    def widen(self, servo, window_deg):
        return self._choose("The %s is at the edge of its safe window (%.0f deg each side). Is there room "
                            "to go on (nothing in the way, no servo straining)?" % (servo.label, window_deg),
                            ("y", "n")) == "y"

    def press_estop(self):
        self._ask("Press the e-stop now (it must cut the servo rail), then press Enter. ")

    def release_estop(self):
        self._ask("Release the e-stop now, then press Enter. ")

    def hand(self, what):
        self._ask({"switch-press": "Press the finger switch (push the pad in) and hold it; press Enter. ",
                   "switch-release": "Let the finger switch go; press Enter. ",
                   "beam-block": "Block the beam between the jaws (a card) and hold it; press Enter. ",
                   "beam-clear": "Take the card away; press Enter. ",
                   "part-remove": "Take the part off its pad (the dry cycle runs without it) and keep your "
                                  "hands out of the arm's way; press Enter. ",
                   "part-back": "Put the part back on its pad, in the middle, and keep your hands out of the "
                                "arm's way; press Enter. ",
                   "part-in-jaw": "Hold the part between the open jaws, square to them and flush with the "
                                  "finger tips, by its ends (your fingers clear of the jaws), and keep holding "
                                  "it lightly while the jaw closes on it and presses hard for a moment; "
                                  "press Enter. ",
                   "part-on-pad": "Take the part out of the jaws and put it back on its pad, in the middle; keep "
                                  "your hands out of the arm's way; press Enter. "}[what])

    def multimeter_rail_v(self):
        while True:
            a = self._ask("Measure the servo rail with your multimeter (V, e.g. 5.8): ").strip()
            try:
                return float(a)
            except ValueError:
                self.say("a number of volts, please")


class SimOperator:
    """The stand-in person at a virtual board's bench (only what a person there sees)."""

    def __init__(self, control_address, say=print):
        from surepick.host.vboard.control import request
        self._request = lambda cmd: request(control_address, cmd)
        self.say = say
        self._before = {}

    def look(self):
        # Wait for the arm to come to rest, as a person does before reading a mark.
        deadline = time.monotonic() + SETTLE_S
        last = self._request("look")
        while time.monotonic() < deadline:
            time.sleep(0.02)
            now = self._request("look")
            if now["plant_ms"] - last["plant_ms"] < STILL_MS:
                continue
            moved = max([abs(a - b) for a, b in zip(now["joints_deg"], last["joints_deg"])]
                        + [abs(now["jaw_mm"] - last["jaw_mm"])])
            if moved < STILL_DEG:
                return now
            last = now
        return last

    def _seen(self, servo, view):
        # What the eye reads: a joint's angle off its marks, the gripper's opening on a caliper
        # (in the gripper servo's degrees: mm times the description's deg per mm).
        if servo.is_gripper:
            mm = round(view["jaw_mm"] / CALIPER_MM) * CALIPER_MM
            return mm * servo.deg_per_mm
        return round(view["joints_deg"][servo.slot] / EYE_DEG) * EYE_DEG

    def watch(self, servo):
        self._before[servo.name] = self._seen(servo, self.look())

    def which_way(self, servo):
        after = self._seen(servo, self.look())
        d = after - self._before.pop(servo.name)
        if abs(d) < MOVED_DEG:
            return STILL
        return WITH if d > 0 else AGAINST

    def against_mark(self, servo, mark):
        seen = self._seen(servo, self.look())
        tol = CALIPER_MM * servo.deg_per_mm if servo.is_gripper else EYE_DEG
        if abs(seen - mark.deg) <= tol / 2:
            return AT
        return SHORT if seen < mark.deg else PAST

    def widen(self, servo, window_deg):
        return True               # the simulated bench has nothing in a servo's way

    def press_estop(self):
        self._request("estop-press")

    def release_estop(self):
        self._request("estop-release")

    def hand(self, what):
        # putting the part back on its pad is the bench's reset-world (the arm stays where it is)
        self._request("reset-world" if what == "part-back" else what)

    def multimeter_rail_v(self):
        return round(self.look()["rail_v"], 2)
