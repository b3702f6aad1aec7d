# Names for the numbers in the board's records and frames, for everything a person reads
# (live view, plain lines, exports, stats). An unknown number from a newer firmware is shown
# as a number, never an error.
from surepick.firmware import flashlog
from surepick.shared_fsm import codes
from surepick.shared_fsm import states

RECORD_TYPE_NAMES = {flashlog.R_TRANSITION: "transition", flashlog.R_FAULT: "fault",
                     flashlog.R_BOOT: "boot", flashlog.R_NOTE: "note", flashlog.R_COUNTERS: "counters"}
# Record types whose 12 ints are an event (seq, t_ms, kind, from, to, reason, attempt, readings).
EVENT_RECORD_TYPES = (flashlog.R_TRANSITION, flashlog.R_FAULT, flashlog.R_NOTE)


def state_name(s):
    return states.NAMES[s] if 0 <= s < len(states.NAMES) else "state%d" % s


def code_name(c):
    try:
        return codes.name(c)
    except Exception:  # an unknown code from a newer firmware: show the number
        return "code%d" % c


def record_type_name(rtype):
    return RECORD_TYPE_NAMES.get(rtype, "rtype%d" % rtype)
