# Teaching a job by moving the arm: a teleop session (any source, the sim or a board) in which
# marks (a key, a button, or "mark" in a stream file: sample.MARKS) record what the arm does at
# that moment into a job file (jobfile.py):
#
#   pick_approach, place_approach   the tool point above the pick / place: the approach height
#   pick, place                     the commanded tool pose (jaw centre, pitch) there
#   width                           the part width: the jaw opening the gripper's pot reads while
#                                   the jaw grips the part lightly (commanded a little more closed
#                                   than it is: a hard squeeze compresses the sprung pad, and the
#                                   reading comes out narrow; measured in the sim: commanded 2 mm
#                                   into a 25 mm cube it reads 23.9 mm, fully squeezed 20.0 mm)
#   next                            the first of those still missing, in that order
#
# A pose mark records the pipeline's commanded Cartesian target at that control tick: the pose
# the operator drove the arm to, which is what the machine will command (the machine's moves have
# no servo feedforward, so the arm sags a little lower than while teaching; the cycle's default
# poses are taught the same way). Marking again replaces a mark; every mark is kept in the log.
import math

from surepick.host.teleop import jobfile

ORDER = ("pick_approach", "pick", "width", "place_approach", "place")
GRIP_MIN_UM = 300         # gripping: the pot reads at least this much more open than commanded...
GRIP_LIGHT_UM = 3000      # ...and lightly: at most this much (else the pad is squeezed)
APPROACH_BESIDE_MM = 5.0  # an approach mark this far beside its pose is not straight above it
KEY_HELP = {"pick_approach": "1", "pick": "2", "width": "3", "place_approach": "4", "place": "5"}


class Teacher:
    def __init__(self, say=None, arm=None):
        self.say = say or (lambda text: None)
        self.arm = arm           # the arm the job is taught for (None: the reference); its checks
        self.marks = {}          # name -> the latest record
        self.history = []        # every record, in order
        self.refused = []        # marks that could not be taken, and why

    def sample(self, sample, res, ctrl, session):
        # runner observer: one sample with the control tick that used it
        name = res.mark
        if name is None:
            return
        if name == "next":
            missing = [n for n in ORDER if n not in self.marks]
            if not missing:
                self.say("teach: every mark is taken (mark one by name to redo it)")
                return
            name = missing[0]
        target = session.target
        pot = target.jaw_measured_um() if hasattr(target, "jaw_measured_um") else None
        rec = {"mark": name, "t_s": round(float(sample.t), 4),
               "x_mm": round(float(ctrl.target_mm[0]), 3), "y_mm": round(float(ctrl.target_mm[1]), 3),
               "z_mm": round(float(ctrl.target_mm[2]), 3), "pitch_deg": round(float(ctrl.target_pitch), 3),
               "jaw_cmd_um": int(ctrl.jaw_um), "jaw_pot_um": None if pot is None else int(pot)}
        if ctrl.reach_clamped:
            rec["note"] = "target clamped to the reachable space (%s)" % ctrl.reach_reason
        if name == "width":
            why = self._not_gripping(rec)
            if why:
                self.refused.append((name, why))
                self.say("teach: width not taken at t=%.2f s: %s" % (sample.t, why))
                return
            rec["width_mm"] = round(pot / 1000.0, 3)
        self.marks[name] = rec
        self.history.append(rec)
        if name == "width":
            self.say("teach: width %.1f mm (jaw pot) at t=%.2f s" % (rec["width_mm"], sample.t))
        else:
            self.say("teach: %s x=%.1f y=%.1f z=%.1f mm pitch %.0f deg at t=%.2f s"
                     % (name, rec["x_mm"], rec["y_mm"], rec["z_mm"], rec["pitch_deg"], sample.t))

    @staticmethod
    def _not_gripping(rec):
        pot, cmd = rec["jaw_pot_um"], rec["jaw_cmd_um"]
        if pot is None:
            return "the jaw's pot gives no reading"
        if pot < cmd + GRIP_MIN_UM:
            return ("the jaw is not gripping anything (the pot reads %.1f mm, commanded %.1f mm): close it on "
                    "the part first" % (pot / 1000.0, cmd / 1000.0))
        if pot > cmd + GRIP_LIGHT_UM:
            return ("the jaw squeezes the part hard (the pot reads %.1f mm, commanded %.1f mm): the sprung pad "
                    "gives and the reading comes out narrow; ease the grip until the command is within %.0f mm "
                    "of the reading" % (pot / 1000.0, cmd / 1000.0, GRIP_LIGHT_UM / 1000.0))
        return None

    def job(self, width_mm=None, attempts=None, taught=None):
        # -> (jobfile.Job or None, [problem, ...]). Problems name the mark (and how to make it).
        problems = []
        for name in ("pick", "place"):
            if name not in self.marks:
                problems.append("%s: not marked (key %s, or \"mark\": \"%s\" in a stream file)"
                                % (name, KEY_HELP[name], name))
        width = width_mm
        if width is None:
            if "width" in self.marks:
                width = self.marks["width"]["width_mm"]
            else:
                why = dict(self.refused).get("width")
                problems.append("width: not marked%s: mark it while the jaw grips the part (key 3), or give "
                                "--width MM" % ((" (%s)" % why) if why else ""))
        if problems:
            return None, problems
        pose = {n: jobfile.Pose(self.marks[n]["x_mm"], self.marks[n]["y_mm"], self.marks[n]["z_mm"],
                                self.marks[n]["pitch_deg"]) for n in ("pick", "place")}
        heights = []
        for name in ("pick", "place"):
            a = self.marks.get(name + "_approach")
            if a is None:
                continue
            p = pose[name]
            beside = math.hypot(a["x_mm"] - p.x_mm, a["y_mm"] - p.y_mm)
            dz = a["z_mm"] - p.z_mm
            if beside > APPROACH_BESIDE_MM:
                problems.append("%s_approach: %.1f mm beside the %s pose; the approach goes straight above it "
                                "(within %.0f mm)" % (name, beside, name, APPROACH_BESIDE_MM))
            elif dz <= 0:
                problems.append("%s_approach: %.1f mm below the %s pose; it must be above it" % (name, -dz, name))
            else:
                heights.append(dz)
        # One approach height serves both (the machine has one): the higher clears both.
        approach = round(max(heights), 1) if heights else None
        record = dict(taught or {})
        record["marks"] = self.history
        job = jobfile.Job(pose["pick"], pose["place"], float(width), approach, attempts, record)
        problems += jobfile.check(job, arm=self.arm)
        return job, problems
