# `surepick config get|set KEY [VALUE]`: one board setting over the link (CONFIG_GET /
# CONFIG_SET, docs/protocol.md). The firmware validates and persists it; settings that only
# take effect after a reboot (pins, loop rate, watchdog) are reported as such.
import sys

EXIT_FAILED = 1
EXIT_USAGE = 2


def add_arguments(parser):
    parser.add_argument("action", choices=("get", "set"), help="read or change a setting")
    parser.add_argument("key", metavar="KEY", help="setting name, e.g. telemetry_hz or grasp_dwell_ms")
    parser.add_argument("value", metavar="VALUE", nargs="?", type=int,
                        help="new value for `set` (all board settings are integers, in the units "
                             "their names say)")
    parser.add_argument("--port", required=True, metavar="PORT",
                        help="serial device, pty, socket://HOST:PORT or `auto` (the one Pico)")
    parser.add_argument("--timeout", type=float, default=3.0, metavar="S",
                        help="seconds to wait for the board's reply (default 3)")


def run(args):
    from surepick.shared_fsm import link
    from surepick.host.link.client import LinkClient, LinkError, resolve_port

    if args.action == "set" and args.value is None:
        print("surepick config: `set` needs a VALUE", file=sys.stderr)
        return EXIT_USAGE
    if args.action == "get" and args.value is not None:
        print("surepick config: `get` takes no VALUE", file=sys.stderr)
        return EXIT_USAGE
    if link.check(link.T_CONFIG_GET, (1, args.key)) != link.OK:
        print("surepick config: %r is not a valid setting name" % args.key, file=sys.stderr)
        return EXIT_USAGE
    try:
        with LinkClient(resolve_port(args.port)) as c:
            if args.action == "get":
                r = c.request(link.T_CONFIG_GET, (args.key,), args.timeout)
            else:
                r = c.request(link.T_CONFIG_SET, (args.key, args.value), args.timeout)
    except LinkError as e:
        print("surepick config: %s" % e, file=sys.stderr)
        return EXIT_FAILED
    if r.code == link.E_UNKNOWN_KEY:
        print("surepick config: the board has no setting %r" % args.key, file=sys.stderr)
        return EXIT_USAGE
    if r.code == link.E_BAD_VALUE:
        print("surepick config: the board rejected %s = %s (out of range or inconsistent with "
              "another setting)" % (args.key, args.value), file=sys.stderr)
        return EXIT_USAGE
    if r.code == link.E_BUSY:
        print("surepick config: the arm is busy; settings change only at rest", file=sys.stderr)
        return EXIT_FAILED
    if not r.ok:
        print("surepick config: the board answered %s %s" % (r.code_name, list(r.payload)),
              file=sys.stderr)
        return EXIT_FAILED
    key = r.payload[0] if r.payload else args.key
    value = r.payload[1] if len(r.payload) > 1 else "?"
    note = ""
    if args.action == "set":
        note = " (saved; takes effect after a reboot)" if len(r.payload) > 2 and r.payload[2] else " (saved)"
    print("%s = %s%s" % (key, value, note))
    return 0
