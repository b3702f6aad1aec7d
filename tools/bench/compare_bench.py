# Time to compare two N-cycle run records (default 1,000). Real host-sim cycles of the nominal
# plant and of a hardware stand-in are recorded once (K each) and tiled to N cycles per run,
# written in the run-record format, then `compare` is timed end to end (load + checks + report).
#   .venv/bin/python tools/bench/compare_bench.py [--cycles 1000] [--real 10] [--tiny]
# (--tiny: 2 cycles from 1 real one, for the tests)
import argparse
import os
import shutil
import tempfile
import time

from surepick.host.records import compare
from surepick.host.records import compare_report
from surepick.host.records import fit
from surepick.host.records import runrecord
from surepick.host.records import report
from surepick.host.engines import inproc as runner
from surepick.sim import scenarios


def record(path, n, k, plant):
    sc = scenarios.get("nominal")
    values = sc.resolve({})
    runs = []
    for c in range(k):
        run = runner.InprocCycle(sc, values, 0, c, plant, None)
        rec = run.run(record_trajectory=True)
        rec["scenario"] = "nominal"
        runs.append(rec)
    cycles = []
    for c in range(n):
        r = dict(runs[c % k])
        r["cycle"] = c
        cycles.append(r)
    meta = {"scenario": "nominal", "params": values, "seed": 0, "model_hash": None, "plant_params": plant}
    report.write_report(path, meta, cycles, None, plots=False)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cycles", type=int, default=1000)
    ap.add_argument("--real", type=int, default=10)
    ap.add_argument("--tiny", action="store_true", help="2 cycles from 1 real one (for the tests)")
    a = ap.parse_args()
    if a.tiny:
        a.cycles, a.real = 2, 1
    tmp = tempfile.mkdtemp(prefix="cmpbench")
    try:
        t0 = time.perf_counter()
        record(os.path.join(tmp, "a"), a.cycles, a.real, None)
        record(os.path.join(tmp, "b"), a.cycles, a.real, fit.stand_in_params(1))
        size = sum(os.path.getsize(os.path.join(tmp, d, "ticks.csv")) for d in "ab") / 1e6
        print("recorded and wrote 2 x %d cycles (%.0f MB of ticks.csv) in %.1f s" % (a.cycles, size, time.perf_counter() - t0))
        t0 = time.perf_counter()
        ra, rb = runrecord.load(os.path.join(tmp, "a")), runrecord.load(os.path.join(tmp, "b"))
        t1 = time.perf_counter()
        cmp = compare.compare(ra, rb)
        t2 = time.perf_counter()
        compare_report.write(cmp, os.path.join(tmp, "out"))
        t3 = time.perf_counter()
        print("compare %d vs %d cycles: load %.1f s, checks %.1f s, report %.1f s, total %.1f s (passed=%s)" % (
            a.cycles, a.cycles, t1 - t0, t2 - t1, t3 - t2, t3 - t0, cmp.passed))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
