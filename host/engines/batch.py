# Many seeded cycles over worker processes. Each finished cycle is appended to cycles.jsonl at
# once, so Ctrl-C (or a crash) keeps every finished result; summary.json is written at the end
# (or on interrupt) from whatever finished. batch.json names the plan (parameters, config,
# plant): resume() continues an interrupted batch in the same directory with the seeds that are
# not in cycles.jsonl yet, appending, never rewriting what is there.
import json
import os
import signal
import time
from concurrent.futures import ProcessPoolExecutor, as_completed

from surepick.host import worker_limits
from surepick.sim import scenarios
from surepick.host.engines.summary import summarise, versions
from surepick.host.user_error import BadInput


def _start_worker():
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides what an interrupt means
    worker_limits.bound_this_process()


def _one(item):
    # One cycle in a worker, within its bounds (host/worker_limits.py).
    return worker_limits.bounded_task(_cycle, item)


def _cycle(item):
    name, overrides, seed, cfg_overrides, plant_params, arm_description = item
    from surepick.host.engines.inproc import run_cycle
    arm = None
    if arm_description is not None:
        from surepick.shared_fsm.arm import validate
        arm = validate(arm_description)
    rec, _, _ = run_cycle(name, overrides, seed=seed, cycle=0, plant_params=plant_params,
                          cfg_overrides=cfg_overrides, record_trajectory=False, arm=arm)
    rec["scenario"] = name
    rec["overrides"] = overrides
    return rec


def plan(names, count, seed, overrides=None, cfg_overrides=None, plant_params=None, arm=None):
    # -> items (scenario, overrides, seed, config overrides, plant params, arm description dict
    # or None for the reference arm)
    arm_description = arm.to_dict() if arm is not None else None
    items = []
    for name in names:
        sc = scenarios.get(name)
        sc.resolve(overrides if len(names) == 1 else None)  # validate before any work starts
        for i in range(count):
            items.append((name, overrides if len(names) == 1 else None, seed + i, cfg_overrides, plant_params,
                          arm_description))
    return items


PLAN_JSON = "batch.json"
CYCLES_JSONL = "cycles.jsonl"


class ResumeError(BadInput, ValueError):
    """The directory holds a batch that is not this one (another plan), or cannot be read."""


def _identity(items):
    # What must be equal for two batches to share a cycles.jsonl: per scenario, its parameters,
    # the config overrides and the plant.
    out = {}
    for name, overrides, seed, cfg, plant, arm in items:
        out[name] = {"params": overrides or {}, "config": cfg or {}, "plant": plant or {}}
        if arm is not None:
            out[name]["arm"] = arm
    return out


def resume(items, out_dir):
    # -> the records already in out_dir/cycles.jsonl that belong to `items` (by scenario and
    # seed). A half-written last line (a crash) is cut off. ResumeError for another plan.
    plan_path = os.path.join(out_dir, PLAN_JSON)
    jsonl = os.path.join(out_dir, CYCLES_JSONL)
    want = _identity(items)
    try:
        with open(plan_path) as f:
            have = json.load(f)["scenarios"]
        if not isinstance(have, dict):
            raise TypeError("its scenarios are not a table")
    except FileNotFoundError:
        have = None
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ResumeError("%s is unreadable (%s): cannot resume; use --force" % (plan_path, e)) from None
    if have is None and os.path.exists(jsonl):
        raise ResumeError("%s has no %s (written by an older surepick): cannot tell which plan its cycles "
                          "belong to; use --force or another --out" % (out_dir, PLAN_JSON))
    for name, ident in want.items():
        if have is not None and name in have and have[name] != ident:
            raise ResumeError("%s holds another batch of %s (its parameters, config or plant differ: %s); use "
                              "--force or another --out" % (out_dir, name, json.dumps(have[name], sort_keys=True)[:120]))
    if not os.path.exists(jsonl):
        return []
    with open(jsonl, "rb") as f:
        data = f.read()
    good = data[:data.rfind(b"\n") + 1]
    if len(good) != len(data):
        os.truncate(jsonl, len(good))        # a cycle cut short mid-line: drop the fragment, in one
                                             # call (a rewrite killed midway lost every cycle)
    wanted = {(it[0], it[2]) for it in items}
    done, seen = [], set()
    for n, line in enumerate(good.decode("utf-8", "replace").splitlines(), 1):
        try:
            rec = json.loads(line)
            _check_resumed(rec)
        except (ValueError, KeyError, TypeError):
            raise ResumeError("%s line %d is not a cycle record: cannot resume; use --force" % (jsonl, n)) from None
        key = (rec["scenario"], rec["seed"])
        if key in wanted and key not in seen:
            seen.add(key)
            done.append(rec)
    return done


