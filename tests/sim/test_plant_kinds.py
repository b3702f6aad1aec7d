# The plant drives every kind of arm: each servo slot moves what it moves on the real arm.
# The oracle is the description itself (servo angle = zero_deg + gear * joint angle, the pulse
# from the servo's calibration, the joint slot's meaning from the kind) and the firmware's FK
# (shared_fsm/arm.py); the plant decodes the pulses and MuJoCo moves the model.
import math

import pytest

from surepick.shared_fsm import servo_cal
from surepick.sim.plant import Plant
from tests.host.arms.test_kinematics import ARMS

KINDS = ["mearm", "eezybot_mk2", "al5d_nowrist"]
SETTLE_MS = 1500


def pulses_for(arm, q_deg, jaw_mm, wrist_us=0):
    # The board's five pulses for joint angles q (slots 0..3) and a jaw opening, worked out from
    # the description's servo entries; wrist_us goes out on the wrist channel whatever the kind.
    out = []
    for i in range(4):
        s = arm.servo(i)
        if s is None:
            out.append(wrist_us)
            continue
        s_mdeg = int(round((s["zero_deg"] + s["gear"] * q_deg[i]) * 1000.0))
        out.append(servo_cal.pulse_us(arm.servo_cal(i), s_mdeg))
    jaw = arm.servos[-1]
    out.append(servo_cal.pulse_us(arm.servo_cal(4), int(round((jaw["zero_deg"] + arm.gripper["servo_deg_per_mm"]
                                                               * jaw_mm) * 1000.0))))
    return out


def hold_band_deg(arm, i):
    # A powered servo below its stall torque holds within its proportional band (where its
    # torque saturates) plus its deadband, at the joint: divided by the servo's gear.
    s = arm.servo(i)
    m = arm.servo_models[s["model"]]
    return (m["band_deg"] + m["deadband_us"] * s["travel_deg"] / (s["max_us"] - s["min_us"])) / s["gear"]


@pytest.mark.parametrize("name", KINDS)
def test_each_slot_moves_its_joint_to_where_the_description_puts_it(name):
    arm = ARMS[name]
    plant = Plant(part=None, arm=arm)
    # a pose away from home in every joint the kind has: 40 mm above the bin's centre, in the air
    b = arm.bench
    q = arm.inverse(b["bin_x_mm"], b["bin_y_mm"], b["bin_wall_top_mm"] + b["part_mm"] + 40.0, b["pitch_deg"])
    assert all(abs(a - h) > 5.0 for a, h in zip(q[:3], arm.home_deg()))
    plant.set_pulses(pulses_for(arm, q, 20.0))
    plant.advance(SETTLE_MS)
    t = plant.truth()
    assert not any(t["servos_at_stall"])
    for i in range(len(arm.joint_names)):
        assert abs(t["joint_angles_deg"][i] - q[i]) < hold_band_deg(arm, i), (i, t["joint_angles_deg"], q)
    assert abs(t["jaw_opening_mm"] - 20.0) < 1.0
    # the jaw centre is where the firmware's FK puts the arm's own (measured) joint angles
    x, y, z, _ = arm.forward(t["joint_angles_deg"])
    jc = t["jaw_centre_mm"]
    assert math.dist(jc, (x, y, z)) < 0.5, (jc, (x, y, z))


@pytest.mark.parametrize("name", ["mearm", "eezybot_mk2"])
def test_a_parallel_arms_elbow_servo_holds_the_forearms_absolute_angle_and_the_hand_stays_level(name):
    arm = ARMS[name]
    plant = Plant(part=None, arm=arm)
    m, d = plant.m, plant.d
    home = arm.home_deg()
    lo1, hi1 = arm.joint_span(1)
    elbow = home[2]
    rel = []
    for shoulder in (lo1 + 0.3 * (hi1 - lo1), lo1 + 0.7 * (hi1 - lo1)):
        q = [home[0], shoulder, elbow, 0.0]
        arm.check_limits(q)
        plant.set_pulses(pulses_for(arm, q, 20.0))   # only the shoulder's pulse changes
        plant.advance(SETTLE_MS)
        t = plant.truth()
        # the forearm's angle to the horizontal is what the elbow servo set, wherever the shoulder is
        assert abs(t["joint_angles_deg"][2] - elbow) < hold_band_deg(arm, 2)
        assert abs(t["joint_angles_deg"][1] - shoulder) < hold_band_deg(arm, 1)
        # the linkage keeps the hand at its pitch
        level = math.degrees(d.ten_length[m.tendon("hand_level").id])
        assert abs(level - arm.geo["hand_pitch_deg"]) < 0.5
        rel.append(math.degrees(d.qpos[m.jnt_qposadr[m.joint("elbow").id]]))
    # ...so the elbow's angle to the upper arm changed by as much as the shoulder turned
    assert abs(abs(rel[1] - rel[0]) - 0.4 * (hi1 - lo1)) < 2 * hold_band_deg(arm, 2)


@pytest.mark.parametrize("name", KINDS)
def test_the_missing_wrist_slot_is_never_driven(name):
    # Whatever the board sends on the wrist channel of an arm without a wrist servo, nothing
    # moves differently, nothing draws current, and no servo there is ever powered or at stall.
    arm = ARMS[name]
    runs = []
    for wrist_us in (0, 2400):
        plant = Plant(part="cube25", arm=arm, seed=4)
        plant.set_pulses(pulses_for(arm, arm.home_deg(), 30.0, wrist_us))
        plant.advance(400)
        t = plant.truth()
        assert t["servos_powered"][3] is False and t["servos_at_stall"][3] is False
        runs.append((plant.d.qpos.tolist(), plant.read_inputs(), plant.servos.currents_ma(plant.d)))
    assert runs[0] == runs[1]
    assert runs[0][2][3] == 0.0


def test_a_270_degree_servo_turns_over_its_own_travel():
    # The reference with a 270-degree shoulder servo (travel_deg 270, zero_deg 0): the pulse for
    # 60 deg, by hand, is 500 + 60 / 270 * 2000 = 944.4 us (read over 180 deg, as before
    # travel_deg was honoured, it would be 40 deg). The plant decodes it with the description.
    from surepick.shared_fsm import arm as arm_mod
    from surepick.shared_fsm.arm_reference import DESCRIPTION
    d = arm_mod.validate(DESCRIPTION).to_dict()
    d["servos"]["shoulder"]["travel_deg"] = 270
    arm = arm_mod.validate(d)
    assert arm.servo(1)["zero_deg"] == 0 and (arm.servo(1)["min_us"], arm.servo(1)["max_us"]) == (500, 2500)
    q = list(arm.home_deg())
    q[1] = 60.0
    arm.check_limits(q)
    pulses = pulses_for(arm, q, 20.0)
    assert pulses[1] == 944
    plant = Plant(part=None, arm=arm)
    plant.set_pulses(pulses)
    plant.advance(SETTLE_MS)
    t = plant.truth()
    assert abs(t["joint_angles_deg"][1] - 60.0) < hold_band_deg(arm, 1), t["joint_angles_deg"]
