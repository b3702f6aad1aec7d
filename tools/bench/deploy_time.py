# Full firmware deploy time against the virtual board (unix micropython on loopback TCP, the
# virtual HAL without a plant, so the deployed firmware boots and says hello), median of N:
#   cold       empty flash, empty .mpy cache: every module compiled, hashed and copied
#   cold/cache empty flash, warm .mpy cache: copied, nothing compiled
#   warm       nothing changed: only the board-side hashes
# Every figure includes the soft reset and the wait for the firmware's HELLO frame (shown
# separately too), unless --no-hello.
#   .venv/bin/python tools/bench/deploy_time.py [--runs 3] [--no-hello] [--source] [--tiny]
# (--tiny: one run, for the tests)
import argparse
import shutil
import statistics
import tempfile
import time

from surepick.host import deploy as dp
from surepick.host.vboard import VirtualBoard


def _timed(b, a, cache_dir, monkey):
    monkey(cache_dir)
    t0 = time.perf_counter()
    res = dp.deploy(b.address, source=a.source, wait_hello=a.hello, hello_timeout=30)
    return time.perf_counter() - t0, res


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-hello", dest="hello", action="store_false",
                    help="do not wait for the firmware's hello (a bare board, no HAL)")
    ap.add_argument("--source", action="store_true", help="deploy .py sources instead of .mpy")
    ap.add_argument("--tiny", action="store_true", help="one run (for the tests)")
    a = ap.parse_args()
    if a.tiny:
        a.runs = 1
    real_default = dp.default_cache_dir

    def use_cache(d):
        dp.default_cache_dir = lambda: d

    rows = {"cold": [], "cold/cache": [], "warm": []}
    hello = {"cold": [], "cold/cache": [], "warm": []}
    compiled = {}
    size = files = 0
    for _ in range(a.runs):
        cache = tempfile.mkdtemp(prefix="surepick-bench-mpy-")
        try:
            for kind in ("cold", "cold/cache"):
                flash = tempfile.mkdtemp(prefix="surepick-bench-flash-")
                try:
                    with VirtualBoard(flash) as b:
                        b.wait_repl(20)
                        s, res = _timed(b, a, cache, use_cache)
                        rows[kind].append(s)
                        hello[kind].append(res.hello_seconds)
                        compiled[kind] = res.compiled
                        size, files = res.bytes_copied, len(res.copied)
                        if kind == "cold/cache":
                            s, res = _timed(b, a, cache, use_cache)
                            assert res.copied == [] and res.compiled == 0, (
                                "sources changed during the bench?", res.copied, res.compiled)
                            rows["warm"].append(s)
                            hello["warm"].append(res.hello_seconds)
                            compiled["warm"] = res.compiled
                finally:
                    shutil.rmtree(flash, ignore_errors=True)
        finally:
            shutil.rmtree(cache, ignore_errors=True)
    dp.default_cache_dir = real_default
    print("deploy to the virtual board (%s, %d files, %.1f KB)%s"
          % ("source" if a.source else "mpy", files, size / 1024,
             ", including the wait for the firmware's HELLO" if a.hello else ", no HELLO wait"))
    for kind in ("cold", "cold/cache", "warm"):
        print("%-11s %.2f s median (runs %s); reset->HELLO %.2f s; %s modules compiled"
              % (kind + ":", statistics.median(rows[kind]), ", ".join("%.2f" % x for x in rows[kind]),
                 statistics.median(hello[kind]), compiled.get(kind, 0)))


if __name__ == "__main__":
    main()
