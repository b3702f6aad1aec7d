# Scenario set-up the acceptance relies on: a "state" parameter puts the fault at a random time
# (from the seed) inside that state, in every one of the nine, and is validated like any other.
import pytest

from surepick.sim import scenarios


def test_state_parameters_are_names_from_the_machines_table():
    sc = scenarios.get("estop")
    assert sc.resolve({"state": "GRASP"})["state"] == "GRASP"
    with pytest.raises(ValueError, match="must be one of IDLE, APPROACH"):
        sc.resolve({"state": "grasp"})
    assert scenarios.get("pot_wire_broken").resolve(None)["state"] == "none"   # at_ms, as before


def test_the_press_time_comes_from_the_seed_and_stays_inside_the_state():
    sc = scenarios.get("estop")
    triggers = {s: sc.setup(sc.resolve({"state": "LIFT"}), scenarios.rng_for(s, 0))["injections"][0][0]
                for s in range(20)}
    assert len({t[2] for t in triggers.values()}) > 10           # spread over the window
    lo, hi = scenarios.STATE_WINDOW_MS["LIFT"]
    assert all(t[:2] == ("state", "LIFT") and lo <= t[2] <= hi and t[2] % 2 == 0 for t in triggers.values())
    idle = sc.setup(sc.resolve({"state": "IDLE"}), scenarios.rng_for(3, 0))["injections"][0][0]
    assert idle[3] == 2                                           # IDLE after the cycle, not before the job

# That each press lands in its state (the machine's own ESTOP event says so), and a pot break in
# GRASP or LIFT is a SENSOR_FAULT, is gated by the acceptance (tests/engines/test_sim_acceptance.py,
# two seeds of each in the quick tier, 50 in the slow one).
