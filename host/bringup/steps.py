"""The bring-up's steps, in order, each saved as soon as it is confirmed (state.py):

    estop                      press the e-stop: the board reads it open; release: closed
    switch, beam               press the finger switch, block the beam: read, then let go: not read
    sensors                    the pot, the current zero and the beam at rest read plausibly
                               (doctor's wiring checks, host/wiring_checks.py)
    rail                       the board's rail reading against the person's multimeter
    servo.NAME.direction       a small move its + way: which way did it turn?
    servo.NAME.zero            jog to the rest-pose mark (its zero follows)
    servo.NAME.range           jog to the mark each side of it (its pulse range follows)
    gripper.pot                the jaw on its two caliper marks again, the board's pot read at
                               each: the pot's closed-on-nothing reading (at 0 mm) and counts per
                               mm (gripper.py)
    write                      the description with the servo entries found, and found.json

Then, with --apply (cycles.py): apply (the board gets them), cycle.dry, cycle.first.

Each servo moves alone, in a window of pulse widths around where it started that begins
WINDOW0_DEG wide each side and widens by WINDOW_STEP_DEG only when the person says there is room.
A step can be redone (--redo NAME) or skipped (--skip NAME: a skipped step is saved as skipped,
and what needs it is not done)."""
import json
import os
import time

from surepick.host.bringup import apply as apply_mod
from surepick.host.bringup import gripper as gripper_mod
from surepick.host.bringup import servo_fit
from surepick.host.bringup import servos as servos_mod
from surepick.host.bringup.jog import BoardMap, BringupStop
from surepick.host.bringup.operators import AT, PAST, SHORT, STILL, WITH

WINDOW0_DEG = 5.0          # the first safe window, each side of where the servo started
WINDOW_STEP_DEG = 5.0      # ... widened by this much at a time, each time confirmed
WINDOW_MAX_DEG = 90.0      # an arm servo's; the gripper's may widen to its whole travel
NUDGE_DEG = 3.0            # the direction step's move
SEARCH_STEP_DEG = 2.0      # looking for a mark: this much a move until it is passed
APPROACH_DEG = 1.5         # every mark is approached from its short side, from this far
RAIL_AGREE_FRACTION = 0.05  # the board's rail reading within this of the multimeter's
ESTOP_WAIT_S = 10.0
FLIP_JUMP_DEG = 2.0        # mirroring a servo on the board may move it at most this much


def step_names(servos):
    names = ["estop", "switch", "beam", "sensors", "rail"]
    for s in servos:
        names += ["servo.%s.direction" % s.name, "servo.%s.zero" % s.name, "servo.%s.range" % s.name]
    return names + [gripper_mod.STEP, "write"]


