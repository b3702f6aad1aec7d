# `surepick sim sweep`: a grid of scenario parameters, config fields, plant parameters and part
# properties, every cell over the same seeds, on the local worker pool or a Dask cluster; writes
# cells.csv, summary.json, envelope.html with heat maps and a report of one failing cycle per
# failing cell. `--compare DIR_A DIR_B` draws how the envelope moved between two sweeps.
# The work is in engines/sweep*.py, the tables and pictures in records/envelope*.py.
import os
import sys
import time

from surepick.host.user_error import FAILED, INTERRUPTED, OK
from surepick.host.cli.errors import CommandError, cannot

RANGE_HELP = "start:stop:step (stop included when a step lands on it: 0:14:1 is 15 values), a,b,c or one value"


def add_arguments(sub):
    p = sub.add_parser(
        "sweep", help="sweep parameters over a grid of cells and seeds; draw where the gripper works",
        description="Run every cell of a grid (one value per axis) over the same seeds and draw the robustness "
        "envelope: the cells placed at least --threshold of the time with no false success. Writes "
        "DIR/sweep.json (the plan), DIR/results.jsonl (every cycle, appended as chunks finish; Ctrl-C keeps "
        "them, --resume runs what is missing), DIR/cells.csv, DIR/summary.json, DIR/envelope.html with "
        "envelope.png and attempts.png, and DIR/drill/cell_NNNN/ (one failing cycle per failing cell, "
        "re-run with its trajectory). A value with one entry fixes the setting instead of adding an axis. "
        "Exit 0 when no cycle was a false success, 1 otherwise, 2 for bad usage, 130 interrupted.")
    p.add_argument("--scenario", help="scenario name (see `surepick sim scenarios`)")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUES",
                   help="scenario parameter axis: " + RANGE_HELP + " (repeatable)")
    p.add_argument("--axis", action="append", default=[], metavar="NAME=VALUES",
                   help="any axis, NAME one of param.KEY, config.FIELD (integers; shared_fsm/config.py), "
                   "plant.PATH (sim/params.py, e.g. plant.rail.source_mohm, plant.pad.friction, "
                   "plant.servos.gripper.speed_s_per_60deg_4v8), part.mass_g, part.friction; VALUES as --param")
    p.add_argument("--config", action="append", default=[], metavar="FIELD=V|FILE",
                   help="state-machine config under every cell: FIELD=V, or a JSON file of overrides (repeatable)")
    p.add_argument("--plant", metavar="PLANT.json", help="plant parameters under every cell")
    p.add_argument("--arm", metavar="NAME|FILE", help="the arm under every cell: a preset or a description file "
                   "(default the reference arm); see `surepick sim run --help`")
    p.add_argument("--seeds", type=int, default=20, help="seeds per cell (default 20)")
    p.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    p.add_argument("--out", metavar="DIR", help="output directory (for --compare: default DIR_B/compare)")
    p.add_argument("--backend", choices=("local", "dask"), default="local",
                   help="local: worker processes here (default); dask: a Dask distributed scheduler")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="Dask scheduler address, e.g. tcp://10.0.0.5:8786 (with --backend dask; without it a "
                   "LocalCluster of --jobs workers on this machine)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                   help="worker processes of the local pool or the LocalCluster (default: CPUs)")
    p.add_argument("--chunk", type=int, default=4, help="cycles per task (default 4): a lost worker costs one chunk")
    p.add_argument("--threshold", type=float, default=0.95,
                   help="placed rate a cell needs to be in the envelope (default 0.95; and no false success)")
    p.add_argument("--resume", action="store_true",
                   help="continue the sweep in DIR: run only the cycles missing from results.jsonl (the plan comes "
                   "from DIR/sweep.json; axes given here must match it)")
    p.add_argument("--force", action="store_true", help="start over in a DIR that holds results")
    p.add_argument("--drill", type=int, default=50, metavar="N",
                   help="re-run one failing cycle of at most N failing cells with its trajectory, as a report "
                   "(default 50; 0: none)")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG heat maps (the HTML grid stays)")
    p.add_argument("--compare", nargs=2, metavar=("DIR_A", "DIR_B"),
                   help="draw how the envelope moved from sweep A to sweep B (same axes); exit 1 when a cell left it")


def run(args):
    # A SweepError or DaskUnavailable is bad input (exit 2) as it is; a worker's failure says
    # where the results so far are.
    from surepick.host.engines import sweep_dask, sweep_pool
    try:
        if args.compare:
            return _compare(args)
        return _sweep(args)
    except sweep_pool.WorkerBound as e:
        raise CommandError("%s; results so far are in %s, --resume continues" % (
            e, os.path.join(args.out, "results.jsonl")), FAILED) from None
    except (sweep_pool.WorkerError, sweep_dask.DaskTaskError) as e:
        raise CommandError("%s\nresults so far are in %s; --resume continues" % (
            e, os.path.join(args.out, "results.jsonl")), FAILED) from None


