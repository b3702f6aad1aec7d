# The VIRTUAL board HAL: same functions as firmware/board_hal.py, run by the unix `micropython`
# inside the virtual board (tools/vboard mounts this folder first on sys.path, so `import
# board_hal` finds this file instead of the firmware's). Pins and ADC channels talk to the MuJoCo
# plant behind tools/plant_service.py over one loopback TCP socket, in lockstep virtual time:
#
#   each loop tick, wait_until_us() sends the PWM pulses the firmware wrote and how far to
#   advance; the plant advances by exactly that (one loop period) and answers with the clock
#   and every sensor reading for the next tick. ticks_ms()/ticks_us() are the plant's clock, so a
#   run is deterministic and independent of how fast this machine is.
#
# Exchange (little-endian, one message each way per tick; tools/plant_service.py has the other end):
#   board -> plant  14 bytes  'S' u16 advance_ms, 5 x u16 pulse_us (0 = PWM off, 0xFFFF = never set),
#                             u8 the machine's state as the board last reported it (0xFF = none yet)
#   plant -> board  12 bytes  'R' u32 now_ms, u16 pot, u16 current, u16 rail (read_u16 counts),
#                             u8 flags: bit0 e-stop (GP13), bit1 switch (GP14), bit2 beam (GP15)
#                             pin levels; bit7 HOLD: wait for a whole console line before going on
# advance_ms 0 only reads. The machine's state comes from the EVENT frames the firmware writes to
# the console through console_write() (their to_state field): the plant's scenario triggers
# ("150 ms into LIFT") then fire at the same tick on every run. HOLD freezes virtual time until a
# line (up to LF) has arrived on the console; it is kept here and handed out by
# console_read_byte(), so the firmware reads it at that tick however the bytes were chunked.
# The address comes from vboard_settings.PLANT (written by the virtual board); without a plant
# the board still runs: real-time clock, an empty gripper that follows its pulse, rail 5.5 V,
# e-stop closed.
# Console I/O stays on the interpreter's real stdin/stdout (the REPL's pty).
import select
import struct
import sys
import time

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
_UNSET = const(0xFFFF)
_NO_STATE = const(0xFF)
_HOLD = const(0x80)
_LINE_MAX = const(260)     # a frame (256) + CR LF, with room to spare

# ---- state ----
_plant = None if _vs is None else getattr(_vs, "PLANT", None)
_sock = None
_busy = False              # an exchange was interrupted half way (Ctrl-C): reconnect
_tx = bytearray(14)
_rx = bytearray(12)
_rxmv = memoryview(_rx)
_now_ms = 0                # plant clock (lockstep) or real clock (no plant)
_pulses = [_UNSET, _UNSET, _UNSET, _UNSET, _UNSET]
_adc = [8000 + 30 * 1067, 1000, 36404]
_levels = [0, 1, 1]        # e-stop, switch, beam pin levels
_pin_slot = {13: 0, 14: 1, 15: 2}
_adc_slot = [0, 1, 2]      # ADC channel -> reading slot (pot, current, rail)
_led = 0
_wdt_ms = 0
_wdt_fed = 0
_takeover = False          # Ctrl-C: only the e-stop guard's thread talks to the plant from now on
_GUARD_MS = const(5)       # how often the guard reads the e-stop after Ctrl-C (real time)
_CATCH_UP_MS = const(100)  # at most this much plant time per guard step (a stalled host)
_held = None               # the pulses an e-stop at the REPL froze (None: not pressed since Ctrl-C)
_exchanges = 0
_state = _NO_STATE         # the machine state from the last EVENT frame written
_line = bytearray(_LINE_MAX)   # a console line held back by a HOLD, served first
_line_n = 0
_line_pos = 0
_poll = None
_stdin = None
_stdout = None


def exchanges():
    return _exchanges


def lockstep():
    return _plant is not None


# ---- setup ----

def setup(pins):
    global _poll, _stdin, _stdout, _pin_slot
    _pin_slot = {pins.estop: 0, pins.switch: 1, pins.beam: 2}
    _adc_slot[pins.adc_pot] = 0
    _adc_slot[pins.adc_current] = 1
    _adc_slot[pins.adc_rail] = 2
    _stdin = sys.stdin.buffer if hasattr(sys.stdin, "buffer") else sys.stdin
    _stdout = sys.stdout.buffer if hasattr(sys.stdout, "buffer") else sys.stdout
    _poll = select.poll()
    _poll.register(sys.stdin, select.POLLIN)
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


# ---- the lockstep exchange ----

def _connect():
    global _sock
    import socket
    host, port = _plant[0], _plant[1]
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.connect(socket.getaddrinfo(host, port)[0][-1])
    try:
        s.setsockopt(6, 1, 1)  # IPPROTO_TCP, TCP_NODELAY: one small message each way per tick
    except OSError:
        pass
    _sock = s


