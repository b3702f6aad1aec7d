# The link hub: one process owns the board's port and serves every other surepick tool at once
# (the monitor, job, config, calibrate, HIL, doctor), on this machine only: a Unix socket in the
# private runtime directory (rundir.py), 0600, clients of another uid turned away.
#
#   requests   each client numbers its requests from 1 as if it were alone; the hub gives every
#              request a fresh id of its own on the way to the board and puts the client's id
#              back into the REPLY (and the HIL_ACT) on the way out, so a reply reaches only the
#              client that asked. LOG frames belong to the REPLY that follows them.
#   broadcast  HELLO, TELEMETRY, EVENT, FAULT, REPL text and damaged frames go to every client.
#   guard      only well-formed requests reach the board: a known request type whose fields all
#              pass the protocol's own checks (link.decode: kinds, ranges, tokens), re-encoded
#              by the hub (link.encode), so no control byte and no REPL text can ride along; a
#              refused line gets a `refused` notice naming why.
#   fairness   each client's requests wait in its own queue (at most _QUEUE_MAX); the hub
#              forwards them round-robin, one per client in turn, with at most _BOARD_IN_FLIGHT
#              waiting for the board's answer, so one client's flood never starves another.
#   limits     at most _MAX_CLIENTS clients; out of file descriptors (EMFILE) the hub refuses
#              the newcomer through a descriptor it kept in reserve and goes on serving.
#   raw        a pseudo-terminal (`raw`, printed at start) is the board's console for mpremote,
#              Thonny or `surepick deploy`: while something has it open, its bytes go to the
#              board untouched and the board's bytes come back to it; link clients are told the
#              console is lent (their requests are refused, never queued behind a REPL session)
#              and told again when it is returned.
#
# `surepick link serve --port P` runs one in the foreground; the monitor and `job start --wait`
# start one on their own (hub_client.py) that ends `linger` seconds after its last client left.
import argparse
import collections
import errno
import fcntl
import json
import os
import pty
import select
import socket
import struct
import sys
import termios
import time
import tty

from surepick.host.link import hubwire, rundir
from surepick.host.link.errors import LinkError, PortBusy
from surepick.host.link.ports import BUSY_TEXT, holders_of, open_serial
from surepick.shared_fsm import link

_RS = 0x1E
_FRAME_MAX = link.MAX_FRAME_LEN + 2         # + CR LF
_CLIENT_HIGH_WATER = 4 << 20                # a client this far behind is dropped, the board is not held up
_ROUTE_TTL_S = 120.0                        # a request the board never answered is forgotten after this
_HIL_TTL_S = 5.0                            # HIL_SENSORS get no REPLY: their ids are kept this long for HIL_ACTs
_PTY_RECHECK_S = 0.1                        # how often to look whether someone opened the raw pty
_REOPEN_S = 0.5                             # board lost: try to open its port again this often
_BUSY_WINDOW_S = 1.0                        # a virtual board's "busy" line arrives this soon after connecting
_QUEUE_MAX = 256                            # requests one client may have waiting in the hub
_BOARD_IN_FLIGHT = 4                        # requests forwarded and not answered yet, at most
_IN_FLIGHT_S = 2.0                          # an unanswered request stops holding a slot after this
_NO_REPLY_S = 0.01                          # a SETPOINT / HIL_SENSORS (no REPLY when taken) holds one this long
_MAX_CLIENTS = 64                           # clients at once (all of this user's: the socket is private)
_HELLO_S = 2.0                              # a client that connected keeps a lingering hub up this long for its hello
_NO_REPLY_TYPES = (link.T_SETPOINT, link.T_HIL_SENSORS)


class HubRunning(LinkError):
    """Another hub already serves this port."""


def swap_first_field(line, value):
    # A CRC-valid frame line with its first field (a request id, a REPLY's req_id, a HIL_ACT's
    # sensor_id) replaced by `value` and its CRC recomputed; None if the line is not one.
    import binascii
    end = len(line)
    while end and line[end - 1] in (0x0A, 0x0D):
        end -= 1
    err, body = link._checked_body(line, end)
    if err or len(body) < 6 or body[4] != 0x2C:
        return None
    comma = body.find(b",", 5)
    body = body[:5] + b"%d" % value + (body[comma:] if comma >= 0 else b"")
    return b"\x1e" + body + b"*%08X\n" % (binascii.crc32(body) & 0xFFFFFFFF)