def _config(items):
    # --config FIELD=V (an integer, or a named value: resense=always) or FILE (JSON object),
    # merged in order.
    from surepick.host.cli.options import config_overrides_file
    from surepick.shared_fsm.config import NAMED, value_of
    out = {}
    for item in items:
        if "=" in item:
            k, v = (s.strip() for s in item.split("=", 1))
            try:
                out[k] = value_of(k, v)
            except ValueError:
                if k in NAMED:
                    raise CommandError("--config %s: one of %s (or 0..%d), got %r" % (
                        k, ", ".join(NAMED[k]), len(NAMED[k]) - 1, v)) from None
                raise CommandError("--config %s: config fields are integers, got %r" % (k, v)) from None
        else:
            out.update(config_overrides_file(item))
    return out


def _plan(args):
    from surepick.host.cli.options import plant_params_file
    from surepick.host.engines import sweep, sweep_run
    given = bool(args.scenario)
    new = None
    if given:
        plant = plant_params_file(args.plant) if args.plant else None
        from surepick.host.cli.arm import load_job_arm
        arm = load_job_arm(args.arm, print)      # a part its servos cannot hold: refused before any cell
        new = sweep.make_plan(args.scenario, list(args.param) + list(args.axis), _config(args.config), plant,
                              args.seed, args.seeds, args.chunk, arm)
    elif not args.resume:
        raise CommandError("--scenario is required (or --resume, --compare)")
    if not args.resume:
        if sweep_run.has_results(args.out) and not args.force:
            raise CommandError("%s already holds a sweep's results: --resume continues it, --force starts over"
                               % args.out)
        return new
    stored = sweep_run.read_plan(args.out)
    sweep_run.check_same_code(args.out)
    if new is not None:
        why = new.differs_from(stored)
        if why:
            raise CommandError("--resume: this is not the sweep in %s (%s)" % (args.out, why))
    stored.chunk = args.chunk
    return stored


def _backend(args):
    from surepick.host.engines import sweep_dask, sweep_pool
    if args.backend == "dask":
        return sweep_dask.DaskBackend(args.scheduler, args.jobs)
    return sweep_pool.LocalPool(args.jobs)


