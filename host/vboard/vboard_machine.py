# Runs INSIDE the virtual board's `micropython` as the module `machine` (boot_shim.py loads it in
# place of the unix port's own, whose mem8/16/32, PinBase, Signal, idle and time_pulse_us it
# passes on), never under CPython. It adds what a first program on a Pico reaches for, as the
# rp2 port spells it (ports/rp2/machine_pin.c, machine_adc.c, machine_pwm.c, modmachine.c): Pin,
# ADC, PWM, unique_id, reset, soft_reset, freq, reset_cause and its constants, on the virtual
# bench's wiring (vboard_io): LED GP25, e-stop GP13, switch GP14, beam GP15, ADC0-2 pot,
# current, rail, servos on GP2-6 (their PWM pulses drive the plant's servos).
# Not emulated: Pin.irq, WDT, Timer, RTC, buses (I2C, SPI, UART), bootloader; mem32 only as a
# register file, and only for a board started as a model (vboard_model.py).
from umachine import *  # noqa: F401,F403  (the unix port's machine)

import binascii
import time

import vboard_ctl as _ctl
import vboard_io as _io
import vboard_model as _model
import vboard_settings as _vs

# A board started as a Pico model reports that model and has its chip's registers behind mem32
# (vboard_model.py); otherwise mem32 is the unix port's (the host process's memory).
_registers = _model.install()
if _registers is not None:
    mem32 = _registers

PWRON_RESET = 1
WDT_RESET = 3

_NGPIO = 30
_freq = [125000000]                  # RP2040 default system clock


def unique_id():
    # 8 bytes, like the Pico's flash chip id: kept with the flash directory (stable per flash).
    return binascii.unhexlify(_vs.UNIQUE_ID)


def reset():
    _ctl.reset(_ctl.HARD)


def soft_reset():
    _ctl.reset(_ctl.SOFT)


def reset_cause():
    return _vs.RESET_CAUSE


def freq(hz=None):
    if hz is None:
        return _freq[0]
    hz = int(hz)
    if not 10000000 <= hz <= 300000000:
        raise ValueError("cannot change frequency")
    _freq[0] = hz


def lightsleep(ms=None):
    if ms is None:
        while True:
            time.sleep_ms(1000)
    time.sleep_ms(ms)


def deepsleep(ms=None):
    # rp2: sleep, then wake through a reset.
    lightsleep(ms)
    reset()


def disable_irq():
    return 0


def enable_irq(state=0):
    pass


def _gpio(pin):
    if isinstance(pin, Pin):
        return pin._id
    if isinstance(pin, str):
        name = pin.upper()
        if name == "LED":
            return _io.LED_GPIO
        if name.startswith("GPIO"):
            name = name[4:]
        elif name.startswith("GP"):
            name = name[2:]
        try:
            pin = int(name)
        except ValueError:
            raise ValueError("unknown named pin \"%s\"" % pin)
    if not isinstance(pin, int) or not 0 <= pin < _NGPIO:
        raise ValueError("invalid pin")
    return pin


class Pin:
    IN = 0
    OUT = 1
    OPEN_DRAIN = 2
    ALT = 3
    PULL_UP = 1
    PULL_DOWN = 2
    IRQ_FALLING = 4
    IRQ_RISING = 8

    def __init__(self, id, mode=-1, pull=-1, *, value=None, alt=-1):
        self._id = _gpio(id)
        self.init(mode, pull, value=value, alt=alt)

    def init(self, mode=-1, pull=-1, *, value=None, alt=-1):
        g = self._id
        if value is not None:
            _io.gpio_out[g] = 1 if value else 0
        if mode != -1:
            if mode not in (0, 1, 2, 3):
                raise ValueError("invalid pin mode")
            _io.gpio_mode[g] = mode
            if pull == -1:
                pull = None
        if pull != -1:
            if pull not in (None, 0, 1, 2):
                raise ValueError("invalid pull")
            _io.gpio_pull[g] = pull or 0

    def value(self, v=None):
        if v is None:
            return _io.pin_level(self._id)
        _io.gpio_out[self._id] = 1 if v else 0

    def __call__(self, v=None):
        return self.value(v)

    def on(self):
        _io.gpio_out[self._id] = 1

    def off(self):
        _io.gpio_out[self._id] = 0

    high = on
    low = off

    def toggle(self):
        g = self._id
        _io.gpio_out[g] ^= 1

    def mode(self, mode=None):
        if mode is None:
            return _io.gpio_mode[self._id]
        self.init(mode, -1)

    def pull(self, pull=None):
        if pull is None:
            return _io.gpio_pull[self._id] or None
        self.init(-1, pull)

    def irq(self, *args, **kw):
        raise NotImplementedError("Pin.irq is not emulated on the virtual board")

    def __repr__(self):
        g = self._id
        m = _io.gpio_mode[g]
        s = "Pin(GPIO%d, mode=%s" % (g, ("IN", "OUT", "OPEN_DRAIN", "ALT")[m])
        p = _io.gpio_pull[g]
        if p:
            s += ", pull=%s" % ("PULL_UP", "PULL_DOWN")[p - 1]
        return s + ")"


