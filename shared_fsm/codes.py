# One table of reason and fault codes shared by the state machine, the firmware's log, the link
# protocol and every host tool. Append only: codes are stored in flash logs and run records.
from .compat import const

# Event kinds.
K_TRANSITION = const(0)
K_FAULT = const(1)
K_NOTE = const(2)
K_SEARCH = const(3)   # a step of a part search: its last five ints are SEARCH_FIELDS, not readings
K_RUN = const(4)      # a production run's record: its reasons and fields in run_codes.py (loaded with a run)
KIND_NAMES = ("transition", "fault", "note", "search", "run")

# Reasons (why a transition or note happened).
R_NONE = const(0)
R_JOB_START = const(1)
R_ARRIVED = const(2)
R_SETTLED = const(3)
R_DWELL_DONE = const(4)
R_VERIFY_PASS = const(5)
R_VERIFY_EMPTY = const(6)      # every enabled check said "nothing there"
R_VERIFY_DISAGREE = const(7)   # checks disagree (e.g. beam broken, switch open: present, not gripped)
R_VERIFY_UNSETTLED = const(8)  # readings never settled within the verify window: fail closed
R_RETRY = const(9)
R_PLACED = const(10)
R_RELEASED = const(11)         # an operator opened the jaw on a held part (explicit RESCUE release)
R_DISAGREE_NOTE = const(12)    # a disagreement that did not change the verdict
R_GRIP_FLICKER = const(13)     # grip looked lost briefly, then came back (tolerated)
R_RESENSED = const(14)         # the re-sense hook supplied a new part pose
R_CLEARED = const(15)          # a human cleared the latched fault
R_RESCUE = const(16)           # an operator's RESCUE request started moving the arm again
R_RESTED = const(17)           # a rescue brought the arm back to its stored rest pose
R_UNPOWERED = const(18)        # a servo's PWM was switched off (a stall that backing off did not end)
R_TELEOP_ON = const(19)        # teleop mode entered (firmware/teleop_mode.py)
R_TELEOP_OFF = const(20)       # teleop mode left (request, abort, or a fault)
R_DEADMAN = const(21)          # teleop: no setpoint for longer than the deadman time: holding
# A part search's steps (K_SEARCH records, shared_fsm/search.py): where, and what it saw.
R_SEARCH = const(22)           # a search began: around the taught pose (x, y, z), value = its range um
R_PROBE_SEEN = const(23)       # a probe's beam crossed something with no finger on it: the beam's x, y, z
R_PROBE_CLEAR = const(24)      # a probe came down to its depth and the beam stayed clear
R_PROBE_TOUCHED = const(25)    # a probe's finger came down on something (the rail sagged): it backed off
R_EDGE = const(26)             # where the part ends along the sweep axis: between the last probe that saw
                               # it (x, y, z) and value um further on, where one did not
R_FOUND = const(27)            # the pose the next grasp goes to; value = how sure, um (radial spread)
R_NOT_FOUND = const(28)        # nothing consistent with a part left; value = probes made
R_SEARCH_TIMEOUT = const(29)   # the search's time limit ran out; value = probes made
R_SEARCH_OFF = const(30)       # no search for this job (a pose out of reach, a tilted tool); value = why
R_TOUCHED = const(31)          # DESCEND: a finger came down on something (the rail sagged): backed off to retry

# Faults (latched; a fault blocks new jobs until cleared).
F_FIRST = const(32)
F_GRASP_FAILED = const(32)     # no part found after MAX_ATTEMPTS
F_SENSOR_DISAGREE = const(33)  # sensors contradict each other (stuck switch, blocked beam)
F_SENSOR_FAULT = const(34)     # a reading is impossible (pot wire broken: reads a rail)
F_CRUSH = const(35)            # current far above the expected squeeze: wrong or crushed part
F_DROPPED = const(36)          # grip lost for longer than the tolerance during lift/transfer/place
F_RELEASE_FAILED = const(37)   # after opening, the part is still sensed between the jaws
F_MOTION_TIMEOUT = const(38)   # an arrival was not reported in time
F_HOLD_OVERCURRENT = const(39) # holding current above its limit for too long (servo would burn)
F_ESTOP = const(40)
F_ABORTED = const(41)
F_INTERRUPTED = const(42)      # the controller restarted mid-cycle (brownout, watchdog)
F_BAD_POSE = const(43)         # a commanded pose is unreachable
F_RAIL_LOW = const(44)         # servo rail below its minimum: motion held (a brownout may follow)
F_STALL = const(45)            # gripper current at stall too long: backed off, or its PWM cut
F_LIFT_SHORT = const(46)       # the rail says the load servos sag the lift short of its height
F_LAST = const(46)

_REASON_NAMES = (
    "NONE", "JOB_START", "ARRIVED", "SETTLED", "DWELL_DONE", "VERIFY_PASS", "VERIFY_EMPTY",
    "VERIFY_DISAGREE", "VERIFY_UNSETTLED", "RETRY", "PLACED", "RELEASED", "DISAGREE_NOTE",
    "GRIP_FLICKER", "RESENSED", "CLEARED", "RESCUE", "RESTED", "UNPOWERED", "TELEOP_ON",
    "TELEOP_OFF", "DEADMAN", "SEARCH", "PROBE_SEEN", "PROBE_CLEAR", "PROBE_TOUCHED", "EDGE", "FOUND",
    "NOT_FOUND", "SEARCH_TIMEOUT", "SEARCH_OFF", "TOUCHED",
)
_FAULT_NAMES = (
    "GRASP_FAILED", "SENSOR_DISAGREE", "SENSOR_FAULT", "CRUSH", "DROPPED", "RELEASE_FAILED",
    "MOTION_TIMEOUT", "HOLD_OVERCURRENT", "ESTOP", "ABORTED", "INTERRUPTED", "BAD_POSE",
    "RAIL_LOW", "STALL", "LIFT_SHORT",
)

# Bits of the grasp-check mask (which checks say "part present").
CHECK_JAW = const(1)
CHECK_SWITCH = const(2)
CHECK_CURRENT = const(4)
CHECK_BEAM = const(8)
CHECK_ALL = const(15)
CHECK_NAMES = ("jaw", "switch", "current", "beam")

# The last five ints of a K_SEARCH record (the other kinds carry readings there: events.py).
SEARCH_FIELDS = ("x_um", "y_um", "z_um", "beam_broken", "value")


def is_fault(code):
    return F_FIRST <= code <= F_LAST


def name(code):
    if 0 <= code < len(_REASON_NAMES):
        return _REASON_NAMES[code]
    if F_FIRST <= code <= F_LAST:
        return _FAULT_NAMES[code - F_FIRST]
    return "?%d" % code


def code_of(text):
    # Name -> code (host side; allocation is fine here).
    for i in range(len(_REASON_NAMES)):
        if _REASON_NAMES[i] == text:
            return i
    for i in range(len(_FAULT_NAMES)):
        if _FAULT_NAMES[i] == text:
            return F_FIRST + i
    raise ValueError("unknown reason or fault name: %s" % text)


def checks_text(mask):
    parts = []
    for i in range(4):
        if mask & (1 << i):
            parts.append(CHECK_NAMES[i])
    return "+".join(parts) if parts else "none"
