# The surepick serial link: ONE frame format for the board (firmware) and the host.
# Runs unchanged on MicroPython and CPython 3.11. docs/protocol.md is the prose version.
#
# A frame is one ASCII line that the REPL and terminals pass through untouched:
#
#   RS "SP1" <type> ( "," <field> )* "*" <CRC32 as 8 upper-case hex digits> LF
#
# RS (0x1E) never occurs in REPL text, so it marks a frame start and is the resync point;
# "SP1" is the protocol magic + version; the CRC32 (binascii.crc32, the zip CRC) covers the
# bytes between RS and "*". A trailing CR before LF is tolerated (the board's stdout turns LF
# into CRLF). Fields are canonical decimal integers (no "+", no leading zeros, no "-0") or
# tokens ([A-Za-z0-9_.-], 1..24 chars, never integer-looking), so every valid frame has
# exactly one encoding and decode(encode(x)) == x, encode(decode(line)) == line.
#
# Board -> host types are upper-case letters, host -> board types lower-case: a side that
# receives its own kind of frame (an echo) can ignore it instead of answering it forever.
import binascii
import sys

from .compat import const
from .config import MAX_ATTEMPTS

START = const(0x1E)
MAGIC = b"SP1"
PROTOCOL_VERSION = const(1)
# Longest frame in bytes from RS up to the last CRC digit (CR/LF not counted).
MAX_FRAME_LEN = const(256)
MAX_TOKEN_LEN = const(24)
MAX_PAYLOAD = const(9)  # payload fields in one REPLY
ARM_READ_BYTES = const(11)   # bytes of /arm.json in one ARM_READ token ("x" + 22 hex digits)
ARM_READ_TOKENS = const(8)   # tokens in one ARM_READ REPLY (88 bytes: the frame stays under 256)

# ---- frame types: board -> host (upper case) ----
T_HELLO = const(0x48)      # H
T_TELEMETRY = const(0x54)  # T
T_EVENT = const(0x45)      # E
T_FAULT = const(0x46)      # F
T_REPLY = const(0x52)      # R
T_LOG = const(0x4C)        # L
T_HIL_ACT = const(0x58)    # X  hardware-in-the-loop actuation (one per HIL tick)
T_TELEOP_STATE = const(0x51)  # Q  teleop: the setpoint the servos were driven to, the jaw measured
# ---- frame types: host -> board (lower case) ----
T_PING = const(0x70)        # p
T_STATUS = const(0x73)      # s
T_JOB = const(0x6A)         # j
T_ABORT = const(0x61)       # a
T_CLEAR_FAULT = const(0x63)  # c
T_LOG_SINCE = const(0x6C)   # l
T_CONFIG_GET = const(0x67)  # g
T_CONFIG_SET = const(0x77)  # w
T_CALIBRATE = const(0x6B)   # k
T_HIL_MODE = const(0x78)    # x  enter/leave hardware-in-the-loop mode
T_HIL_SENSORS = const(0x79)  # y  one tick of raw sensor readings from the host's plant
T_REJECTS = const(0x72)     # r  what the board rejected from its flash at boot, one item a reply
T_RESCUE = const(0x76)      # v  the operator takes the arm back: carry a held part to the place pose, rest, release
T_TELEOP = const(0x74)      # t  enter/leave teleop mode
T_SETPOINT = const(0x71)    # q  one teleop setpoint: joints, jaw, sequence number
T_RUN = const(0x75)         # u  a production run: cycle after cycle on the board (its schema: run_frame.py)
T_RUN_STOP = const(0x6E)    # n  end the run after the current cycle
T_RUN_STATUS = const(0x6F)  # o  the run's counters (the running one, or the last one since boot)
T_ARM_READ = const(0x64)    # d  a slice of the board's /arm.json (config diff shows the description)
# Still reserved for hardware-in-the-loop: Y Z (board -> host), z (host -> board); they decode
# as E_UNKNOWN_TYPE.

