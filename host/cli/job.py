# `surepick job start|abort|clear|rescue|status|run|stop|report`: drive a board's pick-and-place
# from the host over the link (JOB, ABORT, CLEAR_FAULT, RESCUE, STATUS, RUN, RUN_STOP, RUN_STATUS
# in docs/protocol.md; a production run: docs/production-run.md). `start --wait` follows
# the board's EVENT frames until the cycle ends and exits 0 only when the machine reports PLACED;
# `rescue --wait` until the rescue has placed the part, rested the arm or released the part.
import sys
import time

from surepick.host.user_error import FAILED, INTERRUPTED, OK
from surepick.host.cli.errors import CommandError
from surepick.host.cli.event_follow import events_until
from surepick.host.cli.options import add_port_argument, board_link, pose as _pose

from surepick.host.link.jobs import DEFAULT_PICK_MM, DEFAULT_PLACE_MM


# How long `job start` waits for JOB's answer. A board answers once it has checked the job's poses
# (IK at each pose, the lift's sink per A): a Pico in milliseconds, but the emulated RP2040 on a
# loaded host answered after more than 3 s (the job had started: job status showed APPROACH).
JOB_REPLY_S = 15.0

def add_arguments(p):
    sub = p.add_subparsers(dest="job_verb", metavar="ACTION")
    s = sub.add_parser("start", help="send a job: pick pose, place pose, part width")
    s.add_argument("--job", metavar="JOB.json", help="a job file (docs/job-file.md, e.g. from `surepick teach`): "
                   "its poses, width and attempts instead of --pick/--place/--width/--attempts; its approach "
                   "height, if any, goes with the job: the board's approach_height_um from then on, "
                   "if the board takes the job")
    s.add_argument("--pick", type=_pose, default=None, metavar="X,Y,Z[,PITCH]",
                   help="jaw centre at the part, mm (pitch deg, default -90: pointing down); "
                        "default: the reference source pad %s" % (DEFAULT_PICK_MM,))
    s.add_argument("--place", type=_pose, default=None, metavar="X,Y,Z[,PITCH]",
                   help="jaw centre where the part is released; default: over the reference bin %s"
                        % (DEFAULT_PLACE_MM,))
    s.add_argument("--width", type=float, default=None, metavar="MM", help="part width across the jaws (default 25)")
    s.add_argument("--attempts", type=int, metavar="N", help="max attempts (default: the board's max_attempts)")
    s.add_argument("--wait", action="store_true", help="follow the cycle's events until it ends. Ctrl-C "
                   "stops following, not the arm: the job goes on and the command that stops it is printed")
    s.add_argument("--timeout", type=float, default=120.0, metavar="S",
                   help="with --wait: give up after S seconds (default 120)")
    s.add_argument("--abort-on-interrupt", action="store_true",
                   help="with --wait: Ctrl-C also aborts the job on the board (the arm holds where it is, "
                        "a held part stays held, ABORTED latches)")
    _add_run(sub)
    for name, text in (("abort", "stop the running job: the arm holds where it is, a fault latches"),
                       ("clear", "clear a latched fault (refused while the e-stop is pressed)"),
                       ("status", "print the board's state and counters")):
        sub.add_parser(name, help=text, description=text)
    r = sub.add_parser("rescue", help="take the arm back after a fault or a reset: place a held part, "
                       "bring the arm to rest, or release the part", description=RESCUE_HELP)
    what = r.add_mutually_exclusive_group(required=True)
    what.add_argument("--place", action="store_const", dest="action", const="place",
                      help="carry the held part to the job's place pose gently, release it there, retreat")
    what.add_argument("--rest", action="store_const", dest="action", const="rest",
                      help="bring the arm gently to rest above the place pose (a held part stays held)")
    what.add_argument("--release", action="store_const", dest="action", const="release",
                      help="open the jaw where it is: drops a held part here (only when that is safe)")
    where = r.add_mutually_exclusive_group()
    where.add_argument("--arm-near", choices=("pick", "place", "rest"),
                       help="after a reset the arm is unpowered and the board cannot know where it "
                            "stands: it stands at (or just above) the job's pick or place pose, or "
                            "where the board last stored it at rest")
    where.add_argument("--arm-at", type=_pose, metavar="X,Y,Z[,PITCH]",
                       help="... or the jaw centre as you measured it, mm (pitch deg, default -90)")
    r.add_argument("--wait", action="store_true", help="follow the rescue's events until it ends (Ctrl-C "
                   "stops following, not the rescue)")
    r.add_argument("--timeout", type=float, default=120.0, metavar="S",
                   help="with --wait: give up after S seconds (default 120)")
    for sp in sub.choices.values():
        add_port_argument(sp)


