# A request/response client for the board's link (docs/protocol.md, shared_fsm/link.py) over
# a serial device, a pty or a `socket://host:port` URL (pyserial's serial_for_url), so a real
# Pico, the virtual board on a pty and the virtual board on TCP are interchangeable.
#
# One thread drives it: request() sends a frame and reads until the REPLY with its id arrives;
# every other frame read meanwhile goes to on_frame (telemetry keeps flowing during a
# request), REPL text goes to on_text. Nothing here retries forever or sleeps unbounded.
#
# When a link hub serves the port (hub.py), the client talks to the hub instead of the port
# (hub_client.HubStream reads like a port), so several tools share one board; `hub` chooses:
# hub_client.USE (default: a serving hub, else the port), AUTO (start a hub if none serves),
# DIRECT (the port only).
import re
import time

from surepick.shared_fsm import link
# The errors a LinkClient raises, importable from here beside it.
from surepick.host.link.errors import (ConsoleLent, Disconnected, LinkError, NoBoard, PortBusy,  # noqa: F401
                                       RequestTimeout)
from surepick.host.link.frames import FrameParser
from surepick.host.link import hub_client
from surepick.host.link.ports import BUSY_TEXT, busy_error, open_serial
from surepick.host.board_state import port_text

_READ_S = 0.05                     # one blocking read at most this long: stays responsive
_BURST = 65536                     # at most this many bytes taken in one read


_ECHO_TAIL = 512                   # REPL text kept to find an echo in (a request is shorter)


def _echo_pattern(frame):
    # A request as a REPL echoes it: without its RS (a control character), and with any request id
    # (a link hub sends it under its own id, so its CRC differs too).
    head, _, rest = frame.strip(b"\x1e\r\n").partition(b",")
    after_id = rest.rpartition(b"*")[0].partition(b",")[2]
    return re.compile(re.escape(head) + rb",\d+" + (b"," + re.escape(after_id) if after_id else b"")
                      + rb"\*[0-9A-F]{8}")


class Reply:
    # The board's answer: code (link.OK or an error), payload (tuple), and the frames of the
    # kinds asked for in request(collect=...) that arrived before it (LOG records, TELEMETRY).
    def __init__(self, req_id, code, payload, frames):
        self.req_id = req_id
        self.code = code
        self.payload = payload
        self.frames = frames

    @property
    def ok(self):
        return self.code == link.OK

    @property
    def code_name(self):
        return link.ERROR_NAMES.get(self.code, str(self.code))

    def __repr__(self):
        return "Reply(%d, %s, %r)" % (self.req_id, self.code_name, self.payload)


class _ReplyWait:
    # How long a request still waits: `timeout` seconds of the wall clock; then, given the board's
    # clock, `timeout` more of the board's own time, as long as that clock moves (still for
    # `timeout` s of wall: over). The board's clock is read only once the wall's has run out.
    _LOOK_S = 1.0                  # the board's clock read at most this often

    def __init__(self, timeout, clock):
        self.timeout = timeout
        self.clock = clock
        self.check_at = time.monotonic() + timeout
        self.start = self.last = self.moved_at = None

    def left(self):
        now = time.monotonic()
        if now < self.check_at:
            return self.check_at - now
        b = self.clock() if self.clock is not None else None
        if b is None:              # no board clock, or it is gone with the board
            return 0.0
        if self.start is None:
            self.start = self.last = b
            self.moved_at = now
        elif b > self.last:
            self.last, self.moved_at = b, now
        if b - self.start >= self.timeout or now - self.moved_at >= self.timeout:
            return 0.0
        self.check_at = now + self._LOOK_S
        return self._LOOK_S

    def whose(self):
        if self.start is None:
            return ""
        return " and %.1f s of the board's own time after" % (self.last - self.start)


# ---- the client ----

