# Simulator speed, measured in one run on this machine (medians of 5 where repeated):
#   1. bare mj_step rate of the model (part resting on the pad), as simulated seconds per wall second
#   2. the same with the shared machine, motion planner and sensor models in the loop (500 Hz)
#      -> ratio to 1 (target >= 0.8)
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

from surepick.shared_fsm.config import Config
from surepick.sim import batch, runner, scenarios
from surepick.sim.plant import Plant
from surepick.sim.sim_board import SimBoard

SIM_MS = 4000


def bare_rate():
    plant = Plant(part="cube25", seed=1)
    m, d = plant.m, plant.d
    n = int(SIM_MS / 1000.0 / m.opt.timestep)
    t0 = time.perf_counter()
    mujoco.mj_step(m, d, n)
    return SIM_MS / 1000.0 / (time.perf_counter() - t0)


def loop_rate():
    # The nominal job's first SIM_MS: approach, descend, grasp and verify all happen in it.
    sc = scenarios.get("nominal")
    run = runner.CycleRun(sc, sc.resolve({}), 1, 0)
    b = run.board
    s = sc.setup(sc.resolve({}), scenarios.rng_for(1, 0))
    pick = scenarios.pick_pose_mm(s["part"], s["part_width_mm"])
    place = scenarios.place_pose_mm(s["part"])
    from surepick.shared_fsm.machine import Job
    b.machine.start_job(Job(runner._um(pick), runner._um(place), 25000))
    ticks = SIM_MS // b.period
    t0 = time.perf_counter()
    for _ in range(ticks):
        b.tick()
    return SIM_MS / 1000.0 / (time.perf_counter() - t0)


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
    for _ in range(5):  # interleaved, so machine noise hits both alike
        bare.append(bare_rate())
        full.append(loop_rate())
        rtf.append(cycle_rtf()[0])
    mb, mf = statistics.median(bare), statistics.median(full)
    print("bare mj_step:                 %.1f x real time (median of 5: %s)" % (mb, ", ".join("%.1f" % v for v in bare)))
    print("machine+sensors in the loop:  %.1f x real time (median of 5: %s)" % (mf, ", ".join("%.1f" % v for v in full)))
    print("ratio (target >= 0.8):        %.2f" % (mf / mb))
    print("one nominal cycle:            %.1f x real time (median of 5)" % statistics.median(rtf))
    if a.batch:
        wall, s = mixed_batch(a.batch, a.jobs)
        print("mixed batch: %d cycles, --jobs %d: %.1f s wall (target < 120 s); false successes %d, agreement %s"
              % (s["count"], a.jobs, wall, s["false_success"], s["agreement"]))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