def _add_run(sub):
    r = sub.add_parser("run", help="a production run: the board runs cycle after cycle by itself",
                       description="Send a production run to the board: it runs cycle after cycle by itself "
                       "(the host may disconnect), walking the job file's pick and place patterns, and stops "
                       "on its fault policy (config run_*). docs/production-run.md")
    n = r.add_mutually_exclusive_group(required=True)
    n.add_argument("--count", type=int, metavar="N", help="run N cycles (fewer if a pattern runs out first)")
    n.add_argument("--until-stopped", action="store_true",
                   help="run until `surepick job stop`, a pattern runs out or the fault policy stops it")
    r.add_argument("--job", metavar="JOB.json", help="a job file (docs/job-file.md): poses, width, attempts, "
                   "pick_pattern, place_pattern, part_ready; without it the reference pad and bin")
    r.add_argument("--wait", action="store_true", help="follow the run until it ends and print its report "
                   "(Ctrl-C stops following, not the run)")
    r.add_argument("--timeout", type=float, default=3600.0, metavar="S",
                   help="with --wait: stop following after S seconds (default 3600); the run goes on")
    sub.add_parser("stop", help="end the production run after the current cycle (the arm parks, nothing held "
                   "is let go)", description="End the production run after the current cycle.")
    rep = sub.add_parser("report", help="the last production run's figures, from the board's log or the "
                         "monitor's database", description="The last production run's figures from the board's "
                         "flash log (or, with --db, the records `surepick monitor` stored: the whole run even "
                         "when the board's log rotated past its start): cycles, placed, faults by reason, cycle "
                         "time, the longest run without a fault, slots skipped, why it stopped.")
    rep.add_argument("--db", metavar="FILE", help="read the monitor's SQLite file instead of the board")
    rep.add_argument("--board", metavar="ID", help="with --db: the board (when the file holds several)")


RESCUE_HELP = (
    "Take the arm back after a fault or an unexpected reset. After a reset mid-job the board "
    "leaves the arm servos unpowered (their gear trains hold the arm) and holds the gripper where "
    "its pot says: nothing moves until you act. Its arm has no joint feedback, so say where the arm "
    "stands (--arm-near or --arm-at): each servo is powered there and jumps, at its own full speed, "
    "by however far the arm really is from that pose; after that every move is gentle. Without a "
    "reset the board knows its pose: give neither.")


def run(args):
    from surepick.shared_fsm import codes
    from surepick.shared_fsm import link
    from surepick.shared_fsm import states
    verb = getattr(args, "job_verb", None)
    if verb is None:
        raise CommandError("say what to do: start, abort, clear, rescue, status, run, stop or report")
    if verb == "start":
        _job_args(args)                  # bad input is found before the port is opened
    if verb == "run":
        from surepick.host.cli import job_run
        run_fields = job_run.fields(args)    # the same: checked before the port is opened
    if verb == "report" and args.db:
        from surepick.host.cli import job_run
        return job_run.report_from_db(args)     # no port: the monitor's records
    stay = verb in ("start", "rescue", "run") and args.wait
    with board_link(args, "job " + verb, stay=stay) as c:
        if verb == "start":
            return _start(c, args, link, codes, states)
        if verb in ("run", "stop", "report"):
            from surepick.host.cli import job_run
            if verb == "run":
                return job_run.run(c, args, run_fields)
            return job_run.stop(c, args) if verb == "stop" else job_run.report(c, args)
        if verb == "rescue":
            return _rescue(c, args, link, codes)
        if verb == "status":
            from surepick.host import board_state
            r = c.request(link.T_STATUS, (), 3.0, collect=(link.T_TELEMETRY,))
            if not r.frames:
                raise CommandError("the board sent no telemetry with its status", FAILED)
            t = dict(zip(link.SCHEMA[link.T_TELEMETRY][3], r.frames[-1].fields))
            print("state %s, attempt %d, fault %s, cycles ok %d failed %d, faults %d, loop %d us "
                  "(worst step %d us, overruns %d)" % (
                      states.name(t["state"]), t["attempt"], codes.name(t["fault"]) if t["fault"] else "none",
                      t["cycles_ok"], t["cycles_failed"], t["faults_total"], t["loop_period_us"],
                      t["worst_step_us"], t["overruns"]))
            if r.ok:       # what keeps jobs refused, and the way out of each
                from surepick.host.cli import job_run
                view = board_state.View(r.payload, r.frames[-1].fields)
                view.run = job_run.status_line(c)
                if view.run is not None:
                    print(view.run[1])
                for line in board_state.lines(view, args.port):
                    print(line)
            if r.ok and len(r.payload) > 7 and r.payload[7]:   # what the boot rejected from flash
                from surepick.host import rejects
                got = rejects.fetch(c, 3.0)
                print("\n".join(rejects.lines(*got)) if got else
                      "rejected at boot: something in its flash (this firmware cannot list it)")
            return OK
        ftype = link.T_ABORT if verb == "abort" else link.T_CLEAR_FAULT
        r = c.request(ftype, (), 3.0)
        if not r.ok:
            from surepick.host.link.answers import refusal
            why = ("nothing to abort: no job, calibration or recovery is running"
                   if verb == "abort" and r.code == link.E_STATE and not r.payload else
                   refusal(r.code, r.payload, args.port))
            raise CommandError(why, FAILED)
        print("%s: ok" % verb)
        return OK


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
    from surepick.host.teleop import jobfile
    job = jobfile.load(args.job)
    args.pick, args.place = job.pick.as_tuple(), job.place.as_tuple()
    args.width, args.attempts = job.part_width_mm, job.max_attempts
    args.config_needed = job.config_overrides()


