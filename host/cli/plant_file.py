# The numbers in a plant file (`--plant PLANT.json`, `fit --start`): PlantParams.from_dict checks
# the names; this checks the values before a simulation starts, so a NaN, a zero PWM period or a
# negative speed is one clear line instead of a hang or a MuJoCo warning minutes later.
import math

# May be negative: calibration offsets, trims and joint angles. Must be above zero: what is
# divided by or what sets a rate. Everything else: finite and >= 0.
_SIGNED = {"offset_counts", "trim_us", "home_deg"}
_POSITIVE = {"stall_torque_nm_4v8", "speed_s_per_60deg_4v8", "armature_kgm2", "stiffness_n_per_m",
             "travel_mm", "counts_per_mm", "counts_per_a", "nominal_mv", "divider", "servo_frame_ms",
             "max_us"}
_INTEGER = {"min_us", "max_us", "trim_us", "inverted", "bounce_min_ms", "bounce_max_ms", "servo_reset_ms",
            "servo_frame_ms"}


def check_plant_numbers(d, where=""):
    # -> None, or the first problem as "servos[4].speed_s_per_60deg_4v8 must be a number > 0, got 0".
    if isinstance(d, dict):
        for k, v in d.items():
            err = _check(k, v, where + ("." if where else "") + str(k))
            if err:
                return err
    return None


def _check(key, v, path):
    if isinstance(v, dict):
        return check_plant_numbers(v, path)
    if isinstance(v, (list, tuple)):
        for i, x in enumerate(v):
            err = _check(key, x, "%s[%d]" % (path, i))
            if err:
                return err
        return None
    if key == "kind":
        return None if isinstance(v, str) else "%s must be a servo kind name, got %r" % (path, v)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return "%s must be a finite number, got %r" % (path, v)
    if key in _INTEGER and v != int(v):
        return "%s must be a whole number, got %r" % (path, v)
    if key in _POSITIVE and v <= 0:
        return "%s must be a number > 0, got %r" % (path, v)
    if key not in _SIGNED and key not in _POSITIVE and v < 0:
        return "%s must be a number >= 0, got %r" % (path, v)
    if key == "inverted" and v not in (0, 1):
        return "%s must be 0 or 1, got %r" % (path, v)
    return None