class BoardLines:
    # Splits the board's byte stream into REPL text (passed on as it comes) and frame lines
    # (held until their LF, at most one frame long). -> [(is_frame, bytes)]
    def __init__(self):
        self._frame = None

    def feed(self, data):
        out = []
        i, n = 0, len(data)
        while i < n:
            if self._frame is None:
                j = data.find(b"\x1e", i)
                if j < 0:
                    out.append((False, data[i:]))
                    break
                if j > i:
                    out.append((False, data[i:j]))
                self._frame = bytearray(b"\x1e")
                i = j + 1
                continue
            lf = data.find(b"\n", i)
            rs = data.find(b"\x1e", i, n if lf < 0 else lf)
            stop = rs if rs >= 0 else (lf + 1 if lf >= 0 else n)
            self._frame += data[i:stop]
            i = stop
            if rs >= 0 or lf >= 0 or len(self._frame) > _FRAME_MAX:
                # a whole line, or one cut short by the next RS, or too long: pass it on as it
                # is (the clients' parsers count what is damaged)
                out.append((rs < 0 and lf >= 0 and len(self._frame) <= _FRAME_MAX, bytes(self._frame)))
                self._frame = None
        return out


class _Client:
    def __init__(self, sock):
        self.sock = sock
        self.reader = hubwire.Reader()
        self.out = bytearray()
        self.lines = bytearray()     # request bytes until a whole line
        self.queue = collections.deque()   # (client rid, ftype, fields) waiting for the board
        self.hello = None
        self.since = time.time()
        self.requests = 0
        self.refused = 0

    @property
    def name(self):
        h = self.hello or {}
        return "%s (pid %s)" % (h.get("client") or "?", h.get("pid") or "?")

    @property
    def is_link(self):
        return self.hello is not None and self.hello.get("role", "link") == "link"

    @property
    def keeps_alive(self):
        # link clients and leases (a raw session about to start) keep a lingering hub up
        return self.hello is not None and self.hello.get("role", "link") in ("link", "lease")


