# What a bad request line costs the running firmware's loop, under the unix `micropython`:
#   python tools/mpy_sources.py tools/bench/cmdfuzz_timing.py [--lines N] [--seed S] [--tiny]
# (--tiny: 200 lines, for the tests; its figures mean nothing)
# firmware/app.py's App on the scripted stand-in HAL (firmware/hal/scripted.py) in virtual time,
# fed random and mutated lines one after the other (at most link_rx_bytes a tick, as on the
# board). For every line, the loop's own measurement of the ticks that read it (LoopStats'
# last_step_us: CPU time of App.tick) is taken ONCE, as it came: no GC forced before it, no line
# fed twice. The figures: ticks that took a line vs ticks that did not (median, p99, worst), and
# how many line ticks went over twice the loop period. Correctness of the answers is the test's
# job (tests/firmware/test_firmware_cmdfuzz.py); this only times them.
# The figures are for this x86 machine; on an RP2040 a tick costs roughly 50-100x more
# (../shared/rp2040/README.md).
import sys
import time
from array import array
import gc

from surepick.shared_fsm import link  # noqa: E402
from surepick.shared_fsm.config import Config  # noqa: E402
from surepick.firmware import cmdparse  # noqa: E402
from surepick.firmware.hal.scripted import ScriptedHal, StopRun  # noqa: E402
from surepick.firmware import app as app_mod  # noqa: E402


def arg(name, default):
    a = sys.argv
    return int(a[a.index(name) + 1]) if name in a else default


TINY = "--tiny" in sys.argv
LINES = arg("--lines", 200 if TINY else 10000)
SEED = arg("--seed", 20241201)


class Hist:
    # Tick times without storing them (a list of 10,000 would itself be garbage for the collector
    # being measured, and does not fit a Pico-sized heap): exact below 2048 us, 32 us buckets
    # above (up to about 67 ms); the worst exactly. Allocated before the firmware is imported.
    def __init__(self):
        self.b = array("i", bytes(4 * 4096))
        self.n = 0
        self.worst = 0
        self.over = 0

    def add(self, us, limit):
        i = us if us < 2048 else 2048 + (us - 2048) // 32
        self.b[i if i < 4096 else 4095] += 1
        self.n += 1
        if us > self.worst:
            self.worst = us
        if us > limit:
            self.over += 1

    def pct(self, p):
        # the p-th percentile (bucket's lower edge)
        want = (self.n - 1) * p // 100
        seen = 0
        for i in range(4096):
            seen += self.b[i]
            if seen > want:
                return i if i < 2048 else 2048 + (i - 2048) * 32
        return 0

    def text(self):
        return "median %d p99 %d worst %d (%d ticks)" % (self.pct(50), self.pct(99), self.worst, self.n)


LINE = Hist()           # the worst tick of each line
READING = Hist()        # every tick that read bytes of a line (comparable with IDLE tick for tick)
LINE_GC = Hist()        # ... of lines during whose ticks the heap was collected
IDLE = Hist()           # ticks that took no line

PRINTABLE = b" !#$%&()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[]^_abcdefghijklmnopqrstuvwxyz{|}~"
REQUESTS = [t for t in sorted(link.SCHEMA) if link.is_request(t)]


class Rng:
    # xorshift32: a seed names one run
    def __init__(self, seed):
        self.s = (seed & 0xFFFFFFFF) or 1

    def below(self, n):
        x = self.s
        x ^= (x << 13) & 0xFFFFFFFF
        x ^= x >> 17
        x ^= (x << 5) & 0xFFFFFFFF
        self.s = x
        return x % n


def a_request(rng):
    # A valid request of a random type with in-range fields (then spoiled by the caller).
    t = REQUESTS[rng.below(len(REQUESTS))]
    _, least, kinds, _ = link.SCHEMA[t]
    f = [1 + rng.below(65535)]
    for k in kinds[1:least]:
        if k == link.K_TOK:
            f.append("key_%d" % rng.below(1000))
        else:
            lo, hi = link.KIND_LO[k], link.KIND_HI[k]
            f.append(lo + rng.below(hi - lo + 1))
    return link.encode(t, f)[:-1]


