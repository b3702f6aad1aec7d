# Monitor-test helpers shared by tests/host/monitor: a free loopback port, the link stand-in
# (tests/support/link_standin.py) or the real firmware on a virtual board (BoardProcess) as a
# child process, a polling wait, and a MonitorLoop on its own thread as `surepick monitor` runs it.
import os
import signal
import socket
import subprocess
import sys
import threading
import time

from pathlib import Path

from surepick.host.monitor.loop import MonitorLoop
from surepick.host.monitor.status import BoardStatus
from surepick.host.monitor.store import Store

from surepick.host.cli.board_ready import wait_served

from tests.support.cli import SUREPICK_BIN
from tests.support.link_standin import READY

BOARD_SEED = 3      # BoardProcess's plant seed (nominal scenario)
# A job file (docs/job-file.md) for the nominal scenario's pad and bin, one attempt a part: the
# production runs the monitor tests send (cycle 1 places the one part, later cycles find the pad empty)
NOMINAL_RUN_JOB = {"format": "surepick-job", "version": 1,
                   "pick": {"x_mm": 160.0, "y_mm": -60.0, "z_mm": 15.5, "pitch_deg": -90.0},
                   "place": {"x_mm": 150.0, "y_mm": 80.0, "z_mm": 20.5, "pitch_deg": -90.0},
                   "part_width_mm": 25.0, "max_attempts": 1}

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


class BoardProcess:
    # `surepick board --scenario nominal` as a child process, killable like a power cut; the arm
    # at its true pace (--realtime), so a job is still running when the test kills it mid-cycle
    # however fast this machine runs the plant.
    def __init__(self, flash, port, log_path):
        self.log = open(log_path, "ab")
        self.p = subprocess.Popen([SUREPICK_BIN, "board", "--scenario", "nominal", "--seed", str(BOARD_SEED), "--realtime",
                                   "--listen", "127.0.0.1:%d" % port, "--flash", str(flash)],
                                  stdout=subprocess.PIPE, stderr=self.log, text=True)
        # (its notes and errors go to the log)
        self.address = wait_served(self.p, 120, log=lambda: Path(log_path).read_text()[-2000:])

    def _children(self):
        out = []
        for task in Path("/proc/%d/task" % self.p.pid).glob("*/children"):
            try:
                out += [int(x) for x in task.read_text().split()]
            except OSError:
                pass
        return out

    def kill(self):
        # The supervisor and the interpreter it runs (its own session: killed by pid too).
        kids = self._children()
        self.p.kill()
        for pid in kids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.p.wait(10)
        self.log.close()

    def stop(self):
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()
        if not self.log.closed:
            self.log.close()
