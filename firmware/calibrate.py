# Calibration routines run by the main loop a tick at a time (never blocking it):
#   CAL_POT      close the empty jaw, let it settle, average the pot: pot_closed_counts
#   CAL_CURRENT  keep the gripper still, average the current sense: current_offset_counts
#                (zero = the idle gripper, as the simulator's board calibrates it)
# The result goes through the same validation as CONFIG_SET, is persisted, then replied.
from ..shared_fsm import link                 # host: surepick.firmware (the simulator)
from ..shared_fsm.ticks import ticks_diff
from ..shared_fsm.config import reads_in

from ..shared_fsm.compat import const

_SETTLE_MS = const(400)      # after the jaw arrives: servo ringing and pad settle
STILL_MS = const(300)       # gripper held still before sampling the current offset
SAMPLE_MS = const(64)       # averaged over this long, one sample a loop tick (32 at 2 ms)
_TIMEOUT_MS = const(4000)


def sample_ticks(period_ms):
    # Ticks the averaging takes at this loop period (one sample a tick, SAMPLE_MS in all).
    return reads_in(SAMPLE_MS, period_ms)


_P_MOVE = const(0)
_P_SETTLE = const(1)
_P_SAMPLE = const(2)


class Calibration:
    def __init__(self, target, rid):
        self.target = target
        self.rid = rid
        self.phase = _P_MOVE
        self.t0 = 0
        self.t = 0
        self.sum = 0
        self.n = 0
        self.prev_jaw = 0
        self.samples = 1

    def start(self, app, now):
        # -> None when started, or (code, payload) to reply at once
        inp = app.m.inp
        self.samples = sample_ticks(app.m.cfg.loop_period_ms)
        self.t0 = now
        self.t = now
        if self.target == link.CAL_POT:
            if inp.switch_pressed or inp.beam_broken:
                return link.E_STATE, ("jaw_not_empty",)
            self.prev_jaw = app.m.out.jaw_um
            app.m.out.jaw_um = 0     # close on nothing
        elif self.target == link.CAL_CURRENT:
            self.phase = _P_SETTLE   # nothing to move: wait for stillness
        else:
            return link.E_UNSUPPORTED, ()
        return None

    def cancel(self, app):
        if self.target == link.CAL_POT:
            app.m.out.jaw_um = self.prev_jaw

    def step(self, app, now):
        m = app.m
        if m.fault or m.inp.estop:
            self._fail(app, link.E_STATE, "fault")
            return
        if ticks_diff(now, self.t0) > _TIMEOUT_MS:
            self._fail(app, link.E_STATE, "timeout")
            return
        if self.target == link.CAL_POT and m.inp.switch_pressed:
            self._fail(app, link.E_STATE, "jaw_not_empty")   # closed on something after all
            return
        if self.phase == _P_MOVE:
            if app.motion.jaw_um == 0 and app.servos[4].pos == 0:
                self.phase = _P_SETTLE
                self.t = now
        elif self.phase == _P_SETTLE:
            if ticks_diff(now, self.t) >= (_SETTLE_MS if self.target == link.CAL_POT else STILL_MS):
                self.phase = _P_SAMPLE
        else:
            if self.target == link.CAL_POT:
                self.sum += app.pot.raw
            else:
                self.sum += app.current.raw
            self.n += 1
            if self.n >= self.samples:
                self._finish(app)

    def _finish(self, app):
        key = "pot_closed_counts" if self.target == link.CAL_POT else "current_offset_counts"
        value = (self.sum + self.n // 2) // self.n
        self.cancel(app)             # the jaw goes back where it was
        try:
            app.settings.set(key, value)
        except ValueError:
            app.calibration_done(self, link.E_BAD_VALUE, (key, value))
            return
        app.calibration_done(self, link.OK, (key, value))

    def _fail(self, app, code, why):
        self.cancel(app)
        app.calibration_done(self, code, (why,))
