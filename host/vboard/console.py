# The client side of the virtual board's serial line: a pty that `mpremote connect /dev/pts/N`
# opens, a loopback TCP port for `mpremote connect socket://127.0.0.1:PORT`, or both at once
# (Consoles). One client at a time, on whichever it came. Like a USB-UART adapter left plugged
# into the host: a client coming or going never resets the board, and output sent while nobody
# listens is lost.
# Every class only moves bytes; the board's poll loop drives them through the same interface:
#   poll_items(want_input) -> [(fd, events)], handle(fd, events) -> bytes from the client,
#   write(data), timeout() -> seconds or None, tick(), close(), address, connected, backlog.
import errno
import ipaddress
import os
import pty
import select
import socket
import termios
import tty

_READ = select.POLLIN
_WRITE = select.POLLOUT
_GONE = select.POLLHUP | select.POLLERR | select.POLLNVAL
_CHUNK = 65536
_PTY_RECHECK_S = 0.1  # how often to look for a client on the pty while none is there
_QUICKACK = getattr(socket, "TCP_QUICKACK", None)
BUSY = b"surepick-board: busy, another client is connected\r\n"


class PtyConsole:
    def __init__(self):
        master, slave = pty.openpty()
        tty.setraw(slave, termios.TCSANOW)
        self.address = os.ttyname(slave)
        # Closing our slave end makes the master report POLLHUP until a client opens it.
        os.close(slave)
        os.set_blocking(master, False)
        self._fd = master
        self._out = bytearray()
        self.connected = False

    def poll_items(self, want_input):
        if not self.connected:
            return []
        events = (_READ if want_input else 0) | (_WRITE if self._out else 0)
        return [(self._fd, events)]

    def timeout(self):
        return None if self.connected else _PTY_RECHECK_S

    def tick(self):
        # There is no event for "someone opened the slave": look while nobody is connected.
        if self.connected:
            return
        p = select.poll()
        p.register(self._fd, _READ)
        if not any(ev & select.POLLHUP for _, ev in p.poll(0)):
            self.connected = True
            attrs = termios.tcgetattr(self._fd)
            if attrs[3] & (termios.ICANON | termios.ECHO):
                # A reopened pty slave starts cooked; raw it (termios on the master act on
                # the slave) so naive clients don't echo or mangle bytes.
                tty.setraw(self._fd, termios.TCSANOW)

    def handle(self, fd, events):
        data = b""
        if events & (_READ | _GONE):
            try:
                data = os.read(self._fd, _CHUNK)
            except BlockingIOError:
                data = b""
            except OSError as e:
                if e.errno != errno.EIO:
                    raise
                self._drop()
                return b""
            if not data and events & _GONE:
                self._drop()
                return b""
        if events & _WRITE and self._out:
            try:
                n = os.write(self._fd, self._out[:_CHUNK])
                del self._out[:n]
            except BlockingIOError:
                pass
            except OSError as e:
                if e.errno != errno.EIO:
                    raise
                self._drop()
        return data

    def _drop(self):
        self.connected = False
        self._out.clear()

    def write(self, data):
        if self.connected:
            self._out += data

    @property
    def backlog(self):
        return len(self._out)

    def close(self):
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def parse_listen(text, allow_remote=False):
    # "HOST:PORT", ":PORT" or "PORT" -> (host, port); loopback only unless allow_remote.
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = "", text
    host = host.strip("[]") or "127.0.0.1"
    try:
        port = int(port)
    except ValueError:
        raise ValueError("--listen wants HOST:PORT, got %r" % text) from None
    if not 0 <= port <= 65535:
        raise ValueError("port %d is out of range" % port)
    if not allow_remote:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        if not infos or not all(ipaddress.ip_address(i[4][0]).is_loopback for i in infos):
            raise ValueError("%s is not a loopback address; the board's REPL has no password, so "
                             "serving it beyond this machine needs an explicit --allow-remote" % host)
    return host, port


