# `sim run`'s work on the in-process simulator (engines/inproc.py): K cycles of one scenario,
# seeded (seed, cycle), with what the report needs to be written (records/report.py).
from surepick.host.engines import inproc
from surepick.sim import scenarios


def run_meta(scenario, seed=0, cycles=1, overrides=None, plant_params=None, cfg_overrides=None):
    # -> the report's metadata for a run (before any cycle: the model hash comes with the first).
    # Unknown scenario or bad parameters: ValueError.
    sc = scenarios.get(scenario)
    values = sc.resolve(overrides)
    return {"scenario": sc.name, "params": values, "seed": seed, "cycles_requested": cycles,
            "model_hash": None, "config_overrides": cfg_overrides or {}, "plant_params": plant_params}


def run_cycles(scenario, seed=0, cycles=1, overrides=None, plant_params=None, cfg_overrides=None,
               viewer=False, on_cycle=None, first=0, job=None, arm=None):
    # -> (meta, cycle records, trajectories) of cycles first..cycles-1. on_cycle(record,
    # trajectory, run) is called as each cycle finishes, before the next starts: a caller that
    # writes it there loses nothing to a Ctrl-C. Cycle k is seeded (seed, k) whatever `first`
    # is, so a resumed run gives the cycles an uninterrupted run would have. job: (pick, place,
    # width_um, max_attempts or None) instead of the scenario's (inproc.InprocCycle).
    if cycles < 1:
        raise ValueError("cycles must be at least 1")
    meta = run_meta(scenario, seed, cycles, overrides, plant_params, cfg_overrides)
    sc = scenarios.get(scenario)
    values = meta["params"]
    recs, trajectories = [], []
    for k in range(first, cycles):
        run = inproc.InprocCycle(sc, values, seed, k, plant_params, cfg_overrides, job=job, arm=arm)
        if viewer:
            run.viewer = "passive"
        rec = run.run(record_trajectory=True)
        rec["scenario"] = sc.name
        meta["model_hash"] = meta["model_hash"] or run.plant.model_hash()
        recs.append(rec)
        trajectories.append(run.trajectory)
        if on_cycle is not None:
            on_cycle(rec, run.trajectory, run)
    return meta, recs, trajectories
