# `surepick fit RUN --out PLANT.json`: fit the plant's parameters to a run record's sensor traces
# (host/fit.py); `surepick sim run --plant PLANT.json` then runs on the fitted plant.
import json
import sys

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def add_arguments(p):
    p.description = (
        "Fit the MuJoCo plant's parameters to a run record (docs/run-record.md): the record's servo pulses are "
        "played back open loop into a plant built for the same scenario and seed, and the parameters are moved "
        "until the re-simulated pot, current, rail and switch readings match the recorded ones. Fitted: gripper "
        "servo speed, pad stiffness and damping (ringing), base/shoulder/elbow servo speed (through the rail "
        "sag), pot zero and scale, current-sense offset and scale (closed form). Optional groups: 'deadband' "
        "(gripper), 'wrist'. Not fitted: gravity sag (no board signal sees it). Prints the residuals before and "
        "after; writes PLANT.json for `surepick sim run --plant`. Exit 0 on success, 2 for bad usage. "
        "`--stand-in SEED --out hidden.json` instead writes the hidden perturbed plant of the hardware stand-in.")
    p.add_argument("run", metavar="RUN", nargs="?", help="run record directory (a run of a scenario without "
                   "injected faults, e.g. nominal)")
    p.add_argument("--out", required=True, metavar="PLANT.json", help="where to write the fitted plant parameters")
    p.add_argument("--cycles", type=int, default=1, metavar="N", help="fit on the first N cycles (default 1; "
                   "each adds about 0.3 s per evaluation)")
    p.add_argument("--max-evals", type=int, default=40, metavar="N", help="evaluations per parameter group (default 40)")
    p.add_argument("--group", action="append", metavar="NAME",
                   help="fit only these groups: gripper, arm, deadband, wrist (repeatable; default gripper+arm)")
    p.add_argument("--start", metavar="PLANT.json", help="start from these parameters (default: the nominal plant)")
    p.add_argument("--stand-in", type=int, metavar="SEED", help="write the stand-in's hidden plant for SEED and exit")


def run(args):
    if args.stand_in is not None:
        from surepick.records.fit import stand_in_params
        return _write(args.out, stand_in_params(args.stand_in), "stand-in plant (seed %d)" % args.stand_in)
    if not args.run:
        print("surepick fit: give a run directory (or --stand-in SEED)", file=sys.stderr)
        return EXIT_USAGE
    if args.cycles < 1 or args.max_evals < 4:
        print("surepick fit: --cycles must be >= 1 and --max-evals >= 4", file=sys.stderr)
        return EXIT_USAGE
    from surepick.records.fit import FitError, GROUPS, OPTIONAL_GROUPS, fit, named_values
    from surepick.records.runrecord import RunRecordError, load
    known = [g for g, _ in GROUPS + OPTIONAL_GROUPS]
    for g in args.group or []:
        if g not in known:
            print("surepick fit: unknown group %r (groups: %s)" % (g, ", ".join(known)), file=sys.stderr)
            return EXIT_USAGE
    try:
        start = None
        if args.start:
            with open(args.start) as f:
                start = json.load(f)
            from surepick.sim.params import PlantParams
            PlantParams.from_dict(start)
        rec = load(args.run)
        cycles = [c["cycle"] for c in rec.cycles[:args.cycles]]
        res = fit(rec, cycles=cycles, start=start, max_evals=args.max_evals, groups=args.group, log=print)
    except (RunRecordError, FitError, OSError, ValueError, KeyError) as e:
        print("surepick fit: %s" % e, file=sys.stderr)
        return EXIT_USAGE
    print("residuals (RMS)      %12s %12s" % ("before", "after"))
    for k in res.before:
        print("  %-18s %12.3g %12.3g" % (k, res.before[k], res.after[k]))
    a, b = named_values(res.start), named_values(res.params)
    print("parameters           %12s %12s" % ("start", "fitted"))
    for k in a:
        print("  %-28s %10.4g %12.4g" % (k, a[k], b[k]))
    print("%d evaluations in %.1f s" % (res.evaluations, res.wall_s))
    return _write(args.out, res.params, "fitted plant")


def _write(path, params, what):
    try:
        with open(path, "w") as f:
            json.dump(params, f, indent=1, sort_keys=True)
    except OSError as e:
        print("surepick fit: cannot write %s: %s" % (path, e.strerror), file=sys.stderr)
        return EXIT_USAGE
    print("%s written to %s" % (what, path))
    return EXIT_OK
