# Runs INSIDE the virtual board's `micropython` (copied to /.vboard/vboard_ctl.py), never
# under CPython. Lets board-side code ask the supervisor for what a real RP2040 does in
# silicon: machine.reset() (kind "hard"), a watchdog bite ("watchdog"), machine.soft_reset()
# ("soft"). The request travels in-band on stdout as an APC marker the supervisor strips.
import sys

SOFT = "soft"
HARD = "hard"
WATCHDOG = "watchdog"


def reset(kind=HARD):
    if kind not in (SOFT, HARD, WATCHDOG):
        raise ValueError("reset kind must be soft, hard or watchdog")
    sys.stdout.write("\x1b_vboard:reset:" + kind + "\x1b\\")
    # Never return, like the real thing: wait here until the supervisor replaces us.
    import time
    while True:
        try:
            time.sleep(1)
        except BaseException:
            pass