def spoil(rng, b):
    for _ in range(1 + rng.below(3)):
        if len(b) < 3:
            break
        i = 1 + rng.below(len(b) - 1)
        r = rng.below(4)
        if r == 0:
            b = b[:i] + bytes([b[i] ^ (1 << rng.below(8))]) + b[i + 1:]
        elif r == 1:
            b = b[:i] + b[i + 1:]
        elif r == 2:
            b = b[:i] + bytes([rng.below(256)]) + b[i:]
        else:
            b = b[:i]
    return b


def a_line(rng):
    k = rng.below(5)
    if k == 0:
        return bytes([PRINTABLE[rng.below(len(PRINTABLE))] for _ in range(rng.below(120))])
    if k == 1:
        return b"\x1eSP1p," + bytes([PRINTABLE[rng.below(len(PRINTABLE))] for _ in range(260 + rng.below(300))])
    return spoil(rng, a_request(rng))


def main():
    rng = Rng(SEED)
    hal = ScriptedHal(Config(), {})
    root = "/tmp/surepick_cmdfuzz_bench_%d" % (time.ticks_us() & 0xFFFFFF)
    import os
    os.mkdir(root)
    a = app_mod.App(hal, root=root)
    hal.out = a.m.out
    period_us = a.cfg.loop_period_ms * 1000
    limit = 2 * period_us
    st = {"left": LINES, "busy": 0, "worst": 0, "gc": 0, "free": 0}

    def on_tick(h):
        if a.stats.ticks == 0:
            return                        # booting
        step = a.stats.last_step_us
        collected = gc.mem_free() > st["free"]     # only the tick ran since the last look
        if st["busy"]:
            READING.add(step, limit)
            if step > st["worst"]:
                st["worst"] = step
            st["gc"] |= collected
            if h.in_pos < len(h.console_in):
                st["free"] = gc.mem_free()
                return
            LINE.add(st["worst"], limit)  # the line's figure: its first and only run
            if st["gc"]:
                LINE_GC.add(st["worst"], limit)
            st["busy"] = 0
        elif not a.flash_tick:
            IDLE.add(step, limit)
        h.console_out = bytearray()
        if st["left"] == 0:
            raise StopRun()
        line = None
        if IDLE.n >= LINE.n // 4:         # every 5th tick takes no line, to time plain ticks
            line = a_line(rng).replace(b"\n", b"\x0b").replace(b"\x03", b"\x02")
            if cmdparse.parse_line(line)[0] == link.OK:
                line = None               # valid after all: it would act (a job): skip
        if line is not None:
            st["left"] -= 1
            st["worst"] = 0
            st["gc"] = 0
            st["busy"] = 1
            h.send(line + b"\n")
        st["free"] = gc.mem_free()

    hal.on_tick = on_tick
    try:
        a.run()
    except StopRun:
        pass
    for name in os.listdir(root + "/log"):
        os.remove(root + "/log/" + name)
    os.rmdir(root + "/log")
    os.rmdir(root)
    print("cmdfuzz_timing: %d bad lines into the running loop (seed %d), %d other ticks"
          % (LINE.n, SEED, IDLE.n))
    print("line_tick_us " + LINE.text())
    print("reading_tick_us " + READING.text() + ", over 2x: %d" % READING.over)
    print("other_tick_us " + IDLE.text() + ", over 2x: %d" % IDLE.over)
    print("line ticks over 2x the %d us period: %d of %d (first measurement, no forced GC, no retries)"
          % (period_us, LINE.over, LINE.n))
    print("lines whose ticks collected the heap: %d, %s; over 2x: %d"
          % (LINE_GC.n, LINE_GC.text(), LINE_GC.over))


main()
