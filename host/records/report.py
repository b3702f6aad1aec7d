# Writes what a run leaves behind: report.json (versions, seed, parameters, model hash, every
# cycle's outcome, the judge's verdict and the event timeline), trajectory.csv and PNG plots of
# the state timeline over the sensor traces, and, when the cycles carry their tick traces, the
# run record (run.json, cycles.jsonl, events.csv, ticks.csv; records/runrecord.py) in the same place.
import csv
import json
import os
import time

from surepick.shared_fsm import states

from surepick.host.engines.inproc import TRAJECTORY_COLUMNS
from surepick.host.engines.summary import summarise, versions
from surepick.host.records.cycle_plot import plot_cycle

MAX_PLOTS = 20


def write_report(out_dir, meta, cycles, trajectories, plots=True):
    os.makedirs(out_dir, exist_ok=True)
    traces = [(c.get("_ticks"), c.get("_events")) for c in cycles]
    cycles = [{k: v for k, v in c.items() if not k.startswith("_")} for c in cycles]
    report = dict(meta)
    report["versions"] = versions()
    report["summary"] = summarise(cycles)
    report["cycles"] = cycles
    if cycles and all(t is not None for t, _ in traces):
        write_run_record(out_dir, report, cycles, traces)
    path = os.path.join(out_dir, "report.json")
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(report, f, indent=1)
    os.replace(tmp, path)  # a crash mid-write never leaves half a report
    if trajectories is not None:
        write_trajectory(os.path.join(out_dir, "trajectory.csv"), trajectories)
        if plots:
            for k, rows in enumerate(trajectories[:MAX_PLOTS]):
                plot_cycle(os.path.join(out_dir, "cycle_%03d.png" % k), rows, cycles[k])
    return path


