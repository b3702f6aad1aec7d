# `surepick board --standin SEED [--print-truth]`: the stand-in bench's options (sim/standin.py).
# Kept beside cli/board.py so that verb's own code stays as it was.
import json

from surepick.host.user_error import OK
from surepick.host.cli.errors import CommandError


def _arm(arm=None):
    # The arm the virtual board boots: --arm, else the flash's /arm.json (cli/board.py), None the reference.
    if arm is not None:
        return arm
    from surepick.shared_fsm import kinematics
    return kinematics.REFERENCE


def _truth_arm(args):
    # --print-truth starts no board: the arm it would boot, without writing the flash.
    from surepick.host.cli import board
    arm = board._arm(args)
    if arm is None and args.flash:
        import os
        from surepick.host.engines import board_arm
        if os.path.exists(os.path.join(args.flash, board_arm.ARM_PATH.lstrip("/"))):
            arm = board_arm.for_flash_dir(args.flash)[0]
    return _arm(arm)


def check(args):
    """Fill in and check the options a stand-in bench goes with (CommandError: one line)."""
    if args.standin < 0:
        raise CommandError("--standin SEED must be 0 or more")
    if args.reset_world:
        raise CommandError("--standin starts a bench; --reset-world acts on a running one: give one of them")
    if args.engine != "vboard":
        raise CommandError("--standin is for --engine vboard (the emulated RP2040 runs the reference plant)")
    if args.scenario is None:
        args.scenario = "nominal"


def print_truth(args):
    if args.standin is None:
        raise CommandError("--print-truth prints a stand-in bench's hidden calibration: give --standin SEED")
    check(args)
    from surepick.sim import standin
    print(json.dumps(standin.truth(args.standin, _truth_arm(args)), sort_keys=True))
    return OK


def plant_params(args, arm=None):
    from surepick.sim import standin
    return standin.plant_params(args.standin, _arm(arm))


def bench_part(arm=None):
    from surepick.sim import standin
    return standin.bench_part(_arm(arm))
