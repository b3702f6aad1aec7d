# `surepick log export|stats`: read the monitor's SQLite store (never writes to it).
#   export  every stored flash-log record as CSV or JSON, with names for states and codes
#           (host/monitor/export.py), or as a run record (records/board_recording.py)
#   stats   faults by code and by state, cycles between faults, success rate over time
#           (host/monitor/stats.py)
import sys

from surepick.host.user_error import OK
from surepick.host.cli.errors import CommandError, cannot


def add_arguments(parser):
    sub = parser.add_subparsers(dest="log_action", metavar="ACTION", required=True)
    ex = sub.add_parser("export", help="write the stored records as CSV or JSON",
                        description="Write every stored flash-log record (oldest first) to stdout "
                                    "or --out, with state, kind and reason names beside the numbers.")
    ex.add_argument("--db", required=True, metavar="FILE", help="the monitor's SQLite file")
    ex.add_argument("--format", metavar="csv|json", help="csv or json (required unless --run)")
    ex.add_argument("--run", metavar="DIR",
                    help="write a run record instead (docs/run-record.md, kind board-recording): "
                         "run.json (with the board's config and arm), cycles.jsonl, events.csv and a header-only "
                         "ticks.csv")
    ex.add_argument("--since", metavar="WHEN",
                    help="only records received since: an ISO date/time (2026-05-01 or "
                         "2026-05-01T10:00), an age (30m, 12h, 7d) or seq:N (log seq above N)")
    ex.add_argument("--board", metavar="ID", help="only this board")
    ex.add_argument("--out", metavar="FILE", help="write here instead of stdout")
    ex.add_argument("--force", action="store_true", help="with --run: clear DIR's run files first")
    st = sub.add_parser("stats", help="faults by code and state, cycles between faults, success rate",
                        description="Summarise the stored records: faults by code and by state, "
                                    "successful cycles between faults, success rate per hour and per boot.")
    st.add_argument("--db", required=True, metavar="FILE", help="the monitor's SQLite file")
    st.add_argument("--board", metavar="ID", help="only this board")
    st.add_argument("--json", action="store_true", help="print the summary as JSON")


def run(args):
    return export(args) if args.log_action == "export" else stats(args)


def _open_store(path):
    # The store, read-only; a missing file is bad input, not an empty store.
    import os

    from surepick.host.monitor.store import Store
    if not os.path.isfile(path):
        raise CommandError("no database at %s (run `surepick monitor --db %s` first)" % (path, path))
    return Store(path, readonly=True)


def _since(args):
    from surepick.host.monitor.export import parse_since
    if not args.since:
        return None
    try:
        return parse_since(args.since)
    except ValueError as e:
        raise CommandError(str(e)) from None


def export(args):
    from surepick.host.monitor.export import FORMATS, write_records
    if args.run:
        return export_run(args)
    if args.format not in FORMATS:
        raise CommandError("unknown format %r: use csv or json" % args.format)
    since = _since(args)
    rows = _open_store(args.db).records(args.board, since)
    if not args.out:
        write_records(rows, sys.stdout, args.format)
        return OK
    try:
        with open(args.out, "w", newline="") as out:
            n = write_records(rows, out, args.format)
    except OSError as e:
        raise cannot("write", args.out, e) from None
    print("wrote %d records to %s" % (n, args.out), file=sys.stderr)
    return OK


def export_run(args):
    import json
    import os

    from surepick.host.cli.outputs import prepare_run_dir
    from surepick.host.records import board_recording
    since = _since(args)
    store = _open_store(args.db)
    recording = board_recording.build(store, args.board, since,
                                      source={"tool": "surepick log export --run", "db": args.db})
    prepare_run_dir(args.run, force=args.force, flag="--run", can_resume=False)
    try:
        cycles, events = board_recording.write(args.run, recording)
    except OSError as e:
        raise cannot("write the run record in", args.run, e) from None
    print("wrote a run record of %d cycles (%d events) to %s (kind board-recording: events and the board's "
          "config, no per-tick trace: `surepick compare` uses it, replay and fit need a sim, virtual-board or HIL "
          "record)" % (cycles, events, args.run), file=sys.stderr)
    with open(os.path.join(args.run, "run.json")) as f:
        meta = json.load(f)
    print("its config: %s" % meta["config_source"], file=sys.stderr)
    print("its arm: %s" % meta["arm_source"], file=sys.stderr)
    return OK


def stats(args):
    import json

    from surepick.host.monitor.stats import summarise
    store = _open_store(args.db)
    s = summarise(store.records(args.board), store.gaps(args.board))
    if args.json:
        print(json.dumps(s, indent=1))
        return OK
    pct = lambda v: "-" if v is None else "%.1f %%" % v  # noqa: E731
    print("%d records; cycles ok %d, failed %d, success %s"
          % (s["records"], s["cycles_ok"], s["cycles_failed"], pct(s["success_rate"])))
    if s["lost_to_rotation"]:
        print("%d records were rotated off the board before the monitor fetched them (not in these figures)"
              % s["lost_to_rotation"])
    print("\nfaults by code:")
    for k, v in s["faults_by_code"].items() or [("(none)", "")]:
        print("  %-22s %s" % (k, v))
    print("\nfaults by state:")
    for k, v in s["faults_by_state"].items() or [("(none)", "")]:
        print("  %-22s %s" % (k, v))
    b = s["cycles_between_faults"]
    print("\ncycles between faults: %s faults, mean %s, min %s, max %s; %d since the last fault"
          % (b["faults"], b["mean"], b["min"], b["max"], b["since_last_fault"]))
    print("\nsuccess rate by hour (received):")
    for h, v in s["success_rate_by_hour"].items():
        print("  %s  ok %4d  failed %4d  %s" % (h, v["ok"], v["failed"], pct(v["rate"])))
    print("\nsuccess rate by boot:")
    for h, v in s["success_rate_by_boot"].items():
        print("  boot %-6s ok %4d  failed %4d  %s" % (h, v["ok"], v["failed"], pct(v["rate"])))
    return OK
