# `surepick sim`: run the shared machine on the MuJoCo plant (run, batch, sweep) and list scenarios.
# The cycles run in engines/ (inproc_cycles, vboard, batch); reports are written by records/.
import json
import os
import sys

from surepick.host.user_error import FAILED, INTERRUPTED, OK
from surepick.host.cli.errors import CommandError, cannot
from surepick.host.cli.options import config_overrides_file, key_value, plant_params_file, seed_arg
from surepick.host.cli.outputs import prepare_run_dir


def _resume_force(p, what):
    g = p.add_mutually_exclusive_group()
    g.add_argument("--resume", action="store_true",
                   help="continue the run in --out: the %s it already finished are not run again (same scenario, "
                        "seed, parameters, config and plant, or it is refused)" % what)
    g.add_argument("--force", action="store_true", help="clear --out's run files first")


def add_arguments(p):
    sub = p.add_subparsers(dest="sim_verb", metavar="ACTION")
    s = sub.add_parser("scenarios", help="list the scenarios with their parameters")
    s.add_argument("--json", action="store_true", help="machine-readable list")

    r = sub.add_parser("run", help="run K cycles of one scenario and write a report",
                       description="Run the unchanged shared state machine against the MuJoCo plant. "
                       "Writes DIR/report.json, DIR/trajectory.csv, DIR/cycle_NNN.png and the run record, each "
                       "cycle as it finishes: Ctrl-C keeps every finished cycle (exit 130) and --resume continues. "
                       "Exit 0 when every cycle was verified placed (machine said placed and the judge measured "
                       "it), 1 when a cycle ended otherwise, 2 for bad usage, 130 interrupted.")
    r.add_argument("--scenario", help="scenario name (see `surepick sim scenarios`); with --job, default nominal")
    r.add_argument("--job", metavar="JOB.json", help="run this job file (docs/job-file.md, e.g. from `surepick "
                   "teach`) instead of the scenario's own pick/place/width; its approach height, if any, "
                   "overrides the machine's approach_height_um")
    r.add_argument("--seed", type=seed_arg, default=0, help="random seed (default 0)")
    r.add_argument("--cycles", type=int, default=1, help="cycles to run (default 1)")
    r.add_argument("--out", default="runs/sim", help="output directory (default runs/sim); refused when it "
                   "holds another run, unless --resume or --force")
    _resume_force(r, "cycles")
    r.add_argument("--param", action="append", default=[], type=key_value, metavar="KEY=VALUE",
                   help="scenario parameter override (repeatable)")
    r.add_argument("--config", metavar="FILE", help="JSON file of state-machine config overrides (every engine: "
                   "the virtual board and the emulated RP2040 get them in their /config.json)")
    r.add_argument("--plant", metavar="PLANT.json", help="plant parameters (e.g. from `surepick fit`)")
    r.add_argument("--arm", metavar="NAME|FILE", help="the arm: a preset (`surepick arm list`) or a description "
                   "file (docs/arm-description.md); default the reference arm. Its bench gives the pad, the bin "
                   "and the poses; the simulated board boots with it as /arm.json (every engine)")
    r.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    r.add_argument("--viewer", action="store_true", help="show the MuJoCo viewer (needs a display)")
    r.add_argument("--engine", choices=("sim", "vboard", "rp2040"), default="sim",
                   help="sim: the shared machine on the host (default); vboard: the firmware itself on the "
                   "virtual board against the same plant, written as a run record of kind virtual-board "
                   "(engines/vboard.py; needs the micropython binary); rp2040: the firmware on the emulated "
                   "RP2040 (the real MicroPython RP2040 image in rp2040js, engines/rp2040) in lockstep "
                   "emulated time, a run record of kind rp2040 (minutes per cycle)")
    r.add_argument("--uf2", metavar="FILE", help="--engine rp2040: the MicroPython RPI_PICO image "
                   "(default: $SUREPICK_RP2040_UF2, then ../shared/rp2040/firmware.uf2)")

    b = sub.add_parser("batch", help="run many seeded cycles over worker processes",
                       description="Run COUNT seeds (S, S+1, ...) of a scenario, or of every scenario with "
                       "'all' (COUNT x 15 cycles: --count 50 is 750 cycles, about 20 minutes on 2 cores), over J "
                       "worker processes. Writes DIR/cycles.jsonl as cycles finish and DIR/summary.json at the "
                       "end; Ctrl-C stops cleanly and keeps finished results, --resume runs only the seeds not in "
                       "DIR/cycles.jsonl yet. Ends with a table per scenario. Exit 0 when no cycle was a false "
                       "success, 1 otherwise, 2 for bad usage, 130 interrupted.")
    b.add_argument("--scenario", required=True, help="scenario name or 'all'")
    b.add_argument("--count", type=int, required=True, help="seeds per scenario")
    b.add_argument("--seed", type=seed_arg, default=0, help="first seed (default 0)")
    b.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes (default: CPUs)")
    b.add_argument("--out", required=True, help="output directory; refused when it holds another run, unless "
                   "--resume or --force")
    _resume_force(b, "seeds")
    b.add_argument("--param", action="append", default=[], type=key_value, metavar="KEY=VALUE",
                   help="scenario parameter override (single scenario only)")
    b.add_argument("--config", metavar="FILE", help="JSON file of state-machine config overrides")
    b.add_argument("--plant", metavar="PLANT.json", help="plant parameters")
    b.add_argument("--arm", metavar="NAME|FILE", help="the arm: a preset or a description file (default the "
                   "reference arm); see `surepick sim run --help`")

    from surepick.host.cli import sim_sweep
    sim_sweep.add_arguments(sub)


