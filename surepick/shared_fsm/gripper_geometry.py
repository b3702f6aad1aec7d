# The gripper's geometry the part search plans its probes from, read in ONE place so that it can
# be pointed at an arm description when one exists (docs/find-the-part.md, "Geometry"). Today
# the numbers are the reference gripper's (sim/arm.xml; tests/shared_fsm/test_gripper_geometry.py
# checks them against MuJoCo's own model of it) and the jaw's opening is the machine's
# jaw_max_um. Integer micrometres, for the board.
from .compat import const

# Along the tool axis: the IR beam crosses the jaws this far behind the jaw centre (towards the
# wrist), and the finger tips reach this far past it. So with the tool pointing down the beam is
# BEAM_BEHIND + FINGER_TIP above the finger tips: the beam can only see what stands taller than
# that between the fingers.
BEAM_BEHIND_UM = const(5000)
FINGER_TIP_UM = const(10000)
# Across the closing direction (radial when the tool points down): how wide a finger is.
FINGER_HEIGHT_UM = const(20000)
# Along the closing direction: from a finger's gripping face to its outer face (the left finger:
# sprung pad, the gap the emitter sits in, the plate; the right one is thinner: 6 mm, taken as
# the left's to stay on the safe side).
FINGER_OUTER_UM = const(10000)


class Geometry:
    # What a search needs, in um: beam_behind, finger_tip, finger_height, finger_outer, and
    # opening (how far apart the gripping faces are when the jaw is open for a probe).
    def __init__(self, opening_um):
        self.beam_behind = BEAM_BEHIND_UM
        self.finger_tip = FINGER_TIP_UM
        self.finger_height = FINGER_HEIGHT_UM
        self.finger_outer = FINGER_OUTER_UM
        self.opening = opening_um


def geometry(cfg):
    # The one entry point: the probes open the jaw as wide as it goes.
    return Geometry(cfg.jaw_max_um)
