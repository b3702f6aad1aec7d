# Time inside MuJoCo's mj_step, for the benchmarks that set bare physics apart from the loop around
# it (physics_cost.py, physics_options.py, sim_bench.py). The plant calls mujoco.mj_step through the
# module (sim/plant.py, sim/fast_world.py), so swapping the module's function times every step.
# Not a benchmark itself: imported from its folder (a script's own folder is first on sys.path).
import contextlib
import time

import mujoco


def timed_step(step, clock, spent):
    # step(m, d, n) wrapped: each call's time on clock added to spent[0]
    def timed(m, d, n=1):
        t = clock()
        step(m, d, n)
        spent[0] += clock() - t
    return timed


@contextlib.contextmanager
def measured(clock=time.thread_time_ns):
    """While the block runs, every mujoco.mj_step call is timed on clock (by default this
    thread's CPU time in ns: other threads and processes do not count). Yields [the sum so far];
    the real mj_step is put back on leaving."""
    spent = [0]
    real = mujoco.mj_step
    mujoco.mj_step = timed_step(real, clock, spent)
    try:
        yield spent
    finally:
        mujoco.mj_step = real
