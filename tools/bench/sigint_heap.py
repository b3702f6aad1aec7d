# Why the virtual board gives the firmware's loop Ctrl-C as a byte, not a SIGINT: the unix
# `micropython` raises a SIGINT's KeyboardInterrupt from inside whatever C code runs (its variants
# set MICROPY_ASYNC_KBD_INTR without a GIL), so one that lands in an allocation leaves the heap
# locked. Here a bare `micropython` runs a loop that allocates (a collection every few passes) and
# catches KeyboardInterrupt, and is sent a SIGINT to its main thread every few ms for a while; a
# run counts as locked when it ends with "heap is locked". --byte: the same loop reads its stdin
# and raises at a Ctrl-C byte, sent instead of each SIGINT (the board's way), the control.
#   .venv/bin/python tools/bench/sigint_heap.py [--runs 20] [--seconds 2] [--threads 1] [--byte] [--tiny]
# Exit status 0 however many locked: it measures.
import argparse
import os
import pty
import signal
import subprocess
import sys
import tempfile
import time

from surepick.host.vboard.interp import signal_main_thread, find_micropython

LOOP = r"""
import _thread, select, sys, time
def helper():
    while True:
        try:
            time.sleep_ms(10)
        except KeyboardInterrupt:
            pass
for _ in range(int(sys.argv[2])):
    _thread.start_new_thread(helper, ())
poll = select.poll()
poll.register(sys.stdin, select.POLLIN)
by_byte = sys.argv[3] == "1"
stops = 0
end = time.ticks_add(time.ticks_ms(), int(sys.argv[1]))
print("ready")
while True:
    try:
        if time.ticks_diff(end, time.ticks_ms()) <= 0:
            break
        junk = [bytearray(64) for _ in range(50)]
        if by_byte:
            for _ in poll.ipoll(0):
                if sys.stdin.buffer.read(1) == b"\x03":
                    raise KeyboardInterrupt
    except KeyboardInterrupt:
        stops += 1
print("done", stops)
"""


def one_run(mpy, script, ms, threads, by_byte, every_s):
    master, slave = pty.openpty()
    p = subprocess.Popen([mpy, script, str(ms), str(threads), "1" if by_byte else "0"],
                         stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    os.close(slave)
    try:
        assert p.stdout.readline().strip() == b"ready", "the loop did not start"
        sent = 0
        while p.poll() is None:
            time.sleep(every_s)
            if by_byte:
                os.write(master, b"\x03")
            else:
                signal_main_thread(p.pid, signal.SIGINT)
            sent += 1
        out = p.stdout.read().decode(errors="replace")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        os.close(master)
    return sent, p.returncode, out


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--threads", type=int, default=1, help="helper threads beside the loop")
    ap.add_argument("--every-ms", type=float, default=3.0, help="one interrupt this often")
    ap.add_argument("--byte", action="store_true", help="Ctrl-C as a byte the loop reads (the control)")
    ap.add_argument("--tiny", action="store_true")
    a = ap.parse_args()
    if a.tiny:
        a.runs, a.seconds = 2, 0.3
    mpy = find_micropython()
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "loop.py")
        with open(script, "w") as f:
            f.write(LOOP)
        locked = clean = other = 0
        for i in range(a.runs):
            sent, rc, out = one_run(mpy, script, int(a.seconds * 1000), a.threads, a.byte, a.every_ms / 1000)
            if "heap is locked" in out:
                locked += 1
            elif rc == 0 and out.startswith("done"):
                clean += 1
            else:
                other += 1
                print("run %d: exit %s after %d interrupts: %s" % (i, rc, sent, out.strip()[-200:].replace("\n", " | ")))
    how = "Ctrl-C bytes" if a.byte else "SIGINTs"
    print("sigint_heap: %d runs of %.1f s, %d helper thread(s), %s every %.0f ms" % (
        a.runs, a.seconds, a.threads, how, a.every_ms))
    print("heap locked in %d, clean in %d, other ends %d" % (locked, clean, other))


if __name__ == "__main__":
    sys.exit(main())
