# The gripper's geometry the part search plans its probes from, read in ONE place: the arm's
# description (shared_fsm/arm.py; the reference arm's when none is given), whose numbers the
# simulator's model is generated from too (tests/sim/test_gripper_geometry.py checks what this
# reads against MuJoCo's model). Integer micrometres, for the board; docs/find-the-part.md,
# "What the gripper can sense".


class Geometry:
    # What a search needs, in um:
    #   beam_behind    the IR beam crosses the jaws this far behind the jaw centre (towards the
    #                  wrist) along the tool axis,
    #   finger_tip     and the finger tips reach this far past it: with the tool pointing down the
    #                  beam is beam_behind + finger_tip above the tips, and sees only what stands
    #                  taller than that between the fingers;
    #   finger_height  a finger's width across the closing direction (radial when pointing down);
    #   finger_outer   from a finger's gripping face to its outer face (the left finger's: sprung
    #                  pad, its travel, the plate; the right one is thinner, taken as the left);
    #   opening        how far apart the gripping faces are with the jaw open for a probe.
    def __init__(self, beam_behind, finger_tip, finger_height, finger_outer, opening):
        self.beam_behind = beam_behind
        self.finger_tip = finger_tip
        self.finger_height = finger_height
        self.finger_outer = finger_outer
        self.opening = opening


def geometry(cfg, arm=None):
    # The one entry point. arm: an Arm (shared_fsm/arm.py) or None for the reference arm; the
    # probes open the jaw as wide as the machine's config lets it (jaw_max_um).
    if arm is None:
        from .kinematics import REFERENCE
        arm = REFERENCE
    g = arm.gripper
    outer = g["pad_thickness_mm"] + arm.sensors["pad"]["travel_mm"] + g["finger_thickness_mm"]
    return Geometry(int(round(g["beam_behind_mm"] * 1000)), int(round(g["finger_tip_mm"] * 1000)),
                    int(round(g["finger_height_mm"] * 1000)), int(round(outer * 1000)), cfg.jaw_max_um)
