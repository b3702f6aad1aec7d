# The scripted board HAL: a stand-in for a real board in tests and benchmarks, on both
# interpreters (tests/mpy/fw_*.py and tools/bench/fw_loop.py under `micropython`, the conformance test
# under CPython too). The BOARD level of hal/contract.py as the methods of one object, in virtual
# time: behind the pins sits the shared FakeHal (the scripted arm of shared_fsm/fake_hal.py), its
# logical readings turned into raw read_u16 counts and pin levels, and the gripper's command read
# back from the PWM pulse the firmware wrote. Host and test only: not in the manifest.
import time

from ...shared_fsm import servo_cal
from ...shared_fsm.fake_hal import FakeHal
from ...shared_fsm.machine import Inputs
from . import contract

try:
    from time import ticks_us as _cpu_clock_us
except ImportError:      # CPython
    def _cpu_clock_us():
        return time.perf_counter_ns() // 1000

_MASK = 0x3FFFFFFF
_HALF = 0x20000000
START_MS = (1 << 30) - 3000      # runs cross the 2**30 tick wrap


class StopRun(Exception):
    pass


class _OutProxy:
    # What the FakeHal's actuate() reads: the move from the machine, the jaw from the pulse.
    def __init__(self):
        self.move_seq = 0
        self.x_um = 0
        self.y_um = 0
        self.z_um = 0
        self.jaw_um = 0
        self.hold = 0


class ScriptedHal:
    RESET_UNKNOWN = contract.RESET_UNKNOWN
    RESET_POWER_ON = contract.RESET_POWER_ON
    RESET_WATCHDOG = contract.RESET_WATCHDOG
    RESET_SOFT = contract.RESET_SOFT
    RESET_HARD = contract.RESET_HARD

    def __init__(self, cfg, options=None, start_ms=START_MS, period_ms=2, cause=contract.RESET_POWER_ON):
        self.fake = FakeHal(cfg, options or {})
        self.period = period_ms
        self.now = start_ms
        self.cause = cause
        self.pins = None
        self.pulses = [0, 0, 0, 0, 0]
        self.pwm_started = 0
        self.pulse_log = []          # (t_ms, index, us) of every pulse change, if log_pulses
        self.log_pulses = 0
        self.adc = [8000 + 30 * 1067, 1000, 36400]
        self.levels = {}
        self.led_on = 0
        self.wdt_ms = 0
        self.feeds = 0
        self.last_feed = -1          # virtual ms of the last feed
        self.wdt_stopped = 0
        self.estop_guarded = 0
        self.console_in = bytearray()
        self.in_pos = 0
        self.console_out = bytearray()
        self.out = None              # the machine's Outputs, attached by the test
        self.proxy = _OutProxy()
        self.inp = Inputs()
        self.ticks = 0
        self.on_tick = None          # callback(hal) after every tick; may raise StopRun
        self.estop_override = -1
        self.sense_enabled = 1

    # ---- wiring ----
    def setup(self, pins):
        self.pins = pins
        self.levels = {pins.estop: 0, pins.switch: 1, pins.beam: 1}
        self._sense()

    def pwm_start(self, pulses):
        self.pwm_started = 1
        for i in range(5):
            self.pulses[i] = pulses[i]
            self.pulse_log.append((self.now, i, pulses[i]))

    def set_pulse_us(self, i, us):
        self.pulses[i] = us
        if self.log_pulses:
            self.pulse_log.append((self.now, i, us))

    def read_u16(self, ch):
        return self.adc[ch]

    def read_pin(self, gpio):
        return self.levels[gpio]

    def led(self, on):
        self.led_on = on

    # ---- time ----
    def ticks_ms(self):
        return self.now & _MASK

    def ticks_us(self):
        return (self.now * 1000) & _MASK

    def cpu_us(self):
        return _cpu_clock_us() & _MASK

    def ticks_add(self, t, d):
        return (t + d) & _MASK

    def ticks_diff(self, a, b):
        return ((a - b + _HALF) & _MASK) - _HALF

    def wait_until_us(self, deadline):
        left = self.ticks_diff(deadline, self.ticks_us())
        self._advance((left + 999) // 1000 if left > 0 else 0)

    def sleep_ms(self, ms):
        self._advance(ms)

    def _advance(self, ms):
        while ms > 0:
            step = self.period if ms >= self.period else ms
            if self.out is not None and self.pwm_started:
                self._actuate()
            self.now = (self.now + step) & _MASK
            ms -= step
            self._sense()
        self.ticks += 1
        if self.on_tick is not None:
            self.on_tick(self)

    def _actuate(self):
        p = self.proxy
        o = self.out
        p.move_seq = o.move_seq
        p.x_um = o.x_um
        p.y_um = o.y_um
        p.z_um = o.z_um
        p.hold = o.hold
        us = self.pulses[4]
        if us:
            p.jaw_um = servo_cal.servo_mdeg_from_pulse(servo_cal.DEFAULT_CAL, us) // servo_cal.JAW_MDEG_PER_UM
        self.fake.actuate(self.now, p)

    def _sense(self):
        if not self.sense_enabled or self.pins is None:
            return
        inp = self.inp
        self.fake.sense(self.now, inp)
        pc = inp.pot_counts
        self.adc[self.pins.adc_pot] = 0 if pc < 0 else (65535 if pc > 65535 else pc)
        c = 1000 + inp.current_ma * 19859 // 1000
        self.adc[self.pins.adc_current] = 0 if c < 0 else (65535 if c > 65535 else c)
        self.adc[self.pins.adc_rail] = inp.rail_mv * 65535 // 9900
        self.levels[self.pins.switch] = 1 - inp.switch_pressed
        self.levels[self.pins.beam] = 1 - inp.beam_broken
        e = inp.estop if self.estop_override < 0 else self.estop_override
        self.levels[self.pins.estop] = e

    # ---- watchdog, identity ----
    def wdt_start(self, ms):
        self.wdt_ms = ms

    def wdt_feed(self):
        self.feeds += 1
        self.last_feed = self.now

    def wdt_stop(self):
        self.wdt_stopped = 1

    def guard_estop(self):
        self.estop_guarded = 1

    def reset_cause(self):
        return self.cause

    def unique_id(self):
        return "e6605838833b2f2c"

    # ---- console ----
    def console_read_byte(self):
        # an index into the input, so reading allocates nothing (the firmware's tick is measured)
        if self.in_pos >= len(self.console_in):
            return -1
        b = self.console_in[self.in_pos]
        self.in_pos += 1
        return b

    def console_write(self, data):
        self.console_out.extend(data)

    def send(self, frame):
        if self.in_pos >= len(self.console_in):
            self.console_in = bytearray()
            self.in_pos = 0
        self.console_in.extend(frame)

    def run_app(self, app, on_tick):
        # App.run() with on_tick(hal) called between ticks, until on_tick raises StopRun.
        self.on_tick = on_tick
        try:
            app.run()
        except StopRun:
            pass

    def frames(self, start=0):
        # Decoded board -> host frames written so far (from byte `start` of the output, a frame
        # boundary): [(ftype, fields)]
        from ...shared_fsm import link
        out = []
        for line in bytes(self.console_out[start:]).split(b"\n"):
            if line:
                err, ftype, fields = link.decode(line + b"\n")
                if err == 0:
                    out.append((ftype, fields))
        return out
