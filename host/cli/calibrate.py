# `surepick calibrate pot|current`: run one of the firmware's calibration routines over the
# link (CALIBRATE, docs/protocol.md) and print the value it measured and saved.
#   pot      close the empty jaw and record the pot reading: pot_closed_counts
#   current  hold the gripper still and record the current-sense zero: current_offset_counts
from surepick.host.user_error import FAILED, OK
from surepick.host.cli.errors import CommandError
from surepick.host.cli.options import add_force_arguments, add_port_argument, board_link


def add_arguments(parser):
    parser.add_argument("target", choices=("pot", "current"),
                        help="pot: jaw closed on nothing (the jaw must be empty); "
                             "current: current-sense zero (the gripper must be still)")
    add_port_argument(parser)
    parser.add_argument("--timeout", type=float, default=10.0, metavar="S",
                        help="seconds to wait for the result (default 10; the routine takes a few)")
    # A calibration moves the jaw: a busy arm is refused, its state named. --force aborts the job
    # first; the ABORTED fault it latches then blocks the calibration until `surepick job clear`
    # (a human checks the jaw is empty first).
    add_force_arguments(parser, "calibrating")


def run(args):
    from surepick.host.link import busy
    from surepick.host.link.calibration import CalibrationRefused, calibrate

    with board_link(args, "calibrate " + args.target) as c:
        busy.check_idle_answering(c, args.force, args.rest_timeout, print, args.port)
        try:
            answer = calibrate(c, args.target, args.timeout)
        except CalibrationRefused as e:
            raise CommandError("%s: %s" % (args.target, e), FAILED)
    if len(answer) >= 2:
        print("%s = %s (saved on the board)" % (answer[0], answer[1]))
    else:
        print("calibrated (the board sent no value)")
    return OK
