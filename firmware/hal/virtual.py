# The VIRTUAL board HAL: the functions of hal/rp2040.py, run by the unix `micropython` inside the
# virtual board (host/vboard). main.py picks it by platform (hal.for_this_port()). The bench behind it
# is the board's `vboard_io` module, which the virtual board preloads as a Pico has `machine`
# built in: it owns the one lockstep socket to the MuJoCo plant (engines/world_service.py) and
# the pins the board's `machine` module shows too, so the firmware and code typed at the REPL
# see one bench.
#
#   each loop tick, wait_until_us() hands vboard_io the PWM pulses the firmware wrote and how far
#   to advance; the plant advances by exactly that (one loop period) and answers with the clock
#   and every sensor reading for the next tick. ticks_ms()/ticks_us() are the plant's clock, so a
#   run is deterministic and independent of how fast this machine is.
#
# The machine's state for the plant's scenario triggers ("150 ms into LIFT") comes from the EVENT
# frames the firmware writes through console_write() (their to_state field), so triggers fire at
# the same tick on every run. Without a plant the board still runs: real-time clock, an empty
# gripper that follows its pulse, rail 5.5 V, e-stop closed (vboard_io's free run).
# Console I/O stays on the interpreter's real stdin/stdout (the REPL's pty); each frame is
# preceded by a marker that tells the board's supervisor to pass its line ending through as
# written (bare LF, as a Pico's sys.stdout.buffer does) while REPL text gets CRLF.
import sys
import time

import vboard_io as _io

from ...shared_fsm.ticks import ticks_add, ticks_diff  # noqa: F401  (part of the HAL's API)

from ...shared_fsm.compat import const
from .contract import RESET_HARD, RESET_POWER_ON, RESET_SOFT, RESET_UNKNOWN, RESET_WATCHDOG  # noqa: F401
from . import virtual_guard as _guard

try:
    import vboard_settings as _vs
except ImportError:
    _vs = None

NAME = "vboard"
_TICKS_MASK = const(0x3FFFFFFF)
_RAW_LINE = b"\x1b_vboard:rawline\x1b\\"   # the next line's LF stays bare (see above)
_LOOP_MARK = b"\x1b_vboard:loop\x1b\\"      # the loop runs: Ctrl-C as a byte (wdt_start)
_STOP_MARK = b"\x1b_vboard:stop\x1b\\"      # it has stopped for good (wdt_stop)

# ---- state ----
_exchange = _io.exchange
_pulses = _io.pulses
_adc = _io.adc
_levels = _io.levels
_now_ms = 0                # plant clock (lockstep) or real clock (no plant)
_pin_slot = {13: 0, 14: 1, 15: 2}
_adc_slot = [0, 1, 2]      # ADC channel -> reading slot (pot, current, rail)
_led = 0
_wdt_ms = 0
_wdt_fed = 0
_takeover = False          # Ctrl-C: only the e-stop guard's thread talks to the plant from now on
_GUARD_MS = const(5)       # how often the guard reads the e-stop after Ctrl-C (real time)
_CATCH_UP_MS = const(100)  # at most this much plant time per guard step (a stalled host)
_held = None               # the pulses an e-stop at the REPL froze (None: not pressed since Ctrl-C)
_sent = [0, 0, 0, 0, 0]    # the guard's copy of the pulses it sends the plant (before a press)
_stdout = None

console_read_byte = _io.read_byte     # -> -1 | 0..255, never blocks (a held line first)


def exchanges():
    return _io.exchanges


def lockstep():
    return _io.PLANT is not None


# ---- setup ----

def setup(pins):
    global _stdout, _pin_slot
    _pin_slot = {pins.estop: 0, pins.switch: 1, pins.beam: 2}
    _adc_slot[pins.adc_pot] = 0
    _adc_slot[pins.adc_current] = 1
    _adc_slot[pins.adc_rail] = 2
    _io.gpio_mode[pins.led] = 1
    _stdout = sys.stdout.buffer if hasattr(sys.stdout, "buffer") else sys.stdout
    _step(0)                   # the readings as they are now, before anything moves


def pwm_start(pulses_us):
    for i in range(5):
        _pulses[i] = pulses_us[i]


def set_pulse_us(index, us):
    _pulses[index] = us


def pulse_us(index):
    return _pulses[index]


def read_u16(adc):
    return _adc[_adc_slot[adc]]


def read_pin(gpio):
    return _levels[_pin_slot[gpio]]


def led(on):
    global _led
    _led = 1 if on else 0
    _io.gpio_out[_io.LED_GPIO] = _led


# ---- time: one exchange with the bench ----

def _step(advance_ms):
    # Time moves: one exchange with the bench (the plant, or the real clock without one). The
    # watchdog counts virtual time here; the wall-clock side (virtual_guard) counts the time the
    # board spends between steps, so a loop hung in Python is caught too.
    global _now_ms
    g = _guard
    if g.interrupted:            # a Ctrl-C taken by the guard's thread (virtual_guard.py)
        g.interrupted = 0
        raise KeyboardInterrupt
    if _takeover:
        time.sleep_ms(advance_ms)  # the guard's thread keeps the bench going in real time
        return
    g.waiting = 1
    _now_ms = _exchange(advance_ms, _pulses)
    g.waiting = 0
    g.mark = time.ticks_ms()
    if _wdt_ms and ticks_diff(_now_ms, _wdt_fed) > _wdt_ms:
        _bite(ticks_diff(_now_ms, _wdt_fed))


