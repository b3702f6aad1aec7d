import math
import random

import pytest

from surepick.shared_fsm import kinematics as k
from surepick.shared_fsm import servo_cal


def test_inverse_then_forward_round_trips_over_the_workspace():
    rng = random.Random(7)
    n = 0
    while n < 500:
        r = rng.uniform(100, 200)
        yaw = rng.uniform(-80, 80)
        z = rng.uniform(5, 90)
        pitch = rng.uniform(-90, -60)
        x, y = r * math.cos(math.radians(yaw)), r * math.sin(math.radians(yaw))
        try:
            q = k.inverse(x, y, z, pitch)
        except k.Unreachable:
            continue
        fx, fy, fz, fp = k.forward(q)
        assert abs(fx - x) < 1e-6 and abs(fy - y) < 1e-6 and abs(fz - z) < 1e-6 and abs(fp - pitch) < 1e-6
        for i in range(4):
            assert k.JOINT_MIN_DEG[i] - 1e-6 <= q[i] <= k.JOINT_MAX_DEG[i] + 1e-6
        n += 1


def test_reference_cell_poses_are_reachable_pointing_down():
    # source pad and bin, at the part and at the approach height above it
    for x, y in [(160, -60), (150, 80)]:
        for z in (12.5, 20.0, 72.5, 80.0):
            k.inverse(x, y, z, -90)


@pytest.mark.parametrize("pose,code", [((400, 0, 10, -90), k.TOO_FAR), ((100, 0, 400, 90), k.TOO_FAR),
                                       ((-150, 0, 20, -90), k.JOINT_LIMIT), ((5, 0, 5, -90), k.TOO_CLOSE),
                                       ((150, 0, -5, -90), k.BELOW_TABLE)])
def test_unreachable_poses_say_why(pose, code):
    with pytest.raises(k.Unreachable) as e:
        k.inverse(*pose)
    assert e.value.code == code
    assert "unreachable" in str(e.value)


def test_integer_front_end():
    out = [0, 0, 0, 0]
    k.inverse_mdeg(160000, -60000, 12500, -90000, out)
    q = k.inverse(160, -60, 12.5, -90)
    assert out == [round(a * 1000) for a in q]


def test_servo_calibration_round_trip_and_clamp():
    cal = servo_cal.DEFAULT_CAL
    assert servo_cal.pulse_us(cal, 0) == 500 and servo_cal.pulse_us(cal, 180000) == 2500
    assert servo_cal.pulse_us(cal, 90000) == 1500
    assert servo_cal.pulse_us(cal, -5000) == 500 and servo_cal.pulse_us(cal, 999999) == 2500
    inv = (600, 2400, 12, 1, 180000)
    for s in range(0, 180001, 2500):
        us = servo_cal.pulse_us(inv, s)
        assert abs(servo_cal.servo_mdeg_from_pulse(inv, us) - s) <= 100
    # a 270-degree servo, by hand: 500 + 135/270 * 2000 = 1500, 500 + 270/270 * 2000 = 2500,
    # 500 + 90/270 * 2000 = 1166.7; mirrored (inverted), 90 deg is 180 of the travel: 1833.3
    wide = (500, 2500, 0, 0, 270000)
    assert [servo_cal.pulse_us(wide, s) for s in (0, 90000, 135000, 270000, 300000)] == [500, 1166, 1500, 2500, 2500]
    assert servo_cal.pulse_us((500, 2500, 0, 1, 270000), 90000) == 1833
    for s in range(0, 270001, 2500):
        assert abs(servo_cal.servo_mdeg_from_pulse(wide, servo_cal.pulse_us(wide, s)) - s) <= 150
    for i in range(4):
        assert servo_cal.servo_to_joint_mdeg(i, servo_cal.joint_to_servo_mdeg(i, -12345)) == -12345
    assert servo_cal.joint_to_servo_mdeg(servo_cal.GRIPPER, 45000) == 180000
