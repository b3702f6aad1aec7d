# `surepick monitor`: watch a running board, store everything in SQLite, survive resets.
# The loop is host/monitor/loop.py; the views are host/monitor/tui.py and plain.py.
import sys

from surepick.cli import exitcodes
from surepick.cli.options import add_port_argument, board_port

HELP = """\
Shows the board's state, current job, cycles and success rate, the last faults with their
reasons and readings, loop timing and link health. Every record of the board's flash log is
stored once in SQLite (keyed by board id and sequence number); on connect and after every
reconnect the monitor asks the board for the records it has not stored yet, so a reset, an
unplugged cable or a sleeping laptop loses nothing the board had committed. It reconnects
on its own when the port comes back. Garbage and corrupt frames are counted and skipped.

--plain prints one line per record (hello, event, fault, record) on stdout and REPL text
and link notes on stderr. Stop with Ctrl-C (or q in the live view)."""


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


def run(args):
    import threading

    from surepick.host.monitor.loop import MonitorLoop
    from surepick.host.monitor.status import BoardStatus
    from surepick.host.monitor.store import Store, default_db_path

    port = board_port(args)
    db = args.db or default_db_path()
    store = Store(db)
    status = BoardStatus(port)
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
                               out=printer, on_text=on_text)
            try:
                loop.run(stop)
            except KeyboardInterrupt:
                stop.set()
        else:
            from surepick.host.monitor.tui import run_tui
            loop = MonitorLoop(port, store, status, board_id=args.board_id, log_poll_s=args.poll)
            run_tui(loop, status, stop, db)
    finally:
        stop.set()
        store.close()
    return exitcodes.OK
