# Runs a sweep's plan (engines/sweep.py) on a backend (engines/sweep_pool.py, engines/sweep_dask.py)
# and keeps its results: DIR/sweep.json is the plan, written before any work; DIR/results.jsonl
# gets each chunk's cycles appended the moment the chunk is back, so Ctrl-C, a crash or a lost
# machine keeps everything that finished, and --resume runs only what is missing. A (cell, seed)
# is recorded once: a chunk the scheduler ran twice cannot count twice.
import json
import os
import time

from surepick.host.engines import sweep

PLAN_FILE = "sweep.json"
RESULTS_FILE = "results.jsonl"


def has_results(out_dir):
    p = os.path.join(out_dir, RESULTS_FILE)
    return os.path.exists(p) and os.path.getsize(p) > 0


def write_plan(out_dir, plan, extra=None):
    # The plan and the code that runs it (a resume must run the same code: engines/sweep.py).
    d = plan.to_dict()
    d["code"] = sweep.code_identity()
    d.update(extra or {})
    tmp = os.path.join(out_dir, PLAN_FILE + ".tmp")
    with open(tmp, "w") as f:
        json.dump(d, f, indent=1)
    os.replace(tmp, os.path.join(out_dir, PLAN_FILE))


MAX_PLAN_BYTES = 1 << 20       # a plan is a few KB: a bigger file is not one
MAX_LINE_BYTES = 1 << 16       # one result is a few hundred bytes


def _load_json(data, what):
    # bytes -> a JSON value, or SweepError saying what is wrong with it (encoding, syntax, nesting)
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise sweep.SweepError("%s is not UTF-8 text" % what) from None
    except RecursionError:
        raise sweep.SweepError("%s nests too deep" % what) from None
    except ValueError as e:
        raise sweep.SweepError("%s is not JSON: %s" % (what, e)) from None


def read_plan(out_dir):
    path = os.path.join(out_dir, PLAN_FILE)
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_PLAN_BYTES + 1)
    except FileNotFoundError:
        raise sweep.SweepError("%s holds no sweep to resume (no %s)" % (out_dir, PLAN_FILE)) from None
    except OSError as e:
        raise sweep.SweepError("cannot read %s: %s" % (path, e)) from None
    if len(data) > MAX_PLAN_BYTES:
        raise sweep.SweepError("%s is larger than %d bytes: not a sweep plan (--force starts over)"
                               % (path, MAX_PLAN_BYTES))
    try:
        return sweep.Plan.from_dict(_load_json(data, path))
    except sweep.SweepError as e:
        raise sweep.SweepError("%s: %s (--force starts over)" % (path, e)) from None


def check_same_code(out_dir):
    """A resume adds cycles to the ones in DIR only when this machine runs the code that made them."""
    try:
        with open(os.path.join(out_dir, PLAN_FILE)) as f:
            then = json.load(f).get("code")
    except (OSError, ValueError) as e:
        raise sweep.SweepError("%s holds no readable sweep plan to resume: %s" % (out_dir, e)) from None
    now = sweep.code_identity()
    if then != now:
        raise sweep.SweepError("the results in %s were made by other code (%s; here %s): their cycles would not be "
                               "comparable with new ones; --force starts over" % (out_dir, then, now))


# what a result line must hold (engines/sweep.py run_job), and the type of each
_RESULT_TYPES = (("cell", int), ("seed", int), ("fsm_outcome", str), ("judge_outcome", str),
                 ("false_success", bool), ("false_failure", bool), ("expected", bool), ("attempts", int))
_COMPARED_OUT = ("worker", "wall_s")     # provenance: two runs of one cycle may differ there


def check_result(r):
    """-> None when r is a result line's object as run_job writes it (types, and its verdicts
    agreeing with its outcomes), else what is wrong, in words."""
    if not isinstance(r, dict):
        return "not a JSON object"
    for k, t in _RESULT_TYPES:
        v = r.get(k)
        if not isinstance(v, t) or (t is int and isinstance(v, bool)):
            return "%r is missing or not a %s" % (k, t.__name__)
    fsm_placed = r["fsm_outcome"] == "placed"
    judge_placed = r["judge_outcome"] == "placed"
    if r["false_success"] != (fsm_placed and not judge_placed) or r["false_failure"] != (judge_placed and not fsm_placed):
        return "its false_success/false_failure contradict its outcomes (fsm %s, judge %s)" % (
            r["fsm_outcome"], r["judge_outcome"])
    return None