class TcpConsole:
    def __init__(self, host="127.0.0.1", port=0, allow_remote=False):
        host, port = parse_listen("%s:%d" % (host, port), allow_remote)
        family, _, _, _, addr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        self._listen = socket.socket(family, socket.SOCK_STREAM)
        self._listen.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listen.bind(addr)
        self._listen.listen(1)
        self._listen.setblocking(False)
        bound = self._listen.getsockname()
        shown = "[%s]" % bound[0] if family == socket.AF_INET6 else bound[0]
        self.address = "socket://%s:%d" % (shown, bound[1])
        self._client = None
        self._out = bytearray()
        self.taken_elsewhere = lambda: False   # Consoles: a client holds another console

    @property
    def connected(self):
        return self._client is not None

    def poll_items(self, want_input):
        items = [(self._listen.fileno(), _READ)]
        if self._client is not None:
            events = (_READ if want_input else 0) | (_WRITE if self._out else 0)
            items.append((self._client.fileno(), events))
        return items

    def timeout(self):
        return None

    def tick(self):
        pass

    def handle(self, fd, events):
        if fd == self._listen.fileno():
            self._accept()
            return b""
        data = b""
        if events & (_READ | _GONE):
            try:
                data = self._client.recv(_CHUNK)
                if not data:  # orderly close
                    self._drop()
                    return b""
                self._quickack()
            except BlockingIOError:
                data = b""
            except OSError:
                self._drop()
                return b""
        if events & _WRITE and self._out:
            try:
                n = self._client.send(self._out[:_CHUNK])
                del self._out[:n]
            except BlockingIOError:
                pass
            except OSError:
                self._drop()
        return data

    def _quickack(self):
        # Acknowledge at once: pyserial's socket:// leaves Nagle on, so a client's second small
        # write (mpremote's "\x04" after a raw-paste chunk) would otherwise wait for our
        # delayed ACK, about 40 ms per command. Linux resets this flag, so set it every time.
        if _QUICKACK is not None:
            try:
                self._client.setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)
            except OSError:
                pass

    def _accept(self):
        try:
            sock, _ = self._listen.accept()
        except BlockingIOError:
            return
        if self._client is not None and self._hung_up():
            self._drop()                 # the last client left just now; its EOF was not read yet
        if self._client is not None or self.taken_elsewhere():
            # One client at a time, as with a real serial port.
            try:
                sock.sendall(BUSY)
            except OSError:
                pass
            sock.close()
            return
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._client = sock
        self._quickack()

    def _hung_up(self):
        # True when the connected client has closed and sent everything it meant to.
        try:
            return self._client.recv(1, socket.MSG_PEEK) == b""
        except BlockingIOError:
            return False
        except OSError:
            return True

    def _drop(self):
        if self._client is not None:
            self._client.close()
        self._client = None
        self._out.clear()

    def write(self, data):
        if self._client is not None:
            self._out += data

    @property
    def backlog(self):
        return len(self._out)

    def close(self):
        self._drop()
        self._listen.close()


class Consoles:
    # A pty and a TCP port for one board (mpremote's `repl` needs a device path; its socket://
    # support lacks the file descriptor repl waits on). The first client to connect owns the
    # line until it leaves: a TCP client arriving meanwhile is turned away, a pty opened
    # meanwhile is told so once and neither heard nor written to.
    def __init__(self, consoles):
        self.consoles = list(consoles)
        self._owner = None
        self._told = set()
        for c in self.consoles:
            if isinstance(c, TcpConsole):
                c.taken_elsewhere = (lambda me: lambda: self._owner not in (None, me))(c)

    @property
    def address(self):
        return self.consoles[0].address

    @property
    def addresses(self):
        return [c.address for c in self.consoles]

    @property
    def connected(self):
        return self._owner is not None

    def _claim(self):
        if self._owner is not None and not self._owner.connected:
            self._owner = None
        for c in self.consoles:
            if not c.connected:
                self._told.discard(id(c))
            elif self._owner is None:
                self._owner = c
            elif c is not self._owner and id(c) not in self._told:
                self._told.add(id(c))
                c.write(BUSY)

    def poll_items(self, want_input):
        items = []
        for c in self.consoles:
            items += c.poll_items(want_input or c is not self._owner)
        return items

    def handle(self, fd, events):
        for c in self.consoles:
            if any(fd == f for f, _ in c.poll_items(True)):
                data = c.handle(fd, events)
                self._claim()
                return data if c is self._owner else b""
        return b""

    def write(self, data):
        if self._owner is not None:
            self._owner.write(data)

    @property
    def backlog(self):
        return self._owner.backlog if self._owner is not None else 0

    def timeout(self):
        ts = [t for t in (c.timeout() for c in self.consoles) if t is not None]
        return min(ts) if ts else None

    def tick(self):
        for c in self.consoles:
            c.tick()
        self._claim()

    def close(self):
        for c in self.consoles:
            c.close()
