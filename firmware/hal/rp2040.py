# The board HAL for the Raspberry Pi Picos (Pico, Pico W, Pico 2, Pico 2 W; RP2040 and RP2350: the
# chip's registers and pins come from rp2_chips.py): the ONLY firmware module that imports `machine` and
# `time`. Everything above it (drivers, app) gets this module handed in as `hal` and calls only
# the functions below, so the same firmware runs against hal/virtual.py (the virtual board,
# lockstep with the MuJoCo plant) and against hal/scripted.py (the tests' stand-in).
# The functions and RESET_* constants it provides are the BOARD level of hal/contract.py.
import sys
import time

import machine

from ...shared_fsm.ticks import ticks_add, ticks_diff  # noqa: F401  (part of the HAL's API)

from ...shared_fsm.compat import const, micropython
from .contract import RESET_HARD, RESET_POWER_ON, RESET_SOFT, RESET_UNKNOWN, RESET_WATCHDOG
from . import rp2_chips

NAME = "rp2040"
SERVO_FREQ_HZ = const(50)
_TICKS_MASK = const(0x3FFFFFFF)
# The board this runs on, from its machine string: the chip's watchdog CTRL through its atomic
# bit-clear alias (0 on a chip the table does not know: then nothing is written), where the LED
# and the ADC inputs are.
BOARD = rp2_chips.this_board()
_wdt_ctrl_clear = BOARD.watchdog_ctrl_clear()
_HOLD_MS = const(20)       # after an e-stop at the REPL, the frozen pulses are written again this often

_pwms = [None, None, None, None, None]
_duty = [None, None, None, None, None]   # the PWMs' bound duty_ns: one lookup less per write
_pulses = [0, 0, 0, 0, 0]
_pin_map = None           # the Pins handed to setup: its servo tuple is read at pwm_start
_adcs = [None, None, None]
_adc_read = [None, None, None]       # bound read_u16 per channel
_pins = {}
_pin_value = {}                      # bound value() per input GPIO
_led = None
_wdt = None
_estop_gpio = -1
_held = None               # the pulses an e-stop at the REPL froze (None: not pressed since Ctrl-C)
_hold_timer = None
_poll = None
_stdin = None
_stdout = None
_byte = None     # console_read_byte's buffer


def setup(pins):
    # Inputs first (they cost nothing and recovery reads them before any servo moves).
    global _pin_map, _led, _poll, _stdin, _stdout, _estop_gpio, _byte
    import select
    # A watchdog left running by the previous run (a soft reset after a crash keeps it) would
    # bite in the middle of this boot: the loop starts its own once the boot is done.
    _stop_watchdog()
    _pin_map = pins
    _estop_gpio = pins.estop
    for ch in (pins.adc_pot, pins.adc_current, pins.adc_rail):
        _adcs[ch] = machine.ADC(BOARD.adc_gpio0 + ch)
        _adc_read[ch] = _adcs[ch].read_u16
    for gpio in (pins.estop, pins.switch, pins.beam):
        _pins[gpio] = machine.Pin(gpio, machine.Pin.IN, machine.Pin.PULL_UP)
        _pin_value[gpio] = _pins[gpio].value
    # On a Pico W / Pico 2 W the LED is on the radio chip and GP25 is the radio's chip select.
    _led = machine.Pin("LED" if BOARD.led_is_radio(pins.led) else pins.led, machine.Pin.OUT)
    _stdin = sys.stdin.buffer if hasattr(sys.stdin, "buffer") else sys.stdin
    _stdout = sys.stdout.buffer if hasattr(sys.stdout, "buffer") else sys.stdout
    _poll = select.poll()
    _poll.register(sys.stdin, select.POLLIN)
    _byte = bytearray(1)


def pwm_start(pulses_us):
    # One PWM per servo, created with its first pulse so the servo never sees a default width.
    # The pins are the arm description's (the controller sets pins.servo after setup, when it has
    # read /arm.json); a slot without a pin (-1: no servo there, or no valid description) gets
    # no PWM, and the controller never drives it.
    pins = _pin_map.servo
    for i in range(5):
        us = pulses_us[i]
        _pulses[i] = us
        if pins[i] < 0:
            continue
        _pwms[i] = machine.PWM(machine.Pin(pins[i]), freq=SERVO_FREQ_HZ, duty_ns=us * 1000)
        _duty[i] = _pwms[i].duty_ns


@micropython.native
def set_pulse_us(index, us):
    if us != _pulses[index]:
        _pulses[index] = us
        _duty[index](us * 1000)


def pulse_us(index):
    return _pulses[index]


@micropython.native
def read_u16(adc):
    return _adc_read[adc]()