def run(args):
    verb = getattr(args, "sim_verb", None)
    if verb is None:
        raise CommandError("say what to do: scenarios, run, batch or sweep (see surepick sim --help)")
    if verb == "scenarios":
        return _scenarios(args)
    if verb == "sweep":
        from surepick.host.cli import sim_sweep
        return sim_sweep.run(args)
    overrides = dict(args.param)
    cfg = config_overrides_file(args.config) if args.config else None
    plant_params = plant_params_file(args.plant) if args.plant else None
    if verb == "run":
        arm = _arm(args)
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
            return _run_vboard(args, overrides, cfg, plant_params, arm)
        if args.engine == "rp2040":
            if job is not None:
                raise CommandError("--job runs with --engine sim (on a board: surepick job start --job FILE)")
            return _run_rp2040(args, overrides, cfg, plant_params, arm)
        return _run(args, overrides, cfg, plant_params, job, arm)
    return _batch(args, overrides, cfg, plant_params)


def _job_file(path, cfg):
    # -> (the job as run_cycles takes it, config overrides with the job's approach height)
    from surepick.host.teleop import jobfile
    job = jobfile.load(path)
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


class _CtrlC:
    # Ctrl-C remembered (.hit). defer=True: it waits until the block is done (a finished cycle's
    # files are written whole), then interrupts. defer=False: it interrupts at once, as ever; one
    # that lands while MuJoCo's binding converts an argument surfaces as that call's TypeError,
    # and leaves the block as the KeyboardInterrupt it was, the person's stop.
    def __init__(self, defer):
        self.defer = defer

    def __enter__(self):
        import signal
        self.hit = False
        self.old = signal.signal(signal.SIGINT, self._note)
        return self

    def _note(self, signum, frame):
        self.hit = True
        if not self.defer:
            raise KeyboardInterrupt

    def __exit__(self, kind, value, tb):
        import signal
        signal.signal(signal.SIGINT, self.old)
        if self.hit and self.defer and kind is None:     # the files are whole: now the stop
            raise KeyboardInterrupt
        if self.hit and not self.defer and kind is not None and not issubclass(kind, KeyboardInterrupt):
            raise KeyboardInterrupt from value            # the Ctrl-C came out as another error
        return False


def _scenarios(args):
    from surepick.sim import scenarios
    if args.json:
        print(json.dumps({n: {"help": s.help, "part": s.part, "expect": list(s.expect),
                              "params": {k: scenarios.param_doc(v) for k, v in s.params.items()}}
                          for n, s in sorted(scenarios.SCENARIOS.items())}, indent=1))
    else:
        print(scenarios.describe())
    return OK


def _said(rec):
    print("cycle %d: machine %s%s, judge %s (%s), attempts %d, %.1f s simulated in %.2f s" % (
        rec["cycle"], rec["fsm_outcome"], (" " + rec["fsm_fault"]) if rec["fsm_fault"] else "",
        rec["judge_outcome"], rec["judge_reason"], rec["attempts"], rec["sim_ms"] / 1000.0, rec["wall_s"]),
        flush=True)


def _arm(args, say=None):
    # --arm NAME|FILE -> an Arm (None: the reference arm); bad input or a part too heavy named, exit 2
    from surepick.host.cli.arm import load_job_arm
    return load_job_arm(getattr(args, "arm", None), say)


