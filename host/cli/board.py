# `surepick board`: run the firmware on a virtual Pico (the real unix `micropython` binary)
# and serve its REPL where mpremote can reach it:
#   surepick board --flash build/flash            -> socket://127.0.0.1:PORT and /dev/pts/N
#   surepick board --pty                          -> /dev/pts/N only
#   mpremote connect socket://127.0.0.1:PORT fs cp main.py :main.py + soft-reset
#   surepick board --flash F --scenario nominal --seed 3      -> the arm is the MuJoCo plant,
#                                                               in lockstep virtual time
#   ... --scenario brownout_mid_lift                          -> the rail browns out in LIFT and
#                                                               the controller restarts
#   ... --power-cut-at-ms 5000 | --power-cut-random SEED      -> a power cut in virtual time
#   surepick board --reset-world --port socket://127.0.0.1:PORT -> the running board's world back
#                                                               to its start (the part respawned)
import errno
import sys

from surepick.host.user_error import FAILED, OK
from surepick.host.cli.errors import CommandError, cannot
from surepick.host.cli.board_ready import READY_PREFIX
from surepick.host.cli.options import add_port_argument, board_port


def add_arguments(parser):
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--pty", action="store_true",
                       help="serve on a new pseudo-terminal only (by default the board serves "
                            "a pty as well as TCP; it prints both)")
    where.add_argument("--listen", metavar="HOST:PORT", nargs="?", const="127.0.0.1:0",
                       help="the TCP address (default 127.0.0.1:0: a free loopback port); "
                            "connect with socket://HOST:PORT. `mpremote repl` needs the pty: "
                            "mpremote 1.29's REPL cannot wait on a socket:// port")
    parser.add_argument("--allow-remote", action="store_true",
                        help="allow a non-loopback --listen address (the REPL has no password)")
    parser.add_argument("--flash", metavar="DIR",
                        help="host directory used as the board's flash filesystem "
                             "(default: a new temporary directory, kept and printed)")
    parser.add_argument("--scenario", metavar="NAME",
                        help="attach the MuJoCo arm of this sim scenario (see `surepick sim "
                             "scenarios`); without it the board has no plant (REPL only)")
    parser.add_argument("--seed", metavar="N", type=int, help="plant random seed (default 0)")
    parser.add_argument("--arm", metavar="NAME|FILE",
                        help="the arm on the board: a preset (`surepick arm list`) or a description file. The flash's "
                        "/arm.json becomes it (as `deploy --arm` ships it; an emulated flash image that holds "
                        "another one is refused) and the --scenario world is built from it. Without it the world "
                        "is the flash's own /arm.json (none: the reference arm)")
    parser.add_argument("--realtime", action="store_true",
                        help="with --scenario: the arm moves no faster than the wall clock, as a real one "
                             "does (for a person at the keyboard: a job then lasts seconds you can act in). "
                             "By default virtual time runs as fast as the firmware ticks; the run is the "
                             "same either way")
    cut = parser.add_mutually_exclusive_group()
    cut.add_argument("--power-cut-at-ms", metavar="T", type=int,
                     help="cut the controller's power at plant time T ms (virtual time); it "
                          "boots again with its flash kept")
    cut.add_argument("--power-cut-random", metavar="SEED", type=int,
                     help="cut the power once at a moment drawn from SEED (printed)")
    parser.add_argument("--model", metavar="BOARD", choices=sorted(_models()),
                        help="report a given Pico: %s. The board then gives that board's machine string "
                             "and native-code architecture (sys.implementation) and has its chip's watchdog "
                             "and other registers behind machine.mem32, for deploy and doctor to identify "
                             "and use. Firmware compiled for that chip cannot run here: deploy --source runs "
                             "(default: the unix port as it is)" % ", ".join(sorted(_models())))
    parser.add_argument("--micropython", metavar="PATH",
                        help="the unix micropython binary (default: the venv's, then PATH)")
    parser.add_argument("--quiet", action="store_true", help="no supervisor notes on stderr")
    parser.add_argument("--engine", choices=("vboard", "rp2040"), default="vboard",
                        help="vboard: the unix micropython as a Pico (default); rp2040: the real MicroPython "
                             "RP2040 image in the rp2040js emulator (engines/rp2040), with the firmware installed; "
                             "--flash is then a flash image FILE (loaded if it exists, saved on exit)")
    parser.add_argument("--uf2", metavar="FILE", help="--engine rp2040: the MicroPython RPI_PICO image "
                        "(default: $SUREPICK_RP2040_UF2, then ../shared/rp2040/firmware.uf2)")
    parser.add_argument("--bare", action="store_true",
                        help="--engine rp2040: MicroPython only, no firmware installed (try `surepick deploy`)")
    parser.add_argument("--reset-world", action="store_true",
                        help="do not start a board: put the world of the virtual board running at "
                             "--port back to its start (the part respawned on its pad, the arm "
                             "at home) for its next job; the board keeps running")
    parser.add_argument("--standin", metavar="SEED", type=int,
                        help="a stand-in bench: an uncalibrated kit whose servos carry hidden zero offsets "
                             "(up to 15 deg), directions and pulse ranges (10%%) drawn from SEED (docs/bringup.md), "
                             "its part the arm description's own (bench.part_mm, part_g) in place of the usual "
                             "25 mm cube; implies --scenario nominal unless given")
    parser.add_argument("--print-truth", action="store_true",
                        help="with --standin: print its hidden servo calibration as JSON and exit")
    add_port_argument(parser)  # only with --reset-world: the running board, as for every verb