# ---- HIL_MODE modes ----
HIL_OFF = const(0)        # normal I/O (board_hal reads, PWM); the servos hold where they were
HIL_LOCKSTEP = const(1)   # the loop steps once per sensor frame, at the frame's time
HIL_REALTIME = const(2)   # the loop runs on its own clock with the latest sensor frame
# HIL_SENSORS pins bit mask: pin LEVELS as board_hal.read_pin returns them (pull-ups).
HIL_PIN_ESTOP = const(1)
HIL_PIN_SWITCH = const(2)
HIL_PIN_BEAM = const(4)

# ---- RESCUE actions, and where the operator says an unpowered arm stands ----
RESCUE_PLACE = const(0)     # carry the held part to the job's place pose, release it there, retreat
RESCUE_REST = const(1)      # bring the arm to its stored rest pose (a held part stays held)
RESCUE_RELEASE = const(2)   # open the jaw where it is: the operator's explicit release
NEAR_SETPOINT = const(0)    # the arm is powered: start from the board's own setpoints
NEAR_PICK = const(1)        # the unpowered arm stands at (or just above) the job's pick pose
NEAR_PLACE = const(2)       # ... at the job's place pose
NEAR_REST = const(3)        # ... at the stored rest pose (e.g. moved there by hand)
NEAR_GIVEN = const(4)       # ... at the jaw pose in the request's x, y, z, pitch fields (measured)

# ---- CALIBRATE targets ----
CAL_POT = const(0)
CAL_CURRENT = const(1)

# ---- STATUS: what keeps the arm busy (the REPLY's `busy` field; 0 = at rest, nothing moves) ----
BUSY_NONE = const(0)
BUSY_JOB = const(1)         # a pick-and-place job is running
BUSY_RESCUE = const(2)      # the operator's RESCUE is moving the arm (place, rest or release)
BUSY_CALIBRATION = const(3)  # a CALIBRATE routine is running
BUSY_MOVING = const(4)      # nothing running, but the arm is still moving (settling after an abort)
BUSY_TELEOP = const(5)      # teleop mode is on: the arm follows the host's setpoints (or holds after a deadman)

# ---- TELEMETRY's `conditions`: what the board is in besides its state and fault, as bits (the
# host's table of these, with how each shows and the command that leaves it: host/board_state.py) ----
COND_HOLDING = const(1)        # a verified part is between the fingers: jobs refused until a RESCUE places or releases it
COND_ARM_OFF = const(2)        # the arm servos are unpowered (a reset mid-job, an arm stall): RESCUE powers them
COND_POSE_UNKNOWN = const(4)   # ... and the board cannot know where the arm stands (RESCUE needs where)
COND_GRIPPER_OFF = const(8)    # the gripper's PWM is off (a stall the back-off did not end, a broken pot)
COND_TELEOP = const(16)        # teleop mode is on, following the host's setpoints
COND_TELEOP_HELD = const(32)   # teleop mode is on, holding where it is: no setpoint came for the deadman time
COND_CYCLE_OPEN = const(64)    # a job's marker is on flash: a reset now boots into INTERRUPTED
COND_AWAY = const(128)         # the arm is powered but not settled at the pose a boot starts from (its rest pose)
COND_ESTOP_OPEN = const(256)   # the e-stop contact reads open (or not yet closed long enough to release)
COND_HIL = const(512)          # hardware-in-the-loop mode
COND_ARM_INVALID = const(1024)  # the arm description (/arm.json) failed its check at boot: no servo powered, nothing moves

# ---- error codes: returned by decode() and carried in REPLY.code ----
OK = const(0)
E_NOT_FRAME = const(1)     # no RS at the start: REPL text or noise (never replied to)
E_TOO_LONG = const(2)      # longer than MAX_FRAME_LEN
E_SYNTAX = const(3)        # no "*" + 8 hex digits at the end, bad separators
E_CRC = const(4)           # CRC mismatch
E_VERSION = const(5)       # "SP<n>" with another protocol version
E_UNKNOWN_TYPE = const(6)  # type letter not defined (or reserved)
E_FIELD_COUNT = const(7)   # too few / too many fields for the type
E_BAD_FIELD = const(8)     # not a canonical integer / not a valid token
E_RANGE = const(9)         # integer outside the field's range
E_DIRECTION = const(10)    # a valid frame of the other direction (an echo): ignore it
# Application errors (board -> host REPLY only).
E_BUSY = const(20)         # a job is running
E_STATE = const(21)        # not allowed in the current state
E_FAULTED = const(22)      # latched fault: CLEAR_FAULT first
E_UNKNOWN_KEY = const(23)  # CONFIG_GET/SET key does not exist
E_BAD_VALUE = const(24)    # CONFIG_SET value or JOB geometry rejected by the firmware
E_UNSUPPORTED = const(25)  # request understood but not implemented on this board
E_INTERNAL = const(26)     # the handler failed

