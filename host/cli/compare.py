# `surepick compare RUN_A RUN_B --out DIR`: phase-by-phase comparison of two run records that
# exits 1 when a difference exceeds its tolerance, so it can gate CI.
from surepick.host.user_error import FAILED, OK
from surepick.host.cli.errors import cannot


def add_arguments(p):
    from surepick.host.records.compare import DEFAULT_TOLERANCES
    p.description = (
        "Compare two run records (docs/run-record.md) of the same scenario: cycles are aligned by number and "
        "compared phase by phase: outcomes, state sequences, dwell-time distributions per state (median, p90), "
        "retries and their causes, the readings VERIFY decided on, a part search's probes and the pose it found, "
        "the pot over GRASP, the holding current while carrying, the board's current-zero calibration and the "
        "loop timing. Writes DIR/report.html (with "
        "overlaid state timelines, sensor traces and dwell histograms as PNGs), DIR/summary.md and "
        "DIR/comparison.json. Exit 0 when every difference is within tolerance, 1 when one is not, 2 for bad "
        "usage (unreadable run, runs of different scenarios, bad tolerances file). A phase or measurement "
        "present in one run only (a state only one run enters, a board recording without ticks) is reported as "
        "ONE SIDE, not failed; a different path through the states fails the CYCLE state-sequence check.")
    p.epilog = "default tolerances: " + ", ".join("%s=%g" % kv for kv in DEFAULT_TOLERANCES.items())
    p.add_argument("run_a", metavar="RUN_A", help="first run record directory (the reference)")
    p.add_argument("run_b", metavar="RUN_B", help="second run record directory")
    p.add_argument("--out", required=True, metavar="DIR", help="where to write report.html and summary.md")
    p.add_argument("--tolerances", metavar="FILE",
                   help="JSON object overriding some default tolerances, e.g. {\"verify_pot_counts\": 500}")
    p.add_argument("--labels", nargs=2, metavar=("A", "B"), default=("A", "B"), help="names for the two runs in the report")


def run(args):
    from surepick.host.records import compare_report
    from surepick.host.records.compare import compare, load_tolerances
    from surepick.host.cli.outputs import check_writable_dir
    from surepick.host.records.runrecord import load
    tol = load_tolerances(args.tolerances)
    a, b = load(args.run_a), load(args.run_b)
    check_writable_dir(args.out)
    cmp = compare(a, b, tol)
    try:
        path = compare_report.write(cmp, args.out, *args.labels)
    except OSError as e:
        raise cannot("write the report in", args.out, e) from None
    for n in cmp.notes:
        print("note: %s" % n)
    for c in cmp.one_sided():
        print("ONE SIDE %-13s %s: %s vs %s (%s)" % (c.phase, c.metric, c.a, c.b, c.note))
    for c in cmp.checks:
        if not c.ok:
            print("DIFFERS %-14s %s: %s vs %s (B - A = %s, tolerance %s)%s" % (
                c.phase, c.metric, c.a, c.b, c.diff, c.tol, (" " + c.note) if c.note else ""))
    if cmp.passed:
        print("PASS: %d aligned cycle(s), %d checks within tolerance; report %s" % (len(cmp.aligned), len(cmp.checks), path))
        return OK
    print("FAIL: phases differing beyond tolerance: %s; report %s" % (", ".join(cmp.failing_phases()), path))
    return FAILED
