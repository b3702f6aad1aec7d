# Loop timing statistics and the TELEMETRY frame. The loop measures itself: the period between
# tick starts on the control clock, the work per tick on the CPU clock (on the board both are
# ticks_us; on the virtual board the control clock is the plant's), the worst tick, overruns.
# Ticks that did maintenance at rest (a flash write, a garbage collection) are counted apart:
# they are meant to be long.
#
# Besides the since-boot counters, a "cycle" window (begun at boot and whenever a job starts)
# keeps a histogram of tick work for its median and 99th percentile: 257 fixed buckets in one
# preallocated array, 4 us wide below 256 us and 1/16 of an octave above (so a percentile is
# at most 6.25% above the true value, and never above the window's maximum); recording a tick
# is a few comparisons and one array increment, no allocation.
from array import array

from ..shared_fsm import link
from ..shared_fsm.compat import const, micropython

_NB = const(257)          # buckets; the last one holds everything from 65536 us up
_SMALL = const(0x3FFFFFFF)

try:
    ptr32                     # a cast only inside viper functions on MicroPython
except NameError:
    def ptr32(buf):           # elsewhere (CPython, bytecode): the array itself
        return buf


# Viper on the board (machine integers; us >= 0, so the shifts are Python's), plain Python
# elsewhere with the same results: counting a tick and walking the 257 buckets cost 90 and
# 690 us in bytecode on an RP2040.
@micropython.viper
def _count(hist, us: int):
    h = ptr32(hist)
    if us < 256:
        b = us >> 2
    elif us < 1024:
        b = 48 + (us >> 4)
    elif us < 4096:
        b = 96 + (us >> 6)
    elif us < 16384:
        b = 144 + (us >> 8)
    elif us < 65536:
        b = 192 + (us >> 10)
    else:
        b = 256
    h[b] = h[b] + 1


@micropython.viper
def _rank(hist, need: int) -> int:
    # the first bucket at which the cumulative count reaches need
    h = ptr32(hist)
    seen = 0
    b = 0
    while b < 256:
        seen += h[b]
        if seen >= need:
            return b
        b += 1
    return 256


def _upper(b):
    # the largest tick (us) bucket b holds
    if b < 64:
        return (b << 2) + 3
    if b < 112:
        return ((b - 48) << 4) + 15
    if b < 160:
        return ((b - 96) << 6) + 63
    if b < 208:
        return ((b - 144) << 8) + 255
    if b < 256:
        return ((b - 192) << 10) + 1023
    return _SMALL