class RawConsole:
    # The pty lent to raw clients. Nobody may hold its slave open but the client: a closed slave
    # makes the master report POLLHUP, which is how the hub sees a client come and go.
    def __init__(self):
        master, slave = pty.openpty()
        tty.setraw(slave, termios.TCSANOW)
        self.path = os.ttyname(slave)
        os.chmod(self.path, 0o600)
        os.close(slave)
        os.set_blocking(master, False)
        self.fd = master
        self.active = False
        self.out = bytearray()
        self._next_check = 0.0

    def someone_opened(self, now):
        if self.active or now < self._next_check:
            return False
        self._next_check = now + _PTY_RECHECK_S
        p = select.poll()
        p.register(self.fd, select.POLLIN)
        if any(ev & select.POLLHUP for _, ev in p.poll(0)):
            return False
        attrs = termios.tcgetattr(self.fd)
        if attrs[3] & (termios.ICANON | termios.ECHO):
            tty.setraw(self.fd, termios.TCSANOW)   # a reopened slave starts cooked
        self.active = True
        return True

    def read(self):
        # -> bytes from the client, or None when it closed the pty
        try:
            data = os.read(self.fd, 65536)
        except BlockingIOError:
            return b""
        except OSError as e:
            if e.errno == errno.EIO:
                return None
            raise
        return data if data else None

    def flush(self):
        while self.out:
            try:
                n = os.write(self.fd, self.out[:65536])
            except BlockingIOError:
                return
            except OSError:
                self.out.clear()
                return
            del self.out[:n]

    def end(self):
        self.active = False
        self.out.clear()
        self._next_check = time.monotonic() + _PTY_RECHECK_S

    def close(self):
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class Hub:
    """Owns `port` and serves link clients on a Unix socket. start(), then run(stop_event)."""

    def __init__(self, port, linger=None, log=None, baudrate=115200):
        self.port = port
        self.linger = linger
        self.baudrate = baudrate
        self._log = log or (lambda msg: None)
        self.sock_path, self.info_path, self.lock_path = rundir.hub_paths(port)
        rundir.check_socket_path(self.sock_path)
        self.ser = None
        self.board_error = None
        self.listener = None
        self.raw = None
        self.clients = []
        self.routes = {}            # hub rid -> (client, client rid, frame type, monotonic s)
        self.in_flight = {}         # hub rid -> monotonic s its slot frees itself
        self._turn = 0              # the client whose request goes next (round-robin)
        self._reserve_fd = -1       # kept open to refuse a client when descriptors run out
        self._next_rid = 1
        self._logs = []             # LOG frames waiting for the REPLY they belong to
        self._hil_owner = None
        self._lines = BoardLines()
        self._lock_fd = -1
        self._idle_since = time.monotonic()
        self._next_expiry = 0.0
        self._next_open = 0.0
        self._opened_at = 0.0
        self._text_tail = b""
        self.lent_to = None
        self.started = time.time()
        self.stats = {"bytes_in": 0, "bytes_out": 0, "requests": 0, "refused": 0, "dropped_clients": 0,
                      "lendings": 0}

    # ---- start and stop ----

    def start(self, open_timeout=3.0):
        self._lock_fd = os.open(str(self.lock_path), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._lock_fd)
            self._lock_fd = -1
            raise HubRunning("a hub already serves %s (see `surepick link status`)" % self.port) from None
        try:
            self._open_board(open_timeout)
            self.raw = RawConsole()
            try:
                os.unlink(str(self.sock_path))
            except FileNotFoundError:
                pass
            self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            old = os.umask(0o177)
            try:
                self.listener.bind(str(self.sock_path))
            finally:
                os.umask(old)
            self.listener.listen(16)
            self.listener.setblocking(False)
            self._reserve_fd = os.open(os.devnull, os.O_RDONLY)
            self._write_info()
        except BaseException:
            self.close()
            raise
        return self

    def _write_info(self):
        tmp = self.info_path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"port": self.port, "pid": os.getpid(), "socket": str(self.sock_path),
                                   "raw": self.raw.path, "started": self.started,
                                   "linger": self.linger}) + "\n")
        os.replace(tmp, self.info_path)

    def close(self):
        for c in list(self.clients):
            self._drop(c, flush=True)
        if self.listener is not None:
            self.listener.close()
            self.listener = None
        for p in (self.sock_path, self.info_path):
            try:
                if p == self.info_path and json.loads(p.read_text()).get("pid") != os.getpid():
                    continue
                os.unlink(str(p))
            except (OSError, ValueError):
                pass
        self._close_board()
        if self.raw is not None:
            self.raw.close()
            self.raw = None
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1
        if self._reserve_fd >= 0:
            os.close(self._reserve_fd)
            self._reserve_fd = -1

    # ---- the board's port ----

    def _open_board(self, timeout):
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.ser = open_serial(self.port, self.baudrate, 0)
                self._opened_at = time.monotonic()
                self._text_tail = b""
                self.board_error = None
                # A virtual board with another client says so at once, then hangs up.
                early = self._read_board(0.15 if "://" in self.port else 0)
                if BUSY_TEXT in early:
                    self._close_board()
                    raise PortBusy("%s is in use by another client; close it first" % self.port)
                self._from_board(early)
                return
            except PortBusy:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.25)

    def _read_board(self, wait=0.0):
        import serial
        self.ser.timeout = wait
        try:
            data = self.ser.read(65536)
        except (serial.SerialException, OSError, TypeError, AttributeError) as e:
            raise _BoardGone(str(e)) from None
        self.stats["bytes_in"] += len(data)
        return data

    def _close_board(self):
        if self.ser is not None:
            try:
                self.ser.close()
            except Exception:  # a port that already vanished
                pass
            self.ser = None

    def _board_lost(self, why):
        self._log("the board on %s went away: %s" % (self.port, why))
        self._close_board()
        self.board_error = "the board on %s went away: %s" % (self.port, why)
        self.routes.clear()
        self.in_flight.clear()
        self._logs = []
        for c in list(self.clients):
            if c.is_link:
                self._notice(c, "board_lost", self.board_error)
                self._drop(c, flush=True)
        if self.raw is not None and self.raw.active:
            self._end_lending()
        self._next_open = time.monotonic() + _REOPEN_S

    def _try_reopen(self, now):
        if self.ser is not None or now < self._next_open:
            return
        self._next_open = now + _REOPEN_S
        try:
            self._open_board(0)
            self._log("the board on %s is back" % self.port)
        except LinkError as e:
            self.board_error = str(e)
        except _BoardGone as e:
            self.board_error = "the board on %s went away: %s" % (self.port, e)

    def _to_board(self, data):
        import serial
        try:
            self.ser.write(data)
            self.stats["bytes_out"] += len(data)
        except (serial.SerialException, OSError) as e:
            raise _BoardGone(str(e)) from None

    # ---- board -> clients ----

    def _from_board(self, data):
        if not data:
            return
        if self.raw is not None and self.raw.active:
            self.raw.out += data
        if time.monotonic() - self._opened_at < _BUSY_WINDOW_S:
            tail = self._text_tail + data
            if BUSY_TEXT in tail:
                raise _BoardGone("it is in use by another client")
            self._text_tail = tail[-len(BUSY_TEXT):]
        for is_frame, chunk in self._lines.feed(data):
            if is_frame:
                self._route_frame(chunk)
            elif not (self.raw is not None and self.raw.active):
                self._broadcast(chunk)       # REPL text; a raw session's traffic stays its own

    def _route_frame(self, line):
        err, ftype, fields = link.decode(line, requests=False)
        if err:
            self._broadcast(line)            # damaged: the clients count it
            return
        if ftype == link.T_LOG:
            self._logs.append(line)
            return
        if ftype == link.T_REPLY:
            logs, self._logs = self._logs, []
            route = self.routes.pop(fields[0], None) if fields[0] else None
            self.in_flight.pop(fields[0], None)
            if route is None:
                self._broadcast(b"".join(logs) + line)   # req_id 0, or a request already forgotten
                return
            client, rid = route[0], route[1]
            self._send_data(client, b"".join(logs) + swap_first_field(line, rid))
            return
        if ftype == link.T_HIL_ACT:
            route = self.routes.get(fields[0]) if fields[0] else None
            if route is not None:
                self._send_data(route[0], swap_first_field(line, route[1]))
            elif self._hil_owner in self.clients:
                self._send_data(self._hil_owner, line)
            else:
                self._broadcast(line)
            return
        self._broadcast(line)

    def _broadcast(self, data):
        for c in self.clients:
            if c.is_link:
                self._send_data(c, data)

    def _send_data(self, c, data):
        self._send(c, hubwire.pack(hubwire.DATA, data))

    def _send(self, c, msg):
        c.out += msg
        if len(c.out) > _CLIENT_HIGH_WATER:
            self._log("dropping %s: it stopped reading" % c.name)
            self.stats["dropped_clients"] += 1
            self._drop(c)

    def _notice(self, c, event, text, **more):
        self._send(c, hubwire.pack(hubwire.NOTICE, dict(more, event=event, text=text)))

    # ---- clients -> board ----

    def _new_rid(self):
        for _ in range(65535):
            rid = self._next_rid
            self._next_rid = rid + 1 if rid < 65535 else 1
            if rid not in self.routes:
                return rid
        raise LinkError("65535 requests waiting for the board")  # cannot happen: routes expire

    def _from_client(self, c, data):
        c.lines += data
        while True:
            lf = c.lines.find(b"\n")
            if lf < 0:
                if len(c.lines) > _FRAME_MAX:
                    del c.lines[:]           # not a request: nothing of it goes to the board
                return
            line = bytes(c.lines[:lf + 1])
            del c.lines[:lf + 1]
            rs = line.find(b"\x1e")
            if rs < 0:
                continue
            self._request(c, line[rs:])

    def _request(self, c, line):
        # A whole line from a client: queued when it is a well-formed request, else refused.
        err, ftype, fields = link.decode(line, requests=True)
        if err != link.OK:
            rid = link.request_id_of(line)
            if rid or err != link.E_NOT_FRAME:
                self._refuse(c, rid, "not a well-formed request (%s): nothing of it went to the board"
                             % link.ERROR_NAMES.get(err, err))
            return
        if self.lent_to is not None:
            self._refuse(c, fields[0], "the board's console is lent to %s; try again when it is "
                         "returned" % self.lent_to)
            return
        if len(c.queue) >= _QUEUE_MAX:
            self._refuse(c, fields[0], "more than %d requests waiting from this client: wait for "
                         "the answers before sending more" % _QUEUE_MAX)
            return
        c.queue.append((fields[0], ftype, fields[1:]))

    def _refuse(self, c, rid, text):
        c.refused += 1
        self.stats["refused"] += 1
        self._notice(c, "refused", text, rid=rid)

    def _forward(self, now):
        # Queued requests to the board, one per client in turn, while slots are free.
        for r in [r for r, t in self.in_flight.items() if now >= t]:
            del self.in_flight[r]
        while len(self.in_flight) < _BOARD_IN_FLIGHT and self.ser is not None:
            waiting = [c for c in self.clients if c.queue]
            if not waiting:
                return
            self._turn %= len(self.clients)
            order = self.clients[self._turn:] + self.clients[:self._turn]
            c = next(x for x in order if x.queue)
            self._turn = (self.clients.index(c) + 1) % len(self.clients)
            rid, ftype, args = c.queue.popleft()
            hub_rid = self._new_rid()
            self.routes[hub_rid] = (c, rid, ftype, now)
            self.in_flight[hub_rid] = now + (_NO_REPLY_S if ftype in _NO_REPLY_TYPES else _IN_FLIGHT_S)
            if ftype == link.T_HIL_MODE:
                self._hil_owner = c
            c.requests += 1
            self.stats["requests"] += 1
            self._to_board(link.encode(ftype, (hub_rid,) + tuple(args)))

    # ---- the raw console ----

    def _start_lending(self):
        holders = holders_of(self.raw.path)
        self.lent_to = ", ".join(holders) if holders else "a program on %s" % self.raw.path
        self.stats["lendings"] += 1
        self._log("console lent to %s" % self.lent_to)
        self.in_flight.clear()
        for c in self.clients:
            while c.queue:
                self._refuse(c, c.queue.popleft()[0], "the board's console is lent to %s; try again "
                             "when it is returned" % self.lent_to)
            if c.is_link:
                self._notice(c, "lent", "the board's console is lent to %s (raw console %s); link "
                             "requests are refused until it is returned" % (self.lent_to, self.raw.path),
                             to=self.lent_to)

    def _end_lending(self):
        self.raw.end()
        was, self.lent_to = self.lent_to, None
        self._log("console returned by %s" % was)
        for c in self.clients:
            if c.is_link:
                self._notice(c, "returned", "the board's console is back from %s" % was, by=was)

    # ---- client sockets ----

    def _accept(self):
        try:
            sock, _ = self.listener.accept()
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            if e.errno not in (errno.EMFILE, errno.ENFILE):
                raise
            self._refuse_newcomer()
            return
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        _, uid, _ = struct.unpack("3i", creds)
        if uid != os.getuid():
            sock.close()                     # the directory is private; this is belt and braces
            return
        if len(self.clients) >= _MAX_CLIENTS:
            self._log("refusing a client: %d clients already" % len(self.clients))
            self._turn_away(sock, "the hub serves %d clients already: close one first" % _MAX_CLIENTS)
            return
        sock.setblocking(False)
        self.clients.append(_Client(sock))

    def _refuse_newcomer(self):
        # Out of file descriptors: free the reserve, take the newcomer and turn it away, keep
        # the reserve again (else its connection would wake every poll and never be served).
        self._log("out of file descriptors: refusing a client")
        if self._reserve_fd >= 0:
            os.close(self._reserve_fd)
            self._reserve_fd = -1
        try:
            sock, _ = self.listener.accept()
        except OSError:
            sock = None
        if sock is not None:
            self._turn_away(sock, "the hub is out of file descriptors: close a client first")
        try:
            self._reserve_fd = os.open(os.devnull, os.O_RDONLY)
        except OSError:
            pass

    def _turn_away(self, sock, why):
        try:
            sock.settimeout(0.2)
            sock.sendall(hubwire.pack(hubwire.WELCOME, {"ok": False, "error": why}))
        except OSError:
            pass
        sock.close()
        self.stats["refused"] += 1

    def _client_readable(self, c):
        try:
            data = c.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._drop(c)
            return
        try:
            msgs = c.reader.feed(data)
        except hubwire.WireError:
            self._drop(c)
            return
        for kind, payload in msgs:
            if c not in self.clients:
                return
            if kind == hubwire.HELLO and c.hello is None:
                self._welcome(c, payload)
            elif kind == hubwire.DATA and c.is_link:
                self._from_client(c, payload)
            elif kind == hubwire.QUERY and c.hello is not None:
                self._query(c, payload)
            else:
                self._drop(c)
                return

    def _welcome(self, c, payload):
        try:
            c.hello = hubwire.load(payload)
        except hubwire.WireError:
            self._drop(c)
            return
        if c.keeps_alive and self.ser is None:
            self._send(c, hubwire.pack(hubwire.WELCOME, {"ok": False, "error": self.board_error
                                                          or "no board on %s" % self.port}))
            self._drop(c, flush=True)
            return
        self._send(c, hubwire.pack(hubwire.WELCOME, dict(self.info(), ok=True)))

    def info(self):
        return {"port": self.port, "pid": os.getpid(), "raw": self.raw.path if self.raw else None,
                "lent_to": self.lent_to, "board_up": self.ser is not None, "board_error": self.board_error,
                "started": self.started, "linger": self.linger,
                "clients": [{"name": c.name, "role": (c.hello or {}).get("role"), "since": c.since,
                             "requests": c.requests} for c in self.clients if c.hello is not None],
                "stats": dict(self.stats)}

    def _query(self, c, payload):
        try:
            q = hubwire.load(payload)
        except hubwire.WireError:
            self._drop(c)
            return
        op = q.get("op")
        if op == "status":
            self._send(c, hubwire.pack(hubwire.ANSWER, dict(self.info(), ok=True)))
        elif op == "stop":
            self._send(c, hubwire.pack(hubwire.ANSWER, {"ok": True}))
            self._stop_requested = True
        else:
            self._send(c, hubwire.pack(hubwire.ANSWER, {"ok": False, "error": "unknown op %r" % op}))

    def _flush(self, c):
        try:
            n = c.sock.send(c.out)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._drop(c)
            return
        del c.out[:n]

    def _drop(self, c, flush=False):
        if c not in self.clients:
            return
        self.clients.remove(c)
        if flush and c.out:
            try:
                c.sock.setblocking(True)
                c.sock.settimeout(0.5)
                c.sock.sendall(c.out)
            except OSError:
                pass
        c.sock.close()
        for rid in [r for r, route in self.routes.items() if route[0] is c]:
            del self.routes[rid]
        c.queue.clear()
        if self._hil_owner is c:
            self._hil_owner = None

    # ---- the loop ----

    def run(self, stop):
        self._stop_requested = False
        while not stop.is_set() and not self._stop_requested:
            now = time.monotonic()
            if self._linger_over(now):
                self._log("no client for %.1f s: stopping" % self.linger)
                break
            self._try_reopen(now)
            if self.raw.someone_opened(now):
                self._start_lending()
            try:
                self._step()
            except _BoardGone as e:
                self._board_lost(str(e))
            self._expire_routes(now)

    def _linger_over(self, now):
        # A client still on its way in (queued on the listener, or connected and not yet said
        # hello) keeps the hub up too: stopping under it would break its connection mid-hello.
        wall = time.time()
        busy = (any(c.keeps_alive or (c.hello is None and wall - c.since < _HELLO_S) for c in self.clients)
                or self.raw.active or self._someone_knocking())
        if busy or self.linger is None:
            self._idle_since = now
            return False
        return now - self._idle_since >= self.linger

    def _someone_knocking(self):
        if self.listener is None:
            return False
        knock = select.poll()
        knock.register(self.listener.fileno(), select.POLLIN)
        return bool(knock.poll(0))

    def _expire_routes(self, now):
        if now < self._next_expiry:
            return
        self._next_expiry = now + 1.0
        old = [r for r, route in self.routes.items()
               if now - route[3] > (_HIL_TTL_S if route[2] == link.T_HIL_SENSORS else _ROUTE_TTL_S)]
        for r in old:
            del self.routes[r]

    def _step(self):
        poller = select.poll()
        fds = {}
        poller.register(self.listener.fileno(), select.POLLIN)
        fds[self.listener.fileno()] = "listen"
        if self.ser is not None:
            poller.register(self.ser.fileno(), select.POLLIN)
            fds[self.ser.fileno()] = "board"
        if self.raw.active:
            poller.register(self.raw.fd, select.POLLIN | (select.POLLOUT if self.raw.out else 0))
            fds[self.raw.fd] = "raw"
        for c in self.clients:
            poller.register(c.sock.fileno(), select.POLLIN | (select.POLLOUT if c.out else 0))
            fds[c.sock.fileno()] = c
        timeout = _PTY_RECHECK_S if not self.raw.active else 0.5
        if self.in_flight and any(c.queue for c in self.clients):
            timeout = _NO_REPLY_S          # a slot frees itself by time: look again then
        for fd, ev in poller.poll(timeout * 1000):
            who = fds.get(fd)
            if who == "listen":
                self._accept()
            elif who == "board":
                data = self._read_board()
                if not data and ev & (select.POLLHUP | select.POLLERR):
                    raise _BoardGone("the port closed")
                self._from_board(data)
            elif who == "raw":
                if ev & select.POLLIN or ev & select.POLLHUP:
                    data = self.raw.read()
                    if data is None:
                        self._end_lending()
                    elif data and self.ser is not None:
                        self._to_board(data)
                if self.raw.active and ev & select.POLLOUT:
                    self.raw.flush()
            elif isinstance(who, _Client) and who in self.clients:
                if ev & (select.POLLIN | select.POLLHUP | select.POLLERR):
                    self._client_readable(who)
        if self.raw.active and self.raw.out:
            self.raw.flush()
        if self.lent_to is None:
            self._forward(time.monotonic())
        for c in list(self.clients):
            if c.out:
                self._flush(c)