def read_results(out_dir, plan):
    """-> {(cell, seed): result} from results.jsonl. A torn last line (the writer was killed
    mid-line) is cut off the file; a bad line before it, a result outside the plan, or two lines
    of one cycle that disagree is an error naming the line."""
    path = os.path.join(out_dir, RESULTS_FILE)
    if not os.path.exists(path):
        return {}
    limit = (len(plan.cells) * plan.seeds + 1) * MAX_LINE_BYTES
    if os.path.getsize(path) > limit:
        raise sweep.SweepError("%s is larger than this plan's results can be (%d bytes): not this sweep's; "
                               "--force starts over" % (path, limit))
    with open(path, "rb") as f:
        data = f.read()
    keep = data[:data.rfind(b"\n") + 1]
    if len(keep) != len(data):
        with open(path, "r+b") as f:
            f.truncate(len(keep))
    out = {}
    first_line = {}
    ncells = len(plan.cells)
    seeds = range(plan.first_seed, plan.first_seed + plan.seeds)
    for n, line in enumerate(keep.split(b"\n")[:-1], 1):
        where = "%s line %d" % (path, n)
        if len(line) > MAX_LINE_BYTES:
            raise sweep.SweepError("%s is longer than %d bytes: not a sweep result" % (where, MAX_LINE_BYTES))
        r = _load_json(line, where)
        why = check_result(r)
        if why:
            raise sweep.SweepError("%s is not a sweep result: %s" % (where, why))
        key = (r["cell"], r["seed"])
        if not (0 <= key[0] < ncells and key[1] in seeds):
            raise sweep.SweepError("%s: cell %s seed %s is not in this sweep's plan" % (where, *key))
        if key in out:
            a = {k: v for k, v in out[key].items() if k not in _COMPARED_OUT}
            b = {k: v for k, v in r.items() if k not in _COMPARED_OUT}
            if a != b:
                raise sweep.SweepError("%s contradicts line %d: cell %s seed %s with another result" % (
                    where, first_line[key], *key))
            continue
        out[key] = r
        first_line[key] = n
    return out


class SweepRun:
    """What run_sweep leaves: results by (cell, seed), counts, wall time, interrupted or not."""

    def __init__(self, results, planned, ran, wall_s, interrupted, backend, code):
        self.results = results
        self.planned = planned
        self.ran = ran
        self.wall_s = wall_s
        self.interrupted = interrupted
        self.backend = backend
        self.code = code


def run_sweep(plan, out_dir, backend, progress=None, resume=False):
    """Runs what is not yet in DIR/results.jsonl (everything, unless resume). progress(state) is
    called with a dict: cycles_done, cycles_total, cells_done, cells_total, ran, elapsed_s."""
    os.makedirs(out_dir, exist_ok=True)
    if resume:
        check_same_code(out_dir)
    results = read_results(out_dir, plan) if resume else {}
    if not resume:
        open(os.path.join(out_dir, RESULTS_FILE), "w").close()
    here = sweep.code_identity()
    chunks = plan.chunks(skip=results)
    left = {}
    for c, s in plan.jobs(skip=results):
        left[c] = left.get(c, 0) + 1
    total = len(plan.cells) * plan.seeds
    state = {"cycles_done": len(results), "cycles_total": total, "cells_done": len(plan.cells) - len(left),
             "cells_total": len(plan.cells), "ran": 0, "elapsed_s": 0.0}
    t0 = time.perf_counter()
    interrupted = False
    with open(os.path.join(out_dir, RESULTS_FILE), "a") as log:
        def on_done(chunk_id, out):
            if out["code"] != here:
                raise sweep.SweepError("a worker runs other code than this machine: %s there, %s here; its "
                                       "results would not be comparable (install the same surepick, "
                                       "MuJoCo and numpy on every worker)" % (out["code"], here))
            lines = []
            for r in out["results"]:
                key = (r["cell"], r["seed"])
                if key in results:
                    continue          # the scheduler ran this chunk twice: count it once
                results[key] = r
                lines.append(json.dumps(r, sort_keys=True) + "\n")
                left[r["cell"]] -= 1
                state["cells_done"] += left[r["cell"]] == 0
            log.write("".join(lines))
            log.flush()
            state["cycles_done"] += len(lines)
            state["ran"] += len(lines)
            state["elapsed_s"] = time.perf_counter() - t0
            if progress:
                progress(dict(state))

        if progress:
            progress(dict(state))
        try:
            backend.run(sweep.run_chunk, chunks, on_done)
        except KeyboardInterrupt:
            interrupted = True
    return SweepRun(results, total, state["ran"], time.perf_counter() - t0, interrupted, backend.describe(), here)


def run_drills(plan, picks, backend):
    """picks: [(cell, seed)] -> {cell: drill} where a drill is engines/sweep.run_drill's dict
    (result, record with its tick trace, trajectory, model hash): the cycle again, recorded."""
    tasks = [(cell, (cell, seed, plan.settings(cell))) for cell, seed in picks]
    out = {}

    def on_done(cell, drill):
        out[cell] = drill
    if tasks:
        backend.run(sweep.run_drill, tasks, on_done)
    return out
