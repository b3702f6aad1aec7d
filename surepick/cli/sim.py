# `surepick sim`: run the shared machine on the MuJoCo plant (run, batch) and list scenarios.
import json
import os
import sys

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def add_arguments(p):
    sub = p.add_subparsers(dest="sim_verb", metavar="ACTION")
    s = sub.add_parser("scenarios", help="list the scenarios with their parameters")
    s.add_argument("--json", action="store_true", help="machine-readable list")

    r = sub.add_parser("run", help="run K cycles of one scenario and write a report",
                       description="Run the unchanged shared state machine against the MuJoCo plant. "
                       "Writes DIR/report.json, DIR/trajectory.csv and DIR/cycle_NNN.png. Exit 0 when "
                       "every cycle was verified placed (machine said placed and the judge measured it), "
                       "1 when a cycle ended otherwise, 2 for bad usage.")
    r.add_argument("--scenario", required=True, help="scenario name (see `surepick sim scenarios`)")
    r.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    r.add_argument("--cycles", type=int, default=1, help="cycles to run (default 1)")
    r.add_argument("--out", default="runs/sim", help="output directory (default runs/sim)")
    r.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="scenario parameter override (repeatable)")
    r.add_argument("--config", metavar="FILE", help="JSON file of state-machine config overrides")
    r.add_argument("--plant", metavar="PLANT.json", help="plant parameters (e.g. from `surepick fit`)")
    r.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    r.add_argument("--viewer", action="store_true", help="show the MuJoCo viewer (needs a display)")
    r.add_argument("--engine", choices=("sim", "vboard"), default="sim",
                   help="sim: the shared machine on the host (default); vboard: the firmware itself on the "
                   "virtual board against the same plant, written as a run record of kind virtual-board "
                   "(host/vboard_run.py; needs the micropython binary)")

    b = sub.add_parser("batch", help="run many seeded cycles over worker processes",
                       description="Run COUNT seeds (S, S+1, ...) of a scenario, or of every scenario with "
                       "'all', over J worker processes. Writes DIR/cycles.jsonl as cycles finish and "
                       "DIR/summary.json at the end; Ctrl-C stops cleanly and keeps finished results. "
                       "Exit 0 when no cycle was a false success, 1 otherwise, 2 for bad usage.")
    b.add_argument("--scenario", required=True, help="scenario name or 'all'")
    b.add_argument("--count", type=int, required=True, help="seeds per scenario")
    b.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    b.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes (default: CPUs)")
    b.add_argument("--out", required=True, help="output directory")
    b.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="scenario parameter override (single scenario only)")
    b.add_argument("--config", metavar="FILE", help="JSON file of state-machine config overrides")
    b.add_argument("--plant", metavar="PLANT.json", help="plant parameters")


def run(args):
    verb = getattr(args, "sim_verb", None)
    if verb is None:
        print("surepick sim: say what to do: scenarios, run or batch (see surepick sim --help)", file=sys.stderr)
        return EXIT_USAGE
    try:
        if verb == "scenarios":
            return _scenarios(args)
        overrides = _params(args.param)
        cfg = _json_file(args.config, "config") if args.config else None
        plant = _json_file(args.plant, "plant") if args.plant else None
        if cfg is not None:
            from surepick.shared_fsm.config import Config
            Config(cfg)  # validate now: a clear error beats a traceback in a worker
        if plant is not None:
            from surepick.sim.params import PlantParams
            PlantParams.from_dict(plant)
        if verb == "run":
            return _run(args, overrides, cfg, plant)
        return _batch(args, overrides, cfg, plant)
    except (ValueError, KeyError, OSError) as e:
        print("surepick sim %s: %s" % (verb, e), file=sys.stderr)
        return EXIT_USAGE


def _params(items):
    out = {}
    for item in items:
        if "=" not in item:
            raise ValueError("--param needs KEY=VALUE, got %r" % item)
        k, v = item.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def _json_file(path, what):
    try:
        with open(path) as f:
            data = json.load(f)
    except json.JSONDecodeError as e:
        raise ValueError("%s file %s is not valid JSON: %s" % (what, path, e))
    if not isinstance(data, dict):
        raise ValueError("%s file %s must hold a JSON object" % (what, path))
    return data


def _scenarios(args):
    from surepick.sim import scenarios
    if args.json:
        print(json.dumps({n: {"help": s.help, "part": s.part, "expect": list(s.expect),
                              "params": {k: {"default": v[0], "min": v[1], "max": v[2], "help": v[3]}
                                         for k, v in s.params.items()}}
                          for n, s in sorted(scenarios.SCENARIOS.items())}, indent=1))
    else:
        print(scenarios.describe())
    return EXIT_OK


