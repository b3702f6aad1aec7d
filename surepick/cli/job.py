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
    s.add_argument("--job", metavar="JOB.json", help="a job file (docs/job-file.md, e.g. from `surepick teach`): "
                   "its poses, width and attempts instead of --pick/--place/--width/--attempts; its approach "
                   "height, if any, is set on the board first (config approach_height_um)")
    s.add_argument("--pick", type=_pose, default=None, metavar="X,Y,Z[,PITCH]",
                   help="jaw centre at the part, mm (pitch deg, default -90: pointing down); "
                        "default: the reference source pad %s" % (DEFAULT_PICK_MM,))
    s.add_argument("--place", type=_pose, default=None, metavar="X,Y,Z[,PITCH]",
                   help="jaw centre where the part is released; default: over the reference bin %s"
                        % (DEFAULT_PLACE_MM,))
    s.add_argument("--width", type=float, default=None, metavar="MM", help="part width across the jaws (default 25)")
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
    if verb == "start":
        _job_args(args)                  # bad input is found before the port is opened
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
            raise CommandError("the board answered %s" % r.code_name, exitcodes.FAILED)
        print("%s: ok" % verb)
        return exitcodes.OK


def _job_args(args):
    # A job file, or the pose options (with their defaults); never both.
    args.config_needed = {}
    if args.job is None:
        args.pick = args.pick or DEFAULT_PICK_MM
        args.place = args.place or DEFAULT_PLACE_MM
        args.width = 25.0 if args.width is None else args.width
        return
    given = [o for o, v in (("--pick", args.pick), ("--place", args.place), ("--width", args.width),
                            ("--attempts", args.attempts)) if v is not None]
    if given:
        raise CommandError("--job gives the poses, width and attempts: drop %s" % ", ".join(given))
    from surepick.teleop import jobfile
    try:
        job = jobfile.load(args.job)
    except jobfile.JobFileError as e:
        raise CommandError(str(e)) from None
    args.pick, args.place = job.pick.as_tuple(), job.place.as_tuple()
    args.width, args.attempts = job.part_width_mm, job.max_attempts
    args.config_needed = job.config_overrides()


def _set_config(c, args, link):
    # The job file's machine settings (its approach height), set on the board before the job.
    for key, value in sorted(args.config_needed.items()):
        r = c.request(link.T_CONFIG_GET, (key,), 3.0)
        if r.ok and len(r.payload) > 1 and r.payload[1] == value:
            continue
        was = r.payload[1] if r.ok and len(r.payload) > 1 else "?"
        r = c.request(link.T_CONFIG_SET, (key, value), 3.0)
        if not r.ok:
            raise CommandError("the board refused %s = %d from %s: %s %s" % (
                key, value, args.job, r.code_name, " ".join(str(p) for p in r.payload)), exitcodes.FAILED)
        print("%s: %s -> %d (from %s; persisted on the board)" % (key, was, value, args.job))


def _start(c, args, link, codes, states):
    if args.config_needed:
        _set_config(c, args, link)
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
        raise CommandError("refused: %s %s" % (r.code_name, " ".join(str(p) for p in r.payload)),
                           exitcodes.FAILED)
    print("job accepted")
    if not args.wait:
        return exitcodes.OK
    events = list(r.frames)
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline:
        for f in events:
            e = f.fields
            if e[0] in seen:
                continue
            seen.append(e[0])
            kind = codes.KIND_NAMES[e[2]] if e[2] < len(codes.KIND_NAMES) else str(e[2])
            print("  t=%d %s %s>%s %s attempt %d" % (e[1], kind, states.name(e[3]), states.name(e[4]),
                                                     codes.name(e[5]), e[6]))
            if e[2] == codes.K_FAULT:
                print("cycle ended: fault %s in %s" % (codes.name(e[5]), states.name(e[3])))
                return exitcodes.FAILED
            if e[2] == codes.K_TRANSITION and e[5] == codes.R_PLACED:
                print("cycle ended: placed")
                return exitcodes.OK
        f = c.wait_for(link.T_EVENT, max(0.1, deadline - time.monotonic()))
        events = [f] if f is not None else []
    raise CommandError("no end of cycle within %.0f s" % args.timeout, exitcodes.FAILED)
