# `sim run`'s work on the in-process simulator (engines/inproc.py): K cycles of one scenario,
# seeded (seed, cycle), with what the report needs to be written (records/report.py).
from surepick.engines import inproc
from surepick.sim import scenarios


def run_cycles(scenario, seed=0, cycles=1, overrides=None, plant_params=None, cfg_overrides=None,
               viewer=False, on_cycle=None, job=None):
    # -> (meta, cycle records, trajectories). Unknown scenario or bad parameters: ValueError
    # before any cycle runs. on_cycle(record) is called as each cycle finishes. job: (pick, place,
    # width_um, max_attempts or None) instead of the scenario's (inproc.CycleRun).
    if cycles < 1:
        raise ValueError("cycles must be at least 1")
    sc = scenarios.get(scenario)
    values = sc.resolve(overrides)
    recs, trajectories = [], []
    model_hash = None
    for k in range(cycles):
        run = inproc.CycleRun(sc, values, seed, k, plant_params, cfg_overrides, job=job)
        if viewer:
            run.viewer = "passive"
        rec = run.run(record_trajectory=True)
        rec["scenario"] = sc.name
        model_hash = model_hash or run.plant.model_hash()
        recs.append(rec)
        trajectories.append(run.trajectory)
        if on_cycle is not None:
            on_cycle(rec)
    meta = {"scenario": sc.name, "params": values, "seed": seed, "cycles_requested": cycles,
            "model_hash": model_hash, "config_overrides": cfg_overrides or {}, "plant_params": plant_params}
    return meta, recs, trajectories