def _sweep(args):
    from surepick.host.engines import summary as summary_mod
    from surepick.host.engines import sweep_dask, sweep_run
    from surepick.host.records import envelope, envelope_plot
    if not args.out:
        raise CommandError("--out DIR is required")
    if args.jobs < 1:
        raise CommandError("--jobs must be at least 1")
    if not 0.0 < args.threshold <= 1.0:
        raise CommandError("--threshold must be in (0, 1]")
    if args.scheduler and args.backend != "dask":
        raise CommandError("--scheduler needs --backend dask")
    if args.resume and args.force:
        raise CommandError("--resume and --force contradict each other")
    if args.backend == "dask":
        sweep_dask.versions()          # a missing extra is said now, before any work
    from surepick.host.cli.outputs import own_dir
    if os.path.isdir(args.out):
        own_dir(args.out)              # one writer at a time, before its results are looked at
    plan = _plan(args)
    try:
        os.makedirs(args.out, exist_ok=True)
    except OSError as e:
        raise cannot("use --out", args.out, e) from None
    own_dir(args.out)
    command = ["surepick"] + sys.argv[1:]
    if not args.resume:
        sweep_run.write_plan(args.out, plan, {"command": command})   # before any work
    cycles = len(plan.cells) * plan.seeds
    print("sweep: %s, %d cells x %d seeds = %d cycles, chunks of %d, backend %s%s" % (
        plan.scenario, len(plan.cells), plan.seeds, cycles, plan.chunk, args.backend,
        " at %s" % args.scheduler if args.scheduler else ""), flush=True)
    backend = _backend(args)
    try:
        with SweepProgress() as progress:
            run = sweep_run.run_sweep(plan, args.out, backend, progress.update, resume=args.resume)
        cells = envelope.build_cells(plan, run.results, args.threshold)
        versions = summary_mod.versions()
        if args.backend == "dask":
            versions.update(sweep_dask.versions())
        summ = envelope.summary(plan, cells, run, args.threshold, command, versions)
        envelope.write_cells(args.out, plan, cells)
        envelope.write_json(os.path.join(args.out, envelope.SUMMARY_FILE), summ)   # again with the drill-down
        drills = {}
        if not run.interrupted:
            picks = envelope.drill_picks(cells, args.drill)
            if picks:
                print("re-running %d failing cycles with their trajectories for the drill-down" % len(picks), flush=True)
                drills = envelope.write_drills(args.out, plan, cells, sweep_run.run_drills(plan, picks, backend))
        summ["drill"] = {str(k): v for k, v in drills.items()}
        envelope.write_json(os.path.join(args.out, envelope.SUMMARY_FILE), summ)
        images = []
        if not args.no_plots and not run.interrupted:
            images = [envelope_plot.plot_envelope(os.path.join(args.out, envelope_plot.ENVELOPE_PNG), plan, cells,
                                                  args.threshold),
                      envelope_plot.plot_attempts(os.path.join(args.out, envelope_plot.ATTEMPTS_PNG), plan, cells)]
        page = envelope_plot.write_html(args.out, plan, cells, summ, drills, images)
    except KeyboardInterrupt:
        print("surepick sim sweep: interrupted; finished cycles are in %s (--resume continues)"
              % os.path.join(args.out, sweep_run.RESULTS_FILE), file=sys.stderr)
        return INTERRUPTED
    finally:
        _close(backend)
    t = summ["totals"]
    print("%s %d/%d cycles (%d now, %.1f s, %s cycles/s): placed %d, false successes %d, false failures %d; "
          "envelope %d of %d cells" % (
              "INTERRUPTED:" if run.interrupted else "sweep:", summ["cycles_done"], summ["cycles_planned"],
              run.ran, run.wall_s, summ["cycles_per_s"], t["placed"], t["false_success"], t["false_failure"],
              summ["envelope"]["cells_in"], len(cells)))
    if run.backend.get("workers_lost"):
        print("%d worker(s) died holding a chunk; each such chunk ran again on a new worker" % run.backend["workers_lost"])
    print("cells: %s\nenvelope: %s" % (os.path.join(args.out, envelope.CELLS_FILE), page))
    if run.interrupted:
        return INTERRUPTED
    return OK if t["false_success"] == 0 else FAILED


def _close(backend):
    close = getattr(backend, "close", None)
    if close is not None:
        close()


def _compare(args):
    from surepick.host.records import envelope_compare
    a, b = args.compare
    out = args.out or os.path.join(b, "compare")
    res = envelope_compare.compare(a, b, out)
    print("compare %s -> %s: %d cells matched; envelope %d -> %d cells; %d entered, %d left; mean placed rate "
          "%+.3f" % (a, b, res["matched"], res["envelope_a"], res["envelope_b"], len(res["entered"]),
                     len(res["left"]), res["mean_rate_change"]))
    for c in res["left"]:
        print("  left the envelope: %s" % c["where"])
    print("picture: %s\npage: %s" % (res["png"], res["html"]))
    return FAILED if res["left"] else OK


class SweepProgress:
    """Cells done, cycles done, throughput and ETA: a rich bar on a terminal, else a line on
    stderr every tenth of the way (CI logs stay short)."""

    def __init__(self):
        self.bar = None
        self.last_tenth = -1
        self.t0 = time.perf_counter()

    def _text(self, s):
        rate = s["ran"] / s["elapsed_s"] if s["elapsed_s"] > 0 and s["ran"] else None
        left = s["cycles_total"] - s["cycles_done"]
        eta = "?" if not rate else _duration(left / rate)
        return "cells %d/%d, cycles %d/%d, %s cycles/s, ETA %s" % (
            s["cells_done"], s["cells_total"], s["cycles_done"], s["cycles_total"],
            "%.2f" % rate if rate else "-", eta)

    def update(self, s):
        if sys.stderr.isatty():
            if self.bar is None:
                from rich.progress import BarColumn, Progress, TextColumn
                self.bar = Progress(TextColumn("sweep"), BarColumn(), TextColumn("{task.description}"),
                                    transient=False)
                self.bar.start()
                self.task = self.bar.add_task("", total=s["cycles_total"])
            self.bar.update(self.task, completed=s["cycles_done"], description=self._text(s))
            return
        tenth = s["cycles_done"] * 10 // max(1, s["cycles_total"])
        if tenth != self.last_tenth:
            self.last_tenth = tenth
            print("  " + self._text(s), file=sys.stderr, flush=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.stop()


def _duration(s):
    s = int(round(s))
    if s >= 3600:
        return "%dh%02dm" % (s // 3600, s % 3600 // 60)
    return "%dm%02ds" % (s // 60, s % 60) if s >= 60 else "%ds" % s
