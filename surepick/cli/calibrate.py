# `surepick calibrate pot|current`: run one of the firmware's calibration routines over the
# link (CALIBRATE, docs/protocol.md) and print the value it measured and saved.
#   pot      close the empty jaw and record the pot reading: pot_closed_counts
#   current  hold the gripper still and record the current-sense zero: current_offset_counts
from surepick.cli import exitcodes
from surepick.cli.errors import CommandError
from surepick.cli.options import add_port_argument, board_port


def add_arguments(parser):
    parser.add_argument("target", choices=("pot", "current"),
                        help="pot: jaw closed on nothing (the jaw must be empty); "
                             "current: current-sense zero (the gripper must be still)")
    add_port_argument(parser)
    parser.add_argument("--timeout", type=float, default=10.0, metavar="S",
                        help="seconds to wait for the result (default 10; the routine takes a few)")


def run(args):
    from surepick.shared_fsm import link
    from surepick.host.link.client import LinkClient

    target = link.CAL_POT if args.target == "pot" else link.CAL_CURRENT
    with LinkClient(board_port(args)) as c:
        r = c.request(link.T_CALIBRATE, (target,), args.timeout)
    if not r.ok:
        from surepick.host.link.answers import refusal
        raise CommandError("%s: %s" % (args.target, refusal(r.code, r.payload, args.port)), exitcodes.FAILED)
    if len(r.payload) >= 2:
        print("%s = %s (saved on the board)" % (r.payload[0], r.payload[1]))
    else:
        print("calibrated (the board sent no value)")
    return exitcodes.OK
