# `surepick config get|set KEY [VALUE]`: one board setting over the link (CONFIG_GET /
# CONFIG_SET, docs/protocol.md). The firmware validates and persists it; settings that only
# take effect after a reboot (pins, loop rate, watchdog) are reported as such.
from surepick.cli import exitcodes
from surepick.cli.errors import CommandError
from surepick.cli.options import add_force_arguments, add_port_argument, board_link


def add_arguments(parser):
    parser.add_argument("action", choices=("get", "set"), help="read or change a setting")
    parser.add_argument("key", metavar="KEY", help="setting name, e.g. telemetry_hz or grasp_dwell_ms")
    parser.add_argument("value", metavar="VALUE", nargs="?", type=int,
                        help="new value for `set` (all board settings are integers, in the units "
                             "their names say)")
    add_port_argument(parser)
    parser.add_argument("--timeout", type=float, default=3.0, metavar="S",
                        help="seconds to wait for the board's reply (default 3)")
    # `set` writes flash, which only happens at rest: a busy arm is refused, its state named.
    # `get` only reads, so it is answered while the arm works.
    add_force_arguments(parser, "changing the setting")


def run(args):
    from surepick.shared_fsm import link
    from surepick.host.link import busy

    if args.action == "set" and args.value is None:
        raise CommandError("`set` needs a VALUE")
    if args.action == "get" and args.value is not None:
        raise CommandError("`get` takes no VALUE")
    if link.check(link.T_CONFIG_GET, (1, args.key)) != link.OK:
        raise CommandError("%r is not a valid setting name" % args.key)
    if args.force and args.action == "get":
        raise CommandError("--force is for `set`: `get` never interrupts the arm")
    with board_link(args, "config " + args.action) as c:
        if args.action == "get":
            r = c.request(link.T_CONFIG_GET, (args.key,), args.timeout)
        else:
            if busy.check_idle(c, args.force, args.rest_timeout, print) is None:
                raise CommandError("no firmware answers on %s (is it running? a board sitting in "
                                   "the REPL does not answer)" % c.port, exitcodes.FAILED)
            r = c.request(link.T_CONFIG_SET, (args.key, args.value), args.timeout)
    if r.code == link.E_UNKNOWN_KEY:
        raise CommandError("the board has no setting %r" % args.key)
    if r.code == link.E_BAD_VALUE:
        raise CommandError("the board rejected %s = %s (out of range or inconsistent with another "
                           "setting)" % (args.key, args.value))
    if r.code == link.E_BUSY:     # it started moving between the check and the request
        raise CommandError("the arm is busy; settings change only at rest: wait, `surepick job "
                           "abort`, or --force", exitcodes.FAILED)
    if not r.ok:
        raise CommandError("the board answered %s %s" % (r.code_name, list(r.payload)), exitcodes.FAILED)
    key = r.payload[0] if r.payload else args.key
    value = r.payload[1] if len(r.payload) > 1 else "?"
    note = ""
    if args.action == "set":
        note = " (saved; takes effect after a reboot)" if len(r.payload) > 2 and r.payload[2] else " (saved)"
    print("%s = %s%s" % (key, value, note))
    return exitcodes.OK