def _run(args, overrides, cfg, plant):
    if getattr(args, "engine", "sim") == "vboard":
        if args.cycles < 1:
            raise ValueError("--cycles must be at least 1")
        return _run_vboard(args, overrides, cfg, plant)
    from surepick.engines import inproc as runner
    from surepick.sim import scenarios
    from surepick.records import report
    sc = scenarios.get(args.scenario)
    values = sc.resolve(overrides)
    if args.cycles < 1:
        raise ValueError("--cycles must be at least 1")
    viewer = _open_viewer() if args.viewer else None
    cycles, trajectories = [], []
    model_hash = None
    for k in range(args.cycles):
        run = runner.CycleRun(sc, values, args.seed, k, plant, cfg)
        if viewer is not None:
            run.viewer = viewer
        rec = run.run(record_trajectory=True)
        rec["scenario"] = sc.name
        model_hash = model_hash or run.plant.model_hash()
        cycles.append(rec)
        trajectories.append(run.trajectory)
        print("cycle %d: machine %s%s, judge %s (%s), attempts %d, %.1f s simulated in %.2f s" % (
            k, rec["fsm_outcome"], (" " + rec["fsm_fault"]) if rec["fsm_fault"] else "",
            rec["judge_outcome"], rec["judge_reason"], rec["attempts"], rec["sim_ms"] / 1000.0, rec["wall_s"]))
    meta = {"scenario": sc.name, "params": values, "seed": args.seed, "cycles_requested": args.cycles,
            "model_hash": model_hash, "config_overrides": cfg or {}, "plant_params": plant}
    path = report.write_report(args.out, meta, cycles, trajectories, plots=not args.no_plots)
    s = report.summarise(cycles)
    print("report: %s  (verified placed %d/%d, false successes %d, false failures %d)" % (
        path, s["verified_placed"], s["cycles"], s["false_success"], s["false_failure"]))
    return EXIT_OK if s["verified_placed"] == s["cycles"] else EXIT_FAILED


def _open_viewer():
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        print("surepick sim run: --viewer needs a display (DISPLAY is not set); running headless",
              file=sys.stderr)
        return None
    print("surepick sim run: opening the MuJoCo viewer", file=sys.stderr)
    return "passive"


def _batch(args, overrides, cfg, plant):
    from surepick.engines import batch
    from surepick.sim import scenarios
    if args.count < 1 or args.jobs < 1:
        raise ValueError("--count and --jobs must be at least 1")
    names = sorted(scenarios.SCENARIOS) if args.scenario == "all" else [args.scenario]
    if len(names) > 1 and overrides:
        raise ValueError("--param works with a single scenario, not 'all'")
    items = batch.plan(names, args.count, args.seed, overrides, cfg, plant)
    progress = _progress_bar(len(items))
    try:
        summary, results = batch.run_batch(items, args.out, args.jobs, progress.update)
    finally:
        progress.close()
    print("%s %d/%d cycles in %.1f s: machine placed %d, judge placed %d, false successes %d, "
          "false failures %d, agreement %s" % (
              "INTERRUPTED:" if summary["interrupted"] else "batch:", summary["count"], summary["planned"],
              summary["wall_s"], summary["fsm_success"], summary["judge_success"], summary["false_success"],
              summary["false_failure"], summary["agreement"]))
    print("summary: %s" % os.path.join(args.out, "summary.json"))
    if summary["interrupted"]:
        return 130
    return EXIT_OK if summary["false_success"] == 0 else EXIT_FAILED


class _progress_bar:
    # A rich progress bar on a terminal; plain periodic lines otherwise (CI logs).
    def __init__(self, total):
        self.total = total
        self.tty = sys.stderr.isatty()
        self.bar = None
        self.last_pct = -1
        if self.tty:
            from rich.progress import Progress
            self.bar = Progress(transient=False)
            self.bar.start()
            self.task = self.bar.add_task("cycles", total=total)

    def update(self, done, total, rec):
        if self.bar is not None:
            self.bar.update(self.task, completed=done)
            return
        pct = done * 10 // total
        if pct != self.last_pct:
            self.last_pct = pct
            print("  %d/%d cycles done" % (done, total), file=sys.stderr)

    def close(self):
        if self.bar is not None:
            self.bar.stop()


def _run_vboard(args, overrides, cfg, plant):
    # `sim run --engine vboard`. -> exit code (0 every cycle verified placed, 1 otherwise, 2 usage).
    from surepick.engines import vboard as vboard_run
    from surepick.records import runrecord
    if cfg:
        print("surepick sim run --engine vboard: --config is not supported yet (the firmware reads its "
              "config from /config.json on its flash)", file=sys.stderr)
        return 2
    if getattr(args, "viewer", False):
        print("surepick sim run --engine vboard: --viewer needs --engine sim", file=sys.stderr)
        return 2
    try:
        from surepick.vboard.interp import find_micropython
        find_micropython()
    except Exception as e:
        print("surepick sim run --engine vboard: no micropython binary: %s" % e, file=sys.stderr)
        return 2
    try:
        meta, recs, events, ticks = vboard_run.run(args.scenario, args.seed, args.cycles, overrides, plant, log=print)
    except vboard_run.VboardRunError as e:
        print("surepick sim run --engine vboard: %s" % e, file=sys.stderr)
        return 1
    runrecord.write(str(args.out), meta, recs, events, ticks)
    ok = sum(1 for r in recs if r["fsm_outcome"] == "placed" and r["judge_outcome"] == "placed")
    print("run record: %s  (kind virtual-board; verified placed %d/%d)" % (os.path.join(args.out, "run.json"),
                                                                          ok, len(recs)))
    return 0 if ok == len(recs) else 1