def _board_attempts(c, args, link):
    # The board's max_attempts, for a job file that sets the approach height but not the
    # attempts (JOB carries the height after the attempts). Reads only.
    if args.attempts is not None or not args.config_needed:
        return None
    r = c.request(link.T_CONFIG_GET, ("max_attempts",), 3.0)
    if not r.ok or len(r.payload) < 2 or not isinstance(r.payload[1], int):
        raise CommandError("the board did not say its max_attempts (%s %s), needed to send %s's approach height "
                           "with the job: give the file a max_attempts" % (r.code_name, " ".join(
                               str(p) for p in r.payload), args.job), FAILED)
    return r.payload[1]


def _start(c, args, link, codes, states):
    from surepick.host.link import jobs
    spec = jobs.JobSpec(args.pick, args.place, args.width, args.attempts,
                        args.config_needed.get("approach_height_um"))
    try:
        um = spec.link_args(_board_attempts(c, args, link))
    except ValueError as e:
        raise CommandError(str(e)) from None
    r, view = _ask_job(c, um, link)
    if not r.ok:
        raise CommandError("refused: %s" % _refused(c, r, args.port, view), FAILED)
    jobs.remember(c.port, spec)      # the monitor's live view starts it again on a key
    print("job accepted")
    if spec.approach_um is not None:
        print("approach_height_um: %d (from %s; the board's setting from this job on)" % (spec.approach_um, args.job))
    if not args.wait:
        return OK
    try:
        return _follow_job(c, args, r.frames, codes)
    except KeyboardInterrupt:
        return _interrupted(c, args, "job", link)


def _ask_job(c, um, link):
    # -> (JOB's reply, the board's view read after a busy refusal, or None). A rescue or a
    # calibration may end between the board's E_BUSY and the look at the board that follows:
    # when that look shows nothing that refuses a job, the job is asked again, for as long as
    # busy.write_at_rest waits out a settling arm. The refusal's words then come from that same
    # look, so they always name what was running (write_at_rest's STATUS alone could not).
    from surepick.host import board_state
    from surepick.host.link import busy
    from surepick.host.link.errors import LinkError
    end = time.monotonic() + busy.SETTLE_WAIT_S
    while True:
        r = c.request(link.T_JOB, um, JOB_REPLY_S, collect=(link.T_EVENT,))
        if r.code != link.E_BUSY or tuple(r.payload[:1]) == ("run",):
            return r, None
        try:
            view = board_state.read(c)
        except LinkError:
            view = None
        if view is None or board_state.job_blocker(view) is not None or time.monotonic() > end:
            return r, view
        time.sleep(busy.POLL_S)


def _follow_job(c, args, events, codes):
    from surepick.host.link.answers import event_text, fault_text
    from surepick.shared_fsm.machine import fault_where
    for e in events_until(c, events, time.monotonic() + args.timeout):
        print("  " + event_text(e))
        if e[2] == codes.K_FAULT:
            print("cycle ended: fault %s" % fault_text(e[5], fault_where(e[5], e[3]), e[6]))
            return FAILED
        if e[2] == codes.K_TRANSITION and e[5] == codes.R_PLACED:
            print("cycle ended: placed")
            return OK
    raise CommandError("no end of cycle within %.0f s: the job may still run on the board (`surepick job "
                       "status%s`; `surepick job abort%s` stops it)" % (args.timeout, _port(args.port),
                                                                        _port(args.port)), FAILED)


def _port(port):
    from surepick.host.board_state import port_text
    return port_text(port)


def _refused(c, r, port, view=None):
    # The firmware's refusal of a JOB (or a RESCUE), as what the board is in that refuses it and
    # the command that leaves it (host/board_state.py): a refusal never ends without the next step.
    # view: the board as already read after the refusal (else it is read here).
    from surepick.host import board_state
    from surepick.host.link.answers import FAULT_MEANING, refusal
    from surepick.host.link.errors import LinkError
    from surepick.shared_fsm import codes, link
    base = refusal(r.code, r.payload, port)
    if r.code == link.E_BUSY and tuple(r.payload[:1]) == ("run",):
        return base                  # a production run: the refusal names it and `job stop`
    if view is None:
        try:
            view = board_state.read(c)
        except LinkError:
            view = None
    first = board_state.job_blocker(view) if view is not None else None
    if first is None or (first.key == "fault" and r.code == link.E_FAULTED):
        return base                  # the refusal already names the fault and `job clear`
    text = board_state.sentence(first, view, port)
    if view.fault and first.key != "fault":
        text = "%s is latched (%s); %s" % (codes.name(view.fault), FAULT_MEANING.get(view.fault, "a fault"), text)
    return text


