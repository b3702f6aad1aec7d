# The `surepick` command: one table of verbs, each a module with add_arguments(parser) and
# run(args) -> exit code. Modules are imported only when their verb runs, so `--help` and
# light verbs stay fast and do not pull in MuJoCo.
import argparse
import importlib
import sys

# (verb, module under surepick, one-line help). Keep alphabetical within a group.
COMMANDS = [
    ("board", "cli.board", "run the firmware on a virtual Pico served on a pty or loopback TCP (for mpremote)"),
    ("calibrate", "cli.calibrate", "calibrate the jaw pot (closed on nothing) or the current-sense zero on the running firmware"),
    ("compare", "cli.compare", "compare two run records phase by phase (outcomes, states, dwell, retries, VERIFY readings, holding current, loop timing); exit 1 beyond tolerances"),
    ("config", "cli.config", "read or change one board setting over the link (persisted on the board)"),
    ("demo", "cli.demo", "run the shared state machine against the scripted fake HAL and print its transitions"),
    ("deploy", "cli.deploy", "copy the firmware to a board over mpremote: compiled, hashed on the board, only changed files, atomic"),
    ("fit", "cli.fit", "fit the MuJoCo plant's parameters to a run record's sensor traces; writes PLANT.json for `sim run --plant`"),
    ("hil", "cli.hil", "hardware in the loop: the board's firmware on the host's MuJoCo plant over the link (lockstep or real time), judged like sim runs"),
    ("job", "cli.job", "start a pick-and-place job on a board over the link (and abort, clear, status)"),
    ("log", "cli.log", "export the monitor's SQLite record store as CSV/JSON, or summarise faults and success rate"),
    ("monitor", "cli.monitor", "live view of a running board; stores every log record once in SQLite, back-fills after resets"),
    ("replay", "cli.replay", "replay a run record's readings through the shared machine; mark where it decides differently"),
    ("sim", "cli.sim", "simulate pick-and-place on the MuJoCo plant: run, batch, scenarios"),
]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


def build_parser(verb=None):
    # Only the chosen verb's module is imported (for its arguments): --help and light verbs
    # stay fast, and one verb's missing dependency cannot break the others.
    parser = argparse.ArgumentParser(
        prog="surepick",
        description="Pick-and-place firmware, simulator and host tools for a hobby-servo gripper arm "
        "on an RP2040. Every verb has its own --help.",
    )
    parser.add_argument("--version", action="store_true", help="print versions and exit")
    sub = parser.add_subparsers(dest="verb", metavar="VERB")
    for name, modname, text in COMMANDS:
        p = sub.add_parser(name, help=text, description=text)
        p.set_defaults(_module=modname)
        if name == verb:
            _module(modname).add_arguments(p)
    return parser


def _module(modname):
    return importlib.import_module("surepick." + modname)


def _verb_of(argv):
    names = [c[0] for c in COMMANDS]
    for a in argv:
        if not a.startswith("-"):
            return a if a in names else None
    return None


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        parser = build_parser(_verb_of(argv))
    except ImportError as e:
        print("surepick %s is not available: %s" % (_verb_of(argv), e), file=sys.stderr)
        return EXIT_USAGE
    args = parser.parse_args(argv)
    if args.version:
        from surepick import __version__
        print("surepick", __version__)
        return EXIT_OK
    if not args.verb:
        parser.print_help()
        return EXIT_USAGE
    try:
        return _module(args._module).run(args)
    except KeyboardInterrupt:
        print("surepick: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
