# An independent reference for the SP1 link, written from docs/protocol.md alone ("How the board
# judges a line" and the frame tables), never from surepick.shared_fsm.link or firmware/cmdparse:
# tests compare what the running firmware answers with what this says it must answer. Small and
# table-driven on purpose, so a reader can check it against the document line by line.
import zlib

RS = 0x1E
MAX_FRAME = 256            # bytes from RS to the last CRC digit
TOKEN_MAX = 24
TOKEN_CHARS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")

# Codes (docs/protocol.md, "Codes").
OK, NOT_FRAME, TOO_LONG, SYNTAX, CRC, VERSION = 0, 1, 2, 3, 4, 5
UNKNOWN_TYPE, FIELD_COUNT, BAD_FIELD, RANGE, DIRECTION = 6, 7, 8, 9, 10
SILENT = (NOT_FRAME, DIRECTION)          # the board answers these with nothing

U30 = (0, (1 << 30) - 1)
S30 = (-(1 << 30), (1 << 30) - 1)
U16 = (0, 65535)
POS = (-1000000, 1000000)
MDEG = (-180000, 180000)
RID = (1, 65535)
TOKEN = "token"

# Host -> board types: letter -> (name, fields after req_id, how many of them are optional).
REQUESTS = {
    "p": ("PING", (), 0),
    "s": ("STATUS", (), 0),
    "j": ("JOB", (POS, POS, POS, MDEG, POS, POS, POS, MDEG, (1, 100000), (1, 9), U30), 2),
    "a": ("ABORT", (), 0),
    "c": ("CLEAR_FAULT", (), 0),
    "l": ("LOG_SINCE", (U30,), 0),
    "g": ("CONFIG_GET", (TOKEN,), 0),
    "w": ("CONFIG_SET", (TOKEN, S30), 0),
    "k": ("CALIBRATE", ((0, 1),), 0),
    "x": ("HIL_MODE", ((0, 2),), 0),
    "y": ("HIL_SENSORS", (U30, U16, U16, U16, (0, 7)), 0),
    "r": ("REJECTS", ((0, 255),), 0),
    "d": ("ARM_READ", (U16,), 0),
}
# Board -> host types (the board ignores them: an echo of its own kind of frame).
BOARD_TYPES = "HTEFRLX"


def crc_hex(body):
    return b"%08X" % (zlib.crc32(body) & 0xFFFFFFFF)


def frame(body):
    # RS body * CRC (no LF): a frame around any body, its CRC right.
    return bytes([RS]) + body + b"*" + crc_hex(body)


def reads_as_integer(p):
    # An optional "-" and at least one digit, nothing else (leading zeros included).
    digits = p[1:] if p[:1] == b"-" else p
    return len(digits) > 0 and digits.isdigit()


def canonical_int(p):
    # The value, or None: no "+", no leading zero, no "-0", at most 11 characters.
    if not reads_as_integer(p) or len(p) > 11:
        return None
    digits = p[1:] if p[:1] == b"-" else p
    if digits[:1] == b"0" and (len(digits) > 1 or p[:1] == b"-"):
        return None
    return int(p)


def is_token(p):
    return 1 <= len(p) <= TOKEN_MAX and all(c in TOKEN_CHARS for c in p) and not reads_as_integer(p)


def _field_error(spec, p):
    if spec == TOKEN:
        return OK if is_token(p) else BAD_FIELD
    v = canonical_int(p)
    if v is None:
        return BAD_FIELD
    return OK if spec[0] <= v <= spec[1] else RANGE


def judge(line):
    # What the board must do with one received line (the bytes before its LF):
    # -> (code, req_id); code OK = a valid request (the firmware acts on it), a code in SILENT =
    # no answer at all, any other code = exactly one error REPLY carrying req_id.
    line = bytes(line)
    start = line.rfind(bytes([RS]))            # the last RS starts the frame
    if start < 0:
        return NOT_FRAME, 0
    f = line[start:]
    if f.endswith(b"\r"):
        f = f[:-1]                             # one CR before the LF
    if len(f) > MAX_FRAME:
        return TOO_LONG, 0
    if len(f) < 14 or f[-9:-8] != b"*":
        return SYNTAX, 0
    body = f[1:-9]
    if f[-8:] != crc_hex(body):
        return CRC, 0
    if body[:3] != b"SP1":
        return (VERSION if body[:2] == b"SP" else SYNTAX), 0
    letter = chr(body[3])
    fields = body[5:].split(b",") if len(body) > 4 else []
    rid = 0
    if "a" <= letter <= "z" and len(body) > 4 and body[4:5] == b",":
        v = canonical_int(fields[0])
        if v is not None and RID[0] <= v <= RID[1]:
            rid = v
    if letter in BOARD_TYPES:
        return DIRECTION, 0
    if letter not in REQUESTS:
        return UNKNOWN_TYPE, rid
    if len(body) > 4 and body[4:5] != b",":
        return SYNTAX, 0
    _, specs, optional = REQUESTS[letter]
    specs = (RID,) + specs
    if not len(specs) - optional <= len(fields) <= len(specs):
        return FIELD_COUNT, rid
    for spec, p in zip(specs, fields):
        e = _field_error(spec, p)
        if e != OK:
            return e, rid
    return OK, rid


def board_frames(data):
    # Board -> host frames in a byte stream, CRC-checked here: -> [(letter, [fields as bytes])].
    # Anything that is not a whole CRC-valid frame is skipped (REPL text).
    out = []
    for raw in data.split(b"\n"):
        start = raw.rfind(bytes([RS]))
        if start < 0:
            continue
        f = raw[start:]
        if f.endswith(b"\r"):
            f = f[:-1]
        if len(f) < 14 or len(f) > MAX_FRAME or f[-9:-8] != b"*":
            continue
        body = f[1:-9]
        if body[:3] != b"SP1" or f[-8:] != crc_hex(body):
            continue
        out.append((chr(body[3]), body[5:].split(b",") if len(body) > 4 else []))
    return out
