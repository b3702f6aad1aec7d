# Sweep throughput on this machine: the same sweep (nominal cycles, two cells, chunks of 4) on the
# local worker pool and on a Dask LocalCluster, each with 1 and 2 workers:
#   - cycles per second, and per worker;
#   - the cycles' own compute (each cycle's wall time inside its worker, summed) against the
#     workers' wall time: what is left is scheduling, start-up and idle tails, per cycle;
#   - the scheduling overhead alone: empty chunks (the real task function with no cycle in it)
#     sent through each backend, the time per task across its workers, and per cycle at 4 a chunk.
# Dask's cluster start-up is timed on its own and kept out of the sweep's wall time.
#   .venv/bin/python tools/bench/sweep_bench.py [--cycles 16] [--empty 200] [--tiny]
#   (--tiny, for the tests: 2 cycles and 10 empty chunks per backend)
import argparse
import statistics
import tempfile
import time

from surepick.host.engines import sweep, sweep_run
from surepick.host.engines.sweep_dask import DaskBackend
from surepick.host.engines.sweep_pool import LocalPool

CHUNK = 4


def sweep_once(backend, workers, cycles):
    plan = sweep.make_plan("nominal", ["config.grasp_dwell_ms=340,350"], seeds=max(1, cycles // 2), chunk=CHUNK)
    with tempfile.TemporaryDirectory(prefix="sweep-bench-") as out:
        t = time.perf_counter()
        run = sweep_run.run_sweep(plan, out, backend)
        wall = time.perf_counter() - t
    n = len(run.results)
    compute = sum(r["wall_s"] for r in run.results.values())
    placed = sum(1 for r in run.results.values() if r["fsm_outcome"] == "placed" and r["judge_outcome"] == "placed")
    return {"cycles": n, "placed": placed, "wall_s": wall, "per_s": n / wall, "per_s_worker": n / wall / workers,
            "compute_s_per_cycle": compute / n, "overhead_s_per_cycle": (wall * workers - compute) / n}


def empty_chunks(backend, workers, count):
    # The real task (engines/sweep.run_chunk) with nothing in it: its round trip is the scheduling.
    tasks = [(i, []) for i in range(count)]
    done = []
    t = time.perf_counter()
    backend.run(sweep.run_chunk, tasks, lambda i, out: done.append(i))
    wall = time.perf_counter() - t
    assert len(done) == count
    return wall * workers / count


def main(argv=None):
    ap = argparse.ArgumentParser(description="sweep throughput: local pool vs Dask LocalCluster, 1 and 2 workers")
    ap.add_argument("--cycles", type=int, default=16, help="cycles per backend and worker count (default 16)")
    ap.add_argument("--empty", type=int, default=200, help="empty chunks for the overhead (default 200)")
    ap.add_argument("--tiny", action="store_true", help="2 cycles and 10 empty chunks each (for the tests)")
    args = ap.parse_args(argv)
    cycles, empty = (2, 10) if args.tiny else (args.cycles, args.empty)
    sweep.code_identity()          # hashed once here, as a sweep does before its workers start
    rows = []
    for kind in ("local", "dask"):
        for workers in (1, 2):
            start = 0.0
            if kind == "local":
                backend = LocalPool(workers)
            else:
                t = time.perf_counter()
                backend = DaskBackend(None, workers)
                start = time.perf_counter() - t
            try:
                empty_chunks(backend, workers, min(4, empty))      # warm: workers started, imports done
                over = empty_chunks(backend, workers, empty)
                r = sweep_once(backend, workers, cycles)
            finally:
                close = getattr(backend, "close", None)
                if close:
                    close()
            name = "local pool" if kind == "local" else "dask LocalCluster"
            print("%-18s %d worker%s: %d cycles (%d placed) in %.1f s: %.3f cycles/s, %.3f per worker; compute "
                  "%.3f s/cycle, rest %.3f s/cycle%s" % (
                      name, workers, "s" if workers > 1 else " ", r["cycles"], r["placed"], r["wall_s"], r["per_s"],
                      r["per_s_worker"], r["compute_s_per_cycle"], r["overhead_s_per_cycle"],
                      "; cluster start %.1f s" % start if kind == "dask" else ""), flush=True)
            print("%-18s %d worker%s: scheduling overhead %.2f ms per task (empty chunk), %.2f ms per cycle at %d "
                  "a chunk" % (name, workers, "s" if workers > 1 else " ", over * 1000, over * 1000 / CHUNK, CHUNK),
                  flush=True)
            rows.append((name, workers, r, over))
    by = {(n, w): r for n, w, r, _ in rows}
    for w in (1, 2):
        print("dask vs local, %d worker%s: %.2fx the cycles/s" % (
            w, "s" if w > 1 else "", by[("dask LocalCluster", w)]["per_s"] / by[("local pool", w)]["per_s"]))
    print("median scheduling overhead per cycle: %.2f ms" % statistics.median(o * 1000 / CHUNK for *_, o in rows))


if __name__ == "__main__":
    main()
