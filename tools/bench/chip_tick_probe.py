# The per-phase timing probe of tools/bench/chip_tick.py, run ON the board (the emulated RP2040 or the
# unix micropython): it wraps the phases of the firmware's real App.tick with ticks_us timers
# (fixed-arity closures: no allocation per call), lets App.run() do everything as usual, and
# prints one line "CHIPTICK {json}" per measured stretch:
#   idle   IDLE_TICKS ticks at rest after boot (telemetry on, before any job)
#   cycle  from the tick a job starts to the first tick back at rest
# and the free heap (firmware and probe loaded) after boot (collected) and at the job's first
# tick (the job's handler has just collected).
# Per phase: calls, mean, p99 and max per call in us (histograms as the firmware's own
# LoopStats keeps them); the whole tick the same way, maintenance ticks (a flash write or a
# collection at rest, the loop's own flag) counted apart. A wrapper's own cost (calibrated at
# start, reported as overhead_us) is included in each figure.
import gc
import json
import sys
import time
from array import array

from surepick.firmware import controller as ctl_mod
from surepick.firmware import telemetry

IDLE_TICKS = 500
CYCLE_TICKS = 0           # > 0: end the cycle stretch after this many ticks (a short bench)
_us = time.ticks_us
_diff = time.ticks_diff
# Histogram: _NF fine buckets of WIDTH us, then _NC coarse ones of _COARSE * WIDTH, then one
# overflow bucket (reported as the max): on the chip 16 us up to 4 ms, 256 us up to 20 ms; on
# the unix port 2 us up to 0.5 ms, 32 us up to 2.5 ms. Sized to need: the probe's 16
# histograms live on the chip's heap next to the firmware (642 B each, not 1 KB).
_NF = 256
_NC = 64
_COARSE = 16
_NB = _NF + _NC
WIDTH = 16 if sys.platform == "rp2" else 2


