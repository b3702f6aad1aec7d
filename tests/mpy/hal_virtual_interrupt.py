# A Ctrl-C that lands on one of the virtual HAL's helper threads (firmware/hal/virtual_guard.py)
# instead of the main one, as a loaded host's kernel sometimes delivered the signal: the
# firmware's main thread must still get its KeyboardInterrupt, at its next step, and the helpers
# must keep working. The KeyboardInterrupt is raised where the real one was seen: inside the
# watchdog thread's read of the CPU time, and inside the e-stop poller's call. Prints JSON.
import json
import time

import vboard_io                # the stand-in bench, from the pytest side
from surepick.firmware.hal import virtual as h
from surepick.firmware.hal import virtual_guard as g
from reference_pins import reference_pins

WAIT_MS = 20000


def steps_until_interrupt():
    # Step as the firmware's loop does until a KeyboardInterrupt comes out of the HAL.
    # -> True if one did within WAIT_MS of real time.
    t0 = time.ticks_ms()
    try:
        while time.ticks_diff(time.ticks_ms(), t0) < WAIT_MS:
            h.sleep_ms(1)
            vboard_io.sent.clear()     # the stand-in keeps what it was sent: not needed here
            time.sleep_ms(2)
    except KeyboardInterrupt:
        return True
    return False


h.setup(reference_pins())
out = {}

# 1. a stale flag from code that ran before the loop is dropped when the loop arms the watchdog
g.interrupted = 1
cpu_calls = [0]


def cpu_ms():
    cpu_calls[0] += 1
    if cpu_calls[0] == 3:
        raise KeyboardInterrupt       # taken on the watchdog's thread
    return 0


bites = []
g.watch(60000, bites.append, cpu_ms)
out["stale_flag_dropped"] = g.interrupted == 0

# 2. the watchdog's thread takes it: the main thread raises it, the watchdog lives on
out["dog_interrupt_reached_main"] = steps_until_interrupt()
out["cpu_calls_when_raised"] = cpu_calls[0]
out["dog_alive_after"] = g._dog_alive
g._cpu_ms = time.ticks_ms              # CPU time now runs on while the loop shows no sign of life
g._timeout = 50
t0 = time.ticks_ms()
while not bites and time.ticks_diff(time.ticks_ms(), t0) < WAIT_MS:
    time.sleep_ms(10)
out["dog_still_bites"] = len(bites) == 1

# 3. the e-stop poller's thread takes one: the same
poll_calls = [0]


def poll_step(elapsed_ms):
    poll_calls[0] += 1
    if poll_calls[0] == 2:
        raise KeyboardInterrupt


g.every(5, poll_step)
out["poller_interrupt_reached_main"] = steps_until_interrupt()
seen = poll_calls[0]
t0 = time.ticks_ms()
while poll_calls[0] < seen + 3 and time.ticks_diff(time.ticks_ms(), t0) < WAIT_MS:
    time.sleep_ms(10)
out["poller_runs_on"] = poll_calls[0] >= seen + 3
# 4. the loop stops the watchdog (Ctrl-C: wdt_stop) while the watchdog's thread is in a poll that
# finds the loop long silent: a stopped watchdog never bites (one did, "timeout 0 ms", under load)
late = []
stop_calls = [0]


def cpu_stopped_meanwhile():
    stop_calls[0] += 1
    if stop_calls[0] == 2:
        g.unwatch()                  # what wdt_stop does, landing inside this poll
        return 10 ** 6               # ... which then sees a long silence
    return 0


t0 = time.ticks_ms()
while g._dog_alive and time.ticks_diff(time.ticks_ms(), t0) < WAIT_MS:
    time.sleep_ms(10)                # the first watchdog thread has bitten and ended (part 2)
g.watch(50, late.append, cpu_stopped_meanwhile)
t0 = time.ticks_ms()
while g._dog_alive and time.ticks_diff(time.ticks_ms(), t0) < WAIT_MS:
    time.sleep_ms(10)
out["stopped_dog_never_bites"] = stop_calls[0] >= 2 and late == [] and not g._dog_alive
print(json.dumps(out))