# ---- field kinds: (lowest, highest) integer value, or a token ----
K_BIT = const(0)
K_U8 = const(1)
K_U16 = const(2)
K_U30 = const(3)   # ticks_ms values and counters: one MicroPython small int on the RP2040
K_S30 = const(4)
K_I32 = const(5)
K_RID = const(6)   # request id in a request: 1..65535 (0 = "no request" in a REPLY)
K_POS = const(7)   # position, um: +-1 m
K_MDEG = const(8)  # angle, millidegrees: +-180 deg
K_WIDTH = const(9)  # part width, um: 1 um..100 mm
K_TRIES = const(10)  # max attempts 1..config.MAX_ATTEMPTS
K_CAL = const(11)  # CAL_POT / CAL_CURRENT
K_HIL = const(12)  # HIL_MODE mode: HIL_OFF, HIL_LOCKSTEP, HIL_REALTIME
K_PINS = const(13)  # HIL_SENSORS pin levels, HIL_PIN_* bits
# Integer kinds stay below K_TOK: tests and fuzzers tell ints from tokens by that order.
K_TOK = const(14)  # token (str)
K_ANY = const(15)  # an K_I32 integer or a token

KIND_LO = (0, 0, 0, 0, -(1 << 30), -(1 << 31), 1, -1000000, -180000, 1, 1, 0, 0, 0)
KIND_HI = (1, 255, 65535, (1 << 30) - 1, (1 << 30) - 1, (1 << 31) - 1, 65535, 1000000, 180000,
       100000, MAX_ATTEMPTS, 1, 2, 7)
_TOKEN_BYTES = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-"
# byte -> 1 if allowed in a token: one index per byte instead of a search
_TOKEN_MAP = bytes([1 if c in _TOKEN_BYTES else 0 for c in range(256)])

# The 12 ints of one state-machine event record (EVENT frame, LOG frame, flash log). A search
# record (kind codes.K_SEARCH) carries x_um, y_um, z_um, beam_broken, value in the last five
# (codes.SEARCH_FIELDS): positions, so those fields take S30 (the host checks them by kind).
EVENT_FIELDS = ("seq", "t_ms", "kind", "from_state", "to_state", "reason", "attempt",
                "pot_counts", "switch_pressed", "current_ma", "beam_broken", "present_mask")
_EVENT_KINDS = (K_U30, K_U30, K_U8, K_U8, K_U8, K_U16, K_U8, K_S30, K_S30, K_S30,
                K_BIT, K_S30)

