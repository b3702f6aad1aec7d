# A sweep's tables: its cycles (engines/sweep_run.py) summed per grid cell into DIR/cells.csv and
# DIR/summary.json, the envelope (the cells where the gripper is trusted: placed rate at least the
# threshold and not one false success), and which failing cycle of each cell to re-run for its
# report. cells.csv holds only what the physics decided, never timings or which worker ran what,
# so the same plan and seeds write the same file on any backend.
import csv
import json
import math
import os

from surepick.host.engines.summary import histogram
from surepick.host.engines.sweep import fmt

CELLS_FILE = "cells.csv"
SUMMARY_FILE = "summary.json"
DEFAULT_THRESHOLD = 0.95
Z95 = 1.959963984540054          # two-sided 95% normal quantile
FIRST_COLUMNS = ("runs", "placed", "false_success", "false_failure", "faults")


def wilson(k, n, z=Z95):
    """Wilson score interval of k successes in n trials -> (low, high); (0, 1) for n = 0."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return max(0.0, centre - half), min(1.0, centre + half)


def placed(r):
    # A cycle counts as placed only when the machine said so and the judge measured it.
    return r["fsm_outcome"] == "placed" and r["judge_outcome"] == "placed"


class Cell:
    def __init__(self, index, values, results, planned_runs, threshold):
        self.index = index
        self.values = values                  # {axis name: value}
        self.results = sorted(results, key=lambda r: r["seed"])
        rs = self.results
        self.runs = len(rs)
        self.planned_runs = planned_runs
        self.placed = sum(1 for r in rs if placed(r))
        self.fsm_placed = sum(1 for r in rs if r["fsm_outcome"] == "placed")
        self.judge_placed = sum(1 for r in rs if r["judge_outcome"] == "placed")
        self.false_success = sum(1 for r in rs if r["false_success"])
        self.false_failure = sum(1 for r in rs if r["false_failure"])
        self.incomplete = sum(1 for r in rs if r["fsm_outcome"] == "incomplete")
        self.expected = sum(1 for r in rs if r["expected"])
        self.faults = histogram(r["fsm_fault"] for r in rs if r["fsm_fault"])
        self.attempts_mean = sum(r["attempts"] for r in rs) / len(rs) if rs else None
        # how long a cycle took (job to rest), how many probes a part search made, and the
        # farthest the part moved before a grasp (results from before these were kept: blank)
        times = sorted(r["cycle_ms"] for r in rs if r.get("cycle_ms") is not None)
        self.cycle_ms_median = times[len(times) // 2] if times else None
        probes = [r["probes"] for r in rs if r.get("probes") is not None]
        self.probes_mean = sum(probes) / len(probes) if probes else None
        moved = [r["search_moved_mm"] for r in rs if r.get("search_moved_mm") is not None]
        self.search_moved_mm_max = max(moved) if moved else None
        self.rate = self.placed / self.runs if rs else None
        self.low, self.high = wilson(self.placed, self.runs)
        self.complete = self.runs == planned_runs
        self.in_envelope = (self.complete and self.runs > 0 and self.rate >= threshold
                            and self.false_success == 0)

    @property
    def failing(self):
        return self.runs > 0 and self.placed < self.runs

    def drill_seed(self):
        """The cycle to re-run for this cell's report: the lowest seed of the worst kind of
        failure (a false success, then a false failure, then any other)."""
        for test in (lambda r: r["false_success"], lambda r: r["false_failure"], lambda r: not placed(r)):
            for r in self.results:
                if test(r):
                    return r["seed"]
        return None


def build_cells(plan, results, threshold=DEFAULT_THRESHOLD):
    """plan: engines/sweep.Plan; results: {(cell, seed): result} -> [Cell] in plan order."""
    by_cell = {}
    for (c, _), r in results.items():
        by_cell.setdefault(c, []).append(r)
    return [Cell(i, plan.cell_values(i), by_cell.get(i, []), plan.seeds, threshold) for i in range(len(plan.cells))]


def fault_names(cells):
    return sorted({name for c in cells for name in c.faults})


def rows(plan, cells):
    """cells.csv as (header, rows of strings): the axis values, then runs, placed,
    false_success, false_failure, faults, then the rest."""
    names = fault_names(cells)
    header = ([a.name for a in plan.axes] + list(FIRST_COLUMNS)
              + ["placed_rate", "placed_low95", "placed_high95", "attempts_mean", "in_envelope",
                 "fsm_placed", "judge_placed", "incomplete", "expected_outcome", "cell", "cycle_ms_median",
                 "probes_mean", "search_moved_mm_max"]
              + ["fault_" + n for n in names])
    out = []
    for c in cells:
        row = [fmt(c.values[a.name]) for a in plan.axes]
        row += [str(c.runs), str(c.placed), str(c.false_success), str(c.false_failure),
                ";".join("%s=%d" % kv for kv in c.faults.items())]
        row += ["" if c.rate is None else "%.4f" % c.rate, "%.4f" % c.low, "%.4f" % c.high,
                "" if c.attempts_mean is None else "%.3f" % c.attempts_mean, "1" if c.in_envelope else "0",
                str(c.fsm_placed), str(c.judge_placed), str(c.incomplete), str(c.expected), str(c.index),
                _blank(c.cycle_ms_median, "%d"), _blank(c.probes_mean, "%.2f"), _blank(c.search_moved_mm_max, "%.2f")]
        row += [str(c.faults.get(n, 0)) for n in names]
        out.append(row)
    return header, out


def _blank(v, form):
    return "" if v is None else form % v


def write_cells(out_dir, plan, cells):
    header, body = rows(plan, cells)
    path = os.path.join(out_dir, CELLS_FILE)
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(body)
    os.replace(tmp, path)
    return path


def read_cells(out_dir):
    """-> (header, [row dict]) of a sweep's cells.csv."""
    path = os.path.join(out_dir, CELLS_FILE)
    with open(path, newline="") as f:
        r = csv.DictReader(f)
        return list(r.fieldnames or []), list(r)


