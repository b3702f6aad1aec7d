# What MuJoCo's options would save on the scene's own physics, and what each does to a cycle:
# each variant changes the compiled model of every plant (after the plant has built it) and runs
# the same cycles as a batch runs them; per variant, CPU time inside mj_step per simulated ms
# (median of the rounds, variants alternating within a round) and each cycle's outcome (the
# machine's and the judge's), so a variant that is cheaper because the arm did something else shows.
#   .venv/bin/python tools/bench/physics_options.py [--rounds 3] [--variants base,pyramidal,...] [--tiny]
# "step4": a 4 ms step with every 0.004 s solref at twice it (the switch sampled once a step);
# a variant that makes the physics diverge is reported as such.
import argparse
import os
import statistics

import mujoco
import numpy as np

import mj_step_timer

CYCLES = (("nominal", 1000), ("nominal", 1001), ("part_offset", 1000), ("servo_stall", 1000))
TINY = (("part_missing", 1000),)


def _opt(field, value):
    return lambda m: setattr(m.opt, field, value)


def _flag(field, bit):
    return lambda m: setattr(m.opt, field, getattr(m.opt, field) | bit)


def _part_only(m, names):
    # the named fixtures collide with the part only (contype/conaffinity bit 2)
    for n in names:
        g = m.geom(n).id
        m.geom_contype[g] = m.geom_conaffinity[g] = 2
    if mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, "part") >= 0:
        g = m.geom("part").id
        m.geom_contype[g] = m.geom_conaffinity[g] = 3


def _step4(m):
    m.opt.timestep = 0.004
    for arr in (m.geom_solref, m.pair_solref, m.jnt_solref, m.dof_solref, m.eq_solref, m.tendon_solref_lim,
                m.tendon_solref_fri):
        sel = np.isclose(arr[:, 0], 0.004)
        arr[sel, 0] = 0.008


VARIANTS = {
    "base": lambda m: None,
    "pyramidal": _opt("cone", mujoco.mjtCone.mjCONE_PYRAMIDAL),
    "impratio1": _opt("impratio", 1.0),
    "dense": _opt("jacobian", mujoco.mjtJacobian.mjJAC_DENSE),
    "sparse": _opt("jacobian", mujoco.mjtJacobian.mjJAC_SPARSE),
    "pgs": _opt("solver", mujoco.mjtSolver.mjSOL_PGS),
    "ls_iter5": _opt("ls_iterations", 5),
    "midphase_on": lambda m: setattr(m.opt, "disableflags",
                                     m.opt.disableflags & ~int(mujoco.mjtDisableBit.mjDSBL_MIDPHASE)),
    "no_sensors": _flag("disableflags", mujoco.mjtDisableBit.mjDSBL_SENSOR),
    "no_islands": _flag("disableflags", mujoco.mjtDisableBit.mjDSBL_ISLAND),
    # MuJoCo's sleeping trees (mjENBL_SLEEP, default sleep_tolerance): a part at rest is not stepped
    "sleep": _flag("enableflags", mujoco.mjtEnableBit.mjENBL_SLEEP),
    "fixtures_part_only": lambda m: _part_only(m, ["table", "bin_floor", "bin_wall_px", "bin_wall_nx",
                                                   "bin_wall_py", "bin_wall_ny"]),
    "step4": _step4,
}


def one(variant, cycles):
    # -> (mj_step CPU us per simulated ms, [outcome per cycle])
    from surepick.host.engines import inproc
    from surepick.sim import fast_world, plant as plant_mod
    change = VARIANTS[variant]
    real_init = plant_mod.Plant.__init__
    real_chunk = plant_mod._CHUNK_MS

    def init(self, *a, **kw):
        real_init(self, *a, **kw)
        change(self.m)
        self._step_ms = int(round(self.m.opt.timestep * 1000.0))
    plant_mod.Plant.__init__ = init
    plant_mod._CHUNK_MS = fast_world._CHUNK_MS = 4 if variant == "step4" else real_chunk
    sim_ms, outcomes = 0, []
    timers = {}
    try:
        with mj_step_timer.measured() as spent:
            for name, seed in cycles:
                try:
                    rec, _, run = inproc.run_cycle(name, seed=seed, record_trajectory=False)
                    _add_timers(timers, run.plant.d)
                except Exception as e:      # a variant whose physics diverges: say so
                    outcomes.append("%s %d: failed (%s)" % (name, seed, str(e).splitlines()[0][:60]))
                    continue
                sim_ms += rec["sim_ms"]
                outcomes.append("%s %d: %s/%s" % (name, seed, rec["fsm_fault"] or rec["fsm_outcome"],
                                                  rec["judge_outcome"]))
    finally:
        plant_mod.Plant.__init__ = real_init
        plant_mod._CHUNK_MS = fast_world._CHUNK_MS = real_chunk
    return (spent[0] / 1000.0 / sim_ms if sim_ms else float("nan")), outcomes, timers


_STAGES = ("POS_KINEMATICS", "POS_COLLISION", "POS_MAKE", "CONSTRAINT", "VELOCITY", "ADVANCE")


def _add_timers(acc, d):
    # MuJoCo's own stage timers (seconds) over one cycle's steps, summed.
    for stage in ("STEP",) + _STAGES:
        t = d.timer[int(getattr(mujoco.mjtTimer, "mjTIMER_" + stage))]
        acc[stage] = acc.get(stage, 0.0) + t.duration


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--tiny", action="store_true", help="one round of one short cycle, two variants (for the tests)")
    a = ap.parse_args()
    names = ["base", "pyramidal"] if a.tiny else a.variants.split(",")
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        raise SystemExit("physics_options: unknown variant(s) %s (known: %s)" % (", ".join(unknown), ", ".join(VARIANTS)))
    cycles = TINY if a.tiny else CYCLES
    rounds = 1 if a.tiny else a.rounds
    print("load average at start: %.2f %.2f %.2f" % os.getloadavg(), flush=True)
    got = {n: [] for n in names}
    base_timers = {}
    outcomes = {}
    for _ in range(rounds):
        for n in names:
            us, out, timers = one(n, cycles)
            got[n].append(us)
            outcomes[n] = out
            if n == "base":
                base_timers = timers
    base = statistics.median(got["base"]) if "base" in got else None
    for n in names:
        us = statistics.median(got[n])
        rel = " (%.2fx base)" % (us / base) if base else ""
        print("%-19s mj_step %6.2f us per simulated ms%s; %s" % (n, us, rel, "; ".join(outcomes[n])))
    if "base" in got and base_timers.get("STEP"):
        print("base, MuJoCo's stage timers (share of mj_step): " + ", ".join(
            "%s %.0f%%" % (st.lower(), 100.0 * base_timers[st] / base_timers["STEP"]) for st in _STAGES))
    print("load average at end: %.2f %.2f %.2f" % os.getloadavg())


if __name__ == "__main__":
    main()
