"""The preset arm descriptions (docs/arm-description.md cites each figure's source and says which
are guesses). `surepick arm show NAME` prints one as TOML: the way a maker starts their own file.
The reference arm's description lives with the board code (shared_fsm/arm_reference.py)."""
import copy

from surepick.shared_fsm.arm_reference import DESCRIPTION as REFERENCE

# Servo models shared by the presets. MG996R and SG90 are the reference arm's own figures; MG995
# and MG90S from their makers' datasheets (stall torque and speed at 4.8 V); currents, deadband,
# band, armature and back-drive torque are estimates in the reference's manner (docs).
_MG996R = copy.deepcopy(REFERENCE["servo_models"]["MG996R"])
_SG90 = copy.deepcopy(REFERENCE["servo_models"]["SG90"])
_SG90_JAW = copy.deepcopy(REFERENCE["servo_models"]["SG90_jaw"])
_MG995 = {"stall_torque_nm_4v8": 0.84, "speed_s_per_60deg_4v8": 0.20, "deadband_us": 5.0, "band_deg": 3.0,
          "armature_kgm2": 0.004, "idle_ma": 10.0, "stall_ma_5v": 1500.0, "backdrive_torque_nm": 0.2}
_MG90S = {"stall_torque_nm_4v8": 0.18, "speed_s_per_60deg_4v8": 0.10, "deadband_us": 5.0, "band_deg": 8.0,
          "armature_kgm2": 0.0006, "idle_ma": 10.0, "stall_ma_5v": 700.0, "backdrive_torque_nm": 0.05}


def _servo(gpio, zero, model, direction=1, mass=0.0, gear=1.0):
    return {"gpio": gpio, "min_us": 500, "max_us": 2500, "trim_us": 0, "direction": direction,
            "zero_deg": zero, "gear": gear, "model": model, "mass_g": mass}


def _with(base, **sections):
    d = copy.deepcopy(base)
    for k, v in sections.items():
        d[k] = v
    return d


# A small gripper (SG90 claw) for the hobby presets: figures measured off common printed claws
# are guesses (docs).
_SMALL_GRIPPER = {"jaw_max_mm": 40.0, "servo_deg_per_mm": 4, "finger_length_mm": 35.0, "finger_tip_mm": 8.0,
                  "finger_height_mm": 16.0, "finger_thickness_mm": 3.0, "pad_length_mm": 16.0,
                  "pad_thickness_mm": 3.0, "beam_behind_mm": 4.0, "palm_from_mm": 10.0, "palm_mm": 30.0,
                  "palm_width_mm": 54.0, "palm_height_mm": 20.0}

MEARM = _with(
    REFERENCE, name="mearm", kind="parallel",
    notes="MeArm v1.x: parallel linkage, hand kept level, 4 x MG90S/SG90",
    geometry={"base_height_mm": 55.0, "shoulder_forward_mm": 15.0, "upper_arm_mm": 80.0, "forearm_mm": 80.0,
              "tool_mm": 68.0, "tool_drop_mm": 0.0, "hand_pitch_deg": 0.0, "min_radius_mm": 60.0,
              "min_z_mm": 0.0},
    joints={"base": {"min_deg": -80.0, "max_deg": 80.0},
            "shoulder": {"min_deg": 30.0, "max_deg": 150.0},
            # forearm's absolute angle; the linkage keeps it 30..150 deg below the upper arm
            "elbow": {"min_deg": -75.0, "max_deg": 45.0, "coupled_to": "shoulder",
                      "coupled_min_deg": -150.0, "min_per_deg": 1.0, "coupled_max_deg": -30.0,
                      "max_per_deg": 1.0}},
    servos={"base": _servo(2, 90.0, "MG90S"), "shoulder": _servo(3, 0.0, "MG90S"),
            "elbow": _servo(4, 90.0, "MG90S"), "gripper": _servo(6, 0.0, "SG90_jaw")},
    servo_models={"MG90S": _MG90S, "SG90_jaw": _SG90_JAW},
    gripper=_SMALL_GRIPPER,
    links={"turret_g": 30.0, "upper_arm_g": 15.0, "forearm_g": 15.0, "palm_g": 20.0, "finger_g": 4.0,
           "pad_g": 1.5},
    # With the hand level and these limits the jaw reaches the bench best from a 30 mm riser
    # at 180 mm (13 deg of joint margin; `surepick arm check mearm`).
    # The bin is wide enough that the level hand (palm 28..58 mm behind the jaw centre) stays
    # inside its walls at the place pose: with a 56 mm bin the palm landed on the near wall and
    # the shoulder and elbow servos pushed on it at stall (docs/arm-description.md).
    bench={"pad_x_mm": 170.0, "pad_y_mm": -60.0, "pad_half_mm": 25.0, "pad_top_mm": 30.0,
           "bin_x_mm": 170.0, "bin_y_mm": 70.0, "bin_inner_half_mm": 68.0, "bin_floor_mm": 30.0,
           "bin_wall_top_mm": 55.0, "part_mm": 20.0, "pitch_deg": 0.0,
           "home_base_deg": 0.0, "home_shoulder_deg": 90.0, "home_elbow_deg": 0.0, "home_jaw_mm": 25.0})

