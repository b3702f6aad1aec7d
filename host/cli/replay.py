# `surepick replay RUN`: feed a run record's readings and arrivals through the shared machine on
# the host and print its transitions, marking every point where the replay decides otherwise
# (records/replay.py).
from surepick.host.user_error import FAILED, OK


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
    from surepick.host.records import runrecord
    from surepick.host.records.replay import replay, transcript, verdict
    rec = runrecord.load(args.run)
    chosen = set(args.cycle) if args.cycle else None
    runrecord.require_ticks(rec, "replay")
    runrecord.require_jobs(rec, "replay", chosen)
    results = replay(rec, chosen)
    m = rec.meta
    print("replay of %s: %s run, scenario %s, seed %s, %d cycle(s)" % (
        args.run, m["kind"], m["scenario"], m["seed"], len(rec.cycles)))
    diverged = 0
    for r in results:
        print("== cycle %d: %d ticks, %d recorded events, %d replayed: %s" % (
            r.cycle, r.ticks, len(r.recorded), len(r.events), verdict(r)))
        for line in transcript(r, args.quiet):
            print(line)
        diverged += not r.identical()
    print("%d of %d cycle(s) reproduced exactly%s" % (
        len(results) - diverged, len(results), "" if not diverged else "; %d diverged" % diverged))
    return OK if not diverged else FAILED
