# `surepick bringup --port PORT [--arm FILE] [--operator console|sim] [--out DIR]`: a guided,
# resumable bring-up of a freshly wired arm (docs/bringup.md). The steps are in
# host/bringup/steps.py and finish.py; this module parses, opens the link, and ships what was found.
import os

from surepick.host.user_error import FAILED, OK
from surepick.host.cli.errors import CommandError
from surepick.host.cli.options import add_port_argument, board_port

HELP = """\
Walks a person through the inputs (the e-stop, the finger switch, the beam; the pot, the current
zero and the rail read plausibly, the rail against a multimeter) and each servo alone (its
direction, its zero on the rest-pose mark, its pulse range from two marks), saving each step as
soon as it is confirmed in DIR/bringup-state.json: Ctrl-C loses nothing, and running it again
resumes at the first step not confirmed (--redo STEP does one again, --skip STEP leaves one
out). Nothing moves while the board reads the e-stop open or the rail low. At the end DIR/arm.toml is the description
with the servo entries found, DIR/found.json what was found; with --apply the board gets them
(as its /arm.json, as deploy --arm ships it: the board restarts, the arm goes limp while it does),
then the gripper's current is measured on the part you hold between its jaws (closed on nothing,
squeezing it, pressing on it at stall: the board's current_grip_min_ma, current_stall_ma,
current_crush_ma and current_hold_limit_ma).

--operator sim (a virtual board only, e.g. `surepick board --standin SEED`) answers every question
as a person at that bench would, from where the simulated arm physically is.

Exit status: 0 every step asked for confirmed, 1 stopped (the reason and the way on printed; rerun to
resume), 2 bad usage."""


def add_arguments(parser):
    import argparse
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.description = HELP
    add_port_argument(parser)
    parser.add_argument("--arm", metavar="NAME|FILE", default="reference",
                        help="the arm description the board runs now (default: reference); its servo "
                             "entries are what bring-up corrects")
    parser.add_argument("--operator", choices=("console", "sim"), default="console",
                        help="who answers: a person at this terminal (default), or the stand-in person "
                             "of a virtual board's bench")
    parser.add_argument("--out", metavar="DIR", default="bringup",
                        help="where the state, arm.toml and found.json go (default ./bringup)")
    parser.add_argument("--redo", metavar="STEP", action="append", default=[],
                        help="do this confirmed step again (repeatable); `all` starts over")
    parser.add_argument("--skip", metavar="STEP", action="append", default=[],
                        help="leave this step out (saved as skipped; steps that need it stop)")
    parser.add_argument("--apply", action="store_true",
                        help="after the last step, give the board what was found (DIR/arm.toml as its "
                             "/arm.json, as deploy --arm ships it, it restarts; the pot as its settings), "
                             "measure the gripper's current on the part you hold in its jaws (its current "
                             "settings), then run the dry cycle and the first real cycle")
    parser.add_argument("--list", action="store_true", help="print the steps and which are confirmed, and exit")


def run(args):
    from surepick.host.cli.arm import load_arm
    from surepick.host.bringup import finish
    from surepick.host.bringup import servos as servos_mod
    from surepick.host.bringup import steps
    from surepick.host.bringup.state import State

    arm, description = load_arm(args.arm)
    servos = servos_mod.servos_of(arm)
    names = steps.step_names(servos)
    every = names + list(finish.STEPS)
    for n in args.redo + args.skip:
        if n not in every and n != "all":
            raise CommandError("no step %r; the steps: %s" % (n, ", ".join(every)))
    state = State(os.path.join(args.out, "bringup-state.json"), args.arm)
    if "all" in args.redo:
        args.redo = list(every)
    if set(args.redo) & set(names):
        args.redo += list(finish.STEPS)     # what the board got and the cycles follow what is found
    for n in args.redo:
        state.forget(n)
    if args.list:
        for n in every:
            r = state.get(n)
            print("%-26s %s" % (n, "-" if r is None else ("skipped" if r.get("skipped") else "confirmed")))
        return OK
    port = board_port(args)
    arm_path = os.path.join(args.out, "arm.toml")
    if all(state.done(n) for n in every) or (all(state.done(n) for n in names) and not args.apply):
        print("every step is confirmed (%s); --redo STEP to do one again%s"
              % (state.path, "" if args.apply else "; --apply gives the board what was found and runs the dry "
                 "and first cycles"))
        return OK
    operator = _operator(args, port)
    if not all(state.done(n) for n in names):
        _bring_up(args, port, arm, description, servos, names, state, operator)
        print("bring-up found: %s and %s" % (arm_path, os.path.join(args.out, "found.json")))
    if not args.apply:
        print("give them to the board and run the dry and first cycles: surepick bringup --port %s --out %s "
              "--apply" % (port, args.out))
        return OK
    _finish(args, port, state, operator, arm_path)
    print("bring-up done: the board runs %s and placed its first part" % arm_path)
    return OK


