# The virtual board's e-stop guard after Ctrl-C (firmware/hal/virtual.py) under the real
# `micropython`, with the race the REPL's thread makes deterministic: a stand-in bench lets "REPL
# code" move servo 0 by 1 us while each exchange waits for the plant. The servos must freeze at
# the pulses the plant was given in the exchange that read the press (the press's own pulses),
# not at what the REPL wrote during that wait, and stay there. The oracle is the stand-in's
# record of what it was sent. (test_repl_takeover_vboard.py shows the same end to end, where
# the race only sometimes falls inside the wait.)
import json

from tests.support import mpy as host_helpers
from tests.support.needs import NEEDS_MICROPYTHON

pytestmark = NEEDS_MICROPYTHON

STAND_IN_BENCH = """\
# the bench behind hal/virtual.py, as the virtual board's vboard_io shapes it
PLANT = None
pulses = [0, 0, 0, 0, 0]
adc = [0, 0, 0]
levels = [0, 0, 0]
gpio_mode = {}
gpio_out = {}
LED_GPIO = 25
guarded = False
state = 0
exchanges = 0
estop = 0
repl_writes = False
sent = []


def exchange(advance_ms, p):
    sent.append(list(p))           # what the plant is given
    if repl_writes:
        pulses[0] += 1             # the REPL's thread, while the board waits for the reply
    levels[0] = estop
    return 0


def read_byte():
    return -1
"""


def test_the_guard_freezes_the_pulses_the_plant_was_given_at_the_press(tmp_path):
    (tmp_path / "vboard_io.py").write_text(STAND_IN_BENCH)
    proc = host_helpers.run("hal_virtual_guard.py", text=True, timeout=60, path_first=[tmp_path])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    sent = got["sent"]
    # step 1: pwm_start's pulses, and the REPL's write during it moved the HAL's pulse on
    assert sent[0] == [1500, 1400, 1300, 1200, 1100]
    # step 2 (reads the press): the pulse the REPL wrote during step 1, then another during this wait
    assert sent[1] == [1501, 1400, 1300, 1200, 1100]
    # held from the press on: the press's pulses, whatever was written during or after
    assert sent[2:] == [[1501, 1400, 1300, 1200, 1100]] * 3
    assert got["read_back"] == [1501, 1400, 1300, 1200, 1100]


def test_a_ctrl_c_taken_by_a_helper_thread_still_stops_the_firmware(tmp_path):
    # Seen on a loaded host: the SIGINT for a deploy's Ctrl-C landed on the watchdog's thread,
    # which died of it ("Unhandled exception in thread ... in cpu_ms"), and the firmware ran on.
    (tmp_path / "vboard_io.py").write_text(STAND_IN_BENCH)
    proc = host_helpers.run("hal_virtual_interrupt.py", text=True, timeout=120, path_first=[tmp_path])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Unhandled exception" not in proc.stdout + proc.stderr
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got.pop("cpu_calls_when_raised") >= 3   # raised after the thread took it, not before
    assert got == {"stale_flag_dropped": True, "dog_interrupt_reached_main": True,
                   "dog_alive_after": True, "dog_still_bites": True,
                   "poller_interrupt_reached_main": True, "poller_runs_on": True,
                   "stopped_dog_never_bites": True}, got
