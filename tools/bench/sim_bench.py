# Simulator speed, measured in one run on this machine (medians of 5 where repeated):
#   1. bare mj_step rate on a nominal job's trajectory (time spent inside mj_step), as simulated
#      seconds per wall second
#   2. the same run through the whole loop: shared machine, motion planner, sensor models, servo
#      models at the loop's rate (loop_period_ms) -> ratio to 1 (target >= 0.8); per loop tick, the time inside mj_step and
#      the time outside it (everything else, including the timing wrapper's own cost, shown)
#   3. real-time factor of one whole nominal cycle (including ground-truth sampling)
#   4. wall time of a mixed batch (every scenario, round robin) with --jobs 2 (target: 1,000
#      cycles under 2 minutes); pass --batch N to choose N (0 skips it)
#   5. with --breakdown: each phase of a loop tick timed on its own
#   .venv/bin/python tools/bench/sim_bench.py [--batch 1000] [--breakdown] [--tiny]
#   (--tiny, for the tests: one run of each part over 400 ms of the job, the breakdown included,
#   one cycle, a batch of 2)
import argparse
import statistics
import sys
import tempfile
import time

import mujoco

import mj_step_timer
from surepick.host.engines import batch
from surepick.host.engines import inproc as runner
from surepick.shared_fsm.config import Config
from surepick.sim import scenarios

SIM_MS = 4000


def nominal_job_board():
    # A nominal cycle's simulated board with its job started (the run record's tick row
    # recorded, as in `sim run`).
    from surepick.shared_fsm.machine import Job
    sc = scenarios.get("nominal")
    run = runner.InprocCycle(sc, sc.resolve({}), 1, 0)
    b = run.board
    pick, place, width = run.world.job_um()
    b.ctl.start_job(Job(pick, place, width))
    return run, b


def loop_vs_bare():
    # One nominal job's first SIM_MS (approach, descend, grasp, verify, lift), run through the
    # full loop. mj_step is timed inside the same run, so "bare" is the physics of the very
    # same trajectory (contacts and all) and the ratio is free of scene differences.
    _, b = nominal_job_board()
    clock = time.perf_counter
    with mj_step_timer.measured(clock) as spent:
        ticks = SIM_MS // b.period
        t0 = clock()
        for _ in range(ticks):
            b.step()
        total = clock() - t0
    sim_s = SIM_MS / 1000.0
    return sim_s / spent[0], sim_s / total, spent[0] / ticks, (total - spent[0]) / ticks


def wrapper_cost(n=20000):
    # What mj_step_timer's wrapper adds outside the interval it measures (the call, the clock reads,
    # the sum), per call: it lands on the loop side of the ratio. The same wrapper, around a no-op.
    spent = [0.0]
    clock = time.perf_counter

    def noop(m, d, n=1):
        pass
    timed = mj_step_timer.timed_step(noop, clock, spent)
    best = None
    for _ in range(5):
        spent[0] = 0.0
        t0 = clock()
        for _ in range(n):
            timed(None, None, 2)
        with_wrapper = clock() - t0
        t0 = clock()
        for _ in range(n):
            noop(None, None, 2)
        bare = clock() - t0
        cost = (with_wrapper - bare - spent[0]) / n
        best = cost if best is None or cost < best else best
    return best