def _bite(silent_ms):
    # What the RP2040's watchdog does when it runs out: reset the chip (the board's supervisor
    # reboots the interpreter with machine.reset_cause() == WDT_RESET).
    sys.stdout.write("\r\nvboard: watchdog reset (not fed for %d ms, timeout %d ms)\r\n"
                     % (silent_ms, _wdt_ms))
    try:
        import vboard_ctl
        vboard_ctl.reset(vboard_ctl.WATCHDOG)
    except ImportError:
        raise SystemExit("watchdog")


# ---- clock ----

def ticks_ms():
    return _now_ms & _TICKS_MASK


def ticks_us():
    return (_now_ms * 1000) & _TICKS_MASK


def cpu_us():
    return time.ticks_us() & _TICKS_MASK


# ticks_add / ticks_diff: the shared wrap-safe arithmetic (2**30 period), imported above.


def wait_until_us(deadline_us):
    left = ticks_diff(deadline_us, ticks_us())
    if left <= 0:
        return
    _step((left + 999) // 1000)


def sleep_ms(ms):
    if ms > 0:
        _step(ms)


# ---- watchdog, identity ----

def wdt_start(timeout_ms):
    # The loop starts (App.run calls this once, just before its first tick): from here on it
    # reads the console every tick and stops at a Ctrl-C byte, which the board's supervisor
    # then sends instead of a SIGINT (host/vboard/lifetime.py says why).
    global _wdt_ms, _wdt_fed
    _stdout.write(_LOOP_MARK)
    if timeout_ms > 0 and not _wdt_ms:
        _wdt_ms = timeout_ms
        _wdt_fed = _now_ms
        try:
            from vboard_ctl import cpu_ms     # the supervisor's (not on a bare unix micropython)
        except ImportError:
            cpu_ms = None
        _guard.watch(timeout_ms, _bite, cpu_ms)


def wdt_feed():
    global _wdt_fed
    _wdt_fed = _now_ms
    _guard.mark = time.ticks_ms()


def wdt_stop():
    # The loop has stopped for good (Ctrl-C): as rp2040.wdt_stop, no watchdog from here on. The
    # board's supervisor hears that the Ctrl-C it sent as a byte was taken.
    global _wdt_ms
    _wdt_ms = 0
    _guard.unwatch()
    if _stdout is not None:          # None: stopped before setup() (a Ctrl-C early in the boot)
        _stdout.write(_STOP_MARK)


# ---- the e-stop while a human has the REPL ----

def guard_estop():
    # After Ctrl-C nothing runs the loop. On a Pico a pin interrupt on the e-stop freezes the
    # servos (hal/rp2040.py); here the guard's thread plays it: every few ms of real time it
    # moves the plant on by the time that passed (the bench does not stop while a human types)
    # and reads the e-stop from it. Until a press the servos keep the pulses they have. From now
    # on the guard alone talks to the plant: code at the REPL (machine.Pin, PWM) only reads and
    # writes what the guard's steps carry (vboard_io.guarded).
    global _takeover
    _takeover = True
    _io.guarded = True
    _guard.every(_GUARD_MS, _guard_step)


def _guard_step(elapsed_ms):
    # REPL code runs on another thread and may write a pulse at any moment, the exchange's
    # socket wait included: the plant is sent a copy taken in one step (a slice store is one
    # bytecode), so the pulses frozen at a press are exactly those the plant was given.
    global _now_ms
    sent = _held
    if sent is None:
        sent = _sent
        sent[:] = _pulses
    _now_ms = _exchange(elapsed_ms if elapsed_ms < _CATCH_UP_MS else _CATCH_UP_MS, sent)
    if _held is not None:
        _pulses[:] = _held         # undo whatever REPL code wrote since (rp2040: its hold timer)
    elif _levels[0]:
        _estop_pressed(sent)


def _estop_pressed(sent):
    # Freeze every servo at the pulse the plant has just been given (the pulse at the press)
    # and refuse pulse writes from here on, as rp2040._estop_pressed does.
    global _held, set_pulse_us, pwm_start
    _held = list(sent)
    _pulses[:] = _held
    set_pulse_us = _refuse_pulse
    pwm_start = _refuse_start


def _refuse_pulse(index, us):
    pass


def _refuse_start(pulses_us):
    pass


def reset_cause():
    c = getattr(_vs, "RESET_CAUSE", 1) if _vs is not None else 1
    if c == getattr(_vs, "WDT_RESET", 3):
        return RESET_WATCHDOG
    if c == getattr(_vs, "PWRON_RESET", 1):
        return RESET_POWER_ON
    return RESET_UNKNOWN


def unique_id():
    # The board's id, kept with its flash directory: the same flash is the same board.
    return getattr(_vs, "UNIQUE_ID", "0000000000000000")


# ---- console ----

def console_write(data):
    if len(data) > 12 and data[0] == 0x1E and data[4] == 0x45:    # RS "SP1" 'E': an EVENT
        _note_event(data)
    if len(data) and data[-1] == 0x0A:
        _stdout.write(_RAW_LINE)
    _stdout.write(data)


def _note_event(f):
    # to_state is the 5th field: the digits between the 5th and 6th comma.
    commas = 0
    v = 0
    for i in range(5, len(f)):
        c = f[i]
        if c == 0x2C:
            commas += 1
            if commas == 6:
                _io.state = v
                return
        elif commas == 5:
            v = v * 10 + c - 0x30
