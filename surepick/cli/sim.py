# `surepick sim`: run the shared machine on the MuJoCo plant (run, batch) and list scenarios.
# The cycles run in engines/ (inproc_cycles, vboard, batch); reports are written by records/.
import json
import os
import sys

from surepick.cli import exitcodes
from surepick.cli.errors import CommandError
from surepick.cli.options import config_overrides_file, key_value, plant_params_file


def add_arguments(p):
    sub = p.add_subparsers(dest="sim_verb", metavar="ACTION")
    s = sub.add_parser("scenarios", help="list the scenarios with their parameters")
    s.add_argument("--json", action="store_true", help="machine-readable list")

    r = sub.add_parser("run", help="run K cycles of one scenario and write a report",
                       description="Run the unchanged shared state machine against the MuJoCo plant. "
                       "Writes DIR/report.json, DIR/trajectory.csv and DIR/cycle_NNN.png. Exit 0 when "
                       "every cycle was verified placed (machine said placed and the judge measured it), "
                       "1 when a cycle ended otherwise, 2 for bad usage.")
    r.add_argument("--scenario", help="scenario name (see `surepick sim scenarios`); with --job, default nominal")
    r.add_argument("--job", metavar="JOB.json", help="run this job file (docs/job-file.md, e.g. from `surepick "
                   "teach`) instead of the scenario's own pick/place/width; its approach height, if any, "
                   "overrides the machine's approach_height_um")
    r.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    r.add_argument("--cycles", type=int, default=1, help="cycles to run (default 1)")
    r.add_argument("--out", default="runs/sim", help="output directory (default runs/sim)")
    r.add_argument("--param", action="append", default=[], type=key_value, metavar="KEY=VALUE",
                   help="scenario parameter override (repeatable)")
    r.add_argument("--config", metavar="FILE", help="JSON file of state-machine config overrides")
    r.add_argument("--plant", metavar="PLANT.json", help="plant parameters (e.g. from `surepick fit`)")
    r.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    r.add_argument("--viewer", action="store_true", help="show the MuJoCo viewer (needs a display)")
    r.add_argument("--engine", choices=("sim", "vboard"), default="sim",
                   help="sim: the shared machine on the host (default); vboard: the firmware itself on the "
                   "virtual board against the same plant, written as a run record of kind virtual-board "
                   "(engines/vboard.py; needs the micropython binary)")

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
    b.add_argument("--param", action="append", default=[], type=key_value, metavar="KEY=VALUE",
                   help="scenario parameter override (single scenario only)")
    b.add_argument("--config", metavar="FILE", help="JSON file of state-machine config overrides")
    b.add_argument("--plant", metavar="PLANT.json", help="plant parameters")


def run(args):
    verb = getattr(args, "sim_verb", None)
    if verb is None:
        raise CommandError("say what to do: scenarios, run or batch (see surepick sim --help)")
    if verb == "scenarios":
        return _scenarios(args)
    overrides = dict(args.param)
    cfg = config_overrides_file(args.config) if args.config else None
    plant_params = plant_params_file(args.plant) if args.plant else None
    if verb == "run":
        job = None
        if args.job is not None:
            job, cfg = _job_file(args.job, cfg)
            args.scenario = args.scenario or "nominal"
        elif args.scenario is None:
            raise CommandError("say which scenario: --scenario NAME (or --job FILE)")
        _check_scenario(args.scenario, overrides)
        if args.cycles < 1:
            raise CommandError("--cycles must be at least 1")
        if args.engine == "vboard":
            if job is not None:
                raise CommandError("--job runs with --engine sim (on a board: surepick job start --job FILE)")
            return _run_vboard(args, overrides, cfg, plant_params)
        return _run(args, overrides, cfg, plant_params, job)
    return _batch(args, overrides, cfg, plant_params)


def _job_file(path, cfg):
    # -> (the job as run_cycles takes it, config overrides with the job's approach height)
    from surepick.teleop import jobfile
    try:
        job = jobfile.load(path)
    except jobfile.JobFileError as e:
        raise CommandError(str(e)) from None
    cfg = dict(cfg or {})
    cfg.update(job.config_overrides())
    return job.link_job(), cfg or None


def _check_scenario(name, overrides):
    # Before any work: an unknown scenario or a bad parameter is bad input, named.
    from surepick.sim import scenarios
    try:
        scenarios.get(name).resolve(overrides)
    except (ValueError, KeyError) as e:
        raise CommandError(e.args[0] if isinstance(e, KeyError) and e.args else str(e)) from None


def _make_out_dir(path):
    # Before any work: an --out that cannot be written is found now, not after the run.
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise CommandError("cannot use --out %s: %s" % (path, e.strerror or e)) from None