# type -> (name, minimum field count, field kinds, field names). Every request starts with
# its request id; a REPLY starts with the request id it answers.
SCHEMA = {
    # HELLO's last four fields are optional (older firmware sends six): how many things the
    # boot rejected from flash (0..255, capped) and the first of them (file, key, reason).
    T_HELLO: ("HELLO", 6,
              (K_TOK, K_TOK, K_U8, K_U8, K_U30, K_U30, K_U8, K_TOK, K_TOK, K_TOK),
              ("board_id", "fw_version", "proto_version", "reset_cause", "boot_count",
               "log_last_seq", "rejected", "rejected_file", "rejected_key", "rejected_reason")),
    # The next seven fields (optional: older firmware sends 17) describe the loop over the
    # cycle window, since the current job started (or since boot before the first job); the last
    # (optional too) is the board's conditions, COND_* bits.
    T_TELEMETRY: ("TELEMETRY", 17,
                  (K_U30, K_U8, K_U8, K_U8, K_U30, K_U30, K_U30, K_U16, K_S30,
                   K_BIT, K_BIT, K_U8, K_U16, K_BIT, K_U30, K_U30, K_U30,
                   K_U30, K_U30, K_U30, K_U30, K_U30, K_U30, K_U30, K_U30),
                  ("t_ms", "state", "attempt", "fault", "cycles_ok", "cycles_failed",
                   "faults_total", "pot_counts", "current_ma", "switch_pressed", "beam_broken",
                   "present_mask", "rail_mv", "estop", "loop_period_us", "worst_step_us",
                   "overruns", "cycle_ticks", "cycle_period_us", "tick_median_us",
                   "tick_p99_us", "tick_max_us", "cycle_overruns", "gc_max_us", "conditions")),
    T_EVENT: ("EVENT", 12, _EVENT_KINDS, EVENT_FIELDS),
    T_FAULT: ("FAULT", 6,
              (K_U30, K_U8, K_U8, K_U8, K_U16, K_U30),
              ("t_ms", "fault", "state", "attempt", "reason", "faults_total")),
    T_REPLY: ("REPLY", 2,
              (K_U16, K_U8) + (K_ANY,) * MAX_PAYLOAD,
              ("req_id", "code") + ("payload",) * MAX_PAYLOAD),
    T_LOG: ("LOG", 14,
            (K_U30, K_U8) + (K_I32,) * 12,
            ("log_seq", "rtype") + EVENT_FIELDS),
    T_PING: ("PING", 1, (K_RID,), ("req_id",)),
    T_STATUS: ("STATUS", 1, (K_RID,), ("req_id",)),
    T_JOB: ("JOB", 10,
            (K_RID, K_POS, K_POS, K_POS, K_MDEG, K_POS, K_POS, K_POS, K_MDEG,
             K_WIDTH, K_TRIES, K_U30),
            ("req_id", "pick_x_um", "pick_y_um", "pick_z_um", "pick_pitch_mdeg",
             "place_x_um", "place_y_um", "place_z_um", "place_pitch_mdeg", "width_um",
             "max_attempts", "approach_height_um")),
    T_ABORT: ("ABORT", 1, (K_RID,), ("req_id",)),
    T_CLEAR_FAULT: ("CLEAR_FAULT", 1, (K_RID,), ("req_id",)),
    T_LOG_SINCE: ("LOG_SINCE", 2, (K_RID, K_U30), ("req_id", "after_seq")),
    T_CONFIG_GET: ("CONFIG_GET", 2, (K_RID, K_TOK), ("req_id", "key")),
    T_CONFIG_SET: ("CONFIG_SET", 3, (K_RID, K_TOK, K_S30), ("req_id", "key", "value")),
    T_CALIBRATE: ("CALIBRATE", 2, (K_RID, K_CAL), ("req_id", "target")),
    # REPLY: rejected (count), kept (items listed), then item `index` as file, key, reason
    # (absent when index >= kept).
    T_REJECTS: ("REJECTS", 2, (K_RID, K_U8), ("req_id", "index")),
    # action: RESCUE_*; near: NEAR_* (the firmware checks both: E_BAD_VALUE); the pose fields
    # only with NEAR_GIVEN
    T_RESCUE: ("RESCUE", 3, (K_RID, K_U8, K_U8, K_POS, K_POS, K_POS, K_MDEG),
               ("req_id", "action", "near", "x_um", "y_um", "z_um", "pitch_mdeg")),
    # Hardware in the loop. A HIL_SENSORS frame is answered by one HIL_ACT frame carrying its
    # id (no REPLY) once the board has stepped on it; errors still get a REPLY with that id.
    T_HIL_MODE: ("HIL_MODE", 2, (K_RID, K_HIL), ("req_id", "mode")),
    T_HIL_SENSORS: ("HIL_SENSORS", 6,
                    (K_RID, K_U30, K_U16, K_U16, K_U16, K_PINS),
                    ("req_id", "t_ms", "pot_counts", "current_counts", "rail_counts", "pins")),
    T_HIL_ACT: ("HIL_ACT", 12,
                (K_U16, K_U30, K_U30, K_U16, K_U16, K_U16, K_U16, K_U16, K_U8, K_U8, K_U30,
                 K_U30),
                ("sensor_id", "tick", "t_ms", "pulse0_us", "pulse1_us", "pulse2_us", "pulse3_us",
                 "pulse4_us", "state", "fault", "step_us", "period_us")),
    # Teleop (firmware/teleop_mode.py). TELEOP's REPLY: mode, q0..q3 mdeg, jaw um (the pose held
    # now). A SETPOINT gets no REPLY when taken: the TELEOP_STATE of the tick that drove the
    # servos to it carries its seq; a refused one gets a REPLY (reason token, seq).
    T_TELEOP: ("TELEOP", 2, (K_RID, K_BIT), ("req_id", "on")),
    T_SETPOINT: ("SETPOINT", 7,
                 (K_RID, K_U30, K_MDEG, K_MDEG, K_MDEG, K_MDEG, K_U30),
                 ("req_id", "seq", "q0_mdeg", "q1_mdeg", "q2_mdeg", "q3_mdeg", "jaw_um")),
    # RUN's own entry is run_frame.py's, added by load_run_frame(). RUN_STATUS's REPLY: active (0 none
    # since boot, 1 running, 2 ended), cycles, count, placed, faulted, skipped, why it ended
    # (run_codes.STOP_*, -1 while running), the next pick slot, pick slots.
    T_RUN_STOP: ("RUN_STOP", 1, (K_RID,), ("req_id",)),
    T_RUN_STATUS: ("RUN_STATUS", 1, (K_RID,), ("req_id",)),
    # ARM_READ's REPLY: the file's size, then up to ARM_READ_TOKENS tokens "x" + the hex of up to
    # ARM_READ_BYTES bytes each, from offset on.
    T_ARM_READ: ("ARM_READ", 2, (K_RID, K_U16), ("req_id", "offset")),
    T_TELEOP_STATE: ("TELEOP_STATE", 12,
                     (K_U30, K_U8, K_U8, K_U30, K_MDEG, K_MDEG, K_MDEG, K_MDEG, K_U30, K_S30,
                      K_U30, K_U30),
                     ("t_ms", "mode", "why", "seq", "q0_mdeg", "q1_mdeg", "q2_mdeg", "q3_mdeg",
                      "jaw_cmd_um", "jaw_pot_um", "deadmans", "refused")),
}

