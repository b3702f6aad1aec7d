# How often a deploy's raw-REPL handshake fails against the virtual board while its firmware runs:
# N times, the handshake `deploy` and `doctor` make (Ctrl-C, Ctrl-A, Ctrl-D: host/deploy/raw_repl.py),
# one command in the raw REPL, then a soft reset back to the firmware and its HELLO. The board is
# `surepick board` with the MuJoCo arm (scenario nominal), started as a user starts it.
#   .venv/bin/python tools/bench/handshake_loop.py [--count 600] [--timeout 6] [--tiny]
# A loaded machine, as docs/testing.md measured it (30 % of one core, a busy process beside):
#   python tools/slow_machine.py half --cores 0.3 -- python tools/slow_machine.py hog --procs 1 -- \
#       .venv/bin/python tools/bench/handshake_loop.py
# Prints each failure (what the handshake said, with the last of what the board sent), then the
# count and the handshake's median time. Exit status 0 however many failed: it measures, the tests judge.
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from surepick.host.cli.board_ready import served_address
from surepick.host.deploy import raw_repl
from surepick.host.deploy.errors import DeployError
from surepick.host.engines.vboard import install_firmware
from surepick.host.link.client import LinkClient
from surepick.host.link.errors import LinkError
from surepick.shared_fsm import link


def start_board(flash, log):
    surepick = Path(sys.executable).with_name("surepick")
    p = subprocess.Popen([str(surepick), "board", "--listen", "127.0.0.1:0", "--flash", str(flash),
                          "--scenario", "nominal", "--seed", "2"],
                         stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        address = served_address(Path(log.name).read_text())
        if address is not None:
            return p, address
        if p.poll() is not None:
            break
        time.sleep(0.2)
    p.kill()
    raise SystemExit("handshake_loop: the board did not start:\n" + Path(log.name).read_text())


def wait_firmware(port, timeout=120):
    deadline = time.monotonic() + timeout
    while True:
        try:
            with LinkClient(port) as c:
                if c.request(link.T_STATUS, (), 5.0).ok:
                    return
        except LinkError:  # not up yet: no board on the port, no reply
            if time.monotonic() > deadline:
                raise
        time.sleep(0.25)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--count", type=int, default=600, help="handshakes (default 600)")
    ap.add_argument("--timeout", type=float, default=6.0,
                    help="seconds each waits for the raw REPL's prompt (default 6, doctor's)")
    ap.add_argument("--tiny", action="store_true", help="3 handshakes (for the tests)")
    a = ap.parse_args()
    if a.tiny:
        a.count = 3
    with tempfile.TemporaryDirectory(prefix="handshake-loop-") as tmp:
        flash = Path(tmp) / "flash"
        flash.mkdir()
        install_firmware(flash)
        with open(os.path.join(tmp, "board.log"), "w") as log:
            board, port = start_board(flash, log)
            try:
                wait_firmware(port)
                failed, times = 0, []
                for i in range(a.count):
                    b = raw_repl.RawReplBoard(port)
                    t0 = time.monotonic()
                    try:
                        b.connect(timeout=a.timeout)
                        b.info()
                        times.append(time.monotonic() - t0)
                        hello, _ = b.reset_and_wait_hello(60)
                        if hello is None:
                            raise DeployError("no HELLO from the firmware within 60 s of the soft reset")
                    except DeployError as e:
                        failed += 1
                        print("handshake %d failed after %.1f s: %s" % (i + 1, time.monotonic() - t0, e))
                    finally:
                        b.close()
            finally:
                board.terminate()
                board.wait(30)
    print("handshake_loop: %d handshakes, %d failed" % (a.count, failed))
    if times:
        print("handshake to the raw REPL: median %.2f s, worst %.2f s" % (statistics.median(times), max(times)))


if __name__ == "__main__":
    main()
