# What the physics and the whole loop cost per simulated second, in CPU time, over whole cycles
# of a few scenarios run as a batch runs them (no trajectory). Run against another checkout in
# the same run, alternating, so load and machine drift hit both alike:
#   .venv/bin/python tools/bench/physics_cost.py [--rounds 5] [--against /path/to/other/checkout] [--tiny]
# Prints per tree: CPU us inside mj_step per simulated ms (bare physics), CPU us of the whole
# cycle per simulated ms, both as real-time factors, and the loop/bare ratio; with --against,
# the ratios between the trees (medians over rounds). --json prints one round as JSON (the
# form the other tree is run in); --tiny (for the tests): one round of one short cycle.
import argparse
import json
import os
import statistics
import subprocess
import time

SCENARIOS = (("nominal", 3), ("part_offset", 2), ("estop", 2), ("brownout_mid_lift", 2), ("servo_stall", 2))
TINY = (("part_missing", 1),)


def one_round(scenarios=SCENARIOS):
    # -> {"step_us_per_ms", "cycle_us_per_ms", "sim_ms"}: CPU time (this thread's clock).
    import mj_step_timer     # imports MuJoCo: only the --json child that measures needs it
    from surepick.host.engines import inproc
    clock = time.thread_time_ns
    sim_ms = 0
    total = 0
    with mj_step_timer.measured() as spent:
        for name, seeds in scenarios:
            for seed in range(seeds):
                t0 = clock()
                rec, _, _ = inproc.run_cycle(name, seed=1000 + seed, record_trajectory=False)
                total += clock() - t0
                sim_ms += rec["sim_ms"]
    return {"step_us_per_ms": spent[0] / 1000.0 / sim_ms, "cycle_us_per_ms": total / 1000.0 / sim_ms,
            "sim_ms": sim_ms}


def other_round(path, tiny=False):
    py = os.path.join(path, ".venv", "bin", "python")
    out = subprocess.run([py, os.path.abspath(__file__), "--json"] + (["--tiny"] if tiny else []), cwd=path,
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--against", help="another checkout (with its own .venv) to run alternately")
    ap.add_argument("--json", action="store_true", help="one round, printed as JSON")
    ap.add_argument("--tiny", action="store_true", help="one round of one short cycle (for the tests)")
    a = ap.parse_args()
    if a.tiny:
        a.rounds = 1
    if a.json:
        print(json.dumps(one_round(TINY if a.tiny else SCENARIOS)))
        return
    from surepick.host.source_tree import CHECKOUT
    trees = {"this": str(CHECKOUT)}
    if a.against:
        trees["other"] = os.path.abspath(a.against)
    got = {k: [] for k in trees}
    print("load average at start: %.2f %.2f %.2f" % os.getloadavg(), flush=True)
    for _ in range(a.rounds):
        for k, path in trees.items():
            got[k].append(other_round(path, a.tiny))
    for k, rows in got.items():
        step = statistics.median(r["step_us_per_ms"] for r in rows)
        cyc = statistics.median(r["cycle_us_per_ms"] for r in rows)
        ratio = statistics.median(r["step_us_per_ms"] / r["cycle_us_per_ms"] for r in rows)
        print("%-5s %s: mj_step %.2f us per simulated ms (%.0fx real time), whole cycle %.2f us (%.0fx), "
              "loop/bare %.2f; %d simulated s per round" % (k, trees[k], step, 1000.0 / step, cyc, 1000.0 / cyc,
                                                            ratio, rows[0]["sim_ms"] / 1000.0))
    if a.against:
        pairs = list(zip(got["this"], got["other"]))
        sp = statistics.median(o["step_us_per_ms"] / t["step_us_per_ms"] for t, o in pairs)
        cy = statistics.median(o["cycle_us_per_ms"] / t["cycle_us_per_ms"] for t, o in pairs)
        print("this tree against the other (medians of per-round ratios): bare mj_step %.2fx as fast, "
              "whole cycle %.2fx as fast" % (sp, cy))
    print("load average at end: %.2f %.2f %.2f" % os.getloadavg())


if __name__ == "__main__":
    main()
