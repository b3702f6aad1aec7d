# `surepick doctor [--port P]`: check a board and say, line by line, OK / WARN / FAIL with the
# command that fixes each problem (host/doctor.py does the checking). Exit 0 when nothing
# failed, 1 otherwise.
import sys

from surepick.host.user_error import FAILED, OK
from surepick.host.cli.options import add_port_argument, board_port

HELP = """\
Checks, in order: the port answers; the firmware runs (or is stopped at the REPL, or missing);
what the board is in that refuses a job (a latched fault, the e-stop, a part held, teleop, the
arm unpowered, ...) with the command that leaves each; settings that differ from the defaults;
the flash log (records, holes, drops, the newest record); the wiring, from 1.5 s of the board's
readings at rest (e-stop open, pot stuck at a rail, servo rail divider missing or mismatched,
beam always broken, current zero drifted); at the REPL: the deploy manifest against what
`surepick deploy` would ship from this host, the files against the manifest, free flash.

Everything before the REPL look is read over the link: the firmware keeps running and nothing
moves. The REPL look stops the firmware, and a firmware that was running is soft-reset
afterwards, which turns the servo PWM off (the arm goes limp): it is skipped, saying why and
what makes it safe, while a job, a rescue, a calibration or teleop runs, a part is held, the
arm is unpowered or away from its rest pose, or a cycle's marker is on flash. --no-repl skips
it always; --force looks anyway. Through the link hub (when the monitor or another tool is
connected) it all works while they stay connected."""


def add_arguments(parser):
    import argparse
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.description = (parser.description or "") + "\n\n" + HELP
    add_port_argument(parser)
    look = parser.add_mutually_exclusive_group()
    look.add_argument("--no-repl", action="store_true",
                      help="only what the link tells (never stop the firmware for the REPL look)")
    look.add_argument("--force", action="store_true",
                      help="do the REPL look even when the board is not at rest (the arm goes limp while "
                           "the firmware restarts; a held part may drop)")


def run(args):
    from surepick.host.doctor import Doctor
    port = board_port(args)
    print("surepick doctor: %s" % port, flush=True)
    d = Doctor(port, progress=lambda msg: print("  ... %s" % msg, file=sys.stderr, flush=True),
               repl=not args.no_repl, force=args.force)
    for f in d.examine():
        print("%-5s %-9s %s" % (f.level, f.topic, f.text), flush=True)
        if f.fix and f.level != "OK":
            print("%-15s fix: %s" % ("", f.fix), flush=True)
    fails = sum(1 for f in d.findings if f.level == "FAIL")
    warns = sum(1 for f in d.findings if f.level == "WARN")
    print("%s: %d failed, %d warning%s" % ("problems found" if fails else "healthy" if not warns else "usable",
                                          fails, warns, "" if warns == 1 else "s"))
    return FAILED if fails else OK
