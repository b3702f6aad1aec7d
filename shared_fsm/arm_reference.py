# The reference arm's description (docs/arm-description.md, "reference"): the simulator's arm
# that surepick was built around, and the arm a board assumes when its flash holds no
# /arm.json (a board deployed before arm descriptions existed ran exactly this arm).
# This dict is the one source of these numbers; `surepick arm show reference` prints it as
# TOML, the host's presets sit beside the other presets (host/arms/).
DESCRIPTION = {
    "format": 1,
    "name": "reference",
    "kind": "serial",
    "notes": "surepick's simulated reference arm: MG996R base/shoulder/elbow, SG90 wrist and gripper",
    "geometry": {
        "base_height_mm": 70.0, "shoulder_forward_mm": 0.0, "upper_arm_mm": 105.0,
        "forearm_mm": 100.0, "tool_mm": 95.0, "tool_drop_mm": 0.0,
        "min_radius_mm": 60.0, "min_z_mm": 0.0,
    },
    "joints": {
        "base": {"min_deg": -90.0, "max_deg": 90.0},
        "shoulder": {"min_deg": 0.0, "max_deg": 180.0},
        "elbow": {"min_deg": -180.0, "max_deg": 0.0},
        "wrist": {"min_deg": -180.0, "max_deg": 0.0},
    },
    "servos": {
        "base": {"gpio": 2, "min_us": 500, "max_us": 2500, "trim_us": 0, "direction": 1,
                 "zero_deg": 90.0, "model": "MG996R", "mass_g": 0.0},
        "shoulder": {"gpio": 3, "min_us": 500, "max_us": 2500, "trim_us": 0, "direction": 1,
                     "zero_deg": 0.0, "model": "MG996R", "mass_g": 0.0},
        "elbow": {"gpio": 4, "min_us": 500, "max_us": 2500, "trim_us": 0, "direction": 1,
                  "zero_deg": 180.0, "model": "MG996R", "mass_g": 55.0},
        "wrist": {"gpio": 5, "min_us": 500, "max_us": 2500, "trim_us": 0, "direction": 1,
                  "zero_deg": 180.0, "model": "SG90", "mass_g": 9.0},
        "gripper": {"gpio": 6, "min_us": 500, "max_us": 2500, "trim_us": 0, "direction": 1,
                    "zero_deg": 0.0, "model": "SG90_jaw", "mass_g": 0.0},
    },
    "servo_models": {
        "MG996R": {"stall_torque_nm_4v8": 0.9, "speed_s_per_60deg_4v8": 0.17, "deadband_us": 4.0,
                   "band_deg": 3.0, "armature_kgm2": 0.004, "idle_ma": 10.0, "stall_ma_5v": 2500.0,
                   "backdrive_torque_nm": 0.25},
        "SG90": {"stall_torque_nm_4v8": 0.18, "speed_s_per_60deg_4v8": 0.10, "deadband_us": 5.0,
                 "band_deg": 8.0, "armature_kgm2": 0.0006, "idle_ma": 10.0, "stall_ma_5v": 650.0,
                 "backdrive_torque_nm": 0.04},
        # The gripper's SG90: its wide proportional band is what makes a 6 mm squeeze draw a
        # middling current instead of stall current (docs/conventions.md, "Gripper servo").
        "SG90_jaw": {"part": "SG90", "stall_torque_nm_4v8": 0.18, "speed_s_per_60deg_4v8": 0.10, "deadband_us": 5.0,
                     "band_deg": 20.0, "armature_kgm2": 0.0004, "idle_ma": 10.0,
                     "stall_ma_5v": 650.0, "backdrive_torque_nm": 0.04},
    },
    "gripper": {
        "jaw_max_mm": 45.0, "servo_deg_per_mm": 4, "finger_length_mm": 45.0,
        "finger_tip_mm": 10.0, "finger_height_mm": 20.0, "finger_thickness_mm": 3.0,
        "pad_length_mm": 20.0, "pad_thickness_mm": 3.0, "beam_behind_mm": 5.0,
        "palm_from_mm": 20.0, "palm_mm": 40.0, "palm_width_mm": 64.0, "palm_height_mm": 24.0,
    },
    "links": {"turret_g": 60.0, "upper_arm_g": 50.0, "forearm_g": 30.0, "palm_g": 30.0,
              "finger_g": 6.0, "pad_g": 2.0},
    "sensors": {
        "pad": {"stiffness_n_per_m": 1500.0, "damping_ns_per_m": 0.4, "travel_mm": 4.0,
                "preload_mm": 0.3, "friction": 1.2, "finger_friction": 0.5},
        "switch": {"trip_mm": 0.8, "release_mm": 0.6, "bounce_min_ms": 10, "bounce_max_ms": 20},
        "pot": {"closed_counts": 8000.0, "counts_per_mm": 1067.0, "offset_counts": 0.0,
                "noise_counts": 24.0},
        "current": {"offset_counts": 1000.0, "counts_per_a": 19859.0, "noise_counts": 60.0},
        "rail": {"nominal_mv": 5800.0, "source_mohm": 250.0, "divider": 3.0, "reset_mv": 3800.0,
                 "servo_reset_ms": 60, "brownout_mv": 3200.0, "noise_counts": 16.0},
    },
    "bench": {
        "pad_x_mm": 160.0, "pad_y_mm": -60.0, "pad_half_mm": 30.0, "pad_top_mm": 3.0,
        "bin_x_mm": 150.0, "bin_y_mm": 80.0, "bin_inner_half_mm": 35.0, "bin_floor_mm": 3.0,
        "bin_wall_top_mm": 35.0, "part_mm": 25.0, "pitch_deg": -90.0,
        "home_base_deg": 0.0, "home_shoulder_deg": 90.0, "home_elbow_deg": -90.0,
        "home_wrist_deg": -90.0, "home_jaw_mm": 30.0,
    },
}
