# The virtual board's stand-in for two things a Pico does in silicon while no Python code runs the
# loop, run on a thread of the unix `micropython` (hal/virtual.py uses it; never on a Pico):
#   - the watchdog counter, which counts REAL time: a loop hung in Python stops exchanging with
#     the plant, so virtual time stands still and a watchdog in virtual time would never bite;
#   - a pin interrupt, which fires while the REPL waits for a human: after Ctrl-C nothing else
#     reads the e-stop, so a thread polls it (every(), hal/virtual.py's guard_estop).
# Time the board spends waiting for the bench (a lockstep exchange, a HOLD for a console line)
# is not the board's: on a Pico time would not stop there. Nor is time the host gives to other
# programs: a loaded host wakes this sleeping thread on time while it holds the busy loop back
# (a feeder night on a loaded 2-core host was bitten after 117 cycles). So the silence
# is the CPU time the process used since the loop last showed it was alive (cpu_ms, from the
# virtual board's supervisor: /proc/self/stat); where that cannot be read, this thread's own
# poll steps (a stopped process does not count). Host load delays a bite rather than faking one.
import time
import _thread

from ...shared_fsm.compat import const

_POLL_MS = const(10)

mark = 0        # ticks_ms when the board's code last showed it was alive (a feed, back from the bench)
waiting = 0     # 1 while the board waits for the bench
_timeout = 0    # the armed watchdog's timeout (0: not armed)
_bite = None
_cpu_ms = None  # -> the process's CPU time in ms, or None
_dog_alive = False
_every = None   # (period_ms, fn) for the poller
interrupted = 0  # a Ctrl-C landed on one of these threads: the main thread's to raise


def watch(timeout_ms, bite, cpu_ms=None):
    # Arm the wall-clock watchdog: bite(silent_ms) after timeout_ms without alive(), counted in
    # the CPU time cpu_ms() gives (None: in this thread's poll steps).
    global mark, _timeout, _bite, _cpu_ms, _dog_alive, interrupted
    mark = time.ticks_ms()
    interrupted = 0              # one meant for code that ran before this loop is not its
    _timeout = timeout_ms
    _bite = bite
    _cpu_ms = cpu_ms or (lambda: None)
    if not _dog_alive:
        _dog_alive = True
        _thread.start_new_thread(_dog, ())


def unwatch():
    global _timeout
    _timeout = 0


def _dog():
    global _dog_alive
    seen = mark
    silent = 0
    last = time.ticks_ms()
    cpu0 = _cpu_ms()
    try:
        while _timeout:
            try:
                time.sleep_ms(_POLL_MS)
                now = time.ticks_ms()
                step = time.ticks_diff(now, last)
                last = now
                if waiting or mark != seen:
                    seen = mark
                    silent = 0
                    cpu0 = _cpu_ms()
                    continue
                cpu = _cpu_ms() if cpu0 is not None else None
                if cpu is not None:
                    silent = cpu - cpu0
                else:
                    silent += step if step < 2 * _POLL_MS else _POLL_MS
                if silent > _timeout > 0:    # unwatch() during this poll: stopped, never bites
                    _bite(silent)
                    return
            except KeyboardInterrupt:
                _pass_on_interrupt()
    finally:
        _dog_alive = False


def _pass_on_interrupt():
    # A Ctrl-C is for the board's program, never for this stand-in for silicon: should the
    # signal land on this thread, the main thread raises it at its next step (hal/virtual.py).
    global interrupted
    interrupted = 1


def every(period_ms, fn):
    # Call fn(elapsed_ms) every period_ms of real time from now on, on a thread of its own (the
    # virtual board's pin interrupt). Once: a second call replaces the function.
    global _every
    first = _every is None
    _every = (period_ms, fn)
    if first:
        _thread.start_new_thread(_poller, ())


def _poller():
    last = time.ticks_ms()
    while True:
        try:
            period, fn = _every
            time.sleep_ms(period)
            now = time.ticks_ms()
            fn(time.ticks_diff(now, last))
            last = now
        except KeyboardInterrupt:
            _pass_on_interrupt()
        except Exception as e:  # the bench went away (the board is being shut down): say so, stop
            print("vboard: e-stop guard stopped:", repr(e))
            return
