# Many seeded cycles over worker processes. Each finished cycle is appended to cycles.jsonl at
# once, so Ctrl-C (or a crash) keeps every finished result; summary.json is written at the end
# (or on interrupt) from whatever finished.
import json
import os
import signal
import time
from concurrent.futures import ProcessPoolExecutor, as_completed

from surepick.sim import scenarios
from surepick.engines.summary import summarise, versions


def _ignore_sigint():
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides what an interrupt means


def _one(item):
    name, overrides, seed, cfg_overrides, plant_params = item
    from surepick.engines.inproc import run_cycle
    rec, _, _ = run_cycle(name, overrides, seed=seed, cycle=0, plant_params=plant_params,
                          cfg_overrides=cfg_overrides, record_trajectory=False)
    rec["scenario"] = name
    rec["overrides"] = overrides
    return rec


def plan(names, count, seed, overrides=None, cfg_overrides=None, plant_params=None):
    items = []
    for name in names:
        sc = scenarios.get(name)
        sc.resolve(overrides if len(names) == 1 else None)  # validate before any work starts
        for i in range(count):
            items.append((name, overrides if len(names) == 1 else None, seed + i, cfg_overrides, plant_params))
    return items


def run_batch(items, out_dir, jobs=2, progress=None):
    # progress(done, total, record) is called after each finished cycle.
    os.makedirs(out_dir, exist_ok=True)
    jsonl = os.path.join(out_dir, "cycles.jsonl")
    results = []
    interrupted = False
    t0 = time.perf_counter()
    with open(jsonl, "w") as log:
        pool = ProcessPoolExecutor(max_workers=jobs, initializer=_ignore_sigint)
        try:
            futures = [pool.submit(_one, it) for it in items]
            for fut in as_completed(futures):
                rec = fut.result()
                results.append(rec)
                log.write(json.dumps(rec) + "\n")
                log.flush()
                if progress:
                    progress(len(results), len(items), rec)
        except KeyboardInterrupt:
            interrupted = True
            for f in futures:
                f.cancel()
        finally:
            pool.shutdown(wait=not interrupted, cancel_futures=True)
    wall = time.perf_counter() - t0
    summary = build_summary(results, len(items), wall, interrupted)
    tmp = os.path.join(out_dir, "summary.json.tmp")
    with open(tmp, "w") as f:
        json.dump(summary, f, indent=1)
    os.replace(tmp, os.path.join(out_dir, "summary.json"))
    return summary, results


def build_summary(results, planned, wall_s, interrupted=False):
    per = {}
    for r in results:
        per.setdefault(r["scenario"], []).append(r)
    confusion = {}
    for name, recs in sorted(per.items()):
        m = {"fsm_placed_judge_placed": 0, "fsm_placed_judge_not": 0,
             "fsm_not_judge_placed": 0, "fsm_not_judge_not": 0}
        for r in recs:
            f = "fsm_placed" if r["fsm_outcome"] == "placed" else "fsm_not"
            j = "judge_placed" if r["judge_outcome"] == "placed" else "judge_not"
            m["%s_%s" % (f, j)] += 1
        s = summarise(recs)
        m["count"] = len(recs)
        m["expected_outcome"] = sum(1 for r in recs if r["expected"])
        m["faults"] = s["faults"]
        confusion[name] = m
    s = summarise(results)
    return {
        "count": len(results),
        "planned": planned,
        "interrupted": interrupted,
        "fsm_success": s["fsm_placed"],
        "judge_success": s["judge_placed"],
        "false_success": s["false_success"],
        "false_failure": s["false_failure"],
        "agreement": s["agreement"],
        "fault_reasons": s["faults"],
        "per_scenario": confusion,
        "wall_s": round(wall_s, 2),
        "versions": versions(),
    }
