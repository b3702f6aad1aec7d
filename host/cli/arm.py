# `surepick arm`: the arm descriptions (docs/arm-description.md).
#   list               the presets
#   show NAME|FILE     print a description as TOML (start your own from a preset)
#   check NAME|FILE    validate it (exit 2 naming the field), print the bench poses' reach and
#                      draw the reach map PNG
#   model NAME|FILE    write the generated MuJoCo model (MJCF) for MuJoCo's viewer
import os
import sys

from surepick.host.user_error import OK, USAGE
from surepick.host.cli.errors import CommandError


def add_arguments(p):
    p.description = ("Arm descriptions: one file says your arm's geometry, joint limits, servos, gripper, "
                     "sensors and bench; the firmware's kinematics, the simulator and the planner read it. "
                     "Start from a preset: `surepick arm show mearm > my_arm.toml`, edit, then "
                     "`surepick arm check my_arm.toml`.")
    sub = p.add_subparsers(dest="arm_verb", metavar="VERB")
    sub.add_parser("list", help="the preset arms")
    s = sub.add_parser("show", help="print a preset's (or a file's) description as TOML")
    s.add_argument("arm", metavar="NAME|FILE")
    c = sub.add_parser("check", help="check a description: exit 0 valid, 2 invalid (the field named); "
                                     "prints the reach of the bench poses and draws a reach map")
    c.add_argument("arm", metavar="NAME|FILE")
    c.add_argument("--map", metavar="PNG", help="reach map file (default: reach_map.png beside FILE, "
                                                "or ./<name>_reach.png for a preset)")
    c.add_argument("--no-map", action="store_true", help="skip the reach map")
    m = sub.add_parser("model", help="write the generated MuJoCo model (MJCF) of the arm on its bench")
    m.add_argument("arm", metavar="NAME|FILE")
    m.add_argument("--out", metavar="MODEL.xml", required=True)


def load_arm(name_or_path):
    """-> (Arm, description dict), or DescriptionError (bad input, exit 2) naming the file and
    field. What every verb's --arm goes through."""
    from surepick.host.arms import files
    return files.load(name_or_path)


def load_job_arm(name_or_path, say=None):
    """--arm of a verb that runs jobs -> an Arm (None given: None, the reference arm). A part the
    description's servos cannot hold is refused up front (exit 2), as the board would refuse every
    job of it; say: a function given one line, the servo asked for the largest share of its stall
    torque, so a long run states its payload margin before it starts."""
    if name_or_path is None:
        return None
    from surepick.host.arms import checks
    arm, _ = load_arm(name_or_path)
    problems, _ = checks.payload_report(arm)
    if problems:
        raise CommandError("%s: %s (the board refuses every job of this part)" % (name_or_path, problems[0]))
    shares = checks.payload_shares(arm)
    if say is not None and shares:
        worst = max(shares, key=lambda s: s[1] / s[2])
        say("arm %s: %s" % (arm.name, checks.payload_line(arm, *worst)))
    return arm


def run(args):
    verb = getattr(args, "arm_verb", None)
    if verb is None:
        raise CommandError("say what to do: list, show, check or model (see surepick arm --help)")
    if verb == "list":
        from surepick.host.arms import presets
        from surepick.shared_fsm import arm as arm_mod
        for name in presets.names():
            a = arm_mod.validate(presets.get(name))
            print("%-14s %-15s %s" % (name, a.kind, a.notes))
        return OK
    arm, d = load_arm(args.arm)
    if verb == "show":
        from surepick.host.arms import files
        sys.stdout.write(files.to_toml(d))
        return OK
    if verb == "check":
        return _check(args, arm)
    return _model(args, arm)


def _check(args, arm):
    from surepick.host.arms import checks
    path = None if args.no_map else _map_path(args, arm)      # refused before anything is printed
    problems, lines = checks.reach_report(arm)
    more, payload_lines = checks.payload_report(arm)
    problems += more
    lines += payload_lines
    for line in problems:
        print("surepick arm check: %s: %s" % (args.arm, line), file=sys.stderr)
    print("%s: a valid %s arm description" % (args.arm, arm.kind))
    for line in lines:
        print("  " + line)
    print("  farthest reach at the bench pitch (%g deg): %.0f mm" % (arm.bench["pitch_deg"], checks.max_reach_mm(arm)))
    if path is not None:
        checks.reach_map(arm, path)
        print("  reach map: %s" % path)
    return USAGE if problems else OK


def _map_path(args, arm):
    # Where the reach map goes, checked before it is drawn: a file it can be, in a format the
    # plotter writes, and never the description it maps.
    from matplotlib.backend_bases import FigureCanvasBase
    path = args.map or (os.path.join(os.path.dirname(os.path.abspath(args.arm)), "reach_map.png")
                        if os.path.exists(args.arm) else "%s_reach.png" % arm.name)
    _check_output(path, "--map", args.arm)
    ext = os.path.splitext(path)[1][1:].lower()
    if ext and ext not in FigureCanvasBase.get_supported_filetypes():
        raise CommandError("cannot use --map %s: a reach map is an image; give a name ending .png" % path)
    return path


def _check_output(path, flag, description):
    # An output file must be writable and must not be the description it is made from: writing
    # there would replace the user's arm file.
    from surepick.host.cli.outputs import check_writable_file
    check_writable_file(path, flag)
    if os.path.exists(path) and os.path.exists(description) and os.path.samefile(path, description):
        raise CommandError("cannot use %s %s: it is the arm description itself, which would be "
                           "overwritten; give another file name" % (flag, path))


def _model(args, arm):
    from surepick.sim import plant
    _check_output(args.out, "--out", args.arm)
    xml = plant.build_xml(part="cube25", arm=arm)
    with open(args.out, "w") as f:
        f.write(xml)
    print("wrote %s (the %s arm on its bench with a 25 mm cube; open it in MuJoCo's viewer: "
          "python -m mujoco.viewer --mjcf %s)" % (args.out, arm.name, args.out))
    return OK