def _operator(args, port):
    from surepick.host.bringup.operators import TerminalOperator, SimOperator
    if args.operator == "console":
        return TerminalOperator()
    from surepick.host.vboard.control import ControlError, find_board
    try:
        entry = find_board(port)
    except ControlError as e:
        raise CommandError("--operator sim needs a virtual board with a bench: %s" % e) from None
    if not entry.get("control"):
        raise CommandError("--operator sim needs a virtual board (`surepick board --standin SEED`); %s is an %s"
                           % (port, entry.get("kind") or "other board"))
    return SimOperator(entry["control"])


def _bring_up(args, port, arm, description, servos, names, state, operator):
    from surepick.host.arms import files
    from surepick.host.cli.options import board_link
    from surepick.host.bringup import apply as apply_mod
    from surepick.host.bringup import jog as jog_mod
    from surepick.host.bringup import steps

    def writer(found, pot):
        d, notes = steps.write_outputs(args.out, description, found, servos, files, pot)
        for n in notes:
            print(n)
        return {"servos": sorted(found)}

    with _stops(state), board_link(args, "bringup") as c:
        directions, shipped = state.board()
        board_map = jog_mod.BoardMap(apply_mod.with_directions(arm, directions))
        if not shipped:
            # killed while the board was being given it: it may be in the deploy's raw REPL,
            # its firmware stopped; deploy it again before asking the firmware anything
            print("the board was being given a mirrored servo when bring-up stopped: giving it again")
            _end_teleop(c)
            apply_mod.ship(c, port, board_map.arm)
            state.set_board(directions, True)
        jog = jog_mod.Jog(c, jog_mod.config_get(c, "rail_low_mv"))
        if not shipped:
            _cleared(jog)

        def ship(new_arm):
            # The board gets new_arm as its /arm.json (a servo mirrored): saved as under way
            # first, so a bring-up killed meanwhile ships it again before anything moves.
            want = {n: e["direction"] for n, e in new_arm.to_dict()["servos"].items() if n != "gripper"}
            jog.leave()
            state.set_board(want, False)
            apply_mod.ship(c, port, new_arm)
            state.set_board(want, True)
            board_map.arm = new_arm
            _cleared(jog)
        bringup = steps.BringupSteps(state, servos, jog, board_map, operator, port=port, ship=ship)
        try:
            bringup.run(names, skip=set(args.skip), writer=writer)
        finally:
            jog.leave()


def _end_teleop(c):
    # A bring-up killed mid-move leaves the board in teleop (holding, by its deadman): deploy
    # refuses a board in teleop, so it is ended first (the arm holds where it is).
    from surepick.host.link.errors import LinkError
    from surepick.shared_fsm import link
    try:
        c.request(link.T_TELEOP, (0,), 3.0)
    except LinkError:
        pass                     # no firmware answering: nothing in teleop


def _cleared(jog):
    if jog.clear_restart_fault():
        print("the board latched RAIL_LOW as its servos came back on after the restart; the rail "
              "reads above rail_low_mv again: cleared")


def _finish(args, port, state, operator, arm_path):
    # The board gets what was found, then the dry and first cycles (host/bringup/finish.py).
    from surepick.host.cli.arm import load_arm
    from surepick.host.cli.options import board_link
    from surepick.host.bringup import apply as apply_mod
    from surepick.host.bringup import finish
    from surepick.host.bringup import jog as jog_mod
    if not os.path.exists(arm_path):
        raise CommandError("%s does not exist yet: finish the bring-up first (--redo write)" % arm_path)
    load_arm(arm_path)           # a bad description is refused (exit 2) before the board is touched
    with _stops(state), board_link(args, "bringup --apply") as c:
        jog = jog_mod.Jog(c, jog_mod.config_get(c, "rail_low_mv"))

        def ship(path):
            res = apply_mod.ship(c, port, load_arm(path)[0], say=print)
            print("applied: %s shipped as /arm.json (%d files copied); the board restarted" % (path, len(res.copied)))
            _cleared(jog)
        try:
            finish.Finish(state, c, jog, operator, port, ship,
                          found_path=os.path.join(args.out, "found.json")).run(
                arm_path, lambda p: load_arm(p)[0], skip=set(args.skip))
        finally:
            jog.leave()


class _stops:
    # Every way a bring-up stops: one line with the reason, and where what was confirmed is.
    def __init__(self, state):
        self.state = state

    def __enter__(self):
        return self

    def __exit__(self, kind, e, tb):
        from surepick.host.arms import files
        from surepick.host.bringup import apply as apply_mod
        from surepick.host.bringup import jog as jog_mod
        from surepick.host.link.errors import LinkError
        path = self.state.path
        if kind is None:
            return False
        if issubclass(kind, apply_mod.ApplyError):
            raise CommandError("bring-up stopped: the board did not take its description (%s); what was "
                               "confirmed is saved in %s" % (e, path), FAILED) from None
        if issubclass(kind, jog_mod.BringupStop):
            raise CommandError("bring-up stopped: %s (what was confirmed is saved in %s)" % (e, path),
                               FAILED) from None
        if issubclass(kind, files.DescriptionError):
            raise CommandError("bring-up stopped: %s" % e, FAILED) from None
        if issubclass(kind, LinkError):
            raise CommandError("bring-up stopped: the link failed (%s); what was confirmed is saved in %s"
                               % (e, path), FAILED) from None
        return False