class LoopStats:
    def __init__(self, period_us):
        self.period_us = period_us
        self.last_start = -1
        self.ticks = 0
        self.overruns = 0          # since boot: ticks whose work took longer than the period
        self.late = 0              # since boot: deadlines already past when the work ended
        self.skipped = 0           # since boot: periods skipped to get back on the grid
        self.worst_step_us = 0     # since boot
        self.flash_ticks = 0       # since boot: maintenance ticks (flash write, GC) at rest
        self.worst_flash_us = 0
        self.gc_count = 0          # since boot: collections the loop ran at rest
        self.gc_last_us = 0
        # telemetry window (reset by each telemetry frame)
        self.w_sum_period = 0
        self.w_n = 0
        self.w_worst_us = 0
        self.last_step_us = 0
        # cycle window (begin_cycle)
        self.hist = array("i", [0] * _NB)
        self.begin_cycle()

    def begin_cycle(self):
        # A new measurement window: at boot, and when a job starts.
        h = self.hist
        for i in range(_NB):
            h[i] = 0
        self.c_ticks = 0
        self.c_max_us = 0
        self.c_overruns = 0
        self.c_sum_period = 0
        self.c_n = 0
        self.c_gc_max_us = 0
        self.c_maint_ticks = 0
        self.c_maint_max_us = 0

    @micropython.native
    def record(self, start_us, step_us, flash, diff):
        # diff: the clock's wrap-safe ticks_diff (the HAL's); flash: the tick did maintenance
        self.ticks += 1
        self.last_step_us = step_us
        if self.last_start >= 0:
            p = diff(start_us, self.last_start)
            self.w_sum_period += p
            self.w_n += 1
            if self.c_sum_period < _SMALL - p:
                self.c_sum_period += p
                self.c_n += 1
        self.last_start = start_us
        if flash:
            self.flash_ticks += 1
            self.c_maint_ticks += 1
            if step_us > self.worst_flash_us:
                self.worst_flash_us = step_us
            if step_us > self.c_maint_max_us:
                self.c_maint_max_us = step_us
            return
        if step_us > self.worst_step_us:
            self.worst_step_us = step_us
        if step_us > self.w_worst_us:
            self.w_worst_us = step_us
        if step_us > self.c_max_us:
            self.c_max_us = step_us
        if step_us > self.period_us:
            self.overruns += 1
            self.c_overruns += 1
        self.c_ticks += 1
        _count(self.hist, step_us)

    def gc_done(self, us):
        # A collection the loop ran (at rest) took `us`.
        self.gc_count += 1
        self.gc_last_us = us
        if us > self.c_gc_max_us:
            self.c_gc_max_us = us

    def percentile(self, permille):
        # The cycle window's tick work at this percentile (500: median, 990: p99), in us: the
        # upper edge of its bucket, capped at the window's maximum; 0 with no ticks.
        n = self.c_ticks
        if n == 0:
            return 0
        # ceil(n * permille / 1000) without a product past the board's 31-bit small ints
        need = (n // 1000) * permille + ((n % 1000) * permille + 999) // 1000
        if need < 1:
            need = 1
        u = _upper(_rank(self.hist, need))
        return u if u < self.c_max_us else self.c_max_us

    def mean_period_us(self):
        if self.w_n == 0:
            return self.period_us
        return self.w_sum_period // self.w_n

    def cycle_period_us(self):
        if self.c_n == 0:
            return self.period_us
        return self.c_sum_period // self.c_n

    def reset_window(self):
        self.w_sum_period = 0
        self.w_n = 0
        self.w_worst_us = 0


def _clip(v, lo, hi):
    return lo if v < lo else (hi if v > hi else v)


_U30 = const(0x3FFFFFFF)
_S30 = const(0x3FFFFFFF)
# TELEMETRY is built over seven ticks, four fields a tick and the conditions alone in the last (a
# whole frame at once was the longest thing a plain tick did on an RP2040: 1.6-2.2 ms); STATUS
# still gets a whole frame at once (frame()). Values that may leave a field's range are clipped inline.


def _p0(app, w):
    m = app.m
    w.begin(link.T_TELEMETRY)
    w.add(app.now_ms)
    w.add(m.state)
    a = m.attempt
    w.add(0 if a < 0 else (255 if a > 255 else a))
    w.add(m.fault)


def _p1(app, w):
    c = app.log.counters
    w.add(c[0])   # cycles ok, cycles failed, faults: flashlog.C_* (persisted across boots)
    w.add(c[1])
    w.add(c[2])
    v = app.m.inp.pot_counts
    w.add(0 if v < 0 else (65535 if v > 65535 else v))


def _p2(app, w):
    m = app.m
    inp = m.inp
    v = inp.current_ma
    w.add(-_S30 - 1 if v < -_S30 - 1 else (_S30 if v > _S30 else v))
    w.add(inp.switch_pressed)
    w.add(inp.beam_broken)
    w.add(m.present & 255)


def _p3(app, w):
    inp = app.m.inp
    st = app.stats
    v = inp.rail_mv
    w.add(0 if v < 0 else (65535 if v > 65535 else v))
    w.add(inp.estop)
    w.add(_clip(st.mean_period_us(), 0, _U30))
    w.add(_clip(st.w_worst_us, 0, _U30))


def _p4(app, w):
    # the since-boot overruns, then the cycle window (since the job started, or since boot):
    # ticks, mean period, median tick work
    st = app.stats
    w.add(_clip(st.overruns, 0, _U30))
    st.reset_window()
    w.add(_clip(st.c_ticks, 0, _U30))
    w.add(_clip(st.cycle_period_us(), 0, _U30))
    w.add(_clip(st.percentile(500), 0, _U30))


def _p5(app, w):
    # ... p99 and max tick work, overruns, the longest collection at rest
    st = app.stats
    w.add(_clip(st.percentile(990), 0, _U30))
    w.add(_clip(st.c_max_us, 0, _U30))
    w.add(_clip(st.c_overruns, 0, _U30))
    w.add(_clip(st.c_gc_max_us, 0, _U30))


def _p6(app, w):
    # the board's conditions (link.COND_*: a part held, teleop on, the arm unpowered, ...)
    w.add(app.conditions())
    return w.finish()


_PARTS = (_p0, _p1, _p2, _p3, _p4, _p5, _p6)
_LAST = const(6)


def frame(app):
    # One whole TELEMETRY frame from the app's current readings (through the app's FrameWriter:
    # no per-frame string building); resets the timing window. Field order: link.SCHEMA.
    w = app.fw
    for i in range(_LAST):
        _PARTS[i](app, w)
    return _p6(app, w)


class Spread:
    # The periodic TELEMETRY frame, one part per tick, in a FrameWriter of its own (EVENT and
    # FAULT frames keep using the app's while it is built).
    def __init__(self, writer):
        self.w = writer
        self.part = 0          # next part to add (0: not building)

    def sends(self):
        # the next step() finishes and returns the frame
        return self.part == _LAST

    @micropython.native
    def step(self, app):
        # -> the finished frame (memoryview) in the last part's tick, else None
        p = self.part
        if p == _LAST:
            self.part = 0
            return _p6(app, self.w)
        _PARTS[p](app, self.w)
        self.part = p + 1
        return None
