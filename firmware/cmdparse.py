# Board side of the link: assemble request lines from stdin without blocking, and turn one
# line into a validated request or the error reply to send. Bounded work per byte and per
# line (lines are at most MAX_FRAME_LEN + 1 bytes; no regex, no loops over unbounded input),
# never raises on bad input: it runs inside the main loop.
#
# What gets an answer:
#   valid request                         -> (OK, type, req_id, args): the firmware replies
#   REPL text, noise without RS           -> ignored silently (E_NOT_FRAME)
#   valid board->host frame (an echo)     -> ignored silently (E_DIRECTION), else an echoing
#                                            terminal would ping-pong error replies forever
#   anything else starting with RS        -> error REPLY; req_id is the request's own when its
#                                            CRC is good, else 0
from ..shared_fsm import link

from ..shared_fsm.compat import const

OK = link.OK
LINE_NONE = const(0)      # nothing complete yet
LINE_READY = const(1)     # reader.line() holds one line (without LF)
LINE_OVERLONG = const(2)  # an overlong frame was dropped: answer E_TOO_LONG

_LF = const(0x0A)
_START = link.START


def parse_line(line):
    # -> (err, ftype, req_id, args). err == OK: a valid request, args = fields after req_id.
    err, ftype, fields = link.decode(line, True)
    if err == OK:
        return OK, ftype, fields[0], fields[1:]
    if err == link.E_NOT_FRAME or err == link.E_DIRECTION:
        return err, ftype, 0, None
    return err, ftype, link.request_id_of(line), None


def needs_reply(err):
    # False for input the board must stay silent about (REPL text, echoes of its own frames).
    return err != link.E_NOT_FRAME and err != link.E_DIRECTION


def error_reply(req_id, err):
    return link.reply(req_id, err)


class LineReader:
    # Collects bytes into one preallocated buffer until LF. A RS byte in the middle of a
    # line restarts the line there (a frame after REPL text or a truncated frame is not
    # lost). A line longer than the buffer is dropped up to its LF and counted.

    def __init__(self, max_len=link.MAX_FRAME_LEN + 1):  # +1: a CR before LF
        self.buf = bytearray(max_len)
        self._mv = memoryview(self.buf)
        self.n = 0
        self.discarding = False
        self._frame_dropped = False
        self.lines = 0
        self.overlong = 0
        self.resyncs = 0
        self._complete = False

    def push(self, b):
        # Feed one byte (int). Returns LINE_NONE, LINE_READY or LINE_OVERLONG. After
        # LINE_READY, line() holds the line until the next push().
        if self._complete:
            self._complete = False
            self.n = 0
        if b == _LF:
            if self.discarding:
                self.discarding = False
                if self._frame_dropped:
                    return LINE_OVERLONG
                return LINE_NONE
            self.lines += 1
            self._complete = True
            return LINE_READY
        if b == link.START:
            if self.n or self.discarding:
                self.resyncs += 1
            self.discarding = False
            self.buf[0] = b
            self.n = 1
            return LINE_NONE
        if self.discarding:
            return LINE_NONE
        if self.n >= len(self.buf):
            self.discarding = True
            self._frame_dropped = self.buf[0] == link.START
            self.overlong += 1
            self.n = 0
            return LINE_NONE
        self.buf[self.n] = b
        self.n += 1
        return LINE_NONE

    def line(self):
        # The line just completed, without LF: a memoryview into the buffer, valid until the
        # next push().
        return self._mv[:self.n]

    def poll(self, read_byte, max_bytes=32, interrupt=-1):
        # Read at most max_bytes from read_byte() (-1 = nothing waiting); stop at the first
        # completed line or dropped overlong frame. The byte `interrupt` raises KeyboardInterrupt
        # (the App passes Ctrl-C: where the port does not turn it into one itself, it still stops
        # the program, so mpremote can always take over). A byte inside a line with room left is
        # stored here, not through push(): on the RP2040 a byte costs its read plus this loop,
        # and a 32-byte share of a long request line read at rest overran the 4 ms period
        # (docs/rp2040.md, what a tick costs).
        buf = self.buf
        cap = len(buf)
        for _ in range(max_bytes):
            b = read_byte()
            if b < 0:
                return LINE_NONE
            if b == interrupt:
                raise KeyboardInterrupt
            n = self.n
            if b != _LF and b != _START and n < cap and not self.discarding and not self._complete:
                buf[n] = b
                self.n = n + 1
                continue
            r = self.push(b)
            if r != LINE_NONE:
                return r
        return LINE_NONE
