# The client end of a link hub (hub.py): find the hub serving a port, start one in the
# background when asked, and talk to it through HubStream, which looks like an open pyserial
# port to LinkClient (read/write/in_waiting/timeout), so every verb works the same through a
# hub or straight on the port.
#
# Who starts a hub: the tools that stay connected (`surepick monitor`, `job start --wait`,
# `link serve`, `link mpremote`). A hub they start ends LINGER_S after its last client left, so
# the port is free again soon after. One-shot verbs (config, job abort, calibrate, doctor) use a
# hub when one is serving the port and open the port themselves otherwise.
# SUREPICK_HUB=off makes every tool open the port itself (no hub used or started).
import contextlib
import json
import os
import select
import socket
import subprocess
import sys
import time

from surepick.host.link import errors, hubwire, rundir
from surepick.host.link.errors import Disconnected, LinkError

DIRECT, USE, AUTO = "direct", "use", "auto"   # never a hub / a serving hub / a hub, started if needed
LINGER_S = 2.5          # a started hub outlives its last client by this long
_START_S = 10.0         # a hub that is not serving within this long has failed
_spawned = []           # hubs this process started: reaped when they end


def hub_mode(mode):
    # The caller's choice unless the user turned hubs off for everything.
    if os.environ.get("SUREPICK_HUB", "").lower() in ("0", "off", "no", "never"):
        return DIRECT
    return mode