# What the summary reads of each cycle record a resumed batch keeps, with its JSON type: a
# record without them would end the batch in a traceback after its new cycles had run.
_RESUMED_FIELDS = {"scenario": str, "seed": int, "fsm_outcome": str, "judge_outcome": str,
                   "fsm_fault": (str, type(None)), "agree": bool, "false_success": bool,
                   "false_failure": bool, "expected": bool}


def _check_resumed(rec):
    # TypeError (or KeyError) unless `rec` is a cycle record a batch wrote.
    if not isinstance(rec, dict):
        raise TypeError("not an object")
    for field, kind in _RESUMED_FIELDS.items():
        if not isinstance(rec[field], kind) or (kind is int and isinstance(rec[field], bool)):
            raise TypeError(field)


def _write_plan(out_dir, items, resuming):
    plan_path = os.path.join(out_dir, PLAN_JSON)
    have = {}
    if resuming and os.path.exists(plan_path):
        with open(plan_path) as f:
            have = json.load(f)["scenarios"]
    have.update(_identity(items))
    tmp = plan_path + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"scenarios": have}, f, indent=1, sort_keys=True)
    os.replace(tmp, plan_path)


def run_batch(items, out_dir, jobs=2, progress=None, done=()):
    # progress(done, total, record) is called after each finished cycle. done: records of items
    # finished before (resume()): those items are not run again, new ones are appended.
    os.makedirs(out_dir, exist_ok=True)
    jsonl = os.path.join(out_dir, CYCLES_JSONL)
    results = list(done)
    finished = {(r["scenario"], r["seed"]) for r in results}
    todo = [it for it in items if (it[0], it[2]) not in finished]
    _write_plan(out_dir, items, bool(done) or os.path.exists(jsonl))
    interrupted = False
    t0 = time.perf_counter()
    with open(jsonl, "a" if done else "w") as log:
        pool = ProcessPoolExecutor(max_workers=jobs, initializer=_start_worker)
        try:
            futures = {pool.submit(_one, it): it for it in todo}
            for fut in as_completed(futures):
                try:
                    rec = fut.result()
                except worker_limits.BoundExceeded as e:
                    it = futures[fut]
                    raise worker_limits.BoundExceeded(
                        "scenario %s seed %d stopped: %s; the %d cycles finished are in %s, --resume continues"
                        % (it[0], it[2], e, len(results), jsonl)) from None
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
        m["verified_placed"] = s["verified_placed"]
        m["false_success"] = s["false_success"]
        m["false_failure"] = s["false_failure"]
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


def scenario_table(summary):
    # -> the lines of the per-scenario table a batch ends with.
    rows = [("scenario", "runs", "placed", "false successes", "false failures", "faults")]
    for name, m in summary["per_scenario"].items():
        faults = ", ".join("%s %d" % kv for kv in m["faults"].items()) or "-"
        rows.append((name, str(m["count"]), str(m["verified_placed"]), str(m["false_success"]),
                     str(m["false_failure"]), faults))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    out = []
    for k, r in enumerate(rows):
        out.append("  ".join(r[i].ljust(widths[i]) if i == 0 else r[i].rjust(widths[i]) for i in range(5))
                   + "  " + r[5])
        if k == 0:
            out.append("-" * (sum(widths) + 2 * 5 + 6))
    return out