ERROR_NAMES = {
    OK: "OK", E_NOT_FRAME: "NOT_FRAME", E_TOO_LONG: "TOO_LONG", E_SYNTAX: "SYNTAX",
    E_CRC: "CRC", E_VERSION: "VERSION", E_UNKNOWN_TYPE: "UNKNOWN_TYPE",
    E_FIELD_COUNT: "FIELD_COUNT", E_BAD_FIELD: "BAD_FIELD", E_RANGE: "RANGE",
    E_DIRECTION: "DIRECTION", E_BUSY: "BUSY", E_STATE: "STATE", E_FAULTED: "FAULTED",
    E_UNKNOWN_KEY: "UNKNOWN_KEY", E_BAD_VALUE: "BAD_VALUE", E_UNSUPPORTED: "UNSUPPORTED",
    E_INTERNAL: "INTERNAL",
}


def load_run_frame():
    # RUN's entry (run_frame.py, 24 fields) into SCHEMA. The board adds it when the
    # first RUN arrives (firmware/app.py), so a board that never runs a production run does not
    # hold it in its heap (docs/production-run.md, heap); the host always has it (below).
    if T_RUN not in SCHEMA:
        from .run_frame import RUN_SCHEMA
        SCHEMA[T_RUN] = RUN_SCHEMA


def is_request(ftype):
    # host -> board types are lower-case letters
    return 0x61 <= ftype <= 0x7A


