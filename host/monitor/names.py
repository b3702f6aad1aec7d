# Names for the numbers in the board's records and frames, for everything a person reads
# (live view, plain lines, exports, stats). An unknown number from a newer firmware is shown
# as a number, never an error.
from surepick.firmware import boot_recovery, flashlog
from surepick.firmware.hal import contract
from surepick.shared_fsm import codes
from surepick.shared_fsm import states
from surepick.shared_fsm.machine import fault_where

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


# Why a boot happened (HELLO's and the boot record's reset_cause: the HAL contract's RESET_*).
RESET_CAUSE_NAMES = {contract.RESET_UNKNOWN: "UNKNOWN", contract.RESET_POWER_ON: "POWER_ON",
                     contract.RESET_WATCHDOG: "WATCHDOG", contract.RESET_SOFT: "SOFT", contract.RESET_HARD: "HARD"}
# What the boot did (the boot record's action: boot_recovery.ACT_*).
BOOT_ACTION_NAMES = {boot_recovery.ACT_NORMAL: "normal", boot_recovery.ACT_FAULT: "interrupted"}


def reset_cause_name(c):
    return RESET_CAUSE_NAMES.get(c, "reset%d" % c)


def boot_action_name(a):
    return BOOT_ACTION_NAMES.get(a, "action%d" % a)


def present_text(mask):
    # the grasp checks that said "part present": "jaw+switch+current+beam", or "none"
    return codes.checks_text(mask)


def fault_state_name(fault, state):
    # The state a fault is named by, from its event's from_state (machine.fault_where).
    return state_name(fault_where(fault, state))
