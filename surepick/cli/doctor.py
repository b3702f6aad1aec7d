# `surepick doctor [--port P]`: check a board and say, line by line, OK / WARN / FAIL with the
# command that fixes each problem (host/doctor.py does the checking). Exit 0 when nothing
# failed, 1 otherwise.
import sys

from surepick.cli import exitcodes
from surepick.cli.options import add_port_argument, board_port

HELP = """\
Checks, in order: the port answers; the firmware runs (or is stopped at the REPL, or missing);
a latched fault; settings that differ from the defaults; the flash log (records, holes, drops,
the newest record); the wiring, from 1.5 s of the board's readings at rest (e-stop open, pot stuck
at a rail, servo rail divider missing or mismatched, beam always broken, current zero drifted); at the REPL: the deploy manifest against what `surepick deploy` would ship
from this host, the files against the manifest, free flash.

The REPL look stops the firmware: it is skipped while a job runs (--no-repl skips it always),
and a firmware that was running is soft-reset afterwards. Through the link hub (when the
monitor or another tool is connected) it all works while they stay connected."""


def add_arguments(parser):
    import argparse
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.description = (parser.description or "") + "\n\n" + HELP
    add_port_argument(parser)
    parser.add_argument("--no-repl", action="store_true",
                        help="only what the link tells (never stop the firmware for the REPL look)")


def run(args):
    from surepick.host.doctor import Doctor
    port = board_port(args)
    print("surepick doctor: %s" % port, flush=True)
    d = Doctor(port, progress=lambda msg: print("  ... %s" % msg, file=sys.stderr, flush=True),
               repl=not args.no_repl)
    for f in d.examine():
        print("%-5s %-9s %s" % (f.level, f.topic, f.text), flush=True)
        if f.fix and f.level != "OK":
            print("%-15s fix: %s" % ("", f.fix), flush=True)
    fails = sum(1 for f in d.findings if f.level == "FAIL")
    warns = sum(1 for f in d.findings if f.level == "WARN")
    print("%s: %d failed, %d warning%s" % ("problems found" if fails else "healthy" if not warns else "usable",
                                          fails, warns, "" if warns == 1 else "s"))
    return exitcodes.FAILED if fails else exitcodes.OK