def _exchange(advance_ms):
    global _busy, _now_ms, _exchanges
    if _sock is None or _busy:
        if _sock is not None:
            _sock.close()
        _connect()
    _busy = True
    p = _pulses
    struct.pack_into("<BH5HB", _tx, 0, 0x53, advance_ms, p[0], p[1], p[2], p[3], p[4], _state)
    _sock.write(_tx)
    got = _sock.readinto(_rx)
    while got is not None and 0 < got < 12:     # a split reply: rare on loopback
        n = _sock.readinto(_rxmv[got:])
        got = got + n if n else 0
    if not got:
        raise OSError("plant service closed the connection")
    r = _rx
    if r[0] != 0x52:
        raise OSError("plant service: bad reply")
    _now_ms = r[1] | (r[2] << 8) | (r[3] << 16) | (r[4] << 24)
    _adc[0] = r[5] | (r[6] << 8)
    _adc[1] = r[7] | (r[8] << 8)
    _adc[2] = r[9] | (r[10] << 8)
    bits = r[11]
    _levels[0] = bits & 1
    _levels[1] = (bits >> 1) & 1
    _levels[2] = (bits >> 2) & 1
    _exchanges += 1
    _busy = False
    if bits & _HOLD:
        _hold_for_line()


def _hold_for_line():
    # Virtual time stands still (no exchange) until the console has delivered a whole line.
    global _line_n, _line_pos
    if _line_pos < _line_n:
        return                 # a held line is still being read
    _line_n = 0
    _line_pos = 0
    while _line_n < _LINE_MAX:
        for _ in _poll.ipoll(50):
            c = _stdin.read(1)
            if c:
                b = c[0] if not isinstance(c, str) else ord(c)
                _line[_line_n] = b
                _line_n += 1
                if b == 10 or b == 3:          # LF ends it; Ctrl-C goes through at once
                    return


def _free_run(advance_ms):
    # No plant: real time, and a gripper with nothing in it that follows its pulse.
    global _now_ms
    if advance_ms > 0:
        time.sleep_ms(advance_ms)
    _now_ms = time.ticks_ms() & _TICKS_MASK
    us = _pulses[4]
    if us != _UNSET and us:
        jaw_um = (us - 500) * 180000 // 2000 // 4          # default calibration, 4 mdeg per um
        _adc[0] = 8000 + jaw_um * 1067 // 1000
    _adc[1] = 1000 + 199                                  # idle 10 mA
    _adc[2] = 36404                                       # 5.5 V through the 3:1 divider


def _step(advance_ms):
    # Time moves: one exchange with the plant (or the real clock without one). The watchdog
    # counts virtual time here; the wall-clock side (virtual_guard) counts the time the board
    # spends between steps, so a loop hung in Python is caught too.
    if _takeover:
        time.sleep_ms(advance_ms)  # the guard's thread keeps the bench going in real time
        return
    g = _guard
    g.waiting = 1
    if _plant is not None:
        _exchange(advance_ms)
    else:
        _free_run(advance_ms)
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
    global _wdt_ms, _wdt_fed
    if timeout_ms > 0 and not _wdt_ms:
        _wdt_ms = timeout_ms
        _wdt_fed = _now_ms
        _guard.watch(timeout_ms, _bite)


def wdt_feed():
    global _wdt_fed
    _wdt_fed = _now_ms
    _guard.mark = time.ticks_ms()


def wdt_stop():
    # The loop has stopped for good (Ctrl-C): as rp2040.wdt_stop, no watchdog from here on.
    global _wdt_ms
    _wdt_ms = 0
    _guard.unwatch()


# ---- the e-stop while a human has the REPL ----

def guard_estop():
    # After Ctrl-C nothing runs the loop. On a Pico a pin interrupt on the e-stop freezes the
    # servos (hal/rp2040.py); here the guard's thread plays it: every few ms of real time it
    # moves the plant on by the time that passed (the bench does not stop while a human types)
    # and reads the e-stop from it. Until a press the servos keep the pulses they have.
    global _takeover
    _takeover = True
    _guard.every(_GUARD_MS, _guard_step)


def _guard_step(elapsed_ms):
    global _held
    if _held is not None:
        _pulses[:] = _held         # undo whatever REPL code wrote since (rp2040: its hold timer)
    ms = elapsed_ms if elapsed_ms < _CATCH_UP_MS else _CATCH_UP_MS
    if _plant is not None:
        _exchange(ms)
    else:
        _free_run(ms)
    if _held is None and _levels[0]:
        _estop_pressed()


def _estop_pressed():
    # Freeze every servo at the pulse the plant has just been given (the pulse at the press)
    # and refuse pulse writes from here on, as rp2040._estop_pressed does.
    global _held, set_pulse_us, pwm_start
    _held = list(_pulses)
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
    seed = getattr(_vs, "SEED", None) if _vs is not None else None
    return "5642%012x" % ((seed or 0) & 0xFFFFFFFFFFFF)


# ---- console ----

def console_read_byte():
    global _line_pos
    if _line_pos < _line_n:
        b = _line[_line_pos]
        _line_pos += 1
        return b
    for _ in _poll.ipoll(0):
        c = _stdin.read(1)
        if c:
            return c[0] if not isinstance(c, str) else ord(c)
    return -1


def console_write(data):
    if len(data) > 12 and data[0] == 0x1E and data[4] == 0x45:    # RS "SP1" 'E': an EVENT
        _note_event(data)
    _stdout.write(data)


def _note_event(f):
    # to_state is the 5th field: the digits between the 5th and 6th comma.
    global _state
    commas = 0
    v = 0
    for i in range(5, len(f)):
        c = f[i]
        if c == 0x2C:
            commas += 1
            if commas == 6:
                _state = v
                return
        elif commas == 5:
            v = v * 10 + c - 0x30