def _int_of(p):
    # Canonical decimal integer from bytes, or None. Hand-checked because int() on both
    # interpreters also accepts spaces, "+" and "1_000" (non-canonical spellings).
    n = len(p)
    if n == 0 or n > 11:
        return None
    if p[0] == 0x2D:  # "-"
        if n == 1 or p[1] == 0x30:  # "-" alone, "-0", "-07"
            return None
        if not p[1:].isdigit():
            return None
    elif not p.isdigit() or (n > 1 and p[0] == 0x30):
        return None
    return int(p)


def _token_ok(p):
    # p: bytes. 1..MAX_TOKEN_LEN token bytes and not integer-looking (so that the int/token
    # choice of an K_ANY field survives a round trip).
    n = len(p)
    if n == 0 or n > MAX_TOKEN_LEN:
        return False
    for c in p:
        if not _TOKEN_MAP[c]:
            return False
    if p[0] == 0x2D:
        return not p[1:].isdigit()
    return not p.isdigit()


def _check_value(kind, v):
    if kind == K_TOK or (kind == K_ANY and isinstance(v, str)):
        if not isinstance(v, str):
            return E_BAD_FIELD
        try:
            b = v.encode()
        except Exception:  # not encodable: certainly not a token
            return E_BAD_FIELD
        return OK if len(b) == len(v) and _token_ok(b) else E_BAD_FIELD
    if not isinstance(v, int):
        return E_BAD_FIELD
    if kind == K_ANY:
        kind = K_I32
    if v < KIND_LO[kind] or v > KIND_HI[kind]:
        return E_RANGE
    return OK


def check(ftype, fields):
    # Error code for encoding `fields` (a tuple/list) as a frame of type `ftype`.
    s = SCHEMA.get(ftype)
    if s is None:
        return E_UNKNOWN_TYPE
    kinds = s[2]
    n = len(fields)
    if n < s[1] or n > len(kinds):
        return E_FIELD_COUNT
    for i in range(n):
        e = _check_value(kinds[i], fields[i])
        if e:
            return e
    return OK


def encode(ftype, fields):
    # The frame (bytes, ending in LF) or None when `fields` do not validate (never raises:
    # the board must not crash because one reading was out of range).
    if check(ftype, fields) != OK:
        return None
    parts = ["SP1", chr(ftype)]
    for v in fields:
        parts.append(",")
        parts.append(v if isinstance(v, str) else "%d" % v)
    body = "".join(parts).encode()
    crc = binascii.crc32(body) & 0xFFFFFFFF
    if len(body) + 10 > MAX_FRAME_LEN:
        return None
    return b"\x1e" + body + ("*%08X\n" % crc).encode()


def _frame_end(line):
    # Length without a trailing LF and/or CR.
    n = len(line)
    if n and line[n - 1] == 0x0A:
        n -= 1
    if n and line[n - 1] == 0x0D:
        n -= 1
    return n


def _checked_body(line, n):
    # (error, body bytes between RS and "*") after the length, CRC and magic checks.
    if n == 0 or line[0] != START:
        return E_NOT_FRAME, None
    if n > MAX_FRAME_LEN:
        return E_TOO_LONG, None
    if n < 14 or line[n - 9] != 0x2A:  # RS SP1 t * 8hex = 14 bytes at least
        return E_SYNTAX, None
    mv = memoryview(line)
    body = bytes(mv[1:n - 9])
    if ("%08X" % (binascii.crc32(body) & 0xFFFFFFFF)).encode() != bytes(mv[n - 8:n]):
        return E_CRC, None
    if body[0:3] != MAGIC:
        return (E_VERSION if body[0:2] == b"SP" else E_SYNTAX), None
    return OK, body