def _models():
    from surepick.firmware.hal import rp2_chips
    return rp2_chips.MODELS


def _list(address, kind, flash, world_service, scenario=None, seed=None, control=None):
    # In the per-user board registry while it serves: a verb without --port (auto) finds it, and
    # a tool given its port finds its control channel (bring-up's stand-in person), if it has one.
    from surepick.host.vboard.registry import Registration
    if world_service is not None:
        scenario, seed = world_service.scenario_name, world_service.seed
    entry = {"console": [address], "kind": kind, "flash": str(flash) if flash else None,
             "scenario": scenario, "seed": seed}
    if control is not None:
        entry["control"] = control
    return Registration(entry)


def _note(msg):
    print("surepick-board: " + msg, file=sys.stderr, flush=True)


def run(args):
    if args.print_truth or args.standin is not None:
        from surepick.host.cli import board_standin
        if args.print_truth:
            return board_standin.print_truth(args)
        board_standin.check(args)
    if args.reset_world:
        return _reset_world(args)
    if args.port is not None:
        raise CommandError("--port is for --reset-world (a board to start serves on --listen or --pty)")
    import signal
    import threading

    if args.engine == "rp2040":
        if args.model:
            raise CommandError("--model is for the virtual board: the emulated RP2040 is a Pico already")
        return _run_rp2040(args)

    from surepick.host.vboard import VirtualBoard
    from surepick.host.engines import board_arm
    from surepick.host.engines.vboard_world import make_world_service, random_cut_ms, wire
    arm = _arm(args)

    stop = threading.Event()

    def on_signal(signum, frame):
        stop.set()

    if args.flash:
        import os
        try:
            os.makedirs(args.flash, exist_ok=True)     # like `mkdir -p`: a new board starts empty
        except OSError as e:
            raise cannot("use --flash", args.flash, e) from None
    try:
        if args.realtime and args.scenario is None:
            raise ValueError("--realtime paces the plant: give --scenario too")
        arm_note = ""
        if args.flash:
            arm, arm_note = board_arm.for_flash_dir(args.flash, arm)
        plant_params, default_part = _standin(args, arm)
        world_service = make_world_service(args.scenario, args.seed, args.power_cut_at_ms,
                                           args.power_cut_random, realtime=args.realtime, arm=arm,
                                           plant_params=plant_params, default_part=default_part)
        vboard = VirtualBoard(
            args.flash, pty=True, listen=None if args.pty else (args.listen or "127.0.0.1:0"),
            allow_remote=args.allow_remote,
            world_service=world_service, scenario=args.scenario, seed=args.seed, model=args.model,
            micropython=args.micropython, log=None if args.quiet else _note,
            on_fail=lambda e: stop.set())
        wire(vboard, world_service)
        if not args.flash:
            arm, arm_note = board_arm.for_flash_dir(vboard.flash_dir, arm)
    except (ValueError, OSError) as e:  # a bad --listen, --flash or scenario
        raise CommandError(str(e)) from None
    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        vboard.start()
        if vboard.flash_is_temporary:
            _note("flash is a new temporary directory %s (kept; reuse it with --flash)"
                  % vboard.flash_dir)
        else:
            _note("flash is %s" % vboard.flash_dir)
        if arm_note:
            _note(arm_note)
        if world_service is not None:
            _note("plant: scenario %s, seed %d, lockstep virtual time%s"
                  % (world_service.scenario_name, world_service.seed,
                     ", paced by the wall clock" if args.realtime else ""))
            if args.power_cut_random is not None:
                _note("power cut at %d ms of plant time" % random_cut_ms(args.power_cut_random))
        for address in vboard.addresses:
            print(READY_PREFIX + address, flush=True)
        # The board lists itself in the registry (vboard/control.py, the format and directory
        # vboard/registry.py), with its control address for --reset-world: no second entry.
        while not stop.wait(3600):
            pass
    except OSError as e:
        if e.errno == errno.EADDRINUSE:
            raise CommandError("cannot listen on %s: the port is in use (another board, or another program, "
                               "has it): choose another port, or --listen without one for a free port"
                               % args.listen) from None
        raise CommandError(str(e), FAILED) from None
    finally:
        vboard.close()
        for s, h in old.items():
            signal.signal(s, h)
    if vboard.error is not None:
        raise CommandError(str(vboard.error), FAILED)
    if not args.quiet:
        _note("stopped")
    return OK


