"""Moving one servo of a board over the link, for bring-up: the firmware's teleop mode
(firmware/teleop_mode.py) holds every other joint where it is and the board keeps its own speed,
acceleration, joint-limit and e-stop checks. Before each move the board is asked for its e-stop
and rail: nothing moves while the e-stop reads open or the rail is below the board's rail_low_mv.

Commands are in the board's own units (joint mdeg for slots 0..3, jaw um for the gripper); the
pulse a command gives is computed exactly as the firmware does (from the arm description it
runs: BoardMap), so what bring-up measures is pulse width against where the arm
physically went, whatever calibration the board runs now."""
import time

from surepick.host.link.errors import LinkError
from surepick.host.link.answers import teleop_refusal
from surepick.shared_fsm import link, servo_cal
from surepick.host.user_error import Failure

GRIPPER = servo_cal.GRIPPER
STEP_MDEG = 1000          # one setpoint moves a joint at most this far (jaw: STEP_UM)
PATH_SPLITS = 4           # a step refused "path" from rest is made in halves, down to 1/16 of it
STEP_UM = 250
SETTLE_TIMEOUT_S = 30.0   # the servo drivers reach a setpoint within this long (wall clock)
HELD = 2                  # TELEOP_STATE mode: held by the deadman (firmware/teleop_mode.py)
HELD_TOLERANCE = 20       # mdeg (um): the drivers' joint readback rounds through servo mdeg
ECHO_S = 1.0              # a setpoint is answered within this long, or the next one goes anyway
RESEND_AFTER_PATH_S = 0.1  # a final setpoint's re-send refused "path": the drivers move on this long
LISTEN_MS = 1000          # a reading is the mean of this long's telemetry (the board's clock)
FIRST_FRAME_S = 5.0       # wall clock: a board sends its first TELEMETRY within this (10 Hz at least)
LISTEN_TIMEOUT_S = 30.0   # wall clock: ... and LISTEN_MS of it within this (a slow virtual board)
DRAIN_READS = 1000        # at most this many reads to drop what waited before a listen


class BringupStop(Failure):
    """The bench is not safe to move (e-stop open, rail low) or the board refused: one line."""


def _no_telemetry():
    return BringupStop("the board sent no telemetry: `surepick config set telemetry_hz 10`, then run bringup again")


class BoardMap:
    """The board's command -> pulse map of each servo slot, as firmware/controller.py _servo_cal
    drives it: the pulse calibration, zero and gear of the arm description the board runs (its
    /arm.json; an arm servo with direction -1 has its pulse mirrored)."""

    def __init__(self, arm):
        self.arm = arm

    def pulse(self, slot, cmd):
        # cmd: joint mdeg (arm slots) or jaw um (gripper) -> the pulse width the board drives
        if slot == GRIPPER:
            s = servo_cal.joint_to_servo_mdeg(GRIPPER, int(cmd))
        else:
            s = self.arm.servo_mdeg(slot, int(cmd))
        return servo_cal.pulse_us(self.arm.servo_cal(slot), s)


def config_get(client, key, timeout=3.0):
    r = client.request(link.T_CONFIG_GET, (key,), timeout)
    if not r.ok or not r.payload:
        raise BringupStop("the board did not give %s (%s)" % (key, r.code_name))
    return int(r.payload[-1])


