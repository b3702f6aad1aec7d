# The e-stop stops the jaw where its driver is, in the tick that reads the press: the gripper's
# pulse, as the plant receives it at each exchange, never changes after the press (a closing jaw
# closes no further, an opening one opens no further), while the arm's pulses may brake to their
# frozen setpoints. The firmware's controller runs on the MuJoCo plant (in-process engine); the
# pulses are taken from the world's exchange, not from the controller's variables.
import pytest

from surepick.host.engines.inproc import InprocCycle
from surepick.shared_fsm import servo_cal
from tests.support.period import PERIOD_MS, PERIOD_US

GRIPPER = 4


def _run_recording_pulses(state, window, seed):
    run = InprocCycle("estop", {"state": state, "window_from_ms": window[0], "window_to_ms": window[1]}, seed, 0)
    world = run.world
    seen = []                                    # (plant ms after the exchange, pulses, press applied)
    exchange = world.exchange

    def recording(pulses, st, advance_ms):
        before = world.last_injection_ms
        r = exchange(pulses, st, advance_ms)
        seen.append((world.now_ms, None if pulses is None else list(pulses),
                     before is None and world.last_injection_ms is not None))
        return r
    world.exchange = recording
    rec = run.run(record_trajectory=False)
    cal = world.plant.servos.cals[GRIPPER]          # the plant's own reading of a gripper pulse
    return rec, seen, lambda us: servo_cal.servo_mdeg_from_pulse(cal, us) // servo_cal.JAW_MDEG_PER_UM


@pytest.mark.parametrize("state, window, direction", [
    ("GRASP", (100, 200), -1),      # the jaw closing on the part
    ("APPROACH", (10, 40), +1),     # the jaw opening for the pick, its driver speeding up
])
def test_the_jaw_pulse_does_not_move_after_the_press(state, window, direction):
    rec, seen, jaw_um = _run_recording_pulses(state, window, seed=1007)
    faults = [e for e in rec["events"] if e["kind"] == "fault"]
    assert faults and faults[0]["reason"] == "ESTOP" and faults[0]["from"] == state
    k = next(i for i, s in enumerate(seen) if s[2])          # the exchange the press landed in
    at_press = seen[k][1][GRIPPER]
    # the jaw was on its way (not vacuous): in the last 8 ms before the press its command moved
    # the stated way (> 0.1 mm), its driver still speeding up: a driver that brakes from there
    # runs on for up to 1.4 mm (the controller before the fix failed both cases)
    before = [jaw_um(s[1][GRIPPER]) for s in seen[max(0, k - 10):k + 1] if s[1] is not None]
    n = 8 // PERIOD_MS                                          # ticks in 8 ms
    assert len(before) > n and (before[-1] - before[-1 - n]) * direction > 100, before
    after = [s[1] for s in seen[k + 1:] if s[1] is not None]
    assert len(after) > 1000 // PERIOD_MS                      # a second and more after the press
    assert {p[GRIPPER] for p in after} == {at_press}
    # the arm's pulses are not stopped dead (they brake), but they do stop: the last 200 ms
    # carry one pulse set
    assert len({tuple(p[:GRIPPER]) for p in after[-(200 // PERIOD_MS):]}) == 1

