# Byte-stream helpers for the virtual board's console: pulling the boot step's in-band
# markers out of the interpreter's output, and following which REPL (friendly or raw) the
# interpreter is in, which decides how a soft reset comes back up.

# The boot step (boot_shim.py) reports progress as ESC _ vboard:<name> ESC \ (an APC
# sequence: terminals ignore it even if one ever leaked). The board strips every marker.
MARK_START = b"\x1b_vboard:"
MARK_END = b"\x1b\\"
_MARK_MAX = 64  # longest marker body; anything longer is ordinary output

# Printed by MicroPython's shared/runtime/pyexec.c on entering each REPL.
RAW_BANNER = b"raw REPL; CTRL-B to exit\r\n"
FRIENDLY_BANNER = b'Type "help()" for more information.\r\n'

FRIENDLY = "friendly"
RAW = "raw"


def _partial_start(buf, lo):
    # Index of the shortest tail of buf[lo:] that could still grow into MARK_START.
    for k in range(max(lo, len(buf) - len(MARK_START) + 1), len(buf)):
        if MARK_START.startswith(buf[k:]):
            return k
    return len(buf)


class MarkerFilter:
    # feed(bytes) -> list of ("data", bytes) and ("mark", name) in stream order. A tail that
    # may be the start of a marker is held back until the next feed() or flush().
    def __init__(self):
        self._held = b""

    @property
    def holding(self):
        return bool(self._held)

    def feed(self, data):
        buf = self._held + data
        self._held = b""
        out = []
        i = 0
        while i < len(buf):
            j = buf.find(MARK_START, i)
            if j < 0:
                k = _partial_start(buf, i)
                if k > i:
                    out.append(("data", buf[i:k]))
                self._held = buf[k:]
                break
            if j > i:
                out.append(("data", buf[i:j]))
            body = j + len(MARK_START)
            e = buf.find(MARK_END, body)
            if e < 0 or e - body > _MARK_MAX:
                if e < 0 and len(buf) - body <= _MARK_MAX:
                    self._held = buf[j:]
                    break
                out.append(("data", buf[j:j + 1]))  # not a marker after all
                i = j + 1
                continue
            out.append(("mark", buf[body:e].decode("ascii", "replace")))
            i = e + len(MARK_END)
        return out

    def flush(self):
        held, self._held = self._held, b""
        return held


class ReplModeTracker:
    # Watches output for the banners each REPL prints; the last one seen wins. A soft reset
    # on a Pico keeps pyexec_mode_kind, so the mode here decides what the reboot runs.
    def __init__(self):
        self.mode = FRIENDLY
        self._tail = b""

    def reset(self):
        self.mode = FRIENDLY
        self._tail = b""

    def feed(self, data):
        s = self._tail + data
        r = s.rfind(RAW_BANNER)
        f = s.rfind(FRIENDLY_BANNER)
        if r >= 0 or f >= 0:
            self.mode = RAW if r > f else FRIENDLY
        keep = max(len(RAW_BANNER), len(FRIENDLY_BANNER)) - 1
        self._tail = s[-keep:]


class UntilBanner:
    # Swallows output until `banner` appears, then passes the banner and all that follows.
    # Used while the board silently turns a fresh interpreter's friendly REPL into a raw one.
    def __init__(self, banner):
        self._banner = banner
        self._buf = b""
        self.done = False

    def feed(self, data):
        if self.done:
            return data
        s = self._buf + data
        i = s.find(self._banner)
        if i < 0:
            self._buf = s[-(len(self._banner) - 1):]
            return b""
        self.done = True
        self._buf = b""
        return s[i:]


class LineEndings:
    # The interpreter's output as a Pico sends it. The rp2 port cooks what print(), the REPL and
    # tracebacks write (each LF goes out as CR LF) and sends sys.stdout.buffer writes as they
    # are; the unix port writes everything raw, with bare LFs. So: a bare LF becomes CR LF,
    # except
    #   - the line after a "rawline" marker (the firmware's HAL marks each link frame it writes
    #     through sys.stdout.buffer), passed through to its LF as written;
    #   - everything from a CAN byte (0x18) to the end of the boot: mpremote's `mount` protocol
    #     has begun, a binary exchange over sys.stdout.buffer that must not be touched.
    def __init__(self):
        self._cr = False           # the last byte sent was CR: a LF right after it stays
        self._raw_line = False
        self.binary = False

    def raw_line(self):
        self._raw_line = True

    def feed(self, data):
        if self.binary or not data:
            return data
        can = data.find(b"\x18")
        if can >= 0:
            head = self.feed(data[:can])
            self.binary = True
            return head + data[can:]
        out = []
        while self._raw_line and data:
            lf = data.find(b"\n")
            if lf < 0:
                out.append(data)
                self._cr = data.endswith(b"\r")
                return b"".join(out)
            out.append(data[:lf + 1])
            data = data[lf + 1:]
            self._raw_line = False
            self._cr = False
        if data:
            out.append(self._cook(data))
        return b"".join(out)

    def _cook(self, data):
        lead = b""
        if self._cr and data.startswith(b"\n"):
            lead, data = b"\n", data[1:]
        if b"\n" in data:
            data = data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
        out = lead + data
        self._cr = out.endswith(b"\r")
        return out
