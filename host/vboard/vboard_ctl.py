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


# The process's CPU time, for the watchdog's wall-clock side (firmware/hal/virtual_guard.py):
# /proc/self/stat is opened here, while the host's filesystem is still the root (the flash
# replaces it before boot.py), and read again at each call.
try:
    _stat = open("/proc/self/stat")
except OSError:                      # not Linux
    _stat = None


def cpu_ms():
    # -> the CPU time (user + system) this process has used, ms; None where it cannot be read
    if _stat is None:
        return None
    try:
        _stat.seek(0)
        st = _stat.read()
    except OSError:
        return None
    fields = st[st.rfind(")") + 2:].split()     # after the name: state, ppid, ... utime, stime
    return (int(fields[11]) + int(fields[12])) * 10     # ticks of 1/USER_HZ s; USER_HZ is 100
