# Monitor-test helpers shared by tests/host/monitor: a free loopback port, the link stand-in
# (tests/support/link_standin.py) as a child process, a polling wait, and a MonitorLoop on its own
# thread as `surepick monitor` runs it.
import socket
import subprocess
import sys
import threading
import time

from pathlib import Path

from surepick.host.monitor.loop import MonitorLoop
from surepick.host.monitor.status import BoardStatus
from surepick.host.monitor.store import Store

from tests.support.link_standin import READY

STAND_IN = Path(__file__).with_name("link_standin.py")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def start_board(flash, port, *extra):
    p = subprocess.Popen([sys.executable, str(STAND_IN), "--listen",
                          "127.0.0.1:%d" % port, "--flash", str(flash), *extra],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    line = p.stdout.readline()
    assert line.startswith(READY), line
    return p


def wait_until(pred, timeout, what):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


class Monitor:
    # A MonitorLoop on its own thread, as `surepick monitor` runs it.
    def __init__(self, port, db, **kw):
        self.store = Store(db)
        self.status = BoardStatus(port)
        self.said = []   # (monotonic s, kind, data) of everything but telemetry: failure evidence
        self.loop = MonitorLoop(port, self.store, self.status, log_poll_s=0.3, out=self._out, **kw)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.loop.run, args=(self.stop,), daemon=True)
        self.thread.start()

    def _out(self, kind, data):
        if kind != "telemetry":
            self.said.append((round(time.monotonic(), 3), kind, data))

    def story(self, last=60):
        return "\n".join("%.3f %s %r" % x for x in self.said[-last:])

    def close(self):
        self.stop.set()
        self.thread.join(10)
        assert not self.thread.is_alive()
        self.store.close()
