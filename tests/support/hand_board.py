# A board played by hand in a test: a loopback TCP server that accepts one client (a hub or a
# LinkClient), collects the request frames it is sent, and answers what and when the test says.
import select
import socket
import time

from surepick.shared_fsm import link


class HandBoard:
    # A loopback TCP "board": accepts the hub, collects the request lines it forwards.
    def __init__(self):
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(1)
        self.port = "socket://127.0.0.1:%d" % self.listener.getsockname()[1]
        self.conn = None
        self.got = bytearray()

    def accept(self, timeout=5):
        self.listener.settimeout(timeout)
        self.conn, _ = self.listener.accept()
        self.conn.settimeout(timeout)

    def requests(self, n, timeout=5):
        # -> the next n request frames the hub forwarded, decoded: [(ftype, fields)]
        out = []
        end = time.monotonic() + timeout
        while len(out) < n and time.monotonic() < end:
            while b"\n" not in self.got:
                r, _, _ = select.select([self.conn], [], [], max(0, end - time.monotonic()))
                if not r:
                    raise AssertionError("the board got %d of %d requests: %r" % (len(out), n, bytes(self.got)))
                data = self.conn.recv(4096)
                if not data:
                    raise ConnectionError("the client hung up after %d of %d requests" % (len(out), n))
                self.got += data
            line, _, rest = bytes(self.got).partition(b"\n")
            self.got = bytearray(rest)
            err, ftype, fields = link.decode(line + b"\n", requests=True)
            assert err == link.OK, (err, line)
            out.append((ftype, fields))
        return out

    def send(self, data):
        self.conn.sendall(data)

    def close(self):
        if self.conn is not None:
            self.conn.close()
        self.listener.close()