class LinkClient:
    def __init__(self, port, on_frame=None, on_text=None, baudrate=115200, hub=hub_client.USE,
                 name=None, on_notice=None):
        self.port = port
        self.baudrate = baudrate
        self.hub = hub
        self.name = name
        self.on_notice = on_notice
        self.via_hub = False
        self.on_frame = on_frame
        self.on_text = on_text
        self.ser = None
        self.parser = FrameParser(on_text=self._text)
        self._next_id = 1
        self.bytes_in = 0
        self.requests = 0
        self.timeouts = 0
        self._busy_seen = False
        self._text_tail = b""
        self._echo_of = None         # the request waiting for its reply, as a REPL echoes it
        self._echo_seen = False
        self._queued = []  # frames read past a REPLY: handed out by the next read_frames
        # () -> seconds of the board's own time, or None once unreadable; None: the wall clock.
        # A served virtual or emulated board runs slower than a Pico: a reply is waited for in
        # its time (vboard/control.py board_clock).
        self.board_clock = None

    # -- connection --

    def open(self):
        self.close()
        stream = hub_client.attach(self.port, self.hub, self.name)
        if stream is not None:
            stream.on_notice = self.on_notice
            self.ser = stream
            self.via_hub = True
        else:
            self.ser = open_serial(self.port, self.baudrate, _READ_S)
            self.via_hub = False
        self._busy_seen = False
        return self

    @property
    def lent_to(self):
        # Who has the board's console through the hub right now (None: nobody, or no hub).
        return getattr(self.ser, "lent_to", None) if self.via_hub else None

    def take_returns(self):
        """Who had the board's console, per lending returned since the last call (oldest first)."""
        got = getattr(self.ser, "returned_by", None) if self.via_hub else None
        if not got:
            return []
        taken = list(got)
        del got[:]
        return taken

    def close(self):
        if self.ser is not None:
            try:
                self.ser.close()
            except Exception:  # closing a port that already vanished
                pass
            self.ser = None

    @property
    def connected(self):
        return self.ser is not None

    def __enter__(self):
        return self.open()

    def __exit__(self, *exc):
        self.close()

    # -- bytes in --

    def _text(self, data):
        # The virtual board answers a second client with a busy line, then hangs up.
        # A REPL echoes a request as text (its RS is a control character it does not echo); the
        # firmware never does.
        tail = self._text_tail + data
        if BUSY_TEXT in tail:
            self._busy_seen = True
        if self._echo_of is not None and self._echo_of.search(tail):
            self._echo_seen = True
        self._text_tail = tail[-_ECHO_TAIL:]
        if self.on_text is not None:
            self.on_text(data)

    def read_frames(self, timeout=_READ_S):
        # One read of what is waiting (at most `timeout` s of waiting) -> decoded frames.
        # Raises Disconnected when the port is gone.
        import serial
        if self._queued:
            frames, self._queued = self._queued, []
            return frames
        if self.ser is None:
            raise Disconnected("%s is not open" % self.port)
        try:
            self.ser.timeout = timeout
            data = self.ser.read(self.ser.in_waiting or 1)    # the first byte waits up to `timeout`
            if data:
                data += self._rest()
        except Disconnected:
            self.close()
            raise
        except (serial.SerialException, OSError, TypeError, AttributeError) as e:
            # TypeError/AttributeError: pyserial's posix read after the fd vanished
            self.close()
            if self._busy_seen:
                raise busy_error(self.port, ["another client"]) from None
            raise Disconnected("%s went away: %s" % (self.port, e)) from None
        if not data:
            return []
        self.bytes_in += len(data)
        frames = self.parser.feed(data)
        if self._busy_seen:
            self.close()
            raise busy_error(self.port, ["another client"])
        return frames

    def _rest(self):
        # Every byte already waiting, without waiting for more. pyserial's socket:// port says
        # only whether some wait (in_waiting 1), so a read of in_waiting bytes there took a
        # virtual board's frames a byte or two a call; at timeout 0 it reads all there is.
        n = self.ser.in_waiting
        if n > 1:
            return self.ser.read(n)
        if not n:
            return b""
        self.ser.timeout = 0
        return self.ser.read(_BURST)

    def pump(self, timeout=_READ_S):
        # Read once and hand every frame to on_frame. -> the frames.
        frames = self.read_frames(timeout)
        if self.on_frame is not None:
            for f in frames:
                self.on_frame(f)
        return frames

    # -- bytes out --

    def send(self, frame):
        import serial
        if self.ser is None:
            raise Disconnected("%s is not open" % self.port)
        try:
            self.ser.write(frame)
        except Disconnected:
            self.close()
            raise
        except (serial.SerialException, OSError) as e:
            self.close()
            raise Disconnected("%s went away: %s" % (self.port, e)) from None

    def new_id(self):
        rid = self._next_id
        self._next_id = rid + 1 if rid < 65535 else 1
        return rid

    def request(self, ftype, args=(), timeout=2.0, collect=()):
        # Send one request, read until its REPLY. Frames of the types in `collect` that arrive
        # before the REPLY are returned in it (they are also handed to on_frame).
        rid = self.new_id()
        frame = link.request(ftype, rid, args)
        if frame is None:
            raise ValueError("cannot encode %s %r" % (link.SCHEMA[ftype][0], args))
        if self.lent_to:
            raise self._lent_error(ftype)
        self.requests += 1
        wait = _ReplyWait(timeout, self.board_clock)
        self._echo_of, self._echo_seen = _echo_pattern(frame), False
        self.send(frame)
        got = []
        while True:
            left = wait.left()
            if left <= 0:
                self.timeouts += 1
                if self.lent_to:
                    raise self._lent_error(ftype, "no reply")
                raise RequestTimeout("no reply to %s from the board on %s within %.1f s%s (is the "
                                     "firmware running? a board sitting in the REPL does not answer; "
                                     "`surepick doctor%s` says which)"
                                     % (link.SCHEMA[ftype][0], self.port, timeout, wait.whose(),
                                        port_text(self.port)))
            frames = self.read_frames(min(left, _READ_S))
            if self._echo_seen:
                self.timeouts += 1
                raise self._at_repl(ftype)
            if self.via_hub and rid in self.ser.refused:
                del self.ser.refused[rid]
                raise self._lent_error(ftype)
            for i, f in enumerate(frames):
                if f.ftype == link.T_REPLY and f.fields[0] == rid:
                    self._queued = frames[i + 1:] + self._queued
                    return Reply(rid, f.fields[1], f.fields[2:], got)
                if f.ftype in collect:
                    got.append(f)
                if self.on_frame is not None:
                    self.on_frame(f)

    def _at_repl(self, ftype):
        # The REPL read the request: no reply will come, and the way out is the bench state's
        # (host/board_state.py), not the rest of the wait.
        from surepick.host import board_state
        repl = board_state.BY_KEY["repl"]
        return RequestTimeout("no reply to %s from the board on %s: it echoed the request, so %s; way out: %s"
                              % (link.SCHEMA[ftype][0], self.port, repl.shows, board_state.way_out(repl, self.port)))

    def _lent_error(self, ftype, what="not sent"):
        return ConsoleLent("%s %s: the console of the board on %s is lent to %s through the link "
                           "hub; try again when it is done" % (link.SCHEMA[ftype][0], what, self.port,
                                                               self.lent_to or "another program"))

    def wait_for(self, ftype, timeout):
        # The next frame of `ftype` (others go to on_frame), or None after `timeout` s.
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            frames = self.read_frames(min(left, _READ_S))
            for i, f in enumerate(frames):
                if f.ftype == ftype:
                    self._queued = frames[i + 1:] + self._queued
                    return f
                if self.on_frame is not None:
                    self.on_frame(f)

    def stats(self):
        s = self.parser.stats()
        s.update(bytes_in=self.bytes_in, requests=self.requests, timeouts=self.timeouts)
        return s
