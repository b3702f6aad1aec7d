# `surepick deploy`: put the firmware on a board (or the virtual board) in one command.
# The work is in host/deploy/; this module only parses arguments and prints.
from surepick.host.user_error import OK
from surepick.host.cli.options import add_force_arguments, add_port_argument, board_port

HELP = """\
Copies what the firmware manifest names (firmware/manifest.py) to /lib/surepick and
/main.py, compiled with the mpy-cross that matches the board's .mpy format (or as source with
--source). Files are hashed
on the board and only those that differ are copied; each is written under a temporary name
and renamed, so an interrupted deploy never leaves a half file (run it again to finish).
A manifest with versions and hashes is kept in /surepick-manifest.json. The board is then
soft-reset and the firmware's hello frame awaited. Compiled modules are cached (keyed by the
source's hash and the mpy-cross version) in the user cache directory, or $SUREPICK_MPY_CACHE,
so a warm deploy compiles nothing.

A board whose firmware reports the arm busy (a job, a recovery, a calibration, the arm still
moving) is refused, its state named: deploying interrupts the firmware (Ctrl-C and a soft reset).
--force first aborts the job through the link and waits until the board reports the arm at rest
with no servo moving (--rest-timeout), then deploys. A soft reset turns a Pico's servo PWM off:
the arm goes limp (docs/safety.md, taking over the board). A board that does not answer the link (no
firmware yet, a bare REPL) is not busy.

Exit status: 0 deployed (or nothing to do), 1 the board or the link failed or the arm is busy,
2 bad usage."""


def add_arguments(parser):
    import argparse
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.description = (parser.description or "") + "\n\n" + HELP
    add_port_argument(parser)
    parser.add_argument("--source", action="store_true",
                        help="ship .py sources instead of compiling to .mpy (for a look at the code on the "
                        "board: compiling the firmware at boot needs more heap than a Pico has beside it, "
                        "so a board with the sources may stop at boot with a MemoryError)")
    parser.add_argument("--no-wait", action="store_true",
                        help="reset the board but do not wait for the firmware's hello")
    parser.add_argument("--hello-timeout", type=float, default=15.0, metavar="S",
                        help="seconds to wait for the hello frame after the reset (default 15)")
    parser.add_argument("--no-cache", action="store_true",
                        help="compile every module again instead of using the .mpy cache")
    parser.add_argument("--arm", metavar="NAME|FILE",
                        help="ship this arm description (a preset or a file, docs/arm-description.md) as "
                        "/arm.json, checked first; without it the board keeps the /arm.json it has (none: the "
                        "reference arm)")
    parser.add_argument("--replace-servo-settings", action="store_true",
                        help="with --arm: when the board's /config.json still holds servo pins or pulse calibration "
                        "(pin_servoN, servoN_*_us, servoN_inverted, from before arm descriptions) that the "
                        "description contradicts, take them out and drive by the description (without it such a "
                        "deploy is refused, naming the first)")
    parser.add_argument("--quiet", action="store_true", help="print only errors and the summary")
    add_force_arguments(parser, "deploying")


def run(args):
    from surepick.host.deploy import deploy

    def say(msg):
        if not args.quiet:
            print(msg, flush=True)

    from surepick.host.cli.progress import Status
    arm_json = None
    if args.arm is not None:
        from surepick.host.arms import files
        from surepick.host.cli.arm import load_arm
        arm, _ = load_arm(args.arm)          # a bad description is refused before the board is touched
        arm_json = files.compact_json(arm)
        say("arm: %s (%s)" % (arm.name, arm.kind))
    port = board_port(args)
    if port != args.port:
        say("board: %s" % port)     # found by auto, or the default port
    with Status("deploy") as status:
        def on_build(i, n, path):
            status.update("building %d/%d %s" % (i, n, path))

        def step(msg):
            status.close()
            say(msg)
        res = deploy(port, source=args.source, progress=step, wait_hello=not args.no_wait,
                     hello_timeout=args.hello_timeout, cache=not args.no_cache, on_build=on_build,
                     force=args.force, rest_timeout=args.rest_timeout, arm_json=arm_json,
                     replace_servo_settings=args.replace_servo_settings)
    print("deployed to %s in %.1f s: %d copied, %d unchanged%s"
          % (port, res.seconds, len(res.copied), len(res.unchanged),
             (", %d removed" % len(res.removed)) if res.removed else ""), flush=True)
    return OK