def _run(args, overrides, cfg, plant_params, job=None, arm=None):
    from surepick.host.engines.inproc_cycles import run_cycles, run_meta
    from surepick.host.engines.summary import summarise
    from surepick.host.records.report import ReportWriter
    viewer = args.viewer and _has_display()
    state = prepare_run_dir(args.out, args.resume, args.force)
    meta = run_meta(args.scenario, args.seed, args.cycles, overrides, plant_params, cfg)
    from surepick.host.arms import files
    meta.update(files.record_fields(arm))
    if args.job is not None:
        meta["job_file"] = os.path.abspath(args.job)
    writer = ReportWriter(args.out, meta, plots=not args.no_plots)
    first = writer.resume() if state == "resume" else writer.start()
    _resuming(args, first, writer.cycles)

    def on_cycle(rec, trajectory, run):
        writer.meta["model_hash"] = writer.meta["model_hash"] or run.plant.model_hash()
        with _CtrlC(defer=True):
            writer.add(rec, trajectory)
        _said(rec)

    try:
        if first < args.cycles:
            with _CtrlC(defer=False):
                run_cycles(args.scenario, args.seed, args.cycles, overrides, plant_params, cfg, viewer=viewer,
                           on_cycle=on_cycle, first=first, job=job, arm=arm)
    except KeyboardInterrupt:
        return _interrupted(args, len(writer.cycles))
    except OSError as e:
        raise cannot("write the report in", args.out, e, FAILED) from None
    s = summarise(writer.cycles)
    print("report: %s  (verified placed %d/%d, false successes %d, false failures %d)" % (
        os.path.join(args.out, "report.json"), s["verified_placed"], s["cycles"], s["false_success"],
        s["false_failure"]))
    return OK if s["verified_placed"] == s["cycles"] else FAILED


def _resuming(args, first, done):
    if not first:
        return
    for rec in done:
        if "fsm_outcome" in rec:
            _said(rec)
    if first >= args.cycles:
        print("%s already holds %d finished cycle(s): nothing to run" % (args.out, first))
    else:
        print("resuming %s: cycles 0..%d finished, running %d..%d" % (args.out, first - 1, first, args.cycles - 1))


def _interrupted(args, finished):
    print("interrupted: %d of %d cycle(s) finished and kept in %s; continue with --resume"
          % (finished, args.cycles, args.out), file=sys.stderr, flush=True)
    return INTERRUPTED


def _has_display():
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        print("surepick sim run: --viewer needs a display (DISPLAY is not set); running headless",
              file=sys.stderr)
        return False
    print("surepick sim run: opening the MuJoCo viewer", file=sys.stderr)
    return True


def _run_vboard(args, overrides, cfg, plant_params, arm=None):
    # The firmware itself on the virtual board, one fresh board per cycle (engines/vboard.py),
    # each cycle appended to the run record as it finishes.
    from surepick.host.cli.progress import Status
    from surepick.host.engines import vboard
    from surepick.host.records import runrecord
    from surepick.shared_fsm import states
    from surepick.host.vboard.interp import find_micropython
    if args.viewer:
        raise CommandError("--viewer needs --engine sim")
    find_micropython()      # MicropythonNotFound says how to get it
    state = prepare_run_dir(args.out, args.resume, args.force)
    from surepick.sim import scenarios
    values = scenarios.get(args.scenario).resolve(overrides)
    meta0 = vboard._meta(scenarios.get(args.scenario), values, args.seed, None, plant_params, [], cfg, arm)
    rec = runrecord.Appender(args.out, meta0)
    first = rec.resume() if state == "resume" else (rec.start() or 0)
    done = runrecord.load(args.out, ticks=False).cycles if first else []
    _resuming(args, first, [])
    outcomes = [(c["fsm_outcome"], c["judge_outcome"]) for c in done]
    status = Status("sim run --engine vboard")

    def on_progress(k, now_ms, state_):
        status.update("cycle %d of %d: %.1f s of virtual time, firmware in %s"
                      % (k + 1, args.cycles, now_ms / 1000.0, states.name(state_)))

    def on_cycle(meta, r, events, ticks):
        status.close()
        m = {k: v for k, v in meta.items() if k not in ("format", "format_version", "cycles")}
        m["source"]["reconstruction"] = _reconstruction(done + [r])
        done.append(r)
        with _CtrlC(defer=True):
            rec.meta.update(m)
            rec.add(r, events, ticks)
        outcomes.append((r["fsm_outcome"], r["judge_outcome"]))

    def log(line):
        status.close()
        print(line, flush=True)
    try:
        if first < args.cycles:
            with _CtrlC(defer=False):
                vboard.run(args.scenario, args.seed, args.cycles, overrides, plant_params, log=log, first=first,
                           on_cycle=on_cycle, on_progress=on_progress, cfg_overrides=cfg, arm=arm)
    except KeyboardInterrupt:
        status.close()
        return _interrupted(args, len(outcomes))
    finally:
        status.close()
    ok = sum(1 for f, j in outcomes if f == "placed" and j == "placed")
    print("run record: %s  (kind virtual-board; verified placed %d/%d)"
          % (os.path.join(args.out, "run.json"), ok, len(outcomes)))
    return OK if ok == len(outcomes) else FAILED