class Phase:
    # calls, sum, max and a linear histogram of per-call times (self-contained, so the probe
    # measures older firmware too)
    def __init__(self):
        self.h = array("H", bytearray(2 * (_NB + 1)))    # counts < 65536 per stretch
        self.reset()

    def add(self, us):
        self.sum += us
        self.n += 1
        if us > self.max:
            self.max = us
        b = us // WIDTH
        if b >= _NF:
            b = _NF + (b - _NF) // _COARSE
        self.h[b if b < _NB else _NB] += 1

    def pct(self, permille):
        if self.n == 0:
            return 0
        need = (self.n * permille + 999) // 1000
        seen = 0
        for b in range(_NB + 1):
            seen += self.h[b]
            if seen >= need:
                if b == _NB:
                    return self.max       # the overflow bucket: nothing finer is known
                u = ((b + 1) if b < _NF else (_NF + (b + 1 - _NF) * _COARSE)) * WIDTH - 1
                return u if u < self.max else self.max
        return self.max

    def summary(self):
        n = self.n
        return {"calls": n, "mean_us": (self.sum // n) if n else 0, "median_us": self.pct(500),
                "p99_us": self.pct(990), "max_us": self.max}

    def reset(self):
        self.sum = 0
        self.n = 0
        self.max = 0
        h = self.h
        for i in range(_NB + 1):
            h[i] = 0


PHASES = {}
_NAMES = ("read pot", "read current", "read rail", "read switch", "read beam", "read e-stop",
          "machine.step", "motion.tick", "servo drive", "link (incl. telemetry)", "telemetry frame", "LED",
          "housekeeping at rest", "_cal")
_POOL = [Phase() for _ in range(len(_NAMES) + 2)]   # allocated at import, before the app's heap


def _phase(name):
    p = PHASES.get(name)
    if p is None:
        p = PHASES[name] = _POOL.pop() if _POOL else Phase()
    return p


def wrap0(obj, attr, name):
    f = getattr(obj, attr)
    p = _phase(name)

    def w():
        t = _us()
        r = f()
        p.add(_diff(_us(), t))
        return r
    setattr(obj, attr, w)


def wrap1(obj, attr, name):
    f = getattr(obj, attr)
    p = _phase(name)

    def w(a):
        t = _us()
        r = f(a)
        p.add(_diff(_us(), t))
        return r
    setattr(obj, attr, w)


def wrap2(obj, attr, name):
    f = getattr(obj, attr)
    p = _phase(name)

    def w(a, b):
        t = _us()
        r = f(a, b)
        p.add(_diff(_us(), t))
        return r
    setattr(obj, attr, w)


def wrap3(obj, attr, name):
    f = getattr(obj, attr)
    p = _phase(name)

    def w(a, b, c):
        t = _us()
        r = f(a, b, c)
        p.add(_diff(_us(), t))
        return r
    setattr(obj, attr, w)


def wrap5(obj, attr, name):
    f = getattr(obj, attr)
    p = _phase(name)

    def w(a, b, c, d, e):
        t = _us()
        r = f(a, b, c, d, e)
        p.add(_diff(_us(), t))
        return r
    setattr(obj, attr, w)


def _overhead():
    class O:
        def f(self):
            return 0
    o = O()
    wrap0(o, "f", "_cal")
    for _ in range(200):
        o.f()
    p = PHASES.pop("_cal")
    s = p.summary()
    p.reset()
    _POOL.append(p)
    return s["mean_us"]


class Probe:
    def __init__(self, app):
        self.a = app
        self.label = "idle"
        self.ticks = 0
        self.overhead = _overhead()
        self.tick = _POOL.pop()
        self.maint = _POOL.pop()
        self.printed = 0
        self.heap = {"total": gc.mem_free() + gc.mem_alloc()}
        boot = app.boot

        def booted():
            boot()
            gc.collect()                       # before the first tick: nothing timed yet
            self.heap["free_after_boot"] = gc.mem_free()
            self._wrap()
        app.boot = booted

    def _wrap(self):
        a = self.a
        sn = a.sensors
        wrap0(sn.pot, "read", "read pot")
        wrap0(sn.current, "read_ma", "read current")
        wrap0(sn.rail, "read_mv", "read rail")
        wrap0(sn.switch, "read", "read switch")
        wrap0(sn.beam, "read", "read beam")
        wrap0(sn.estop, "read", "read e-stop")
        wrap1(a.m, "step", "machine.step")
        wrap3(a.motion, "tick", "motion.tick")
        wrap5(ctl_mod, "drive_servos", "servo drive")     # (servos, joints, jaw, dt, the arm's zeros)
        wrap1(a, "_link", "link (incl. telemetry)")
        if hasattr(a, "tel"):           # this firmware: the frame over three ticks, _led(now, busy)
            wrap1(a.tel, "step", "telemetry frame")
            wrap2(a, "_led", "LED")
        else:                           # older firmware: one whole frame, _led(now)
            wrap1(telemetry, "frame", "telemetry frame")
            wrap1(a, "_led", "LED")
        wrap1(a, "_at_rest", "housekeeping at rest")
        tick = a.tick
        me = self

        def timed_tick(now):
            t = _us()
            tick(now)
            us = _diff(_us(), t)
            me.after(us)
        a.tick = timed_tick

    def after(self, us):
        a = self.a
        job = a.m.busy()          # a job (calibration at rest is not the cycle)
        if self.label == "idle" and job:
            # the job's handler collected after planning every attempt: what is left now
            self.heap["free_at_job_start"] = gc.mem_free()
            self._flush("idle")
            self.label = "cycle"
        if self.label == "rest":
            return
        (self.maint if a.flash_tick else self.tick).add(us)
        self.ticks += 1
        if self.label == "idle" and not self.printed and self.ticks >= IDLE_TICKS:
            self._flush("idle")
            self.printed = 1
        elif self.label == "cycle" and ((not a.busy() and not getattr(a, "cycle_end", 0))
                                        or (CYCLE_TICKS and self.ticks >= CYCLE_TICKS)):
            self._flush("cycle")
            self.label = "rest"

    def _flush(self, label):
        if self.ticks == 0 or (label == "idle" and self.printed):
            self._reset()
            return
        a = self.a
        out = {"label": label, "ticks": self.ticks, "overhead_us": self.overhead,
               "tick": self.tick.summary(), "maintenance": self.maint.summary(),
               "phases": {k: v.summary() for k, v in PHASES.items()}, "heap": self.heap,
               "loop": {"overruns": a.stats.overruns, "late": a.stats.late,
                        "gc_count": getattr(a.stats, "gc_count", -1)}}
        # Streamed: one string of the whole report would need a block the firmware's heap
        # may not have free in one piece mid-cycle.
        sys.stdout.write("CHIPTICK ")
        json.dump(out, sys.stdout)
        sys.stdout.write("\n")
        self._reset()

    def _reset(self):
        self.ticks = 0
        self.tick.reset()
        self.maint.reset()
        for v in PHASES.values():
            v.reset()