EEZYBOT_MK2 = _with(
    REFERENCE, name="eezybot_mk2", kind="parallel",
    notes="EEZYbotARM MK2: parallel linkage (ABB IRB460 at 1:7), hand level, 3 x MG995 + SG90 gripper",
    geometry={"base_height_mm": 92.0, "shoulder_forward_mm": 0.0, "upper_arm_mm": 135.0, "forearm_mm": 147.0,
              "tool_mm": 87.0, "tool_drop_mm": 0.0, "hand_pitch_deg": 0.0, "min_radius_mm": 80.0,
              "min_z_mm": 0.0},
    joints={"base": {"min_deg": -30.0, "max_deg": 30.0},
            "shoulder": {"min_deg": 39.0, "max_deg": 120.0},
            # forearm's absolute angle = shoulder + the published relative q3, whose limits are
            # linear in the shoulder: q3 in -0.6755 q2 - 70.768 .. -0.7165 q2 - 13.144
            "elbow": {"min_deg": -58.2, "max_deg": 21.0, "coupled_to": "shoulder",
                      "coupled_min_deg": -70.768, "min_per_deg": 0.3245, "coupled_max_deg": -13.144,
                      "max_per_deg": 0.2835}},
    servos={"base": _servo(2, 91.726, "MG995", direction=-1, gear=2.0497),
            "shoulder": _servo(3, 0.0, "MG995", direction=-1),
            "elbow": _servo(4, 135.0, "MG995"), "gripper": _servo(6, 0.0, "SG90_jaw")},
    servo_models={"MG995": _MG995, "SG90_jaw": _SG90_JAW},
    gripper=_SMALL_GRIPPER,
    links={"turret_g": 80.0, "upper_arm_g": 40.0, "forearm_g": 45.0, "palm_g": 25.0, "finger_g": 5.0,
           "pad_g": 1.5},
    # Its coupled limits keep the jaw centre well above the table: parts sit on an 80 mm riser
    # at 280 mm (10 deg of joint margin; `surepick arm check eezybot_mk2`).
    # A bin the level hand fits in at the place pose (palm 47..77 mm behind the jaw centre), as
    # for the MeArm.
    bench={"pad_x_mm": 273.0, "pad_y_mm": -60.0, "pad_half_mm": 25.0, "pad_top_mm": 80.0,
           "bin_x_mm": 273.0, "bin_y_mm": 80.0, "bin_inner_half_mm": 85.0, "bin_floor_mm": 80.0,
           "bin_wall_top_mm": 105.0, "part_mm": 20.0, "pitch_deg": 0.0,
           "home_base_deg": 0.0, "home_shoulder_deg": 90.0, "home_elbow_deg": 0.0, "home_jaw_mm": 25.0})

AL5D_MG996R = _with(
    REFERENCE, name="al5d_mg996r", kind="serial",
    notes="Lynxmotion AL5D-class serial desktop arm on MG996R servos (base, shoulder, elbow, wrist pitch)",
    geometry={"base_height_mm": 68.58, "shoulder_forward_mm": 2.0, "upper_arm_mm": 146.79, "forearm_mm": 177.51,
              "tool_mm": 77.19, "tool_drop_mm": 0.0, "min_radius_mm": 70.0, "min_z_mm": 0.0},
    joints={"base": {"min_deg": -90.0, "max_deg": 90.0}, "shoulder": {"min_deg": 0.0, "max_deg": 180.0},
            "elbow": {"min_deg": -180.0, "max_deg": 0.0}, "wrist": {"min_deg": -180.0, "max_deg": 0.0}},
    servos={"base": _servo(2, 90.0, "MG996R"), "shoulder": _servo(3, 0.0, "MG996R"),
            "elbow": _servo(4, 180.0, "MG996R", mass=55.0), "wrist": _servo(5, 180.0, "MG996R", mass=55.0),
            "gripper": _servo(6, 0.0, "SG90_jaw")},
    servo_models={"MG996R": _MG996R, "SG90_jaw": _SG90_JAW},
    links={"turret_g": 120.0, "upper_arm_g": 60.0, "forearm_g": 70.0, "palm_g": 40.0, "finger_g": 6.0,
           "pad_g": 2.0},
    bench={"pad_x_mm": 220.0, "pad_y_mm": -80.0, "pad_half_mm": 30.0, "pad_top_mm": 3.0,
           "bin_x_mm": 210.0, "bin_y_mm": 110.0, "bin_inner_half_mm": 35.0, "bin_floor_mm": 3.0,
           "bin_wall_top_mm": 35.0, "part_mm": 25.0, "pitch_deg": -90.0,
           "home_base_deg": 0.0, "home_shoulder_deg": 90.0, "home_elbow_deg": -90.0,
           "home_wrist_deg": -90.0, "home_jaw_mm": 30.0})

PRESETS = {"reference": REFERENCE, "mearm": MEARM, "eezybot_mk2": EEZYBOT_MK2, "al5d_mg996r": AL5D_MG996R}


def names():
    return sorted(PRESETS)


def get(name):
    """A deep copy of preset `name`'s description dict; KeyError naming the presets."""
    if name not in PRESETS:
        raise KeyError("no preset arm %r (presets: %s)" % (name, ", ".join(names())))
    return copy.deepcopy(PRESETS[name])
