# `surepick teleop`: drive the arm from a 6-DoF pose stream (recorded file, keyboard jog, OpenVR
# controller, SpaceMouse) through the teleop pipeline (host/teleop/) into a target: the MuJoCo
# arm (sim) or a board over the link (its firmware's teleop mode). Writes DIR/teleop.csv and
# DIR/summary.json. `surepick teach` (cli/teach.py) runs the same session and records a job.
import json
import math
import os
import sys

from surepick.host.user_error import OK
from surepick.host.cli.errors import CommandError, cannot
from surepick.host.cli.options import config_overrides_file

SOURCE_HELP = (
    "--source is a recorded stream (.jsonl: one {\"t\", \"pose\": 12 numbers, 3x4 row-major in OpenVR's Y-up "
    "frame, \"buttons\": {clutch, fine, grip}} per line; or .csv), 'keyboard' (jog in this terminal), 'openvr' "
    "(a SteamVR controller; pip install surepick[openvr]) or 'spacemouse' (pip install surepick[spacemouse]). "
    "Hold the clutch to move; pressing it again re-zeroes without a jump; fine divides the scale. ")
TARGET_HELP = (
    "--target sim drives the MuJoCo arm by a simulated board (the firmware's controller in its teleop mode, at "
    "the loop period of --config or the default); --target PORT (a serial device, "
    "pty, socket://HOST:PORT or auto) streams the joint setpoints to a board's teleop mode over the link: the "
    "board keeps its own speed and acceleration limits, e-stop and fault checks, and holds where it is when no "
    "setpoint came for 200 ms (deadman). ")


def add_arguments(p):
    p.description = (
        "Teleoperate the arm. " + SOURCE_HELP + "The pipeline: Y-up -> Z-up, outlier rejection, clutch/scale, "
        "workspace clamp, low-pass, reachability clamp, IK, servo feedforward, joint setpoints at --control-hz. "
        + TARGET_HELP + "A recorded file replays in virtual time into the sim unless --realtime (always in real "
        "time into a board). Exit 0 when the session ran, 1 when the board refused or left teleop, 2 for bad "
        "usage or a missing source.")
    add_session_arguments(p)
    p.add_argument("--out", metavar="DIR", help="write DIR/teleop.csv and DIR/summary.json")


def add_session_arguments(p):
    # What teleop and teach share: the source, the target, the pipeline's settings.
    p.add_argument("--source", required=True, metavar="FILE|openvr|spacemouse|keyboard")
    p.add_argument("--target", default="sim", metavar="sim|PORT",
                   help="sim (default), or a board's port: serial device, pty, socket://HOST:PORT or auto")
    p.add_argument("--scale", type=float, help="hand -> arm scale (default 0.15; 1 for keyboard and SpaceMouse)")
    p.add_argument("--fine-divisor", type=float, default=5.0, help="fine mode divides the scale by this (default 5)")
    p.add_argument("--alpha", type=float, default=0.3, help="low-pass weight per control tick, 0.2-0.4 (default 0.3)")
    p.add_argument("--jump-cm", type=float, default=5.0,
                   help="drop a sample whose hand moved more than this since the last good one (default 5)")
    p.add_argument("--control-hz", type=float, default=100.0,
                   help="fixed control rate = setpoint rate to a board, >= 50 (default 100)")
    p.add_argument("--arm", metavar="NAME|FILE",
                   help="the arm: a preset (`surepick arm list`) or a description file (default the reference "
                        "arm). --target sim builds the simulated arm from it; a board must run the same "
                        "description (`surepick deploy --arm`): the link does not carry it. An arm that "
                        "sets its own tool pitch (parallel, serial_nowrist) follows the hand's position "
                        "only, with its own analytic IK and no feedforward (--ik dls is refused there)")
    p.add_argument("--ik", choices=("dls", "analytic"), default=None,
                   help="DLS on the MuJoCo model (default; a serial arm's) or the shared analytic kinematics")
    p.add_argument("--no-feedforward", action="store_true", help="send the IK joints without servo feedforward")
    p.add_argument("--no-pitch", action="store_true", help="keep the tool pitch; ignore the hand's pitch")
    p.add_argument("--heading-deg", type=float, default=-90.0,
                   help="operator's facing relative to the arm (-90: OpenVR forward = the arm's +x)")
    p.add_argument("--part", default="cube25", help="part on the source pad (sim), or 'none'")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--config", metavar="FILE", help="JSON file of state-machine config overrides for the simulated "
                   "board (sim), e.g. {\"loop_period_ms\": 5}; a board's own are on its flash")
    p.add_argument("--realtime", action="store_true", help="replay a recorded file in real time (two threads)")
    p.add_argument("--viewer", choices=("auto", "on", "off"), default="auto",
                   help="MuJoCo viewer (sim): auto = when a display exists and the session runs in real time")
    p.add_argument("--max-s", type=float, help="stop a live session after this many seconds")


def run(args):
    source, settings = open_source_and_settings(args)
    summary, target = run_session(args, source, settings, args.out)
    _print_summary(args, source, summary, target)
    return OK