def summary(plan, cells, run, threshold, command, versions):
    """summary.json: the grid, the totals, the seeds, the envelope, versions and the command."""
    results = [r for c in cells for r in c.results]
    return {
        "scenario": plan.scenario,
        "axes": [a.to_dict() for a in plan.axes],
        "fixed": {a.name: a.values[0] for a in plan.fixed},
        "config_overrides": plan.config,
        "plant_params": plan.plant,
        "seeds": {"first": plan.first_seed, "count": plan.seeds},
        "cells": len(cells),
        "cycles_planned": run.planned,
        "cycles_done": len(results),
        "cycles_run_now": run.ran,
        "interrupted": run.interrupted,
        "totals": {"runs": len(results), "placed": sum(c.placed for c in cells),
                   "false_success": sum(c.false_success for c in cells),
                   "false_failure": sum(c.false_failure for c in cells),
                   "faults": histogram(r["fsm_fault"] for r in results if r["fsm_fault"])},
        "envelope": {"threshold": threshold, "rule": "placed rate >= threshold and no false success, all seeds run",
                     "cells_in": sum(1 for c in cells if c.in_envelope)},
        "false_success_cells": [c.index for c in cells if c.false_success],
        "backend": run.backend,
        "wall_s": round(run.wall_s, 2),
        "cycles_per_s": round(run.ran / run.wall_s, 3) if run.wall_s > 0 and run.ran else None,
        "plan_fingerprint": plan.fingerprint(),
        "code": run.code,
        "versions": versions,
        "command": command,
    }


def write_json(path, data):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1)
    os.replace(tmp, path)
    return path


def drill_picks(cells, limit=None):
    """[(cell, seed)]: one failing cycle per failing cell, false successes first, at most limit."""
    failing = [c for c in cells if c.failing]
    failing.sort(key=lambda c: (-c.false_success, -c.false_failure, c.index))
    picks = [(c.index, c.drill_seed()) for c in failing]
    return picks if limit is None else picks[:limit]


def drill_dir(cell_index):
    return os.path.join("drill", "cell_%04d" % cell_index)


def write_drills(out_dir, plan, cells, drills):
    """Each re-run failing cycle as a report (records/report.py) in DIR/drill/cell_NNNN/.
    -> {cell: {"dir", "seed", "same": whether the re-run ended as the sweep's cycle did}}."""
    from surepick.host.records import report
    by_index = {c.index: c for c in cells}
    out = {}
    for cell, d in sorted(drills.items()):
        rel = drill_dir(cell)
        rec = d["record"]
        s = plan.settings(cell)
        meta = {"scenario": plan.scenario, "params": dict(s["params"]), "seed": rec["seed"], "cycles_requested": 1,
                "model_hash": d["model_hash"], "config_overrides": s["config"], "plant_params": s["plant"] or None,
                "part_overrides": s["part"], "sweep_cell": cell, "sweep_values": plan.cell_values(cell)}
        report.write_report(os.path.join(out_dir, rel), meta, [rec], [d["trajectory"]], plots=True)
        swept = next(r for r in by_index[cell].results if r["seed"] == rec["seed"])
        same = all(swept[k] == d["result"][k] for k in ("fsm_outcome", "fsm_fault", "judge_outcome", "attempts"))
        out[cell] = {"dir": rel, "seed": rec["seed"], "same": same,
                     "swept": {k: swept[k] for k in ("fsm_outcome", "fsm_fault", "judge_outcome", "judge_reason")},
                     "rerun": {k: d["result"][k] for k in ("fsm_outcome", "fsm_fault", "judge_outcome", "judge_reason")}}
    return out
