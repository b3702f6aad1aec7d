# The board an engine starts for itself is the run's own (issue 25, item 4): a person polling
# `surepick job status --port auto` in another terminal while `sim run --engine vboard` runs
# neither finds that board (it is not in their board registry) nor changes the run (the record
# equals the one made with nobody polling). The poll is made certain to fall inside the cycle by
# an event, not by timing: the run is held (SIGSTOP) as soon as it reports virtual time mid-cycle,
# and released only after the poller has finished polls that began while it was held.
import os
import signal
import subprocess
import threading
import time

from surepick.host.vboard.registry import running_boards
from tests.support.cli import SUREPICK_BIN, surepick
from tests.support.needs import NEEDS_MICROPYTHON

pytestmark = NEEDS_MICROPYTHON

SEED = 3
MID_CYCLE = "of virtual time, firmware in"    # the run's status line (cli/sim.py), inside a cycle
NO_BOARD = "no virtual board running"         # what `--port auto` says when it finds no board
POLLS_WHILE_HELD = 1          # one poll that surely fell inside the cycle (each costs a CLI start)


class Poller:
    """`surepick job status --port auto` in a loop, as a person's second terminal would, plus a
    look at the board registry at each poll."""

    def __init__(self):
        self.polls = []            # (started_at, returncode, stdout + stderr, registry entries)
        self.stop = threading.Event()
        self.cond = threading.Condition()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self):
        while not self.stop.is_set():
            t = time.monotonic()
            listed = running_boards()
            r = subprocess.run([SUREPICK_BIN, "job", "status", "--port", "auto"], capture_output=True,
                               text=True, timeout=120)
            with self.cond:
                self.polls.append((t, r.returncode, r.stdout + r.stderr, listed))
                self.cond.notify_all()

    def wait_polls_started_after(self, t0, n, timeout):
        end = time.monotonic() + timeout
        with self.cond:
            while sum(1 for p in self.polls if p[0] >= t0) < n:
                left = end - time.monotonic()
                assert left > 0, "the poller made no %d polls in %d s" % (n, timeout)
                self.cond.wait(left)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(150)


def _read_until(stream, needle, timeout):
    # The status line is redrawn in place (\r), so read raw chunks, not lines.
    seen = b""
    end = time.monotonic() + timeout
    while needle.encode() not in seen:
        assert time.monotonic() < end, "the run never reported %r:\n%s" % (needle, seen[-2000:])
        chunk = os.read(stream.fileno(), 4096)
        assert chunk, "the run ended before reporting %r:\n%s" % (needle, seen[-2000:])
        seen += chunk
    return seen


def _drain(stream, into):
    while True:
        chunk = os.read(stream.fileno(), 4096)
        if not chunk:
            return
        into.append(chunk)


def test_a_poller_in_another_terminal_neither_finds_nor_changes_the_engines_board(tmp_path):
    quiet, polled = tmp_path / "quiet", tmp_path / "polled"
    r = surepick("sim", "run", "--engine", "vboard", "--scenario", "nominal", "--seed", SEED,
                 "--out", quiet, "--no-plots", timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr

    with Poller() as poller:
        run = subprocess.Popen([SUREPICK_BIN, "sim", "run", "--engine", "vboard", "--scenario", "nominal",
                                "--seed", str(SEED), "--out", str(polled), "--no-plots"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env=dict(os.environ, SUREPICK_PROGRESS="1"))
        rest = []
        try:
            _read_until(run.stderr, MID_CYCLE, 180)
            run.send_signal(signal.SIGSTOP)          # the board is serving, mid-cycle, and stays so
            held_at = time.monotonic()
            try:
                poller.wait_polls_started_after(held_at, POLLS_WHILE_HELD, 120)
            finally:
                run.send_signal(signal.SIGCONT)
            drain = threading.Thread(target=_drain, args=(run.stderr, rest), daemon=True)
            drain.start()
            out = run.stdout.read().decode()
            assert run.wait(300) == 0, out + b"".join(rest).decode(errors="replace")
            drain.join(10)
        finally:
            if run.poll() is None:
                run.kill()
                run.wait()

    during = [p for p in poller.polls if p[0] >= held_at]
    assert len(during) >= POLLS_WHILE_HELD
    for _, code, text, listed in poller.polls:
        assert listed == [], listed                      # never in the person's registry
        assert code != 0 and NO_BOARD in text, text      # auto found no board, so reached none
    assert "verified placed 1/1" in out, out

    r = surepick("compare", quiet, polled, "--out", tmp_path / "cmp", timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (quiet / "events.csv").read_text() == (polled / "events.csv").read_text()
    assert (quiet / "ticks.csv").read_text() == (polled / "ticks.csv").read_text()
