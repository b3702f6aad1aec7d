# `surepick fit RUN --out PLANT.json`: fit the plant's parameters to a run record's sensor traces
# (records/fit.py); `surepick sim run --plant PLANT.json` then runs on the fitted plant.
from surepick.host.user_error import FAILED, OK
from surepick.host.cli.errors import CommandError, cannot
from surepick.host.cli.outputs import check_writable_file
from surepick.host.cli.options import seed_arg
from surepick.host.records.record_schema import SEED_MAX


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
    p.add_argument("--arm", metavar="NAME|FILE",
                   help="the arm the run was made with: a preset or a description file (default: the one its "
                   "run.json names, when that is a preset; else the reference arm)")
    p.add_argument("--arm-out", metavar="ARM.toml",
                   help="also write the arm's description with the fitted servo and sensor models in it (TOML, or "
                   "compact JSON for a .json name): check it with `surepick arm check`, ship it with `deploy --arm`")
    p.add_argument("--stand-in", type=seed_arg, metavar="SEED",
                   help="write the stand-in's hidden plant for SEED (0..%d) and exit" % SEED_MAX)


def run(args):
    # Every input is checked before the first evaluation: the output path, the options, the
    # record (records/runrecord.py) and what a fit needs of it (ticks, a scenario it can build).
    from surepick.host.records import fit as fitting
    check_writable_file(args.out)
    if args.arm_out:
        check_writable_file(args.arm_out)
    if args.stand_in is not None:
        return _write(args.out, fitting.stand_in_params(args.stand_in), "stand-in plant (seed %d)" % args.stand_in)
    if not args.run:
        raise CommandError("give a run directory (or --stand-in SEED)")
    _refuse_inputs_as_outputs(args)
    if not 1 <= args.cycles <= 1000 or not 4 <= args.max_evals <= 100000:
        raise CommandError("--cycles must be 1..1000 and --max-evals 4..100000")
    fitting.check_groups(args.group)
    from surepick.host.cli.options import plant_params_file
    from surepick.host.cli.progress import Status
    from surepick.host.records import runrecord
    start = plant_params_file(args.start) if args.start else None
    rec = runrecord.load(args.run)
    runrecord.require_ticks(rec, "fit")
    runrecord.require_scenario(rec, "fit")
    arm = _run_arm(args, rec.meta)
    cycles = [c["cycle"] for c in rec.cycles[:args.cycles]]
    with Status("fit") as status:
        def progress(group, n, max_evals, best):
            status.update("%s group, evaluation %d of at most %d, best cost %.3g" % (group, n, max_evals, best))

        def log(line):
            status.close()              # the status line gives way to the result line
            print(line, flush=True)
        try:
            res = fitting.fit(rec, cycles=cycles, start=start, max_evals=args.max_evals, groups=args.group,
                              log=log, progress=progress, arm=arm)
        except (OSError, ValueError, KeyError) as e:   # a record the fit cannot use (FitError is a ValueError)
            raise CommandError(e.args[0] if isinstance(e, KeyError) and e.args else str(e)) from None
    print("residuals (RMS)      %12s %12s" % ("before", "after"))
    for k in res.before:
        print("  %-18s %12.3g %12.3g" % (k, res.before[k], res.after[k]))
    a, b = fitting.named_values(res.start), fitting.named_values(res.params)
    print("parameters           %12s %12s" % ("start", "fitted"))
    for k in a:
        print("  %-28s %10.4g %12.4g" % (k, a[k], b[k]))
    print("%d evaluations in %.1f s" % (res.evaluations, res.wall_s))
    code = _write(args.out, res.params, "fitted plant")
    if args.arm_out:
        _write_description(args.arm_out, arm, res.params, args.run)
    return code


def _refuse_inputs_as_outputs(args):
    # An output onto one of the fit's inputs would replace it: a file of the run record (its
    # run.json), the --start plant or the --arm description. Refused before any evaluation.
    import os
    inputs = [(args.start, "the --start plant"), (args.arm, "the --arm description")]
    outputs = (("--out", args.out, inputs), ("--arm-out", args.arm_out, inputs + [(args.out, "--out")]))
    for flag, out, others in outputs:
        if not out or not os.path.exists(out):
            continue
        if os.path.isdir(args.run) and os.path.samefile(os.path.dirname(os.path.abspath(out)), args.run):
            what = "a file of the run record %s" % args.run
        else:
            what = next((name for path, name in others if path and os.path.exists(path)
                         and os.path.samefile(path, out)), None)
        if what:
            raise CommandError("cannot use %s %s: it is %s, which would be overwritten; give another file name"
                               % (flag, out, what))


def _run_arm(args, meta):
    # The arm the run was made with: --arm (it must be the one run.json names), else the record's
    # own description (run.json arm_description), else, for a record written before runs kept it,
    # the preset its name names, else the reference arm (None: the reference as it is).
    from surepick.host.cli.arm import load_arm
    from surepick.host.records import run_arm
    from surepick.shared_fsm import kinematics
    named = meta.get("arm")
    if args.arm is not None:
        arm = load_arm(args.arm)[0]
        if (named or "reference") != arm.name:
            raise CommandError("the run was made with the %s arm, not %s: give its description with --arm"
                               % (named or "reference", arm.name))
        return None if arm.name == "reference" and named is None else arm
    arm, note = run_arm.record_arm(meta)
    if arm is None:
        raise CommandError(note)
    if note:
        print("note: %s" % note)
    if arm.to_dict() == kinematics.REFERENCE.to_dict():
        return None
    return arm


def _write_description(path, arm, params, run_dir):
    from surepick.host.arms import files
    from surepick.host.records import fit_description
    from surepick.shared_fsm import kinematics
    arm = arm or kinematics.REFERENCE
    try:
        d, fitted, changed = fit_description.description(arm, params, note="servo and sensor models fitted "
                                                          "to the run %s (surepick fit)" % run_dir)
    except ValueError as e:
        raise CommandError("the fitted description does not pass the check (%s): the plant is written, the "
                           "description not" % e, FAILED) from None
    text = files.compact_json(fitted) if path.endswith(".json") else files.to_toml(d)
    try:
        with open(path, "w") as f:
            f.write(text)
    except OSError as e:
        raise cannot("write", path, e) from None
    print("arm description %s written to %s (%d fields fitted: %s)" % (
        fitted.name, path, len(changed), ", ".join(changed[:6]) + (", ..." if len(changed) > 6 else "")))


def _write(path, params, what):
    from surepick.host.records.fit import write_params
    try:
        write_params(path, params)
    except OSError as e:
        raise cannot("write", path, e) from None
    print("%s written to %s" % (what, path))
    return OK
