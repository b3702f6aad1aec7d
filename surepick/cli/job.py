# `surepick job start|abort|clear|status`: drive a board's pick-and-place from the host over the
# link (JOB, ABORT, CLEAR_FAULT, STATUS in docs/protocol.md). `start --wait` follows the board's
# EVENT frames until the cycle ends and exits 0 only when the machine reports PLACED.
import time

from surepick.cli import exitcodes
from surepick.cli.errors import CommandError
from surepick.cli.options import add_port_argument, board_port

# The reference cell (sim/plant.py layout): a 25 mm part on the source pad, released over the bin.
DEFAULT_PICK_MM = (160.0, -60.0, 15.5, -90.0)
DEFAULT_PLACE_MM = (150.0, 80.0, 20.5, -90.0)


def add_arguments(p):
    sub = p.add_subparsers(dest="job_verb", metavar="ACTION")
    s = sub.add_parser("start", help="send a job: pick pose, place pose, part width")
    s.add_argument("--pick", type=_pose, default=DEFAULT_PICK_MM, metavar="X,Y,Z[,PITCH]",
                   help="jaw centre at the part, mm (pitch deg, default -90: pointing down); "
                        "default: the reference source pad %s" % (DEFAULT_PICK_MM,))
    s.add_argument("--place", type=_pose, default=DEFAULT_PLACE_MM, metavar="X,Y,Z[,PITCH]",
                   help="jaw centre where the part is released; default: over the reference bin %s"
                        % (DEFAULT_PLACE_MM,))
    s.add_argument("--width", type=float, default=25.0, metavar="MM", help="part width across the jaws (default 25)")
    s.add_argument("--attempts", type=int, metavar="N", help="max attempts (default: the board's max_attempts)")
    s.add_argument("--wait", action="store_true", help="follow the cycle's events until it ends")
    s.add_argument("--timeout", type=float, default=120.0, metavar="S",
                   help="with --wait: give up after S seconds (default 120)")
    for name, text in (("abort", "stop the running job: the arm holds where it is, a fault latches"),
                       ("clear", "clear a latched fault (refused while the e-stop is pressed)"),
                       ("status", "print the board's state and counters")):
        sub.add_parser(name, help=text, description=text)
    for sp in sub.choices.values():
        add_port_argument(sp)


def _pose(text):
    import argparse
    try:
        v = [float(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError("a pose is X,Y,Z or X,Y,Z,PITCH in mm and degrees, got %r" % text)
    if len(v) == 3:
        v.append(-90.0)
    if len(v) != 4:
        raise argparse.ArgumentTypeError("a pose is X,Y,Z or X,Y,Z,PITCH, got %r" % text)
    return tuple(v)


def run(args):
    from surepick.shared_fsm import codes
    from surepick.shared_fsm import link
    from surepick.shared_fsm import states
    from surepick.host.link.client import LinkClient
    verb = getattr(args, "job_verb", None)
    if verb is None:
        raise CommandError("say what to do: start, abort, clear or status")
    with LinkClient(board_port(args)) as c:
        if verb == "start":
            return _start(c, args, link, codes, states)
        if verb == "status":
            r = c.request(link.T_STATUS, (), 3.0, collect=(link.T_TELEMETRY,))
            if not r.frames:
                raise CommandError("the board sent no telemetry with its status", exitcodes.FAILED)
            t = dict(zip(link.SCHEMA[link.T_TELEMETRY][3], r.frames[-1].fields))
            print("state %s, attempt %d, fault %s, cycles ok %d failed %d, faults %d, loop %d us "
                  "(worst step %d us, overruns %d)" % (
                      states.name(t["state"]), t["attempt"], codes.name(t["fault"]) if t["fault"] else "none",
                      t["cycles_ok"], t["cycles_failed"], t["faults_total"], t["loop_period_us"],
                      t["worst_step_us"], t["overruns"]))
            if r.ok and len(r.payload) > 7 and r.payload[7]:   # what the boot rejected from flash
                from surepick.host import rejects
                got = rejects.fetch(c, 3.0)
                print("\n".join(rejects.lines(*got)) if got else
                      "rejected at boot: something in its flash (this firmware cannot list it)")
            return exitcodes.OK
        ftype = link.T_ABORT if verb == "abort" else link.T_CLEAR_FAULT
        r = c.request(ftype, (), 3.0)
        if not r.ok:
            from surepick.host.link.answers import refusal
            why = ("nothing to abort: no job, calibration or recovery is running"
                   if verb == "abort" and r.code == link.E_STATE and not r.payload else
                   refusal(r.code, r.payload, args.port))
            raise CommandError(why, exitcodes.FAILED)
        print("%s: ok" % verb)
        return exitcodes.OK


def _start(c, args, link, codes, states):
    um = [int(round(v * 1000)) for v in args.pick[:3]] + [int(round(args.pick[3] * 1000))]
    um += [int(round(v * 1000)) for v in args.place[:3]] + [int(round(args.place[3] * 1000))]
    um.append(int(round(args.width * 1000)))
    if args.attempts is not None:
        um.append(args.attempts)
    if link.check(link.T_JOB, [1] + um) != link.OK:
        raise CommandError("a value is outside what the link carries (poses within 1 m, "
                           "width 0.001-100 mm, attempts 1-9)")
    seen = []
    r = c.request(link.T_JOB, um, 3.0, collect=(link.T_EVENT,))
    if not r.ok:
        from surepick.host.link.answers import refusal
        raise CommandError("refused: %s" % refusal(r.code, r.payload, args.port), exitcodes.FAILED)
    print("job accepted")
    if not args.wait:
        return exitcodes.OK
    events = list(r.frames)
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline:
        for f in events:
            e = f.fields
            if e in seen:        # whole events: a board that restarted numbers its events from 1 again
                continue
            seen.append(e)
            kind = codes.KIND_NAMES[e[2]] if e[2] < len(codes.KIND_NAMES) else str(e[2])
            print("  t=%d %s %s>%s %s attempt %d" % (e[1], kind, states.name(e[3]), states.name(e[4]),
                                                     codes.name(e[5]), e[6]))
            if e[2] == codes.K_FAULT:
                from surepick.host.link.answers import fault_text
                print("cycle ended: fault %s" % fault_text(e[5], e[3], e[6]))
                return exitcodes.FAILED
            if e[2] == codes.K_TRANSITION and e[5] == codes.R_PLACED:
                print("cycle ended: placed")
                return exitcodes.OK
        f = c.wait_for(link.T_EVENT, max(0.1, deadline - time.monotonic()))
        events = [f] if f is not None else []
    raise CommandError("no end of cycle within %.0f s" % args.timeout, exitcodes.FAILED)
