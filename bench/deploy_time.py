# Full firmware deploy time against the virtual board (unix micropython on loopback TCP):
# cold (empty flash: every file compiled, hashed and copied) and warm (nothing changed: only
# the board-side hashes). Median of 3 each; includes the soft reset (not the wait for the
# firmware's hello, which needs the virtual board's HAL: pass --hello once it exists).
#   .venv/bin/python bench/deploy_time.py [--runs 3] [--hello]
import argparse
import shutil
import statistics
import tempfile
import time

from surepick.host import deploy as dp
from surepick.tools.vboard import VirtualBoard


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--hello", action="store_true", help="also wait for the firmware's hello")
    ap.add_argument("--source", action="store_true", help="deploy .py sources instead of .mpy")
    a = ap.parse_args()
    cold, warm, size, files = [], [], 0, 0
    for _ in range(a.runs):
        flash = tempfile.mkdtemp(prefix="surepick-bench-flash-")
        try:
            with VirtualBoard(flash, hal_dir=None if not a.hello else dp_hal()) as b:
                b.wait_repl(20)
                t0 = time.perf_counter()
                res = dp.deploy(b.address, source=a.source, wait_hello=a.hello)
                cold.append(time.perf_counter() - t0)
                size, files = res.bytes_copied, len(res.copied)
                t0 = time.perf_counter()
                res = dp.deploy(b.address, source=a.source, wait_hello=a.hello)
                warm.append(time.perf_counter() - t0)
                assert res.copied == []
        finally:
            shutil.rmtree(flash, ignore_errors=True)
    print("deploy to the virtual board (%s, %d files, %.1f KB)" % ("source" if a.source else "mpy",
                                                                  files, size / 1024))
    print("cold: %.2f s median (runs %s)" % (statistics.median(cold), ", ".join("%.2f" % x for x in cold)))
    print("warm (nothing changed): %.2f s median (runs %s)"
          % (statistics.median(warm), ", ".join("%.2f" % x for x in warm)))


def dp_hal():
    from surepick.tools.vboard import DEFAULT_HAL_DIR
    return DEFAULT_HAL_DIR


if __name__ == "__main__":
    main()
