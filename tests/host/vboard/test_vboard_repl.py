# `mpremote repl` on the virtual board, in a real terminal: mpremote runs on a pty this test
# holds (as a person's terminal), types an expression, sees the result with the CR LF line
# endings a Pico's REPL sends, and leaves with Ctrl-] or Ctrl-X.
# mpremote 1.29's REPL waits on the port's file descriptor (console.py: select on
# `pyb_serial.fd`), which pyserial's socket:// port does not have, so `repl` needs a device
# path: the board serves a pty beside its TCP port for that (upstream: micropython PR #19062).
import os
import pty
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import serial

from surepick.host.vboard import VirtualBoard

from tests.support.needs import NEEDS_MICROPYTHON

BIN = Path(sys.executable).parent
MPREMOTE = str(BIN / "mpremote") if (BIN / "mpremote").exists() else "mpremote"

pytestmark = NEEDS_MICROPYTHON


class Terminal:
    # mpremote on a pty, the way a terminal emulator runs it.
    def __init__(self, *argv):
        master, slave = pty.openpty()
        self.proc = subprocess.Popen(list(argv), stdin=slave, stdout=slave, stderr=slave,
                                     close_fds=True, start_new_session=True)
        os.close(slave)
        self.fd = master
        self.seen = b""

    def send(self, data):
        os.write(self.fd, data)

    def expect(self, token, timeout=20):
        end = time.monotonic() + timeout
        while token not in self.seen:
            left = end - time.monotonic()
            assert left > 0, "no %r on the terminal; it shows %r" % (token, self.seen[-400:])
            if select.select([self.fd], [], [], left)[0]:
                try:
                    chunk = os.read(self.fd, 4096)
                except OSError:          # mpremote exited: the pty is gone
                    chunk = b""
                assert chunk, "mpremote ended; the terminal shows %r" % self.seen[-400:]
                self.seen += chunk
        head, _, self.seen = self.seen.partition(token)
        return head

    def close(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        os.close(self.fd)


@pytest.fixture
def board(flash):
    with VirtualBoard(flash, pty=True, listen="127.0.0.1:0") as b:
        b.wait_repl(20)
        yield b


@pytest.mark.parametrize("exit_key", [b"\x1d", b"\x18"], ids=["ctrl-]", "ctrl-x"])
def test_mpremote_repl_in_a_terminal(board, exit_key):
    pts = [a for a in board.addresses if a.startswith("/dev/")]
    assert len(pts) == 1 and board.address.startswith("socket://")   # both, TCP first
    t = Terminal(MPREMOTE, "connect", pts[0], "repl")
    try:
        t.expect(b"Use Ctrl-] or Ctrl-x to exit this shell")
        t.send(b"\r")
        t.expect(b">>> ")
        t.send(b"6 * 7\r")
        assert t.expect(b">>> ") == b"6 * 7\r\n42\r\n"
        t.send(b"print('a\\nb'); 1/0\r")
        shown = t.expect(b">>> ")
        assert shown.startswith(b"print('a\\nb'); 1/0\r\na\r\nb\r\nTraceback (most recent call last):\r\n")
        assert shown.endswith(b"ZeroDivisionError: divide by zero\r\n")
        assert b"\n" not in shown.replace(b"\r\n", b"")        # no bare LF anywhere
        t.send(exit_key)
        assert t.proc.wait(10) == 0
    finally:
        t.close()
    # the board goes on, at its prompt
    with serial.serial_for_url(board.address, timeout=0.1) as line:
        line.write(b"\r")
        seen = b""
        end = time.monotonic() + 10
        while b">>> " not in seen and time.monotonic() < end:
            seen += line.read(256)
        assert b">>> " in seen


def test_one_client_at_a_time_across_the_pty_and_the_port(board):
    pts = [a for a in board.addresses if a.startswith("/dev/")][0]
    t = Terminal(MPREMOTE, "connect", pts, "repl")
    try:
        t.expect(b"Use Ctrl-] or Ctrl-x to exit this shell")
        t.send(b"\r")
        t.expect(b">>> ")
        # a TCP client meanwhile is told the line is taken, as a second opener of a serial port
        host, port = board.address[len("socket://"):].rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=10) as other:
            said = b""
            while True:
                chunk = other.recv(256)
                if not chunk:
                    break
                said += chunk
            assert b"busy" in said
        t.send(b"'still mine'\r")
        assert b"'still mine'\r\n" in t.expect(b">>> ")
        t.send(b"\x1d")
        assert t.proc.wait(10) == 0
    finally:
        t.close()
    # and once the pty's client has gone, the port serves the next one
    p = subprocess.run([MPREMOTE, "connect", board.address, "exec", "print(1 + 1)"],
                       capture_output=True, timeout=60)
    assert p.returncode == 0 and p.stdout == b"2\r\n", p