def _reconstruction(cycles):
    return {"pulse_mismatches": sum(c["reconstruction"]["pulse_mismatches"] for c in cycles if "reconstruction" in c),
            "events_equal": all(c["reconstruction"]["events_equal"] for c in cycles if "reconstruction" in c)}


def _run_rp2040(args, overrides, cfg, plant_params, arm=None):
    # The firmware on the emulated RP2040, one fresh chip per cycle (engines/rp2040/cycle.py).
    from surepick.host.engines.rp2040 import cycle
    from surepick.host.engines.rp2040.chip import find_uf2
    if args.viewer:
        raise CommandError("--viewer needs --engine sim")
    uf2 = find_uf2(args.uf2)        # FirmwareMissing (bad input) names --uf2 and SUREPICK_RP2040_UF2
    if args.resume:
        raise CommandError("--resume works with --engine sim and vboard (an rp2040 run is written at its end)")
    prepare_run_dir(args.out, False, args.force)
    from surepick.host.records import runrecord
    # an EmulatorError or ChipRunError is a failure (exit 1)
    meta, recs, events, ticks = cycle.run(args.scenario, args.seed, args.cycles, overrides, plant_params,
                                          uf2=uf2, log=print, cfg_overrides=cfg, arm=arm)
    try:
        runrecord.write(str(args.out), meta, recs, events, ticks)
        cycle.write_report(str(args.out), meta, recs, events)
    except OSError as e:
        raise cannot("write the run record in", args.out, e) from None
    ok = sum(1 for r in recs if r["fsm_outcome"] == "placed" and r["judge_outcome"] == "placed")
    print("report: %s; run record: %s  (kind rp2040; verified placed %d/%d)"
          % (os.path.join(args.out, "report.json"), os.path.join(args.out, "run.json"), ok, len(recs)))
    return OK if ok == len(recs) else FAILED


def _batch(args, overrides, cfg, plant_params):
    from surepick.host.cli.progress import Progress
    from surepick.host.engines import batch
    from surepick.sim import scenarios
    if args.count < 1 or args.jobs < 1:
        raise CommandError("--count and --jobs must be at least 1")
    names = sorted(scenarios.SCENARIOS) if args.scenario == "all" else [args.scenario]
    if len(names) > 1 and overrides:
        raise CommandError("--param works with a single scenario, not 'all'")
    for name in names:
        _check_scenario(name, overrides if len(names) == 1 else None)
    args.engine = "sim"
    items = batch.plan(names, args.count, args.seed, overrides, cfg, plant_params, arm=_arm(args, print))
    state = prepare_run_dir(args.out, args.resume, args.force)
    done = batch.resume(items, args.out) if state == "resume" else []
    if done:
        print("resuming %s: %d of %d cycles already in cycles.jsonl" % (args.out, len(done), len(items)))
    with Progress(len(items), "cycles", counters=("placed", "faulted", "false"), tally=_tally,
                  done=len(done)) as progress:
        for rec in done:
            progress.update(0, item=rec)
        progress.update(len(done))
        summary, results = batch.run_batch(items, args.out, args.jobs, progress.update, done=done)
    for line in batch.scenario_table(summary):
        print(line)
    print("%s %d/%d cycles in %.1f s: machine placed %d, judge placed %d, false successes %d, "
          "false failures %d, agreement %s" % (
              "INTERRUPTED:" if summary["interrupted"] else "batch:", summary["count"], summary["planned"],
              summary["wall_s"], summary["fsm_success"], summary["judge_success"], summary["false_success"],
              summary["false_failure"], summary["agreement"]))
    print("summary: %s" % os.path.join(args.out, "summary.json"))
    if summary["interrupted"]:
        print("interrupted: %d of %d cycles kept in %s; continue with --resume"
              % (summary["count"], summary["planned"], os.path.join(args.out, "cycles.jsonl")), file=sys.stderr)
        return INTERRUPTED
    return OK if summary["false_success"] == 0 else FAILED


def _tally(rec):
    # What the batch bar counts for one finished cycle.
    out = []
    if rec["fsm_outcome"] == "placed" and rec["judge_outcome"] == "placed":
        out.append("placed")
    if rec.get("fsm_fault"):
        out.append("faulted")
    if rec.get("false_success") or rec.get("false_failure"):
        out.append("false")
    return out
