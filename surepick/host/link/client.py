# A request/response client for the board's link (docs/protocol.md, shared_fsm/link.py) over
# a serial device, a pty or a `socket://host:port` URL (pyserial's serial_for_url), so a real
# Pico, the virtual board on a pty and the virtual board on TCP are interchangeable.
#
# One thread drives it: request() sends a frame and reads until the REPLY with its id arrives;
# every other frame read meanwhile goes to on_frame (telemetry keeps flowing during a
# request), REPL text goes to on_text. Nothing here retries forever or sleeps unbounded.
import os
import time

from surepick.shared_fsm import link
from surepick.host.link.frames import FrameParser

PICO_USB_VID = 0x2E8A              # Raspberry Pi (RP2040 boards running MicroPython)
BUSY_TEXT = b"surepick-board: busy"  # the virtual board's answer to a second client
_READ_S = 0.05                     # one blocking read at most this long: stays responsive


class LinkError(Exception):
    """A link failure with a message meant for the user."""


class NoBoard(LinkError):
    """Nothing to talk to on that port (no device, nothing listening, no Pico found)."""


class PortBusy(LinkError):
    """Another program has the port open."""


class Disconnected(LinkError):
    """The port went away while in use (cable pulled, board reset, virtual board killed)."""


class RequestTimeout(LinkError):
    """No REPLY to a request in time (firmware not running, or busy in the REPL)."""


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


# ---- finding and opening the port ----

def is_url(port):
    return "://" in port


def find_pico_ports():
    # -> [(device, description)] of USB serial ports with the Raspberry Pi vendor id.
    from serial.tools import list_ports
    return [(p.device, p.description or "") for p in list_ports.comports()
            if p.vid == PICO_USB_VID]


def resolve_port(port):
    # "auto" -> the one Pico's device path; anything else is returned as given.
    if port != "auto":
        return port
    found = find_pico_ports()
    if not found:
        raise NoBoard("no Raspberry Pi Pico found (no USB serial port with vendor id %04X); "
                      "plug it in, or give --port /dev/ttyACM0 or socket://HOST:PORT" % PICO_USB_VID)
    if len(found) > 1:
        raise NoBoard("several Picos found (%s): choose one with --port"
                      % ", ".join(d for d, _ in found))
    return found[0][0]


def holders_of(device):
    # -> ["pid 123 (mpremote)", ...]: other processes that have `device` open, read from
    # /proc/*/fd (Linux; empty elsewhere or when we may not look).
    try:
        target = os.path.realpath(device)
        pids = [p for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()]
    except OSError:
        return []
    out = []
    for pid in pids:
        fd_dir = "/proc/%s/fd" % pid
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink("%s/%s" % (fd_dir, fd)) == target:
                    out.append("pid %s (%s)" % (pid, _process_name(pid)))
                    break
            except OSError:
                continue
    return out


def _process_name(pid):
    try:
        with open("/proc/%s/cmdline" % pid, "rb") as f:
            argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
        if argv:
            # "python .../mpremote connect ..." says more than "python3"
            return " ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(argv[:4]))
    except OSError:
        pass
    return "?"


def busy_error(port, holders):
    return PortBusy("%s is in use by %s; close it first (only one program can talk to the board)"
                    % (port, ", ".join(holders)))


def check_not_busy(port):
    # Device paths only: a second reader on a tty steals bytes from the first.
    if is_url(port):
        return
    holders = holders_of(port)
    if holders:
        raise busy_error(port, holders)


def open_serial(port, baudrate=115200):
    # -> an open pyserial object (non-blocking-ish reads). Raises NoBoard / PortBusy.
    import serial
    check_not_busy(port)
    if not is_url(port) and not os.path.exists(port):
        raise NoBoard("no board on %s: the device does not exist" % port)
    try:
        return serial.serial_for_url(port, baudrate=baudrate, timeout=_READ_S,
                                     write_timeout=2, exclusive=True)
    except (serial.SerialException, OSError, ValueError) as e:
        text = str(e)
        if "lock" in text.lower() or "busy" in text.lower():
            raise busy_error(port, holders_of(port) or ["another program"]) from None
        raise NoBoard("no board on %s: %s" % (port, text)) from None


# ---- the client ----

class LinkClient:
    def __init__(self, port, on_frame=None, on_text=None, baudrate=115200):
        self.port = port
        self.baudrate = baudrate
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
        self._queued = []  # frames read past a REPLY: handed out by the next read_frames

    # -- connection --

    def open(self):
        self.close()
        self.ser = open_serial(self.port, self.baudrate)
        self._busy_seen = False
        return self

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
        tail = self._text_tail + data
        if BUSY_TEXT in tail:
            self._busy_seen = True
        self._text_tail = tail[-len(BUSY_TEXT):]
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
            waiting = self.ser.in_waiting
            data = self.ser.read(waiting or 1)
            if waiting == 0 and data:
                data += self.ser.read(self.ser.in_waiting)  # the rest of the burst
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
        self.requests += 1
        self.send(frame)
        got = []
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.timeouts += 1
                raise RequestTimeout("no reply to %s from the board on %s within %.1f s (is the "
                                     "firmware running? a board sitting in the REPL does not answer)"
                                     % (link.SCHEMA[ftype][0], self.port, timeout))
            frames = self.read_frames(min(left, _READ_S))
            for i, f in enumerate(frames):
                if f.ftype == link.T_REPLY and f.fields[0] == rid:
                    self._queued = frames[i + 1:] + self._queued
                    return Reply(rid, f.fields[1], f.fields[2:], got)
                if f.ftype in collect:
                    got.append(f)
                if self.on_frame is not None:
                    self.on_frame(f)

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
