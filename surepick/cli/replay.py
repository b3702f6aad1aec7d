# `surepick replay RUN`: feed a run record's readings and arrivals through the shared machine on
# the host and print its transitions, marking every point where the replay decides otherwise.
import sys

EXIT_OK, EXIT_DIVERGED, EXIT_USAGE = 0, 1, 2


def add_arguments(p):
    p.description = (
        "Replay a run record (docs/run-record.md) through a fresh copy of the shared state machine with "
        "the record's config and job: every loop tick's recorded sensor readings and motion arrivals go "
        "in at the recorded time, and the replay's transitions are printed. Lines marked '!!' are where "
        "the replay decides differently from the record (a transition only one side made, or a stretch of "
        "ticks whose state or commands differ). Exit 0 when the replay reproduces the record exactly, "
        "1 when it diverges, 2 for a bad run directory or bad usage.")
    p.add_argument("run", metavar="RUN", help="run record directory (e.g. from `surepick sim run --out RUN`)")
    p.add_argument("--cycle", type=int, action="append", metavar="N",
                   help="replay only cycle N (repeatable; default: every cycle)")
    p.add_argument("--quiet", action="store_true", help="print only the per-cycle verdicts and divergences")


def run(args):
    from surepick.records.runrecord import RunRecordError, load
    try:
        rec = load(args.run)
    except RunRecordError as e:
        print("surepick replay: %s" % e, file=sys.stderr)
        return EXIT_USAGE
    from surepick.records.replay import replay
    known = {c["cycle"] for c in rec.cycles}
    for n in args.cycle or []:
        if n not in known:
            print("surepick replay: %s has no cycle %d (cycles: %s)" % (args.run, n, _ranges(sorted(known))),
                  file=sys.stderr)
            return EXIT_USAGE
    m = rec.meta
    print("replay of %s: %s run, scenario %s, seed %s, %d cycle(s)" % (
        args.run, m["kind"], m["scenario"], m["seed"], len(rec.cycles)))
    results = replay(rec, set(args.cycle) if args.cycle else None)
    diverged = 0
    for r in results:
        print_cycle(r, args.quiet)
        diverged += not r.identical()
    print("%d of %d cycle(s) reproduced exactly%s" % (
        len(results) - diverged, len(results), "" if not diverged else "; %d diverged" % diverged))
    return EXIT_OK if not diverged else EXIT_DIVERGED


def print_cycle(r, quiet=False, out=None):
    from surepick.shared_fsm import states
    from surepick.shared_fsm.trace_text import event_line
    out = out or sys.stdout
    from surepick.records.replay import decision
    rec_keys = {decision(e) for e in r.recorded}
    rep_keys = {decision(e) for e in r.events}
    differs = {decision(b) for a, b in r.reading_mismatches()}
    lines = []
    for e in r.events:
        if decision(e) in rec_keys:
            if decision(e) in differs:
                lines.append((e[1], 0, " ~  " + event_line(e) + "   <- same decision; the record's event "
                              "readings differ from its ticks"))
            elif not quiet:
                lines.append((e[1], 0, "    " + event_line(e)))
        else:
            lines.append((e[1], 1, "!!  " + event_line(e) + "   <- replay only: the record did not do this"))
    for e in r.recorded:
        if decision(e) not in rep_keys:
            lines.append((e[1], 2, "!!  " + event_line(e) + "   <- record only: the replay did not do this"))
    for t0, t1, n, theirs, mine in r.spans:
        lines.append((t0, 3, "!!  t=%d..%d ms (%d ticks): record state %s move %d jaw %d hold %d, replay state %s "
                      "move %d jaw %d hold %d" % (t0, t1, n, states.name(theirs[0]), theirs[1], theirs[8], theirs[9],
                                                  states.name(mine[0]), mine[1], mine[8], mine[9])))
    lines.sort(key=lambda x: (x[0], x[1]))
    first = r.first_divergence_ms
    if first is not None:
        verdict = "DIVERGES first at t=%d ms" % first
    elif r.reading_mismatches():
        verdict = "same decisions, but the record's event readings differ from its ticks"
    else:
        verdict = "reproduced exactly"
    print("== cycle %d: %d ticks, %d recorded events, %d replayed: %s" % (
        r.cycle, r.ticks, len(r.recorded), len(r.events), verdict), file=out)
    for _, _, text in lines:
        print(text, file=out)


def _ranges(items):
    return ", ".join(str(i) for i in items[:20]) + (" ..." if len(items) > 20 else "")
