# A virtual board started the way a user starts one (`surepick board ...` as a subprocess of the
# venv's console script), for CLI tests that need a board: its port, and a clean stop by pid.
import contextlib
import os
import pty
import re
import subprocess
import time

from surepick.host.cli.board_ready import wait_served
from tests.support.cli import SUREPICK_BIN, surepick
from tests.support.vboard import deploy_firmware


@contextlib.contextmanager
def running_board(flash, scenario="nominal", seed=2, deploy=True, extra=()):
    # -> the board's socket:// port, once the firmware answers `job status`. scenario None: a
    # board without a plant (its HAL free-runs), as `surepick hil` wants it.
    if deploy:
        deploy_firmware(flash)
    plant = [] if scenario is None else ["--scenario", scenario, "--seed", str(seed)]
    p = subprocess.Popen([SUREPICK_BIN, "board", "--listen", "127.0.0.1:0", "--flash", str(flash), *plant, *extra],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        port = wait_served(p, 60)
        for _ in range(120):
            if surepick("job", "status", "--port", port, timeout=60).returncode == 0:
                break
            time.sleep(0.25)
        yield port
    finally:
        p.terminate()
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=20)


ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def in_terminal(*args, timeout=300, cols=160):
    # Run `surepick ARGS` with stdout and stderr on a pseudo-terminal (as in a person's terminal).
    # -> (exit code, everything it wrote with escape sequences removed and \r as line breaks).
    import fcntl
    import struct
    import termios
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, cols, 0, 0))
    env = dict(os.environ)
    env.pop("SUREPICK_PROGRESS", None)
    p = subprocess.Popen([SUREPICK_BIN, *map(str, args)], stdin=subprocess.DEVNULL, stdout=slave, stderr=slave,
                         env=env, close_fds=True)
    os.close(slave)
    out = b""
    deadline = time.time() + timeout
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:          # EIO: the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
        if time.time() > deadline:
            p.kill()
            break
    os.close(master)
    code = p.wait(timeout=30)
    text = ANSI.sub("", out.decode("utf-8", "replace")).replace("\r\n", "\n").replace("\r", "\n")
    return code, text