def find_hub(port):
    # -> the info dict of the live hub serving `port`, or None (stale files are removed).
    sock_path, info_path, _ = rundir.hub_paths(port)
    try:
        info = json.loads(info_path.read_text())
        pid = int(info["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not rundir.pid_alive(pid):
        for p in (sock_path, info_path):
            try:
                p.unlink()
            except OSError:
                pass
        return None
    return info if sock_path.exists() else None


def list_hubs():
    # -> info dicts of every live hub of this user
    out = []
    d = rundir.hubs_dir(create=False)
    for p in sorted(d.glob("*.json")) if d.is_dir() else ():
        try:
            info = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(info, dict) and rundir.pid_alive(int(info.get("pid") or 0)):
            out.append(info)
    return out


def start_hub(port, linger=LINGER_S):
    # Start `python -m surepick.host.link.hub` in its own session and wait until it serves.
    # Raises the LinkError it failed with (NoBoard, PortBusy, ...); returns quietly if another
    # process's hub won the race.
    for p in list(_spawned):
        if p.poll() is not None:
            _spawned.remove(p)
    _, info_path, _ = rundir.hub_paths(port)
    log_path = info_path.with_suffix(".log")
    if log_path.exists() and log_path.stat().st_size > (1 << 20):
        log_path.unlink()
    r, w = os.pipe()
    try:
        with open(log_path, "ab") as log:
            p = subprocess.Popen([sys.executable, "-m", "surepick.host.link.hub", "--port", port,
                                  "--linger", str(linger), "--ready-fd", str(w)],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
                                 pass_fds=(w,), start_new_session=True)
    finally:
        os.close(w)
    _spawned.append(p)
    line = b""
    deadline = time.monotonic() + _START_S
    try:
        while not line.endswith(b"\n") and time.monotonic() < deadline:
            ready, _, _ = select.select([r], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                break
            chunk = os.read(r, 4096)
            if not chunk:
                break
            line += chunk
    finally:
        os.close(r)
    text = line.decode(errors="replace").strip()
    if text == "ready":
        return
    if not text:
        try:
            p.wait(0.5)
        except subprocess.TimeoutExpired:
            pass
        if p.returncode is None:
            raise LinkError("the link hub for %s did not start within %.0f s (its log: %s)"
                            % (port, _START_S, log_path))
        tail = log_path.read_text(errors="replace").strip().splitlines()[-1:] if log_path.exists() else []
        raise LinkError("the link hub for %s failed as it started (exit %d)%s; its log: %s"
                        % (port, p.returncode, ": " + tail[0] if tail else "", log_path))
    why = text[len("error: "):] if text.startswith("error: ") else text
    if "a hub already serves" in why:
        return
    raise _error_like(why)


def _error_like(message):
    # The hub's error as the class the port itself would have raised.
    low = message.lower()
    if "in use" in low or "busy" in low:
        return errors.PortBusy(message)
    if message.startswith("no ") or "does not exist" in low or "refused" in low:
        return errors.NoBoard(message)
    return LinkError(message)


class HubStream:
    """A connection to a hub that LinkClient reads and writes like a serial port."""

    def __init__(self, port, name=None, role="link", connect_timeout=5.0):
        self.port = port
        self.sock_path = str(rundir.hub_paths(port)[0])
        self._reader = hubwire.Reader()
        self._buf = bytearray()
        self._answers = []
        self.timeout = 0.05
        self.lent_to = None
        self.returned_by = []       # who had the console, per lending returned, until taken
        self.refused = {}           # request id -> the hub's reason
        self.notices = []           # (event, text) in arrival order
        self.on_notice = None
        self._gone = None
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(connect_timeout)
        try:
            self.sock.connect(self.sock_path)
        except OSError as e:
            self.sock.close()
            raise _NoHub(str(e)) from None
        self.sock.settimeout(None)
        self.sock.setblocking(False)
        self.info = {}
        deadline = time.monotonic() + connect_timeout
        try:
            self._send(hubwire.pack(hubwire.HELLO, {"client": name or _me(), "pid": os.getpid(), "role": role}))
            while not self.info:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise _NoHub("no welcome from the hub within %.0f s" % connect_timeout)
                self._pump(left)
        except (_NoHub, Disconnected) as e:
            # A hub that hangs up before its welcome was ending as we came (its linger ran out):
            # the caller finds or starts another, or opens the port itself.
            self.close()
            raise _NoHub(str(e)) from None
        if not self.info.get("ok"):
            self.close()
            raise _error_like(self.info.get("error") or "the hub refused")
        self.lent_to = self.info.get("lent_to")

    # -- what LinkClient uses --

    @property
    def in_waiting(self):
        if not self._buf:
            self._pump(0)
        return len(self._buf)

    def read(self, size=1):
        deadline = time.monotonic() + (self.timeout or 0)
        while not self._buf:
            left = deadline - time.monotonic()
            self._pump(max(0.0, left))
            if left <= 0:
                break
        out = bytes(self._buf[:size])
        del self._buf[:size]
        return out

    def write(self, data):
        self._send(hubwire.pack(hubwire.DATA, data))
        return len(data)

    def fileno(self):
        return self.sock.fileno()

    def close(self):
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass
            self.sock = None

    # -- queries (link status, link stop) --

    def query(self, op, timeout=5.0):
        self._send(hubwire.pack(hubwire.QUERY, {"op": op}))
        deadline = time.monotonic() + timeout
        while not self._answers:
            left = deadline - time.monotonic()
            if left <= 0:
                raise LinkError("the hub for %s did not answer %r" % (self.port, op))
            self._pump(left)
        return self._answers.pop(0)

    # -- the socket --

    def _send(self, msg):
        if self.sock is None:
            raise Disconnected(self._gone or "the hub connection for %s is closed" % self.port)
        try:
            self.sock.setblocking(True)
            self.sock.settimeout(5.0)
            self.sock.sendall(msg)
        except OSError as e:
            raise Disconnected(self._gone or "the link hub for %s went away: %s" % (self.port, e)) from None
        finally:
            if self.sock is not None:
                self.sock.setblocking(False)

    def _pump(self, wait):
        if self.sock is None:
            raise Disconnected(self._gone or "the hub connection for %s is closed" % self.port)
        ready, _, _ = select.select([self.sock], [], [], wait)
        if not ready:
            return
        try:
            data = self.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            data = b""
            self._gone = self._gone or "the link hub for %s went away: %s" % (self.port, e)
        if not data:
            self.close()
            raise Disconnected(self._gone or "the link hub for %s closed the connection" % self.port)
        try:
            msgs = self._reader.feed(data)
        except hubwire.WireError as e:
            self.close()
            raise Disconnected("the link hub for %s: %s" % (self.port, e)) from None
        for kind, payload in msgs:
            if kind == hubwire.DATA:
                self._buf += payload
            elif kind == hubwire.WELCOME:
                self.info = hubwire.load(payload)
            elif kind == hubwire.ANSWER:
                self._answers.append(hubwire.load(payload))
            elif kind == hubwire.NOTICE:
                self._notice(hubwire.load(payload))

    def _notice(self, n):
        event, text = n.get("event"), n.get("text") or ""
        if event == "lent":
            self.lent_to = n.get("to") or "another program"
        elif event == "returned":
            # Kept until taken: a lending can begin and end between two looks at lent_to.
            self.returned_by.append(n.get("by") or self.lent_to or "another program")
            self.lent_to = None
        elif event == "refused":
            self.refused[n.get("rid")] = text
        elif event == "board_lost":
            self._gone = text
        self.notices.append((event, text))
        if self.on_notice is not None:
            self.on_notice(event, text)


class _NoHub(Exception):
    pass


def _me():
    argv = [os.path.basename(sys.argv[0] or "python")] + sys.argv[1:3]
    return " ".join(argv)


def attach(port, mode=USE, name=None, role="link"):
    # -> a HubStream to the hub serving `port` (started first when mode is AUTO), or None when
    # the caller should open the port itself (no hub and mode USE, or hubs are off).
    mode = hub_mode(mode)
    if mode == DIRECT:
        return None
    for attempt in range(3):
        info = find_hub(port)
        if info is not None:
            try:
                return HubStream(port, name, role)
            except _NoHub:
                # It is just ending: let it let go of the port, then start another (or go direct).
                _wait_gone(int(info.get("pid") or 0))
        if mode != AUTO:
            return None
        start_hub(port)
        if attempt:
            time.sleep(0.2 * attempt)
    raise LinkError("could not reach a link hub for %s (see `surepick link status`)" % port)


def _wait_gone(pid, timeout=_START_S):
    # Until the process `pid` has ended (a hub closes the port as it ends), at most `timeout` s.
    deadline = time.monotonic() + timeout
    while pid > 0 and rundir.pid_alive(pid) and time.monotonic() < deadline:
        for p in _spawned:
            if p.pid == pid:
                p.poll()             # our own child: reap it, else it stays a zombie that looks alive
        time.sleep(0.05)


def query(port, op):
    # One query to the hub serving `port` -> its answer; LinkError when none serves it.
    if find_hub(port) is None:
        raise errors.NoBoard("no link hub serves %s" % port)
    try:
        s = HubStream(port, role="query")
    except _NoHub as e:
        raise errors.NoBoard("no link hub serves %s: %s" % (port, e)) from None
    try:
        return s.query(op)
    finally:
        s.close()


@contextlib.contextmanager
def raw_console(port, name=None, mode=USE):
    # `with raw_console(port) as dev:` -> the device mpremote's transport should open: the
    # serving hub's raw pty (the hub kept alive meanwhile), or the port itself when no hub
    # serves it (mode USE) or hubs are off. Mode AUTO starts a hub first: its pty is a real
    # terminal even for a socket:// board.
    mode = hub_mode(mode)
    if mode == DIRECT:
        yield port
        return
    keep, why = None, None
    for _ in range(2):
        if mode == AUTO and find_hub(port) is None:
            start_hub(port)
        info = find_hub(port)
        if info is None:
            yield port
            return
        try:
            keep = HubStream(port, name, role="lease")
            break
        except _NoHub as e:
            why = e
            pid = int(info.get("pid") or 0)
            _wait_gone(pid)          # a hub whose linger ran out as we came: look again once it ended
            if rundir.pid_alive(pid):
                break
    if keep is None:
        # A hub owns the board: going to the port itself would type into a console the hub
        # holds (its clients' requests would land in mpremote's REPL). Never silently.
        raise LinkError("the link hub serving %s did not lend its console (%s): try again, or stop it "
                        "with `surepick link stop --port %s`" % (port, why, port))
    try:
        yield keep.info["raw"]
    finally:
        keep.close()