def open_source_and_settings(args):
    from surepick.host.teleop import display
    display.prefer_offscreen_gl()            # before anything loads MuJoCo
    from surepick.host.teleop.pipeline import Settings
    from surepick.host.teleop.workspace import Workspace
    from surepick.host.teleop.sources import open_source
    for name in ("scale", "fine_divisor", "alpha", "jump_cm", "control_hz", "heading_deg", "max_s"):
        v = getattr(args, name, None)
        if v is not None and not math.isfinite(v):
            raise CommandError("--%s must be a finite number, got %s" % (name.replace("_", "-"), v))
    src_kw = {} if args.source not in ("keyboard", "spacemouse") else {"heading_deg": args.heading_deg}
    source = open_source(args.source, **src_kw)     # a SourceError is bad input (exit 2) as it is
    try:
        arm, ik, feedforward, follow_pitch = session_arm(args)
        scale = args.scale if args.scale is not None else (source.scale_hint or 0.15)
        settings = Settings(scale=scale, fine_divisor=args.fine_divisor, alpha=args.alpha, jump_m=args.jump_cm / 100.0,
                            control_hz=args.control_hz, ik=ik, feedforward=feedforward,
                            heading_deg=args.heading_deg, follow_pitch=follow_pitch, arm=arm)
        if arm is not None:
            settings.workspace = Workspace.for_arm(arm)
        settings.check()
        if args.fine_divisor < 1:
            raise CommandError("--fine-divisor must be >= 1")
    except ValueError as e:          # a setting Settings.check refuses
        source.close()
        raise CommandError(str(e)) from None
    except BaseException:
        source.close()
        raise
    return source, settings


def session_arm(args):
    # --arm -> (Arm or None, ik, feedforward, follow_pitch). An arm that sets its own tool pitch
    # (a parallel arm's level hand, a wrist-less arm's fixed tool) cannot follow the hand's pitch,
    # and neither the DLS solver nor the feedforward model its chain: it follows the position
    # with its own IK (the board's), and the session says so; --ik dls asked for is refused.
    if getattr(args, "arm", None) is None:
        return None, args.ik or "dls", not args.no_feedforward, not args.no_pitch
    from surepick.host.cli.arm import load_arm
    arm = load_arm(args.arm)[0]
    if arm.free_pitch:
        return arm, args.ik or "dls", not args.no_feedforward, not args.no_pitch
    how = ("its hand is kept level by the linkage (pitch %.0f deg)" % arm.geo["hand_pitch_deg"]
           if arm.kind == "parallel" else "it has no wrist servo: its tool sits at %.0f deg to the forearm"
           % arm.geo["wrist_fixed_deg"])
    if args.ik == "dls":
        raise CommandError("--ik dls: %s is a %s arm and the DLS solver steers a free wrist it does not have; "
                           "leave --ik out (its own analytic IK, the board's)" % (arm.name, arm.kind))
    print("surepick teleop: %s is a %s arm: %s; it follows the hand's position only (the hand's pitch "
          "is ignored), with its own analytic IK and no servo feedforward" % (arm.name, arm.kind, how),
          file=sys.stderr)
    return arm, "analytic", False, False


class ClampNotices:
    # Says so when the target leaves the reachable space (and when it is back), once per episode.
    def __init__(self, out=None):
        self.out = out or sys.stderr
        self.clamped = False

    def __call__(self, tick_ms, ctrl):
        if ctrl.reach_clamped and not self.clamped:
            x, y, z = ctrl.target_mm
            print("surepick teleop: t=%.2f s: target out of reach (%s); holding the nearest reachable pose "
                  "x=%.0f y=%.0f z=%.0f mm" % (tick_ms / 1000.0, ctrl.reach_reason, x, y, z), file=self.out)
        elif self.clamped and not ctrl.reach_clamped:
            print("surepick teleop: t=%.2f s: target reachable again" % (tick_ms / 1000.0), file=self.out)
        self.clamped = ctrl.reach_clamped


def _say(text):
    print("surepick: " + text, file=sys.stderr)


class _Board:
    # The link and the board target of a session, closed in order (leave teleop, then the port).
    def __init__(self, port, arm=None):
        from surepick.host.link.client import LinkClient
        from surepick.host.link.ports import resolve_port
        from surepick.host.teleop.board_target import BoardTarget
        self.client = LinkClient(resolve_port(port)).open()
        try:
            self.target = BoardTarget(self.client, say=_say, arm=arm)
        except BaseException:
            self.client.close()
            raise

    def close(self):
        # -> True when the board left teleop mode on request
        try:
            return self.target.close()
        finally:
            self.client.close()


def open_target(args, arm=None):
    # -> (target, closer). The sim, or a board on the port --target names. arm: the session's
    # (Settings.arm; None the reference).
    if args.target == "sim":
        from surepick.host.teleop.sim_target import SimTarget
        part = None if args.part == "none" else args.part
        cfg = config_overrides_file(args.config) if args.config else None
        try:
            target = SimTarget(part=part, seed=args.seed, cfg_overrides=cfg, arm=arm)
        except (KeyError, ValueError) as e:
            raise CommandError(str(e)) from None
        return target, target.close
    if args.config:
        raise CommandError("--config is for --target sim: a board runs with the settings on its flash "
                           "(surepick config set KEY VALUE)")
    board = _Board(args.target, arm)
    return board.target, board.close