@micropython.native
def read_pin(gpio):
    return _pin_value[gpio]()


def led(on):
    _led.value(1 if on else 0)


_ticks_ms = time.ticks_ms
_ticks_us = time.ticks_us


@micropython.native
def ticks_ms():
    return _ticks_ms() & _TICKS_MASK


@micropython.native
def ticks_us():
    return _ticks_us() & _TICKS_MASK


@micropython.native
def cpu_us():
    return _ticks_us() & _TICKS_MASK


# ticks_add / ticks_diff: the shared wrap-safe arithmetic (2**30 period), imported above.


def wait_until_us(deadline_us):
    # machine.idle() waits for the next interrupt (at least the 1 ms systick): sleep_us for the
    # last stretch keeps the period exact without a hot spin.
    while True:
        left = ticks_diff(deadline_us, ticks_us())
        if left <= 0:
            return
        if left > 1200:
            machine.idle()
        else:
            time.sleep_us(left)
            return


def sleep_ms(ms):
    time.sleep_ms(ms)


def wdt_start(timeout_ms):
    global _wdt
    if timeout_ms > 0 and _wdt is None:
        _wdt = machine.WDT(timeout=timeout_ms if timeout_ms < 8300 else 8300)


def wdt_feed():
    if _wdt is not None:
        _wdt.feed()


def wdt_stop():
    # The loop has stopped for good (Ctrl-C: a human or mpremote has the REPL). MicroPython's WDT
    # has no stop, and feeding it from a soft timer is not enough: the watchdog runs on through
    # a soft reset, soft timers do not, so it would bite in the middle of mpremote's raw-REPL
    # session (a deploy). The chip can stop it: clear CTRL.ENABLE. main.py starts it again with
    # the loop.
    global _wdt
    _stop_watchdog()
    _wdt = None


def _stop_watchdog():
    if _wdt_ctrl_clear:
        machine.mem32[_wdt_ctrl_clear] = rp2_chips.WATCHDOG_CTRL_ENABLE


# ---- the e-stop while a human has the REPL ----

def guard_estop():
    # After Ctrl-C nothing runs the loop: the servos keep their last pulses (the PWM runs on) and
    # nothing read the e-stop. From here a pin interrupt does: the contact is normally closed to
    # ground with a pull-up, so a press (or a cut wire) is a rising edge. Until the next boot.
    p = _pins[_estop_gpio]
    p.irq(handler=_estop_pressed, trigger=machine.Pin.IRQ_RISING)
    if p.value():
        _estop_pressed(p)          # pressed already


def _estop_pressed(pin):
    # Freeze every servo at the pulse it has at the press, read back from the PWM hardware (REPL
    # code may have moved it since Ctrl-C), refuse this HAL's pulse writes from now on, and write
    # the frozen pulses again every 20 ms (one servo frame), which undoes REPL code driving the
    # servo PWM directly within a frame.
    global _held, _hold_timer, set_pulse_us, pwm_start
    if _held is not None:
        return
    held = [0, 0, 0, 0, 0]
    for i in range(5):
        if _pwms[i] is not None:
            held[i] = (_pwms[i].duty_ns() + 500) // 1000
    _held = held
    set_pulse_us = _refuse_pulse
    pwm_start = _refuse_start
    _hold()
    _hold_timer = machine.Timer(-1, period=_HOLD_MS, mode=machine.Timer.PERIODIC, callback=_hold)


def _hold(t=None):
    for i in range(5):
        if _pwms[i] is not None:
            _pwms[i].duty_ns(_held[i] * 1000)


def _refuse_pulse(index, us):
    pass


def _refuse_start(pulses_us):
    pass


def reset_cause():
    c = machine.reset_cause()
    if c == getattr(machine, "PWRON_RESET", -1):
        return RESET_POWER_ON
    if c == getattr(machine, "WDT_RESET", -1):
        return RESET_WATCHDOG
    if c == getattr(machine, "SOFT_RESET", -1):
        return RESET_SOFT
    if c == getattr(machine, "HARD_RESET", -1):
        return RESET_HARD
    return RESET_UNKNOWN


def unique_id():
    return "".join("%02x" % b for b in machine.unique_id())


@micropython.native
def console_read_byte():
    # select.poll with a zero timeout: read only when a byte is waiting, so it never blocks.
    # readinto a kept buffer, not read(1): each new bytes object cost a search of the loop's
    # heap, and a 32-byte request read took 4.4-4.9 ms on the chip (docs/rp2040.md, what a
    # tick costs). ipoll allocates nothing.
    for _ in _poll.ipoll(0):
        if _stdin.readinto(_byte):
            return _byte[0]
    return -1


def console_write(data):
    _stdout.write(data)