class _BoardGone(Exception):
    pass


def serve(port, linger=None, log=None, ready=None):
    # Run a hub for `port` until SIGINT/SIGTERM (or `linger` s without clients). ready(info) is
    # called once it serves. Raises LinkError (NoBoard, PortBusy, HubRunning) when it cannot.
    import signal
    import threading
    stop = threading.Event()
    hub = Hub(port, linger=linger, log=log)
    hub.start()
    old = {s: signal.signal(s, lambda *a: stop.set()) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        if ready is not None:
            ready(hub.info())
        hub.run(stop)
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        hub.close()


def main(argv=None):
    # python -m surepick.host.link.hub --port P [--linger S] [--ready-fd N]: what hub_client
    # starts in the background. The first line on --ready-fd is "ready" or "error: <why>".
    ap = argparse.ArgumentParser(prog="python -m surepick.host.link.hub")
    ap.add_argument("--port", required=True)
    ap.add_argument("--linger", type=float)
    ap.add_argument("--ready-fd", type=int)
    args = ap.parse_args(argv)

    def say(line):
        if args.ready_fd is not None:
            try:
                os.write(args.ready_fd, (line + "\n").encode())
                os.close(args.ready_fd)
            except OSError:
                pass
            args.ready_fd = None

    def log(msg):
        print("%s surepick-hub[%d]: %s" % (time.strftime("%H:%M:%S"), os.getpid(), msg),
              file=sys.stderr, flush=True)

    try:
        serve(args.port, args.linger, log, ready=lambda info: say("ready"))
    except (LinkError, OSError) as e:
        log(str(e))
        say("error: %s" % e)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