def run_session(args, source, settings, out_dir, observers=()):
    # One session of `source` into the target; -> (summary, target). The log goes to out_dir.
    from surepick.host.teleop import display
    from surepick.host.teleop.runner import TeleopSession, run_live, run_recorded
    from surepick.host.teleop.session_log import SessionLog
    try:
        target, close_target = open_target(args, settings.arm)
    except BaseException:
        source.close()
        raise
    summary = None
    viewer = None
    log = None
    try:
        try:
            log = SessionLog(out_dir)
            session = TeleopSession(settings, target, log)
        except (KeyError, ValueError) as e:
            raise CommandError(str(e)) from None
        except OSError as e:
            raise cannot("write the session log in", out_dir, e) from None
        session.observers.extend(observers)
        board = getattr(target, "realtime", False)
        live = source.realtime or args.realtime or board
        if not board and (args.viewer == "on" or (args.viewer == "auto" and live and display.has_display())):
            if not display.has_display():
                print("surepick teleop: --viewer on needs a display; running offscreen", file=sys.stderr)
            else:
                viewer = display.ViewerThread(target)
        say = ClampNotices()
        if hasattr(source, "keys"):          # keyboard jog: where the tool is, after every key
            from surepick.host.teleop.sources.keyboard import JogEcho
            clamps, echo = say, JogEcho(source)
            session.observers.append(echo)

            def say(tick_ms, ctrl):
                clamps(tick_ms, ctrl)
                echo(tick_ms, ctrl)
        try:
            with _hangup_is_interrupt():
                if live:
                    summary = run_live(session, source, max_s=args.max_s, on_tick=say)
                else:
                    summary = run_recorded(session, source.samples, on_tick=say)
        except KeyboardInterrupt:
            summary = session.summary({"interrupted": True})
    finally:
        source.close()
        if viewer is not None:
            viewer.close()
        if summary is not None:
            summary["source"] = source.name
        if out_dir and summary is not None and not getattr(target, "realtime", False):
            why = display.snapshot(target, os.path.join(out_dir, "teleop_final.png"))
            summary["snapshot"] = "teleop_final.png" if why is None else "not rendered (%s)" % why
        if log is not None:
            log.close(summary)
        left = close_target()
        if summary is not None and summary.get("interrupted") and getattr(target, "realtime", False):
            _say("interrupted: %s" % ("teleop mode left on the board: the arm holds where it stands (`surepick job "
                                      "status --port %s` shows it)" % args.target if left else
                                      "the board could not be told to leave teleop mode: it holds the arm by its "
                                      "deadman; `surepick job abort --port %s` ends teleop mode" % args.target))
    return summary, target


class _hangup_is_interrupt:
    # A closed terminal (SIGHUP) or a polite kill (SIGTERM) ends the session as Ctrl-C does: the
    # board is told to leave teleop mode, instead of being left held by its deadman.
    def __enter__(self):
        import signal
        self.old = {}
        for sig in (signal.SIGHUP, signal.SIGTERM):
            try:
                self.old[sig] = signal.signal(sig, signal.default_int_handler)
            except (ValueError, OSError):      # not the main thread: leave them be
                pass
        return self

    def __exit__(self, *exc):
        import signal
        for sig, h in self.old.items():
            signal.signal(sig, h)


def _ms(v):
    return "n/a" if v is None else "%.1f ms" % v


def _print_summary(args, source, summary, target):
    if summary.get("tracking_rms_mm") is not None:
        track = "tracking RMS %.2f mm, max %.2f mm" % (summary["tracking_rms_mm"], summary["tracking_max_mm"])
    else:
        track = "tool point not measured (a board has no joint feedback)"
    print("teleop %s -> %s: %d samples, %d dropped, %d re-anchored; %s; latency p50 %s, p99 %s; "
          "%d reach-clamped ticks" % (source.name, args.target, summary["samples"], summary["dropped"],
                                      summary["reanchors"], track, _ms(summary["latency_p50_ms"]),
                                      _ms(summary["latency_p99_ms"]), summary["reach_clamped_ticks"]))
    if getattr(target, "realtime", False):
        print("board: latency to its answer (upper bound of sample-to-setpoint), to the frame written p50 %s; "
              "%d deadman holds, %d re-arms, refused %s, unanswered %d"
              % (_ms(summary.get("host_latency_p50_ms")), summary.get("board_deadmans") or 0,
                 summary.get("board_rearms") or 0, summary.get("board_refused") or {},
                 summary.get("unanswered_samples") or 0))
    if args.out:
        print("log: %s  summary: %s" % (os.path.join(args.out, "teleop.csv"), os.path.join(args.out, "summary.json")))
    else:
        print(json.dumps({k: summary[k] for k in ("samples", "dropped", "tracking_rms_mm", "tracking_max_mm",
                                                  "latency_p50_ms", "latency_p99_ms")}))
