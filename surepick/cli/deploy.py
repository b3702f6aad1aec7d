# `surepick deploy`: put the firmware on a board (or the virtual board) in one command.
# The work is in host/deploy.py; this module only parses arguments and prints.
import sys

HELP = """\
Copies firmware/ to the board's root and shared_fsm/ to /lib/shared_fsm, compiled with the
mpy-cross that matches the board's .mpy format (or as source with --source). Files are hashed
on the board and only those that differ are copied; each is written under a temporary name
and renamed, so an interrupted deploy never leaves a half file (run it again to finish).
A manifest with versions and hashes is kept in /surepick-manifest.json. The board is then
soft-reset and the firmware's hello frame awaited. Compiled modules are cached (keyed by the
source's hash and the mpy-cross version) in the user cache directory, or $SUREPICK_MPY_CACHE,
so a warm deploy compiles nothing.

Exit status: 0 deployed (or nothing to do), 1 the board or the link failed, 2 bad usage."""


def add_arguments(parser):
    import argparse
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.description = (parser.description or "") + "\n\n" + HELP
    parser.add_argument("--port", required=True, metavar="PORT",
                        help="a serial device (/dev/ttyACM0), a pty (/dev/pts/N), socket://HOST:PORT "
                             "(the virtual board), or `auto` to find the one Pico by its USB id")
    parser.add_argument("--source", action="store_true",
                        help="ship .py sources instead of compiling to .mpy")
    parser.add_argument("--no-wait", action="store_true",
                        help="reset the board but do not wait for the firmware's hello")
    parser.add_argument("--hello-timeout", type=float, default=15.0, metavar="S",
                        help="seconds to wait for the hello frame after the reset (default 15)")
    parser.add_argument("--no-cache", action="store_true",
                        help="compile every module again instead of using the .mpy cache")
    parser.add_argument("--quiet", action="store_true", help="print only errors and the summary")


def run(args):
    from surepick.host.deploy import DeployError, deploy
    from surepick.host.link.client import LinkError, resolve_port

    def say(msg):
        if not args.quiet:
            print(msg, flush=True)

    try:
        port = resolve_port(args.port)
        if port != args.port:
            say("found a Pico on %s" % port)
        res = deploy(port, source=args.source, progress=say, wait_hello=not args.no_wait,
                     hello_timeout=args.hello_timeout, cache=not args.no_cache)
    except (DeployError, LinkError) as e:
        print("surepick deploy: %s" % e, file=sys.stderr)
        return 1
    n = len(res.copied)
    print("deployed to %s in %.1f s: %d copied, %d unchanged%s"
          % (port, res.seconds, n, len(res.unchanged),
             (", %d removed" % len(res.removed)) if res.removed else ""), flush=True)
    return 0
