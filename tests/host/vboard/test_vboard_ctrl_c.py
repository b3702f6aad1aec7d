# A Ctrl-C to the firmware (its loop, or its boot) reaches it as a byte the loop reads (host/vboard/
# lifetime.py), not as a SIGINT: the unix port raises a SIGINT's KeyboardInterrupt from inside
# whatever C code runs (MICROPY_ASYNC_KBD_INTR), and one that lands in an allocation leaves the
# heap locked. The oracle is the interpreter's own traceback: a byte stops the loop inside
# cmdparse.poll, at a statement of its own; and the REPL still computes afterwards.
import contextlib
import re
import socket
import time

import pytest

from surepick.host.vboard import VirtualBoard
from tests.support.needs import NEEDS_MICROPYTHON
from tests.support.vboard import deploy_firmware

pytestmark = NEEDS_MICROPYTHON

# A loop that allocates all the time (a collection every few passes) and reads the console as
# the firmware's does. It says it runs as the firmware's HAL does when its loop starts
# (hal/virtual.py wdt_start), and prints "looping" after its first pass.
STRESS_MAIN = r"""
import sys
import vboard_io
from surepick.firmware import cmdparse
sys.stdout.write("\x1b_vboard:loop\x1b\\")
reader = cmdparse.LineReader()
first = True
while True:
    junk = [bytearray(64) for _ in range(50)]
    reader.poll(vboard_io.read_byte, 32, 3)
    if first:
        print("looping")
        first = False
"""
ROUNDS = 12


class Console:
    def __init__(self, address):
        host, port = address[len("socket://"):].rsplit(":", 1)
        self.s = socket.create_connection((host, int(port)), timeout=60)
        self.seen = b""

    def expect(self, token, timeout=60):
        end = time.monotonic() + timeout
        while token not in self.seen:
            left = end - time.monotonic()
            assert left > 0, "no %r; the console shows %r" % (token, self.seen[-600:])
            self.s.settimeout(left)
            try:
                chunk = self.s.recv(4096)
            except TimeoutError:
                chunk = None
            assert chunk is not None, "no %r within %d s; the console shows %r" % (token, timeout, self.seen[-600:])
            assert chunk, "the board closed the console after %r" % self.seen[-600:]
            self.seen += chunk
        head, _, self.seen = self.seen.partition(token)
        return head

    def close(self):
        self.s.close()


@contextlib.contextmanager
def _served(tmp_path, main_py=None):
    # -> (the board, a console on it): the firmware deployed, main.py replaced when given.
    flash = tmp_path / "flash"
    flash.mkdir()
    deploy_firmware(flash)
    if main_py is not None:
        (flash / "main.py").write_text(main_py)
    with VirtualBoard(flash, listen="127.0.0.1:0") as b:
        c = Console(b.address)
        try:
            yield b, c
        finally:
            c.close()


@pytest.fixture
def stress_board(tmp_path):
    with _served(tmp_path, STRESS_MAIN) as served:
        yield served


def test_ctrl_c_stops_an_allocating_loop_cleanly_every_time(stress_board):
    b, c = stress_board
    for i in range(ROUNDS):
        c.expect(b"looping\r\n")
        c.s.sendall(b"\r\x03\x03")                      # as mpremote interrupts a program
        stopped = c.expect(b">>> ").decode(errors="replace")
        assert "KeyboardInterrupt" in stopped, "round %d: %s" % (i, stopped)
        assert re.search(r'File "[^"]*cmdparse\.py", line \d+, in poll', stopped), "round %d: %s" % (i, stopped)
        for bad in ("heap is locked", "FATAL", "MemoryError"):
            assert bad not in stopped, "round %d: %s" % (i, stopped)
        assert b.sigints == 0
        c.s.sendall(b"print(6 * 7)\r")
        assert "42" in c.expect(b">>> ").decode(errors="replace"), "round %d" % i
        c.s.sendall(b"\x04")                            # soft reset: main.py runs again


@pytest.fixture
def firmware_board(tmp_path):
    with _served(tmp_path) as served:
        yield served


def test_a_ctrl_c_during_the_boot_stops_the_firmware_at_its_first_tick(firmware_board):
    # mpremote's Ctrl-C the moment the board says "soft reboot": it lands in the boot (imports,
    # preload), where a SIGINT was once lost outright (the firmware then ran on). As a byte it
    # waits for the loop, which stops at its first read of the console.
    b, c = firmware_board
    c.s.sendall(b"\r\x03")
    c.expect(b">>> ")
    for i in range(10):
        c.s.sendall(b"\x04")                            # soft reset: main.py boots the firmware
        c.expect(b"soft reboot\r\n")
        c.s.sendall(b"\r\x03")
        stopped = c.expect(b">>> ").decode(errors="replace")
        assert re.search(r'File "[^"]*cmdparse\.py", line \d+, in poll', stopped), "round %d: %s" % (i, stopped)
        assert b.sigints == 0
        c.s.sendall(b"print(6 * 7)\r")
        assert "42" in c.expect(b">>> ").decode(errors="replace"), "round %d" % i
