# Step-rate benchmark of the plant: bare mujoco.mj_step against the plant's full loop (servo
# models, switch sampling, and the six sensor reads a 500 Hz sim HAL makes every 2 ms), both
# from the same squeezing-a-cube state. Medians of 5; the ratio comes from the same run.
#   .venv/bin/python tools/bench/plant_step.py [--steps N] [--tiny]
# (--tiny: 200 steps, for the tests)
import argparse
import json
import statistics
import sys
import time

import mujoco
import numpy as np

from surepick.shared_fsm import kinematics
from surepick.shared_fsm import servo_cal
from surepick.sim.params import PlantParams
from surepick.sim.plant import SOURCE_TOP_Z_MM, SOURCE_XY_MM, Plant


def squeezing_plant():
    # Start the arm at the grasp pose with the jaw open, then close on the cube: no scripting
    # needed, and the state is the most contact-heavy one a pick goes through.
    z = SOURCE_TOP_Z_MM + 15.0
    q = kinematics.inverse(SOURCE_XY_MM[0], SOURCE_XY_MM[1], z, -90.0)
    params = PlantParams(home_deg=tuple(q), home_jaw_mm=40.0)
    plant = Plant(part="cube25_heavy", params=params, seed=1)
    plant.advance(300)
    pulses = list(plant.servos.pulses)
    jaw_mdeg = servo_cal.joint_to_servo_mdeg(servo_cal.GRIPPER, 19000)
    pulses[4] = servo_cal.pulse_us(servo_cal.DEFAULT_CAL, jaw_mdeg)
    plant.set_pulses(pulses)
    plant.advance(1000)
    return plant, pulses


def snapshot(m, d):
    # Every timed run starts from the same physics state.
    spec = mujoco.mjtState.mjSTATE_INTEGRATION
    buf = np.zeros(mujoco.mj_stateSize(m, spec))
    mujoco.mj_getState(m, d, buf, spec)
    return lambda: mujoco.mj_setState(m, d, buf, spec)


def run(steps):
    plant, pulses = squeezing_plant()
    assert plant.truth()["finger_contact"], "benchmark state should be squeezing the cube"
    m, d = plant.m, plant.d
    restore = snapshot(m, d)
    step = mujoco.mj_step

    def bare_loop():
        for _ in range(steps):
            step(m, d)

    def bare_nstep():
        step(m, d, steps)

    def advance_only():
        for _ in range(steps // 2):
            plant.advance(2)

    def full_loop():
        adv, ru, rp, sp = plant.advance, plant.read_u16, plant.read_pin, plant.set_pulses
        for _ in range(steps // 2):
            sp(pulses)
            adv(2)
            ru(0)
            ru(1)
            ru(2)
            rp(13)
            rp(14)
            rp(15)

    cases = {"bare_mj_step_loop": bare_loop, "bare_mj_step_nstep": bare_nstep,
             "plant_advance_2ms": advance_only, "plant_full_loop": full_loop}
    rates = {k: [] for k in cases}
    for _ in range(5):
        for name, fn in cases.items():  # interleaved so drift hits every case alike
            restore()
            t0 = time.perf_counter()
            fn()
            rates[name].append(steps / (time.perf_counter() - t0))
    med = {k: statistics.median(v) for k, v in rates.items()}
    out = {"steps": steps, "timestep_ms": m.opt.timestep * 1000.0, "median_steps_per_s": med,
           "ratio_full_vs_bare_loop": med["plant_full_loop"] / med["bare_mj_step_loop"],
           "ratio_full_vs_bare_nstep": med["plant_full_loop"] / med["bare_mj_step_nstep"],
           "ratio_advance_vs_bare_nstep": med["plant_advance_2ms"] / med["bare_mj_step_nstep"],
           "realtime_factor_full": med["plant_full_loop"] * m.opt.timestep,
           "mujoco": mujoco.__version__}
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=20000)
    ap.add_argument("--tiny", action="store_true", help="200 steps (for the tests)")
    args = ap.parse_args(argv)
    if args.tiny:
        args.steps = 200
    out = run(args.steps)
    for k, v in out["median_steps_per_s"].items():
        print("%-22s %10.0f steps/s" % (k, v))
    for k in ("ratio_full_vs_bare_loop", "ratio_full_vs_bare_nstep", "ratio_advance_vs_bare_nstep",
              "realtime_factor_full"):
        print("%-28s %.3f" % (k, out[k]))
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