def _interrupted(c, args, what, link):
    # Ctrl-C while following a job or a rescue: the client stops, the arm does not (unless
    # --abort-on-interrupt). Say what the arm is doing now and the command that stops it.
    from surepick.host import board_state
    from surepick.host.link.errors import LinkError
    abort = getattr(args, "abort_on_interrupt", False)
    try:
        if abort:
            r = c.request(link.T_ABORT, (), 3.0)
            if r.ok or r.code == link.E_STATE:
                print("interrupted: the %s was aborted on the board: the arm holds where it is (a held part "
                      "stays held) and ABORTED is latched; `surepick job status%s` says what it holds, "
                      "`surepick job clear%s` once you have looked at the arm"
                      % (what, _port(args.port), _port(args.port)), file=sys.stderr, flush=True)
                return INTERRUPTED
        view = board_state.read(c, 2.0)
    except (LinkError, OSError, KeyboardInterrupt):
        view = None
    if view is None:
        now = "what the arm does now is unknown (the board did not answer)"
    else:
        running = [e for e in board_state.active(view) if e.key in ("job", "rescue")]
        now = ("the %s goes on: %s" % (what, board_state.shows(running[0], view)) if running
               else "the board is in %s, nothing running" % view.where())
    print("interrupted: stopped following, not the arm; %s. Stop it with `surepick job abort%s` "
          "(the arm holds where it is); follow it with `surepick job status%s`"
          % (now, _port(args.port), _port(args.port)), file=sys.stderr, flush=True)
    return INTERRUPTED


_ACTIONS = {"place": 0, "rest": 1, "release": 2}      # link.RESCUE_*
_NEAR = {"pick": 1, "place": 2, "rest": 3}             # link.NEAR_*
_REFUSALS = {
    "arm_unpowered": "the arm is unpowered after a reset and the board cannot know where it stands: "
                     "say so with --arm-near pick|place|rest or --arm-at X,Y,Z (see --help)",
    "arm_powered": "the arm is powered and the board knows where it stands: leave out --arm-near/--arm-at",
    "not_holding": "no part is held: nothing to place (use --rest)",
    "no_job": "the board knows no job (no place pose): use --arm-at, --rest or --release",
    "estop": "the e-stop is pressed: release it first",
    "gripper_off": "the gripper is unpowered and its pot gives no reading: it cannot be moved safely",
    "hil": "the board is in hardware-in-the-loop mode",
}


def _rescue(c, args, link, codes):
    fields = [_ACTIONS[args.action], 0]
    if args.arm_near is not None:
        fields[1] = _NEAR[args.arm_near]
    elif args.arm_at is not None:
        fields[1] = link.NEAR_GIVEN
        p = args.arm_at
        fields += [int(round(v * 1000)) for v in p[:3]] + [int(round(p[3] * 1000))]
    if link.check(link.T_RESCUE, [1] + fields) != link.OK:
        raise CommandError("--arm-at is outside what the link carries (within 1 m)")
    r = c.request(link.T_RESCUE, fields, 3.0, collect=(link.T_EVENT,))
    if not r.ok:
        why = r.payload[0] if r.payload else ""
        raise CommandError("refused: %s" % (_REFUSALS[why] if why in _REFUSALS else _refused(c, r, args.port)),
                           FAILED)
    print("rescue accepted")
    if not args.wait:
        return OK
    try:
        return _follow_rescue(c, args, r.frames, codes)
    except KeyboardInterrupt:
        return _interrupted(c, args, "rescue", link)


def _follow_rescue(c, args, events, codes):
    from surepick.host.link.answers import event_text, fault_text
    from surepick.shared_fsm.machine import fault_where
    ends = {codes.R_PLACED: "placed", codes.R_RESTED: "rested", codes.R_RELEASED: "released"}
    for e in events_until(c, list(events), time.monotonic() + args.timeout):
        print("  " + event_text(e))
        if e[2] == codes.K_FAULT:
            print("rescue ended: fault %s" % fault_text(e[5], fault_where(e[5], e[3]), e[6]))
            return FAILED
        if e[2] == codes.K_NOTE and e[5] in ends:
            print("rescue ended: %s" % ends[e[5]])
            return OK
    raise CommandError("the rescue did not end within %.0f s" % args.timeout, FAILED)