def _scenarios(args):
    from surepick.sim import scenarios
    if args.json:
        print(json.dumps({n: {"help": s.help, "part": s.part, "expect": list(s.expect),
                              "params": {k: {"default": v[0], "min": v[1], "max": v[2], "help": v[3]}
                                         for k, v in s.params.items()}}
                          for n, s in sorted(scenarios.SCENARIOS.items())}, indent=1))
    else:
        print(scenarios.describe())
    return exitcodes.OK


def _run(args, overrides, cfg, plant_params, job=None):
    from surepick.engines.inproc_cycles import run_cycles
    from surepick.records import report
    _make_out_dir(args.out)

    def said(rec):
        print("cycle %d: machine %s%s, judge %s (%s), attempts %d, %.1f s simulated in %.2f s" % (
            rec["cycle"], rec["fsm_outcome"], (" " + rec["fsm_fault"]) if rec["fsm_fault"] else "",
            rec["judge_outcome"], rec["judge_reason"], rec["attempts"], rec["sim_ms"] / 1000.0, rec["wall_s"]))

    meta, cycles, trajectories = run_cycles(args.scenario, args.seed, args.cycles, overrides, plant_params, cfg,
                                            viewer=args.viewer and _has_display(), on_cycle=said, job=job)
    if args.job is not None:
        meta["job_file"] = os.path.abspath(args.job)
    try:
        path = report.write_report(args.out, meta, cycles, trajectories, plots=not args.no_plots)
    except OSError as e:
        raise CommandError("cannot write the report in %s: %s" % (args.out, e.strerror or e)) from None
    s = report.summarise(cycles)
    print("report: %s  (verified placed %d/%d, false successes %d, false failures %d)" % (
        path, s["verified_placed"], s["cycles"], s["false_success"], s["false_failure"]))
    return exitcodes.OK if s["verified_placed"] == s["cycles"] else exitcodes.FAILED


def _has_display():
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        print("surepick sim run: --viewer needs a display (DISPLAY is not set); running headless",
              file=sys.stderr)
        return False
    print("surepick sim run: opening the MuJoCo viewer", file=sys.stderr)
    return True


def _run_vboard(args, overrides, cfg, plant_params):
    # The firmware itself on the virtual board, one fresh board per cycle (engines/vboard.py).
    from surepick.engines import vboard
    from surepick.vboard.interp import find_micropython
    if cfg:
        raise CommandError("--config is not supported yet (the firmware reads its config from "
                           "/config.json on its flash)")
    if args.viewer:
        raise CommandError("--viewer needs --engine sim")
    find_micropython()      # MicropythonNotFound says how to get it
    _make_out_dir(args.out)
    from surepick.records import runrecord
    meta, recs, events, ticks = vboard.run(args.scenario, args.seed, args.cycles, overrides, plant_params, log=print)
    try:
        runrecord.write(str(args.out), meta, recs, events, ticks)
    except OSError as e:
        raise CommandError("cannot write the run record in %s: %s" % (args.out, e.strerror or e)) from None
    ok = sum(1 for r in recs if r["fsm_outcome"] == "placed" and r["judge_outcome"] == "placed")
    print("run record: %s  (kind virtual-board; verified placed %d/%d)"
          % (os.path.join(args.out, "run.json"), ok, len(recs)))
    return exitcodes.OK if ok == len(recs) else exitcodes.FAILED


def _batch(args, overrides, cfg, plant_params):
    from surepick.cli.progress import Progress
    from surepick.engines import batch
    from surepick.sim import scenarios
    if args.count < 1 or args.jobs < 1:
        raise CommandError("--count and --jobs must be at least 1")
    names = sorted(scenarios.SCENARIOS) if args.scenario == "all" else [args.scenario]
    if len(names) > 1 and overrides:
        raise CommandError("--param works with a single scenario, not 'all'")
    for name in names:
        _check_scenario(name, overrides if len(names) == 1 else None)
    items = batch.plan(names, args.count, args.seed, overrides, cfg, plant_params)
    _make_out_dir(args.out)
    with Progress(len(items)) as progress:
        summary, _ = batch.run_batch(items, args.out, args.jobs, progress.update)
    print("%s %d/%d cycles in %.1f s: machine placed %d, judge placed %d, false successes %d, "
          "false failures %d, agreement %s" % (
              "INTERRUPTED:" if summary["interrupted"] else "batch:", summary["count"], summary["planned"],
              summary["wall_s"], summary["fsm_success"], summary["judge_success"], summary["false_success"],
              summary["false_failure"], summary["agreement"]))
    print("summary: %s" % os.path.join(args.out, "summary.json"))
    if summary["interrupted"]:
        return exitcodes.INTERRUPTED
    return exitcodes.OK if summary["false_success"] == 0 else exitcodes.FAILED
