# What the firmware on the emulated chip read, tick by tick, rebuilt from what the engine saw
# from outside: the ADC conversions (time, channel, counts) and, per period, the pin levels it
# drove, the pulses the PWM slices showed and the state the EVENT frames had said. Every
# read_inputs() of the firmware (boot sense and tick alike) converts pot, current and rail in
# that order, so one group of conversions starting at the pot channel is one read.
#
# The result is the exchange log of engines/world_service.py (EXCHANGE_FIELDS, one entry per
# read), which engines/vboard.py's shadow controller replays: entry k holds the readings of the
# k-th read, the firmware's clock then (ms), and the pulses and state as they stood just before
# the period of that read began (what the previous tick wrote).
import bisect

from surepick.host.engines.world_service import EXCHANGE_FIELDS
from surepick.host.engines.rp2040.wiring import KEEP, NO_STATE, u16_of


class Read:
    __slots__ = ("t_us", "window", "pot", "current", "rail", "complete")

    def __init__(self, t_us, window):
        self.t_us = t_us          # first conversion of the read (emulated us)
        self.window = window      # index of the period it began in
        self.pot = None
        self.current = None
        self.rail = None
        self.complete = False


def reads(windows, conversions, pins):
    """-> [Read] in order: one per read_inputs() the firmware made."""
    starts = [w.start_us for w in windows]
    out = []
    cur = None
    for t, ch, v in conversions:
        if ch == pins.adc_pot:
            w = bisect.bisect_right(starts, t) - 1
            cur = Read(t, max(w, 0))
            cur.pot = u16_of(v)
            out.append(cur)
        elif cur is not None and ch == pins.adc_current and cur.current is None:
            cur.current = u16_of(v)
        elif cur is not None and ch == pins.adc_rail and cur.rail is None:
            cur.rail = u16_of(v)
            cur.complete = cur.current is not None
    return [r for r in out if r.complete]


def exchange_log(windows, conversions, pins, conn=1):
    """-> (log, reads): the EXCHANGE_FIELDS tuples for one controller life (windows of
    connection `conn`) and the Reads they came from."""
    life = [w for w in windows if w.conn == conn]
    if not life:
        return [], []
    first, last = life[0].start_us, life[-1].end_us
    rs = reads(life, [c for c in conversions if first <= c[0] < last], pins)
    base_ms = 0 if conn == 1 else life[0].start_us // 1000
    log = []
    prev_ms = None
    for r in rs:
        w = life[r.window]
        before = life[r.window - 1] if r.window > 0 else None
        now_ms = int(r.t_us // 1000) - base_ms
        advance = 0 if prev_ms is None else now_ms - prev_ms
        prev_ms = now_ms
        if before is None or before.pulses is None:
            pulses = (KEEP,) * 5
        else:
            pulses = tuple(before.pulses)
        state = NO_STATE if before is None or before.state is None else before.state
        _pot, _cur, _rail, estop, switch, beam = w.inputs
        flags = (1 if estop else 0) | (2 if switch else 0) | (4 if beam else 0)
        log.append((conn, advance) + pulses + (state, now_ms & 0xFFFFFFFF, r.pot, r.current, r.rail, flags))
    assert all(len(e) == len(EXCHANGE_FIELDS) for e in log)
    return log, rs
