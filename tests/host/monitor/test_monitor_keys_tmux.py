# The live view's keys in a real terminal: `surepick monitor` under tmux against the real
# firmware on the virtual board. s/y starts the job, a/y aborts it, c/y clears the fault, k/i/y
# calibrates the current zero, each asking first (n cancels); with the telemetry turned off from
# another terminal the view says STALE, and stops saying it when telemetry comes back.
import re
import shlex
import shutil
import subprocess
import time

import pytest

from tests.support.bench import Bench
from tests.support.cli import SUREPICK_BIN
from tests.support.needs import NEEDS_MICROPYTHON
from tests.support.period import PERIOD_MS, PERIOD_US

pytestmark = [NEEDS_MICROPYTHON,
              pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")]


class Screen:
    def __init__(self, tmp_path, command, env):
        self.name = "surepick-keys"
        self.tmux = ["tmux", "-S", str(tmp_path / "tmux.sock")]   # a private tmux server
        subprocess.run(self.tmux + ["new-session", "-d", "-s", self.name, "-x", "140", "-y", "45", command],
                       check=True, timeout=10, env=env)
        # a fresh detached server may ignore -x/-y (window-size follows absent clients)
        for _ in range(20):
            subprocess.run(self.tmux + ["resize-window", "-t", self.name, "-x", "140", "-y", "45"], timeout=10)
            size = subprocess.run(self.tmux + ["display", "-p", "-t", self.name, "#{window_width}x#{window_height}"],
                                  capture_output=True, text=True, timeout=10).stdout.strip()
            if size == "140x45":
                break
            time.sleep(0.2)
        assert size == "140x45", size
        self.last = ""

    def text(self):
        self.last = subprocess.run(self.tmux + ["capture-pane", "-p", "-t", self.name], capture_output=True,
                                   text=True, timeout=10).stdout
        return self.last

    def wait(self, pred, timeout, what):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if pred(self.text()):
                return self.last
            time.sleep(0.3)
        raise AssertionError("the screen never showed %s:\n%s" % (what, self.last))

    def wait_for(self, needle, timeout=20):
        return self.wait(lambda t: needle in t, timeout, repr(needle))

    def key(self, k):
        subprocess.run(self.tmux + ["send-keys", "-t", self.name, k], check=True, timeout=10)

    def close(self):
        subprocess.run(self.tmux + ["kill-server"], timeout=10)


def state_line(text):
    # the status panel's "state" row (inside the panel's border)
    return next((l for l in text.splitlines() if l.strip("│ ").startswith("state ")), "")


def test_live_view_keys_act_on_the_board_and_stale_is_shown(tmp_path):
    # at the arm's true pace (a cycle of about 10 s), as a person at the bench sees it: the abort
    # key lands in the cycle however fast this machine runs the plant
    b = Bench(tmp_path, scenario="nominal", seed=2, realtime=True)
    screen = None
    try:
        b.wait_firmware()
        p = b.port
        cmd = "cd %s && %s monitor --port %s --db %s --seconds 170" % (
            shlex.quote(str(tmp_path)), SUREPICK_BIN, p, tmp_path / "m.db")
        screen = Screen(tmp_path, cmd, b.env)
        screen.wait_for("period %d us" % PERIOD_US, 40)
        assert "STALE" not in screen.last and "NO LINK" not in screen.last

        # n cancels: nothing is sent
        screen.key("s")
        screen.wait_for("Start a job (the reference job): pick (160, -60, 15.5, pitch -90)")
        screen.key("n")
        screen.wait_for("cancelled")
        assert "IDLE" in state_line(screen.text())

        screen.key("s")
        screen.wait_for("Start a job")
        screen.key("y")
        screen.wait_for("start: done")
        screen.wait(lambda t: "IDLE" not in state_line(t), 20, "the job running")

        screen.key("a")
        screen.wait_for("Abort the running job")
        screen.key("y")
        screen.wait_for("abort: done")
        screen.wait(lambda t: "fault ABORTED" in state_line(t), 20, "ABORTED latched")

        screen.key("s")                                  # refused while the fault is latched
        screen.wait_for("Start a job")
        screen.key("y")
        # in words, as the CLI says it: the fault, the state it latched in (the one the faults
        # table shows for it), the attempt, what it means and how to clear it
        refused = re.compile(r"start: refused: the board has a latched fault: ABORTED \(in ([A-Z_]+), attempt 1\): "
                             r"the job was aborted")
        text = screen.wait(refused.search, 20, "the refusal in words")
        row = re.search(r"│ \d+\s+│ ABORTED\s+│ ([A-Z_]+)\s+│ 1\s", text)
        assert row and row.group(1) == refused.search(text).group(1), text
        assert "clear it with `surepick job clear --port %s`" % p in text.replace("\n", ""), text

        screen.key("c")
        screen.wait_for("Clear the latched fault?")
        screen.key("y")
        screen.wait_for("clear: done")
        screen.wait(lambda t: "fault none" in state_line(t), 20, "the fault cleared")

        screen.key("k")
        screen.wait_for("Calibrate what?")
        screen.key("i")
        screen.wait_for("Calibrate current: the gripper must be still")
        screen.key("y")
        screen.wait_for("calibrate current: done (current_offset_counts, ")

        # Telemetry off from another terminal (through the monitor's hub): the view says STALE.
        r = b.run("config", "set", "telemetry_hz", "0", "--port", p)
        assert r.returncode == 0, r.stderr
        text = screen.wait_for("STALE", 10)
        assert "no telemetry since" in text
        assert b.run("config", "set", "telemetry_hz", "10", "--port", p).returncode == 0
        screen.wait(lambda t: "STALE" not in t, 10, "STALE gone")
    finally:
        if screen is not None:
            screen.close()
        b.close()
