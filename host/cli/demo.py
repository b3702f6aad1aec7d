# `surepick demo`: the shared state machine against the scripted fake HAL, transitions printed.
from surepick.host.user_error import FAILED, OK
from surepick.host.cli.errors import CommandError


def add_arguments(p):
    p.add_argument("--scenario", default="nominal",
                   help="fake-HAL scenario to run (default: nominal); 'all' runs every one; "
                        "'list' prints them")
    p.add_argument("--start-ms", type=int, default=(1 << 30) - 3000,
                   help="tick value to start at (default: 3 s before the 2**30 wrap)")


def run(args):
    from surepick.shared_fsm import fake_scenarios
    from surepick.shared_fsm import trace_text
    names = fake_scenarios.names()
    if args.scenario == "list":
        for name, opts, overrides, expect in fake_scenarios.SCENARIOS:
            print("%-24s expect %-18s %s %s" % (name, expect, opts or "", overrides or ""))
        return OK
    chosen = names if args.scenario == "all" else [args.scenario]
    for name in chosen:
        if name not in names:
            raise CommandError("unknown scenario '%s'; known: %s" % (name, ", ".join(names)))
    mismatches = 0
    for name in chosen:
        events, m, hal = fake_scenarios.run(name, start_ms=args.start_ms)
        expect = fake_scenarios.find(name)[3]
        got = fake_scenarios.outcome_text(m)
        print("== %s: %s (expected %s), part %s" % (name, got, expect, hal.part_state()))
        for e in events:
            print("   " + trace_text.event_line(e))
        mismatches += got != expect
    return FAILED if mismatches else OK