def run_meta(report, kind="host-sim"):
    # run.json of a sim run (records/runrecord.py) from its report's fields.
    from surepick.shared_fsm.config import Config
    from surepick.sim.params import PlantParams
    cfg = Config(report.get("config_overrides") or None).to_dict()
    meta = {"kind": kind, "scenario": report["scenario"], "params": report.get("params", {}),
            "seed": report["seed"], "versions": report.get("versions"), "model_hash": report.get("model_hash"),
            "config": cfg, "loop_period_ms": cfg["loop_period_ms"],
            "plant_params": PlantParams.from_dict(report.get("plant_params") or {}).to_dict(),
            "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "source": {"command": "surepick sim run", "engine": "engines.inproc.CycleRun"}}
    if report.get("arm"):
        meta["arm"] = report["arm"]          # the arm description's name (sim run --arm)
    if report.get("arm_description"):
        meta["arm_description"] = report["arm_description"]     # the whole description
    return meta


def record_row(c):
    # A sim cycle's line in cycles.jsonl.
    row = {k: c[k] for k in ("cycle", "seed", "job", "board_cal", "initial_jaw_um", "restarts",
                             "fsm_outcome", "fsm_fault", "fault_state", "attempts", "judge_outcome",
                             "judge_reason", "judge", "sim_ms") if k in c}
    row["outcome"] = "placed" if c["fsm_outcome"] == "placed" else (c["fsm_fault"] or c["fsm_outcome"])
    return row


def write_run_record(out_dir, report, cycles, traces, kind="host-sim"):
    from surepick.host.records import runrecord
    rows = [record_row(c) for c in cycles]
    ticks = {c["cycle"]: t for c, (t, _) in zip(cycles, traces)}
    events = {c["cycle"]: e for c, (_, e) in zip(cycles, traces)}
    return runrecord.write(out_dir, run_meta(report, kind), rows, events, ticks)


class ReportWriter:
    """`sim run`'s output written as each cycle finishes, so Ctrl-C or a crash keeps every
    finished cycle: its PNG, its trajectory rows, report.json of the cycles finished so far, then
    the run record (records/runrecord.py Appender: run.json rewritten last). resume() continues
    a run cut short: the same scenario, seed, parameters, config and plant, from the cycle after
    the last one it finished."""

    def __init__(self, out_dir, meta, plots=True):
        from surepick.host.records import runrecord
        self.out = str(out_dir)
        self.meta = dict(meta)
        self.plots = plots
        self.cycles = []
        self.report = dict(self.meta, versions=versions())
        self.record = runrecord.Appender(self.out, run_meta(self.report))

    def start(self):
        os.makedirs(self.out, exist_ok=True)
        self.record.start()
        with open(os.path.join(self.out, "trajectory.csv"), "w", newline="") as f:
            csv.writer(f).writerow(("cycle",) + TRAJECTORY_COLUMNS)
        self._write_report()
        return 0

    def resume(self):
        # -> cycles already finished (RunRecordError when the directory holds another run).
        from surepick.host.records import runrecord
        n = self.record.resume()
        if n == 0:
            return self.start()
        try:
            with open(os.path.join(self.out, "report.json")) as f:
                old = json.load(f)
            done = old["cycles"][:n]
        except (OSError, ValueError, KeyError, TypeError):
            raise runrecord.RunRecordError("%s: report.json is missing or unreadable: cannot resume; use --force"
                                           % self.out) from None
        if len(done) < n:
            raise runrecord.RunRecordError("%s: report.json holds %d cycles, the run record %d: cannot resume; use "
                                           "--force" % (self.out, len(done), n))
        self.cycles = done
        self.meta["model_hash"] = self.meta.get("model_hash") or old.get("model_hash")
        runrecord.cut_csv_at_cycle(os.path.join(self.out, "trajectory.csv"), n)
        for name in os.listdir(self.out):
            if name.startswith("cycle_") and name.endswith(".png") and name[6:-4].isdigit() and int(name[6:-4]) >= n:
                os.remove(os.path.join(self.out, name))
        self._write_report()
        return n

    def add(self, rec, trajectory):
        # One finished cycle (rec from engines/inproc.InprocCycle.run with its _ticks and _events).
        ticks, events = rec.get("_ticks"), rec.get("_events")
        c = {k: v for k, v in rec.items() if not k.startswith("_")}
        k = c["cycle"]
        if trajectory is not None:
            with open(os.path.join(self.out, "trajectory.csv"), "a", newline="") as f:
                w = csv.writer(f)
                for r in trajectory:
                    w.writerow(csv_row(k, r))
            if self.plots and k < MAX_PLOTS:
                plot_cycle(os.path.join(self.out, "cycle_%03d.png" % k), trajectory, c)
        self.cycles.append(c)
        self._write_report()
        if ticks is not None:
            self.record.meta["model_hash"] = self.meta.get("model_hash")
            self.record.add(record_row(c), events, ticks)

    def _write_report(self):
        report = dict(self.meta)
        report["versions"] = self.report["versions"]
        report["summary"] = summarise(self.cycles)
        report["cycles"] = self.cycles
        path = os.path.join(self.out, "report.json")
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(report, f, indent=1)
        os.replace(tmp, path)
        return path


def write_trajectory(path, trajectories):
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(("cycle",) + TRAJECTORY_COLUMNS)
        for k, rows in enumerate(trajectories):
            for r in rows:
                w.writerow(csv_row(k, r))
    os.replace(tmp, path)


_STATE_COL = TRAJECTORY_COLUMNS.index("state")
_FAULT_COL = TRAJECTORY_COLUMNS.index("fault")


def csv_row(cycle, r):
    # One trajectory row as trajectory.csv holds it: the state and the fault by name (the one
    # names table, shared_fsm), every other value as measured, None as an empty cell.
    from surepick.shared_fsm import codes, states
    row = ["" if v is None else v for v in r]
    row[_STATE_COL] = states.name(r[_STATE_COL])
    row[_FAULT_COL] = codes.name(r[_FAULT_COL]) if r[_FAULT_COL] else "none"
    return [cycle] + row
