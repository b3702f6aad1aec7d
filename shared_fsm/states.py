# The nine states of the pick-and-place cycle, and the transition table a test can check.
from .compat import const

IDLE = const(0)
APPROACH = const(1)
DESCEND = const(2)
GRASP = const(3)
VERIFY = const(4)
LIFT = const(5)
TRANSFER = const(6)
PLACE = const(7)
RECOVER = const(8)
N_STATES = const(9)

NAMES = ("IDLE", "APPROACH", "DESCEND", "GRASP", "VERIFY", "LIFT", "TRANSFER", "PLACE", "RECOVER")

# Every transition the machine may take, as (from, to). Faults and e-stop go to IDLE from any
# state (with a latched fault); abort does the same. machine.py only ever calls _enter(to) with
# a pair listed here (a test drives it and checks).
TRANSITIONS = (
    (IDLE, APPROACH),          # job accepted
    (APPROACH, DESCEND),       # above the part, settled, pre-grasp check passed
    (DESCEND, GRASP),          # at the grasp pose
    (DESCEND, RECOVER),        # a finger came down on something on the way (the rail sagged)
    (GRASP, VERIFY),           # dwell over
    (VERIFY, LIFT),            # grasp verified
    (VERIFY, RECOVER),         # grasp not verified
    (LIFT, TRANSFER),          # lifted straight up
    (TRANSFER, PLACE),         # above the target
    (PLACE, IDLE),             # released, confirmed, retreated: cycle done
    (RECOVER, APPROACH),       # retry from a shifted pose
) + tuple((s, IDLE) for s in range(1, 9))  # faults, e-stop, abort: latched, back to IDLE


def name(state):
    if 0 <= state < N_STATES:
        return NAMES[state]
    return "?%d" % state
