# The `surepick` command: one table of verbs, each a module with add_arguments(parser) and
# run(args) -> exit code. A verb that cannot do its job raises an error meant for the user (a
# UserError: host/user_error.py; the verb's own CommandError, cli/errors.py); main prints it once
# and exits with its code. Any other exception is a bug: its traceback shows. Modules are imported
# only when their verb runs, so `--help` and light verbs stay fast and do not pull in MuJoCo.
import argparse
import importlib
import os
import sys

from surepick.firmware.settings import SettingsError
from surepick.host.user_error import FAILED, INTERRUPTED, OK, PIPE_CLOSED, USAGE, UserError
from surepick.shared_fsm.arm import ArmError, Unreachable
from surepick.shared_fsm.config import ConfigError
from surepick.host.cli.errors import CommandError

# (verb, module under surepick, one-line help). Keep alphabetical.
COMMANDS = [
    ("arm", "cli.arm", "arm descriptions: list the presets, show one as TOML, check a file (reach map), write its MuJoCo model"),
    ("board", "cli.board", "run the firmware on a virtual Pico served on a pty or loopback TCP (for mpremote)"),
    ("bringup", "cli.bringup", "guided, resumable bring-up of a freshly wired arm: the input checks, each servo's direction, zero and pulse range and the jaw pot into the arm description, then a dry cycle and the first real cycle"),
    ("calibrate", "cli.calibrate", "calibrate the jaw pot (closed on nothing) or the current-sense zero on the running firmware"),
    ("compare", "cli.compare", "compare two run records phase by phase (outcomes, states, dwell, retries, VERIFY readings, holding current, loop timing); exit 1 beyond tolerances"),
    ("config", "cli.config", "read or change one board setting over the link (persisted on the board)"),
    ("demo", "cli.demo", "run the shared state machine against the scripted fake HAL and print its transitions"),
    ("deploy", "cli.deploy", "copy the firmware to a board over mpremote: compiled, hashed on the board, only changed files, atomic"),
    ("doctor", "cli.doctor", "check a board: reachable, firmware deployed and current, running, faults, config, log health, free flash; each line OK/WARN/FAIL with the fix"),
    ("fit", "cli.fit", "fit the MuJoCo plant's parameters to a run record's sensor traces; writes PLANT.json for `sim run --plant`"),
    ("hil", "cli.hil", "hardware in the loop: the board's firmware on the host's MuJoCo plant over the link (lockstep or real time), judged like sim runs"),
    ("install-micropython", "cli.install_micropython", "copy the pinned, checksummed MicroPython image for your Pico onto it while it is in BOOTSEL mode (its RPI-RP2 / RP2350 drive)"),
    ("job", "cli.job", "start a pick-and-place job on a board over the link (and abort, clear, status), or a "
                       "production run of many (run, stop, report)"),
    ("link", "cli.link", "share one board between tools: the link hub that owns the port (serve, status, stop) and mpremote through it"),
    ("log", "cli.log", "export the monitor's SQLite record store as CSV/JSON or as a run record, or summarise faults and success rate"),
    ("monitor", "cli.monitor", "live view of a running board; stores every log record once in SQLite, back-fills after resets"),
    ("replay", "cli.replay", "replay a run record's readings through the shared machine; mark where it decides differently"),
    ("sim", "cli.sim", "simulate pick-and-place on the MuJoCo plant: run, batch, sweep, scenarios"),
    ("teach", "cli.teach", "teach a job by moving the arm (teleop into the sim or a board): marks record pick, place, approach heights and the part width into a job file"),
    ("teleop", "cli.teleop", "drive the arm from a 6-DoF pose stream (recorded file, keyboard, OpenVR, SpaceMouse) into the MuJoCo arm or a board; logs teleop.csv and summary.json"),
]

EXIT_HELP = ("exit status: %d done (the run, comparison or job said yes), %d it said no or the board "
             "failed, %d bad usage, %d interrupted"
             % (OK, FAILED, USAGE, INTERRUPTED))


def build_parser(verb=None):
    # Only the chosen verb's module is imported (for its arguments): --help and light verbs
    # stay fast, and one verb's missing dependency cannot break the others.
    parser = argparse.ArgumentParser(
        prog="surepick",
        description="Pick-and-place firmware, simulator and host tools for a hobby-servo gripper arm "
        "on an RP2040. Every verb has its own --help.",
        epilog=EXIT_HELP,
    )
    parser.add_argument("--version", action="store_true", help="print versions and exit")
    sub = parser.add_subparsers(dest="verb", metavar="VERB")
    for name, modname, text in COMMANDS:
        p = sub.add_parser(name, help=text, description=text)
        p.set_defaults(_module=modname)
        if name == verb:
            _module(modname).add_arguments(p)
            _name_errors_after(p)
    return parser


def _module(modname):
    return importlib.import_module("surepick.host." + modname)


def _name_errors_after(parser):
    # Every (sub)parser stores its own prog ("surepick job start"): errors name what was run.
    parser.set_defaults(_prog=parser.prog)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for p in action.choices.values():
                _name_errors_after(p)


def _verb_of(argv):
    names = [c[0] for c in COMMANDS]
    for a in argv:
        if not a.startswith("-"):
            return a if a in names else None
    return None


def main(argv=None):
    try:
        return _main(argv)
    except BrokenPipeError:
        # The reader stopped reading (`| head -1`): stop quietly, as a pipe's writer does. Output
        # still buffered would fail again at exit, so it goes nowhere.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return PIPE_CLOSED


def _main(argv):
    argv = sys.argv[1:] if argv is None else list(argv)
    verb = _verb_of(argv)
    try:
        parser = build_parser(verb)
    except ImportError as e:
        return _fail("surepick %s" % verb, CommandError("not available: %s" % e, USAGE))
    args = parser.parse_args(argv)
    if args.version:
        from surepick.host import __version__
        print("surepick", __version__)
        return OK
    if not args.verb:
        parser.print_help()
        return USAGE
    prog = getattr(args, "_prog", "surepick " + args.verb)
    try:
        return _module(args._module).run(args)
    except KeyboardInterrupt:
        print("%s: interrupted" % prog, file=sys.stderr)
        return INTERRUPTED
    except UserError as e:
        return _fail(prog, e)
    except BOARD_SIDE_INPUT_ERRORS as e:
        return _fail(prog, e, USAGE)


# The board's own checks of its input (firmware/ and shared_fsm/ sit below host/ and cannot
# derive from UserError): each names the key or field at fault, so one that reaches here is a
# bad input told in one line (exit 2), like BadInput, not a traceback.
BOARD_SIDE_INPUT_ERRORS = (SettingsError, ConfigError, ArmError, Unreachable)


def _fail(prog, err, exit_code=None):
    print("%s: %s" % (prog, err), file=sys.stderr, flush=True)
    return err.exit_code if exit_code is None else exit_code


if __name__ == "__main__":
    sys.exit(main())
