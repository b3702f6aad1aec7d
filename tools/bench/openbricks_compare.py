# surepick's simulator against openbricks' (PyPI `openbricks[sim]`: a MuJoCo differential-drive
# chassis whose motor and drivebase controllers run in the loop, one control tick per 1 ms
# physics step), in one run, rounds alternating so load and drift hit both alike. CPU time
# (each process's own thread clock), so other work on the machine weighs less.
#   .venv/bin/python tools/bench/openbricks_compare.py [--rounds 10] [--venv DIR] [--against CHECKOUT] [--tiny]
# openbricks is installed by pip into its own venv (default ~/.cache/surepick-bench/openbricks,
# made on first use; nothing of it enters this repository). Per round and side:
#   in the loop: simulated seconds per CPU second of the whole loop (surepick: one nominal
#     cycle as a batch runs it from the job's start, firmware controller at its default
#     period; openbricks: its
#     default chassis driving a 1 m straight then turning on the spot, drivebase and motor
#     controllers ticking every step);
#   bare: the same run's simulated seconds per CPU second spent inside mj_step (a second run
#     with mj_step timed, so the timer never weighs on the loop figure).
# Each surepick side runs in its own process, in its tree with its tree's .venv. --against: another
# checkout (with its own .venv) run in the same rounds, so a change is measured against the
# same openbricks rounds. Prints medians per side and the medians of the per-round ratios.
# --tiny (for the tests): one short round of surepick's side only, openbricks not installed.
import argparse
import json
import os
import statistics
import subprocess
import sys
import venv

OPENBRICKS = "openbricks[sim]==4.36.0"
SIM_S = 10.0

# Run inside openbricks' venv: its default chassis on the empty floor, driving.
_OB_SIDE = r'''
import json, sys, time
import mujoco
from openbricks_sim.robot import SimRobot
sim_s = float(sys.argv[1])
clock = time.thread_time

def drive(timed):
    r = SimRobot()
    real = mujoco.mj_step
    spent = [0.0]
    if timed:
        def step(m, d, *a):
            t = clock(); real(m, d, *a); spent[0] += clock() - t
        mujoco.mj_step = step
    try:
        r.drivebase.straight(1000, 250)
        t0 = clock()
        r.run_for(sim_s / 2)
        r.drivebase.turn(360, 180)
        r.run_for(sim_s / 2)
        total = clock() - t0
    finally:
        mujoco.mj_step = real
    return total, spent[0], r.runtime.now_ms

loop, _, ms = drive(False)
_, bare, _ = drive(True)
print(json.dumps({"loop_rtf": ms / 1000.0 / loop, "bare_rtf": ms / 1000.0 / bare, "sim_s": ms / 1000.0,
                  "mujoco": mujoco.__version__}))
'''


# Run with a surepick tree's own python, in that tree: one nominal cycle's loop from the job's
# start (the board built, booted and calibrated before, as openbricks' robot is built before its
# clock starts), then the same cycle with mj_step timed.
_SP_SIDE = r'''
import json, sys, time
import mujoco
from surepick.host.engines import inproc
clock = time.thread_time
name, seed = ("part_missing", 1000) if sys.argv[1] == "tiny" else ("nominal", 1000)

def cycle():
    run = inproc.InprocCycle(name, None, seed, 0, sample_ms=inproc.BATCH_SAMPLE_MS)
    start_ms = run.plant.now_ms
    t0 = clock()
    rec = run.run(record_trajectory=False)
    return clock() - t0, (rec["sim_ms"] - start_ms) / 1000.0
loop, s = cycle()
real = mujoco.mj_step
spent = [0.0]

def step(m, d, *a):
    t = clock(); real(m, d, *a); spent[0] += clock() - t
mujoco.mj_step = step
try:
    cycle()
finally:
    mujoco.mj_step = real
print(json.dumps({"loop_rtf": s / loop, "bare_rtf": s / spent[0], "sim_s": s, "mujoco": mujoco.__version__}))
'''


def surepick_round(tree, tiny=False):
    py = os.path.join(tree, ".venv", "bin", "python")
    out = subprocess.run([py, "-c", _SP_SIDE, "tiny" if tiny else "full"], cwd=tree, capture_output=True,
                         text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def openbricks_python(where):
    py = os.path.join(where, "bin", "python")
    if not os.path.exists(py):
        print("installing %s into %s (pip, once)" % (OPENBRICKS, where), flush=True)
        venv.create(where, with_pip=True)
    probe = subprocess.run([py, "-c", "import openbricks_sim"], capture_output=True)
    if probe.returncode != 0:
        r = subprocess.run([py, "-m", "pip", "install", "-q", OPENBRICKS], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit("openbricks_compare: could not install %s into %s: %s" % (OPENBRICKS, where,
                                                                              (r.stderr.strip().splitlines() or ["?"])[-1]))
    return py


def openbricks_round(py):
    out = subprocess.run([py, "-c", _OB_SIDE, str(SIM_S)], capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def _line(side, rows):
    loop = statistics.median(r["loop_rtf"] for r in rows)
    bare = statistics.median(r["bare_rtf"] for r in rows)
    print("%-10s in the loop %6.1fx real time, bare mj_step %6.1fx, loop/bare %.2f (MuJoCo %s, %.1f simulated s "
          "per round, medians of %d)" % (side, loop, bare, loop / bare, rows[0]["mujoco"], rows[0]["sim_s"], len(rows)))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--venv", default=os.path.join(os.path.expanduser("~"), ".cache", "surepick-bench", "openbricks"),
                    help="where openbricks' own venv is (made and installed on first use)")
    ap.add_argument("--against", help="another surepick checkout (with its own .venv) run in the same rounds")
    ap.add_argument("--tiny", action="store_true", help="one short round of surepick's side (for the tests)")
    a = ap.parse_args()
    from surepick.host.source_tree import CHECKOUT
    here = str(CHECKOUT)
    print("load average at start: %.2f %.2f %.2f" % os.getloadavg(), flush=True)
    if a.tiny:
        _line("surepick", [surepick_round(here, tiny=True)])
        print("openbricks: not run with --tiny")
        return
    py = openbricks_python(a.venv)
    ours, others, theirs = [], [], []
    for _ in range(a.rounds):
        ours.append(surepick_round(here))
        if a.against:
            others.append(surepick_round(os.path.abspath(a.against)))
        theirs.append(openbricks_round(py))
    _line("surepick", ours)
    if a.against:
        _line("other", others)
    _line("openbricks", theirs)
    loop = statistics.median(o["loop_rtf"] / t["loop_rtf"] for o, t in zip(ours, theirs))
    bare = statistics.median(o["bare_rtf"] / t["bare_rtf"] for o, t in zip(ours, theirs))
    print("surepick / openbricks (median of per-round ratios): in the loop %.2f, bare mj_step %.2f" % (loop, bare))
    if a.against:
        loop = statistics.median(o["loop_rtf"] / t["loop_rtf"] for o, t in zip(others, theirs))
        bare = statistics.median(o["bare_rtf"] / t["bare_rtf"] for o, t in zip(others, theirs))
        print("other / openbricks (median of per-round ratios): in the loop %.2f, bare mj_step %.2f" % (loop, bare))
        loop = statistics.median(o["loop_rtf"] / t["loop_rtf"] for o, t in zip(ours, others))
        print("surepick / other (median of per-round ratios): in the loop %.2f" % loop)
    print("load average at end: %.2f %.2f %.2f" % os.getloadavg())


if __name__ == "__main__":
    main()
