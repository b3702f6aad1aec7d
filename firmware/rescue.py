# The operator's rescue after a fault (RESCUE, controller.py): gentle moves only, a tick at a
# time. Loaded with the first RESCUE, at rest: a board that never needs one does not hold its
# bytecode in the chip's heap (docs/rp2040.md, heap on the chip).
from ..shared_fsm.codes import (K_NOTE, F_DROPPED, F_RELEASE_FAILED, F_MOTION_TIMEOUT, F_BAD_POSE,
                              R_PLACED, R_RESTED)
from ..shared_fsm.machine import MOVE_FREE, MOVE_LINE
from ..shared_fsm.states import IDLE
from ..shared_fsm.ticks import ticks_diff

from ..shared_fsm.compat import const

from .boot_recovery import jaw_um_of

_R_RISE = const(0)
_R_TRANSFER = const(1)
_R_LOWER = const(2)
_R_SETTLE = const(3)
_R_OPEN = const(4)
_R_CHECK = const(5)
_R_RETREAT = const(6)
_R_TO_REST = const(7)
_R_DONE = const(8)
_R_FAILED = const(9)

RESCUE_PLACE = const(0)     # link.RESCUE_PLACE
RESCUE_REST = const(1)      # link.RESCUE_REST


class Rescue:
    # Drives the machine's Outputs (the motion planner reads them) with gentle moves only:
    #   PLACE  up to a safe height, over the place pose, down, open, confirm the fingers let go,
    #          straight up: the only way besides the machine's PLACE that a held part is let go.
    #   REST   up to a safe height, then to the stored rest pose; a held part stays held.
    # The machine stays in IDLE meanwhile (it still latches the e-stop and every fault, which
    # freeze the arm where it is and end the rescue); faults of the rescue are latched through it.
    # place: the job's place pose (x, y, z um, pitch mdeg) or None; rest: the rest pose as
    # (x, y, z um, pitch mdeg); start: where the arm's setpoints stand (x, y, z um, pitch mdeg).
    def __init__(self, machine, action, place, width_um, start, rest, safe_z_um):
        self.m = machine
        self.action = action
        self.place = place
        self.width_um = width_um
        self.start_pose = start
        self.rest = rest
        self.safe_z = safe_z_um
        self.monitor = machine.holding    # watch the grip while carrying a part
        self.phase = _R_RISE
        self.t = machine.now
        self.loss_since = -1
        self.streak = 0
        self.open_um = 0
        self.fault = 0

    def start(self, now):
        cfg = self.m.cfg
        x, y, z, pitch = self.start_pose
        up = z if z > self.safe_z else self.safe_z
        if self.action == RESCUE_PLACE:
            above = self.place[2] + cfg.approach_height_um
        else:
            above = self.rest[2]
        if up < above:
            up = above
        self._move(now, x, y, up, pitch, MOVE_LINE)

    def done(self):
        return self.phase >= _R_DONE

    def step(self, now):
        # -> True while working. Call after machine.step(), before motion.tick().
        m = self.m
        if m.fault:                      # e-stop or a fault latched elsewhere: stop here
            self.phase = _R_FAILED
            return False
        ph = self.phase
        cfg = m.cfg
        inp = m.inp
        if inp.error_seq == m.out.move_seq and inp.error_seq != 0:
            return self._fail(F_BAD_POSE)
        if self.monitor and ph <= _R_LOWER and not self._grip_ok(now):
            return self._fail(F_DROPPED)
        if self.monitor and ph == _R_TO_REST and not self._grip_ok(now):
            return self._fail(F_DROPPED)
        arrived = inp.arrived_seq == m.out.move_seq
        if ph <= _R_LOWER or ph == _R_RETREAT or ph == _R_TO_REST:
            if not arrived and ticks_diff(now, self.t) > cfg.move_timeout_ms:
                return self._fail(F_MOTION_TIMEOUT)
        if ph == _R_RISE and arrived:
            if self.action == RESCUE_PLACE:
                p = self.place
                self.phase = _R_TRANSFER
                self._move(now, p[0], p[1], p[2] + cfg.approach_height_um, p[3], MOVE_FREE)
            else:
                r = self.rest
                self.phase = _R_TO_REST
                self._move(now, r[0], r[1], r[2], r[3], MOVE_FREE)
        elif ph == _R_TO_REST and arrived:
            self.phase = _R_DONE
            m.events.put(m, K_NOTE, IDLE, IDLE, R_RESTED)
            return False
        elif ph == _R_TRANSFER and arrived:
            p = self.place
            self.phase = _R_LOWER
            self._move(now, p[0], p[1], p[2], p[3], MOVE_LINE)
        elif ph == _R_LOWER and arrived:
            self.phase = _R_SETTLE
            self.t = now
        elif ph == _R_SETTLE and ticks_diff(now, self.t) >= cfg.settle_ms:
            open_um = self.width_um + cfg.open_margin_um
            self.open_um = open_um if open_um < m.jaw_max_um else m.jaw_max_um
            m.out.jaw_um = self.open_um
            m.holding = 0                # let go over the place pose, on purpose
            self.phase = _R_OPEN
            self.t = now
        elif ph == _R_OPEN and ticks_diff(now, self.t) >= cfg.release_wait_ms:
            self.phase = _R_CHECK
            self.t = now
            self.streak = 0
        elif ph == _R_CHECK:
            # let go: switch released (debounced) and the jaw really open; the beam cannot tell
            # yet, the open fingers still surround the part
            jaw = jaw_um_of(inp.pot_counts, cfg)
            if not m.sw_stable and not inp.switch_pressed and jaw >= self.open_um - cfg.jaw_open_tolerance_um:
                self.streak += 1
            else:
                self.streak = 0
            if self.streak >= cfg.debounce_reads:
                p = self.place
                self.phase = _R_RETREAT
                self._move(now, p[0], p[1], p[2] + cfg.approach_height_um, p[3], MOVE_LINE)
            elif ticks_diff(now, self.t) >= cfg.release_confirm_ms:
                return self._fail(F_RELEASE_FAILED)
        elif ph == _R_RETREAT and arrived:
            self.phase = _R_DONE
            m.events.put(m, K_NOTE, IDLE, IDLE, R_PLACED)
            return False
        return self.phase < _R_DONE

    def _grip_ok(self, now):
        # Switch or beam still sees the part; a loss must last grip_loss_ms (ringing pads flicker)
        inp = self.m.inp
        if inp.switch_pressed or inp.beam_broken:
            self.loss_since = -1
            return True
        if self.loss_since < 0:
            self.loss_since = now
            return True
        return ticks_diff(now, self.loss_since) < self.m.cfg.grip_loss_ms

    def _move(self, now, x, y, z, pitch, kind):
        out = self.m.out
        out.x_um = x
        out.y_um = y
        out.z_um = z
        out.pitch_mdeg = pitch
        out.move_kind = kind
        out.move_gentle = 1
        out.move_seq += 1
        self.t = now

    def _fail(self, code):
        self.fault = code
        self.phase = _R_FAILED
        self.m.latch_fault(code)
        return False
