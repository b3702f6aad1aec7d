# `surepick teleop`: drive the arm from a 6-DoF pose stream (recorded file, keyboard jog, OpenVR
# controller, SpaceMouse) through the teleop pipeline (surepick/teleop/) into a target: the MuJoCo
# arm now (a board over the link is a later target). Writes DIR/teleop.csv and DIR/summary.json.
import json
import os
import sys

from surepick.cli import exitcodes
from surepick.cli.errors import CommandError


def add_arguments(p):
    p.description = (
        "Teleoperate the arm. --source is a recorded stream (.jsonl: one {\"t\", \"pose\": 12 numbers, 3x4 "
        "row-major in OpenVR's Y-up frame, \"buttons\": {clutch, fine, grip}} per line; or .csv), 'keyboard' "
        "(jog in this terminal), 'openvr' (a SteamVR controller; pip install surepick[openvr]) or 'spacemouse' "
        "(pip install surepick[spacemouse]). Hold the clutch to move; pressing it again re-zeroes without a jump; "
        "fine divides the scale. The pipeline: Y-up -> Z-up, outlier rejection, clutch/scale, workspace clamp, "
        "low-pass, reachability clamp, IK, servo feedforward, joint setpoints at --control-hz through the firmware's "
        "servo driver into the simulated servos. A recorded file replays in virtual time unless --realtime. "
        "Exit 0 when the session ran, 2 for bad usage or a missing source.")
    p.add_argument("--source", required=True, metavar="FILE|openvr|spacemouse|keyboard")
    p.add_argument("--target", default="sim", help="sim (default); a board target comes later")
    p.add_argument("--out", metavar="DIR", help="write DIR/teleop.csv and DIR/summary.json")
    p.add_argument("--scale", type=float, help="hand -> arm scale (default 0.15; 1 for keyboard and SpaceMouse)")
    p.add_argument("--fine-divisor", type=float, default=5.0, help="fine mode divides the scale by this (default 5)")
    p.add_argument("--alpha", type=float, default=0.3, help="low-pass weight per control tick, 0.2-0.4 (default 0.3)")
    p.add_argument("--jump-cm", type=float, default=5.0,
                   help="drop a sample whose hand moved more than this since the last good one (default 5)")
    p.add_argument("--control-hz", type=float, default=100.0, help="fixed control rate, >= 50 (default 100)")
    p.add_argument("--ik", choices=("dls", "analytic"), default="dls",
                   help="DLS on the MuJoCo model (default) or the shared analytic kinematics")
    p.add_argument("--no-feedforward", action="store_true", help="send the IK joints without servo feedforward")
    p.add_argument("--no-pitch", action="store_true", help="keep the tool pitch; ignore the hand's pitch")
    p.add_argument("--heading-deg", type=float, default=-90.0,
                   help="operator's facing relative to the arm (-90: OpenVR forward = the arm's +x)")
    p.add_argument("--part", default="cube25", help="part on the source pad (sim), or 'none'")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--realtime", action="store_true", help="replay a recorded file in real time (two threads)")
    p.add_argument("--viewer", choices=("auto", "on", "off"), default="auto",
                   help="MuJoCo viewer: auto = when a display exists and the session runs in real time")
    p.add_argument("--max-s", type=float, help="stop a live session after this many seconds")


def run(args):
    from surepick.teleop import display
    display.prefer_offscreen_gl()            # before anything loads MuJoCo
    if args.target != "sim":
        raise CommandError("--target %s: only the simulated arm (sim) is available so far" % args.target)
    from surepick.teleop.pipeline import Settings
    from surepick.teleop.sources import SourceError, open_source
    try:
        src_kw = {} if args.source not in ("keyboard", "spacemouse") else {"heading_deg": args.heading_deg}
        source = open_source(args.source, **src_kw)
    except SourceError as e:
        raise CommandError(str(e)) from None
    try:
        scale = args.scale if args.scale is not None else (source.scale_hint or 0.15)
        settings = Settings(scale=scale, fine_divisor=args.fine_divisor, alpha=args.alpha, jump_m=args.jump_cm / 100.0,
                            control_hz=args.control_hz, ik=args.ik, feedforward=not args.no_feedforward,
                            heading_deg=args.heading_deg, follow_pitch=not args.no_pitch)
        settings.check()
        if args.fine_divisor < 1:
            raise ValueError("--fine-divisor must be >= 1")
    except ValueError as e:
        source.close()
        raise CommandError(str(e)) from None
    return _session(args, source, settings)


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


def _session(args, source, settings):
    from surepick.teleop import display
    from surepick.teleop.runner import Session, run_live, run_recorded
    from surepick.teleop.session_log import SessionLog
    from surepick.teleop.sim_target import SimTarget
    part = None if args.part == "none" else args.part
    try:
        target = SimTarget(part=part, seed=args.seed)
        log = SessionLog(args.out)
        session = Session(settings, target, log)
    except (KeyError, ValueError) as e:
        source.close()
        raise CommandError(str(e)) from None
    live = source.realtime or args.realtime
    viewer = None
    if args.viewer == "on" or (args.viewer == "auto" and live and display.has_display()):
        if not display.has_display():
            print("surepick teleop: --viewer on needs a display; running offscreen", file=sys.stderr)
        else:
            viewer = display.ViewerThread(target)
    summary = None
    say = ClampNotices()
    try:
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
        if args.out and summary is not None:
            why = display.snapshot(target, os.path.join(args.out, "teleop_final.png"))
            summary["snapshot"] = "teleop_final.png" if why is None else "not rendered (%s)" % why
        log.close(summary)
    print("teleop %s -> sim: %d samples, %d dropped, %d re-anchored; tracking RMS %.2f mm, max %.2f mm; "
          "latency p50 %.1f ms, p99 %.1f ms; %d reach-clamped ticks"
          % (source.name, summary["samples"], summary["dropped"], summary["reanchors"],
             summary["tracking_rms_mm"] or 0.0, summary["tracking_max_mm"] or 0.0,
             summary["latency_p50_ms"] or 0.0, summary["latency_p99_ms"] or 0.0, summary["reach_clamped_ticks"]))
    if args.out:
        print("log: %s  summary: %s" % (os.path.join(args.out, "teleop.csv"), os.path.join(args.out, "summary.json")))
    else:
        print(json.dumps({k: summary[k] for k in ("samples", "dropped", "tracking_rms_mm", "tracking_max_mm",
                                                  "latency_p50_ms", "latency_p99_ms")}))
    return exitcodes.OK
