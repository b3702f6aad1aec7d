# Runs INSIDE the virtual board's `micropython` (boot_shim.py preloads it), never under CPython.
# The board's pins as wired on the virtual bench, and the one owner of the lockstep socket to the
# plant (engines/world_service.py): the firmware's HAL (firmware/hal/virtual.py) and the board's
# `machine` module (vboard_machine.py) both read and drive the bench through this module.
#
# Exchange (little-endian, one message each way; world_service.py has the other end):
#   board -> plant  14 bytes  'S' u16 advance_ms, 5 x u16 pulse_us (0 = PWM off, 0xFFFF = never set),
#                             u8 the machine's state as the firmware last reported it (0xFF = none)
#   plant -> board  12 bytes  'R' u32 now_ms, u16 pot, u16 current, u16 rail (read_u16 counts),
#                             u8 flags: bit0 e-stop, bit1 switch, bit2 beam (pin levels);
#                             bit7 HOLD: wait for a whole console line before going on
# advance_ms 0 only reads. HOLD freezes virtual time until a line (up to LF) has arrived on the
# console; it is kept here and handed out by read_byte(), so the firmware reads it at that tick
# however the bytes were chunked.
#
# Two ways time moves. The firmware's HAL drives the plant in lockstep: exchange(ms, pulses)
# advances it by exactly one loop period. Code at the REPL (machine.Pin, ADC, PWM) calls sync(),
# which brings the plant up to the wall clock since the last exchange, at most CATCH_UP_MS at
# once (a board left idle for an hour does not make the next pin read simulate an hour).
# Without a plant (vboard_settings.PLANT is None) the bench is a gripper with nothing in it that
# follows its pulse, a 5.5 V rail, the e-stop closed, on the real clock.
import select
import struct
import sys
import time

try:
    import vboard_settings as _vs
except ImportError:        # outside a virtual board (the HAL conformance test): no plant
    _vs = None

UNSET = 0xFFFF
NO_STATE = 0xFF
_HOLD = 0x80
_TICKS_MASK = 0x3FFFFFFF
_LINE_MAX = 260            # a frame (256) + CR LF, with room to spare
CATCH_UP_MS = 5000

# The reference bench wiring (HARDWARE.md).
SERVO_GPIO = (2, 3, 4, 5, 6)          # base, shoulder, elbow, wrist, gripper
INPUT_GPIO = (13, 14, 15)             # e-stop, finger switch, IR beam: levels[] slots 0..2
LED_GPIO = 25
ADC_GPIO = (26, 27, 28)               # ADC0 pot, ADC1 current, ADC2 rail: adc[] slots 0..2

PLANT = getattr(_vs, "PLANT", None) if _vs is not None else None

# ---- what the bench shows now (shared lists: the HAL binds them once) ----
pulses = [UNSET, UNSET, UNSET, UNSET, UNSET]
adc = [8000 + 30 * 1067, 1000, 36404]
levels = [0, 1, 1]
# GPIO pads: mode (0 IN, 1 OUT, 2 OPEN_DRAIN, 3 ALT = the reset state), pull (0 none, 1 up,
# 2 down = the reset state), output latch.
gpio_mode = bytearray(b"\x03" * 30)
gpio_pull = bytearray(b"\x02" * 30)
gpio_out = bytearray(30)
state = NO_STATE           # the machine state from the last EVENT frame the firmware wrote
now_ms = 0                 # plant clock (lockstep) or real clock (no plant)
exchanges = 0
guarded = False            # after Ctrl-C the HAL's e-stop guard (a thread) alone moves the plant

_sock = None
_busy = False              # an exchange was interrupted half way (Ctrl-C): reconnect
_tx = bytearray(14)
_rx = bytearray(12)
_rxmv = memoryview(_rx)
_wall = time.ticks_ms()    # wall clock of the last exchange
_line = bytearray(_LINE_MAX)
_line_n = 0
_line_pos = 0
_poll = None
_stdin = None


def _console():
    global _poll, _stdin
    _stdin = sys.stdin.buffer if hasattr(sys.stdin, "buffer") else sys.stdin
    _poll = select.poll()
    _poll.register(sys.stdin, select.POLLIN)