def decode(line, requests=None):
    # Validate one received line (bytes/bytearray/memoryview, LF/CRLF optional).
    # Returns (error, ftype, fields): error == OK -> fields is a tuple of ints/strs in the
    # schema's order; otherwise ftype may be 0 and fields is None. Never raises; all work
    # is bounded by MAX_FRAME_LEN. requests=True/False: a CRC-valid frame of the other
    # direction returns E_DIRECTION before its fields are parsed (the board skips echoes
    # cheaply).
    if not isinstance(line, (bytes, bytearray, memoryview)):
        return E_NOT_FRAME, 0, None
    n = _frame_end(line)
    err, body = _checked_body(line, n)
    if err:
        return err, 0, None
    ftype = body[3]
    s = SCHEMA.get(ftype)
    if s is None:
        return E_UNKNOWN_TYPE, ftype, None
    if requests is not None and is_request(ftype) != requests:
        return E_DIRECTION, ftype, None
    if len(body) == 4:
        parts = ()
    elif body[4] != 0x2C:  # ","
        return E_SYNTAX, ftype, None
    else:
        parts = body[5:].split(b",")
    kinds = s[2]
    count = len(parts)
    if count < s[1] or count > len(kinds):
        return E_FIELD_COUNT, ftype, None
    out = []
    for i in range(count):
        p = parts[i]
        kind = kinds[i]
        v = None
        if kind != K_TOK:
            v = _int_of(p)
        if v is None:
            if (kind == K_TOK or kind == K_ANY) and _token_ok(p):
                out.append(p.decode())
                continue
            return E_BAD_FIELD, ftype, None
        if kind == K_ANY:
            kind = K_I32
        if v < KIND_LO[kind] or v > KIND_HI[kind]:
            return E_RANGE, ftype, None
        out.append(v)
    return OK, ftype, tuple(out)


def request_id_of(line):
    # The request id of a CRC-valid request whose fields failed validation, else 0: lets the
    # board address its error reply. Never raises.
    if not isinstance(line, (bytes, bytearray, memoryview)):
        return 0
    err, body = _checked_body(line, _frame_end(line))
    if err or len(body) < 6 or body[4] != 0x2C or not is_request(body[3]):
        return 0
    end = body.find(b",", 5)
    v = _int_of(body[5:] if end < 0 else body[5:end])
    if v is None or v < 1 or v > 65535:
        return 0
    return v


# ---- convenience encoders (all return bytes or None, like encode) ----

def hello(board_id, fw_version, reset_cause, boot_count, log_last_seq, rejected=0, first=None):
    # rejected: how many things the boot rejected from flash; first: the first of them, a
    # (file, key, reason) tuple of tokens, or None
    f = (board_id, fw_version, PROTOCOL_VERSION, reset_cause, boot_count, log_last_seq,
         rejected if rejected < 255 else 255)
    if first is not None:
        f = f + tuple(first)
    return encode(T_HELLO, f)


def event(rec):
    # rec: the 12-int state-machine event record
    return encode(T_EVENT, rec)


def log_record(log_seq, rtype, rec):
    return encode(T_LOG, (log_seq, rtype) + tuple(rec))


def reply(req_id, code, payload=()):
    return encode(T_REPLY, (req_id, code) + tuple(payload))


def request(ftype, req_id, args=()):
    if not is_request(ftype):
        return None
    return encode(ftype, (req_id,) + tuple(args))


def hil_sensors(req_id, t_ms, pot_counts, current_counts, rail_counts, pins):
    return encode(T_HIL_SENSORS, (req_id, t_ms, pot_counts, current_counts, rail_counts, pins))


def setpoint(req_id, seq, q_mdeg, jaw_um):
    # q_mdeg: the four joint setpoints (mdeg); jaw_um: the jaw opening (um)
    if len(q_mdeg) != 4:
        return None
    return encode(T_SETPOINT, (req_id, seq) + tuple(q_mdeg) + (jaw_um,))


def job(req_id, pick, place, width_um, max_attempts=None, approach_height_um=None):
    # pick, place: (x_um, y_um, z_um, pitch_mdeg); max_attempts None = board default;
    # approach_height_um (needs max_attempts): the board's setting from this job on, if it takes it
    f = (req_id,) + tuple(pick) + tuple(place) + (width_um,)
    if max_attempts is not None:
        f = f + (max_attempts,)
        if approach_height_um is not None:
            f = f + (approach_height_um,)
    if len(pick) != 4 or len(place) != 4:
        return None
    return encode(T_JOB, f)


if sys.implementation.name != "micropython":
    load_run_frame()      # the host reads and writes every frame from the start