def _standin(args, arm):
    # -> (plant params, part) of the stand-in bench, (None, None) without --standin. arm: the
    # board's (--arm, else the flash's /arm.json; None the reference). The part is the
    # description's (bench.part_mm, part_g), for the usual cube.
    if args.standin is None:
        return None, None
    from surepick.host.cli import board_standin
    return board_standin.plant_params(args, arm), board_standin.bench_part(arm)


def _run_rp2040(args):
    import signal
    import threading

    from surepick.host.engines.rp2040.chip import find_uf2
    from surepick.host.engines.rp2040.serve import ChipBoard
    from surepick.sim import scenarios
    if args.power_cut_at_ms is not None or args.power_cut_random is not None or args.micropython:
        raise CommandError("--power-cut-* and --micropython are for --engine vboard")
    if args.realtime:
        raise CommandError("--realtime is for --engine vboard (the emulated chip runs slower than real time)")
    if args.listen and not args.allow_remote:
        host = args.listen.rsplit(":", 1)[0].strip("[]")
        if host not in ("127.0.0.1", "localhost", "::1"):
            raise CommandError("--engine rp2040 serves on loopback only (the REPL has no password)")
    if args.scenario is not None and args.scenario not in scenarios.SCENARIOS:
        raise CommandError("unknown scenario '%s'; valid scenarios: %s"
                           % (args.scenario, ", ".join(sorted(scenarios.SCENARIOS))))
    uf2 = find_uf2(args.uf2)            # FirmwareMissing (bad input) names --uf2
    note = (lambda m: None) if args.quiet else _note
    board = ChipBoard(uf2, flash=args.flash, pty=args.pty, listen=args.listen or "127.0.0.1:0",
                      scenario=args.scenario, seed=args.seed, bare=args.bare, log=note, arm=_arm(args))
    stop = threading.Event()
    old = {s: signal.signal(s, lambda *a: stop.set()) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        try:
            board.start()                # an EmulatorError is a failure (exit 1)
        except ValueError as e:          # --arm against a saved image that holds another description
            raise CommandError(str(e)) from None
        note("emulated RP2040 (%s); flash: %s" % (uf2, args.flash or ("MicroPython only" if args.bare
                                                                       else "the firmware, installed")))
        if board.arm is not None:
            note("arm: %s (%s, the flash image's /arm.json)" % (board.arm.name, board.arm.kind))
        if args.scenario is not None:
            note("plant: scenario %s, seed %d, lockstep emulated time" % (args.scenario, args.seed or 0))
        if not args.bare:
            # "serving on" means the firmware answers, as when a Pico's firmware is up
            note("waiting for the firmware to start (MicroPython boots first: about 15 s emulated)")
            if not board.wait_firmware():
                note("the firmware did not speak within 180 s: serving the chip anyway (`surepick doctor` "
                     "says what runs on it)")
        print(READY_PREFIX + board.address, flush=True)
        listed = _list(board.address, "emulated RP2040", args.flash, None, args.scenario, args.seed,
                       board.control.address if board.control is not None else None)
        try:
            while not stop.wait(0.5):
                if not board.running:
                    break
        finally:
            listed.remove()
    finally:
        board.close()
        for s, h in old.items():
            signal.signal(s, h)
    if board.error is not None:
        raise CommandError(str(board.error), FAILED)
    note("stopped")
    return OK


def _reset_world(args):
    from surepick.host.vboard.control import ControlError, find_board, request
    port = board_port(args)    # --port, else the default (auto: the one running board)
    entry = find_board(port)   # ControlError (bad input) when no virtual board serves it
    if not entry.get("control"):
        raise CommandError("%s is an %s: it has no world to reset (only `surepick board` "
                           "--engine vboard does)" % (port, entry.get("kind") or "other board"))
    _check_world_free(args, port)
    try:
        r = request(entry["control"], "reset-world")
    except ControlError as e:
        raise CommandError("the world was not reset: %s" % e, FAILED) from None
    outcome, reason = r["previous"]
    print("world reset: world %d of scenario %s is ready (the previous world, as judged: %s%s)"
          % (r["world"], entry.get("scenario"), outcome, ": " + reason if reason else ""))
    return OK


def _check_world_free(args, port):
    # Ask the firmware first, as a person at a bench would look at the arm: a part put back on its
    # pad while the firmware believes it holds one (or while a job, a rescue, a calibration or
    # teleop moves the arm) makes the next rescue or job act on a world that is not there.
    from surepick.host.cli.options import board_link
    from surepick.host import board_state
    from surepick.host.link.errors import LinkError
    from surepick.shared_fsm import states
    try:
        with board_link(args, "board --reset-world") as c:
            view = board_state.read(c)
    except LinkError as e:
        raise CommandError("the world was not reset: the firmware could not be asked first (%s)" % e,
                           FAILED) from None
    first = board_state.world_reset_blocker(view) if view is not None else None
    if first is None:
        return
    if first.key in ("holding", "arm_unpowered"):
        why = ("%s; the part would be put back on its pad under a firmware that believes it holds one"
               % board_state.shows(first, view))
    else:
        why = "the arm is busy (state %s: %s)" % (states.name(view.state), board_state.shows(first, view))
    raise CommandError("the world was not reset: %s; way out: %s, then reset the world"
                       % (why, board_state.way_out(first, args.port)), FAILED)


def _arm(args):
    # --arm NAME|FILE -> an Arm, or None (the flash's own, or the reference); bad input named, exit 2.
    if getattr(args, "arm", None) is None:
        return None
    from surepick.host.cli.arm import load_arm
    return load_arm(args.arm)[0]
