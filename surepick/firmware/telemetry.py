# Loop timing statistics and the TELEMETRY frame. The loop measures itself: the period between
# tick starts on the control clock, the work per tick on the CPU clock (on the board both are
# ticks_us; on the virtual board the control clock is the plant's), the worst tick, overruns.
# Ticks that wrote flash (allowed only at rest) are counted apart: they are meant to be long.
from ..shared_fsm import link


class LoopStats:
    def __init__(self, period_us):
        self.period_us = period_us
        self.last_start = -1
        self.ticks = 0
        self.overruns = 0          # since boot: ticks whose work took longer than the period
        self.late = 0              # since boot: deadlines already past when the work ended
        self.worst_step_us = 0     # since boot
        self.flash_ticks = 0
        self.worst_flash_us = 0
        # window (reset by each telemetry frame)
        self.w_sum_period = 0
        self.w_n = 0
        self.w_worst_us = 0
        self.last_step_us = 0

    def record(self, start_us, step_us, flash, diff):
        # diff: the clock's wrap-safe ticks_diff (the HAL's)
        self.ticks += 1
        self.last_step_us = step_us
        if self.last_start >= 0:
            self.w_sum_period += diff(start_us, self.last_start)
            self.w_n += 1
        self.last_start = start_us
        if flash:
            self.flash_ticks += 1
            if step_us > self.worst_flash_us:
                self.worst_flash_us = step_us
            return
        if step_us > self.worst_step_us:
            self.worst_step_us = step_us
        if step_us > self.w_worst_us:
            self.w_worst_us = step_us
        if step_us > self.period_us:
            self.overruns += 1

    def mean_period_us(self):
        if self.w_n == 0:
            return self.period_us
        return self.w_sum_period // self.w_n

    def reset_window(self):
        self.w_sum_period = 0
        self.w_n = 0
        self.w_worst_us = 0


def _clip(v, lo, hi):
    return lo if v < lo else (hi if v > hi else v)


def frame(app):
    # One TELEMETRY frame from the app's current readings (through the app's FrameWriter:
    # no per-frame string building); resets the timing window. Field order: link.SCHEMA.
    m = app.m
    inp = m.inp
    st = app.stats
    c = app.log.counters
    w = app.fw
    w.begin(link.T_TELEMETRY)
    w.add(app.now_ms)
    w.add(m.state)
    w.add(_clip(m.attempt, 0, 255))
    w.add(m.fault)
    w.add(c[0])   # cycles ok, cycles failed, faults: flashlog.C_* (persisted across boots)
    w.add(c[1])
    w.add(c[2])
    w.add(_clip(inp.pot_counts, 0, 65535))
    w.add(_clip(inp.current_ma, -(1 << 30), (1 << 30) - 1))
    w.add(inp.switch_pressed)
    w.add(inp.beam_broken)
    w.add(m.present & 255)
    w.add(_clip(inp.rail_mv, 0, 65535))
    w.add(inp.estop)
    w.add(_clip(st.mean_period_us(), 0, (1 << 30) - 1))
    w.add(_clip(st.w_worst_us, 0, (1 << 30) - 1))
    w.add(_clip(st.overruns, 0, (1 << 30) - 1))
    st.reset_window()
    return w.finish()
