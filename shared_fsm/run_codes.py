# A production run's numbers (firmware/production.py, docs/production-run.md): its record reasons
# (codes.K_RUN records), why it ended, the part-ready modes. A module apart from codes.py and
# link.py so that a board that runs no production run never holds them in its heap: it loads
# with the first RUN request. Append only, like codes.py: the records are kept in flash logs.
from .compat import const

# Record reasons, numbered apart from codes.py's reasons (below 32) and faults (32..).
R_RUN_FIRST = const(64)
R_RUN_START = const(64)        # a run began: x count (0 until stopped), y pick slots, z place slots, value ready mode
R_RUN_CYCLE = const(65)        # a cycle ended: x cycle number, y pick slot, z cycle ms, value R_PLACED or the fault
R_RUN_SKIP = const(66)         # a slot's part failed its attempts and was skipped: x cycle, y slot, value the fault
R_RUN_STOP = const(67)         # the run ended: x cycles, y placed, z why (STOP_*), value the fault (0 none)
R_RUN_WAIT = const(68)         # part-ready check found no part: x the next cycle, y slot, z ms waited
RUN_NAMES = ("RUN_START", "RUN_CYCLE", "RUN_SKIP", "RUN_STOP", "RUN_WAIT")
# The last five ints of a K_RUN record (their meaning by reason, above)
RUN_FIELDS = ("x", "y", "z", "beam_broken", "value")

# Why a run ended (R_RUN_STOP's z). The first four are a normal end.
STOP_COUNT = const(0)          # the cycles asked for are done
STOP_PICKS_DONE = const(1)     # every pick slot was visited
STOP_PLACES_FULL = const(2)    # every place slot is filled
STOP_REQUESTED = const(3)      # the operator asked (RUN_STOP): ended after the cycle
STOP_FAULT = const(4)          # a fault a run never goes on after (e-stop, a safety fault, a part held ...)
STOP_FAILED_PART = const(5)    # a part failed its attempts and run_on_fail is stop
STOP_IN_ROW = const(6)         # run_stop_in_row faults in a row
STOP_RATE = const(7)           # more than run_rate_pct of the last run_rate_window cycles faulted
STOP_READY_TIMEOUT = const(8)  # the part was not ready within run_ready_timeout_ms
STOP_REFUSED = const(9)        # the board refused a cycle's job (a slot out of reach, the arm off)
STOP_NAMES = ("count_done", "picks_done", "places_full", "requested", "fault", "failed_part", "in_row",
              "rate", "ready_timeout", "refused")

# RUN's part-ready modes (its `ready` field) and count
READY_NONE = const(0)          # pick at once
READY_WAIT = const(1)          # a fixed wait of ready_ms before each pick
READY_CHECK = const(2)         # ... and a grasp that finds nothing at the (single) pick pose waits and tries again
RUN_UNTIL_STOPPED = const(0)   # RUN's count: no count, until stopped (or a stop condition)


def name(code):
    # A run record's reason by name ("RUN_CYCLE"), or None for another code.
    if R_RUN_FIRST <= code < R_RUN_FIRST + len(RUN_NAMES):
        return RUN_NAMES[code - R_RUN_FIRST]
    return None