class BringupSteps:
    def __init__(self, state, servos, jog, board_map, operator, say=print, port="PORT", ship=None):
        # ship(arm): the board gets `arm` as its /arm.json and restarts with it, self.map follows
        # (cli/bringup.py); None: servos found mirrored stay so on the board until --apply.
        self.ship = ship
        self.port = port
        self.state = state
        self.servos = servos
        self.jog = jog
        self.map = board_map
        self.op = operator
        self.say = say

    # ---- running ----

    def run(self, names, skip=(), writer=None):
        """Run every step of `names` not confirmed yet, in order."""
        self.state.run(names, lambda name: self._run_one(name, writer), self.say, skip,
                       shown=lambda result: " " + json.dumps(result, sort_keys=True))

    def _run_one(self, name, writer):
        if name == "estop":
            return self.estop()
        if name == "rail":
            return self.rail()
        if name == "switch":
            return self.two_way("switch_pressed", "switch-press", "switch-release", "the finger switch")
        if name == "beam":
            return self.two_way("beam_broken", "beam-block", "beam-clear", "the IR beam")
        if name == "sensors":
            return self.sensors()
        if name == "write":
            return writer(self.found(), self.pot_found())
        if name == gripper_mod.STEP:
            return self.pot(next(s for s in self.servos if s.is_gripper))
        _, servo_name, what = name.split(".")
        servo = next(s for s in self.servos if s.name == servo_name)
        return getattr(self, what)(servo)

    # ---- inputs ----

    def _estop_reads(self, want_open):
        deadline = time.monotonic() + ESTOP_WAIT_S
        while time.monotonic() < deadline:
            contact = self.jog.contact_open()
            if contact is None:
                contact = self.jog.readings()[0]
            if contact == want_open:
                return True
            time.sleep(0.1)
        return False

    def estop(self):
        self.jog.leave()
        self.op.press_estop()
        if not self._estop_reads(True):
            raise BringupStop("the e-stop was pressed but the board still reads it closed: check its "
                              "auxiliary NC contact to the e-stop input (docs/hardware.md)")
        self.op.release_estop()
        if not self._estop_reads(False):
            raise BringupStop("the e-stop was released but the board still reads it open: check its wiring "
                              "(docs/hardware.md)")
        self.jog.clear_estop_fault()
        return {"open_read": True, "closed_read": True}

    def _reads(self, field, want):
        deadline = time.monotonic() + ESTOP_WAIT_S
        while time.monotonic() < deadline:
            if bool(self.jog.readings()[2].telemetry.get(field)) == want:
                return True
            time.sleep(0.1)
        return False

    def two_way(self, field, on, off, what):
        # The person acts on an input and lets go: the board must read both (TELEMETRY `field`).
        self.jog.leave()
        self.op.hand(on)
        if not self._reads(field, True):
            self.op.hand(off)
            raise BringupStop("the board does not read %s (%s stays 0): check its wire and pin "
                              "(docs/hardware.md)" % (what, field))
        self.op.hand(off)
        if not self._reads(field, False):
            raise BringupStop("the board still reads %s after it was let go (%s stays 1): check its "
                              "wiring (docs/hardware.md)" % (what, field))
        return {"on_read": True, "off_read": True}

    def sensors(self):
        # The pot, the current zero and the beam at rest, by doctor's wiring checks.
        from surepick.host import wiring_checks
        self.jog.leave()
        found = wiring_checks.check(wiring_checks.readings(self.jog.c), self.port)
        bad = [f for f in found if f[0] != wiring_checks.OK and f[1] in ("pot", "current", "beam", "wiring")]
        if bad:
            level, topic, text, fix = bad[0]
            raise BringupStop("%s: %s; %s" % (topic, text, fix))
        return {"checked": "pot, current zero, beam at rest"}

    def rail(self):
        _e, rail_mv, _t = self.jog.readings()
        meter_v = self.op.multimeter_rail_v()
        if rail_mv is None:
            raise BringupStop("the board reports no rail reading")
        off = abs(rail_mv / 1000.0 - meter_v)
        if off > RAIL_AGREE_FRACTION * max(meter_v, 0.1):
            raise BringupStop("the board reads the rail at %.2f V, your multimeter %.2f V: set rail_divider_milli "
                              "(surepick config) to the divider's ratio, or check its resistors (docs/hardware.md)"
                              % (rail_mv / 1000.0, meter_v))
        return {"board_v": rail_mv / 1000.0, "meter_v": meter_v}

    # ---- one servo ----

    def _cmd(self, servo):
        q, jaw = self.jog.pose()
        return jaw if servo.is_gripper else q[servo.slot]

    def direction(self, servo):
        start = self._cmd(servo)
        nudge = int(round(NUDGE_DEG * servo.cmd_per_deg()))
        self.op.watch(servo)
        self.jog.move(servo.slot, start + nudge)
        way = self.op.which_way(servo)
        self.jog.move(servo.slot, start)
        if way == STILL:
            raise BringupStop("the %s did not move: check its plug, its pin (servos.%s.gpio) and the rail"
                              % (servo.label, servo.name))
        sign = 1 if way == WITH else -1
        if sign < 0 and self._flip(servo, start):
            sign = 1
        return {"start_cmd": start, "cmd_sign": sign}

    def _flip(self, servo, cmd):
        # A servo that turns against its joint on the board: mirrored on the board now (the
        # description it runs shipped again with that servo's direction the other way), so that
        # the board's own idea of the pose (its joint limits and clearance checks on every later
        # move) is right way round. Only where the mirror keeps the pulse at the servo's present
        # position (within FLIP_JUMP_DEG: near the middle of its travel, as every rest pose of the
        # reference arm is), so the arm does not jump when the board restarts with it; the
        # gripper's opening never enters those checks and is left as it is.
        if servo.is_gripper or self.ship is None:
            return False
        slot = servo.slot
        now = self.map.arm
        flipped = apply_mod.with_directions(now, {servo.name: -now.servo(slot)["direction"]})
        before = self.map.pulse(slot, cmd)
        after = BoardMap(flipped).pulse(slot, cmd)
        lo, hi, _, _, travel_mdeg = now.servo_cal(slot)
        us_per_deg = (hi - lo) * 1000.0 / travel_mdeg
        if abs(after - before) > FLIP_JUMP_DEG * us_per_deg:
            self.say("the %s turns against its joint; left so on the board until --apply (mirroring it now "
                     "would move it %.0f deg)" % (servo.label, abs(after - before) / us_per_deg))
            return False
        self.jog.leave()
        self.say("the %s turns against its joint: mirroring it on the board (servos.%s.direction = %d in "
                 "its /arm.json; the board restarts)" % (servo.label, servo.name, flipped.servo(slot)["direction"]))
        self.ship(flipped)
        return True

    def _setup(self, servo):
        d = self.state.get("servo.%s.direction" % servo.name)
        if not d or d.get("skipped"):
            raise BringupStop("servo.%s.direction is not confirmed: redo it first" % servo.name)
        return d["start_cmd"], d["cmd_sign"]

    def zero(self, servo):
        start, sign = self._setup(servo)
        window = [WINDOW0_DEG]
        p = self._reach(servo, servo.marks["mid"], start, sign, window)
        return {"mid": [p, servo.marks["mid"].deg], "window_deg": window[0]}

    def range(self, servo):
        start, sign = self._setup(servo)
        z = self.state.get("servo.%s.zero" % servo.name)
        if not z or z.get("skipped"):
            raise BringupStop("servo.%s.zero is not confirmed: redo it first" % servo.name)
        window = [z["window_deg"]]
        out = {}
        back = self._pose_for_range(servo)
        if not servo.is_gripper:
            try:
                self._fit_range_marks(servo, start, sign, z["mid"])
            except BringupStop:
                for slot, cmd in back:
                    self.jog.move(slot, cmd)
                raise
        for key in ("low", "high"):
            out[key] = [self._reach(servo, servo.marks[key], start, sign, window), servo.marks[key].deg]
        # Back where it started: the board's own idea of the pose (its clearance checks on the
        # moves that follow) is then its rest pose, whatever the offsets not yet applied.
        self._go(servo, start, start, window, sign, approach=False)
        for slot, cmd in back:
            self.jog.move(slot, cmd)
        out["window_deg"] = window[0]
        return out

    def _fit_range_marks(self, servo, start, sign, mid):
        # The range marks moved inside the arm's limits where its own leave no room (servos.py),
        # with the joint's angle as the board sees it worked out from the zero just found.
        q = [v / 1000.0 for v in self.jog.pose()[0]]
        lo, hi = servos_mod.range_marks(self.map.arm, servo, q,
                                        lambda deg: self._cmd_for(servo, start, sign, deg, mid) / 1000.0)
        if (lo, hi) == (servo.marks["low"].deg, servo.marks["high"].deg):
            return
        if hi - lo < servos_mod.MIN_MARK_SPAN_DEG:
            raise BringupStop("the %s's joint limits in the arm description leave no room for its range marks "
                              "(%+.0f to %+.0f deg only, rest at %+.0f, as the board sees the joint from the zero "
                              "found): check the joint's min_deg and max_deg, and the horn's position on its "
                              "spline (then `--redo servo.%s.zero`)" % (servo.label, lo, hi, servo.marks["mid"].deg,
                                                                         servo.name))
        rest = servo.marks["mid"].deg
        for key, deg in (("low", lo), ("high", hi)):
            servo.marks[key] = servos_mod.Mark(key, deg, "at %+.0f deg (rest %+.0f, inside the joint's limits)"
                                               % (deg, deg - rest))
        self.say("the %s's range marks are at %+.0f and %+.0f deg (rest %+.0f and rest %+.0f): its own would "
                 "leave the joint's limits, as the board sees it, or come near the table or the base"
                 % (servo.label, lo, hi, lo - rest, hi - rest))

    def _pose_for_range(self, servo):
        # Move the other joints the range marks need (servos.py range_pose), each by its own
        # calibration found already. -> [(slot, command)] that puts them back.
        back = []
        for slot, deg in servo.range_pose.items():
            other = next(s for s in self.servos if s.slot == slot)
            f = self.found().get(other.name)
            if f is None:
                raise BringupStop("the %s's range marks need the %s calibrated first: confirm its steps"
                                  % (servo.label, other.label))
            a = f["range_deg"] / servo_fit.NOMINAL_SPAN_US / other.gear * f["direction"]
            b = -a * f["pulse_at_zero_us"]
            start = self.state.get("servo.%s.direction" % other.name)["start_cmd"]
            back.append((slot, self._cmd(other)))
            self.jog.move(slot, self._cmd_at_pulse(other, int(round((deg - b) / a)), start))
        return back[::-1]

    def _points(self, s):
        z = self.state.get("servo.%s.zero" % s.name)
        r = self.state.get("servo.%s.range" % s.name)
        return tuple(z["mid"]), [tuple(r["low"]), tuple(r["high"])]

    def _cmd_for(self, servo, start, sign, deg, mid):
        # A first guess of the command that shows `deg`, from the mid mark once it is known.
        return int(round(self._cmd_at_pulse(servo, mid[0], start) + sign * (deg - mid[1]) * servo.cmd_per_deg()))

    def _cmd_at_pulse(self, servo, pulse, start):
        # The command (near start) whose pulse is closest to `pulse` (the board's map is monotone).
        lo, hi = start - 200000, start + 200000
        inc = self.map.pulse(servo.slot, hi) > self.map.pulse(servo.slot, lo)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if (self.map.pulse(servo.slot, mid) < pulse) == inc:
                lo = mid
            else:
                hi = mid
        return lo

    def _go(self, servo, cmd, start, window, sign, approach=True):
        # Move to cmd inside the safe window (widened only as the person confirms), approaching
        # from the mark's short side so that every mark sees the servo's deadband alike.
        per = servo.cmd_per_deg()
        while abs(cmd - start) > window[0] * per:
            most = servo.travel_deg if servo.is_gripper else WINDOW_MAX_DEG
            if window[0] >= most or not self.op.widen(servo, window[0]):
                raise BringupStop("the %s's mark is not within %.0f deg of where it started: nothing was "
                                  "saved for this step; check the servo horn's position on its spline"
                                  % (servo.label, window[0]))
            window[0] += WINDOW_STEP_DEG
        if approach:
            back = cmd - sign * int(round(APPROACH_DEG * per))
            if abs(back - start) <= window[0] * per:
                self.jog.move(servo.slot, back)
        self.jog.move(servo.slot, cmd)

    def _reach(self, servo, mark, start, sign, window):
        """Jog the servo onto `mark`: -> the pulse width (us, a float) the board drives there."""
        per = servo.cmd_per_deg()
        mid = self.state.get("servo.%s.zero" % servo.name)
        if mid and not mid.get("skipped"):
            cmd = self._cmd_for(servo, start, sign, mark.deg, mid["mid"])
        else:
            cmd = start + int(round(sign * (mark.deg - servo.marks["mid"].deg) * per))
        short = past = None
        while True:
            self._go(servo, cmd, start, window, sign)
            a = self.op.against_mark(servo, mark)
            p = self.map.pulse(servo.slot, cmd)
            if a == AT:
                return float(p)
            if a == SHORT:
                short = cmd
            elif a == PAST:
                past = cmd
            if short is not None and past is not None:
                ps, pp = self.map.pulse(servo.slot, short), self.map.pulse(servo.slot, past)
                if abs(ps - pp) <= 1:
                    return (ps + pp) / 2.0
                cmd = (short + past) // 2
            else:
                step = int(round(SEARCH_STEP_DEG * per))
                cmd += sign * step if a == SHORT else -sign * step

    # ---- the gripper's pot ----

    def pot(self, servo):
        """The jaw on its two caliper marks (as for its range, from where its calibration found
        puts them), the board's pot read at each: -> the two points and the line through them."""
        start, sign = self._setup(servo)
        r = self.state.get("servo.%s.range" % servo.name)
        if not r or r.get("skipped"):
            raise BringupStop("servo.%s.range is not confirmed: redo it first" % servo.name)
        window = [r["window_deg"]]
        points = []
        for key in ("low", "high"):
            mark = servo.marks[key]
            self._reach(servo, mark, start, sign, window)
            points.append([self.jog.pot_counts(), mark.deg / servo.deg_per_mm])
        self._go(servo, start, start, window, sign, approach=False)
        out = gripper_mod.pot_line(points)
        bad = gripper_mod.pot_problem(out)
        if bad:
            raise BringupStop(bad)
        out["points"] = points
        return out

    def pot_found(self):
        """{"closed_counts", "counts_per_mm"} once gripper.pot is confirmed, else None."""
        r = self.state.get(gripper_mod.STEP)
        if not r or r.get("skipped"):
            return None
        return {"closed_counts": r["closed_counts"], "counts_per_mm": r["counts_per_mm"]}

    # ---- what was found ----

    def found(self):
        """{"servos": {name: {"direction", "zero_deg", "range_deg", ...}}} of every servo whose
        marks are confirmed."""
        out = {}
        for s in self.servos:
            z = self.state.get("servo.%s.zero" % s.name)
            r = self.state.get("servo.%s.range" % s.name)
            if not z or not r or z.get("skipped") or r.get("skipped"):
                continue
            mid, ends = self._points(s)
            # each mark's angle as the pulse commands it: the seen one less the arm's sag there
            # (servos.sag_deg), the other joints at rest, or where the range marks put them
            arm = self.map.arm
            rest = arm.home_deg()
            ranged = list(rest)
            for slot, deg in s.range_pose.items():
                ranged[slot] = deg
            mid = servos_mod.commanded(arm, s, mid, rest)
            ends = [servos_mod.commanded(arm, s, e, ranged) for e in ends]
            out[s.name] = servo_fit.found(mid, ends, gear=s.gear, travel_deg=s.travel_deg)
        return out


