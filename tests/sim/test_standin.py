# The stand-in bench's hidden calibration (sim/standin.py): drawn from the seed within the issue's
# bounds, and its truth really is the plant's: a description entry written from the truth, driven
# through the firmware's own pulse formula (servo_cal.pulse_us), is decoded by the plant's servo
# calibration back to the joint angle commanded.
import math

import pytest

from surepick.shared_fsm import kinematics, servo_cal
from surepick.sim import standin
from surepick.sim.servo_model import servo_offset_rad

ARM = kinematics.REFERENCE


def test_the_same_seed_gives_the_same_bench_and_another_seed_another():
    assert standin.truth(4, ARM) == standin.truth(4, ARM)
    assert standin.truth(4, ARM) != standin.truth(5, ARM)


@pytest.mark.parametrize("seed", range(8))
def test_hidden_values_stay_within_the_issue_bounds(seed):
    t = standin.truth(seed, ARM)["servos"]
    assert sorted(t) == sorted(ARM.servo_names)
    for i, name in enumerate(ARM.servo_names):
        nominal = 0.0 if name == "gripper" else ARM.servos[i]["zero_deg"]
        assert abs(t[name]["zero_deg"] - nominal) <= 15.0 + 0.1
        assert t[name]["direction"] in (1, -1)
        assert 180.0 * 0.9 - 0.2 <= t[name]["range_deg"] <= 180.0 * 1.1 + 0.2


@pytest.mark.parametrize("seed", [0, 3, 11])
def test_an_entry_written_from_the_truth_drives_the_plant_right(seed):
    truth = standin.truth(seed, ARM)["servos"]
    params = standin.plant_params(seed, ARM)
    for slot, name in [(0, "base"), (1, "shoulder"), (2, "elbow"), (3, "wrist"), (4, "gripper")]:
        t = truth[name]
        span = 2000.0 * 180.0 / t["range_deg"]
        lo = 1500.0 - span / 2.0
        plant_cal = params.servos[slot].cal()
        offset = math.degrees(servo_offset_rad(ARM, slot))
        mid = ARM.home_deg()[slot] if slot < 4 else 90.0     # inside the servo's travel
        for q in (mid - 20.0, mid, mid + 25.0):
            s = t["zero_deg"] + q        # the servo angle the entry asks for (the gripper's: q itself)
            s_pulse = s if t["direction"] > 0 else 180.0 - s
            pulse = int(round(lo + s_pulse * span / 180.0))
            seen = servo_cal.servo_mdeg_from_pulse(plant_cal, pulse) / 1000.0 - offset
            assert abs(seen - q) < 0.15, (name, q, seen)
