# The client side of the virtual board's serial line: a pty that `mpremote connect /dev/pts/N`
# opens, or a loopback TCP port for `mpremote connect socket://127.0.0.1:PORT`. One client at a
# time. Like a USB-UART adapter left plugged into the host: a client coming or going never
# resets the board, and output sent while nobody listens is lost.
# Both classes only move bytes; the board's poll loop drives them through the same interface:
#   poll_items(want_input) -> [(fd, events)], handle(fd, events) -> bytes from the client,
#   write(data), timeout() -> seconds or None, close(), address, connected.
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
        if self._client is not None:
            # One client at a time, as with a real serial port.
            try:
                sock.sendall(b"surepick-board: busy, another client is connected\r\n")
            except OSError:
                pass
            sock.close()
            return
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._client = sock
        self._quickack()

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