# ---- time moves ----

def sync():
    # Code at the REPL touched the bench: catch the plant up with the wall clock first.
    if guarded:
        return                 # the guard's thread keeps it caught up, every few ms
    if PLANT is None:
        _free_run(0, pulses)
        return
    el = time.ticks_diff(time.ticks_ms(), _wall)
    _exchange(CATCH_UP_MS if el > CATCH_UP_MS else (el if el > 0 else 0), pulses)


def _connect():
    global _sock
    import socket
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.connect(socket.getaddrinfo(PLANT[0], PLANT[1])[0][-1])
    try:
        s.setsockopt(6, 1, 1)  # IPPROTO_TCP, TCP_NODELAY: one small message each way per tick
    except OSError:
        pass
    _sock = s


def _exchange(advance_ms, p):
    # p: the five pulses to send (the HAL's own list; the e-stop guard's frozen copy)
    global _busy, now_ms, exchanges, _wall
    if _sock is None or _busy:
        if _sock is not None:
            _sock.close()
        _connect()
    _busy = True
    struct.pack_into("<BH5HB", _tx, 0, 0x53, advance_ms, p[0], p[1], p[2], p[3], p[4], state)
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
    now_ms = r[1] | (r[2] << 8) | (r[3] << 16) | (r[4] << 24)
    adc[0] = r[5] | (r[6] << 8)
    adc[1] = r[7] | (r[8] << 8)
    adc[2] = r[9] | (r[10] << 8)
    bits = r[11]
    levels[0] = bits & 1
    levels[1] = (bits >> 1) & 1
    levels[2] = (bits >> 2) & 1
    exchanges += 1
    _busy = False
    _wall = time.ticks_ms()
    if bits & _HOLD:
        _hold_for_line()
    return now_ms


def _free_run(advance_ms, p):
    # No plant: real time, and a gripper with nothing in it that follows its pulse.
    global now_ms
    if advance_ms > 0:
        time.sleep_ms(advance_ms)
    now_ms = time.ticks_ms() & _TICKS_MASK
    us = p[4]
    if us != UNSET and us:
        jaw_um = (us - 500) * 180000 // 2000 // 4          # default calibration, 4 mdeg per um
        adc[0] = 8000 + jaw_um * 1067 // 1000
    adc[1] = 1000 + 199                                   # idle 10 mA
    adc[2] = 36404                                        # 5.5 V through the 3:1 divider
    return now_ms


# exchange(advance_ms, pulses): lockstep: apply the pulses, advance exactly advance_ms, read everything
# -> now_ms (the HAL calls it once per loop tick: bound to the right one here, no test per call)
exchange = _exchange if PLANT is not None else _free_run


# ---- the console line a HOLD waits for ----

def _hold_for_line():
    # Virtual time stands still (no exchange) until the console has delivered a whole line.
    global _line_n, _line_pos
    if _line_pos < _line_n:
        return                 # a held line is still being read
    if _poll is None:
        _console()
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


def read_byte():
    # The next console byte (a held line first), or -1 when none is waiting.
    global _line_pos
    if _line_pos < _line_n:
        b = _line[_line_pos]
        _line_pos += 1
        return b
    if _poll is None:
        _console()
    for _ in _poll.ipoll(0):
        c = _stdin.read(1)
        if c:
            return c[0] if not isinstance(c, str) else ord(c)
    return -1


# ---- pins by GPIO number (the `machine` module's view) ----

def pin_level(gpio):
    # What a pad reads: its own output while driven, else the plant's level on a wired input,
    # else its pull.
    m = gpio_mode[gpio]
    if m == 1 or (m == 2 and not gpio_out[gpio]):
        return gpio_out[gpio]
    for i in range(3):
        if INPUT_GPIO[i] == gpio:
            sync()
            return levels[i]
    return 1 if gpio_pull[gpio] == 1 else 0


def set_pulse_from_gpio(gpio, us):
    # A PWM output changed: the plant sees the new pulse from now on (time caught up first).
    for i in range(5):
        if SERVO_GPIO[i] == gpio:
            sync()
            pulses[i] = us
            return