# ADC channel -> counts read_u16 returns when nothing on the bench drives it: ch3 is VSYS/3
# (5 V on USB), ch4 the core temperature sensor (0.706 V at 27 C); 12-bit, scaled to 16 like rp2.
def _u16(volts):
    raw = int(volts * 4095 / 3.3 + 0.5)
    return (raw << 4) | (raw >> 8)


_FIXED = {3: _u16(5.0 / 3), 4: _u16(0.706)}


class ADC:
    CORE_TEMP = 4

    def __init__(self, pin):
        if isinstance(pin, int) and 0 <= pin <= 4:
            ch = pin
        else:
            g = _gpio(pin)
            if not 26 <= g <= 29:
                raise ValueError("Pin doesn't have ADC capabilities")
            ch = g - 26
        self._ch = ch

    def read_u16(self):
        ch = self._ch
        if ch < 3:
            _io.sync()
            return _io.adc[ch]
        return _FIXED[ch]

    def __repr__(self):
        return "<ADC channel=%d>" % self._ch


# PWM: one frequency per slice (GPIO n is slice (n >> 1) & 7, channel n & 1), a duty per GPIO.
_slice_freq = [0] * 8
_duty = {}                           # gpio -> ("ns", value) or ("u16", value)


class PWM:
    def __init__(self, dest, *, freq=None, duty_u16=None, duty_ns=None, invert=False):
        self._g = _gpio(dest)
        self._invert = 1 if invert else 0
        _io.gpio_mode[self._g] = 3
        self.init(freq=freq, duty_u16=duty_u16, duty_ns=duty_ns)

    def init(self, *, freq=None, duty_u16=None, duty_ns=None, invert=None):
        if invert is not None:
            self._invert = 1 if invert else 0
        if freq is not None:
            self.freq(freq)
        if duty_ns is not None:
            self.duty_ns(duty_ns)
        elif duty_u16 is not None:
            self.duty_u16(duty_u16)

    def _slice(self):
        return (self._g >> 1) & 7

    def freq(self, f=None):
        s = self._slice()
        if f is None:
            return _slice_freq[s]
        f = int(f)
        if f < 8:
            raise ValueError("freq too small")
        if f > _freq[0] // 2:
            raise ValueError("freq too large")
        _slice_freq[s] = f
        self._apply()

    def duty_u16(self, d=None):
        if d is None:
            kind, v = _duty.get(self._g, ("u16", 0))
            if kind == "u16":
                return v
            f = _slice_freq[self._slice()]
            return min(65535, v * f * 65536 // 1000000000) if f else 0
        d = int(d)
        if not 0 <= d <= 65536:
            raise ValueError("duty_u16 must be from 0 to 65536")
        _duty[self._g] = ("u16", d)
        self._apply()

    def duty_ns(self, ns=None):
        if ns is None:
            kind, v = _duty.get(self._g, ("ns", 0))
            if kind == "ns":
                return v
            f = _slice_freq[self._slice()]
            return v * 1000000000 // (f * 65536) if f else 0
        ns = int(ns)
        if ns < 0:
            raise ValueError("duty_ns must be >= 0")
        _duty[self._g] = ("ns", ns)
        self._apply()

    def deinit(self):
        _duty.pop(self._g, None)
        _io.set_pulse_from_gpio(self._g, 0)

    def _apply(self):
        # The high time of each period is what a hobby servo reads as its pulse.
        f = _slice_freq[self._slice()]
        if not f or self._g not in _duty:
            return
        high_ns = self.duty_ns()
        period_ns = 1000000000 // f
        if self._invert:
            high_ns = period_ns - high_ns
        _io.set_pulse_from_gpio(self._g, max(0, min(high_ns, period_ns)) // 1000)

    def __repr__(self):
        return "<PWM slice=%d channel=%d invert=%d>" % (self._slice(), self._g & 1, self._invert)