def write_outputs(out_dir, description, found, servos, files_mod, pot=None):
    """The description with the found servo entries (and joint limits narrowed to what the servo
    can reach) and the pot found (sensors.pot: the simulator then models this arm's pot) ->
    DIR/arm.toml; found.json in the stand-in's shape. -> the new description dict."""
    import copy
    d = copy.deepcopy(description)
    notes = []
    for s in servos:
        f = found.get(s.name)
        if f is None:
            continue
        d["servos"][s.name] = servo_fit.servo_entry(d["servos"][s.name], f, s.is_gripper)
        if not s.is_gripper:
            j = d["joints"][s.name]
            lo, hi = servo_fit.clip_joint((j["min_deg"], j["max_deg"]), f["zero_deg"], s.gear, s.travel_deg)
            if (lo, hi) != (j["min_deg"], j["max_deg"]):
                notes.append("%s: joint limits %g..%g narrowed to %g..%g (what the servo reaches)"
                             % (s.name, j["min_deg"], j["max_deg"], lo, hi))
                j["min_deg"], j["max_deg"] = lo, hi
    if pot is not None:
        d.setdefault("sensors", {}).setdefault("pot", {}).update(closed_counts=float(pot["closed_counts"]),
                                   counts_per_mm=float(pot["counts_per_mm"]), offset_counts=0.0)
    files_mod.validate(d, "the description bring-up wrote")
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "arm.toml"), "w") as fh:
        fh.write(files_mod.to_toml(d))
    shape = {"servos": {n: {"direction": f["direction"], "zero_deg": round(f["zero_deg"], 3),
                            "range_deg": round(f["range_deg"], 3)} for n, f in found.items()}}
    if pot is not None:
        shape["pot"] = dict(pot)
    with open(os.path.join(out_dir, "found.json"), "w") as fh:
        json.dump(shape, fh, indent=1, sort_keys=True)
    return d, notes
