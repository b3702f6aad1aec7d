# `surepick monitor`: watch a running board, store everything in SQLite, survive resets.
# The loop is host/monitor/loop.py; the views are host/monitor/tui.py and plain.py.
import sys

from surepick.host.user_error import OK
from surepick.host.cli.options import add_port_argument, board_port

HELP = """\
Shows the board's state, current job, cycles and success rate, the last faults with their
reasons and readings, loop timing and link health. Every record of the board's flash log is
stored once in SQLite (keyed by board id and sequence number); on connect and after every
reconnect the monitor asks the board for the records it has not stored yet, so a reset, an
unplugged cable or a sleeping laptop loses nothing the board had committed. It reconnects
on its own when the port comes back. Garbage and corrupt frames are counted and skipped.

The monitor shares the board with other tools through the link hub (`surepick link --help`):
with it open, `surepick job start|abort`, `config`, `calibrate`, `deploy` and
`surepick link mpremote` work from another terminal. While mpremote or a deploy has the
board's console the monitor pauses and says so; it asks again when the console is back.

The live view's keys: s start a job (--pick/--place/--width/--attempts, else the last job the
board on this port accepted, else the reference job), a abort, c clear a fault, k calibrate
(p pot, i current zero); each asks y/n first. A banner says STALE when no telemetry came for
more than 1 s, NO LINK when the board is away, PAUSED while the console is lent.

One monitor records a board into a database: a second one on the same database only watches
(and takes over when the first one stops). Records the board's log rotated away before they
were fetched are counted (lost), never taken for a restarted board.

During a production run (`surepick job run`) the view shows it: cycle n of N, cycles an hour
and the time left (the board's clock), faults by reason, parts placed and slots skipped.

--plain prints one line per record (hello, event, fault, record) on stdout, a `run` line
whenever a production run's figures change, and REPL text and link notes on stderr. Stop
with Ctrl-C (or q in the live view)."""


def add_arguments(parser):
    import argparse
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.description = (parser.description or "") + "\n\n" + HELP
    add_port_argument(parser)
    parser.add_argument("--db", metavar="FILE",
                        help="SQLite file (default: monitor.sqlite3 in the user data directory)")
    parser.add_argument("--plain", action="store_true",
                        help="one line per record on stdout instead of the live view")
    parser.add_argument("--telemetry", action="store_true",
                        help="with --plain, also print every telemetry frame")
    parser.add_argument("--board-id", metavar="ID",
                        help="the board's id, when it cannot say (an older firmware that was "
                             "already running when the monitor started)")
    parser.add_argument("--poll", type=float, default=1.0, metavar="S",
                        help="ask for new log records at most this often while events arrive "
                             "(default 1 s)")
    parser.add_argument("--seconds", type=float, metavar="S",
                        help="stop after this many seconds (scripts and tests)")
    from surepick.host.cli.options import pose as _pose
    parser.add_argument("--pick", type=_pose, metavar="X,Y,Z[,PITCH]", help="the live view's job: pick pose, mm")
    parser.add_argument("--place", type=_pose, metavar="X,Y,Z[,PITCH]", help="the live view's job: place pose, mm")
    parser.add_argument("--width", type=float, metavar="MM", help="the live view's job: part width, mm")
    parser.add_argument("--attempts", type=int, metavar="N", help="the live view's job: max attempts")


def run(args):
    import threading

    from surepick.host.link import hub_client
    from surepick.host.monitor.loop import MonitorLoop
    from surepick.host.monitor.status import BoardStatus
    from surepick.host.monitor.store import Store, default_db_path

    port = board_port(args)
    job = _job(args)
    db = args.db or default_db_path()
    store = Store(db)
    status = BoardStatus(port, args.port)
    stop = threading.Event()
    if args.seconds:
        threading.Timer(args.seconds, stop.set).start()
    try:
        if args.plain:
            from surepick.host.monitor.plain import PlainPrinter
            printer = PlainPrinter(status, telemetry=args.telemetry)
            print("surepick monitor: %s -> %s" % (port, db), file=sys.stderr, flush=True)

            def on_text(data):
                status.add_text(data)
                printer.text(data)

            loop = MonitorLoop(port, store, status, board_id=args.board_id, log_poll_s=args.poll,
                               out=printer, on_text=on_text, hub=hub_client.AUTO)
            try:
                loop.run(stop)
            except KeyboardInterrupt:
                stop.set()
        else:
            from surepick.host.monitor.tui import run_tui
            loop = MonitorLoop(port, store, status, board_id=args.board_id, log_poll_s=args.poll,
                               hub=hub_client.AUTO)
            run_tui(loop, status, stop, db, job)
    finally:
        stop.set()
        store.close()
    return OK


def _job(args):
    # The job the live view's `s` key starts when given here (any part given; the rest default).
    from surepick.host.cli.errors import CommandError
    from surepick.host.link.jobs import DEFAULT_PICK_MM, DEFAULT_PLACE_MM, DEFAULT_WIDTH_MM, JobSpec
    if args.pick is None and args.place is None and args.width is None and args.attempts is None:
        return None
    spec = JobSpec(args.pick or DEFAULT_PICK_MM, args.place or DEFAULT_PLACE_MM,
                   DEFAULT_WIDTH_MM if args.width is None else args.width, args.attempts)
    try:
        spec.link_args()
    except ValueError as e:
        raise CommandError(str(e)) from None
    return spec