def breakdown():
    # Where a tick's time goes: the same run, each phase of the simulated board's step wrapped
    # with a timer (the wrappers add their own small cost, so the parts add up to a little more
    # than the plain loop). -> {phase: median us per tick}
    from surepick.firmware import controller
    run, b = nominal_job_board()
    ctl, plant, world = b.ctl, run.plant, run.world
    m = ctl.m
    clock = time.perf_counter
    cur = {}

    def timed(name, fn):
        def call(*a):
            t = clock()
            r = fn(*a)
            cur[name] = cur.get(name, 0.0) + clock() - t
            return r
        return call
    machine_step = type(m).step
    real_step, real_drive = mujoco.mj_step, controller.drive_servos
    ctl.read_inputs = timed("firmware sensor drivers", ctl.read_inputs)
    type(m).step = timed("machine step", machine_step)
    run._watch_steps(ctl)                        # the run record's row, around the timed step
    m.step = timed("machine step + run-record row", m.step)
    ctl.motion.tick = timed("motion planner", ctl.motion.tick)
    controller.drive_servos = timed("firmware servo slews", real_drive)
    plant.advance = timed("plant advance incl. mj_step", plant.advance)
    world.read_inputs = timed("plant sensor models (6 inputs)", world.read_inputs)
    mujoco.mj_step = timed("mj_step", real_step)
    rows = {}
    try:
        for _ in range(SIM_MS // b.period):
            cur.clear()
            t = clock()
            b.step()
            cur["whole tick"] = clock() - t
            for k, v in cur.items():
                rows.setdefault(k, []).append(v)
    finally:
        mujoco.mj_step, controller.drive_servos, type(m).step = real_step, real_drive, machine_step
    out = {k: statistics.median(v) * 1e6 for k, v in rows.items()}
    out["run-record row"] = out.pop("machine step + run-record row") - out["machine step"]
    out["plant servo models and glue"] = out.pop("plant advance incl. mj_step") - out["mj_step"]
    return out


def cycle_rtf():
    rec, _, _ = runner.run_cycle("nominal", seed=3, record_trajectory=False)
    return rec["sim_ms"] / 1000.0 / rec["wall_s"], rec["sim_ms"], rec["wall_s"]


def mixed_batch(n, jobs):
    names = sorted(scenarios.SCENARIOS)
    items = []
    for i in range(n):
        name = names[i % len(names)]
        items.append((name, None, i // len(names), None, None, None))
    with tempfile.TemporaryDirectory() as out:
        t0 = time.perf_counter()
        summary, _ = batch.run_batch(items, out, jobs)
        return time.perf_counter() - t0, summary


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--batch", type=int, default=1000, help="cycles in the mixed batch (0 skips it)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--breakdown", action="store_true",
                    help="also time each phase of a loop tick (medians over ticks, then over 5 runs)")
    ap.add_argument("--tiny", action="store_true", help="a few iterations of everything (for the tests)")
    a = ap.parse_args()
    global SIM_MS
    runs_n = 5
    if a.tiny:
        SIM_MS, runs_n, a.breakdown, a.batch = 400, 1, True, 2
    bare, full, rtf, phys_us, rest_us = [], [], [], [], []
    for _ in range(runs_n):
        b, f, p, r = loop_vs_bare()
        bare.append(b)
        full.append(f)
        phys_us.append(p * 1e6)
        rest_us.append(r * 1e6)
        rtf.append(cycle_rtf()[0])
    ratios = sorted(f / b for b, f in zip(bare, full))
    print("bare mj_step (same trajectory): %.1f x real time (median of %d: %s)"
          % (statistics.median(bare), runs_n, ", ".join("%.1f" % v for v in bare)))
    print("machine+sensors in the loop:    %.1f x real time (median of %d: %s)"
          % (statistics.median(full), runs_n, ", ".join("%.1f" % v for v in full)))
    print("ratio (target >= 0.8):          %.2f (median of the %d per-run ratios)" % (statistics.median(ratios), runs_n))
    print("per %d ms loop tick:             %.1f us in mj_step, %.1f us outside it (medians; the latter"
          " includes ~%.2f us per mj_step call for the timing wrapper itself)"
          % (Config().loop_period_ms, statistics.median(phys_us), statistics.median(rest_us), wrapper_cost() * 1e6))
    print("one nominal cycle:              %.1f x real time (median of %d)" % (statistics.median(rtf), runs_n))
    if a.breakdown:
        runs = [breakdown() for _ in range(runs_n)]
        print("per tick, median us (each phase timed by a wrapper):")
        for k in runs[0]:
            v = statistics.median(r[k] for r in runs)
            print("  %-32s %6.2f us" % (k, v))
    if a.batch:
        wall, s = mixed_batch(a.batch, a.jobs)
        print("mixed batch: %d cycles, --jobs %d: %.1f s wall (target < 120 s); false successes %d, agreement %s"
              % (s["count"], a.jobs, wall, s["false_success"], s["agreement"]))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
