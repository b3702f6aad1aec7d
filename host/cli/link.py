# `surepick link serve|status|stop|mpremote`: the link hub (host/link/hub.py), the one process that
# owns a board's port so that the monitor, job, config, calibrate, deploy, doctor and mpremote can
# all use the board at once.
import sys

from surepick.host.user_error import FAILED, INTERRUPTED, OK
from surepick.host.cli.errors import CommandError
from surepick.host.cli.options import add_port_argument, board_port

HELP = """\
One process owns the board's port and serves every other tool on this machine (a Unix socket in
your private runtime directory; nothing listens on the network). Requests of each client get
their own replies; events, telemetry, faults and REPL text go to every client.

`surepick monitor` and `job start --wait` start a hub on their own when none serves the port
(it ends a few seconds after its last client left); other verbs use a serving hub, else the port.
`serve` runs one in the foreground, for as long as you like.

The hub's raw console is a pseudo-terminal for mpremote, Thonny or any serial tool: while one has
it open the board's console is theirs (REPL, raw REPL, file copies) and link requests are refused
with a note saying so; they work again as soon as it is closed. `surepick deploy` and
`surepick link mpremote` use it by themselves.

Set SUREPICK_HUB=off to make every tool open the port itself."""


def add_arguments(parser):
    import argparse
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.description = (parser.description or "") + "\n\n" + HELP
    sub = parser.add_subparsers(dest="link_action", metavar="ACTION", required=True)
    s = sub.add_parser("serve", help="own the board's port and serve other tools until Ctrl-C")
    add_port_argument(s)
    s.add_argument("--linger", type=float, metavar="S",
                   help="stop S seconds after the last client left (default: never)")
    st = sub.add_parser("status", help="list the hubs running on this machine")
    add_port_argument(st, required=False)
    sp = sub.add_parser("stop", help="stop the hub serving a port (its clients are disconnected)")
    add_port_argument(sp)
    mp = sub.add_parser("mpremote", help="run mpremote on the board through the hub's raw console "
                                         "(starts a hub if none serves the port)",
                        description="Runs `mpremote connect RAW-CONSOLE ARGS...` (default ARGS: repl). "
                                    "Link clients are paused while it runs and resume after.")
    add_port_argument(mp)
    mp.add_argument("--force", action="store_true",
                    help="lend the console even when stopping the firmware is not safe now (a job or teleop "
                         "runs, a part is held, the arm is unpowered or away from rest): mpremote's Ctrl-C stops "
                         "the firmware and its soft reset turns the servo PWM off")
    mp.add_argument("mpremote_args", nargs=argparse.REMAINDER, metavar="ARGS",
                    help="mpremote commands, e.g. repl, fs ls, exec \"print(1)\" (after --)")


def run(args):
    return {"serve": _serve, "status": _status, "stop": _stop, "mpremote": _mpremote}[args.link_action](args)


def _say(msg):
    print("surepick-hub: " + msg, flush=True)


def _serve(args):
    import time

    from surepick.host.link.hub import serve

    port = board_port(args)

    def ready(info):
        _say("serving %s to link clients on this machine" % port)
        _say("raw console for mpremote and other serial tools: %s (e.g. mpremote connect %s repl)"
             % (info["raw"], info["raw"]))

    def log(msg):
        print("%s surepick-hub: %s" % (time.strftime("%H:%M:%S"), msg), file=sys.stderr, flush=True)

    serve(port, args.linger, log, ready)
    _say("stopped")
    return OK


def _status(args):
    import time

    from surepick.host.link import hub_client
    hubs = hub_client.list_hubs()
    if args.port:
        from surepick.host.link.rundir import canonical_port
        want = canonical_port(board_port(args))
        hubs = [h for h in hubs if canonical_port(h["port"]) == want]
    if not hubs:
        print("no link hub is running%s" % (" for %s" % args.port if args.port else ""))
        return OK if not args.port else FAILED
    for h in hubs:
        try:
            info = hub_client.query(h["port"], "status")
        except Exception as e:  # a hub that is just ending: say what is known
            print("%s: hub pid %s (not answering: %s)" % (h["port"], h["pid"], e))
            continue
        board = "board connected" if info["board_up"] else "board away: %s" % info["board_error"]
        print("%s: hub pid %d, up %.0f s, %s; raw console %s%s" % (
            info["port"], info["pid"], time.time() - info["started"], board, info["raw"],
            ", lent to %s" % info["lent_to"] if info["lent_to"] else ""))
        st = info["stats"]
        print("  %d requests, %d refused, %d bytes in, %d out" % (st["requests"], st["refused"],
                                                                   st["bytes_in"], st["bytes_out"]))
        for c in info["clients"]:
            if c["role"] != "query":
                print("  client %s (%s), %d requests" % (c["name"], c["role"], c["requests"]))
    return OK


def _stop(args):
    from surepick.host.link import hub_client
    port = board_port(args)
    hub_client.query(port, "stop")
    print("stopped the hub serving %s" % port)
    return OK


def _mpremote(args):
    import subprocess

    from surepick.host.link import hub_client
    port = board_port(args)
    extra = list(args.mpremote_args)
    if extra[:1] == ["--"]:
        extra = extra[1:]
    from surepick.host.link.ports import check_not_busy
    _check_safe(port, args.force)
    with hub_client.raw_console(port, "surepick link mpremote", hub_client.AUTO) as console:
        check_not_busy(console)      # one raw client at a time on the hub's console
        if console != port:
            print("surepick link: mpremote on the hub's raw console %s (link clients paused)" % console,
                  file=sys.stderr, flush=True)
        try:
            r = subprocess.run([sys.executable, "-m", "mpremote", "connect", console] + (extra or ["repl"]))
        except KeyboardInterrupt:
            return INTERRUPTED
    if r.returncode:
        raise CommandError("mpremote exited with status %d" % r.returncode, FAILED)
    return OK


def _check_safe(port, force):
    # mpremote interrupts the firmware (Ctrl-C) and soft-resets the board: ask the firmware first
    # (host/link/busy.py check_safe_to_stop). No answer (no firmware, a bare REPL): nothing to stop.
    from surepick.host.link import busy, hub_client
    from surepick.host.link.client import LinkClient
    from surepick.host.link.errors import LinkError
    try:
        client = LinkClient(port, hub=hub_client.USE, name="surepick link mpremote").open()
    except LinkError:
        return                   # mpremote says why in a moment
    try:
        busy.check_safe_to_stop(client, "lending the console to mpremote", force, say=lambda m: print(
            "surepick link: " + m, file=sys.stderr, flush=True), port=port)
    except busy.BoardBusy:
        raise
    except LinkError:
        return
    finally:
        client.close()