class Jog:
    """Teleop on one board, one servo moved at a time. safe() before every move."""

    def __init__(self, client, rail_low_mv, timeout=10.0):
        self.c = client
        self.timeout = timeout
        self.rail_low_mv = rail_low_mv
        self.seq = 0
        self.q = None            # the setpoint the board holds: 4 joint mdeg
        self.jaw = None          # ... and jaw um
        self.on = False
        self.record = None       # a list: every TELEMETRY frame read meanwhile goes in it (dicts)
        self._path_retry = False  # a "path" refusal now is asked again from rest (_step)
        self._path_refused = False

    # ---- the bench's safety, asked of the board itself ----

    def readings(self):
        """(e-stop open, rail mV, View) as the board reads them now. Open: the contact reads open
        (or not closed long enough yet), or the board's e-stop is still latched."""
        from surepick.host.link import busy
        st = busy.status(self.c, self.timeout)
        if st is None:
            raise BringupStop("the board does not answer STATUS: is the firmware running? (surepick doctor)")
        v = st.view
        return bool(v.estop) or v.has(link.COND_ESTOP_OPEN), v.telemetry.get("rail_mv"), v

    def listen(self, seconds):
        """The board's TELEMETRY of a short listen (wall clock): [dict] (kept in self.record
        too, if one runs)."""
        from surepick.host import wiring_checks
        frames = []
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            f = self.c.wait_for(link.T_TELEMETRY, max(0.0, end - time.monotonic()))
            if f is not None:
                frames.append(wiring_checks.telemetry(f))
        if not frames:
            raise _no_telemetry()
        if self.record is not None:
            self.record.extend(frames)
        return frames

    def listen_board(self, ms=LISTEN_MS):
        """The board's TELEMETRY from a first frame until one `ms` later by the board's own clock
        (its t_ms: on a Pico the wall's; a virtual board runs faster or slower): [dict]."""
        from surepick.host import wiring_checks
        from surepick.shared_fsm.ticks import ticks_diff
        for _ in range(DRAIN_READS):      # what the board sent before (while the person looked) is not now
            if not self.c.pump(0):
                break
        frames = []
        start = time.monotonic()
        while not frames or ticks_diff(frames[-1]["t_ms"], frames[0]["t_ms"]) < ms:
            left = start + (LISTEN_TIMEOUT_S if frames else FIRST_FRAME_S) - time.monotonic()
            if left <= 0:
                if not frames:
                    raise _no_telemetry()
                raise BringupStop("the board's telemetry did not cover %d ms of its clock in %.0f s: is it "
                                  "running? (surepick doctor)" % (ms, LISTEN_TIMEOUT_S))
            f = self.c.wait_for(link.T_TELEMETRY, left)
            if f is not None:
                frames.append(wiring_checks.telemetry(f))
        if self.record is not None:
            self.record.extend(frames)
        return frames

    def pot_counts(self, ms=LISTEN_MS):
        """The gripper pot as the board reads it (TELEMETRY pot_counts, the mean of a short
        listen: the firmware's filtered reading still carries the ADC's noise)."""
        frames = self.listen_board(ms)
        return sum(f["pot_counts"] for f in frames) / float(len(frames))

    def contact_open(self):
        # The e-stop contact as the board reads it now (not its latch), or None: no such report.
        from surepick.host.link import busy
        st = busy.status(self.c, self.timeout)
        if st is None or st.view.conditions is None:
            return None
        return st.view.has(link.COND_ESTOP_OPEN)

    def clear_restart_fault(self):
        # After a restart bring-up itself caused (a description shipped): the servos came back
        # on at once and the surge may have latched RAIL_LOW. Cleared only when the rail reads
        # above rail_low_mv again (nothing moves by it); any other fault stays for the person.
        from surepick.shared_fsm import codes
        _o, rail, v = self.readings()
        if v.fault != codes.F_RAIL_LOW or rail is None or rail < self.rail_low_mv:
            return False
        r = self.c.request(link.T_CLEAR_FAULT, (), self.timeout)
        if not r.ok:
            raise BringupStop("the board did not clear RAIL_LOW after its restart (%s): surepick job clear"
                              % r.code_name)
        return True

    def clear_stall_fault(self):
        # After bring-up pressed the jaw on a part on purpose (its stall current): the board's
        # stall watch latched STALL and backed the jaw off, as it should. -> True when that fault
        # was latched and is now cleared; any other fault stays for the person (False).
        from surepick.shared_fsm import codes
        _o, _r, v = self.readings()
        if v.fault != codes.F_STALL:
            return False
        r = self.c.request(link.T_CLEAR_FAULT, (), self.timeout)
        if not r.ok:
            raise BringupStop("the board did not clear the STALL bring-up caused (%s): surepick job clear"
                              % r.code_name)
        self.on = False
        return True

    def clear_estop_fault(self):
        # After the person's own e-stop test: the latched ESTOP fault is cleared (nothing moves).
        from surepick.shared_fsm import codes
        _o, _r, v = self.readings()
        if v.fault == codes.F_ESTOP:
            r = self.c.request(link.T_CLEAR_FAULT, (), self.timeout)
            if not r.ok:
                raise BringupStop("the board did not clear its e-stop fault (%s): surepick job clear" % r.code_name)

    def safe(self):
        # Refuse to move while the e-stop reads open or the servo rail is low.
        estop, rail, _t = self.readings()
        if estop:
            raise BringupStop("the e-stop reads open: nothing moves. Close it (twist to release), then "
                              "run `surepick bringup` again: it resumes here")
        if rail is not None and rail < self.rail_low_mv:
            raise BringupStop("the servo rail reads %d mV, below rail_low_mv %d: nothing moves. Check the "
                              "servo supply (docs/hardware.md), then run `surepick bringup` again"
                              % (rail, self.rail_low_mv))

    # ---- teleop ----

    def _enter(self):
        r = self.c.request(link.T_TELEOP, (1,), self.timeout)
        if not r.ok:
            raise BringupStop("the board refused to let a servo be moved: %s; then run `surepick bringup` again"
                              % teleop_refusal(r.code, r.payload, getattr(self.c, "port", None)))
        p = r.payload
        self.q = [int(v) for v in p[1:5]]
        self.jaw = int(p[5])
        self.on = True

    def leave(self):
        if not self.on:
            return
        self.on = False
        try:
            self.c.request(link.T_TELEOP, (0,), self.timeout)
        except LinkError:
            pass                  # the board holds by its deadman anyway

    def pose(self):
        # The setpoint the board holds (entering teleop if needed): (4 joint mdeg, jaw um)
        if not self.on:
            self.safe()
            self._enter()
        return list(self.q), self.jaw

    def move(self, slot, cmd, whole=False):
        """Bring servo `slot` to command `cmd` (joint mdeg or jaw um), the others held, in steps
        the board follows (whole: the jaw in one setpoint, at the board's own jaw speed);
        returns once the board's drivers hold it there."""
        self.safe()
        if not self.on:
            self._enter()
        q, jaw = list(self.q), self.jaw
        cur = jaw if slot == GRIPPER else q[slot]
        step = STEP_UM if slot == GRIPPER else STEP_MDEG
        if whole and slot == GRIPPER:
            step = abs(int(cmd) - cur) + 1
        cmd = int(cmd)
        while True:
            before = (list(q), jaw)
            d = cmd - cur
            cur = cmd if abs(d) <= step else cur + (step if d > 0 else -step)
            if slot == GRIPPER:
                jaw = cur
            else:
                q[slot] = cur
            self._step(q, jaw, before)
            if cur == cmd:
                break
        self._wait_held(q, jaw)

    def _step(self, q, jaw, before, splits=PATH_SPLITS):
        # One setpoint of a move. The board's path check runs its drivers from where they are,
        # still moving towards the steps before: near the table or the column its fixed budget of
        # checks may run out on that motion alone ("path", fail closed), however small this step.
        # Then the drivers are let to hold the step before and this one is asked again, from
        # rest. Refused from rest too (the hand so near the column that even this step's motion
        # needs more checks than the budget), it is made in two halves, each as this one, down to
        # 1/2**PATH_SPLITS of it; the last refused stops bring-up with the reason. The end pose
        # itself is never in question here: one not clear is refused as such, not as "path".
        if self._try(q, jaw):
            return
        self._wait_held(*before)
        if self._try(q, jaw):
            return
        bq, bjaw = before
        if splits == 0 or all(abs(a - b) <= 1 for a, b in zip(list(bq) + [bjaw], list(q) + [jaw])):
            self._send(q, jaw)           # refused again: BringupStop, with the board's reason
            return
        half = ([(a + b) // 2 for a, b in zip(bq, q)], (bjaw + jaw) // 2)
        self._step(half[0], half[1], before, splits - 1)
        self._step(q, jaw, half, splits - 1)

    def _try(self, q, jaw):
        # Send one setpoint; -> False if the board refused it "path" (nothing else is caught).
        return not self._offer(q, jaw)[0]

    def _offer(self, q, jaw):
        # Send one setpoint: -> (refused "path", the board's answer as _send gives it).
        self._path_retry = True
        try:
            s = self._send(q, jaw)
        finally:
            self._path_retry = False
        refused, self._path_refused = self._path_refused, False
        return refused, s

    def _send(self, q, jaw):
        # One setpoint, then wait for the board to answer it (TELEOP_STATE with its seq): the
        # board reads one line a tick, so a host that sent faster would fill its input.
        for _ in range(2):
            self.seq += 1
            self.state = None
            self.last_sent = (list(q), jaw)
            self.c.send(link.setpoint(self.c.new_id(), self.seq, q, jaw))
            deadline = time.monotonic() + ECHO_S
            while time.monotonic() < deadline:
                for f in self.c.read_frames(0.02):
                    self._frame(f)
                if self._path_refused:
                    return None
                s = self.state
                if s is not None and s["seq"] >= self.seq:
                    return s
                if s is not None and s["mode"] == HELD:
                    # held by the deadman while the person looked: re-arm, send it again
                    self._rearm()
                    break
            else:
                return None
        return None

    def _frame(self, f):
        if f.ftype == link.T_REPLY and f.fields[1] != link.OK:
            why = f.fields[2] if len(f.fields) > 2 else "?"
            if why == "held":
                self._rearm()
                return
            if why == "path":
                seq = f.fields[3] if len(f.fields) > 3 else None
                if seq is not None and seq != self.seq:
                    # A late answer to an earlier setpoint (one not answered within ECHO_S on a
                    # slow host): the board has a newer one to answer, and it keeps that
                    # setpoint's or the one before, never this one.
                    return
                if self._path_retry:
                    self._path_refused = True
                    return
            self.leave()
            q, jaw = getattr(self, "last_sent", ([], 0))
            raise BringupStop("the board refused a setpoint (%s %s; joints %s deg, jaw %.1f mm as the board "
                              "sees them): the move would leave the joint's limits or the arm's clearance"
                              % (link.ERROR_NAMES.get(f.fields[1], f.fields[1]), why,
                                 " ".join("%.1f" % (v / 1000.0) for v in q), jaw / 1000.0))
        if f.ftype == link.T_TELEMETRY and self.record is not None:
            from surepick.host import wiring_checks
            self.record.append(wiring_checks.telemetry(f))
        if f.ftype == link.T_TELEOP_STATE:
            d = dict(zip(link.SCHEMA[link.T_TELEOP_STATE][3], f.fields))
            self.state = d
            if d["mode"] == 0:
                self.on = False
                why = {1: "deadman", 2: "a fault or the e-stop", 3: "left", 4: "abort"}.get(d["why"], d["why"])
                raise BringupStop("the board left teleop (%s): nothing more moves. Run `surepick bringup` "
                                  "again once it is clear (surepick job status)" % why)

    def _rearm(self):
        # After a deadman hold: TELEOP on again; the board answers with the pose it holds.
        r = self.c.request(link.T_TELEOP, (1,), self.timeout)
        if not r.ok:
            raise BringupStop("the board did not re-arm teleop: %s; then run `surepick bringup` again"
                              % teleop_refusal(r.code, r.payload, getattr(self.c, "port", None)))

    def _wait_held(self, q, jaw):
        # Re-send the final setpoint until the board says its drivers hold it (TELEOP_STATE: the
        # joints as the drivers hold them, to within their mdeg rounding) and no longer move.
        # A re-send refused "path" changes nothing: the board goes on with the same setpoint it
        # took, whose whole path it checked then; checked again from mid-motion (the drivers
        # still braking from the steps before: carried on, or late on a slow host) the rest of it
        # can need more checks than the budget. The drivers are let to move on, then asked again.
        deadline = time.monotonic() + SETTLE_TIMEOUT_S
        last = None
        while time.monotonic() < deadline:
            refused, s = self._offer(q, jaw)
            if refused:
                for f in self.c.read_frames(RESEND_AFTER_PATH_S):
                    self._frame(f)
                continue
            if s is None:
                continue
            now = [s["q0_mdeg"], s["q1_mdeg"], s["q2_mdeg"], s["q3_mdeg"], s["jaw_cmd_um"]]
            there = all(abs(a - b) <= HELD_TOLERANCE for a, b in zip(now, list(q) + [jaw]))
            if there and now == last:
                self.q, self.jaw = list(q), jaw
                return
            last = now
        raise BringupStop("the board did not reach the setpoint within %.0f s" % SETTLE_TIMEOUT_S)
