# Simulator speed, measured in one run on this machine (medians of 5 where repeated):
#   1. bare mj_step rate on a nominal job's trajectory (time spent inside mj_step), as simulated
#      seconds per wall second
#   2. the same run through the whole loop: shared machine, motion planner, sensor models, servo
#      models at 500 Hz -> ratio to 1 (target >= 0.8)
#   3. real-time factor of one whole nominal cycle (including ground-truth sampling)
#   4. wall time of a mixed batch (every scenario, round robin) with --jobs 2 (target: 1,000
#      cycles under 2 minutes); pass --batch N to choose N (0 skips it)
#   .venv/bin/python bench/sim_bench.py [--batch 1000]
import argparse
import statistics
import sys
import tempfile
import time

import mujoco

from surepick.sim import batch, runner, scenarios

SIM_MS = 4000


def loop_vs_bare():
    # One nominal job's first SIM_MS (approach, descend, grasp, verify, lift), run through the
    # full 500 Hz loop. mj_step is timed inside the same run, so "bare" is the physics of the very
    # same trajectory (contacts and all) and the ratio is free of scene differences.
    sc = scenarios.get("nominal")
    run = runner.CycleRun(sc, sc.resolve({}), 1, 0)
    b = run.board
    s = run.setup
    from surepick.shared_fsm.machine import Job
    b.machine.start_job(Job(runner._um(scenarios.pick_pose_mm(s["part"], s["part_width_mm"])),
                            runner._um(scenarios.place_pose_mm(s["part"])), 25000), runner.check_pose)
    real_step = mujoco.mj_step
    spent = [0.0]
    clock = time.perf_counter

    def timed_step(m, d, n=1):
        t = clock()
        real_step(m, d, n)
        spent[0] += clock() - t
    mujoco.mj_step = timed_step
    try:
        ticks = SIM_MS // b.period
        t0 = clock()
        for _ in range(ticks):
            b.tick()
        total = clock() - t0
    finally:
        mujoco.mj_step = real_step
    sim_s = SIM_MS / 1000.0
    return sim_s / spent[0], sim_s / total


def cycle_rtf():
    rec, _, _ = runner.run_cycle("nominal", seed=3, record_trajectory=False)
    return rec["sim_ms"] / 1000.0 / rec["wall_s"], rec["sim_ms"], rec["wall_s"]


def mixed_batch(n, jobs):
    names = sorted(scenarios.SCENARIOS)
    items = []
    for i in range(n):
        name = names[i % len(names)]
        items.append((name, None, i // len(names), None, None))
    with tempfile.TemporaryDirectory() as out:
        t0 = time.perf_counter()
        summary, _ = batch.run_batch(items, out, jobs)
        return time.perf_counter() - t0, summary


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--batch", type=int, default=1000, help="cycles in the mixed batch (0 skips it)")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    bare, full, rtf = [], [], []
    for _ in range(5):
        b, f = loop_vs_bare()
        bare.append(b)
        full.append(f)
        rtf.append(cycle_rtf()[0])
    ratios = sorted(f / b for b, f in zip(bare, full))
    print("bare mj_step (same trajectory): %.1f x real time (median of 5: %s)"
          % (statistics.median(bare), ", ".join("%.1f" % v for v in bare)))
    print("machine+sensors in the loop:    %.1f x real time (median of 5: %s)"
          % (statistics.median(full), ", ".join("%.1f" % v for v in full)))
    print("ratio (target >= 0.8):          %.2f (median of the 5 per-run ratios)" % ratios[2])
    print("one nominal cycle:              %.1f x real time (median of 5)" % statistics.median(rtf))
    if a.batch:
        wall, s = mixed_batch(a.batch, a.jobs)
        print("mixed batch: %d cycles, --jobs %d: %.1f s wall (target < 120 s); false successes %d, agreement %s"
              % (s["count"], a.jobs, wall, s["false_success"], s["agreement"]))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
